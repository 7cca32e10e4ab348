"""The models by name (their *kind*), and fitting one of them (every kind but ``auto``).

``stepwise`` is the robust default interpretable model (Stargazer Algorithm 1 with the estimator's
defaults), ``paper`` the stepwise model with Stargazer's settings as written, ``ebm``,
``forest``, ``boosting``, ``hybrid`` the learners of :mod:`.learners`. A stepwise name may end in
``+2way`` or ``+3way`` to set the search's highest interaction order (what cross-validation tries,
:mod:`.auto`); without it the model's own order applies. :mod:`.registry` adds ``auto`` and the
model files on top of this module.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..choices import MODEL_KINDS
from .learners import fit_learner, stepwise_fit
from .stepwise import FitError, check_response

ORDERS = {"+2way": 2, "+3way": 3}


def split_name(name: str) -> tuple[str, int | None]:
    """``stepwise+3way`` → (``stepwise``, 3); ``paper`` → (``paper``, None: the model's own order)."""
    for suffix, order in ORDERS.items():
        base = name.removesuffix(suffix)
        if base != name:
            if base not in ("stepwise", "paper"):
                raise FitError(f"unknown model {name!r}: only stepwise and paper take {suffix}")
            return base, order
    if name not in MODEL_KINDS:
        raise FitError(f"unknown model {name!r}; choose {', '.join(MODEL_KINDS)}")
    return name, None


def fit_kind(name: str, data: pd.DataFrame, response: str, params: Sequence[str] | None = None, *,
             transform: str | None = "log", seed: int = 0, stepwise_kw: Mapping[str, Any] | None = None,
             callback: Callable | None = None) -> Any:
    """Fit the model called *name* (any kind but ``auto``) on a results table. *stepwise_kw* (θ, φ,
    knots …, :func:`.learners.stepwise_settings`) and *callback* (one call per trace step) apply to the
    stepwise models; *transform* None is the stepwise model's own choice (leave-one-out error)."""
    base, order = split_name(name)
    check_response(data, response)
    params = list(params) if params else [c for c in data.columns if c != response]
    missing = [p for p in params if p not in data.columns]
    if missing:
        raise FitError(f"unknown column(s) {', '.join(map(repr, missing))}; columns: "
                       f"{', '.join(map(str, data.columns))}")
    if base == "auto":
        raise FitError("auto is the choice among the kinds by cross-validation: fit it with registry.fit_model")
    if base in ("stepwise", "paper"):
        kw = dict(stepwise_kw or {})
        if callback is not None:
            kw["callback"] = callback
        order = kw.pop("max_order", None) if order is None else order  # a +2way/+3way name wins
        return stepwise_fit(data[params + [response]], response, base, order, transform, **kw)
    return fit_learner(base, data, response, params, learner_transform(transform, data[response]), seed)


def learner_transform(transform: str | None, y: Any) -> str:
    """The response scale of a model without its own choice (trees, EBM): the
    given one, or for ``auto``/``None`` log when every response is positive (relative errors are what
    design-space exploration reports; runtimes span orders of magnitude), else none."""
    if transform not in (None, "auto"):
        return transform
    v = pd.to_numeric(pd.Series(np.asarray(y).ravel()), errors="coerce").to_numpy(dtype=float)
    return "log" if v.size and np.all(v > 0) else "none"
