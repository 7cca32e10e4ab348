"""Run one simulator process so that it dies with its worker and its output costs bounded memory and disk
 (a killed Dask worker's simulator kept running; a simulator printing 1.5 GB cost 4.2 GB).

The command backend starts this file as a script (standard library only, ``python -I -S``) in a new
session, one per run::

    python -I -S supervise.py '{"ppid": …, "log": …, "cap": …, "timeout": …, "argv": […]}'

It starts the simulator in a process group of its own and

* **dies with its parent**: on Linux ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` (elsewhere: a 0.5 s check of
  the parent pid) — when the worker that started it dies (SIGKILL, a lost Dask worker), the whole
  simulator process group is killed and the log is closed;
* **enforces the timeout** by killing the simulator's group (and kills what is left of the group
  when the simulator exits, so no grandchild outlives its run);
* **streams the output** (stdout and stderr) to the run's log file: the first half of
  ``cap`` bytes as they come, then a ring file of the other half; if the output was longer, the middle
  is dropped and replaced by one marker line starting with :data:`TRUNCATION_MARK` (the log parser
  knows it). Memory use is a 64 KiB buffer whatever the simulator prints.

On exit it prints one JSON line on its stdout: ``code`` (negative: killed by that signal),
``timed_out``, ``stopped`` (why it was stopped early, or null), ``bytes``, ``dropped``, ``error``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

TRUNCATION_MARK = "[gpudse: output dropped here:"
BUF = 1 << 16
PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int) -> bool:
    """Ask Linux to send *sig* to this process when the thread that started it ends."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class _Capture:
    """Head of the output straight to the log, the rest through a ring file; see the module docstring."""

    def __init__(self, log_path: str, cap: int):
        self.log = open(log_path, "wb")
        self.head_cap = cap // 2
        self.tail_cap = max(cap - self.head_cap, 1)
        self.ring_path = log_path + ".tail"
        self.ring: int | None = None
        self.pos = 0
        self.wrapped = False
        self.total = 0
        self.head = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        if self.head < self.head_cap:
            take = data[:self.head_cap - self.head]
            self.log.write(take)
            self.head += len(take)
            data = data[len(take):]
            if self.head >= self.head_cap:
                self.log.flush()
        if not data:
            return
        if self.ring is None:
            self.ring = os.open(self.ring_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        if len(data) >= self.tail_cap:  # (a tiny cap) the chunk alone fills the ring
            os.pwrite(self.ring, data[-self.tail_cap:], 0)
            self.pos, self.wrapped = 0, True
            return
        room = self.tail_cap - self.pos
        if len(data) <= room:
            os.pwrite(self.ring, data, self.pos)
            self.pos += len(data)
            if self.pos == self.tail_cap:
                self.pos, self.wrapped = 0, True
        else:
            os.pwrite(self.ring, data[:room], self.pos)
            os.pwrite(self.ring, data[room:], 0)
            self.pos, self.wrapped = len(data) - room, True

    def close(self) -> int:
        """Append the kept tail (after a marker if the middle was dropped); returns the bytes dropped."""
        dropped = 0
        try:
            if self.ring is not None:
                kept = self.tail_cap if self.wrapped else self.pos
                dropped = self.total - self.head - kept
                spans = [(self.pos, self.tail_cap), (0, self.pos)] if self.wrapped else [(0, self.pos)]
                skip_partial = dropped > 0
                if dropped > 0:
                    self.log.write(f"\n{TRUNCATION_MARK} {dropped} bytes of output dropped (limit "
                                   f"sim_output_bytes = {self.head_cap + self.tail_cap}); the head and the tail "
                                   f"are kept]\n".encode())
                for start, end in spans:
                    at = start
                    while at < end:
                        chunk = os.pread(self.ring, min(BUF, end - at), at)
                        if not chunk:
                            break
                        at += len(chunk)
                        if skip_partial:  # the kept tail starts mid-line: drop that partial line
                            nl = chunk.find(b"\n")
                            if nl < 0:
                                continue
                            chunk, skip_partial = chunk[nl + 1:], False
                        self.log.write(chunk)
        finally:
            self.log.close()
            if self.ring is not None:
                os.close(self.ring)
                try:
                    os.unlink(self.ring_path)
                except OSError:
                    pass
        return dropped


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(spec: dict) -> dict:
    ppid = int(spec["ppid"])
    status: dict = {"code": None, "timed_out": False, "stopped": None, "bytes": 0, "dropped": 0, "error": None}
    die_with_parent(signal.SIGTERM)
    if os.getppid() != ppid:  # the parent died before prctl took effect
        status["stopped"] = "its worker died"
        return status
    child: subprocess.Popen | None = None
    stop: list[str] = []

    def on_signal(signum: int, _frame) -> None:
        stop.append("its worker died" if signum == signal.SIGTERM else f"signal {signum}")
        if child is not None:
            _killpg(child.pid)

    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, on_signal)
    cap = _Capture(spec["log"], int(spec["cap"]))
    try:
        try:
            child = subprocess.Popen(spec["argv"], cwd=spec.get("cwd") or None, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, process_group=0)
        except OSError as e:
            status["error"] = f"cannot start {spec['argv'][0]!r}: {e.strerror or e}"
            return status
        if stop:  # a signal arrived between fork and the assignment
            _killpg(child.pid)
        deadline = time.monotonic() + float(spec["timeout"])
        fd = child.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        killed_at: float | None = None

        def check() -> None:
            nonlocal killed_at
            if killed_at is not None:
                return
            if os.getppid() != ppid and not stop:
                stop.append("its worker died")
            if stop:
                status["stopped"] = stop[0]
            elif time.monotonic() >= deadline:
                status["timed_out"] = True
            elif child.poll() is None:
                return
            # stopped, timed out, or exited while something in its group still holds the pipe
            _killpg(child.pid)
            killed_at = time.monotonic()

        while True:
            check()
            if killed_at is not None and time.monotonic() > killed_at + 5:
                break  # a process that left the group holds the pipe: stop reading
            wait = 0.5 if killed_at is not None else max(0.0, min(0.5, deadline - time.monotonic()))
            try:
                events = poller.poll(wait * 1000)
            except InterruptedError:
                continue
            if not events:
                continue
            data = os.read(fd, BUF)
            if not data:
                break
            cap.write(data)
        while True:  # the output is closed; the simulator may still be running
            check()
            try:
                child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                continue
        code = child.wait()
        _killpg(child.pid)  # nothing of the run outlives it
        if stop and status["stopped"] is None:
            status["stopped"] = stop[0]
        status["code"] = code
    finally:
        status["bytes"] = cap.total
        status["dropped"] = cap.close()
    return status


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        status = run(spec)
    except Exception as e:  # report, never a traceback on the worker's pipe
        status = {"code": None, "timed_out": False, "stopped": None, "bytes": 0, "dropped": 0,
                  "error": f"the run supervisor failed: {type(e).__name__}: {e}"}
    sys.stdout.write(json.dumps(status) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
