"""Durable campaign state in SQLite (standard library, WAL mode): nothing finished is ever lost, nothing is
run twice without a record (docs/simulations.md "Simulation campaigns"; hostile input, campaign faults).

One file holds any number of named campaigns (and may hold other gpudse tables, e.g. the dashboard's
workspace): the campaign spec (space, sampling, backend) and every design point with its status
(``pending``, ``running``, ``done``, ``failed``), result, error text, log tail, attempt count and
timestamps; every *attempt* (one execution of a point) with its worker, run directory, claim, start and
end times and outcome (``running``, ``done``, ``failed``, ``lost`` — its worker died and the point
was run again —, ``interrupted`` — the campaign's process died).

Guarantees:

* Every finished result is committed in its own transaction as it arrives. Any ``sqlite3`` error
  during a run (a damaged page, a full disk) becomes a :class:`StoreError` naming the file and what to
  do; the runner then stops cleanly, and what was committed stays committed.
* Opening a campaign re-queues points left ``running`` by a process that died (SIGKILL, power loss):
  completed results are kept and never run again; interrupted ones run again as a new attempt.
* A failed run is re-queued until it has been attempted ``max_attempts`` times, then marked
  ``failed`` with the reason; the campaign goes on.

Which files are stores. A store is stamped with ``PRAGMA application_id`` = :data:`APPLICATION_ID`
(the bytes ``gpud``) and ``PRAGMA user_version`` = :data:`SCHEMA_VERSION`. A new store is built in a
temporary file and linked into place atomically, so no other process ever sees it half made. gpudse
never silently replaces or reuses a file it did not stamp: a 0-byte file, a file that is not SQLite,
and an SQLite database of another program (another application id, or none and other tables) are
refused with a message; a store of the first schema (no stamp, exactly the ``campaign`` and ``point``
tables) is upgraded in place. Tables of other gpudse components in a stamped file are left alone.
A writer runs ``PRAGMA quick_check`` on the campaign tables at open and refuses a damaged file.

The lock: one lease per *campaign*, not per file (design, hostile input). SQLite's own file locks only
serialise single transactions; a campaign is worked on by one process at a time, recorded in the
``lease`` table (holder's token, host, pid, process start time, boot id, since, heartbeat). Other
processes keep reading (the dashboard's progress bar, :func:`progress_of`, ``readonly=True`` never
take a lease) and other campaigns in the same file run at the same time. :meth:`CampaignStore.open`
takes the lease in the same transaction that creates or resumes the campaign:

* no lease, or the holder is *provably dead* → take it; only then are the dead holder's ``running``
  points re-queued (and its open attempts marked ``interrupted``). Provably dead means: on this host
  (same host name and boot id) its pid no longer exists or belongs to a process started at another
  time; on another host its heartbeat is older than ``limits.campaign_lease_s`` (the runner renews
  it with every transaction and at least every ``campaign_lease_s / 6`` seconds while it waits). A
  holder in this very process whose store object was closed or lost counts as dead.
* otherwise → :class:`CampaignBusyError` naming the holder (pid, host, since); the holder's rows are
  not touched. Joining as a second writer was rejected: it would need per-point leases and a shared
  runner, for no gain over more workers under one runner.

Every write transaction checks that this process still holds the lease (and renews its heartbeat);
a process whose lease was taken over (it was judged dead, e.g. a cluster node cut off for longer than
the lease) gets a :class:`StoreError` and stops without writing over the new holder's rows.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import quote

import pandas as pd

from .. import limits
from ..choices import RESERVED_NAMES
from ..errors import GpudseError
from ..jsonutil import json_default

APPLICATION_ID = 0x67707564  # b"gpud": PRAGMA application_id of every gpudse SQLite file
SCHEMA_VERSION = 2  # PRAGMA user_version: the campaign tables' schema (1 = unstamped campaign + point)
SQLITE_MAGIC = b"SQLite format 3\x00"
STATUSES = ("pending", "running", "done", "failed")
OUTCOMES = ("running", "done", "failed", "lost", "interrupted")
CAMPAIGN_TABLES = ("campaign", "point", "attempt", "lease")
SCHEMA = """
CREATE TABLE IF NOT EXISTS campaign (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    created REAL NOT NULL,
    uid TEXT
);
CREATE TABLE IF NOT EXISTS point (
    campaign TEXT NOT NULL REFERENCES campaign(name),
    idx INTEGER NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    log_tail TEXT,
    started REAL,
    finished REAL,
    PRIMARY KEY (campaign, idx)
);
CREATE INDEX IF NOT EXISTS point_status ON point (campaign, status);
CREATE TABLE IF NOT EXISTS attempt (
    campaign TEXT NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('running', 'done', 'failed', 'lost', 'interrupted')),
    worker TEXT,
    run_dir TEXT,
    claimed REAL,
    started REAL,
    finished REAL,
    error TEXT,
    PRIMARY KEY (campaign, idx, attempt)
);
CREATE INDEX IF NOT EXISTS attempt_outcome ON attempt (campaign, outcome);
CREATE TABLE IF NOT EXISTS lease (
    campaign TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    pid_start TEXT,
    boot_id TEXT,
    since REAL NOT NULL,
    heartbeat REAL NOT NULL
);
"""
_V1_COLUMNS = {"campaign": {"name", "spec", "created"},
               "point": {"campaign", "idx", "params", "status", "attempts", "result", "error", "log_tail", "started",
                         "finished"}}
_RECOVER = "Copy it aside and recover what it holds with `sqlite3 {path} .recover > recovered.sql`"


class StoreError(GpudseError):
    """The campaign store cannot be opened, is damaged, or does not match the request."""


class CampaignBusyError(StoreError):
    """Another live process holds the campaign's lease."""


@dataclass
class Progress:
    pending: int
    running: int
    done: int
    failed: int

    @property
    def total(self) -> int:
        return self.pending + self.running + self.done + self.failed

    @property
    def remaining(self) -> int:
        return self.pending + self.running


@dataclass
class Attempt:
    """One execution of a design point, as reported by the worker that ran it."""

    attempt: int
    outcome: str  # done, failed, lost
    worker: str = ""
    run_dir: str = ""
    started: float | None = None
    finished: float | None = None
    error: str = ""


@dataclass
class Outcome:
    """What a worker reports for one claimed point: its result or failure, and every execution it saw
    (earlier executions of the same claim whose worker died, then its own, last)."""

    idx: int
    ok: bool
    result: dict = field(default_factory=dict)
    error: str = ""
    log_tail: str = ""
    attempts: list[Attempt] = field(default_factory=list)


@dataclass
class Holder:
    """The process holding a campaign's lease."""

    host: str
    pid: int
    since: float
    heartbeat: float
    owner: str = ""

    def __str__(self) -> str:
        return (f"pid {self.pid} on host {self.host} since "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.since))}")


# ---- the file ------------------------------------------------------------------------------------
def connect(path: str | Path, readonly: bool = False, check: bool = True) -> sqlite3.Connection:
    """An SQLite connection to the gpudse file *path*, created (atomically, stamped) if missing.

    Refuses 0-byte, non-SQLite and foreign files with a :class:`StoreError`; upgrades an unstamped
    first-schema store; a writer (``readonly=False``) runs ``quick_check`` on the campaign tables
    when *check*. Shared with the dashboard's workspace, which keeps its own tables in the same file.
    """
    p = Path(path)
    with _translate(p, "opening the store"):
        if not p.exists():
            if readonly:
                raise StoreError(f"{p}: no such campaign store")
            _create(p)
        _check_header(p)
        if readonly:
            db = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=ro", uri=True, timeout=30,
                                 isolation_level=None, check_same_thread=False)
        else:
            db = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=rw", uri=True, timeout=30,
                                 isolation_level=None, check_same_thread=False)
        try:
            app, version = _identify(db, p)
            if not readonly:
                if check:
                    _quick_check(db, p)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                if app != APPLICATION_ID or version < SCHEMA_VERSION:
                    _migrate(db, p)
        except BaseException:
            db.close()
            raise
    return db


def _create(p: Path) -> None:
    """Build an empty stamped store beside *p* and link it into place (never a half-made file)."""
    if not p.parent.is_dir():
        raise StoreError(f"{p}: the folder {p.parent} does not exist")
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:12]}.creating")
    try:
        db = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.executescript(SCHEMA)
            db.execute("PRAGMA journal_mode=WAL")
        finally:
            db.close()
        try:
            os.link(tmp, p)
        except FileExistsError:
            pass  # another process created it first: use theirs
        except OSError:  # a file system without hard links
            if not p.exists():
                os.rename(tmp, p)
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{tmp}{suffix}")


def _check_header(p: Path) -> None:
    """Refuse a folder, an empty file and a file that is not SQLite, without opening the file.

    The header is read through SQLite, never with ``open()``: closing any other descriptor of a file
    drops every POSIX lock this process holds on it, so a dashboard that checked the header of a
    workspace it had open would lose its locks, and another process (``gpudse workspace show``) would
    then take itself for the last user and delete the WAL under the dashboard's connections."""
    if p.is_dir():
        raise StoreError(f"{p}: is a folder, not a campaign store; pass a file name with --store")
    if p.stat().st_size == 0:
        raise StoreError(f"{p}: the file is empty (0 bytes), so it holds no campaign and gpudse will not reuse it; "
                         f"if you want a new campaign, delete it or pass another --store")
    not_sqlite = StoreError(f"{p}: not a gpudse campaign store (not an SQLite database); gpudse does not overwrite "
                            f"other files; pass another --store")
    if p.stat().st_size < len(SQLITE_MAGIC):
        raise not_sqlite
    db = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=ro", uri=True, timeout=30, isolation_level=None)
    try:
        db.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as e:
        if "not a database" in str(e).lower():
            raise not_sqlite from None
        raise
    finally:
        db.close()


def _identify(db: sqlite3.Connection, p: Path) -> tuple[int, int]:
    """(application id, campaign schema version) of a gpudse file; anything else is refused.

    Unstamped files that are gpudse's are recognised by their tables: a store of the first schema
    (exactly ``campaign`` and ``point``), or a dashboard workspace (``ws_meta`` whose ``schema`` is
    ``gpudse.workspace/…``, written before workspaces were stamped). A writer stamps them.
    """
    app = db.execute("PRAGMA application_id").fetchone()[0] & 0xFFFFFFFF
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if app == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise StoreError(f"{p}: written by a newer gpudse (store schema {version}, this one knows "
                             f"{SCHEMA_VERSION}); upgrade gpudse to use it")
        return app, version
    tables = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                                             "LIKE 'sqlite_%'"))
    if app == 0 and version == 0:
        v1 = all(t in tables and {r[1] for r in db.execute(f"PRAGMA table_info({t})")} == cols
                 for t, cols in _V1_COLUMNS.items())
        if v1 and set(tables) == set(_V1_COLUMNS):
            return app, 1  # a store of the first schema
        if "ws_meta" in tables and _is_workspace(db):
            return app, (1 if v1 else 0)
    who = f"application id 0x{app:08x}" if app else ("no tables" if not tables else
                                                   "tables " + ", ".join(tables[:8]) + ("…" if len(tables) > 8 else ""))
    raise StoreError(f"{p}: an SQLite database that is not a gpudse campaign store ({who}); gpudse does not write "
                     f"into other programs' files; pass another --store")


def _is_workspace(db: sqlite3.Connection) -> bool:
    try:
        row = db.execute("SELECT schema FROM ws_meta LIMIT 1").fetchone()
    except sqlite3.OperationalError:
        return False
    return row is not None and isinstance(row[0], str) and row[0].startswith("gpudse.workspace/")


def _quick_check(db: sqlite3.Connection, p: Path) -> None:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    problems: list[str] = []
    for t in CAMPAIGN_TABLES:
        if t in tables:
            rows = [r[0] for r in db.execute(f"PRAGMA quick_check({t})")]
            problems += [r for r in rows if r != "ok"]
    if problems:
        shown = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
        raise StoreError(f"{p}: the store is damaged ({shown}); gpudse will not write to it. "
                         f"{_RECOVER.format(path=p)}, or pass another --store to start over")


def _migrate(db: sqlite3.Connection, p: Path) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        app, version = _identify(db, p)  # again, under the write lock: another process may have done it
        if app != APPLICATION_ID or version < SCHEMA_VERSION:
            cols = {r[1] for r in db.execute("PRAGMA table_info(campaign)")}
            if cols and "uid" not in cols:  # a first-schema campaign table
                db.execute("ALTER TABLE campaign ADD COLUMN uid TEXT")
            for stmt in SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            for (name,) in db.execute("SELECT name FROM campaign WHERE uid IS NULL").fetchall():
                db.execute("UPDATE campaign SET uid = ? WHERE name = ?", (uuid.uuid4().hex, name))
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def _translate(p: Path, what: str) -> Iterator[None]:
    """Every sqlite3 error becomes a StoreError with the file and what to do."""
    try:
        yield
    except sqlite3.Error as e:
        raise StoreError(_explain(p, what, e)) from None
    except OSError as e:
        raise StoreError(f"{p}: {what} failed ({e.strerror or e})") from None


def _explain(p: Path, what: str, e: sqlite3.Error) -> str:
    msg = str(e)
    low = msg.lower()
    if "malformed" in low or "not a database" in low or "corrupt" in low:
        return (f"{p}: {what} failed: the store file is damaged ({msg}). Everything committed before is kept; "
                f"gpudse stops here. {_RECOVER.format(path=p)}, or pass another --store")
    if "locked" in low or "busy" in low:
        return (f"{p}: {what} failed: the store stayed locked by another process for 30 s ({msg}); "
                f"try again when it is less busy")
    if "full" in low or "i/o" in low or "readonly" in low or "read-only" in low or "unable to open" in low:
        return (f"{p}: {what} failed ({msg}); free disk space or fix the file's permissions, then run again to "
                f"resume: what was committed is kept")
    return f"{p}: {what} failed ({type(e).__name__}: {msg}); run again to resume: what was committed is kept"


# ---- who holds a lease -----------------------------------------------------------------------------
_LIVE_OWNERS: set[str] = set()  # lease tokens of the stores open in this process
_LIVE_LOCK = threading.Lock()


def live_owner(token: str, live: bool) -> None:
    """Count lease *token* as held by a live object of this process (or no longer): what
    :func:`holder_is_dead` asks of a lease whose pid is this process's (a search study's lease too)."""
    with _LIVE_LOCK:
        (_LIVE_OWNERS.add if live else _LIVE_OWNERS.discard)(token)


def this_process() -> tuple[str, int, str, str]:
    """(host, pid, pid start time, boot id): who this process is, as a lease row records it."""
    return _HOST, os.getpid(), _pid_start(os.getpid()), _BOOT


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _proc_stat(pid: int) -> tuple[str, str]:
    """(state, start time in clock ticks since boot) of a process, from /proc (Linux); ("", "") elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return "", ""
    fields = stat[stat.rfind(b")") + 2:].split()
    return fields[0].decode(), fields[19].decode()


def _pid_start(pid: int) -> str:
    """A process's start time (Linux), to tell a reused pid apart."""
    return _proc_stat(pid)[1]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return _proc_stat(pid)[0] not in ("Z", "X")  # a zombie has exited, only not yet been reaped


_HOST = socket.gethostname()
_BOOT = _boot_id()


def holder_is_dead(row: tuple, now: float | None = None) -> tuple[bool, str]:
    """(dead?, why) for a lease row (owner, host, pid, pid_start, boot_id, since, heartbeat)."""
    owner, host, pid, pid_start, boot_id, _since, heartbeat = row
    now = time.time() if now is None else now
    if host == _HOST and (boot_id or "") == _BOOT:
        if pid == os.getpid():
            with _LIVE_LOCK:
                live = owner in _LIVE_OWNERS
            return (not live, "its store in this process was closed")
        if not _pid_alive(pid):
            return True, f"pid {pid} has exited"
        if pid_start and _pid_start(pid) not in ("", pid_start):
            return True, f"pid {pid} now belongs to another process"
        return False, ""
    if host == _HOST and boot_id and _BOOT and boot_id != _BOOT:
        return True, "this machine has rebooted since"
    lease = limits.current().campaign_lease_s
    if now - heartbeat > lease:
        return True, f"no heartbeat from host {host} for {now - heartbeat:,.0f} s (limit campaign_lease_s = {lease:g})"
    return False, ""


# ---- the store ------------------------------------------------------------------------------------------
class CampaignStore:
    """A campaign in a SQLite file (see the module docstring).

    ``readonly=True`` opens without taking the lease, never writes, and skips the integrity check
    (the dashboard's progress bar while a CLI runs the campaign).
    """

    def __init__(self, path: str | Path, name: str = "default", max_attempts: int = 3, readonly: bool = False):
        self.path = Path(path)
        if not isinstance(name, str) or not name or len(name) > 200 or "\x00" in name:
            raise StoreError("a campaign name is 1 to 200 characters")
        self.name = name
        if max_attempts < 1:
            raise StoreError("max_attempts must be at least 1")
        self.max_attempts = max_attempts
        self.readonly = readonly
        self.owner = uuid.uuid4().hex
        self._opened = False
        self._renewed = 0.0
        self.took_over: str | None = None  # set by open(): the dead holder whose lease it took, and why
        self.db = connect(self.path, readonly=readonly)

    def close(self) -> None:
        if self.db is None:
            return
        try:
            if self._opened and not self.readonly:
                with contextlib.suppress(GpudseError):
                    with self._tx("releasing the campaign"):  # runs still out are interrupted: next open re-queues
                        self._interrupt("the process running the campaign stopped before this run reported")
                        self.db.execute("DELETE FROM lease WHERE campaign = ? AND owner = ?", (self.name, self.owner))
        finally:
            with _LIVE_LOCK:
                _LIVE_OWNERS.discard(self.owner)
            self._opened = False
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
            self.db = None  # type: ignore[assignment]

    def __enter__(self) -> "CampaignStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- creating and resuming ---------------------------------------------------------------
    def spec(self) -> dict | None:
        with self._read("reading the campaign"):
            row = self.db.execute("SELECT spec FROM campaign WHERE name = ?", (self.name,)).fetchone()
        return None if row is None else json.loads(row[0])

    @property
    def uid(self) -> str:
        """The campaign's random id (run directories record it, to tell their own from others')."""
        with self._read("reading the campaign"):
            row = self.db.execute("SELECT uid FROM campaign WHERE name = ?", (self.name,)).fetchone()
        return row[0] if row and row[0] else ""

    def open(self, spec: dict, points: pd.DataFrame) -> str:
        """Create the campaign, or resume it when the store already holds the same one; take its lease.

        Returns ``"created"`` or ``"resumed"``; a different spec under the same name is an error, and
        so is a campaign another live process holds (:class:`CampaignBusyError`).
        """
        self._writable()
        reserved = sorted(set(map(str, points.columns)) & set(RESERVED_NAMES))
        if reserved:
            raise StoreError(f"the design points have column(s) named {', '.join(reserved)}, which gpudse reserves "
                             f"({', '.join(RESERVED_NAMES)}): rename them")
        spec_json = json.dumps(spec, sort_keys=True, default=str)
        with self._tx("opening the campaign", lease=False):
            row = self.db.execute("SELECT spec FROM campaign WHERE name = ?", (self.name,)).fetchone()
            if row is not None:
                existing = json.loads(row[0])
                if json.dumps(existing, sort_keys=True, default=str) != spec_json:
                    raise StoreError(f"{self.path}: campaign {self.name!r} was started with a different setup "
                                     f"({_diff(existing, spec)}); use another --store file or campaign name to "
                                     f"start a new one")
                n = self.db.execute("SELECT COUNT(*) FROM point WHERE campaign = ?", (self.name,)).fetchone()[0]
                if n != len(points):
                    raise StoreError(f"{self.path}: campaign {self.name!r} has {n} points but {len(points)} were "
                                     f"given")
            self._take_lease()
            if row is not None:
                self._interrupt("the process running the campaign died before this run reported")
                state = "resumed"
            else:
                records = points.to_dict(orient="records")
                self.db.execute("INSERT INTO campaign (name, spec, created, uid) VALUES (?, ?, ?, ?)",
                                (self.name, spec_json, time.time(), uuid.uuid4().hex))
                self.db.executemany(
                    "INSERT INTO point (campaign, idx, params, status) VALUES (?, ?, ?, 'pending')",
                    ((self.name, i, json.dumps(r, default=json_default)) for i, r in enumerate(records)))
                state = "created"
        self._opened = True
        with _LIVE_LOCK:
            _LIVE_OWNERS.add(self.owner)
        return state

    def _take_lease(self) -> None:
        row = self.db.execute("SELECT owner, host, pid, pid_start, boot_id, since, heartbeat FROM lease WHERE "
                              "campaign = ?", (self.name,)).fetchone()
        self.took_over = None
        if row is not None and row[0] != self.owner:
            dead, why = holder_is_dead(row)
            if dead:
                self.took_over = f"{Holder(row[1], row[2], row[5], row[6], row[0])} ({why})"
            else:
                h = Holder(row[1], row[2], row[5], row[6], row[0])
                raise CampaignBusyError(
                    f"{self.path}: campaign {self.name!r} is being run by {h} (last heartbeat "
                    f"{max(0.0, time.time() - h.heartbeat):,.0f} s ago); gpudse runs a campaign in one process at a "
                    f"time. Wait for it to finish, stop it, or use another --campaign name or --store")
        now = time.time()
        me = os.getpid()
        self.db.execute("INSERT OR REPLACE INTO lease (campaign, owner, host, pid, pid_start, boot_id, since, "
                        "heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (self.name, self.owner, _HOST, me, _pid_start(me), _BOOT, now, now))
        self._renewed = now

    def _interrupt(self, why: str) -> None:
        """Re-queue the points left running (inside a transaction that holds the lease)."""
        self.db.execute("UPDATE attempt SET outcome = 'interrupted', finished = COALESCE(finished, ?), error = ? "
                        "WHERE campaign = ? AND outcome = 'running'", (time.time(), why, self.name))
        self.db.execute("UPDATE point SET status = 'pending' WHERE campaign = ? AND status = 'running'", (self.name,))

    def holder(self) -> Holder | None:
        """The process holding this campaign's lease, if any (it may be dead: see :func:`holder_is_dead`)."""
        with self._read("reading the lease"):
            if not self._has_table("lease"):
                return None
            row = self.db.execute("SELECT host, pid, since, heartbeat, owner FROM lease WHERE campaign = ?",
                                  (self.name,)).fetchone()
        return None if row is None else Holder(*row)

    def renew(self, min_interval: float = 0.0) -> None:
        """Renew the lease's heartbeat (the runner calls this while it waits for long runs)."""
        if self.readonly or not self._opened or time.time() - self._renewed < min_interval:
            return
        with self._tx("renewing the campaign's lease"):
            pass

    def import_results(self, spec: dict, table: pd.DataFrame, responses: list[str],
                       failures: pd.DataFrame | None = None) -> int:
        """Record uploaded results as a finished campaign (every point done; the *failures*, parameters and
        ``error``, as failed points, as a simulator's failures are kept); returns the row count."""
        self._writable()
        params = [c for c in table.columns if c not in responses]
        failed = [] if failures is None else failures.to_dict(orient="records")
        now = time.time()
        with self._tx("importing results", lease=False):
            if self.db.execute("SELECT 1 FROM campaign WHERE name = ?", (self.name,)).fetchone():
                raise StoreError(f"{self.path}: campaign {self.name!r} already exists; import under another "
                                 f"--campaign name")
            self.db.execute("INSERT INTO campaign (name, spec, created, uid) VALUES (?, ?, ?, ?)",
                            (self.name, json.dumps(spec, sort_keys=True, default=str), now, uuid.uuid4().hex))
            self.db.executemany(
                "INSERT INTO point (campaign, idx, params, status, attempts, result, finished) "
                "VALUES (?, ?, ?, 'done', 0, ?, ?)",
                ((self.name, i, json.dumps({p: r[p] for p in params}, default=json_default),
                  json.dumps({c: r[c] for c in responses}, default=json_default), now)
                 for i, r in enumerate(table.to_dict(orient="records"))))
            self.db.executemany(
                "INSERT INTO point (campaign, idx, params, status, attempts, error, finished) "
                "VALUES (?, ?, ?, 'failed', 1, ?, ?)",
                ((self.name, len(table) + i, json.dumps({p: r[p] for p in params}, default=json_default),
                  str(r.get("error", "failed"))[:500], now) for i, r in enumerate(failed)))
        return len(table)

    def requeue_failed(self) -> int:
        """Give the campaign's failed points a new round of ``max_attempts`` attempts; returns how many."""
        with self._tx("re-queueing failed points"):
            cur = self.db.execute("UPDATE point SET status = 'pending', attempts = 0 WHERE campaign = ? AND "
                                  "status = 'failed'", (self.name,))
            return cur.rowcount

    # ---- the work queue ----------------------------------------------------------------------
    def claim(self, limit: int) -> list[tuple[int, dict, int]]:
        """Mark up to *limit* pending points running; returns (idx, params, attempt number)."""
        with self._tx("claiming points"):
            rows = self.db.execute(
                "SELECT idx, params, attempts FROM point WHERE campaign = ? AND status = 'pending' ORDER BY idx "
                "LIMIT ?", (self.name, limit)).fetchall()
            now = time.time()
            self.db.executemany(
                "UPDATE point SET status = 'running', attempts = attempts + 1, started = ? WHERE campaign = ? AND "
                "idx = ?", ((now, self.name, r[0]) for r in rows))
            self.db.executemany(
                "INSERT OR REPLACE INTO attempt (campaign, idx, attempt, outcome, claimed) VALUES (?, ?, ?, "
                "'running', ?)", ((self.name, r[0], r[2] + 1, now) for r in rows))
        return [(r[0], json.loads(r[1]), r[2] + 1) for r in rows]

    def unclaim(self, idxs: Iterable[int]) -> None:
        """Hand back claimed points that never started (their attempt is forgotten)."""
        idxs = [int(i) for i in idxs]
        if not idxs:
            return
        with self._tx("handing back points"):
            for i in idxs:
                row = self.db.execute("SELECT attempts FROM point WHERE campaign = ? AND idx = ? AND status = "
                                      "'running'", (self.name, i)).fetchone()
                if row is None:
                    continue
                self.db.execute("DELETE FROM attempt WHERE campaign = ? AND idx = ? AND attempt = ? AND outcome = "
                                "'running'", (self.name, i, row[0]))
                self.db.execute("UPDATE point SET status = 'pending', attempts = MAX(attempts - 1, 0) WHERE "
                                "campaign = ? AND idx = ?", (self.name, i))

    def record(self, outcomes: Iterable[Outcome]) -> None:
        """Commit a batch of outcomes (one transaction): results, failures and every attempt they report.

        A failure is re-queued until the point has been attempted ``max_attempts`` times. Outcomes for
        points that are not ``running`` (not claimed by this process) are ignored.
        """
        now = time.time()
        outcomes = list(outcomes)
        if not outcomes:
            return
        with self._tx("recording results"):
            running: dict[int, int] = {}
            ids = sorted({int(o.idx) for o in outcomes})
            for i in range(0, len(ids), 500):
                part = ids[i:i + 500]
                running.update(self.db.execute(
                    f"SELECT idx, attempts FROM point WHERE campaign = ? AND status = 'running' AND idx IN "
                    f"({', '.join('?' * len(part))})", (self.name, *part)).fetchall())
            attempt_rows, done_rows, fail_rows = [], [], []
            for o in outcomes:
                idx = int(o.idx)
                if idx not in running:
                    continue  # not claimed by this process (or already recorded)
                claimed = running.pop(idx)
                execs = list(o.attempts) or [Attempt(claimed, "done" if o.ok else "failed", error=o.error)]
                attempt_rows += [(self.name, idx, int(a.attempt), a.outcome if a.outcome in OUTCOMES else "failed",
                                  a.worker or None, a.run_dir or None, a.started, a.finished or now, a.error or None)
                                 for a in execs]
                n = max([claimed] + [int(a.attempt) for a in execs])
                if o.ok:
                    done_rows.append((json.dumps(o.result, default=json_default), n, now, self.name, idx))
                else:
                    fail_rows.append(("failed" if n >= self.max_attempts else "pending", o.error,
                                      o.log_tail[-4000:] if o.log_tail else None, n, now, self.name, idx))
            self.db.executemany(
                "INSERT INTO attempt (campaign, idx, attempt, outcome, worker, run_dir, started, finished, error) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (campaign, idx, attempt) DO UPDATE SET outcome = "
                "excluded.outcome, worker = COALESCE(excluded.worker, worker), run_dir = COALESCE(excluded.run_dir, "
                "run_dir), started = COALESCE(excluded.started, started), finished = excluded.finished, error = "
                "excluded.error", attempt_rows)
            self.db.executemany("UPDATE point SET status = 'done', result = ?, error = NULL, attempts = ?, "
                                "finished = ? WHERE campaign = ? AND idx = ?", done_rows)
            self.db.executemany("UPDATE point SET status = ?, error = ?, log_tail = ?, attempts = ?, finished = ? "
                                "WHERE campaign = ? AND idx = ?", fail_rows)

    def complete(self, results: Iterable[tuple[int, dict]]) -> None:
        """Commit finished results (idx, result) (one transaction for the batch)."""
        self.record(Outcome(idx, True, res) for idx, res in results)

    def fail(self, failures: Iterable[tuple[int, str, str]]) -> None:
        """Record failed runs (idx, reason, log tail); re-queue those with attempts left."""
        self.record(Outcome(idx, False, {}, reason, tail or "") for idx, reason, tail in failures)

    def progress(self) -> Progress:
        with self._read("reading progress"):
            counts = dict(self.db.execute("SELECT status, COUNT(*) FROM point WHERE campaign = ? GROUP BY status",
                                          (self.name,)).fetchall())
        return Progress(*(int(counts.get(s, 0)) for s in STATUSES))

    def columns(self) -> list[str]:
        """The parameter names of the campaign's points (from its first point)."""
        with self._read("reading the points"):
            row = self.db.execute("SELECT params FROM point WHERE campaign = ? ORDER BY idx LIMIT 1",
                                  (self.name,)).fetchone()
        return [] if row is None else list(json.loads(row[0]))

    # ---- reading results ---------------------------------------------------------------------
    def table(self, include_failed: bool = False) -> pd.DataFrame:
        """One row per point: parameters, result columns, status, attempts, error."""
        with self._read("reading results"):
            rows = self.db.execute("SELECT idx, params, status, attempts, result, error FROM point WHERE "
                                   "campaign = ? ORDER BY idx", (self.name,)).fetchall()
        out = []
        for idx, params, status, attempts, result, error in rows:
            if status != "done" and not include_failed:
                continue
            rec = json.loads(params)
            if result:
                rec.update(json.loads(result))
            rec.update(status=status, attempts=attempts, error=error)
            out.append(rec)
        return pd.DataFrame(out)

    def failures(self) -> pd.DataFrame:
        with self._read("reading failures"):
            rows = self.db.execute("SELECT idx, attempts, error, log_tail FROM point WHERE campaign = ? AND "
                                   "status = 'failed' ORDER BY idx", (self.name,)).fetchall()
        return pd.DataFrame(rows, columns=["idx", "attempts", "error", "log_tail"])

    def attempts(self) -> pd.DataFrame:
        """Every attempt: idx, attempt, outcome, worker, run_dir, claimed, started, finished, error."""
        cols = ["idx", "attempt", "outcome", "worker", "run_dir", "claimed", "started", "finished", "error"]
        with self._read("reading attempts"):
            if not self._has_table("attempt"):
                return pd.DataFrame(columns=cols)
            rows = self.db.execute(f"SELECT {', '.join(cols)} FROM attempt WHERE campaign = ? ORDER BY idx, attempt",
                                   (self.name,)).fetchall()
        return pd.DataFrame(rows, columns=cols)

    # ---- internals ----------------------------------------------------------------------------------
    def _writable(self) -> None:
        if self.readonly:
            raise StoreError(f"{self.path}: opened read-only; open it without readonly=True to run or change it")

    def _has_table(self, name: str) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() \
            is not None

    def _read(self, what: str):
        if self.db is None:
            raise StoreError(f"{self.path}: the store is closed")
        return _translate(self.path, what)

    @contextlib.contextmanager
    def _tx(self, what: str, lease: bool = True) -> Iterator[None]:
        """A write transaction (BEGIN IMMEDIATE); with *lease*, only while this process holds the lease."""
        self._writable()
        if self.db is None:
            raise StoreError(f"{self.path}: the store is closed")
        if lease and not self._opened:
            raise StoreError(f"{self.path}: open the campaign (CampaignStore.open) before {what}")
        with _translate(self.path, what):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                if lease:
                    now = time.time()
                    cur = self.db.execute("UPDATE lease SET heartbeat = ? WHERE campaign = ? AND owner = ?",
                                          (now, self.name, self.owner))
                    if cur.rowcount != 1:
                        h = self.db.execute("SELECT host, pid, since, heartbeat, owner FROM lease WHERE "
                                            "campaign = ?", (self.name,)).fetchone()
                        by = str(Holder(*h)) if h else "nobody (it was released)"
                        raise StoreError(f"{self.path}: this process no longer holds campaign {self.name!r}: it is "
                                         f"now held by {by}, which judged this process dead; stopping without "
                                         f"writing (runs still in progress here are dropped)")
                    self._renewed = now
                yield
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                raise
            else:
                self.db.execute("COMMIT")


def progress_of(path: str | Path, name: str = "default") -> Progress | None:
    """A campaign's progress read without a lease and without writing (None if the store or campaign
    does not exist). Safe while another process runs the campaign."""
    p = Path(path)
    if not p.exists():
        return None
    with CampaignStore(p, name, readonly=True) as st:
        if st.spec() is None:
            return None
        return st.progress()


def _diff(a: dict, b: dict) -> str:
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return "differs in " + ", ".join(keys[:5]) if keys else "differs"
