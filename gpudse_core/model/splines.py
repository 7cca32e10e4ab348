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

Encodings: a basis may work on ``scale="log2"``: :meth:`Basis.evaluate` takes the RAW
values and applies log2 itself, and knots are stored on that modelling scale, so every caller keeps
passing design-point values. ``"distinct"`` knot placement puts Table 1's quantile levels on the
*distinct* values on the modelling scale (every distinct value when there are no more than k), so a
parameter sampled unevenly still gets knots spread over its value set. Categorical bases may have
numeric levels (0/1 flags, a three-valued setting): they match by value, and a value between two
levels is interpolated between their rows on the modelling scale (outside the levels: the nearest
level); see :mod:`gpudse_core.model.encoding` for when each is chosen.

Stargazer 1.0's basis (the authors' released R implementation, see :mod:`.reference`): kind
``"ns"`` is the natural cubic spline of R's ``splines::ns(x, knots=interior,
Boundary.knots=c(lo, hi))`` without intercept, in R's own parametrisation, so coefficients compare
with R's: the cubic B-splines on the knots (boundary knots repeated four times), the first dropped,
then projected on the null space of their second derivatives at the two boundary knots (the
Householder QR of those constraints, as R's ``qr``; its first two columns dropped). Outside the
boundary knots each column continues linearly (value and slope at the knot, as ``ns``). It spans
the same functions as the restricted cubic spline on the same knots, in other coordinates.
:func:`reference_knots` places its knots as Stargazer 1.0 does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..choices import KNOT_PLACEMENTS, SCALES, SPLINE_NORMS
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
    x = np.asarray(x, dtype=float).ravel()
    scale = (t[-1] - t[0]) ** 2 if norm == "harrell" else 1.0
    out = np.empty((x.size, k - 1))
    out[:, 0] = x
    tk, tk1 = t[-1], t[-2]
    # Beyond the last knot each column is linear (the cubic and quadratic parts cancel); it is
    # evaluated in that form there, so a far extrapolation gives a large finite value, never
    # inf − inf.
    xin = np.minimum(x, tk)
    beyond = x - xin
    pk1 = np.maximum(xin - tk1, 0.0) ** 3
    for j in range(k - 2):
        tj = t[j]
        a = (tk - tj) / (tk - tk1)
        slope = 3.0 * ((tk - tj) ** 2 - (tk - tk1) ** 2 * a)
        out[:, j + 1] = (np.maximum(xin - tj, 0.0) ** 3 - pk1 * a + slope * beyond) / scale
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
    if placement == "distinct":
        return distinct_knots(xu, int(k))
    return _hmisc_knots(x, int(k), fractied)


def distinct_knots(distinct: np.ndarray, k: int) -> np.ndarray:
    """``"distinct"`` placement: Table 1's quantile levels (type 7) of the sorted distinct values;
    every distinct value when there are at most *k* of them; none (a linear term) below three."""
    xu = np.unique(np.asarray(distinct, dtype=float))
    k = int(min(k, xu.size))
    if k < 3:
        return xu[:0]
    if xu.size == k:
        return xu
    levels = QUANTILES.get(k) or tuple(np.linspace(0.05, 0.95, k))
    knots = np.unique(_quantile7(xu, np.asarray(levels)))
    return knots if knots.size >= 3 else xu[:0]


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


# ---- R's splines::ns (Stargazer 1.0) ---------------------------------------------------------------
# level cells (model/cells.py) only on parameters with at most this many distinct values: Starchart's k-means
# runtime is a lookup by threads per point (32 levels) and the access pattern (docs/models.md)
MAX_CELL_LEVELS = 32
REFERENCE_MAX_INTERIOR = 3  # Stargazer 1.0: at most three interior knots per parameter
REFERENCE_EVEN_TOL = 0.01  # midrange within 1 % of the distinct values' mean: even spacing


def reference_knots(values: Any) -> tuple[np.ndarray, str] | None:
    """Stargazer 1.0's interior knots for a parameter's *values* and the spacing used, or None when
    the parameter has fewer than three distinct values (it is left out).

    distinct values − 2 interior knots, at most three; evenly spaced between the minimum and maximum
    when the midrange is within 1 % (relative) of the mean of the distinct values, else evenly on a
    log scale (geometric). Geometric spacing needs a positive minimum; otherwise they are even."""
    u = np.unique(np.asarray(values, dtype=float))
    if u.size < 3:
        return None
    k = min(u.size - 2, REFERENCE_MAX_INTERIOR)
    lo, hi = float(u[0]), float(u[-1])
    mean = float(np.mean(u))
    steps = np.arange(1, k + 1, dtype=float)
    if abs((lo + hi) / 2 - mean) <= REFERENCE_EVEN_TOL * abs(mean):
        return lo + steps * ((hi - lo) / (k + 1)), "even"
    if lo <= 0:
        return lo + steps * ((hi - lo) / (k + 1)), "even (a geometric spacing needs positive values)"
    a, b = math.log(lo), math.log(hi)
    return np.exp(a + steps * ((b - a) / (k + 1))), "geometric"


def _bsplines(x: np.ndarray, t: np.ndarray, order: int, deriv: int = 0) -> np.ndarray:
    """B-splines of *order* on the knot sequence *t* at *x* inside [t[0], t[-1]] (n × (len(t) − order)),
    or their *deriv*-th derivative (Cox–de Boor; at the last knot, the limit from the left)."""
    x = np.asarray(x, dtype=float)
    m = t.size
    if deriv > 0:
        low = _bsplines(x, t, order - 1, deriv - 1)
        out = np.zeros((x.size, m - order))
        for i in range(m - order):
            d1, d2 = t[i + order - 1] - t[i], t[i + order] - t[i + 1]
            if d1 > 0:
                out[:, i] += (order - 1) * low[:, i] / d1
            if d2 > 0:
                out[:, i] -= (order - 1) * low[:, i + 1] / d2
        return out
    b = np.zeros((x.size, m - 1))
    last = int(np.flatnonzero(t[1:] > t[:-1])[-1])  # the last interval of positive length
    for i in range(m - 1):
        if t[i + 1] > t[i]:
            b[:, i] = (t[i] <= x) & ((x < t[i + 1]) | ((i == last) & (x == t[i + 1])))
    for k in range(2, order + 1):
        nxt = np.zeros((x.size, m - k))
        for i in range(m - k):
            d1, d2 = t[i + k - 1] - t[i], t[i + k] - t[i + 1]
            if d1 > 0:
                nxt[:, i] += (x - t[i]) / d1 * b[:, i]
            if d2 > 0:
                nxt[:, i] += (t[i + k] - x) / d2 * b[:, i + 1]
        b = nxt
    return b


def ns_basis(x: Any, knots: Sequence[float]) -> np.ndarray:
    """R's ``splines::ns(x, knots=knots[1:-1], Boundary.knots=(knots[0], knots[-1]))`` without
    intercept: n × (len(knots) − 1) (see the module docstring)."""
    t = np.asarray(knots, dtype=float)
    lo, hi = float(t[0]), float(t[-1])
    aknots = np.concatenate([[lo] * 4, t[1:-1], [hi] * 4])
    x = np.asarray(x, dtype=float).ravel()
    nb = aknots.size - 4
    basis = np.zeros((x.size, nb))
    inside = (x >= lo) & (x <= hi)
    basis[inside] = _bsplines(x[inside], aknots, 4)
    for side, edge in ((x < lo, lo), (x > hi, hi)):
        if side.any():
            v = _bsplines(np.array([edge]), aknots, 4)
            d = _bsplines(np.array([edge]), aknots, 4, 1)
            basis[side] = v + (x[side] - edge)[:, None] * d
    const = _bsplines(np.array([lo, hi]), aknots, 4, 2)[:, 1:]
    basis = basis[:, 1:]
    # basis · Q of the Householder QR of constᵀ (R's qr.qty on the transposed basis), columns 3.. kept
    a = const.T.copy()
    for k in range(2):
        v = a[k:, k]
        nrm = float(np.linalg.norm(v))
        if nrm == 0.0:
            continue
        if v[0] != 0.0:
            nrm = math.copysign(nrm, v[0])
        u = v / nrm
        u[0] += 1.0
        a[k:, k:] -= np.outer(u, u @ a[k:, k:]) / u[0]
        basis[:, k:] -= np.outer(basis[:, k:] @ u, u) / u[0]
    return basis[:, 2:]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def format_level(v: Any) -> str:
    """A level as people write it: 8 rather than 8.0."""
    if _is_number(v):
        f = float(v)
        return str(int(f)) if f.is_integer() and abs(f) < 1e15 else f"{f:g}"
    return str(v)


@dataclass
class Basis:
    """How one parameter enters the model: ``kind`` is ``"rcs"``, ``"ns"`` (R's ``splines::ns``, Stargazer
    1.0), ``"linear"`` or ``"categorical"``. ``knots`` of a spline include the two boundary knots.

    ``scale`` (``"linear"`` or ``"log2"``) is the modelling scale: knots are positions on it and
    :meth:`evaluate` takes raw values and encodes them. ``lo``/``hi`` are the raw training range.
    """

    name: str
    kind: str
    knots: list[float] = field(default_factory=list)
    levels: list[Any] = field(default_factory=list)  # categorical: reference level first
    norm: str = "harrell"
    lo: float | None = None  # training range (numeric, raw values)
    hi: float | None = None
    scale: str = "linear"
    pow2: bool = False  # rcs/linear: one more column, 1 where the raw value is a power of two (see is_pow2)
    # level cells (model/cells.py): one indicator column per listed value, 1 where the raw value is it;
    # they come after every other column, and only products of them (cells) use them
    cells: list[Any] = field(default_factory=list)
    # threshold cells (model/cells.py, numeric parameters of many levels): one step column per listed value, 1
    # where the raw value is at least it; after the level cells' columns, and only cells use them
    thresholds: list[float] = field(default_factory=list)

    @property
    def own_width(self) -> int:
        """Columns of the parameter's own curve (spline, linear or levels, and pow2), without cells."""
        if self.kind in ("rcs", "ns"):
            return len(self.knots) - 1 + self.pow2
        if self.kind == "categorical":
            return len(self.levels) - 1
        return 1 + self.pow2

    @property
    def width(self) -> int:
        return self.own_width + len(self.cells) + len(self.thresholds)

    def is_cell_column(self, col: int) -> bool:
        return col >= self.own_width

    @property
    def numeric_levels(self) -> bool:
        """A categorical basis of a numeric parameter (levels matched by value, not by text)."""
        return self.kind == "categorical" and bool(self.levels) and all(_is_number(v) for v in self.levels)

    @property
    def label(self) -> str:
        """The parameter as it enters the model: ``log2(blk)`` on the log2 scale."""
        return f"log2({self.name})" if self.scale == "log2" and self.kind != "categorical" else self.name

    @property
    def pow2_column(self) -> int | None:
        """Index of the power-of-two indicator column (the last one), or None."""
        return self.own_width - 1 if self.pow2 else None

    @property
    def column_names(self) -> list[str]:
        return (self._own_names() + [f"{self.name}={format_level(v)}" for v in self.cells]
                + [f"{self.name}>={format_level(v)}" for v in self.thresholds])

    def _own_names(self) -> list[str]:
        step = [f"pow2({self.name})"] if self.pow2 else []
        if self.kind == "rcs":
            return [self.label] + [self.label + "'" * (j + 1) for j in range(self.own_width - 1 - self.pow2)] + step
        if self.kind == "ns":
            return [f"ns({self.label}){j + 1}" for j in range(self.own_width)]
        if self.kind == "categorical":
            return [f"{self.name}={format_level(lvl)}" for lvl in self.levels[1:]]
        return [self.label] + step

    @property
    def linear_columns(self) -> list[int]:
        """Columns counted as linear by ``rms``' restricted interactions (%ia%); none of ``ns``'s."""
        cells = list(range(self.own_width, self.width))  # 0/1 indicators, linear like a level's column
        if self.kind == "ns":
            return cells
        return (list(range(self.own_width)) if self.kind == "categorical" else [0]) + cells

    def encode(self, values: Any) -> np.ndarray:
        """Raw numeric values on the modelling scale (log2 for ``scale="log2"``)."""
        try:
            x = np.asarray(values, dtype=float).ravel()
        except (TypeError, ValueError):
            raise GpudseError(f"column {self.name!r}: the model needs numbers here") from None
        if self.scale == "log2":
            bad = ~(x > 0)
            if bad.any():
                raise GpudseError(f"column {self.name!r}: the model works on log2({self.name}) and needs positive "
                                  f"values (got {format_level(x[bad][0])})")
            return np.log2(x)
        return x

    def evaluate(self, values: Any, unseen: str = "error") -> np.ndarray:
        """Basis columns (n × width) for the RAW *values* (the encoding is applied here).

        A text level not seen in training raises, or with ``unseen="average"`` gets the mean of the
        levels' rows (an equal-weight average over the training levels; the caller flags it).
        A numeric categorical basis interpolates between levels (see the module docstring). Cell
        columns (:attr:`cells`) follow: 1 where the raw value equals the cell's level (by text for a
        text parameter; an unseen text level gets the average, 1 / the number of levels).
        """
        own = self._own_columns(values, unseen)
        if not self.cells and not self.thresholds:
            return own
        steps = np.zeros((own.shape[0], 0))
        if self.thresholds:  # numeric only (from_dict refuses them on text levels)
            x = np.asarray(values, dtype=float).ravel()
            t = np.asarray(self.thresholds, dtype=float)
            steps = (x[:, None] >= t[None, :] - 1e-9 * np.maximum(1.0, np.abs(t[None, :]))).astype(float)
        if not self.cells:
            return np.column_stack([own, steps])
        if self.kind == "categorical" and not self.numeric_levels:
            v = np.asarray(values, dtype=object).astype(str).ravel()
            ind = np.column_stack([(v == str(c)).astype(float) for c in self.cells])
            ind[~np.isin(v, [str(x) for x in self.levels])] = 1.0 / len(self.levels)
        else:
            x = np.asarray(values, dtype=float).ravel()
            lv = np.asarray(self.cells, dtype=float)
            ind = (np.abs(x[:, None] - lv[None, :]) <= 1e-9 * np.maximum(1.0, np.abs(lv[None, :]))).astype(float)
        return np.column_stack([own, ind, steps])

    def _own_columns(self, values: Any, unseen: str) -> np.ndarray:
        if self.kind == "categorical":
            if self.numeric_levels:
                return self._numeric_levels(values)
            v = np.asarray(values, dtype=object).astype(str).ravel()
            lv = [str(x) for x in self.levels]
            out = np.column_stack([(v == x).astype(float) for x in lv[1:]]) if self.own_width else np.zeros((v.size, 0))
            known = np.isin(v, lv)
            if not known.all():
                if unseen != "average":
                    bad = sorted(set(v[~known].tolist()))
                    raise GpudseError(f"column {self.name!r}: level(s) {bad[:5]} were not seen in training "
                                      f"(known: {lv[:10]})")
                out[~known] = 1.0 / len(lv)
            return out
        x = self.encode(values)
        if self.kind == "ns":
            return ns_basis(x, self.knots)
        out = x.reshape(-1, 1) if self.kind == "linear" else rcs_basis(x, self.knots, self.norm)
        if self.pow2:
            out = np.column_stack([out, is_pow2(np.asarray(values, dtype=float).ravel())])
        return out

    def _numeric_levels(self, values: Any) -> np.ndarray:
        x = self.encode(values)
        lv = self.encode(self.levels)
        pos = np.clip(np.interp(x, lv, np.arange(lv.size, dtype=float)), 0, lv.size - 1)
        lo = np.floor(pos).astype(np.intp)
        w = pos - lo
        hi = np.minimum(lo + 1, lv.size - 1)
        rows = np.zeros((x.size, lv.size))
        r = np.arange(x.size)
        np.add.at(rows, (r, lo), 1.0 - w)
        np.add.at(rows, (r, hi), w)
        return rows[:, 1:]

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.kind == "rcs":
            d.update(knots=[float(t) for t in self.knots], norm=self.norm)
        if self.kind == "ns":
            d["knots"] = [float(t) for t in self.knots]
        if self.kind == "categorical":
            d["levels"] = [float(v) for v in self.levels] if self.numeric_levels else [str(v) for v in self.levels]
        if self.lo is not None:
            d["range"] = [float(self.lo), float(self.hi)]
        if self.scale != "linear":
            d["scale"] = self.scale
        if self.pow2:
            d["pow2"] = True
        if self.cells:
            text = self.kind == "categorical" and not self.numeric_levels
            d["cells"] = [str(v) for v in self.cells] if text else [float(v) for v in self.cells]
        if self.thresholds:
            d["thresholds"] = [float(v) for v in self.thresholds]
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Basis":
        """Validate a basis read from a model file; every problem is a GpudseError naming the basis."""
        if not isinstance(d, dict):
            raise GpudseError("each basis must be an object with a name and a kind")
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise GpudseError("a basis has no name")
        ctx = f"basis of {name!r}"
        kind = d.get("kind")
        if kind not in ("rcs", "ns", "linear", "categorical"):
            raise GpudseError(f"{ctx}: unknown kind {kind!r}")
        knots = d.get("knots", [])
        if not isinstance(knots, list) or not all(_is_number(t) for t in knots):
            raise GpudseError(f"{ctx}: knots must be a list of numbers")
        knots = [float(t) for t in knots]
        if kind in ("rcs", "ns") and (len(knots) < 3 or not all(np.isfinite(knots)) or np.any(np.diff(knots) <= 0)):
            raise GpudseError(f"{ctx}: knots must be at least 3 increasing numbers")
        levels = d.get("levels", [])
        if not isinstance(levels, list) or not all(isinstance(v, str) or _is_number(v) for v in levels):
            raise GpudseError(f"{ctx}: levels must be a list of words or numbers")
        if kind == "categorical":
            if not levels:
                raise GpudseError(f"{ctx}: a categorical basis needs its levels")
            if all(_is_number(v) for v in levels):
                lv = np.asarray(levels, dtype=float)
                if not np.all(np.isfinite(lv)) or np.any(np.diff(lv) <= 0):
                    raise GpudseError(f"{ctx}: numeric levels must be finite and increasing")
            elif len({str(v) for v in levels}) != len(levels):
                raise GpudseError(f"{ctx}: a level appears twice")
        rng = d.get("range")
        if rng is not None:
            if not isinstance(rng, list) or len(rng) != 2 or not all(_is_number(v) for v in rng) \
                    or not all(np.isfinite(rng)) or rng[0] > rng[1]:
                raise GpudseError(f"{ctx}: range must be [low, high], two finite numbers with low <= high "
                                  f"(got {rng!r})")
        norm = d.get("norm", "harrell")
        if norm not in NORMS:
            raise GpudseError(f"{ctx}: unknown norm {norm!r}")
        scale = d.get("scale", "linear")
        if scale not in SCALES:
            raise GpudseError(f"{ctx}: unknown scale {scale!r}; choose {' or '.join(SCALES)}")
        if scale == "log2" and rng is not None and rng[0] <= 0:
            raise GpudseError(f"{ctx}: a log2 scale needs a positive range (got {rng!r})")
        if scale == "log2" and kind == "categorical" and all(_is_number(v) for v in levels) and min(levels) <= 0:
            raise GpudseError(f"{ctx}: a log2 scale needs positive levels")
        pow2 = d.get("pow2", False)
        if not isinstance(pow2, bool) or (pow2 and kind not in ("rcs", "linear")):
            raise GpudseError(f"{ctx}: pow2 must be true or false, and true only for a spline or linear basis "
                              f"(got {pow2!r})")
        cells = d.get("cells", [])
        text = kind == "categorical" and not all(_is_number(v) for v in levels)
        bad = (f"{ctx}: cells must be a list of at most {MAX_CELL_LEVELS} distinct "
               f"{'levels of the basis' if text else 'finite numbers'} (the levels with an indicator column)")
        if not isinstance(cells, list) or len(cells) > MAX_CELL_LEVELS:
            raise GpudseError(bad)
        if text:
            if not all(isinstance(v, str) and v in levels for v in cells):
                raise GpudseError(bad)
        else:
            try:
                cells = [float(v) if _is_number(v) else None for v in cells]
            except OverflowError:
                raise GpudseError(bad) from None
            if not all(v is not None and np.isfinite(v) for v in cells):
                raise GpudseError(bad)
        if len(set(cells)) != len(cells):
            raise GpudseError(bad)
        thresholds = d.get("thresholds", [])
        bad = (f"{ctx}: thresholds must be a list of at most {MAX_CELL_LEVELS} distinct finite numbers (the values "
               f"with a step column), and only on a numeric parameter")
        if not isinstance(thresholds, list) or len(thresholds) > MAX_CELL_LEVELS or (thresholds and text):
            raise GpudseError(bad)
        try:
            thresholds = [float(v) if _is_number(v) else None for v in thresholds]
        except OverflowError:
            raise GpudseError(bad) from None
        if not all(v is not None and np.isfinite(v) for v in thresholds) or len(set(thresholds)) != len(thresholds):
            raise GpudseError(bad)
        return cls(name=name, kind=kind, knots=knots, levels=list(levels), norm=norm,
                   lo=float(rng[0]) if rng else None, hi=float(rng[1]) if rng else None, scale=scale, pow2=pow2,
                   cells=list(cells), thresholds=thresholds)


def make_basis(name: str, values: Any, knots: int | Sequence[float] = 4, placement: str = "even",
               norm: str = "harrell", categorical: bool | None = None, levels: Sequence[Any] | None = None,
               scale: str = "linear", pow2: bool = False) -> Basis:
    """Choose the basis for one parameter from its training values (see the module docstring).

    *knots* is Harrell's k (below 3: a linear term) or an explicit list of knot positions on the
    modelling *scale*. ``categorical=True`` on numbers gives numeric levels in increasing order.
    ``pow2=True`` adds the power-of-two indicator column to a numeric spline or linear basis when
    it is not already spanned (a spline with a knot at every distinct value spans it).
    """
    if norm not in NORMS:
        raise GpudseError(f"unknown spline normalisation {norm!r}; choose {' or '.join(NORMS)}")
    if scale not in SCALES:
        raise GpudseError(f"parameter {name!r}: unknown scale {scale!r}; choose {' or '.join(SCALES)}")
    arr = np.asarray(values)
    if categorical is None:
        categorical = arr.dtype.kind in "OUSb"
    if categorical:
        if arr.dtype.kind in "iuf":
            lv = np.unique(arr.astype(float))
            b = Basis(name, "categorical", levels=[float(v) for v in lv], lo=float(lv[0]), hi=float(lv[-1]),
                      scale=scale)
            b.encode(lv)  # a log2 scale needs positive levels
            return b
        seen = list(dict.fromkeys(str(v) for v in arr.tolist()))
        order = [str(v) for v in levels if str(v) in seen] if levels is not None else sorted(seen)
        order += [v for v in seen if v not in order]
        return Basis(name, "categorical", levels=order)
    raw = arr.astype(float)
    lo, hi = float(np.nanmin(raw)), float(np.nanmax(raw))
    x = Basis(name, "linear", scale=scale).encode(raw)
    if isinstance(knots, (list, tuple, np.ndarray)):
        kn = np.asarray(knots, dtype=float)
        if kn.size < 3 or not np.all(np.isfinite(kn)) or np.any(np.diff(kn) <= 0):
            raise GpudseError(f"parameter {name!r}: explicit knots must be at least 3 increasing numbers (got "
                              f"{list(kn)})")
        b = Basis(name, "rcs", knots=[float(t) for t in kn], norm=norm, lo=lo, hi=hi, scale=scale)
    else:
        kn = place_knots(x, int(knots), placement) if int(knots) >= 3 else np.array([])
        if kn.size >= 3:
            b = Basis(name, "rcs", knots=[float(t) for t in kn], norm=norm, lo=lo, hi=hi, scale=scale)
        else:
            b = Basis(name, "linear", lo=lo, hi=hi, scale=scale)
    if pow2 and b.width < np.unique(raw[np.isfinite(raw)]).size - 1:
        b.pow2 = True
    return b


def is_pow2(x: np.ndarray) -> np.ndarray:
    """1.0 where *x* is a positive whole power of two (1, 2, 4, …), else 0.0."""
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape)
    ok = np.isfinite(x) & (x > 0)
    e = np.log2(np.where(ok, x, 1.0))
    out[ok & (np.abs(e - np.round(e)) < 1e-9) & (e > -0.5)] = 1.0
    return out
