"""Zip-bomb guard for Inspect AI ``.eval`` logs (zip archives of JSON entries), run before
inspect_ai reads them.

inspect_ai inflates each entry whole into memory (``zlib.decompress`` / zstd ``read()``)
whatever size the archive declares, so a 3 MB log whose entry inflates to gigabytes would take
that memory before any error. :func:`check_eval_archive` therefore

1. checks the declared inflated sizes (the central directory's ``file_size`` of every entry,
   summed, times :data:`._logs_json.JSON_MEMORY_FACTOR`) against the memory limit, then
2. inflates every entry through a capped stream (at most 1 MiB held at a time), counting the
   bytes it really gives: an entry that inflates beyond its declared size (a lying header) is
   refused the moment it passes that size, one that gives fewer bytes is damaged.

Both failures are :class:`~mixedeval.errors.DataError` naming the file and the entry. The entries
a reader needs are kept as they are inflated (:func:`check_eval_archive`'s ``keep``), so the
fast ``.eval`` reader inflates nothing twice; when inspect_ai reads the log, the check is one
extra inflation (fast: zstd and deflate inflate hundreds of MB/s).
"""
from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from .._resources import format_bytes
from ..errors import DataError
from ._logs_json import JSON_MEMORY_FACTOR, check_size

_CHUNK = 1 << 20
_ZSTD = 93  # the zip method id of Zstandard (Inspect's default compression)
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


class _Range:
    """A read-only view of ``size`` bytes of ``fh`` from its current position."""

    def __init__(self, fh: IO[bytes], size: int):
        self.fh, self.left = fh, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.fh.read(n) if n > 0 else b""
        self.left -= len(data)
        return data


def _inflated_chunks(raw: _Range, method: int, size: int = _CHUNK, zstd: object = None) -> Iterator[bytes]:
    """The inflated bytes of one entry, in chunks of at most ``size`` bytes (the caller stops
    early); ``zstd``: a ``zstandard.ZstdDecompressor`` to reuse (one is made otherwise)."""
    if method == zipfile.ZIP_STORED:
        while chunk := raw.read(size):
            yield chunk
    elif method == zipfile.ZIP_DEFLATED:
        d, data = zlib.decompressobj(-15), b""
        while not d.eof:
            data = data or raw.read(_CHUNK)
            if not data:
                return  # the deflate stream is cut short: fewer bytes than declared
            yield d.decompress(data, size)
            data = d.unconsumed_tail
    elif method == _ZSTD:
        if zstd is None:
            import zstandard  # noqa: PLC0415 - installed with inspect_ai, needed for zstd entries only
            zstd = zstandard.ZstdDecompressor()
        reader = zstd.stream_reader(raw, read_across_frames=True, closefd=False)  # type: ignore[attr-defined]
        while chunk := reader.read(size):
            yield chunk
    else:
        raise ValueError(f"compression method {method} (Inspect logs use stored, deflate or zstd)")


def _zstd_for(infos: list[zipfile.ZipInfo]) -> object:
    """One ``zstandard.ZstdDecompressor`` for the archive's zstd entries (None when it has none)."""
    if not any(i.compress_type == _ZSTD for i in infos):
        return None
    try:
        import zstandard  # noqa: PLC0415 - installed with inspect_ai, needed for zstd entries only
    except ImportError:
        return None  # _inflated_chunks says so for the entry
    return zstandard.ZstdDecompressor()


def _check_entry(fh: IO[bytes], info: zipfile.ZipInfo, src: str, keep: bool = False,
                 zstd: object = None) -> bytes | None:
    """Inflate one entry, refusing it when it gives more or fewer bytes than declared; its bytes
    when ``keep`` (inflated at once, at most the declared size plus one byte), else None (1 MiB
    at a time, nothing kept)."""
    fh.seek(info.header_offset)
    head = fh.read(_LOCAL_HEADER.size)
    if len(head) < _LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
        raise DataError(f"{src}: at entry {info.filename!r}: no local header at byte {info.header_offset} "
                        "(a damaged archive)")
    fields = _LOCAL_HEADER.unpack(head)
    fh.seek(info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10])
    n, kept = 0, []
    try:
        for chunk in _inflated_chunks(_Range(fh, info.compress_size), info.compress_type,
                                      info.file_size + 1 if keep else _CHUNK, zstd):
            n += len(chunk)
            if n > info.file_size:
                raise DataError(f"{src}: at entry {info.filename!r}: inflates to more than the "
                                f"{format_bytes(info.file_size)} its header declares (stopped at "
                                f"{format_bytes(n)}: a zip bomb or a damaged archive)")
            if keep:
                kept.append(chunk)
    except (zlib.error, ValueError) as exc:
        raise DataError(f"{src}: at entry {info.filename!r}: cannot be inflated ({exc})") from None
    except Exception as exc:  # zstandard.ZstdError
        if type(exc).__module__.split(".")[0] != "zstandard":
            raise
        raise DataError(f"{src}: at entry {info.filename!r}: cannot be inflated ({exc})") from None
    if n < info.file_size:
        raise DataError(f"{src}: at entry {info.filename!r}: inflates to {format_bytes(n)}, less than the "
                        f"{format_bytes(info.file_size)} its header declares (a damaged archive)")
    return (kept[0] if len(kept) == 1 else b"".join(kept)) if keep else None


def check_eval_archive(path: Path, keep: Callable[[str], bool] | None = None) -> dict[str, bytes]:
    """A DataError unless every entry of the ``.eval`` archive inflates to its declared size and
    all of them together fit the memory limit. Returns the inflated bytes of the entries whose
    names ``keep`` selects (the last entry of a name wins, as in inspect_ai), so that a reader
    needs no second inflation."""
    src = str(path)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DataError(f"{src}: not a readable Inspect .eval archive (a zip file): {exc}") from None
    if not infos:
        raise DataError(f"{src}: the Inspect .eval archive is empty")
    largest = max(infos, key=lambda i: i.file_size)
    check_size(src, sum(i.file_size for i in infos), JSON_MEMORY_FACTOR,
               f"its {len(infos)} entries as declared (the largest, {largest.filename!r}, "
               f"{format_bytes(largest.file_size)})")
    kept: dict[str, bytes] = {}
    zstd = _zstd_for(infos)
    with path.open("rb") as fh:
        for info in infos:
            wanted = keep is not None and keep(info.filename)
            data = _check_entry(fh, info, src, wanted, zstd)
            if wanted:
                kept[info.filename] = data  # type: ignore[assignment]
    return kept
