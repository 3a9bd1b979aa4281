"""Self-contained HTML report of a mixed-model evaluation analysis.

:func:`report` writes one HTML file (figures embedded as ``data:`` URIs, styles inline, no
scripts, nothing fetched from the network) with the data design, the model, fixed and random
effects, F tests with partial eta², likelihood-ratio tests, EMMs and contrasts, R² and ICC, the
simulated-residual diagnostics, and -- where given -- bootstrap, variance-component and
language-disparity results, closed by a provenance block (versions, seeds, SHA-256 of the inputs).
Rendering uses a Jinja2 template (``templates/report.html.j2``, autoescaped) and matplotlib.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path
from typing import Any

from .sections import MODEL_SECTIONS, OPTIONAL, TITLES, Context, build

__all__ = ["report", "render_html", "SECTION_TITLES"]

#: section id -> heading, in report order
SECTION_TITLES = dict(TITLES)

_STATUS_TEXT = {"ok": "ok", "warning": "warning", "not_available": "not available", "error": "error"}


def _template():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # noqa: PLC0415

    env = Environment(loader=FileSystemLoader(str(Path(__file__).resolve().parent / "templates")),
                      autoescape=True, undefined=StrictUndefined, trim_blocks=False, lstrip_blocks=False)
    return env.get_template("report.html.j2")


def render_html(sections: list[Any], title: str) -> str:
    """The report page for already built sections."""
    from .. import __version__  # noqa: PLC0415

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return _template().render(title=title, sections=sections, version=__version__, generated=now,
                              status_text=_STATUS_TEXT)


def _shown(section_id: str, fit: Any, present: dict[str, Any], results: dict[str, Any]) -> bool:
    """Optional sections need their input; model sections need a fit or their result."""
    if section_id in OPTIONAL:
        return present[section_id] is not None
    if section_id in MODEL_SECTIONS and fit is None:
        keys = MODEL_SECTIONS[section_id]
        keys = (keys,) if isinstance(keys, str) else (keys or ())
        return any(results.get(k) is not None for k in keys)
    return True


def report(
    fit: Any = None,
    path: str | os.PathLike = "mixedeval-report.html",
    *,
    title: str | None = None,
    data: Any = None,
    design_factors: Any = None,
    anova: Any = None,
    comparison: Any = None,
    emmeans: Any = None,
    contrasts: Any = None,
    r2: Any = None,
    icc: Any = None,
    diagnostics: Any = None,
    bootstrap: Any = None,
    vca: Any = None,
    vca_grid: Any = None,
    disparity: Any = None,
    extra_tables: Any = None,
    seeds: dict[str, Any] | None = None,
    input_file: str | os.PathLike | list | None = None,
    compute_missing: bool = True,
    n_sim: int = 250,
    seed: int = 123,
    quiet: bool = False,
) -> Path:
    """Write a self-contained HTML report and return its path.

    Parameters
    ----------
    fit : a :class:`mixedeval.LMMFit` (optional: a report of bootstrap / variance-component /
        disparity results alone is possible).
    path : output file.
    data, design_factors : the score table and the factors whose design (levels, crossed or nested,
        balance) is described; by default the model's data and its categorical columns.
    anova, comparison, emmeans, contrasts, r2, icc, diagnostics : results of ``fit.anova()``,
        ``mixedeval.compare(...)`` (one or a list), ``fit.emmeans(...)``,
        ``emm.contrasts(...)``, ``fit.r2()``, ``fit.icc()``, ``fit.diagnose(...)``.
    bootstrap, vca, disparity : results of ``mixedeval.bootstrap``,
        ``mixedeval.variance_components`` (``vca_grid``: the D-study grid) and
        ``mixedeval.language_disparity``; their sections appear only when given.
    extra_tables : ``{caption: DataFrame}`` shown in an extra section.
    seeds : seeds to record in the provenance block (those held by the results are added).
    input_file : file(s) whose SHA-256 is recorded (a path given as ``data`` is added).
    compute_missing : with a ``fit``, compute the results of the model sections that were not
        passed: F tests, the likelihood-ratio test against the model without fixed effects (ML
        refits), EMMs and Holm pairwise contrasts of the first categorical fixed-effect factor,
        R², ICC and the diagnostics (``n_sim`` simulations, ``seed``). A part that fails or whose
        module is missing is reported in its section; the report is still written.
    quiet : no progress messages on stderr (also when ``MIXEDEVAL_QUIET`` is set).

    Sections: the data design and the provenance always; the model sections (model, fixed and
    random effects, ANOVA, likelihood-ratio tests, EMMs, contrasts, R² and ICC, diagnostics)
    when a ``fit`` or their result is given -- a part that could not be computed says why;
    bootstrap, variance components, language disparity (one result or a list with its
    ``.bootstrap()`` / ``.robustness()`` results) and extra tables only when given. A section
    whose rendering fails shows the error and the others are still written.
    """
    from .compute import RESULT_KEYS, Outcome, compute_missing as _compute  # noqa: PLC0415

    progress = not quiet and not os.environ.get("MIXEDEVAL_QUIET")
    given = {"anova": anova, "comparison": comparison, "emmeans": emmeans, "contrasts": contrasts,
             "r2": r2, "icc": icc, "diagnostics": diagnostics}
    if compute_missing and fit is not None:
        outcome = _compute(fit, given, n_sim=n_sim, seed=seed, progress=progress)
    else:
        outcome = Outcome(values={k: v for k, v in given.items() if v is not None},
                          origin={k: "given" for k, v in given.items() if v is not None})
        why = "not computed (compute_missing=False)" if fit is not None else "not available: no fitted model was given"
        for key in RESULT_KEYS:
            if key not in outcome.values:
                outcome.absent[key] = ("not_available", why)
    input_files = [str(p) for p in (input_file if isinstance(input_file, (list, tuple)) else [input_file]) if p]
    if isinstance(data, (str, os.PathLike)):
        input_files.append(str(data))
        from ..data.table import as_pandas  # noqa: PLC0415

        data = as_pandas(data)
    ctx = Context(fit=fit, data=data, design_factors=design_factors, results=outcome.values,
                  absent=outcome.absent, origin=outcome.origin, bootstrap=bootstrap, vca=vca, vca_grid=vca_grid,
                  disparity=disparity, extra_tables=extra_tables, seeds=dict(seeds or {}),
                  input_files=list(dict.fromkeys(input_files)))
    present = {"bootstrap": bootstrap, "vca": vca, "disparity": disparity, "extra": extra_tables}
    if progress:
        print("mixedeval report: rendering sections and figures", file=sys.stderr, flush=True)
    sections = [build(sid, ctx) for sid in TITLES if _shown(sid, fit, present, outcome.values)]
    if title is None:
        title = f"mixedeval report: {fit.formula}" if fit is not None else "mixedeval report"
    html = render_html(sections, title)
    out = Path(path)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    if progress:
        print(f"mixedeval report: wrote {out} ({len(html) / 1e6:.1f} MB)", file=sys.stderr, flush=True)
    return out
