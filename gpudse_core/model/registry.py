"""Every model kind by name: fit one, save it, load any saved model.

Names (``gpudse fit --model``, ``gpudse validate --models``, the pages): ``stepwise`` is the robust
default interpretable model, ``paper`` the stepwise model with Stargazer's settings as written,
``ebm``, ``forest``, ``boosting``, ``hybrid`` the learners of :mod:`.learners`, and ``auto`` the
choice by cross-validation of :mod:`.auto`. A stepwise name may end in ``+2way`` or ``+3way`` to set
the search's highest interaction order (``stepwise+2way``, ``paper+3way``: what cross-validation
tries); without it the model's own order applies.

Files are JSON and dispatch on their ``schema``: ``gpudse.model/N`` (a stepwise model: bases and
coefficients) or ``gpudse.learner/2`` (a learner: its fitted trees or EBM tables as arrays, evaluated
with NumPy, :mod:`.frozen`; the older ``gpudse.learner/1`` held training rows only and is refitted). A
model chosen by ``auto`` carries a ``selection`` entry (the cross-validation table and the reason).
Files are read through :mod:`gpudse_core.safeload` (bounded by ``limits.model_bytes``, plain data,
never pickle). Loading and predicting import neither scikit-learn nor SciPy: the fitting modules
(:mod:`.auto`, :mod:`.kinds`, :mod:`.stepwise`) are imported when a model is fitted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from .. import limits
from ..jsonutil import plain_json
from .fitted import MODEL_SCHEMA, FitError, StepwiseModel, note_constant_response
from .learners import KINDS, LEARNER_SCHEMA, LEARNER_SCHEMAS, Learner


def split_name(name: str) -> tuple[str, int | None]:
    """See :func:`.kinds.split_name` (re-exported here; loaded on use)."""
    from .kinds import split_name as split

    return split(name)


def fit_model(name: str, data: pd.DataFrame, response: str, params: Sequence[str] | None = None, *,
              transform: str | None = "log", seed: int = 0, stepwise_kw: Mapping[str, Any] | None = None,
              callback: Callable | None = None, folds: int = 5,
              progress: Callable[[int, int, str], Any] | None = None,
              derived: Mapping[str, str] | None = None, auto_rule: str | None = None) -> Any:
    """Fit the model called *name* on a results table: the one entry point of every front end (the
    ``gpudse fit`` command, the dashboard's fit pages, the search, the example workspace). *stepwise_kw*
    (θ, φ, knots …, checked by :func:`.learners.stepwise_settings`) and *callback* (one call per trace
    step) apply to the stepwise models; *transform* None lets the stepwise model choose its scale;
    *folds*, *progress* and *auto_rule* (None: the default, :data:`.auto.RULE`) apply to ``auto`` (the
    choice by cross-validation, :mod:`.auto`); every
    other name is one kind of :mod:`.kinds`. *derived* (name → expression over the parameters, a design
    space's derived quantities, :mod:`.derived`) adds predictors every kind uses and the model keeps."""
    from .kinds import check_response, fit_kind

    if derived:
        return _with_derived(name, data, response, params, dict(derived), transform=transform, seed=seed,
                             stepwise_kw=stepwise_kw, callback=callback, folds=folds, progress=progress,
                             auto_rule=auto_rule)
    base, _ = split_name(name)
    if base == "auto":
        from .auto import RULE, select_model

        check_response(data, response)
        params = list(params) if params else [c for c in data.columns if c != response]
        return note_constant_response(select_model(data, response, params, transform=transform, folds=folds,
                                                   seed=seed, progress=progress, stepwise_kw=stepwise_kw,
                                                   rule=auto_rule or RULE),
                                      data, response)
    return note_constant_response(fit_kind(name, data, response, params, transform=transform, seed=seed,
                                           stepwise_kw=stepwise_kw, callback=callback), data, response)


def _with_derived(name: str, data: pd.DataFrame, response: str, params: Sequence[str] | None,
                  derived: dict[str, str], **kw: Any) -> Any:
    """:func:`fit_model` with the derived quantities' columns added to the rows and to the predictors; the
    model keeps the expressions, so it computes the columns on the points it predicts."""
    from ..errors import GpudseError
    from .derived import add_columns
    from .fitted import FitError

    params = list(params) if params else [c for c in data.columns if c != response and c not in derived]
    try:
        rows = add_columns(data, derived, "")
    except GpudseError as e:
        raise FitError(str(e)) from None
    model = fit_model(name, rows, response, params + [k for k in derived if k not in params], **kw)
    model.derived = {**getattr(model, "derived", {}), **{k: v for k, v in derived.items() if k in model.parameters}}
    return model


def stepwise_request(settings: Mapping[str, Any]) -> tuple[str, str | None, dict[str, Any]]:
    """The arguments of :func:`fit_model` for a stepwise fit asked for as estimator parameters (the fit
    page's settings, a stored model's ``settings``; unknown keys ignored; ``reference`` true: the paper
    model, whose fixed settings are :data:`.stepwise.PAPER_SETTINGS`): (kind, response transform,
    stepwise settings)."""
    from .learners import PAPER_TUNABLE
    from .stepwise import StepwiseRegression

    known = StepwiseRegression().get_params()
    kw = {k: v for k, v in settings.items() if k in known and k not in ("response", "params")}
    if kw.get("reference"):
        return "paper", None, {k: v for k, v in kw.items() if k in PAPER_TUNABLE}
    if settings.get("blend") == "off":  # the default's forest blend (:mod:`.fallback`) is not an estimator parameter
        kw["blend"] = "off"
    return "stepwise", kw.pop("response_transform", None), kw


def model_to_dict(model: Any) -> dict:
    """The model's JSON document (plain data; non-finite numbers written as null)."""
    d = model.to_dict()
    sel = getattr(model, "selection", None)
    if sel is not None:
        d["selection"] = sel
    return plain_json(d)


def save_model(model: Any, path: Any) -> None:
    from ..atomicfile import write_text

    write_text(path, json.dumps(model_to_dict(model), indent=1))  # whole or not at all


def load_model(doc_or_path: Any, source: str | None = None) -> Any:
    """A fitted model from an already parsed JSON document or a file path, whatever its kind;
    *source* names it in error messages (default: the path, or "model")."""
    from ..safeload import load_json

    if isinstance(doc_or_path, Mapping):
        doc, src = dict(doc_or_path), source or "model"
    else:
        p = Path(doc_or_path)
        src = source or str(p)
        cap = limits.current().model_bytes
        try:
            with p.open("rb") as fh:
                raw = fh.read(cap + 1)
        except FileNotFoundError:
            raise FitError(f"{p}: no such model file") from None
        except OSError as e:
            raise FitError(f"{p}: cannot be read ({e.strerror or e})") from None
        doc = load_json(raw, src, bytes_limit="model_bytes")
    if not isinstance(doc, dict):
        raise FitError(f"{src}: not a gpudse model (expected a JSON object)")
    schema = doc.get("schema")
    if isinstance(schema, str) and schema.startswith(MODEL_SCHEMA.rsplit("/", 1)[0] + "/"):
        model = StepwiseModel.from_dict(doc, source=src)  # it checks which versions it reads
        sel = doc.get("selection")
        model.selection = sel if isinstance(sel, dict) else None
        return model
    if schema in LEARNER_SCHEMAS:
        return Learner.from_dict(doc, source=src)
    raise FitError(f"{src}: schema {schema!r} is not a gpudse model ({MODEL_SCHEMA} or {LEARNER_SCHEMA}); "
                   f"fit the model with this version of gpudse")


def model_kind(model: Any) -> str:
    """``stepwise`` for a stepwise model, else the learner's kind."""
    return model.kind if isinstance(model, Learner) else getattr(model, "kind", "stepwise")


__all__ = ["KINDS", "fit_model", "load_model", "model_kind", "model_to_dict", "plain_json", "save_model", "split_name"]
