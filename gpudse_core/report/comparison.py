"""Runs side by side as a typed result: the workspace's ``comparison`` analysis.

A :class:`Comparison` holds two or more :class:`Run` snapshots — a fitted model of this or another
workspace as it was when compared: what produced it, its out-of-sample headline
(:class:`~gpudse_core.model.headline.Headline`), its errors, accuracy against sample size, term
contributions and a response curve — and the parameter the curves run along.
:mod:`gpudse_core.report.compare` builds and draws it. Stored as plain fields (the record earlier
versions stored), read back with each field checked (:mod:`gpudse_core.workspace.results`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..stored import Fields, StoredFormError

HEADLINE_FIELDS = ("source", "value", "interpolates", "note", "detail")


@dataclass(frozen=True)
class Run:
    """One fitted model as compared (see the module docstring); ``errors``: relative errors (an array)
    from ``errors_source``; ``trend``: train_size, mean, median, max; ``contributions``: term, gain;
    ``curve``: value, x, predicted along the comparison's parameter."""

    label: str
    workspace: str
    workspace_id: str
    version: int
    kind: str
    origin: str
    results: str
    rows: int
    response: str
    headline: Any  # model.headline.Headline
    kernel: str | None = None
    noise: float | None = None
    r2: float | None = None
    terms: int | None = None
    errors: Any = None  # numpy array | None
    errors_source: str | None = None
    trend: Any = None  # pandas.DataFrame | None
    contributions: Any = None  # pandas.DataFrame | None
    param: str | None = None
    curve: Any = None  # pandas.DataFrame | None
    settings: tuple[tuple[str, str], ...] = ()  # the model's settings (report.record.model_settings)

    def to_stored(self) -> dict:
        h = self.headline
        doc = {"label": self.label, "workspace": self.workspace, "workspace_id": self.workspace_id,
               "version": self.version, "kind": self.kind, "origin": self.origin, "results": self.results,
               "kernel": self.kernel, "noise": self.noise, "rows": self.rows, "response": self.response,
               "headline": {k: getattr(h, k) for k in HEADLINE_FIELDS}, "r2": self.r2, "terms": self.terms,
               "errors": self.errors, "errors_source": self.errors_source, "trend": self.trend,
               "contributions": self.contributions, "param": self.param, "curve": self.curve}
        if self.settings:  # a run snapshotted before runs kept their settings is stored as it was
            doc["settings"] = [list(p) for p in self.settings]
        return doc

    @classmethod
    def from_stored(cls, stored: Any, what: str = "run") -> Run:
        from ..model.headline import Headline

        f = Fields(stored, what)
        h = Fields(f.mapping("headline"), f"{what}'s headline")
        headline = Headline(source=h.text("source"), value=h.number("value", None),
                            interpolates=h.flag("interpolates", False), note=h.text("note", None),
                            detail=h.text("detail", ""))
        return cls(label=f.text("label"), workspace=f.text("workspace"), workspace_id=f.text("workspace_id"),
                   version=f.integer("version", minimum=1), kind=f.text("kind"), origin=f.text("origin", ""),
                   results=f.text("results", ""), rows=f.integer("rows"), response=f.text("response"),
                   headline=headline, kernel=f.text("kernel", None), noise=f.number("noise", None),
                   r2=f.number("r2", None), terms=f.integer("terms", None), errors=f.array("errors", None, ndim=1),
                   errors_source=f.text("errors_source", None), trend=f.table("trend", None),
                   contributions=f.table("contributions", None), param=f.text("param", None),
                   curve=f.table("curve", None), settings=_settings(f))


def _settings(f: Fields) -> tuple[tuple[str, str], ...]:
    """A run's stored settings: ``[setting, value]`` text pairs (none in a run stored before runs kept them)."""
    raw = f.raw("settings", [])
    if not isinstance(raw, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                            for p in raw):
        raise f.error("settings", "is not a list of [setting, value] texts")
    return tuple((p[0], p[1]) for p in raw)


@dataclass(frozen=True)
class Comparison:
    """Two or more runs side by side, their response curves along *param*."""

    STAGE: ClassVar[str] = "comparison"
    WHAT: ClassVar[str] = "comparison"

    runs: tuple[Run, ...]
    param: str | None = None

    def to_stored(self) -> dict:
        return {"runs": [r.to_stored() for r in self.runs], "param": self.param}

    @classmethod
    def from_stored(cls, stored: Any) -> Comparison:
        if isinstance(stored, cls):
            return stored
        f = Fields(stored, cls.WHAT)
        runs = f.raw("runs")
        if not isinstance(runs, list) or len(runs) < 2:
            raise f.error("runs", "is not a list of two or more runs")
        return cls(runs=tuple(Run.from_stored(r, f"comparison's run {i + 1}") for i, r in enumerate(runs)),
                   param=f.text("param", None))


__all__ = ["Comparison", "Run", "StoredFormError"]
