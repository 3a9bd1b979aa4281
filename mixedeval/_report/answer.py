"""The report's first section: the one answer (issue 30), driven by the result protocol of
:mod:`mixedeval._answer`.

A result answers when it has a ``headline`` (a :class:`mixedeval._answer.Headline`, or a method
returning one, as EMMs have); with it come ``leaderboard`` (best first), ``checks`` (other
analyses of the same question with verdicts), ``direction`` and ``differences`` (every system
against the best or the reference). Everything is read with ``getattr``, so any result type that
follows the protocol lights up. The answering result is the first one, in the order of
:data:`ANSWER_PRIORITY`, whose headline exists; without one, the EMMs of the report's model answer.

Warnings of secondary analyses (a check's, never the headline's) are told apart by
:func:`secondary_warnings`: they are shown in a section of their own and never set the badge of
the answer or open the report.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._answer import check_row, differences as answer_differences, versus as answer_versus
from .blocks import Section, fmt_number
from .figures import difference_plot

#: result type names, the first that answers is the report's answer (then the given order)
ANSWER_PRIORITY = ("CompareLogsResult", "SummarizeResult", "CompareSystemsResult", "BradleyTerryResult",
                   "BootstrapResult")
#: warning kinds of the model-based check of a result whose headline is not model-based
MODEL_KINDS = frozenset({
    "random_effects_dropped", "adjust_changed", "r_message", "r_warning", "vcov_unstable", "singular", "convergence",
    "convergence_gradient", "convergence_hessian", "hessian", "optimizer_disagreement", "separation",
    "separation_penalized", "refit_ml", "ci_adjust", "df_fallback", "binary_as_lmm", "non_estimable", "warning"})
#: result types whose headline does not come from their model (the model is a check)
MODEL_IS_CHECK = ("CompareLogsResult", "SummarizeResult")
#: warning kinds about a check of the headline (the run-averaged analysis of compare_systems)
CHECK_KINDS = frozenset({"averaging"})
POOLED = "(all tasks)"


@dataclass
class Answer:
    """The answer of one result: its headline, leaderboard, checks, direction and differences."""

    source: Any
    headline: Any
    leaderboard: pd.DataFrame | None
    checks: pd.DataFrame | None = None
    direction: Any = None
    differences: pd.DataFrame | None = None
    what: str = ""
    problems: list[str] = field(default_factory=list)


def _value(obj: Any, name: str) -> Any:
    v = getattr(obj, name, None)
    return v() if callable(v) else v


def _type_name(obj: Any) -> str:
    return type(obj).__name__


def model_is_check(obj: Any) -> bool:
    """Whether the result's model is a check (its headline is a paired difference, not the model)."""
    return _type_name(obj) in MODEL_IS_CHECK


def secondary_warnings(obj: Any) -> list[Any]:
    """The warnings of a result that belong to its checks, not to its headline: those the result
    lists in ``check_warnings``; those whose source starts with "check"; the model's warnings of a
    result whose model is a check (:data:`MODEL_IS_CHECK`); the run-averaging note of
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


def _has_headline(obj: Any) -> bool:
    h = getattr(obj, "headline", None)
    return h is not None and not isinstance(h, str)


def _answering_emm(emms: list[Any]) -> Any:
    for emm in emms:
        if callable(getattr(emm, "leaderboard", None)) and not getattr(emm, "by", ()) \
                and getattr(emm, "kind", "emmeans") == "emmeans" and len(getattr(emm, "table", ())) > 1:
            return emm
    return None


def candidates(items: list[tuple[Any, Any]], emms: list[Any]) -> list[Any]:
    """The results that can answer, best first: by :data:`ANSWER_PRIORITY` (the EMMs of the
    report's model just before a bootstrap result), then in the given order."""
    rank = {n: i for i, n in enumerate(ANSWER_PRIORITY)}
    rank["EMM"] = rank["BootstrapResult"] - 0.5
    cands = [obj for _, obj in items if _has_headline(obj)]
    emm = _answering_emm(emms)
    if emm is not None:
        cands.append(emm)
    def key(o: Any) -> float:
        return rank.get("EMM" if o is emm else _type_name(o), len(rank))
    return sorted(cands, key=key)


def answering(items: list[tuple[Any, Any]], emms: list[Any]) -> Any:
    """The result that answers (the first of :func:`candidates`), or None."""
    c = candidates(items, emms)
    return c[0] if c else None


def cross_checks(ans: "Answer", others: list[Any]) -> list[dict[str, Any]]:
    """Other results of the report answering the same question (the same pair of systems) as
    checks of the answer: their estimate of the headline's advantage, interval and p-value."""

    head = ans.headline
    rows = []
    if head is None or not hasattr(head, "better"):
        return rows
    for obj in others:
        try:
            h = _value(obj, "headline")
        except Exception:  # noqa: BLE001 - a result that cannot answer is no check
            continue
        if h is None or not hasattr(h, "better") or {str(h.better), str(h.other)} != {str(head.better), str(head.other)}:
            continue
        same = str(h.better) == str(head.better)
        est = h.estimate if same else -h.estimate
        lo, hi = (h.conf_low, h.conf_high) if same else (-h.conf_high, -h.conf_low)
        what = str(getattr(obj, "_title", "") or _type_name(obj))
        rows.append(check_row(f"{what} ({h.method}), also in this report", head, estimate=est, conf_low=lo,
                              conf_high=hi, p_value=h.p_value))
    return rows


def model_checks(ans: "Answer", comparisons: list[Any]) -> list[dict[str, Any]]:
    """The likelihood-ratio test of the report's model (against the model without fixed
    effects) as a check of an answer from the model's EMMs."""

    head = ans.headline
    rows = []
    if head is None or not hasattr(head, "better"):
        return rows
    for comp in comparisons:
        t = getattr(comp, "table", None)
        if not isinstance(t, pd.DataFrame) or "p_value" not in t.columns or not t["p_value"].notna().any():
            continue
        p = float(t["p_value"].dropna().iloc[-1])
        k = len(ans.leaderboard) if ans.leaderboard is not None else 2
        r = check_row("likelihood-ratio test of the model's fixed effects (ML refits)", head, p_value=p)
        if k > 2 and r["verdict"].startswith("differs"):
            r = check_row(r["check"], head, p_value=p, why="the likelihood-ratio test asks whether any of the systems "
                          "differ, not this pair")
        rows.append(r)
    return rows


def _pairs_table(obj: Any, head: Any) -> pd.DataFrame | None:
    """A pairwise table of the result (``pairwise`` or ``table`` with system_a, system_b, delta,
    conf_low, conf_high) for the headline's task (pooled rows first) as a, b, delta, conf_low,
    conf_high, p_value."""
    need = {"system_a", "system_b", "delta", "conf_low", "conf_high"}
    for name in ("pairwise", "table"):
        t = getattr(obj, name, None)
        if not isinstance(t, pd.DataFrame) or not need <= set(t.columns):
            continue
        if "task" in t.columns:
            task = getattr(head, "task", None)
            pooled = t[t["task"].astype(str) == (task or POOLED)]
            t = pooled if len(pooled) else (t if t["task"].nunique() == 1 else t.iloc[:0])
        if not len(t):
            continue
        p = t["p_value"] if "p_value" in t.columns else np.nan
        return pd.DataFrame({"a": t["system_a"].astype(str).to_numpy(), "b": t["system_b"].astype(str).to_numpy(),
                             "delta": t["delta"].to_numpy(dtype=float), "conf_low": t["conf_low"].to_numpy(dtype=float),
                             "conf_high": t["conf_high"].to_numpy(dtype=float),
                             "p_value": np.asarray(p, dtype=float) if np.ndim(p) else np.nan})
    return None


def _differences(obj: Any, board: pd.DataFrame | None, head: Any, direction: Any) -> pd.DataFrame | None:
    d = _value(obj, "differences")
    if isinstance(d, pd.DataFrame) and {"system_a", "system_b"} <= set(d.columns):  # an Answer's best-first pairs
        if board is None or not len(board) or not len(d):
            return None
        anchor = str(head.reference) if getattr(head, "reference", None) is not None else str(board["name"].iloc[0])
        return answer_versus(d, anchor, order=list(board["name"].astype(str)))
    if isinstance(d, pd.DataFrame):
        return d
    if board is None or head is None:
        return None
    pairs = _pairs_table(obj, head)
    if pairs is None:
        return None
    anchor = str(head.reference) if getattr(head, "reference", None) is not None else str(board["name"].iloc[0])
    hib = bool(getattr(direction, "higher_is_better", True))
    return answer_differences(pairs, anchor, list(board["name"].astype(str)), hib)


def answer_of(obj: Any, others: list[Any] = (), comparisons: list[Any] = ()) -> Answer:
    """The :class:`Answer` of a result (EMMs: their methods are called with the defaults); the
    ``others`` results of the report that answer the same pair, and for EMMs the model's
    likelihood-ratio tests (``comparisons``), are added to its checks."""
    head = _value(obj, "headline")
    board = _value(obj, "leaderboard")
    direction = getattr(obj, "direction", None)
    if callable(direction):
        direction = direction()
    direction = direction if direction is not None else getattr(head, "direction", None)
    checks = _value(obj, "checks")
    what = str(getattr(obj, "_title", "") or _type_name(obj))
    diffs = _differences(obj, board if isinstance(board, pd.DataFrame) else None, head, direction)
    checks = checks if isinstance(checks, pd.DataFrame) and len(checks) else None
    ans = Answer(obj, head, board if isinstance(board, pd.DataFrame) else None, checks, direction, diffs, what)
    extra = [*(model_checks(ans, list(comparisons)) if callable(getattr(obj, "leaderboard", None)) else []),
             *cross_checks(ans, [o for o in others if o is not obj])]
    if extra:
        ans.checks = pd.concat([c for c in (checks, pd.DataFrame(extra)) if c is not None], ignore_index=True)
    return ans


def _interval_text(lo: Any, hi: Any) -> str:

    if not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f"{fmt_number(float(lo))} to {fmt_number(float(hi))}"


def shown_board(board: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """The leaderboard as shown on the first screen: rank, name, estimate, the interval and the
    rank interval as text, letters; columns that are all missing left out (std_error and the
    interval's bounds are in the result's own section)."""
    b = board
    out = pd.DataFrame({"rank": b["rank"].to_numpy(), "name": b["name"].astype(str).to_numpy(),
                        "estimate": b["estimate"].to_numpy(dtype=float)})
    if {"conf_low", "conf_high"} <= set(b.columns):
        out[f"{int(round(100 * level))}% interval"] = [_interval_text(lo, hi) for lo, hi in
                                                        zip(b["conf_low"].astype(float), b["conf_high"].astype(float))]
    if {"rank_low", "rank_high"} <= set(b.columns):
        lo = pd.to_numeric(b["rank_low"], errors="coerce")
        hi = pd.to_numeric(b["rank_high"], errors="coerce")
        out["rank interval"] = ["" if not (np.isfinite(x) and np.isfinite(y)) else
                                (f"{int(x)}" if x == y else f"{int(x)}-{int(y)}") for x, y in zip(lo, hi)]
    if "letters" in b.columns:
        out["letters"] = b["letters"].astype(str).to_numpy()
    return out.loc[:, [c for c in out.columns if not (out[c].astype(str) == "").all()]]


def _scaled_checks(checks: pd.DataFrame, head: Any) -> pd.DataFrame:
    """The checks with their estimates in the headline's units (``scale``, e.g. points)."""
    scale = float(getattr(head, "scale", 1.0) or 1.0)
    unit = str(getattr(head, "unit", "") or "")
    if scale == 1.0 and not unit:
        return checks
    out = checks.copy()
    for c in ("estimate", "conf_low", "conf_high"):
        if c in out.columns:
            out[c] = pd.to_numeric(out[c], errors="coerce") * scale
    return out.rename(columns={c: f"{c} ({unit})" for c in ("estimate", "conf_low", "conf_high") if unit})


def build_answer(sec: Section, ans: Answer) -> None:
    """The answer section: the headline sentence, the direction, the leaderboard beside the plot
    of every system's difference from the best (or the reference), then the checks."""
    head = ans.headline
    text = head.text() if head is not None and hasattr(head, "text") else str(_value(ans.source, "headline_text") or "")
    sec.headline = text
    notes = []
    if ans.direction is not None and getattr(ans.direction, "note", None):
        notes.append(f"Direction: {ans.direction.note}.")
    if head is not None:
        notes.append(f"From: {ans.what} ({head.method}); "
                     + ("the two systems are told apart" if head.distinguishable else
                        "the two systems are not told apart") + f" at the {int(round(100 * head.level))}% level.")
    board_block = fig_block = None
    if ans.leaderboard is not None and len(ans.leaderboard):
        tmp = Section("tmp", "")
        tmp.table(shown_board(ans.leaderboard, float(getattr(head, "level", 0.95) or 0.95)), "Leaderboard, best first: estimate with its interval; rank "
                  "interval: simultaneous (all systems at once, Mogstad et al. 2024); systems sharing a letter are not "
                  "told apart", max_rows=60)
        board_block = tmp.blocks[0]
    if ans.differences is not None and len(ans.differences):
        d = ans.differences
        anchor = str(d["versus"].iloc[0])
        scale = float(getattr(head, "scale", 1.0) or 1.0)
        unit = str(getattr(head, "unit", "") or "")
        ref = getattr(head, "reference", None)
        label = f"difference from {anchor}" + (f" ({unit})" if unit else "") + "; + = better"
        tmp = Section("tmp", "")
        fig = sec.guarded("difference plot", difference_plot, list(d["name"]), d["estimate"], d["conf_low"],
                          d["conf_high"], anchor=anchor, xlabel=label, scale=scale)
        if fig is not None:
            what = "the reference" if ref is not None else "the best"
            tmp.figure(fig, f"Every system's difference from {what} ({anchor}), in the better direction, with "
                            f"{int(round(100 * getattr(head, 'level', 0.95)))}% intervals (unadjusted); blue: told apart")
            fig_block = tmp.blocks[0]["figures"][0]
    check_block = None
    if ans.checks is not None:
        tmp = Section("tmp", "")
        tmp.table(_scaled_checks(ans.checks, head), "Checks: other analyses of the same question, each with its "
                  "estimate of the headline's advantage (where it has one on that scale) and its verdict")
        check_block = tmp.blocks[0]
    sec.blocks.append({"kind": "answer", "headline": text, "notes": notes, "board": board_block,
                       "figure": fig_block, "checks": check_block})
