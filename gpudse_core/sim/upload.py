"""Validating uploaded simulation results against a design space (results simulated elsewhere).

Results come as CSV, Parquet or JSON from the dashboard or the CLI. :func:`validate_results` checks
them against the :class:`~gpudse_core.space.DesignSpace` and returns the good rows plus a list of
problems, each naming the column and the (1-based) data rows and what was done:

* a missing parameter column — fatal: nothing can be placed in the space;
* unknown columns (neither a parameter nor a response) — dropped;
* a value not in a parameter's value set — the row is rejected, or (``snap="nearest"``) moved to the
  nearest value of a numeric parameter;
* duplicate design points — kept, averaged (responses), or rejected (all copies);
* non-numeric, missing or infinite responses — the row is dropped;
* a response that is constant over the rows kept — flagged (a regression cannot use it);
* columns gpudse adds itself (``design_index``, ``predicted``, …, see ``choices.RESERVED_NAMES``)
  are never taken for responses, even when named as one: dropped with a note;
* a ``status`` column (a measured tuning table's, e.g. the FAIR Benchmark Hub's ``ok`` /
  ``RuntimeFailedConfig``): a row whose status is not one of ``choices.OK_STATUS`` (ok, success,
  succeeded, done or empty; case and surrounding spaces ignored; explore reads the same) is a **failed
  configuration**. It is kept, not dropped, in ``UploadReport.failures`` in the form a campaign's failed
  points take (the parameters, ``status`` ``failed``, ``error`` the table's status), so the fit leaves
  it out — as it leaves out a failed simulation — and explore never recommends a design group holding
  it. A status that is not text (a number, True/False, text that reads as a number) or is longer than
  :data:`STATUS_CHARS` rejects the row, naming it.

Reading goes through :func:`gpudse_core.dataio.read_table_bytes` (bounded; duplicated column names
refused), so an upload and a file given to the CLI are read the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..choices import OK_STATUS, RESERVED_NAMES
from ..dataio import TableError, is_boolean_column, read_table_bytes, table_format
from ..errors import GpudseError
from ..space.design import DesignSpace

SNAP = ("reject", "nearest")
DUPLICATES = ("keep", "average", "reject")
STATUS = "status"
STATUS_CHARS = 200


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
    failures: pd.DataFrame | None = None  # failed configurations: parameters, status ("failed"), error

    @property
    def rows_failed(self) -> int:
        return 0 if self.failures is None else len(self.failures)

    @property
    def rows_kept(self) -> int:
        return len(self.table)


def read_upload(data: bytes, name: str, max_bytes: int | None = None) -> pd.DataFrame:
    """An uploaded results file as a DataFrame (CSV, Parquet or JSON by its name; never pickle).

    The size limit is ``limits.upload_bytes`` unless *max_bytes* is given (the CLI's ``--max-mb``).
    """
    if table_format(name) is None:
        raise TableError(f"{name}: unknown file type; upload .csv, .parquet or .json")
    if max_bytes is not None and len(data) > max_bytes:
        raise TableError(f"{name}: {len(data):,} bytes is more than the upload limit of {max_bytes:,} bytes")
    if max_bytes is not None:
        from .. import limits

        with limits.override(upload_bytes=max(int(max_bytes), 1)):
            return read_table_bytes(data, name)
    return read_table_bytes(data, name)


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
    has_status = STATUS in others
    others = [c for c in others if c != STATUS]  # read below: which rows failed
    reserved = [c for c in others if c in RESERVED_NAMES]
    booleans = [c for c in others if is_boolean_column(df[c])]  # True/False would read as 1/0: never a response
    if responses is None:
        responses = [c for c in others if c not in RESERVED_NAMES and c not in booleans
                     and pd.to_numeric(df[c], errors="coerce").notna().any()]
    else:
        bad = [r for r in responses if r in params]
        if bad:
            raise GpudseError(f"column(s) {', '.join(bad)} cannot be a response: they are parameters of the space")
        flags = [r for r in responses if r in booleans]
        if flags:
            raise GpudseError(f"column(s) {', '.join(flags)} hold True/False values, not a numeric response; choose "
                              f"a measured quantity (cycles, IPC)")
        responses = [r for r in responses if r not in RESERVED_NAMES]  # reported below with the reserved columns
    if booleans:
        problems.append(Problem("boolean columns", ", ".join(booleans), [],
                                f"column(s) {', '.join(booleans)} hold True/False values: not responses (read as 1/0 "
                                f"they would be modelled as numbers); dropped"))
    unknown_resp = [r for r in responses if r not in df.columns]
    if unknown_resp:
        raise GpudseError(f"response column(s) {', '.join(unknown_resp)} are not in the results")
    if reserved:
        problems.append(Problem("reserved columns", ", ".join(reserved), [],
                                f"column(s) {', '.join(reserved)} are gpudse's own (an index, a prediction or a "
                                f"campaign field), not responses; dropped"))
    unknown = [c for c in others if c not in responses and c not in reserved and c not in booleans]
    if unknown:
        problems.append(Problem("unknown columns", ", ".join(unknown), [],
                                f"column(s) {', '.join(unknown)} are neither parameters nor responses; dropped"))
    if not responses:
        raise GpudseError("the results have no numeric response column (e.g. cycles) besides the parameters")
    keep = np.ones(len(df), dtype=bool)
    failed = np.zeros(len(df), dtype=bool)
    if has_status:
        failed, bad_status = _read_status(df[STATUS], problems)
        keep &= ~bad_status
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
            example = repr(example[:40]) if isinstance(example, str) else str(example)[:40]
            shown = ", ".join(map(str, p.values[:10])) + (", …" if p.size > 10 else "")
            problems.append(Problem("not a value", p.name, (bad + 1).tolist(),
                                    f"{p.name}: {bad.size} value(s) such as {example} are not among [{shown}]; "
                                    f"rows rejected (choose 'snap to nearest' to keep numeric ones)"))
    for r in responses:
        vals = pd.to_numeric(df[r], errors="coerce")
        arr = vals.to_numpy(float)
        inf = np.flatnonzero(np.isinf(arr))
        nan = np.flatnonzero(np.isnan(arr))
        out[r] = vals
        inf, nan = inf[~failed[inf]], nan[~failed[nan]]  # a failed configuration has no response to check
        if nan.size:
            keep[nan] = False
            problems.append(Problem("bad response", r, (nan + 1).tolist(),
                                    f"{r}: {nan.size} value(s) are missing or not numbers; rows dropped"))
        if inf.size:
            keep[inf] = False
            problems.append(Problem("infinite response", r, (inf + 1).tolist(),
                                    f"{r}: {inf.size} value(s) are infinite (or beyond ±1.8e308); rows dropped"))
    failures = _failures(df, out[keep & failed], space, problems) if (keep & failed).any() else None
    out = out[keep & ~failed]
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
    if len(out) > 1:
        for r in responses:
            if out[r].nunique() == 1:
                problems.append(Problem("constant response", r, [],
                                        f"{r}: every row kept has the value {out[r].iloc[0]:g}; a constant response "
                                        f"cannot be modelled — check the simulator's output or the column"))
    return UploadReport(out, responses, problems, rows_in, failures)


def _read_status(col: pd.Series, problems: list[Problem]) -> tuple[np.ndarray, np.ndarray]:
    """Which rows failed (a status not in :data:`OK_STATUS`) and which hold a status that is no status."""
    failed = np.zeros(len(col), dtype=bool)
    bad = np.zeros(len(col), dtype=bool)
    for i, v in enumerate(col.tolist()):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue  # empty: a row that ran (its response says whether it is usable)
        text = v.strip() if isinstance(v, str) else None
        if text is None or len(text) > STATUS_CHARS or _is_number(text):
            bad[i] = True
        elif text.lower() not in OK_STATUS:
            failed[i] = True
    if bad.any():
        rows = (np.flatnonzero(bad) + 1).tolist()
        example = str(col.iloc[rows[0] - 1])[:40]
        problems.append(Problem("bad status", STATUS, rows,
                                f"{STATUS}: {bad.sum()} value(s) such as {example!r} are not a status (text of at "
                                f"most {STATUS_CHARS} characters: ok for a configuration that ran, else why it "
                                f"failed, e.g. RuntimeFailedConfig); rows rejected"))
    return failed, bad


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _failures(df: pd.DataFrame, rows: pd.DataFrame, space: DesignSpace, problems: list[Problem]) -> pd.DataFrame:
    """The failed configurations *rows* in the form of a campaign's failed points: the parameters (canonical
    values), ``status`` ``failed`` and ``error`` the table's status."""
    fails = pd.DataFrame({p.name: [p.values[p.position(v)] for v in rows[p.name].tolist()] for p in space.parameters})
    fails["status"] = "failed"
    fails["error"] = [str(w).strip() for w in df.loc[rows.index, STATUS].tolist()]
    kinds = pd.Series(fails["error"]).value_counts()
    shown = ", ".join(f"{k} {n:,}" for k, n in kinds.head(4).items()) + (", …" if len(kinds) > 4 else "")
    problems.append(Problem("failed configurations", STATUS, (rows.index + 1).tolist(),
                            f"{len(fails):,} failed configuration{'' if len(fails) == 1 else 's'} kept as failures "
                            f"({shown}): the fit leaves them "
                            f"out and explore never recommends a design group holding one"))
    return fails
