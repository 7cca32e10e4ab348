"""Models for exploration tests: the additive-model interface built from tables, random spline models,
a non-additive model with many exact ties, random small design spaces, and brute force."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from gpudse_core.errors import SpaceError
from gpudse_core.explore.terms import expression_types
from gpudse_core.model.splines import Basis
from gpudse_core.model.stepwise import StepwiseModel, inverse_transform
from gpudse_core.space.design import Constraint, DesignSpace, Group, Parameter
from gpudse_core.space.expr import compile_expression


def positions(space: DesignSpace, p: str, values: Any) -> np.ndarray:
    lookup = {v: i for i, v in enumerate(space.parameter(p).values)}
    return np.array([lookup[v] for v in pd.Series(values).tolist()], dtype=np.int64)


class TableModel:
    """The additive-model interface (``additive_terms``, ``bound``, ``predict``) of speed at scale, defined
    by tables over the positions of a space's values; predictions are ``inverse(clip(z))``."""

    def __init__(self, space: DesignSpace, intercept: float, terms: Sequence[tuple[tuple[str, ...], np.ndarray]],
                 transform: str = "none", lo: float = -np.inf, hi: float = np.inf):
        self.space, self.intercept, self.terms = space, float(intercept), list(terms)
        self.transform, self.lo, self.hi = transform, float(lo), float(hi)
        self.parameters = sorted({p for t, _ in self.terms for p in t})

    def additive_terms(self, levels):
        out = []
        for params, t in self.terms:
            idx = [positions(self.space, p, levels[p]) for p in params]
            out.append((params, t[np.ix_(*idx)]))
        return self.intercept, out

    def linear(self, X: pd.DataFrame) -> np.ndarray:
        z = np.full(len(X), self.intercept)
        for params, t in self.terms:
            z = z + t[tuple(positions(self.space, p, X[p]) for p in params)]
        return z

    def bound(self, z):
        z = np.asarray(z, dtype=float)
        c = np.clip(z, self.lo, self.hi)
        return c, c != z

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return inverse_transform(self.bound(self.linear(X))[0], self.transform)


class StepModel:
    """A non-additive model (no ``additive_terms``): predictions rounded to a coarse grid, so many
    designs tie exactly, as a forest's leaves do."""

    def __init__(self, space: DesignSpace, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.table = TableModel(space, 0.0, [((p.name,), rng.integers(0, 3, p.size).astype(float))
                                             for p in space.parameters])
        self.parameters = self.table.parameters

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return np.floor(self.table.linear(X) / 2.0)


def random_stepwise(space: DesignSpace, rng: np.random.Generator, transform: str = "none") -> StepwiseModel:
    """A StepwiseModel with random bases (spline, linear, categorical) and random columns."""
    bases = {}
    for p in space.parameters:
        if p.kind == "categorical":
            bases[p.name] = Basis(p.name, "categorical", levels=list(p.values))
            continue
        vals = np.asarray(p.values, dtype=float)
        lo, hi = float(vals.min()), float(vals.max())
        if hi > lo and rng.random() < 0.6:
            knots = np.sort(rng.uniform(lo, hi, 3))
            if np.all(np.diff(knots) > 1e-3):
                bases[p.name] = Basis(p.name, "rcs", knots=knots.tolist(), lo=lo, hi=hi)
                continue
        bases[p.name] = Basis(p.name, "linear", lo=lo, hi=hi)
    names = list(bases)
    columns = []
    for _ in range(int(rng.integers(1, 7))):
        k = int(rng.integers(1, 3)) if len(names) > 1 else 1
        params = list(rng.choice(names, size=k, replace=False))
        if any(bases[q].width == 0 for q in params):
            continue
        columns.append((params, [int(rng.integers(0, bases[q].width)) for q in params]))
    # no columns at all (every basis of width 0): a constant model, every design tied
    used = {q for t, _ in columns for q in t}
    coef = rng.normal(0, 1, len(columns) + 1).tolist()
    return StepwiseModel(response="y", transform=transform, interactions="full",
                         bases={n: bases[n] for n in names if n in used}, columns=columns,
                         column_labels=["Intercept"] + ["c"] * len(columns), coefficients=coef,
                         terms=[":".join(t) for t, _ in columns], n=100, r2=0.9, adj_r2=0.9)


# ---- small random spaces -----------------------------------------------------------------------------
@st.composite
def small_spaces(draw, max_dims: int = 4, max_size: int = 4, constraints: bool = True) -> DesignSpace:
    n = draw(st.integers(2, max_dims))
    dims = []
    k = 0
    for i in range(n):
        size = draw(st.integers(1, max_size))
        members = draw(st.integers(1, 2))
        params = []
        for _ in range(members):
            if draw(st.integers(0, 5)) == 0:
                params.append(Parameter(f"p{k}", tuple(f"v{j}" for j in range(size)), kind="categorical"))
            else:
                start = draw(st.integers(0, 3))
                step = draw(st.integers(1, 3))
                params.append(Parameter(f"p{k}", tuple(start + step * j for j in range(size))))
            k += 1
        dims.append(params[0] if members == 1 else Group(f"g{i}", tuple(params)))
    numeric = [p.name for d in dims for p in d.parameters if p.kind == "numeric"]
    cons = []
    if constraints and len(numeric) >= 2 and draw(st.booleans()):
        a, b = draw(st.permutations(numeric))[:2]
        cons.append(Constraint(f"{a} <= {b} + {draw(st.integers(0, 3))}"))
    space = DesignSpace(tuple(dims), name="h", constraints=tuple(cons))
    try:
        return space.check()
    except SpaceError:  # the drawn constraint admits nothing: the space without it
        return DesignSpace(tuple(dims), name="h")


def brute_force(model: Any, space: DesignSpace, k: int, maximize: bool = False, where: str | None = None,
                cost: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Every feasible design predicted with model.predict; the k best (ties: smaller index) and, with a
    cost expression, the Pareto front (ties: smaller index)."""
    idx = np.arange(space.size)
    digits = space.decode(idx)
    ok = space.feasible_mask(digits)
    cols = space.columns(digits)
    if where:
        ok &= compile_expression(where, expression_types(space)).mask(cols, len(idx))
    frame = space.frame(digits)
    pred = np.asarray(model.predict(frame), dtype=float)
    key = -pred if maximize else pred
    sel = np.flatnonzero(ok)
    order = sel[np.lexsort((idx[sel], key[sel]))][:k]
    best = frame.iloc[order].assign(predicted=pred[order], design_index=idx[order]).reset_index(drop=True)
    front = None
    if cost is not None:
        c = np.broadcast_to(np.asarray(compile_expression(cost, expression_types(space)).evaluate(cols), float),
                            (len(idx),))
        o = sel[np.lexsort((idx[sel], key[sel], c[sel]))]
        keep, bestk = [], np.inf
        for i in o:
            if key[i] < bestk:
                keep.append(i)
                bestk = key[i]
        keep = np.asarray(keep, dtype=np.int64)
        front = (frame.iloc[keep].assign(cost=c[keep], predicted=pred[keep], design_index=idx[keep])
                 .reset_index(drop=True))
    return best, front


def brute_force_distinct(model: Any, space: DesignSpace, k: int, maximize: bool = False,
                         where: str | None = None) -> pd.DataFrame:
    """Every feasible design predicted with model.predict, grouped by the values of the parameters the
    model reads; each group given by its first design; the k best groups (ties: smaller first design),
    with ``designs``, the number of feasible designs in the group."""
    idx = np.arange(space.size)
    digits = space.decode(idx)
    ok = space.feasible_mask(digits)
    cols = space.columns(digits)
    if where:
        ok &= compile_expression(where, expression_types(space)).mask(cols, len(idx))
    frame = space.frame(digits)
    pred = np.asarray(model.predict(frame), dtype=float)
    sel = np.flatnonzero(ok)
    if not sel.size:
        return frame.iloc[:0].assign(predicted=[], design_index=[], designs=[])
    used = list(model.parameters)
    keys = frame.iloc[sel][used].astype(str).agg("\x1f".join, axis=1) if used else pd.Series("", index=sel)
    first = pd.Series(sel).groupby(keys.to_numpy()).min()
    count = pd.Series(sel).groupby(keys.to_numpy()).size()
    firsts = first.to_numpy()
    key = -pred[firsts] if maximize else pred[firsts]
    order = np.lexsort((firsts, key))[:k]
    chosen = firsts[order]
    return frame.iloc[chosen].assign(predicted=pred[chosen], design_index=chosen,
                                     designs=count.to_numpy()[order]).reset_index(drop=True)


def middle_key(space: DesignSpace, frame: pd.DataFrame) -> list[tuple]:
    """Per design of *frame*, the shown-design rule's key (explore/representative.py, steps 2 and 3),
    written out afresh: the distance to the middle of the space over the parameters' sorted values,
    then the ranks parameter by parameter."""
    ranks = {}
    for par in space.parameters:
        vals = sorted(par.values, key=lambda v: str(v) if par.kind == "categorical" else float(v))
        ranks[par.name] = {str(v): r for r, v in enumerate(vals)}
    out = []
    for rec in frame[list(space.parameter_names)].itertuples(index=False, name=None):
        rs = [ranks[p][str(v)] for p, v in zip(space.parameter_names, rec)]
        n = [space.parameter(p).size for p in space.parameter_names]
        dist = sum(abs(r / (m - 1) - 0.5) for r, m in zip(rs, n) if m > 1)
        out.append((round(dist, 9), *rs))
    return out


def brute_force_by_prediction(model: Any, space: DesignSpace, k: int, where: str | None = None) -> list[dict]:
    """Every feasible design predicted with model.predict and grouped by its prediction: the k lowest,
    each with its designs (a frame), their count, and the design the rule shows (the smallest
    :func:`middle_key`)."""
    idx = np.arange(space.size)
    digits = space.decode(idx)
    ok = space.feasible_mask(digits)
    if where:
        ok &= compile_expression(where, expression_types(space)).mask(space.columns(digits), len(idx))
    frame = space.frame(digits[ok]).assign(design_index=idx[ok])
    frame["predicted"] = np.asarray(model.predict(frame[list(space.parameter_names)]), dtype=float)
    out = []
    for pred, group in sorted(frame.groupby("predicted"), key=lambda t: t[0])[:k]:
        keys = middle_key(space, group)
        shown = group.iloc[min(range(len(keys)), key=keys.__getitem__)]
        out.append({"predicted": pred, "designs": group, "shown": int(shown.design_index)})
    return out
