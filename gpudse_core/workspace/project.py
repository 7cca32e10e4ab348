"""Project zips: a user's space, samples, results, model and settings in one file to save and load.

A project zip holds ``manifest.json``, ``space.yaml``, ``samples.json``, ``results.csv``, ``failures.csv``,
``model.json`` and ``settings.json`` (each optional except the manifest and space). ``failures.csv`` is the
designs known to fail (an uploaded table's failed configurations, a simulator campaign's failed points):
the space's parameter columns, ``status`` and ``error``, so that the loaded copy never recommends them.
The workspace exports and imports its current parts through this module (:mod:`.exchange`); the HTML
report of a project is :mod:`gpudse_core.report.html`'s.

Loading (:func:`load_project`) is defensive and atomic:

* only those entry names, each once, no directories, absolute paths or ``..``; at most
  ``limits.archive_entries`` entries; encrypted entries and compression methods other than
  stored/deflate are refused;
* every entry is decompressed as a stream and its bytes *counted* (``limits.document_bytes`` for the
  JSON/YAML entries, ``limits.model_bytes`` for ``model.json`` (a learner's fitted trees),
  ``limits.archive_entry_bytes`` for ``results.csv``, ``limits.archive_total_bytes``
  in all): the sizes a zip declares are not trusted; a damaged entry (bad CRC, truncated data) is
  reported as such;
* every part goes through the same validating readers as single files (safeload for JSON/YAML, the
  bounded table reader for CSV; never pickle), and is checked against the project's space: samples
  are points of the space (:func:`~gpudse_core.space.sampling.sample_set_from_dict`), results carry
  its parameter columns and a numeric response, failures carry exactly its parameter columns (plus
  ``status``, never a successful one, and ``error``), both with values of the space; the model's parameters
  are the space's;
* the result is a new :class:`Project`, returned only when every part is valid, so a caller swaps
  its state only after a successful load and a bad zip changes nothing.
"""


from __future__ import annotations

import io
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .. import limits
from ..csvout import frame_text
from ..errors import GpudseError
from ..space.design import DesignSpace, parse_space_text
from ..space.sampling import SampleSet, sample_set_from_dict

SCHEMA = "gpudse.project/1"
ENTRIES = {"manifest.json", "space.yaml", "samples.json", "results.csv", "failures.csv", "model.json", "settings.json"}
FAILURE_COLUMNS = ("status", "error")  # beside the space's parameters in failures.csv
ERROR_CHARS = 500  # a failure's error text is kept up to this length (as a campaign store keeps it)
CHUNK = 1 << 20


class ProjectError(GpudseError):
    """A project zip cannot be loaded; nothing was changed."""


@dataclass
class Project:
    space: DesignSpace
    samples: dict | None = None  # {"meta": …, "points": [...]} as SampleSet.to_json writes
    results: pd.DataFrame | None = None
    results_response: str | None = None
    model: Any = None  # any fitted model kind (model.registry.load_model)
    settings: dict = field(default_factory=dict)
    sample_set: SampleSet | None = None  # the samples validated against the space (set by load_project)
    failures: pd.DataFrame | None = None  # designs known to fail: the space's parameters, status, error


def save_project(project: Project) -> bytes:
    buf = io.BytesIO()
    samples = project.samples
    if samples is None and project.sample_set is not None:
        samples = json.loads(project.sample_set.to_json())
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps({"schema": SCHEMA, "response": project.results_response}))
        zf.writestr("space.yaml", project.space.to_yaml())
        if samples is not None:
            zf.writestr("samples.json", json.dumps(samples, default=str))
        if project.results is not None:
            zf.writestr("results.csv", frame_text(project.results))
        if project.failures is not None and len(project.failures):
            zf.writestr("failures.csv", frame_text(project.failures))
        if project.model is not None:
            from ..model.registry import model_to_dict

            zf.writestr("model.json", json.dumps(model_to_dict(project.model), indent=1))  # any model kind
        zf.writestr("settings.json", json.dumps(project.settings, default=str))
    return buf.getvalue()


def _entries(data: bytes, name: str) -> dict[str, bytes]:
    """Every entry's bytes, decompressed as a stream and counted (sizes in headers are not trusted)."""
    lim = limits.current()
    lim.check("upload_bytes", len(data), f"{name}: {len(data):,} bytes")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, NotImplementedError):
        raise ProjectError(f"{name}: not a zip file (or a damaged one); load a project saved by gpudse") from None
    lim.check("archive_entries", len(infos), f"{name}: {len(infos):,} entries", f"a project has at most {len(ENTRIES)}")
    seen: set[str] = set()
    for info in infos:
        n = info.filename
        shown = repr(n) if len(n) <= 80 else repr(n[:77] + "...")
        if n.startswith(("/", "\\")) or ".." in n.replace("\\", "/").split("/") or ":" in n:
            raise ProjectError(f"{name}: entry {shown} has an unsafe path (absolute or '..'); refusing to load")
        if n not in ENTRIES:
            raise ProjectError(f"{name}: unexpected entry {shown}; a project holds only {', '.join(sorted(ENTRIES))}")
        if n in seen:
            raise ProjectError(f"{name}: entry {n} appears twice; a project holds each part once")
        seen.add(n)
        if info.flag_bits & 0x1:
            raise ProjectError(f"{name}: {n} is encrypted; gpudse projects are never encrypted — save it again")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ProjectError(f"{name}: {n} uses compression method {info.compress_type}; gpudse reads stored or "
                               f"deflated entries — save the project again with gpudse")
    out: dict[str, bytes] = {}
    total = 0
    for info in infos:
        n = info.filename
        entry_limit = {"results.csv": "archive_entry_bytes", "failures.csv": "archive_entry_bytes",
                       "model.json": "model_bytes"}.get(n, "document_bytes")
        cap = getattr(lim, entry_limit)
        lim.check(entry_limit, info.file_size, f"{name}: {n} declares {info.file_size:,} bytes unpacked")
        parts, size = [], 0
        try:
            with zf.open(info) as fh:
                while chunk := fh.read(min(CHUNK, cap + 1 - size)):
                    size += len(chunk)
                    total += len(chunk)
                    lim.check(entry_limit, size, f"{name}: {n} unpacks to more than {cap:,} bytes")
                    lim.check("archive_total_bytes", total, f"{name}: the project unpacks to more than "
                                                            f"{lim.archive_total_bytes:,} bytes")
                    parts.append(chunk)
                if size == cap + 1 or fh.read(1):  # more after the cap (never stored beyond it)
                    lim.check(entry_limit, cap + 1, f"{name}: {n} unpacks to more than {cap:,} bytes")
        except GpudseError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError,
                NotImplementedError) as e:
            raise ProjectError(f"{name}: {n} is damaged ({str(e).splitlines()[0] if str(e) else type(e).__name__}); "
                               f"the zip is corrupt — save the project again") from None
        out[n] = b"".join(parts)
    return out


def load_project(data: bytes, name: str = "project.zip") -> Project:
    """A validated :class:`Project` from zip bytes (see the module docstring); raises :class:`GpudseError`
    before anything is returned, so the caller's state is never half-replaced."""
    from ..dataio import read_table_bytes
    from ..safeload import load_json

    entries = _entries(data, name)
    for required in ("manifest.json", "space.yaml"):
        if required not in entries:
            raise ProjectError(f"{name}: {required} is missing; this is not a gpudse project")

    def js(entry: str) -> Any:  # a model file holds a learner's fitted trees: its own, larger limit
        return load_json(entries[entry], f"{name}/{entry}",
                         bytes_limit="model_bytes" if entry == "model.json" else "document_bytes")

    manifest = js("manifest.json")
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        got = manifest.get("schema") if isinstance(manifest, dict) else None
        raise ProjectError(f"{name}: manifest schema {str(got)[:40]!r} is not {SCHEMA!r}")
    response = manifest.get("response")
    if response is not None and not isinstance(response, str):
        raise ProjectError(f"{name}/manifest.json: 'response' must be a column name or null")
    space = parse_space_text(entries["space.yaml"], source=f"{name}/space.yaml")
    samples = sample_set = None
    if "samples.json" in entries:
        samples = js("samples.json")
        sample_set = sample_set_from_dict(samples, space, f"{name}/samples.json")
    results = None
    if "results.csv" in entries:
        source = f"{name}/results.csv"
        results = read_table_bytes(entries["results.csv"], source, fmt="CSV", bytes_limit="archive_entry_bytes")
        missing = [p for p in space.parameter_names if p not in results.columns]
        if missing:
            raise ProjectError(f"{source}: lacks the space's parameter column(s) {', '.join(missing[:10])}")
        if response is not None:
            if response not in results.columns:
                raise ProjectError(f"{source}: the manifest's response {response[:60]!r} is not a column")
            if pd.to_numeric(results[response], errors="coerce").notna().sum() == 0:
                raise ProjectError(f"{source}: the response {response[:60]!r} holds no numbers")
        _check_points(results, space, source)  # results are points of the space, like the samples
    failures = _failures(entries["failures.csv"], space, f"{name}/failures.csv") if "failures.csv" in entries else None
    model = None
    if "model.json" in entries:
        from ..model.registry import load_model

        model = load_model(js("model.json"), source=f"{name}/model.json")  # any model kind
        unknown = [p for p in model.parameters if p not in space.parameter_names]
        if unknown:
            raise ProjectError(f"{name}/model.json: fitted on parameter(s) {', '.join(unknown[:10])} that the "
                               f"project's space does not have")
        fitted_on = getattr(model, "response", None)
        # a model may be of any numeric column of the results (the fit page offers them all), not only the
        # manifest's response; it may not be of a column the results do not have
        if results is not None and fitted_on is not None and fitted_on not in results.columns:
            raise ProjectError(f"{name}/model.json: a model of {str(fitted_on)[:60]!r}, which is not a column of the "
                               f"project's results.csv; save the project again from gpudse")
    settings = js("settings.json") if "settings.json" in entries else {}
    if not isinstance(settings, dict):
        raise ProjectError(f"{name}/settings.json: must be an object of settings")
    return Project(space, samples, results, response, model, settings, sample_set, failures)


def _value_ok(col: pd.Series, p: Any) -> pd.Series:
    """Which entries of *col* are values of parameter *p*."""
    return (pd.to_numeric(col, errors="coerce").isin([float(v) for v in p.values]) if p.kind == "numeric"
            else col.astype(str).isin([str(v) for v in p.values]))


def points_of(frame: pd.DataFrame, space: DesignSpace) -> pd.DataFrame:
    """The rows of *frame* that are points of *space* (what a project zip may carry)."""
    keep = pd.Series(True, index=frame.index)
    for p in space.parameters:
        keep &= _value_ok(frame[p.name], p)
    return frame[keep]


def _check_points(frame: pd.DataFrame, space: DesignSpace, source: str) -> None:
    """Every row of *frame* is a point of *space* (its parameter columns hold values of the space)."""
    for p in space.parameters:
        bad = (~_value_ok(frame[p.name], p).to_numpy()).nonzero()[0].tolist()
        if bad:
            shown = ", ".join(map(str, p.values[:10])) + (", …" if p.size > 10 else "")
            raise ProjectError(f"{source}: row {bad[0] + 1}: {p.name} = {str(frame[p.name].iloc[bad[0]])[:40]} "
                               f"is not a value of the project's space ([{shown}])"
                               + (f"; {len(bad) - 1:,} more rows like it" if len(bad) > 1 else ""))


def _failures(data: bytes, space: DesignSpace, source: str) -> pd.DataFrame:
    """``failures.csv`` validated: exactly the space's parameter columns plus ``status``/``error``, every
    row a point of the space whose status is a failure (not one of ``choices.OK_STATUS``)."""
    from ..choices import OK_STATUS
    from ..dataio import read_table_bytes

    table = read_table_bytes(data, source, fmt="CSV", bytes_limit="archive_entry_bytes")
    params = list(space.parameter_names)
    missing = [p for p in params if p not in table.columns]
    if missing:
        raise ProjectError(f"{source}: lacks the space's parameter column(s) {', '.join(missing[:10])}")
    unknown = [str(c)[:40] for c in table.columns if c not in params and c not in FAILURE_COLUMNS]
    if unknown:
        raise ProjectError(f"{source}: unknown column(s) {', '.join(unknown[:10])}; failures hold the space's "
                           f"parameters, status and error only")
    _check_points(table, space, source)
    status = (table["status"].fillna("failed").astype(str).str.strip() if "status" in table.columns
              else pd.Series("failed", index=table.index))
    ran = status.str.lower().isin(OK_STATUS).to_numpy().nonzero()[0].tolist()
    if ran:
        raise ProjectError(f"{source}: row {ran[0] + 1}: status {status.iloc[ran[0]][:40]!r} means the design ran; "
                           f"failures.csv lists only designs that failed")
    error = (table["error"].fillna("").astype(str).str.slice(0, ERROR_CHARS) if "error" in table.columns
             else pd.Series("", index=table.index))
    return table[params].assign(status=status.str.slice(0, ERROR_CHARS), error=error).reset_index(drop=True)
