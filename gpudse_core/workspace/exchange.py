"""Project zips and reports drawn from a workspace: only current stages, or stale ones labelled.

The zip format and its validation are :mod:`gpudse_core.workspace.project`'s (``save_project`` /
``load_project``); this module decides *what* goes in and writes a loaded project into a workspace
in one transaction (all stages or none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import GpudseError
from .results import Damaged
from .stages import BASE_STAGES
from .workspace import StageValue, Workspace, WorkspaceError, _check_name


@dataclass(frozen=True)
class ProjectExport:
    data: bytes  # the zip
    left_out: dict[str, str]  # stage -> why it is not in the zip (stale or missing)


@dataclass
class ReportContents:
    """What an HTML report may show: the project (current stages only, unless asked otherwise), the
    data the model was fitted on, the analyses with their status, and what was left out and why."""

    project: Any  # workspace.project.Project
    model_data: Any  # pandas.DataFrame | None: the results version the model was fitted on
    analyses: dict[str, StageValue] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)

    def label(self, name: str) -> str:
        """A heading for analysis *name*: its name, marked partial or out of date when it is."""
        sv = self.analyses[name]
        if not sv.ok:
            return f"{name} — out of date: {sv.status.reason}"
        return f"{name} (partial: {sv.note})" if sv.partial else name


def _included(ws: Workspace, include_stale: bool) -> tuple[dict[str, StageValue], dict[str, str]]:
    keep, left_out = {}, {}
    for stage in BASE_STAGES:
        try:
            sv = ws.get(stage)
        except GpudseError as e:  # a damaged stored value: named and left out, the other stages go in
            left_out[stage] = f"damaged: {e}"
            continue
        if sv.value is None:
            left_out[stage] = sv.status.reason
        elif sv.ok or include_stale:
            keep[stage] = sv
        else:
            left_out[stage] = f"out of date: {sv.status.reason}"
    return keep, left_out


def _project(ws: Workspace, keep: dict[str, StageValue], left_out: dict[str, str]) -> Any:
    from .project import Project

    if left_out.get("space", "").startswith("damaged"):
        raise WorkspaceError(f"nothing can be exported without the design space, which is {left_out['space']}")
    if "space" not in keep:
        raise WorkspaceError("the workspace has no current design space; choose one before exporting")
    results = keep.get("results")
    samples = keep.get("samples")
    settings = {"workspace": ws.name, "origins": {s: sv.origin for s, sv in keep.items()},
                "partial": {s: sv.note for s, sv in keep.items() if sv.partial},
                "stale": {s: sv.status.reason for s, sv in keep.items() if not sv.ok}, "left_out": left_out,
                "notes": {s: sv.note for s, sv in keep.items() if sv.note and not sv.partial},
                "space_origin": keep["space"].origin}
    return Project(keep["space"].value, json.loads(samples.value.to_json()) if samples else None,
                   results.value.table if results else None, results.value.response if results else None,
                   keep["model"].value if "model" in keep else None, settings,
                   failures=_failures(ws, keep["space"].value))


def _failures(ws: Workspace, space: Any) -> Any:
    """The designs of *space* the workspace's campaigns failed to simulate (an upload's failed
    configurations among them), one row per design, for the zip's ``failures.csv``; None when none.
    A campaign's point outside the space (run on an earlier space with the same parameter names) is
    no design of this project and is left out, as loading would refuse it."""
    from .campaigns import failed_points
    from .project import points_of

    params = list(space.parameter_names)
    failed = failed_points(ws, params)
    if failed is None:
        return None
    return points_of(failed, space).drop_duplicates(subset=params).reset_index(drop=True)


def export_project(ws: Workspace, *, include_stale: bool = False) -> ProjectExport:
    """The project zip of the workspace's current stages; stale ones are left out (and listed in
    ``settings.json``) unless *include_stale*, which labels them there instead."""
    from .project import save_project

    keep, left_out = _included(ws, include_stale)
    return ProjectExport(save_project(_project(ws, keep, left_out)), left_out)


ORIGIN_CHARS = 500  # a saved origin read back from a project zip (user text) is cut to this length


def import_project(ws: Workspace, data: bytes, name: str = "project.zip",
                   adopt_name: bool = False) -> dict[str, StageValue]:
    """Load a project zip (validated completely first) into the workspace as new versions of its
    stages, in one transaction; a stage the zip lacks is removed, so nothing old looks current. The
    zip's failures (designs known to fail) are recorded as a campaign "failures of project NAME",
    where every scan finds them (:func:`~gpudse_core.workspace.campaigns.failed_points`).
    *adopt_name*: the workspace also takes the name of the one the project was saved from (the
    dashboard asks for it when the workspace still has a default name)."""
    from .project import load_project

    proj = load_project(data, name)
    saved_as = proj.settings.get("workspace")
    if adopt_name and isinstance(saved_as, str):
        try:
            saved_as = _check_name(saved_as)
        except GpudseError:  # a name that is no workspace name (control characters, too long): not adopted
            saved_as = None
    samples = proj.sample_set  # validated against the space by load_project (points of it, feasible)
    origin = f"project {name}"
    saved = proj.settings.get("origins") if isinstance(proj.settings.get("origins"), dict) else {}
    notes = proj.settings.get("notes") if isinstance(proj.settings.get("notes"), dict) else {}

    def origin_of(stage: str) -> str:
        """What made the stage where it was saved, kept through the zip (the record of a review — the
        simulator, its kernel and noise — survives a project round trip), and the zip it came in."""
        was = saved.get(stage)
        return f"{was.strip()[:ORIGIN_CHARS]} ({origin})" if isinstance(was, str) and was.strip() else origin

    def note_of(stage: str) -> str:
        was = notes.get(stage)
        return was if isinstance(was, str) else ""

    out: dict[str, StageValue] = {}
    with ws.batch():
        out["space"] = ws.set_space(proj.space, str(proj.settings.get("space_origin") or origin))
        out["samples"] = ws.set_samples(samples, origin_of("samples")) if samples is not None else ws.remove("samples")
        if proj.results is not None:
            out["results"] = ws.set_results(proj.results, proj.results_response or "cycles", origin_of("results"),
                                            note=note_of("results"))
            out["model"] = (ws.set_model(proj.model, origin_of("model")) if proj.model is not None
                            else ws.remove("model"))
        else:
            out["results"] = ws.remove("results")
            out["model"] = ws.remove("model")
        if adopt_name and isinstance(saved_as, str) and saved_as.strip() and saved_as != ws.name:
            ws.rename(saved_as)
    if proj.failures is not None and len(proj.failures):  # validated by load_project; the campaign store
        # writes through its own connection, so after the stages' transaction (the same zip again: not twice)
        ws.record_failures(f"project {name}", proj.space.name, proj.failures)
    return out


def samples_from_dict(doc: Any, space: Any, source: str = "samples") -> Any:
    """A :class:`SampleSet` from the ``{"meta": …, "points": […]}`` document ``SampleSet.to_json`` writes."""
    import numpy as np
    import pandas as pd

    from ..space.sampling import SampleSet

    if not isinstance(doc, dict) or not isinstance(doc.get("points", []), list):
        raise WorkspaceError(f"{source}: samples.json is not a sample set ({{'meta': …, 'points': [...]}})")
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    pts = pd.DataFrame(doc.get("points", []))
    missing = [p for p in space.parameter_names if p not in pts.columns]
    if len(pts) and missing:
        raise WorkspaceError(f"{source}: the samples lack parameter(s) {', '.join(missing[:5])} of the space")
    idx = pts.pop("design_index").to_numpy() if "design_index" in pts else np.arange(len(pts))
    return SampleSet(str(meta.get("space", space.name)), str(meta.get("method", "uniform")), meta.get("seed"),
                     meta.get("request", {}) if isinstance(meta.get("request"), dict) else {}, pts, idx,
                     space_size=space.size)


def report_contents(ws: Workspace, *, include_stale: bool = False) -> ReportContents:
    """What the HTML report shows: current stages and analyses only, unless *include_stale* (then
    :meth:`ReportContents.label` marks the stale ones). ``left_out`` says what was dropped and why."""
    keep, left_out = _included(ws, include_stale)
    proj = _project(ws, keep, left_out)
    data = None
    if "model" in keep and "results" in keep["model"].inputs:
        try:
            data = ws.input_of(keep["model"], "results").value.table
        except GpudseError as e:  # the results the model was fitted on are damaged (or no longer kept)
            left_out["model data"] = str(e)
    analyses = {}
    for name in ws.analyses():
        try:
            sv = ws.get(name)
        except GpudseError as e:  # a damaged analysis: named, left out
            left_out[name] = f"damaged: {e}"
            continue
        if sv.value is None:
            continue
        if isinstance(sv.value, Damaged):  # named, never shown as if it were its type
            left_out[name] = f"cannot be read: {sv.value.why}"
        elif sv.ok or include_stale:
            analyses[name] = sv
        else:
            left_out[name] = f"out of date: {sv.status.reason}"
    return ReportContents(proj, data, analyses, left_out)

