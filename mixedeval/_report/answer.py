"""The report's first section: the one answer, read as a value (:class:`mixedeval._answer.Answer`).

Every result that compares or ranks carries one ``answer`` (:class:`mixedeval._answer.AnswerMixin`)
and declares ``_answer_priority`` on its class (lower answers first). The
report's answer is the answer of the result of lowest priority that has a headline (ties: the
report's order); the EMMs of the report's model answer too (their ``answer`` is computed from the
means, so only means of one table without ``by=`` groups). Nothing is found by type name or by
looking for attributes: the section shows ``answer.headline_text()``, ``answer.direction``,
``answer.leaderboard`` (its rank intervals labelled by ``answer.rank_label``),
``answer.differences`` (every pair best first, signed in the better direction, under
``answer.convention``) with a plot of the rows that involve the best system (or the reference),
and ``answer.checks`` with ``answer.check_summary()``: when a check differs, the section's badge
says "checks differ" (never "ok"; a severe warning makes it "warning") and the sentence, above
the checks, says what that means for the answer.

Numbers follow one rule (:mod:`mixedeval._format`): in each table estimates and interval bounds
share decimals (from the table's standard errors), p-values are :func:`mixedeval._format.fmt_p`,
and differences and checks are in the headline's units (points when it speaks points).

Other results of the same report answering the same pair, and the likelihood-ratio test of the
report's model (for an answer from its EMMs), are added to the checks.

Warnings of secondary analyses (a check's, never the headline's) are told apart by
:func:`secondary_warnings`: they are shown in a section of their own and never set the badge of
the answer or open the report.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._answer import Answer, AnswerMixin, check_row, checks_table
from .._answer import differences as anchor_differences
from .._format import decimals, fmt_fixed, fmt_interval, fmt_p
from ..inference._emm_answer import EMMAnswer
from ..workflows.compare_logs import CompareLogsResult
from ..workflows.summarize import SummarizeResult
from .blocks import Section
from .figures import difference_plot

#: the class of every result that carries an ``answer``
ANSWERING = (AnswerMixin,)
#: the priority of a result class that declares none
DEFAULT_PRIORITY = 50
#: warning kinds of the model-based check of a result whose headline is not model-based
MODEL_KINDS = frozenset({
    "random_effects_dropped", "adjust_changed", "r_message", "r_warning", "vcov_unstable", "singular", "convergence",
    "convergence_gradient", "convergence_hessian", "hessian", "optimizer_disagreement", "separation",
    "separation_penalized", "refit_ml", "ci_adjust", "df_fallback", "binary_as_lmm", "non_estimable", "warning"})
#: warning kinds about a check of the headline (the run-averaged analysis of compare_systems)
CHECK_KINDS = frozenset({"averaging"})
#: the task label of pooled rows in a pair table with tasks
POOLED = "(all tasks)"
#: the section status of an answer whose checks differ (between "ok" and "warning")
DIFFERS = "differs"


#: result classes whose model is a check of a headline that is not model-based (their model's
#: warnings are the checks' warnings)
MODEL_IS_CHECK = (CompareLogsResult, SummarizeResult)


def model_is_check(obj: Any) -> bool:
    """Whether the result's model is a check (its headline is a paired difference, not the model):
    compare_logs and summarize."""
    return isinstance(obj, MODEL_IS_CHECK)


def secondary_warnings(obj: Any) -> list[Any]:
    """The warnings of a result that belong to its checks, not to its headline: those the result
    lists in ``check_warnings``; those whose source starts with "check"; the model's warnings of a
    result whose model is a check (:func:`model_is_check`); the run-averaging note of
    compare_systems."""
    explicit = getattr(obj, "check_warnings", None)
    ws = list(getattr(obj, "warnings", ()) or ())
    if explicit is not None:
        return [w for w in ws if w in list(explicit)] + [w for w in explicit if w not in ws]
    out = [w for w in ws if str(getattr(w, "source", "")).lower().startswith("check")]
    for w in ws:
        kind = str(getattr(w, "kind", ""))
        if w not in out and ((model_is_check(obj) and kind in MODEL_KINDS) or kind in CHECK_KINDS):
            out.append(w)
    return out


def primary_warnings(obj: Any) -> list[Any]:
    """The result's warnings that concern its headline (all but :func:`secondary_warnings`)."""
    sec = secondary_warnings(obj)
    return [w for w in (getattr(obj, "warnings", ()) or ()) if w not in sec]


# ------------------------------------------------------------------------------ which answer
def priority(obj: Any) -> float:
    """The answer priority the result's class declares (``_answer_priority``, lower first)."""
    return float(getattr(type(obj), "_answer_priority", DEFAULT_PRIORITY))


def answer_value(obj: Any, errors: list[Exception] | None = None) -> Answer | None:
    """The result's :class:`Answer`, or None when it carries none or it cannot be computed (the
    exception is appended to ``errors``)."""
    if not isinstance(obj, ANSWERING):
        return None
    try:
        a = obj.answer
    except Exception as exc:  # noqa: BLE001 - a result whose answer cannot be computed does not answer
        if errors is not None:
            errors.append(exc)
        return None
    return a if isinstance(a, Answer) else None


def _ranks_one_table(emm: Any) -> bool:
    """Whether the EMMs are the means of one table (no ``by=`` groups, not trends): these answer."""
    return not getattr(emm, "by", ()) and getattr(emm, "kind", "emmeans") == "emmeans" and len(emm.table) > 1


def candidates(items: list[tuple[Any, Any]], emms: list[Any]) -> list[Any]:
    """The results that carry an answer, the answering one first: by ``_answer_priority`` of
    their class (lower first), ties in report order (the result sections, then the model's EMMs
    of one table). The answers are computed lazily (:func:`answer_value`)."""
    objs = [obj for _, obj in items if isinstance(obj, ANSWERING)]
    objs += [e for e in emms if isinstance(e, ANSWERING) and _ranks_one_table(e)]
    return [o for _, o in sorted(enumerate(objs), key=lambda io: (priority(io[1]), io[0]))]


def answering(items: list[tuple[Any, Any]], emms: list[Any]) -> tuple[Any, Answer] | None:
    """The result that answers and its answer: the first of :func:`candidates` whose answer has a
    headline, else the first with a leaderboard; None when no result answers. When no result
    answers because computing an answer failed, that error is raised (the report shows it in the
    answer section)."""
    with_board = None
    errors: list[Exception] = []
    for obj in candidates(items, emms):
        a = answer_value(obj, errors)
        if a is None:
            continue
        if a.headline is not None:
            return obj, a
        if with_board is None and a.leaderboard is not None and len(a.leaderboard):
            with_board = (obj, a)
    if with_board is None and errors:
        raise errors[0]
    return with_board


# ------------------------------------------------------------------------------ checks added by the report
@dataclass
class Answered:
    """The answer of the result that answers this report: the result (``source``), its
    :class:`Answer`, what produced it (``what``), and its checks with those this report adds
    (other results answering the same pair, the model's likelihood-ratio test)."""

    source: Any
    answer: Answer
    what: str
    checks: pd.DataFrame | None = None
    added: list[dict[str, Any]] = field(default_factory=list)


def _title(obj: Any) -> str:
    return str(getattr(obj, "_title", "") or type(obj).__name__)


def cross_checks(answer: Answer, others: list[Any]) -> list[dict[str, Any]]:
    """Other results of the report answering the same question (the same pair of systems) as
    checks of the answer: their estimate of the headline's advantage (in the better direction),
    interval and p-value. A result on another scale (another unit or scale of its headline: IRT
    logits beside accuracy points) gives its p-value only."""
    head = answer.headline
    rows: list[dict[str, Any]] = []
    if head is None:
        return rows
    for obj in others:
        a = answer_value(obj)
        h = None if a is None else a.headline
        if h is None or {str(h.better), str(h.other)} != {str(head.better), str(head.other)}:
            continue
        same = str(h.better) == str(head.better)
        est = h.estimate if same else -h.estimate
        lo, hi = (h.conf_low, h.conf_high) if same else (-h.conf_high, -h.conf_low)
        name = f"{_title(obj)} ({h.method}), also in this report"
        if (h.unit, h.scale) != (head.unit, head.scale):
            est = lo = hi = np.nan
            name += f"; its estimate is on another scale ({h.unit or 'the score'})"
        rows.append(check_row(name, head, estimate=est, conf_low=lo, conf_high=hi, p_value=h.p_value))
    return rows


def model_checks(answer: Answer, comparisons: list[Any]) -> list[dict[str, Any]]:
    """The likelihood-ratio test of the report's model (against the model without fixed
    effects) as a check of an answer from the model's EMMs."""
    head = answer.headline
    rows: list[dict[str, Any]] = []
    if head is None:
        return rows
    k = len(answer.leaderboard) if answer.leaderboard is not None else 2
    for comp in comparisons:
        t = getattr(comp, "table", None)
        if not isinstance(t, pd.DataFrame) or "p_value" not in t.columns or not t["p_value"].notna().any():
            continue
        p = float(t["p_value"].dropna().iloc[-1])
        name = "likelihood-ratio test of the model's fixed effects (ML refits)"
        r = check_row(name, head, p_value=p)
        if k > 2 and r["verdict"].startswith("differs"):
            r = check_row(name, head, p_value=p, why="the likelihood-ratio test asks whether any of the systems "
                          "differ, not this pair")
        rows.append(r)
    return rows


def answer_of(obj: Any, others: list[Any] = (), comparisons: list[Any] = (), *,
              answer: Answer | None = None, from_model: bool | None = None) -> Answered:
    """The :class:`Answered` of a result: its :class:`Answer` (``answer``, else ``obj.answer``)
    with the checks this report adds: the ``others`` results answering the same pair
    (:func:`cross_checks`) and, for an answer from the model's EMMs (``from_model``; by default
    when ``obj`` is a table of means), the likelihood-ratio tests of the model (``comparisons``)."""
    a = answer if answer is not None else answer_value(obj)
    if a is None:
        raise ValueError(f"{type(obj).__name__} carries no answer")
    if from_model is None:
        from_model = isinstance(obj, EMMAnswer)
    added = [*(model_checks(a, list(comparisons)) if from_model else []),
             *cross_checks(a, [o for o in others if o is not obj])]
    checks = a.checks if a.checks is not None and len(a.checks) else None
    if added:
        checks = pd.concat([c for c in (checks, checks_table(added)) if c is not None], ignore_index=True)
    return Answered(obj, a, _title(obj), checks, added)


def check_summary(ans: Answered) -> str:
    """What the checks (the answer's and those this report adds) mean for the answer:
    :meth:`Answer.check_summary` of the answer with all of them; "" when none differs."""
    if ans.checks is None or ans.checks is ans.answer.checks:
        return ans.answer.check_summary()
    return Answer(direction=ans.answer.direction, leaderboard=ans.answer.leaderboard, headline=ans.answer.headline,
                  checks=ans.checks).check_summary()


# ------------------------------------------------------------------------------ tables, one number rule
def _num(series: Any) -> np.ndarray:
    return pd.to_numeric(pd.Series(series), errors="coerce").to_numpy(dtype=float)


def _col(t: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column of a table (all missing when the table has none)."""
    return _num(t[name]) if name in t.columns else np.full(len(t), np.nan)


def _level(answer: Answer) -> float:
    return float(answer.headline.level) if answer.headline is not None else 0.95


def _pct(level: float) -> str:
    return f"{int(round(100 * level))}%"


def _rank_text(lo: Any, hi: Any) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f"{int(lo)}" if lo == hi else f"{int(lo)}-{int(hi)}"


def _drop_blank(t: pd.DataFrame, keep: tuple[str, ...] = ()) -> pd.DataFrame:
    """The table without its columns that are blank in every row (a value nobody has)."""
    if not len(t):
        return t
    return t.loc[:, [c for c in t.columns if c in keep or not (t[c].astype(str) == "").all()]]


def board_table(answer: Answer) -> tuple[pd.DataFrame, list[str]]:
    """The leaderboard as shown: rank, name, estimate and its interval (decimals of the
    leaderboard's standard errors, in the score's units), the rank interval labelled by its kind
    (``answer.rank_kind``) and the letters; the numeric columns' names second."""
    b = answer.leaderboard
    est, lo, hi = _col(b, "estimate"), _col(b, "conf_low"), _col(b, "conf_high")
    dg = decimals(_col(b, "std_error"), lo, hi)
    out = pd.DataFrame({"rank": [_rank_text(r, r) for r in _col(b, "rank")], "name": b["name"].astype(str).to_numpy(),
                        "estimate": [fmt_fixed(v, dg) if np.isfinite(v) else "" for v in est],
                        f"{_pct(_level(answer))} interval": [fmt_interval(x, y, dg) for x, y in zip(lo, hi)],
                        f"rank interval ({answer.rank_kind})": [_rank_text(x, y) for x, y in
                                                                zip(_col(b, "rank_low"), _col(b, "rank_high"))],
                        "letters": (b["letters"].fillna("").astype(str).to_numpy() if "letters" in b.columns
                                    else [""] * len(b))})
    out = _drop_blank(out, ("rank", "name"))
    return out, [c for c in out.columns if c not in ("name", "letters")]


def _unit_suffix(answer: Answer) -> str:
    return f" ({answer.unit})" if answer.unit else ""


def headline_task_rows(answer: Answer) -> pd.DataFrame | None:
    """The rows of ``answer.differences`` of the headline's question: with a ``task`` column,
    the headline's task (the pooled rows, ``(all tasks)``, for a pooled headline; all rows when
    there is one task)."""
    d = answer.differences
    if d is None or not len(d):
        return None
    if "task" not in d.columns or d["task"].astype(str).nunique() == 1:
        return d
    task = answer.headline.task if answer.headline is not None else None
    rows = d[d["task"].astype(str) == str(task if task is not None else POOLED)]
    return rows if len(rows) else None


def differences_table(answer: Answer) -> tuple[pd.DataFrame, list[str]]:
    """Every pair of ``answer.differences`` as shown, the headline's task first: system_a (above
    system_b on the leaderboard), system_b, delta (system_a's advantage in the better direction)
    with its interval, in the headline's units, one number of decimals for the table (from its
    standard errors), p-values by :func:`fmt_p`."""
    d = answer.differences
    if "task" in d.columns and d["task"].astype(str).nunique() > 1:
        first = headline_task_rows(answer)
        if first is not None:
            d = pd.concat([first, d.drop(index=first.index)])
    s, u = answer.scale, _unit_suffix(answer)
    est, lo, hi = s * _num(d["delta"]), s * _num(d["conf_low"]), s * _num(d["conf_high"])
    se = s * _num(d["std_error"]) if "std_error" in d.columns else None
    dg = decimals(se, lo, hi, lo=1)
    out = pd.DataFrame({"system_a": d["system_a"].astype(str).to_numpy(), "system_b": d["system_b"].astype(str).to_numpy(),
                        f"delta{u}": [fmt_fixed(v, dg, sign=True) for v in est],
                        f"{_pct(_level(answer))} interval{u}": [fmt_interval(x, y, dg, sign=True) for x, y in zip(lo, hi)]})
    if se is not None:
        out[f"std_error{u}"] = [fmt_fixed(v, dg) if np.isfinite(v) else "" for v in se]
    for c in ("p_value", "p_adj"):
        if c in d.columns:
            out[c] = [fmt_p(v) if np.isfinite(v) else "" for v in _num(d[c])]
    if "task" in d.columns:
        out.insert(0, "task", d["task"].astype(str).to_numpy())
    out = _drop_blank(out, ("system_a", "system_b"))
    return out, [c for c in out.columns if c not in ("task", "system_a", "system_b")]


def checks_shown(checks: pd.DataFrame, answer: Answer) -> tuple[pd.DataFrame, list[str]]:
    """The checks as shown: each check's estimate of the headline's advantage and its interval in
    the headline's units with the headline's decimals, its p-value by :func:`fmt_p`, its verdict;
    a check without an estimate on this scale has blank cells."""
    s, u = answer.scale, _unit_suffix(answer)
    head = answer.headline
    est, lo, hi = s * _num(checks["estimate"]), s * _num(checks["conf_low"]), s * _num(checks["conf_high"])
    dg = decimals(s * head.std_error if head is not None else None, lo, hi, lo=1)
    out = pd.DataFrame({"check": checks["check"].astype(str).to_numpy(),
                        f"estimate{u}": [fmt_fixed(v, dg, sign=True) if np.isfinite(v) else "" for v in est],
                        f"{_pct(_level(answer))} interval{u}": [fmt_interval(x, y, dg, sign=True) for x, y in zip(lo, hi)],
                        "p_value": [fmt_p(v) if np.isfinite(v) else "" for v in _num(checks["p_value"])],
                        "verdict": checks["verdict"].astype(str).to_numpy()})
    out = _drop_blank(out, ("check", "verdict"))
    return out, [c for c in out.columns if c not in ("check", "verdict")]


def anchor_rows(answer: Answer) -> pd.DataFrame | None:
    """Every system's difference from the best (or the headline's reference), in the better
    direction (> 0: better than it), from the rows of ``answer.differences`` (the headline's
    task) that involve it: name, versus, estimate, conf_low, conf_high, p_value."""
    d = headline_task_rows(answer)
    b = answer.leaderboard
    if d is None or b is None or not len(b):
        return None
    head = answer.headline
    anchor = str(head.reference) if head is not None and head.reference is not None else str(b["name"].iloc[0])
    pairs = pd.DataFrame({"a": d["system_a"].astype(str).to_numpy(), "b": d["system_b"].astype(str).to_numpy(),
                          "delta": _num(d["delta"]), "conf_low": _num(d["conf_low"]), "conf_high": _num(d["conf_high"]),
                          "p_value": _num(d["p_value"]) if "p_value" in d.columns else np.nan})
    # delta is already system_a's advantage in the better direction: higher_is_better=True keeps its sign
    rows = anchor_differences(pairs, anchor, list(b["name"].astype(str)), True)
    return rows if len(rows) else None


# ------------------------------------------------------------------------------ the section
def _table_block(df: pd.DataFrame, caption: str, numeric: list[str], max_rows: int = 60) -> dict[str, Any]:
    tmp = Section("tmp", "")
    tmp.table(df, caption, max_rows=max_rows, numeric=numeric)
    return tmp.blocks[0]


def build_answer(sec: Section, ans: Answered) -> None:
    """The answer section: the headline sentence, the direction, the leaderboard (rank intervals
    labelled) beside the plot of every system's difference from the best (or the reference),
    the checks with what they mean for the answer, every pair best first under its sign
    convention. Checks that differ set the badge to "checks differ" and put the sentence of
    :func:`check_summary` above the checks."""
    a = ans.answer
    head = a.headline
    text = a.headline_text()
    sec.headline = text
    notes = []
    if a.direction is not None:
        notes.append(f"Direction: {a.direction.note}.")
    if head is not None:
        notes.append(f"From: {ans.what} ({head.method}); "
                     + ("the two systems are told apart" if head.distinguishable else
                        "the two systems are not told apart") + f" at the {_pct(head.level)} level.")
    board_block = fig_block = diff_block = None
    if a.leaderboard is not None and len(a.leaderboard):
        shown, num = board_table(a)
        board_block = _table_block(shown, f"Leaderboard, best first: estimate with its {_pct(_level(a))} interval "
                                          f"(in the score's units); {a.rank_label}; systems sharing a letter are not "
                                          "told apart", num)
    anchors = anchor_rows(a)
    if anchors is not None:
        anchor = str(anchors["versus"].iloc[0])
        label = f"difference from {anchor}{_unit_suffix(a)}; + = better"
        fig = sec.guarded("difference plot", difference_plot, list(anchors["name"]), anchors["estimate"],
                          anchors["conf_low"], anchors["conf_high"], anchor=anchor, xlabel=label, scale=a.scale)
        if fig is not None:
            what = "the reference" if head is not None and head.reference is not None else "the best"
            tmp = Section("tmp", "")
            tmp.figure(fig, f"Every system's difference from {what} ({anchor}), in the better direction, with "
                            f"{_pct(_level(a))} intervals (unadjusted); blue: told apart")
            fig_block = tmp.blocks[0]["figures"][0]
    if a.differences is not None and len(a.differences):
        shown, num = differences_table(a)
        diff_block = _table_block(shown, f"Every pair, best first ({a.method or 'the answer'}): {a.convention}", num)
    check_block = None
    summary = check_summary(ans)
    if ans.checks is not None and len(ans.checks):
        shown, num = checks_shown(ans.checks, a)
        check_block = _table_block(shown, "Checks: other analyses of the same question, each with its estimate of the "
                                          "headline's advantage (where it has one on that scale) and its verdict", num)
    if summary:  # the badge; the sentence stands above the checks (the headline stays the section's first line)
        sec.set_status(DIFFERS)
    sec.blocks.append({"kind": "answer", "headline": text, "notes": notes, "board": board_block,
                       "figure": fig_block, "checks": check_block, "summary": summary, "differences": diff_block})
