"""A fitted model's training support and the checks of a prediction against it.

A spline model extrapolates wildly where it has seen no data: at N = 30 on the built-in matMul a
test point with blk = 8 and simd = 8 lay inside every parameter's training range, but blk = 8 had
only been seen with simd = 32, and the log-scale prediction ran to 1e27. So a model records

* per parameter it uses: the raw training range (numeric) or the levels seen (text), and the
  *cells* its values fall in: every distinct training value when there are at most ``MAX_LEVELS``
  of them (a query value maps to the nearest one on the modelling scale), else ``BINS`` quantile
  bins on the modelling scale;
* per interaction term (two or three parameters): which combinations of cells occurred in the
  training rows, as a bitmap over the product of the cell counts (hex in the model JSON).

:meth:`Support.reasons` gives, per query row, ``""`` inside the support or a short reason such as
``"blk=8 with simd=8 not seen in training"`` or ``"blk=64 outside the training range [1, 16]"``.

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
    """Parameters' supports and, per interaction term, the cell combinations seen in training."""

    params: dict[str, ParamSupport]
    seen: dict[tuple[str, ...], np.ndarray]  # flat boolean bitmap in C order over the params' cells

    @classmethod
    def build(cls, X: pd.DataFrame, bases: Mapping[str, Basis], interactions: Sequence[tuple[str, ...]]) -> Support:
        params = {p: param_support(b, X[p].to_numpy()) for p, b in bases.items()}
        codes = {p: params[p].cells(X[p].to_numpy())[0] for p in params}
        seen = {}
        for t in interactions:
            shape = tuple(params[p].size for p in t)
            if int(np.prod(shape)) > MAX_CELLS:
                continue  # too fine to record: such a term is not checked
            flat = np.ravel_multi_index(tuple(codes[p] for p in t), shape)
            bitmap = np.zeros(int(np.prod(shape)), dtype=bool)
            bitmap[flat] = True
            seen[tuple(t)] = bitmap
        return cls(params, seen)

    @classmethod
    def of(cls, X: pd.DataFrame, categorical: Sequence[str]) -> Support:
        """Per-parameter support only, on the raw scale: the training range and values of each numeric
        column, the words seen in each *categorical* one (a model without spline bases: the learners)."""
        params = {str(p): (ParamSupport(str(p), "text", levels=sorted({str(v) for v in X[p]})) if p in categorical
                           else numeric_support(str(p), X[p].to_numpy(dtype=float))) for p in X.columns}
        return cls(params, {})

    def _violations(self, X: pd.DataFrame) -> Iterator[tuple[str, Any, np.ndarray]]:
        """Yield (``"param"``, parameter, rows) for values outside a parameter's support and (``"term"``,
        parameters, rows) for combinations an interaction term never saw (rows: indices into *X*)."""
        n = len(X)
        codes, outside = {}, {}
        for p, ps in self.params.items():
            if p not in X.columns:
                continue
            codes[p], outside[p] = ps.cells(X[p].to_numpy())
            bad = np.flatnonzero(outside[p])
            if bad.size:
                yield "param", p, bad
        for t, bitmap in self.seen.items():
            if not all(p in codes for p in t):
                continue
            ok = np.ones(n, dtype=bool)
            for p in t:
                ok &= ~outside[p]
            idx = np.flatnonzero(ok)
            if not idx.size:
                continue
            shape = tuple(self.params[p].size for p in t)
            flat = np.ravel_multi_index(tuple(codes[p][idx] for p in t), shape)
            bad = idx[~bitmap[flat]]
            if bad.size:
                yield "term", t, bad

    def outside(self, X: pd.DataFrame) -> np.ndarray:
        """Per row of *X*: True where :meth:`reasons` gives a reason (without building the texts)."""
        out = np.zeros(len(X), dtype=bool)
        for _, _, bad in self._violations(X):
            out[bad] = True
        return out

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
            shown = sorted(key, key=list(self.params).index)  # the parameters in the data's order
            cols = [_fmt_all(X[p].to_numpy()[bad], self.params[p].kind == "text") for p in shown]
            memo: dict[tuple, str] = {}
            texts = [memo.get(k) or memo.setdefault(k, _together(shown, k)) for k in zip(*cols)]
            _append(out, bad, texts)
        return out.to_numpy()

    def to_dict(self) -> dict:
        return {"params": [ps.to_dict() for ps in self.params.values()],
                "seen": [{"params": list(t), "cells": np.packbits(b, bitorder="little").tobytes().hex()}
                         for t, b in self.seen.items()]}

    @classmethod
    def from_dict(cls, d: Any, bases: Mapping[str, Basis]) -> Support:
        if not isinstance(d, dict) or not isinstance(d.get("params"), list) or not isinstance(d.get("seen", []), list):
            raise GpudseError("support must be an object with 'params' and 'seen' lists")
        params = {}
        for e in d["params"]:
            ps = ParamSupport.from_dict(e)
            if ps.name not in bases:
                raise GpudseError(f"support names {ps.name!r}, which the model does not use")
            params[ps.name] = ps
        seen = {}
        for e in d.get("seen", []):
            if not isinstance(e, dict) or not isinstance(e.get("params"), list) or not isinstance(e.get("cells"), str):
                raise GpudseError("support: each 'seen' entry needs 'params' and 'cells'")
            t = tuple(e["params"])
            if not 2 <= len(t) <= 3 or any(not isinstance(p, str) or p not in params for p in t):
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
            seen[t] = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[:size].astype(bool)
        return cls(params, seen)


def _fmt_all(values: np.ndarray, text: bool) -> list[str]:
    if text:
        return np.asarray(values, dtype=object).astype(str).tolist()
    u, inv = np.unique(np.asarray(values, dtype=float), return_inverse=True)
    shown = [format_level(v) for v in u]
    return [shown[i] for i in np.ravel(inv)]


def _together(params: Sequence[str], values: Sequence[str]) -> str:
    parts = [f"{p}={v}" for p, v in zip(params, values)]
    joined = parts[0] + " with " + (parts[1] if len(parts) == 2 else f"{parts[1]} and {parts[2]}")
    return f"{joined} not seen in training"


def _append(out: pd.Series, rows: np.ndarray, texts: Sequence[str]) -> None:
    old = out.iloc[rows].to_numpy()
    out.iloc[rows] = [t if not o else f"{o}; {t}" for o, t in zip(old, texts)]
