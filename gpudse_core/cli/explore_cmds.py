"""``gpudse explore``: the best designs of a whole space (one row per group the model cannot tell
apart, with a prediction interval) and its Pareto front."""

from __future__ import annotations

import argparse
import json
import sys
import time

from .. import fmt
from ..errors import GpudseError
from .common import Progress, add_precision, count_arg, nonnegative_int, writable, write_table


def cmd_explore(args: argparse.Namespace) -> int:
    from ..explore.designs import best_designs
    from ..model.registry import load_model
    from ..space.presets import load_space

    model = load_model(args.model)  # any kind: additive models are scanned exactly, others streamed
    space = load_space(args.space)
    out = writable(args.output, (".csv", ".parquet", ".json")) if args.output else None
    if args.top == 0 and not args.pareto:  # --top 0 --pareto COST: the front alone
        raise GpudseError("--top 0 asks for no designs; give --top K or --pareto COST")
    last = [0.0]
    line = Progress()

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if not args.json and (now - last[0] > 0.5 or done == total):
            last[0] = now
            line(f"{done:,} of {total:,} cells ({100 * done / max(total, 1):.0f} %)")

    scheduler = args.scheduler or ("local" if args.workers else None)
    results = None
    if args.results or args.exclude_simulated:
        from ..dataio import read_table

        results = read_table(args.exclude_simulated or args.results)
    if args.failed:  # failed configurations (gpudse import's *_failed.csv): their groups are never recommended
        import pandas as pd

        from ..dataio import read_table

        failed = read_table(args.failed)
        if "status" not in failed.columns:
            raise GpudseError(f"{args.failed}: no status column; give the failed configurations gpudse import "
                              f"wrote (parameters, status, error)")
        results = failed if results is None else pd.concat([results, failed], ignore_index=True)
    level = None if args.no_interval else args.level
    found = best_designs(model, space, top=args.top, maximize=args.maximize, pareto=args.pareto, where=args.where,
                         scheduler=scheduler, workers=args.workers, progress=progress, results=results,
                         exclude_simulated=bool(args.exclude_simulated), level=level, rank=args.rank)
    res = found.result
    line.end()
    unit = fmt.response_unit(model.response)
    if out is not None:
        if args.top:
            write_table(found.rows, out, args.precision)
        if res.pareto is not None:
            front = out.with_name(out.stem + "_pareto" + out.suffix)
            write_table(res.pareto, front, args.precision)
            print(f"wrote the Pareto front to {front}", file=sys.stderr)
    notes = list(dict.fromkeys(found.notes))
    if args.json:
        doc = res.to_json_dict(space.parameter_names)
        doc["best"] = found.to_json_rows(space.parameter_names)
        doc.update(used=found.used, level=found.level, left_out=found.left_out, notes=notes)
        print(json.dumps(doc, indent=1, default=str))
    else:
        from ..fmt import fmt_count, fmt_duration, text_table

        feasible = fmt_count(res.feasible) if res.feasible is not None else "?"
        print(f"{space.name}: {fmt_count(res.space_size)} points, {feasible} feasible; method {res.method}: "
              f"{fmt_count(res.evaluated)} evaluated in {fmt_duration(res.elapsed)}")
        goal = "highest" if args.maximize else "lowest"
        if args.top:  # --top 0 --pareto: the front alone
            print(f"the {len(found.rows)} {goal} distinct predictions of {model.response}; the model reads "
                  f"{', '.join(found.used)}; each row stands for every design with its prediction ('designs'; "
                  f"'any': every value of the parameter gives it) and shows the design nearest a simulated one, "
                  f"then nearest the middle of the space; 'distinguishable from best': its interval lies apart "
                  f"from the best row's:")
            print(found.display(space, model.response, unit).to_string(index=False))
            if found.left_out:
                what = "simulated or failed" if args.exclude_simulated else "failed"
                print(f"left out: {found.left_out} group(s) with a {what} design")
        if res.pareto is not None:
            print(f"Pareto front against {args.pareto} ({len(res.pareto)} designs):")
            front = res.pareto.drop(columns=[c for c in ("bounded", "design_index") if c in res.pareto.columns])
            print(text_table(front, {"predicted": unit} if unit else {}))
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    if out is not None and args.top:
        print(f"wrote {len(found.rows)} rows (one per prediction, its shown design) to {out}", file=sys.stderr)
    return 0


def _level(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0.5 <= v < 1:
        raise argparse.ArgumentTypeError(f"--level {text!r}: give a number in [0.5, 1), e.g. 0.95")
    return v


def add_parsers(sub: argparse._SubParsersAction) -> None:
    ex = sub.add_parser("explore",
                        help="the best designs of a whole space by a fitted model, exactly (and a Pareto front)",
                        description="Find the designs a fitted model predicts best over a whole design space, "
                                    "exactly as predicting every feasible point would, without visiting every "
                                    "point when the model is additive.")
    add_precision(ex)
    ex.add_argument("model", metavar="MODEL.json", help="a model written by gpudse fit")
    ex.add_argument("space", metavar="SPACE", help="design-space file (YAML/JSON) or preset name")
    ex.add_argument("--top", type=nonnegative_int, default=20, metavar="K",
                    help="how many best designs (default 20; 0 with --pareto: the front alone)")
    ex.add_argument("--maximize", action="store_true", help="best = highest prediction (e.g. IPC); default lowest")
    ex.add_argument("--pareto", metavar="COST", help="also the Pareto front against this cost: a parameter or an "
                                                     "expression such as 'simd * blk' (lower is better)")
    ex.add_argument("--where", metavar="EXPR", help="restrict the space, e.g. 'simd * blk <= 64' (the constraint "
                                                    "language)")
    ex.add_argument("--scheduler", metavar="ADDRESS|local", help="scan on a Dask cluster: a scheduler address "
                                                                 "or 'local'")
    ex.add_argument("--workers", type=count_arg, default=None,
                    help="processes of a local Dask cluster (implies --scheduler local)")
    ex.add_argument("-o", "--output", metavar="best.csv", help="write the best designs (.csv, .parquet, .json); "
                                                               "the front goes to best_pareto.csv")
    ex.add_argument("--results", metavar="RESULTS.csv", help="mark the rows whose designs were simulated (their "
                                                             "count and mean measured response); groups holding a "
                                                             "failed design (missing response, status not ok) are "
                                                             "left out; the rows the model was fitted on also "
                                                             "calibrate the intervals (5 refits)")
    ex.add_argument("--exclude-simulated", metavar="RESULTS.csv", help="like --results, and leave out every group "
                                                                       "with a simulated design: what to simulate next")
    ex.add_argument("--failed", metavar="FAILED.csv", help="configurations that failed (the *_failed.csv gpudse "
                                                           "import writes): groups holding one are left out")
    ex.add_argument("--level", type=_level, default=0.95, help="prediction interval level (default 0.95)")
    ex.add_argument("--no-interval", action="store_true", help="no prediction intervals (a calibrated interval "
                                                               "refits the model 5 times)")
    ex.add_argument("--rank", choices=("guarded", "equation"), default="guarded",
                    help="order the best rows by the prediction they show (default), or by the model's equation "
                         "before the neighbour envelope holds it (for comparison; docs/cli.md)")
    ex.add_argument("--json", action="store_true", help='print {"space_size", "evaluated", "method", "best": [...]}; '
                                                        'each best row: parameters (its shown design), predicted, '
                                                        'lower, upper, distinguishable, designs, simulated, '
                                                        'measured, any, values')
    ex.set_defaults(func=cmd_explore)
