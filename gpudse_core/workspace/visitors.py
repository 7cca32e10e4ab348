"""Budgets for anonymous visitors of a shared dashboard: a token bucket per client, and expiry of
the untouched workspaces first visits made.

Every first visit without a cookie costs the server a workspace file (a fork of the example
template, ~0.2 MB and a few seconds). A server-wide count alone lets one client without a key fill
the server and lock every later visitor out, so the workspaces made for first visits are also
counted **per client and per hour** (``visitor_workspaces_per_hour``; a sliding hour), and those
that were never changed after they were made are deleted once nobody has opened them for
``visitor_idle_hours``. A workspace someone changed is theirs: it is never expired here.

A *client* is what :func:`client_key` makes of the address the server saw: an IPv4 address, an
IPv6 /64 network (one host owns a whole /64), ``loopback`` for connections from this machine, or,
behind a reverse proxy, the value of the header named by ``$GPUDSE_CLIENT_HEADER`` (the proxy must
set it itself: the authenticated ``X-Forwarded-User``, or ``X-Forwarded-For``).

The ledger is one small SQLite file, ``$GPUDSE_HOME/visitors.db``, shared by the server's processes.
No Streamlit here: the dashboard passes the address in.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import sqlite3
import time
from pathlib import Path

from .. import limits
from . import pending
from .db import WorkspaceError, home

CLIENT_HEADER_ENV = "GPUDSE_CLIENT_HEADER"
LEDGER = "visitors.db"
DONE = 1e308  # seen: a row expiry has dealt with
EXPIRE_BATCH = 20  # workspaces looked at per expiry pass (each pass is a first visit: bounded work)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS visit (
    ws_id TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    created REAL NOT NULL,
    stamp REAL NOT NULL,  -- the workspace's `updated` when it was made: changed since when it differs
    seen REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS visit_client ON visit (client, created);
CREATE INDEX IF NOT EXISTS visit_seen ON visit (seen);
"""


def client_key(address: str | None, headers: dict | None = None) -> str | None:
    """The client a new workspace is counted against: the user or address in the header named by
    ``$GPUDSE_CLIENT_HEADER`` when that is set and present, else the connection's address (Streamlit
    gives none for a loopback connection: a local user or a proxy on this machine, counted as one
    client, ``loopback``); None when no request is behind the session (a test harness)."""
    header = os.environ.get(CLIENT_HEADER_ENV, "").strip()
    if header and headers:
        for k, v in headers.items():
            if str(k).lower() == header.lower() and str(v).strip():
                value = str(v).split(",")[-1].strip()  # X-Forwarded-For: the hop the proxy added
                return _address_key(value) or "user:" + value[:200]
    if not address:
        return "ip:loopback" if headers else None
    return _address_key(str(address)) or "addr:" + str(address)[:100]


def _address_key(text: str) -> str | None:
    try:
        ip = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return f"ip:{ip.ipv4_mapped}"
        return "ip:" + str(ipaddress.ip_network(f"{ip}/64", strict=False))  # one host owns a /64
    return f"ip:{ip}"


def _ledger(root: str | Path | None = None) -> sqlite3.Connection:
    d = home(root)
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        db = sqlite3.connect(d / LEDGER, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA)
    except (OSError, sqlite3.Error) as e:
        raise WorkspaceError(f"{d / LEDGER}: the visitors' ledger cannot be opened ({e}); check that "
                             f"$GPUDSE_HOME is a writable folder on a local disk") from None
    return db


def admit(client: str | None, root: str | Path | None = None, now: float | None = None) -> None:
    """Raise :class:`~gpudse_core.limits.LimitError` when *client* has had its hour's workspaces."""
    if client is None:
        return
    now = time.time() if now is None else now
    db = _ledger(root)
    try:
        (n,) = db.execute("SELECT COUNT(*) FROM visit WHERE client = ? AND created > ?",
                          (client, now - 3600)).fetchone()
    finally:
        db.close()
    n += pending.pending_copies(client, root)  # copies being written for it, or left by a kill until swept
    limits.check("visitor_workspaces_per_hour", n + 1, "new workspaces for first visits from your address in "
                 "the last hour", "open the link of a workspace you already have, or try again within the hour")


def record(client: str | None, ws_id: str, stamp: float, root: str | Path | None = None,
           now: float | None = None, expires: bool = True) -> None:
    """Note a workspace made for a browser: counted against *client* for an hour, and, when it
    *expires* (a first visit's copy of the example), deleted if it is left unchanged (its ``updated``
    time still *stamp*) and unopened."""
    now = time.time() if now is None else now
    db = _ledger(root)
    try:
        db.execute("INSERT OR REPLACE INTO visit VALUES (?, ?, ?, ?, ?)",
                   (ws_id, client or "", now, stamp, now if expires else DONE))
    finally:
        db.close()


def seen(ws_id: str, root: str | Path | None = None, now: float | None = None) -> None:
    """A session opened *ws_id*: its idle clock starts again (no-op for other workspaces)."""
    with contextlib.suppress(WorkspaceError, sqlite3.Error):
        db = _ledger(root)
        try:
            db.execute("UPDATE visit SET seen = ? WHERE ws_id = ? AND seen < ?",
                       (time.time() if now is None else now, ws_id, DONE))
        finally:
            db.close()


def expire(root: str | Path | None = None, now: float | None = None, keep: set[str] | None = None) -> list[str]:
    """Delete up to ``EXPIRE_BATCH`` first-visit workspaces unchanged since they were made and not
    opened for ``visitor_idle_hours``; a changed one leaves the ledger and is kept. Returns the
    deleted ids."""
    from .workspace import open_workspace

    now = time.time() if now is None else now
    idle = limits.current().visitor_idle_hours * 3600
    db = _ledger(root)
    deleted: list[str] = []
    try:
        rows = db.execute("SELECT ws_id, stamp FROM visit WHERE seen < ? ORDER BY seen LIMIT ?",
                          (now - idle, EXPIRE_BATCH)).fetchall()
        for ws_id, stamp in rows:
            if keep and ws_id in keep:
                continue
            try:
                with open_workspace(ws_id, root=root, trusted=True) as ws:
                    if ws.info().updated == stamp and not ws.jobs(active=True):
                        ws.delete()
                        deleted.append(ws_id)
            except WorkspaceError:
                pass  # already gone, or damaged: not ours to judge here
            # done with (deleted, or someone's work): never looked at again; the row stays while the
            # hour's count needs it
            db.execute("UPDATE visit SET seen = ? WHERE ws_id = ?", (DONE, ws_id))
        db.execute("DELETE FROM visit WHERE seen = ? AND created < ?", (DONE, now - 3600))
    finally:
        db.close()
    return deleted
