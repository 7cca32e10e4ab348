"""Regression models: spline bases, Stargazer's stepwise search, Lee & Brooks' statistics, validation,
the other learners and the automatic choice.

``from gpudse_core.model import load_model, fit_model, save_model`` gives the registry's functions
(:mod:`.registry`, any model kind); they are loaded on first use, so importing a submodule such as
:mod:`.splines` stays light.
"""

from __future__ import annotations

from typing import Any

_REGISTRY = ("fit_model", "load_model", "save_model", "model_to_dict", "model_kind")


def __getattr__(name: str) -> Any:
    if name in _REGISTRY:
        from . import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'gpudse_core.model' has no attribute {name!r}")
