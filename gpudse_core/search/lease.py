"""One run of a stored study at a time: a lease row in the workspace's SQLite file.

Two resumes of one study at once (two terminals, or a terminal and the Search page) each read the same
trials, each simulated every remaining design, and each stored its own study over the other's: both
said they succeeded, one result was kept and the other's simulations were lost. A run of a study —
``gpudse search --workspace`` and the Search page's job alike — therefore takes the study's lease
first, in one ``BEGIN IMMEDIATE`` transaction of the workspace file (table ``ws_search_lease``: the
holder's token, host, pid, process start time, boot id, since, heartbeat), and a second run is refused
with :class:`StudyBusy` naming the running one (pid, host, since) before it reads a trial.

A lease whose holder is provably dead is taken over — the campaign store's rule
(:func:`gpudse_core.sim.store.holder_is_dead`): on this host its pid has exited or was reused; on
another host its heartbeat is older than ``limits.campaign_lease_s``. The holder renews the heartbeat
from a thread every sixth of that, and deletes the row when its run ends (however it ends).
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

from .. import limits
from .study import SearchError

TABLE = ("CREATE TABLE IF NOT EXISTS ws_search_lease (study TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT "
         "NULL, pid INTEGER NOT NULL, pid_start TEXT, boot_id TEXT, since REAL NOT NULL, heartbeat REAL NOT NULL)")


class StudyBusy(SearchError):
    """Another live process is running the study."""


class StudyLease:
    """The lease of study *study* (the analysis name) of the workspace file *path*; a context manager."""

    def __init__(self, path: str | Path, study: str = "search", what: str = "the search"):
        self.path, self.study, self.what = Path(path), study, what
        self.owner = uuid.uuid4().hex
        self._db: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> StudyLease:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lease, or :class:`StudyBusy` naming its live holder (a dead one's is taken over)."""
        from ..sim.store import holder_is_dead, live_owner, this_process
        from ..workspace import db as dbm

        self._db = dbm.connect(self.path)
        host, pid, pid_start, boot = this_process()
        try:
            with dbm.transaction(self._db):
                self._db.execute(TABLE)
                row = self._db.execute("SELECT owner, host, pid, pid_start, boot_id, since, heartbeat FROM "
                                       "ws_search_lease WHERE study = ?", (self.study,)).fetchone()
                if row is not None:
                    dead, _ = holder_is_dead(row)
                    if not dead:
                        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row[5]))
                        raise StudyBusy(f"{self.what} of this workspace is running already (pid {row[2]} on host "
                                        f"{row[1]}, since {since}): a second run would simulate the same designs "
                                        f"and keep only one result; wait for it to end, or stop it (the Search "
                                        f"page's Stop), then run again")
                now = time.time()
                self._db.execute("INSERT OR REPLACE INTO ws_search_lease VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                 (self.study, self.owner, host, pid, pid_start, boot, now, now))
        except BaseException:
            self._db.close()
            self._db = None
            raise
        live_owner(self.owner, True)
        self._thread = threading.Thread(target=self._renew, name="gpudse-study-lease", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        every = max(0.5, limits.current().campaign_lease_s / 6)
        while not self._stop.wait(every):
            with self._lock:
                if self._db is None:
                    return
                try:
                    self._db.execute("UPDATE ws_search_lease SET heartbeat = ? WHERE study = ? AND owner = ?",
                                     (time.time(), self.study, self.owner))
                except Exception:  # noqa: BLE001 - a missed heartbeat only ages the lease; the next one renews it
                    continue

    def release(self) -> None:
        """Give the lease back (its row deleted, if it is still ours)."""
        from ..sim.store import live_owner

        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            if self._db is not None:
                try:
                    self._db.execute("DELETE FROM ws_search_lease WHERE study = ? AND owner = ?",
                                     (self.study, self.owner))
                except Exception:  # noqa: BLE001 - a lease left behind is taken over once its holder is gone
                    pass
                self._db.close()
                self._db = None
        live_owner(self.owner, False)
