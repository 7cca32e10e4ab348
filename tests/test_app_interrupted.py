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
        w._db.execute("INSERT INTO ws_job (id, kind, state, done, total, message, started, heartbeat, pid, host, "
                      "stage) VALUES ('deadbeefdeadbeef', 'validation', 'running', 12, 40, 'fits', ?, ?, ?, ?, "
                      "'validation')",
                      (then - 60, then, os.getpid() + 999_999, socket.gethostname()))
    return "deadbeefdeadbeef"


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_read_only_visitor_sees_the_interruption_but_cannot_rerun():
    app = new_app()
    goto(app, "Accuracy")
    _killed_mid_validation(ws(app))
    w = ws(app)
    w.writable = False
    app.run()
    assert any("Validation was interrupted" in t for t in texts(app, "warning"))
    assert button(app, "Validate again with the settings below").disabled


def _killed_mid(w, kind: str, stage: str, job_id: str) -> str:
    """A *kind* job row as a server killed mid-run leaves it (running, heartbeat stopped two minutes ago),
    the newest of its kind (a page that started its own job on opening has finished it)."""
    newest = max((j.started for j in w.jobs()), default=0.0)
    then = time.time() - 120
    with w._lock, dbm.transaction(w._db):
        w._db.execute("INSERT INTO ws_job (id, kind, state, done, total, message, started, heartbeat, pid, host, "
                      "stage) VALUES (?, ?, 'running', 3, 10, 'work', ?, ?, ?, ?, ?)",
                      (job_id, kind, max(then - 60, newest + 1e-3), then, os.getpid() + 999_999,
                       socket.gethostname(), stage))
    return job_id


# page, its job kind and stage, the rerun button, what to set first (widget kind, index or key, value)
EVERY_JOB_PAGE = [
    ("Search", "search", "search", "Run it again with the settings below", [("number_input", 0, 12)]),
    ("Simulations", "campaign", None, "Resume it with the simulator chosen below", [("slider", "noise", 0.05)]),
    ("Stepwise fit", "fit", "model", "Fit the random forest again with the settings below",
     [("selectbox", 0, "forest")]),
    ("Accuracy", "true_error", "true_error", "Run it again", []),
    ("Explore", "scan", "scan", "Run it again with the settings below", [("slider", 0, 5)]),
    ("Explore", "campaign", None, "Simulate the rows chosen below again", []),
    ("Ray tracing", "raycast", "heatmap", "Run it again with the settings below", [("slider", 0, 3)]),
]


@pytest.mark.parametrize("title,kind,stage,label,settings", EVERY_JOB_PAGE,
                         ids=[f"{p[0]}-{p[1]}" for p in EVERY_JOB_PAGE])
@pytest.mark.slow
def test_every_page_whose_work_runs_as_a_job_says_it_was_interrupted_and_reruns_it(title, kind, stage, label,
                                                                                   settings):
    app = new_app()
    goto(app, title)
    for widget, which, value in settings:
        found = getattr(app, widget)
        el = [e for e in found if which in str(e.key)][0] if isinstance(which, str) else found[which]
        el.set_value(value).run()
        ok(app, f"{title}: setting {widget}")
    wait_jobs(app)  # the ray tracing page traces its default scene on opening
    w = ws(app)
    job_id = _killed_mid(w, kind, stage, f"dead{kind:0<12}"[:16])
    assert w.job(job_id).state == "interrupted"
    app.run()
    ok(app, title)
    said = [t for t in texts(app, "warning") if "was interrupted" in t and "after 3 of 10 units of work" in t]
    assert len(said) == 1, texts(app, "warning")
    again = button(app, label)
    assert not again.disabled
    again.click().run()
    ok(app, f"{title}: rerun")
    # started by the press itself, wherever the page's own start sits relative to the notice
    assert next(j for j in w.jobs() if j.kind == kind).id != job_id, "the press started nothing"
    wait_jobs(app)
    newest = next(j for j in w.jobs() if j.kind == kind)
    assert newest.id != job_id and newest.state == "finished", \
        [(j.id, j.kind, j.state, j.started, j.message) for j in w.jobs()]
    if stage is not None:
        assert newest.result_version is not None and w.get(stage).version == newest.result_version
    app.run()
    assert not [t for t in texts(app, "warning") if "was interrupted" in t]  # the newest one finished
    app.run()  # a press is taken up once: nothing starts again on the next run
    assert next(j for j in w.jobs() if j.kind == kind).id == newest.id

