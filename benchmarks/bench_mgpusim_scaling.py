"""Benchmark: do MGPUSim's workloads fill the GPU? Time on 16 vs 64 CUs and CPU seconds per point.

Run: python benchmarks/bench_mgpusim_scaling.py [--cases matmul,fir:262144,...] [--small-sa 4] [--jobs 1] [--out FILE]

For each case (a benchmark at its default size, or ``benchmark:size``) the built driver program runs the R9 Nano
baseline (16 shader arrays x 4 CUs = 64 CUs) and the same GPU with ``--small-sa`` shader arrays (default 4: 16 CUs),
--jobs runs at a time. It prints one Markdown table row per case: work-groups launched, achieved occupancy on 64 CUs,
the kernels' execution time (``kernel_exec_s``, without the PCIe launch round trip) on both GPUs, their ratio
(perfect scaling: 4; 1.0: launch-bound, the extra CUs sit idle) and the CPU seconds each point took (the
simulator process's own user + system time, so the machine's load does not inflate it; wall time is printed beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudse_core.choices import MGPUSIM_BENCHMARKS  # noqa: E402
from gpudse_core.sim import mgpusim  # noqa: E402


def run(binary: Path, bench: str, size: int, sa: int) -> tuple[dict, float, float]:
    """One simulation: its metrics, its own CPU seconds (user + system, from wait4) and wall seconds."""
    argv = [str(binary), "-benchmark", bench, "-sa", str(sa)] + (["-size", str(size)] if size else [])
    wall0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - wall0
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed: {err.read().decode(errors='replace').strip()[-400:]}")
        out.seek(0)
        return json.loads(out.read()), usage.ru_utime + usage.ru_stime, wall


def parse_case(text: str) -> tuple[str, int]:
    name, _, size = text.partition(":")
    if name not in MGPUSIM_BENCHMARKS:
        raise SystemExit(f"--cases: unknown benchmark {name!r}; choose from {', '.join(MGPUSIM_BENCHMARKS)}")
    return name, int(size) if size else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(MGPUSIM_BENCHMARKS),
                    help="comma-separated benchmark[:size] (default: every benchmark at its default size)")
    ap.add_argument("--small-sa", type=int, default=4, help="shader arrays of the small GPU (4 CUs each; default 4)")
    ap.add_argument("--jobs", type=int, default=1, help="simulations at once (default 1; CPU seconds are per process)")
    ap.add_argument("--out", default="", help="also append each row as JSON to this file")
    args = ap.parse_args()
    binary = mgpusim.build(progress=lambda line: print(line, file=sys.stderr))
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    small = 4 * args.small_sa
    print(f"| benchmark | size | work-groups launched | occupancy (64 CUs) | exec µs, 64 CUs | exec µs, {small} CUs "
          f"| ratio {small}/64 | CPU s (64 / {small} CUs) | wall s (64 / {small}) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    cases = [parse_case(c.strip()) for c in args.cases.split(",")]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:  # each simulation is one single-threaded process
        futures = [(pool.submit(run, binary, b, n, 16), pool.submit(run, binary, b, n, args.small_sa))
                   for b, n in cases]
        for (bench, _), (fut_big, fut_little) in zip(cases, futures):
            (big, cpu_big, wall_big), (little, cpu_little, wall_little) = fut_big.result(), fut_little.result()
            ratio = little["kernel_exec_s"] / big["kernel_exec_s"]
            row = {"benchmark": bench, "size": big["size"], "work_groups": big["work_groups"],
                   "occupancy_64": big.get("occupancy"), "exec_64_s": big["kernel_exec_s"],
                   f"exec_{small}_s": little["kernel_exec_s"], "ratio": ratio, "cpu_64_s": cpu_big,
                   f"cpu_{small}_s": cpu_little, "wall_64_s": wall_big, f"wall_{small}_s": wall_little}
            print(f"| {bench} | {big['size']:,} | {big['work_groups']:,} | {big.get('occupancy', 0):.3f} "
                  f"| {big['kernel_exec_s'] * 1e6:,.1f} | {little['kernel_exec_s'] * 1e6:,.1f} | {ratio:.2f} "
                  f"| {cpu_big:.1f} / {cpu_little:.1f} | {wall_big:.0f} / {wall_little:.0f} |", flush=True)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
