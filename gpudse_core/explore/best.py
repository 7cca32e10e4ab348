"""The best designs of a space and its Pareto front, exactly, without visiting every point.

:func:`find_best` is the one function behind ``gpudse explore`` and the Explore page. It returns the
*top* designs by the model's prediction (lowest, or highest with ``maximize``), best first, ties
going to the smaller design index — exactly what predicting every feasible design with
``model.predict`` and sorting would give — and, with ``pareto``, the designs that no other design
beats on both the prediction and a cost.

How (``method`` in the result):

* ``exact`` — an additive model reads few parameters: the scan runs over the product of the *axes*
  of the used parameters (:mod:`.structure`: constrained components and ``where`` enumerated, each
  cell standing for its exact number of feasible completions), as sums of small tables
  (:mod:`.terms`). When that product is large, the axes are split into outer and inner ones; each
  block (an outer cell) gets a lower bound from the terms' minima and the blocks are visited best
  bound first, skipping every block that cannot improve the answer (branch and bound). A model
  reading all 12 of Lee & Brooks' parameter groups is answered from a small share of its 9.4e8
  points.
* ``stream`` — every point, evaluated block by block in NumPy (:mod:`.stream`), when a constraint
  component or ``where`` is too large to enumerate or the cost is not separable.
* ``predict`` — every point through ``model.predict`` (models without additive terms, such as
  forests, or bounds that are not a clip).

The candidates kept while scanning (:mod:`.pool`) carry error margins, and the final order is decided
on them with ``model.predict`` itself, so the arithmetic of the scan never changes the answer. The
same scan runs on a Dask cluster (:mod:`.distributed`) with ``scheduler``.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import limits
from ..errors import GpudseError
from ..space.design import DesignSpace
from ..space.expr import compile_expression
from .pool import Front, TopK, front_indices, run_blocks
from .stream import AdditiveGrid, PredictStream, cost_of_digits
from .structure import Structure, build_structure, parameter_dims
from .terms import (
    Cost,
    Factor,
    bound_of,
    check_parameters,
    expression_types,
    is_additive,
    levels_of,
    merge_factors,
    model_parameters,
    on_axes,
    terms_of,
)

BLOCK_CELLS = 1 << 17  # cells per block (one outer cell × the inner axes)
OUTER_LIMIT = 1 << 24  # blocks one scan may have
METHODS = ("auto", "exact", "stream", "predict")


@dataclass
class ExploreResult:
    """What :func:`find_best` found. ``best`` and ``pareto`` hold one row per design: every
    parameter, ``predicted`` (original scale), ``design_index`` (and ``cost`` on the front)."""

    space_size: int  # points of the space (constraints ignored)
    feasible: int | None  # designs satisfying the constraints and `where` (None when not counted)
    evaluated: int  # cells (exact) or points (stream) whose prediction was computed
    method: str
    best: pd.DataFrame
    pareto: pd.DataFrame | None
    elapsed: float
    complete: bool = True  # False when stopped early: the answer covers only what was scanned
    workers: int = 1
    notes: list[str] = field(default_factory=list)

    def to_json_dict(self, params: Sequence[str] | None = None) -> dict:
        def rows(df: pd.DataFrame, extra: Sequence[str]) -> list[dict]:
            cols = [c for c in (list(params) if params else [c for c in df.columns if c not in
                                                                  ("design_index", "bounded", "cost", "predicted")])]
            out = []
            for rec in df[cols + [c for c in extra if c in df.columns]].to_dict(orient="records"):
                out.append({k: (v.item() if isinstance(v, np.generic) else v) for k, v in rec.items()})
            return out

        doc: dict[str, Any] = {"space_size": self.space_size, "evaluated": self.evaluated, "method": self.method,
                               "best": rows(self.best, ["predicted"])}
        if self.pareto is not None:
            doc["pareto"] = rows(self.pareto, ["cost", "predicted"])
        doc.update(feasible=self.feasible, complete=self.complete, workers=self.workers,
                   elapsed=round(self.elapsed, 3), notes=list(self.notes))
        return doc


# ---- planning ----------------------------------------------------------------------------------------
def _spread(t: np.ndarray) -> float:
    return float(t.max() - t.min()) if t.size else 0.0


def choose_inner(sizes: Sequence[int], factors: Sequence[Factor], target: int = BLOCK_CELLS) -> list[int]:
    """Inner axes for blocks of at most *target* cells: those the fewest (weakest) factors cross.

    A block's lower bound is loose by at most the spread of the factors that read both outer and
    inner axes, so the split minimises that spread among splits with blocks of target/8 … target
    cells (ties: larger blocks).
    """
    n = len(sizes)
    total = math.prod(sizes)
    if total <= target:
        return list(range(n))
    spreads = [(set(axes), _spread(t)) for axes, t in factors]

    def crossing(inner: set[int]) -> float:
        return sum(s for axes, s in spreads if axes & inner and axes - inner)

    if n <= 14:  # every split (16,384 at most); beyond, greedily
        best, best_key = None, None
        for floor in (target // 8, 1):
            for mask in range(1 << n):
                inner = {i for i in range(n) if mask >> i & 1}
                size = math.prod(sizes[i] for i in inner)
                if not floor <= size <= target or total // size > OUTER_LIMIT:
                    continue
                key = (crossing(inner), -size)
                if best_key is None or key < best_key:
                    best, best_key = inner, key
            if best is not None:
                return sorted(best)
        raise GpudseError(f"the model's parameters span {total:,} combinations, too many to split into at most "
                          f"{OUTER_LIMIT:,} blocks; restrict the space with --where")
    inner: set[int] = set()
    size = 1
    while True:
        cands = [(crossing(inner | {i}), -sizes[i], i) for i in range(n)
                 if i not in inner and size * sizes[i] <= target]
        if not cands:
            break
        _, _, i = min(cands)
        inner.add(i)
        size *= sizes[i]
    if total // size > OUTER_LIMIT:
        raise GpudseError(f"the model's parameters span {total:,} combinations, too many to split into at most "
                          f"{OUTER_LIMIT:,} blocks; restrict the space with --where")
    return sorted(inner)


def _clip_bounds(model: Any, probe: np.ndarray) -> tuple[float, float] | None:
    """(lo, hi) when the model's bound is a clip to [lo, hi] (identity: ±inf); None otherwise."""
    bound = bound_of(model)
    try:
        lo, hi = (float(v) for v in bound(np.array([-np.inf, np.inf])))
    except (ValueError, FloatingPointError, ArithmeticError):
        lo, hi = (float(v) for v in bound(np.array([-1e308, 1e308])))
        lo = -np.inf if lo <= -1e308 else lo
        hi = np.inf if hi >= 1e308 else hi
    zs = np.concatenate([probe, [lo, hi]])
    zs = zs[np.isfinite(zs)]
    got = bound(zs)
    return (lo, hi) if np.array_equal(got, np.clip(zs, lo, hi)) else None


@dataclass
class _Plan:
    method: str
    evaluator: Any
    structure: Structure | None
    factors: list[Factor]
    intercept: float
    sign: float
    lo: float
    hi: float
    feasible: int | None
    notes: list[str]


def _check_scan(space: DesignSpace, masks: Sequence[Any] = (), cost: Any = None) -> None:
    """A scan of every point is bounded before it starts: the points it visits (limits.scan_points)
    and the constraints, ``--where`` and cost expression it evaluates at each of them, in points ×
    syntax nodes (limits.scan_work; the unit of ``constraint_work``, which bounds the same evaluation
    when a space is analysed)."""
    limits.check("scan_points", space.size, f"scanning every point of space {space.name!r}",
                 "use an additive model (scanned exactly without visiting every point), restrict the space "
                 "with --where, or sample it")
    if not space.fits_int64:
        raise GpudseError(f"space {space.name!r} has {space.size:,} points, too many to scan one by one")
    n_constraints = len(space.constraints)
    parts = [f"its {n_constraints:,} constraint{'s' if n_constraints != 1 else ''}"] if n_constraints else []
    if len(masks) > n_constraints:
        parts.append("--where")
    nodes = sum(m.nodes for m in masks)
    if cost is not None:
        nodes += cost.nodes
        parts.append("the cost")
    if nodes:
        limits.check("scan_work", space.size * nodes,
                     f"scanning every point of space {space.name!r} evaluates {' and '.join(parts)} "
                     f"({nodes:,} syntax nodes) at each of its {space.size:,} points, in point × node evaluations",
                     "combine or simplify the constraints, make them few enough to enumerate (so an additive "
                     "model is scanned without visiting every point), or sample the space")


def check_scan_work(model: Any, space: DesignSpace, where: str | None = None,
                    pareto: str | Mapping[str, Sequence[float]] | None = None) -> None:
    """Refuse at once a request whose scan must visit every point and would evaluate more than the
    limits allow there (scan_points, scan_work): what :func:`find_best` checks when it plans the scan,
    made before anything is built, so a dashboard refuses the request before it starts a job. A
    ``where`` too large to enumerate is found only when the scan is planned (building it is the work)."""
    where_expr = compile_expression(where, expression_types(space), "--where") if where is not None else None
    cost = Cost(pareto, space) if pareto is not None else None
    if not is_additive(model):
        _check_scan(space, _masks(space, where_expr), cost.expression if cost is not None else None)
    elif (cost is not None and not cost.separable) or not space.analysis.exact:
        _check_scan(space, _masks(space, where_expr), cost.expression if cost is not None and not cost.separable
                    else None)


def _masks(space: DesignSpace, where_expr) -> list:
    types = expression_types(space)
    out = [compile_expression(c.expr, types, f"constraints[{i}]") for i, c in enumerate(space.constraints)]
    return out + ([where_expr] if where_expr is not None else [])


def _plan(model: Any, space: DesignSpace, params: list[str], maximize: bool, cost: Cost | None, where_expr,
          where_text: str, method: str, block: int, dtype: Any) -> _Plan:
    sign = -1.0 if maximize else 1.0
    notes: list[str] = []
    dim_of = parameter_dims(space)
    if method != "predict" and not is_additive(model):
        if method in ("exact", "stream"):
            raise GpudseError(f"method {method!r} needs an additive model (terms over parameters); this model "
                              f"predicts through model.predict only: use method 'predict' or 'auto'")
        method = "predict"
    structure = None
    if method in ("auto", "exact"):
        used = {dim_of[p] for p in params} | ({dim_of[p] for p in cost.params} if cost and cost.separable else set())
        if cost is not None and not cost.separable:
            notes.append("the cost is not a sum of small parts, so every point is evaluated")
        else:
            structure = build_structure(space, used, where_expr, where_text)
            if structure is None:
                notes.append("a constraint (or --where) couples too many parameters to enumerate; every point is "
                             "evaluated")
        if structure is None and method == "exact":
            raise GpudseError("method 'exact' is not possible here: " + notes[-1])
        method = "exact" if structure is not None else ("stream" if method == "auto" else method)
    if method == "stream":
        _check_scan(space, _masks(space, where_expr), cost.expression if cost is not None and not cost.separable
                    else None)
        structure = build_structure(space, set(range(len(space.radices))), every_dimension=True)
    if method in ("exact", "stream"):
        c0, terms = terms_of(model, levels_of(space, params))
        factors = merge_factors(on_axes(structure, p, t * sign) for p, t in terms)
        intercept = c0 * sign
        lo_sum = c0 + sum(float(t.min()) for _, t in terms if t.size)
        hi_sum = c0 + sum(float(t.max()) for _, t in terms if t.size)
        clip = _clip_bounds(model, np.linspace(lo_sum - 1, hi_sum + 1, 257))
        transform = getattr(model, "transform", "none")
        if clip is None:
            notes.append("the model's bound is not a clip of the transformed prediction; every point goes "
                         "through model.predict")
        elif transform not in ("none", "log", "sqrt") or (transform == "sqrt" and max(lo_sum, clip[0]) < 0):
            notes.append(f"the {transform!r} back-transform is not monotone over these predictions; every point goes "
                         f"through model.predict")
            clip = None
        if clip is None:
            method, structure = "predict", None
        else:
            lo, hi = (clip[0], clip[1]) if sign > 0 else (-clip[1], -clip[0])
            cost_factors = None
            cost_expr = None
            cost_c = 0.0
            if cost is not None:
                if cost.separable:
                    cost_factors = merge_factors(on_axes(structure, p, t) for p, t in cost.summands)
                    cost_c = cost.constant
                else:
                    cost_expr = cost
            weights, w0 = structure.weights()
            sizes = structure.sizes
            if method == "exact":
                inner = choose_inner(sizes, factors + (cost_factors or []), block)
                masks = []
            else:
                inner, size = [], 1
                for x in range(len(sizes) - 1, -1, -1):
                    if size * sizes[x] > block and inner:
                        break
                    inner.insert(0, x)
                    size *= sizes[x]
                masks = _masks(space, where_expr)
            cost_axes = sorted({dim_of[p] for p in cost.params}) if cost_expr is not None else []
            ev = AdditiveGrid(sizes, factors, intercept, weights, w0, inner, cost_factors=cost_factors,
                              cost_intercept=cost_c, dtype=dtype, space=space if method == "stream" else None,
                              masks=masks, cost_expression=cost_expr, cost_axes=cost_axes)
            if cost is not None and cost.separable and cost.integral():
                ev.eps_c = 0.0
            feasible = structure.feasible if method == "exact" else None
            return _Plan(method, ev, structure, factors, intercept, sign, lo, hi, feasible, notes)
    masks = _masks(space, where_expr)
    _check_scan(space, masks, cost.expression if cost is not None else None)
    ev = PredictStream(model, space, sign, masks, cost, block=min(block, 1 << 16))
    return _Plan("predict", ev, None, [], 0.0, sign, -np.inf, np.inf, None, notes)


# ---- the answer ---------------------------------------------------------------------------------------
def _words_to_int(w: np.ndarray, structure: Structure | None) -> list[int]:
    if structure is None or structure.n_words == 1:
        return [int(x) for x in w[:, 0]]
    mult = []
    radices = structure.space.radices
    for k in range(structure.n_words):
        dims = [d for d in range(len(radices)) if structure.dim_word[d] > k]
        mult.append(math.prod(radices[d] for d in dims))
    return [sum(int(x) * m for x, m in zip(row, mult)) for row in w.tolist()]


def _designs(plan: _Plan, cells: np.ndarray) -> np.ndarray:
    """Digits of the first design of each cell."""
    values = plan.evaluator.cell_values(cells)
    return plan.structure.first_digits(values) if plan.structure is not None else values


def equation_of(model: Any) -> Callable[[pd.DataFrame], np.ndarray]:
    """The model's **equation**: its bounded prediction without the neighbour envelope (what the scan's
    sums of terms and clip compute), on the original scale. A model without an envelope (the paper's,
    a forest) predicts that already: its ``predict``."""
    guarded = getattr(model, "neighbours", None) is not None or getattr(model, "fallback", None) is not None
    if not guarded or not callable(getattr(model, "linear_predictor", None)):
        return model.predict
    from ..model.fitted import inverse_transform

    return lambda X: inverse_transform(model.bound(model.linear_predictor(X))[0], model.transform)


def _keys(model: Any, space: DesignSpace, digits: np.ndarray, sign: float, predict: Any = None
          ) -> tuple[np.ndarray, np.ndarray]:
    predict = model.predict if predict is None else predict
    pred = np.asarray(predict(space.frame(digits)), dtype=np.float64) if digits.shape[0] else np.zeros(0)
    key = pred * sign
    return pred, np.where(np.isnan(key), np.inf, key)


def _table(model: Any, plan: _Plan, space: DesignSpace, digits: np.ndarray, index: Sequence[int],
           cells: np.ndarray, equation: bool = False) -> pd.DataFrame:
    frame = space.frame(digits)
    frame["predicted"] = np.asarray(model.predict(frame), dtype=np.float64) if len(frame) else np.zeros(0)
    if equation:
        frame["equation"] = np.asarray(equation_of(model)(frame), dtype=np.float64) if len(frame) else np.zeros(0)
    if callable(getattr(model, "bound", None)) and plan.structure is not None and len(frame):
        z = _linear(plan, cells) * plan.sign  # back on the model's transformed scale
        frame["bounded"] = np.asarray(model.bound(z)[1], dtype=bool)
    frame["design_index"] = np.asarray(index, dtype=np.int64) if space.fits_int64 else list(index)
    return frame


def _linear(plan: _Plan, cells: np.ndarray) -> np.ndarray:
    """The scan's sum of factors (sign applied) at cells, in float64."""
    values = plan.evaluator.cell_values(np.asarray(cells, dtype=np.int64))
    z = np.full(values.shape[0], plan.intercept)
    for axes, t in plan.factors:
        z += t[tuple(values[:, a] for a in axes)]
    return z


def _top(model: Any, space: DesignSpace, plan: _Plan, pool: TopK, k: int, distinct: bool = False,
         rank: str = "predict") -> pd.DataFrame:
    """The *k* best of the pool by ``model.predict`` or, with *rank* ``"equation"``, by the model's
    equation (:func:`equation_of`, shown in an ``equation`` column beside ``predicted``)."""
    cells = pool.cell
    digits = _designs(plan, cells)
    _, key = _keys(model, space, digits, plan.sign, equation_of(model) if rank == "equation" else None)
    order = np.lexsort((*pool.w.T[::-1], key))
    out_digits: list[np.ndarray] = []
    out_index: list[int] = []
    out_cells: list[int] = []
    i = 0
    values = plan.evaluator.cell_values(cells) if plan.structure is not None else None
    firsts = _words_to_int(pool.w, plan.structure)
    while len(out_index) < k and i < order.shape[0]:
        j = i
        while j < order.shape[0] and key[order[j]] == key[order[i]]:
            j += 1
        need = k - len(out_index)
        group = order[i:j]
        if distinct and len(group) > 1:
            # cells split only by parameters the model does not read (a Pareto cost's, say) are one
            # group of designs: keep the first (the smallest first design: the order sorts by it)
            used = model_parameters(model)
            seen: set[tuple] = set()
            keep = []
            for c, row in zip(group, space.frame(digits[group])[used].itertuples(index=False, name=None)):
                if row not in seen:
                    seen.add(row)
                    keep.append(c)
            group = np.asarray(keep, dtype=group.dtype)
        group = group[:need]  # the cells with the smallest first designs among equals
        if plan.structure is not None and plan.method == "exact" and not distinct:
            streams = [((c, t) for t in plan.structure.completions(values[c], need)) for c in group]
            chosen = itertools.islice(heapq.merge(*streams, key=lambda ct: ct[1][0]), need)
        else:
            chosen = ((c, (firsts[c], digits[c])) for c in group)
        for c, (index, d) in chosen:
            out_index.append(int(index))
            out_digits.append(d)
            out_cells.append(int(cells[c]))
        i = j
    arr = np.asarray(out_digits, dtype=np.int64).reshape(-1, len(space.radices))
    return _table(model, plan, space, arr, out_index, np.asarray(out_cells, dtype=np.int64), rank == "equation")


def _front(model: Any, space: DesignSpace, plan: _Plan, pool: Front, cost: Cost) -> pd.DataFrame:
    digits = _designs(plan, pool.cell)
    _, key = _keys(model, space, digits, plan.sign)
    c = cost_of_digits(cost, space, digits)
    sel = front_indices(c, key, *pool.w.T)
    index = _words_to_int(pool.w[sel], plan.structure) if plan.structure is not None and plan.method == "exact" \
        else [int(x) for x in pool.cell[sel]]
    table = _table(model, plan, space, digits[sel], index, pool.cell[sel])
    table.insert(len(table.columns) - 1, "cost", c[sel])
    return table


# ---- the entry point ----------------------------------------------------------------------------------
def _collapse(transform: str, eps: float, rel: float) -> tuple[float, float]:
    """The pools' margins (``eps``, ``rel``) widened by what the back-transform can merge: two values
    on the transformed scale closer than this may become one prediction, a tie the smaller design
    index decides (exp(−1.4e-45) = exp(0) = 1.0 exactly), so both must stay candidates. exp maps
    values within a few ulps of 1 of each other's difference (2⁻⁵⁰ absolute) to one double; the
    square, values within 2⁻⁵¹ of each other relatively, and everything below 1e-154 to 0."""
    if transform == "log":
        return eps + 2.0 ** -50, rel
    if transform == "sqrt":
        return eps + 1e-154, max(rel, 2.0 ** -51)
    return eps, rel


def find_best(model: Any, space: DesignSpace, top: int = 20, maximize: bool = False,
              pareto: str | Mapping[str, Sequence[float]] | None = None, where: str | None = None,
              scheduler: str | None = None, progress: Callable[[int, int], Any] | None = None,
              stop: Callable[[], bool] | None = None, *, workers: int | None = None, method: str = "auto",
              block: int = BLOCK_CELLS, dtype: Any = None, distinct: bool = False) -> ExploreResult:
    """The *top* best designs of *space* by *model* and, with *pareto* (a cost expression over the
    parameters, or per-value costs per parameter), its Pareto front; see the module docstring.

    *where* restricts the space (same language as constraints). *scheduler* runs the scan on Dask:
    ``"local"`` (a LocalCluster of *workers* processes) or a scheduler address. *progress(done,
    total)* is called as the scan advances (cells); *stop()* returning True ends it within a block
    with what was found so far (``complete`` False).

    With *distinct* the top are the *top* best **groups** of designs the model cannot tell apart
    (equal values of every parameter it reads), each given by its first design in index order:
    exactly what grouping every feasible design by those values, ranking the groups by prediction
    (ties: the smaller first design) and taking the first *top* would give.
    """
    return scan(model, space, top, maximize, pareto, where, scheduler, progress, stop, workers=workers,
                method=method, block=block, dtype=dtype, distinct=distinct)[0]


def scan(model: Any, space: DesignSpace, top: int = 20, maximize: bool = False,
         pareto: str | Mapping[str, Sequence[float]] | None = None, where: str | None = None,
         scheduler: str | None = None, progress: Callable[[int, int], Any] | None = None,
         stop: Callable[[], bool] | None = None, *, workers: int | None = None, method: str = "auto",
         block: int = BLOCK_CELLS, dtype: Any = None, distinct: bool = False, rank: str = "predict"
         ) -> tuple[ExploreResult, Structure | None]:
    """:func:`find_best`, and the structure its best designs were enumerated on (None unless the
    method is exact), for a caller that needs the same structure afterwards (:func:`.designs.best_designs`
    counts each group's designs on it) and should not build it twice. With *rank* ``"equation"`` the
    top are ordered by the model's equation (:func:`equation_of`: what the scan's pool bounds), not by
    ``model.predict``, with both in the table: :func:`.designs.best_designs` re-ranks them by the
    guarded prediction."""
    t0 = time.perf_counter()
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 0:
        raise GpudseError(f"--top must be a whole number of at least 0 (got {top!r})")
    limits.check("explore_top", int(top), "--top", "ask for fewer designs")
    if top == 0 and pareto is None:
        raise GpudseError("nothing to find: ask for --top K designs or a --pareto front")
    if method not in METHODS:
        raise GpudseError(f"unknown method {method!r}; choose {', '.join(METHODS)}")
    if rank not in ("predict", "equation"):
        raise GpudseError(f"unknown rank {rank!r}; choose predict or equation")
    if not isinstance(block, int) or block < 1:
        raise GpudseError(f"block must be a whole number of at least 1 (got {block!r})")
    if distinct and pareto is not None and top:
        # a cost's parameters split the groups the model cannot tell apart into cells the top-k pool
        # would count apart: the distinct best designs (which do not depend on the cost) and the front
        # are two scans
        kw = dict(maximize=maximize, where=where, scheduler=scheduler, progress=progress, stop=stop,
                  workers=workers, method=method, block=block, dtype=dtype)
        front_res = find_best(model, space, 0, pareto=pareto, **kw)
        top_res, top_structure = scan(model, space, top, distinct=True, rank=rank, **kw)
        return dataclasses.replace(
            front_res, best=top_res.best, evaluated=front_res.evaluated + top_res.evaluated,
            elapsed=time.perf_counter() - t0, complete=front_res.complete and top_res.complete,
            notes=list(dict.fromkeys([*top_res.notes, *front_res.notes,
                                      f"two scans: the Pareto front over {front_res.evaluated:,} cells and the "
                                      f"distinct best designs over {top_res.evaluated:,}"]))), top_structure
    params = check_parameters(model, space)
    where_expr = compile_expression(where, expression_types(space), "--where") if where is not None else None
    cost = Cost(pareto, space) if pareto is not None else None
    plan = _plan(model, space, params, maximize, cost, where_expr, where or "", method, block, dtype)
    ev = plan.evaluator
    n_words = ev.n_words
    eps, rel = _collapse(getattr(model, "transform", "none"), ev.eps, getattr(ev, "rel", 0.0))
    topk = TopK(top, eps, plan.lo, plan.hi, n_words, limits.current().explore_candidates,
                distinct=distinct, rel=rel) if top else None
    front = Front(eps, ev.eps_c, plan.lo, plan.hi, n_words, limits.current().explore_candidates,
                  cost.label, rel=rel) if cost is not None else None
    if plan.method == "exact":
        lb, lc, wmin = ev.bounds()
        order = np.lexsort((lc if lc is not None else lb, lb)) if ev.n_blocks > 1 else np.arange(1)
        lb = lb[order]  # (one array at a time: with millions of blocks each is tens of MB)
        lc = None if lc is None else lc[order]
        bounds = (lb, lc, wmin[order])
        del lb, lc, wmin
    else:
        order, bounds = np.arange(ev.n_blocks), None
    total = ev.total_cells
    done = [0, 0.0]

    def tick(n: int) -> None:
        done[0] += n
        now = time.perf_counter()
        if progress is not None and (now - done[1] >= 0.1 or done[0] >= total):
            done[1] = now
            progress(min(done[0], total), total)

    workers_used = 1
    if scheduler:
        from .distributed import run_on_dask

        evaluated, complete, seen, workers_used = run_on_dask(ev, order, bounds, topk, front, scheduler, workers,
                                                              stop=stop, tick=tick)
    else:
        evaluated, _, complete, seen = run_blocks(ev, order, topk, front, bounds, ascending=plan.method == "exact",
                                                  stop=stop, tick=tick)
    if progress is not None and done[0] < total and complete:
        progress(total, total)
    empty = pd.DataFrame(columns=[*space.parameter_names, "predicted", "design_index"])
    if topk is not None and topk.n:
        # a scan of every point through model.predict (method predict) ranks by the shown prediction already
        best = _top(model, space, plan, topk, top, distinct, rank if plan.method != "predict" else "predict")
    else:
        best = empty
    pareto_table = None
    if front is not None:
        pareto_table = _front(model, space, plan, front, cost) if front.n else empty.assign(cost=[])
    feasible = plan.feasible if plan.method == "exact" else (seen if complete else None)
    if complete and feasible == 0:
        raise GpudseError(f"no design of space {space.name!r} satisfies its constraints"
                          + (f" and --where {where!r}" if where else ""))
    if not complete:
        plan.notes.append(f"stopped after {evaluated:,} of {total:,} cells: the answer covers only what was scanned")
    return ExploreResult(space_size=space.size, feasible=feasible, evaluated=int(evaluated), method=plan.method,
                         best=best.reset_index(drop=True), elapsed=time.perf_counter() - t0,
                         pareto=None if pareto_table is None else pareto_table.reset_index(drop=True),
                         complete=complete, workers=workers_used, notes=plan.notes), \
        (plan.structure if plan.method == "exact" else None)
