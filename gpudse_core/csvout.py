"""The one CSV writer: every CSV the product writes (samples, cleaned results, predictions, best
designs, simulation results, workspace stages, a project's results.csv, the dashboard's downloads)
goes through here, with spreadsheet formula injection neutralised (OWASP, "CSV Injection").

A spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in some,
after a leading tab or carriage return) as a formula: a categorical value, an application name, a
column name or an uploaded label like ``=HYPERLINK("http://…")`` would run on the reader's machine.
Such a **text** cell, and such a column name, is written with a leading apostrophe (``'=HYPERLINK(…``),
which spreadsheets show as the text typed. Numbers stay numbers: a numeric column is written as
pandas writes it (``-3.5`` is a negative number, not a formula), and a text cell that is exactly a
decimal number (``-3.5``, ``+1e3``) is left alone too. Reading a neutralised file back keeps the
apostrophe: the text is what a spreadsheet shows.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")
CSV_ROWS = 1 << 15  # rows converted to Python objects at a time (memory stays bounded)


def cell(value: Any) -> Any:
    """*value* as written: a text that a spreadsheet would run as a formula gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.match(value):
        return "'" + value
    if isinstance(value, float) and math.isnan(value):
        return ""
    return value


def _safe_frame(df: Any) -> Any:
    """*df* with its text cells and column names neutralised (a copy only when something changes)."""
    cols = [cell(str(c)) if isinstance(c, str) else c for c in df.columns]
    texts = [c for c in df.columns if df[c].dtype.kind in "OUS" or str(df[c].dtype) in ("string", "category")]
    if cols == list(df.columns) and not texts:
        return df
    out = df.copy(deep=False)
    for c in texts:
        out[c] = out[c].map(cell, na_action="ignore") if str(df[c].dtype) != "category" else out[c].astype(object).map(
            cell, na_action="ignore")
    out.columns = cols
    return out


CHUNK_CELLS = 1 << 20  # cells pandas converts to text at a time when writing a frame


def _chunk_rows(df: Any) -> int:
    """Rows per chunk of pandas' CSV writer. Its default, 100,000 cells a chunk, visits every block of
    the frame in each chunk: a frame built column by column (one block a column) then costs rows ×
    columns² (a 2,400 × 10,000 table took 50 s to write). A million cells a chunk costs ten times
    fewer visits, and holds about 60 MB of text at once."""
    return max(1, CHUNK_CELLS // max(1, df.shape[1]))


def frame_text(df: Any) -> str:
    """A DataFrame as CSV text (no index), neutralised: the dashboard's downloads, a project's tables."""
    safe = _safe_frame(df)
    return safe.to_csv(index=False, chunksize=_chunk_rows(safe))


def write_frame(df: Any, path: str | Path, precision: int | str | None = "exact") -> None:
    """A DataFrame to a CSV file (no index), neutralised; floats at *precision* (see :func:`write_columns`)."""
    if precision == "exact":
        safe = _safe_frame(df)
        safe.to_csv(path, index=False, chunksize=_chunk_rows(safe))
        return
    with open(path, "w", encoding="utf-8", newline="") as fh:
        write_columns(fh, {str(c): df[c].to_numpy() for c in df.columns}, precision)


def write_columns(fh: Any, columns: Mapping[str, Any], precision: int | str | None = "exact") -> None:
    """Columns (NumPy arrays) as CSV, byte for byte what pandas writes for numbers (minimal quoting,
    shortest round-trip floats, empty cells for NaN, ``\\n`` line ends), streamed a block of rows at a
    time, text cells and column names neutralised. *precision* (float columns only): ``"exact"`` as
    just said; None, the data's own precision, or a number of significant digits
    (:func:`gpudse_core.fmt.csv_floats`, the one number formatter)."""
    import numpy as np

    w = csv.writer(fh, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    names = list(columns)
    w.writerow([cell(str(n)) for n in names])
    arrays = [np.asarray(columns[c]) for c in names]
    if precision != "exact":
        from .fmt import csv_floats

        arrays = [np.array(csv_floats(a.tolist(), precision), dtype=object) if a.dtype.kind == "f" else a
                  for a in arrays]
    arrays = [a.astype(str) if a.dtype.kind in "mM" else a for a in arrays]
    n = len(arrays[0]) if arrays else 0
    for lo in range(0, n, CSV_ROWS):
        lists = [a[lo:lo + CSV_ROWS].tolist() for a in arrays]
        w.writerows([cell(v) for v in row] for row in zip(*lists))
