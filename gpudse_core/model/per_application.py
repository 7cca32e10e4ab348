"""One model per application as a typed result (Lee & Brooks S+A: application-specific models;
Stargazer Fig. 7 draws one curve per application): the workspace's ``app_models`` analysis.

:class:`AppModels` maps each application (a value of the results' application column) to the
stepwise model fitted on its rows alone. Stored as that mapping (the record earlier versions stored,
each model in its JSON form through the codec), read back with each entry checked
(:mod:`gpudse_core.workspace.results`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..stored import Fields


@dataclass(frozen=True)
class AppModels:
    """``models``: application name → fitted model (at least one)."""

    STAGE: ClassVar[str] = "app_models"
    WHAT: ClassVar[str] = "per-application models"

    models: dict[str, Any]

    def describe(self) -> str:
        """One line for a listing (``gpudse workspace show``)."""
        return f"{len(self.models)} applications: {', '.join(self.models)}"

    def to_stored(self) -> dict:
        return dict(self.models)

    @classmethod
    def from_stored(cls, stored: Any) -> AppModels:
        if isinstance(stored, cls):
            return stored
        f = Fields(stored, cls.WHAT)
        if not stored:
            raise f.error("models", "is empty")
        for app, model in stored.items():
            if not isinstance(app, str) or not (callable(getattr(model, "predict", None))
                                                and callable(getattr(model, "to_dict", None))):
                raise f.error(str(app), f"is a {type(model).__name__}, not a fitted model")
        return cls(dict(stored))
