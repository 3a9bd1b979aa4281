"""Complete and quasi-complete separation in binomial GLMMs, and a weakly penalised refit.

**What separation is.** A binomial model is *separated* when some combination of its fixed-effect
columns predicts the outcome perfectly: for every row (complete separation) or for some rows with
ties elsewhere (quasi-complete separation; Albert & Anderson 1984, *Biometrika* 71:1). In an
evaluation this is a system that solves every item of a task (a system x task cell all 1), or
fails every one. The maximum-likelihood (ML) estimate of the log-odds of such a cell is infinite:
``lme4::glmer`` stops at a large finite value (20 or so) with an enormous standard error, so

* its Wald z test, the Type III Wald chi-square test of every term involving it and its Wald
  interval are meaningless: the standard error grows faster than the estimate and p tends to 1
  (the **Hauck-Donner effect**; Hauck & Donner 1977, *JASA* 72:851) -- while the likelihood-ratio
  test of the same term (:func:`mixedeval.compare` of the nested fits) stays valid and is tiny;
* the fixed-effect variance on the latent scale, hence the marginal R² (Nakagawa & Schielzeth),
  grows without bound with the estimate (:func:`r2_note`).

Separation of the fixed part carries over to the GLMM: along a separating direction the
conditional likelihood increases for every value of the random effects, hence the marginal
likelihood too (an item that every system solves is not separation: the random-effect
distribution keeps its BLUP finite).

**Detection** (:func:`detect_separation`): R (``me_glmm_separation``, ``r/separation.R``) gives the
cells of the fixed part's factors with their trials and successes, and the rows of Konis' linear
program (Konis 2007, *Linear programming algorithms for detecting separated data in binary
logistic regression models*, DPhil thesis, University of Oxford -- the method of brglm2's
``detect_separation``, which moved to the ``detectseparation`` package in brglm2 0.8.0 and is
defunct in Debian's brglm2 0.9). Each row with successes contributes ``-x_i`` and each row with
failures ``+x_i`` (``xbar``); the program

    maximise  sum_i s_i   subject to   xbar_i . beta + s_i <= 0,   0 <= s_i <= 1,   beta free

is solved with scipy's HiGHS. Its optimum is the number of *separable* rows (those whose fitted
probability goes to 0 or 1 along some direction of non-decreasing likelihood): s_i = 1 for
exactly those, so the answer does not depend on which optimal vertex the solver returns. The
fit is separated when the optimum is positive; completely separated when every row is separable.
A coefficient's ML estimate is infinite when it is not determined by the non-separable rows,
i.e. when the unit vector e_j is not in the row space of their design matrix.

A cell whose outcomes are all 0 or all 1 is always listed in :attr:`Separation.cells`
(``boundary``); it is separated (``separated``) only when the model cannot fit the cell's
other rows otherwise: with ``system * task`` every boundary cell is separated, with
``system + task`` a single boundary cell usually is not (its estimate stays finite).

**Remedy** (:func:`penalized_refit`): ``blme::bglmer`` (Chung, Rabe-Hesketh, Dorie, Gelman & Liu
2013, *Psychometrika* 78:685) with blme's default weakly informative normal prior on the fixed
effects -- sd 10 for the intercept and 2.5 for every other coefficient on the logit scale, the
scales of Gelman, Jakulin, Pittau & Su 2008 (*Ann. Appl. Stat.* 2:1360) -- and no covariance
prior (only the fixed part is penalised). The estimates are posterior modes: finite, shrunk
towards 0 where the data say "infinite", and their Wald tests are usable. Its ``loglik`` is the
likelihood at those estimates (blme reports the prior separately), so it is not an ML fit: test
terms by likelihood ratio between ML fits (:func:`mixedeval.compare`), which separation leaves
valid. We chose the penalised refit over profile-likelihood intervals of the ML fit: the profile
interval of an infinite estimate is half-infinite and comes with no finite point estimate, while
the penalised fit gives every quantity downstream (contrasts, EMMs, odds ratios) finite values.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, sparse

from ..engine import _bridge
from ..errors import DataError
from ..results import ResultWarning
from ._r2_glmm import R2_SEPARATION_NOTE

#: blme's default normal prior on the fixed effects (logit scale): intercept sd, other coefficients' sd
PRIOR_SD = (10.0, 2.5)
#: cells named in a warning before "and N more"
_MAX_CELLS_NAMED = 6
_R2_NOTE = R2_SEPARATION_NOTE


@dataclass(frozen=True)
class Separation:
    """Separation of a binomial GLMM's fixed part (see the module docstring).

    ``cells``: one row per cell of the fixed part's factors (their columns), ``n`` (trials),
    ``successes``, ``proportion``, ``boundary`` (all 0 or all 1) and ``separated`` (every row of
    the cell is separable); a fixed part without factors has one cell. ``terms``: ``term``,
    ``infinite`` (the ML estimate is infinite). ``separated`` / ``complete``: quasi-complete or
    complete separation; ``n_separable`` of ``n_pieces`` (row, outcome) pieces are separable.
    """

    separated: bool
    complete: bool
    cells: pd.DataFrame
    terms: pd.DataFrame
    factors: tuple[str, ...]
    response: str
    n_separable: int
    n_pieces: int
    method: str = "Konis (2007) linear program (scipy HiGHS) on the fixed-effect design of me_glmm_separation"

    @property
    def table(self) -> pd.DataFrame:
        """The cells (the main table)."""
        return self.cells

    @property
    def infinite_terms(self) -> list[str]:
        """Coefficients whose ML estimate is infinite."""
        return [str(t) for t in self.terms.loc[self.terms["infinite"], "term"]]


def _require_binomial_glmer(fit: Any) -> None:
    if getattr(fit, "family", None) is None:  # not a GLMMFit (the only fit class with a family)
        raise DataError(f"separation is checked on a binomial GLMM fit (mixedeval.glmm), not {type(fit).__name__}")
    if fit.family != "binomial":
        raise DataError(f"separation is checked for family='binomial' (lme4::glmer) fits; this fit is "
                        f"family={fit.family!r}")


def _solve_lp(xbar: np.ndarray) -> np.ndarray:
    """Konis' program: which rows of ``xbar`` are separable (a boolean per row)."""
    u, p = xbar.shape
    if u == 0:
        return np.zeros(0, dtype=bool)
    c = np.concatenate([np.zeros(p), -np.ones(u)])
    a_ub = sparse.hstack([sparse.csr_matrix(xbar), sparse.identity(u, format="csr")], format="csr")
    bounds = [(None, None)] * p + [(0.0, 1.0)] * u
    res = optimize.linprog(c, A_ub=a_ub, b_ub=np.zeros(u), bounds=bounds, method="highs")
    if res.status != 0:
        raise DataError(f"the separation check's linear program did not solve (HiGHS: {res.message})")
    return np.asarray(res.x[p:], dtype=float) > 0.5


def _infinite_terms(xbar: np.ndarray, separable: np.ndarray, coef: Sequence[str]) -> np.ndarray:
    """Coefficients not determined by the non-separable rows (e_j outside their row space)."""
    p = len(coef)
    if not separable.any():
        return np.zeros(p, dtype=bool)
    xn = xbar[~separable]
    if xn.shape[0] == 0:
        return np.ones(p, dtype=bool)
    scale = np.maximum(np.abs(xn).max(axis=0), 1e-300)
    _, sv, vt = np.linalg.svd(xn / scale, full_matrices=True)
    rank = int((sv > sv.max() * max(xn.shape) * np.finfo(float).eps).sum()) if sv.size else 0
    null = vt[rank:].T  # basis of the directions the non-separable rows leave free
    return np.linalg.norm(null, axis=1) > 1e-8 if null.size else np.zeros(p, dtype=bool)


def _cells_frame(raw: dict[str, Any], piece_sep: np.ndarray) -> pd.DataFrame:
    n, s = raw["n"], raw["successes"]
    cols = {f: [str(x) for x in raw["cells"][f]] for f in raw["factors"]}
    cells = pd.DataFrame(cols, index=pd.RangeIndex(len(n)))
    cells["n"] = n
    cells["successes"] = s
    with np.errstate(divide="ignore", invalid="ignore"):
        cells["proportion"] = np.where(n > 0, s / np.where(n > 0, n, 1.0), np.nan)
    cells["boundary"] = (n > 0) & ((s <= 0) | (s >= n))
    cell_of = raw["piece_cell"]
    all_sep = np.ones(len(n), dtype=bool)
    np.logical_and.at(all_sep, cell_of, piece_sep)
    has_piece = np.zeros(len(n), dtype=bool)
    has_piece[cell_of] = True
    cells["separated"] = all_sep & has_piece
    return cells


def detect_separation(fit: Any) -> Separation:
    """Detect complete and quasi-complete separation of a binomial ``glmer`` fit's fixed part.

    R (``me_glmm_separation``) aggregates the cells of the fixed part's factors from the model
    frame and builds Konis' linear program from ``lme4::getME(m, "X")`` and the response; the
    program is solved with ``scipy.optimize.linprog(method="highs")`` (module docstring).
    Raises :class:`mixedeval.DataError` for a fit that is not a binomial :func:`mixedeval.glmm`.
    """
    _require_binomial_glmer(fit)
    raw = _bridge.glmm_separation(fit)
    xbar = raw["xbar"]
    separable = _solve_lp(xbar)
    piece_sep = separable[raw["piece_unique"]] if separable.size else np.zeros(0, dtype=bool)
    infinite = _infinite_terms(xbar, separable, raw["coef_names"])
    terms = pd.DataFrame({"term": raw["coef_names"], "infinite": infinite})
    n_sep = int(piece_sep.sum())
    return Separation(
        separated=bool(n_sep > 0), complete=bool(n_sep > 0 and n_sep == piece_sep.size),
        cells=_cells_frame(raw, piece_sep), terms=terms, factors=tuple(raw["factors"]),
        response=raw["response"].strip("`"), n_separable=n_sep, n_pieces=int(piece_sep.size),
    )


def _quote(v: str) -> str:
    return f"'{v}'"


def _cell_phrase(row: pd.Series, factors: Sequence[str], response: str) -> str:
    where = ", ".join(f"{f} {_quote(row[f])}" for f in factors) if factors else "every row"
    n, s = int(round(row["n"])), int(round(row["successes"]))
    if s >= n:
        return f"{response} is 1 in every trial of {where} ({s} of {n})" if factors else \
            f"{response} is 1 in every trial ({s} of {n})"
    return f"{response} is 0 in every trial of {where} (0 of {n})" if factors else \
        f"{response} is 0 in every trial (0 of {n})"


def separation_message(sep: Separation) -> str:
    """The plain-words text of the ``separation`` warning for ``sep`` (naming cells and terms)."""
    cells = sep.cells[sep.cells["separated"]]
    phrases = [_cell_phrase(r, sep.factors, sep.response) for _, r in cells.head(_MAX_CELLS_NAMED).iterrows()]
    if len(cells) > _MAX_CELLS_NAMED:
        phrases.append(f"and {len(cells) - _MAX_CELLS_NAMED} more cell(s)")
    kind = "complete" if sep.complete else "quasi-complete"
    lead = f"{kind} separation: " + ("; ".join(phrases) if phrases else
                                     f"{sep.n_separable} of {sep.n_pieces} outcomes are predicted perfectly by the "
                                     "fixed effects")
    terms = sep.infinite_terms
    what = f"the maximum-likelihood estimates of {', '.join(terms)} are infinite" if terms else \
        "some log-odds are infinite"
    return (f"{lead}. {what[0].upper()}{what[1:]} (glmer stops at a large finite value with a huge standard error), so the "
            "Wald z tests, Type III Wald chi-square tests and Wald intervals of the terms involving them are "
            "meaningless (Hauck-Donner effect: the standard error grows faster than the estimate and p tends to 1); "
            "the likelihood-ratio test of nested fits (mixedeval.compare) stays valid, and a weakly penalised refit "
            "(blme::bglmer with a normal prior, sd 10 / 2.5) gives finite estimates with usable Wald tests")


def check_separation(fit: Any) -> tuple[list[ResultWarning], pd.DataFrame]:
    """``([separation warning], separated cells)`` for a binomial GLMM, or ``([], empty)`` when the
    fixed part is not separated.

    The cells frame has the fixed part's factor columns, ``n``, ``successes`` and ``proportion``
    of the separated cells (all 0 or all 1 and fitted only by infinite log-odds). The warning has
    kind ``separation`` (a severe kind: see :data:`mixedeval.results.SEVERE_KINDS`) and source
    ``"mixedeval"``. Computed by :func:`detect_separation`.
    """
    sep = detect_separation(fit)
    cols = [*sep.factors, "n", "successes", "proportion"]
    cells = sep.cells.loc[sep.cells["separated"], cols].reset_index(drop=True)
    if not sep.separated:
        return [], cells
    return [ResultWarning("separation", separation_message(sep), "mixedeval")], cells


def r2_note(cells: pd.DataFrame | None) -> ResultWarning | None:
    """The warning to attach to R² of a fit with the separated ``cells`` of :func:`check_separation`
    (None when there are none): the marginal R² is not meaningful under separation."""
    if cells is None or len(cells) == 0:
        return None
    return ResultWarning("separation", _R2_NOTE, "mixedeval")


def penalized_refit(fit: Any, *, intercept_sd: float = PRIOR_SD[0], slope_sd: float = PRIOR_SD[1],
                    level: float | None = None) -> Any:
    """The binomial GLMM ``fit`` refitted with ``blme::bglmer`` and a weakly informative normal
    prior on the fixed effects (sd ``intercept_sd`` for the intercept, ``slope_sd`` for every other
    coefficient, on the logit scale; blme's default, after Gelman et al. 2008; without an
    intercept every coefficient gets ``slope_sd``), no covariance prior; same formula, data,
    weights, link, nAGQ and optimizer (``me_bglmer_fit``).

    The result is a :class:`GLMMFit` whose tables are the penalised (posterior-mode) estimates
    with Wald z tests and intervals from ``summary()`` of the bglmer fit; ``provenance`` records
    ``r_function="blme::bglmer"``, ``estimator="penalized ML (posterior mode)"`` and the prior
    (``fixef_prior``: family, sd per coefficient), and a ``penalized`` warning says so. R's
    warnings of the refit become :class:`ResultWarning` objects (through ``GLMMFit._refitted``, i.e.
    ``_glmm._build``, which classifies them with :func:`mixedeval.engine.conditions.r_warnings`); numpy's
    floating-point warnings are silenced in the table building (odds ratios of large estimates).

    Integration notes: ``fixed``, ``coef_table``, ``emmeans``/``emtrends`` and ``r2`` use the
    bglmer model itself; ``GLMMFit.anova`` and ``check_optimizers`` refit from the formula with
    ``lme4::glmer`` (ML), and the printed title reads ``GLMMFit.r_function`` (lme4::glmer), not
    ``provenance["r_function"]``.
    """
    _require_binomial_glmer(fit)
    for name, v in (("intercept_sd", intercept_sd), ("slope_sd", slope_sd)):
        if not np.isfinite(v) or v <= 0:
            raise DataError(f"{name} must be a positive finite prior standard deviation, not {v!r}")
    lvl = fit.level if level is None else float(level)
    res = _bridge.bglmer_fit(fit, level=lvl, intercept_sd=float(intercept_sd), slope_sd=float(slope_sd))
    terms = [str(t) for t in np.atleast_1d(res.value["prior_terms"])]
    sds = [float(x) for x in np.atleast_1d(np.asarray(res.value["prior_sd"], dtype=float))]
    prior = ", ".join(f"{t} {v:g}" for t, v in zip(terms, sds))
    note = ResultWarning("penalized", "fixed effects are posterior modes of blme::bglmer under a normal prior on "
                         f"the logit scale (sd: {prior}; no covariance prior), not maximum-likelihood estimates: use "
                         "them where separation makes the ML estimates infinite; test terms by likelihood ratio "
                         "between ML fits", "mixedeval")
    with np.errstate(over="ignore", invalid="ignore"):
        out = fit._refitted(res, level=lvl, pre=[note])  # noqa: SLF001 - _glmm._build on the fit's own settings
    prov = dict(out.provenance)
    prov.update({"r_function": "blme::bglmer", "estimator": "penalized ML (posterior mode)",
                 "fixef_prior": {"family": "normal", "sd": dict(zip(terms, sds))}, "cov_prior": None,
                 "blme": _bridge.versions(("blme",))["packages"].get("blme")})
    return replace(out, provenance=prov)


__all__ = ["PRIOR_SD", "Separation", "check_separation", "detect_separation", "penalized_refit", "r2_note",
           "separation_message"]
