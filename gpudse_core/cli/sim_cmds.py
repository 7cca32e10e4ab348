"""``gpudse simulate | import | equal-area | wfg``: campaigns, uploads and the analytical models."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import choices
from ..errors import GpudseError
from ..fmt import fmt_rate
from .common import Progress, add_precision, count_arg, nonnegative_int, positive_number, writable, write_table


def cmd_simulate(args: argparse.Namespace) -> int:
    """Run (or resume) a campaign; exit 0 only when every point has a result (1: some are missing)."""
    from ..dataio import read_table
    from ..sim.campaign import check_workers, points_spec, run_campaign
    from ..sim.store import CampaignStore

    check_workers(args.workers, args.scheduler)
    points = read_table(args.points)
    out = writable(args.output, (".csv", ".parquet", ".json"))
    store_path = Path(args.store) if args.store else out.with_suffix(".db")
    backend = _backend(args, store_path)
    check = getattr(backend, "check_points", None)
    if check is not None:
        check(points.columns)  # before the store is touched
    check_table = getattr(backend, "check_table", None)
    if check_table is not None:
        check_table(points, str(args.points))
    for warning in getattr(backend, "warnings", ()):
        print(f"warning: {warning}", file=sys.stderr)
    wsc = None
    if args.workspace:  # the campaign goes into the workspace's database, live in the dashboard
        from ..workspace.campaigns import CliCampaign
        from ..workspace.workspace import open_workspace

        if args.store:
            raise GpudseError("give --store or --workspace, not both: a workspace keeps its campaigns in its own file")
        wsc = CliCampaign(open_workspace(args.workspace, trusted=True), args.campaign)
        store_path, args.campaign = wsc.store_path, wsc.store_name
    with CampaignStore(store_path, name=args.campaign, max_attempts=args.retries + 1) as store:
        state = store.open({**backend.spec(), **points_spec(points)}, points)
        if store.took_over:
            print(f"took the campaign over from {store.took_over}", file=sys.stderr)
        if args.retry_failed:
            n = store.requeue_failed()
            if n:
                print(f"re-queued {n:,} failed point(s)", file=sys.stderr)
        before = store.progress()
        print(f"{state} campaign {args.campaign!r} in {store_path}: {before.done:,} of {before.total:,} points done",
              file=sys.stderr)
        line = Progress()
        interrupted = False
        try:
            final = run_campaign(store, backend, workers=args.workers, scheduler=args.scheduler,
                                 progress=wsc.progress(_bar(line)) if wsc else _bar(line),
                                 should_stop=wsc and wsc.should_stop)
        except KeyboardInterrupt:  # Ctrl-C: the store has every finished run; the output file gets them too
            interrupted, final = True, store.progress()
        if wsc and not interrupted:  # an interrupted workspace campaign is recorded as such when the command ends
            wsc.finish(final)
        line.end()
        table = store.table()
        keep = [c for c in table.columns if c not in ("status", "attempts", "error")]
        table = table[keep] if len(table) else points.iloc[0:0]
        write_table(table, out, args.precision)
        print(f"wrote {len(table):,} results to {out}", file=sys.stderr)
        if interrupted:
            print(f"gpudse: interrupted; {final.done:,} of {final.total:,} point(s) are done and written. The store "
                  f"keeps them: run the same command again to resume", file=sys.stderr)
            return 130
        return _report_missing(store, final, args.retries + 1, stopped=bool(wsc and wsc.should_stop()))


def _backend(args: argparse.Namespace, store_path: Path):
    from ..sim.campaign import AnalyticalBackend, CommandBackend

    if args.backend != "mgpusim" and (args.benchmark or args.size or args.timeout or args.verify):
        raise GpudseError(f"--benchmark, --size, --timeout and --verify set up --backend mgpusim; the "
                          f"{args.backend} backend " + ("takes --kernel" if args.backend == "analytical"
                                                        else "reads its --config"))
    if args.backend == "mgpusim":
        return mgpusim_backend(args, store_path.with_name(store_path.name + ".runs"))
    if args.backend == "command":
        if not args.config:
            raise GpudseError("--backend command needs --config SIM.toml (the simulator's description on this machine)")
        return CommandBackend.from_file(args.config)
    return AnalyticalBackend(args.kernel, noise=args.noise, seed=args.seed or 0)


def mgpusim_backend(args: argparse.Namespace, workdir: Path):
    """The MGPUSim backend of ``--benchmark``, ``--size``, ``--timeout`` and ``--verify`` (simulate and search)."""
    from ..sim.mgpusim import MgpusimBackend, build

    binary = build(progress=lambda line: print(line, file=sys.stderr))
    return MgpusimBackend(args.benchmark or "matmul", size=args.size or 0, timeout=args.timeout or 0.0,
                          binary=str(binary), workdir=str(workdir), verify=bool(getattr(args, "verify", False)))


def add_mgpusim_arguments(parser: argparse.ArgumentParser) -> None:
    """The MGPUSim workload options, shared by ``simulate`` and ``search``."""
    parser.add_argument("--benchmark", default=None, metavar="B[:SIZE],...",
                        help="mgpusim backend: the workload (default matmul), or a suite judged per benchmark and by "
                        "the geometric mean, e.g. matmul:512,fir:262144 (" + ", ".join(choices.MGPUSIM_BENCHMARKS)
                        + ")")
    parser.add_argument("--size", type=count_arg, default=None,
                        help="mgpusim backend: problem size of the one benchmark (default: the benchmark's, which "
                        "fills the R9 Nano's 64 CUs; gpudse mgpusim benchmarks lists what it means)")
    parser.add_argument("--timeout", type=positive_number, default=None,
                        help="mgpusim backend: seconds one benchmark run may take before it is killed (default: "
                        "3600 at the default size, scaled with the work of a larger one)")
    parser.add_argument("--verify", action="store_true",
                        help="mgpusim backend: check the first design point's output against the CPU reference")


def _bar(line: Progress):
    """The campaign's progress bar, on *line*."""
    def bar(prog, rate: float) -> None:
        width = 30
        filled = int(width * prog.done / max(prog.total, 1))
        line(f"[{'#' * filled}{'.' * (width - filled)}] {prog.done:,}/{prog.total:,} done, {prog.failed:,} failed, "
             f"{prog.remaining:,} remaining, {fmt_rate(rate, remaining=prog.remaining)}",
             done=prog.remaining == 0 and not line.tty)
    return bar


def _report_missing(store, final, attempts: int, stopped: bool = False) -> int:
    """Say how many points have no result and why; 1 if any is missing (also after a Stop), else 0."""
    missing = final.total - final.done
    if not missing:
        return 0
    parts = ["stopped on request"] if stopped else []
    if final.failed:
        fails = store.failures()
        parts.append(f"{final.failed:,} failed after {attempts} attempt(s) (first: point {fails.idx.iloc[0]}: "
                     f"{fails.error.iloc[0]})")
    if final.remaining:
        parts.append(f"{final.remaining:,} not run")
    print(f"gpudse: {missing:,} of {final.total:,} point(s) have no result: {'; '.join(parts)}. The store keeps what "
          f"is done: run the same command again to resume (add --retry-failed to retry the failed points)",
          file=sys.stderr)
    return 1


def cmd_mgpusim(args: argparse.Namespace) -> int:
    """``gpudse mgpusim build | benchmarks``: build the MGPUSim driver program, list its benchmarks."""
    import time

    from ..sim import mgpusim

    if args.action == "build":
        start = time.perf_counter()
        path = mgpusim.build(progress=lambda line: print(line, file=sys.stderr, flush=True), force=args.force)
        print(f"MGPUSim ({mgpusim.MODULE} {mgpusim.VERSION}) ready in {time.perf_counter() - start:.1f} s",
              file=sys.stderr)
        print(path)
        return 0
    specs = mgpusim.benchmarks()
    if args.json:
        print(json.dumps(specs, indent=1))
        return 0
    binary = mgpusim.build()
    for b in specs:
        multiple = f", a multiple of {b['size_multiple']}" if b["size_multiple"] > 1 else ""
        groups = mgpusim.plan(binary, b["name"])["work_groups"]
        print(f"{b['name']:<10} {b['suite']:<12} size = {b['size_meaning']} (default {b['default_size']:,}: "
              f"{groups:,} work-groups per kernel; {b['min_size']:,}..{b['max_size']:,}{multiple})")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from ..sim.store import CampaignStore
    from ..sim.upload import read_upload, validate_results
    from ..space.presets import load_space

    path = Path(args.results)
    if not path.is_file():
        raise GpudseError(f"{path}: no such file")
    max_bytes = int(args.max_mb * 1024 * 1024)
    with open(path, "rb") as fh:  # never more than the limit in memory
        df = read_upload(fh.read(max_bytes + 1), path.name, max_bytes=max_bytes)
    space = load_space(args.space)
    responses = [r.strip() for r in args.responses.split(",") if r.strip()] if args.responses else None
    rep = validate_results(df, space, responses, snap=args.snap, duplicates=args.duplicates)
    out = writable(args.output, (".csv", ".parquet", ".json"))
    for p in rep.problems:
        print(f"  {p.kind}: {p}", file=sys.stderr)
    write_table(rep.table, out, args.precision)
    failed_out = None
    if rep.failures is not None:  # kept beside the results, as explore's --failed reads them
        failed_out = out.with_name(f"{out.stem}_failed{out.suffix}")
        write_table(rep.failures, failed_out, args.precision)
    if args.store:
        with CampaignStore(args.store, name=args.campaign) as store:
            store.import_results({"backend": "upload", "source": path.name, "space": space.name}, rep.table,
                                 rep.responses, rep.failures)
    print(f"kept {rep.rows_kept:,} of {rep.rows_in:,} rows ({len(rep.problems)} problem(s) reported); wrote {out}",
          file=sys.stderr)
    if failed_out is not None:
        print(f"{rep.rows_failed:,} failed configuration{'' if rep.rows_failed == 1 else 's'} kept as failures in "
              f"{failed_out}: give it to explore "
              f"(--failed {failed_out}) so that no recommended design group holds one", file=sys.stderr)
    return 0


def cmd_equal_area(args: argparse.Namespace) -> int:
    from ..sim.analytical import FIG18, equal_area_sweep

    if args.bandwidth is None and args.regs_per_thread is None:
        combos = [(bw, r) for bw, r, _ in FIG18]
    else:
        combos = [(args.bandwidth if args.bandwidth is not None else 104.0,
                   args.regs_per_thread if args.regs_per_thread is not None else 30.0)]
    results = [equal_area_sweep(bw, r) for bw, r in combos]
    if args.json:
        docs = [r.to_dict() for r in results]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
        return 0
    print("equal-area model (001 §5.2): N_PE 128..216 step 8, n_threads 1,000..10,000")
    print(f"{'bandwidth':>10} {'regs/thread':>11} {'opt N_PE':>8} {'n_threads':>9} {'GFLOP/s':>8}  limited by "
          f"(performance / effective threads)")
    for r in results:
        print(f"{r.bandwidth_gbps:>7g} GB/s {r.regs_per_thread:>11g} {r.optimum_n_pe:>8} {r.n_threads:>9,} "
              f"{r.performance_gflops:>8.1f}  {r.limited_by} / {r.threads_limited_by}")
    return 0


def cmd_wfg(args: argparse.Namespace) -> int:
    from ..sim.wfg import WFGError, analyze, load_wfg

    graph = load_wfg(args.graph)
    try:
        res = analyze(graph)
    except WFGError as e:  # the analysis names the field; the file is the one given
        raise WFGError(f"{args.graph}: {e}") from None
    if args.json:
        print(json.dumps(res.to_dict(), indent=1))
        return 0
    for line in res.steps:
        print(line)
    print("arc weights after bandwidth (cycles): " + ", ".join(f"{k} {v:g}" for k, v in res.arc_weights.items()))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    si = sub.add_parser("simulate", help="run design points through a simulator backend, resumably (a campaign)")
    add_precision(si)
    si.add_argument("points", metavar="SAMPLES",
                    help="design points: .csv, .parquet or .json (e.g. from gpudse sample)")
    si.add_argument("--backend", choices=("analytical", "command", "mgpusim"), default="analytical",
                    help="analytical: the built-in simulator (default); command: an external simulator (--config); "
                    "mgpusim: MGPUSim timing simulation (points of the mgpusim preset; built with 'go' on first use)")
    si.add_argument("--kernel", default="matMul", choices=list(choices.KERNELS),
                    help="analytical backend: Table 4 application")
    add_mgpusim_arguments(si)
    si.add_argument("--config", metavar="SIM.toml", help="command backend: the simulator description on this machine")
    si.add_argument("--noise", type=float, default=0.01,
                    help="analytical: σ of log-normal measurement noise (default 0.01, 1 %%; 0 gives noise-free "
                         "results, which a model can interpolate)")
    si.add_argument("--seed", type=nonnegative_int, default=None)
    si.add_argument("--workers", type=count_arg, default=None,
                    help="worker processes (local pool or --scheduler local; default: all cores)")
    si.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler, e.g. tcp://head-node:8786, or "
                    "'local' for a Dask LocalCluster")
    si.add_argument("--store", metavar="campaign.db", help="SQLite campaign store (default: the output name with "
                    ".db); running again with the same store resumes")
    si.add_argument("--campaign", default="default", help="campaign name inside the store")
    si.add_argument("--workspace", metavar="ID", help="record the campaign in this dashboard workspace "
                    "($GPUDSE_HOME): its progress shows live there, and its results can become the workspace's")
    si.add_argument("--retries", type=nonnegative_int, default=2, help="retries of a failed run (default 2)")
    si.add_argument("--retry-failed", action="store_true",
                    help="give points that failed in an earlier run of this campaign new attempts")
    si.add_argument("-o", "--output", required=True, metavar="results.csv")
    si.set_defaults(func=cmd_simulate)

    mg = sub.add_parser("mgpusim", help="MGPUSim, the cycle-level AMD GPU simulator: build it (needs 'go'), list "
                        "its benchmarks")
    mg.add_argument("action", choices=("build", "benchmarks"),
                    help="build: compile the driver program once into the cache (prints its path); benchmarks: "
                    "the workloads and what their size means")
    mg.add_argument("--force", action="store_true", help="build: rebuild even if the binary exists")
    mg.add_argument("--json", action="store_true", help="benchmarks: as JSON")
    mg.set_defaults(func=cmd_mgpusim)

    im = sub.add_parser("import", help="validate uploaded simulation results against a design space")
    add_precision(im)
    im.add_argument("results", metavar="RESULTS", help=".csv, .parquet or .json")
    im.add_argument("--space", required=True, help="YAML/JSON file or preset")
    im.add_argument("--responses", metavar="a,b", help="response columns (default: numeric non-parameter columns)")
    im.add_argument("--snap", choices=("reject", "nearest"), default="reject",
                    help="values outside a parameter's set: reject the row or snap to the nearest value")
    im.add_argument("--duplicates", choices=("keep", "average", "reject"), default="keep")
    im.add_argument("--max-mb", type=positive_number, default=50.0, help="upload size limit in MB")
    im.add_argument("--store", metavar="campaign.db", help="also record the results as a finished campaign")
    im.add_argument("--campaign", default="import")
    im.add_argument("-o", "--output", required=True, metavar="clean.csv")
    im.set_defaults(func=cmd_import)
    ea = sub.add_parser("equal-area", help="001's equal-area model: optimum number of PEs (Fig. 18)")
    ea.add_argument("--bandwidth", type=float, metavar="GBPS", help="global memory bandwidth in GB/s")
    ea.add_argument("--regs-per-thread", type=float, metavar="R", help="registers per thread")
    ea.add_argument("--json", action="store_true",
                    help='print {"optimum_n_pe", "n_threads", "performance_gflops", "limited_by"}')
    ea.set_defaults(func=cmd_equal_area)

    wf = sub.add_parser("wfg", help="004's work flow graph model of a kernel (JSON/YAML graph + hardware)")
    wf.add_argument("graph", metavar="GRAPH", help="a JSON/YAML graph file, or a built-in graph by name: figure1 (004 "
                                                   "Fig. 1), loop_branch")
    wf.add_argument("--json", action="store_true")
    wf.set_defaults(func=cmd_wfg)
