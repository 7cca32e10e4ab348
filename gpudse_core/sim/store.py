"""Durable campaign state in SQLite (standard library, WAL mode): nothing finished is ever lost.

One file holds any number of named campaigns: the campaign spec (space, sampling, backend) and every
design point with its status (``pending``, ``running``, ``done``, ``failed``), result, error text, log
tail, attempt count and timestamps.

Guarantees (simulation-campaigns issue):

* Every finished result is committed in its own transaction as it arrives.
* Opening a campaign re-queues points left ``running`` by a process that died (SIGKILL, power loss):
  completed results are kept and never run again; interrupted ones run again.
* A failed run is re-queued until it has been attempted ``max_attempts`` times, then marked
  ``failed`` with the reason; the campaign goes on.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ..errors import GpudseError
from ..jsonutil import json_default

STATUSES = ("pending", "running", "done", "failed")
SCHEMA = """
CREATE TABLE IF NOT EXISTS campaign (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    created REAL NOT NULL
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
"""


class StoreError(GpudseError):
    """The campaign store cannot be opened or does not match the request."""


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


class CampaignStore:
    """A campaign in a SQLite file (see the module docstring)."""

    def __init__(self, path: str | Path, name: str = "default", max_attempts: int = 3):
        self.path = Path(path)
        self.name = name
        if max_attempts < 1:
            raise StoreError("max_attempts must be at least 1")
        self.max_attempts = max_attempts
        try:
            # one thread at a time, but not always the one that opened it (a background run, a web session)
            self.db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a gpudse campaign store ({e}); give another --store file") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "CampaignStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- creating and resuming ---------------------------------------------------------------
    def spec(self) -> dict | None:
        row = self.db.execute("SELECT spec FROM campaign WHERE name = ?", (self.name,)).fetchone()
        return None if row is None else json.loads(row[0])

    def open(self, spec: dict, points: pd.DataFrame) -> str:
        """Create the campaign, or resume it when the store already holds the same one.

        Returns ``"created"`` or ``"resumed"``; a different spec under the same name is an error.
        """
        spec_json = json.dumps(spec, sort_keys=True, default=str)
        existing = self.spec()
        if existing is not None:
            if json.dumps(existing, sort_keys=True, default=str) != spec_json:
                raise StoreError(f"{self.path}: campaign {self.name!r} was started with a different setup "
                                 f"({_diff(existing, spec)}); use another --store file or campaign name to start "
                                 f"a new one")
            n = self.db.execute("SELECT COUNT(*) FROM point WHERE campaign = ?", (self.name,)).fetchone()[0]
            if n != len(points):
                raise StoreError(f"{self.path}: campaign {self.name!r} has {n} points but {len(points)} were given")
            with self._tx():
                self.db.execute("UPDATE point SET status = 'pending' WHERE campaign = ? AND status = 'running'",
                                (self.name,))
            return "resumed"
        records = points.to_dict(orient="records")
        with self._tx():
            self.db.execute("INSERT INTO campaign (name, spec, created) VALUES (?, ?, ?)",
                            (self.name, spec_json, time.time()))
            self.db.executemany(
                "INSERT INTO point (campaign, idx, params, status) VALUES (?, ?, ?, 'pending')",
                ((self.name, i, json.dumps(r, default=json_default)) for i, r in enumerate(records)))
        return "created"

    def import_results(self, spec: dict, table: pd.DataFrame, responses: list[str]) -> int:
        """Record uploaded results as a finished campaign (every point done); returns the row count."""
        if self.spec() is not None:
            raise StoreError(f"{self.path}: campaign {self.name!r} already exists; import under another --campaign name")
        params = [c for c in table.columns if c not in responses]
        now = time.time()
        with self._tx():
            self.db.execute("INSERT INTO campaign (name, spec, created) VALUES (?, ?, ?)",
                            (self.name, json.dumps(spec, sort_keys=True, default=str), now))
            self.db.executemany(
                "INSERT INTO point (campaign, idx, params, status, attempts, result, finished) "
                "VALUES (?, ?, ?, 'done', 0, ?, ?)",
                ((self.name, i, json.dumps({p: r[p] for p in params}, default=json_default),
                  json.dumps({c: r[c] for c in responses}, default=json_default), now)
                 for i, r in enumerate(table.to_dict(orient="records"))))
        return len(table)

    # ---- the work queue ----------------------------------------------------------------------
    def claim(self, limit: int) -> list[tuple[int, dict, int]]:
        """Mark up to *limit* pending points running; returns (idx, params, attempt number)."""
        with self._tx():
            rows = self.db.execute(
                "SELECT idx, params, attempts FROM point WHERE campaign = ? AND status = 'pending' ORDER BY idx "
                "LIMIT ?", (self.name, limit)).fetchall()
            now = time.time()
            self.db.executemany(
                "UPDATE point SET status = 'running', attempts = attempts + 1, started = ? WHERE campaign = ? AND "
                "idx = ?", ((now, self.name, r[0]) for r in rows))
        return [(r[0], json.loads(r[1]), r[2] + 1) for r in rows]

    def complete(self, results: Iterable[tuple[int, dict]]) -> None:
        """Commit finished results (one transaction for the batch)."""
        now = time.time()
        with self._tx():
            self.db.executemany(
                "UPDATE point SET status = 'done', result = ?, error = NULL, finished = ? WHERE campaign = ? AND "
                "idx = ? AND status = 'running'",
                ((json.dumps(res, default=json_default), now, self.name, idx) for idx, res in results))

    def fail(self, failures: Iterable[tuple[int, str, str]]) -> None:
        """Record failed runs (idx, reason, log tail); re-queue those with attempts left."""
        now = time.time()
        with self._tx():
            for idx, reason, tail in failures:
                self.db.execute(
                    "UPDATE point SET status = CASE WHEN attempts >= ? THEN 'failed' ELSE 'pending' END, error = ?, "
                    "log_tail = ?, finished = ? WHERE campaign = ? AND idx = ? AND status = 'running'",
                    (self.max_attempts, reason, tail[-4000:] if tail else None, now, self.name, idx))

    def progress(self) -> Progress:
        counts = dict(self.db.execute("SELECT status, COUNT(*) FROM point WHERE campaign = ? GROUP BY status",
                                      (self.name,)).fetchall())
        return Progress(*(int(counts.get(s, 0)) for s in STATUSES))

    # ---- reading results ---------------------------------------------------------------------
    def table(self, include_failed: bool = False) -> pd.DataFrame:
        """One row per point: parameters, result columns, status, attempts, error."""
        rows = self.db.execute("SELECT idx, params, status, attempts, result, error FROM point WHERE campaign = ? "
                               "ORDER BY idx", (self.name,)).fetchall()
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
        rows = self.db.execute("SELECT idx, attempts, error, log_tail FROM point WHERE campaign = ? AND "
                               "status = 'failed' ORDER BY idx", (self.name,)).fetchall()
        return pd.DataFrame(rows, columns=["idx", "attempts", "error", "log_tail"])

    def _tx(self):
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *rest: Any) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _diff(a: dict, b: dict) -> str:
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return "differs in " + ", ".join(keys[:5]) if keys else "differs"
