"""``me.irt``: item response theory as a crossed GLMM -- item quality, abilities with intervals.

An IRT model is a mixed model of correct/incorrect answers with systems playing the persons (De
Boeck et al. 2011, "The estimation of item response models with the lmer function", *J. Stat.
Softw.* 39(12)). Convention: ``logit P(system s answers item i correctly) = discrimination_i *
(ability_s - difficulty_i)``.

* ``model="rasch"`` (default): ``lme4::glmer(y ~ 1 + (1 | item) + (1 | system), binomial)``
  (Laplace; ``cbind(y, n - y)`` with several trials per system and item). Discrimination 1,
  ``difficulty_i = -(mu + u_i)``, ``ability_s = v_s`` in logits (conditional modes; standard
  errors are their conditional SDs, ``ranef(condVar = TRUE)``). ``item_covariates=`` adds item
  features to the fixed part (the linear logistic test model with a random item residual, De
  Boeck 2008): ``.covariates`` holds each feature's effect on the difficulty.
* ``model="rasch_fixed"``: ``glmer(y ~ 0 + item + (1 | system), binomial)``, ``difficulty_i =
  -beta_i`` (Wald standard errors). Slow for thousands of items (glmer's second stage optimises
  all item parameters with Nelder-Mead); pass ``nagq=0`` for large banks.
* ``model="2pl"``: ``glmmTMB::glmmTMB(y ~ 0 + item + rr(0 + item | system, d = 1), binomial)``:
  ``beta_i + lambda_i z_s`` with ``z_s ~ N(0, 1)``; ``discrimination = lambda``, ``difficulty =
  -beta / lambda`` (delta method), ``ability = z`` (the N(0, 1) scale); the factor's sign is fixed
  so that the mean discrimination is positive. The reduced-rank term costs O(systems x items^2)
  per evaluation in glmmTMB 1.1.5: minutes at 100 systems x 300 items (benchmarks/bench_irt.py).

Items answered alike by every system (all correct or all wrong) have no finite fixed-item
estimate: they are left out of the ``rasch_fixed`` and ``2pl`` fits (their parameters are NaN,
the flag says why) and kept in the random-item Rasch fit (where they are shrunk).

The result (:class:`IrtResult`): ``.items`` (also ``.table``) -- item, difficulty and
discrimination with standard errors and Wald intervals, p_correct, n (trials), n_systems,
item_rest_correlation, outfit and its simulation p-value (``n_sim`` draws; see
:mod:`._irt_items`), DIF tests with ``dif=``, and ``flag_reasons`` (the reasons, '' when none);
``.abilities`` (system, ability, std_error, conf_low, conf_high); ``.leaderboard`` (best first,
simultaneous rank intervals and letters, :func:`mixedeval._answer.leaderboard`); ``.headline``
(best against runner-up, or against ``reference``: the ability difference, Wald z with the two
abilities' standard errors -- conditional SDs for the Rasch models, with the item parameters'
uncertainty for the 2PL -- a normal approximation that ignores the modes' covariance); ``.information()``
and ``.test_information()``; ``.responses`` (systems x items proportion correct) and ``.trials``.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import special
from tqdm.auto import tqdm

from .. import _answer
from .. import _resources as res
from .._answer import Direction, Headline
from ..data.validate import require_level
from ..engine import _bridge
from ..errors import DataError
from ..padjust import adjust_pvalues
from ..results import ResultMixin, ResultWarning, jsonable
from . import _irt_items as itm
from ._irt_data import Responses, prepare_responses, subset
from .. import __version__
from ._irt_fit import ENGINES, MODELS, NUMPY_ENGINE, IrtFit, fit_2pl, fit_numpy, fit_rasch, fit_rasch_fixed
from ._lmm import r_provenance

ITEM_COLUMNS = ("item", "difficulty", "difficulty_std_error", "difficulty_conf_low", "difficulty_conf_high",
                "discrimination", "discrimination_std_error", "discrimination_conf_low", "discrimination_conf_high",
                "p_correct", "n", "n_systems", "item_rest_correlation", "outfit", "fit_p_value", "fit_p_adj")
ABILITY_COLUMNS = ("system", "ability", "std_error", "conf_low", "conf_high")
#: abilities: higher is better (the responses are oriented by the score's direction before the fit)
ABILITY_DIRECTION = Direction(True, "known metric", "ability")


@dataclass(frozen=True, repr=False)
class IrtResult(_answer.AnswerMixin, ResultMixin):
    """An IRT fit (see :func:`irt`): items with flags, abilities with intervals, and ``answer``
    (:class:`mixedeval._answer.Answer`: the abilities best first with simultaneous rank intervals,
    the best against the runner-up or ``reference``, every pair best first as Wald differences of
    independent abilities; higher ability is better whatever the score's direction, which
    ``provenance["score_direction"]`` records)."""

    items: pd.DataFrame
    abilities: pd.DataFrame
    answer: _answer.Answer
    model: str
    engine: str
    formula: str
    loglik: float
    nobs: int
    level: float
    variance: dict[str, float]
    covariates: pd.DataFrame | None
    dif: dict[str, Any] | None
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    responses: pd.DataFrame = field(repr=False)
    trials: pd.DataFrame = field(repr=False)

    _print_tables = ("leaderboard", "items")
    _answer_priority = 55

    @property
    def table(self) -> pd.DataFrame:
        """The items table (:attr:`items`)."""
        return self.items

    @property
    def flagged(self) -> pd.DataFrame:
        """The items with at least one flag."""
        return self.items[self.items["flag_reasons"] != ""].reset_index(drop=True)

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"Item response theory ({self.model}): {self.engine}"

    def _scalars(self):
        return [("systems", len(self.abilities)), ("items", len(self.items)), ("flagged items", len(self.flagged)),
                ("logLik", f"{self.loglik:.6g}"), ("answer", self.headline_text())]

    def parameters(self) -> tuple[np.ndarray, np.ndarray]:
        """(discrimination, difficulty) arrays in the order of :attr:`items` (NaN for items left out)."""
        return (self.items["discrimination"].to_numpy(dtype=float), self.items["difficulty"].to_numpy(dtype=float))

    def _grid(self, abilities: Any) -> np.ndarray:
        if abilities is None:
            th = self.abilities["ability"].to_numpy(dtype=float)
            lo, hi = np.nanmin(th) - 1.0, np.nanmax(th) + 1.0
            return np.linspace(lo, hi, 61)
        a = np.atleast_1d(np.asarray(abilities, dtype=float))
        if a.ndim != 1 or not np.all(np.isfinite(a)):
            raise DataError("abilities= must be finite numbers on the ability scale (e.g. np.linspace(-3, 3, 61))")
        return a

    def information(self, abilities: Any = None) -> pd.DataFrame:
        """Item information ``a^2 p (1 - p)`` at ``abilities`` (default: 61 points over the
        systems' range +- 1): long table ability, item, information."""
        th = self._grid(abilities)
        a, b = self.parameters()
        info = itm.information(a, b, th)
        return pd.DataFrame({"ability": np.repeat(th, len(a)), "item": np.tile(self.items["item"].to_numpy(), len(th)),
                             "information": info.ravel()})

    def test_information(self, abilities: Any = None) -> pd.DataFrame:
        """Test information (sum over items) at ``abilities`` and the implied standard error of
        an ability, ``1 / sqrt(information)``: ability, information, std_error."""
        th = self._grid(abilities)
        a, b = self.parameters()
        tot = np.nansum(itm.information(a, b, th), axis=1)
        with np.errstate(divide="ignore"):
            return pd.DataFrame({"ability": th, "information": tot, "std_error": 1.0 / np.sqrt(tot)})

    def item_characteristic(self, abilities: Any = None) -> pd.DataFrame:
        """P(correct) of every item at ``abilities``: long table ability, item, p_correct."""
        th = self._grid(abilities)
        a, b = self.parameters()
        p = special.expit(itm.eta_matrix(a, b, th))
        return pd.DataFrame({"ability": np.repeat(th, len(a)), "item": np.tile(self.items["item"].to_numpy(), len(th)),
                             "p_correct": p.ravel()})

    def conditional_ml(self) -> pd.DataFrame:
        """The Rasch difficulties beside conditional maximum likelihood (``eRm::RM(x, sum0 =
        TRUE)``, Debian's r-cran-erm), which assumes nothing about the abilities' distribution:
        item, difficulty (this fit's, centred to mean 0), cml_difficulty, cml_std_error,
        difference. With normal abilities both estimate the same difficulties (differences of a
        fraction of a standard error); large ones point to a non-normal ability distribution.
        Rasch models on 0/1 answers (one trial per system and item) only."""
        if not self.model.startswith("rasch"):
            raise DataError("conditional_ml() compares Rasch difficulties; this is a 2PL fit")
        if np.nanmax(self.trials.to_numpy()) > 1:
            raise DataError("conditional_ml() needs one 0/1 answer per system and item (eRm::RM); these data have "
                            "several trials")
        cml = _bridge.irt_erm(self.responses.astype(float))
        d = self.items["difficulty"].to_numpy(dtype=float)
        d = d - np.nanmean(d)
        return pd.DataFrame({"item": self.items["item"], "difficulty": d, "cml_difficulty": cml["difficulty"],
                             "cml_std_error": cml["std_error"], "difference": d - cml["difficulty"]})

    def to_dict(self) -> dict[str, Any]:
        """The answer first, then the tables and settings (the response and trial matrices left out)."""
        skip = {"responses", "trials", "answer"}
        return {"answer": self.answer.to_dict(),
                **{f: jsonable(getattr(self, f)) for f in self.__dataclass_fields__ if f not in skip}}


# ------------------------------------------------------------------------------ checks of arguments
def _check_args(model: str, n_sim: Any, alpha: Any, min_discrimination: Any, nagq: Any, engine: str = "r") -> str:
    m = str(model).strip().lower().replace("-", "").replace(" ", "_")
    m = {"1pl": "rasch", "rasch_random": "rasch", "2pl": "2pl", "fixed": "rasch_fixed"}.get(m, m)
    if m not in MODELS:
        raise DataError(f"model={model!r} is not one of {', '.join(MODELS)}")
    if isinstance(n_sim, bool) or not isinstance(n_sim, (int, np.integer)) or n_sim < 0:
        raise DataError(f"n_sim must be a non-negative integer (simulations for the item fit; 0 skips it), not {n_sim!r}")
    require_level(alpha, "alpha")
    if not isinstance(min_discrimination, (int, float)) or isinstance(min_discrimination, bool) \
            or not np.isfinite(min_discrimination):
        raise DataError(f"min_discrimination must be a number (e.g. 0.25), not {min_discrimination!r}")
    if engine == "numpy":
        if isinstance(nagq, bool) or not isinstance(nagq, (int, np.integer)) or not 1 <= nagq <= 100:
            raise DataError(f"with engine='numpy', nagq must be 1 (Laplace, the R fits' likelihood) or a number of "
                            f"adaptive Gauss-Hermite nodes up to 100 (e.g. 21), not {nagq!r}")
    elif isinstance(nagq, bool) or nagq not in (0, 1):
        raise DataError(f"nagq must be 1 (Laplace) or 0 (fast: fixed effects in the penalised IRLS step), not {nagq!r}")
    return m


def _item_covariates(item_covariates: Any, resp: Responses, item: str) -> pd.DataFrame | None:
    """The numeric design of item features in the items' order (categorical features as treatment
    dummies, first level in sorted order the reference); every item needs a row."""
    if item_covariates is None:
        return None
    if not isinstance(item_covariates, pd.DataFrame):
        raise DataError("item_covariates= must be a pandas DataFrame with one row per item (an item column or the "
                        "index naming the items) and one column per feature")
    cov = item_covariates.set_index(item) if item in item_covariates.columns else item_covariates
    cov = cov.copy()
    cov.index = cov.index.astype(str)
    if cov.index.duplicated().any():
        raise DataError(f"item_covariates has several rows for item(s) {list(cov.index[cov.index.duplicated()][:5])}")
    missing = [i for i in resp.items if i not in cov.index]
    if missing:
        raise DataError(f"item_covariates has no row for {len(missing)} item(s) (e.g. {missing[:5]}); give every item "
                        "its features")
    cov = cov.loc[list(resp.items)]
    if cov.shape[1] == 0 or cov.isna().any().any():
        raise DataError("item_covariates needs at least one feature column and no missing values")
    cat = [c for c in cov.columns if not pd.api.types.is_numeric_dtype(cov[c]) or pd.api.types.is_bool_dtype(cov[c])]
    design = pd.get_dummies(cov, columns=cat, drop_first=True, dtype=float, prefix_sep="=") if cat else cov.astype(float)
    design.columns = [str(c) for c in design.columns]
    const = [c for c in design.columns if design[c].nunique() < 2]
    if const:
        raise DataError(f"item feature(s) {const} do not vary over the items; drop them")
    if np.linalg.matrix_rank(np.column_stack([np.ones(len(design)), design.to_numpy()])) < design.shape[1] + 1:
        raise DataError("the item features are collinear (some feature is a combination of others); drop one")
    return design


#: systems x items matrices of doubles me.irt holds beside the fit (responses, trials, fitted
#: probabilities, the item-fit simulations' draws and statistics), and bytes per aggregated
#: (system, item) row (the long table, its copy for the fit and R's; tracemalloc measured 210 per
#: cell on a complete 600 x 400 table with the R Rasch fit)
DENSE_COPIES, ROW_BYTES = 12, 250


def _check_size(resp: Responses, engine: str, nagq: int) -> None:
    """Refuse (:class:`DataError`, the estimate and the fix) a fit whose systems x items matrices
    (and, with ``engine="numpy"``, its quadrature arrays) exceed mixedeval's memory limit, before
    anything is allocated: 100,000 systems x 100,000 items raised a raw MemoryError of 74.5 GiB
    (numpy engine) or kept R busy for many minutes."""
    from ._irt_numpy import fit_bytes  # noqa: PLC0415 - the numpy engine's own estimate

    S, I, n = len(resp.systems), len(resp.items), len(resp.long)
    need = 8.0 * S * I * DENSE_COPIES + ROW_BYTES * n
    how = f"{DENSE_COPIES} systems x items matrices of doubles and {res.format_count(n)} answered cells"
    if engine == "numpy":
        need += fit_bytes(S, I, nagq)
        how += f", plus the numpy fit's quadrature arrays ({'Laplace' if nagq == 1 else f'{nagq} nodes'})"
    if need > 8 * 2**20:
        res.check_memory(need, f"me.irt on {res.format_count(S)} systems x {res.format_count(I)} items would",
                         "Calibrate on a random sample of the items and systems (a few thousand items calibrate an "
                         "item bank; me.estimate_scores places other systems on it), or drop the items few systems "
                         "answered", detail=how)


def _constant_items(resp: Responses) -> list[str]:
    y, n = resp.matrix("y").to_numpy(), resp.matrix("n").to_numpy()
    ty, tn = y.sum(axis=0), n.sum(axis=0)
    return [it for it, a, b in zip(resp.items, ty, tn) if a == 0 or a == b]


def _fit(resp: Responses, model: str, covariates: pd.DataFrame | None, nagq: int,
         engine: str = "r", prior: Any = None) -> tuple[IrtFit, list[str]]:
    if model == "rasch":
        return fit_rasch(resp, covariates=covariates, nagq=nagq), []
    const = _constant_items(resp)
    keep = [i for i in resp.items if i not in const]
    if len(keep) < 2:
        raise DataError(f"only {len(keep)} item(s) are answered differently by the systems; a {model} fit needs 2 or "
                        "more (use model='rasch', which keeps items everyone answers alike)")
    sub = subset(resp, keep) if const else resp
    if engine == "numpy":
        return fit_numpy(sub, model, n_quadrature=nagq, discrimination_prior=prior), const
    return (fit_2pl(sub) if model == "2pl" else fit_rasch_fixed(sub, nagq=nagq)), const


# ------------------------------------------------------------------------------ tables
def _wald(est: np.ndarray, se: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    q = _answer.z_quantile(level)
    return est - q * se, est + q * se


def _items_table(fit: IrtFit, resp: Responses, level: float, n_sim: int, random_state: Any) -> pd.DataFrame:
    t = fit.items.set_index("item").reindex(list(resp.items))
    y, n = resp.matrix("y").to_numpy(), resp.matrix("n").to_numpy()
    out = pd.DataFrame({"item": list(resp.items)})
    for k in ("difficulty", "discrimination"):
        est, se = t[k].to_numpy(dtype=float), t[f"{k}_std_error"].to_numpy(dtype=float)
        lo, hi = _wald(est, se, level)
        if k == "discrimination" and fit.variance.get("sign") is None:
            lo, hi = est.copy(), est.copy()  # Rasch: fixed at 1
        out[k], out[f"{k}_std_error"], out[f"{k}_conf_low"], out[f"{k}_conf_high"] = est, se, lo, hi
    out["p_correct"] = y.sum(axis=0) / n.sum(axis=0)
    out["n"] = n.sum(axis=0)
    out["n_systems"] = (n > 0).sum(axis=0)
    p_s = np.where(n > 0, y / np.where(n > 0, n, 1), np.nan)
    out["n_systems_varying"] = [int(np.nanstd(c) > 0) for c in p_s.T]
    out["item_rest_correlation"], out["item_rest_p_value"] = itm.item_rest(y, n)
    theta = fit.abilities.set_index("system").reindex(list(resp.systems))["ability"].to_numpy(dtype=float)
    a, b = out["discrimination"].to_numpy(), out["difficulty"].to_numpy()
    p = special.expit(itm.eta_matrix(a, b, theta))
    fitted = np.isfinite(p).all(axis=0)
    obs, pv = itm.item_fit(y[:, fitted], n[:, fitted], p[:, fitted], n_sim=n_sim, random_state=random_state)
    out["outfit"], out["fit_p_value"] = np.nan, np.nan
    out.loc[fitted, "outfit"], out.loc[fitted, "fit_p_value"] = obs, pv
    out["fit_p_adj"] = adjust_pvalues(out["fit_p_value"].to_numpy(dtype=float), method="BH")
    return out


def _abilities_table(fit: IrtFit, resp: Responses, level: float) -> pd.DataFrame:
    t = fit.abilities.set_index("system").reindex(list(resp.systems))
    est, se = t["ability"].to_numpy(dtype=float), t["std_error"].to_numpy(dtype=float)
    lo, hi = _wald(est, se, level)
    return pd.DataFrame({"system": list(resp.systems), "ability": est, "std_error": se, "conf_low": lo,
                         "conf_high": hi})


def _headline(board: pd.DataFrame, model: str, level: float, reference: Any) -> Headline | None:
    """Best against runner-up (or reference): the abilities' difference, Wald z (:func:`mixedeval._answer.wald_headline`)."""
    unit = "logits" if model.startswith("rasch") else "SD of ability"
    return _answer.wald_headline(board, f"IRT {model} abilities (conditional modes), Wald z",
                                 ABILITY_DIRECTION, level=level, reference=reference, unit=unit)


def _dif(resp: Responses, dif: Any, dif_groups: pd.DataFrame | None, progress: bool) -> dict[str, Any] | None:
    """Per-item LRTs of uniform DIF (``me_irt_dif_base`` / ``me_irt_dif_item`` in r/irt.R)."""
    if dif is None:
        return None
    data = dif_groups
    const = _constant_dif_items(data, dif)
    base = _bridge.irt_dif_base(data, binary=bool((data["n"] == 1).all()))
    v = base.value
    tested = [i for i in resp.items if i not in const]
    guard = res.LoopGuard(f"the DIF tests by {dif}", len(tested), count=f"{res.format_count(len(tested))} items",
                          unit="likelihood-ratio tests", fix="Test DIF on fewer items (a sample of them) or raise the "
                                                              "time limit")
    rows = []
    for it in tqdm(tested, desc=f"DIF by {dif}", unit="item", leave=False, disable=not progress):
        rows.append(_bridge.irt_dif_item(v["state"], it))
        guard.block_done(len(rows))
    tab = pd.DataFrame(rows)
    tab["item"] = tab["item"].astype(str)
    tab["p_adj"] = adjust_pvalues(tab["p_value"].to_numpy(dtype=float), method="holm")
    return {"group": str(dif), "groups": [str(g) for g in data["grp"].cat.categories], "table": tab,
            "global_chisq": float(v["global_chisq"]), "global_p_value": float(v["global_p_value"]),
            "dif_sd": float(v["dif_sd"]),
            "method": "per-item likelihood-ratio tests (item x group, other items as anchors) against "
                      "glmer(y ~ 1 + grp + (1 | item) + (1 | system)); global: (1 | item:grp) variance, "
                      "50:50 mixture of chi-square(0) and chi-square(1); p_adj: Holm over items"}


def _constant_dif_items(data: pd.DataFrame, dif: Any) -> set[str]:
    """Items answered alike by every system (all right or all wrong) carry no information on
    DIF: their item x group term is not estimable (separation), so their likelihood-ratio test
    is meaningless and would only enlarge Holm's adjustment. They are left out of the per-item
    tests (``dif_p_value`` NaN) with a warning."""
    g = data.assign(_right=data["y"] == data["n"], _wrong=data["y"] == 0).groupby("item", observed=True)
    flags = g["_right"].all() | g["_wrong"].all()
    const = {str(i) for i in flags.index[flags.to_numpy()]}
    if const:
        warnings.warn(f"DIF by {dif}: {len(const)} item(s) answered alike by every system (e.g. {sorted(const)[:3]}) "
                      "have no DIF test (nothing varies) and are left out of the tests and of the Holm adjustment",
                      stacklevel=3)
    return const


def _dif_data(resp: Responses, dif: Any) -> pd.DataFrame | None:
    from ._irt_data import system_groups  # noqa: PLC0415 - kept beside its only caller for reading
    if dif is None:
        return None
    if isinstance(dif, str):
        return resp.by_group
    if isinstance(dif, (Mapping, pd.Series)):
        return system_groups(resp, dif)
    raise DataError("dif= must be a column name (a long table's column: item x group DIF, e.g. 'language') or a dict / "
                    "Series mapping each system to its group (e.g. its model family)")


def _warnings(resp: Responses, fit: IrtFit, const: list[str], model: str) -> list[ResultWarning]:
    out = list(resp.warnings) + list(fit.warnings)
    if const:
        out.append(ResultWarning("items_left_out", f"{len(const)} item(s) answered alike by every system (e.g. "
                                 f"{const[:3]}) have no finite {model} estimate and were left out of the fit (flagged "
                                 "'no information')"))
    if resp.flipped:
        out.append(ResultWarning("flipped_score", f"higher_is_better=False: the score {resp.score!r} counts failures, "
                                 "so the model's 'correct' is score = 0 (abilities: higher is better)"))
    return out


def irt(
    data: Any,
    model: str = "rasch",
    *,
    score: str = "score",
    system: str = "system",
    item: str = "item",
    trials: str | None = None,
    metric: str | None = None,
    item_covariates: pd.DataFrame | None = None,
    dif: str | Mapping[str, Any] | pd.Series | None = None,
    higher_is_better: bool | None = None,
    reference: str | None = None,
    level: float = 0.95,
    alpha: float = 0.05,
    min_discrimination: float = 0.25,
    n_sim: int = 200,
    random_state: Any = 0,
    nagq: int = 1,
    progress: bool = True,
    engine: str = "r",
    discrimination_prior: tuple[float, float] | str | None = None,
) -> IrtResult:
    """Fit an item response model to the answers of several systems (see the module docstring).

    Parameters
    ----------
    data : a long score table (``score`` 0/1, or correct counts with ``trials``), a
        :class:`mixedeval.EvalLogs` (``read_eval_logs`` output) or a folder of logs, or a wide
        table (one row per system, one 0/1 column per item; the ``system`` column or the index).
    model : ``"rasch"`` (random items, glmer), ``"rasch_fixed"`` (fixed items, glmer) or
        ``"2pl"`` (glmmTMB reduced rank).
    score, system, item, trials : column names of a long table.
    metric : which metric of logs holding several.
    item_covariates : DataFrame of item features (an ``item`` column or the index; numeric or
        categorical): Rasch with the features in the fixed part (LLTM); ``.covariates``.
    dif : a column (row-level groups such as language) or a mapping system -> group (model
        family): per-item likelihood-ratio tests of uniform DIF, ``.dif`` and the items'
        ``dif_p_value`` / ``dif_p_adj`` (Holm) columns and flags. Rasch-based whatever ``model``.
    higher_is_better : False when the score counts failures (it is flipped); None decides from
        the score's name (:func:`mixedeval._answer.direction`).
    reference : the headline compares the best other system with this one.
    level : level of the Wald intervals; ``alpha``: flagging threshold of the item tests.
    min_discrimination : discriminations below it are flagged as near zero (2PL).
    n_sim, random_state : simulations of the item-fit test (0 skips it) and their seed.
    nagq : 1 (Laplace, default) or 0 (glmer's fast nAGQ = 0; Rasch models). With
        ``engine="numpy"``: 1 (Laplace, the likelihood of the R fits, maximised directly) or a
        number of adaptive Gauss-Hermite nodes (e.g. 21: closer to the exact marginal likelihood).
    progress : a progress bar for the DIF tests.
    engine : ``"r"`` (default: the R calls above) or ``"numpy"``, the faster engine for large
        item banks (``model="rasch_fixed"`` or ``"2pl"``; :mod:`mixedeval.inference._irt_numpy`):
        with ``nagq=1`` the R fits' Laplace likelihood maximised directly (item parameters equal to
        glmmTMB's and glmer's up to the optimizers' tolerances, tests/test_irt_engines.py), with
        more nodes adaptive Gauss-Hermite EM; needs no R unless ``dif=`` is asked for. Its slopes
        stop at 20 (a warning says which items separate the systems perfectly).
    discrimination_prior : ``None`` (default: maximum likelihood, as R) or ``(mu, sd)`` /
        ``"bilog"`` (= (0, 0.5)), ``engine="numpy"`` and ``model="2pl"`` only: MAP estimates with
        a lognormal(mu, sd) prior on the discriminations (BILOG-MG's default slope prior; Mislevy
        1986). It keeps items that separate the systems (almost) perfectly, or hardly at all, from
        wild slopes and difficulties, shrinks all slopes towards the prior and forces them positive
        (a mis-keyed item gets a small positive one; its negative item-rest correlation still flags
        it); ``engine`` and ``provenance["estimator"]`` say so.
    """
    if engine not in ("r", "numpy"):
        raise DataError(f"engine must be 'r' or 'numpy', not {engine!r}")
    if not isinstance(progress, (bool, np.bool_)):
        raise DataError(f"progress must be True or False, not {progress!r}")
    m = _check_args(model, n_sim, alpha, min_discrimination, nagq, engine)
    if discrimination_prior is not None and (engine != "numpy" or m != "2pl"):
        raise DataError("discrimination_prior= needs engine='numpy' and model='2pl' (glmmTMB 1.1.5 has no priors; "
                        "Rasch discriminations are fixed)")
    if engine == "numpy" and m == "rasch":
        raise DataError("engine='numpy' fits fixed item parameters: use model='rasch_fixed' or '2pl' "
                        "(model='rasch' treats the items as random, an R-only fit)")
    level = require_level(level)
    direction = _answer.direction(score if isinstance(score, str) else None, higher_is_better)
    if item_covariates is not None and m != "rasch":
        raise DataError("item_covariates= (the linear logistic test model) needs model='rasch'")
    resp = prepare_responses(data, score=score, system=system, item=item, trials=trials, metric=metric,
                             higher_is_better=direction.higher_is_better,
                             group=dif if isinstance(dif, str) else None)
    _check_size(resp, engine, nagq)
    covariates = _item_covariates(item_covariates, resp, item)
    dif_data = _dif_data(resp, dif)
    fit, const = _fit(resp, m, covariates, nagq, engine, discrimination_prior)
    items = _items_table(fit, resp, level, n_sim, random_state)
    dif_res = _dif(resp, dif if not isinstance(dif, (Mapping, pd.Series)) else "group", dif_data, progress)
    if dif_res is not None:
        t = dif_res["table"].set_index("item").reindex(items["item"])
        items["dif_p_value"] = t["p_value"].to_numpy(dtype=float)
        items["dif_p_adj"] = t["p_adj"].to_numpy(dtype=float)
    items["flag_reasons"] = itm.item_flags(items, alpha=alpha, min_discrimination=min_discrimination, level=level,
                                    dif_name=None if dif_res is None else dif_res["group"])
    items = items.drop(columns=["n_systems_varying", "item_rest_p_value"])
    abilities = _abilities_table(fit, resp, level)
    board = _answer.leaderboard(abilities.set_index("system")["ability"], std_error=abilities["std_error"].to_numpy(),
                                conf_low=abilities["conf_low"].to_numpy(), conf_high=abilities["conf_high"].to_numpy(),
                                higher_is_better=True, level=level, random_state=None)
    used = ENGINES[m] if engine == "r" else fit.provenance.get("engine", NUMPY_ENGINE)
    prov = r_provenance() if engine == "r" or dif_res is not None else {"mixedeval": __version__}
    prov.update({"estimator": "ML (Laplace)" if engine == "r" else fit.provenance["estimator"],
                 "model": m, "engine": used, "formula": fit.formula,
                 "n_sim": int(n_sim), "random_state": jsonable(random_state) if not hasattr(random_state, "spawn")
                 else str(random_state), "source": resp.source, "score": resp.score, "nagq": int(nagq)})
    if "discrimination_prior" in fit.provenance:
        prov["discrimination_prior"] = fit.provenance["discrimination_prior"]
    prov["score_direction"] = direction.note
    head = _headline(board, m, level, reference)
    ans = _answer.Answer(direction=ABILITY_DIRECTION, leaderboard=board, headline=head,
                         differences=_answer.wald_pairs(board, level=level) if len(board) > 1 else None,
                         method=f"IRT {m} abilities (conditional modes), Wald z", no_headline_text="")
    return IrtResult(items=items, abilities=abilities, answer=ans, model=m, engine=used,
                     formula=fit.formula, loglik=fit.loglik, nobs=fit.nobs, level=level,
                     variance=dict(fit.variance), covariates=fit.covariates, dif=dif_res,
                     warnings=tuple(_warnings(resp, fit, const, m)), provenance=prov,
                     responses=resp.matrix("p"), trials=resp.matrix("n"))
