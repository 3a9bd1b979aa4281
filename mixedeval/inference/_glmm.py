"""Generalized linear mixed models: ``lme4::glmer``, ``lme4::glmer.nb`` and ``glmmTMB``.

:func:`glmm` fits a GLMM and returns a :class:`GLMMFit` whose tables equal what R prints:

* ``family="binomial"``: ``lme4::glmer(family = binomial(link))``; the response is 0/1 (or
  bool), ``cbind(successes, failures)``, or a proportion with ``weights`` = the number of trials;
* ``"poisson"``: ``lme4::glmer(family = poisson(link))``; non-negative integer counts;
* ``"negative_binomial"`` (alias ``"nb"``): ``lme4::glmer.nb`` (log link, theta estimated:
  ``dispersion["theta"]``); non-negative integer counts;
* ``"beta"``: ``glmmTMB::glmmTMB(family = beta_family(link))``; proportions strictly inside
  (0, 1) (``dispersion["phi"]``, the precision); exact 0/1 only with the opt-in ``squeeze``;
* ``"betabinomial"``: ``glmmTMB::glmmTMB(family = betabinomial(link))``;
  ``cbind(successes, failures)`` or a proportion with ``weights`` (``dispersion["phi"]``).

Tables:

* ``fixed`` (also ``table``): term, estimate, std_error, z_value, p_value, conf_low, conf_high
  -- ``summary(m)$coefficients`` (Wald z tests; the conditional model of glmmTMB) with the Wald
  interval ``estimate +- qnorm(1 - alpha/2) * std_error`` on the link scale -- and, for the
  logit and log links, ``exp_estimate``, ``exp_conf_low``, ``exp_conf_high``: the same numbers
  exponentiated, i.e. **odds ratios** (logit link: binomial, beta-binomial, beta) or **rate
  ratios** (log link: poisson, negative binomial) for the non-intercept terms (for the intercept,
  the odds / rate at the reference cell). ``exp_label`` names which (``"odds_ratio"`` /
  ``"rate_ratio"``) and is None for other links;
* ``random``: group, term, term2, variance, std_dev, corr (as :class:`LMMFit`; there is no
  residual row: binomial and Poisson GLMMs have no residual variance on the link scale);
* ``loglik`` (``logLik(m)``: Laplace or adaptive Gauss-Hermite approximation with ``nagq``
  points; ``nagq=0`` optimises the fixed effects in the penalised IRLS step, a faster and
  cruder fit -- the fast path for large item tables), ``aic``, ``bic``, ``deviance``
  (``deviance(m)`` for lme4 fits, ``-2 logLik`` for glmmTMB), ``nobs``, ``ngroups``;
  ``singular`` (``lme4::isSingular(m, tol = 1e-4)``; for glmmTMB: a random-effect SD below
  1e-4 or a correlation at +-1).

Estimation is always maximum likelihood (GLMMs have no REML in lme4), so likelihood-ratio tests
between GLMM fits never need a refit.

Convergence: lme4's gradient and Hessian checks (``check.conv.grad``, ``check.conv.hess``) and
optimizer messages become ``ResultWarning`` objects of kind ``convergence_gradient``,
``convergence_hessian`` or ``convergence`` (glmmTMB: a non-positive-definite Hessian is
``convergence_hessian``). Compare optimizers with :meth:`GLMMFit.check_optimizers`.

The default optimizer is R's: ``glmer()`` / ``glmer.nb()`` called without ``control`` run bobyqa
for the first (nAGQ = 0) stage and Nelder-Mead for the second (``glmerControl()``'s
``c("bobyqa", "Nelder_Mead")``), recorded as ``optimizer="bobyqa+Nelder_Mead"``. Any
glmerControl choice is accepted: one name for both stages (``"bobyqa"``, ``"Nelder_Mead"``,
``"nloptwrap"``, ``"nlminbwrap"``) or a pair ``("bobyqa", "Nelder_Mead")`` / ``"bobyqa+Nelder_Mead"``.
bobyqa in both stages is the documented fast option for some models: on VerbAgg it was 4.5x slower
than the default, on ``glmer.nb`` 4.8x faster (``benchmarks/bench_glmm.py``). glmmTMB fits use
glmmTMB's own optimizer (``nlminb``) and record ``optimizer="nlminb"``.

Covariance of the fixed effects: lme4 inverts the finite-difference Hessian of the deviance
(``vcov(m)``, ``use.hessian = TRUE``). Every fit checks it against the RX-based covariance
(``vcov(m, use.hessian = FALSE)``); when the Hessian is not positive definite or some standard
error differs by more than 10% (well-behaved fits agree within a few percent; at a boundary or on
an ill-conditioned optimum the Hessian-based ones can collapse by orders of magnitude), the fit
uses the RX-based covariance for every table (fixed effects, EMMs, contrasts, Wald tests) and
carries a ``vcov_unstable`` warning saying which standard error disagreed and by how much (the R
helper ``me_glmm_vcov_check`` in ``r/glmm.R``).

Factor coding as :func:`mixedeval.lmm` (treatment contrasts, first level the reference).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..data._formula import parse_formula
from ..data.validate import require_level
from ..diagnostics import diagnose_fit
from ..engine import _bridge
from ..engine.conditions import normalize as _normalize_condition, r_warnings
from ..errors import DataError
from ..results import ResultWarning
from ._emm_answer import with_direction
from ._fit_common import FitResultMixin
from ._glmm_infer import glmm_anova, glmm_check_optimizers, glmm_emmeans, glmm_emtrends
from ._lmm import prepare_model_data, r_provenance
from ._options import (  # noqa: F401 - FAMILIES, the optimizer names and their normalizer are also this module's
    DEFAULT_GLMM_OPTIMIZER,
    FAMILIES,
    GLMM_OPTIMIZERS,
    LME4_OPTIMIZERS,
    OPTIMIZERS,
    normalize_glmm_optimizer,
)
from ._separation import check_separation, detect_separation, penalized_refit
from .r2 import icc, r2

_FAMILY_ALIASES = {"nb": "negative_binomial", "negbin": "negative_binomial", "negative-binomial": "negative_binomial",
                   "beta_binomial": "betabinomial", "beta-binomial": "betabinomial"}
#: links accepted per family (the first is the default)
LINKS = {
    "binomial": ("logit", "probit", "cloglog", "cauchit", "log"),
    "poisson": ("log", "identity", "sqrt"),
    "negative_binomial": ("log",),
    "beta": ("logit", "probit", "cloglog"),
    "betabinomial": ("logit", "probit", "cloglog"),
}
#: the opt-in squeeze of exact 0/1 values for family="beta"
SQUEEZES = ("smithson_verkuilen",)
COLUMNS = ("term", "estimate", "std_error", "z_value", "p_value", "conf_low", "conf_high")
EXP_COLUMNS = ("exp_estimate", "exp_conf_low", "exp_conf_high")
_EXP_LABEL = {"logit": "odds_ratio", "log": "rate_ratio"}


def normalize_family(family: str) -> str:
    key = str(family).strip().lower()
    key = _FAMILY_ALIASES.get(key, key)
    if key not in FAMILIES:
        raise DataError(f"family {family!r} is not one of {', '.join(FAMILIES)}")
    return key


def _normalize_link(family: str, link: str | None) -> str:
    if link is None:
        return LINKS[family][0]
    if link not in LINKS[family]:
        raise DataError(f"link {link!r} is not available for family {family!r}; use one of {', '.join(LINKS[family])}")
    return link


@dataclass(frozen=True, repr=False)
class GLMMFit(FitResultMixin):
    """A fitted generalized linear mixed model (see :func:`glmm` and the module docstring)."""

    formula: str
    response: str
    family: str
    link: str
    fixed: Any
    random: Any
    loglik: float
    aic: float
    bic: float
    deviance: float
    nobs: int
    ngroups: dict[str, int]
    singular: bool
    converged: bool
    optimizer: str
    nagq: int
    level: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    data: Any = field(repr=False)
    factors: tuple[str, ...] = ()
    dispersion: dict[str, float] = field(default_factory=dict)
    weights: Any = field(default=None, repr=False)
    _r_formula: str = field(default="", repr=False, compare=False)
    _model: Any = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    _print_tables = ("fixed", "random")
    _dict_keys = ("formula", "response", "family", "link", "fixed", "random", "loglik", "aic", "bic", "deviance",
                  "nobs", "ngroups", "singular", "converged", "optimizer", "nagq", "level", "dispersion", "warnings",
                  "provenance")

    #: GLMMs are fitted by maximum likelihood (the attribute the LMM code paths look at)
    reml = False

    @property
    def exp_label(self) -> str | None:
        """What the ``exp_*`` columns are: ``"odds_ratio"`` (logit link), ``"rate_ratio"`` (log link) or None."""
        return _EXP_LABEL.get(self.link)

    @property
    def r_function(self) -> str:
        return FAMILIES[self.family]

    @property
    def _title(self) -> str:  # type: ignore[override]
        how = {0: "nAGQ = 0", 1: "Laplace"}.get(self.nagq, f"adaptive Gauss-Hermite, {self.nagq} points")
        if self.r_function.startswith("glmmTMB"):
            how = "Laplace (TMB)"
        return f"Generalized linear mixed model ({self.family}, {self.link} link; {self.r_function}, {how}): {self.formula}"

    def _scalars(self):
        out = [("nobs", self.nobs), ("groups", self.ngroups), ("logLik", f"{self.loglik:.6g}"),
               ("AIC", f"{self.aic:.6g}"), ("BIC", f"{self.bic:.6g}")]
        out += [(k, f"{v:.6g}") for k, v in self.dispersion.items()]
        return out + [("singular", self.singular), ("converged", self.converged)]

    def coef_table(self, level: float = 0.95):
        """The fixed-effects table at another confidence level."""
        level = require_level(level)
        return _fixed_frame(_bridge.glmm_fixed(self, level=float(level)), self.link)

    # ------------------------------------------------------------ inference layer
    def anova(self, type: int | str = 3):  # noqa: A002 - anova's name
        """Type III Wald chi-square tests (``car::Anova(type = 3)``, factors refitted with ``contr.sum``)."""
        return glmm_anova(self, type=type)

    def emmeans(self, specs, by=None, level: float = 0.95, at=None, type: str = "response",  # noqa: A002
                marginal: bool | str = False, *, higher_is_better: bool | None = None):
        """Estimated marginal means on the response (default) or link scale (emmeans; df = Inf).
        ``marginal``: False (conditional: a typical group, random effects at zero), True /
        ``"bias_adj"`` (population-averaged, emmeans' bias adjustment) or ``"integrate"``
        (population-averaged, exact integral); see :func:`._glmm_infer.glmm_emmeans`.
        ``higher_is_better`` declares the score's direction (None: from the response's name)."""
        return with_direction(glmm_emmeans(self, specs, by=by, level=level, at=at, type=type, marginal=marginal),
                              higher_is_better)

    def emtrends(self, specs, var: str, by=None, level: float = 0.95, at=None, type: str = "link"):  # noqa: A002
        """Slopes of ``var`` per level of ``specs`` (link scale by default; emmeans::emtrends)."""
        return glmm_emtrends(self, specs, var=var, by=by, level=level, at=at, type=type)

    def check_optimizers(self, optimizers: Sequence[str] = GLMM_OPTIMIZERS, **kwargs: Any):
        """Refit with bobyqa, Nelder_Mead, nloptwrap and nAGQ = 0 and compare (see :mod:`._glmm_infer`)."""
        return glmm_check_optimizers(self, optimizers=optimizers, **kwargs)

    def separation(self):
        """Separation of the fixed part (Konis' linear program): cells, infinite terms
        (:func:`mixedeval.inference._separation.detect_separation`; binomial glmer fits)."""
        return detect_separation(self)

    def penalized_refit(self, intercept_sd: float = 10.0, slope_sd: float = 2.5) -> "GLMMFit":
        """The same model refitted by ``blme::bglmer`` with a weakly informative normal prior on
        the fixed effects (sd 10 for the intercept, 2.5 for the others on the logit scale; Gelman,
        Jakulin, Pittau & Su 2008, blme's default): finite estimates under separation."""
        return penalized_refit(self, intercept_sd=intercept_sd, slope_sd=slope_sd)

    def r2(self, method: str | None = None):
        """Marginal and conditional R² (Nakagawa, Johnson & Schielzeth 2017; :func:`mixedeval.r2`)."""
        return r2(self, method)

    def icc(self, method: str | None = None):
        """ICC on the latent scale (:func:`mixedeval.icc`)."""
        return icc(self, method)

    def diagnose(self, n_sim: int = 250, random_state: Any = 123, re: str = "unconditional", **kwargs: Any):
        """Simulated-residual diagnostics for the GLMM (:func:`mixedeval.diagnostics.diagnose_fit`;
        ``kwargs``: ``group``, ``alpha``, ``check_optimizers``, ``alternative``, ``executor``: where
        blocks of 250 simulations run when ``n_sim > 250``)."""
        return diagnose_fit(self, n_sim=n_sim, random_state=random_state, re=re, **kwargs)

    # ------------------- what the public functions (mixedeval.anova, emmeans, ...) run on a GLMM
    def _anova(self, *, type: int | str, ddf: str, level: float):  # noqa: A002 - anova's name
        return glmm_anova(self, type=type)  # Type III Wald chi-square tests (car::Anova) on a contr.sum refit

    def _emmeans(self, specs, *, by, df_method: str, level: float, at, type: str | None):  # noqa: A002
        return glmm_emmeans(self, specs, by=by, level=level, at=at, type=type)  # asymptotic df; response scale

    def _emtrends(self, specs, *, var: str, by, df_method: str, level: float, at, type: str | None):  # noqa: A002
        return glmm_emtrends(self, specs, var=var, by=by, level=level, at=at, type=type)  # link scale by default

    def _check_optimizers(self, *, optimizers: Sequence[str], rtol: float, loglik_tol: float):
        # glmer's optimizers and nAGQ = 0 vs the fit's nAGQ; the LMM default set means glmer's default set
        opts = GLMM_OPTIMIZERS if tuple(optimizers) == OPTIMIZERS else optimizers
        return glmm_check_optimizers(self, optimizers=opts, rtol=rtol, loglik_tol=loglik_tol)

    def _refitted(self, res: Any, *, level: float, pre: Sequence[ResultWarning]) -> "GLMMFit":
        """A fit of this model (formula, data, weights, settings) from another R fit's summary ``res``
        (:func:`._separation.penalized_refit`)."""
        return _build(res, formula=self.formula, r_formula=self._r_formula, family=self.family, frame=self.data,
                      optimizer=self.optimizer, nagq=self.nagq, level=level, pre=pre, factors=self.factors,
                      weights=self.weights)


def _fixed_frame(raw: Any, link: str) -> Any:
    """The bridge's fixed table (mixedeval names) with the exp_* columns for logit/log links."""
    t = pd.DataFrame({"term": [str(x) for x in raw["term"]],
                      **{c: np.asarray(raw[c], dtype=float) for c in COLUMNS[1:]}})
    if link in _EXP_LABEL:
        with np.errstate(over="ignore"):  # a separated term's Wald interval: exp() is inf, which is the value
            t["exp_estimate"] = np.exp(t["estimate"])
            t["exp_conf_low"] = np.exp(t["conf_low"])
            t["exp_conf_high"] = np.exp(t["conf_high"])
    return t


# ------------------------------------------------------------------------------ validation
def _integer_valued(x: np.ndarray) -> bool:
    return bool(np.all(np.abs(x - np.round(x)) <= 1e-8 * np.maximum(1.0, np.abs(x))))


def _column_values(frame: Any, col: str) -> np.ndarray:
    s = frame[col]
    if pd.api.types.is_bool_dtype(s.dtype):
        return s.to_numpy(dtype=float)
    if not pd.api.types.is_numeric_dtype(s.dtype):
        raise DataError(f"response column {col!r} must be numeric (got {s.dtype}); code outcomes as 0/1 or counts")
    return s.to_numpy(dtype=float, na_value=np.nan)


#: R's largest integer (.Machine$integer.max): R's random counts (rpois, rbinom) are integers
MAX_COUNT = 2**31 - 1


def _require_counts(frame: Any, col: str, what: str) -> None:
    y = _column_values(frame, col)
    y = y[np.isfinite(y)]
    if (y < 0).any():
        raise DataError(f"{what}: column {col!r} has {int((y < 0).sum())} negative value(s) (e.g. {y[y < 0][0]:g}); "
                        "counts must be non-negative integers")
    if not _integer_valued(y):
        bad = y[np.abs(y - np.round(y)) > 1e-8 * np.maximum(1.0, np.abs(y))]
        raise DataError(f"{what}: column {col!r} has non-integer value(s) (e.g. {bad[0]:g}); counts must be "
                        "non-negative integers (for proportions use family='binomial' with weights=, or 'beta')")
    if (y > MAX_COUNT).any():
        raise DataError(f"{what}: column {col!r} has {int((y > MAX_COUNT).sum())} count(s) above R's largest integer "
                        f"{MAX_COUNT:,} (e.g. {y[y > MAX_COUNT][0]:g}); R cannot simulate or refit them (its random "
                        "counts are integers); rescale to a coarser unit or model a continuous score with lmm")


def _validate_binomial(parsed: Any, frame: Any, weights: np.ndarray | None, family: str) -> None:
    if parsed.lhs.replace(" ", "").startswith("cbind("):
        for c in parsed.response_columns:
            _require_counts(frame, c, f"{family} response cbind(successes, failures)")
        return
    if parsed.response is None:
        return  # an expression such as I(score > 0.5): glmer checks it
    col = parsed.response
    y = _column_values(frame, col)
    y = y[np.isfinite(y)]
    if ((y < 0) | (y > 1)).any():
        raise DataError(f"binomial response column {col!r} has values outside [0, 1] (e.g. {y[(y < 0) | (y > 1)][0]:g}); "
                        "use 0/1 outcomes, cbind(successes, failures) ~ ..., or proportions with weights= (trials); "
                        "counts without a number of trials are family='poisson'")
    if weights is None:
        if not np.isin(y, (0.0, 1.0)).all():
            raise DataError(f"binomial response column {col!r} has proportions strictly between 0 and 1 but no "
                            "weights; pass weights= the number of trials per row (or use cbind(successes, failures), "
                            "or family='beta' for continuous scores in (0, 1))")
        if family == "betabinomial":
            raise DataError("family='betabinomial' needs cbind(successes, failures) ~ ... or a proportion with "
                            "weights= (trials); 0/1 outcomes without trials carry no overdispersion to model")
    else:
        w = weights[np.isfinite(_column_values(frame, col))]
        if not _integer_valued(y * w):
            raise DataError(f"binomial response column {col!r} times weights is not an integer number of successes "
                            "in every row; weights must be the number of trials of each proportion")


def _validate_beta(parsed: Any, frame: Any, squeeze: str | None) -> list[ResultWarning]:
    col = parsed.response
    if col is None:
        if squeeze is not None:
            raise DataError("squeeze= needs the response to be a single column (not an expression)")
        return []
    y = _column_values(frame, col)
    ok = np.isfinite(y)
    yv = y[ok]
    if ((yv < 0) | (yv > 1)).any():
        raise DataError(f"beta response column {col!r} has values outside [0, 1]; rescale scores to proportions first")
    n_edge = int(((yv == 0) | (yv == 1)).sum())
    if not n_edge:
        return []
    if squeeze is None:
        raise DataError(f"beta response column {col!r} has {n_edge} value(s) exactly 0 or 1, where the beta "
                        "distribution has no density; pass squeeze='smithson_verkuilen' to use (y * (n - 1) + 0.5) / n "
                        "(Smithson & Verkuilen 2006), drop those rows, or model counts with family='binomial'")
    n = int(ok.sum())
    frame[col] = (y * (n - 1) + 0.5) / n  # frame is the private copy
    return [ResultWarning("squeeze", f"{n_edge} exact 0/1 value(s) of {col!r}: every response value y was replaced by "
                          f"(y * (n - 1) + 0.5) / n with n = {n} (Smithson & Verkuilen 2006), as squeeze= asked",
                          "mixedeval")]


def _weights_array(weights: Any, data: Any, frame: Any) -> np.ndarray | None:
    if weights is None:
        return None
    if isinstance(weights, str):
        if not isinstance(data, pd.DataFrame) or weights not in data.columns:
            raise DataError(f"weights column {weights!r} is not in the data")
        w = pd.to_numeric(data[weights], errors="coerce").to_numpy(dtype=float)
    else:
        w = _weights_values(weights)
    if w.ndim != 1 or len(w) != len(frame):
        raise DataError(f"weights must have one value per row ({len(frame)}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or (w <= 0).any():
        raise DataError("weights must be finite and positive (the number of trials per row)")
    if (w > MAX_COUNT).any():
        raise DataError(f"weights (numbers of trials) above R's largest integer {MAX_COUNT:,} cannot be simulated "
                        "or refitted in R; use a coarser unit")
    return w


_WEIGHTS_FORMS = ("weights= must be the name of a data column, or a list, numpy array or pandas Series of numbers "
                  "with one value per row (the number of trials of each proportion)")


def _weights_values(weights: Any) -> np.ndarray:
    """A sequence of per-row weights as floats; a DataError saying what weights may be otherwise
    (a dict, a set, a scalar, strings)."""
    if isinstance(weights, (Mapping, set, frozenset, bytes)) or np.ndim(weights) == 0:
        raise DataError(f"{_WEIGHTS_FORMS}; got {type(weights).__name__} {weights!r:.80}")
    try:
        return np.asarray(weights, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{_WEIGHTS_FORMS}; got values that are not numbers ({exc})") from None


def _bool_response_as_int(formula: str, data: Any, allow_r_code: bool) -> Any:
    """A pandas frame whose response column is boolean, with that column as 0/1 integers (a new
    frame: the caller's is untouched); anything else unchanged."""
    if not isinstance(data, pd.DataFrame) or not isinstance(formula, str) or "~" not in formula:
        return data
    try:
        col = parse_formula(formula, [str(c) for c in data.columns], allow_r_code=allow_r_code).response
    except DataError:
        return data  # prepare_model_data reports it
    if col is not None and col in data.columns and pd.api.types.is_bool_dtype(data[col].dtype):
        return data.assign(**{col: data[col].astype(np.int64)})
    return data


def _convergence_kind(msg: str) -> str:
    low = msg.lower()
    if "grad" in low:
        return "convergence_gradient"
    if "hessian" in low or "eigenvalue" in low:
        return "convergence_hessian"
    return "convergence"


def _glmm_warnings(res: Any, pre: Sequence[ResultWarning], singular: bool) -> list[ResultWarning]:
    """Structured warnings: lme4/glmmTMB convergence checks by kind, singular fits, R's other warnings."""
    out = list(pre)
    if bool(res.value.get("vcov_unstable", False)):
        out.append(ResultWarning("vcov_unstable", str(res.value["vcov_message"]), "mixedeval"))
    conv = res.value["convergence"]
    msgs = conv.get("messages")
    msgs = [] if msgs is None else ([msgs] if isinstance(msgs, str) else list(msgs))
    seen: set[str] = set()
    for msg in msgs:  # lme4's checks (check.conv.grad / check.conv.hess) and optimizer messages
        msg = _normalize_condition(msg)
        if msg not in seen:
            seen.add(msg)
            out.append(ResultWarning(_convergence_kind(msg), msg, "lme4"))
    for w in r_warnings(res):  # R's warnings, unless they repeat the checks above (lme4 warns them too)
        if all(_normalize_condition(part) in seen for part in w.message.split(";")):
            continue
        kind = _convergence_kind(w.message) if w.kind == "convergence" or "unidentifiable" in w.message else w.kind
        out.append(ResultWarning(kind, w.message, w.source))
    if singular and not any(w.kind == "singular" for w in out):
        out.append(ResultWarning("singular", "boundary (singular) fit: at least one variance component is estimated "
                                 "as zero or a correlation as +-1", "lme4"))
    return out


def _build(res: Any, *, formula: str, r_formula: str, family: str, frame: Any, optimizer: str, nagq: int, level: float,
           pre: Sequence[ResultWarning], factors: Sequence[str], weights: np.ndarray | None) -> GLMMFit:
    v = res.value
    singular = bool(v["singular"])
    names = v["ngroups_names"]
    counts = v["ngroups"]
    names = [names] if isinstance(names, str) else list(names)
    counts = [counts] if np.isscalar(counts) else list(counts)
    disp = v["dispersion"]
    dn = disp.get("name")
    dn = [] if dn is None else ([dn] if isinstance(dn, str) else list(dn))
    dv = np.atleast_1d(np.asarray(disp.get("value") if disp.get("value") is not None else [], dtype=float))
    link = str(v["link"])
    prov = r_provenance()
    prov.update({"estimator": "ML", "optimizer": optimizer, "nagq": int(nagq), "family": family, "link": link,
                 "r_function": FAMILIES[family], "df_method": "asymptotic"})
    return GLMMFit(
        formula=formula, response=str(v["response"]).strip("`"), family=family, link=link,
        fixed=_fixed_frame(v["fixed"], link), random=v["random"], loglik=float(v["loglik"]), aic=float(v["aic"]),
        bic=float(v["bic"]), deviance=float(v["deviance"]), nobs=int(v["nobs"]),
        ngroups={str(k): int(c) for k, c in zip(names, counts)}, singular=singular,
        converged=bool(v["convergence"]["converged"]), optimizer=optimizer, nagq=int(nagq), level=float(level),
        warnings=tuple(_glmm_warnings(res, pre, singular)), provenance=prov, data=frame, factors=tuple(factors),
        dispersion={str(k): float(x) for k, x in zip(dn, dv)}, weights=weights, _r_formula=r_formula,
        _model=v["model"],
    )


def glmm(
    formula: str,
    data: Any,
    family: str = "binomial",
    link: str | None = None,
    *,
    nagq: int = 1,
    optimizer: str | Sequence[str] | None = None,
    weights: Any = None,
    factors: Sequence[str] = (),
    levels: Mapping[str, Sequence[Any]] | None = None,
    reference: Mapping[str, Any] | None = None,
    level: float = 0.95,
    squeeze: str | None = None,
    calc_derivs: bool = True,
    allow_r_code: bool = False,
) -> GLMMFit:
    """Fit a generalized linear mixed model (see the module docstring for families and tables).

    Parameters
    ----------
    formula : lme4 formula; the response is a 0/1 column, a count column, a proportion, or
        ``cbind(successes, failures)`` (binomial, betabinomial).
    data : pandas/polars DataFrame, pyarrow Table, or path to a CSV/Parquet/JSON file. Never modified.
    family : ``"binomial"``, ``"poisson"``, ``"negative_binomial"`` (``glmer.nb``; alias ``"nb"``),
        ``"beta"`` or ``"betabinomial"`` (glmmTMB).
    link : None for the family's canonical link (logit, log), or another link in :data:`LINKS`.
    nagq : Gauss-Hermite points (lme4's ``nAGQ``): 1 = Laplace (default); 0 = the fast path for
        large item tables (fixed effects estimated inside the penalised IRLS step; slightly less
        accurate); > 1 only with a single scalar random effect. glmmTMB fits use Laplace.
    optimizer : None (default: R's own, bobyqa then Nelder-Mead, so that the fit equals
        ``glmer(formula, data, family)`` called without ``control``), one of ``"bobyqa"``,
        ``"Nelder_Mead"``, ``"nloptwrap"``, ``"nlminbwrap"`` for both stages, or a pair
        (stage 1, stage 2).
    weights : binomial/betabinomial with a proportion response: the number of trials per row (a
        column name or an array); otherwise prior weights.
    factors, levels, reference : factor coding as :func:`mixedeval.lmm`.
    level : confidence level of the Wald intervals.
    squeeze : ``family="beta"`` only: None (default; exact 0/1 responses are an error) or
        ``"smithson_verkuilen"``: replace y by ``(y * (n - 1) + 0.5) / n`` (Smithson & Verkuilen
        2006, *Psychol. Methods* 11:54), recorded as a ``squeeze`` warning.
    calc_derivs : lme4's ``calc.derivs`` (the gradient/Hessian convergence checks need it).
    allow_r_code : as :func:`mixedeval.lmm` (the formula is checked against an allow-list unless True).
    """
    fam = normalize_family(family)
    lnk = _normalize_link(fam, link)
    opt = normalize_glmm_optimizer(optimizer)
    if isinstance(nagq, bool) or not isinstance(nagq, (int, np.integer)) or not 0 <= int(nagq) <= 25:
        raise DataError(f"nagq must be an integer from 0 to 25 (0 = fast, 1 = Laplace), not {nagq!r}")
    if fam in ("beta", "betabinomial") and int(nagq) != 1:
        raise DataError(f"family={fam!r} is fitted by glmmTMB (Laplace approximation); nagq must be 1")
    if squeeze is not None and (fam != "beta" or squeeze not in SQUEEZES):
        raise DataError(f"squeeze={squeeze!r}: only family='beta' takes squeeze='smithson_verkuilen' (or None)")
    level = require_level(level)
    data = _bool_response_as_int(formula, data, allow_r_code)
    qformula, frame, pre = prepare_model_data(formula, data, factors=factors, levels=levels, reference=reference,
                                              allow_r_code=allow_r_code)
    parsed = parse_formula(formula, [str(c) for c in frame.columns], allow_r_code=allow_r_code)
    w = _weights_array(weights, data, frame)
    if fam in ("binomial", "betabinomial"):
        _validate_binomial(parsed, frame, w, fam)
    elif fam in ("poisson", "negative_binomial") and parsed.response is not None:
        _require_counts(frame, parsed.response, f"{fam} response")
    elif fam == "beta":
        pre = list(pre) + _validate_beta(parsed, frame, squeeze)
    r_opt = "nlminb" if fam in ("beta", "betabinomial") else opt
    res = _bridge.glmm_fit_and_summarise(qformula, frame, family=fam, link=None if link is None else lnk,
                                         nagq=int(nagq), optimizer=opt, weights=w, level=float(level),
                                         calc_derivs=bool(calc_derivs))
    fit = _build(res, formula=formula, r_formula=qformula, family=fam, frame=frame, optimizer=r_opt, nagq=int(nagq),
                 level=level, pre=pre, factors=factors, weights=w)
    if fam == "binomial":
        fit = _with_separation_check(fit)
    return fit


def _with_separation_check(fit: GLMMFit) -> GLMMFit:
    """The fit with a ``separation`` warning when its fixed part is (quasi-)completely separated
    (:func:`mixedeval.inference._separation.check_separation`: Konis' linear program)."""
    warns, _cells = check_separation(fit)
    if not warns:
        return fit
    return replace(fit, warnings=tuple(fit.warnings) + tuple(warns))
