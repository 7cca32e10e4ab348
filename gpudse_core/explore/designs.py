"""Decision-grade best designs: one row per prediction, so no two rows repeat one.

A fitted model reads only some parameters (Lee & Brooks' stepwise selection keeps the ones that
matter), so every design agreeing on those *used* parameters gets the same prediction; and a level cell
or a conditional term (``blk = 1 & tc = 4``) leaves a parameter without effect at other values. Listing
the k best *designs* would show one prediction k times. :func:`best_designs` lists the k best
**predictions** instead: the distinct scan (:func:`.best.scan`, still exact) gives the groups of equal
used values, asked for more until the last prediction's groups are all in, and groups of one
prediction are one row:

* for each parameter the values its designs take (``any`` when all of them: a parameter the model does
  not read, or one entering only through a term constant at the row's other values), and the exact
  number of feasible designs the row stands for (the structure of :mod:`.structure` counts them);
* the design it shows, the one to simulate, by the rule of :mod:`.representative` (nearest a
  simulated design, then the middle of the space; never the enumeration order);
* a prediction interval (:mod:`gpudse_core.model.intervals`) of the shown design and whether it lies
  apart from the best row's (``distinguishable``);
* given a results table: how many designs of the row were simulated and their mean measured
  response; with ``exclude_simulated`` groups holding one are left out; a group holding a *failed*
  simulation (a missing response, or a ``status`` other than ``choices.OK_STATUS``) is never recommended.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .. import limits
from ..choices import OK_STATUS  # a results row with another status is a failed simulation
from ..errors import GpudseError
from ..space.design import DesignSpace
from .best import ExploreResult, scan
from .representative import ENUMERATED
from .structure import Structure, build_structure, parameter_dims

ANY = "any"
SHOWN_VALUES = 6  # values listed for an unused parameter before "… (n values)"
RANKS = ("guarded", "equation")  # what orders the best rows: the shown prediction, or the model's equation


@dataclass
class BestDesigns:
    """What :func:`best_designs` found. ``rows`` has one row per prediction, best first: every parameter
    (the shown design's values, :mod:`.representative`), ``predicted``, ``lower``/``upper`` (NaN without
    an interval), ``distinguishable`` (the interval lies apart from the best row's; NA without
    intervals), ``designs`` (feasible designs with this prediction; NA when not countable),
    ``simulated`` (those in the results) and ``measured`` (their mean response), ``design_index``."""

    rows: pd.DataFrame
    used: list[str]  # parameters the model reads
    free: list[dict[str, list | None]]  # per row: parameter -> the values its designs take (None: any);
    #                                     absent: one value (the shown design's), or "?" when not countable
    level: float | None  # the interval's level (None: no interval)
    result: ExploreResult
    left_out: int = 0  # groups left out because they were simulated or failed
    notes: list[str] = field(default_factory=list)

    def label(self, i: int, p: str) -> str:
        """What row *i* shows for parameter *p*: its value, ``any``, or the values the row's designs take."""
        if p in self.free[i]:
            vals = self.free[i][p]
            if vals is None:
                return ANY
            shown = ", ".join(_fmt_value(v) for v in vals[:SHOWN_VALUES])
            return shown if len(vals) <= SHOWN_VALUES else f"{shown}, … ({len(vals)} values)"
        if p not in self.used and pd.isna(self.rows["designs"].iloc[i]):  # not countable
            return "?"
        return _fmt_value(self.rows[p].iloc[i])

    def display(self, space: DesignSpace, response: str, unit: str | None = None) -> pd.DataFrame:
        """The rows as display strings through the one formatter: the prediction, its interval, the
        designs each row stands for, simulated ones, then the used and the other parameters."""
        from ..fmt import fmt_count, format_table, header, space_units

        units = space_units(space)
        r = self.rows
        out: dict[str, list[str]] = {}
        u = {"v": unit} if unit else {}
        said = bool(unit) and str(response).lower().endswith(str(unit).lower())  # time_ms: no "(ms)" after it
        out[header(f"predicted {response}", None if said else unit)] = \
            format_table(r[["predicted"]].set_axis(["v"], axis=1), u).iloc[:, 0].tolist()
        if self.level is not None:
            pct = f"{100 * self.level:g} %"
            lo = format_table(r[["lower"]].set_axis(["v"], axis=1), u).iloc[:, 0].tolist()
            hi = format_table(r[["upper"]].set_axis(["v"], axis=1), u).iloc[:, 0].tolist()
            out[header(f"{pct} interval", unit)] = [f"{a} – {b}" for a, b in zip(lo, hi)]
            out["distinguishable from best"] = ["(best)" if i == 0 else "?" if pd.isna(v) else "yes" if v else "no"
                                                for i, v in enumerate(r.distinguishable)]
        out["designs"] = [fmt_count(v) for v in r.designs]
        if "simulated" in r.columns and (r.simulated > 0).any():
            out["simulated"] = [fmt_count(v) if v else "" for v in r.simulated]
            out[header("measured", unit)] = format_table(
                r[["measured"]].set_axis(["v"], axis=1), u).iloc[:, 0].where(r.simulated > 0, "").tolist()
        names = self.used + [p for p in space.parameter_names if p not in self.used]
        for p in names:
            out[header(p, units.get(p))] = [self.label(i, p) for i in range(len(r))]
        return pd.DataFrame(out)

    def to_json_rows(self, params: Sequence[str]) -> list[dict]:
        """One object per row: every parameter (the representative design), ``predicted``, and
        ``lower``, ``upper``, ``designs``, ``simulated``, ``measured``, ``any`` (unused parameters
        whose group takes every value) and ``values`` (the others: the values their group takes)."""
        out = []
        for i, rec in enumerate(self.rows.to_dict(orient="records")):
            d = {p: _plain(rec[p]) for p in params}
            d["predicted"] = _plain(rec["predicted"])
            for k in ("lower", "upper", "measured"):
                v = _plain(rec.get(k))
                d[k] = None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v
            d["designs"] = None if pd.isna(rec["designs"]) else int(rec["designs"])
            d["distinguishable"] = None if i == 0 or pd.isna(rec["distinguishable"]) else bool(rec["distinguishable"])
            d["simulated"] = int(rec.get("simulated", 0))
            d["any"] = [p for p, v in self.free[i].items() if v is None]
            d["values"] = {p: [_plain(x) for x in v] for p, v in self.free[i].items() if v is not None}
            out.append(d)
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _fmt_value(v: Any) -> str:
    from ..fmt import fmt_value

    return fmt_value(v)


# ---- simulated and failed designs ----------------------------------------------------------------------
def _positions(space: DesignSpace, frame: pd.DataFrame, params: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per row of *frame*: the positions of its values of *params* (a key) and whether all are values of
    the space (rows outside the space match no group)."""
    keys = np.zeros((len(frame), len(params)), dtype=np.int64)
    ok = np.ones(len(frame), dtype=bool)
    for j, p in enumerate(params):
        par = space.parameter(p)
        index = {(str(v) if par.kind == "categorical" else float(v)): i for i, v in enumerate(par.values)}
        for r, v in enumerate(frame[p].tolist()):
            if par.kind == "categorical":
                key: Any = str(v)
            else:
                try:
                    key = float(v)
                except (TypeError, ValueError):
                    key = None
            pos = index.get(key)
            if pos is None:
                ok[r] = False
            else:
                keys[r, j] = pos
    return keys, ok


def _results_keys(space: DesignSpace, results: pd.DataFrame, used: list[str], response: str
                  ) -> tuple[dict[tuple, tuple[int, float]], set[tuple]]:
    """(simulated groups: key -> (designs, mean response), failed groups) of a results table."""
    missing = [p for p in used if p not in results.columns]
    if missing:
        raise GpudseError(f"the results table lacks the column(s) {', '.join(missing)} that the model uses; give "
                          f"the results the model was fitted on")
    y = pd.to_numeric(results[response], errors="coerce").to_numpy(float) if response in results.columns \
        else np.full(len(results), np.nan)
    failed = ~np.isfinite(y)
    if "status" in results.columns:
        status = results["status"].fillna("").astype(str).str.strip().str.lower()
        failed |= ~status.isin(OK_STATUS).to_numpy()
    keys, ok = _positions(space, results, used)
    sim: dict[tuple, list[float]] = {}
    bad: set[tuple] = set()
    for k, f, good, v in zip(map(tuple, keys.tolist()), failed.tolist(), ok.tolist(), y.tolist()):
        if not good:
            continue
        if f:
            bad.add(k)
        else:
            sim.setdefault(k, []).append(v)
    return {k: (len(v), float(np.mean(v))) for k, v in sim.items()}, bad


# ---- counts and value sets ------------------------------------------------------------------------------
def _group_of(structure: Structure, digits: np.ndarray, cache: dict) -> tuple[int, dict[int, np.ndarray]]:
    """The number of feasible designs sharing *digits*' used dimensions, and the digits each unused
    dimension takes among them (per part and axis value, computed once into *cache*)."""
    count = 1
    values: dict[int, np.ndarray] = {}
    with_axis = {a.part: a for a in structure.axes}
    for i, part in enumerate(structure.parts):
        ax = with_axis.get(i)
        v = -1
        if ax is not None:
            v = ax.value_of(digits[list(ax.dims)])
            if v < 0:
                return 0, {}
        if (i, v) not in cache:
            rows = part.rows if ax is None else part.rows[ax.order[ax.start[v]:ax.start[v + 1]]]
            cache[i, v] = (int(rows.shape[0]), {d: np.unique(rows[:, j]) for j, d in enumerate(part.dims)
                                                if ax is None or d not in ax.dims})
        n, vals = cache[i, v]
        count *= n
        values.update(vals)
    return count, values


def best_designs(model: Any, space: DesignSpace, top: int = 20, *, maximize: bool = False, where: str | None = None,
                 results: pd.DataFrame | None = None, exclude_simulated: bool = False, level: float | None = 0.95,
                 pareto: Any = None, scheduler: str | None = None, workers: int | None = None,
                 progress: Callable[[int, int], Any] | None = None, stop: Callable[[], bool] | None = None,
                 rank: str = "guarded") -> BestDesigns:
    """The *top* best groups of designs the model cannot tell apart (see the module docstring); the
    scan's own result (with the Pareto front against *pareto*, if given) is ``.result``.

    *rank* ``"guarded"`` ranks them by the prediction the rows show (the model's guarded prediction:
    :func:`_scan_guarded`); ``"equation"`` by the model's equation, the scan's own order, as before the
    neighbour envelope held predictions (for comparison: the rows it puts first can be held far above it)."""
    from ..explore.terms import check_parameters

    if rank not in RANKS:
        raise GpudseError(f"unknown rank {rank!r}; choose {' or '.join(RANKS)}")

    used = check_parameters(model, space)
    sim: dict[tuple, tuple[int, float]] = {}
    failed: set[tuple] = set()
    if results is not None:
        sim, failed = _results_keys(space, results, used, model.response)
    leave = failed | (set(sim) if exclude_simulated else set())
    ask = int(top) + len(leave) if top else 0
    if top and ask > limits.current().explore_top:
        raise GpudseError(f"{len(leave):,} groups of designs are simulated or failed and --top is {top:,}: more than "
                          f"{limits.current().explore_top:,} to scan for; ask for fewer or leave out fewer")
    ask = min(ask + 1, limits.current().explore_top) if top else 0  # one more: is the last prediction shared?
    kw = dict(maximize=maximize, pareto=pareto, where=where, scheduler=scheduler, workers=workers, progress=progress,
              stop=stop)
    if rank == "guarded" and top:
        res, scanned, more = _scan_guarded(model, space, ask, int(top), leave, used, **kw)
    else:
        res, scanned, more = _scan_ties(model, space, ask, int(top), leave, used, **kw)
    notes = list(res.notes) + more
    if failed and res.pareto is not None and len(res.pareto):
        # the front is a scan of designs, not groups: a design of a group that failed to simulate is no
        # recommendation either (the designs it alone dominated are not brought back: a new scan would)
        fkeys, _ = _positions(space, res.pareto, used)
        bad = np.array([k in failed for k in map(tuple, fkeys.tolist())], dtype=bool)
        if bad.any():
            notes.append(f"{int(bad.sum()):,} design(s) of the Pareto front are left out: their group failed to "
                         f"simulate (designs only they outdid are not shown until the next scan)")
            res = dataclasses.replace(res, pareto=res.pareto.loc[~bad].reset_index(drop=True))
    best = res.best.drop(columns=[c for c in ("bounded", "equation") if c in res.best.columns])
    keys, _ = _positions(space, best, used) if len(best) else (np.zeros((0, len(used)), dtype=np.int64), None)
    all_keys = list(map(tuple, keys.tolist()))
    kept = [i for i, k in enumerate(all_keys) if k not in leave]
    groups = _prediction_groups(best.predicted.to_numpy(float)[kept], int(top))
    members = [[kept[j] for j in g] for g in groups]
    last = members[-1][-1] if members else len(res.best) - 1
    n_left = sum(1 for i in range(last + 1) if all_keys[i] in leave)
    structure = _count_structure(space, used, where, scanned)
    if structure is None and len(members):
        notes.append("a constraint couples too many parameters to count the designs each row stands for")
    sim_digits = _simulated_digits(space, results, model.response) if results is not None and sim else None
    rows, free = _merge(space, used, best, members, all_keys, sim, structure, where, sim_digits, notes)
    level_used = _intervals(model, space, rows, level, notes, results, "max" if maximize else "min")
    _outside_note(model, rows[list(space.parameter_names)], notes)
    order = [*space.parameter_names, "predicted", "lower", "upper", "distinguishable", "designs", "simulated",
             "measured", "design_index"]
    rows = rows[[c for c in order if c in rows.columns]]
    return BestDesigns(rows, list(used), free, level_used, res, n_left, notes)


def _outside_note(model: Any, X: pd.DataFrame, notes: list[str]) -> None:
    """A note naming the shown rows that lie outside the model's training support (a value beyond a
    parameter's training range, a level combination no training row had), the first row's reason, and
    the rows whose prediction the model held to its bound or to its nearest training designs: there the
    model extrapolates, and its prediction is the weakest the table shows."""
    details = getattr(model, "predict_details", None)
    if details is None or not len(X):
        return
    det = details(X)
    why = det["extrapolation"].to_numpy(dtype=str)
    out = np.flatnonzero(why != "")
    if not out.size:
        return
    forest = np.char.find(why, "predicted by the model's forest alone") >= 0
    held = np.flatnonzero(det["bounded"].to_numpy(dtype=bool) & ~forest)
    text = (f"row(s) {', '.join(str(i + 1) for i in out)} lie outside what the training rows cover (row {out[0] + 1}: "
            f"{why[out[0]]}): the model extrapolates there")
    if forest.any():
        text += (f"; row(s) {', '.join(str(i + 1) for i in np.flatnonzero(forest))}: predicted by the model's forest "
                 f"alone (its equation is not trusted there)")
    if held.size:
        text += f"; row(s) {', '.join(str(i + 1) for i in held)}: the prediction is held (bounded)"
    notes.append(text + "; simulate to know")


def _scan_ties(model: Any, space: DesignSpace, ask: int, top: int, leave: set, used: list[str], **kw: Any
               ) -> tuple[ExploreResult, Structure | None, list[str]]:
    """The distinct scan, asked for more groups until the rows not left out hold more than *top*
    predictions (so every group of the *top*-th prediction is in) or the space has no more: rows of one
    prediction are one row of the answer."""
    res, scanned = scan(model, space, top=ask, distinct=True, **kw)
    cap = limits.current().explore_top
    while top and res.complete and len(res.best) == ask and ask < cap:
        keys, _ = _positions(space, res.best, used)
        preds = {p for k, p in zip(map(tuple, keys.tolist()), res.best.predicted.tolist()) if k not in leave}
        if len(preds) > top:
            break
        ask = min(max(2 * ask, math.ceil(1.25 * ask * (top + 1) / max(len(preds), 1))), cap)  # by the ties seen
        more, scanned = scan(model, space, top=ask, distinct=True, **{**kw, "pareto": None})
        res = dataclasses.replace(res, best=more.best, evaluated=res.evaluated + more.evaluated,
                                  complete=more.complete)
    notes = []
    if top and len(res.best) == ask == cap:
        notes.append(f"the scan kept the {cap:,} best groups of designs the model can tell apart; the last row's "
                     f"prediction may be shared by more designs than it counts")
    return res, scanned, notes


def _scan_guarded(model: Any, space: DesignSpace, ask: int, top: int, leave: set, used: list[str], **kw: Any
                  ) -> tuple[ExploreResult, Structure | None, list[str]]:
    """The distinct scan ranked by the **guarded** prediction (the one the rows show), not the equation.

    The scan's pool bounds the model's equation (its sums of terms and clip, :func:`.best.equation_of`);
    the neighbour envelope then holds some predictions (:meth:`gpudse_core.model.fitted.StepwiseModel.guarded`).
    So the groups are scanned best first **by the equation**, *ask* of them, their guarded predictions
    computed, and *ask* doubled until the *top*-th best distinct guarded value (groups in *leave* aside)
    is better than the equation value *T* of the last group scanned. Then no unscanned group can enter:
    its guarded value is no better than its equation value (a hold that only **raises** for a min goal),
    which is no better than *T*. The answer is what ranking every feasible group by its guarded prediction
    would give, ties to the smaller first design.

    A model blended with a forest (:mod:`gpudse_core.model.fallback`) shows a value between its equation's and
    its forest's (the forest's alone outside the support), so an unscanned group's shown value is no better than
    the better of *T* and the best its forest can give (:func:`_forest_floor`): the list is doubled until the
    *top*-th value beats both. When the best designs lie beyond every training response that comes soon;
    otherwise the list deepens to ``limits.explore_top`` and a note says a group beyond could rank higher.

    The argument covers holds that only worsen a prediction for the goal: the default stepwise model
    holds an unseen corner of overlapping terms from below only, so for a min goal it is exact. A hold
    both ways (a value or level combination outside the support, a binned parameter past its range) and,
    for a max goal, the corners' raise can *improve* a prediction, though never beyond the best training
    response (a held value is one of its neighbours'): when the *top*-th value is better than every training
    response it stays exact, else an unscanned group improved that way could be missed, and a note says so
    when a scanned group was improved (for a max goal, always). When the depth reaches
    ``limits.explore_top`` first, the order is the best the deeper list gives, said in a note."""
    res, scanned = scan(model, space, top=ask, distinct=True, rank="equation", **kw)
    sign = -1.0 if kw.get("maximize") else 1.0
    cap = limits.current().explore_top
    notes: list[str] = []
    if "equation" not in res.best.columns:  # ranked by model.predict already (a scan through it)
        return res, scanned, notes
    floor = _forest_floor(model, sign)
    while res.complete and len(res.best) == ask:
        keys, _ = _positions(space, res.best, used)
        kept = np.array([k not in leave for k in map(tuple, keys.tolist())], dtype=bool)
        shown = _key(res.best.predicted, sign)[kept]
        values = np.unique(shown)
        if len(values) >= top and values[top - 1] < min(_key(res.best.equation, sign)[-1], floor):
            break
        if ask >= cap:
            notes.append(f"ranked by the shown prediction among the {cap:,} best groups by the model's equation "
                         f"(the deepest scan the limits allow): a group beyond them could rank higher")
            break
        ask = min(2 * ask, cap)
        more, scanned = scan(model, space, top=ask, distinct=True, rank="equation", **{**kw, "pareto": None})
        res = dataclasses.replace(res, best=more.best, evaluated=res.evaluated + more.evaluated,
                                  complete=more.complete)
    best = res.best
    shown, eq = _key(best.predicted, sign), _key(best.equation, sign)
    better = np.flatnonzero(shown < eq)
    keys, _ = _positions(space, best, used)
    values = np.unique(shown[[k not in leave for k in map(tuple, keys.tolist())]])
    # a held value is a training response (or the equation's own, when raised): a top-th value better
    # than every training response leaves an improving hold nothing to win; else say what could
    if res.complete and len(best) == ask and len(values) >= top and floor == np.inf \
            and not values[top - 1] < _best_response(model, sign) and (better.size or sign < 0):
        why = (f"{better.size:,} of the {len(best):,} groups scanned are" if better.size else
               "for the highest predictions a design in an unseen corner is")
        notes.append(f"{why} held to a better prediction than the model's equation gives (outside the training "
                     f"data), and row {top}'s is not better than every training response: a group beyond the "
                     f"{len(best):,} scanned held likewise could rank higher")
    index = best.design_index.tolist()
    order = sorted(range(len(best)), key=lambda i: (shown[i], index[i]))
    return dataclasses.replace(res, best=best.iloc[order].reset_index(drop=True)), scanned, notes


def _forest_floor(model: Any, sign: float) -> float:
    """For a model blended with a forest (:mod:`gpudse_core.model.fallback`), the best value its forest can
    give as a sort key: no unscanned group's blend (between its equation value and its forest value) is better
    than the better of this and its equation value. inf for a model without a forest."""
    fb = getattr(model, "fallback", None)
    if fb is None:
        return np.inf
    from ..model.fitted import inverse_transform

    lo, hi = fb.range()
    return float(np.min(inverse_transform(np.array([lo, hi]), getattr(model, "transform", "none")) * sign))


def _best_response(model: Any, sign: float) -> float:
    """The best training response the neighbour envelope holds to, as a sort key (-inf when unknown)."""
    z = getattr(getattr(model, "neighbours", None), "z", None)
    if z is None or not np.size(z):
        return -np.inf
    from ..model.fitted import inverse_transform

    return float(np.min(inverse_transform(np.asarray(z, dtype=float), getattr(model, "transform", "none")) * sign))


def _key(values: pd.Series, sign: float) -> np.ndarray:
    """Values as a sort key for the goal, best first (NaN last)."""
    key = values.to_numpy(float) * sign
    return np.where(np.isnan(key), np.inf, key)


def _prediction_groups(pred: np.ndarray, top: int) -> list[list[int]]:
    """Positions of equal predictions (best first: equal ones are adjacent), the first *top* groups."""
    groups: list[list[int]] = []
    for i, p in enumerate(pred.tolist()):
        if groups and (p == pred[groups[-1][0]] or (math.isnan(p) and math.isnan(pred[groups[-1][0]]))):
            groups[-1].append(i)
        elif len(groups) < top:
            groups.append([i])
        else:
            break
    return groups


def _count_structure(space: DesignSpace, used: list[str], where: str | None, scanned: Structure | None
                     ) -> Structure | None:
    dim_of = parameter_dims(space)
    if scanned is not None and set(scanned.dim_axis) == {dim_of[p] for p in used}:
        return scanned  # the scan's own (the same used parameters and where): not built twice
    try:
        from ..explore.terms import expression_types
        from ..space.expr import compile_expression

        expr = compile_expression(where, expression_types(space), "--where") if where is not None else None
        return build_structure(space, {dim_of[p] for p in used}, expr, where or "")
    except GpudseError:
        return None


def _simulated_digits(space: DesignSpace, results: pd.DataFrame, response: str) -> np.ndarray | None:
    """Digits of the simulated designs of *results* (ok rows giving every parameter a value of the space)."""
    names = list(space.parameter_names)
    if not set(names) <= set(results.columns) or response not in results.columns:
        return None
    ok = np.isfinite(pd.to_numeric(results[response], errors="coerce").to_numpy(float))
    if "status" in results.columns:
        ok &= results["status"].fillna("").astype(str).str.strip().str.lower().isin(OK_STATUS).to_numpy()
    keys, inside = _positions(space, results, names)
    dim_of = parameter_dims(space)
    out = np.zeros((int((ok & inside).sum()), len(space.radices)), dtype=np.int64)
    for j, p in enumerate(names):
        out[:, dim_of[p]] = keys[ok & inside, j]
    return out


def _merge(space: DesignSpace, used: list[str], best: pd.DataFrame, members: list[list[int]], keys: list[tuple],
           sim: dict, structure: Structure | None, where: str | None, sim_digits: np.ndarray | None,
           notes: list[str]) -> tuple[pd.DataFrame, list[dict[str, list | None]]]:
    """One row per group of equal predictions: its shown design (:mod:`.representative`), the designs
    it stands for, the values each parameter takes in it (``None``: every value), simulated ones."""
    from ..explore.terms import expression_types
    from ..space.expr import compile_expression
    from .representative import Ranks, choose

    dim_of = parameter_dims(space)
    used_dims = sorted({dim_of[p] for p in used})
    expr = compile_expression(where, expression_types(space), "--where") if where is not None else None

    def feasible(d: np.ndarray) -> np.ndarray:
        ok = space.feasible_mask(d)
        return ok & expr.mask(space.columns(d), d.shape[0]) if expr is not None else ok

    digits = _digits(space, best)
    ranks = Ranks.of(space)
    cache: dict = {}
    shown, counts, free, partial = [], [], [], False
    for group in members:
        values: dict[str, set] = {p: set() for p in space.parameter_names}
        total: Any = 0
        for i in group:
            n, dim_values = _group_of(structure, digits[i], cache) if structure is not None else (pd.NA, {})
            total = pd.NA if n is pd.NA or total is pd.NA else total + n
            for p in space.parameter_names:
                d = dim_of[p]
                if d in dim_values and p not in used:
                    values[p].update(int(v) for v in dim_values[d])
                elif structure is not None or p in used:
                    values[p].add(int(digits[i, d]))
        rows = best.iloc[group]

        def enumerate_member(j: int, rows: pd.DataFrame = rows) -> tuple[np.ndarray, bool]:
            got = group_designs(space, used, rows.iloc[[j]], ENUMERATED + 1, where)
            return _digits(space, got.drop(columns="group")), len(got) > ENUMERATED

        pick, more = choose(space, used_dims, digits[group], feasible, enumerate_member, sim_digits, ranks)
        partial |= more
        shown.append(pick)
        counts.append(total)
        entry: dict[str, list | None] = {}
        for p, vals in values.items():
            par = space.parameter(p)
            if len(vals) == par.size > 1:
                entry[p] = None
            elif len(vals) > 1:
                entry[p] = [par.values[v] for v in sorted(vals)]
        free.append(entry)
    if partial:
        notes.append(f"a row's shown design was chosen among the first {ENUMERATED:,} feasible designs (in index "
                     f"order) of a set of designs a constraint couples")
    arr = np.asarray(shown, dtype=np.int64).reshape(-1, len(space.radices))
    out = space.frame(arr)
    out["predicted"] = [best.predicted.iloc[g[0]] for g in members]
    big = any(c is not pd.NA and c >= 2 ** 63 for c in counts)  # (a space beyond 2**63 designs)
    out["designs"] = pd.array(counts, dtype=object if big else "Int64")
    sims = [[sim.get(keys[i], (0, np.nan)) for i in g] for g in members]
    out["simulated"] = [sum(n for n, _ in s) for s in sims]
    out["measured"] = [sum(n * m for n, m in s if n) / max(sum(n for n, _ in s), 1) if any(n for n, _ in s)
                       else np.nan for s in sims]
    index = space.encode(arr) if space.fits_int64 and len(arr) else [space.index(r) for r in
                                                                     out[list(space.parameter_names)].to_dict("records")]
    out["design_index"] = np.asarray(index, dtype=np.int64) if space.fits_int64 else list(index)
    return out, free


# said of a scan whose intervals are calibrated (the Explore page and the report state it beside the rows)
CALIBRATED_NOTE = ("the intervals are calibrated on held-out refits: the model refitted on folds of its training "
                   "rows, with the errors of the held-out rows those refits ranked best (docs/models.md, \"Intervals "
                   "of recommended designs\")")


def _intervals(model: Any, space: DesignSpace, rows: pd.DataFrame, level: float | None, notes: list[str],
               results: pd.DataFrame | None = None, goal: str = "min") -> float | None:
    """Prediction intervals of the shown designs (``lower``, ``upper``) and ``distinguishable``: whether
    a row's interval lies apart from the best row's (NA without intervals; the best row: False).

    The interval of a recommended design is calibrated on held-out rows (:mod:`gpudse_core.model.calibration`:
    the model refitted on folds of its training rows — a learner's own, else *results* — and the residuals
    of the rows those refits ranked best for *goal*); without such rows, the model's own interval
    (:mod:`gpudse_core.model.intervals`), said in a note."""
    rows["lower"], rows["upper"] = np.nan, np.nan
    rows["distinguishable"] = pd.array([pd.NA] * len(rows), dtype="boolean")
    if level is None or not len(rows):
        return None
    X = rows[list(space.parameter_names)]
    if _interpolates(model):  # its residual spread is numerical noise: an interval of zero width
        notes.append("no prediction interval: the fit reproduces its rows (noise-free results), so its "
                     "residual spread says nothing about a new design; simulate these to check them")
        return None
    cal, why = _calibration(model, results)
    if cal is not None:
        from ..model.calibration import calibrated_interval

        iv = calibrated_interval(model, X, cal, level, goal)
        notes.append(CALIBRATED_NOTE)
        flagged = iv["bounded"].to_numpy(dtype=bool)
        held = (np.asarray(model.guarded(X)[2], dtype=bool) if getattr(model, "kind", "") == "stepwise"
                else np.zeros(len(X), dtype=bool))  # held by the envelope, or predicted by the forest alone
        bounded = np.flatnonzero(flagged & ~held)
        if bounded.size:
            notes.append(f"row(s) {', '.join(str(i + 1) for i in bounded)}: the prediction is held at the model's "
                         f"bound (beyond what its training rows support), so the interval spans the whole range "
                         f"the model can predict; simulate to know")
        if held.any():
            by = ("predicted by the model's forest alone" if getattr(model, "fallback", None) is not None
                  else "held to the responses of its nearest training designs")
            notes.append(f"row(s) {', '.join(str(i + 1) for i in np.flatnonzero(held))}: outside the training "
                         f"support, {by}; the interval covers what the nearest training designs measured and what "
                         f"the equation says there, widened by the calibrated ends; simulate to know")
    else:
        iv = _own_interval(model, X, level, notes, why)
        if iv is None:
            return None
    lo, hi = iv["lower"].to_numpy(float), iv["upper"].to_numpy(float)
    rows["lower"], rows["upper"] = lo, hi
    apart = pd.array((lo > hi[0]) | (hi < lo[0]), dtype="boolean")  # intervals that do not overlap the best row's
    apart[~(np.isfinite(lo) & np.isfinite(hi)) | ~(np.isfinite(lo[0]) & np.isfinite(hi[0]))] = pd.NA
    rows["distinguishable"] = apart
    return float(level)


def _calibration(model: Any, results: pd.DataFrame | None) -> tuple[Any, str]:
    """The model's calibration on held-out rows (cached on the model per data), or (None, why not)."""
    from ..model.calibration import MIN_ROWS, calibrate

    data = getattr(model, "train_", None)
    if data is None:
        data = results
    if data is None:
        return None, "no training rows were given (--results, or a workspace's results)"
    response = getattr(model, "response", None)
    if "status" in data.columns:  # a failed simulation is no held-out row
        data = data[data["status"].fillna("").astype(str).str.strip().str.lower().isin(OK_STATUS)]
    if response not in data.columns or any(p not in data.columns for p in model.parameters):
        return None, "the results given lack the model's response or parameters"
    ok = int(pd.to_numeric(data[response], errors="coerce").notna().sum())
    if ok < MIN_ROWS:
        return None, f"fewer than {MIN_ROWS} rows with a response to calibrate on"
    fitted_on = getattr(model, "n", 0) if getattr(model, "train_", None) is None else 0
    if ok < fitted_on:  # refits on other rows would calibrate another model
        return None, (f"the results hold {ok:,} rows with a response, fewer than the {fitted_on:,} the model was "
                      f"fitted on")
    key = int(pd.util.hash_pandas_object(data[[response, *model.parameters]], index=False).sum())
    cached = getattr(model, "_calibration_", None)
    if cached is not None and cached[0] == key:
        return cached[1], ""
    try:
        cal = calibrate(model, data[[response, *model.parameters]])
    except (GpudseError, ValueError) as e:  # explore still answers, with the model's own interval
        return None, f"the refits failed ({e})"
    model._calibration_ = (key, cal)
    return cal, ""


def _interpolates(model: Any) -> bool:
    """A stepwise fit that reproduces its rows (noise-free results, :func:`.headline.interpolation_note`)."""
    if getattr(model, "coefficients", None) is None or getattr(model, "r2", None) is None:
        return False
    from ..model.headline import interpolation_note

    return interpolation_note(model.r2, getattr(model, "n", 0), len(model.coefficients)) is not None


def _own_interval(model: Any, X: pd.DataFrame, level: float, notes: list[str], why: str) -> pd.DataFrame | None:
    """The model's own prediction interval (not calibrated on held-out rows), or None with a note."""
    from ..model.intervals import available, predict_interval

    if not available(model):
        notes.append("this model has no prediction interval (refit it with this version of gpudse)")
        return None
    notes.append(f"the intervals are the model's own, not calibrated on held-out rows: {why}; on recommended "
                 f"designs they cover less than their level (docs/models.md)")
    return predict_interval(model, X, level)


def _digits(space: DesignSpace, frame: pd.DataFrame) -> np.ndarray:
    """Digits of the designs of *frame* (its parameter columns)."""
    if not len(frame):
        return np.zeros((0, len(space.radices)), dtype=np.int64)
    if space.fits_int64 and "design_index" in frame.columns:
        return space.decode(frame["design_index"].to_numpy(dtype=np.int64))
    out = np.zeros((len(frame), len(space.radices)), dtype=np.int64)
    names = list(space.parameter_names)
    keys, _ = _positions(space, frame, names)
    dim_of = parameter_dims(space)
    for j, p in enumerate(names):
        out[:, dim_of[p]] = keys[:, j]
    return out


def group_designs(space: DesignSpace, used: Sequence[str], design: pd.DataFrame, limit: int,
                  where: str | None = None) -> pd.DataFrame:
    """The feasible designs sharing the values of *used* with each row of *design* (a representative
    per group), at most *limit* per group, in index order; one table with ``design_index`` and
    ``group`` (the row of *design* each came from). How "all designs of these rows" are simulated."""
    from ..explore.terms import expression_types
    from ..space.expr import compile_expression

    dim_of = parameter_dims(space)
    expr = compile_expression(where, expression_types(space), "--where") if where is not None else None
    structure = build_structure(space, {dim_of[p] for p in used}, expr, where or "")
    if structure is None:
        raise GpudseError("a constraint couples too many parameters to list the designs of a group; simulate one "
                          "design per row")
    digits = _digits(space, design)
    frames = []
    for i in range(len(design)):
        values = [ax.value_of(digits[i][list(ax.dims)]) for ax in structure.axes]
        if min(values, default=0) < 0:  # not a feasible design (a row edited by hand): no group
            continue
        got = list(structure.completions(np.asarray(values, dtype=np.int64), int(limit)))
        if not got:
            continue
        frame = space.frame(np.asarray([d for _, d in got], dtype=np.int64))
        frames.append(frame.assign(design_index=[int(k) for k, _ in got], group=i))
    if not frames:
        return pd.DataFrame(columns=[*space.parameter_names, "design_index", "group"])
    return pd.concat(frames, ignore_index=True)


def predicted_vs_simulated(chosen: dict, table: pd.DataFrame, response: str) -> pd.DataFrame:
    """The designs chosen from the best rows (*chosen*: ``rows``, a list of per-design dicts with the
    parameters, ``predicted``, ``lower``, ``upper``) beside what the simulator gave (*table*: the
    campaign's points in the same order, failed ones included with their ``status``): per design its
    parameters, the prediction and interval, the simulated response, the relative error and whether
    the simulation fell inside the interval (``yes``/``no``; ``failed`` for a failed simulation)."""
    rows = pd.DataFrame(chosen["rows"])
    out = rows.copy()
    sim = np.full(len(rows), np.nan)
    status = ["pending"] * len(rows)
    if len(table):
        n = min(len(table), len(rows))
        if response in table.columns:
            sim[:n] = pd.to_numeric(table[response], errors="coerce").to_numpy(float)[:n]
        if "status" in table.columns:
            status[:n] = table["status"].astype(str).tolist()[:n]
    out["simulated"] = sim
    with np.errstate(invalid="ignore", divide="ignore"):
        out["error"] = sim / out["predicted"].to_numpy(float) - 1
    inside = (sim >= out["lower"].to_numpy(float)) & (sim <= out["upper"].to_numpy(float))
    has = np.isfinite(out["lower"].to_numpy(float)) & np.isfinite(out["upper"].to_numpy(float))
    out["in interval"] = ["failed" if s == "failed" else "pending" if not np.isfinite(v) else
                          "no interval" if not h else ("yes" if ok else "no")
                          for s, v, ok, h in zip(status, sim, inside, has)]
    return out

