"""The evaluation design carries the unreduced attempts beside their reduction (issue 41, item 2
on issue 38's design value): :func:`mixedeval.workflows.logs.design.read_design` is the one door
of every input, :attr:`EvalDesign.attempts` holds every epoch, and :func:`mixedeval.pass_at_k`
takes its attempts from the design (it no longer reads logs itself).

Checked against what was written, not against our own reader: Inspect logs written offline with
``Epochs(4, "max")`` (the log's own reducer), whose attempts are known from the answers the
solver gave, and the equivalent table built from those answers (and the run ids Inspect's own
reader gives)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.workflows import summarize as sum_mod
from mixedeval.workflows.agentic import pass_k as pass_k_mod
from mixedeval.workflows.logs import design as design_mod
from mixedeval.workflows.logs.design import read_design, reduce_epochs

N, EPOCHS = 10, 4
MODELS = (("mockllm/a", 0.7), ("mockllm/b", 0.4), ("mockllm/c", 0.55))
COLS = {"score": "score", "system": "system", "item": "item", "task": None, "run": None, "epoch": None}
KEYS = ["system", "task", "item", "run", "epoch"]


@pytest.fixture(scope="module")
def max_logs(tmp_path_factory):
    """Inspect logs of 3 models x 10 questions x 4 epochs reduced by ``max``, the table of the
    same attempts built from the answers given (with Inspect's run ids and the ``fam`` metadata)."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import Epochs, Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import list_eval_logs, read_eval_log
    from inspect_ai.scorer import match
    from inspect_helpers import answer_solver

    path = tmp_path_factory.mktemp("max_logs")
    rng = np.random.default_rng(41)
    fixed_output = answer_solver()
    ds = [Sample(id=f"q{i}", input=f"{i}+{i}?", target=str(2 * i), metadata={"fam": f"f{i % 3}"}) for i in range(N)]
    answers = {}
    for model, p in MODELS:
        pq = np.clip(p + rng.normal(0, 0.3, N), 0.02, 0.98)
        answers[model] = {f"q{i}": [str(2 * i) if rng.random() < pq[i] else "?" for _ in range(EPOCHS)]
                          for i in range(N)}
        inspect_eval(Task(dataset=ds, solver=fixed_output(answers[model]), scorer=match(),
                          epochs=Epochs(EPOCHS, "max"), name="agent"), model=model, log_dir=str(path), display="none")
    run_of = {}
    for info in list_eval_logs(str(path)):
        log = read_eval_log(info, header_only=True)
        run_of[str(log.eval.model)] = str(log.eval.run_id)
    rows = [(m, "agent", q, run_of[m], str(e + 1), float(a == str(2 * int(q[1:]))), f"f{int(q[1:]) % 3}")
            for m, per in answers.items() for q, att in per.items() for e, a in enumerate(att)]
    table = pd.DataFrame(rows, columns=[*KEYS, "score", "fam"])
    return path, table


def _canon(df: pd.DataFrame, cols=(*KEYS, "score")) -> pd.DataFrame:
    out = df[[c for c in cols if c in df.columns]].astype({c: str for c in cols if c != "score" and c in df.columns})
    return out.sort_values([c for c in cols if c != "score" and c in out.columns]).reset_index(drop=True)


def test_a_log_folder_and_the_equivalent_table_give_the_same_design_and_answer(max_logs):
    path, table = max_logs
    logs_d = read_design(path, "match", COLS, "fam", "auto", None, False, keep_epochs=True)
    cols = {**COLS, "task": "task", "run": "run", "epoch": "epoch"}
    table_d = read_design(table, None, cols, "fam", "auto", None, False)
    # the attempts are the answers given, epoch by epoch, on both doors
    assert len(logs_d.attempts) == len(MODELS) * N * EPOCHS
    pd.testing.assert_frame_equal(_canon(logs_d.attempts), _canon(table))
    pd.testing.assert_frame_equal(_canon(logs_d.attempts), _canon(table_d.attempts))
    for view in ("scores", "questions"):
        a, b = getattr(logs_d, view), getattr(table_d, view)
        cols_v = [c for c in ("system", "task", "item", "run", "cluster", "score") if c in a.columns]
        pd.testing.assert_frame_equal(_canon(a, cols_v), _canon(b, cols_v))
    assert (logs_d.systems, logs_d.n_epochs, logs_d.n_clusters, logs_d.runs) == \
           (table_d.systems, table_d.n_epochs, table_d.n_clusters, table_d.runs) == ([m for m, _ in MODELS], 4, 3, False)
    # the same answer through pass_at_k from the folder and from the table
    kw = dict(k=2, kind="both", cluster="fam", random_state=0, n_resamples=500)
    from_logs = me.pass_at_k(path, metric="match", **kw)
    from_table = me.pass_at_k(table, task="task", run="run", epoch="epoch", **kw)
    assert from_logs.headline_text() == from_table.headline_text()
    assert from_logs.answer.to_dict() == from_table.answer.to_dict()
    pd.testing.assert_frame_equal(from_logs.table, from_table.table)
    pd.testing.assert_frame_equal(from_logs.pairwise, from_table.pairwise)
    # per task n and c are the attempts written
    t = from_logs.tasks.set_index(["system", "task"])
    for (m, q), g in table.groupby(["system", "item"]):
        assert (t.loc[(m, q), "n"], t.loc[(m, q), "c"]) == (EPOCHS, int(g["score"].sum()))


def test_the_reduced_rows_are_the_reduction_of_the_attempts(max_logs):
    path, table = max_logs
    d = read_design(path, "match", COLS, "fam", "auto", None, False, keep_epochs=True)
    # one source, two views: the scores are reduce_epochs(attempts) and the mean computed here
    pd.testing.assert_frame_equal(reduce_epochs(d.attempts), d.scores)
    mean = table.groupby(["system", "item"])["score"].mean()
    got = d.scores.set_index(["system", "item"])["score"]
    np.testing.assert_allclose(got.reindex(mean.index).to_numpy(), mean.to_numpy(), rtol=0, atol=1e-15)
    # read as the log reduced it (max): one row per question, equal to the max of the attempts
    # written; that design has no attempts and pass_at_k says how to get them
    reduced = read_design(path, "match", COLS, None, "auto", None, False)
    assert reduced.attempts is None and reduced.reduction is not None and "max over 4 epochs" in reduced.epochs_text
    mx = table.groupby(["system", "item"])["score"].max()
    got = reduced.scores.set_index(["system", "item"])["score"]
    np.testing.assert_array_equal(got.reindex(mx.index).to_numpy(), mx.to_numpy())
    with pytest.raises(me.DataError, match="keep_epochs=True"):
        me.pass_at_k(me.read_eval_logs(path), k=2, metric="match")


def test_pass_at_k_reads_through_the_design_only(max_logs, monkeypatch):
    """pass_at_k no longer holds a log reader; the design's door reads the folder once."""
    path, _ = max_logs
    assert not hasattr(pass_k_mod, "read_eval_logs")
    assert sum_mod._read is read_design  # summarize, bayes_glmm and pass_at_k share the one door
    calls = []
    real = design_mod.read_eval_logs

    def counting(*a, **k):
        calls.append(k.get("keep_epochs"))
        return real(*a, **k)

    monkeypatch.setattr(design_mod, "read_eval_logs", counting)
    me.pass_at_k(path, k=1, metric="match", n_resamples=200, random_state=0)
    assert calls == [True]


def test_table_attempts_with_runs_and_without_an_epoch_column():
    rng = np.random.default_rng(3)
    rows = [(s, f"q{i}", f"seed{r}", e, float(rng.random() < 0.5)) for s in ("x", "y") for i in range(6)
            for r in range(2) for e in range(3)]
    df = pd.DataFrame(rows, columns=["system", "item", "seed", "epoch", "score"])
    before = df.copy()
    d = read_design(df, None, {**COLS, "run": "seed", "epoch": "epoch"}, None, "auto", None, False)
    pd.testing.assert_frame_equal(df, before)  # the user's frame is not modified
    assert len(d.attempts) == len(df) and set(d.attempts["epoch"]) == {"0", "1", "2"}
    pd.testing.assert_frame_equal(reduce_epochs(d.attempts), d.scores)
    mean = df.groupby(["system", "item", "seed"])["score"].mean()
    got = d.scores.set_index(["system", "item", "run"])["score"]
    np.testing.assert_allclose(got.reindex(mean.index).to_numpy(), mean.to_numpy(), atol=1e-15)
    # one sample per question and run: epoch "1"
    one = df[df["epoch"] == 0].drop(columns="epoch")
    d1 = read_design(one, None, {**COLS, "run": "seed"}, None, "auto", None, False)
    assert set(d1.attempts["epoch"]) == {"1"} and len(d1.attempts) == len(one)
    assert "epoch" not in d1.rows.columns  # the view adds it; the rows are as built
