"""``gpudse search``: a sequential search (fewer simulations to the best design, a good model, a front)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import choices
from ..errors import GpudseError
from ..fmt import fmt_number, response_unit
from .common import count_arg, nonnegative_int, writable

GOALS = ("min", "max", "accuracy", "pareto")


def cmd_search(args: argparse.Namespace) -> int:
    from ..search.study import check_settings

    if args.table and args.space:
        raise GpudseError("give a SPACE (with --kernel or --backend command) or --table FILE, not both")
    if not args.table and not args.space:
        raise GpudseError("give a SPACE to search (e.g. stargazer --kernel matMul) or --table FILE (a measured table)")
    if args.table is None and (args.params or args.status_column):
        raise GpudseError("--params and --status-column describe a --table; a SPACE names its own parameters")
    if args.goal == "pareto" and not (args.cost or args.cost_column):
        raise GpudseError("--goal pareto needs --cost EXPR, a cost computed from the parameters "
                          "(e.g. --cost 'simd * smp'), or --cost-column COL, a second measured result "
                          "(e.g. --cost-column wattage)")
    if args.cost and args.cost_column:
        raise GpudseError("give --cost EXPR (computed from the parameters) or --cost-column COL (measured), not both")
    if (args.cost or args.cost_column) and args.goal != "pareto":
        raise GpudseError(f"--{'cost' if args.cost else 'cost-column'} is for --goal pareto")
    given = [f"--{k}" for k in ("acquisition", "surrogate") if getattr(args, k) is not None]
    if given and args.goal not in ("min", "max"):
        raise GpudseError(f"{', '.join(given)}: for --goal min or max, which propose by a surrogate's acquisition; "
                          f"--goal {args.goal} proposes by its own rule (docs/search.md)")
    args.acquisition = args.acquisition or "ei"
    args.surrogate = args.surrogate or "auto"
    if args.objective and args.goal not in ("min", "max"):
        raise GpudseError("--objective is for --goal min or max (e.g. --goal min --objective 'cycles * (40 + simd)')")
    out = writable(args.output, (".csv", ".parquet", ".json")) if args.output else None
    batch = args.batch or args.workers or _cores()
    # every setting checked before the space, the table or a simulator is touched (one step, as the page's)
    check_settings(args.goal, args.budget, args.initial, batch, args.acquisition, seed=args.seed,
                   surrogate=args.surrogate, target=args.target, patience=args.patience)
    from ..sim.campaign import check_workers

    check_workers(args.workers, args.scheduler)
    space, digits, backend, response, source = _source(args)
    _check_cost_column(args, response, backend)
    from ..search.expressions import cost_function, objective_function

    cost = cost_function(args.cost, space) if args.cost else None
    objective = objective_function(args.objective, space, response) if args.objective else None
    settings = {"source": source, "goal": args.goal, "cost": args.cost or "", "response": response,
                "params": list(space.parameter_names), "budget": args.budget, "initial": args.initial,
                "seed": args.seed, "acquisition": args.acquisition}
    if args.objective:  # only when given: a study stored before objectives existed still resumes
        settings["objective"] = args.objective
    if args.cost_column:  # likewise
        settings["cost_column"] = args.cost_column
    settings["surrogate"] = args.surrogate  # (a study stored without it used the forest: runner.study_differences)
    res = _run(args, space, digits, backend, response, cost, settings, batch, objective)
    _report(args, res, space, response, out)
    return 0


def _cores() -> int:
    import os

    return os.cpu_count() or 1


def _source(args: argparse.Namespace):
    """(space, feasible digits or None, backend, response, a description for the study's settings)."""
    if args.table:
        from ..dataio import read_table
        from ..sim.lookup import LookupTable, parse_params

        frame = read_table(args.table)
        t = LookupTable.from_frame(frame, args.response, parse_params(args.params), args.status_column,
                                   source=str(args.table), extra=[args.cost_column] if args.cost_column else [])
        return t.space, t.digits, t.backend(), t.response, f"table {Path(args.table).name}"
    from ..sim.campaign import AnalyticalBackend, CommandBackend
    from ..space.presets import load_space

    space = load_space(args.space)
    if args.backend == "mgpusim":
        return _mgpusim_source(args, space)
    if args.benchmark or args.size or args.timeout or args.verify:
        raise GpudseError("--benchmark, --size, --timeout and --verify set up --backend mgpusim")
    if args.backend == "command":
        if not args.config:
            raise GpudseError("--backend command needs --config SIM.toml (the simulator's description on this machine)")
        backend = CommandBackend.from_file(args.config)
    else:
        backend = AnalyticalBackend(args.kernel)
    from ..search.runner import check_builtin

    check_builtin(space, backend)
    if args.backend == "command":
        if not args.response:
            raise GpudseError("--backend command: say which result column to optimise with --response COL")
        response = args.response
    else:
        response = args.response or "cycles"
        if response not in ("cycles", "cycles_trimmed", "ipc"):
            raise GpudseError(f"--response {response!r}: the built-in simulator reports cycles, cycles_trimmed and ipc")
    what = f"kernel {args.kernel}" if args.backend == "analytical" else f"command {Path(args.config).name}"
    return space, None, backend, response, f"space {space.name}, {what}"


def _check_cost_column(args: argparse.Namespace, response: str, backend) -> None:
    """--cost-column names a result the simulator reports, other than the response (a table's column was
    checked when the table was read)."""
    col = args.cost_column
    if not col or args.table:
        return
    if col == response:
        raise GpudseError(f"--cost-column {col!r} is the response; the front needs a second objective")
    if args.backend == "mgpusim":
        known = choices.MGPUSIM_SUITE_METRICS if getattr(backend, "suite", False) else choices.MGPUSIM_METRICS
        if col not in known:
            raise GpudseError(f"--cost-column {col!r}: MGPUSim reports e.g. dram_bandwidth_gbs, kernel_cycles, ipc, "
                              f"l2_hit_rate (gpudse mgpusim benchmarks lists them)")
    elif args.backend == "analytical" and col not in ("cycles", "cycles_trimmed", "ipc"):
        raise GpudseError(f"--cost-column {col!r}: the built-in simulator reports cycles, cycles_trimmed and ipc; a "
                          f"cost computed from the parameters is --cost EXPR")


def _mgpusim_source(args: argparse.Namespace, space):
    """The MGPUSim backend for a search of the mgpusim space: its response defaults to the kernels' execution
    time (``kernel_exec_s``; a suite's ``geomean_kernel_exec_s``), the run directories go beside the store."""
    import numpy as np

    from .sim_cmds import mgpusim_backend

    backend = mgpusim_backend(args, Path())  # the run directories are set beside the store (_run)
    backend.workdir = ""
    backend.check_points(space.parameter_names)
    every = np.minimum(np.arange(int(np.array(space.radices).max()))[:, None], np.array(space.radices)[None, :] - 1)
    for warning in backend.launch_warnings(space.frame(every)):
        print(f"warning: {warning}", file=sys.stderr)
    metrics = choices.MGPUSIM_SUITE_METRICS if backend.suite else choices.MGPUSIM_METRICS
    response = args.response or ("geomean_kernel_exec_s" if backend.suite else "kernel_exec_s")
    if response not in metrics:
        raise GpudseError(f"--response {response!r}: MGPUSim reports " + (
            "each benchmark's metrics prefixed by its name and geomean_<time> (e.g. matmul_kernel_exec_s, "
            "geomean_kernel_exec_s)" if backend.suite else "e.g. kernel_exec_s, kernel_time_s, kernel_cycles, ipc"))
    return space, None, backend, response, f"space {space.name}, mgpusim {backend.benchmark} (sizes " + ", ".join(
        str(n) for _, n in backend.workloads) + ")"


def _run(args, space, digits, backend, response, cost, settings, batch, objective=None):
    import tempfile

    from ..search.pool import make_pool
    from ..search.runner import CampaignEvaluator, StudyStore
    from ..search.study import run_search

    pool = make_pool(space, digits)
    study = StudyStore(args.workspace, settings) if args.workspace else None
    tmp = None
    try:
        trials, times = study.previous() if study else ([], [])
        if trials:
            from ..search.stored import check_designs

            check_designs(trials, space)  # a design the space does not have: damaged, before anything runs
        if trials:
            print(f"resuming the search in workspace {args.workspace[:6]}…: {len(trials):,} simulations done"
                  + (f"; --budget {args.budget:,} is spent already, so nothing more is simulated (give a larger "
                     f"--budget to go on)" if len(trials) >= args.budget else ""), file=sys.stderr)
        if study:
            store_path, prefix = study.store_path, f"{study.ws.id}/search"
        elif args.output:
            store_path, prefix = Path(args.output).with_suffix(".db"), "search"
        else:
            tmp = tempfile.TemporaryDirectory(prefix="gpudse-search-")
            store_path, prefix = Path(tmp.name) / "search.db", "search"
        line = _Line(args.budget, args.goal, response)
        if getattr(backend, "name", "") == "mgpusim" and not backend.workdir:  # run directories beside the store
            backend.workdir = str(Path(store_path).resolve()) + ".runs"

        def on_round(res):
            line(res)
            if study:
                study.save(res)

        # a rerun with the same -o finds its rounds in history.db: their simulations are read back, not run
        with CampaignEvaluator(backend, store_path, prefix, response, workers=args.workers,
                               scheduler=args.scheduler, cost_column=args.cost_column,
                               should_stop=study.should_stop if study else None) as evaluate:
            res = run_search(pool, evaluate, goal=args.goal, budget=args.budget, initial=args.initial, batch=batch,
                             seed=args.seed or 0, acquisition=args.acquisition, cost=cost, target=args.target,
                             patience=args.patience, response=response, trials=trials, rounds=times,
                             on_round=on_round,
                             should_stop=study.should_stop if study else None, objective=objective,
                             surrogate=args.surrogate, cost_column=args.cost_column)
        if evaluate.reused:
            print(f"read back {evaluate.reused:,} simulations an earlier run left in {store_path} (not simulated "
                  f"again; delete it to simulate everything anew)", file=sys.stderr)
        if study:
            study.save(res, partial=res.stopped == "stopped")
            study.end("stopped" if res.stopped == "stopped" else "finished")
        return res
    except BaseException as e:
        if study:
            study.end("failed" if isinstance(e, Exception) else "interrupted", str(e)[:500])
        raise
    finally:
        if tmp is not None:
            tmp.cleanup()


class _Line:
    def __init__(self, budget: int, goal: str, response: str):
        self.budget, self.goal, self.response = budget, goal, response

    def __call__(self, res) -> None:
        from ..search.timing import describe

        best = res.best()
        what = self.response if best is None or best.measured is None else "objective"
        unit = None if what == "objective" else response_unit(self.response)
        shown = (f", best {what} {fmt_number(best.value, unit, sig=6)}" if best is not None
                 and self.goal in ("min", "max") else "")
        took = f"; {describe(res.rounds[-1])}" if res.rounds else ""
        print(f"round {res.trials[-1].round}: {len(res.trials):,}/{self.budget:,} simulated, {res.failed:,} failed"
              f"{shown}{_round_intervals(res)}{took}", file=sys.stderr)


def _round_intervals(res) -> str:
    """``; 4 of 5 inside their 95 % intervals (41 of 47 so far), e.g. predicted 1.29 [0.617, 3.93] → 1.65``:
    the last round's proposals' calibrated intervals against what they simulated at (.search.intervals)."""
    from ..model.coverage import coverage

    last = [t for t in res.trials if t.round == res.trials[-1].round and t.lower is not None]
    if not last:
        return ""
    unit = response_unit(res.response) if all(t.measured is None for t in last) else None
    k, n = coverage(last)
    k_all, n_all = coverage(res.trials)
    t = last[0]
    got = fmt_number(t.value, unit, sig=3) if t.status == "ok" else "failed"
    return (f"; {k:,} of {n:,} inside their {100 * t.level:g} % intervals ({k_all:,} of {n_all:,} so far), e.g. "
            f"predicted {fmt_number(t.predicted, unit, sig=3)} [{fmt_number(t.lower, unit, sig=3)}, "
            f"{fmt_number(t.upper, unit, sig=3)}] → {got}")


def _time_line(res) -> str:
    """The search's time on stderr: its rounds, and the propose, simulate and total seconds over them."""
    from ..fmt import fmt_count, fmt_duration

    doc = res.to_json(())["time"]
    return (f"time: {fmt_count(len(res.rounds), 'rounds')}, propose {fmt_duration(doc['propose_s'])} (fit "
            f"{fmt_duration(doc['fit_s'])}), simulate {fmt_duration(doc['simulate_s'])}, in all "
            f"{fmt_duration(doc['total_s'])}")


def _report(args, res, space, response, out) -> None:
    import pandas as pd

    from ..model.coverage import coverage_text, interval_fields

    params = list(space.parameter_names)
    rows = []
    for t in res.trials:
        row = {"trial": t.number, "round": t.round, "model_version": t.model_version, **t.design,
               response: t.value if t.measured is None else t.measured}
        if args.objective:
            row["objective"] = t.value
        row.update({"status": t.status, "error": t.error, "acquisition": t.acquisition, "surrogate": t.surrogate,
                    **interval_fields(t)})
        if t.cost is not None:
            row["cost"] = t.cost
        rows.append(row)
    if out is not None:
        from .common import write_table

        write_table(pd.DataFrame(rows), out)
        print(f"wrote the history of {len(rows):,} simulations to {out}", file=sys.stderr)
    if res.rounds:
        print(_time_line(res), file=sys.stderr)
    if args.json:
        print(json.dumps(res.to_json(params), indent=1, default=str))
        return
    best = res.best()
    unit = response_unit(response)  # (where the response's name says it: cycles)

    def num(v: float, u: str | None = None) -> str:  # the project's formatter, six significant digits
        return fmt_number(v, u, sig=6)

    print(f"goal {res.goal}: {len(res.trials):,} simulations ({res.failed:,} failed); stopped: {res.stopped}")
    covered = coverage_text(res.trials)
    if covered:
        print(f"intervals on proposals: {covered}")
    if res.goal == "pareto":
        print(f"front ({response} against {args.cost_column or 'cost'}):")
        for t in res.front():
            print(f"  cost {num(t.cost)}  {response} {num(t.value)}  "
                  + ", ".join(f"{k}={v}" for k, v in t.design.items()))
    elif best is not None and best.measured is not None:
        measured = num(best.measured, unit) if unit else f"{response} {num(best.measured)}"
        print(f"best objective: {num(best.value)} ({measured}) at "
              + ", ".join(f"{k}={v}" for k, v in best.design.items()))
    elif best is not None and res.goal != "accuracy":
        print(f"best {response}: {num(best.value)} at " + ", ".join(f"{k}={v}" for k, v in best.design.items()))


def cmd_space_infer(args: argparse.Namespace) -> int:
    from ..dataio import read_table
    from ..sim.lookup import infer_space, parse_params

    frame = read_table(args.table)
    params = parse_params(args.params)
    space = infer_space(frame, params, str(args.table), name=Path(args.table).stem)
    out = writable(args.output, (".yaml", ".yml", ".json"))
    from ..atomicfile import write_text
    from ..sim import table_constraints as tc

    held, size = tc.table_coverage(frame, space)
    found = tc.suggest_constraints(frame, space)
    together = tc.feasible_with(space, found)
    if out.suffix.lower() == ".json":  # JSON has no comments: the suggestions are printed only
        space.save(out)
    else:  # the suggestions under the space as comments, never applied
        write_text(out, space.to_yaml() + tc.commented_yaml(found, held, size, together))
    print(f"wrote {out}: {len(space.parameters)} parameters, {space.size:,} combinations "
          f"({len(frame):,} rows in the table)", file=sys.stderr)
    print(f"note: {tc.coverage_note(held, size)}"
          + (" (suggested below, and as comments in the file)" if found and out.suffix.lower() != ".json" else
             " (suggested below)" if found else ""), file=sys.stderr)
    for sug in found:
        print(f"  {sug.expr}    # excludes {sug.excludes:,}: {sug.why}", file=sys.stderr)
    if found and together is not None:
        print(f"  all of them together leave {together:,} combinations (the table holds {held:,})", file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    se = sub.add_parser("search", help="sequential search: simulate where a model says it pays, round by round")
    se.add_argument("space", nargs="?", metavar="SPACE", help="YAML/JSON file or preset, with --kernel (the built-in "
                    "simulator) or --backend command --config F")
    se.add_argument("--kernel", default="matMul", choices=list(choices.KERNELS), help="built-in simulator kernel")
    se.add_argument("--backend", choices=("analytical", "command", "mgpusim"), default="analytical",
                    help="analytical: the built-in simulator (--kernel); command: --config; mgpusim: MGPUSim on the "
                    "mgpusim preset (--benchmark, a suite minimises the geometric mean)")
    from .sim_cmds import add_mgpusim_arguments

    add_mgpusim_arguments(se)
    se.add_argument("--config", metavar="SIM.toml", help="command backend: the simulator description")
    se.add_argument("--table", metavar="FILE", help="a complete measured table as the simulator (lookup): missing "
                    "designs and rows whose status is not ok are failed simulations")
    se.add_argument("--response", metavar="COL",
                    help="the column to optimise (table default: time_ms; built-in: cycles)")
    se.add_argument("--params", metavar="a,b,…", help="--table: the parameter columns (default: every other column)")
    se.add_argument("--status-column", metavar="COL", help="--table: rows whose COL is not 'ok' failed (default: "
                    "'status' if present)")
    se.add_argument("--goal", required=True, choices=GOALS, help="min/max: the best design; accuracy: a model good "
                    "everywhere; pareto: the front of the response against --cost")
    se.add_argument("--cost", metavar="EXPR", help="pareto: a cost over the parameters, e.g. 'simd * smp'")
    se.add_argument("--cost-column", metavar="COL", help="pareto: the cost is a second measured result, e.g. a "
                    "table's wattage or an MGPUSim metric (with --table, only the table's rows are candidates)")
    se.add_argument("--objective", metavar="EXPR", help="min/max: optimise this expression of the response and "
                    "the parameters instead of the response, e.g. performance per area: "
                    "'cycles * (40 + simd + 4 * smp)'")
    se.add_argument("--budget", required=True, type=count_arg, metavar="N",
                    help="simulations in all (failed ones count)")
    se.add_argument("--initial", type=count_arg, metavar="N0", help="space-filling simulations first (default 10)")
    se.add_argument("--batch", type=count_arg, metavar="B", help="proposals per round (default: the workers)")
    se.add_argument("--seed", type=nonnegative_int, default=0)
    se.add_argument("--acquisition", choices=("ei", "lcb"), default=None, help="min/max: expected improvement "
                    "(default) or a lower confidence bound")
    se.add_argument("--surrogate", choices=("auto", "forest"), default=None, help="min/max: auto (default): the "
                    "stepwise model proposes half of each batch while its cross-validated error is significantly "
                    "below the random forest's, which proposes the rest; forest: the forest alone (docs/search.md)")
    se.add_argument("--target", type=float, metavar="Y", help="stop once a design reaches this value")
    se.add_argument("--patience", type=count_arg, metavar="R", help="stop after R rounds without improvement")
    se.add_argument("--workers", type=count_arg, default=None, help="simulator processes (default: all cores)")
    se.add_argument("--scheduler", metavar="ADDR", help="a Dask scheduler address, or 'local'")
    se.add_argument("--workspace", metavar="ID", help="store the study in this workspace after every round "
                    "(a reload finds it, Stop ends it, the same command resumes it)")
    se.add_argument("-o", "--output", metavar="history.csv", help="every simulation: round, model version, "
                    "acquisition, design, value or failure, the value predicted before simulating and its 95 %% "
                    "interval; the rounds' campaigns are kept in history.db beside it, "
                    "which the same command again reads back instead of simulating")
    se.add_argument("--json", action="store_true", help='print {"goal", "evaluated", "failed", "best", "stopped", '
                    '"history", "time", "intervals"} (time: each round\'s propose, fit, simulate and total seconds, '
                    'and their sums; intervals: how many simulated values fell inside their 95 %% intervals)')
    se.set_defaults(func=cmd_search)


def add_space_parsers(ssub: argparse._SubParsersAction) -> None:
    inf = ssub.add_parser("infer", help="a design space from a measured table's distinct parameter values")
    inf.add_argument("table", metavar="FILE", help=".csv, .parquet or .json")
    inf.add_argument("--params", required=True, metavar="a,b,…", help="the parameter columns")
    inf.add_argument("-o", "--output", required=True, metavar="space.yaml")
    inf.set_defaults(func=cmd_space_infer)
