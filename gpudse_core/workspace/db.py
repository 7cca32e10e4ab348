"""Where workspaces live and how they are stored: one SQLite file (WAL) per workspace.

``$GPUDSE_HOME`` (default ``~/.gpudse``) holds ``workspaces/<id>.db``. A workspace's file holds its
metadata (``ws_meta``), every stored stage version (``ws_stage``: one row per version, the value as
JSON or a zip of JSON + Parquet/.npy parts), the current version of each stage (``ws_head``), the
fingerprint of the data and settings each fitted version came from (``ws_fit``: an identical fit is
reused), jobs (``ws_job``) and the campaigns recorded in it (``ws_campaign``, with the campaign store's own tables
beside them in the same file).

Ids are ``secrets.token_urlsafe(24)``: 192 random bits, so holding the id is what grants access.
Each workspace also has an edit key (another 192 bits) kept only as a SHA-256 hash: whoever opens a
workspace by id alone reads it; the key (or a single-user server, ``GPUDSE_SINGLE_USER=1``) lets
them change it. The file must be on a local disk (SQLite's WAL does not work over NFS).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from ..errors import GpudseError

HOME_ENV = "GPUDSE_HOME"
SINGLE_USER_ENV = "GPUDSE_SINGLE_USER"
SCHEMA_NAME = "gpudse.workspace/1"
ID_BYTES = 24  # 192 bits
_ID_RE = re.compile(r"^[A-Za-z0-9_-]{32,86}$")

SCHEMA = """
CREATE TABLE IF NOT EXISTS ws_meta (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    revision INTEGER NOT NULL DEFAULT 0,
    key_hash TEXT NOT NULL,
    forked_from TEXT,
    deleted INTEGER NOT NULL DEFAULT 0,
    schema TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ws_stage (
    stage TEXT NOT NULL,
    version INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    created REAL NOT NULL,
    origin TEXT NOT NULL DEFAULT '',
    inputs TEXT NOT NULL DEFAULT '{}',
    digest TEXT,
    format TEXT,
    value BLOB,
    bytes INTEGER NOT NULL DEFAULT 0,
    partial INTEGER NOT NULL DEFAULT 0,
    note TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (stage, version)
);
CREATE TABLE IF NOT EXISTS ws_head (
    stage TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ws_job (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'finished', 'stopped', 'failed', 'interrupted')),
    done REAL NOT NULL DEFAULT 0,
    total REAL,
    message TEXT NOT NULL DEFAULT '',
    started REAL NOT NULL,
    heartbeat REAL NOT NULL,
    finished REAL,
    stop_requested INTEGER NOT NULL DEFAULT 0,
    pid INTEGER,
    host TEXT,
    error TEXT,
    stage TEXT,
    result_version INTEGER,
    partial INTEGER NOT NULL DEFAULT 0,
    campaign TEXT
);
CREATE TABLE IF NOT EXISTS ws_fit (
    stage TEXT NOT NULL,
    version INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    PRIMARY KEY (stage, version)
);
CREATE TABLE IF NOT EXISTS ws_campaign (
    name TEXT PRIMARY KEY,
    store_name TEXT NOT NULL,
    created REAL NOT NULL,
    origin TEXT NOT NULL DEFAULT ''
);
"""


class WorkspaceError(GpudseError):
    """A workspace cannot be found, opened or changed."""


class NotFound(WorkspaceError):
    """No workspace with that id (never created, deleted, or another server's)."""


class ReadOnly(WorkspaceError):
    """A change to a workspace opened without its edit key."""


def home(path: str | Path | None = None) -> Path:
    """The folder holding workspaces: *path*, else ``$GPUDSE_HOME``, else ``~/.gpudse``."""
    p = Path(path or os.environ.get(HOME_ENV) or Path.home() / ".gpudse").expanduser()
    return p


def workspaces_dir(root: str | Path | None = None, create: bool = False) -> Path:
    d = home(root) / "workspaces"
    if create:
        try:
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as e:
            raise WorkspaceError(f"{d}: cannot create the workspace folder ({e.strerror or e}); set {HOME_ENV} "
                                 f"to a writable folder on a local disk") from None
    return d


def single_user() -> bool:
    """True when the server is configured for one user (``GPUDSE_SINGLE_USER=1``): every workspace
    may then be listed and changed without its key."""
    return os.environ.get(SINGLE_USER_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def new_token() -> str:
    """192 random bits, URL-safe; never starting with '-' (a command line would read it as an option;
    one in 64 would; an older id that does is passed after ``--``: ``gpudse workspace show -- -AbC…``)."""
    while True:
        token = secrets.token_urlsafe(ID_BYTES)
        if not token.startswith("-"):
            return token


def check_id(ws_id: str) -> str:
    if not isinstance(ws_id, str) or not _ID_RE.match(ws_id):
        raise NotFound(f"workspace id {str(ws_id)[:12]!r}…: not a workspace id (they are 32 or more letters, "
                       f"digits, '-' or '_'); check the link")
    return ws_id


def path_of(ws_id: str, root: str | Path | None = None) -> Path:
    return workspaces_dir(root) / f"{check_id(ws_id)}.db"


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_matches(key: str | None, stored_hash: str) -> bool:
    return bool(key) and hmac.compare_digest(key_hash(key), stored_hash)


def connect(path: Path, create: bool = False, schema: bool = True, readonly: bool = False) -> sqlite3.Connection:
    """A connection in WAL mode with the workspace schema (usable from any one thread at a time).
    Without *create* a missing file is an error (a deleted workspace is never silently re-created),
    and so is a file that is not a workspace (empty, not SQLite, an SQLite file without the
    workspace's tables): it is reported as what it is and never written. A *readonly* connection
    is ``query_only``: SQLite itself refuses any write through it, whatever the code above asks."""
    if not create:
        try:
            size = path.stat().st_size  # never open(): closing a descriptor drops this process's locks
        except OSError:
            raise NotFound(f"workspace file {path.name[:6]}…: it does not exist (deleted?)") from None
        if size == 0:
            raise WorkspaceError(f"{path}: an empty file (0 bytes), not a workspace (an interrupted copy, or a disk "
                                 f"that was full?); gpudse does not write into it: delete it")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode={'rwc' if create else 'rw'}", uri=True, timeout=60,
                             isolation_level=None, check_same_thread=False)
    except sqlite3.OperationalError:
        raise NotFound(f"workspace file {path.name[:6]}…: it does not exist (deleted?)") from None
    try:
        if not create:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "ws_meta" not in tables:
                raise WorkspaceError(f"{path}: an SQLite file without a workspace's tables (another program's?); "
                                     f"gpudse does not write into it: move it out of {path.parent}")
        if not schema:
            return db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        if readonly:
            db.execute("PRAGMA query_only = ON")
            return db
        if create and db.execute("PRAGMA application_id").fetchone()[0] == 0:
            from ..sim.store import APPLICATION_ID  # one stamp for every gpudse SQLite file (campaigns share it)

            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # user_version stays the store's schema
        db.executescript(SCHEMA)
    except sqlite3.DatabaseError as e:
        db.close()
        raise WorkspaceError(f"{path}: not a gpudse workspace ({e}); gpudse does not write into it") from None
    except BaseException:
        db.close()
        raise
    return db


def set_readonly(db: sqlite3.Connection, readonly: bool) -> None:
    """Make *db* refuse writes (SQLite's ``query_only``) or accept them again (with the schema ensured)."""
    if readonly:
        db.execute("PRAGMA query_only = ON")
    else:
        db.execute("PRAGMA query_only = OFF")
        db.executescript(SCHEMA)


class DiskFull(WorkspaceError):
    """A change could not be saved because the disk is full (the workspace keeps its previous state)."""


def storage_error(e: sqlite3.Error, path: Path | str | None = None) -> WorkspaceError:
    """An SQLite error during a change, as the project's error saying what happened and what to do."""
    msg = str(e)
    low = msg.lower()
    where_ = f"{path}: " if path else ""
    if "readonly" in low or "read-only" in low:
        return ReadOnly("this workspace is open read-only (shared with you without its key); nothing was written; "
                        "to change it, make your own copy first (fork)")
    if "full" in low:
        return DiskFull(f"{where_}disk full: the change was not saved and the workspace keeps its previous state; "
                        f"free some space on the disk of ${HOME_ENV} and try again")
    if "malformed" in low or "corrupt" in low or "not a database" in low:
        return WorkspaceError(f"{where_}the workspace file is damaged ({msg}); nothing was written. Copy out what "
                              f"you can (gpudse workspace export) and delete it")
    if "locked" in low or "busy" in low:
        return WorkspaceError(f"{where_}the workspace stayed locked by another process for 60 s; try again")
    return WorkspaceError(f"{where_}the change could not be saved ({type(e).__name__}: {msg}); the workspace keeps "
                          f"its previous state")


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT: writers queue on SQLite's lock, readers keep reading (WAL). Every
    SQLite error becomes :func:`storage_error` (read-only, disk full, damaged), after a rollback."""
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as e:
        raise storage_error(e) from None
    try:
        yield db
        db.execute("COMMIT")
    except BaseException as e:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        if isinstance(e, sqlite3.Error):
            raise storage_error(e) from None
        raise
