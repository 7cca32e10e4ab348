"""MGPUSim in the loop: a cycle-level simulator of AMD GCN3 GPUs as a campaign backend.

MGPUSim (Sun, Baruah, Mojumder, Dong, Gong, Treadway, Bao, Kaeli, "MGPUSim: Enabling Multi-GPU
Performance Modeling and Optimization", ISCA 2019) is written in Go; its benchmarks carry their
compiled GCN3 kernels, so it needs no vendor SDK. gpudse runs it through a small Go program of its own,
``gpudse_core/_sims/mgpusim`` (installed with the package), that assembles one GPU with MGPUSim's
R9 Nano builder at a design point (:data:`~gpudse_core.choices.MGPUSIM_PARAMETERS`), runs one
benchmark in timing mode and prints one JSON object of metrics (kernel time and cycles, L1 vector and
L2 hit rates, DRAM transactions and bytes, instructions).

Version. The program pins ``gitlab.com/akita/mgpusim/v3 v3.0.0-alpha.9`` (May 2023), the newest
MGPUSim the Go module proxy serves: every ``github.com/sarchlab/mgpusim`` version (v3, v4) is refused
by proxy.golang.org with ``403 Forbidden … This module version is not available``.

The binary. :func:`build` compiles the program once into a cache folder keyed by a hash of its sources
(``$GPUDSE_CACHE`` or ``$XDG_CACHE_HOME/gpudse`` or ``~/.cache/gpudse``, then
``mgpusim/<hash>/gpudse-mgpusim``), with ``go`` (``$GPUDSE_GO``, else ``go`` on ``PATH``, else
``/usr/local/go/bin/go``); ``CGO_ENABLED=0`` makes it a static binary. A lock file makes concurrent
first uses build once. ``gpudse mgpusim build`` does it with progress.

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
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .. import limits
from ..choices import MGPUSIM_BENCHMARKS, MGPUSIM_METRICS, MGPUSIM_PARAMETERS
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
    env = os.environ.get("GPUDSE_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gpudse"


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
    if target.is_file() and os.access(target, os.X_OK) and not force:
        return target
    say = progress or (lambda line: None)
    go = find_go()
    with _locked(target.parent / ".build.lock"):
        if target.is_file() and os.access(target, os.X_OK) and not force:
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
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    say(f"built {target}")
    return target


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
    out = subprocess.run([str(exe), "-list"], capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
    if out.returncode != 0:
        raise MgpusimError(f"{exe} -list failed: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout)


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


@dataclass
class MgpusimBackend:
    """Runs design points of the ``mgpusim`` space (any subset of its parameters; the others stay at the
    R9 Nano baseline) through MGPUSim's timing simulation of *benchmark* at problem *size* (0: the
    benchmark's default). See the module docstring."""

    benchmark: str = "matmul"
    size: int = 0
    workdir: str = ""
    timeout: float = 600.0
    binary: str = ""
    count_insts: bool = True
    batch_size: int = 1
    name: str = "mgpusim"

    def __post_init__(self) -> None:
        if self.benchmark not in MGPUSIM_BENCHMARKS:
            raise BackendError(f"unknown MGPUSim benchmark {self.benchmark!r}; choose one of "
                               f"{', '.join(MGPUSIM_BENCHMARKS)}")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise BackendError(f"size {self.size!r}: give a whole number of at least 1 (or 0 for the benchmark's "
                               f"default)")
        try:
            self.timeout = limits.finite_timeout(self.timeout, "MGPUSim timeout")
        except GpudseError as e:
            raise BackendError(str(e)) from None
        if self.workdir:  # the simulator runs inside its run directory: paths must not be relative
            self.workdir = str(Path(self.workdir).resolve())
        if not self.binary:
            self.binary = str(build())
        self._source = source_hash()

    def spec(self) -> dict:
        return {"backend": "mgpusim", "benchmark": self.benchmark, "size": self.size,
                "mgpusim": f"{MODULE} {VERSION}", "driver": self._source}

    def _base_flags(self) -> list[str]:
        flags = ["-benchmark", self.benchmark, "-count-insts=" + ("true" if self.count_insts else "false")]
        if self.size:
            flags += ["-size", str(self.size)]
        return flags

    def check_points(self, columns: Iterable[str]) -> None:
        """The points' columns are MGPUSim parameters (the others keep the R9 Nano baseline)."""
        unknown = [str(c) for c in columns if str(c) not in MGPUSIM_PARAMETERS]
        if unknown:
            raise BackendError(f"the design points have column(s) {', '.join(unknown[:8])}, which MGPUSim does not "
                               f"take; its parameters are {', '.join(MGPUSIM_PARAMETERS)} "
                               "(sample the 'mgpusim' preset)")

    def check_table(self, points: Any, source: str = "design points") -> None:
        """Refuse, before anything runs, points the builders cannot assemble: the program checks them all
        (``-check``) and the first reasons are reported with their rows."""
        self.check_points(points.columns)
        rows = []
        for i, rec in enumerate(points.to_dict(orient="records")):
            rows.append(json.dumps({k: int(_flag_value(v, k, f"{source}: row {i + 1}: ")) for k, v in rec.items()}))
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
            fh.write("\n".join(rows) + "\n")
        try:
            out = subprocess.run([self.binary, *self._base_flags(), "-check", fh.name], capture_output=True, text=True,
                                 timeout=CHECK_TIMEOUT_S)
        finally:
            os.unlink(fh.name)
        if out.returncode == 0:
            return
        bad = [ln for ln in out.stdout.splitlines() if ln.startswith("line ")]
        if not bad:  # the benchmark or size itself is wrong: the program says so on stderr
            raise BackendError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else
                               f"{self.binary} -check failed (exit {out.returncode})")
        shown = "; ".join("row " + ln[5:] for ln in bad[:3])
        more = f" and {len(bad) - 3:,} more" if len(bad) > 3 else ""
        raise BackendError(f"{source}: MGPUSim cannot assemble {len(bad):,} of {len(rows):,} point(s): {shown}{more}")

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

        log_path, metrics_path = run_dir / "run.log", run_dir / "metrics.json"
        try:
            self.check_points(params)
            flags = [f for k, v in params.items() for f in (f"-{k.replace('_', '-')}", _flag_value(v, k, ""))]
            argv = [self._executable(), *self._base_flags(), *flags, "-o", str(metrics_path)]
            (run_dir / "point.json").write_text(json.dumps(params, default=str), encoding="utf-8")
        except GpudseError as e:
            return failed(str(e))
        except OSError as e:
            return failed(f"cannot prepare the run in {run_dir} ({e.strerror or e})")
        status = supervise(argv, run_dir, log_path, self.timeout, {})
        if status.get("error"):
            return failed(status["error"], tail(log_path))
        if status.get("timed_out"):
            return failed(f"MGPUSim timed out after {self.timeout:g} s (killed)", tail(log_path))
        if status.get("stopped"):
            return failed(f"stopped: {status['stopped']}", tail(log_path))
        code = status.get("code")
        if code != 0:
            text = tail(log_path)
            reason = next((ln for ln in text.splitlines() if ln.startswith(("invalid configuration:",
                                                                            "simulation failed:"))), "")
            why = f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exited with status {code}"
            return failed(f"MGPUSim {why}" + (f": {reason}" if reason else ""), text)
        try:
            result = parse_metrics(metrics_path)
        except GpudseError as e:
            return failed(str(e), tail(log_path))
        return Outcome(idx, True, result, "", "", lost + [Attempt(attempt, "done", who, str(run_dir), started,
                                                                  time.time())])


def parse_metrics(path: Path) -> dict[str, float]:
    """The metrics of one run (``metrics.json``) as numbers; a rate without accesses is left out."""
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read(1 << 20))
    except FileNotFoundError:
        raise MgpusimError(f"{path}: MGPUSim wrote no metrics; did the simulation finish?") from None
    except (OSError, ValueError) as e:
        raise MgpusimError(f"{path}: unreadable metrics ({e})") from None
    if not isinstance(doc, dict) or "kernel_cycles" not in doc:
        raise MgpusimError(f"{path}: no kernel_cycles in MGPUSim's metrics")
    out = {}
    for k in MGPUSIM_METRICS:
        v = doc.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = float(v)
    if not out.get("kernel_cycles", 0) > 0:
        raise MgpusimError(f"{path}: kernel_cycles is {doc.get('kernel_cycles')!r}; the benchmark launched no kernel")
    return out
