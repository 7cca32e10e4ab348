"""Whole-process start-up of the command line: what a user on a cluster waits for.

    python benchmarks/bench_cli.py [--repeats 5]
    python benchmarks/bench_cli.py --search [--repeats 3]         # gpudse search against the same search in-process
    python benchmarks/bench_cli.py --fit-against 747bb41 [--repeats 5]  # the 300-row fit here and at a commit

Each command runs as its own process (`python -m gpudse_core …`, imports included), in a temporary
folder, repeated; the minimum wall time is printed (the usual figure for start-up: the other runs
only add noise from the machine). Targets: `gpudse --help` ≤ 0.3 s, a 300-point `sample` ≤ 0.6 s,
`gpudse predict` of 1,000 points with a saved model of every kind ≤ 1 s (the learners' files hold
their fitted trees / EBM tables, evaluated with NumPy: no refit, no scikit-learn). The models are
fitted once, untimed, on the 300-point workflow's results. The other commands are printed for
reference; the child processes' CPU seconds (user + system) are shown beside the wall time, since
on a shared machine the wall time also counts waiting for a core.

``--search`` runs the same searches (a benchmark_hub table as the simulator, and the built-in matMul
kernel; goal min, budget 60, two designs a round, seed 0) as ``gpudse search … -o history.csv`` and
in-process — a Python process that calls ``run_search`` with the simulator's ``run_batch`` as its
evaluation, as the Search page does for the built-in simulator — and prints both side by side with
their ratio (the CLI's target: at most 1.3×), each the minimum over the repeats of whole processes,
imports included. ``--fit-against REV`` times ``gpudse fit`` of the 300-row results with the default
settings here and in a worktree of commit REV (``git worktree add /tmp/wt-REV REV`` when missing),
alternating, and prints the two CPU times side by side.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARAMS = "blk,cc,tc,smp,ccp,simd,mshr,dramq,intra,inter"
COMMANDS = [  # (label, argv, target seconds or None)
    ("gpudse --help", ["--help"], 0.3),
    ("gpudse sample stargazer -n 300", ["sample", "stargazer", "-n", "300", "--seed", "1", "-o", "samples.csv"], 0.6),
    ("gpudse simulate (300 points, matMul)", ["simulate", "samples.csv", "--kernel", "matMul", "--noise", "0.01",
                                              "--seed", "1", "--workers", "1", "-o", "results.csv"], None),
    ("gpudse fit (300 rows)", ["fit", "results.csv", "--response", "cycles", "--params", PARAMS, "--transform", "log",
                               "-o", "model.json", "--json"], None),
    ("gpudse predict (300 points)", ["predict", "model.json", "samples.csv", "-o", "pred.csv"], None),
]
KINDS = ("stepwise", "forest", "boosting", "hybrid", "ebm")
SETUP = [["sample", "stargazer", "-n", "1000", "--seed", "2", "-o", "points1k.csv"]] + [
    ["fit", "results.csv", "--response", "cycles", "--params", PARAMS, "--model", k, "--transform", "log",
     "-o", f"{k}.json"] for k in KINDS]
PREDICT = [(f"gpudse predict, {k} (1,000 points)", ["predict", f"{k}.json", "points1k.csv", "-o", f"pred_{k}.csv"], 1.0)
           for k in KINDS]


def run(argv: list[str], cwd: str, root: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one whole process of the checkout at *root*."""
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = os.times()
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "gpudse_core", *argv], cwd=cwd, env=env, capture_output=True,
                       text=True)
    dt = time.perf_counter() - t0
    after = os.times()
    if r.returncode != 0:
        raise SystemExit(f"gpudse {' '.join(argv)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return dt, (after.children_user - before.children_user) + (after.children_system - before.children_system)


HUB = Path("/work/shared/data/benchmark_hub")
if not HUB.is_dir():
    HUB = ROOT.parent / "shared" / "data" / "benchmark_hub"
SEARCH = ["--goal", "min", "--budget", "60", "--batch", "2", "--seed", "0"]
SEARCHES = [  # (label, the CLI's source arguments, the response)
    ("table conv-A100", ["--table", str(HUB / "convolution_A100.csv")], "time_ms"),
    ("built-in matMul", ["stargazer", "--kernel", "matMul"], "cycles"),
]
IN_PROCESS = """
import sys
import pandas as pd
from gpudse_core.search.pool import make_pool
from gpudse_core.search.study import run_search
table, response = sys.argv[1], sys.argv[2]
if table != "-":
    from gpudse_core.sim.lookup import LookupTable
    t = LookupTable.from_frame(pd.read_csv(table), response, status_column="status", source=table)
    space, digits, backend = t.space, t.digits, t.backend()
else:
    from gpudse_core.sim.campaign import AnalyticalBackend
    from gpudse_core.space.presets import load_space
    space, digits, backend = load_space("stargazer"), None, AnalyticalBackend("matMul")
def evaluate(d, designs):
    outs = backend.run_batch([(i, x, 1) for i, x in enumerate(designs)])
    return [(o.result.get(response), "") if o.ok else (None, o.error) for o in outs]
res = run_search(make_pool(space, digits), evaluate, goal="min", budget=60, batch=2, seed=0)
print(res.best().value)
"""


def run_python(code_args: list[str], cwd: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the child and its children, stdout) of ``python -c CODE ARGS``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before, t0 = os.times(), time.perf_counter()
    r = subprocess.run([sys.executable, "-c", *code_args], cwd=cwd, env=env, capture_output=True, text=True)
    dt, after = time.perf_counter() - t0, os.times()
    if r.returncode != 0:
        raise SystemExit(f"the in-process search failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return dt, (after.children_user - before.children_user) + (after.children_system - before.children_system), \
        r.stdout


def search_overhead(repeats: int) -> None:
    """gpudse search (whole process) against the same search in-process, side by side."""
    print(f"gpudse search against in-process, min of {repeats} whole processes (load {os.getloadavg()[0]:.1f}):")
    for label, source, response in SEARCHES:
        cli, inproc = [], []
        with tempfile.TemporaryDirectory() as tmp:
            table = source[1] if source[0] == "--table" else "-"
            for i in range(repeats):  # alternating, each first in turn, so both see the same machine
                for first in ((0, 1) if i % 2 == 0 else (1, 0)):
                    if first == 0:
                        for f in (Path(tmp) / "history.csv", Path(tmp) / "history.db"):
                            f.unlink(missing_ok=True)  # (a rerun would read its simulations back)
                        cli.append(run(["search", *source, *SEARCH, "-o", "history.csv"], tmp))
                    else:
                        inproc.append(run_python([IN_PROCESS, table, response], tmp)[:2])
        cw, iw = min(w for w, _ in cli), min(w for w, _ in inproc)
        cc, ic = min(c for _, c in cli), min(c for _, c in inproc)
        print(f"  {label:18s} CLI {cw:6.2f} s (CPU {cc:5.2f} s)   in-process {iw:6.2f} s (CPU {ic:5.2f} s)   "
              f"CLI / in-process {cw / iw:.2f}× wall, {cc / ic:.2f}× CPU  (target ≤ 1.3×)")


def fit_against(rev: str, repeats: int) -> None:
    """The 300-row default fit's whole-process CPU here and at commit *rev*, side by side."""
    other = Path(f"/tmp/wt-{rev}")
    if not other.is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(other), rev], check=True,
                       capture_output=True)
    fit = [a for a in COMMANDS if a[0].startswith("gpudse fit")][0][1]
    with tempfile.TemporaryDirectory() as tmp:
        for _, argv, _ in COMMANDS[1:3]:  # the 300-point sample and its simulation, untimed
            run(argv, tmp)
        here, there = [], []
        for _ in range(repeats):
            here.append(run(fit, tmp))
            there.append(run(fit, tmp, root=other))
    print(f"gpudse fit (300 rows), min of {repeats} whole processes (load {os.getloadavg()[0]:.1f}):")
    for label, runs in (("this checkout", here), (f"commit {rev}", there)):
        print(f"  {label:18s} CPU {min(c for _, c in runs):5.2f} s   wall {min(w for w, _ in runs):5.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=None, help="whole processes per figure (default 5; --search 3)")
    ap.add_argument("--search", action="store_true", help="gpudse search against the same search in-process")
    ap.add_argument("--fit-against", metavar="REV", help="the 300-row fit here and at commit REV")
    args = ap.parse_args()
    if args.search:
        search_overhead(args.repeats or 3)
        return
    if args.fit_against:
        fit_against(args.fit_against, args.repeats or 5)
        return
    args.repeats = args.repeats or 5
    print(f"whole-process wall time, min of {args.repeats} (python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f})")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, argv, target) in enumerate(COMMANDS + PREDICT):
            if i == len(COMMANDS):
                for setup in SETUP:
                    run(setup, tmp)
            runs = [run(argv, tmp) for _ in range(args.repeats)]
            times = sorted(w for w, _ in runs)
            best = times[0]
            cpu = min(c for _, c in runs)
            verdict = "" if target is None else (f"  target ≤ {target:g} s: " + ("met" if best <= target else "MISSED"))
            print(f"{label:44s} {best:6.3f} s  (median {times[len(times) // 2]:.3f} s, CPU {cpu:.3f} s){verdict}")


if __name__ == "__main__":
    main()
