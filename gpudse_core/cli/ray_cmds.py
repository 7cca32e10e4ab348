"""``gpudse pixels | combine``: Zatel's representative pixels and the combination of group logs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import GpudseError
from .common import count_arg, nonnegative_int, size_arg


def cmd_pixels(args: argparse.Namespace) -> int:
    from ..sim.gpgpusim import GpgpuSimConfig
    from ..raytrace.heatmap import read_heatmap
    from ..raytrace.zatel import counts_from_config, downscale_config, plan

    hm = read_heatmap(args.heatmap)
    cfg = GpgpuSimConfig.load(args.config) if args.config else None
    if args.sms is None or args.mem is None:
        if cfg is None:
            raise GpudseError("give --sms and --mem (the GPU's SM and memory-partition counts) or --config GPU.config")
        counts = counts_from_config(cfg, args.config)
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
    scaled = downscale_config(cfg, zp.downscale.k) if cfg is not None else None  # may refuse: before writing
    zp.write(out)
    if scaled is not None:
        scaled.save(out / f"downscaled_k{zp.downscale.k}.config")
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
    from ..raytrace.zatel import combine_logs

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


def add_parsers(sub: argparse._SubParsersAction) -> None:
    px = sub.add_parser("pixels", help="Zatel: pick representative pixels per downscaled-GPU group")
    px.add_argument("heatmap", metavar="HEATMAP", help=".ppm (P3/P6), .png, .npy or .csv")
    px.add_argument("--sms", type=count_arg, help="SMs of the full GPU (or --config)")
    px.add_argument("--mem", type=count_arg, help="memory partitions of the full GPU (or --config)")
    px.add_argument("--config", metavar="GPU.config", help="GPGPU-Sim config: counts from it, downscaled copy written")
    px.add_argument("--k", type=count_arg, default=None, help="force the downscaling factor K")
    px.add_argument("--clusters", type=count_arg, default=5, help="K-means colour clusters (default 5)")
    px.add_argument("--division", choices=("fine", "coarse"), default="fine")
    px.add_argument("--distribution", choices=("uniform", "lintmp", "exptmp"), default="uniform")
    px.add_argument("--block", type=size_arg, default=(32, 2), help="section block, WIDTHxHEIGHT (default 32x2)")
    px.add_argument("--chunk", type=size_arg, default=(32, 2), help="division chunk, WIDTHxHEIGHT (default 32x2)")
    pct = px.add_mutually_exclusive_group()
    pct.add_argument("--percent", type=float, help="trace this percentage of each group (instead of eq. 1)")
    pct.add_argument("--bounds", default="0.3,0.6", help="eq. 1 bounds on P (default 0.3,0.6)")
    px.add_argument("--seed", type=nonnegative_int, default=0)
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
