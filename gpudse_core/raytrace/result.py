"""The heatmap in use for a Zatel plan as a typed result: the workspace's ``heatmap`` analysis.

A :class:`HeatmapResult` is a frame's per-pixel cost (Zatel Fig. 3 step 1) with where it came from:
the built-in ray caster with its settings (``request``), or an uploaded file (``request`` None), and
the image or colour pixels to show beside it. It is stored as plain fields and read back with each
one checked (:mod:`gpudse_core.workspace.results`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..stored import Fields

CASTER_SETTINGS = ("size", "spheres", "boxes", "seed")  # the built-in ray caster's request


@dataclass(frozen=True)
class HeatmapResult:
    """``cost``: H × W per-pixel cost; ``rgb``: the uploaded colour pixels (H × W × 3) or None;
    ``image``: the rendered frame (H × W × 3 in [0, 1]) or None; ``source``: a line naming it."""

    STAGE: ClassVar[str] = "heatmap"
    WHAT: ClassVar[str] = "heatmap"

    source: str
    cost: Any
    request: dict | None = None
    image: Any = None
    rgb: Any = None

    @property
    def uploaded(self) -> bool:
        return self.request is None

    def describe(self) -> str:
        """One line for a listing (``gpudse workspace show``)."""
        h, w = self.cost.shape
        return f"{w:,} × {h:,} pixels, " + ("uploaded" if self.uploaded else "built-in ray caster")

    def to_stored(self) -> dict:
        return {"source": self.source, "request": None if self.request is None else dict(self.request),
                "cost": self.cost, "image": self.image, "rgb": self.rgb}

    @classmethod
    def from_stored(cls, stored: Any) -> HeatmapResult:
        if isinstance(stored, cls):
            return stored
        f = Fields(stored, cls.WHAT)
        request = f.mapping("request", None)
        if request is not None:
            for key in CASTER_SETTINGS:
                v = request.get(key)
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise f.error("request", f"has {key} = {v!r}, not a whole number")
        cost = f.array("cost", ndim=2)
        for name, value in (("image", f.array("image", None, ndim=3)), ("rgb", f.array("rgb", None, ndim=3))):
            if value is not None and value.shape[:2] != cost.shape:
                raise f.error(name, f"is {value.shape[1]} × {value.shape[0]} pixels, the cost "
                                    f"{cost.shape[1]} × {cost.shape[0]}")
        return cls(source=f.text("source"), cost=cost, request=request, image=f.array("image", None, ndim=3),
                   rgb=f.array("rgb", None, ndim=3))
