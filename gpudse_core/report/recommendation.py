"""The words beside a recommendation: what a design review needs next to the best designs of a scan, said
once for the Explore page and the HTML report — the model's accuracy out of sample, how to read the rows
(``designs``, ``any``, the shown design, ``distinguishable from best``, the interval's level), and every
note the scan made (intervals calibrated on held-out refits or not, rows outside the training data where
the model extrapolates, predictions held at a bound, rows left out because a design failed)."""

from __future__ import annotations

from typing import Any

from .. import fmt


def accuracy(headline: Any) -> str | None:
    """The model's out-of-sample accuracy (:class:`gpudse_core.model.headline.Headline`), one sentence."""
    if headline is None:
        return None
    return f"The model's accuracy out of sample: {headline.text()}."


def reading(scan: Any) -> str | None:
    """How to read the rows of *scan* (a :class:`~gpudse_core.explore.results.ScanResult` grouped by
    prediction); None for a scan stored before rows were grouped."""
    if scan.shown is None:
        return None
    text = (f"The model reads {', '.join(scan.used)}: each row stands for every design with its prediction "
            f"(designs: how many; any: every value of the parameter gives it) and shows the design nearest a "
            f"simulated one, then nearest the middle of the space (docs/cli.md). distinguishable from best: the "
            f"interval lies apart from the best row's.")
    if scan.level is not None:
        text += f" The interval is where a simulation is expected to land ({fmt.fmt_number(100 * scan.level)} %)."
    return text


def notes(scan: Any) -> list[str]:
    """The scan's notes, each a sentence, and the rows left out because a design of theirs failed."""
    out = [n[:1].upper() + n[1:] + ("" if n.endswith(".") else ".") for n in scan.notes if n]
    if scan.left_out:
        out.append(f"{fmt.fmt_count(scan.left_out)} row(s) left out: a design of theirs failed to simulate.")
    return out


def lines(scan: Any, headline: Any) -> list[str]:
    """Everything said beside the best designs, in the Explore page's order: accuracy, the notes, then
    how to read the rows (just above them)."""
    return [t for t in [accuracy(headline), *notes(scan), reading(scan)] if t]


def shown_designs(scan: Any, parameters: list[str]) -> Any:
    """One design per row of *scan* — the shown design, the one "Simulate these" would run — with its
    prediction and interval, best first: what to simulate elsewhere when no simulator is at hand."""
    best = scan.best
    keep = [p for p in parameters if p in best.columns] + [c for c in ("predicted", "lower", "upper")
                                                             if c in best.columns]
    return best[keep].reset_index(drop=True).rename_axis("row").reset_index().assign(row=lambda d: d["row"] + 1)


def cost_label(cost: str | None, space: Any) -> str:
    """The Pareto front's cost as its axis names it: the sum of levels, a parameter's display name, or as given."""
    if cost == "levels":
        return "sum of parameter levels"
    return space.parameter(cost).display if cost in space.parameter_names else str(cost or "cost")


def cost_note(cost: str | None) -> str | None:
    """What the default cost of the Pareto front is (None for a parameter: its axis says it)."""
    if cost != "levels":
        return None
    return ("Sum of parameter levels: each numeric parameter's value ranked among its values and scaled to 0 … 1 "
            "(its smallest value 0, its largest 1), summed over the parameters — a stand-in for a hardware budget.")


def caution(scan: Any, model: Any, parameters: list[str]) -> str | None:
    """A warning when the best row itself lies where the model extrapolates (outside what its training rows
    cover, or held at its bound): the recommendation is then the model's weakest prediction, not its best
    guess, and a review must not take it without a simulation. None when the best row is inside."""
    details = getattr(model, "predict_details", None)
    best = scan.best
    if details is None or not len(best) or any(p not in best.columns for p in parameters):
        return None
    det = details(best[parameters])
    why = det["extrapolation"].astype(str).to_numpy()
    held = det["bounded"].astype(bool).to_numpy()
    if not (why[0] or held[0]):
        return None
    outside = int(((why != "") | held).sum())
    reason = why[0] or "its prediction is held at the model's bound"
    return (f"The best row lies where the model extrapolates ({reason}), as do {outside} of the {len(best)} rows "
            f"shown: these predictions are the model's weakest. Simulate the designs before recommending them.")


def numbered(shown: Any) -> Any:
    """The shown best designs with their row number first, the number the notes ("row(s) 1, 2") and
    "Simulate these" ("1: 102,329 cycles") refer to."""
    if "row" in shown.columns:
        return shown
    return shown.reset_index(drop=True).rename_axis("row").reset_index().assign(row=lambda d: d["row"] + 1)
