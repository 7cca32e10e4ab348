"""Reading results tables (CSV, Parquet, JSON) with messages that name the file and the problem.

One reader for the CLI and the dashboard; the campaign store's upload validation builds on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .errors import GpudseError

MAX_TABLE_BYTES = 512 * 1024 * 1024


def read_table(path: str | Path) -> pd.DataFrame:
    """A results or points table from ``.csv``, ``.parquet`` or ``.json`` (records or {"points": [...]})."""
    p = Path(path)
    if not p.is_file():
        raise GpudseError(f"{p}: no such file")
    if p.stat().st_size > MAX_TABLE_BYTES:
        raise GpudseError(f"{p}: {p.stat().st_size:,} bytes is more than the {MAX_TABLE_BYTES:,}-byte limit")
    suffix = p.suffix.lower()
    try:
        if suffix == ".parquet":
            df = pd.read_parquet(p)
        elif suffix == ".json":
            doc = json.loads(p.read_text(encoding="utf-8"))
            rows = doc.get("points", doc.get("rows")) if isinstance(doc, dict) else doc
            if not isinstance(rows, list):
                raise GpudseError(f"{p}: expected a list of records (or {{\"points\": [...]}})")
            df = pd.DataFrame.from_records(rows)
        else:
            df = pd.read_csv(p)
    except GpudseError:
        raise
    except (ValueError, UnicodeDecodeError, OSError, pd.errors.ParserError) as e:
        kind = {"parquet": "Parquet", "json": "JSON"}.get(suffix.lstrip("."), "CSV")
        raise GpudseError(f"{p}: cannot be read as {kind} ({str(e).splitlines()[0]})") from None
    if df.empty:
        raise GpudseError(f"{p}: the table has no rows")
    df.columns = [str(c).strip() for c in df.columns]
    return df
