"""gpudse: regression-based GPU design space exploration (Stargazer, Lee & Brooks, Zatel).

The core package: all logic, no user interface. The Streamlit dashboard (``app.py``, ``pages/``)
and the ``gpudse`` command line are thin layers over it. It is grouped by pipeline stage:

* :mod:`.space` — design spaces, value syntax, safe constraints, sampling, presets;
* :mod:`.sim` — the analytical models, the built-in simulator, GPGPU-Sim I/O, campaigns, uploads;
* :mod:`.model` — spline bases, the stepwise search, statistics, validation;
* :mod:`.explore` — response curves, whole-space scans, best designs;
* :mod:`.raytrace` — Zatel's pixel selection and the built-in ray caster;
* :mod:`.report` — figures, project files and HTML reports;
* :mod:`.cli` — the ``gpudse`` command.

Data flows one way: design space → samples → results → fit → analyses.

``import gpudse_core`` is cheap: the names below are loaded on first use, so the command line
starts without NumPy or pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

_EXPORTS = {
    "GpudseError": "errors", "SpaceError": "errors", "ExpressionError": "errors", "SamplingError": "errors",
    "PRESETS": "choices",
    "load_preset": "space.presets", "load_space": "space.presets",
    "SampleSet": "space.sampling", "sample": "space.sampling", "sample_size": "space.sampling",
    "Constraint": "space.design", "DesignSpace": "space.design", "Fixed": "space.design", "Group": "space.design",
    "Parameter": "space.design", "parse_space_text": "space.design", "space_from_dict": "space.design",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'gpudse_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
