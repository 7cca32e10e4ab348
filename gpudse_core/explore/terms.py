"""A model and a cost as sums of small tables over a scan's axes.

An additive model is an intercept plus terms over one, two or three parameters (Stargazer §5.2's
main effects and interactions, Lee & Brooks §2's splines). Evaluated at every value of its
parameters, a term is a table; mapped onto the axes of a :class:`~.structure.Structure` (two members
of a parameter group read the same axis, a constrained component is one axis), it becomes a
*factor*: a table over one or more axes. Factors over the same axes are summed.

:func:`terms_of` reads the terms through ``model.additive_terms(levels)`` (transformed scale,
unbounded), which every additive model offers (the stepwise model, the explainable boosting
machine). Non-additive models (forests) lack it and are scanned through ``model.predict``.

A cost for the Pareto front is an expression in the constraint language
(:mod:`gpudse_core.space.expr`) or a table of per-value costs per parameter. An expression is
*separable* when it is a sum (``+``/``-``) of parts that each read few parameters; each part is then
tabulated like a model term. Otherwise the scan evaluates it point by point.
"""

from __future__ import annotations

import ast
import math
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import GpudseError
from ..space.design import DesignSpace
from ..space.expr import NUM, TEXT, Expression, compile_expression
from .structure import Structure, parameter_dims

SUMMAND_CELLS = 1 << 20  # largest table one part of a separable cost may need

Factor = tuple[tuple[int, ...], np.ndarray]  # (axes, table with one dimension per axis, in that order)


# ---- the model ------------------------------------------------------------------------------------
def model_parameters(model: Any) -> list[str]:
    """The space's parameters the model reads (a derived predictor counts as the parameters it is computed from)."""
    from ..model.derived import inputs

    return inputs(model)


def is_additive(model: Any) -> bool:
    """Additive over the space's own parameters: a term over a derived quantity (``cu_per_sa * sa``) is not a
    table over parameter axes, so such a model is scanned through ``model.predict``. (A model whose prediction
    blends its equation with a forest, :mod:`gpudse_core.model.fallback`, is scanned by its equation, and
    :func:`gpudse_core.explore.designs.best_designs` ranks by the blend within a bound.)"""
    from ..model.derived import derived_of

    return callable(getattr(model, "additive_terms", None)) and not derived_of(model)


def terms_of(model: Any, levels: Mapping[str, np.ndarray]) -> tuple[float, list[tuple[tuple[str, ...], np.ndarray]]]:
    """Intercept and terms on the transformed scale, each term tabulated over ``levels`` of its
    parameters (a table of shape ``[len(levels[p]) for p in params]``)."""
    c, terms = model.additive_terms(levels)
    return float(c), [(tuple(p), np.asarray(t, dtype=np.float64)) for p, t in terms]


def bound_of(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The model's bound on the transformed scale as a function of z (identity when it has none)."""
    b = getattr(model, "bound", None)
    if not callable(b):
        return lambda z: np.asarray(z, dtype=np.float64)
    return lambda z: np.asarray(b(np.asarray(z, dtype=np.float64))[0], dtype=np.float64)


# ---- onto the axes -----------------------------------------------------------------------------------
def on_axes(structure: Structure, params: Sequence[str], table: np.ndarray) -> Factor:
    """A table over parameters' value positions as a factor over the structure's axes."""
    dim_of = parameter_dims(structure.space)
    where = [structure.dim_axis[dim_of[p]] for p in params]
    axes = tuple(sorted({a for a, _ in where}))
    index = []
    for a, col in where:
        shape = [1] * len(axes)
        shape[axes.index(a)] = structure.axes[a].size
        index.append(structure.axes[a].digits[:, col].reshape(shape))
    shape = tuple(structure.axes[a].size for a in axes)
    if index:
        out = np.asarray(table, dtype=np.float64)[tuple(index)]  # (fancy indexing: a new array)
        return axes, out if out.shape == shape else np.broadcast_to(out, shape).copy()
    return axes, np.broadcast_to(np.asarray(table, dtype=np.float64), shape).copy()


def merge_factors(factors: Iterable[Factor]) -> list[Factor]:
    """Factors on the same axes summed into one. *factors* may be a generator: then only the sums and
    the factor at hand are held (an axis of millions of values makes each factor tens of MB)."""
    acc: dict[tuple[int, ...], np.ndarray] = {}
    for axes, t in factors:
        if axes in acc:
            acc[axes] += t
        else:
            acc[axes] = t.copy()
    return list(acc.items())


def levels_of(space: DesignSpace, params: Sequence[str]) -> dict[str, np.ndarray]:
    return {p: space.parameter(p).array for p in params}


def check_parameters(model: Any, space: DesignSpace) -> list[str]:
    params = model_parameters(model)
    missing = [p for p in params if p not in space.parameter_names]
    if missing:
        raise GpudseError(f"the model uses {', '.join(missing)}, which space {space.name!r} does not have; "
                          f"explore a space with {'this parameter' if len(missing) == 1 else 'these parameters'}")
    return params


# ---- costs ---------------------------------------------------------------------------------------------
def expression_types(space: DesignSpace) -> dict[str, str]:
    """Name → type for expressions over a space (parameters and fixed values), as constraints use."""
    from ..space.values import to_number

    types = {p.name: (TEXT if p.kind == "categorical" else NUM) for p in space.parameters}
    types.update({f.name: (NUM if to_number(f.value) is not None else TEXT) for f in space.fixed})
    return types


class Cost:
    """A cost to minimise beside the prediction: an expression or per-value costs per parameter."""

    def __init__(self, spec: str | Mapping[str, Sequence[float]], space: DesignSpace):
        self.space = space
        self.expression: Expression | None = None
        self.summands: list[tuple[tuple[str, ...], np.ndarray]] | None = []
        self.constant = 0.0
        if isinstance(spec, str):
            self.label = spec.strip()
            self.expression = compile_expression(spec, expression_types(space), "--pareto")
            self._split(ast.parse(self.expression.text, mode="eval").body)
        elif isinstance(spec, Mapping):
            self.label = "cost"
            for name, values in spec.items():
                p = space.parameter(str(name))
                arr = np.asarray(values, dtype=np.float64)
                if arr.shape != (p.size,):
                    raise GpudseError(f"cost of {p.name!r}: give one number per value ({p.size}), got {arr.size}")
                self._finite(arr, p.name)
                self.summands.append(((p.name,), arr))
        else:
            raise GpudseError("a cost is an expression such as 'simd * blk' or a mapping parameter -> costs")
        self.params = sorted({p for t, _ in self.summands or () for p in t}) if self.summands is not None else \
            sorted(n for n in self.expression.names if n in space.parameter_names)

    def _finite(self, arr: np.ndarray, where: str) -> None:
        if not np.all(np.isfinite(arr)):
            raise GpudseError(f"--pareto {self.label!r}: the cost is not a finite number for some values of "
                              f"{where}; change the expression (e.g. avoid log(0) or division by zero)")

    def _split(self, tree: ast.expr) -> None:
        parts: list[tuple[float, ast.expr]] = []

        def walk(node: ast.expr, sign: float) -> None:
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                walk(node.left, sign)
                walk(node.right, sign if isinstance(node.op, ast.Add) else -sign)
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
                walk(node.operand, sign if isinstance(node.op, ast.UAdd) else -sign)
            else:
                parts.append((sign, node))

        walk(tree, 1.0)
        types = expression_types(self.space)
        fixed = {f.name: f.value for f in self.space.fixed}
        for sign, node in parts:
            expr = compile_expression(ast.unparse(node), types, "--pareto")
            params = tuple(sorted(n for n in expr.names if n in self.space.parameter_names))
            shape = tuple(self.space.parameter(p).size for p in params)
            if math.prod(shape) > SUMMAND_CELLS:
                self.summands = None  # not separable: evaluated point by point
                return
            cols: dict[str, Any] = dict(fixed)
            for j, p in enumerate(params):
                s = [1] * len(params)
                s[j] = shape[j]
                cols[p] = self.space.parameter(p).array.reshape(s)
            val = np.broadcast_to(np.asarray(expr.evaluate(cols), dtype=np.float64), shape) * sign
            self._finite(val, ", ".join(params) or "the fixed values")
            if params:
                self.summands.append((params, val.copy()))
            else:
                self.constant += float(val)

    @property
    def separable(self) -> bool:
        return self.summands is not None

    def integral(self) -> bool:
        """True when every table and the constant are whole numbers small enough to add exactly."""
        if not self.separable:
            return False
        vals = [np.abs(t).max() for _, t in self.summands] + [abs(self.constant)]
        return (all(float(np.floor(t).sum() == t.sum()) and np.all(np.floor(t) == t) for _, t in self.summands)
                and float(self.constant).is_integer() and sum(vals) < 2.0 ** 50)

    def evaluate(self, columns: Mapping[str, Any], n: int) -> np.ndarray:
        """The cost of *n* designs given their columns (name → values), as brute force computes it."""
        if self.expression is not None:
            out = np.broadcast_to(np.asarray(self.expression.evaluate(columns), dtype=np.float64), (n,))
        else:
            out = np.zeros(n)
            for (p,), t in self.summands:
                pos = np.asarray([self.space.parameter(p).position(v) for v in np.asarray(columns[p]).tolist()])
                out = out + t[pos]
        return np.array(out, dtype=np.float64)
