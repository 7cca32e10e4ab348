"""The built-in example a new workspace can start from: Stargazer's space (Table 2), 300 uniform samples
(§6.2), the built-in simulator's matMul with 1 % noise, and Algorithm 1's model — every stage current,
so each page has something to show on a first visit without a simulator, a server or an upload."""

from __future__ import annotations

from typing import Any

from .fits import canonical_settings, fit_into

PRESET = "stargazer"
SAMPLES = 300  # Stargazer §6.2 uses 300 samples per application
SEED = 1
KERNEL = "matMul"
NOISE = 0.01


def fill_example(ws: Any) -> dict[str, Any]:
    """Write the example's four stages into *ws* in one transaction; returns their StageValues."""
    from ..model.registry import fit_model
    from ..model.stepwise import StepwiseRegression
    from ..sim.simulator import simulate
    from ..space.presets import load_preset
    from ..space.sampling import sample

    space = load_preset(PRESET)
    samples = sample(space, SAMPLES, seed=SEED)
    points = samples.table()
    results = points.join(simulate(points, KERNEL, noise=NOISE, seed=SEED))
    # the robust defaults (response scale chosen by leave-one-out error): later fits on the fit page
    # start from the example's settings, so the example carries the product's measured default
    # fingerprinted like a fit from the Fit page (fits.fit_into), so pressing Fit with these settings reuses it
    params = list(space.parameter_names)
    model = fit_model("stepwise", results, "cycles", params, transform=None)
    with ws.batch():
        out = {"space": ws.set_space(space, "built-in example: Stargazer Table 2"),
               "samples": ws.set_samples(samples, f"{SAMPLES} uniform samples, seed {SEED}"),
               "results": ws.set_results(results, "cycles", f"built-in simulator, {KERNEL}, {NOISE:.0%} noise",
                                         inputs=("space", "samples"))}
        origin = (f"stepwise (Algorithm 1), robust defaults, {model.transform} response chosen by leave-one-out "
                  f"error" + (", Huber fit" if model.robust else ""))
        settings = canonical_settings(StepwiseRegression().get_params(), "cycles", params)
        out["model"] = fit_into(ws, out["results"], "stepwise", settings,
                                lambda: model, origin).stored
        return out
