"""Environment check: R, rpy2 and the required R packages, with install instructions."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..results import ResultMixin
from . import _bridge, session

DEBIAN_NAMES = {
    "lme4": "r-cran-lme4", "lmerTest": "r-cran-lmertest", "emmeans": "r-cran-emmeans",
    "pbkrtest": "r-cran-pbkrtest", "effectsize": "r-cran-effectsize", "performance": "r-cran-performance",
    "parameters": "r-cran-parameters", "insight": "r-cran-insight", "car": "r-cran-car", "nlme": "r-cran-nlme",
    "Matrix": "r-cran-matrix",
}


@dataclass(frozen=True, repr=False)
class CheckResult(ResultMixin):
    """What :func:`check_r` found. ``ok`` is True when everything mixedeval needs is present."""

    ok: bool
    r_version: str | None
    rpy2_version: str | None
    packages: Any  # DataFrame: package, version, installed, debian_package
    missing: tuple[str, ...]
    message: str
    details: dict = field(default_factory=dict)

    _main_table = "table"
    _print_tables = ("packages",)
    _title = "mixedeval environment check"

    @property
    def table(self):
        """The main table: ``packages`` (package, version, installed, debian_package)."""
        return self.packages

    def _scalars(self):
        return [("ok", self.ok), ("R", self.r_version or "not found"), ("rpy2", self.rpy2_version or "not found"),
                ("message", self.message)]


def check_r() -> CheckResult:
    """Report the R version, the rpy2 version, and each required R package with its version.

    Never raises for a missing component: ``ok`` is False and ``message`` names what is missing
    and the exact command that installs it.
    """
    rpy2_version = None
    try:
        import rpy2  # noqa: PLC0415 - rpy2 loads libR: R starts lazily

        rpy2_version = rpy2.__version__
    except ImportError:
        pass
    r_bin = shutil.which("R")
    rows = []
    r_version = None
    problems: list[str] = []
    if r_bin is None:
        problems.append("R is not installed")
    if rpy2_version is None:
        problems.append("rpy2 is not installed (pip install 'rpy2==3.5.17')")
    elif not rpy2_version.startswith("3.5"):
        problems.append(f"rpy2 {rpy2_version} is installed; with R 4.2 use rpy2 3.5.17 (pip install 'rpy2==3.5.17')")
    versions: dict[str, Any] = {}
    if r_bin is not None and rpy2_version is not None:
        try:
            v = _bridge.versions()
            r_version = v["r_version"]
            versions = v["packages"]
        except Exception as exc:  # noqa: BLE001 - report, don't raise
            problems.append(f"R could not be started through rpy2: {exc}")
    for pkg in session.REQUIRED_R_PACKAGES:
        ver = versions.get(pkg)
        rows.append({"package": pkg, "version": ver, "installed": ver is not None,
                     "debian_package": DEBIAN_NAMES.get(pkg, "r-cran-" + pkg.lower())})
    table = pd.DataFrame(rows)
    missing = tuple(r["package"] for r in rows if not r["installed"]) if r_version else tuple(
        session.REQUIRED_R_PACKAGES)
    if r_version and missing:
        debs = " ".join(DEBIAN_NAMES.get(p, "r-cran-" + p.lower()) for p in missing)
        problems.append(f"missing R packages: {', '.join(missing)}; install with: apt-get install -y {debs}")
    ok = not problems
    message = "all required components are installed" if ok else "; ".join(problems)
    if not ok and r_bin is None:
        message += ". " + session.INSTALL_HINT
    return CheckResult(ok=ok, r_version=r_version, rpy2_version=rpy2_version, packages=table,
                       missing=missing if not ok else (), message=message)
