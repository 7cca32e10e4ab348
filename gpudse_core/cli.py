"""The ``gpudse`` command line (also ``python -m gpudse_core``): scripting on clusters.

It calls the same functions as the dashboard pages. User errors print one line
``gpudse: error: …`` on stderr and exit with status 2; no traceback.

    gpudse presets
    gpudse space show SPACE [--json]
    gpudse space export SPACE -o FILE.yaml|.json
    gpudse sample SPACE (-n N | --fraction F | --per-dim-fraction F) [--per-dim-mode count|subgrid]
                  [--seed S] [--method uniform|lhs] [--with-index] -o samples.csv|.parquet|.json
    gpudse fit DATA --response COL [--params a,b] [--transform none|log|sqrt] [--theta T] [--phi P]
               [--criterion adjr2|aic|bic|ftest] [--knots K] [--knot-placement even|quantile]
               [--interactions full|restricted] [--max-terms N] [--force TERM ...] -o model.json [--json]
    gpudse predict MODEL.json POINTS -o predictions.csv
    gpudse validate DATA --response COL [--transform …] [--train-sizes 30,60,…] [--test-size 200]
                    [--repeats 5] [--models stepwise,fixed,regional,forest,boosting,hybrid] [--json]
    gpudse simulate SAMPLES --backend analytical|command [--kernel NAME] [--config SIM.toml]
                    [--workers W | --scheduler ADDRESS] [--store campaign.db] [--retries R] -o results.csv
    gpudse import RESULTS --space SPACE [--responses a,b] [--snap reject|nearest]
                  [--duplicates keep|average|reject] [--store campaign.db] -o clean.csv
    gpudse pixels HEATMAP --sms N --mem M [--k K] [--division fine|coarse] [--distribution uniform|lintmp|exptmp]
                  [--block 32x2] [--chunk 32x2] [--percent P | --bounds 0.3,0.6] [--clusters 5] [--seed S]
                  [--config GPU.config] -o OUTDIR [--json]
    gpudse combine LOG... --fractions P1,P2,... [--aggregate metric=sum|mean|hmean ...] [--json]
    gpudse equal-area [--bandwidth GBPS] [--regs-per-thread R] [--json]
    gpudse wfg GRAPH.json|.yaml [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from . import __version__
from .errors import GpudseError
from .presets import PRESETS, load_preset, load_space
from .sampling import METHODS, PER_DIM_MODES, sample
from .space import DesignSpace, Group
from .values import format_values_text


def _space_text(space: DesignSpace) -> str:
    lines = [f"{space.name}: {space.description}".rstrip(": ")]
    rows = [("#", "name", "label", "unit", "kind", "count", "values")]
    for i, d in enumerate(space.dimensions, 1):
        members = d.parameters
        for j, p in enumerate(members):
            num = str(i) if j == 0 else ""
            grp = f"{d.name}." if isinstance(d, Group) and len(members) > 1 else ""
            rows.append((num, grp + p.name, p.display, p.unit, p.kind, str(p.size), format_values_text(p.values)))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]) - 1)]
    for r in rows:
        vals = r[-1] if len(r[-1]) <= 60 else r[-1][:57] + "..."
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + vals)
    lines.append(f"size: {space.size:,} design points ({len(space.dimensions)} dimensions, "
                 f"{len(space.parameters)} parameters)")
    if space.constraints:
        fs = space.feasible_size
        feas = f"{fs:,}" if fs is not None else f"about {space.feasible_size_estimate:,.0f} (estimated)"
        lines.append(f"feasible: {feas} design points")
        lines.append("constraints:")
        lines += [f"  {c.expr}" + (f"   # {c.description}" if c.description else "") for c in space.constraints]
    if space.fixed:
        lines.append("fixed baseline:")
        for f in space.fixed:
            lines.append(f"  {f.display} = {f.value}{(' ' + f.unit) if f.unit else ''}")
    return "\n".join(lines)


def cmd_presets(args: argparse.Namespace) -> int:
    for name in PRESETS:
        s = load_preset(name)
        print(f"{name:12s} {s.size:>15,} points  {s.description}")
    return 0


def cmd_space_show(args: argparse.Namespace) -> int:
    space = load_space(args.space)
    if args.json:
        print(json.dumps(space.summary(), indent=2, ensure_ascii=False))
    else:
        print(_space_text(space))
    return 0


def cmd_space_export(args: argparse.Namespace) -> int:
    space = load_space(args.space)
    out = _writable(args.output)
    space.save(out)
    print(f"wrote {out} ({space.size:,} points)", file=sys.stderr)
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    space = load_space(args.space)
    out = _writable(args.output)
    result = sample(space, args.n, fraction=args.fraction, per_dim_fraction=args.per_dim_fraction,
                    per_dim_mode=args.per_dim_mode, seed=args.seed, method=args.method)
    result.save(out, with_index=args.with_index)
    share = len(result) / (result.feasible_size or space.size)
    extra = f"; {result.replaced} LHS rows re-drawn" if result.replaced else ""
    print(f"wrote {len(result):,} design points ({share:.4%} of the space, method {args.method}, "
          f"seed {args.seed}) to {out}{extra}", file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _trace_line(step) -> str:
    """One Table 1 row: the best candidates with their scores, the choice, and the model after it."""
    metric = {"r2": "R²", "adj_r2": "adj R²", "aic": "AIC", "bic": "BIC", "p_value": "p"}[step.metric]
    desc = step.metric in ("r2", "adj_r2")
    ranked = sorted(step.candidates.items(), key=lambda kv: -kv[1] if desc else kv[1])
    shown = "  ".join(f"{k} {v:.4g}" for k, v in ranked[:6]) + ("  …" if len(ranked) > 6 else "")
    mark = "added" if step.accepted else "rejected"
    chosen = f"-> {step.chosen} {mark}" if step.chosen else "-> nothing to add"
    if step.gain is not None:
        chosen += f" (gain {step.gain:.4g})"
    return (f"{step.step:>3} {step.kind:<11} [{metric}] {shown}\n      {chosen};  model: "
            f"{' + '.join(step.terms) or '(empty)'}  R² {step.r2:.4f}  adj R² {step.adj_r2:.4f}")


def cmd_fit(args: argparse.Namespace) -> int:
    from .dataio import read_table
    from .stepwise import fit_stepwise

    data = read_table(args.data)
    out = _writable(args.output, (".json",))
    params = [p.strip() for p in args.params.split(",") if p.strip()] if args.params else None
    echo = (lambda s: None) if args.json else (lambda s: print(_trace_line(s), flush=True))
    model = fit_stepwise(data, args.response, callback=echo, params=params, transform=args.transform,
                         theta=args.theta, phi=args.phi, criterion=args.criterion, knots=args.knots,
                         knot_placement=args.knot_placement, interactions=args.interactions,
                         max_terms=args.max_terms, forced=args.force or (), compare=args.compare)
    model.save(out)
    if args.json:
        print(json.dumps({"terms": model.terms, "r2": model.r2, "adj_r2": model.adj_r2, "n": model.n,
                          "trace": model.trace}, indent=1))
    else:
        print(f"final model ({model.n} rows): {' + '.join(model.terms)}; R² {model.r2:.4f}, adj R² {model.adj_r2:.4f}")
        print(model.equation(digits=5))
    print(f"wrote {out}", file=sys.stderr)
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from .dataio import read_table
    from .stepwise import StepwiseModel

    model = StepwiseModel.load(args.model)
    points = read_table(args.points)
    out = _writable(args.output, (".csv", ".parquet", ".json"))
    result = points.assign(predicted=model.predict(points))
    _write_table(result, out)
    print(f"wrote {len(result):,} predictions of {model.response} to {out}", file=sys.stderr)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .dataio import read_table
    from .validation import validate

    data = read_table(args.data)
    try:
        sizes = [int(x) for x in args.train_sizes.split(",") if x.strip()]
    except ValueError:
        raise GpudseError(f"--train-sizes {args.train_sizes!r}: give whole numbers separated by commas, e.g. 30,60,90")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    params = [p.strip() for p in args.params.split(",") if p.strip()] if args.params else None
    fixed = [t.strip() for t in args.fixed_terms.split(",") if t.strip()] if args.fixed_terms else None
    total = len(sizes) * args.repeats

    def progress(done: int, total_: int, message: str) -> None:
        if not args.json:
            print(f"\r  {done}/{total_} fits done ({message})", end="", file=sys.stderr, flush=True)

    res = validate(data, args.response, params, train_sizes=sizes, test_size=args.test_size, repeats=args.repeats,
                   models=models, transform=args.transform, seed=args.seed, fixed_terms=fixed,
                   app_column=args.app_column, region=args.region, progress=progress, theta=args.theta, phi=args.phi)
    if args.json:
        print(json.dumps(res.to_json_dict(), indent=1))
        return 0
    print(file=sys.stderr)
    table = res.summary()
    for col in ("mean", "median", "p75", "p98", "max", "min", "q1", "q3"):
        table[col] = (100 * table[col]).map(lambda v: f"{v:.2f}")
    print(f"relative error (%) of {args.response}, {args.test_size} test points x {args.repeats} repeats "
          f"({total} fits per model)")
    print(table.rename(columns={"train_size": "N"}).to_string(index=False))
    for note in res.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    from .campaign import AnalyticalBackend, CommandBackend, points_spec, run_campaign
    from .dataio import read_table
    from .store import CampaignStore

    points = read_table(args.points)
    out = _writable(args.output, (".csv", ".parquet", ".json"))
    if args.backend == "command":
        if not args.config:
            raise GpudseError("--backend command needs --config SIM.toml (the simulator's description on this machine)")
        backend = CommandBackend.from_file(args.config)
    else:
        backend = AnalyticalBackend(args.kernel, noise=args.noise, seed=args.seed or 0)
    store_path = Path(args.store) if args.store else out.with_suffix(".db")
    with CampaignStore(store_path, name=args.campaign, max_attempts=args.retries + 1) as store:
        state = store.open({**backend.spec(), **points_spec(points)}, points)
        before = store.progress()
        print(f"{state} campaign {args.campaign!r} in {store_path}: {before.done:,} of {before.total:,} points done",
              file=sys.stderr)

        def bar(prog, rate: float) -> None:
            width = 30
            filled = int(width * prog.done / max(prog.total, 1))
            print(f"\r  [{'#' * filled}{'.' * (width - filled)}] {prog.done:,}/{prog.total:,} done, "
                  f"{prog.failed:,} failed, {prog.remaining:,} remaining, {rate:,.0f} points/s   ",
                  end="", file=sys.stderr, flush=True)

        final = run_campaign(store, backend, workers=args.workers, scheduler=args.scheduler, progress=bar)
        print(file=sys.stderr)
        table = store.table()
        keep = [c for c in table.columns if c not in ("status", "attempts", "error")]
        table = table[keep] if len(table) else points.iloc[0:0]
        _write_table(table, out)
        print(f"wrote {len(table):,} results to {out}", file=sys.stderr)
        if final.failed:
            fails = store.failures()
            print(f"gpudse: {final.failed} point(s) failed after {args.retries + 1} attempt(s); first: point "
                  f"{fails.idx.iloc[0]}: {fails.error.iloc[0]}", file=sys.stderr)
            return 1
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from .store import CampaignStore
    from .upload import read_upload, validate_results

    path = Path(args.results)
    if not path.is_file():
        raise GpudseError(f"{path}: no such file")
    df = read_upload(path.read_bytes(), path.name, max_bytes=int(args.max_mb * 1024 * 1024))
    space = load_space(args.space)
    responses = [r.strip() for r in args.responses.split(",") if r.strip()] if args.responses else None
    rep = validate_results(df, space, responses, snap=args.snap, duplicates=args.duplicates)
    out = _writable(args.output, (".csv", ".parquet", ".json"))
    for p in rep.problems:
        print(f"  {p.kind}: {p}", file=sys.stderr)
    _write_table(rep.table, out)
    if args.store:
        with CampaignStore(args.store, name=args.campaign) as store:
            store.import_results({"backend": "upload", "source": path.name, "space": space.name}, rep.table,
                                 rep.responses)
    print(f"kept {rep.rows_kept:,} of {rep.rows_in:,} rows ({len(rep.problems)} problem(s) reported); wrote {out}",
          file=sys.stderr)
    return 0


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write a size as WIDTHxHEIGHT, e.g. 32x2") from None
    return w, h


def cmd_pixels(args: argparse.Namespace) -> int:
    from .gpgpusim import GpgpuSimConfig
    from .raytrace.heatmap import read_heatmap
    from .raytrace.zatel import counts_from_config, downscale_config, plan

    hm = read_heatmap(args.heatmap)
    cfg = GpgpuSimConfig.load(args.config) if args.config else None
    if args.sms is None or args.mem is None:
        if cfg is None:
            raise GpudseError("give --sms and --mem (the GPU's SM and memory-partition counts) or --config GPU.config")
        counts = counts_from_config(cfg)
    else:
        counts = {"sms": args.sms, "mem": args.mem}
    try:
        lo, hi = (float(x) for x in args.bounds.split(","))
    except ValueError:
        raise GpudseError(f"--bounds {args.bounds!r}: give two numbers, e.g. 0.3,0.6") from None
    zp = plan(hm, counts, k_force=args.k, clusters=args.clusters, division=args.division, chunk=args.chunk,
              block=args.block, distribution=args.distribution, bounds=(lo, hi), percent=args.percent,
              seed=args.seed)
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise GpudseError(f"{out} exists and is not a folder")
    zp.write(out)
    if cfg is not None:
        downscale_config(cfg, zp.downscale.k).save(out / f"downscaled_k{zp.downscale.k}.config")
    s = zp.summary()
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    for note in s["notes"]:
        print(f"note: {note}", file=sys.stderr)
    scaled = ", ".join(f"{n} {v} -> {s['downscaled'][n]}" for n, v in s["components"].items())
    print(f"K = {s['K']} ({scaled}), {args.division} division, {args.distribution} distribution")
    print(f"{'group':>5} {'pixels':>9} {'coldness':>8} {'P':>6} {'traced':>7}")
    for g in s["groups"]:
        print(f"{g['group']:>5} {g['pixels']:>9,} {g['mean_coldness']:>8.3f} {g['fraction_target']:>6.3f} "
              f"{g['fraction_traced']:>7.3f}")
    sc = s["self_check"]
    sp = s["predicted_speedup"]
    print(f"traced {s['traced_percent']:.1f}% of the frame; eq. 4 speedup {sp:.2f}x"
          + ("" if s["speedup_in_fitted_range"] else " (eq. 4 was fitted for 10% or more)")
          + f"; self-check: estimated frame cost off by {100 * sc['relative_error']:.2f}%")
    print(f"wrote {out}/group_*.coords, summary.json, overlay.png", file=sys.stderr)
    return 0


def cmd_combine(args: argparse.Namespace) -> int:
    from .raytrace.zatel import combine_logs

    try:
        fractions = [float(x) for x in args.fractions.split(",") if x.strip()]
    except ValueError:
        raise GpudseError(f"--fractions {args.fractions!r}: give one number per log, e.g. 0.4,0.45,0.5,0.42") from None
    agg = {}
    for item in args.aggregate or []:
        metric, _, how = item.partition("=")
        agg[metric.strip()] = how.strip()
    res = combine_logs(args.logs, fractions, agg)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        for k, v in res.items():
            print(f"{k:28s} {v:,.6g}")
    return 0


def cmd_equal_area(args: argparse.Namespace) -> int:
    from .analytical import FIG18, equal_area_sweep

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
    from .wfg import analyze, load_wfg

    res = analyze(load_wfg(args.graph))
    if args.json:
        print(json.dumps(res.to_dict(), indent=1))
        return 0
    for line in res.steps:
        print(line)
    print("arc weights after bandwidth (cycles): " + ", ".join(f"{k} {v:g}" for k, v in res.arc_weights.items()))
    return 0


def _write_table(table: Any, out: Path) -> None:
    """Write a DataFrame as CSV, Parquet or JSON records according to the file's suffix."""
    if out.suffix.lower() == ".parquet":
        table.to_parquet(out, index=False)
    elif out.suffix.lower() == ".json":
        out.write_text(table.to_json(orient="records"), encoding="utf-8")
    else:
        table.to_csv(out, index=False)


def _writable(path: str, suffixes: tuple[str, ...] = (".csv", ".parquet", ".json", ".yaml", ".yml")) -> Path:
    p = Path(path)
    if p.is_dir():
        raise GpudseError(f"{p} is a directory; give a file name such as {p / 'samples.csv'}")
    if not p.parent.exists():
        raise GpudseError(f"{p}: the folder {p.parent} does not exist; create it first")
    if p.suffix.lower() not in suffixes:
        raise GpudseError(f"{p}: unknown file type {p.suffix!r}; use {', '.join(suffixes)}")
    return p


def _knots(text: str) -> int | dict:
    """``4`` or ``4,simd=3,blk=5``: a default and per-parameter numbers of knots."""
    default, per = 4, {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, value = part.rpartition("=")
        try:
            k = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r}: give a number of knots, e.g. 4 or simd=3") from None
        if name:
            per[name.strip()] = k
        else:
            default = k
    return {"__default__": default, **per} if per else default


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return v


def _fraction(text: str) -> float:
    try:
        v = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (e.g. 0.001 or 0.1%)") from None
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpudse", description="Regression-based GPU design space exploration.")
    p.add_argument("--version", action="version", version=f"gpudse {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    pr = sub.add_parser("presets", help="list the built-in design spaces")
    pr.set_defaults(func=cmd_presets)

    sp = sub.add_parser("space", help="inspect or export a design space")
    ssub = sp.add_subparsers(dest="space_command", required=True, metavar="ACTION")
    show = ssub.add_parser("show", help="parameters, value counts and exact size")
    show.add_argument("space", metavar="SPACE", help="YAML/JSON file or preset (" + ", ".join(PRESETS) + ")")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=cmd_space_show)
    exp = ssub.add_parser("export", help="write a space (e.g. a preset) to a YAML/JSON file to edit")
    exp.add_argument("space", metavar="SPACE")
    exp.add_argument("-o", "--output", required=True, metavar="FILE")
    exp.set_defaults(func=cmd_space_export)

    sa = sub.add_parser("sample", help="sample design points uniformly at random (Stargazer §5.1)")
    sa.add_argument("space", metavar="SPACE", help="YAML/JSON file or preset")
    how = sa.add_mutually_exclusive_group(required=True)
    how.add_argument("-n", type=_positive_int, metavar="N", help="number of points")
    how.add_argument("--fraction", type=_fraction, metavar="F", help="fraction of the whole space (0.0003 or 0.03%%)")
    how.add_argument("--per-dim-fraction", type=_fraction, metavar="F", help="fraction of each dimension")
    sa.add_argument("--per-dim-mode", choices=PER_DIM_MODES, default="count",
                    help="count: F of each dimension sets the number of points (default); subgrid: a random sub-grid")
    sa.add_argument("--seed", type=_positive_int, default=None, help="random seed (reproducible output)")
    sa.add_argument("--method", choices=METHODS, default="uniform")
    sa.add_argument("--with-index", action="store_true", help="add a design_index column")
    sa.add_argument("-o", "--output", required=True, metavar="FILE", help="samples.csv, .parquet or .json")
    sa.set_defaults(func=cmd_sample)

    from .splines import PLACEMENTS
    from .stepwise import CRITERIA, INTERACTION_FORMS, TRANSFORMS

    fi = sub.add_parser("fit", help="Stargazer stepwise spline regression (Algorithm 1), printing the trace")
    fi.add_argument("data", metavar="DATA", help="results table: .csv, .parquet or .json")
    fi.add_argument("--response", required=True, metavar="COL", help="the column to model (e.g. cycles)")
    fi.add_argument("--params", metavar="a,b,...", help="parameter columns (default: every other column)")
    fi.add_argument("--transform", choices=TRANSFORMS, default="none")
    fi.add_argument("--theta", type=float, default=0.01, help="θ: gain needed to add a parameter (default 0.01)")
    fi.add_argument("--phi", type=float, default=0.01, help="φ: gain needed to add an interaction (default 0.01)")
    fi.add_argument("--criterion", choices=CRITERIA, default="adjr2")
    fi.add_argument("--compare", choices=("r2", "adj_r2"), default="r2",
                    help="adjr2 criterion: compare the candidate's adjusted R² with the model's R² "
                         "(Algorithm 1) or with its adjusted R²")
    fi.add_argument("--knots", type=_knots, default=4, metavar="K[,param=K,...]",
                    help="knots per spline (Harrell's k, boundaries included), e.g. 4 or 4,simd=3,blk=5")
    fi.add_argument("--knot-placement", choices=PLACEMENTS, default="even")
    fi.add_argument("--interactions", choices=INTERACTION_FORMS, default="restricted")
    fi.add_argument("--max-terms", type=_positive_int, default=None)
    fi.add_argument("--force", action="append", metavar="TERM", help="start with this term (repeatable), e.g. simd:blk")
    fi.add_argument("-o", "--output", required=True, metavar="model.json")
    fi.add_argument("--json", action="store_true", help="print terms, R², adjusted R² and the trace as JSON")
    fi.set_defaults(func=cmd_fit)

    pr2 = sub.add_parser("predict", help="predict design points with a fitted model")
    pr2.add_argument("model", metavar="MODEL.json")
    pr2.add_argument("points", metavar="POINTS", help="points table: .csv, .parquet or .json")
    pr2.add_argument("-o", "--output", required=True, metavar="predictions.csv")
    pr2.set_defaults(func=cmd_predict)

    va = sub.add_parser("validate", help="sample-train-test accuracy of several models (Stargazer §7.3, Lee & Brooks §5)")
    va.add_argument("data", metavar="DATA", help="results table: .csv, .parquet or .json")
    va.add_argument("--response", required=True, metavar="COL")
    va.add_argument("--params", metavar="a,b,...", help="parameter columns (default: every other column)")
    va.add_argument("--transform", choices=TRANSFORMS, default="none")
    va.add_argument("--train-sizes", default="30,60,90,120,150,180,210,240,270,300", metavar="N1,N2,...")
    va.add_argument("--test-size", type=_positive_int, default=200)
    va.add_argument("--repeats", type=_positive_int, default=5)
    va.add_argument("--models", default="stepwise,fixed", metavar="m1,m2,...",
                    help="stepwise, fixed, regional, application, forest, boosting, hybrid")
    va.add_argument("--fixed-terms", metavar="t1,t2,...", help="terms of the fixed model (default simd,blk,simd:blk)")
    va.add_argument("--app-column", metavar="COL", help="application column for the S+A model")
    va.add_argument("--region", type=float, default=0.5, help="S+R region size as a share of N (default 0.5)")
    va.add_argument("--theta", type=float, default=0.01)
    va.add_argument("--phi", type=float, default=0.01)
    va.add_argument("--seed", type=_positive_int, default=0)
    va.add_argument("--json", action="store_true", help='print {"models": {name: {"N": {mean, median, …}}}}')
    va.set_defaults(func=cmd_validate)

    from .simulator import KERNELS

    si = sub.add_parser("simulate", help="run design points through a simulator backend, resumably (a campaign)")
    si.add_argument("points", metavar="SAMPLES", help="design points: .csv, .parquet or .json (e.g. from gpudse sample)")
    si.add_argument("--backend", choices=("analytical", "command"), default="analytical",
                    help="analytical: the built-in simulator (default); command: an external simulator (--config)")
    si.add_argument("--kernel", default="matMul", choices=list(KERNELS), help="analytical backend: Table 4 application")
    si.add_argument("--config", metavar="SIM.toml", help="command backend: the simulator description on this machine")
    si.add_argument("--noise", type=float, default=0.0, help="analytical: σ of log-normal measurement noise")
    si.add_argument("--seed", type=_positive_int, default=None)
    si.add_argument("--workers", type=_positive_int, default=None,
                    help="worker processes (local pool or --scheduler local; default: all cores)")
    si.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler, e.g. tcp://head-node:8786, or "
                    "'local' for a Dask LocalCluster")
    si.add_argument("--store", metavar="campaign.db", help="SQLite campaign store (default: the output name with "
                    ".db); running again with the same store resumes")
    si.add_argument("--campaign", default="default", help="campaign name inside the store")
    si.add_argument("--retries", type=_positive_int, default=2, help="retries of a failed run (default 2)")
    si.add_argument("-o", "--output", required=True, metavar="results.csv")
    si.set_defaults(func=cmd_simulate)

    im = sub.add_parser("import", help="validate uploaded simulation results against a design space")
    im.add_argument("results", metavar="RESULTS", help=".csv, .parquet or .json")
    im.add_argument("--space", required=True, help="YAML/JSON file or preset")
    im.add_argument("--responses", metavar="a,b", help="response columns (default: numeric non-parameter columns)")
    im.add_argument("--snap", choices=("reject", "nearest"), default="reject",
                    help="values outside a parameter's set: reject the row or snap to the nearest value")
    im.add_argument("--duplicates", choices=("keep", "average", "reject"), default="keep")
    im.add_argument("--max-mb", type=float, default=50.0, help="upload size limit in MB")
    im.add_argument("--store", metavar="campaign.db", help="also record the results as a finished campaign")
    im.add_argument("--campaign", default="import")
    im.add_argument("-o", "--output", required=True, metavar="clean.csv")
    im.set_defaults(func=cmd_import)

    px = sub.add_parser("pixels", help="Zatel: pick representative pixels per downscaled-GPU group")
    px.add_argument("heatmap", metavar="HEATMAP", help=".ppm (P3/P6), .png, .npy or .csv")
    px.add_argument("--sms", type=_positive_int, help="SMs of the full GPU (or --config)")
    px.add_argument("--mem", type=_positive_int, help="memory partitions of the full GPU (or --config)")
    px.add_argument("--config", metavar="GPU.config", help="GPGPU-Sim config: counts from it, downscaled copy written")
    px.add_argument("--k", type=_positive_int, default=None, help="force the downscaling factor K")
    px.add_argument("--clusters", type=_positive_int, default=5, help="K-means colour clusters (default 5)")
    px.add_argument("--division", choices=("fine", "coarse"), default="fine")
    px.add_argument("--distribution", choices=("uniform", "lintmp", "exptmp"), default="uniform")
    px.add_argument("--block", type=_size, default=(32, 2), help="section block, WIDTHxHEIGHT (default 32x2)")
    px.add_argument("--chunk", type=_size, default=(32, 2), help="division chunk, WIDTHxHEIGHT (default 32x2)")
    pct = px.add_mutually_exclusive_group()
    pct.add_argument("--percent", type=float, help="trace this percentage of each group (instead of eq. 1)")
    pct.add_argument("--bounds", default="0.3,0.6", help="eq. 1 bounds on P (default 0.3,0.6)")
    px.add_argument("--seed", type=_positive_int, default=0)
    px.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    px.add_argument("--json", action="store_true")
    px.set_defaults(func=cmd_pixels)

    co = sub.add_parser("combine", help="Zatel: combine the per-group simulator logs into frame metrics")
    co.add_argument("logs", nargs="+", metavar="LOG", help="GPGPU-Sim/Vulkan-Sim output per group (.log or .log.gz)")
    co.add_argument("--fractions", required=True, help="traced fraction of each group, in log order")
    co.add_argument("--aggregate", action="append", metavar="METRIC=HOW",
                    help="override a metric's aggregation: sum, mean or hmean (repeatable)")
    co.add_argument("--json", action="store_true")
    co.set_defaults(func=cmd_combine)

    ea = sub.add_parser("equal-area", help="001's equal-area model: optimum number of PEs (Fig. 18)")
    ea.add_argument("--bandwidth", type=float, metavar="GBPS", help="global memory bandwidth in GB/s")
    ea.add_argument("--regs-per-thread", type=float, metavar="R", help="registers per thread")
    ea.add_argument("--json", action="store_true",
                    help='print {"optimum_n_pe", "n_threads", "performance_gflops", "limited_by"}')
    ea.set_defaults(func=cmd_equal_area)

    wf = sub.add_parser("wfg", help="004's work flow graph model of a kernel (JSON/YAML graph + hardware)")
    wf.add_argument("graph", metavar="GRAPH", help="e.g. data/wfg/figure1.yaml")
    wf.add_argument("--json", action="store_true")
    wf.set_defaults(func=cmd_wfg)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GpudseError as e:
        print(f"gpudse: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"gpudse: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gpudse: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
