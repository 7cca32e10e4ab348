"""Where a workspace's results came from: the simulator (or upload), the application, its measurement
noise and the sample size — what a report's title and a comparison's labels name.

Results simulated by a campaign carry their simulator's spec in the campaign record (backend,
kernel, noise); results written directly (the built-in example) carry it in their origin line
("built-in simulator, matMul, 1% noise"). Uploads and external simulators name no kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import GpudseError


@dataclass(frozen=True)
class Provenance:
    simulator: str  # "built-in simulator", "external simulator (command)", "uploaded results" …
    kernel: str | None = None
    noise: float | None = None  # σ of the log-normal measurement noise, when known
    rows: int = 0
    response: str | None = None

    def describe(self) -> str:
        """``BFS on the built-in simulator, 1 % noise, 300 results``."""
        from ..fmt import fmt_count, fmt_percent

        head = f"{self.kernel} on the {self.simulator}" if self.kernel else self.simulator
        parts = [head]
        if self.noise is not None:
            parts.append("noise-free" if self.noise == 0 else f"{fmt_percent(self.noise)} noise")
        parts.append(fmt_count(self.rows, "results"))
        return ", ".join(parts)


def _campaign_spec(ws: Any, origin: str) -> dict | None:
    m = re.match(r"campaign (.+?) \(", origin)
    if not m:
        return None
    try:
        return next((c.spec or {} for c in ws.campaigns() if c.name == m.group(1)), {})
    except GpudseError:
        return {}


def results_provenance(ws: Any, results_sv: Any) -> Provenance | None:
    """The provenance of a results version (a StageValue), or None when there are none."""
    from ..sim.simulator import KERNELS

    value = results_sv.value
    if value is None:
        return None
    rows, response = len(value.table), value.response
    origin = results_sv.origin or ""
    spec = _campaign_spec(ws, origin)
    if spec is not None:
        if spec.get("backend") == "analytical":
            kernel = spec.get("kernel") if spec.get("kernel") in KERNELS else None
            noise = spec.get("noise")
            return Provenance("built-in simulator", kernel, float(noise) if isinstance(noise, (int, float)) else None,
                              rows, response)
        return Provenance(f"external simulator ({spec.get('backend', 'command')})", spec.get("kernel"), None, rows,
                          response)
    if "built-in simulator" in origin:
        found = [k for k in KERNELS if re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", origin)]
        m = re.search(r"([\d.]+)\s*%\s*noise", origin)
        noise = float(m.group(1)) / 100 if m else (0.0 if "noise-free" in origin else None)
        return Provenance("built-in simulator", found[0] if len(found) == 1 else None, noise, rows, response)
    return Provenance("uploaded results" if origin.startswith("upload") else (origin or "results"), None, None, rows,
                      response)


def results_kernel(ws: Any, results_sv: Any) -> str | None:
    """The built-in simulator's kernel the results were simulated with, or None (uploads, external
    simulators, several applications in one table)."""
    if results_sv.value is None or results_sv.value.app_column:
        return None
    p = results_provenance(ws, results_sv)
    return p.kernel if p is not None and p.simulator == "built-in simulator" else None


def noise_free(ws: Any, results_sv: Any) -> bool:
    """True when the results are known to carry no measurement noise (the built-in simulator at 0)."""
    p = results_provenance(ws, results_sv) if results_sv is not None and results_sv.value is not None else None
    return p is not None and p.noise == 0


def model_headline(ws: Any, model_sv: Any, validation: Any = None) -> Any:
    """The headline of a stored model version (:func:`gpudse_core.model.headline.fit_headline`) on the
    results it was fitted on, told whether those are noise-free; None when they are not kept."""
    from ..model.headline import fit_headline

    if model_sv.value is None:
        return None
    try:
        data_sv = ws.input_of(model_sv, "results")
    except GpudseError:
        return None
    if data_sv.value is None:
        return None
    return fit_headline(model_sv.value, data_sv.value.table, validation, noise_free=noise_free(ws, data_sv))
