"""``gpudse presets | space show | space export | sample``: design spaces and sampling (Stargazer §5.1)."""

from __future__ import annotations

import argparse
import json
import sys

from .. import choices
from ..errors import printable
from .common import add_precision, count_arg, fraction, nonnegative_int, writable


def space_text(space) -> str:
    from ..space.design import Group
    from ..space.values import format_values_text

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
        lines.append(f"feasible: {space.feasible_size_text()} design points")
        lines.append("constraints:")
        lines += [f"  {c.expr}" + (f"   # {c.description}" if c.description else "") for c in space.constraints]
        if space.notes:
            lines.append("notes:")
            lines += [f"  - {n}" for n in space.notes]
    if space.fixed:
        lines.append("fixed baseline:")
        for f in space.fixed:
            lines.append(f"  {f.display} = {f.value}{(' ' + f.unit) if f.unit else ''}")
    return printable("\n".join(lines), limit=None)  # labels and descriptions are the file's text


def cmd_presets(args: argparse.Namespace) -> int:
    from ..space.presets import load_preset

    for name in choices.PRESETS:
        s = load_preset(name)
        print(f"{name:12s} {s.size:>15,} points  {s.description}")
    return 0


def cmd_space_show(args: argparse.Namespace) -> int:
    from ..space.presets import load_space

    space = load_space(args.space)
    if args.json:
        print(json.dumps(space.summary(), indent=2, ensure_ascii=False))
    else:
        print(space_text(space))
    return 0


def cmd_space_export(args: argparse.Namespace) -> int:
    from ..space.presets import load_space

    space = load_space(args.space)
    out = writable(args.output)
    space.save(out)
    print(f"wrote {out} ({space.size:,} points)", file=sys.stderr)
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from ..space.presets import load_space
    from ..space.sampling import sample

    space = load_space(args.space)
    out = writable(args.output, (".csv", ".parquet", ".json"))
    result = sample(space, args.n, fraction=args.fraction, per_dim_fraction=args.per_dim_fraction,
                    per_dim_mode=args.per_dim_mode, seed=args.seed, method=args.method)
    result.save(out, with_index=args.with_index, precision=args.precision)
    share = len(result) / (result.feasible_size or space.size)
    extra = f"; {result.replaced} LHS rows re-drawn" if result.replaced else ""
    seed = f"seed {args.seed}" if args.seed is not None else "no seed: pass --seed N to draw the same points again"
    from ..fmt import fmt_percent

    print(f"wrote {len(result):,} design points ({fmt_percent(share)} of the space, method {args.method}, "
          f"{seed}) to {out}{extra}", file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    pr = sub.add_parser("presets", help="list the built-in design spaces")
    pr.set_defaults(func=cmd_presets)

    sp = sub.add_parser("space", help="inspect or export a design space")
    ssub = sp.add_subparsers(dest="space_command", required=True, metavar="ACTION")
    show = ssub.add_parser("show", help="parameters, value counts and exact size")
    show.add_argument("space", metavar="SPACE", help="YAML/JSON file or preset (" + ", ".join(choices.PRESETS) + ")")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=cmd_space_show)
    exp = ssub.add_parser("export", help="write a space (e.g. a preset) to a YAML/JSON file to edit")
    exp.add_argument("space", metavar="SPACE")
    exp.add_argument("-o", "--output", required=True, metavar="FILE")
    exp.set_defaults(func=cmd_space_export)
    from .search_cmds import add_space_parsers

    add_space_parsers(ssub)

    sa = sub.add_parser("sample", help="sample design points uniformly at random (Stargazer §5.1)")
    add_precision(sa)
    sa.add_argument("space", metavar="SPACE", help="YAML/JSON file or preset")
    how = sa.add_mutually_exclusive_group(required=True)
    how.add_argument("-n", type=count_arg, metavar="N", help="number of points")
    how.add_argument("--fraction", type=fraction, metavar="F", help="fraction of the whole space (0.0003 or 0.03%%)")
    how.add_argument("--per-dim-fraction", type=fraction, metavar="F", help="fraction of each dimension")
    sa.add_argument("--per-dim-mode", choices=choices.PER_DIM_MODES, default="count",
                    help="count: F of each dimension sets the number of points (default); subgrid: a random sub-grid")
    sa.add_argument("--seed", type=nonnegative_int, default=None, help="random seed (reproducible output)")
    sa.add_argument("--method", choices=choices.SAMPLING_METHODS, default="uniform")
    sa.add_argument("--with-index", action="store_true", help="add a design_index column")
    sa.add_argument("-o", "--output", required=True, metavar="FILE", help="samples.csv, .parquet or .json")
    sa.set_defaults(func=cmd_sample)
