"""``mixedeval preferences --interval sandwich --cluster judge,prompt``: the numbers of
me.bradley_terry(interval="sandwich", cluster=("judge", "prompt")); ``voter`` is the judge;
arena-rank's estimator and reweighting from the command line; bad values exit with status 2."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from bt_helpers import simulate_voter_prompt
from test_preferences_cli import _cli

import mixedeval as me


@pytest.fixture(scope="module")
def battles_csv(tmp_path_factory):
    df = simulate_voter_prompt(strengths=[0.0, 0.5, -0.3, 0.8, 0.2], n_prompts=120, per_prompt=8, n_judges=40,
                               sd_prompt=0.5, sd_judge=0.5, seed=4)
    df["judge"] = "voter" + df["judge"].astype(str)
    path = tmp_path_factory.mktemp("battles") / "battles.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("cluster", ["judge,prompt", "voter,prompt"])
def test_cli_two_way_sandwich_equals_the_api(battles_csv, cluster):
    out = _cli(str(battles_csv), "--interval", "sandwich", "--cluster", cluster, "--ties", "drop",
               "--no-position-bias", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    exp = me.bradley_terry(me.read_battles(battles_csv), prompt="prompt", judge="judge", ties="drop",
                           position_bias=False, interval="sandwich", cluster=("judge", "prompt"))
    s = pd.DataFrame(got["strengths"])
    assert list(s["model"]) == list(exp.table["model"])
    for c in ("estimate", "std_error", "conf_low", "conf_high", "elo_conf_low"):
        np.testing.assert_allclose(s[c], exp.table[c], rtol=1e-10)
    assert "clustered by prompt and judge (CGM two-way" in got["intervals"]


def test_cli_arena_rank_estimator(battles_csv):
    out = _cli(str(battles_csv), "--interval", "sandwich", "--cluster", "battle", "--estimator", "arena-rank",
               "--reweight", "pair", "--quiet")
    assert out.returncode == 0, out.stderr
    exp = me.bradley_terry(me.read_battles(battles_csv), prompt="prompt", judge="judge", interval="sandwich",
                           cluster="battle", estimator="arena-rank", reweight="pair")
    assert "arena-rank 0.1.1" in out.stdout
    top = exp.table.iloc[0]
    assert f"{top['elo']:.1f}" in out.stdout


def test_cli_bad_cluster_exits_2(battles_csv):
    out = _cli(str(battles_csv), "--interval", "sandwich", "--cluster", "model", "--quiet")
    assert out.returncode == 2
    assert "cluster" in out.stderr
