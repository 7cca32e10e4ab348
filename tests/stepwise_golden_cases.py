"""The data sets and settings of the stepwise search's golden fixture (tests/fixtures/stepwise_golden.json).

Stargazer Algorithm 1 (the search, with the robust default's revisit, look-ahead, prune, one-row guard,
Huber rounds, level cells and the automatic response transform) fitted on the data the tests already use:
the R reference cases (tests/fixtures/stargazer_reference.json), the authors' matrix-multiply training half,
the built-in kernels drawn as benchmarks/bench_accuracy.py draws them, the three benchmark_hub convolution
tables (300 random ``ok`` rows each) and a noise-free kernel. :func:`summary` is what the fixture stores of a
fit: its terms, coefficients, settings, trace rows (Table 1) and notes, and the steps the fit showed as it ran.

Regenerate deliberately (a change to the model's results):
``PYTHONPATH=$PWD python tests/fixtures/make_stepwise_golden.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
FIXTURE = ROOT / "tests" / "fixtures" / "stepwise_golden.json"


def _reference_cases() -> dict:
    return json.loads((ROOT / "tests" / "fixtures" / "stargazer_reference.json").read_text())["cases"]


def _kernel(kernel: str, seed: int, noise: float = 0.01) -> pd.DataFrame:
    """300 uniform samples of the Stargazer space simulated with 1 % noise (bench_accuracy's kernel_data)."""
    from gpudse_core import load_preset, sample
    from gpudse_core.sim.simulator import simulate

    pts = sample(load_preset("stargazer"), 300, seed=seed).points
    return pts.assign(cycles=simulate(pts, kernel, noise=noise, seed=seed + 1).cycles.to_numpy())


def _hub(gpu: str, seed: int = 0) -> pd.DataFrame:
    """300 random rows of a benchmark_hub convolution table whose status is ``ok`` (bench_accuracy's hub_data),
    without the columns constant in it."""
    d = pd.read_csv(SHARED / "benchmark_hub" / f"convolution_{gpu}.csv")
    d = d[d["status"] == "ok"].drop(columns="status").dropna(subset=["time_ms"]).reset_index(drop=True)
    d = d.sample(300, random_state=seed).reset_index(drop=True)
    return d[[c for c in d.columns if d[c].nunique() > 1]]  # the table's fixed filter size and cmem setting


def _exact() -> pd.DataFrame:
    """A response the spline terms follow exactly (no noise, no residual spread): the robust rounds and the
    cells have nothing to do."""
    rng = np.random.default_rng(4)
    d = pd.DataFrame({"a": rng.choice([1, 2, 3, 4, 5], 60), "b": rng.choice([1, 2, 4, 8], 60),
                      "c": rng.choice([10, 20, 30], 60)})
    return d.assign(y=3.0 + 2.0 * d.a + 0.5 * np.log2(d.b) + 0.01 * d.c)


def _matrix() -> pd.DataFrame:
    return pd.read_csv(SHARED / "stargazer" / "matrix-training.csv")


Case = tuple[str, Callable[[], pd.DataFrame], str, dict[str, Any], bool]  # (name, data, response, settings, shared)


def cases() -> Iterator[Case]:
    """Every case: name, a function giving its data, response column, fit_stepwise settings, needs ../shared."""
    from gpudse_core.choices import KERNELS
    from gpudse_core.model.stepwise import ALGORITHM1_SETTINGS, PAPER_SETTINGS

    for name, c in sorted(_reference_cases().items()):
        def data(c=c):
            return pd.DataFrame(c["data"])

        paper = {**PAPER_SETTINGS, "theta": c["theta"], "phi": c["phi"], "threshold_rule": c["rule"]}
        yield f"reference/{name}/paper", data, c["response"], paper, False
        yield f"reference/{name}/algorithm1", data, c["response"], dict(ALGORITHM1_SETTINGS), False
        yield f"reference/{name}/default", data, c["response"], {}, False
    yield "matrix/paper", _matrix, "runtime", dict(PAPER_SETTINGS), True
    yield "matrix/default", _matrix, "runtime", {}, True
    yield "matrix/algorithm1", _matrix, "runtime", dict(ALGORITHM1_SETTINGS), True
    for k in KERNELS:
        yield f"kernel/{k}", (lambda k=k: _kernel(k, 0)), "cycles", {}, False
    yield "exact/additive", _exact, "y", {}, False
    yield "kernel/matMul/noise-free", (lambda: _kernel("matMul", 3, noise=0.0)), "cycles", {}, False
    for gpu in ("A100", "A4000", "MI250X"):
        yield f"hub/{gpu}", (lambda g=gpu: _hub(g)), "time_ms", {}, True
    def a4000():
        return _hub("A4000")

    variants = {
        "robust-off": {"robust": "none"},
        "cells-off": {"cells": False},
        "row-guard-off": {"row_guard": False},
        "robust-cells-guard-off": {"robust": "none", "cells": False, "row_guard": False},
        "log-least-squares": {"response_transform": "log", "robust": "none", "cells": False},
    }
    for v, s in variants.items():
        yield f"hub/A4000/{v}", a4000, "time_ms", s, True
    yield from _planted()
    def aes():
        return _kernel("AES", 1)

    search = {
        "aic": {"criterion": "aic", "theta": 2.0, "phi": 2.0, "phi3": 2.0},
        "bic": {"criterion": "bic", "theta": 2.0, "phi": 2.0, "phi3": 2.0, "robust": "none", "cells": False},
        "adjr2-compare-adj": {**ALGORITHM1_SETTINGS, "compare": "adj_r2"},
        "relative": {**ALGORITHM1_SETTINGS, "threshold_rule": "relative", "theta": 0.001, "phi": 0.001},
        "full-order3": {"interactions": "full", "robust": "none", "cells": False, "response_transform": "log"},
        "order2-no-lookahead-revisit-prune": {"max_order": 2, "lookahead": False, "revisit": False, "prune": False,
                                              "robust": "none", "cells": False},
        "forced": {"forced": ["simd:blk", "smp"], "robust": "none", "cells": False},
        "forced-no-search": {"forced": ["simd:blk"], "search": False},
        "max-terms": {"max_terms": 4},
        "sqrt": {"response_transform": "sqrt", "cells": False},
    }
    for v, s in search.items():
        yield f"kernel/AES/{v}", aes, "cycles", s, False


def _planted() -> Iterator[Case]:
    """The known structures the layers' own tests plant: a level corner (cells), a lone slow design (the
    one-row guard) and a few very slow designs (the Huber rounds)."""
    from test_huber_fit import slow_cells
    from test_level_cells import corner3, widths
    from test_row_guard import lone_corner

    yield "cells/widths0", (lambda: widths(300, 0)[0]), "y", {}, False
    yield "cells/widths0/least-squares", (lambda: widths(300, 0)[0]), "y", {"robust": "none"}, False
    for v, s in {"default": {}, "order2": {"max_order": 2}, "max-terms": {"max_terms": 3}}.items():
        yield f"cells/corner3/{v}", (lambda: corner3(400, 2)), "t", s, False
    for v, s in {"default": {}, "guard-off": {"row_guard": False}}.items():
        yield f"row-guard/lone-corner/{v}", (lambda: lone_corner(0)[0]), "y", s, False
    for v, s in {"default": {}, "least-squares": {"robust": "none"}}.items():
        yield f"huber/slow-cells/{v}", (lambda: slow_cells(300, 0)[0]), "y", s, False


def _floats(v: Any) -> Any:
    """JSON-safe: NaN and infinities as strings (compared as such)."""
    if isinstance(v, float) and not np.isfinite(v):
        return repr(v)
    if isinstance(v, dict):
        return {str(k): _floats(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_floats(x) for x in v]
    if isinstance(v, np.generic):
        return _floats(v.item())
    return v


def summary(model: Any, shown: list | None = None) -> dict:
    """What the fixture keeps of a fitted model (and of the steps the fit showed as it ran, *shown*)."""
    return _floats({"terms": list(model.terms), "coefficients": [float(c) for c in model.coefficients],
                    "r2": model.r2, "adj_r2": model.adj_r2, "transform": model.transform,
                    "settings": model.settings, "trace": model.trace, "notes": list(model.notes),
                    "shown": shown or []})


def fit(data: pd.DataFrame, response: str, settings: dict) -> dict:
    """The fit's :func:`summary`, or ``{"error": message}`` when the fit refuses the data."""
    from gpudse_core.model.stepwise import FitError, fit_stepwise

    shown: list = []  # every step the fit yields (the dashboard's live trace), in order

    def show(s: Any) -> None:
        shown.append([s.step, s.kind, s.chosen, s.accepted, len(s.terms), s.r2, s.adj_r2])

    try:
        return summary(fit_stepwise(data, response, callback=show, **settings), shown)
    except FitError as e:
        return {"error": str(e)}
