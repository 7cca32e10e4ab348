"""Scenario cases of the hostile corpus: faults that are not a file a user uploads but a sequence of
events on a shared server — visits without a cookie, a read-only handle that tries to write, a damaged
row, a full disk, a process killed mid-fork or mid-job, two sessions editing one stage.

Each case is a small JSON document in ``tests/hostile_scenarios/`` — data only, never code::

    {"concern": "read-only-writes",        # the shared-server class (CONCERNS)
     "cls": "partial-state",               # the corpus class (hostile_corpus.CLASSES)
     "about": "what the case shows",
     "limits": {"visitor_workspaces_per_hour": 2},     # optional: limits for the whole case
     "steps": [{"do": "workspace", "as": "w", "space": "stargazer", "samples": 8},
               {"do": "digest", "of": "w", "as": "before"},
               {"do": "start_campaign", "ws": "w", "key": false, "error": "read-only"},
               {"do": "unchanged", "of": "w", "as": "before"}]}

A step names one operation of :data:`OPS` (a fixed vocabulary implemented here) and its arguments.
Expected outcomes are part of the step: ``"error": REGEX`` (the step must end in the project's
error, a :class:`GpudseError` whose message matches), ``"exit"``/``"stderr"``/``"stdout"`` of a CLI
call, or a check operation (``unchanged``, ``files``, ``listed``, ``job``, ``page``). Text arguments
may name earlier results as ``{w.id}``, ``{w.key}`` or ``{home}`` (looked up, never evaluated).

:func:`run` executes one case in the current process (the corpus runner forks a memory-capped child
per case, with ``GPUDSE_HOME`` set to a fresh folder): it prints ``scenario ok`` and returns 0 when
every step met its expectation; otherwise it prints which step failed and why and returns 1. A bug
(any exception that is not the project's error where one is expected) propagates: the runner prints
its traceback, which the corpus verdict counts as broken.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any, Callable

FOLDER = Path(__file__).resolve().parent / "hostile_scenarios"
CONCERNS = ("visiting-dos", "costly-legal-input", "attacker-urls", "csv-formula", "read-only-writes",
            "storage-fault", "lost-edit", "silent-value-change")


class Failed(Exception):
    """A step did not meet its expectation (not a bug of the product: a broken contract)."""


def load_cases() -> list[tuple[str, bytes, dict]]:
    """(name, raw JSON bytes, parsed document) of every scenario, sorted by name."""
    out = []
    for p in sorted(FOLDER.glob("*.json")):
        raw = p.read_bytes()
        doc = json.loads(raw)
        check_doc(doc, p.name)
        out.append((p.stem, raw, doc))
    return out


def check_doc(doc: Any, name: str) -> None:
    """A scenario document has the fields above and only operations of OPS."""
    fields = {"concern", "cls", "about", "limits", "steps", "timeout_s"}
    if not isinstance(doc, dict) or set(doc) - fields:
        raise ValueError(f"{name}: a mapping of {sorted(fields)} only")
    if doc.get("concern") not in CONCERNS or not doc.get("about") or not doc.get("steps"):
        raise ValueError(f"{name}: needs a concern of {CONCERNS}, an 'about' and steps")
    for i, s in enumerate(doc["steps"]):
        if not isinstance(s, dict) or s.get("do") not in OPS:
            raise ValueError(f"{name}: step {i + 1}: unknown operation {s.get('do') if isinstance(s, dict) else s!r}")


# ---- the context a case runs in ---------------------------------------------------------------------
class Ctx:
    def __init__(self, home: Path):
        self.home = home
        self.ws: dict[str, tuple[str, str]] = {}  # name -> (id, key)
        self.handles: dict[str, Any] = {}
        self.saved: dict[str, Any] = {}

    def sub(self, text: Any) -> Any:
        """Replace ``{name.field}`` and ``{home}`` in *text* by looking them up (never evaluated)."""
        if isinstance(text, list):
            return [self.sub(t) for t in text]
        if not isinstance(text, str):
            return text

        def one(m: re.Match) -> str:
            name, field = m.group(1), m.group(2)
            if name == "home" and field is None:
                return str(self.home)
            if name in self.ws and field in ("id", "key"):
                return self.ws[name][0 if field == "id" else 1]
            raise Failed(f"unknown placeholder {m.group(0)}")

        return re.sub(r"\{([A-Za-z_]\w*)(?:\.(\w+))?\}", one, text)

    def id(self, name: str) -> str:
        if name not in self.ws:
            raise Failed(f"no workspace named {name!r} earlier in the case")
        return self.ws[name][0]

    def open(self, name: str, key: bool = True) -> Any:
        from gpudse_core.workspace import open_workspace

        ws_id, k = self.ws[name]
        return open_workspace(ws_id, k if key else None)

    def path(self, name: str) -> Path:
        from gpudse_core.workspace import db as dbm

        return dbm.path_of(self.id(name))


def expect_error(step: dict, call: Callable[[], Any]) -> Any:
    """Run *call*; with ``error`` in *step* it must raise our error matching it, else succeed."""
    from gpudse_core.errors import GpudseError

    pattern = step.get("error")
    try:
        out = call()
    except GpudseError as e:
        if pattern is None:
            raise Failed(f"unexpected error: {e}") from None
        if not re.search(pattern, str(e), re.S):
            raise Failed(f"the error does not say /{pattern}/: {e}") from None
        print(f"  error as expected: {str(e)[:300]}")
        return None
    if pattern is not None:
        raise Failed(f"expected an error /{pattern}/, but it succeeded")
    return out


def digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        for q in (p, Path(f"{p}-wal")):
            h.update(q.name.encode())
            h.update(q.read_bytes() if q.exists() else b"")  # an empty WAL (a reader opened it) is none
    return h.hexdigest()


# ---- operations ------------------------------------------------------------------------------------
def op_workspace(ctx: Ctx, s: dict) -> None:
    """A new workspace (its owner's key kept): optionally a preset space, *samples* points, the
    built-in example's stages (``example: true``)."""
    from gpudse_core.space.presets import load_preset
    from gpudse_core.space.sampling import sample
    from gpudse_core.workspace import create_workspace

    ws, key = create_workspace(s.get("name", "scenario"))
    with ws:
        if s.get("example"):
            from gpudse_core.workspace.example import fill_example

            fill_example(ws)
        if s.get("space"):
            ws.set_space(load_preset(s["space"]), f"preset {s['space']}")
        if s.get("space_yaml"):  # a space file's text, read as an upload is
            from gpudse_core.space.presets import load_space_bytes

            ws.set_space(load_space_bytes(str(s["space_yaml"]).encode(), "space.yaml"), "uploaded space.yaml")
        if s.get("samples"):
            ws.set_samples(sample(ws.get("space").value, n=int(s["samples"]), seed=1), "scenario")
    ctx.ws[s["as"]] = (ws.id, key)


def op_write_file(ctx: Ctx, s: dict) -> None:
    """A file under $GPUDSE_HOME with *text*, *hex* bytes, or an SQLite database of another program."""
    p = ctx.home / ctx.sub(s["path"])
    p.parent.mkdir(parents=True, exist_ok=True)
    if s.get("sqlite"):
        import sqlite3

        con = sqlite3.connect(p)
        con.execute("CREATE TABLE notes (t TEXT)")
        con.commit()
        con.close()
    else:
        p.write_bytes(bytes.fromhex(s["hex"]) if "hex" in s else str(s.get("text", "")).encode())
    if "age_s" in s:
        t = time.time() - float(s["age_s"])
        os.utime(p, (t, t))


def op_digest(ctx: Ctx, s: dict) -> None:
    ctx.saved[s["as"]] = digest(_paths(ctx, s))


def op_unchanged(ctx: Ctx, s: dict) -> None:
    now = digest(_paths(ctx, s))
    if now != ctx.saved[s["as"]]:
        raise Failed(f"{s.get('of') or s.get('path')} changed (it must stay byte for byte as it was)")


def _paths(ctx: Ctx, s: dict) -> list[Path]:
    if "of" in s:
        return [ctx.path(s["of"])]
    return [ctx.home / ctx.sub(s["path"])]


def op_open(ctx: Ctx, s: dict) -> None:
    """Open a workspace (by name, or a raw *id*) with or without its key; kept as handle *as*."""
    from gpudse_core.workspace import open_workspace

    if "id" in s:
        h = expect_error(s, lambda: open_workspace(ctx.sub(s["id"])))
    else:
        h = expect_error(s, lambda: ctx.open(s["ws"], bool(s.get("key", True))))
    if h is not None and s.get("as"):
        ctx.handles[s["as"]] = h
    elif h is not None:
        h.close()


def _handle(ctx: Ctx, s: dict) -> Any:
    if "handle" in s:
        return ctx.handles[s["handle"]]
    h = ctx.open(s["ws"], bool(s.get("key", True)))
    ctx.handles[f"_{len(ctx.handles)}"] = h
    return h


def op_start_campaign(ctx: Ctx, s: dict) -> None:
    """A campaign of the built-in simulator (kernel *kernel*) over the samples; *wait* for it."""
    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.workspace import start_campaign

    h = _handle(ctx, s)
    job = expect_error(s, lambda: start_campaign(h, AnalyticalBackend(s.get("kernel", "bfs"))))
    if job is not None and s.get("wait"):
        job.wait(120)
        done = [c.progress.done for c in h.campaigns()]
        if "done" in s and done != s["done"]:
            raise Failed(f"campaigns done {done}, expected {s['done']}")


def op_record_campaign(ctx: Ctx, s: dict) -> None:
    """The store's own write, which has no read-only check of its own (the connection must refuse)."""
    from gpudse_core.workspace.campaigns import record_campaign

    h = _handle(ctx, s)
    expect_error(s, lambda: record_campaign(h, s.get("name", "sneaky")))


def op_rename(ctx: Ctx, s: dict) -> None:
    h = _handle(ctx, s)
    expect_error(s, lambda: h.rename(s["name"]))


DAMAGE = {  # named damages: fixed SQL, never text from the case
    "stage-inputs-not-json": "UPDATE ws_stage SET inputs = 'not json' WHERE stage = ?",
    "stage-inputs-wrong-type": "UPDATE ws_stage SET inputs = '{\"space\": 5}' WHERE stage = ?",
    "head-version-text": "UPDATE ws_head SET version = 'x' WHERE stage = ?",
    "stage-value-garbage": "UPDATE ws_stage SET value = X'00112233' WHERE stage = ?",
    # valid JSON that decodes, but to a mapping rather than what the stage holds (a hand-edited file)
    "stage-value-forged": "UPDATE ws_stage SET value = CAST('{\"a\": 1}' AS BLOB), format = 'json' WHERE stage = ?",
}


def op_damage(ctx: Ctx, s: dict) -> None:
    """Damage one stage's row the way a torn write or a bad disk sector would (DAMAGE names how)."""
    import sqlite3

    if s["what"] not in DAMAGE:
        raise Failed(f"unknown damage {s['what']!r}; one of {sorted(DAMAGE)}")
    con = sqlite3.connect(ctx.path(s["ws"]))
    con.execute(DAMAGE[s["what"]], (s["stage"],))
    con.commit()
    con.close()


def op_stage(ctx: Ctx, s: dict) -> None:
    """Check a stage as a handle sees it: *state* (current, missing, …), *damaged* (listed as damaged),
    *version*, *samples* (rows), *space* (its name)."""
    h = _handle(ctx, s)
    st = s["stage"]
    if "damaged" in s and (st in h.damaged()) != bool(s["damaged"]):
        raise Failed(f"stage {st} damaged: {h.damaged()}")
    if "state" in s and h.status(st).state != s["state"]:
        raise Failed(f"stage {st} is {h.status(st).state}, expected {s['state']}")
    if "rows" in s and len(h.get(st).value) != s["rows"]:
        raise Failed(f"stage {st} holds {len(h.get(st).value)} rows, expected {s['rows']}")
    if "space" in s and h.get("space").value.name != s["space"]:
        raise Failed(f"the space is {h.get('space').value.name}, expected {s['space']}")
    if "version_of" in s and h.get(st).version != ctx.saved[s["version_of"]]:
        raise Failed(f"stage {st} is version {h.get(st).version}, expected {ctx.saved[s['version_of']]}")


def op_save_version(ctx: Ctx, s: dict) -> None:
    ctx.saved[s["as"]] = _handle(ctx, s).get(s["stage"]).version


def op_drop_damaged(ctx: Ctx, s: dict) -> None:
    h = _handle(ctx, s)
    expect_error(s, lambda: h.drop_damaged(s["stage"]))


def op_set_samples(ctx: Ctx, s: dict) -> None:
    """Write new samples (*n* points); with *expect_version_of* as a form built from that version would."""
    from gpudse_core.space.sampling import sample

    h = _handle(ctx, s)
    expect = ctx.saved[s["expect_version_of"]] if "expect_version_of" in s else None
    value = sample(h.get("space").value, n=int(s["n"]), seed=int(s.get("seed", 2)))
    expect_error(s, lambda: h.set_samples(value, "scenario", expect=expect))


def op_set_space(ctx: Ctx, s: dict) -> None:
    """Save preset *preset* as the space; with *expect_version_of* as a form built from that version."""
    from gpudse_core.space.presets import load_preset

    h = _handle(ctx, s)
    expect = ctx.saved[s["expect_version_of"]] if "expect_version_of" in s else None
    expect_error(s, lambda: h.set_space(load_preset(s["preset"]), f"preset {s['preset']}", expect=expect))


def op_disk_full(ctx: Ctx, s: dict) -> None:
    """The handle's database cannot grow by a page more: SQLite's own "database or disk is full"."""
    h = ctx.handles[s["handle"]]
    pages = h._db.execute("PRAGMA page_count").fetchone()[0]
    h._db.execute(f"PRAGMA max_page_count = {int(pages)}")


def op_fork(ctx: Ctx, s: dict) -> None:
    """Fork workspace *ws* (``disk_full``: the copy cannot grow; ``killed``: the process forking is
    SIGKILLed once its ``.tmp`` copy exists, in a child process, so only its leftovers remain)."""
    from gpudse_core.workspace import db as dbm

    h = _handle(ctx, s)
    if s.get("killed"):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child dies by SIGKILL
            real = dbm.connect

            def connect(path: Any, *a: Any, **k: Any) -> Any:
                con = real(path, *a, **k)
                if str(path).endswith(".tmp"):
                    os.kill(os.getpid(), signal.SIGKILL)
                return con

            dbm.connect = connect
            try:
                h2 = ctx.open(s["ws"], bool(s.get("key", True)))
                h2.fork("killed")
            finally:
                os._exit(3)
        _, status = os.waitpid(pid, 0)
        if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != signal.SIGKILL:
            raise Failed(f"the forking process was not killed mid-fork (status {status})")
        return
    if s.get("disk_full"):
        real = dbm.connect

        def full(path: Any, *a: Any, **k: Any) -> Any:
            con = real(path, *a, **k)
            if str(path).endswith(".tmp"):
                con.execute("PRAGMA max_page_count = 1")
            return con

        dbm.connect = full
        try:
            out = expect_error(s, lambda: h.fork("copy"))
        finally:
            dbm.connect = real
    else:
        out = expect_error(s, lambda: h.fork("copy"))
    if out is not None:
        mine, key = out
        mine.close()
        if s.get("as"):
            ctx.ws[s["as"]] = (mine.id, key)


def op_mark_template(ctx: Ctx, s: dict) -> None:
    """Note workspace *ws* as a template being built (as the dashboard does before filling it); *built*:
    and finished."""
    from gpudse_core.workspace import upkeep

    upkeep.mark_template(ctx.id(s["ws"]))
    if s.get("built"):  # its build finished (the dashboard's template in use)
        upkeep.template_built(ctx.id(s["ws"]))
    if "age_s" in s:
        p = ctx.home / upkeep.TEMPLATES / ctx.id(s["ws"])
        t = time.time() - float(s["age_s"])
        os.utime(p, (t, t))


def op_server_start(ctx: Ctx, s: dict) -> None:
    """What a server does on start: remove leftovers older than ten minutes (the template in use, *keep*, stays)."""
    from gpudse_core.workspace import upkeep

    keep = ctx.id(s["keep"]) if s.get("keep") else None
    removed = upkeep.clean(keep_template=keep)
    print(f"  removed on start: {removed}")


def op_files(ctx: Ctx, s: dict) -> None:
    """Files under $GPUDSE_HOME matching *glob*: exactly *count* of them (or at most *max*)."""
    found = sorted(p.name for p in ctx.home.glob(ctx.sub(s["glob"])))
    if "count" in s and len(found) != s["count"]:
        raise Failed(f"{s['glob']}: {len(found)} files {found[:5]}, expected {s['count']}")
    if "max" in s and len(found) > s["max"]:
        raise Failed(f"{s['glob']}: {len(found)} files, expected at most {s['max']}")


def op_listed(ctx: Ctx, s: dict) -> None:
    """``list_workspaces`` (a trusted listing): the named workspaces listed, *skipped* ids named with a reason."""
    from gpudse_core.workspace import list_workspaces

    skipped: list = []
    ids = {i.id for i in list_workspaces(trusted=True, skipped=skipped)}
    want = {ctx.id(n) for n in s.get("ws", [])}
    if not want <= ids:
        raise Failed(f"not listed: {sorted(want - ids)}")
    for ws_id, pattern in s.get("skipped", {}).items():
        why = [w for i, w in skipped if i == ctx.sub(ws_id)]
        if not why or not re.search(pattern, why[0]):
            raise Failed(f"{ws_id} not skipped with /{pattern}/: {skipped}")


def op_cli(ctx: Ctx, s: dict) -> None:
    """``gpudse ARGV`` in this process (the same ``main`` as ``python -m gpudse_core``): its exit code
    and what it printed must match *exit*, *stdout*, *stderr*."""
    from gpudse_core.cli import main

    argv = ctx.sub(s["argv"])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    o, e = out.getvalue(), err.getvalue()
    print(f"  gpudse {' '.join(argv)[:200]} -> exit {code}\n  stdout: {o[-300:]!r}\n  stderr: {e[-300:]!r}")
    if "Traceback" in o + e:
        raise Failed("a traceback was printed")
    if code != s.get("exit", 0):
        raise Failed(f"exit {code}, expected {s.get('exit', 0)}")
    for stream, text in (("stdout", o), ("stderr", e)):
        if stream in s and not re.search(ctx.sub(s[stream]), text, re.S):
            raise Failed(f"{stream} does not say /{s[stream]}/")


def op_kill_job(ctx: Ctx, s: dict) -> None:
    """Start job *kind* (validation) of workspace *ws* in a child process and SIGKILL it once it has
    done some work: a server killed mid-job."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - dies by SIGKILL
        try:
            from gpudse_core.workspace import start_validation

            h = ctx.open(s["ws"])
            start_validation(h, train_sizes=[20, 30], test_size=20, repeats=10, models=["stepwise", "forest"])
            time.sleep(600)
        finally:
            os._exit(3)
    deadline = time.time() + 60
    h = ctx.open(s["ws"], key=False)
    try:
        while time.time() < deadline:
            jobs = [j for j in h.jobs() if j.kind == s["kind"]]
            if jobs and jobs[0].done > 0:
                break
            time.sleep(0.1)
        else:
            raise Failed("the job never started")
    finally:
        h.close()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def op_job(ctx: Ctx, s: dict) -> None:
    """The newest job of *kind* reads as *state* (within *within_s* seconds: an interrupted job is
    recognised by its heartbeat stopping)."""
    h = _handle(ctx, s)
    deadline = time.time() + float(s.get("within_s", 0))
    while True:
        jobs = [j for j in h.jobs() if j.kind == s["kind"]]
        state = jobs[0].state if jobs else None
        if state == s["state"] or time.time() >= deadline:
            break
        time.sleep(0.25)
    if state != s["state"]:
        raise Failed(f"the newest {s['kind']} job is {state}, expected {s['state']}")


def op_rerun_validation(ctx: Ctx, s: dict) -> None:
    from gpudse_core.workspace import start_validation

    h = _handle(ctx, s)
    job = expect_error(s, lambda: start_validation(h, train_sizes=[20], test_size=20, repeats=2,
                                                   models=["stepwise"]))
    if job is not None:
        job.wait(120)
        if h.jobs()[0].state != "finished" or not h.get("validation").ok:
            raise Failed(f"the rerun ended {h.jobs()[0].state}")


def op_visit(ctx: Ctx, s: dict) -> None:
    """*times* first visits of the dashboard (app.py through Streamlit's AppTest, no cookie) from
    client *client*: each must be a page, never an exception; *refused* of them (the last ones) must
    be the page saying a workspace cannot be made, naming the limit (*says*)."""
    import dashboard.state
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent
    dashboard.state.client = lambda: s["client"]  # the address Streamlit would report
    refused = 0
    for i in range(int(s["times"])):
        at = AppTest.from_file(str(root / "app.py"), default_timeout=120)
        at.run()
        if at.exception:
            raise Failed(f"visit {i + 1}: an exception page: {[e.value for e in at.exception][:1]}")
        errors = [e.value for e in at.error if "cannot make a new workspace" in e.value]
        if errors:
            refused += 1
            said = " ".join(t.value for t in at.text) + " ".join(errors)
            if not re.search(s.get("says", "."), said, re.S):
                raise Failed(f"visit {i + 1}: the page does not say /{s['says']}/: {said[:300]}")
    if refused != int(s.get("refused", 0)):
        raise Failed(f"{refused} of {s['times']} visits refused, expected {s.get('refused', 0)}")


_UNESCAPED_LINK = re.compile(r"(?<!\\)\]\(|(?<!\\)!\[|(?<!\\)<img|(?<![\u2060\\])://|www(?!\u2060)\.")


def op_page(ctx: Ctx, s: dict) -> None:
    """Open workspace *ws* in the dashboard (AppTest, with its key or as a read-only link) on *page*
    (a path under pages/, or Home): no exception, and every Markdown element showing *marker* (a word of
    the user's text) shows it inert: no unescaped ``![``, ``](``, ``<img`` or bare ``://`` (at least
    *at_least* such elements)."""
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent
    at = AppTest.from_file(str(root / "app.py"), default_timeout=120)
    at.query_params["ws"] = ctx.id(s["ws"])
    if s.get("key"):
        at.session_state["_gpudse_keys"] = {ctx.id(s["ws"]): ctx.ws[s["ws"]][1]}
    at.run()
    if s.get("page"):
        at.switch_page(s["page"]).run()
    if at.exception:
        raise Failed(f"an exception page: {[e.value for e in at.exception][:1]}")
    seen = 0
    for kind in ("markdown", "caption", "title", "header", "subheader", "info", "warning", "error", "success"):
        for el in getattr(at, kind):
            value = str(el.value)
            if s["marker"] in value:
                seen += 1
                if _UNESCAPED_LINK.search(value):
                    raise Failed(f"{kind} renders user text as Markdown: {value[:200]!r}")
    if seen < int(s.get("at_least", 1)):
        raise Failed(f"the user text ({s['marker']}) was shown {seen} times, expected at least {s.get('at_least', 1)}")
    labels = [str(b.label) for b in at.button]
    for label, shown in (s.get("buttons") or {}).items():  # e.g. the owner's "Drop the damaged …", not a visitor's
        if (label in labels) != bool(shown):
            raise Failed(f"button {label!r} {'missing' if shown else 'shown'} (buttons: {labels[:12]})")


def _study() -> dict:
    """A small search study as gpudse stores it (a synthetic simulator over the stargazer space)."""
    import numpy as np

    from gpudse_core.search.pool import make_pool
    from gpudse_core.search.runner import study_doc
    from gpudse_core.search.study import run_search
    from gpudse_core.space.presets import load_space

    space = load_space("stargazer")

    def evaluate(digits, designs):
        return [(float(100 + ((np.asarray(r, dtype=float) - 1) ** 2).sum()), "") for r in digits]

    res = run_search(make_pool(space), evaluate, goal="min", budget=14, batch=2, seed=1, n_trees=10)
    settings = {"source": "space stargazer, kernel BFS", "goal": "min", "cost": "", "response": "cycles",
                "params": list(space.parameter_names), "budget": 14, "initial": None, "seed": 1,
                "acquisition": "ei", "surrogate": "auto"}
    return json.loads(json.dumps(study_doc(settings, res)))


def _comparison_run(label: str) -> dict:
    import numpy as np
    import pandas as pd

    return {"label": label, "workspace": "w", "workspace_id": "x", "version": 1, "kind": "stepwise", "origin": "fit",
            "results": "built-in", "kernel": None, "noise": None, "rows": 20, "response": "cycles",
            "headline": {"source": "leave-one-out", "value": 0.05, "interpolates": False, "note": None,
                         "detail": "over 20 rows"}, "r2": 0.9, "terms": 2, "errors": np.array([0.01, 0.05]),
            "errors_source": "leave-one-out over 20 rows", "trend": None,
            "contributions": pd.DataFrame({"term": ["simd"], "gain": [0.5]}), "param": "simd", "curve": None}


def _stored(name: str, ws: Any) -> Any:
    """STORED's documents: fixed by name, built here, never taken from the case."""
    from gpudse_core.report import compare

    if name == "search-value-text":  # well-formed JSON, a trial's value text
        doc = _study()
        doc["trials"][3]["value"] = "fast"
        return doc
    if name == "search-design-foreign-param":
        doc = _study()
        doc["trials"][2]["design"]["evil"] = 1
        return doc
    if name == "search-trials-not-a-list":
        doc = _study()
        doc["trials"] = {"0": doc["trials"][0]}
        return doc
    if name == "comparison-headline-forged":
        from gpudse_core.report.comparison import Run

        cmp = compare.comparison([Run.from_stored(_comparison_run("a")), Run.from_stored(_comparison_run("b"))],
                                 "simd").to_stored()
        cmp["runs"][1]["headline"] = "forged"
        return cmp
    if name == "comparison-valid":
        from gpudse_core.report.comparison import Run

        return compare.comparison([Run.from_stored(_comparison_run("a")), Run.from_stored(_comparison_run("b"))],
                                  "simd")
    if name == "comparison-of-itself":  # two real snapshots of the workspace's model: labels carry its name
        return compare.comparison([compare.snapshot(ws, param="simd"), compare.snapshot(ws, param="simd")], "simd")
    raise Failed(f"unknown stored document {name!r}")


def op_store_analysis(ctx: Ctx, s: dict) -> None:
    """Store analysis *stage* of workspace *ws* as the named document *what* (a damaged, tampered or
    hostile-named study or comparison; see :func:`_stored`), as a forged workspace file would hold it."""
    import sqlite3

    from gpudse_core.workspace import codec
    from gpudse_core.workspace.stages import StageError

    h = ctx.open(s["ws"])
    try:
        doc = _stored(s["what"], h)
        try:
            h.put_analysis(s["stage"], doc, inputs=[], origin="scenario")
        except StageError:  # a typed analysis refuses it on write: forge the file, as a hand edit would
            valid = _study() if s["stage"] == "search" else _stored("comparison-valid", h)  # of the stage's type
            h.put_analysis(s["stage"], valid, inputs=[], origin="scenario")
            fmt, blob = codec.encode(doc)
            con = sqlite3.connect(h.path)
            con.execute("UPDATE ws_stage SET format = ?, value = ? WHERE stage = ? AND version = "
                        "(SELECT version FROM ws_head WHERE stage = ?)", (fmt, blob, s["stage"], s["stage"]))
            con.commit()
            con.close()
    finally:
        h.close()


def op_hold_study(ctx: Ctx, s: dict) -> None:
    """A second process holding the search study's lease of workspace *ws* (a search running there),
    kept as *as* until ``kill``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - ends by SIGKILL
        try:
            from gpudse_core.search.lease import StudyLease

            os.close(read)
            StudyLease(ctx.path(s["ws"])).acquire()
            os.write(write, b"held")
            time.sleep(60)  # a case that fails before its kill step leaves no process behind for long
        finally:
            os._exit(3)
    os.close(write)
    got = os.read(read, 4)
    os.close(read)
    if got != b"held":
        raise Failed("the holder never took the lease")
    ctx.saved[s["as"]] = pid


def op_kill(ctx: Ctx, s: dict) -> None:
    """SIGKILL a process started by an earlier step (*of*): it ends without releasing anything."""
    pid = ctx.saved[s["of"]]
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def op_csv(ctx: Ctx, s: dict) -> None:
    """A CSV the product wrote (*path* under the case's folder): no cell a spreadsheet would run as a
    formula (OWASP: = + - @ tab CR, plain numbers excepted); *has*: a regex its text matches."""
    import hostile_corpus

    p = Path.cwd() / ctx.sub(s["path"])
    if not p.exists():
        raise Failed(f"{s['path']} was not written")
    bad = hostile_corpus.formula_cells(p.parent, "")
    if bad:
        raise Failed(f"formula cells written: {bad[:3]}")
    if "has" in s and not re.search(s["has"], p.read_text(encoding="utf-8"), re.S):
        raise Failed(f"{s['path']} does not hold /{s['has']}/")


def op_expire(ctx: Ctx, s: dict) -> None:
    """The idle sweep a first visit runs, *hours* from now: untouched first-visit copies idle for longer
    than visitor_idle_hours go; *removed*: how many must."""
    from gpudse_core.workspace import visitors

    gone = visitors.expire(now=time.time() + float(s["hours"]) * 3600)
    if "removed" in s and len(gone) != s["removed"]:
        raise Failed(f"{len(gone)} idle copies removed, expected {s['removed']}")


def op_settings(ctx: Ctx, s: dict) -> None:
    """Test-speed settings (a fixed list): ``job_lost_after_s`` — a running job's heartbeat older
    than this reads as interrupted (the product waits 10 s)."""
    from gpudse_core.workspace import jobs

    if "job_lost_after_s" in s:
        jobs.LOST_AFTER_S = float(s["job_lost_after_s"])


def op_close(ctx: Ctx, s: dict) -> None:
    ctx.handles.pop(s["handle"]).close()


OPS: dict[str, Callable[[Ctx, dict], None]] = {
    "workspace": op_workspace, "write_file": op_write_file, "digest": op_digest, "unchanged": op_unchanged,
    "open": op_open, "start_campaign": op_start_campaign, "record_campaign": op_record_campaign,
    "rename": op_rename, "damage": op_damage, "stage": op_stage, "save_version": op_save_version,
    "drop_damaged": op_drop_damaged, "set_samples": op_set_samples, "set_space": op_set_space,
    "disk_full": op_disk_full, "fork": op_fork, "mark_template": op_mark_template, "server_start": op_server_start,
    "files": op_files, "listed": op_listed, "cli": op_cli, "kill_job": op_kill_job, "job": op_job,
    "rerun_validation": op_rerun_validation, "visit": op_visit, "settings": op_settings, "close": op_close,
    "page": op_page, "csv": op_csv, "expire": op_expire, "store_analysis": op_store_analysis,
    "hold_study": op_hold_study, "kill": op_kill,
}


def run(doc: dict, home: Path) -> int:
    """Run one scenario with ``$GPUDSE_HOME`` = *home*; 0 when every step met its expectation."""
    from gpudse_core import limits

    os.environ["GPUDSE_HOME"] = str(home)
    os.environ.pop("GPUDSE_SINGLE_USER", None)
    os.environ.pop("GPUDSE_CLIENT_HEADER", None)
    home.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(home)
    with limits.override(**doc.get("limits", {})):
        for i, step in enumerate(doc["steps"]):
            print(f"step {i + 1}: {step['do']}")
            try:
                OPS[step["do"]](ctx, step)
            except Failed as e:
                print(f"scenario failed at step {i + 1} ({step['do']}): {e}")
                return 1
    for h in ctx.handles.values():
        with contextlib.suppress(Exception):
            h.close()
    print(f"scenario ok: {len(doc['steps'])} steps")
    return 0
