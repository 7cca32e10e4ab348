"""Per-parameter bases: restricted (natural) cubic splines, linear and categorical terms.

Implements Lee & Brooks §2.3, eq. (5) (Harrell's restricted cubic spline, linear beyond the outer
knots) and Stargazer §5.3 (natural cubic splines with knots evenly spaced between a parameter's
minimum and maximum).

For knots t_1 < … < t_k the basis has k − 1 columns: x itself and, for j = 1 … k − 2,

    x_{j+1} = (x − t_j)_+^3 − (x − t_{k−1})_+^3 (t_k − t_j)/(t_k − t_{k−1})
                            + (x − t_k)_+^3 (t_{k−1} − t_j)/(t_k − t_{k−1}).

``norm="harrell"`` (the default, as ``rms::rcs`` and ``Hmisc::rcspline.eval(norm=2)``) divides the
non-linear columns by (t_k − t_1)^2, so that coefficients and bases compare directly with R's rms;
``norm="none"`` is eq. (5) as printed.

Knot placement (``knots`` is Harrell's k, the total number of knots, boundary knots included):

* ``"even"`` — Stargazer §5.3: t_j = min + (j − 1)(max − min)/(k − 1). Stargazer speaks of "1 to 3
  knots" of a natural spline, i.e. interior knots; those are our k = 3 … 5.
* ``"quantile"`` — Lee & Brooks Table 1 (k = 3 … 7) computed exactly as ``Hmisc::rcspline.eval``
  (the knots R's ``rms::rcs(x, k)`` uses), see :func:`place_knots`.

A parameter with fewer distinct values than needed falls back to fewer knots (even placement: at
most one knot per distinct value), and to a linear term when fewer than three knots remain; text
parameters get treatment coding (first level, in sorted order unless given, as reference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..choices import KNOT_PLACEMENTS, SPLINE_NORMS
from ..errors import GpudseError

QUANTILES = {  # Lee & Brooks Table 1 (Harrell)
    3: (0.10, 0.50, 0.90),
    4: (0.05, 0.35, 0.65, 0.95),
    5: (0.05, 0.275, 0.50, 0.725, 0.95),
    6: (0.05, 0.23, 0.41, 0.59, 0.77, 0.95),
    7: (0.025, 0.1833, 0.3417, 0.50, 0.6583, 0.8167, 0.975),
}
PLACEMENTS = KNOT_PLACEMENTS
NORMS = SPLINE_NORMS


def rcs_basis(x: np.ndarray, knots: Sequence[float], norm: str = "harrell") -> np.ndarray:
    """Restricted cubic spline basis (n × (k − 1)): x and the k − 2 non-linear columns of eq. (5)."""
    t = np.asarray(knots, dtype=float)
    k = t.size
    if k < 3:
        raise GpudseError(f"a restricted cubic spline needs at least 3 knots (got {k})")
    if np.any(np.diff(t) <= 0):
        raise GpudseError(f"spline knots must be strictly increasing (got {list(t)})")
    x = np.asarray(x, dtype=float)
    scale = (t[-1] - t[0]) ** 2 if norm == "harrell" else 1.0
    out = np.empty((x.size, k - 1))
    out[:, 0] = x
    tk, tk1 = t[-1], t[-2]
    pk = np.maximum(x - tk, 0.0) ** 3
    pk1 = np.maximum(x - tk1, 0.0) ** 3
    for j in range(k - 2):
        tj = t[j]
        out[:, j + 1] = (np.maximum(x - tj, 0.0) ** 3 - pk1 * (tk - tj) / (tk - tk1)
                         + pk * (tk1 - tj) / (tk - tk1)) / scale
    return out


def place_knots(values: np.ndarray, k: int, placement: str = "even", fractied: float = 0.05) -> np.ndarray:
    """Knots for observed *values*; may return fewer than *k*, or none (then use a linear term).

    ``"quantile"`` follows ``Hmisc::rcspline.eval`` (the knots of ``rms::rcs(x, k)``) step by step:
    with few distinct values the interior distinct values are the knots; heavy ties at an end
    (at least *fractied* of the data) move that knot inward; type-7 quantiles at Table 1's levels;
    with fewer than 100 observations the outer knots are the 5th smallest and largest values.
    Where R would stop with "fewer than 3 unique knots", this returns no knots.
    """
    if placement not in PLACEMENTS:
        raise GpudseError(f"unknown knot placement {placement!r}; choose {' or '.join(PLACEMENTS)}")
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    xu = np.unique(x)
    if placement == "even":
        k = int(min(k, xu.size))
        return np.linspace(xu[0], xu[-1], k) if k >= 3 else xu[:0]
    return _hmisc_knots(x, int(k), fractied)


def _quantile7(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    return np.quantile(x, p, method="linear")


def _hmisc_knots(x: np.ndarray, nk: int, fractied: float) -> np.ndarray:
    n = x.size
    if n < 6 or nk < 3:
        return x[:0]
    xu = np.unique(x)
    nxu = xu.size
    if nxu - 2 <= nk:
        knots = xu[1:-1]
    else:
        outer = 0.025 if nk > 6 else (0.05 if nk > 3 else 0.1)
        xx = x.copy()
        nke = nk
        first: list[float] = []
        last: list[float] = []
        override_first = override_last = False
        if 0 < fractied < 1:
            vals, counts = np.unique(xx, return_counts=True)
            f = counts / n
            if f[1:-1].max() < fractied:
                if f[0] >= fractied:
                    first = [float(xx[xx > xx.min()].min())]
                    xx = xx[xx > first[0]]
                    nke -= 1
                    override_first = True
                if f[-1] >= fractied:
                    last = [float(xx[xx < xx.max()].max())]
                    xx = xx[xx < last[0]]
                    nke -= 1
                    override_last = True
        if nke == 1:
            knots = np.array([np.median(xx)])
        elif nxu <= nke:
            knots = xu.copy()
        else:
            p = np.linspace(0.5, 1 - outer, nke) if nke == 2 else np.linspace(outer, 1 - outer, nke)
            knots = _quantile7(xx, p)
            if np.unique(knots).size < min(nke, 3):
                knots = _quantile7(xx, np.linspace(outer, 1 - outer, 2 * nke))
                if first and np.unique(knots).size < 3:
                    mid = (first[0] + last[0]) / 2 if last else float(np.median(xx))
                    knots = np.sort(np.array([first[0], mid, last[0] if last else _quantile7(xx, [1 - outer])[0]]))
                if np.unique(knots).size < 3:
                    return x[:0]
            if xx.size < 100:
                xs = np.sort(xx)
                if not override_first:
                    knots[0] = xs[4]
                if not override_last:
                    knots[nke - 1] = xs[xs.size - 5]
        knots = np.concatenate([first, knots, last])
    knots = np.unique(knots)
    return knots if knots.size >= 3 else x[:0]


@dataclass
class Basis:
    """How one parameter enters the model: ``kind`` is ``"rcs"``, ``"linear"`` or ``"categorical"``."""

    name: str
    kind: str
    knots: list[float] = field(default_factory=list)
    levels: list[Any] = field(default_factory=list)  # categorical: reference level first
    norm: str = "harrell"
    lo: float | None = None  # training range (numeric)
    hi: float | None = None

    @property
    def width(self) -> int:
        if self.kind == "rcs":
            return len(self.knots) - 1
        if self.kind == "categorical":
            return len(self.levels) - 1
        return 1

    @property
    def column_names(self) -> list[str]:
        if self.kind == "rcs":
            return [self.name] + [self.name + "'" * (j + 1) for j in range(self.width - 1)]
        if self.kind == "categorical":
            return [f"{self.name}={lvl}" for lvl in self.levels[1:]]
        return [self.name]

    @property
    def linear_columns(self) -> list[int]:
        """Columns counted as linear by ``rms``' restricted interactions (%ia%)."""
        return list(range(self.width)) if self.kind == "categorical" else [0]

    def evaluate(self, values: Any) -> np.ndarray:
        """Basis columns (n × width) for *values*."""
        if self.kind == "categorical":
            v = np.asarray(values, dtype=object).astype(str)
            known = set(map(str, self.levels))
            bad = sorted(set(v.tolist()) - known)
            if bad:
                raise GpudseError(f"column {self.name!r}: level(s) {bad[:5]} were not seen in training "
                                  f"(known: {sorted(known)[:10]})")
            return np.column_stack([(v == str(lvl)).astype(float) for lvl in self.levels[1:]]) \
                if self.width else np.zeros((v.size, 0))
        x = np.asarray(values, dtype=float)
        if self.kind == "linear":
            return x.reshape(-1, 1)
        return rcs_basis(x, self.knots, self.norm)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.kind == "rcs":
            d.update(knots=[float(t) for t in self.knots], norm=self.norm)
        if self.kind == "categorical":
            d["levels"] = [str(v) for v in self.levels]
        if self.lo is not None:
            d["range"] = [float(self.lo), float(self.hi)]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Basis":
        kind = d.get("kind")
        if kind not in ("rcs", "linear", "categorical"):
            raise GpudseError(f"basis of {d.get('name')!r}: unknown kind {kind!r}")
        knots = [float(t) for t in d.get("knots", [])]
        if kind == "rcs" and (len(knots) < 3 or not all(np.isfinite(knots)) or np.any(np.diff(knots) <= 0)):
            raise GpudseError(f"basis of {d.get('name')!r}: knots must be at least 3 increasing numbers")
        rng = d.get("range")
        norm = d.get("norm", "harrell")
        if norm not in NORMS:
            raise GpudseError(f"basis of {d.get('name')!r}: unknown norm {norm!r}")
        return cls(name=str(d["name"]), kind=kind, knots=knots, levels=list(d.get("levels", [])), norm=norm,
                   lo=float(rng[0]) if rng else None, hi=float(rng[1]) if rng else None)


def make_basis(name: str, values: Any, knots: int | Sequence[float] = 4, placement: str = "even",
               norm: str = "harrell", categorical: bool | None = None, levels: Sequence[Any] | None = None) -> Basis:
    """Choose the basis for one parameter from its training values (see the module docstring).

    *knots* is Harrell's k (below 3: a linear term) or an explicit list of knot positions.
    """
    if norm not in NORMS:
        raise GpudseError(f"unknown spline normalisation {norm!r}; choose {' or '.join(NORMS)}")
    arr = np.asarray(values)
    if categorical is None:
        categorical = arr.dtype.kind in "OUSb"
    if categorical:
        seen = list(dict.fromkeys(str(v) for v in arr.tolist()))
        order = [str(v) for v in levels if str(v) in seen] if levels is not None else sorted(seen)
        order += [v for v in seen if v not in order]
        return Basis(name, "categorical", levels=order)
    x = arr.astype(float)
    lo, hi = float(np.nanmin(x)), float(np.nanmax(x))
    if isinstance(knots, (list, tuple, np.ndarray)):
        kn = np.asarray(knots, dtype=float)
        if kn.size < 3 or not np.all(np.isfinite(kn)) or np.any(np.diff(kn) <= 0):
            raise GpudseError(f"parameter {name!r}: explicit knots must be at least 3 increasing numbers (got {list(kn)})")
        return Basis(name, "rcs", knots=[float(t) for t in kn], norm=norm, lo=lo, hi=hi)
    kn = place_knots(x, int(knots), placement) if int(knots) >= 3 else np.array([])
    if kn.size >= 3:
        return Basis(name, "rcs", knots=[float(t) for t in kn], norm=norm, lo=lo, hi=hi)
    return Basis(name, "linear", lo=lo, hi=hi)
