"""Validating uploaded simulation results against a design space (simulation-campaigns issue).

Results come as CSV, Parquet or JSON from the dashboard or the CLI. :func:`validate_results` checks
them against the :class:`~gpudse_core.space.DesignSpace` and returns the good rows plus a list of
problems, each naming the column and the (1-based) data rows and what was done:

* a missing parameter column — fatal: nothing can be placed in the space;
* unknown columns (neither a parameter nor a response) — dropped;
* a value not in a parameter's value set — the row is rejected, or (``snap="nearest"``) moved to the
  nearest value of a numeric parameter;
* duplicate design points — kept, averaged (responses), or rejected (all copies);
* non-numeric or missing responses — the row is dropped.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import GpudseError
from ..space.design import DesignSpace

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
SNAP = ("reject", "nearest")
DUPLICATES = ("keep", "average", "reject")


@dataclass
class Problem:
    kind: str
    column: str
    rows: list[int]
    message: str

    def __str__(self) -> str:
        shown = ", ".join(map(str, self.rows[:10])) + (f" … ({len(self.rows)} rows)" if len(self.rows) > 10 else "")
        return f"{self.message}" + (f" (rows {shown})" if self.rows else "")


@dataclass
class UploadReport:
    table: pd.DataFrame  # the good rows: parameters then responses
    responses: list[str]
    problems: list[Problem] = field(default_factory=list)
    rows_in: int = 0

    @property
    def rows_kept(self) -> int:
        return len(self.table)


def read_upload(data: bytes, name: str, max_bytes: int = DEFAULT_MAX_BYTES) -> pd.DataFrame:
    """An uploaded results file as a DataFrame (CSV, Parquet or JSON by its name; never pickle)."""
    if len(data) > max_bytes:
        raise GpudseError(f"{name}: {len(data):,} bytes is more than the upload limit of {max_bytes:,} bytes")
    low = name.lower()
    try:
        if low.endswith(".parquet"):
            df = pd.read_parquet(io.BytesIO(data))
        elif low.endswith(".json"):
            doc = json.loads(data.decode("utf-8-sig"))
            rows = doc.get("points", doc.get("rows")) if isinstance(doc, dict) else doc
            if not isinstance(rows, list):
                raise GpudseError(f"{name}: expected a list of records")
            df = pd.DataFrame.from_records(rows)
        elif low.endswith(".csv"):
            df = pd.read_csv(io.BytesIO(data))
        else:
            raise GpudseError(f"{name}: unknown file type; upload .csv, .parquet or .json")
    except GpudseError:
        raise
    except (ValueError, UnicodeDecodeError, OSError, pd.errors.ParserError) as e:
        raise GpudseError(f"{name}: cannot be read ({str(e).splitlines()[0]})") from None
    if df.empty:
        raise GpudseError(f"{name}: the table has no rows")
    df.columns = [str(c).strip() for c in df.columns]
    return df


def validate_results(df: pd.DataFrame, space: DesignSpace, responses: list[str] | None = None,
                     snap: str = "reject", duplicates: str = "keep") -> UploadReport:
    """Check *df* against *space* (see the module docstring); raises only when nothing can be used."""
    if snap not in SNAP:
        raise GpudseError(f"snap must be one of {', '.join(SNAP)}")
    if duplicates not in DUPLICATES:
        raise GpudseError(f"duplicates must be one of {', '.join(DUPLICATES)}")
    params = list(space.parameter_names)
    missing = [p for p in params if p not in df.columns]
    if missing:
        raise GpudseError(f"the results lack parameter column(s) {', '.join(missing)} of space {space.name!r}; "
                          f"columns found: {', '.join(df.columns)}")
    problems: list[Problem] = []
    rows_in = len(df)
    df = df.reset_index(drop=True)
    others = [c for c in df.columns if c not in params]
    if responses is None:
        responses = [c for c in others if pd.to_numeric(df[c], errors="coerce").notna().any()]
    unknown_resp = [r for r in responses if r not in df.columns]
    if unknown_resp:
        raise GpudseError(f"response column(s) {', '.join(unknown_resp)} are not in the results")
    unknown = [c for c in others if c not in responses]
    if unknown:
        problems.append(Problem("unknown columns", ", ".join(unknown), [],
                                f"column(s) {', '.join(unknown)} are neither parameters nor responses; dropped"))
    if not responses:
        raise GpudseError("the results have no numeric response column (e.g. cycles) besides the parameters")
    keep = np.ones(len(df), dtype=bool)
    out = df[params + responses].copy()
    for p in space.parameters:
        col = df[p.name]
        pos = np.array([p.position(v) is not None for v in col.tolist()])
        bad = np.flatnonzero(~pos)
        if not bad.size:
            continue
        if snap == "nearest" and p.kind == "numeric":
            vals = pd.to_numeric(col, errors="coerce").to_numpy(float)
            nonnum = bad[~np.isfinite(vals[bad])]
            fix = bad[np.isfinite(vals[bad])]
            grid = np.asarray(p.values, dtype=float)
            out.loc[fix, p.name] = [p.values[int(np.argmin(np.abs(grid - vals[i])))] for i in fix]
            if fix.size:
                problems.append(Problem("snapped", p.name, (fix + 1).tolist(),
                                        f"{p.name}: {fix.size} value(s) not in {list(p.values)} moved to the nearest"))
            if nonnum.size:
                keep[nonnum] = False
                problems.append(Problem("not a value", p.name, (nonnum + 1).tolist(),
                                        f"{p.name}: {nonnum.size} value(s) are not numbers; rows rejected"))
        else:
            keep[bad] = False
            example = col.iloc[int(bad[0])]
            problems.append(Problem("not a value", p.name, (bad + 1).tolist(),
                                    f"{p.name}: {bad.size} value(s) such as {example!r} are not among {list(p.values)}; "
                                    f"rows rejected (choose 'snap to nearest' to keep numeric ones)"))
    for r in responses:
        vals = pd.to_numeric(df[r], errors="coerce")
        bad = np.flatnonzero(~np.isfinite(vals.to_numpy(float)))
        out[r] = vals
        if bad.size:
            keep[bad] = False
            problems.append(Problem("bad response", r, (bad + 1).tolist(),
                                    f"{r}: {bad.size} value(s) are missing or not numbers; rows dropped"))
    out = out[keep]
    for p in space.parameters:  # canonical types (e.g. "8" -> 8) so duplicates are found
        out[p.name] = [p.values[p.position(v)] for v in out[p.name].tolist()]
    dup_mask = out.duplicated(subset=params, keep=False)
    if dup_mask.any():
        rows = (out.index[dup_mask] + 1).tolist()
        n_points = out[dup_mask].drop_duplicates(subset=params).shape[0]
        if duplicates == "reject":
            out = out[~dup_mask]
            what = "all copies rejected"
        elif duplicates == "average":
            out = out.groupby(params, as_index=False, sort=False)[responses].mean()
            what = "responses averaged"
        else:
            what = "kept"
        problems.append(Problem("duplicates", ", ".join(params[:3]) + ("…" if len(params) > 3 else ""), rows,
                                f"{len(rows)} rows repeat {n_points} design point(s); {what}"))
    out = out.reset_index(drop=True)
    if out.empty:
        raise GpudseError("no usable rows remain: " + "; ".join(str(p) for p in problems))
    return UploadReport(out, responses, problems, rows_in)
