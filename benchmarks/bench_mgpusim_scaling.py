"""Benchmark: do MGPUSim's workloads fill the GPU? Time on 16 vs 64 CUs and CPU seconds per point.

Run: python benchmarks/bench_mgpusim_scaling.py [--cases matmul,fir:262144,...] [--small-sa 4] [--out FILE]

For each case (a benchmark at its default size, or ``benchmark:size``) the built driver program runs the R9 Nano
baseline (16 shader arrays x 4 CUs = 64 CUs) and the same GPU with ``--small-sa`` shader arrays (default 4: 16 CUs),
one run at a time. It prints one Markdown table row per case: work-groups launched, achieved occupancy on 64 CUs,
the kernels' execution time (``kernel_exec_s``, without the PCIe launch round trip) on both GPUs, their ratio
(perfect scaling: 4; 1.0: launch-bound, the extra CUs sit idle) and the CPU seconds each point took (the
simulator's own user + system time, so the machine's load does not inflate it; wall time is printed beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudse_core.choices import MGPUSIM_BENCHMARKS  # noqa: E402
from gpudse_core.sim import mgpusim  # noqa: E402


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(binary: Path, bench: str, size: int, sa: int) -> tuple[dict, float, float]:
    """One simulation: its metrics, CPU seconds and wall seconds."""
    argv = [str(binary), "-benchmark", bench, "-sa", str(sa)] + (["-size", str(size)] if size else [])
    cpu0, wall0 = child_cpu(), time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    cpu, wall = child_cpu() - cpu0, time.perf_counter() - wall0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout), cpu, wall


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
    ap.add_argument("--out", default="", help="also append each row as JSON to this file")
    args = ap.parse_args()
    binary = mgpusim.build(progress=lambda line: print(line, file=sys.stderr))
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    small = 4 * args.small_sa
    print(f"| benchmark | size | work-groups | occupancy (64 CUs) | exec µs, 64 CUs | exec µs, {small} CUs "
          f"| ratio {small}/64 | CPU s (64 / {small} CUs) | wall s (64 / {small}) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case in args.cases.split(","):
        bench, size = parse_case(case.strip())
        big, cpu_big, wall_big = run(binary, bench, size, 16)
        little, cpu_little, wall_little = run(binary, bench, size, args.small_sa)
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
