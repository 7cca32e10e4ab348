"""Running a search against a real backend: every round is a simulation campaign, every round stored.

The loop of :mod:`.study` asks for a batch of designs; :class:`CampaignEvaluator` runs the batch as one
campaign (:func:`gpudse_core.sim.campaign.run_campaign`) in a :class:`~gpudse_core.sim.store.CampaignStore`
— the same machinery as ``gpudse simulate``, so the built-in simulator, an external command, a lookup
table, a local process pool and a Dask cluster all work, and every attempt is recorded. The executor
(process pool or Dask client) lives for the whole search, not one round. A round of the built-in
simulator or of a lookup table that is one task (up to their ``batch_size`` designs) runs in this
process: they answer in milliseconds, and a pool added only its messages and a process (the CLI's
overhead over an in-process search, docs/search.md "What a search costs"). The store's file is kept
open between rounds, so a round's campaign does not write back and delete the file's log on closing.
A round whose simulator and designs match a campaign an earlier run left under the same prefix (the
same command again with the same ``-o``'s ``history.db``, or the round an interrupted run left) resumes
that campaign: what it simulated is read back, not simulated again.

:class:`StudyStore` keeps the study in a workspace as the analysis ``search`` (plain JSON: its settings
and every trial), rewritten after each round, so a reload finds the search, the dashboard sees it grow,
a Stop ends it after the round in flight, and running the same search again resumes it: the trials
already simulated are read back and never simulated again.
"""

from __future__ import annotations

import contextlib
import math
import os
from concurrent.futures import Executor, Future
from typing import Any, Callable

import numpy as np

from ..errors import GpudseError
from .result import RESUMABLE
from .study import NOT_RUN, SearchResult, Trial

STAGE = "search"
IN_PROCESS = ("analytical", "lookup")  # backends computed in Python in milliseconds: a one-task round runs inline


class Inline(Executor):
    """An executor that runs each task at once, in this process (its future is done when returned)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - the task's failure is its future's, as in a pool
            f.set_exception(e)
        return f


ON_STOP = ("kill", "finish")  # what a Stop does to simulations in flight: kill them (not counted), or let them finish
LOST = "its worker was lost"  # how a campaign records a run whose worker process died (sim.campaign._collect)


class CampaignEvaluator:
    """The simulator of a search: each round one campaign, run by an executor that lives for the whole
    search. Processes started on this machine (a local pool, ``--scheduler local``) are as many as the
    largest round so far can use (:func:`~gpudse_core.sim.campaign.pool_size`), not ``--workers``
    whatever the batch: the pool starts with the first round and grows only when a round has more
    work than it has processes."""

    def __init__(self, backend: Any, store_path: Any, prefix: str, response: str, *, workers: int | None = None,
                 scheduler: str | None = None, should_stop: Any = None, cost_column: str | None = None,
                 on_stop: str = "kill"):
        from ..sim.campaign import check_workers

        check_workers(workers, scheduler)
        if on_stop not in ON_STOP:
            raise GpudseError(f"on_stop {on_stop!r}: give one of {', '.join(ON_STOP)}")
        self.backend, self.store_path, self.prefix, self.response = backend, store_path, prefix, response
        self.cost_column = cost_column  # a second measured result (goal pareto): returned beside the response
        self.workers = workers or os.cpu_count() or 1
        self.scheduler, self.should_stop, self.on_stop = scheduler, should_stop, on_stop
        self.killed = False  # a Stop killed the local pool's simulations in flight
        self.rounds = 0
        self.size = 0  # processes of the executor started on this machine (0: none yet)
        self.client = self.cluster = self.executor = None
        self.keeper: Any = None  # a connection to the store's file, open while the search runs
        self.reused = 0  # simulations read back from earlier runs' campaigns instead of run

    def __enter__(self) -> "CampaignEvaluator":
        from ..sim.campaign import _dask

        if self.scheduler and self.scheduler != "local":  # a remote cluster: its workers are its own
            self.client, self.cluster, self.executor = _dask(self.scheduler, self.workers)
        return self

    def _ready(self, points: int) -> tuple[Any, int]:
        """The executor for a round of *points* and its workers: inline for a one-task round of an
        IN_PROCESS backend; else one on this machine with as many processes as *points* can use
        (started, or grown), or the remote cluster's."""
        from ..sim.campaign import _dask, local_pool, pool_size, process_bytes

        if self.scheduler and self.scheduler != "local":
            return self.executor, self.workers
        want = pool_size(self.workers, points, getattr(self.backend, "batch_size", 1), process_bytes(self.backend))
        if want == 1 and not self.scheduler and getattr(self.backend, "name", "") in IN_PROCESS:
            return Inline(), 1
        if want <= self.size:
            return self.executor, self.size
        self._close(clean=True)
        if self.scheduler:
            self.client, self.cluster, self.executor = _dask(self.scheduler, want)
        else:
            self.executor = local_pool(want)
        self.size = want
        return self.executor, self.size

    def _campaign(self, spec: dict) -> str:
        """The campaign of the next round: an earlier one of this store under the search's prefix with
        the same simulator and designs when there is one — a rerun of the same search, or the round an
        interrupted run left, whose simulations are then read back, not run again (a deterministic
        search proposes the same designs from the same results) —, else a new one."""
        import json
        import sqlite3
        import uuid

        name = f"{self.prefix}-{self.rounds:05d}"
        self.rounds += 1
        if not os.path.exists(self.store_path):
            return name
        self._keep_open()
        try:
            rows = self.keeper.execute("SELECT name, spec FROM campaign WHERE substr(name, 1, ?) = ?",
                                       (len(self.prefix), self.prefix)).fetchall()
        except sqlite3.Error:  # a workspace whose file holds no campaign yet
            rows = []
        want = json.dumps(spec, sort_keys=True, default=str)
        for found, stored in rows:
            try:
                if json.dumps(json.loads(stored), sort_keys=True, default=str) == want:
                    return found
            except (TypeError, ValueError):
                continue
        return name if name not in {n for n, _ in rows} else f"{name}-{uuid.uuid4().hex[:8]}"

    def _keep_open(self) -> None:
        """Hold a read-only connection to the store's file for the search (SQLite then leaves its
        write-ahead log in place when a round's store closes, instead of writing it back each round)."""
        from ..sim.store import connect

        if self.keeper is None:
            self.keeper = connect(self.store_path, readonly=True)

    def _close(self, clean: bool) -> None:
        from ..sim.campaign import kill_pool

        if self.client is not None:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        elif self.executor is not None:
            if clean:
                self.executor.shutdown(wait=True, cancel_futures=True)
            else:
                kill_pool(self.executor)
        self.client = self.cluster = self.executor = None

    def __exit__(self, *exc: Any) -> None:
        try:
            self._close(clean=exc[0] is None)
        finally:
            if self.keeper is not None:
                self.keeper.close()
                self.keeper = None

    def _stopping(self) -> bool:
        """The round's stop check (polled by the campaign twice a second): on a Stop, a local pool's
        simulations in flight are killed at once (``on_stop="kill"``) or left to finish (``"finish"``);
        either way nothing more is started. A Dask cluster's runs always finish."""
        from ..sim.campaign import kill_pool

        if self.should_stop is None or not self.should_stop():
            return False
        if self.on_stop == "kill" and not self.killed and self.client is None and self.executor is not None:
            self.killed = True
            kill_pool(self.executor)
            self.executor, self.size = None, 0
        return True

    def __call__(self, digits: np.ndarray, designs: list) -> list:
        import pandas as pd

        from ..sim.campaign import points_spec, run_campaign
        from ..sim.store import CampaignStore

        points = pd.DataFrame(designs)
        spec = {**self.backend.spec(), **points_spec(points)}
        with CampaignStore(self.store_path, name=self._campaign(spec), max_attempts=1) as store:
            store.open(spec, points)
            self._keep_open()
            before = store.progress()
            self.reused += before.done + before.failed
            if before.remaining:
                executor, workers = self._ready(before.remaining)
                run_campaign(store, self.backend, workers=workers, executor=executor,
                             should_stop=self._stopping if self.should_stop is not None else None)
            table = store.table(include_failed=True)
        out: list = []
        for _, row in table.iterrows():
            if row.get("status") in ("pending", "running") or (
                    self.killed and str(row.get("error") or "").startswith(LOST)):
                out.append(NOT_RUN)  # stopped before it finished: not a trial, simulated again on a resume
                continue
            if row.get("status") != "done":
                out.append((None, str(row.get("error") or row.get("status"))))
                continue
            v = _finite(row.get(self.response))
            if v is None:
                out.append((None, f"the simulator gave no numeric {self.response!r}"))
            elif self.cost_column is None:
                out.append((v, ""))
            else:
                c = _finite(row.get(self.cost_column))
                out.append((v, "", c) if c is not None else
                           (None, f"the simulator gave no numeric {self.cost_column!r} (the second objective)"))
        return out


def _finite(v: Any) -> float | None:
    """*v* as a finite float, or None."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


class StudyStore:
    """The study in a workspace: read the trials to resume, write them after every round, stop flag."""

    def __init__(self, ws_id: str, settings: dict):
        from ..workspace.jobs import begin_job
        from ..workspace.workspace import open_workspace
        from .lease import StudyLease

        self.ws = open_workspace(ws_id, trusted=True)
        self.settings = settings
        self.lease = StudyLease(self.ws.path)  # a second run of the study is refused here, before any job or trial
        try:
            self.lease.acquire()
            self.ctx = begin_job(self.ws, "search", stage=STAGE)
        except BaseException:
            self.lease.release()
            self.ws.close()
            raise
        self.ended = False

    @property
    def store_path(self) -> Any:
        return self.ws.path

    def previous(self) -> tuple[list[Trial], list]:
        """The stored study's trials to resume from, and its rounds' times (:class:`~.timing.RoundTime`)."""
        study = stored_study(self.ws)
        if study is None or not study.trials:
            return [], []
        if study_differences(study.settings, self.settings):
            raise GpudseError(f"workspace {self.ws.id[:6]}… holds a search with other settings "
                              f"({describe_differences(study.settings, self.settings)}); resume it with the stored "
                              f"settings (e.g. --surrogate forest for a search stored before auto was the default), "
                              f"or use another workspace")
        order = self.settings.get("params") or ()
        return [Trial.from_dict(t.to_dict(), order) for t in study.trials], list(study.times)

    def save(self, res: SearchResult, partial: bool = True) -> None:
        doc = study_doc(self.settings, res)
        self.ws.put_analysis(STAGE, doc, inputs=[], origin=f"gpudse search, goal {res.goal}", partial=partial,
                             note=f"{len(res.trials):,} simulations, {res.failed:,} failed")
        self.ctx.progress(len(res.trials), int(self.settings.get("budget", 0)) or None,
                          f"{len(res.trials):,} simulated, {res.failed:,} failed")

    def should_stop(self) -> bool:
        return self.ctx.stopped()

    def end(self, state: str, error: str | None = None) -> None:
        from ..workspace.jobs import end_job

        if not self.ended:
            self.ended = True
            try:
                end_job(self.ws, self.ctx, state, error)
            finally:
                self.lease.release()
                self.ws.close()


def check_builtin(space: Any, backend: Any) -> None:
    """Refuse a space the built-in simulator does not model before anything runs: every value of every
    parameter is checked (``AnalyticalBackend.check_table``)."""
    check = getattr(backend, "check_table", None)
    if check is None:
        return
    radices = np.array(space.radices)
    every = np.minimum(np.arange(int(radices.max()))[:, None], radices[None, :] - 1)
    check(space.frame(every), f"space {space.name}")


def study_doc(settings: dict, res: SearchResult, model_error: list | None = None) -> dict:
    """The stored form of a study (the ``search`` analysis, :class:`~.result.SearchStudy`): settings, why it
    stopped, every trial, and (from the dashboard) the model's estimated error after each round."""
    from .result import SearchStudy

    return SearchStudy.of(settings, res, model_error).to_stored()


def stored_study(ws: Any) -> Any:
    """The workspace's stored study (a :class:`~.result.SearchStudy`), or None when there is none; a damaged
    one is a :class:`~.stored.StudyDamaged` naming the field (a resume never starts from it)."""
    from ..workspace.results import Damaged
    from .stored import StudyDamaged

    study = ws.get(STAGE).value
    if isinstance(study, Damaged):
        raise StudyDamaged(study.why)
    return study


def study_differences(old: dict, new: dict) -> list[str]:
    """The settings in which a stored study differs from *new*, but for what a resumed search may change
    (RESUMABLE); a study stored without the initial sample's size or method used the defaults, one
    stored without a surrogate the forest (the default before ``auto``; compared for min and max only)."""
    from .study import default_initial

    def norm(s: dict, both_default: bool) -> dict:
        initial = None if both_default else s.get("initial") or default_initial(int(s.get("budget") or 0))
        # the surrogate matters to min and max only (accuracy and pareto never fit the stepwise model)
        surrogate = (s.get("surrogate") or "forest") if s.get("goal") in ("min", "max") else None
        return {**s, "initial": initial, "initial_method": s.get("initial_method") or "uniform",
                "objective": s.get("objective") or "", "surrogate": surrogate}

    both = old.get("initial") is None and new.get("initial") is None  # gpudse search's default both times
    old, new = norm(old, both), norm(new, both)
    return sorted(k for k in set(old) | set(new) if k not in RESUMABLE and old.get(k) != new.get(k))


def describe_differences(old: dict, new: dict) -> str:
    """The differing settings, each with its stored and its given value (a study stored without a
    surrogate shows the forest it ran with)."""
    def shown(s: dict, k: str) -> str:
        v = s.get(k)
        if k == "surrogate" and not v:
            v = "forest"
        return "(none)" if v in (None, "") else repr(v) if isinstance(v, str) else str(v)

    return "; ".join(f"{k}: stored {shown(old, k)}, given {shown(new, k)}" for k in study_differences(old, new))


def same_study(old: dict, new: dict) -> bool:
    """Whether a stored study's settings are those of *new* (a resume goes on from its trials)."""
    return not study_differences(old, new)


def model_error(pool: Any, trials: list, seed: int = 0) -> float | None:
    """The model's estimated error on the simulated designs: the mean relative out-of-bag error of a
    forest (:class:`~.surrogate.Forest`, Breiman 2001's out-of-bag estimate — each design predicted by
    the trees that did not see it) fitted on every successful simulation so far; None with fewer than
    ten, or when no design is left out of enough trees."""
    from .surrogate import TREES, Forest

    ok = [t for t in trials if t.status == "ok"]
    if len(ok) < 10:
        return None
    y = np.array([t.value for t in ok], dtype=float)
    X = pool.features(np.array([pool.space.digits_of_point(t.design) for t in ok], dtype=np.int64))
    forest = Forest(TREES, seed=seed).fit(X, y)
    z = forest.oob_predictions(X)
    use = np.isfinite(z)
    if use.sum() < 5:
        return None
    pred = np.exp(z[use]) if forest.log else z[use]
    scale = np.maximum(np.abs(y[use]), 1e-12)
    return float(np.mean(np.abs(pred - y[use]) / scale))


def search_settings(space: Any, kernel: str, goal: str, budget: int, seed: int = 0, *, initial: int | None = None,
                    initial_method: str = "uniform", cost: str = "", objective: str = "",
                    response: str = "cycles", batch: int | None = None, stored: dict | None = None) -> dict:
    """The stored settings of a search on the built-in simulator (what :func:`same_study` compares).
    The page has no surrogate field: a new search uses the default (``auto``), and a *stored* study of
    otherwise the same settings goes on with the surrogate it ran with (``forest`` before ``auto``)."""
    settings = {"source": f"space {space.name}, kernel {kernel}", "goal": goal, "cost": (cost or "").strip(),
                "response": response, "params": list(space.parameter_names), "budget": budget, "initial": initial,
                "seed": seed, "acquisition": "ei", "initial_method": initial_method, "surrogate": "auto"}
    if batch is not None:  # shown again on a reload; a resumed search may change it
        settings["batch"] = batch
    if (objective or "").strip():  # only when given, as gpudse search stores it
        settings["objective"] = objective.strip()
    if stored:
        kept = {**settings, "surrogate": stored.get("surrogate") or "forest"}
        if same_study(stored, kept):
            return kept
    return settings


def stopped_text(res: SearchResult) -> str:
    """What a stopped search says of itself (the job's last message): what it kept, and the simulations a
    Stop ended before they finished, which are not counted."""
    from ..fmt import fmt_count

    text = f"stopped after {fmt_count(len(res.trials), 'simulations')}"
    if res.not_counted:
        n = len(res.not_counted)
        text += (f"; {fmt_count(n, 'simulations')} in flight or waiting {'was' if n == 1 else 'were'} stopped and "
                 f"not counted (resuming simulates {'it' if n == 1 else 'them'})")
    return text


SAVE_EVERY_S = 2.0  # a running search stores its study at most this often (and after its last round)


def _page_expressions(space: Any, goal: str, cost: str, objective: str, response: str) -> tuple[Any, Any]:
    """The page's Cost (goal pareto) and Objective (min/max) checked as ``gpudse search --cost/--objective``
    checks them, their messages naming the page's fields, and built (None when not given)."""
    from .expressions import cost_function, objective_function
    from .study import SearchError

    if goal == "pareto" and not cost:
        raise SearchError("Cost: the goal pareto needs a cost computed from the parameters, e.g. simd * smp "
                          "(the front is the response against it)")
    if cost and goal != "pareto":
        raise SearchError("Cost: a cost is for the goal pareto; clear it, or choose pareto")
    if objective and goal not in ("min", "max"):
        raise SearchError(f"Objective: an objective is for the goal min or max, not {goal}; clear it, or choose "
                          "min or max")
    cost_fn = cost_function(cost, space, label="Cost") if cost else None
    objective_fn = objective_function(objective, space, response, label="Objective",
                                      cost_label="a Cost with the goal pareto") if objective else None
    return cost_fn, objective_fn


def _resumed(space: Any, old: Any, settings: dict, resume: bool) -> tuple[list, list, list]:
    """What a resume goes on from — the stored study's trials, rounds' times and model errors — when
    *resume* and *old* is a study of the same *settings*; nothing otherwise. A stored design the space
    does not have is damaged (:func:`.stored.check_designs`), said before the job starts."""
    from .stored import check_designs
    from .study import Trial

    if not (resume and old is not None and old.trials and same_study(old.settings, settings)):
        return [], [], []
    trials = [Trial.from_dict(t.to_dict(), space.parameter_names) for t in old.trials]
    check_designs(trials, space)
    return trials, list(old.times), [{"simulated": n, "error": e} for n, e in old.model_error]


def start_search(ws: Any, kernel: str, goal: str = "min", budget: int = 100, batch: int = 4, seed: int = 0, *,
                 initial: int | None = None, initial_method: str = "uniform", cost: str = "", objective: str = "",
                 response: str = "cycles", resume: bool = True, backend: Any = None, on_stop: str = "kill") -> Any:
    """A search over the workspace's current design space on the built-in simulator, as a background
    job (progress, Stop). *cost* (goal ``pareto``) and *objective* (``min``/``max``) are expressions
    checked as ``gpudse search --cost/--objective`` checks them, their messages naming the page's fields
    (Cost, Objective). The study is stored as the ``search`` analysis while it runs (at most every
    SAVE_EVERY_S), so a reloaded page finds it and sees it grow; partial when stopped. With *resume*, a
    stored study of the same settings (the budget may grow) goes on from its trials: nothing simulated
    is simulated again. A *backend* other than the built-in simulator (MGPUSim: the page's choice for the
    mgpusim space) runs each round as a campaign in the workspace's store, on a local process pool, as
    ``gpudse search --workspace`` does; *kernel* then only labels the study. Stop ends the search between
    the models' fits or, while a round simulates, kills its simulations in flight (*on_stop* ``"kill"``:
    they are not counted, and a resume simulates them again) or lets them finish (``"finish"``); the
    job's message says which. While it runs, the message names the phase (choosing, simulating)."""
    from ..fmt import fmt_number, response_unit
    from ..sim.campaign import AnalyticalBackend
    from ..workspace.jobs import Stopped, opener
    from .pool import make_pool
    from .study import SearchError, check_settings, run_search

    (space_sv,) = ws.require("space")
    space = space_sv.value
    builtin = backend is None
    backend = AnalyticalBackend(kernel) if builtin else backend
    if builtin:
        check_builtin(space, backend)
    else:
        backend.check_points(space.parameter_names)
    check_settings(goal, budget, initial, batch, seed=seed, initial_method=initial_method)
    if builtin and response not in ("cycles", "cycles_trimmed", "ipc"):
        raise SearchError(f"response {response!r}: the built-in simulator reports cycles, cycles_trimmed and ipc")
    cost, objective = (cost or "").strip(), (objective or "").strip()
    cost_fn, objective_fn = _page_expressions(space, goal, cost, objective, response)
    old = stored_study(ws)
    settings = search_settings(space, kernel, goal, budget, seed, initial=initial, initial_method=initial_method,
                               cost=cost, objective=objective, response=response, batch=batch,
                               stored=old.settings if old is not None else None)
    trials, times, errors = _resumed(space, old, settings, resume)
    open_ws = opener(ws)
    ws_path, ws_id = ws.path, ws.id

    def work(ctx: Any) -> dict:
        import time

        pool = make_pool(space)
        last = [0.0]
        head = [f"{len(trials):,} simulated"]  # the message's first part; the phase follows it

        def evaluate(digits: np.ndarray, designs: list) -> list:
            outs = backend.run_batch([(i, d, 1) for i, d in enumerate(designs)])
            return [(o.result.get(response), "") if o.ok else (None, o.error) for o in outs]

        def simulating(run: Any) -> Any:
            def each_round(digits: np.ndarray, designs: list) -> list:
                ctx.progress(ctx.done, budget, f"{head[0]} · simulating {len(designs):,} designs")
                return run(digits, designs)
            return each_round

        def on_round(res: SearchResult) -> None:
            best = res.best()
            err = None if ctx.stopped() else model_error(pool, res.trials, seed)  # a Stop waits for no fit
            if err is not None:
                errors.append({"simulated": len(res.trials), "error": err})
            shown = "objective" if objective else response
            head[0] = f"{len(res.trials):,} simulated" + (
                f", best {shown} {fmt_number(best.value, None if objective else response_unit(response))}"
                if best is not None and goal in ("min", "max") else "")
            ctx.progress(len(res.trials), budget, f"{head[0]} · choosing the next designs")
            if time.monotonic() - last[0] >= SAVE_EVERY_S:
                last[0] = time.monotonic()
                with open_ws(True) as w:
                    w.put_analysis(STAGE, study_doc(settings, res, errors), inputs=[space_sv], partial=True,
                                   origin=f"search, kernel {kernel} (running)",
                                   note=f"{len(res.trials):,} simulations so far")

        rounds = (contextlib.nullcontext(evaluate) if builtin else
                  CampaignEvaluator(backend, ws_path, f"{ws_id}/search", response, should_stop=ctx.stopped,
                                    on_stop=on_stop))
        with rounds as simulate:
            res = run_search(pool, simulating(simulate), goal=goal, budget=budget, initial=initial,
                             batch=batch, seed=seed, initial_method=initial_method, cost=cost_fn, response=response,
                             trials=trials, rounds=times, on_round=on_round, should_stop=ctx.stopped,
                             objective=objective_fn, surrogate=settings["surrogate"])
        doc = study_doc(settings, res, errors)
        if res.stopped == "stopped":
            ctx.progress(len(res.trials), budget, stopped_text(res))
            raise Stopped("stopped", doc)
        return doc

    return _start_leased(ws, work, space_sv, kernel)


def _start_leased(ws: Any, work: Callable[[Any], dict], space_sv: Any, kernel: str) -> Any:
    """*work* as the workspace's search job, holding the study's lease while it runs (one run of the study
    at a time: a second is refused, naming the first); refused in a workspace shared read-only."""
    from ..workspace.jobs import start_job
    from .lease import StudyLease

    if not ws.writable:
        from ..workspace.db import ReadOnly

        raise ReadOnly("this workspace is shared with you read-only; to run a search, make your own copy first (fork)")
    lease = StudyLease(ws.path)
    lease.acquire()

    def leased(ctx: Any) -> dict:
        try:
            return work(ctx)
        finally:
            lease.release()

    try:
        return start_job(ws, "search", leased, stage=STAGE, inputs=[space_sv], origin=f"search, kernel {kernel}")
    except BaseException:
        lease.release()
        raise
