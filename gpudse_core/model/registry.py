"""Every model kind by name: fit one, save it, load any saved model (issue 13, part 3).

Names (``gpudse fit --model``, ``gpudse validate --models``, the pages): ``stepwise`` is the robust
default interpretable model, ``paper`` the stepwise model with Stargazer's settings as written,
``ebm``, ``forest``, ``boosting``, ``hybrid`` the learners of :mod:`.learners`, and ``auto`` the
choice by cross-validation of :mod:`.auto`. A stepwise name may end in ``+2way`` or ``+3way`` to set
the search's highest interaction order (``stepwise+2way``, ``paper+3way``: what cross-validation
tries); without it the preset's own order applies.

Files are JSON and dispatch on their ``schema``: ``gpudse.model/N`` (a stepwise model: bases and
coefficients) or ``gpudse.learner/1`` (a learner: settings and training rows, refitted on load). A
model chosen by ``auto`` carries a ``selection`` entry (the cross-validation table and the reason).
Files are read through :mod:`gpudse_core.safeload` (bounded, plain data, never pickle).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import limits
from ..choices import MODEL_KINDS
from ..jsonutil import json_default
from .learners import KINDS, LEARNER_SCHEMA, Learner, fit_learner, stepwise_fit
from .stepwise import MODEL_SCHEMA, FitError, StepwiseModel

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


def fit_model(name: str, data: pd.DataFrame, response: str, params: Sequence[str] | None = None, *,
              transform: str = "log", seed: int = 0, stepwise_kw: Mapping[str, Any] | None = None,
              callback: Callable | None = None, folds: int = 5,
              progress: Callable[[int, int, str], Any] | None = None) -> Any:
    """Fit the model called *name* on a results table. *stepwise_kw* (θ, φ, knots …) and *callback*
    (one call per trace step) apply to the stepwise kinds; *folds* and *progress* to ``auto``."""
    base, order = split_name(name)
    if response not in data.columns:
        raise FitError(f"response column {response!r} is not in the data; columns: {', '.join(map(str, data.columns))}")
    params = list(params) if params else [c for c in data.columns if c != response]
    if base == "auto":
        from .auto import select_model

        return select_model(data, response, params, transform=transform, folds=folds, seed=seed,
                            progress=progress, stepwise_kw=stepwise_kw)
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


def model_to_dict(model: Any) -> dict:
    """The model's JSON document (plain data; non-finite numbers written as null)."""
    d = model.to_dict()
    sel = getattr(model, "selection", None)
    if sel is not None:
        d["selection"] = sel
    return plain_json(d)


def plain_json(o: Any) -> Any:
    """*o* as plain JSON data: NumPy values converted, non-finite numbers as ``None``."""
    if isinstance(o, dict):
        return {str(k): plain_json(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [plain_json(v) for v in o]
    o = json_default(o) if not isinstance(o, (str, int, float, bool, type(None))) else o
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o


def save_model(model: Any, path: Any) -> None:
    Path(path).write_text(json.dumps(model_to_dict(model), indent=1), encoding="utf-8")


def load_model(doc_or_path: Any, source: str | None = None) -> Any:
    """A fitted model from an already parsed JSON document or a file path, whatever its kind;
    *source* names it in error messages (default: the path, or "model")."""
    from ..safeload import load_json

    if isinstance(doc_or_path, Mapping):
        doc, src = dict(doc_or_path), source or "model"
    else:
        p = Path(doc_or_path)
        src = source or str(p)
        cap = limits.current().document_bytes
        try:
            with p.open("rb") as fh:
                raw = fh.read(cap + 1)
        except FileNotFoundError:
            raise FitError(f"{p}: no such model file") from None
        except OSError as e:
            raise FitError(f"{p}: cannot be read ({e.strerror or e})") from None
        doc = load_json(raw, src)
    if not isinstance(doc, dict):
        raise FitError(f"{src}: not a gpudse model (expected a JSON object)")
    schema = doc.get("schema")
    if isinstance(schema, str) and schema.startswith(MODEL_SCHEMA.rsplit("/", 1)[0] + "/"):
        model = StepwiseModel.from_dict(doc, source=src)  # it checks which versions it reads
        sel = doc.get("selection")
        model.selection = sel if isinstance(sel, dict) else None
        return model
    if schema == LEARNER_SCHEMA:
        return Learner.from_dict(doc, source=src)
    raise FitError(f"{src}: schema {schema!r} is not a gpudse model ({MODEL_SCHEMA} or {LEARNER_SCHEMA}); "
                   f"fit the model with this version of gpudse")


def model_kind(model: Any) -> str:
    """``stepwise`` for a stepwise model, else the learner's kind."""
    return model.kind if isinstance(model, Learner) else getattr(model, "kind", "stepwise")


__all__ = ["KINDS", "fit_model", "load_model", "model_kind", "model_to_dict", "plain_json", "save_model", "split_name"]
