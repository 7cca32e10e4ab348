"""The neighbour envelope: a prediction outside the training support held to what nearby designs measured.

Where a point lies outside the training support (:mod:`.support`: a level combination no training row
had, a value beyond a parameter's range) a spline model extrapolates, and the global bound (the training
range widened by 25 % of it) is far too loose to stop it: on Starchart's k-means table a design with
ppb = 10, tpp = 24 — a combination no training row had — was predicted at 0.64 s, where every nearby design
ran in 0.05–0.1 s (12.6× off); on the MI250X convolution table designs of block width 256 with four-wide
tiles and no shared memory, the fastest in the space (1 ms), were predicted at 95–113 ms. So the default
stepwise model keeps its training rows' parameter values and transformed responses, and a prediction at a
point outside the support is held to the range of the responses of the point's ``K`` nearest training
designs (on the modelling scale: each numeric parameter encoded as its basis encodes it and divided by its
training spread, a categorical parameter 0 where the level matches and 1 where not). Such a prediction is
flagged ``bounded`` and its ``extrapolation`` reason says it was held. Inside the support the model's own
prediction stands. A point outside only by a union of overlapping terms (a corner no training row had, every
term's own combination seen: :func:`.support.joint_combinations`) is held from below only
(:meth:`.fitted.StepwiseModel.guarded`).

Measured (docs/models.md, "Far outside the training data"; ``benchmarks/bench_tables.py``): 10 neighbours
with no widening gave the lowest maxima of 5, 10 and 20 neighbours, widened by 0 or 5 % of the response
range; applied to every row instead of the rows outside the support it cost the MI250X's mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..errors import GpudseError
from ..jsonutil import finite_number

K = 10  # nearest training designs whose responses bound a prediction outside the support
MAX_ROWS = 1000  # training rows kept (an even subset of a larger fit)
CHUNK = 2048  # query rows per distance block (CHUNK × MAX_ROWS floats)


def _encode(basis: Any, values: Any) -> np.ndarray:
    """Raw values on the basis's modelling scale; NaN where a value cannot be placed (text, ≤ 0 on log2)."""
    x = pd.to_numeric(pd.Series(np.asarray(values, dtype=object).ravel()), errors="coerce").to_numpy(float)
    if basis.scale == "log2":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, np.log2(np.where(x > 0, x, 1.0)), np.nan)
    return x


def _text(basis: Any) -> bool:
    return basis.kind == "categorical" and not basis.numeric_levels


def _level(basis: Any) -> bool:
    """A categorical parameter: its distance is 0 at the same level, 1 at another."""
    return basis.kind == "categorical"


@dataclass
class Neighbours:
    """Training designs (the model's parameters, raw) and their responses on the transformed scale."""

    values: dict[str, np.ndarray]
    z: np.ndarray

    @classmethod
    def build(cls, X: pd.DataFrame, z: np.ndarray, bases: Mapping[str, Any]) -> Neighbours:
        z = np.asarray(z, dtype=float)
        keep = np.flatnonzero(np.isfinite(z))
        if keep.size > MAX_ROWS:
            keep = keep[np.linspace(0, keep.size - 1, MAX_ROWS).round().astype(int)]
        values = {p: (X[p].astype(str).to_numpy(dtype=object)[keep] if _text(b)
                      else X[p].to_numpy(dtype=float)[keep]) for p, b in bases.items()}
        return cls(values, z[keep])

    def envelope(self, X: pd.DataFrame, bases: Mapping[str, Any], k: int = K) -> tuple[np.ndarray, np.ndarray]:
        """Per row of *X*: (lowest, highest) transformed response of its *k* nearest training designs."""
        n = self.z.size
        k = min(k, n)
        enc = {p: _encode(b, self.values[p]) for p, b in bases.items() if not _level(b)}
        spread = {p: (float(np.nanmax(e) - np.nanmin(e)) or 1.0) for p, e in enc.items()}
        lo, hi = np.empty(len(X)), np.empty(len(X))
        for start in range(0, len(X), CHUNK):
            part = X.iloc[start:start + CHUNK]
            d2 = np.zeros((len(part), n))
            for p, b in bases.items():
                if _text(b):
                    d2 += part[p].astype(str).to_numpy(dtype=object)[:, None] != self.values[p][None, :]
                    continue
                if _level(b):
                    q = pd.to_numeric(part[p], errors="coerce").to_numpy(float)
                    d2 += q[:, None] != self.values[p][None, :]
                    continue
                diff = (_encode(b, part[p].to_numpy())[:, None] - enc[p][None, :]) / spread[p]
                d2 += np.where(np.isnan(diff), 1.0, diff * diff)
            near = np.argpartition(d2, k - 1, axis=1)[:, :k] if k < n else np.tile(np.arange(n), (len(part), 1))
            zz = self.z[near]
            lo[start:start + len(part)], hi[start:start + len(part)] = zz.min(axis=1), zz.max(axis=1)
        return lo, hi

    def to_dict(self) -> dict:
        return {"values": {p: [str(v) for v in x] if x.dtype == object else [float(v) for v in x]
                           for p, x in self.values.items()},
                "z": [float(v) for v in self.z]}

    @classmethod
    def from_dict(cls, d: Any, bases: Mapping[str, Any]) -> Neighbours:
        """Checked: one list per parameter of the model, all as long as ``z``, numbers (words for a
        categorical parameter); a problem raises :class:`GpudseError` naming the field."""
        if not isinstance(d, dict) or not isinstance(d.get("values"), dict) or not isinstance(d.get("z"), list):
            raise GpudseError("neighbours must be an object with 'values' (one list per parameter) and 'z'")
        z = d["z"]
        if not z or len(z) > MAX_ROWS or not all(finite_number(v) for v in z):
            raise GpudseError(f"neighbours: z must be 1 to {MAX_ROWS:,} finite numbers")
        if set(d["values"]) != set(bases):
            raise GpudseError("neighbours: 'values' must hold one list for each parameter of the model")
        values = {}
        for p, b in bases.items():
            col = d["values"][p]
            if not isinstance(col, list) or len(col) != len(z):
                raise GpudseError(f"neighbours: the values of {p!r} must be a list of {len(z)} entries (one per z)")
            if _text(b):
                if not all(isinstance(v, str) for v in col):
                    raise GpudseError(f"neighbours: the values of {p!r} must be words")
                values[p] = np.asarray(col, dtype=object)
            else:
                if not all(finite_number(v) for v in col):
                    raise GpudseError(f"neighbours: the values of {p!r} must be finite numbers")
                values[p] = np.asarray(col, dtype=float)
        return cls(values, np.asarray(z, dtype=float))
