"""MGPUSim in the loop: a cycle-level simulator of AMD GCN3 GPUs as a campaign backend.

MGPUSim (Sun, Baruah, Mojumder, Dong, Gong, Treadway, Bao, Kaeli, "MGPUSim: Enabling Multi-GPU
Performance Modeling and Optimization", ISCA 2019) is written in Go; its benchmarks carry their
compiled GCN3 kernels, so it needs no vendor SDK. gpudse runs it through a small Go program of its own,
``gpudse_core/_sims/mgpusim`` (installed with the package), that assembles one GPU with MGPUSim's
R9 Nano builder at a design point (:data:`~gpudse_core.choices.MGPUSIM_PARAMETERS`), runs one
benchmark in timing mode and prints one JSON object of metrics (:data:`~gpudse_core.choices.MGPUSIM_METRICS`:
the kernels' time with and without the PCIe launch and per kernel, work-groups and achieved occupancy,
MGPUSim's CPI stack and SIMD busy time, cache and TLB hit rates, DRAM traffic and bandwidth, instructions).
``-plan`` says how many work-groups a benchmark's size launches per kernel without simulating it; a
campaign warns when that is fewer than a design's CUs. A campaign may judge each design on a suite
(``matmul,fir``): each benchmark's metrics and the geometric mean of the times.

Version. The program pins ``gitlab.com/akita/mgpusim/v3 v3.0.0-alpha.9`` (May 2023), the newest
MGPUSim the Go module proxy serves: every ``github.com/sarchlab/mgpusim`` version (v3, v4) is refused
by proxy.golang.org with ``403 Forbidden … This module version is not available``.

The binary. :func:`build` compiles the program once into a cache folder keyed by a hash of its sources
(``$GPUDSE_CACHE`` or ``$XDG_CACHE_HOME/gpudse`` or ``~/.cache/gpudse``, then
``mgpusim/<hash>/gpudse-mgpusim``; the folder is made absolute, since runs start in their run
directories), with ``go`` (``$GPUDSE_GO``, else ``go`` on ``PATH``, else ``/usr/local/go/bin/go``);
``CGO_ENABLED=0`` makes it a static binary. A lock file makes concurrent first uses build once. A cached
binary must pass :func:`self_check` (it answers ``-plan``); a damaged one is rebuilt. ``gpudse mgpusim
build`` does it with progress.

Campaigns. :class:`MgpusimBackend` runs one point per batch, each attempt in its own run directory
(:func:`~gpudse_core.sim.command.allocate_run_dir`) under the run supervisor (it dies with its worker,
its timeout kills it, its output is bounded): ``run.log`` holds the simulator's output and
``metrics.json`` its metrics. Before anything runs, every point is validated by the program itself
(``-check``), so an impossible configuration is refused with its row and reason rather than failing
three times. Dask workers run the binary at the path the runner built; a worker that cannot see that
file (another machine without a shared file system) builds its own on first use, which needs ``go``
and the module proxy there — or run ``gpudse mgpusim build`` on every node beforehand, or point
``$GPUDSE_CACHE`` at a shared folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .. import limits
from ..choices import MGPUSIM_BENCHMARKS, MGPUSIM_GEOMEAN_METRICS, MGPUSIM_METRICS, MGPUSIM_PARAMETERS
from ..errors import GpudseError
from .command import BackendError, allocate_run_dir, supervise, tail, worker_id
from .store import Attempt, Outcome

MODULE = "gitlab.com/akita/mgpusim/v3"
VERSION = "v3.0.0-alpha.9"
BINARY = "gpudse-mgpusim"
SOURCE_FILES = ("go.mod", "go.sum")  # plus every *.go of the folder
BUILD_TIMEOUT_S = 1800.0  # first build: module download (~60 MB) and compile (~40 s on 2 cores)
CHECK_TIMEOUT_S = 120.0
GO_FALLBACKS = ("/usr/local/go/bin/go",)  # where Go's installer puts it, often not on PATH
BLOCKED_HINT = ("the Go module proxy refused or could not be reached; MGPUSim cannot be built on this machine until "
                "it can fetch the modules (GOPROXY, network) or a filled module cache (GOMODCACHE) is provided")


class MgpusimError(GpudseError):
    """MGPUSim cannot be built or run here (no Go toolchain, module proxy blocked, a bad setting)."""


def source_dir() -> Path:
    """The Go program's folder, ``gpudse_core/_sims/mgpusim`` (a checkout's and an installed package's)."""
    cand = Path(__file__).resolve().parent.parent / "_sims" / "mgpusim"
    if (cand / "go.mod").is_file():
        return cand
    raise MgpusimError("the MGPUSim driver program (gpudse_core/_sims/mgpusim) is missing from this installation; "
                       "reinstall gpudse")


def _sources(src: Path) -> list[Path]:
    return sorted([src / f for f in SOURCE_FILES] + [p for p in src.glob("*.go") if not p.name.endswith("_test.go")])


def source_hash(src: Path | None = None) -> str:
    """A short hash of the program's sources (names and bytes): a changed source builds a new binary."""
    src = src or source_dir()
    h = hashlib.sha256()
    for p in _sources(src):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cache_root() -> Path:
    """The cache folder, always absolute: simulations run inside their run directories, where a relative
    ``$GPUDSE_CACHE`` would name another folder."""
    env = os.environ.get("GPUDSE_CACHE")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(os.path.abspath((Path(xdg) if xdg else Path.home() / ".cache") / "gpudse"))


def binary_path(src: Path | None = None) -> Path:
    """Where the binary for the current sources lives (it may not be built yet)."""
    return cache_root() / "mgpusim" / source_hash(src) / BINARY


def find_go() -> str:
    """The ``go`` command, or an error saying how to get one."""
    env = os.environ.get("GPUDSE_GO")
    if env:
        if not (Path(env).is_file() and os.access(env, os.X_OK)):
            raise MgpusimError(f"$GPUDSE_GO={env}: not an executable file; point it at the 'go' command of a Go "
                               f"1.20+ installation")
        return env
    found = shutil.which("go") or next((p for p in GO_FALLBACKS if os.access(p, os.X_OK)), None)
    if not found:
        raise MgpusimError("the MGPUSim backend needs the Go toolchain ('go', 1.20 or newer) to build its simulator "
                           "once, and there is no 'go' on PATH (nor /usr/local/go/bin/go): install Go from "
                           "https://go.dev/dl/ or set GPUDSE_GO=/path/to/go")
    return found


def _go_env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(CGO_ENABLED="0", GOWORK="off", GOFLAGS="-buildvcs=false -mod=readonly", GOTOOLCHAIN="local")
    if not env.get("HOME"):
        env["HOME"] = str(cache)
    return env


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock file (a second builder waits for the first)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(progress: Callable[[str], Any] | None = None, force: bool = False) -> Path:
    """The built binary for the current sources, compiling it first if needed (see the module docstring).

    *progress(line)* receives each step: module downloads, then every package compiled (``go build -v``).
    """
    src = source_dir()
    target = binary_path(src)
    say = progress or (lambda line: None)
    if not force and _usable(target, say):
        return target
    go = find_go()
    with _locked(target.parent / ".build.lock"):
        if not force and _usable(target, lambda line: None):
            return target  # another process built it while we waited
        env = _go_env(target.parent)
        say(f"fetching {MODULE} {VERSION} and its dependencies through {env.get('GOPROXY') or 'the Go module proxy'}")
        _run_go([go, "mod", "download", "-x"], src, env, say, "downloading modules",
                keep=lambda ln: ln.startswith("# get ") and "200 OK" in ln)
        fd, tmp = tempfile.mkstemp(prefix=".gpudse-mgpusim-", dir=target.parent)
        os.close(fd)
        try:
            say(f"compiling into {target} (one line per package outside Go's standard library)")
            _run_go([go, "build", "-v", "-trimpath", "-o", tmp, "."], src, env, say, "compiling",
                    keep=lambda ln: "." in ln.split("/", 1)[0] or ln.startswith("gpudse/"))
            os.chmod(tmp, 0o755)
            problem = self_check(Path(tmp))
            if problem:
                raise MgpusimError(f"the freshly built MGPUSim driver fails its self-check ({problem}); run "
                                   f"'gpudse mgpusim build --force' and report the output if it persists")
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    say(f"built {target}")
    return target


def self_check(binary: Path) -> str:
    """Why *binary* cannot be the driver program ('' when it answers ``-plan`` with its JSON): a truncated or
    damaged file dies with a signal or an exec error, which a campaign would meet on every point."""
    try:
        out = subprocess.run([str(binary), "-plan", "-benchmark", "matmul"], check=False, capture_output=True,
                             text=True, timeout=CHECK_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except OSError as e:
        return f"cannot execute it: {e.strerror or e}"
    except subprocess.TimeoutExpired:
        return f"no answer in {CHECK_TIMEOUT_S:g} s"
    if out.returncode != 0:
        how = f"killed by signal {-out.returncode}" if out.returncode < 0 else f"exit status {out.returncode}"
        return how + (f": {out.stderr.strip().splitlines()[-1][:200]}" if out.stderr.strip() else "")
    try:
        plan = json.loads(out.stdout)
    except ValueError:
        return "its output is not the driver's"
    return "" if isinstance(plan, dict) and "work_groups" in plan else "its output is not the driver's"


def _usable(target: Path, say: Callable[[str], Any]) -> bool:
    """The cached binary exists and passes :func:`self_check`; a damaged one is removed so it is rebuilt."""
    if not target.is_file():
        return False
    problem = self_check(target) if os.access(target, os.X_OK) else "not executable"
    if not problem:
        return True
    say(f"the cached MGPUSim driver {target} fails its self-check ({problem}); rebuilding it")
    with contextlib.suppress(OSError):
        target.unlink()
    return False


def _run_go(argv: list[str], cwd: Path, env: dict, say: Callable[[str], Any], what: str,
            keep: Callable[[str], bool]) -> None:
    """Run a go command, passing the lines *keep* selects to *say*; an error names what failed."""
    import threading

    lines: list[str] = []
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    fired = threading.Event()

    def stop() -> None:  # a silent hang (a stalled download) ends too
        fired.set()
        proc.kill()

    watchdog = threading.Timer(BUILD_TIMEOUT_S, stop)
    watchdog.daemon = True
    watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            del lines[:-200]
            if keep(line):
                say(line.replace("# get ", "  ") if line.startswith("# get ") else f"  {line}")
        code = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        watchdog.cancel()
    if fired.is_set():
        raise MgpusimError(f"{what} MGPUSim took longer than {BUILD_TIMEOUT_S:g} s and was stopped; "
                           f"{BLOCKED_HINT if what.startswith('downloading') else 'is the machine overloaded?'}")
    if code != 0:
        errors = [ln for ln in lines if not ln.startswith("#") and not ln.startswith("go: downloading")]
        text = "\n".join(errors[-12:]) or f"exit status {code}"
        blocked = any(s in text for s in ("403 Forbidden", "404 Not Found", "410 Gone", "dial tcp", "no such host",
                                          "proxyconnect", "i/o timeout", "TLS handshake", "lookup disabled"))
        raise MgpusimError(f"{what} MGPUSim failed ({' '.join(argv[1:3])} in {cwd}):\n{text}"
                           + (f"\n{BLOCKED_HINT}" if blocked else ""))


# ---- the benchmarks the program offers -----------------------------------------------------------------------
def benchmarks(binary: Path | None = None) -> list[dict]:
    """The program's benchmarks: name, suite, what ``size`` means, its default and bounds (``-list``)."""
    exe = binary or build()
    out = subprocess.run([str(exe), "-list"], check=False, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
    if out.returncode != 0:
        raise MgpusimError(f"{exe} -list failed: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout)


def plan(binary: Path | str, benchmark: str, size: int = 0) -> dict:
    """What one run of *benchmark* at *size* (0: its default) launches: ``size``, ``work_groups`` per kernel
    launch, ``default_size`` and ``work_exponent`` (``-plan``); an invalid size is a :class:`BackendError` with
    the program's reason."""
    argv = [str(binary), "-plan", "-benchmark", benchmark] + (["-size", str(size)] if size else [])
    out = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S,
                         stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise BackendError(lines[-1] if lines else f"{binary} -plan failed (exit {out.returncode})")
    return json.loads(out.stdout)


def parse_workloads(text: str, size: int = 0) -> list[tuple[str, int]]:
    """``matmul`` or a suite ``matmul:512,fir`` as (benchmark, size) pairs (size 0: the benchmark's default);
    *size* applies to a single benchmark given without one."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts:
        raise BackendError(f"no MGPUSim benchmark given; choose from {', '.join(MGPUSIM_BENCHMARKS)}")
    out: list[tuple[str, int]] = []
    for part in parts:
        name, _, n = part.partition(":")
        if name not in MGPUSIM_BENCHMARKS:
            raise BackendError(f"unknown MGPUSim benchmark {name!r}; choose one of {', '.join(MGPUSIM_BENCHMARKS)}")
        if any(name == b for b, _ in out):
            raise BackendError(f"benchmark {name!r} is given twice in {text!r}")
        if n and not (n.isdigit() and int(n) > 0):
            raise BackendError(f"{part!r}: the size after ':' must be a whole number of at least 1")
        out.append((name, int(n) if n else 0))
    if size:
        if len(out) > 1:
            raise BackendError("--size sets the size of one benchmark; for a suite give each its size as "
                               "benchmark:size (e.g. matmul:512,fir:262144)")
        if out[0][1] and out[0][1] != size:
            raise BackendError(f"size given twice: {text!r} and size {size}")
        out = [(out[0][0], size)]
    return out


def geometric_mean(values: Iterable[float]) -> float:
    """The geometric mean of positive numbers (a suite's summary time, as SPEC reports)."""
    vals = [float(v) for v in values]
    if not vals or any(not v > 0 for v in vals):
        raise ValueError(f"a geometric mean needs positive numbers, got {vals}")
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


# ---- the campaign backend ----------------------------------------------------------------------------------
def _flag_value(v: Any, name: str, where: str) -> str:
    """A design-point value as the program's integer flag (4.0 from a CSV is 4)."""
    if isinstance(v, bool):
        raise BackendError(f"{where}{name} = {v!r}: give a whole number")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise BackendError(f"{where}{name} = {str(v)[:40]!r}: not a number") from None
    if not f.is_integer() or abs(f) > 2 ** 31:
        raise BackendError(f"{where}{name} = {v!r}: give a whole number")
    return str(int(f))


BASELINE_CUS = {"cu_per_sa": 4, "sa": 16}  # the R9 Nano's 16 shader arrays of 4 CUs, the builder's default
TIMEOUT_BASE_S = 3600.0  # a run at a default size: at most ~2 CPU minutes, 30x that on a machine loaded 15-fold


@dataclass
class MgpusimBackend:
    """Runs design points of the ``mgpusim`` space (any subset of its parameters; the others stay at the
    R9 Nano baseline) through MGPUSim's timing simulation of *benchmark* at problem *size* (0: the
    benchmark's default). *benchmark* may be a suite, ``matmul:512,fir`` (each with its size): every point
    runs each benchmark, and the results carry each one's metrics prefixed by its name
    (``matmul_kernel_exec_s``) and the geometric means of the times (``geomean_kernel_exec_s``).

    *timeout* (seconds per benchmark run; 0: automatic) defaults to :data:`TIMEOUT_BASE_S` scaled by the
    work at the size relative to the default (size ratio to the benchmark's work exponent). *verify* checks
    the output of the design table's first point against MGPUSim's CPU reference. :attr:`warnings` says,
    after :meth:`check_table`, when a size launches fewer work-groups than a design has CUs (the extra CUs
    sit idle, and the design space says nothing about them)."""

    benchmark: str = "matmul"
    size: int = 0
    workdir: str = ""
    timeout: float = 0.0
    binary: str = ""
    count_insts: bool = True
    verify: bool = False
    batch_size: int = 1
    name: str = "mgpusim"

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise BackendError(f"size {self.size!r}: give a whole number of at least 1 (or 0 for the benchmark's "
                               f"default)")
        workloads = parse_workloads(self.benchmark, self.size)
        if self.timeout:
            try:
                self.timeout = limits.finite_timeout(self.timeout, "MGPUSim timeout")
            except GpudseError as e:
                raise BackendError(str(e)) from None
        if self.workdir:  # the simulator runs inside its run directory: paths must not be relative
            self.workdir = str(Path(self.workdir).resolve())
        if not self.binary:
            self.binary = str(build())
        self.binary = os.path.abspath(self.binary)
        self._source = source_hash()
        self.plans = [plan(self.binary, b, n) for b, n in workloads]
        self.workloads = [(b, p["size"]) for (b, _), p in zip(workloads, self.plans)]
        self.benchmark = ",".join(b for b, _ in self.workloads)
        if len(self.workloads) == 1:
            self.size = self.workloads[0][1]
        self.timeouts = [self.timeout or self.auto_timeout(p) for p in self.plans]
        self.warnings: list[str] = []

    @staticmethod
    def auto_timeout(p: dict) -> float:
        """The default timeout of one run: :data:`TIMEOUT_BASE_S` times the work relative to the default size."""
        work = (p["size"] / p["default_size"]) ** p["work_exponent"]
        return min(TIMEOUT_BASE_S * max(1.0, work), limits.current().timeout_max_s)

    @property
    def suite(self) -> bool:
        return len(self.workloads) > 1

    def spec(self) -> dict:
        out = {"backend": "mgpusim", "benchmark": self.benchmark, "mgpusim": f"{MODULE} {VERSION}",
               "driver": self._source}
        if self.suite:
            out["sizes"] = [n for _, n in self.workloads]
        else:
            out["size"] = self.size
        return out

    def _base_flags(self, bench: str, size: int) -> list[str]:
        return ["-benchmark", bench, "-size", str(size), "-count-insts=" + ("true" if self.count_insts else "false")]

    def check_points(self, columns: Iterable[str]) -> None:
        """The points' columns are MGPUSim parameters (the others keep the R9 Nano baseline)."""
        unknown = [str(c) for c in columns if str(c) not in MGPUSIM_PARAMETERS]
        if unknown:
            raise BackendError(f"the design points have column(s) {', '.join(unknown[:8])}, which MGPUSim does not "
                               f"take; its parameters are {', '.join(MGPUSIM_PARAMETERS)} (sample the 'mgpusim' "
                               f"preset)")

    def check_table(self, points: Any, source: str = "design points") -> None:
        """Refuse, before anything runs, points the builders cannot assemble: the program checks them all
        (``-check``) and the first reasons are reported with their rows. Sets :attr:`warnings`."""
        self.check_points(points.columns)
        rows = []
        for i, rec in enumerate(points.to_dict(orient="records")):
            rows.append(json.dumps({k: int(_flag_value(v, k, f"{source}: row {i + 1}: ")) for k, v in rec.items()}))
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
            fh.write("\n".join(rows) + "\n")
        try:
            bench, size = self.workloads[0]
            out = subprocess.run([self.binary, *self._base_flags(bench, size), "-check", fh.name],
                                 check=False, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
        finally:
            os.unlink(fh.name)
        if out.returncode != 0:
            bad = [ln for ln in out.stdout.splitlines() if ln.startswith("line ")]
            if not bad:  # the benchmark or size itself is wrong: the program says so on stderr
                raise BackendError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else
                                   f"{self.binary} -check failed (exit {out.returncode})")
            shown = "; ".join("row " + ln[5:] for ln in bad[:3])
            more = f" and {len(bad) - 3:,} more" if len(bad) > 3 else ""
            raise BackendError(f"{source}: MGPUSim cannot assemble {len(bad):,} of {len(rows):,} point(s): "
                               f"{shown}{more}")
        self.warnings = self.launch_warnings(points)

    def launch_warnings(self, points: Any) -> list[str]:
        """A warning per workload that launches fewer work-groups per kernel than some design has CUs."""
        cus = [float(BASELINE_CUS["cu_per_sa"] * BASELINE_CUS["sa"])]
        if len(points):
            per_sa, sas = ([float(v) for v in points[k]] if k in points.columns
                           else [float(BASELINE_CUS[k])] * len(points) for k in ("cu_per_sa", "sa"))
            cus = [a * b for a, b in zip(per_sa, sas)]
        most = int(max(cus))
        out = []
        for (bench, size), p in zip(self.workloads, self.plans):
            if p["work_groups"] < most:
                n_short = sum(1 for c in cus if c > p["work_groups"])
                out.append(f"{bench} at size {size:,} launches {p['work_groups']:,} work-group(s) per kernel, fewer "
                           f"than the CUs of {n_short:,} of {len(cus):,} design(s) (up to {most:,}): their extra CUs "
                           f"sit idle and the results cannot tell those designs apart; give a larger size")
        return out

    def run_batch(self, batch: list[tuple[int, dict, int]], ctx: dict | None = None) -> list[Outcome]:
        return [self.run_one(idx, params, attempt, ctx) for idx, params, attempt in batch]

    def _executable(self) -> str:
        """The binary on this worker: the runner's, else one built here (a Dask worker on another machine)."""
        if os.access(self.binary, os.X_OK):
            return self.binary
        return str(build())

    def run_one(self, idx: int, params: dict, attempt: int, ctx: dict | None = None) -> Outcome:
        who, started = worker_id(), time.time()
        workdir = Path(self.workdir or os.path.join(tempfile.gettempdir(), "gpudse-mgpusim-runs"))
        try:
            run_dir, attempt, lost = allocate_run_dir(workdir, idx, attempt, (ctx or {}).get("campaign", ""), who,
                                                      started)
        except OSError as e:
            reason = f"cannot create a run directory in {workdir} ({e.strerror or e})"
            return Outcome(idx, False, {}, reason, "", [Attempt(attempt, "failed", who, "", started, time.time(),
                                                                reason)])

        def failed(reason: str, log_tail: str = "") -> Outcome:
            return Outcome(idx, False, {}, reason, log_tail,
                           lost + [Attempt(attempt, "failed", who, str(run_dir), started, time.time(), reason)])

        try:
            self.check_points(params)
            flags = [f for k, v in params.items() for f in (f"-{k.replace('_', '-')}", _flag_value(v, k, ""))]
            exe = self._executable()
            (run_dir / "point.json").write_text(json.dumps(params, default=str), encoding="utf-8")
        except GpudseError as e:
            return failed(str(e))
        except OSError as e:
            return failed(f"cannot prepare the run in {run_dir} ({e.strerror or e})")
        results: dict[str, dict[str, float]] = {}
        for (bench, size), limit in zip(self.workloads, self.timeouts):
            suffix = f"-{bench}" if self.suite else ""
            log_path, metrics_path = run_dir / f"run{suffix}.log", run_dir / f"metrics{suffix}.json"
            argv = [exe, *self._base_flags(bench, size), *flags, "-o", str(metrics_path)]
            if self.verify and idx == 0:
                argv.append("-verify")
            problem = self._run(argv, run_dir, log_path, limit, bench if self.suite else "")
            if problem:
                return failed(problem, tail(log_path))
            try:
                results[bench] = parse_metrics(metrics_path)
            except GpudseError as e:
                return failed(str(e), tail(log_path))
        return Outcome(idx, True, self.combine(results), "", "",
                       lost + [Attempt(attempt, "done", who, str(run_dir), started, time.time())])

    @staticmethod
    def _run(argv: list[str], run_dir: Path, log_path: Path, limit: float, label: str) -> str:
        """Run one simulation under the supervisor; the reason it failed, or ''."""
        what = f"MGPUSim ({label})" if label else "MGPUSim"
        status = supervise(argv, run_dir, log_path, limit, {})
        if status.get("error"):
            return status["error"]
        if status.get("timed_out"):
            return (f"{what} timed out after {limit:g} s (killed); give a longer --timeout or a smaller size")
        if status.get("stopped"):
            return f"stopped: {status['stopped']}"
        code = status.get("code")
        if code == 0:
            return ""
        text = tail(log_path)
        reason = next((ln for ln in text.splitlines() if ln.startswith(("invalid configuration:",
                                                                        "simulation failed:"))), "")
        why = f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exited with status {code}"
        return f"{what} {why}" + (f": {reason}" if reason else "")

    def combine(self, results: dict[str, dict[str, float]]) -> dict[str, float]:
        """One benchmark's metrics as they are; a suite's prefixed by benchmark, with the times' geometric means."""
        if not self.suite:
            return next(iter(results.values()))
        out = {f"{bench}_{k}": v for bench, metrics in results.items() for k, v in metrics.items()}
        for k in MGPUSIM_GEOMEAN_METRICS:
            vals = [m.get(k) for m in results.values()]
            if all(isinstance(v, float) and v > 0 for v in vals):
                out[f"geomean_{k}"] = geometric_mean(vals)  # type: ignore[arg-type]
        out["wall_seconds"] = sum(m.get("wall_seconds", 0.0) for m in results.values())
        return out


def parse_metrics(path: Path) -> dict[str, float]:
    """The metrics of one run (``metrics.json``) as numbers; a rate without accesses is left out."""
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read(1 << 22))
    except FileNotFoundError:
        raise MgpusimError(f"{path}: MGPUSim wrote no metrics; did the simulation finish?") from None
    except (OSError, ValueError) as e:
        raise MgpusimError(f"{path}: unreadable metrics ({e})") from None
    if not isinstance(doc, dict) or "kernel_cycles" not in doc:
        raise MgpusimError(f"{path}: no kernel_cycles in MGPUSim's metrics")
    out = {}
    for k in MGPUSIM_METRICS:
        v = doc.get(k)
        if isinstance(v, (int, float)):
            out[k] = float(v)
    if not out.get("kernel_cycles", 0) > 0:
        launched = doc.get("kernel_launches")
        if isinstance(launched, int) and launched > 0:
            raise MgpusimError(f"{path}: MGPUSim recorded no kernel time (kernel_cycles "
                               f"{doc.get('kernel_cycles')!r}) although the command processor ran {launched} "
                               f"kernel(s); the run is not counted: run it again (--retry-failed)")
        raise MgpusimError(f"{path}: kernel_cycles is {doc.get('kernel_cycles')!r}; the benchmark launched no kernel")
    return out
