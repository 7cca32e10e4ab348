"""A fit is a function of its data and settings: the same fit asked for again is the stored one.

Stargazer's Algorithm 1 (and every learner here) is deterministic given the results table and the
estimator's settings, so a fit whose results version and canonical settings equal a stored model
version's returns that version — and with it every analysis computed from it (validation, scan,
curves, per-application models) stays current — instead of storing a copy as a new version that
would leave those analyses stale. The fingerprint is a SHA-256 of the results' content digest and the
settings as canonical JSON (keys sorted, tuples as lists, the response and the parameters named).

:func:`fit_into` is the one way a fit enters a workspace: the dashboard's Fit button and the example
both go through it; :func:`refit_into` fits again with a model's own settings (after designs a check
simulated were added to the results).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import GpudseError


@dataclass(frozen=True)
class FitOutcome:
    """The model stage after a fit: *stored* is its StageValue; *reused* is True when the same data and
    settings were fitted before and that version was made current instead of storing a new one."""

    stored: Any
    reused: bool

    def message(self) -> str:
        v = self.stored.version
        return (f"Same settings and data as model v{v}: reused (its analyses stay current)" if self.reused
                else f"Model version {v} fitted")


def canonical_settings(settings: Mapping[str, Any], response: str, params: Any) -> dict[str, Any]:
    """The settings as they decide a fit: every estimator parameter, tuples as lists, with the response
    and the parameter list named (an estimator that left them to the data gets them spelled out)."""
    out = {str(k): (list(v) if isinstance(v, (list, tuple)) else v) for k, v in settings.items()}
    out["response"] = str(response)
    out["params"] = [str(p) for p in params]
    return out


def fingerprint(results_digest: str, kind: str, settings: Mapping[str, Any]) -> str:
    """SHA-256 of the results' content digest, the model kind and the canonical settings."""
    doc = {"results": results_digest, "kind": kind, "settings": settings}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str, separators=(",", ":")).encode()).hexdigest()


def fit_into(ws: Any, results: Any, kind: str, settings: Mapping[str, Any], fit: Callable[[], Any],
             origin: str | Callable[[Any], str], stage: str = "model") -> FitOutcome:
    """Store ``fit()`` as *stage* computed from *results* (a StageValue), unless a kept version was
    fitted from the same results content with the same *kind* and canonical *settings*
    (:func:`canonical_settings`): then that version becomes current again and ``fit`` is not called.
    *origin*: the new version's description, or a function of the fitted model that gives it."""
    key = fingerprint(results.digest, kind, settings)
    known = ws.fitted_version(stage, key)
    if known is not None:
        return FitOutcome(ws.reuse(stage, known), True)
    model = fit()
    text = origin(model) if callable(origin) else origin
    return FitOutcome(ws.put_fit(stage, model, key, inputs=[results], origin=text), False)


def fit_stepwise_into(ws: Any, results: Any, settings: Mapping[str, Any], params: Any = None,
                      response: str | None = None, callback: Callable[[Any], None] | None = None,
                      origin: str | Callable[[Any], str] = "stepwise (Algorithm 1)") -> FitOutcome:
    """Algorithm 1 on *results* (a StageValue of the workspace's results) with *settings* (estimator
    parameters; unknown keys ignored), through :func:`fit_into` and the core's one fit entry point
    (:func:`gpudse_core.model.registry.fit_model`). *params*: the parameters fitted (default: every
    column of the space the results have); *origin*: the version's description, or a function of the
    fitted model that gives it. *callback* sees each trace step of a new fit."""
    from ..model.registry import fit_model, stepwise_request
    from ..model.stepwise import StepwiseRegression

    res = results.value
    response = response or res.response
    params = [str(p) for p in (params if params is not None else ws.get("space").value.parameter_names)
              if p in res.table.columns]
    full = StepwiseRegression().get_params()
    full.update({k: v for k, v in settings.items() if k in full and k not in ("response", "params")})
    if settings.get("blend") == "off":  # the forest blend is the default's, not an estimator parameter: named
        full["blend"] = "off"  # only when off, so a default fit keeps its fingerprint
    kind, transform, kw = stepwise_request(full)

    space = ws.get("space").value
    derived = space.derived_map() if space is not None else {}  # the space's derived quantities: predictors too

    def fit() -> Any:
        return fit_model(kind, res.table, response, params, transform=transform, stepwise_kw=kw, callback=callback,
                         derived=derived or None)

    key = canonical_settings(full, response, params)
    if derived:
        key["derived"] = dict(derived)
    return fit_into(ws, results, "stepwise", key, fit, origin)


REFIT_NOTE = " (refitted on new results)"


def refit_into(ws: Any, results: Any, model: Any) -> FitOutcome:
    """Fit again on *results* (a StageValue) with the settings of *model* (the StageValue of the model
    it replaces): its response, parameters and estimator settings, through :func:`fit_stepwise_into`.
    A learner's refit is left to the fit page (its settings are chosen there): refused with that said."""
    prev = model.value
    settings = getattr(prev, "settings", None)
    if not hasattr(prev, "trace") or not isinstance(settings, Mapping):
        raise GpudseError(f"model version {model.version} is a {getattr(prev, 'kind', 'learner')} model: refit it "
                          f"on the Stepwise fit page")
    res = results.value
    response = prev.response if prev.response in res.table.columns else None
    base = model.origin.split(REFIT_NOTE)[0] or "stepwise (Algorithm 1)"
    return fit_stepwise_into(ws, results, settings, response=response, origin=base + REFIT_NOTE)
