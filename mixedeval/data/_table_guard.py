"""Table files read under the memory guard: the estimate of the log reader before any byte is read.

:func:`guarded_table` is :func:`mixedeval.data.table.as_pandas` for the inputs of the IRT and
judge functions (``me.irt(path)``, ``judge_corrected(path)``, the label tables of
``read_judge_scores``, ``bradley_terry_corrected(path)``) and the command line's DATA: a file's
memory is estimated from its size (text: 30 bytes per byte; Parquet: from its metadata; the
estimate and the constants of :mod:`mixedeval.data._logs_table`, measured in
``benchmarks/logs_table_memory.py``) and checked against ``MIXEDEVAL_MEMORY_LIMIT`` /
``me.set_memory_limit`` first. A 2 GB CSV was read to 4.3 GB of resident memory before it was
refused with the empty reason "could not read '...': " (a ``MemoryError`` has no message); it is
now refused by its size, and running out of memory while reading anyway says so.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._resources import check_memory
from ..errors import DataError
from ._logs_table import _estimate
from .table import as_pandas

#: what to do about a table too large for the memory limit
FIX = "If the machine has the memory, raise the limit; else split the table"


def guarded_table(data: Any, *, what: str = "data") -> Any:
    """:func:`~mixedeval.data.table.as_pandas` of ``data`` with a file's memory checked before it
    is read (see the module docstring); other inputs pass through unchanged."""
    if not isinstance(data, (str, os.PathLike)) or not Path(data).is_file():
        return as_pandas(data, what=what)
    src = str(data)
    need, how = _estimate(Path(data), src)
    check_memory(need, f"{src}: reading the table would", FIX, detail=how)
    try:
        return as_pandas(data, what=what)
    except MemoryError:
        raise DataError(f"{src}: ran out of memory while reading the table ({how}); split it or free memory") from None
    except DataError as exc:
        if isinstance(exc.__cause__, MemoryError):
            raise DataError(f"{src}: ran out of memory while reading the table ({how}); split it or free "
                            "memory") from None
        raise
