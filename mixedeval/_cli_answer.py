"""The command line's one printer of an answer (:class:`mixedeval._answer.Answer`).

Every subcommand whose result compares or ranks systems (``compare-logs``, ``summarize``,
``bootstrap``, ``fit --emmeans``, ``preferences``, ``judge``, ``irt`` and the demos) prints its
answer with :func:`render_answer` first, and with ``--json`` puts :func:`answer_record` first;
nothing else in the command line prints a headline, a leaderboard, the differences or the checks.

The text, in this order:

* ``headline:`` the headline sentence (:meth:`Answer.headline_text`) and ``direction:`` the note
  saying which way the score is better and how that was decided;
* the best-first leaderboard, its rank interval labelled with :attr:`Answer.rank_label`
  (simultaneous or marginal) in a column named after its kind;
* the differences (every pair best first, ``delta`` = the advantage of ``system_a`` in the
  better direction) under the sign convention (:attr:`Answer.convention`);
* the checks, and :meth:`Answer.check_summary` when a check differs.

Numbers follow the one rule of :mod:`mixedeval._format`: the estimates and the interval bounds of
one table share their decimals (two significant digits of the table's smallest standard error;
the checks take the headline's, so that they read against it), p-values are :func:`fmt_p`, a
missing value prints ``NA`` and a column missing in every row is left out. Estimates are in the
headline's units (:attr:`Answer.unit`, :attr:`Answer.scale`: accuracy or TER points) and the
column names say so. ``words`` (the command line's translation of Python-argument advice into its
flags, :func:`mixedeval.cli.in_cli_terms`) is applied to every sentence printed.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from . import _answer
from ._answer import Answer
from ._format import decimals, fmt_fixed, fmt_p

Words = Callable[[str], str]


def _same(text: str) -> str:
    return text


def _unit_label(answer: Answer) -> str:
    """`` (points)`` or ``""``: the unit the tables' estimates are printed in."""
    return f" ({answer.unit})" if answer.unit else ""


def _level(answer: Answer) -> float:
    return float(answer.headline.level) if answer.headline is not None else 0.95


def _nums(frame: pd.DataFrame, col: str) -> np.ndarray:
    return frame[col].to_numpy(dtype=float) if col in frame.columns else np.full(len(frame), np.nan)


#: a formatted number cell: NA, a fixed or e-notation number, Inf, <1e-300, a rank interval 1–3
_NUMBER = r"NA|[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?|Inf)|<1e-300|[0-9]+–[0-9]+"


def text_table(title: str, rows: pd.DataFrame, *, notes: tuple[str, ...] = ()) -> str:
    """A titled text table of already-formatted cells (strings): ``== title ==``, the ``notes``
    lines, then the columns (numbers right-aligned, words left-aligned). A column whose every
    cell is empty or ``NA`` is left out (as the report leaves it out)."""
    keep = [c for c in rows.columns if not rows[c].astype(str).isin(["", "NA"]).all()]
    t = rows[keep].astype(str)
    lines = [f"\n== {title} =="] + [n for n in notes if n]
    if not len(t.columns):
        return "\n".join(lines)
    numeric = {c: bool(len(t) and t[c].str.fullmatch(_NUMBER).all()) for c in t.columns}
    width = {c: max([len(str(c)), *(len(v) for v in t[c])]) for c in t.columns}

    def cell(c: str, v: str) -> str:
        return v.rjust(width[c]) if numeric[c] else v.ljust(width[c])

    lines.append("  ".join(cell(c, str(c)) for c in t.columns).rstrip())
    lines += ["  ".join(cell(c, v) for c, v in zip(t.columns, r)).rstrip() for r in t.itertuples(index=False)]
    return "\n".join(lines)


def _fixed(values: np.ndarray, digits: int, *, sign: bool = False, scale: float = 1.0) -> list[str]:
    return [fmt_fixed(scale * v, digits, sign=sign) for v in values]


def _interval_text(lo: Any, hi: Any) -> str:
    try:
        a, b = int(lo), int(hi)
    except (TypeError, ValueError):
        return "NA"
    return f"{a}–{b}"


# ------------------------------------------------------------------------------ the parts
def leaderboard_table(answer: Answer) -> str:
    """The best-first leaderboard in the headline's units, its rank interval labelled."""
    b = answer.leaderboard
    if b is None or not len(b):
        return ""
    s, u = answer.scale, _unit_label(answer)
    est, se, lo, hi = (_nums(b, c) for c in ("estimate", "std_error", "conf_low", "conf_high"))
    d = decimals(se, lo, hi, scale=s, lo=1)
    lvl = int(round(100 * _level(answer)))
    rows = pd.DataFrame({
        "rank": [str(int(r)) if np.isfinite(r) else "NA" for r in _nums(b, "rank")],
        "name": b["name"].astype(str).to_numpy(),
        f"estimate{u}": _fixed(est, d, scale=s),
        "std_error": _fixed(se, d, scale=s),
        "conf_low": _fixed(lo, d, scale=s),
        "conf_high": _fixed(hi, d, scale=s),
        f"{answer.rank_kind} rank": [_interval_text(a, z) for a, z in zip(b.get("rank_low", []), b.get("rank_high", []))]
        if {"rank_low", "rank_high"} <= set(b.columns) else "NA",
        "letters": b["letters"].fillna("").astype(str).to_numpy() if "letters" in b.columns else "",
    })
    notes = (f"best first; {lvl}% intervals; {answer.rank_kind} rank: the {answer.rank_label}"
             + ("; systems sharing a letter are not told apart" if rows["letters"].astype(bool).any() else ""),)
    return text_table("leaderboard", rows, notes=notes)


def pairs_table(answer: Answer, pairs: pd.DataFrame | None, title: str, *, words: Words = _same,
                what: str = "every pair, best first") -> str:
    """A pair table (``system_a``, ``system_b``, ``delta`` = the advantage of system_a, best
    first: :func:`mixedeval._answer.best_first_pairs`) in the headline's units under the sign
    convention: the answer's differences, or another analysis' pairs rewritten by the same rule."""
    if pairs is None or not len(pairs):
        return ""
    s, u = answer.scale, _unit_label(answer)
    delta, se, lo, hi = (_nums(pairs, c) for c in ("delta", "std_error", "conf_low", "conf_high"))
    d = decimals(se, lo, hi, scale=s, lo=1)
    cols: dict[str, Any] = {}
    if "task" in pairs.columns and pairs["task"].astype(str).nunique() > 1:
        cols["task"] = pairs["task"].astype(str).to_numpy()
    cols["system_a"] = pairs["system_a"].astype(str).to_numpy()
    cols["system_b"] = pairs["system_b"].astype(str).to_numpy()
    cols[f"delta{u}"] = _fixed(delta, d, sign=True, scale=s)
    cols["std_error"] = _fixed(se, d, scale=s)
    cols["conf_low"] = _fixed(lo, d, sign=True, scale=s)
    cols["conf_high"] = _fixed(hi, d, sign=True, scale=s)
    for c in ("p_value", "p_adj"):
        cols[c] = [fmt_p(p) for p in _nums(pairs, c)]
    return text_table(title, pd.DataFrame(cols), notes=(what, f"sign: {words(answer.convention)}"))


def checks_table(answer: Answer, *, words: Words = _same) -> str:
    """The checks in the headline's units (its decimals), each with its verdict, and what the
    checks mean for the answer when one differs."""
    c = answer.checks
    if c is None or not len(c):
        return ""
    s, u = answer.scale, _unit_label(answer)
    head = answer.headline
    lo, hi = _nums(c, "conf_low"), _nums(c, "conf_high")
    d = decimals(head.std_error, scale=s, lo=1) if head is not None and np.isfinite(head.std_error) \
        and head.std_error > 0 else decimals(None, lo, hi, scale=s, lo=1)
    rows = pd.DataFrame({"check": c["check"].astype(str).to_numpy(),
                         f"estimate{u}": _fixed(_nums(c, "estimate"), d, sign=True, scale=s),
                         "conf_low": _fixed(lo, d, sign=True, scale=s),
                         "conf_high": _fixed(hi, d, sign=True, scale=s),
                         "p_value": [fmt_p(p) for p in _nums(c, "p_value")],
                         "verdict": [words(str(v)) for v in c["verdict"].fillna("NA")]})
    summary = answer.check_summary()
    out = text_table("checks", rows, notes=("other analyses of the headline's question, each with its verdict",))
    return out + (f"\nwhat the checks mean: {words(summary)}" if summary else "")


def render_answer(answer: Answer, *, words: Words = _same) -> str:
    """The answer as the command line prints it, before anything else: the headline sentence,
    the direction, the leaderboard (rank interval labelled), the differences under their sign
    convention and the checks (see the module's docstring)."""
    lines = [f"headline: {words(answer.headline_text())}"]
    if answer.direction is not None:
        lines.append(f"direction: {words(answer.direction.note)}")
    parts = [leaderboard_table(answer),
             pairs_table(answer, answer.differences, "differences", words=words),
             checks_table(answer, words=words)]
    return "\n".join([*lines, *(p for p in parts if p)])


def answer_record(answer: Answer, *, words: Words = _same) -> dict[str, Any]:
    """The answer for ``--json`` (:meth:`Answer.to_dict`: numbers in the score's units, the
    headline's ``unit``/``scale`` beside them), its sentences in the command line's words."""
    rec = answer.to_dict()
    for key in ("headline_text", "check_summary", "convention"):
        if isinstance(rec.get(key), str):
            rec[key] = words(rec[key])
    for part in (rec.get("direction"), (rec.get("headline") or {}).get("direction")):
        if isinstance(part, dict) and isinstance(part.get("note"), str):
            part["note"] = words(part["note"])
    if isinstance(rec.get("headline"), dict) and isinstance(rec["headline"].get("text"), str):
        rec["headline"]["text"] = words(rec["headline"]["text"])
    for row in rec.get("checks") or ():
        if isinstance(row, dict) and isinstance(row.get("verdict"), str):
            row["verdict"] = words(row["verdict"])
    return rec


def ranks_table(answer: Answer, ranks: pd.DataFrame | None, *, kind: str = "marginal") -> str:
    """A rank-distribution table (``system``, ``p_rank_1..k``, ``expected_rank``,
    ``rank_conf_low``/``rank_conf_high``) best first, its rank interval labelled ``kind``
    (the bootstrap's per-system quantiles are marginal), beside the leaderboard's."""
    if ranks is None or not len(ranks):
        return ""
    order = [] if answer.leaderboard is None else [str(n) for n in answer.leaderboard["name"]]
    r = ranks.assign(_pos=[order.index(str(x)) if str(x) in order else len(order) for x in ranks["system"]])
    r = r.sort_values("_pos", kind="mergesort")
    cols: dict[str, Any] = {"system": r["system"].astype(str).to_numpy()}
    for c in r.columns:
        if c.startswith("p_rank_"):
            cols[c] = [fmt_fixed(v, 3) for v in r[c].to_numpy(dtype=float)]
    if "expected_rank" in r.columns:
        cols["expected_rank"] = [fmt_fixed(v, 2) for v in r["expected_rank"].to_numpy(dtype=float)]
    if {"rank_conf_low", "rank_conf_high"} <= set(r.columns):
        cols[f"{kind} rank"] = [_interval_text(a, b) for a, b in zip(r["rank_conf_low"], r["rank_conf_high"])]
    label = ("marginal rank interval (each system on its own: the quantiles of its rank over the replicates)"
             if kind == "marginal" else answer.rank_label)
    lead = f"the leaderboard's {answer.rank_kind} rank interval leads" if answer.leaderboard is not None else ""
    return text_table("ranks", pd.DataFrame(cols),
                      notes=(f"best first; {kind} rank: the {label}" + (f"; {lead}" if lead else ""),))


def best_first(answer: Answer, pairs: pd.DataFrame | None, delta: str = "delta") -> pd.DataFrame | None:
    """Another analysis' pair table (the bootstrap check's of ``compare-logs``) in the answer's
    order and sign convention (:func:`mixedeval._answer.best_first_pairs`), so that it reads
    beside the answer's differences."""
    if pairs is None or answer.leaderboard is None or answer.direction is None or not len(pairs):
        return pairs
    order = [str(n) for n in answer.leaderboard["name"]]
    keep = tuple(c for c in ("n_items",) if c in pairs.columns)
    return _answer.best_first_pairs(pairs, order, answer.direction.higher_is_better, delta=delta, keep=keep)


# ------------------------------------------------------------------------------ transition
def emm_answer(emm: Any) -> Answer | None:
    """The answer of a table of estimated marginal means (``emm.answer``: best first, best against
    runner-up, every pair of means best first); None for means that do not rank (one mean, a clmm's)."""
    ans = getattr(emm, "answer", None)
    return None if ans is None or ans.headline is None else ans