"""The external-simulator backend of campaigns (GPGPU-Sim, Accel-Sim, Vulkan-Sim), safe under faults.

A :class:`CommandBackend` is described by a server-side TOML/YAML file (read with
:mod:`gpudse_core.safeload`), never by the browser or an upload: ``command`` is a list of arguments
run without a shell, ``env`` a table, ``timeout`` a finite number of seconds (at most
``limits.timeout_max_s``), ``extra_metrics`` regular expressions compiled with RE2; unknown fields
and wrong types are refused with the file and the field.

Each *attempt* gets its own directory ``<workdir>/point-NNNNNN-tryK`` (created exclusively: a directory
is never reused) with ``attempt.json`` (campaign, worker, start), the simulator config (a template with
the design point's values set through :class:`~gpudse_core.sim.gpgpusim.GpgpuSimConfig`) and the log.
``{config}``, ``{run_dir}``, ``{point}``, ``{attempt}`` and ``{<parameter>}`` are replaced in the
command in one pass (a value containing ``{run_dir}`` stays as it is), and design points may not have
parameters with those reserved names (:data:`gpudse_core.choices.RESERVED_NAMES`). The simulator runs
under :mod:`gpudse_core.sim.supervise`: it dies with its worker, its timeout kills its whole process
group, and its output is kept up to ``limits.sim_output_bytes`` (head and tail). A non-zero exit, a
timeout or output without the requested metrics is a failed attempt with its reason and log tail.

Lost executions. When a worker finds the directory of the attempt it was given already made by the
same campaign, an earlier execution of that attempt was lost with its worker (Dask reruns the tasks of
a worker that dies): it reports that execution as a ``lost`` attempt and runs as the next attempt, in a
new directory. So the store's attempts table shows every execution (a rerun after a lost worker is
attempt 2 with its own directory), and no directory is shared by two executions. Directories of
other campaigns (a reused workdir) are skipped with a suffix (``…-try1.2``).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .. import limits, safeload
from ..choices import RESERVED_NAMES
from ..errors import GpudseError
from .gpgpusim import DERIVED, METRICS, GpgpuSimConfig, compile_patterns, parse_log
from .store import Attempt, Outcome

SUPERVISOR = str(Path(__file__).with_name("supervise.py"))
PLACEHOLDERS = ("config", "run_dir", "point", "attempt")  # filled in by the command backend
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_DIRS = 1000  # run directories tried for one attempt before giving up


class BackendError(GpudseError):
    """A backend description is invalid."""


def worker_id() -> str:
    """Who runs this code: a Dask worker's name and address, else host:pid."""
    if "distributed" in sys.modules:
        try:
            from distributed import get_worker

            w = get_worker()
            return f"dask {w.name} {w.address}"
        except (ImportError, ValueError, AttributeError):
            pass
    return f"{socket.gethostname()}:{os.getpid()}"


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

    FIELDS = ("command", "workdir", "metrics", "extra_metrics", "timeout", "env", "config_template", "config_name",
              "options", "log_name")

    def __post_init__(self) -> None:
        where = f"{self.source}: " if self.source else ""
        if not isinstance(self.command, list) or not self.command or \
                not all(isinstance(a, str) and "\x00" not in a for a in self.command):
            raise BackendError(f"{where}'command' must be a non-empty list of strings")
        try:
            self.timeout = limits.finite_timeout(self.timeout, f"{where}timeout")
            compile_patterns(self.extra, where)
        except GpudseError as e:
            raise BackendError(str(e)) from None
        for label, fname in (("config_name", self.config_name), ("log_name", self.log_name)):
            if not _plain_file_name(fname) or fname in ("point.json", "attempt.json"):
                raise BackendError(f"{where}'{label}' = {fname!r}: give a plain file name (no folder, not "
                                   f"point.json or attempt.json)")
        if self.config_name == self.log_name:
            raise BackendError(f"{where}'config_name' and 'log_name' must differ")
        known = set(METRICS) | set(DERIVED) | set(self.extra)
        bad = [m for m in self.metrics if m not in known]
        if bad or not self.metrics:
            raise BackendError(f"{where}unknown metric(s) {bad}; known: {', '.join(sorted(known))} (add regular "
                               f"expressions under extra_metrics)" if bad else f"{where}'metrics' is empty")

    @classmethod
    def from_file(cls, path: str | Path) -> "CommandBackend":
        """Read a backend description (TOML or YAML) kept on the server; relative paths are relative to it."""
        p = Path(path)
        if not p.is_file():
            raise BackendError(f"{p}: no such backend file")
        lim = limits.current()
        try:
            with open(p, "rb") as fh:
                raw = fh.read(lim.document_bytes + 1)
            doc = safeload.load_document(raw, str(p), "toml" if p.suffix.lower() == ".toml" else "yaml")
        except OSError as e:
            raise BackendError(f"{p}: cannot be read ({e.strerror or e})") from None
        except GpudseError as e:
            raise BackendError(str(e)) from None
        if not isinstance(doc, dict):
            raise BackendError(f"{p}: expected a table with 'command', 'workdir' and 'metrics'")
        unknown = sorted(map(str, set(doc) - set(cls.FIELDS)))
        if unknown:
            raise BackendError(f"{p}: unknown field(s) {unknown}; allowed: {', '.join(sorted(cls.FIELDS))}")
        if "command" not in doc:
            raise BackendError(f"{p}: 'command' is missing (the simulator's command line)")
        cmd = doc["command"]
        if not isinstance(cmd, list):
            raise BackendError(f"{p}: 'command' must be a list of arguments, e.g. command = [\"/opt/sim/run\", "
                               f"\"--config\", \"{{config}}\"] (gpudse never runs a shell, so a string is not split)")
        argv = [_scalar(a, f"{p}: command[{i}]", numbers=i > 0) for i, a in enumerate(cmd)]
        if not argv:
            raise BackendError(f"{p}: 'command' is empty")
        base = p.resolve().parent
        workdir = Path(_scalar(doc.get("workdir", "runs"), f"{p}: workdir"))
        template = doc.get("config_template")
        if template is not None:
            tpath = base / _scalar(template, f"{p}: config_template")
            if not tpath.is_file():
                raise BackendError(f"{p}: config_template {tpath} does not exist")
            template = str(tpath)
        metrics = doc.get("metrics", ["gpu_tot_sim_cycle"])
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            raise BackendError(f"{p}: 'metrics' must be a list of metric names, e.g. [\"gpu_tot_sim_cycle\"]")
        extra = _table(doc.get("extra_metrics", {}), f"{p}: extra_metrics")
        for k in extra:
            if not _NAME.match(k) or k in METRICS or k in DERIVED or k in RESERVED_NAMES:
                raise BackendError(f"{p}: extra_metrics: {k!r} is not a new metric name (letters, digits, _; not a "
                                   f"built-in metric or one of {', '.join(RESERVED_NAMES)})")
        env = _table(doc.get("env", {}), f"{p}: env", numbers=True)
        for k in env:
            if not _NAME.match(k):
                raise BackendError(f"{p}: env: {k!r} is not an environment variable name")
        options = _table(doc.get("options", {}), f"{p}: options")
        for k, v in options.items():
            if not v or "#" in v or any(c.isspace() for c in v):
                raise BackendError(f"{p}: options: {k} = {v!r}: give a simulator option name such as "
                                   f"\"-gpgpu_n_clusters\"")
        return cls(command=argv, workdir=str(workdir if workdir.is_absolute() else base / workdir),
                   metrics=list(metrics), extra=extra, timeout=doc.get("timeout", 3600), env=env,
                   config_template=template,
                   config_name=_scalar(doc.get("config_name", "gpgpusim.config"), f"{p}: config_name"),
                   options=options, log_name=_scalar(doc.get("log_name", "run.log"), f"{p}: log_name"),
                   source=str(p))

    def spec(self) -> dict:
        return {"backend": "command", "command": self.command, "metrics": self.metrics, "extra": self.extra,
                "config_template": self.config_template, "options": self.options}

    def check_points(self, columns: Iterable[str]) -> None:
        """Refuse design points this backend cannot run faithfully (before anything runs)."""
        cols = [str(c) for c in columns]
        reserved = sorted(set(cols) & set(RESERVED_NAMES))
        if reserved:
            raise BackendError(f"the design points have parameter(s) named {', '.join(reserved)}, which gpudse "
                               f"reserves ({', '.join(RESERVED_NAMES)}): rename them in the space")
        clash = sorted(set(cols) & (set(self.metrics) | set(self.extra)))
        if clash:
            raise BackendError(f"{self.source or 'backend'}: metric(s) {', '.join(clash)} have the name of a "
                               f"parameter; rename them under extra_metrics")
        known = set(PLACEHOLDERS) | set(cols)
        used = {m.group(1) for a in self.command for m in _PLACEHOLDER.finditer(a)}
        unknown = sorted(used - known)
        if unknown:
            raise BackendError(f"{self.source or 'backend'}: the command uses {{{'}, {'.join(unknown)}}}, which is "
                               f"neither a placeholder ({', '.join(PLACEHOLDERS)}) nor a parameter of the points")
        missing = sorted(set(self.options) - set(cols))
        if missing:
            raise BackendError(f"{self.source or 'backend'}: options set {', '.join(missing)}, which the design points "
                               f"do not have (parameters: {', '.join(cols[:12])})")

    def run_batch(self, batch: list[tuple[int, dict, int]], ctx: dict | None = None) -> list[Outcome]:
        return [self.run_one(idx, params, attempt, ctx) for idx, params, attempt in batch]

    def run_one(self, idx: int, params: dict, attempt: int, ctx: dict | None = None) -> Outcome:
        who, started = worker_id(), time.time()
        try:
            run_dir, attempt, lost = allocate_run_dir(Path(self.workdir), idx, attempt, (ctx or {}).get("campaign", ""),
                                                      who, started)
        except OSError as e:
            reason = f"cannot create a run directory in {self.workdir} ({e.strerror or e})"
            return Outcome(idx, False, {}, reason, "", [Attempt(attempt, "failed", who, "", started, time.time(),
                                                                reason)])

        def failed(reason: str, tail: str = "") -> Outcome:
            return Outcome(idx, False, {}, reason, tail,
                           lost + [Attempt(attempt, "failed", who, str(run_dir), started, time.time(), reason)])

        log_path = run_dir / self.log_name
        try:
            self.check_points(params)
            config_path = run_dir / self.config_name
            if self.config_template:
                cfg = GpgpuSimConfig.load(self.config_template)
                for name, option in self.options.items():
                    cfg.set(option, params[name])
                cfg.save(config_path)
            subs = {"config": str(config_path), "run_dir": str(run_dir), "point": str(idx), "attempt": str(attempt),
                    **{k: _text(v) for k, v in params.items()}}
            argv = [substitute(a, subs) for a in self.command]
            (run_dir / "point.json").write_text(json.dumps(params, default=str), encoding="utf-8")
        except GpudseError as e:
            return failed(str(e))
        except OSError as e:
            return failed(f"cannot prepare the run in {run_dir} ({e.strerror or e})")
        status = supervise(argv, run_dir, log_path, self.timeout, self.env)
        if status.get("error"):
            return failed(status["error"], tail(log_path))
        if status.get("timed_out"):
            return failed(f"timed out after {self.timeout:g} s (its process group was killed)", tail(log_path))
        if status.get("stopped"):
            return failed(f"stopped: {status['stopped']}", tail(log_path))
        code = status.get("code")
        if code != 0:
            why = f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exited with status {code}"
            return failed(f"the simulator {why}", tail(log_path))
        try:
            result = parse_log(log_path, extra=self.extra).require(self.metrics)
        except GpudseError as e:
            return failed(str(e), tail(log_path))
        return Outcome(idx, True, {m: result[m] for m in self.metrics}, "", "",
                       lost + [Attempt(attempt, "done", who, str(run_dir), started, time.time())])


def _scalar(v: Any, what: str, numbers: bool = False) -> str:
    """A text field; with *numbers*, a finite number is taken as its text too (command arguments after
    the program, environment values: ``["sim", "-n", 4]``, ``OMP_NUM_THREADS = 4``)."""
    if not isinstance(v, str) and not (numbers and isinstance(v, (int, float)) and not isinstance(v, bool)
                                       and math.isfinite(v)):
        raise BackendError(f"{what}: {repr(v)[:60]} is not a string; write it in quotes" + (
            "" if numbers or isinstance(v, (dict, list)) else f", e.g. \"{v}\""))
    s = str(v)
    if "\x00" in s:
        raise BackendError(f"{what}: contains a NUL character")
    return s


def _table(v: Any, what: str, numbers: bool = False) -> dict[str, str]:
    if not isinstance(v, dict):
        raise BackendError(f"{what}: must be a table of names and strings (e.g. [env] then CUDA_INSTALL_PATH = "
                           f"\"/usr/local/cuda\"), not {type(v).__name__}")
    return {str(k): _scalar(x, f"{what}.{k}", numbers) for k, x in v.items()}


def _plain_file_name(name: Any) -> bool:
    return isinstance(name, str) and bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\x00")


def _text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
        return str(int(v))
    return str(v)


def substitute(arg: str, subs: dict[str, str]) -> str:
    """Replace ``{name}`` by ``subs[name]`` in one pass: replaced text is never substituted again."""
    return _PLACEHOLDER.sub(lambda m: subs.get(m.group(1), m.group(0)), arg)


def allocate_run_dir(workdir: Path, idx: int, attempt: int, campaign: str, who: str,
                     started: float) -> tuple[Path, int, list[Attempt]]:
    """Create this execution's run directory exclusively; returns (dir, attempt number, lost executions).

    A directory of the same campaign and attempt already there means an earlier execution of that
    attempt was lost with its worker: it is reported and this one becomes the next attempt. Directories
    of other campaigns (a reused workdir) are skipped with a suffix (``…-try1.2``).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    lost: list[Attempt] = []
    suffix = 1
    for _ in range(_MAX_DIRS):
        d = workdir / (f"point-{idx:06d}-try{attempt}" + ("" if suffix == 1 else f".{suffix}"))
        try:
            d.mkdir()
        except FileExistsError:
            info = _read_attempt(d)
            if campaign and info.get("campaign") == campaign and info.get("attempt") == attempt:
                lost.append(Attempt(attempt, "lost", str(info.get("worker", "")), str(d), info.get("started"),
                                    _last_write(d), "its worker was lost before it reported; the point ran again"))
                attempt, suffix = attempt + 1, 1
            else:
                suffix += 1
            continue
        (d / "attempt.json").write_text(json.dumps({"campaign": campaign, "point": idx, "attempt": attempt,
                                                    "worker": who, "host": socket.gethostname(), "pid": os.getpid(),
                                                    "started": started}), encoding="utf-8")
        return d, attempt, lost
    raise OSError(f"more than {_MAX_DIRS} run directories for point {idx} already exist")


def _read_attempt(d: Path) -> dict:
    try:
        with open(d / "attempt.json", "rb") as fh:
            doc = json.loads(fh.read(64 * 1024))
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def _last_write(d: Path) -> float | None:
    try:
        return max(f.stat().st_mtime for f in [d, *d.iterdir()])
    except OSError:
        return None


def supervise(argv: list[str], run_dir: Path, log_path: Path, timeout: float, env: dict[str, str]) -> dict:
    """Run *argv* under :mod:`gpudse_core.sim.supervise`; returns its status (see there)."""
    spec = {"ppid": os.getpid(), "log": str(log_path), "cap": limits.current().sim_output_bytes, "timeout": timeout,
            "argv": argv, "cwd": str(run_dir)}
    try:
        proc = subprocess.Popen([sys.executable, "-I", "-S", SUPERVISOR, json.dumps(spec)], cwd=run_dir,
                                env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        return {"error": f"cannot start the run supervisor ({e.strerror or e})"}
    try:
        out, err = proc.communicate(timeout=timeout + 60)
    except subprocess.TimeoutExpired:  # the supervisor enforces the timeout; this is its backstop
        proc.terminate()
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
    except BaseException:  # this worker is being stopped: stop the run with it
        proc.terminate()
        raise
    try:
        status = json.loads(out.decode("utf-8", errors="replace").strip().splitlines()[-1])
        if isinstance(status, dict):
            return status
    except (ValueError, IndexError):
        pass
    return {"error": f"the run supervisor ended without a status (exit {proc.returncode}): "
                     f"{err[-500:].decode('utf-8', errors='replace').strip()}"}


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def tail(path: Path, n: int = 4000) -> str:
    """The last *n* bytes of a file (without reading the rest)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - n))
            data = fh.read(n)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")
