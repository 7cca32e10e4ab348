"""A Pareto search against a measured second objective (``gpudse search --goal pareto --cost-column COL``):
the cost is what the simulator measured (a table's wattage), never computed; an incomplete table's rows
are the only candidates; the front found on a table of known structure is the true front; bad settings
and a row without the cost are named."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core.cli import main
from gpudse_core.search.acquisition import pareto_mask
from gpudse_core.search.pool import make_pool
from gpudse_core.search.study import SearchError, run_search
from gpudse_core.sim.lookup import LookupTable


def _table(drop_every: int = 0) -> pd.DataFrame:
    """A 12 × 12 grid: more lanes are faster and draw more power — a real trade-off, whose front is the
    designs with the fewest stalls (``stall`` = 0) at every lane count; every *drop_every*-th row removed
    (an incomplete table)."""
    rows = []
    for lanes in range(1, 13):
        for stall in range(12):
            rows.append({"lanes": lanes, "stall": stall, "runtime": 100.0 / lanes * (1 + 0.3 * stall),
                         "wattage": 50.0 + 10.0 * lanes + 0.5 * stall})
    frame = pd.DataFrame(rows)
    if drop_every:
        frame = frame[(np.arange(len(frame)) % drop_every) != drop_every - 1].reset_index(drop=True)
    return frame


def _evaluate(t: LookupTable):
    def evaluate(digits, designs):
        out = []
        for k in map(tuple, np.asarray(digits).tolist()):
            v, err, _ = t.answers[k]
            out.append((v, err, t.measures[k]["wattage"]))
        return out
    return evaluate


def test_the_front_of_a_measured_cost_is_the_true_front_and_costs_are_as_measured():
    frame = _table(drop_every=5)  # incomplete: 116 of 144 designs measured
    t = LookupTable.from_frame(frame, "runtime", extra=["wattage"])
    assert [p.name for p in t.space.parameters] == ["lanes", "stall"]  # the measured column is no parameter
    res = run_search(make_pool(t.space, t.digits), _evaluate(t), goal="pareto", budget=60, batch=4, seed=3,
                     response="runtime", cost_column="wattage")
    assert not res.failed  # only the table's rows were candidates
    by_design = {(r.lanes, r.stall): r for r in frame.itertuples()}
    for trial in res.trials:
        row = by_design[(trial.design["lanes"], trial.design["stall"])]
        assert trial.cost == pytest.approx(row.wattage) and trial.value == pytest.approx(row.runtime)
    true = frame[pareto_mask(frame.runtime.to_numpy(), frame.wattage.to_numpy())]
    found = {(tr.design["lanes"], tr.design["stall"]) for tr in res.front()}
    assert found <= set(zip(true.lanes, true.stall))
    # 60 of 116 rows: a random draw finds about half of the 12-design front; the search at least 10
    assert len(found) >= 10


def test_measured_cost_settings_are_checked_before_anything_runs():
    t = LookupTable.from_frame(_table(), "runtime", extra=["wattage"])
    pool = make_pool(t.space, t.digits)
    with pytest.raises(SearchError, match="not both"):
        run_search(pool, _evaluate(t), goal="pareto", budget=20, cost=lambda d: d[:, 0], cost_column="wattage")
    with pytest.raises(SearchError, match="for goal pareto"):
        run_search(pool, _evaluate(t), goal="min", budget=20, cost_column="wattage")
    with pytest.raises(SearchError, match="--cost-column COL"):
        run_search(pool, _evaluate(t), goal="pareto", budget=20)


def test_a_design_without_the_measured_cost_is_a_failed_simulation(tmp_path, capsys):
    frame = _table()
    frame.loc[frame.index % 7 == 0, "wattage"] = np.nan
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    assert main(["search", "--table", str(path), "--response", "runtime", "--cost-column", "wattage", "--goal",
                 "pareto", "--budget", "40", "--batch", "4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    failed = [h for h in doc["history"] if h["status"] != "ok"]
    assert failed and all("wattage" in h["error"] for h in failed)
    assert all(h.get("cost") is not None for h in doc["history"] if h["status"] == "ok")
    assert doc["front"] and all("cost" in f for f in doc["front"])


@pytest.mark.parametrize("argv,said", [
    (["--cost-column", "wattage", "--cost", "lanes"], "not both"),
    (["--cost-column", "runtime"], "is the response"),
    (["--cost-column", "volts"], "no measured column 'volts'"),
    (["--cost-column", "wattage", "--params", "lanes,stall,wattage"], "measured column 'wattage'"),
])
def test_cli_names_a_bad_cost_column(tmp_path, capsys, argv, said):
    path = tmp_path / "t.csv"
    _table().to_csv(path, index=False)
    assert main(["search", "--table", str(path), "--response", "runtime", "--goal", "pareto", "--budget", "20",
                 *argv]) != 0
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_cli_cost_column_on_the_builtin_simulator_names_its_outputs(capsys):
    assert main(["search", "stargazer", "--kernel", "BFS", "--goal", "pareto", "--cost-column", "wattage",
                 "--budget", "20"]) != 0
    assert "reports cycles, cycles_trimmed and ipc" in capsys.readouterr().err
    assert main(["search", "stargazer", "--kernel", "BFS", "--goal", "min", "--cost-column", "ipc", "--budget",
                 "20"]) != 0
    assert "for --goal pareto" in capsys.readouterr().err
