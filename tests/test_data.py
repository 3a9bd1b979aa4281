"""Bundled data sets, score-table validation, and the environment check."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.data import as_pandas, validate_score_table


def test_datasets_list_and_load():
    listing = me.datasets.list()
    assert set(listing["name"]) == {"kreutzer_ter", "kreutzer_annotation", "kreutzer_hyperparameters", "hu2025_records"}
    assert {"licence", "source", "rows", "description"} <= set(listing.columns)
    for name, rows in zip(listing["name"], listing["rows"]):
        df = me.datasets.load(name)
        assert len(df) == rows
    ter = me.datasets.load("kreutzer_ter")
    assert ter["system"].nunique() == 3 and ter["sentence_id"].nunique() == 1041
    hu = me.datasets.load("hu2025_records")
    assert (hu["language"] == "avg").sum() == 111
    assert hu["task"].nunique() == 15
    raw = json.loads(me.datasets.path("hu2025_records").read_text())
    assert len(raw) == len(hu)
    assert (me.datasets.path("kreutzer_ter").parent / "PROVENANCE.md").exists()
    assert len(me.datasets.sha256("kreutzer_ter")) == 64


def test_load_returns_fresh_copies():
    a = me.datasets.load("kreutzer_annotation")
    a.loc[0, "score"] = -1
    assert me.datasets.load("kreutzer_annotation").loc[0, "score"] != -1


def test_unknown_dataset():
    with pytest.raises(me.DataError, match="unknown data set 'nope'"):
        me.datasets.load("nope")


def test_as_pandas_inputs(tmp_path, ter):
    p = tmp_path / "t.parquet"
    ter.to_parquet(p)
    assert len(as_pandas(p)) == len(ter)
    c = tmp_path / "t.csv"
    ter.to_csv(c, index=False)
    assert len(as_pandas(str(c))) == len(ter)
    j = tmp_path / "t.json"
    ter.head(20).to_json(j, orient="records")
    assert len(as_pandas(j)) == 20
    with pytest.raises(me.DataError, match="does not exist"):
        as_pandas(tmp_path / "missing.csv")
    with pytest.raises(me.DataError, match="unsupported type"):
        as_pandas(42)


def test_validation_errors(ter):
    with pytest.raises(me.DataError, match="'score' not found"):
        validate_score_table(ter, "score", ["system"])
    with pytest.raises(me.DataError, match="empty"):
        validate_score_table(ter.iloc[:0], "ter", ["system"])
    bad = ter.copy()
    bad.loc[[1, 2, 3], "ter"] = np.nan
    with pytest.raises(me.DataError, match=r"3 non-finite values .*rows 1, 2, 3"):
        validate_score_table(bad, "ter", ["system"])
    bad2 = ter.copy()
    bad2["ter"] = bad2["ter"].astype(object)
    bad2.loc[0, "ter"] = "x"
    with pytest.raises(me.DataError, match="not numeric"):
        validate_score_table(bad2, "ter", ["system"])
    with pytest.raises(me.DataError, match="'system' has 1 level"):
        validate_score_table(ter[ter["system"] == "Baseline"], "ter", ["system"])
    dup = pd.concat([ter, ter.iloc[:2]])
    with pytest.raises(me.DataError, match="2 duplicated row"):
        validate_score_table(dup, "ter", ["system"], unique_keys=["sentence_id", "system", "replication"])
    validate_score_table(ter, "ter", ["system", "sentence_id"], unique_keys=["sentence_id", "system", "replication"])


def test_check_r_reports_versions():
    res = me.check_r()
    assert res.ok, res.message
    assert res.r_version.startswith("4.")
    assert res.rpy2_version.startswith("3.5")
    assert set(res.packages["package"]) >= {"lme4", "lmerTest", "emmeans", "pbkrtest", "effectsize", "performance"}
    assert res.packages["installed"].all()
    assert "lme4" in repr(res)


def test_check_r_names_missing_package(monkeypatch):
    from mixedeval.engine import check, session

    monkeypatch.setattr(session, "REQUIRED_R_PACKAGES", (*session.REQUIRED_R_PACKAGES, "notARealPackage"))
    res = check.check_r()
    assert not res.ok
    assert res.missing == ("notARealPackage",)
    assert "apt-get install -y r-cran-notarealpackage" in res.message


def test_describe_design(ter, annotation):
    d = me.describe_design(ter, ["system", "replication", "sentence_id"])
    rel = d.relations.set_index(["factor_a", "factor_b"])["relation"]
    assert rel[("system", "sentence_id")] == "crossed"
    assert rel[("system", "replication")] == "partially crossed"
    assert not d.balanced  # Baseline has one seed, the fine-tuned systems three
    a = me.describe_design(annotation, ["mode", "rater", "sentence", "occasion"])
    assert a.balanced and (a.relations["relation"] == "crossed").all()
    nested = pd.DataFrame({"system": list("aaaabbbb"), "seed": ["1", "1", "2", "2", "3", "3", "4", "4"], "y": range(8)})
    n = me.describe_design(nested, ["system", "seed"])
    assert n.relations["relation"].iloc[0] == "seed nested in system"
