"""Run a test in a child process under a memory limit, so that a blow-up fails the test instead of
the machine (fuzz tests run "in a subprocess under a memory limit").

    from bounded import bounded

    @bounded(mem_mb=1536, max_rss_mb=1024, timeout=300)
    @given(st.binary(max_size=4096))
    def test_reader_never_crashes(data):
        ...

The decorated test re-runs its own pytest node id in a fresh interpreter whose address space is
capped with ``resource.setrlimit(RLIMIT_AS)``; the parent asserts that the child passed, finished
within *timeout* seconds and peaked below *max_rss_mb* of resident memory. Inside the child the
test runs as written. Hypothesis examples run in the child, so its shrinking and its failure
report appear in the assertion message.
"""

from __future__ import annotations

import functools
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD_ENV = "GPUDSE_BOUNDED_CHILD"
ROOT = Path(__file__).resolve().parent.parent
_RUNNER = """
import resource, sys, pytest
rc = pytest.main(["-q", "-p", "no:cacheprovider", "-x", "--no-header", "-W",
                  "ignore::pytest.PytestUnraisableExceptionWarning", sys.argv[1]])
# the child's own peak (VmHWM): ru_maxrss would carry over the forking parent's peak
hwm = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")]
open(sys.argv[2], "w").write(hwm[0] if hwm else str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.exit(int(rc))
"""


def bounded(mem_mb: int = 1536, max_rss_mb: int = 1024, timeout: float = 300):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if os.environ.get(CHILD_ENV) == "1":
                return fn(*args, **kwargs)
            node = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
            assert node, "bounded tests must run under pytest"
            limit = mem_mb << 20

            def cap() -> None:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

            env = {**os.environ, CHILD_ENV: "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                   "MKL_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2"}
            with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
                try:
                    r = subprocess.run([sys.executable, "-c", _RUNNER, node, rss.name], cwd=ROOT, env=env,
                                       preexec_fn=cap, capture_output=True, text=True, timeout=timeout)
                except subprocess.TimeoutExpired:
                    raise AssertionError(f"{node}: still running after {timeout:g} s (a hang?)") from None
                peak_kb = int(rss.read() or 0)
            out = (r.stdout + r.stderr)[-6000:]
            assert r.returncode == 0, f"{node} failed in its memory-limited child ({mem_mb} MB):\n{out}"
            assert peak_kb < max_rss_mb * 1024, f"{node}: peak resident memory {peak_kb // 1024} MB ≥ {max_rss_mb} MB"

        return wrapper  # same signature as the test (functools.wraps): fixtures reach it in the child

    return deco
