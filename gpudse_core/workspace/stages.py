"""The pipeline's stages, what each was computed from, and whether it is still current.

Stages form a graph: ``space → samples → results → model → analyses``, where results may also come
straight from the space (an upload) and an analysis names its own inputs (any stages, possibly none).
Each stored stage version records the version *and content digest* of every input it was computed
from. A stage is **current** when each recorded input is still that stage's head — the same version,
or a later version with identical content — and is itself current; otherwise it is **stale**, with
the reason and the one action that fixes it; a stage never written (or removed) is **missing**.

Pure functions over the heads' metadata: no database, no values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import GpudseError

BASE_STAGES = ("space", "samples", "results", "model")
STATES = ("current", "stale", "missing")
_ANALYSIS_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")

# the stages each base stage may be computed from, and those it is by default
ALLOWED_INPUTS = {"space": (), "samples": ("space",), "results": ("space", "samples"),
                  "model": ("results", "space", "samples")}
DEFAULT_INPUTS = {"space": (), "samples": ("space",), "results": ("space",), "model": ("results",)}

_NOUN = {"space": "design space", "samples": "samples", "results": "results", "model": "model",
         "validation": "validation", "true_error": "true error", "scan": "best designs", "heatmap": "heatmap",
         "app_models": "per-application models", "check": "simulated check"}
_THIS = {"samples": "these samples were drawn", "results": "these results were recorded",
         "model": "this model was fitted", "validation": "this validation was run",
         "true_error": "the true error was computed", "scan": "the best designs were found",
         "heatmap": "this heatmap was made", "app_models": "the per-application models were fitted",
         "check": "these designs were simulated"}
_FIRST = {"space": ("no design space has been chosen yet", "Choose a design space"),
          "samples": ("no design points have been sampled yet", "Sample design points"),
          "results": ("no results have been simulated or uploaded yet", "Simulate or upload results"),
          "model": ("no model has been fitted yet", "Fit a model")}
_REDO = {("samples", "space"): "Sample the new design space",
         ("results", "space"): "Simulate or upload results for the new design space",
         ("results", "samples"): "Simulate the new samples",
         ("model", "results"): "Refit on the new results",
         ("model", "space"): "Refit for the new design space",
         ("model", "samples"): "Refit on the new samples"}

class StageError(GpudseError):
    """An unknown stage name or an input the stage cannot be computed from."""


@dataclass
class Results:
    """The results stage: one row per simulated design point, the response to model and, when the
    rows belong to several applications (kernels, benchmarks), the column naming each row's one."""

    table: Any  # pandas.DataFrame
    response: str
    app_column: str | None = None


def check_stage(stage: str) -> str:
    """*stage* when it is a base stage or a valid analysis name; else :class:`StageError`."""
    if stage in BASE_STAGES or (isinstance(stage, str) and _ANALYSIS_RE.match(stage)):
        return stage
    raise StageError(f"stage {stage!r}: use one of {', '.join(BASE_STAGES)} or an analysis name of lower-case "
                     f"letters, digits, '_', '.' or '-' (at most 64, starting with a letter)")


def check_inputs(stage: str, inputs: Any) -> None:
    for name in inputs:
        check_stage(name)
        if name == stage:
            raise StageError(f"{stage}: a stage cannot be computed from itself")
        if stage in BASE_STAGES and name not in ALLOWED_INPUTS[stage]:
            raise StageError(f"{stage}: cannot be computed from {name!r}; its inputs can be "
                             f"{', '.join(ALLOWED_INPUTS[stage]) or 'nothing'}")


@dataclass(frozen=True)
class InputRef:
    """The version of an input a stage was computed from, and that version's content digest."""

    version: int
    digest: str | None


@dataclass(frozen=True)
class Head:
    """Metadata of a stage's current version (what staleness is computed from)."""

    stage: str
    version: int
    digest: str | None  # None: removed
    inputs: Mapping[str, InputRef] = field(default_factory=dict)
    partial: bool = False
    note: str = ""


@dataclass(frozen=True)
class Status:
    """Whether a stage can be shown as current and, if not, why and what fixes it.

    ``fix`` is the stage whose page carries the fixing ``action`` (a stale model whose results are
    out of date is fixed on the results' page first).
    """

    stage: str
    state: str  # current | stale | missing
    reason: str = ""
    action: str = ""
    fix: str = ""
    partial: bool = False
    note: str = ""  # for a partial value: how far it got
    cause: str = ""  # for a stale stage: the change upstream that made it stale

    @property
    def ok(self) -> bool:
        return self.state == "current"

    def message(self) -> str:
        """One line for a banner: the reason and the action, or a note on a partial value."""
        if self.ok:
            return f"partial result: {self.note}" if self.partial and self.note else ""
        return f"{self.reason[0].upper()}{self.reason[1:]}. {self.action}."


TITLES = {"space": "Design space", "samples": "Samples", "results": "Results", "model": "Model",
          "validation": "Validation", "true_error": "True error", "scan": "Best designs (Explore)",
          "heatmap": "Ray-tracing heatmap", "app_models": "Per-application models",
          "check": "Simulated check (Explore)"}


def title(stage: str) -> str:
    """A stage or analysis as a reader names it in a heading or a list (never the storage key 'true_error')."""
    return TITLES.get(stage, stage.replace("_", " ").capitalize())


def noun(stage: str) -> str:
    return _NOUN.get(stage, stage.replace("_", " "))


def _made(stage: str) -> str:
    return _THIS.get(stage, f"this {stage.replace('_', ' ')} was computed")


def _were(stage: str) -> str:
    return "were" if stage in ("samples", "results") else "was"


def _redo(stage: str, changed: str) -> str:
    if (stage, changed) in _REDO:
        return _REDO[(stage, changed)]
    if stage in BASE_STAGES:
        return _FIRST[stage][1]
    if stage == "check":  # a simulation is not recomputed from a new model: the new best designs are checked
        return "Simulate the new best designs on the Explore page"
    return {"model": "Recompute with the new model", "results": "Recompute on the new results",
            "space": "Recompute for the new design space"}.get(changed, "Recompute")


def missing(stage: str) -> Status:
    reason, action = _FIRST.get(stage, (f"{stage} has not been computed yet", "Compute it"))
    return Status(stage, "missing", reason, action, stage)


def statuses(heads: Mapping[str, Head]) -> dict[str, Status]:
    """The status of every base stage and every stored analysis."""
    memo: dict[str, Status] = {}
    for stage in [*BASE_STAGES, *sorted(s for s in heads if s not in BASE_STAGES)]:
        status_of(stage, heads, memo)
    return memo


def status_of(stage: str, heads: Mapping[str, Head], memo: dict[str, Status] | None = None) -> Status:
    memo = {} if memo is None else memo
    if stage in memo:
        return memo[stage]
    memo[stage] = Status(stage, "current")  # provisional: breaks cycles between analyses
    memo[stage] = _status(stage, heads, memo)
    return memo[stage]


def _status(stage: str, heads: Mapping[str, Head], memo: dict[str, Status]) -> Status:
    head = heads.get(stage)
    if head is None or head.digest is None:
        return missing(stage)
    for name, ref in head.inputs.items():  # an input that changed (or went) is named before a stale one
        cur = heads.get(name)
        if cur is None or cur.digest is None:
            why = f"the {noun(name)} {_were(name)} removed after {_made(stage)}"
            return Status(stage, "stale", why, _redo(stage, name), stage, cause=why)
        if cur.version != ref.version and cur.digest != ref.digest:
            why = f"the {noun(name)} changed after {_made(stage)}"
            return Status(stage, "stale", why, _redo(stage, name), stage, cause=why)
    for name in head.inputs:
        up = status_of(name, heads, memo)
        if not up.ok:
            are = "are" if _were(name) == "were" else "is"
            return Status(stage, "stale", f"its {noun(name)} {are} out of date ({up.cause})", up.action, up.fix,
                          cause=up.cause)
    return Status(stage, "current", partial=head.partial, note=head.note if head.partial else "")


def blocker(stages: Any, heads: Mapping[str, Head]) -> Status | None:
    """The first status, in pipeline order, that keeps *stages* from being used; None when all are
    current. A missing stage is traced to its default inputs: a missing model with no results
    reports the results, since those come first."""
    memo: dict[str, Status] = {}
    seen: list[str] = []

    def visit(stage: str) -> None:
        if stage in seen:
            return
        head = heads.get(stage)
        ups = list(head.inputs) if head is not None and head.digest is not None else list(DEFAULT_INPUTS.get(stage, ()))
        for up in ups:
            visit(up)
        seen.append(stage)

    for s in stages:
        visit(check_stage(s))
    for s in seen:
        st = status_of(s, heads, memo)
        if not st.ok:
            return st
    return None


@dataclass(frozen=True)
class StageValue:
    """One stored version of a stage: the value, where it came from and whether it is current.

    For a missing stage ``value`` is None and ``version`` 0. Values are shared with the session's
    cache: treat tables and arrays as read-only (copy before changing them).
    """

    stage: str
    value: Any
    version: int
    status: Status
    digest: str | None = None
    inputs: Mapping[str, InputRef] = field(default_factory=dict)
    origin: str = ""
    created: float = 0.0
    partial: bool = False
    note: str = ""
    revision: int = 0

    @property
    def ok(self) -> bool:
        return self.status.ok

    @property
    def state(self) -> str:
        return self.status.state
