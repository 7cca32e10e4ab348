"""What a design review reads beside the best designs: every number with its unit (a response's unit read
from its name, as ``time_ms``), the true-error CDF titled by the designs it covers (not by the 1,001
quantiles it is drawn through), and the recommendation's caveats, accuracy and interval calibration on the
Explore page and in the HTML report alike (gpudse_core.report.recommendation)."""

from __future__ import annotations

import numpy as np
import pytest

from gpudse_core import fmt
from gpudse_core.report import figures


@pytest.mark.parametrize("name, unit", [("cycles", "cycles"), ("gpu_sim_cycle", "cycles"), ("time_ms", "ms"),
                                        ("geomean_kernel_exec_s", "s"), ("latency_us", "µs"), ("power_w", "W"),
                                        ("wattage", "W"), ("runtime", None), ("ipc", None), ("s", None),
                                        ("dram_bandwidth_gbs", None), ("status", None)])
def test_a_responses_unit_is_read_from_its_name(name, unit):
    assert fmt.response_unit(name) == unit


def test_a_measured_tables_time_ms_is_labelled_in_milliseconds_with_its_squared_log_unit():
    unit = fmt.response_unit("time_ms")
    assert fmt.fmt_number(1.2683, unit) == "1.268 ms"
    assert fmt.squared_unit(unit, "log") == "(log ms)²"  # the ANOVA's sums of squares on the log scale


def test_the_true_error_cdf_is_titled_by_the_designs_its_quantiles_summarise():
    quantiles = np.linspace(0.0, 0.03, 1001)  # what a stored TrueError keeps of 933,120 errors
    fig = figures.space_error_cdf(quantiles, designs=933_120)
    assert "933,120 designs" in fig.layout.title.text and "1,001" not in fig.layout.title.text
    # errors of every design given as they are: titled by their own count
    assert "5,000 designs" in figures.space_error_cdf(np.full(5000, 0.01)).layout.title.text


# ---- beside the best designs: the page and the report say the same -------------------------------------
PARAMS = ["blk", "cc", "tc", "smp", "ccp", "simd", "mshr", "dramq", "intra", "inter"]


@pytest.fixture(scope="module")
def narrow(tmp_path_factory):
    """A workspace whose 100 results hold SIMD widths 8 and 16 only (matMul, 1 % noise) and its model's scan
    of the whole stargazer space: the best row combines values no training row had together."""
    import os

    from dashboard.work import scan_work
    from gpudse_core import load_preset, sample
    from gpudse_core.model.stepwise import fit_stepwise
    from gpudse_core.sim.simulator import simulate
    from gpudse_core.workspace import create_workspace

    old = os.environ.get("GPUDSE_HOME")
    os.environ["GPUDSE_HOME"] = str(tmp_path_factory.mktemp("home"))
    try:
        space = load_preset("stargazer")
        pts = sample(space, n=600, seed=2).table()
        pts = pts[pts.simd <= 16].head(100).reset_index(drop=True)
        data = pts.join(simulate(pts, "matMul", noise=0.01, seed=2))[PARAMS + ["cycles"]]
        ws, _ = create_workspace("narrow review")
        ws.set_space(space, "stargazer")
        results = ws.set_results(data, "cycles", "test rows", inputs=["space"])
        model = fit_stepwise(data, "cycles")
        model_sv = ws.set_model(model, "stepwise", inputs=[results])
        scan = scan_work(model, space, {"k": 5, "maximize": False, "cost": "simd"}, results=data)
        ws.put_analysis("scan", scan, inputs=[model_sv, ws.get("space")])
        yield ws, scan
    finally:
        if old is None:
            os.environ.pop("GPUDSE_HOME")
        else:
            os.environ["GPUDSE_HOME"] = old


@pytest.mark.slow  # the fixture fits and calibrates a model: about 4 s of CPU
def test_the_scan_says_its_intervals_are_calibrated_and_where_the_model_extrapolates(narrow):
    from gpudse_core.explore.designs import CALIBRATED_NOTE

    _, scan = narrow
    assert CALIBRATED_NOTE in scan.notes and not any("not calibrated" in n for n in scan.notes)
    assert scan.shown is not None
    assert any("outside what the training rows cover" in n and "the model extrapolates" in n for n in scan.notes)


@pytest.mark.slow
def test_the_report_carries_the_accuracy_notes_and_reading_of_the_best_designs(narrow):
    import html as html_lib
    import re

    from gpudse_core.report import recommendation
    from gpudse_core.report.workspace_report import workspace_report
    from gpudse_core.workspace import open_workspace
    from gpudse_core.workspace.provenance import model_headline

    ws, scan = narrow
    ws = open_workspace(ws.id, trusted=True)
    page = workspace_report(ws)
    part = html_lib.unescape(re.sub(r"<[^>]+>", " ", page[page.index("Explore: the best designs"):]))
    part = " ".join(part.split())
    head = model_headline(ws, ws.get("model"), None)
    assert head is not None and head.value is not None  # a leave-one-out error, as the Model section leads with
    said = recommendation.lines(scan, head)
    assert said[0] == recommendation.accuracy(head) and head.text() in said[0]
    for sentence in said:  # accuracy, how to read the rows, and every note of the scan
        assert " ".join(sentence.split()) in part, sentence
    assert "extrapolates" in part and "calibrated on held-out refits" in part
    assert part.index("extrapolates") < part.index("predicted cycles")  # read before the rows, as on the page


class _Terms:
    """A fitted model as Fig. 3 reads it: the response and each term's R² gain in selection order."""

    def __init__(self, names: list[str]) -> None:
        self.response, self.names = "time_ms", names

    def contributions(self):
        return [(n, 0.9 / len(self.names)) for n in self.names]


def test_fig3s_legend_moves_below_the_bars_when_its_names_are_too_long_to_sit_beside_them():
    # the terms of a 14-term fit on a convolution table: beside the bar they covered it in a half-page column
    long = ["use_shmem", "tile_size_y", "tile_size_y:use_shmem", "block_size_y", "block_size_y:use_shmem",
            "block_size_y:use_shmem:tile_size_y", "read_only", "read_only:use_shmem", "tile_size_x", "block_size_x",
            "block_size_x:block_size_y", "block_size_x:block_size_y (full)", "block_size_x:use_shmem",
            "level cells: [block_size_x=16] * [block_size_y=1], [block_size_x=16] * [tile_size_x=4]"]
    many = figures.contributions(_Terms(long))
    assert many.layout.legend.y < 0 and many.layout.legend.yanchor == "top"  # under the plotting area
    assert many.layout.legend.orientation == "v"  # one term a line, in selection order
    lines = len(long) + 1  # the level cells take two lines
    assert many.layout.height - 24 * lines >= 400  # the bars keep their height below the title
    # Stargazer's short names (the lecture's Fig. 3, presentation mode's 560 px) keep the legend beside the bar
    short = figures.contributions(_Terms(["blk", "simd", "simd:blk", "smp", "smp:blk:simd (full)",
                                          "level cells: [blk=2] * [smp=1], [blk=1] * [tc=4]"]))
    assert short.layout.legend.y is None and short.layout.height <= 560


@pytest.mark.slow
def test_the_shown_designs_to_simulate_elsewhere_are_feasible_and_predicted_as_listed(narrow):
    from gpudse_core.report import recommendation

    ws, scan = narrow
    space, model = ws.get("space").value, ws.get("model").value
    table = recommendation.shown_designs(scan, list(space.parameter_names))
    assert list(table.row) == list(range(1, len(scan.best) + 1)) and len(table) == 5
    designs = table[list(space.parameter_names)]
    assert all(space.is_feasible(d) for d in designs.to_dict("records"))  # one concrete design per row
    np.testing.assert_allclose(model.predict(designs), table.predicted, rtol=1e-9)
    assert (table.lower <= table.predicted).all() and (table.predicted <= table.upper).all()
    assert table.predicted.is_monotonic_increasing  # best first, as the rows above it


@pytest.mark.slow
def test_the_best_designs_header_gives_a_unit_the_response_name_does_not_already_say(narrow):
    from gpudse_core.explore.designs import best_designs

    ws, _ = narrow
    found = best_designs(ws.get("model").value, ws.get("space").value, top=2)
    for response, predicted in (("time_ms", "predicted time_ms"), ("cycles", "predicted cycles"),
                                ("gpu_sim_cycle", "predicted gpu_sim_cycle (cycles)")):
        unit = fmt.response_unit(response)
        cols = list(found.display(ws.get("space").value, response, unit).columns)
        assert cols[0] == predicted and cols[1] == f"95 % interval ({unit})", cols


def test_the_default_pareto_cost_is_explained_as_the_levels_it_sums():
    from dashboard.work import level_costs
    from gpudse_core import load_preset
    from gpudse_core.report import recommendation

    space = load_preset("stargazer")
    assert recommendation.cost_label("levels", space) == "sum of parameter levels"
    assert recommendation.cost_label("simd", space) == space.parameter("simd").display
    assert recommendation.cost_note("simd") is None  # a parameter's own values: its axis says it
    note = recommendation.cost_note("levels")
    assert "smallest value 0, its largest 1" in note and "ranked among its values" in note
    for name, costs in level_costs(space).items():  # what the note says is what the cost is
        values = [float(v) for v in space.parameter(name).values]
        assert costs[values.index(min(values))] == 0.0 and costs[values.index(max(values))] == 1.0
        assert sorted(costs) == [i / (len(values) - 1) for i in range(len(values))]


def test_an_uploads_failed_configurations_stay_on_the_results_record(tmp_path, monkeypatch):
    import pandas as pd

    from gpudse_core.report.record import settings_table, upload_note
    from gpudse_core.sim.upload import validate_results
    from gpudse_core.space.design import space_from_dict
    from gpudse_core.workspace import create_workspace

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    space = space_from_dict({"name": "conv", "parameters": [{"name": "bx", "values": [16, 32, 64]},
                                                                  {"name": "shmem", "values": [0, 1]}]})
    # a measured tuning table's rows as benchmark_hub writes them: a failed configuration has no time
    table = pd.DataFrame({"bx": [16, 32, 64, 16], "shmem": [0, 0, 1, 1], "time_ms": [5.9, 4.1, None, 9.1],
                          "status": ["ok", "ok", "RuntimeFailedConfig", "ok"]})
    rep = validate_results(table, space, ["time_ms"])
    note = upload_note(rep)
    assert note.startswith("kept 3 of 4 rows") and "1 failed configuration kept as failures" in note
    assert "RuntimeFailedConfig 1" in note and "(rows 3)" in note
    ws, _ = create_workspace("upload record")
    ws.set_space(space, "conv")
    results = ws.set_results(rep.table, "time_ms", "uploaded conv.csv", inputs=["space"], note=note)
    record = settings_table(ws, results, None)
    checks = record[record.setting == "upload checks"]
    assert list(checks.value) == [note] and checks.part.iloc[0].startswith("Results v1")


def test_the_results_record_survives_a_project_round_trip(tmp_path, monkeypatch):
    import pandas as pd

    from gpudse_core import load_preset, sample
    from gpudse_core.report.record import settings_table
    from gpudse_core.sim.simulator import simulate
    from gpudse_core.workspace import create_workspace, export_project, import_project
    from gpudse_core.workspace.provenance import results_provenance

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path))
    space = load_preset("stargazer")
    pts = sample(space, n=20, seed=4).table()
    ws, _ = create_workspace("saved")
    ws.set_space(space, "stargazer")
    ws.set_results(pd.concat([pts, simulate(pts, "BFS", noise=0.02, seed=4)], axis=1), "cycles",
                   "built-in simulator, BFS, 2% noise", inputs=["space"], note="kept 20 of 21 rows; a test note")
    copy, _ = create_workspace("loaded")
    import_project(copy, export_project(ws).data, "review.zip")
    res = copy.get("results")
    assert res.origin == "built-in simulator, BFS, 2% noise (project review.zip)"
    prov = results_provenance(copy, res)  # the simulator, its kernel and noise, as before the zip
    assert (prov.simulator, prov.kernel, prov.noise) == ("built-in simulator", "BFS", 0.02)
    record = settings_table(copy, res, None)
    assert list(record[record.setting == "upload checks"].value) == ["kept 20 of 21 rows; a test note"]


@pytest.mark.slow
def test_a_best_row_where_the_model_extrapolates_is_a_caution_on_the_record(narrow):
    from gpudse_core.report import recommendation
    from gpudse_core.report.workspace_report import workspace_report
    from gpudse_core.workspace import open_workspace

    ws, scan = narrow
    space, model = ws.get("space").value, ws.get("model").value
    said = recommendation.caution(scan, model, list(space.parameter_names))
    # the scan's own note names row 1 among those outside the training rows (SIMD width 32 was never trained)
    assert any(n.startswith("row(s) 1") and "the model extrapolates" in n for n in scan.notes)
    assert said is not None and said.startswith("The best row lies where the model extrapolates")
    page = workspace_report(open_workspace(ws.id, trusted=True))
    assert f"<p class='note'>{said}</p>" in page.replace("&#x27;", "'")  # set apart, above the rows
    # a scan whose best row the training rows cover gets none: the same rows from the second on
    inside = type(scan)(**{**scan.__dict__, "best": scan.best.iloc[1:].reset_index(drop=True)})
    assert recommendation.caution(inside, model, list(space.parameter_names)) is None


@pytest.mark.slow
def test_the_best_designs_are_numbered_as_the_notes_name_them(narrow):
    import re

    from gpudse_core.report.workspace_report import workspace_report
    from gpudse_core.workspace import open_workspace

    ws, scan = narrow
    page = workspace_report(open_workspace(ws.id, trusted=True))
    table = page[page.index("Best designs (whole-space scan)"):]
    table = table[:table.index("</table>")]
    rows = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[hd][^>]*>.*?</t[hd]>", r)]
            for r in re.findall(r"<tr>.*?</tr>", table, flags=re.S)]
    assert rows[0][0] == "row" and [r[0] for r in rows[1:]] == [str(i) for i in range(1, len(scan.best) + 1)]
    assert any(n.startswith("row(s) 1") for n in scan.notes)  # the number a note names is a row's number
