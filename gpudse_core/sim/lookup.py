"""A lookup-table simulator: a complete measured table answers each design by lookup.

Exhaustively measured tuning spaces (e.g. the FAIR Benchmark Hub for Auto-Tuning's tables: every
configuration of a kernel's space with its time and a ``status``) make an honest benchmark for a
search: every "simulation" is a measurement that really happened, and the true best is known. The
design space is inferred from the table's distinct values of the chosen parameters
(:func:`infer_space`: numbers sorted by value, anything else a category), the table's rows are the
feasible designs, and a design that is not in the table, or whose status is not one that means success
(``choices.OK_STATUS``: ok, success, succeeded, done or empty, compared stripped and lower-case, as an
upload compares it; anything else is a configuration that failed to compile or run), is a failed simulation.

:class:`LookupBackend` is a campaign backend (``run_batch``/``spec``/``batch_size``, as
:class:`~gpudse_core.sim.campaign.AnalyticalBackend`), so a search over a table runs through the same
campaign machinery — local processes or Dask — as one over a real simulator.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .. import limits
from ..choices import OK_STATUS
from ..errors import GpudseError
from .store import Attempt, Outcome



class TableLookupError(GpudseError):
    """A table cannot serve as a lookup simulator (missing column, duplicate design, ...)."""


def parse_params(text: str | Sequence[str] | None) -> list[str] | None:
    if text is None:
        return None
    items = [p.strip() for p in (text.split(",") if isinstance(text, str) else text)]
    items = [p for p in items if p]
    if not items:
        raise TableLookupError("--params is empty: give the parameter columns, e.g. --params block_size_x,tile_size_x")
    dup = sorted({p for p in items if items.count(p) > 1})
    if dup:
        raise TableLookupError(f"--params names {', '.join(dup)} more than once")
    return items


def default_params(frame: pd.DataFrame, response: str | None, status: str | None) -> list[str]:
    """Every column except the response and status columns."""
    return [str(c) for c in frame.columns if c not in (response, status)]


def _check_columns(frame: pd.DataFrame, cols: Sequence[str], source: str, what: str) -> None:
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        shown = ", ".join(map(str, list(frame.columns)[:12]))
        raise TableLookupError(f"{source}: no {what} column {', '.join(map(repr, missing))}; the table's columns are "
                           f"{shown}{' …' if len(frame.columns) > 12 else ''}")


def infer_space(frame: pd.DataFrame, params: Sequence[str], source: str = "table", name: str | None = None) -> Any:
    """A design space whose parameters take exactly the table's distinct values of *params*."""
    from ..space.design import space_from_dict

    _check_columns(frame, params, source, "parameter")
    entries = []
    for p in params:
        col = frame[p]
        if col.isna().any():
            row = int(np.flatnonzero(col.isna().to_numpy())[0])
            raise TableLookupError(f"{source}: row {row + 2} has no value for parameter {p!r}; every row of a measured "
                               f"table needs every parameter (drop the row or fill it in)")
        num = pd.to_numeric(col, errors="coerce")
        if col.dtype.kind in "iu":  # whole numbers stay exact: 2**53 + 1 and 2**53 are two values
            entries.append({"name": p, "values": sorted({int(v) for v in col.tolist()})})
        elif num.notna().all() and np.isfinite(num.to_numpy(float)).all():
            vals = np.unique(num.to_numpy(float))
            values: list[Any] = [int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v) for v in vals]
            entries.append({"name": p, "values": values})
        else:
            values = sorted({str(v) for v in col})
            entries.append({"name": p, "kind": "categorical", "values": values})
    return space_from_dict({"name": name or "table", "description": f"inferred from {source}",
                            "parameters": entries}, source=source)


def _digit_keys(space: Any, frame: pd.DataFrame, source: str) -> np.ndarray:
    cols = []
    for p in space.parameters:
        if p.kind == "numeric" and frame[p.name].dtype.kind in "iu" and all(type(x) is int for x in p.values):
            v = frame[p.name].to_numpy(np.int64)  # exact: floats would make 2**53 + 1 equal 2**53
            ref = np.asarray(p.values, dtype=np.int64)
            pos = np.clip(np.searchsorted(ref, v), 0, p.size - 1)
            bad = ref[pos] != v
        elif p.kind == "numeric":
            v = pd.to_numeric(frame[p.name], errors="coerce").to_numpy(float)
            pos = np.searchsorted(np.asarray(p.values, dtype=float), v)
            pos = np.clip(pos, 0, p.size - 1)
            bad = np.asarray(p.values, dtype=float)[pos] != v
        else:
            lookup = {val: i for i, val in enumerate(p.values)}
            pos = np.array([lookup.get(str(x), -1) for x in frame[p.name]], dtype=np.int64)
            bad = pos < 0
        if bad.any():
            raise TableLookupError(f"{source}: row {int(np.flatnonzero(bad)[0]) + 2}: {p.name} = "
                               f"{str(frame[p.name].iloc[int(np.flatnonzero(bad)[0])])[:30]!r} is not in the space")
        cols.append(pos.astype(np.int64))
    return np.column_stack(cols)


@dataclass
class LookupTable:
    """A measured table as a simulator: ``space``, the feasible ``digits`` (one row per table row) and
    the answer for each (value, or None and why it failed)."""

    space: Any
    digits: np.ndarray
    values: np.ndarray  # float, NaN where the row failed
    errors: list[str]
    response: str
    source: str = "table"
    answers: dict = field(default_factory=dict)
    measures: dict = field(default_factory=dict)  # design key -> {column: value} of the *extra* measured columns

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, response: str | None = None, params: Sequence[str] | None = None,
                   status_column: str | None = None, source: str = "table", space: Any = None,
                   extra: Sequence[str] = ()) -> "LookupTable":
        """*extra*: further measured columns each answer carries beside the response (a second
        objective, e.g. ``wattage`` for a Pareto front); they are not parameters."""
        limits.check("lookup_rows", len(frame), f"{source}: {len(frame):,} rows", "use a smaller table")
        if not len(frame):
            raise TableLookupError(f"{source}: the table has no rows")
        if status_column is None and "status" in frame.columns:
            status_column = "status"
        if status_column is not None:
            _check_columns(frame, [status_column], source, "status")
        if response is None:
            cands = [c for c in ("time_ms", "time", "runtime", "cycles") if c in frame.columns]
            if not cands:
                raise TableLookupError(f"{source}: say which column is the measured response with --response COL")
            response = cands[0]
        _check_columns(frame, [response], source, "response")
        extra = [c for c in extra if c]
        _check_columns(frame, extra, source, "measured")
        if response in extra:
            raise TableLookupError(f"{source}: {response!r} is the response; a second objective must be another column")
        params = list(params) if params else [c for c in default_params(frame, response, status_column)
                                                if c not in extra]
        if response in params or (status_column and status_column in params):
            raise TableLookupError(f"{source}: --params must not include the response or status column")
        if any(c in params for c in extra):
            raise TableLookupError(f"{source}: --params must not include the measured column "
                                   f"{next(c for c in extra if c in params)!r}")
        space = space if space is not None else infer_space(frame, params, source)
        digits = _digit_keys(space, frame, source)
        y = pd.to_numeric(frame[response], errors="coerce").to_numpy(float)
        status = (frame[status_column].fillna("").astype(str).str.strip().to_numpy() if status_column else
                  np.full(len(frame), "", dtype=object))
        ran = np.array([s.lower() in OK_STATUS for s in status], dtype=bool)  # as sim.upload reads a status
        if status_column and not ran.any():
            raise TableLookupError(f"{source}: no row has {status_column} = 'ok' or another status meaning success "
                                   f"({', '.join(s for s in OK_STATUS if s)} or empty; values: "
                                   f"{', '.join(sorted(set(map(str, status)))[:5])}); a lookup table needs measured "
                                   f"rows marked ok — check --status-column")
        errors = []
        values = np.full(len(frame), np.nan)
        for i in range(len(frame)):
            if not ran[i]:
                errors.append(f"{status_column} = {status[i]}")
            elif not math.isfinite(y[i]):
                errors.append(f"{response} is empty or not a number")
            else:
                errors.append("")
                values[i] = y[i]
        if np.isnan(values).all():
            raise TableLookupError(f"{source}: no row has a numeric {response!r}; is --response the measured column?")
        t = cls(space, digits, values, errors, response, source)
        for i, k in enumerate(map(tuple, digits.tolist())):
            if k in t.answers:
                raise TableLookupError(f"{source}: rows {t.answers[k][2] + 2} and {i + 2} are the same design; a "
                                       "lookup "
                                   f"table needs one row per design (average the repeats first)")
            t.answers[k] = (None if np.isnan(values[i]) else float(values[i]), errors[i], i)
        for c in extra:
            col = pd.to_numeric(frame[c], errors="coerce").to_numpy(float)
            for i, k in enumerate(map(tuple, digits.tolist())):
                if math.isfinite(col[i]):
                    t.measures.setdefault(k, {})[c] = float(col[i])
        return t

    def answer(self, digits: np.ndarray) -> list[tuple[float | None, str]]:
        out = []
        for k in map(tuple, np.asarray(digits, dtype=np.int64).tolist()):
            a = self.answers.get(k)
            out.append((None, "not in the measured table") if a is None else (a[0], a[1]))
        return out

    def backend(self) -> "LookupBackend":
        keys = {}
        for k, (v, e, _) in self.answers.items():
            keys[k] = (v, e)
        positions = [{(v if p.kind == "numeric" else str(v)): i for i, v in enumerate(p.values)}  # exact numbers
                     for p in self.space.parameters]
        kinds = [p.kind for p in self.space.parameters]
        return LookupBackend([p.name for p in self.space.parameters], kinds, positions, keys, self.response,
                             self.source, measures=dict(self.measures))


def _number(v: Any) -> int | float:
    """*v* as a Python number compared exactly (8 == 8.0 still, but 2**53 + 1 is not 2**53)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    return float(v)


@dataclass
class LookupBackend:
    """The campaign backend of a :class:`LookupTable` (picklable: plain dicts)."""

    params: list
    kinds: list
    positions: list
    answers: dict
    response: str
    source: str = "table"
    batch_size: int = 64
    name: str = "lookup"
    measures: dict = field(default_factory=dict)  # key -> {column: value}: the table's other measured columns

    def spec(self) -> dict:
        return {"backend": "lookup", "table": self.source, "response": self.response}

    def key(self, point: dict) -> tuple | None:
        out = []
        for name, kind, pos in zip(self.params, self.kinds, self.positions):
            v = point.get(name)
            try:
                i = pos.get(_number(v) if kind == "numeric" else str(v))
            except (TypeError, ValueError):
                return None
            if i is None:
                return None
            out.append(i)
        return tuple(out)

    def run_batch(self, batch: list[tuple[int, dict, int]], ctx: dict | None = None) -> list[Outcome]:
        from .command import worker_id

        who, now = worker_id(), time.time()
        out = []
        for idx, point, attempt in batch:
            k = self.key(point)
            value, error = self.answers.get(k, (None, "not in the measured table")) if k else \
                (None, "not in the measured table")
            ok = value is not None
            out.append(Outcome(idx, ok, {**self.measures.get(k, {}), self.response: value} if ok else {}, error, "",
                               [Attempt(attempt, "done" if ok else "failed", who, "", now, time.time(), error)]))
        return out
