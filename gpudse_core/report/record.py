"""The report as the design review's record: every setting that produced each number, each search study,
each "Simulate these" check and the settings of the runs compared.

:func:`settings_table` says what produced the report's numbers, stage by stage: the samples (method,
seed, size), the results (simulator or upload, kernel, measurement noise), the model (its kind, the
response transform, and for Stargazer's Algorithm 1 the criterion, θ, φ, φ3, the knots, the
interactions, the Huber rounds and the level cells; a learner's own settings). :func:`model_settings`
is the one reading of a model's settings, which the comparison's runs keep too
(:func:`gpudse_core.report.compare.snapshot`). :func:`search_items` is a search study as the Search page
shows it (goal or objective, budget, the best design and its value or the Pareto front, the history
as a chart and a table); :func:`check_items` is every "Simulate these" check
(:class:`~gpudse_core.explore.checks.SimulatedCheck`) with the prediction, its interval and the
simulated value per design. Numbers go through :mod:`gpudse_core.fmt`; the HTML report escapes every text.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import fmt

SETTING_COLUMNS = ("part", "setting", "value")
CRITERIA = {"ftest": "partial F-test (Lee & Brooks eq. 10)", "adjr2": "adjusted R² (Stargazer §5.2)",
            "aic": "AIC", "bic": "BIC"}  # what decides whether a candidate term enters


def _v(value: Any) -> str:
    """A setting's value as the report shows it (the formatter's numbers, lists joined, none as –)."""
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_v(v) for v in value) or "–"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_v(v)}" for k, v in value.items()) or "–"
    return fmt.fmt_value(value) if isinstance(value, (int, float)) else str(value)


def _robust(model: Any, s: dict) -> str:
    if s.get("robust", "none") in ("none", None):
        return "none (least squares)"
    from ..model.stepwise.robust import ROBUST_ROUNDS

    used = getattr(model, "robust", None)
    if used:
        return (f"Huber (k = {fmt.fmt_value(used.get('k'))}), {ROBUST_ROUNDS} rounds: round "
                f"{fmt.fmt_value(used.get('rounds'))} kept")
    return f"Huber, {ROBUST_ROUNDS} rounds: least squares kept"


def model_settings(model: Any) -> list[tuple[str, str]]:
    """``(setting, value)`` pairs of what a fitted model was fitted with: its kind and response transform
    (chosen and asked for), and Algorithm 1's criterion, thresholds, knots, interactions, robust rounds
    and level cells — or a learner's own settings."""
    from ..model.registry import model_kind

    s = dict(getattr(model, "settings", None) or {})
    kind = model_kind(model)
    asked = s.get("response_transform")
    transform = str(getattr(model, "transform", "–"))
    rows = [("kind", "stepwise (Stargazer Algorithm 1)" if kind == "stepwise" else kind),
            ("response", str(getattr(model, "response", "–"))),
            ("response transform", transform + (f" (asked: {asked})" if asked and asked != transform else ""))]
    if kind != "stepwise":
        return rows + [(str(k), _v(v)) for k, v in sorted(s.items()) if k not in ("response", "params")]
    if s.get("reference"):
        rows.append(("implementation", "Stargazer 1.0 as released (R's natural splines)"))
    rule = s.get("threshold_rule")
    crit = s.get("criterion")
    rows += [("criterion", _v(crit) + (f": {CRITERIA[crit]}" if crit in CRITERIA else "")),
             ("θ (main effects)", _v(s.get("theta")) + (f", {rule}" if rule else "")),
             ("φ (pairs)", _v(s.get("phi"))), ("φ3 (three-way terms)", _v(s.get("phi3"))),
             ("knots", f"{_v(s.get('knots'))} ({_v(s.get('knot_placement'))})"),
             ("interactions", f"{_v(s.get('interactions', getattr(model, 'interactions', None)))}, "
                              f"up to order {_v(s.get('max_order'))}"),
             ("robust", _robust(model, s)),
             ("level cells", _v(s.get("cells"))),
             ("revisit, look-ahead, prune", ", ".join(_v(s.get(k)) for k in ("revisit", "lookahead", "prune")))]
    return rows


def _samples_rows(sv: Any) -> list[tuple[str, str]]:
    value = sv.value
    rows = [("origin", sv.origin or "–")]
    if hasattr(value, "method"):
        rows += [("method", _v(value.method)), ("seed", _v(value.seed)),
                 ("points", fmt.fmt_count(len(value.indices)) if hasattr(value, "indices") else "–")]
    return rows


def _results_rows(ws: Any, sv: Any) -> list[tuple[str, str]]:
    from ..workspace.provenance import results_provenance

    prov = results_provenance(ws, sv)
    rows = [("origin", sv.origin or "–")]
    if prov is not None:
        noise = ("not known" if prov.noise is None else "none (noise-free)" if prov.noise == 0
                 else f"σ = {fmt.fmt_percent(prov.noise)} (log-normal)")
        rows += [("simulator", prov.simulator), ("kernel", prov.kernel or "–"), ("measurement noise", noise),
                 ("rows", fmt.fmt_count(prov.rows)), ("response", str(prov.response))]
    if getattr(sv.value, "app_column", None):
        rows.append(("applications in column", str(sv.value.app_column)))
    if sv.note and not sv.partial:  # an upload's checks: the rows and columns they left out, and why
        rows.append(("upload checks", str(sv.note)))
    return rows


def upload_note(report: Any) -> str:
    """What an upload's checks kept and left out (a :class:`gpudse_core.sim.upload.UploadReport`), for the
    results' record: failed configurations dropped for a missing response stay on the record."""
    parts = [f"kept {fmt.fmt_count(report.rows_kept)} of {fmt.fmt_count(report.rows_in, 'rows')}"]
    return "; ".join(parts + [f"{p.kind}: {p}" for p in report.problems])


def settings_table(ws: Any, results_sv: Any, model_sv: Any, left_out: Any = ()) -> pd.DataFrame:
    """What produced the report's numbers: one row per setting, by part (samples, results, model) with
    the version it belongs to (*results_sv*: the results the model was fitted on; *left_out*: stale
    parts, not described)."""
    from ..workspace.stages import title

    rows: list[dict] = []

    def add(part: str, sv: Any, pairs: list[tuple[str, str]]) -> None:
        rows.extend({"part": f"{title(part)} v{sv.version}", "setting": k, "value": v} for k, v in pairs)

    samples = ws.get("samples")
    if samples.value is not None and "samples" not in left_out:
        add("samples", samples, _samples_rows(samples))
    if results_sv is not None and results_sv.value is not None:
        add("results", results_sv, _results_rows(ws, results_sv))
    if model_sv is not None and model_sv.value is not None and "model" not in left_out:
        pairs = model_settings(model_sv.value)
        if results_sv is not None and "results" in model_sv.inputs:
            pairs.append(("fitted on", f"results v{model_sv.inputs['results'].version}"))
        add("model", model_sv, pairs + [("origin", model_sv.origin or "–")])
    return pd.DataFrame(rows, columns=list(SETTING_COLUMNS))


# ---- a search study --------------------------------------------------------------------------------------
def search_simulator(source: str) -> str:
    """The simulator a study's *source* names: the built-in simulator runs noise-free in a search."""
    from ..sim.campaign import AnalyticalBackend

    if ", kernel " in source:
        noise = AnalyticalBackend().noise
        return ("built-in simulator, kernel " + source.split(", kernel ", 1)[1]
                + (", noise-free" if noise == 0 else f", {fmt.fmt_percent(noise)} noise"))
    if ", mgpusim " in source:
        return "MGPUSim, " + source.split(", mgpusim ", 1)[1]
    if ", command " in source:
        return "external simulator, command " + source.split(", command ", 1)[1]
    return source or "–"


def _batch_seen(study: Any) -> str:
    """The designs per round after the initial sample, read off the history (``gpudse search`` does not
    store its --batch with the study)."""
    sizes = pd.Series([t.round for t in study.trials if t.round > 0]).value_counts()
    return f"{fmt.fmt_count(int(sizes.max()))} per round (from the history)" if len(sizes) else "–"


def search_settings_table(study: Any) -> pd.DataFrame:
    """The study's settings as ``setting, value`` rows."""
    s = study.settings
    res = study.result()
    initial = s.get("initial")
    goal = {"min": "minimise", "max": "maximise", "accuracy": "learn the response (accuracy)",
            "pareto": "Pareto front against a cost"}.get(study.goal, study.goal)
    rows = [("goal", goal), ("objective", study.objective or f"the response, {study.response}")
            if study.goal in ("min", "max") else ("response", study.response)]
    if study.cost:
        rows.append(("cost", study.cost))
    rows += [("simulator", search_simulator(study.source)),
             ("space", study.source.split(",", 1)[0].removeprefix("space ") if study.source.startswith("space ")
              else "–"),
             ("budget", fmt.fmt_count(s.get("budget"), "simulations")),
             ("batch", _v(s.get("batch")) if s.get("batch") else _batch_seen(study)),
             ("initial sample", (fmt.fmt_count(initial, "designs") if initial else "default size")
              + f", {s.get('initial_method') or 'uniform'}"),
             ("seed", _v(s.get("seed"))), ("acquisition", _v(s.get("acquisition"))),
             ("surrogate", _v(s.get("surrogate") or "forest")),
             ("simulated", f"{fmt.fmt_count(len(study.trials))} ({fmt.fmt_count(res.failed, 'failed')})"),
             ("stopped", study.stopped or "not yet: stored while it ran")]
    return pd.DataFrame(rows, columns=["setting", "value"])


def history_table(study: Any) -> pd.DataFrame:
    """Every simulation of the study in order: round, the model version that chose it, the design, the
    value (and the simulated response under an objective, the cost of a Pareto search), the predicted
    value and calibrated interval it was proposed with (:mod:`gpudse_core.search.intervals`), its status."""
    from ..model.coverage import interval_fields

    intervals = any(t.lower is not None for t in study.trials)
    rows = []
    for t in study.trials:
        row = {"simulation": t.number + 1, "round": t.round, "model version": t.model_version, **t.design}
        if t.measured is not None or study.objective:
            row[study.response] = t.measured
            row["objective"] = t.value
        else:
            row[study.response] = t.value
        if t.cost is not None:
            row["cost"] = t.cost
        if intervals:  # the proposal's predicted value and calibrated interval, made before it was simulated
            f = interval_fields(t)
            row.update({k: f[k] for k in ("predicted", "lower", "upper")})
            row["inside"] = None if f["inside"] is None else ("yes" if f["inside"] else "no")
        row["status"] = t.status if not t.error else f"{t.status}: {t.error}"
        rows.append(row)
    return pd.DataFrame(rows)


def _valued(name: str, value: Any) -> str:
    """``167,634 cycles`` for a response with a unit, ``ipc 1.234`` for one without."""
    unit = fmt.response_unit(name)
    return fmt.fmt_number(value, unit) if unit else f"{name} {fmt.fmt_number(value)}"


def search_items(study: Any) -> list:
    """The report's items for a search study (see the module docstring)."""
    from ..model.coverage import coverage_text
    from . import figures
    from .plaintext import chart as plain

    units = {study.response: fmt.response_unit(study.response)} if fmt.response_unit(study.response) else {}
    items: list = [("The search's settings", search_settings_table(study))]
    best = study.best()
    if best is not None:
        design = ", ".join(f"{k} = {fmt.fmt_value(v)}" for k, v in best.design.items())
        value = (f"objective {fmt.fmt_number(best.value)}" + (f" at {_valued(study.response, best.measured)}"
                                                             if best.measured is not None else "")
                 if study.objective else _valued(study.response, best.value))
        items.append(("text", f"Best design: {design}; {value} (simulation {best.number + 1}, round {best.round})."))
    elif study.goal == "pareto":
        front = study.result().front()
        if front:
            table = pd.DataFrame([{"cost": t.cost, study.response: t.value, **t.design} for t in front])
            items.append(("Pareto front (simulated)", table, units))
    if study.trials:
        valued = plain(study.response) if not study.objective else "objective"  # a response named by its user
        items.append(figures.search_progress([t.value for t in study.trials], [t.round for t in study.trials],
                                             valued, maximize=study.goal == "max"))
        covered = coverage_text(study.trials)
        if covered:
            items.append(("text", f"Intervals on the proposals (the value the model predicted for each design it "
                                  f"proposed and a calibrated interval, before simulating it): {covered}."))
        shown = {**units, **{c: units[study.response] for c in ("predicted", "lower", "upper")
                             if units and not study.objective}}
        items.append(("History: every simulation", history_table(study), shown))
    return items


# ---- "Simulate these" checks -----------------------------------------------------------------------------
def checks(ws: Any) -> list:
    """Every "Simulate these" check of the workspace, oldest first (:class:`SimulatedCheck`); a campaign
    whose record cannot be read is given as ``(name, why)``."""
    from ..errors import GpudseError
    from ..explore.checks import EXPLORE_ORIGIN, SimulatedCheck
    from ..workspace.campaigns import campaign_table

    model = ws.get("model")
    response = model.value.response if model.value is not None else "cycles"
    out: list = []
    for c in reversed(ws.campaigns()):  # newest first in the listing
        if isinstance(c.spec, dict) and c.spec.get("chosen_by") == EXPLORE_ORIGIN:
            try:
                out.append(SimulatedCheck.of(c.name, c.spec, campaign_table(ws, c.name, include_failed=True),
                                             response))
            except GpudseError as e:
                out.append((c.name, str(e)))
    return out


def check_items(found: list, response: str) -> list:
    """A table per check: each design's prediction, its interval, the simulated value, the error and
    whether it fell inside; a sentence says how many did."""
    unit = fmt.response_unit(response)
    units = {c: unit for c in ("predicted", "lower", "upper", "simulated")} if unit else {}
    items: list = []
    for c in found:
        if isinstance(c, tuple):
            items.append(("text", f"Check {c[0]}: cannot be read ({c[1]})."))
            continue
        table = c.table.drop(columns=[k for k in ("why",) if k in c.table.columns and not c.table[k].any()])
        table = table.assign(group=table["group"] + 1).rename(columns={"group": "best row"})
        scan = f" of the best designs of scan v{c.scan_version}" if c.scan_version else ""
        items.append(("text", f"Check {c.campaign}{scan} on {c.backend or 'the simulator'}: "
                              f"{fmt.fmt_count(c.simulated)} of {fmt.fmt_count(len(c.table), 'designs')} simulated, "
                              f"{fmt.fmt_count(c.inside)} of {fmt.fmt_count(c.judged)} inside the prediction's "
                              f"interval."))
        items.append((f"Predicted against simulated ({c.campaign})", table, units, {"error": "fraction"}))
    return items


# ---- runs compared ---------------------------------------------------------------------------------------
def runs_settings_table(cmp: Any) -> pd.DataFrame:
    """One row per setting of each compared run: what produced it (workspace, model version, results)
    and the model's settings as it was fitted (a run stored before runs kept them: its origin only)."""
    rows: list[dict] = []
    for r in cmp.runs:
        pairs = [("workspace", r.workspace), ("model version", f"v{r.version}"), ("results", r.results or "–"),
                 ("model origin", r.origin or "–")]
        pairs += [(k, v) for k, v in (getattr(r, "settings", None) or ())]
        rows += [{"run": r.label, "setting": k, "value": v} for k, v in pairs]
    return pd.DataFrame(rows, columns=["run", "setting", "value"])
