"""The provenance block of the report: software versions, the settings each result recorded,
random states and simulation sizes, and SHA-256 hashes of the input files and of the table as
analysed, so the numbers can be reproduced.

Values are shown as plain words (:func:`mixedeval._format.plain`: ``none``, ``yes``/``no``,
``key: value`` lists), never as Python reprs. An input that is a folder (a directory of
evaluation logs) is shown as a folder: its path with a trailing separator, the number of files
and their total size, and one SHA-256 over the sorted relative paths and the files' own hashes
(:func:`sha256_folder`); a path that does not exist says "not found"."""
from __future__ import annotations

import hashlib
import platform
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from .. import __version__
from .._format import plain

_VERSION = re.compile(r"^\d+(\.\d+)+([.-]\w+)*$")
_PY_PACKAGES = ("numpy", "scipy", "pandas", "matplotlib", "jinja2", "rpy2")
#: provenance keys recorded as "random states and simulation sizes" (``seed`` also catches the
#: keys R-side results record, e.g. ``set.seed``)
_SEED_WORDS = ("seed", "random_state", "n_sim", "n_resamples", "nsim")


def sha256_file(path: str | Path) -> str:
    """SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_folder(path: str | Path) -> tuple[int, int, str]:
    """(number of files, total bytes, SHA-256) of the files under a folder (recursively, hidden
    files and folders left out): the hash is over the lines ``<relative path>\t<SHA-256 of the
    file>``, sorted, so that the same files give the same hash wherever the folder lies."""
    root = Path(path)
    files = sorted(p for p in root.rglob("*")
                   if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.relative_to(root).as_posix()}\t{sha256_file(f)}\n".encode())
    return len(files), sum(f.stat().st_size for f in files), h.hexdigest()


def _input_row(p: str | Path) -> dict[str, Any]:
    """The provenance row of one input: a file, a folder (as a folder), or a path not found."""
    path = Path(p)
    if path.is_file():
        return {"file": str(path), "bytes": path.stat().st_size, "sha256": sha256_file(path)}
    if path.is_dir():
        n, size, digest = sha256_folder(path)
        return {"file": f"{str(path).rstrip('/')}/ (folder of {n} file{'s' if n != 1 else ''})", "bytes": size,
                "sha256": digest}
    return {"file": str(path), "bytes": None, "sha256": "not found"}


def sha256_frame(df: Any) -> str:
    """SHA-256 of a DataFrame's column names, dtypes and values (pandas' row hashes, index
    ignored): equal tables give equal hashes whatever file they came from."""
    h = hashlib.sha256()
    h.update(repr([(str(c), str(t)) for c, t in df.dtypes.items()]).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _python_versions() -> list[tuple[str, str]]:
    out = [("mixedeval", __version__), ("Python", platform.python_version()),
           ("platform", f"{platform.system()} {platform.release()} {platform.machine()}")]
    for pkg in _PY_PACKAGES:
        try:
            out.append((pkg, metadata.version(pkg)))
        except metadata.PackageNotFoundError:
            continue
    return out


def _sources(ctx: Any) -> list[tuple[str, Any]]:
    """``(label, result)`` of every result in the report: the fit, its parts, the result sections."""
    out: list[tuple[str, Any]] = [("model", ctx.fit)] if ctx.fit is not None else []
    for key in ("anova", "comparison", "emmeans", "contrasts", "r2", "icc", "diagnostics"):
        out += [(key, obj) for obj in ctx.results.get(key) or ()]
    seen: dict[str, int] = {}
    for kind, obj in ctx.items:
        seen[kind.id] = seen.get(kind.id, 0) + 1
        out.append((kind.id if seen[kind.id] == 1 else f"{kind.id} ({seen[kind.id]})", obj))
    return out


def collect(ctx: Any) -> dict[str, Any]:
    """``software`` (pairs), ``settings`` (DataFrame source/setting/value), ``random_states`` (pairs),
    ``inputs`` (DataFrame file/bytes/sha256) and ``data`` (pairs)."""
    software = _python_versions()
    r_versions: dict[str, str] = {}
    settings: list[dict[str, str]] = []
    seeds: list[tuple[str, Any]] = []  # random states and simulation sizes
    for name, obj in _sources(ctx):
        prov = getattr(obj, "provenance", None)
        for k, v in (prov.items() if isinstance(prov, dict) else ()):
            if k == "mixedeval":
                continue
            if isinstance(v, str) and _VERSION.match(v) and k not in ("estimator",):
                r_versions.setdefault("R" if k.lower() in ("r", "r_version") else k, v)
            elif any(w in k.lower() for w in _SEED_WORDS):
                if (f"{name}: {k}", plain(v)) not in seeds:
                    seeds.append((f"{name}: {k}", plain(v)))
            else:
                settings.append({"source": name, "setting": str(k), "value": plain(v)})
        for attr in ("random_state", "n_sim", "n_resamples"):
            v = getattr(obj, attr, None)
            if isinstance(v, (int, str)) and not any(s[0] == f"{name}: {attr}" for s in seeds):
                seeds.append((f"{name}: {attr}", plain(v)))
    if r_versions:
        known = {k.lower() for k, _ in software}
        software += [(k, v) for k, v in r_versions.items() if k.lower() not in known]
    else:
        software.append(("R", "not used by the results in this report"))
    inputs = [_input_row(p) for p in ctx.input_files]
    data = ctx.data if ctx.data is not None else getattr(ctx.fit, "data", None)
    data_pairs: list[tuple[str, Any]] = []
    if data is not None:
        data_pairs = [("rows", len(data)), ("columns", ", ".join(map(str, data.columns))),
                      ("SHA-256 of the table", sha256_frame(data))]
    if not seeds:
        seeds = [("random states", "none used")]
    return {
        "software": software,
        "settings": _merge_sources(pd.DataFrame(settings, columns=["source", "setting", "value"])),
        "random_states": seeds,
        "inputs": pd.DataFrame(inputs, columns=["file", "bytes", "sha256"]),
        "data": data_pairs,
    }


def _merge_sources(df: Any):
    """One row per (setting, value), listing the results that recorded it."""
    if df.empty:
        return df
    out = df.groupby(["setting", "value"], sort=False)["source"].agg(lambda s: ", ".join(dict.fromkeys(s)))
    return out.reset_index()[["setting", "value", "source"]].rename(columns={"source": "recorded_by"})
