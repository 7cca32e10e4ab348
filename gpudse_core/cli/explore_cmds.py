"""``gpudse explore``: the best designs of a whole space and its Pareto front (issue 12)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..errors import GpudseError
from .common import Progress, add_precision, count_arg, nonnegative_int, writable, write_table


def cmd_explore(args: argparse.Namespace) -> int:
    from ..explore.best import find_best
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
    res = find_best(model, space, top=args.top, maximize=args.maximize, pareto=args.pareto, where=args.where,
                    scheduler=scheduler, workers=args.workers, progress=progress)
    line.end()
    if out is not None:
        if args.top:
            write_table(res.best, out, args.precision)
        if res.pareto is not None:
            front = out.with_name(out.stem + "_pareto" + out.suffix)
            write_table(res.pareto, front, args.precision)
            print(f"wrote the Pareto front to {front}", file=sys.stderr)
    if args.json:
        print(json.dumps(res.to_json_dict(space.parameter_names), indent=1, default=str))
    else:
        feasible = f"{res.feasible:,}" if res.feasible is not None else "?"
        print(f"{space.name}: {res.space_size:,} points, {feasible} feasible; method {res.method}: "
              f"{res.evaluated:,} evaluated in {res.elapsed:.2f} s")
        goal = "highest" if args.maximize else "lowest"
        if args.top:  # --top 0 --pareto: the front alone
            print(f"the {len(res.best)} designs with the {goal} predicted {model.response}:")
            print(res.best.to_string(index=False))
        if res.pareto is not None:
            print(f"Pareto front against {args.pareto} ({len(res.pareto)} designs):")
            print(res.pareto.to_string(index=False))
        for note in res.notes:
            print(f"note: {note}", file=sys.stderr)
    if out is not None and args.top:
        print(f"wrote {len(res.best)} designs to {out}", file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    ex = sub.add_parser("explore", help="the best designs of a whole space by a fitted model, exactly (and a Pareto front)",
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
    ex.add_argument("--json", action="store_true", help='print {"space_size", "evaluated", "method", "best": [...]}')
    ex.set_defaults(func=cmd_explore)
