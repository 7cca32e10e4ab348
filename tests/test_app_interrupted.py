"""A validation whose server was killed mid-run: the Accuracy page says it was interrupted and
offers to run it again (Streamlit's AppTest, as tests/test_app.py)."""

from __future__ import annotations

import os
import re
import socket
import time

import pytest
from test_app import button, goto, home, new_app, ok, texts, wait_jobs, ws  # noqa: F401 - home: the server's home

from gpudse_core.workspace import db as dbm


def _killed_mid_validation(w) -> str:
    """A validation job row as a server killed mid-run leaves it: running, 12 of 40 units done, its
    heartbeat stopped two minutes ago, and no process here watching it."""
    then = time.time() - 120
    with w._lock, dbm.transaction(w._db):
        w._db.execute("INSERT INTO ws_job (id, kind, state, done, total, message, started, heartbeat, pid, host, stage) "
                      "VALUES ('deadbeefdeadbeef', 'validation', 'running', 12, 40, 'fits', ?, ?, ?, ?, 'validation')",
                      (then - 60, then, os.getpid() + 999_999, socket.gethostname()))
    return "deadbeefdeadbeef"


def test_accuracy_page_says_a_killed_validation_was_interrupted_and_reruns_it():
    app = new_app()
    goto(app, "Accuracy")
    w = ws(app)
    before = w.get("validation").version
    job_id = _killed_mid_validation(w)
    assert w.job(job_id).state == "interrupted"
    app.run()
    ok(app, "interrupted")
    said = [t for t in texts(app, "warning") if "Validation was interrupted" in t]
    assert len(said) == 1 and "after 12 of 40 units of work" in said[0] and "Run it again" in said[0]
    assert re.search(r"interrupted 2 min \d\d s ago", said[0]), said[0]
    again = button(app, "Validate again with the settings below")
    assert not again.disabled and not button(app, "Validate").disabled  # the old job does not block the form
    again.click().run()
    ok(app, "rerun")
    wait_jobs(app)
    newest = w.jobs()[0]
    assert newest.id != job_id and newest.kind == "validation" and newest.state == "finished"
    assert newest.result_version is not None and w.get("validation").version >= before and w.get("validation").ok
    app.run()
    assert not any("interrupted" in t for t in texts(app, "warning"))


def test_a_read_only_visitor_sees_the_interruption_but_cannot_rerun():
    app = new_app()
    goto(app, "Accuracy")
    _killed_mid_validation(ws(app))
    w = ws(app)
    w.writable = False
    app.run()
    assert any("Validation was interrupted" in t for t in texts(app, "warning"))
    assert button(app, "Validate again with the settings below").disabled
