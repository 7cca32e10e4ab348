"""Benchmark: the MGPUSim case study's figures and tables, regenerated from its data file alone.

Run: python benchmarks/bench_mgpusim_study.py [--data data/mgpusim_study.csv] [--out docs/img]
     python benchmarks/bench_mgpusim_study.py collect --campaign study.db --search WS.db --random random.db
            --confirm confirm.db --best best.csv --commands commands.json [-o data/mgpusim_study.csv]

The study (docs/mgpusim-study.md) ran the ``mgpusim`` preset on MGPUSim (Sun et al., ISCA 2019), every design
point judged on two benchmarks that fill the GPU (fir and aes at their default sizes) and by the geometric mean
of their kernel execution times. Its rows come from four parts: a uniform campaign (``gpudse simulate``), a
search on the simulator (``gpudse search --backend mgpusim``), a random search of the same budget, and
confirmations (the designs a model fitted on the campaign predicts best, simulated). No simulation runs here.

The figures (SVG, under ``--out``) and the numbers printed:

1. the stepwise trace of the model fitted on the campaign (Stargazer Table 1), as ``gpudse fit`` prints it;
2. response curves with the GPU size (CUs = ``cu_per_sa × sa``) as one axis: per benchmark, and the mean per clock;
3. error against the number of simulations (Stargazer Fig. 5, on a real simulator): fitted on the first k
   campaign points, measured on the rest of the campaign and on the random search's points (never fitted);
4. the search's best-so-far against random search's, simulation by simulation;
5. the confirmed designs: prediction and 95 % interval against the simulated value.

``collect`` builds the data file from the studies' stores (SQLite campaign stores, the search's workspace) and
writes the provenance beside it (``mgpusim_study.json``: gpudse version and commit, the MGPUSim module, the
benchmarks and sizes, the command lines, the dates); :func:`load_study` reads both through the project's
table loader and checks the provenance is complete.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpudse_core import fmt  # noqa: E402
from gpudse_core.errors import GpudseError  # noqa: E402

PARAMS = ("cu_per_sa", "sa", "l2_kb", "mem_banks", "line", "freq_mhz")
BENCHMARKS = ("fir", "aes")
RESPONSE = "geomean_kernel_exec_s"
PARTS = ("campaign", "search", "random", "confirm")
# per benchmark: the times, the work the GPU received and how busy it was, the memory system, the run's cost
METRICS = ("kernel_exec_s", "kernel_time_s", "kernel_exec_cycles", "work_groups", "occupancy", "simd_busy", "ipc",
           "cpi_total", "cpi_valu", "cpi_vmem", "l1v_hit_rate", "l2_hit_rate", "dram_bandwidth_gbs", "verified",
           "wall_seconds")
EXTRA = ("predicted", "lower", "upper")  # confirmations: the model's prediction and interval
PROVENANCE = ("schema", "gpudse_version", "gpudse_commit", "mgpusim_module", "driver", "space", "benchmarks",
              "response", "commands", "started", "finished", "parts")
SCHEMA = "gpudse.mgpusim-study/1"
BASELINE = {"cu_per_sa": 4, "sa": 16, "l2_kb": 2048, "mem_banks": 16, "line": 64, "freq_mhz": 1000}  # R9 Nano
DEFAULT_DATA = ROOT / "data" / "mgpusim_study.csv"


class StudyDataError(GpudseError):
    """The study's data file or its provenance is missing, malformed or incomplete."""


@dataclass
class Study:
    table: pd.DataFrame
    provenance: dict

    def part(self, name: str) -> pd.DataFrame:
        return self.table[self.table["part"] == name].sort_values("order").reset_index(drop=True)


def columns() -> list[str]:
    return ["part", "order", *PARAMS, "cus", *[f"{b}_{m}" for b in BENCHMARKS for m in METRICS],
            "geomean_kernel_exec_s", "geomean_kernel_time_s", *EXTRA]


# ---- the data file -------------------------------------------------------------------------------

def load_study(path: str | Path = DEFAULT_DATA) -> Study:
    """The study's table (through :func:`gpudse_core.dataio.read_table`) and its provenance (the ``.json``
    beside it, through :mod:`gpudse_core.safeload`), both checked; a :class:`StudyDataError` names the file,
    row or field otherwise."""
    from gpudse_core.dataio import read_table
    from gpudse_core.safeload import load_json

    path = Path(path)
    table = read_table(path)
    side = path.with_suffix(".json")
    if not side.is_file():
        raise StudyDataError(f"{side}: the provenance of {path.name} is missing (run this benchmark's collect)")
    prov = load_json(side.read_bytes(), str(side))
    missing = [k for k in PROVENANCE if prov.get(k) in (None, "", [], {})]
    if missing:
        raise StudyDataError(f"{side}: provenance field(s) {', '.join(missing)} missing or empty")
    if prov["schema"] != SCHEMA:
        raise StudyDataError(f"{side}: schema {prov['schema']!r}, expected {SCHEMA!r}")
    absent = [c for c in ("part", "order", *PARAMS, RESPONSE) if c not in table.columns]
    if absent:
        raise StudyDataError(f"{path}: column(s) {', '.join(absent)} missing")
    bad = ~table["part"].isin(PARTS)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise StudyDataError(f"{path} row {row + 2}: part {table['part'].iloc[row]!r} is not one of {', '.join(PARTS)}")
    for name in PARTS:
        counted = int((table["part"] == name).sum())
        if counted != int(prov["parts"].get(name, {}).get("rows", -1)):
            raise StudyDataError(f"{side}: parts.{name}.rows says {prov['parts'].get(name, {}).get('rows')}, "
                                 f"the table has {counted} {name} rows")
    return Study(table, prov)


def _store_rows(db: Path, campaigns: list[str]) -> pd.DataFrame:
    from gpudse_core.sim.store import CampaignStore

    frames = []
    for name in campaigns:
        with CampaignStore(db, name=name, readonly=True) as st:
            t = st.table()
        if len(t):
            frames.append(t)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(PARAMS))


def _store_campaigns(db: Path, prefix: str | None) -> tuple[list[str], float, float, dict]:
    """The campaigns of a store (those whose names start with *prefix*), oldest first, with the first and last
    finish time of their points and the spec of the first."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT name, spec FROM campaign ORDER BY created").fetchall()
        names = [n for n, _ in rows if prefix is None or n.startswith(prefix)]
        marks = ",".join("?" * len(names))
        lo, hi = con.execute(f"SELECT MIN(finished), MAX(finished) FROM point WHERE status = 'done' AND campaign "
                             f"IN ({marks})", names).fetchone()
        spec = next(json.loads(s) for n, s in rows if n in names) if names else {}
    finally:
        con.close()
    return names, lo or math.nan, hi or math.nan, spec


def _tidy(t: pd.DataFrame, part: str) -> pd.DataFrame:
    t = t.copy()
    t.insert(0, "order", np.arange(1, len(t) + 1))
    t.insert(0, "part", part)
    t["cus"] = t["cu_per_sa"] * t["sa"]
    for c in columns():
        if c not in t.columns:
            t[c] = np.nan
    return t[columns()]


def collect(stores: dict[str, tuple[Path, str | None]], best: Path | None, commands: dict, out: Path,
            planned: int) -> pd.DataFrame:
    """Every simulated row of the study's stores (*stores*: part → (store, campaign-name prefix or None for
    all)) into *out*, and its provenance beside it; *best* (``gpudse explore -o``) gives the confirmations'
    predictions and intervals."""
    from datetime import datetime, timezone

    from gpudse_core import __version__
    from gpudse_core.cli.common import write_table

    parts, times, spec = {}, [], {}
    for part, (db, prefix) in stores.items():
        names, lo, hi, s = _store_campaigns(db, prefix)
        spec = spec or s
        parts[part] = _tidy(_store_rows(db, names), part)
        times += [lo, hi]
    if "confirm" in parts and best is not None:
        predicted = pd.read_csv(best)
        keyed = parts["confirm"].drop(columns=list(EXTRA)).merge(predicted[[*PARAMS, *EXTRA]], on=list(PARAMS),
                                                                 how="left")
        parts["confirm"] = keyed[columns()]
    table = pd.concat(parts.values(), ignore_index=True)
    commit = subprocess.run(["git", "-C", str(commands.get("checkout", ROOT)), "rev-parse", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    stamp = [datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M UTC") for t in
             (np.nanmin(times), np.nanmax(times))]
    prov = {"schema": SCHEMA, "gpudse_version": __version__, "gpudse_commit": commit,
            "mgpusim_module": spec.get("mgpusim"), "driver": spec.get("driver"), "space": "mgpusim",
            "benchmarks": dict(zip(BENCHMARKS, spec.get("sizes", []))), "response": RESPONSE,
            "commands": {p: commands["parts"][p] for p in parts}, "started": stamp[0], "finished": stamp[1],
            "machine": commands.get("machine", ""),
            "parts": {p: {"rows": int(len(t)), "simulations": int(len(t)) * len(BENCHMARKS)}
                      for p, t in parts.items()}}
    prov["parts"]["campaign"]["planned"] = planned
    if "confirm" in prov["parts"] and commands.get("confirm_model_rows"):
        prov["parts"]["confirm"]["model_rows"] = int(commands["confirm_model_rows"])
    write_table(table, out, 7)
    out.with_suffix(".json").write_text(json.dumps(prov, indent=1) + "\n", encoding="utf-8")
    return table


# ---- the analyses --------------------------------------------------------------------------------

CUS_PARAMS = ("cus", "l2_kb", "mem_banks", "line", "freq_mhz")  # the GPU's size as one parameter


def fit(rows: pd.DataFrame, response: str = RESPONSE, params: tuple[str, ...] = PARAMS) -> Any:
    """The model ``gpudse fit RESULTS --response R --space mgpusim`` fits (its settings, parsed from that
    command line); with other *params*, ``gpudse fit RESULTS --response R --params a,b,…``."""
    from gpudse_core.cli import build_parser
    from gpudse_core.cli.model_cmds import fit_settings
    from gpudse_core.model.registry import fit_model

    how = ["--space", "mgpusim"] if params == PARAMS else ["--params", ",".join(params)]
    args = build_parser().parse_args(["fit", "r.csv", "--response", response, *how, "-o", "m.json"])
    kw, _ = fit_settings(args)
    data = rows[[*params, response]].dropna().reset_index(drop=True)
    model = fit_model("stepwise", data, response, list(params), transform=args.transform, stepwise_kw=kw)
    model.study_params = params
    return model


def trace_text(model: Any) -> str:
    """Stargazer Table 1 of *model*, as ``gpudse fit`` prints it."""
    from gpudse_core.cli.model_cmds import trace_table

    return trace_table(model, PARAMS)


def _errors(model: Any, rows: pd.DataFrame, response: str = RESPONSE) -> np.ndarray:
    pred = np.asarray(model.predict(rows[list(model.study_params)]), dtype=float)
    y = rows[response].to_numpy(float)
    return np.abs(pred - y) / y


def _mean(a: np.ndarray) -> float:
    return float(a.mean()) if len(a) else math.nan


def error_by_size(study: Study, sizes: list[int] | None = None) -> pd.DataFrame:
    """Stargazer Fig. 5 on MGPUSim: fitted on the first k campaign points (sample order), the relative error on
    the campaign points after them and on the random search's points (a uniform sample never fitted); for the
    preset's six parameters (``gpudse fit --space mgpusim``) and with the GPU's size as one parameter, the
    number of CUs (:data:`CUS_PARAMS`)."""
    camp, held = study.part("campaign"), study.part("random")
    n = len(camp)
    sizes = [k for k in (sizes or sorted({*range(8, n + 1, 3), n})) if 2 <= k <= n]
    out = []
    for k in sizes:
        row: dict[str, Any] = {"k": k, "rest_n": n - k, "random_n": len(held)}
        for tag, params in (("", PARAMS), ("cus_", CUS_PARAMS)):
            model = fit(camp.iloc[:k], params=params)
            rest, rnd = _errors(model, camp.iloc[k:]), _errors(model, held)
            row.update({f"{tag}terms": len(model.terms), f"{tag}rest_mean": _mean(rest),
                        f"{tag}random_mean": _mean(rnd), f"{tag}random_median": float(np.median(rnd))})
        out.append(row)
    return pd.DataFrame(out)


def _grid(model: Any, rows: list[dict]) -> pd.DataFrame:
    d = pd.DataFrame(rows)
    d["cus"] = d["cu_per_sa"] * d["sa"]
    d["us"] = np.asarray(model.predict(d[list(model.study_params)]), float) * 1e6
    return d


def response_curves(study: Study) -> tuple[dict[str, pd.DataFrame], dict[str, list[str]]]:
    """Predicted kernel time (µs) against the number of CUs (4 per shader array, 2 to 32 arrays) at the R9 Nano's
    other settings: per benchmark and for the geometric mean by the models with the CUs as one parameter; the
    geometric mean by the six-parameter model (``--space mgpusim``) too; and the geometric mean per core clock.
    Also each model's terms, keyed ``<response>`` (six parameters) and ``<response> (CUs)``."""
    camp = study.part("campaign")
    curves, terms = {}, {}
    sizes = [{**BASELINE, "sa": s} for s in (2, 4, 8, 16, 32)]  # 8 to 128 CUs: the campaign's range
    for what in (*BENCHMARKS, "geomean"):
        model = fit(camp, f"{what}_kernel_exec_s", CUS_PARAMS)
        terms[f"{what} (CUs)"] = [str(t) for t in model.terms]
        curves[f"{what} (CUs model)"] = _grid(model, sizes)
        if what == "geomean":
            for f in (500, 750, 1000, 1500):
                curves[f"geomean at {f} MHz"] = _grid(model, [{**r, "freq_mhz": f} for r in sizes])
            six = fit(camp, f"{what}_kernel_exec_s")
            terms[what] = [str(t) for t in six.terms]
            curves["geomean (six-parameter model)"] = _grid(six, sizes)
    return curves, terms


def best_so_far(study: Study) -> dict[str, np.ndarray]:
    """The best geometric-mean time (µs) after each simulation: the search, random search, and the campaign's
    first points (another uniform sample) for as many simulations."""
    n = len(study.part("search"))
    out = {}
    for part in ("search", "random", "campaign"):
        y = study.part(part)[RESPONSE].to_numpy(float)[: max(n, len(study.part("random")))] * 1e6
        out[part] = np.fmin.accumulate(np.where(np.isfinite(y), y, np.inf))
    return out


def confirmations(study: Study) -> pd.DataFrame:
    """The confirmed designs: the campaign model's prediction and interval (µs) against the simulated value, and
    the prediction of the model with the CUs as one parameter fitted on the same campaign points (the first
    ``parts.confirm.model_rows`` of them: the campaign may have gone on after the confirmation model was fitted)."""
    c = study.part("confirm")
    out = c[[*PARAMS, "cus"]].copy()
    for col in EXTRA:
        out[col] = c[col] * 1e6
    out["simulated"] = c[RESPONSE] * 1e6
    out["error"] = (out["predicted"] - out["simulated"]) / out["simulated"]
    out["inside"] = (out["simulated"] >= out["lower"]) & (out["simulated"] <= out["upper"])
    rows = int(study.provenance.get("parts", {}).get("confirm", {}).get("model_rows") or len(study.part("campaign")))
    cus = fit(study.part("campaign").iloc[:rows], params=CUS_PARAMS)  # the same points, the CUs as one parameter
    out["cus_predicted"] = np.asarray(cus.predict(c[list(CUS_PARAMS)]), float) * 1e6 if len(c) else []
    return out


# ---- the figures ---------------------------------------------------------------------------------

def figures(study: Study, out: Path, sizes: list[int] | None = None) -> dict[str, Any]:
    """Write the study's SVG figures into *out*; returns the numbers they show."""
    import svg_chart
    from svg_chart import Series, chart

    out.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {}
    res["trace"] = trace_text(fit(study.part("campaign")))
    curves, res["terms"] = response_curves(study)
    res["curves"] = curves
    hue = {what: svg_chart.COLORS[i] for i, what in enumerate((*BENCHMARKS, "geomean"))}
    sers = [Series(name, d["cus"].tolist(), d["us"].tolist(), dash="six" in name,
                   style={"color": hue[name.split(" ")[0]]}) for name, d in curves.items() if "MHz" not in name]
    (out / "mgpusim-study-cus.svg").write_text(chart(
        sers, "Kernel time against GPU size (models, R9 Nano otherwise)", "CUs (4 per shader array)",
        "predicted kernel time, µs", logx=True, logy=True, xticks=[8, 16, 32, 64, 128]), encoding="utf-8")
    sers = [Series(name, d["cus"].tolist(), d["us"].tolist()) for name, d in curves.items() if "MHz" in name]
    (out / "mgpusim-study-clock.svg").write_text(chart(
        sers, "fir/aes geometric mean: GPU size × core clock (model)", "CUs (4 per shader array)",
        "predicted geomean time, µs", logx=True, logy=True, xticks=[8, 16, 32, 64, 128]), encoding="utf-8")
    err = error_by_size(study, sizes)
    res["error"] = err
    (out / "mgpusim-study-error.svg").write_text(chart(
        [Series("six parameters: random points", err["k"].tolist(), (100 * err["random_mean"]).tolist(),
                style={"color": svg_chart.COLORS[0]}),
         Series("… rest of the campaign", err["k"].tolist(), (100 * err["rest_mean"]).tolist(), dash=True,
                style={"color": svg_chart.COLORS[0]}),
         Series("CUs as one parameter: random", err["k"].tolist(), (100 * err["cus_random_mean"]).tolist(),
                style={"color": svg_chart.COLORS[2]}),
         Series("… rest of the campaign", err["k"].tolist(), (100 * err["cus_rest_mean"]).tolist(), dash=True,
                style={"color": svg_chart.COLORS[2]})],
        "Model error against simulations (Stargazer Fig. 5, MGPUSim)", "campaign points fitted (k)",
        "mean relative error, %", xticks=err["k"].tolist()), encoding="utf-8")
    best = best_so_far(study)
    res["best"] = best
    (out / "mgpusim-study-search.svg").write_text(chart(
        [Series({"search": "gpudse search", "random": "random search",
                 "campaign": "campaign's first points"}[k], list(range(1, len(v) + 1)), v.tolist(),
                dash=k == "campaign") for k, v in best.items()],
        "Best fir/aes geometric mean found", "design points simulated (each fir + aes)", "best geomean time, µs",
        xticks=list(range(1, max(len(v) for v in best.values()) + 1))), encoding="utf-8")
    conf = confirmations(study)
    res["confirm"] = conf
    if len(conf):
        x = conf["cus"].astype(float).tolist()
        (out / "mgpusim-study-confirm.svg").write_text(chart(
            [Series("predicted (95 % interval)", x, conf["predicted"].tolist(), mode="markers",
                    low=conf["lower"].tolist(), high=conf["upper"].tolist()),
             Series("simulated", x, conf["simulated"].tolist(), mode="markers"),
             Series("CUs model's prediction", x, conf["cus_predicted"].tolist(), mode="markers")],
            "Confirmations: the model's best designs simulated", "CUs of the confirmed design", "geomean time, µs",
            logx=True, xticks=sorted(set(x))), encoding="utf-8")
    return res


def _design(r: Any) -> str:
    return f"{int(r['cu_per_sa'])} CUs × {int(r['sa'])} arrays, L2 {int(r['l2_kb'])} KB/{int(r['mem_banks'])} banks, " \
           f"{int(r['line'])} B lines, {int(r['freq_mhz'])} MHz"


def report(study: Study, res: dict[str, Any]) -> str:
    """The figures' numbers as text (Markdown tables where they are tables)."""
    us = lambda v: fmt.fmt_number(v, sig=4)  # noqa: E731
    lines = [f"{len(study.table)} design points, {len(study.table) * len(BENCHMARKS)} simulations: " + ", ".join(
        f"{name} {int((study.table['part'] == name).sum())}" for name in PARTS), "", "Stepwise trace (campaign):",
        res["trace"], "", "Model terms per response (campaign):",
        *[f"  {w}: {', '.join(t) or '(none)'}" for w, t in res["terms"].items()], "",
        "Response curves (predicted µs; CUs):"]
    for name, d in res["curves"].items():
        lines.append(f"  {name}: " + ", ".join(f"{int(c)} → {us(v)}" for c, v in zip(d["cus"], d["us"])))
    lines += ["", "| k fitted | six parameters: terms | mean error, rest of campaign | mean / median error, random "
              "points | CUs as one parameter: terms | rest of campaign | random points |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    pc = fmt.fmt_percent
    for _, r in res["error"].iterrows():
        lines.append(f"| {int(r['k'])} | {int(r['terms'])} | {pc(r['rest_mean'])} (n = {int(r['rest_n'])}) | "
                     f"{pc(r['random_mean'])} / {pc(r['random_median'])} (n = {int(r['random_n'])}) | "
                     f"{int(r['cus_terms'])} | {pc(r['cus_rest_mean'])} | {pc(r['cus_random_mean'])} / "
                     f"{pc(r['cus_random_median'])} |")
    lines += ["", "| simulations | " + " | ".join(res["best"]) + " |", "|---:|" + "---:|" * len(res["best"])]
    n = max(len(v) for v in res["best"].values())
    for i in range(n):
        lines.append(f"| {i + 1} | " + " | ".join(us(v[i]) if i < len(v) else "" for v in res["best"].values())
                     + " |")
    lines += ["", "| # | design | CUs | predicted µs | 95 % interval | simulated µs | error | inside "
              "| CUs model µs |",
              "|---:|---|---:|---:|---|---:|---:|---|---:|"]
    for i, r in res["confirm"].reset_index(drop=True).iterrows():
        lines.append(f"| {i + 1} | {_design(r)} | {int(r['cus'])} | {us(r['predicted'])} | {us(r['lower'])}–"
                     f"{us(r['upper'])} | {us(r['simulated'])} | {fmt.fmt_percent(r['error'])} | "
                     f"{'yes' if r['inside'] else 'no'} | {us(r['cus_predicted'])} |")
    uniform = study.table[study.table["part"].isin(("campaign", "random"))]
    for knob, label in (("cus", "CUs"), ("freq_mhz", "clock, MHz")):
        lines += ["", f"Simulated medians by {label} (campaign + random search: uniform points):",
                  f"| {label} | points | fir µs | aes µs | geomean µs | fir occupancy | aes occupancy |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for v, g in uniform.groupby(knob):
            lines.append(f"| {int(v)} | {len(g)} | {us(g['fir_kernel_exec_s'].median() * 1e6)} | "
                         f"{us(g['aes_kernel_exec_s'].median() * 1e6)} | {us(g[RESPONSE].median() * 1e6)} | "
                         f"{fmt.fmt_fixed(g['fir_occupancy'].median(), 2)} | "
                         f"{fmt.fmt_fixed(g['aes_occupancy'].median(), 2)} |")
    top = study.table.sort_values(RESPONSE).head(5)
    lines += ["", "Fastest simulated designs:", "| part | design | CUs | geomean µs | fir µs | aes µs |",
              "|---|---|---:|---:|---:|---:|"]
    for _, r in top.iterrows():
        lines.append(f"| {r['part']} | {_design(r)} | {int(r['cus'])} | {us(r[RESPONSE] * 1e6)} | "
                     f"{us(r['fir_kernel_exec_s'] * 1e6)} | {us(r['aes_kernel_exec_s'] * 1e6)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    co = sub.add_parser("collect", help="build the data file from the studies' stores")
    co.add_argument("--campaign", type=Path, required=True, help="the campaign's store")
    co.add_argument("--search", type=Path, help="the search's store (its workspace's database)")
    co.add_argument("--search-prefix", default=None, help="the search's campaign names start with this")
    co.add_argument("--random", type=Path, help="the random search's store")
    co.add_argument("--confirm", type=Path, help="the confirmations' store")
    co.add_argument("--best", type=Path, help="gpudse explore's best designs (the confirmations' predictions)")
    co.add_argument("--commands", type=Path, required=True, help="JSON: the command lines of each part")
    co.add_argument("--planned", type=int, default=120, help="the campaign's planned points")
    co.add_argument("-o", "--output", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = ap.parse_args(argv)
    if args.cmd == "collect":
        commands = json.loads(args.commands.read_text(encoding="utf-8"))
        stores = {"campaign": (args.campaign, None)}
        for part, db in (("search", args.search), ("random", args.random), ("confirm", args.confirm)):
            if db is not None:
                stores[part] = (db, args.search_prefix if part == "search" else None)
        t = collect(stores, args.best, commands, args.output, args.planned)
        print(f"wrote {len(t)} rows to {args.output} and its provenance to {args.output.with_suffix('.json')}")
        return 0
    study = load_study(args.data)
    print(report(study, figures(study, args.out)))
    print(f"\nfigures: {', '.join(sorted(p.name for p in args.out.glob('mgpusim-study-*.svg')))} in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
