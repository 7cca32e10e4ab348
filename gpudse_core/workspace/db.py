"""Where workspaces live and how they are stored: one SQLite file (WAL) per workspace (issue 14).

``$GPUDSE_HOME`` (default ``~/.gpudse``) holds ``workspaces/<id>.db``. A workspace's file holds its
metadata (``ws_meta``), every stored stage version (``ws_stage``: one row per version, the value as
JSON or a zip of JSON + Parquet/.npy parts), the current version of each stage (``ws_head``), jobs
(``ws_job``) and the campaigns recorded in it (``ws_campaign``, with the campaign store's own tables
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
    return secrets.token_urlsafe(ID_BYTES)


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


def connect(path: Path, create: bool = False, schema: bool = True) -> sqlite3.Connection:
    """A connection in WAL mode with the workspace schema (usable from any one thread at a time).
    Without *create* a missing file is an error (a deleted workspace is never silently re-created)."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode={'rwc' if create else 'rw'}", uri=True, timeout=60,
                             isolation_level=None, check_same_thread=False)
    except sqlite3.OperationalError:
        raise NotFound(f"workspace file {path.name[:6]}…: it does not exist (deleted?)") from None
    if not schema:
        return db
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        if create and db.execute("PRAGMA application_id").fetchone()[0] == 0:
            from ..sim.store import APPLICATION_ID  # one stamp for every gpudse SQLite file (campaigns share it)

            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # user_version stays the store's schema
        db.executescript(SCHEMA)
    except sqlite3.DatabaseError as e:
        raise WorkspaceError(f"{path}: not a gpudse workspace ({e})") from None
    return db


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT: writers queue on SQLite's lock, readers keep reading (WAL)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
