"""Model diagnostics: simulated (DHARMa-style) residuals, their tests, classical checks, plots.

Everything here is numpy/scipy (R only produces the simulations, through the fitted model):

* :func:`from_simulations` -- diagnostics from any simulation matrix (DHARMa's ``createDHARMa``);
* :func:`diagnose_fit` -- the same for a fitted :class:`mixedeval.LMMFit` or
  :class:`mixedeval.GLMMFit` (:func:`diagnose_glmm`: integer responses, randomized PIT residuals),
  plus classical checks;
* :func:`aggregate_residuals` -- residuals of responses summed within groups (DHARMa's
  ``recalculateResiduals``), e.g. 0/1 outcomes summed per item to test over-dispersion;
* ``test_*`` -- the individual tests (uniformity, dispersion, outliers, zero-inflation, generic,
  categorical);
* :func:`ks_test_uniform` -- R's ``ks.test(x, "punif")`` (hand-written: R's exact/asymptotic rule
  and its p-value arithmetic differ from ``scipy.stats.kstest``; see ``_ks``);
* ``plot_*`` -- matplotlib figures (matplotlib is imported only when a plot is drawn).

Where scipy gives R's number it is called directly: the outlier test's binomial p-value is
``scipy.stats.binomtest`` (R's ``binom.test``), the Levene test ``scipy.stats.levene(center=
"median")`` (``car::leveneTest``), Holm's adjustment :func:`mixedeval.adjust_pvalues`.

Names are resolved lazily so that importing this package stays cheap.
"""
from __future__ import annotations

_LAZY: dict[str, str] = {
    "from_simulations": "core",
    "Diagnostics": "result",
    "SimulationTest": "result",
    "diagnose_fit": "fit",
    "classical_checks": "fit",
    "diagnose_glmm": "glmm",
    "glmm_checks": "glmm",
    "aggregate_residuals": "aggregate",
    "is_integer_response": "residuals",
    "pit_residuals": "residuals",
    "test_uniformity": "simtests",
    "test_dispersion": "simtests",
    "test_outliers": "simtests",
    "test_zero_inflation": "simtests",
    "test_generic": "simtests",
    "test_categorical": "simtests",
    "ks_test_uniform": "_ks",
    "plot_qq_uniform": "plots",
    "plot_residuals_vs_predicted": "plots",
    "plot_residuals_by_group": "plots",
    "plot_ranef_qq": "plots",
    "plot_residuals_vs_fitted": "plots",
    "plot_qq_normal": "plots",
    "plot_dharma": "plots",
    "plot_simulation_test": "plots",
}

from .. import _lazy  # noqa: E402

_lazy.install(__name__, {name: (f".{mod}", name) for name, mod in _LAZY.items()})
