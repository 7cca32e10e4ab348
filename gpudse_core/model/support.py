"""A fitted model's training support and the checks of a prediction against it.

A spline model extrapolates wildly where it has seen no data: at N = 30 on the built-in matMul a
test point with blk = 8 and simd = 8 lay inside every parameter's training range, but blk = 8 had
only been seen with simd = 32, and the log-scale prediction ran to 1e27. So a model records

* per parameter it uses: the raw training range (numeric) or the levels seen (text), and the
  *cells* its values fall in: every distinct training value when there are at most ``MAX_LEVELS``
  of them (a query value maps to the nearest one on the modelling scale), else ``BINS`` quantile
  bins on the modelling scale;
* per interaction term (two or three parameters): which combinations of cells occurred in the
  training rows, as a bitmap over the product of the cell counts (hex in the model JSON);
* the same per union of overlapping terms of at most ``MAX_JOINT`` parameters (``joint``,
  :func:`joint_combinations`) that has no more combinations than training rows: the model sums its
  terms, so it predicts a four-way corner no training row had from three-way terms that each saw theirs;
* per such combination with a binned parameter: that parameter's training range in each combination
  of the others' cells (``ranges``): the bins are too coarse to see a tensor part run away just past
  the values seen.

:meth:`Support.reasons` gives, per query row, ``""`` inside the support or a short reason such as
``"blk=8 with simd=8 not seen in training"``, ``"blk=64 outside the training range [1, 16]"`` or
``"ppb=10 beyond the values [3, 9] seen with tpp=25"``; :meth:`Support.outside_parts` tells a row outside only
by a union of terms (which the default model holds from below only, :meth:`.fitted.StepwiseModel.guarded`)
from the others.

Every model kind records its support this way: the stepwise model per its bases and interaction terms
(:meth:`Support.build`), a learner (forest, boosting, EBM, hybrid) and a validation draw per parameter
only, on the raw scale (:meth:`Support.of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import GpudseError
from ..jsonutil import finite_number
from .splines import Basis, format_level

MAX_LEVELS = 64  # distinct training values kept as cells; more are binned
BINS = 16  # quantile bins of a parameter with more distinct values
MAX_CELLS = 1 << 20  # cells of one interaction term's bitmap
RangeKey = tuple[tuple[str, ...], str]  # (the other parameters of a combination, its binned parameter)
MAX_JOINT = 4  # parameters of the largest union of overlapping interaction terms whose combinations are recorded


@dataclass
class ParamSupport:
    """Where one parameter was seen: ``kind`` is ``"levels"`` (numeric distinct values),
    ``"bins"`` (numeric, bin edges on the modelling scale) or ``"text"`` (categorical words)."""

    name: str
    kind: str
    scale: str = "linear"
    lo: float | None = None
    hi: float | None = None
    levels: list[Any] = field(default_factory=list)
    edges: list[float] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.edges) - 1 if self.kind == "bins" else len(self.levels)

    def _encode(self, x: np.ndarray) -> np.ndarray:
        if self.scale == "log2":
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.log2(np.where(x > 0, x, np.nan))
        return x

    def cells(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cell code per value, −1 where unknown; out-of-support mask)."""
        if self.kind == "text":
            v = np.asarray(values, dtype=object).astype(str)
            lv = np.asarray([str(x) for x in self.levels], dtype=object)
            order = np.argsort(lv)
            pos = np.searchsorted(lv[order], v)
            pos = np.clip(pos, 0, lv.size - 1)
            hit = lv[order][pos] == v
            return np.where(hit, order[pos], -1), ~hit
        x = np.asarray(values, dtype=float)
        outside = ~((x >= self.lo - 1e-9 * max(1.0, abs(self.lo))) & (x <= self.hi + 1e-9 * max(1.0, abs(self.hi))))
        e = self._encode(x)
        if self.kind == "bins":
            edges = np.asarray(self.edges)
            code = np.clip(np.searchsorted(edges, e, side="right") - 1, 0, edges.size - 2)
        else:
            lv = self._encode(np.asarray(self.levels, dtype=float))
            i = np.clip(np.searchsorted(lv, e), 1, max(lv.size - 1, 1)) if lv.size > 1 else np.zeros(e.size, int)
            if lv.size > 1:
                left = np.abs(e - lv[i - 1]) <= np.abs(lv[i] - e)
                code = np.where(left, i - 1, i)
            else:
                code = i
        code = np.where(np.isfinite(e), code, -1)
        return code.astype(np.intp), outside | (code < 0)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.kind != "text":
            d["range"] = [float(self.lo), float(self.hi)]
            if self.scale != "linear":
                d["scale"] = self.scale
        if self.kind == "bins":
            d["edges"] = [float(e) for e in self.edges]
        else:
            d["levels"] = [str(v) for v in self.levels] if self.kind == "text" else [float(v) for v in self.levels]
        return d

    @classmethod
    def from_dict(cls, d: Any) -> ParamSupport:
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise GpudseError("support: each parameter entry needs a name")
        ctx = f"support of {d['name']!r}"
        kind = d.get("kind")
        if kind not in ("levels", "bins", "text"):
            raise GpudseError(f"{ctx}: unknown kind {kind!r}")
        scale = d.get("scale", "linear")
        if scale not in ("linear", "log2"):
            raise GpudseError(f"{ctx}: unknown scale {scale!r}")
        lo = hi = None
        if kind != "text":
            rng = d.get("range")
            if not (isinstance(rng, list) and len(rng) == 2 and all(finite_number(v) for v in rng)
                    and rng[0] <= rng[1]):
                raise GpudseError(f"{ctx}: range must be [low, high], two finite numbers (got {rng!r})")
            lo, hi = float(rng[0]), float(rng[1])
        levels, edges = d.get("levels", []), d.get("edges", [])
        if kind == "bins":
            if not (isinstance(edges, list) and len(edges) >= 2 and all(finite_number(v) for v in edges)
                    and np.all(np.diff(edges) > 0)):
                raise GpudseError(f"{ctx}: bin edges must be at least two increasing finite numbers")
        elif kind == "levels":
            if not (isinstance(levels, list) and levels and all(finite_number(v) for v in levels)
                    and np.all(np.diff(levels) > 0)):
                raise GpudseError(f"{ctx}: levels must be increasing finite numbers")
            if scale == "log2" and levels[0] <= 0:
                raise GpudseError(f"{ctx}: a log2 scale needs positive levels")
        elif not (isinstance(levels, list) and levels and all(isinstance(v, str) for v in levels)):
            raise GpudseError(f"{ctx}: levels must be a list of words")
        return cls(d["name"], kind, scale, lo, hi, list(levels), [float(e) for e in edges])


def param_support(basis: Basis, values: Any) -> ParamSupport:
    """The support of one parameter from its training values and its basis (for the scale)."""
    if basis.kind == "categorical" and not basis.numeric_levels:
        return ParamSupport(basis.name, "text", levels=[str(v) for v in basis.levels])
    return numeric_support(basis.name, values, basis.scale, basis.encode)


def numeric_support(name: str, values: Any, scale: str = "linear",
                    encode: Callable[[np.ndarray], np.ndarray] | None = None) -> ParamSupport:
    """The support of a numeric parameter: its distinct training values when at most ``MAX_LEVELS``,
    else ``BINS`` quantile bins on the modelling scale (*encode* maps raw values to it)."""
    x = np.asarray(values, dtype=float)
    lo, hi = float(x.min()), float(x.max())
    u = np.unique(x)
    if u.size <= MAX_LEVELS:
        return ParamSupport(name, "levels", scale, lo, hi, levels=[float(v) for v in u])
    e = encode(x) if encode is not None else x
    edges = np.unique(np.quantile(e, np.linspace(0, 1, BINS + 1)))
    return ParamSupport(name, "bins", scale, lo, hi, edges=[float(v) for v in edges])


@dataclass
class Support:
    """Parameters' supports and, per interaction term (``seen``) and per union of overlapping terms of at most
    ``MAX_JOINT`` parameters (``joint``, :func:`joint_combinations`), the cell combinations seen in training."""

    params: dict[str, ParamSupport]
    seen: dict[tuple[str, ...], np.ndarray]  # flat boolean bitmap in C order over the params' cells
    joint: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict)  # the same, per union of terms
    # per recorded combination with a binned parameter: (its other parameters, the binned one) → the binned
    # one's lowest and highest training value in each combination of the others' cells (NaN: none seen)
    ranges: dict[tuple[tuple[str, ...], str], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def build(cls, X: pd.DataFrame, bases: Mapping[str, Basis], interactions: Sequence[tuple[str, ...]]) -> Support:
        params = {p: param_support(b, X[p].to_numpy()) for p, b in bases.items()}
        codes = {p: params[p].cells(X[p].to_numpy())[0] for p in params}
        terms = [tuple(t) for t in interactions]
        seen, joint = {}, {}
        for t in joint_combinations(terms, list(params)):
            shape = tuple(params[p].size for p in t)
            if int(np.prod(shape)) > MAX_CELLS:
                continue  # too fine to record: such a term is not checked
            if t not in terms and int(np.prod(shape)) > len(X):
                continue  # more combinations than training rows: most are unseen, and one unseen says little
            flat = np.ravel_multi_index(tuple(codes[p] for p in t), shape)
            bitmap = np.zeros(int(np.prod(shape)), dtype=bool)
            bitmap[flat] = True
            (seen if t in terms else joint)[t] = bitmap
        return cls(params, seen, joint, _ranges(X, params, codes, list(seen) + list(joint)))

    @classmethod
    def of(cls, X: pd.DataFrame, categorical: Sequence[str]) -> Support:
        """Per-parameter support only, on the raw scale: the training range and values of each numeric
        column, the words seen in each *categorical* one (a model without spline bases: the learners)."""
        params = {str(p): (ParamSupport(str(p), "text", levels=sorted({str(v) for v in X[p]})) if p in categorical
                           else numeric_support(str(p), X[p].to_numpy(dtype=float))) for p in X.columns}
        return cls(params, {})

    def _violations(self, X: pd.DataFrame) -> Iterator[tuple[str, Any, np.ndarray]]:
        """Yield (``"param"``, parameter, rows) for values outside a parameter's support, (``"term"``,
        parameters, rows) for combinations an interaction term never saw and (``"joint"``, parameters, rows)
        for combinations of a union of terms no training row had, rows not already named for a part of it
        (rows: indices into *X*)."""
        n = len(X)
        codes, outside = {}, {}
        named: list[tuple[frozenset, np.ndarray]] = []
        for p, ps in self.params.items():
            if p not in X.columns:
                continue
            codes[p], outside[p] = ps.cells(X[p].to_numpy())
            bad = np.flatnonzero(outside[p])
            if bad.size:
                named.append((frozenset([p]), bad))
                yield "param", p, bad
        for what, maps in (("term", self.seen), ("range", None), ("joint", self.joint)):
            if maps is None:
                for key, bad in self._range_violations(X, codes, outside):
                    own = frozenset(key[0] + (key[1],))
                    bad = np.setdiff1d(bad, np.concatenate([r for part, r in named if part <= own] or [[]]))
                    if bad.size:
                        named.append((own, bad))
                        yield "range", key, bad
                continue
            for t, bitmap in maps.items():
                if not all(p in codes for p in t):
                    continue
                ok = np.ones(n, dtype=bool)
                for p in t:
                    ok &= ~outside[p]
                if what == "joint":
                    for part, rows in named:
                        if part < frozenset(t):
                            ok[rows] = False
                idx = np.flatnonzero(ok)
                if not idx.size:
                    continue
                shape = tuple(self.params[p].size for p in t)
                flat = np.ravel_multi_index(tuple(codes[p][idx] for p in t), shape)
                bad = idx[~bitmap[flat]]
                if bad.size:
                    named.append((frozenset(t), bad))
                    yield what, t, bad

    def _range_violations(self, X: pd.DataFrame, codes: Mapping[str, np.ndarray],
                          outside: Mapping[str, np.ndarray]) -> Iterator[tuple[RangeKey, np.ndarray]]:
        """((the other parameters, the binned one), rows) for rows whose binned value lies beyond the values
        training rows had in the same combination of the others' cells."""
        for (given, p), (lo, hi) in self.ranges.items():
            if p not in codes or not all(g in codes for g in given):
                continue
            ok = ~outside[p]
            for g in given:
                ok = ok & ~outside[g]
            idx = np.flatnonzero(ok)
            if not idx.size:
                continue
            flat = np.ravel_multi_index(tuple(codes[g][idx] for g in given), tuple(self.params[g].size for g in given))
            x = np.asarray(X[p].to_numpy(), dtype=float)[idx]
            a, b = lo[flat], hi[flat]
            with np.errstate(invalid="ignore"):
                bad = idx[np.isfinite(a) & ((x < a) | (x > b))]  # no training row there: the term's bitmap says so
            if bad.size:
                yield (given, p), bad

    def outside(self, X: pd.DataFrame) -> np.ndarray:
        """Per row of *X*: True where :meth:`reasons` gives a reason (without building the texts)."""
        own, joint = self.outside_parts(X)
        return own | joint

    def outside_parts(self, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Per row of *X*: (outside a parameter's support or an interaction term's seen combinations; inside
        those but in a combination of a union of overlapping terms that no training row had)."""
        own, joint = np.zeros(len(X), dtype=bool), np.zeros(len(X), dtype=bool)
        for what, _, bad in self._violations(X):
            (joint if what == "joint" else own)[bad] = True
        return own, joint & ~own

    def reasons(self, X: pd.DataFrame) -> np.ndarray:
        """Per row of *X*: "" inside the support, else why not (reasons joined by "; ")."""
        out = pd.Series([""] * len(X), index=range(len(X)), dtype=object)
        for what, key, bad in self._violations(X):
            if what == "param":
                p, ps, raw = key, self.params[key], X[key].to_numpy()
                if ps.kind == "text":
                    why = [f"{p}={v} not seen in training" for v in np.asarray(raw, dtype=object)[bad].astype(str)]
                else:
                    rng = f"[{format_level(ps.lo)}, {format_level(ps.hi)}]"
                    why = [f"{p}={format_level(v)} outside the training range {rng}" for v in raw[bad]]
                _append(out, bad, why)
                continue
            if what == "range":
                _append(out, bad, self._range_texts(X, key, bad))
                continue
            shown = sorted(key, key=list(self.params).index)  # the parameters in the data's order
            cols = [_fmt_all(X[p].to_numpy()[bad], self.params[p].kind == "text") for p in shown]
            memo: dict[tuple, str] = {}
            texts = [memo.get(k) or memo.setdefault(k, _together(shown, k)) for k in zip(*cols)]
            _append(out, bad, texts)
        return out.to_numpy()

    def _range_texts(self, X: pd.DataFrame, key: tuple[tuple[str, ...], str], rows: np.ndarray) -> list[str]:
        """E.g. ``ppb=10 beyond the values [3, 9] seen with tpp=25`` per row."""
        given, p = key
        lo, hi = self.ranges[key]
        flat = np.ravel_multi_index(tuple(self.params[g].cells(X[g].to_numpy()[rows])[0] for g in given),
                                    tuple(self.params[g].size for g in given))
        cols = [_fmt_all(X[g].to_numpy()[rows], self.params[g].kind == "text") for g in given]
        x = np.asarray(X[p].to_numpy(), dtype=float)[rows]
        return [f"{p}={format_level(v)} beyond the values [{format_level(lo[f])}, {format_level(hi[f])}] seen with "
                + ", ".join(f"{g}={c[i]}" for g, c in zip(given, cols)) for i, (v, f) in enumerate(zip(x, flat))]

    def to_dict(self) -> dict:
        d = {"params": [ps.to_dict() for ps in self.params.values()], "seen": _bitmaps(self.seen)}
        if self.joint:
            d["joint"] = _bitmaps(self.joint)
        if self.ranges:
            d["ranges"] = [{"given": list(g), "param": p, "low": [None if np.isnan(v) else float(v) for v in lo],
                            "high": [None if np.isnan(v) else float(v) for v in hi]}
                           for (g, p), (lo, hi) in self.ranges.items()]
        return d

    @classmethod
    def from_dict(cls, d: Any, bases: Mapping[str, Basis]) -> Support:
        if not isinstance(d, dict) or not isinstance(d.get("params"), list) or not isinstance(d.get("seen", []), list):
            raise GpudseError("support must be an object with 'params' and 'seen' lists")
        if not isinstance(d.get("joint", []), list):
            raise GpudseError("support: 'joint' must be a list")
        params = {}
        for e in d["params"]:
            ps = ParamSupport.from_dict(e)
            if ps.name not in bases:
                raise GpudseError(f"support names {ps.name!r}, which the model does not use")
            params[ps.name] = ps
        seen = _read_bitmaps(d.get("seen", []), params, "seen", 3)
        joint = _read_bitmaps(d.get("joint", []), params, "joint", MAX_JOINT)
        return cls(params, seen, joint, _read_ranges(d.get("ranges", []), params))


def _ranges(X: pd.DataFrame, params: Mapping[str, ParamSupport], codes: Mapping[str, np.ndarray],
            combos: Sequence[tuple[str, ...]]) -> dict[tuple[tuple[str, ...], str], tuple[np.ndarray, np.ndarray]]:
    """Per recorded combination that has a binned parameter and others: the binned one's training range in
    each combination of the others' cells.

    Why: a parameter of more than ``MAX_LEVELS`` values is recorded in ``BINS`` quantile bins, too coarse to
    see a tensor part run away at the edge of what was seen. On Starchart's k-means (draw 2003) ppb = 10 with
    tpp = 25 shared its bin with ppb = 9, seen at tpp = 25, yet the model predicted 0.29 s against 0.078 s
    measured: at tpp = 25 the training rows had ppb 3 to 9, and the model rose steeply beyond."""
    out = {}
    for t in combos:
        binned = [p for p in t if params[p].kind == "bins"]
        given = tuple(p for p in t if params[p].kind != "bins")
        if not binned or not given:
            continue
        shape = tuple(params[g].size for g in given)
        size = int(np.prod(shape))
        if size > MAX_CELLS:
            continue
        flat = np.ravel_multi_index(tuple(codes[g] for g in given), shape)
        for p in binned:
            if (given, p) in out:
                continue
            x = np.asarray(X[p].to_numpy(), dtype=float)
            lo, hi = np.full(size, np.inf), np.full(size, -np.inf)
            np.minimum.at(lo, flat, x)
            np.maximum.at(hi, flat, x)
            out[(given, p)] = (np.where(np.isfinite(lo), lo, np.nan), np.where(np.isfinite(hi), hi, np.nan))
    return out


def _read_ranges(entries: Any, params: Mapping[str, ParamSupport]) -> dict:
    """The checked ``ranges`` list of a support's JSON."""
    if not isinstance(entries, list):
        raise GpudseError("support: 'ranges' must be a list")
    out = {}
    for e in entries:
        if not (isinstance(e, dict) and isinstance(e.get("given"), list) and e.get("param") in params
                and all(isinstance(g, str) and g in params for g in e["given"]) and e["given"]):
            raise GpudseError("support: each 'ranges' entry needs 'given' (parameters of the model) and 'param'")
        given, p = tuple(e["given"]), e["param"]
        size = int(np.prod([params[g].size for g in given]))
        cols = []
        for side in ("low", "high"):
            v = e.get(side)
            if not (isinstance(v, list) and len(v) == size and all(x is None or finite_number(x) for x in v)):
                raise GpudseError(f"support: '{side}' of the range of {p!r} must be {size} numbers or nulls")
            cols.append(np.asarray([np.nan if x is None else float(x) for x in v], dtype=float))
        out[(given, p)] = (cols[0], cols[1])
    return out


def _bitmaps(maps: Mapping[tuple[str, ...], np.ndarray]) -> list[dict]:
    return [{"params": list(t), "cells": np.packbits(b, bitorder="little").tobytes().hex()} for t, b in maps.items()]


def _read_bitmaps(entries: list, params: Mapping[str, ParamSupport], field_name: str,
                  most: int) -> dict[tuple[str, ...], np.ndarray]:
    """The checked bitmaps of a support's ``seen`` or ``joint`` list (combinations of 2 to *most* parameters)."""
    out = {}
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("params"), list) or not isinstance(e.get("cells"), str):
            raise GpudseError(f"support: each {field_name!r} entry needs 'params' and 'cells'")
        t = tuple(e["params"])
        if not 2 <= len(t) <= most or any(not isinstance(p, str) or p not in params for p in t):
            raise GpudseError(f"support: interaction {list(t)!r} names unknown parameters")
        size = int(np.prod([params[p].size for p in t]))
        if size > MAX_CELLS:
            raise GpudseError(f"support: interaction {list(t)!r} has more than {MAX_CELLS:,} cells")
        try:
            raw = bytes.fromhex(e["cells"])
        except ValueError:
            raise GpudseError(f"support: cells of {list(t)!r} are not hexadecimal") from None
        if len(raw) != (size + 7) // 8:
            raise GpudseError(f"support: cells of {list(t)!r} have {len(raw)} bytes, expected {(size + 7) // 8}")
        out[t] = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[:size].astype(bool)
    return out


def joint_combinations(terms: Sequence[tuple[str, ...]], order: Sequence[str]) -> list[tuple[str, ...]]:
    """The model's interaction terms and every union of overlapping ones (sharing a parameter) of at most
    ``MAX_JOINT`` parameters, each in *order* (the data's), terms first, then unions by size.

    Why: the model's prediction at a design sums its terms, so two overlapping terms (blk:simd and
    simd:tc) predict a (blk, simd, tc) combination that no training row may have shown, each term's own
    combination seen. On the built-in backprop kernel (seed 11, 300 rows) every three-way combination of
    blk, smp, mshr and simd was seen but not blk = smp = mshr = 1 with simd = 8 or 16, predicted 30 % too
    fast (docs/models.md, "New draws of the built-in kernels")."""
    rank = {p: i for i, p in enumerate(order)}
    firsts: dict[frozenset, tuple[str, ...]] = {}
    for t in terms:
        if len(t) > 1:
            firsts.setdefault(frozenset(t), tuple(t))
    base, have, frontier = list(firsts), set(firsts), list(firsts)
    while frontier:
        grown = []
        for a in frontier:
            for b in base:
                u = a | b
                if a & b and len(a) < len(u) <= MAX_JOINT and u not in have:
                    have.add(u)
                    grown.append(u)
        frontier = grown
    unions = sorted((tuple(sorted(u, key=rank.__getitem__)) for u in have - set(firsts)),
                    key=lambda t: (len(t), [rank[p] for p in t]))
    return list(firsts.values()) + unions


def _fmt_all(values: np.ndarray, text: bool) -> list[str]:
    if text:
        return np.asarray(values, dtype=object).astype(str).tolist()
    u, inv = np.unique(np.asarray(values, dtype=float), return_inverse=True)
    shown = [format_level(v) for v in u]
    return [shown[i] for i in np.ravel(inv)]


def _together(params: Sequence[str], values: Sequence[str]) -> str:
    parts = [f"{p}={v}" for p, v in zip(params, values)]
    joined = parts[0] + " with " + (parts[1] if len(parts) == 2 else f"{', '.join(parts[1:-1])} and {parts[-1]}")
    return f"{joined} not seen in training"


def _append(out: pd.Series, rows: np.ndarray, texts: Sequence[str]) -> None:
    old = out.iloc[rows].to_numpy()
    out.iloc[rows] = [t if not o else f"{o}; {t}" for o, t in zip(old, texts)]
