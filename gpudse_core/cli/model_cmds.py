"""``gpudse fit | predict | validate``: Stargazer's stepwise regression and its validation."""

from __future__ import annotations

import argparse
import json
import sys

from .. import choices
from ..errors import GpudseError
from .common import (Progress, add_precision, count_arg, default_params, knots_arg, nonnegative_int, scale_arg,
                     writable, write_table)


def trace_table(model, params) -> str:
    """Stargazer Table 1 of a fitted model as text (gpudse_core.report.trace: the page's and the report's table)."""
    from ..report import trace

    return trace.text(trace.build(model.trace, list(params)), model.settings or {})


def trace_json(model, params) -> dict:
    """The same table as data, for ``--json`` (beside the raw trace)."""
    from ..report import trace

    return trace.build(model.trace, list(params)).to_dict()


def step_progress(line: Progress):
    """A fit's steps as they come, on stderr's progress line (the table follows on stdout at the end)."""
    from ..fmt import fmt_r2

    def echo(step) -> None:
        what = "nothing left to try" if step.chosen is None else (
            (f"kept {step.chosen}" if step.candidates else f"{step.chosen}: search rerun on Huber pseudo-observations")
            if step.kind == "robust" else
            (f"level cells {'added' if step.accepted else 'not added'} ({step.chosen})" if step.kind == "cells" else
             f"{step.chosen} {'added' if step.accepted else 'rejected'}"))
        line(f"step {step.step} ({step.kind}): {what}; R² {fmt_r2(step.r2)}")
    return echo


STEPWISE_ONLY = ("theta", "phi", "phi3", "criterion", "compare", "knots", "knot_placement", "interactions",
                 "max_order", "max_terms", "threshold_rule", "robust", "cells", "row_guard", "count_pairs",
                 "blend", "powers_of_two", "scale", "bound_margin", "force", "preset")


def stepwise_flags(args: argparse.Namespace) -> list[str]:
    """The stepwise search's flags given on the command line (``--knots 4`` …), as typed."""
    return [f"--{k.replace('_', '-')}" for k in STEPWISE_ONLY if getattr(args, k, None) not in (None, [], ())]


def auto_flags(args: argparse.Namespace) -> list[str]:
    """The flags of ``--model auto``'s cross-validation given on the command line (``--folds``, ``--auto-rule``)."""
    return [flag for flag, key in (("--folds", "folds"), ("--auto-rule", "auto_rule"))
            if getattr(args, key, None) is not None]


def refuse_auto_flags(args: argparse.Namespace) -> None:
    """``--folds`` and ``--auto-rule`` tune only ``--model auto``: with any other model they are refused by name,
    as the stepwise flags are for the learners, never silently ignored."""
    given = auto_flags(args)
    if given and args.model != "auto":
        raise GpudseError(f"{', '.join(given)}: {'these tune' if len(given) > 1 else 'this tunes'} --model auto's "
                          f"choice by cross-validation, and --model {args.model} does not run it; drop "
                          f"{'them' if len(given) > 1 else 'it'}, or use --model auto")


def fit_settings(args: argparse.Namespace) -> tuple[dict, list[str]]:
    """The stepwise search's settings given by ``gpudse fit`` flags (the model's own for the rest,
    model.learners.stepwise_settings; the paper model's are stepwise.PAPER_SETTINGS). With ``--space``,
    parameters' scales come from the space file. Returns (settings, notes)."""
    from ..model.encoding import scales_from_space
    from ..model.learners import paper_conflicts

    paper = args.preset == "stargazer"
    notes: list[str] = []
    flags = {"theta": args.theta, "phi": args.phi, "phi3": args.phi3, "criterion": args.criterion,
             "compare": args.compare, "knots": args.knots, "knot_placement": args.knot_placement,
             "interactions": args.interactions, "max_order": args.max_order, "max_terms": args.max_terms,
             "threshold_rule": args.threshold_rule, "robust": args.robust,
             "cells": None if args.cells is None else args.cells == "on",
             "row_guard": None if args.row_guard is None else args.row_guard == "on",
             "count_pairs": None if args.count_pairs is None else args.count_pairs == "on",
             "blend": getattr(args, "blend", None),
             "powers_of_two": None if args.powers_of_two is None else args.powers_of_two == "on"}
    kw = {k: v for k, v in flags.items() if v is not None}
    if args.force:
        kw["forced"] = list(args.force)
    if args.bound_margin is not None:
        kw["bound_margin"] = None if args.bound_margin < 0 else args.bound_margin
    scale = args.scale
    if paper:
        if args.transform is not None:
            kw["response_transform"] = args.transform
        unused = [f"--{k.replace('_', '-')}" for k in paper_conflicts(kw)] + (["--scale"] if scale is not None else [])
        if unused:
            raise GpudseError(f"{', '.join(unused)}: the paper model is Stargazer 1.0 as released, with its own "
                              f"knots, splines and pairwise search (θ, φ, --threshold-rule, --max-terms, --force and "
                              f"--transform apply); use --model stepwise to tune those")
        return kw, notes
    if args.space:
        from ..space.presets import load_space

        per, notes = scales_from_space(load_space(args.space))
        if isinstance(scale, dict):
            per.update({k: v for k, v in scale.items() if k != "__default__"})
        kw["scale"] = {"__default__": (scale.get("__default__", "auto") if isinstance(scale, dict)
                                       else (scale or "auto")),
                       **per}
    elif scale is not None:
        kw["scale"] = scale
    return kw, notes


def headline_doc(model, data) -> dict:
    """The fit's headline for --json: out-of-sample error and whether it interpolates (model.headline)."""
    from ..model.headline import fit_headline

    h = fit_headline(model, data)
    return {"source": h.source, "median_error": h.value, "interpolates": h.interpolates, "note": h.note}


def summarize(model, data):
    """The statsmodels-style summary of a stepwise fit (gpudse_core.model.summary)."""
    from ..model.summary import summarize as summary_of

    return summary_of(model, data)


def final_line(model, data) -> str:
    """The fit's last line: its terms, led by the out-of-sample error; R² only when it means something."""
    from ..model.headline import fit_headline, fit_r2

    h = fit_headline(model, data)
    head = f"final model ({model.n:,} rows): {' + '.join(model.terms)}; "
    if h.interpolates:
        return head.rstrip("; ") + "\nnote: " + (h.note or "the fit interpolates")
    return head + f"{h.text()}; {fit_r2(model, data).text()}"


def cmd_fit(args: argparse.Namespace) -> int:
    refuse_auto_flags(args)
    if args.workspace:
        return _fit_workspace(args)
    missing = [w for w, v in (("DATA", args.data), ("--response", args.response), ("-o", args.output)) if v is None]
    if missing:  # before any heavy import: an argument error answers at once
        raise GpudseError(f"give {', '.join(missing)} (or --workspace ID to fit the workspace's current results)")
    from ..dataio import read_table
    from ..model.registry import fit_model

    data = read_table(args.data)
    out = writable(args.output, (".json",))
    params = [p.strip() for p in args.params.split(",") if p.strip()] if args.params else None
    if params is None:
        params, param_note = default_params(data.columns, args.response, args.space)
    else:
        param_note = ""
    derived = space_derived(args.space)
    line = Progress()
    echo = (lambda s: None) if args.json else step_progress(line)
    if args.model == "paper" or (args.preset == "stargazer" and args.model == "stepwise"):
        args.preset = "stargazer"  # one model: Stargazer 1.0 (stepwise.PAPER_SETTINGS), however it is asked for
    elif args.model != "stepwise":
        tuned = stepwise_flags(args)
        if tuned:
            what = ("--model auto compares the stepwise search at fixed settings with other learners"
                    if args.model == "auto" else f"--model {args.model} does not run it")
            raise GpudseError(f"{', '.join(tuned)}: {'these tune' if len(tuned) > 1 else 'this tunes'} the stepwise "
                              f"search, and {what}; drop {'them' if len(tuned) > 1 else 'it'}, or use --model stepwise")
        code = _fit_model(args, data, params, out, echo, derived)
        if param_note:  # after the work: an error is the first thing a failed command prints
            print(f"note: {param_note}", file=sys.stderr)
        return code
    kw, space_notes = fit_settings(args)
    model = fit_model("paper" if args.preset == "stargazer" else "stepwise", data, args.response, params,
                      transform=args.transform, stepwise_kw=kw, callback=echo, derived=derived)
    model.save(out)
    params = list(params or []) + [k for k in derived if k not in (params or [])]  # the trace's candidates
    line.end()
    if args.json:
        # robust: the Huber fit kept (k, scale, round), or null for least squares; r2/adj_r2 are the
        # data's on the training rows (as the last line quotes them), pseudo_r2 a Huber fit's own
        print(json.dumps({"terms": model.terms, **_r2_doc(model, data), "n": model.n,
                          "robust": getattr(model, "robust", None),
                          "headline": headline_doc(model, data), "notes": model.notes, "settings": model.settings,
                          "trace": model.trace, "trace_table": trace_json(model, params)}, indent=1))
    else:
        print(trace_table(model, params))
        if args.summary:  # its notes include the model's
            print(summarize(model, data))
        else:
            print(final_line(model, data))
        print(model.equation(digits=5))
        for note in [] if args.summary else model.notes:
            print(f"note: {note}")
        if space_notes:
            print(f"note: scales from {args.space}")
    if param_note:
        print(f"note: {param_note}", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _fit_workspace(args: argparse.Namespace) -> int:
    """``fit --workspace ID``: Algorithm 1 on the workspace's current results, stored as its model stage
    through gpudse_core.workspace.fits — the dashboard's Fit button does the same — so settings and data
    equal to a kept version's bring that version (and its analyses) back instead of a new one."""
    from ..workspace.fits import fit_stepwise_into
    from ..workspace.workspace import open_workspace

    if args.data is not None:
        raise GpudseError(f"{args.data}: --workspace fits the workspace's own results; drop DATA, or drop "
                          f"--workspace to fit a file")
    if args.model not in ("stepwise", "paper"):
        raise GpudseError(f"--workspace fits the stepwise model (or --model paper), not --model {args.model}; "
                          f"fit learners on the dashboard's Fit page")
    if args.model == "paper":
        args.preset = "stargazer"
    kw, _ = fit_settings(args)
    if args.transform is not None:
        kw["response_transform"] = args.transform
    if args.force:
        kw["forced"] = list(args.force)
    ws = open_workspace(args.workspace, trusted=True)  # the command line owns the files
    try:
        space, results = ws.require("space", "results")
        res = results.value
        params = ([p.strip() for p in args.params.split(",") if p.strip()] if args.params else
                  [p for p in space.value.parameter_names if p in res.table.columns])
        line = Progress()
        outcome = fit_stepwise_into(ws, results, kw, params, response=args.response,
                                    callback=(lambda s: None) if args.json else step_progress(line),
                                    origin="gpudse fit (command line)")
        line.end()
        model, data = outcome.stored.value, res.table
        if args.output:
            model.save(writable(args.output, (".json",)))
        if args.json:
            print(json.dumps({"workspace": ws.id, "version": outcome.stored.version, "reused": outcome.reused,
                              "terms": model.terms, **_r2_doc(model, data), "n": model.n,
                              "trace_table": trace_json(model, params)}, indent=1))
        else:
            print(trace_table(model, params))
            print(final_line(model, data))
            print(f"{outcome.message()} (workspace {ws.id[:6]}…)")
    finally:
        ws.close()
    return 0


def space_derived(space: str | None) -> dict[str, str]:
    """The derived quantities of ``--space`` (name → expression; none without it): predictors of every kind."""
    if not space:
        return {}
    from ..space.presets import load_space

    return load_space(space).derived_map()


def _fit_model(args: argparse.Namespace, data, params, out, echo, derived: dict | None = None) -> int:
    """``fit --model auto|ebm|forest|boosting|hybrid`` (the stepwise flags θ, φ, knots … tune only
    ``--model stepwise``; ``auto`` compares presets)."""
    from ..model.registry import fit_model, model_kind, plain_json, save_model

    line = Progress()

    def progress(done: int, total: int, message: str) -> None:
        if not args.json:
            line(f"cross-validation: {done}/{total} fits ({message})")

    folds = {} if args.folds is None else {"folds": args.folds}  # fit_model's default otherwise
    model = fit_model(args.model, data, args.response, params, transform=args.transform, seed=args.seed,
                      progress=progress, derived=derived or None, auto_rule=args.auto_rule, **folds)
    params = list(params or []) + [k for k in derived or {} if k not in (params or [])]
    save_model(model, out)
    kind = model_kind(model)
    sel = getattr(model, "selection", None)
    if args.json:
        doc = {"model": args.model, "kind": kind, "n": getattr(model, "n", None) or len(data), "selection": sel,
               "notes": list(getattr(model, "notes", []))}
        if kind == "stepwise":
            doc.update(terms=model.terms, **_r2_doc(model, data), headline=headline_doc(model, data),
                       trace=model.trace, trace_table=trace_json(model, params))
        print(json.dumps(plain_json(doc), indent=1))
    else:
        if sel:
            line.end()
            print(f"{sel['method']}: relative error (%) of the held-out rows")
            print(_cv_table(sel["table"]))
            print(sel["reason"])
        if kind == "stepwise":
            print(trace_table(model, params))
            print(summarize(model, data) if args.summary else final_line(model, data))
            print(model.equation(digits=5))
        else:
            print(f"{kind} model of {args.response} ({model.transform} scale) on {len(data):,} rows")
            if args.summary:
                print(f"note: --summary: a {kind} model has no coefficients or ANOVA; its held-out error is above",
                      file=sys.stderr)
        for note in getattr(model, "notes", []):
            print(f"note: {note}", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _cv_table(rows: list[dict]) -> str:
    import pandas as pd

    t = pd.DataFrame(rows)
    for col in ("mean", "median", "p98", "max", "vs_ref", "vs_ref_se"):
        if col in t.columns:
            t[col] = t[col].map(lambda v: "-" if v is None or v != v else f"{100 * v:.2f}")
    t["seconds"] = t["seconds"].map(lambda v: f"{v:.1f}")
    return t.to_string(index=False)


def cmd_predict(args: argparse.Namespace) -> int:
    from ..dataio import read_table
    from ..model.learners import BOUND_MARGIN
    from ..model.registry import load_model

    model = load_model(args.model)
    for note in getattr(model, "notes", []):  # the fit's own choices, said as the model's
        print(f"note: model: {note}", file=sys.stderr)
    points = read_table(args.points)
    clash = [c for c in ("predicted", "bounded", "extrapolation") if c in points.columns]
    if clash:
        raise GpudseError(f"{args.points}: the points already have column(s) {', '.join(map(repr, clash))}, which "
                          f"predict adds; drop or rename them")
    out = writable(args.output, (".csv", ".parquet", ".json"))
    det = model.predict_details(points)
    result = with_predictions(points, det)
    write_table(result, out, args.precision)
    by_forest = det.extrapolation.str.contains("predicted by the model's forest alone", regex=False).to_numpy()
    n_bounded = int((det.bounded.to_numpy(bool) & ~by_forest).sum())  # the forest's rows are said apart
    n_outside = int((det.extrapolation != "").sum())
    n_held = int(det.extrapolation.str.contains("prediction held", regex=False).sum())
    n_forest = int(by_forest.sum())
    margin = getattr(model, "bound_margin", BOUND_MARGIN)
    held = f"; {n_held:,} of them to the responses of their nearest training designs" if n_held else ""
    forest = f", {n_forest:,} of them predicted by the model's forest alone" if n_forest else ""
    print(f"wrote {len(result):,} predictions of {model.response} to {out}: {n_bounded:,} bounded (to the training "
          f"range, margin {margin if margin is not None else 'off'}{held}), {n_outside:,} outside "
          f"the training support{forest} (see the bounded and extrapolation columns)", file=sys.stderr)
    return 0


def with_predictions(points, details):
    """The points with the prediction columns appended (same row order)."""
    return points.assign(**{c: details[c].to_numpy() for c in details.columns})


def _r2_doc(model, data) -> dict:
    """The fit's R² for --json, as its last line quotes it (:meth:`~..model.headline.FitR2.to_json_dict`)."""
    from ..model.headline import fit_r2

    return fit_r2(model, data).to_json_dict()


def cmd_validate(args: argparse.Namespace) -> int:
    from ..dataio import read_table
    from ..model.metrics import STATS
    from ..model.validation import validate

    data = read_table(args.data)
    try:
        sizes = [int(x) for x in args.train_sizes.split(",") if x.strip()]
    except ValueError:
        raise GpudseError(f"--train-sizes {args.train_sizes!r}: give whole numbers separated by commas, e.g. 30,60,90")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.auto_rule is not None and "auto" not in models:
        raise GpudseError(f"--auto-rule: this tunes the auto model's choice by cross-validation, and --models "
                          f"{args.models} does not include auto; drop it, or add auto to --models")
    params = [p.strip() for p in args.params.split(",") if p.strip()] if args.params else None
    if params is None:
        params, param_note = default_params(data.columns, args.response, args.space, app_column=args.app_column)
    else:
        param_note = ""
    derived = space_derived(args.space)
    if derived:  # the space's derived quantities: predictors of every model compared, as gpudse fit takes them
        from ..model.derived import add_columns

        data = add_columns(data, derived, f"--space {args.space}")
        params = [*(params or []), *(k for k in derived if k not in (params or []))]
    fixed = [t.strip() for t in args.fixed_terms.split(",") if t.strip()] if args.fixed_terms else None
    total = len(sizes) * args.repeats

    line = Progress()

    def progress(done: int, total_: int, message: str) -> None:
        if not args.json:
            line(f"{done}/{total_} fits done ({message})")

    res = validate(data, args.response, params, train_sizes=sizes, test_size=args.test_size, repeats=args.repeats,
                   models=models, transform=args.transform, seed=args.seed, fixed_terms=fixed,
                   app_column=args.app_column, region=args.region, progress=progress, auto_rule=args.auto_rule,
                   **{k: v for k, v in (("theta", args.theta), ("phi", args.phi)) if v is not None})
    if args.json:
        print(json.dumps(res.to_json_dict(), indent=1))
        return 0
    line.end()
    table = res.summary()
    for col in STATS:
        table[col] = (100 * table[col]).map(lambda v: f"{v:.2f}")
    print(f"relative error (%) of {args.response}, {args.test_size} test points x {args.repeats} repeats "
          f"({total} fits per model)")
    print(table.rename(columns={"train_size": "N"}).to_string(index=False))
    for n, picks in res.chosen.items():
        print(f"auto picked at N = {n}: {', '.join(picks)}")
    for note in res.notes + ([param_note] if param_note else []):
        print(f"note: {note}", file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    fi = sub.add_parser("fit", help="Stargazer stepwise spline regression (Algorithm 1), printing the trace")
    fi.add_argument("data", metavar="DATA", nargs="?", help="results table: .csv, .parquet or .json (not with "
                    "--workspace)")
    fi.add_argument("--workspace", metavar="ID", help="fit the workspace's current results and store the model "
                    "there (-o optional); settings and data equal to a kept model version's reuse that version")
    fi.add_argument("--response", metavar="COL", help="the column to model (e.g. cycles; with --workspace: the "
                    "results' response unless given)")
    fi.add_argument("--params", metavar="a,b,...", help="parameter columns (default: the --space's parameters, else "
                    "every other column but simulator outputs such as cycles_trimmed, ipc)")
    fi.add_argument("--transform", choices=choices.FIT_TRANSFORMS, default=None,
                    help="response transform; default auto (log, sqrt or none, whichever predicts the training "
                         "rows best left out one at a time; with --preset stargazer: none)")
    fi.add_argument("--preset", choices=choices.FIT_PRESETS,
                    help="stargazer: the paper model, Stargazer 1.0 exactly (the same as --model paper; docs/models.md "
                         "'Stargazer as written'). Default: the robust settings (docs/models.md)")
    fi.add_argument("--theta", type=float, default=None, help="θ: threshold to add a parameter (default 0.001, "
                                                              "a p-value with the default ftest criterion)")
    fi.add_argument("--phi", type=float, default=None, help="φ: threshold to add a pairwise interaction")
    fi.add_argument("--phi3", type=float, default=None, help="threshold to add a three-way interaction")
    fi.add_argument("--threshold-rule", choices=choices.THRESHOLD_RULES, default=None,
                    help="adjusted-R² thresholds: relative (θ and φ are shares of the model's R², Stargazer 1.0; "
                         "the paper model's default, θ = φ = 0) or absolute (the paper text's reading; with the "
                         "paper model θ = φ = 0.01 unless given; the robust search's default)")
    fi.add_argument("--criterion", choices=choices.CRITERIA, default=None, help="default ftest; the paper's adjr2")
    fi.add_argument("--compare", choices=("r2", "adj_r2"), default=None,
                    help="adjr2 criterion: compare the candidate's adjusted R² with the model's R² "
                         "(Algorithm 1) or with its adjusted R²")
    fi.add_argument("--knots", type=knots_arg, default=None, metavar="K[,param=K,...]",
                    help="knots per spline (Harrell's k, boundaries included), e.g. 6 or 4,simd=3,blk=5 (default 6)")
    fi.add_argument("--knot-placement", choices=choices.KNOT_PLACEMENTS, default=None,
                    help="default distinct (quantiles of the distinct values); the paper's even")
    fi.add_argument("--scale", type=scale_arg, default=None, metavar="auto|linear[,param=log2,...]",
                    help="modelling scale: auto (log2 for powers of two and geometric series, the default), "
                         "linear, and per parameter, e.g. auto,threads=log2")
    fi.add_argument("--space", metavar="SPACE", help="design space file or preset whose scale: keys (or value "
                                                     "lists) give each parameter's scale")
    fi.add_argument("--interactions", choices=choices.INTERACTION_FORMS, default=None)
    fi.add_argument("--powers-of-two", choices=("on", "off"), default=None,
                    help="a pow2(x) column for whole-number parameters whose values mix powers of two with "
                         "others, e.g. block widths 16, 32, 48, … (default on; docs/models.md)")
    fi.add_argument("--robust", choices=choices.ROBUST_FITS, default=None,
                    help="huber (default): the search is rerun on Huber pseudo-observations, so a few very slow "
                         "designs do not decide the terms; none: least squares throughout (docs/models.md)")
    fi.add_argument("--cells", choices=("on", "off"), default=None,
                    help="on (default): after the search, indicator columns for combinations of 2 or 3 parameter "
                         "levels (tile_x=3 & shmem=1) that pass a Bonferroni F-test and predict the rows left "
                         "out better (docs/models.md)")
    fi.add_argument("--row-guard", choices=("on", "off"), default=None,
                    help="on (default): an interaction term must pass its test without the one training row that "
                         "carries most of its fit, so a lone pathological design cannot bring in a term "
                         "(docs/models.md)")
    fi.add_argument("--count-pairs", choices=("on", "off"), default=None,
                    help="on (default): when no parameter passes alone, two count parameters with their interaction "
                         "(cu_per_sa + sa + cu_per_sa:sa) are tried as one block; off: Algorithm 1's reading, only "
                         "interactions of chosen parameters (docs/models.md)")
    fi.add_argument("--blend", choices=("forest", "off"), default=None,
                    help="forest (default): each prediction is blended with a random forest on the same rows, the "
                         "forest weighted by the design's leverage h as h / (c + h), so designs the training rows do "
                         "not pin the equation down at lean on the forest; off: the equation alone (docs/models.md)")
    fi.add_argument("--max-order", type=int, choices=choices.MAX_ORDERS, default=None,
                    help="highest interaction order: 2 (pairs, Algorithm 1) or 3 (default: also three-way terms)")
    fi.add_argument("--max-terms", type=count_arg, default=None)
    fi.add_argument("--bound-margin", type=float, default=None, metavar="M",
                    help="bound predictions to the training range widened by M times its width on the "
                         "transformed scale (default 0.25; negative: no bound)")
    fi.add_argument("--force", action="append", metavar="TERM", help="start with this term (repeatable), e.g. simd:blk")
    fi.add_argument("-o", "--output", metavar="model.json", help="where to write the model (required without "
                    "--workspace)")
    fi.add_argument("--json", action="store_true", help="print terms, R², adjusted R² and the trace as JSON")
    fi.add_argument("--summary", action="store_true",
                    help="after the trace, print the statsmodels-style summary of a stepwise model: settings, n, R², "
                         "adjusted R², leave-one-out error, the coefficient table and the ANOVA")
    fi.add_argument("--model", choices=choices.MODEL_KINDS, default="stepwise",
                    help="stepwise (robust default), paper (Stargazer as written), auto (chosen by cross-validation), "
                         "ebm, forest, boosting or hybrid (default stepwise)")
    fi.add_argument("--folds", type=count_arg, default=None,
                    help="--model auto: cross-validation folds (default 5)")
    fi.add_argument("--auto-rule", choices=choices.AUTO_RULES, default=None,
                    help="--model auto: one-se (default) keeps the forest unless a candidate predicts the held-out "
                         "rows better by more than one standard error of the paired difference; lowest: the "
                         "lowest mean error (within 2 %%, the simpler model)")
    fi.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the learners and the folds (default 0)")
    fi.set_defaults(func=cmd_fit)

    pr2 = sub.add_parser("predict", help="predict design points with a fitted model (adds predicted, bounded and "
                                         "extrapolation columns)")
    add_precision(pr2)
    pr2.add_argument("model", metavar="MODEL.json")
    pr2.add_argument("points", metavar="POINTS", help="points table: .csv, .parquet or .json")
    pr2.add_argument("-o", "--output", required=True, metavar="predictions.csv")
    pr2.set_defaults(func=cmd_predict)

    va = sub.add_parser("validate",
                        help="sample-train-test accuracy of several models (Stargazer §7.3, Lee & Brooks §5)")
    va.add_argument("data", metavar="DATA", help="results table: .csv, .parquet or .json")
    va.add_argument("--response", required=True, metavar="COL")
    va.add_argument("--params", metavar="a,b,...", help="parameter columns (default: every other column but "
                    "simulator outputs such as cycles_trimmed, ipc)")
    va.add_argument("--transform", choices=choices.FIT_TRANSFORMS, default="auto",
                    help="response transform; auto (default): the stepwise models choose log, sqrt or none by "
                         "leave-one-out error, the other models use log for positive responses")
    va.add_argument("--train-sizes", default="30,60,90,120,150,180,210,240,270,300", metavar="N1,N2,...")
    va.add_argument("--test-size", type=count_arg, default=200)
    va.add_argument("--repeats", type=count_arg, default=5)
    va.add_argument("--models", default="stepwise,fixed", metavar="m1,m2,...",
                    help="stepwise (robust default), paper (Stargazer as written), fixed, regional, application, "
                         "forest, boosting, hybrid, ebm, auto (chosen by cross-validation on each training draw)")
    va.add_argument("--fixed-terms", metavar="t1,t2,...", help="terms of the fixed model (default simd,blk,simd:blk)")
    va.add_argument("--space", metavar="SPACE", help="design space file or preset: its parameters are the default "
                                                     "--params, and its derived quantities (e.g. total_cus: "
                                                     "cu_per_sa * sa) predictors of every model, as for fit")
    va.add_argument("--app-column", metavar="COL", help="application column for the S+A model")
    va.add_argument("--region", type=float, default=0.5, help="S+R region size as a share of N (default 0.5)")
    va.add_argument("--theta", type=float, default=None, help="θ of the stepwise model (default: its own)")
    va.add_argument("--phi", type=float, default=None, help="φ of the stepwise model (default: its own)")
    va.add_argument("--auto-rule", choices=choices.AUTO_RULES, default=None,
                    help="the auto model (in --models): one-se (default) keeps the forest unless a candidate "
                         "predicts the held-out rows better by more than one standard error of the paired "
                         "difference; lowest: the lowest mean error (within 2 %%, the simpler model)")
    va.add_argument("--seed", type=nonnegative_int, default=0)
    va.add_argument("--json", action="store_true",
                    help='print {"models": {name: {"N": {mean, median, p75, p90, p98, max, …, nonfinite, bounded}}}}')
    va.set_defaults(func=cmd_validate)
