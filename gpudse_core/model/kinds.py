"""The model kinds by name, and fitting one of them (every kind but ``auto``).

``stepwise`` is the robust default interpretable model (Stargazer Algorithm 1 with the settings of
:mod:`.learners`), ``paper`` the stepwise model with Stargazer's settings as written, ``ebm``,
``forest``, ``boosting``, ``hybrid`` the learners of :mod:`.learners`. A stepwise name may end in
``+2way`` or ``+3way`` to set the search's highest interaction order (what cross-validation tries,
:mod:`.auto`); without it the preset's own order applies. :mod:`.registry` adds ``auto`` and the
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
    """``stepwise+3way`` → (``stepwise``, 3); ``paper`` → (``paper``, None: the preset's own order)."""
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
              transform: str = "log", seed: int = 0, stepwise_kw: Mapping[str, Any] | None = None,
              callback: Callable | None = None) -> Any:
    """Fit the model called *name* (any kind but ``auto``) on a results table. *stepwise_kw* (θ, φ,
    knots …) and *callback* (one call per trace step) apply to the stepwise kinds."""
    base, order = split_name(name)
    check_response(data, response)
    params = list(params) if params else [c for c in data.columns if c != response]
    if base == "auto":
        raise FitError("auto is the choice among the kinds by cross-validation: fit it with registry.fit_model")
    if base in ("stepwise", "paper"):
        kw = dict(stepwise_kw or {})
        if callback is not None:
            kw["callback"] = callback
        # the robust stepwise model chooses its own transform ("auto"/None); the paper preset is compared
        # on the learners' scale
        tf = transform if base == "stepwise" else learner_transform(transform, data[response])
        return stepwise_fit(data[params + [response]], response, base, order, tf, **kw)
    return fit_learner(base, data, response, params, learner_transform(transform, data[response]), seed)


def learner_transform(transform: str | None, y: Any) -> str:
    """The response scale of a model without its own choice (trees, EBM, the paper preset): the
    given one, or for ``auto``/``None`` log when every response is positive (relative errors are what
    design-space exploration reports; runtimes span orders of magnitude), else none."""
    if transform not in (None, "auto"):
        return transform
    v = pd.to_numeric(pd.Series(np.asarray(y).ravel()), errors="coerce").to_numpy(dtype=float)
    return "log" if v.size and np.all(v > 0) else "none"
