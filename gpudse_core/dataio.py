"""Reading results and points tables (CSV, Parquet, JSON): one bounded reader.

The CLI (:func:`read_table`, a path), the dashboard's uploads (:func:`read_table_bytes`, via
:func:`gpudse_core.sim.upload.read_upload`) and project zips use the same code, which

* refuses a file over its byte limit before reading it (``limits.table_bytes`` for the CLI,
  ``limits.upload_bytes`` for uploads, ``limits.json_table_bytes`` for JSON);
* counts columns, rows and cells (``limits.table_columns``, ``table_rows``, ``table_cells``) from
  the CSV header and line count or the Parquet footer *before* parsing, and again while reading
  Parquet batch by batch (the footer is not trusted);
* refuses a column name given twice (pandas would keep ``blk`` and a second column ``blk.1``, which
  then passes for a response), nested values (lists, objects) in cells, and Parquet's pickled
  extension types (never deserialised) — Parquet schema metadata is dropped, not interpreted;
* reads JSON through :mod:`gpudse_core.safeload` (no ``NaN`` literals, bounded depth and nodes,
  duplicate keys refused), as records or ``{"points": [...]}`` / ``{"rows": [...]}``;
* refuses whole numbers beyond the 64-bit range (a CSV cell, a JSON number, a Parquet uint64),
  naming the row and column, instead of letting two of them become one float;
* raises :class:`TableError` naming the file, the row or column, and what to do.
"""

from __future__ import annotations

import io
import re
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import limits
from .errors import GpudseError

FORMATS = {".csv": "CSV", ".parquet": "Parquet", ".json": "JSON"}
_INDEX_COLUMN = re.compile(r"^__index_level_\d+__$")


class TableError(GpudseError):
    """A table cannot be read, or its shape is unusable (duplicated columns, nested cells, no rows)."""


def read_table(path: str | Path) -> pd.DataFrame:
    """A results or points table from ``.csv``, ``.parquet`` or ``.json`` (records or {"points": [...]});
    any other suffix is read as CSV."""
    p = Path(path)
    if not p.is_file():
        raise TableError(f"{p}: no such file")
    lim = limits.current().table_bytes
    with open(p, "rb") as fh:  # never more than the limit in memory, whatever the file claims
        data = fh.read(lim + 1)
    limits.check("table_bytes", len(data), f"{p}: more than {lim:,} bytes", "split the table")
    suffix = p.suffix.lower()
    return read_table_bytes(data, str(p), fmt=FORMATS.get(suffix, "CSV"), bytes_limit="table_bytes")


def table_format(name: str) -> str | None:
    """``CSV``, ``Parquet`` or ``JSON`` from a file name's suffix, or None."""
    return FORMATS.get(Path(name).suffix.lower())


def read_table_bytes(data: bytes, name: str, fmt: str | None = None, bytes_limit: str = "upload_bytes") -> pd.DataFrame:
    """Parse *data* (named *name* in messages) as a table; *fmt* defaults to the name's suffix."""
    fmt = fmt or table_format(name)
    if fmt is None:
        raise TableError(f"{name}: unknown file type; use .csv, .parquet or .json")
    lim = limits.current()
    lim.check(bytes_limit, len(data), f"{name}: {len(data):,} bytes")
    try:
        if fmt == "Parquet":
            df = _parquet(data, name, lim)
        elif fmt == "JSON":
            df = _json(data, name, lim)
        else:
            df = _csv(data, name, lim)
    except GpudseError:
        raise
    except MemoryError:
        raise TableError(f"{name}: too large to read into memory here; split the table") from None
    except UnicodeDecodeError as e:
        raise TableError(f"{name}: not UTF-8 text (byte {e.start:,} is {data[e.start:e.start + 1].hex()}); is it "
                         f"the right file? Save the table as UTF-8 {fmt}") from None
    except pd.errors.EmptyDataError:
        raise TableError(f"{name}: the file holds no table (it is empty); export the table again") from None
    except (ValueError, TypeError, OSError, pd.errors.ParserError, RecursionError,
            OverflowError) as e:  # pyarrow's ArrowInvalid is a ValueError
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TableError(f"{name}: cannot be read as {fmt} ({text[:300]})") from None
    if df.shape[1] == 0 or df.empty:
        raise TableError(f"{name}: the table has no rows")
    df.columns = _column_names(list(df.columns), name)
    return _refuse_wide_integers(df, name)


INT64_MAX = (1 << 63) - 1  # the range space values take too (symmetric: -2^63 is refused there)
INT64_MIN = -INT64_MAX


def _beyond_int64(v: Any) -> bool:
    """A whole number (a Python int, or the text of one) that int64 cannot hold."""
    if type(v) is int:
        return not INT64_MIN <= v <= INT64_MAX
    if isinstance(v, str) and _WHOLE.match(v):
        digits = v.strip().split(".")[0].lstrip("+-").lstrip("0")
        return len(digits) > 19 or not INT64_MIN <= int(v.strip().split(".")[0]) <= INT64_MAX  # no 5,000-digit int()
    return False


_NUMBER = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*\Z|\s*[+-]?(inf|infinity|nan)\s*\Z", re.IGNORECASE)


def _numeric_cell(v: Any) -> bool:
    """A cell a numeric column may hold: a number, the text of one, or empty."""
    return v is None or isinstance(v, (int, float)) or (isinstance(v, str)
                                                         and (not v.strip() or bool(_NUMBER.match(v))))


def wide_integer_error(name: str, row: int, column: Any, text: Any) -> TableError:
    """The one message for a whole number beyond int64 in a table cell (*row* counts from 1, the header
    not counted): refused, never rounded to a float that could equal its neighbour."""
    shown = str(text).strip()
    shown = shown if len(shown) <= 40 else f"{shown[:20]}…{shown[-8:]} ({len(shown):,} digits)"
    return TableError(f"{name}: row {row:,}, column {str(column)!r}: {shown} is a whole number beyond the 64-bit "
                      f"integer range (±9,223,372,036,854,775,807); gpudse keeps whole numbers exact and will not "
                      f"round it to a floating-point value that could equal another row's; correct the cell, or "
                      f"write it as a decimal (e.g. 1.5e+30) if an approximate value is meant")


def _refuse_wide_integers(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """Whole numbers beyond int64 are refused, naming the row and column: pandas keeps a 47-digit
    numeral as a Python int in an object column (JSON too), above 2^63 as uint64, and beside a decimal
    as text, and every later numeric step would make two such numbers one float."""
    for c in df.columns:
        col = df[c]
        if col.dtype.kind in "iu" and len(col) and not INT64_MIN <= int(col.min()) <= int(col.max()) <= INT64_MAX:
            i = int(np.argmax([_beyond_int64(int(v)) for v in col.tolist()]))
            raise wide_integer_error(name, i + 1, c, col.iloc[i])
        if col.dtype.kind not in "OT" and str(col.dtype) not in ("str", "string"):
            continue
        long = col.astype(str).str.len().to_numpy() >= 19  # a cheap pass first: int64 holds 19 digits
        if not long.any():
            continue
        wide = np.zeros(len(col), dtype=bool)
        wide[long] = col[long].map(_beyond_int64).to_numpy(dtype=bool)
        if not wide.any():
            continue
        # text (beside a decimal): refused only where the column is numbers throughout
        if not any(type(v) is int for v in col[wide]) and not col.map(_numeric_cell).all():
            continue
        i = int(np.argmax(wide))
        raise wide_integer_error(name, i + 1, c, col.iloc[i])
    return df


def _column_names(raw: list[Any], name: str) -> list[str]:
    # NFC: a name typed precomposed ('café') and with a combining accent is one column, not two
    given = [str(c).strip() for c in raw]
    cols = [unicodedata.normalize("NFC", c) for c in given]
    for i, c in enumerate(cols, 1):
        bad = next((ch for ch in c if ord(ch) < 32 or ord(ch) == 127), None)
        if bad is not None:
            raise TableError(f"{name}: column {i} ({c[:30]!r}) has a control character ({bad!r}) in its name; is the "
                             f"file UTF-8 text (a UTF-16 file reads as NUL characters)? Save it as UTF-8 CSV")
    seen: set[str] = set()
    dups = [c for c in cols if c in seen or seen.add(c)]
    if dups:
        shown = ", ".join(repr(c) for c in dict.fromkeys(dups))
        forms = sorted({ascii(g) for g, c in zip(given, cols) if c in dups and g != c})
        if forms:
            shown += f" (written differently, {', '.join(forms)}, but the same text once Unicode-normalised (NFC))"
        raise TableError(f"{name}: column(s) {shown} appear more than once; give every column a distinct name "
                         f"(a repeated column would be read as another response)")
    return cols


def _check_shape(name: str, rows: int, cols: int, lim: limits.Limits, approx: bool = False) -> None:
    what = "about " if approx else ""
    lim.check("table_columns", cols, f"{name}: {cols:,} columns")
    lim.check("table_rows", rows, f"{name}: {what}{rows:,} rows", "split the table")
    lim.check("table_cells", rows * cols, f"{name}: {what}{rows:,} rows × {cols:,} columns", "split the table")


def _csv(data: bytes, name: str, lim: limits.Limits) -> pd.DataFrame:
    end = data.find(b"\n")
    first = data if end < 0 else data[:end]
    # upper bounds from the raw bytes (quoted commas or newlines only make them larger)
    _check_shape(name, data.count(b"\n"), first.count(b",") + 1, lim, approx=True)
    header = pd.read_csv(io.BytesIO(data), header=None, nrows=1, dtype=str, keep_default_na=False,
                         encoding="utf-8-sig")
    names = header.iloc[0].tolist() if len(header) else []
    _column_names(names, name)  # duplicates, before pandas renames them
    df = pd.read_csv(io.BytesIO(data), encoding="utf-8-sig", nrows=lim.table_rows + 1)
    df = _exact_csv_integers(df, data, name)
    _csv_underflow(df, data, name)
    blank = [i for i, c in enumerate(names) if not str(c).strip()]
    if blank == [0] and len(df) and df.iloc[:, 0].tolist() == list(range(len(df))):
        return df.iloc[:, 1:]  # a saved row index (pandas' to_csv): 0, 1, 2, … under an empty header
    if blank:
        where = ", ".join(str(i + 1) for i in blank[:10])
        raise TableError(f"{name}: column(s) {where} have no name in the header row; name them (e.g. the "
                         f"response 'cycles') or delete them")
    return df


def parquet_source(data: bytes) -> Any:
    """Parquet bytes as pyarrow reads them: a native buffer, never io.BytesIO. Read through a Python
    file object, pyarrow's thread pool aborted the interpreter at exit in 10-35 % of runs (SIGABRT,
    "terminate called without an active exception"; apache/arrow#50482); 0 in 140 runs this way."""
    import pyarrow as pa

    return pa.BufferReader(data)


def _parquet(data: bytes, name: str, lim: limits.Limits) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(parquet_source(data))
    md = pf.metadata
    _check_shape(name, md.num_rows, md.num_columns, lim)
    declared = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
    lim.check("table_bytes", declared, f"{name}: {declared:,} bytes once decompressed", "split the table")
    schema = pf.schema_arrow
    _column_names(schema.names, name)
    for f in schema:
        t = f.type
        if pa.types.is_nested(t) or isinstance(t, pa.ExtensionType) or pa.types.is_binary(t) or \
                pa.types.is_large_binary(t):
            raise TableError(f"{name}: column {f.name!r} holds {t} values; a table has one number or word per cell")
    batches, rows = [], 0
    for batch in pf.iter_batches(batch_size=1 << 16):  # counted as they are decompressed
        rows += batch.num_rows
        _check_shape(name, rows, batch.num_columns, lim)
        batches.append(batch)
    if rows != md.num_rows:
        raise TableError(f"{name}: the footer says {md.num_rows:,} rows but the file holds {rows:,}; it is damaged")
    table = pa.Table.from_batches(batches, schema=schema).replace_schema_metadata(None)
    df = table.to_pandas()
    return df.drop(columns=[c for c in df.columns if _INDEX_COLUMN.match(str(c))])


FLOAT_EXACT = 1 << 53  # whole numbers up to here are exact as float64; beyond, neighbours share one float
_WHOLE = re.compile(r"\s*[+-]?\d+(\.0*)?\s*\Z")


def _exact_csv_integers(df: pd.DataFrame, data: bytes, name: str) -> pd.DataFrame:
    """A column pandas read as floating point because one cell has a decimal point (``9007199254740992.0``)
    loses whole numbers beyond 2^53: ``9007199254740993`` in another row would silently become the same
    value. Such a column is read again as text: when every cell is a whole number it becomes an exact
    int64 column; when real decimals sit beside a whole number that a float cannot hold, it is refused."""
    suspects = [c for c in df.columns if df[c].dtype.kind == "f"
                and bool((np.abs(df[c].to_numpy()[np.isfinite(df[c].to_numpy())]) >= FLOAT_EXACT).any())]
    if not suspects:
        return df
    pos = [list(df.columns).index(c) for c in suspects]
    raw = pd.read_csv(io.BytesIO(data), encoding="utf-8-sig", usecols=pos, dtype=str, keep_default_na=False,
                      nrows=len(df))
    for c, text in zip(suspects, (raw.iloc[:, i] for i in range(len(pos)))):
        whole = text.map(lambda t: bool(_WHOLE.match(t)))
        if bool(whole.all()):
            ints = text.map(lambda t: int(t.strip().split(".")[0]))
            if bool(ints.map(lambda v: -(1 << 63) <= v < (1 << 63)).all()):
                df[c] = ints.astype(np.int64).to_numpy()
                continue
        wide = [i for i, t in enumerate(text.tolist()) if whole.iloc[i] and _beyond_int64(t)]
        if wide:
            raise wide_integer_error(name, wide[0] + 1, c, text.iloc[wide[0]])
        inexact = [(i, t.strip()) for i, t in enumerate(text.tolist()) if whole.iloc[i]
                   and abs(int(t.strip().split(".")[0])) > FLOAT_EXACT
                   and float(int(t.strip().split(".")[0])) != int(t.strip().split(".")[0])]
        if inexact:
            i, t = inexact[0]
            raise TableError(f"{name}: column {str(c)!r}, row {i + 1}: {t} is a whole number beyond 2^53 in a column "
                             f"with decimal values or empty cells, where it would be read as "
                             f"{float(int(t.split('.')[0]))!r} and could silently equal another value; write the "
                             f"column's values as whole numbers with no empty cells, or as decimals a float holds")
    return df


def _json(data: bytes, name: str, lim: limits.Limits) -> pd.DataFrame:
    from .safeload import load_json

    doc = load_json(data, name, bytes_limit="json_table_bytes", nodes_limit="json_table_nodes")
    rows = doc.get("points", doc.get("rows")) if isinstance(doc, dict) else doc
    if not isinstance(rows, list):
        raise TableError(f"{name}: expected a list of records (or {{\"points\": [...]}})")
    columns: dict[str, None] = {}
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict):
            raise TableError(f"{name}: record {i} is not an object of column: value pairs")
        for k, v in r.items():
            if isinstance(v, (dict, list)):
                kind = "list" if isinstance(v, list) else "object"
                raise TableError(f"{name}: record {i}, column {k!r}: holds a {kind}; a table has one number or word "
                                 f"per cell")
            columns.setdefault(k)
    _check_shape(name, len(rows), len(columns), lim)
    _column_names(list(columns), name)
    _exact_json_integers(rows, name)
    return pd.DataFrame.from_records(rows, columns=list(columns))


def _exact_json_integers(rows: list[dict], name: str) -> None:
    """JSON keeps 9007199254740993 and 9007199254740992.0 apart, but a column mixing them becomes float64
    in a table: the floats of a column holding a whole number beyond 2^53 are made whole numbers when
    they are (in place), and a real decimal beside such a number is refused."""
    big: dict[str, int] = {}
    for i, r in enumerate(rows):
        for k, v in r.items():
            if type(v) is int and abs(v) > FLOAT_EXACT and float(v) != v:
                big.setdefault(k, i)
    if not big:
        return
    for i, r in enumerate(rows):
        for k in big.keys() & r.keys():
            v = r[k]
            if v is None:
                j = big[k]
                raise TableError(f"{name}: column {k!r}: record {j + 1} holds {rows[j][k]}, a whole number beyond "
                                 f"2^53, and record {i + 1} an empty cell (null); a column with empty cells is read as "
                                 f"floating point, where it could silently equal another value; fill the cell")
            if type(v) is float:
                if not v.is_integer():
                    j = big[k]
                    raise TableError(f"{name}: column {k!r}: record {j + 1} holds {rows[j][k]}, a whole number beyond "
                                     f"2^53, and record {i + 1} the decimal {v!r}; in one column it would be read as "
                                     f"{float(rows[j][k])!r} and could silently equal another value; write the "
                                     f"column's values as whole numbers")
                r[k] = int(v)


def is_boolean_column(col: pd.Series) -> bool:
    """A column of True/False values (a bool dtype, or text that is only true/false): never a
    response, since it would read as 1/0."""
    if col.dtype.kind == "b":
        return True
    if col.dtype.kind != "O":
        return False
    vals = col.dropna()
    return len(vals) > 0 and bool(vals.map(lambda v: isinstance(v, bool) or str(v).strip().lower() in ("true", "false"))
                                  .all())


_TINY = re.compile(rb"[eE]-0*[1-9][0-9]{2}")  # an exponent of -100 or below: the only way a cell can underflow


def _csv_underflow(df: pd.DataFrame, data: bytes, name: str) -> None:
    """A numeral too small for a double (1e-400) reads as 0 without a word from pandas: refused,
    naming its row and column (write 0 if zero is meant). Costs one regular-expression scan unless
    such an exponent is there."""
    if not _TINY.search(data):
        return
    from .space.values import underflows

    zeros = [c for c in df.columns if df[c].dtype.kind == "f" and (df[c] == 0.0).any()]
    if not zeros:
        return
    raw = pd.read_csv(io.BytesIO(data), encoding="utf-8-sig", usecols=zeros, dtype=str, keep_default_na=False,
                      nrows=len(df))
    for c in zeros:
        for i in np.flatnonzero((df[c] == 0.0).to_numpy()):
            cell = str(raw[c].iloc[i])
            if underflows(cell):
                raise TableError(f"{name}: row {i + 1:,}, column {c!r}: {cell[:40]!r} is too small for a "
                                 f"floating-point number (below about 5e-324) and would silently become 0; "
                                 f"write 0 if you mean it")
