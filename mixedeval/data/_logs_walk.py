"""The files of a directory or a glob, found by a walk that survives symlink loops.

``glob.glob("logs/**/*.jsonl", recursive=True)`` follows symbolic links to directories without
remembering where it has been, so a link back to a parent (``logs/a/up -> ..``) makes it walk
``logs/a/up/a/up/...`` until the path is too long -- for minutes, and exponentially longer with two
such links. This walk follows links to directories but enters each directory (by its device and
inode, ``st_dev``/``st_ino``) at most once per place in the pattern, and stops with a
:class:`~mixedeval.errors.DataError` once :data:`MAX_FILES` files match.

Patterns are those of :mod:`glob` with ``recursive=True``: ``*``, ``?``, ``[...]`` within one
path component and ``**`` for any number of directories; a wildcard does not match names
starting with a dot unless the pattern's component does (as in :mod:`glob`). A directory source
is the pattern ``<dir>/**/*`` with hidden files included.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

from ..errors import DataError

#: the most files one directory or pattern may give
MAX_FILES = 100_000

_MAGIC = frozenset("*?[")


def _has_magic(part: str) -> bool:
    return any(ch in _MAGIC for ch in part)


def _split(pattern: str) -> tuple[Path, list[str]]:
    """The literal directory a pattern starts from and the pattern components under it."""
    parts = Path(pattern).parts
    i = next((k for k, p in enumerate(parts) if _has_magic(p)), len(parts))
    base = Path(*parts[:i]) if i else Path(".")
    return base, list(parts[i:])


class _Walk:
    def __init__(self, source: str, hidden: bool):
        self.source, self.hidden, self.seen, self.n = source, hidden, set(), 0

    def _entries(self, d: Path) -> list[os.DirEntry]:
        try:
            with os.scandir(d) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError:
            return []  # unreadable or vanished: glob skips it too

    def _visible(self, name: str, part: str) -> bool:
        return self.hidden or not name.startswith(".") or part.startswith(".")

    def _enter(self, d: Path, k: int) -> bool:
        """True the first time directory ``d`` is reached at pattern component ``k``."""
        try:
            st = d.stat()
        except OSError:
            return False
        key = (st.st_dev, st.st_ino, k)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def _hit(self, p: Path) -> Path:
        self.n += 1
        if self.n > MAX_FILES:
            raise DataError(f"{self.source!r} gives more than {MAX_FILES:,} files; name the log directories or a "
                            "narrower pattern (e.g. logs/*/samples_*.jsonl)")
        return p

    def walk(self, d: Path, parts: list[str], k: int = 0) -> Iterator[Path]:
        """Files under directory ``d`` matching ``parts[k:]``."""
        if k >= len(parts) or not self._enter(d, k):
            return
        part, last = parts[k], k == len(parts) - 1
        if part == "**":
            if not last:
                yield from self.walk(d, parts, k + 1)  # ** as no directory
            for e in self._entries(d):
                if not self._visible(e.name, "") or not _is_dir(e):
                    if last and self._visible(e.name, "") and _is_file(e):
                        yield self._hit(Path(e.path))
                    continue
                yield from self.walk(Path(e.path), parts, k)  # ** as one more directory
            return
        names = [e for e in self._entries(d) if self._visible(e.name, part) and fnmatchcase(e.name, part)] \
            if _has_magic(part) else [e for e in self._entries(d) if e.name == part]
        for e in names:
            if last and _is_file(e):
                yield self._hit(Path(e.path))
            elif not last and _is_dir(e):
                yield from self.walk(Path(e.path), parts, k + 1)


def _is_dir(e: os.DirEntry) -> bool:
    try:
        return e.is_dir()  # follows symlinks
    except OSError:
        return False


def _is_file(e: os.DirEntry) -> bool:
    try:
        return e.is_file()
    except OSError:
        return False


def glob_files(pattern: str) -> list[Path]:
    """The files a glob pattern matches, sorted (directories are not returned)."""
    base, parts = _split(pattern)
    if not base.is_dir():
        return []
    return sorted(set(_Walk(pattern, hidden=False).walk(base, parts)))


def dir_files(directory: Path) -> list[Path]:
    """Every file under ``directory`` (hidden ones too; symlinked directories entered once)."""
    return sorted(set(_Walk(str(directory), hidden=True).walk(directory, ["**", "*"])))
