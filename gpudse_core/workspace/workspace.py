"""The versioned workspace: the pipeline's stages in one SQLite file, shared by id.

See the package docstring (:mod:`gpudse_core.workspace`) for the API the pages use.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from .. import limits
from ..atomicfile import PAUSE_AT_ENV, pause_at
from ..errors import GpudseError
from . import codec, pending
from . import db as dbm
from . import results as typed_results
from .db import NotFound, ReadOnly, WorkspaceError
from .stages import (
    BASE_STAGES,
    DEFAULT_INPUTS,
    Head,
    InputRef,
    Results,
    StageError,
    StageValue,
    Status,
    blocker,
    check_inputs,
    check_stage,
    missing,
    noun,
    status_of,
    statuses,
)

DEFAULT_NAME = "Untitled workspace"
_CACHE_ENTRIES = 8
_APP_NAMES = ("app", "application", "kernel", "benchmark", "workload")


class Conflict(WorkspaceError):
    """Someone else changed the stage since this session read it (an optimistic version check failed)."""


class NotReady(WorkspaceError):
    """A stage needed by a page is stale or missing; ``status`` says why and what fixes it."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status


@dataclass(frozen=True)
class VersionInfo:
    """A row of a stage's history (no value)."""

    stage: str
    version: int
    revision: int
    created: float
    origin: str
    removed: bool
    partial: bool
    note: str
    bytes: int
    inputs: Mapping[str, InputRef]
    head: bool


@dataclass(frozen=True)
class Change:
    """A change another handle made (:meth:`Workspace.changes_since`): the stage version it stored
    (``version`` None: a change that stored none, such as a kept version made current again)."""

    stage: str
    version: int | None
    revision: int
    created: float | None
    origin: str


@dataclass(frozen=True)
class WorkspaceInfo:
    id: str
    name: str
    created: float
    updated: float
    revision: int
    forked_from: str | None
    bytes: int
    stages: Mapping[str, str]  # stage -> current | stale | missing


class Workspace:
    """A handle on one workspace. Open with :func:`open_workspace`, make with :func:`create_workspace`.

    A handle may be kept across page runs and used from several threads (one operation at a time);
    each job thread opens its own. ``writable`` is False for a workspace opened without its key.
    """

    def __init__(self, path: Path, ws_id: str, writable: bool):
        self.path = path
        self.id = ws_id
        self._writable = writable
        self._db = dbm.connect(path, readonly=not writable)  # read-only: SQLite refuses writes (query_only)
        self._lock = threading.RLock()
        self._depth = 0
        self._cache: OrderedDict[tuple[str, int, str], Any] = OrderedDict()  # (stage, version, digest)
        self._damaged: dict[str, str] = {}
        self._unreadable: dict[str, tuple[int, str]] = {}  # stage: (version, why) whose value failed to decode
        # revisions this handle made, and the jobs it started (their handles share the set: jobs.opener), so a
        # page tells its own changes from another tab's, session's or the CLI's (changes_since)
        self.written: set[int] = set()
        # a page sets the revision the view a user acted on showed: a write is then refused (Conflict) when
        # other handles changed the workspace after it, so one tab never silently overwrites another's change
        self.guard: int | None = None

    # ---- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Workspace {self.id[:6]}… {'rw' if self.writable else 'read-only'}>"

    @property
    def writable(self) -> bool:
        """True when this handle may change the workspace (its key, a single-user server, the CLI)."""
        return self._writable

    @writable.setter
    def writable(self, value: bool) -> None:
        value = bool(value)
        if value != self._writable:
            with self._lock:
                dbm.set_readonly(self._db, not value)
            self._writable = value

    @property
    def read_only(self) -> bool:
        return not self.writable

    # ---- metadata ------------------------------------------------------------------------------
    def _meta(self) -> tuple:
        row = self._db.execute("SELECT id, name, created, updated, revision, forked_from, deleted, key_hash "
                               "FROM ws_meta").fetchone()
        if row is None or row[6]:
            raise NotFound(f"workspace {self.id[:6]}…: it has been deleted")
        return row

    def info(self) -> WorkspaceInfo:
        with self._lock:
            _, name, created, updated, revision, forked, _, _ = self._meta()
            st = {s: v.state for s, v in statuses(self.heads()).items()}
        return WorkspaceInfo(self.id, name, created, updated, revision, forked, _file_bytes(self.path), st)

    @property
    def name(self) -> str:
        with self._lock:
            return self._meta()[1]

    @property
    def revision(self) -> int:
        """A counter raised by every change: a page compares it to see another session's changes."""
        with self._lock:
            return int(self._meta()[4])

    def changes_since(self, revision: int) -> list[Change]:
        """What other handles changed after *revision* (another tab or session, the CLI): each stored
        version, oldest first, and one entry for a change that stored none (a kept version made current
        again); changes by this handle or the jobs it started are left out (:attr:`written`)."""
        with self._lock:
            return self._changes(int(revision), int(self._meta()[4]))

    def _changes(self, after: int, now: int) -> list[Change]:
        theirs = set(range(after + 1, now + 1)) - self.written
        if not theirs:
            return []
        rows = self._db.execute("SELECT stage, version, revision, created, origin FROM ws_stage "
                                "WHERE revision > ? AND revision <= ? ORDER BY revision", (after, now)).fetchall()
        out = [Change(str(r[0]), int(r[1]), int(r[2]), float(r[3]), str(r[4] or "")) for r in rows if r[2] in theirs]
        if len(out) < len(theirs):  # a revision without a stored version of its own (reuse, a dropped record)
            out.append(Change("", None, max(theirs - {c.revision for c in out}), None, ""))
        return out

    def rename(self, name: str) -> None:
        name = _check_name(name)
        with self._write("rename it"):
            self._db.execute("UPDATE ws_meta SET name = ?, updated = ?", (name, time.time()))

    # ---- reading -------------------------------------------------------------------------------
    def heads(self) -> dict[str, Head]:
        with self._lock:
            rows = self._db.execute(
                "SELECT h.stage, h.version, s.digest, s.inputs, s.partial, s.note, s.stage IS NULL FROM ws_head h "
                "LEFT JOIN ws_stage s ON s.stage = h.stage AND s.version = h.version").fetchall()
        heads, damaged = {}, {}
        for r in rows:  # a damaged row is left out (its stage reads as missing) and named in .damaged()
            try:
                if r[6] or not isinstance(r[1], int) or (r[2] is not None and not isinstance(r[2], str)):
                    raise StageDamaged(f"the stored {noun(r[0])} (version {r[1]!r}) is damaged: its version or "
                                       f"digest is not what gpudse writes; drop it and compute it again")
                heads[r[0]] = Head(r[0], r[1], r[2], _inputs(r[3], r[0], r[1]), bool(r[4]), str(r[5] or ""))
            except StageDamaged as e:
                damaged[r[0]] = str(e)
        self._damaged = damaged
        return heads

    def damaged(self) -> dict[str, str]:
        """{stage: what is wrong} for current versions whose stored record cannot be read (the analyses of
        results.READ_TO_NAME are read to know: a tampered study is named here before any page reads it)."""
        heads = self.heads()
        out = dict(self._damaged)
        for stage in typed_results.READ_TO_NAME:  # read (cached) so a damaged one is named here
            if stage in heads and stage not in out and heads[stage].digest is not None:
                with contextlib.suppress(GpudseError):
                    self.get(stage)
        for stage, (version, why) in self._unreadable.items():
            if stage not in out and stage in heads and heads[stage].version == version:
                out[stage] = why
        return out

    def drop_damaged(self, stage: str) -> None:
        """Forget a damaged current version of *stage* (the stage becomes missing; earlier versions stay)."""
        check_stage(stage)
        with self._write(f"drop the damaged {noun(stage)}", stage):
            head = self._db.execute("SELECT version FROM ws_head WHERE stage = ?", (stage,)).fetchone()
            self._db.execute("DELETE FROM ws_head WHERE stage = ?", (stage,))
            if head is not None:
                self._db.execute("DELETE FROM ws_stage WHERE stage = ? AND version IS ?", (stage, head[0]))
            self._db.execute("UPDATE ws_meta SET revision = revision + 1, updated = ?", (time.time(),))
        self._cache.clear()
        self._unreadable.pop(stage, None)

    def status(self, stage: str) -> Status:
        """``current``, ``stale`` (with the reason and the action that fixes it) or ``missing``."""
        return status_of(check_stage(stage), self.heads())

    def overview(self) -> dict[str, Status]:
        """The status of every base stage (in pipeline order) and of every stored analysis."""
        return statuses(self.heads())

    def analyses(self) -> list[str]:
        return sorted(s for s in self.heads() if s not in BASE_STAGES)

    def ready(self, *stages: str) -> Status | None:
        """None when every stage in *stages* is current; else the first status (in pipeline order,
        tracing missing stages to what they need first) that a page should show as its banner."""
        return blocker(stages, self.heads())

    def require(self, *stages: str) -> tuple[StageValue, ...]:
        """The current values of *stages*; raises :class:`NotReady` with the banner's status if not."""
        with self._snapshot():  # one consistent view, even while another session writes
            block = self.ready(*stages)
            if block is not None:
                raise NotReady(block)
            return tuple(self.get(s) for s in stages)

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        with self._lock:
            if self._db.in_transaction:
                yield
                return
            self._db.execute("BEGIN")  # deferred: a read snapshot (WAL), no lock on writers
            try:
                yield
            finally:
                self._db.execute("COMMIT")

    def get(self, stage: str, version: int | None = None) -> StageValue:
        """The stage's current version (or *version*), with its status; a missing stage gives a
        StageValue whose value is None."""
        check_stage(stage)
        with self._lock:
            heads = self.heads()
            head = heads.get(stage)
            if version is None:
                if head is None:
                    return StageValue(stage, None, 0, missing(stage))
                version = head.version
            row = self._db.execute(
                "SELECT version, revision, created, origin, inputs, digest, format, value, partial, note "
                "FROM ws_stage WHERE stage = ? AND version = ?", (stage, version)).fetchone()
            if row is None:
                raise WorkspaceError(f"{noun(stage)} version {version} is not kept in this workspace (only the "
                                     f"last {limits.current().workspace_history} versions are); compute it again")
            status = status_of(stage, heads)
            if head is None or (version != head.version and row[5] != head.digest):
                status = Status(stage, "stale", f"version {version} is not the current {noun(stage)}",
                                f"Use the current {noun(stage)}", stage)
            value = None if row[5] is None else self._decode(stage, version, row[6], row[7], row[5])
        return StageValue(stage, value, version, status, row[5], _inputs(row[4], stage, version), row[3], row[2],
                          bool(row[8]), row[9], row[1])

    def value(self, stage: str) -> Any:
        """The stage's value when it is current, else None (for code that only shows current values)."""
        sv = self.get(stage)
        return sv.value if sv.ok else None

    def input_of(self, sv: StageValue, stage: str) -> StageValue:
        """The version of *stage* that *sv* was computed from (e.g. the results a model was fitted on)."""
        ref = sv.inputs.get(stage)
        if ref is None:
            raise StageError(f"{sv.stage} was not computed from the {noun(stage)}")
        return self.get(stage, ref.version)

    def history(self, stage: str) -> list[VersionInfo]:
        check_stage(stage)
        with self._lock:
            head = self._db.execute("SELECT version FROM ws_head WHERE stage = ?", (stage,)).fetchone()
            rows = self._db.execute("SELECT version, revision, created, origin, digest, partial, note, bytes, inputs "
                                    "FROM ws_stage WHERE stage = ? ORDER BY version", (stage,)).fetchall()
        return [VersionInfo(stage, r[0], r[1], r[2], r[3], r[4] is None, bool(r[5]), r[6], r[7], _inputs(r[8]),
                            head is not None and head[0] == r[0]) for r in rows]

    def _decode(self, stage: str, version: int, fmt: str, blob: bytes, digest: str = "") -> Any:
        key = (stage, version, digest)  # a record grown in place (a running search) has a new digest
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        what = f"workspace {self.id[:6]}…: {noun(stage)} v{version}"
        try:
            value = codec.decode(fmt, blob, what=what)
            _check_stored(stage, value, what)  # a base stage's value
        except GpudseError as e:  # remembered so the page can name the stage and offer to drop it
            self._unreadable[stage] = (version, str(e))
            raise
        value = typed_results.read(stage, version, value)  # a registered analysis as its class
        if isinstance(value, typed_results.Damaged):  # named on the page, with the offer to drop it
            self._unreadable[stage] = (version, value.message())
        self._cache[key] = value
        while len(self._cache) > _CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return value

    # ---- writing -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write(self, action: str, stage: str | None = None) -> Iterator[None]:
        """One transaction of this handle's (nested ones join the outer). With :attr:`guard` set, refused
        (Conflict, nothing written) when another handle changed a pipeline stage or *stage* after it."""
        if not self.writable:
            raise ReadOnly(f"this workspace is shared with you read-only; to {action}, make your own copy first "
                           f"(fork)")
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._depth = 1
            try:
                with dbm.transaction(self._db):
                    before = int(self._meta()[4])
                    theirs = [c for c in (self._changes(self.guard, before) if self.guard is not None else [])
                              if c.version is None or c.stage in BASE_STAGES or c.stage == stage]
                    if theirs:  # a pipeline stage (what everything is computed from) or this very stage
                        raise Conflict(f"this workspace was changed by another session or tab after the view you "
                                       f"acted on was drawn ({len(theirs):,} change(s)), so nothing was done (to "
                                       f"{action}): look at it as it is now and do it again if you still want to")
                    yield
                    row = self._db.execute("SELECT revision FROM ws_meta").fetchone()  # a delete marks it deleted
                    after = int(row[0]) if row is not None else before
                # committed: the revisions in between are this handle's (writers queue on BEGIN IMMEDIATE)
                self.written.update(range(before + 1, after + 1))
            finally:
                self._depth = 0

    @contextlib.contextmanager
    def batch(self) -> Iterator[Workspace]:
        """Several changes in one transaction: all of them or none (a project import, the example)."""
        with self._write("change it"):
            yield self

    def put(self, stage: str, value: Any, *, inputs: Sequence[str | StageValue] | None = None, origin: str = "",
            partial: bool = False, note: str = "", expect: int | None = None) -> StageValue:
        """Store a new version of *stage*; it becomes the current one.

        *inputs*: the stages it was computed from — a name records that stage's current version, a
        :class:`StageValue` records the version the caller actually read (race-free; prefer it).
        Defaults: samples ← space, results ← space, model ← results; an analysis must name them.
        *expect*: the version the caller last saw; if another session wrote one since,
        :class:`Conflict` is raised and nothing is stored.
        """
        check_stage(stage)
        if inputs is None:
            if stage not in BASE_STAGES:
                raise StageError(f"analysis {stage!r}: name the stages it was computed from (inputs=[...]; "
                                 f"[] when none)")
            inputs = DEFAULT_INPUTS[stage]
        names = [i.stage if isinstance(i, StageValue) else i for i in inputs]
        check_inputs(stage, names)
        _check_value(stage, value)
        value = typed_results.typed(stage, value)  # a registered analysis: its class, checked
        fmt, blob = codec.encode(typed_results.stored_form(stage, value), what=f"{noun(stage)}")
        lim = limits.current()
        lim.check("workspace_stage_bytes", len(blob), f"{noun(stage)} ({fmt})", "store a smaller table")
        lim.check("workspace_bytes", _file_bytes(self.path) + len(blob), f"workspace {self.id[:6]}…",
                  "delete old workspaces or analyses")
        digest = hashlib.sha256(fmt.encode() + b"\0" + blob).hexdigest()
        return self._store(stage, value, fmt, blob, digest, inputs, origin, partial, note, expect)

    def _store(self, stage: str, value: Any, fmt: str | None, blob: bytes | None, digest: str | None,
               inputs: Sequence[Any], origin: str, partial: bool, note: str, expect: int | None,
               action: str = "change it") -> StageValue:
        with self._write(action, stage):
            heads = self.heads()
            head = heads.get(stage)
            if expect is not None and (head.version if head else 0) != expect:
                raise Conflict(f"the {noun(stage)} was changed by another session (now version "
                               f"{head.version if head else 0}, you had {expect}); reload the page to see it")
            if head is None and stage not in BASE_STAGES:
                n = sum(1 for s in heads if s not in BASE_STAGES)
                limits.check("workspace_analyses", n + 1, f"workspace {self.id[:6]}…: analyses",
                             "remove analyses you no longer need")
            refs: dict[str, dict] = {}
            for i in inputs:
                if isinstance(i, StageValue):
                    if not i.version:
                        raise StageError(f"{noun(stage)}: its input {noun(i.stage)} is missing")
                    refs[i.stage] = {"version": i.version, "digest": i.digest}
                    continue
                h = heads.get(i)
                if h is None or h.digest is None:
                    raise StageError(f"{noun(stage)} is computed from the {noun(i)}, and there is none yet; "
                                     f"{missing(i).action.lower()} first")
                refs[i] = {"version": h.version, "digest": h.digest}
            if head is not None and digest is not None and head.digest == digest and not partial:
                same = self._db.execute("SELECT inputs, origin, partial FROM ws_stage WHERE stage = ? AND version = ?",
                                        (stage, head.version)).fetchone()
                if same is not None and json.loads(same[0] or "{}") == refs and same[1] == str(origin)[:1000] \
                        and not same[2]:
                    # the same value from the same inputs, again (a double click): no second version
                    return StageValue(stage, value, head.version, status_of(stage, heads), digest,
                                      _inputs(same[0]), origin, time.time(), False, "", int(self._meta()[4]))
            if head is not None and digest is not None and value is not None and typed_results.growable(stage) \
                    and typed_results.grows(stage, self._head_value(stage, head), value):
                # the same record grown (a running search's next round): one version, rewritten in place
                return self._rewrite(stage, head.version, value, fmt, blob, digest, refs, origin, partial, note)
            version = int(self._db.execute("SELECT COALESCE(MAX(version), 0) + 1 FROM ws_stage WHERE stage = ?",
                                           (stage,)).fetchone()[0])
            revision = int(self._meta()[4]) + 1
            now = time.time()
            self._db.execute(
                "INSERT INTO ws_stage (stage, version, revision, created, origin, inputs, digest, format, value, "
                "bytes, partial, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (stage, version, revision, now, str(origin)[:1000], json.dumps(refs, sort_keys=True), digest, fmt,
                 blob, len(blob or b""), int(partial), str(note)[:1000]))
            self._db.execute("INSERT INTO ws_head (stage, version) VALUES (?, ?) ON CONFLICT(stage) DO UPDATE SET "
                             "version = excluded.version", (stage, version))
            # a version number freed by a dropped record is used again: no fingerprint of the old fit survives
            self._db.execute("DELETE FROM ws_fit WHERE stage = ? AND version = ?", (stage, version))
            self._db.execute("UPDATE ws_meta SET revision = ?, updated = ?", (revision, now))
            self._prune(stage)
            status = status_of(stage, self.heads())
        return StageValue(stage, value, version, status, digest, _inputs(json.dumps(refs)), origin, now, partial,
                          note, revision)

    def _head_value(self, stage: str, head: Head) -> Any:
        """The current value of *stage* (None when it cannot be read: it is then never rewritten)."""
        try:
            return self.get(stage, head.version).value
        except GpudseError:
            return None

    def _rewrite(self, stage: str, version: int, value: Any, fmt: str | None, blob: bytes | None,
                 digest: str | None, refs: dict, origin: str, partial: bool, note: str) -> StageValue:
        """Replace version *version* of *stage* in place (inside the caller's transaction: until it
        commits, every reader — and a process killed mid-write — keeps the previous record)."""
        revision = int(self._meta()[4]) + 1
        now = time.time()
        self._db.execute(
            "UPDATE ws_stage SET revision = ?, created = ?, origin = ?, inputs = ?, digest = ?, format = ?, value = ?, "
            "bytes = ?, partial = ?, note = ? WHERE stage = ? AND version = ?",
            (revision, now, str(origin)[:1000], json.dumps(refs, sort_keys=True), digest, fmt, blob, len(blob or b""),
             int(partial), str(note)[:1000], stage, version))
        self._db.execute("DELETE FROM ws_fit WHERE stage = ? AND version = ?", (stage, version))
        self._db.execute("UPDATE ws_meta SET revision = ?, updated = ?", (revision, now))
        self._unreadable.pop(stage, None)
        pause_at("rewrite")  # tests: a process killed here leaves the previous record
        return StageValue(stage, value, version, status_of(stage, self.heads()), digest, _inputs(json.dumps(refs)),
                          origin, now, partial, note, revision)

    def _prune(self, stage: str) -> None:
        keep = limits.current().workspace_history
        needed = {v for (s, v) in self._db.execute("SELECT stage, version FROM ws_head") if s == stage}
        for (raw,) in self._db.execute("SELECT s.inputs FROM ws_head h JOIN ws_stage s ON s.stage = h.stage AND "
                                       "s.version = h.version").fetchall():
            needed |= {ref.version for name, ref in _inputs(raw).items() if name == stage}
        old = [v for (v,) in self._db.execute("SELECT version FROM ws_stage WHERE stage = ? ORDER BY version DESC "
                                              "LIMIT -1 OFFSET ?", (stage, keep)).fetchall() if v not in needed]
        self._db.executemany("DELETE FROM ws_stage WHERE stage = ? AND version = ?", ((stage, v) for v in old))
        self._db.executemany("DELETE FROM ws_fit WHERE stage = ? AND version = ?", ((stage, v) for v in old))

    def set_space(self, space: Any, origin: str = "", *, expect: int | None = None) -> StageValue:
        """A new design space: samples, results, model and analyses made from another become stale."""
        return self.put("space", space, inputs=(), origin=origin, expect=expect)

    def set_samples(self, samples: Any, origin: str = "", *, inputs: Sequence[Any] = ("space",),
                    expect: int | None = None) -> StageValue:
        return self.put("samples", samples, inputs=inputs, origin=origin, expect=expect)

    def set_results(self, table: Any, response: str, origin: str = "", *, app_column: str | None = "auto",
                    inputs: Sequence[Any] = ("space",), partial: bool = False, note: str = "",
                    expect: int | None = None) -> StageValue:
        """A results table with the response to model and the application column (``"auto"``: a text
        column named app, application, kernel, benchmark or workload with 2–30 values, if any).
        From a campaign of the current samples, pass ``inputs=("space", "samples")``."""
        if app_column == "auto":
            sv = self.get("space")
            params = set(sv.value.parameter_names) if sv.value is not None else set()
            app_column = application_column(table, params)
        return self.put("results", Results(table, response, app_column), inputs=inputs, origin=origin,
                        partial=partial, note=note, expect=expect)

    def set_model(self, model: Any, origin: str = "", *, inputs: Sequence[Any] = ("results",),
                  expect: int | None = None) -> StageValue:
        """A fitted model (any kind with ``to_dict``); analyses computed with another become stale."""
        return self.put("model", model, inputs=inputs, origin=origin, expect=expect)

    def put_analysis(self, name: str, value: Any, *, inputs: Sequence[Any], origin: str = "",
                     partial: bool = False, note: str = "", expect: int | None = None) -> StageValue:
        """An analysis (validation, scan, curves, a ray-tracing plan …) under *name*, computed from
        *inputs* (e.g. ``["model", "space"]``; ``[]`` for one that depends on no stage)."""
        if name in BASE_STAGES:
            raise StageError(f"{name!r} is a pipeline stage, not an analysis name")
        return self.put(name, value, inputs=inputs, origin=origin, partial=partial, note=note, expect=expect)

    def put_fit(self, stage: str, value: Any, fingerprint: str, *, inputs: Sequence[Any], origin: str = "",
                expect: int | None = None) -> StageValue:
        """Store a fitted *value* (the model) with the *fingerprint* of the data and settings it was
        fitted from, so that :meth:`fitted_version` finds it when the same fit is asked for again."""
        with self._write(f"store the {noun(stage)}", stage):
            sv = self.put(stage, value, inputs=inputs, origin=origin, expect=expect)
            self._db.execute("INSERT INTO ws_fit (stage, version, fingerprint) VALUES (?, ?, ?) ON CONFLICT(stage, "
                             "version) DO UPDATE SET fingerprint = excluded.fingerprint",
                             (stage, sv.version, fingerprint))
        return sv

    def fitted_version(self, stage: str, fingerprint: str) -> int | None:
        """The newest kept version of *stage* fitted with *fingerprint* (None: no such fit is stored)."""
        with self._lock:
            try:
                row = self._db.execute(
                    "SELECT MAX(f.version) FROM ws_fit f "
                    "JOIN ws_stage s ON s.stage = f.stage AND s.version = f.version "
                    "WHERE f.stage = ? AND f.fingerprint = ? AND s.digest IS NOT NULL AND s.partial = 0",
                    (stage, fingerprint)).fetchone()
            except sqlite3.OperationalError:  # a file written before fits were fingerprinted, opened read-only
                return None
        try:
            return None if row is None or row[0] is None else int(row[0])
        except (TypeError, ValueError):  # a damaged record: fit again rather than fail
            return None

    def reuse(self, stage: str, version: int) -> StageValue:
        """Make a kept *version* current again as itself (no new version): what was computed from it —
        analyses, per-application models — is current again. Returns that version."""
        check_stage(stage)
        with self._write(f"reuse the {noun(stage)}", stage):
            row = self._db.execute("SELECT digest FROM ws_stage WHERE stage = ? AND version = ?",
                                   (stage, version)).fetchone()
            if row is None or row[0] is None:
                raise WorkspaceError(f"{noun(stage)} version {version} is not kept (or was a removal)")
            self._db.execute("INSERT INTO ws_head (stage, version) VALUES (?, ?) ON CONFLICT(stage) DO UPDATE SET "
                             "version = excluded.version", (stage, version))
            self._db.execute("UPDATE ws_meta SET revision = revision + 1, updated = ?", (time.time(),))
        return self.get(stage, version)

    def remove(self, stage: str, *, expect: int | None = None) -> StageValue:
        """Mark *stage* removed (a new, empty version): what was computed from it becomes stale."""
        check_stage(stage)
        return self._store(stage, None, None, None, None, (), "removed", False, "", expect, f"remove the {noun(stage)}")

    def restore(self, stage: str, version: int) -> StageValue:
        """Make an earlier version current again (as a new version with the same content, so what
        was computed from that content is current again)."""
        check_stage(stage)
        with self._write(f"restore the {noun(stage)}", stage):
            row = self._db.execute("SELECT origin, inputs, digest, format, value, partial, note FROM ws_stage "
                                   "WHERE stage = ? AND version = ?", (stage, version)).fetchone()
            if row is None or row[2] is None:
                raise WorkspaceError(f"{noun(stage)} version {version} is not kept (or was a removal)")
            refs = [StageValue(s, None, r.version, Status(s, "current"), r.digest) for s, r in _inputs(row[1]).items()]
            sv = self._store(stage, None, row[3], row[4], row[2], refs, f"restored v{version}: {row[0]}", bool(row[5]),
                             row[6], None)
        return self.get(stage, sv.version)

    # ---- sharing -------------------------------------------------------------------------------
    def fork(self, name: str | None = None, client: str | None = None) -> tuple[Workspace, str]:
        """Your own copy (allowed on a read-only workspace): ``(workspace, edit key)``. It has the same
        stages and history; jobs stay with the original. While it is copied (and if the process is
        killed mid-copy, until the next open or listing) it counts against *client*'s budget
        (:mod:`pending`)."""
        root = self.path.parent.parent
        _check_room(root)
        new_id, key = dbm.new_token(), dbm.new_token()
        dst = self.path.parent / f"{new_id}.db"
        tmp = pending.tmp_path(self.path.parent, new_id, "fork", client)
        with self._lock, _tmp_removed_on_failure(tmp):
            src_name = self._meta()[1]
            out = dbm.connect(tmp, create=True, schema=False)
            try:
                if os.environ.get(PAUSE_AT_ENV) == "fork-copy":  # tests: stop half-way through the copy
                    self._db.backup(out, pages=1, progress=lambda _s, left, _t: left and pause_at("fork-copy"))
                else:
                    self._db.backup(out)
                now = time.time()
                out.execute("UPDATE ws_meta SET id = ?, name = ?, key_hash = ?, forked_from = ?, created = ?, "
                            "updated = ?",
                            (new_id, _check_name(name or f"{src_name} (copy)"), dbm.key_hash(key), self.id, now, now))
                out.execute("DELETE FROM ws_job")
                out.commit()
                out.execute("PRAGMA journal_mode=DELETE")
            finally:
                out.close()
        os.replace(tmp, dst)
        return Workspace(dst, new_id, True), key

    def delete(self) -> None:
        """Delete the workspace for good (its file, stages, jobs and campaigns)."""
        with self._write("delete it"):
            self._db.execute("UPDATE ws_meta SET deleted = 1")
        self.close()
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    # ---- jobs and campaigns (see jobs.py, campaigns.py) -----------------------------------------
    def start_job(self, kind: str, work: Any, **kw: Any) -> Any:
        from .jobs import start_job

        return start_job(self, kind, work, **kw)

    def jobs(self, active: bool = False) -> list[Any]:
        from .jobs import list_jobs

        return list_jobs(self, active=active)

    def job(self, job_id: str) -> Any:
        from .jobs import job_info

        return job_info(self, job_id)

    def stop_job(self, job_id: str) -> None:
        from .jobs import stop_job

        stop_job(self, job_id)

    def campaigns(self) -> list[Any]:
        from .campaigns import list_campaigns

        return list_campaigns(self)

    def adopt_campaign(self, name: str, **kw: Any) -> StageValue:
        from .campaigns import adopt_campaign

        return adopt_campaign(self, name, **kw)

    def record_failures(self, source: str, space: str, failures: Any) -> str:
        from .campaigns import record_failures

        return record_failures(self, source, space, failures)


# ---- module functions --------------------------------------------------------------------------
def create_workspace(name: str = DEFAULT_NAME, root: str | Path | None = None) -> tuple[Workspace, str]:
    """A new, empty workspace: ``(workspace, edit key)``. Keep the key: it is what allows changes."""
    name = _check_name(name)
    d = dbm.workspaces_dir(root, create=True)
    _check_room(d.parent)
    ws_id, key = dbm.new_token(), dbm.new_token()
    path = d / f"{ws_id}.db"
    tmp = pending.tmp_path(d, ws_id, "new")
    with _tmp_removed_on_failure(tmp):
        con = dbm.connect(tmp, create=True)
        try:
            now = time.time()
            con.execute("INSERT INTO ws_meta (id, name, created, updated, key_hash, schema) VALUES (?, ?, ?, ?, ?, ?)",
                        (ws_id, name, now, now, dbm.key_hash(key), dbm.SCHEMA_NAME))
            con.execute("PRAGMA journal_mode=DELETE")
        finally:
            con.close()
    os.replace(tmp, path)
    return Workspace(path, ws_id, True), key


def open_workspace(ws_id: str, key: str | None = None, root: str | Path | None = None, *,
                   trusted: bool = False) -> Workspace:
    """The workspace *ws_id* — writable with its edit *key* (or on a single-user server, or *trusted*:
    the command line, whose user owns the files), read-only otherwise."""
    path = dbm.path_of(ws_id, root)
    pending.sweep(root)  # copies left by killed processes go at the next open (at most once a second)
    if not path.is_file():
        raise NotFound(f"no workspace {ws_id[:6]}… here ({path.parent}); it may have been deleted, or belong "
                       f"to another server (set ${dbm.HOME_ENV})")
    ws = Workspace(path, ws_id, False)
    try:
        meta = ws._meta()
    except WorkspaceError:
        ws.close()
        raise
    ws.writable = trusted or dbm.single_user() or dbm.key_matches(key, meta[7])
    return ws


def list_workspaces(root: str | Path | None = None, ids: Sequence[str] | None = None, *,
                    trusted: bool = False, skipped: list[tuple[str, str]] | None = None) -> list[WorkspaceInfo]:
    """Workspaces, most recently changed first: those in *ids* (the ones a browser holds keys for),
    or every one on a single-user server or for a *trusted* caller (the command line). A file that
    cannot be read (empty, foreign, damaged) is left out, and named with the reason in *skipped*."""
    d = dbm.workspaces_dir(root)
    if ids is None:
        if not (trusted or dbm.single_user()):
            raise ReadOnly(f"listing every workspace is allowed only on a single-user server "
                           f"({dbm.SINGLE_USER_ENV}=1); open a workspace by its link")
        ids = sorted(p.stem for p in d.glob("*.db")) if d.is_dir() else []
    pending.sweep(root, force=True)
    building = pending.building_templates(root)
    for ws_id, gone in building.items():  # a template build killed half-way: deleted now, never listed
        if gone:
            with contextlib.suppress(GpudseError, sqlite3.Error, OSError):
                with open_workspace(ws_id, root=root, trusted=True) as half:
                    half.delete()
            pending.forget_template(ws_id, root)
    ids = [i for i in ids if i not in building]
    limits.check("workspaces", len(ids), "workspaces to list")
    out = []
    for ws_id in ids:
        try:
            with open_workspace(ws_id, root=root) as ws:
                out.append(ws.info())
        except NotFound:
            continue  # deleted meanwhile
        except (GpudseError, sqlite3.Error, ValueError, TypeError, KeyError) as e:  # one bad file hides no other
            if skipped is not None:
                skipped.append((ws_id, str(e)))
    return sorted(out, key=lambda i: -i.updated)


def application_column(table: Any, params: set[str] | Sequence[str] = ()) -> str | None:
    """A text column naming each row's application (app, application, kernel, benchmark, workload)
    with 2–30 distinct values, if the table has one."""
    for c in table.columns:
        if c in params or str(c).lower() not in _APP_NAMES:
            continue
        col = table[c]
        if col.dtype.kind in "OUS" and 1 < col.nunique() <= 30:
            return c
    return None


def _check_value(stage: str, value: Any) -> None:
    expected = {"space": "DesignSpace", "samples": "SampleSet", "results": "Results"}
    if stage in expected and type(value).__name__ != expected[stage]:
        raise StageError(f"the {noun(stage)} stage holds a {expected[stage]}, not a {type(value).__name__}")
    if stage == "model" and not (callable(getattr(value, "to_dict", None))
                                 and callable(getattr(value, "predict", None))):
        raise StageError("the model stage holds a fitted model (with predict and to_dict), not a "
                         f"{type(value).__name__}")
    if stage == "results":
        t = value.table
        lim = limits.current()
        lim.check("table_rows", len(t), "results")
        lim.check("table_columns", len(t.columns), "results")
        if value.response not in t.columns:
            raise StageError(f"results: the response column {value.response!r} is not in the table; columns: "
                             f"{', '.join(map(str, t.columns[:20]))}")
        if t[value.response].dtype.kind not in "iuf":
            raise StageError(f"results: the response column {value.response!r} is not numeric")
        if value.app_column is not None and value.app_column not in t.columns:
            raise StageError(f"results: the application column {value.app_column!r} is not in the table")


def _check_stored(stage: str, value: Any, what: str) -> None:
    """A decoded base-stage value is what that stage holds, with consistent parts (a forged or damaged
    stored value that decodes to something else is refused here, once, instead of failing with an
    AttributeError wherever it is used: export, report, a page)."""
    try:
        _check_value(stage, value)
        if stage == "samples":
            n = len(value.indices)
            idx = value.indices
            if getattr(idx, "ndim", 0) != 1 or not (idx.dtype.kind in "iu" or (  # beyond 2^63: Python ints
                    idx.dtype.kind == "O" and all(type(i) is int for i in idx.tolist()))):
                raise StageError("its design indices are not one column of whole numbers")
            if not isinstance(value.columns, dict) or any(getattr(v, "shape", None) != (n,)
                                                          for v in value.columns.values()):
                raise StageError(f"its columns are not {n:,} values each, one per design index")
        elif stage == "results" and (not isinstance(value.response, str) or not hasattr(value.table, "columns")):
            raise StageError("it is not a table with a named response")
    except (StageError, AttributeError, TypeError, ValueError) as e:
        raise codec.CodecError(f"{what}: the stored value is damaged ({e}); drop it and compute it again") from None


def _check_name(name: Any) -> str:
    text = " ".join(str(name).split())
    if not text:
        raise WorkspaceError("a workspace name cannot be empty")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise WorkspaceError(f"a workspace name cannot hold control characters (got {text[:40]!r}); use letters, "
                             f"digits, spaces and punctuation")
    limits.check("workspace_name_chars", len(text), "workspace name")
    return text


def _check_room(root: Path) -> None:
    d = dbm.workspaces_dir(root)
    n = sum(1 for _ in d.glob("*.db")) if d.is_dir() else 0
    n += pending.pending_copies(root=root)  # copies being written (or left by a kill, until swept)
    limits.check("workspaces", n + 1, f"workspaces in {d}", "delete old workspaces")


@contextlib.contextmanager
def _tmp_removed_on_failure(tmp: Path) -> Iterator[None]:
    """A new workspace file being written: removed if writing it fails (a full disk: "disk full")."""
    try:
        yield
    except BaseException as e:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{tmp}{suffix}")
        if isinstance(e, sqlite3.Error):
            raise dbm.storage_error(e, tmp) from None
        raise


class StageDamaged(WorkspaceError):
    """A stored stage version's record cannot be read (a damaged row): that stage only is affected."""


def _inputs(raw: Any, stage: str = "", version: Any = None) -> dict[str, InputRef]:
    try:
        doc = json.loads(raw or "{}")
        out = {str(k): InputRef(int(v["version"]), v.get("digest")) for k, v in doc.items()}
        if not all(r.digest is None or isinstance(r.digest, str) for r in out.values()):
            raise TypeError("a digest is not text")
        return out
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise StageDamaged(f"the stored {noun(stage) if stage else 'stage'} (version {version}) is damaged: its "
                           f"record of inputs cannot be read ({type(e).__name__}); drop it and compute it again"
                           ) from None


def _file_bytes(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += os.stat(f"{path}{suffix}").st_size
    return total
