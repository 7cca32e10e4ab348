"""Simulation campaigns: run sampled design points through a backend, in parallel, resumably.

Stargazer's sampled simulations have no feedback loop, so they all run in parallel (§2.2, §8.1).

Backends:

* :class:`AnalyticalBackend` (default) — the built-in simulator (:mod:`gpudse_core.simulator`),
  evaluated a batch at a time (vectorised). Optional noise is drawn per point from (seed, point
  number), so results do not depend on batching or on which worker ran them.
* :class:`CommandBackend` — an external simulator (GPGPU-Sim, Accel-Sim, Vulkan-Sim) described by a
  server-side TOML/YAML file, never by the browser or an upload. Each run gets its own directory
  ``<workdir>/point-NNNNNN-tryK`` with the simulator config (a template with the design point's values
  set through :class:`~gpudse_core.gpgpusim.GpgpuSimConfig`) and the stdout/stderr log. The command is
  a list of arguments run without a shell; ``{config}``, ``{run_dir}`` and ``{<parameter>}`` in it
  are replaced. A non-zero exit, a timeout (the whole process group is killed) or output without the
  requested metrics is a failed run with its reason and log tail.

Runners: :func:`run_campaign` keeps the workers busy with batches from the
:class:`~gpudse_core.store.CampaignStore` and commits each batch's results as it arrives; the
executor is a local process pool (``workers`` processes, default: the machine's cores) or a Dask
distributed client — ``scheduler`` is a scheduler address (e.g. one started by dask-jobqueue on a
SLURM/PBS cluster) or ``"local"`` for a ``LocalCluster`` of ``workers`` processes — whose futures the
same loop waits on. Dask reschedules the tasks of a worker that dies.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
import tomllib
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import yaml

from ..errors import GpudseError
from .gpgpusim import METRICS, GpgpuSimConfig, ParseError, parse_log
from .simulator import KERNELS, simulate
from .store import CampaignStore, Progress

Outcome = tuple[int, bool, dict, str, str]  # idx, ok, result, error, log tail


class BackendError(GpudseError):
    """A backend description is invalid."""


@dataclass
class AnalyticalBackend:
    kernel: str = "matMul"
    noise: float = 0.0
    seed: int = 0
    batch_size: int = 500
    name: str = "analytical"

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise BackendError(f"unknown kernel {self.kernel!r}; built-in kernels: {', '.join(KERNELS)}")
        if self.noise < 0:
            raise BackendError("noise cannot be negative")

    def spec(self) -> dict:
        return {"backend": "analytical", "kernel": self.kernel, "noise": self.noise, "seed": self.seed}

    def run_batch(self, batch: list[tuple[int, dict, int]]) -> list[Outcome]:
        try:
            frame = pd.DataFrame([p for _, p, _ in batch])
            res = simulate(frame, self.kernel)
        except GpudseError as e:
            return [(idx, False, {}, str(e), "") for idx, _, _ in batch]
        if self.noise > 0:
            factor = np.array([np.exp(np.random.default_rng([self.seed, idx]).normal(0.0, self.noise))
                               for idx, _, _ in batch])
            for col in ("cycles", "cycles_trimmed"):
                res[col] = res[col] * factor
            res["ipc"] = res["ipc"] / factor
        records = res.to_dict(orient="records")
        return [(idx, True, {k: float(v) for k, v in rec.items()}, "", "") for (idx, _, _), rec in zip(batch, records)]


@dataclass
class CommandBackend:
    command: list[str]
    workdir: str
    metrics: list[str] = field(default_factory=lambda: ["gpu_tot_sim_cycle"])
    extra: dict[str, str] = field(default_factory=dict)
    timeout: float = 3600.0
    env: dict[str, str] = field(default_factory=dict)
    config_template: str | None = None
    config_name: str = "gpgpusim.config"
    options: dict[str, str] = field(default_factory=dict)  # parameter -> simulator option
    log_name: str = "run.log"
    batch_size: int = 1
    source: str = ""
    name: str = "command"

    @classmethod
    def from_file(cls, path: str | Path) -> "CommandBackend":
        """Read a backend description (TOML or YAML) kept on the server; relative paths are relative to it."""
        p = Path(path)
        if not p.is_file():
            raise BackendError(f"{p}: no such backend file")
        try:
            text = p.read_text(encoding="utf-8")
            doc = tomllib.loads(text) if p.suffix.lower() == ".toml" else yaml.safe_load(text)
        except (tomllib.TOMLDecodeError, yaml.YAMLError, UnicodeDecodeError) as e:
            raise BackendError(f"{p}: cannot be read ({str(e).splitlines()[0]})") from None
        if not isinstance(doc, dict):
            raise BackendError(f"{p}: expected a table with 'command', 'workdir' and 'metrics'")
        allowed = {"command", "workdir", "metrics", "extra_metrics", "timeout", "env", "config_template",
                   "config_name", "options", "log_name"}
        unknown = sorted(set(doc) - allowed)
        if unknown:
            raise BackendError(f"{p}: unknown field(s) {unknown}; allowed: {', '.join(sorted(allowed))}")
        if "command" not in doc:
            raise BackendError(f"{p}: 'command' is missing (the simulator's command line)")
        cmd = doc["command"]
        argv = shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in cmd]
        if not argv:
            raise BackendError(f"{p}: 'command' is empty")
        base = p.resolve().parent
        workdir = Path(str(doc.get("workdir", "runs")))
        template = doc.get("config_template")
        timeout = doc.get("timeout", 3600)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise BackendError(f"{p}: 'timeout' must be a positive number of seconds")
        metrics = doc.get("metrics", ["gpu_tot_sim_cycle"])
        extra = dict(doc.get("extra_metrics", {}))
        known = set(METRICS) | {"cycles", "insn", "ipc", "kernels"} | set(extra)
        bad = [m for m in metrics if m not in known]
        if bad:
            raise BackendError(f"{p}: unknown metric(s) {bad}; known: {', '.join(sorted(known))} (add regular "
                               f"expressions under extra_metrics)")
        return cls(command=argv, workdir=str(workdir if workdir.is_absolute() else base / workdir),
                   metrics=list(metrics), extra=extra, timeout=float(timeout),
                   env={str(k): str(v) for k, v in dict(doc.get("env", {})).items()},
                   config_template=str(base / template) if template else None,
                   config_name=str(doc.get("config_name", "gpgpusim.config")),
                   options={str(k): str(v) for k, v in dict(doc.get("options", {})).items()},
                   log_name=str(doc.get("log_name", "run.log")), source=str(p))

    def spec(self) -> dict:
        return {"backend": "command", "command": self.command, "metrics": self.metrics, "extra": self.extra,
                "config_template": self.config_template, "options": self.options}

    def run_batch(self, batch: list[tuple[int, dict, int]]) -> list[Outcome]:
        return [self.run_one(idx, params, attempt) for idx, params, attempt in batch]

    def run_one(self, idx: int, params: dict, attempt: int) -> Outcome:
        run_dir = Path(self.workdir) / f"point-{idx:06d}-try{attempt}"
        run_dir.mkdir(parents=True, exist_ok=True)
        config_path = run_dir / self.config_name
        if self.config_template:
            cfg = GpgpuSimConfig.load(self.config_template)
            for name, option in self.options.items():
                if name in params:
                    cfg.set(option, params[name])
            cfg.save(config_path)
        subs = {"config": str(config_path), "run_dir": str(run_dir), **{k: str(v) for k, v in params.items()}}
        argv = [_substitute(a, subs) for a in self.command]
        log_path = run_dir / self.log_name
        (run_dir / "point.json").write_text(json.dumps(params, default=str), encoding="utf-8")
        try:
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(argv, cwd=run_dir, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env={**os.environ, **self.env},
                                        start_new_session=True)
                try:
                    code = proc.wait(timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    _kill_group(proc)
                    return idx, False, {}, f"timed out after {self.timeout:g} s", _tail(log_path)
        except OSError as e:
            return idx, False, {}, f"cannot start {argv[0]!r}: {e.strerror or e}", ""
        if code != 0:
            why = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
            return idx, False, {}, f"the simulator {why}", _tail(log_path)
        try:
            result = parse_log(log_path, extra=self.extra).require(self.metrics)
        except ParseError as e:
            return idx, False, {}, str(e), _tail(log_path)
        return idx, True, {m: result[m] for m in self.metrics}, "", ""


def _substitute(arg: str, subs: dict[str, str]) -> str:
    out = arg
    for k, v in subs.items():
        out = out.replace("{" + k + "}", v)
    return out


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _tail(path: Path, n: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode("utf-8", errors="replace")


def run_batch(backend: Any, batch: list[tuple[int, dict, int]]) -> list[Outcome]:
    """Executed in a worker process (or a Dask worker): run one batch with the backend."""
    return backend.run_batch(batch)


def run_campaign(store: CampaignStore, backend: Any, *, workers: int | None = None, scheduler: str | None = None,
                 progress: Callable[[Progress, float], Any] | None = None,
                 should_stop: Callable[[], bool] | None = None, executor: Executor | None = None) -> Progress:
    """Run every pending point of *store* through *backend*; returns the final progress.

    Results are committed batch by batch as they arrive. *progress(prog, points_per_second)* is
    called after each batch; *should_stop()* returning True stops claiming new work (points already
    claimed finish or are re-queued when the campaign is next opened).
    """
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise GpudseError("workers must be at least 1")
    own = executor is None
    client = None
    cluster = None
    if executor is None:
        if scheduler:
            try:
                from distributed import Client, LocalCluster
            except ImportError:
                raise GpudseError("the Dask runner needs the 'distributed' package: pip install distributed") from None
            try:
                if scheduler == "local":  # a LocalCluster of `workers` single-threaded processes
                    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
                    client = Client(cluster)
                else:
                    client = Client(scheduler, timeout=30)
            except OSError as e:
                raise GpudseError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
            executor = client.get_executor(pure=False)
            workers = max(1, sum(client.nthreads().values()))
        else:
            executor = ProcessPoolExecutor(max_workers=workers)
    start, done_at_start = time.perf_counter(), store.progress().done
    in_flight: dict[Any, list] = {}
    try:
        while True:
            stopping = should_stop is not None and should_stop()
            while not stopping and len(in_flight) < 2 * workers:
                claimed = store.claim(backend.batch_size)
                if not claimed:
                    break
                in_flight[executor.submit(run_batch, backend, claimed)] = claimed
            if not in_flight:
                break
            finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for fut in finished:
                claimed = in_flight.pop(fut)
                try:
                    outcomes = fut.result()
                except Exception as e:  # a worker process died: the runs in it failed, they will be retried
                    outcomes = [(idx, False, {}, f"worker failed: {type(e).__name__}: {e}", "")
                                for idx, _, _ in claimed]
                store.complete((o[0], o[2]) for o in outcomes if o[1])
                store.fail((o[0], o[3], o[4]) for o in outcomes if not o[1])
            if progress is not None:
                prog = store.progress()
                elapsed = max(time.perf_counter() - start, 1e-9)
                progress(prog, (prog.done - done_at_start) / elapsed)
    finally:
        if own and client is None:
            executor.shutdown(wait=True, cancel_futures=True)
        if client is not None:
            executor.shutdown(wait=False)
            client.close()
        if cluster is not None:
            cluster.close()
    return store.progress()


def points_spec(points: pd.DataFrame) -> dict:
    """A fingerprint of the design points, stored with the campaign so a resume uses the same ones."""
    import hashlib

    digest = hashlib.sha256(points.to_csv(index=False).encode()).hexdigest()
    return {"points": len(points), "points_sha256": digest, "columns": list(map(str, points.columns))}
