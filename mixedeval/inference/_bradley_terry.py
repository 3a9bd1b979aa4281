"""The maximum-likelihood fit of a Bradley-Terry model to aggregated battles.

Who computes what:

* ``ties="half"`` or ``"drop"`` without a prompt random effect: R's
  ``glm(cbind(y, n - y) ~ 0 + X, binomial)`` on the +1/-1 design (``r/bradley_terry.R``), for
  designs up to :data:`R_DESIGN_LIMIT` entries (cells x parameters); larger designs (e.g. one
  cell per battle with covariates) use the vectorized Newton iteration of :mod:`._bt_numpy`,
  whose estimates equal glm's to 1e-8 (tests/test_bradley_terry.py) -- provenance names which;
* ``ties="davidson"``: Davidson's trinomial likelihood is not a GLM; the Newton iteration of
  :mod:`._bt_numpy` maximises it exactly (tested against an ``optim()`` maximisation in R);
* ``prompt_effect="random"``: ``lme4::glmer(cbind(y, n - y) ~ 0 + X + (1 | prompt), binomial)``
  (Laplace) on the cells per prompt; with random judges (``judge_effect="random"`` of
  :func:`mixedeval.bradley_terry`) the position columns leave X and ``(0 + first | judge)``
  enters with a fixed ``first`` (the mean position bias): each judge's bias is the mean plus its
  conditional mode; dropped ties only (lme4's Laplace deviance rounds the non-integer counts of
  half ties);
* ``prompt_effect="model"``: a random effect per model and prompt, ``u[m, p] ~ N(0, sigma^2)``,
  entering a battle of a against b on prompt p as ``+ u[a, p] - u[b, p]`` (each model's own
  advantage or handicap on a prompt: the prompt-level correlation of that model's battles). lme4
  has no syntax for this multi-membership term; ``r/bradley_terry.R`` builds it with lme4's
  modular functions (``glFormula`` ... ``mkMerMod``, Laplace). With one battle per prompt it is
  exactly ``(1 | prompt)`` with SD ``sqrt(2) sigma`` (tests/test_bradley_terry.py).

The checks that come first: the comparison graph must be connected (otherwise strengths of
different components are not comparable: a DataError names the components); a model that won
(or lost) every decided battle against the rest -- a comparison graph of wins that is not
strongly connected (Ford 1957) -- has no finite maximum-likelihood strength: a ``separation``
warning names the models; position effects must be separable from the strengths.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve
from scipy.sparse.csgraph import connected_components

from .. import _resources as res
from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError
from ..results import ResultWarning
from . import _bt_numpy, _bt_sandwich
from ._bt_design import BTDesign

#: largest design (cells x parameters) sent to R's glm; larger ones are fitted in numpy
#: (R's glm QR-decomposes the dense design in every IRLS step: 29,000 cells x 300 parameters took 29 s
#: on the busy test machine, the numpy Newton iteration on the sparse design 1 s)
R_DESIGN_LIMIT = 2_000_000
PROMPT_EFFECTS = (None, "random", "model")


@dataclass(frozen=True)
class BTFit:
    """Estimates of the parameters (order of :meth:`BTDesign.param_names`), their covariance
    (model-based: battles independent given the parameters), log-likelihood, engine, warnings."""

    design: BTDesign
    theta: np.ndarray
    vcov: np.ndarray
    loglik: float
    converged: bool
    engine: str
    prompt_sd: float | None = None
    warnings: tuple[ResultWarning, ...] = ()
    extra: dict = field(default_factory=dict)


def _graph(d: BTDesign, directed: bool) -> sp.csr_matrix:
    c = d.counts
    if not directed:
        g = sp.csr_matrix((c.sum(axis=1), (d.a, d.b)), shape=(d.k, d.k))
        g.eliminate_zeros()
        return g
    tie = c[:, 2] if d.ties != "drop" else np.zeros(len(c))
    rows = np.r_[d.a, d.b]
    cols = np.r_[d.b, d.a]
    w = np.r_[c[:, 0] + tie, c[:, 1] + tie]
    g = sp.csr_matrix((w, (rows, cols)), shape=(d.k, d.k))
    g.eliminate_zeros()  # csgraph counts stored zeros as edges
    return g


def _names(d: BTDesign, labels: np.ndarray, comp: int) -> list[str]:
    return [d.models[i] for i in np.flatnonzero(labels == comp)]


def check_connected(d: BTDesign) -> None:
    """DataError when the models fall into groups that never battled each other."""
    g = _graph(d, directed=False)
    n, labels = connected_components(g, directed=False)
    if n > 1:
        groups = "; ".join("{" + ", ".join(_names(d, labels, i)[:6]) + "}" for i in range(min(n, 5)))
        raise DataError(f"the models form {n} groups that never battled each other ({groups}); strengths of "
                        "different groups are not comparable (no maximum-likelihood estimate): add battles "
                        "between the groups or analyse each group separately")


def separation_warning(d: BTDesign) -> ResultWarning | None:
    """``separation`` when the graph of wins (a -> b: a beat or tied b) is not strongly connected."""
    n, labels = connected_components(_graph(d, directed=True), directed=True, connection="strong")
    if n <= 1:
        return None
    g = _graph(d, directed=True).tocoo()
    # components no other component beats: their models won every decided battle against the rest
    beaten = {labels[j] for i, j, w in zip(g.row, g.col, g.data) if w > 0 and labels[i] != labels[j]}
    top = [c for c in range(n) if c not in beaten]
    unbeaten = [m for c in top for m in _names(d, labels, c)][:6]
    return ResultWarning("separation", (
        f"the battles split into {n} groups that are ordered without exception (e.g. {unbeaten} never lost a "
        "decided battle to a model outside their group): their strengths have no finite maximum-likelihood "
        "estimate, the numbers shown are where the optimizer stopped and the intervals are meaningless; collect "
        "battles these models lose (or win), or drop them from the table"))


def check_identified(d: BTDesign) -> None:
    """DataError when a position effect or covariate cannot be separated from the strengths.

    The information at a balanced point (every cell's battles split equally) is scaled to a
    correlation matrix; the parameters are not identified when its smallest eigenvalue is zero.
    The strengths' block is the comparison graph's Laplacian without the reference, positive
    definite once the graph is connected (checked before), so only the Schur complement of the
    other parameters needs an eigen-decomposition (a Cholesky solve instead of a p x p ``eigh``:
    2,000 models in a fraction of a second)."""
    counts = d.counts.copy()
    counts[:, :] = counts.sum(axis=1, keepdims=True) / 3.0  # information at a balanced point
    info = _bt_numpy._score_info(_bt_numpy._Ops(d), counts[None], np.zeros((1, d.n_params)), d.ties)[2][0]
    scale = np.sqrt(np.outer(np.diag(info), np.diag(info)))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.where(scale > 0, info / scale, 0.0)
    m = d.k - 1
    if corr.shape[0] == m:
        return
    try:
        chol = cho_factor(corr[:m, :m])
    except np.linalg.LinAlgError:
        ev, vec = np.linalg.eigh(corr)
        low, direction = ev[0], vec[:, 0]
    else:
        schur = corr[m:, m:] - corr[m:, :m] @ cho_solve(chol, corr[:m, m:])
        ev, vec = np.linalg.eigh(schur)
        low, direction = ev[0], np.r_[np.zeros(m), vec[:, 0]]
    if low > 1e-9:
        return
    names = d.param_names()
    bad = [f"{k} {n!r}" for (k, n), v in zip(names, direction) if abs(v) > 1e-3 and k != "strength"]
    raise DataError(f"the parameters {bad or [names[int(np.argmax(abs(direction)))]]} cannot be separated from the "
                    "models' strengths (e.g. every model of a judge appears on one side only); pass "
                    "position_bias=False, drop that covariate, or include battles with the positions swapped")


def _design_frame(d: BTDesign, counts: np.ndarray, cells: np.ndarray | None = None) -> tuple[pd.DataFrame, list[str]]:
    """y, n and x1..xp of the cells with battles (half ties: y = a-wins + ties / 2)."""
    na, nb, nt = counts[:, 0], counts[:, 1], counts[:, 2]
    y, n = (na + 0.5 * nt, na + nb + nt) if d.ties == "half" else (na, na + nb)
    keep = n > 0
    idx = np.arange(len(counts)) if cells is None else cells
    a, b = d.a[idx][keep], d.b[idx][keep]
    strength = np.zeros((int(keep.sum()), d.k))
    strength[np.arange(len(a)), a] = 1.0
    strength[np.arange(len(a)), b] = -1.0
    x = np.hstack([strength[:, d.free], d.eta_extra()[idx][keep]])
    xnames = [f"x{i + 1}" for i in range(x.shape[1])]
    frame = pd.DataFrame(x, columns=xnames)
    frame.insert(0, "n", n[keep])
    frame.insert(0, "y", y[keep])
    return frame, xnames


def _fit_r_glm(d: BTDesign, level: float) -> BTFit:
    frame, xnames = _design_frame(d, d.counts)
    res = _bridge.bt_glm(frame, xnames=xnames, level=level)
    v = res.value
    theta = np.asarray(v["fixed"]["estimate"], dtype=float)
    ll = float(_bt_numpy._loglik(_bt_numpy._Ops(d), d.counts[None], theta[None], d.ties)[0])
    warns = tuple(r_warnings(res))
    return BTFit(design=d, theta=theta, vcov=v["vcov"], loglik=ll, converged=bool(v["converged"]),
                 engine="R stats::glm (binomial, +1/-1 design)", warnings=warns)


def _fit_numpy(d: BTDesign) -> BTFit:
    f = _bt_numpy.fit(d, d.counts[None])
    engine = ("numpy Newton (Davidson ties)" if d.ties == "davidson"
              else "numpy Newton (binomial, +1/-1 design; equal to R's glm)")
    return BTFit(design=d, theta=f.theta[0], vcov=_bt_numpy.vcov(f.information[0]), loglik=float(f.loglik[0]),
                 converged=bool(f.converged[0]), engine=engine)


def _fit_ridge(d: BTDesign, ridge: float) -> BTFit:
    theta, info, ll, conv = _bt_sandwich.fit_ridge(d, ridge)
    pen = np.zeros(d.n_params)
    pen[d.k - 1:d.k - 1 + len(d.cov_names)] = ridge
    return BTFit(design=d, theta=theta, vcov=_bt_numpy.vcov(info + np.diag(pen)), loglik=ll, converged=conv,
                 engine=f"numpy Newton (binomial, covariates ridge-penalised: {ridge:g} / 2 |beta|^2, arena-rank's)")


def _prompt_cells(d: BTDesign) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(prompt index, cell, counts (rows, 3)) of every (prompt, cell) with battles."""
    coo = d.units.tocoo()
    cell, outcome = coo.col // 3, coo.col % 3
    key = coo.row.astype(np.int64) * len(d.a) + cell
    uniq, inv = np.unique(key, return_inverse=True)
    counts = np.zeros((len(uniq), 3))
    np.add.at(counts, (inv, outcome), coo.data)
    return uniq // len(d.a), uniq % len(d.a), counts


def _glmer_frame(d: BTDesign, prompt: bool, judge: bool, models: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """The cells (per prompt with a prompt effect) with y, n, x1..xp and the grouping columns
    (``models``: the integer model indices ``ma``, ``mb`` and prompt indices for the model x
    prompt term)."""
    if prompt:
        pidx, cells, counts = _prompt_cells(d)
    else:
        pidx, cells, counts = None, np.arange(len(d.a)), d.counts
    frame, xnames = _design_frame(d, counts, cells)
    keep = (counts[:, 0] + counts[:, 1]) > 0
    if prompt and models:
        frame["ma"], frame["mb"], frame["prompt"] = d.a[cells][keep], d.b[cells][keep], pidx[keep]
    elif prompt:
        frame["prompt"] = pd.Categorical(pidx[keep])
    if judge:  # the mean position bias (fixed) and each judge's deviation (random slope)
        frame["first"] = d.first[cells][keep]
        frame["judge"] = pd.Categorical.from_codes(d.judge[cells][keep], categories=list(d.judges))
        xnames = [*xnames, "first"]
    return frame, xnames


def _glmer_warnings(res: Any, v: dict) -> list[ResultWarning]:
    warns = list(r_warnings(res))
    warns += [ResultWarning("convergence", str(m), "lme4") for m in np.atleast_1d(v["convergence"])]
    if bool(v["singular"]):
        warns.append(ResultWarning("singular", "a random-effect standard deviation (prompt intercept or judges' "
                                   "position bias) is estimated at zero (singular fit)"))
    return warns


def _fit_r_glmer(d: BTDesign, level: float, prompt: bool, judge: bool, models: bool = False) -> BTFit:
    if d.ties != "drop" or (prompt and d.unit_label != "prompt"):
        raise DataError("prompt_effect='random' / 'model' and judge_effect='random' need ties='drop' (glmer fits "
                        "binomial outcomes: Davidson ties are not a GLMM, and lme4's Laplace likelihood rounds the "
                        "non-integer counts of half ties) and, for a prompt effect, a prompt column")
    if models and judge:
        raise DataError("prompt_effect='model' does not combine with judge_effect='random' (use judge_effect='fixed')")
    frame, xnames = _glmer_frame(d, prompt, judge, models)
    if models:
        res = _bridge.bt_glmer_mp(frame, xnames=xnames, level=level)
    else:
        res = _bridge.bt_glmer(frame, xnames=xnames, level=level, prompt=prompt, judge=judge)
    v = res.value
    terms = ", ".join(t for t, on in (("u[model_a, prompt] - u[model_b, prompt]", models),
                                      ("(1 | prompt)", prompt and not models),
                                      ("first + (0 + first | judge)", judge)) if on)
    theta, vcov = np.asarray(v["fixed"]["estimate"], dtype=float), v["vcov"]
    extra = {}
    if judge:  # the last fixed effect is the mean position bias
        extra = {"judge_modes": v["judge_modes"], "judge_sd": float(v["judge_sd"]),
                 "judge_mean": (float(theta[-1]), float(np.sqrt(vcov[-1, -1])))}
        theta, vcov = theta[:-1], vcov[:-1, :-1]
    return BTFit(design=d, theta=theta, vcov=vcov,
                 loglik=float(v["loglik"]), converged=not len(np.atleast_1d(v["convergence"])),
                 engine=f"R lme4::glmer (binomial, +1/-1 design, {terms}, Laplace)",
                 prompt_sd=float(v["prompt_sd"]) if prompt else None, warnings=tuple(_glmer_warnings(res, v)),
                 extra=extra)


def check_size(d: BTDesign) -> None:
    """DataError before the fit when its dense matrices do not fit the memory limit: the cells x
    (judge and covariate) columns of the linear predictor and the p x p information matrices of the
    identification check and the Newton iteration (about 6 copies), e.g. 10,000 judges each with
    its own position bias and leniency."""
    p, extra = d.n_params, d.n_params - d.k + 1
    need = 8.0 * (3 * len(d.a) * max(extra, 1) + 6 * p * p)
    res.check_memory(need, "the Bradley-Terry fit's dense matrices",
                     "pool the judges (a larger min_judge_battles), use judge_effect='random', or judge=None",
                     detail=(f"{d.k} models, {len(d.judges)} judges, {len(d.cov_names)} covariates: {p} parameters, "
                             f"{len(d.a)} cells"))


def fit_bt(d: BTDesign, *, level: float, prompt_effect: str | None = None, judge_random: bool = False,
           ridge: float = 0.0) -> BTFit:
    """Check the design and fit it (see the module docstring); ``judge_random``: the judges'
    position bias as a random slope of ``first`` (the design then has no position columns);
    ``ridge`` > 0: the covariates' coefficients penalised by ``ridge / 2 * |beta|^2``
    (arena-rank's contextual Bradley-Terry, :func:`._bt_sandwich.fit_ridge`)."""
    if prompt_effect not in PROMPT_EFFECTS:
        raise DataError(f"prompt_effect must be None, 'random' or 'model'; got {prompt_effect!r}")
    check_size(d)
    check_connected(d)
    check_identified(d)
    sep = separation_warning(d)
    if prompt_effect is not None or judge_random:
        fit = _fit_r_glmer(d, level, prompt=prompt_effect is not None, judge=judge_random,
                           models=prompt_effect == "model")
    elif ridge:
        fit = _fit_ridge(d, ridge)
    elif d.ties != "davidson" and len(d.a) * d.n_params <= R_DESIGN_LIMIT:
        fit = _fit_r_glm(d, level)
    else:
        fit = _fit_numpy(d)
    warns = ([sep] if sep else []) + list(fit.warnings)
    if not fit.converged and sep is None:
        warns.append(ResultWarning("convergence", f"the fit ({fit.engine}) did not converge"))
    return BTFit(**{**fit.__dict__, "warnings": tuple(warns)})
