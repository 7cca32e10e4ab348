"""Designs known to fail survive a project zip (``failures.csv``), and a measured table read as a simulator
takes every status meaning success (``choices.OK_STATUS``) as a configuration that ran, as an upload does."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pandas as pd
import pytest

from gpudse_core import GpudseError, load_preset, sample
from gpudse_core.explore.designs import best_designs
from gpudse_core.model.stepwise import fit_stepwise
from gpudse_core.sim.lookup import LookupTable, TableLookupError
from gpudse_core.sim.simulator import simulate
from gpudse_core.sim.upload import validate_results
from gpudse_core.workspace import create_workspace, export_project, import_project
from gpudse_core.workspace.campaigns import failed_points

SPACE = load_preset("stargazer")
PARAMS = list(SPACE.parameter_names)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    return tmp_path / "home"


@pytest.fixture(scope="module")
def study():
    """60 simulated designs of the Stargazer space (matMul) and a stepwise model of their cycles."""
    pts = sample(SPACE, 60, seed=3).table()
    results = pts.join(simulate(pts, "matMul", noise=0.01, seed=3))[PARAMS + ["cycles"]]
    return results, fit_stepwise(results, "cycles", transform="log")


def with_upload_failures(ws, results, failing: pd.DataFrame) -> None:
    """The workspace's results are an uploaded table whose *failing* designs have a failed status."""
    table = pd.concat([results, failing.assign(cycles=np.nan)], ignore_index=True)
    table["status"] = ["ok"] * len(results) + ["RuntimeFailedConfig"] * len(failing)
    rep = validate_results(table, SPACE, responses=["cycles"])
    ws.set_space(SPACE, "preset stargazer")
    ws.set_results(rep.table, "cycles", "uploaded m.csv")
    ws.record_failures("m.csv", SPACE.name, rep.failures)


def points(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame[PARAMS].astype(str).to_numpy().tolist()))


def with_simulator_failure(ws, failing: pd.DataFrame, ran: pd.DataFrame) -> None:
    """A simulator campaign in the workspace that ran *ran* and failed on *failing* (one attempt)."""
    from gpudse_core.sim.store import CampaignStore
    from gpudse_core.workspace.campaigns import record_campaign

    store_name = record_campaign(ws, "sim", origin="test")
    with CampaignStore(ws.path, name=store_name, max_attempts=1) as st:
        st.open({"backend": "analytical"}, pd.concat([ran, failing], ignore_index=True))
        (done, _), (failed, _) = [(i, p) for i, p, _ in st.claim(2)]
        st.complete([(done, {"cycles": 1000.0})])
        st.fail([(failed, "simulator exited with status 1", "")])


def test_failures_survive_a_project_round_trip_and_a_scan_leaves_their_group_out(home, study):
    results, model = study
    plain = best_designs(model, SPACE, top=3, level=None).rows
    ws, _ = create_workspace("measured")
    with_upload_failures(ws, results, plain.loc[[0], PARAMS])  # the design ranked best failed when measured
    with_simulator_failure(ws, plain.loc[[1], PARAMS], results.loc[[0], PARAMS])  # the second failed to simulate
    elsewhere = plain.loc[[2], PARAMS].assign(**{PARAMS[0]: 12345}, status="failed", error="on an earlier space")
    ws.record_failures("old.csv", "earlier", elsewhere)  # no design of this space: not exported (load refuses it)
    ws.set_model(model, "stepwise")
    data = export_project(ws).data
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert "failures.csv" in zf.namelist()
    copy, _ = create_workspace("copy")
    import_project(copy, data, "p.zip")
    import_project(copy, data, "p.zip")  # the same zip again: its failures are not recorded twice
    got = failed_points(copy, PARAMS)
    assert points(got) == points(plain.loc[[0, 1]])
    assert sorted(got["error"]) == ["RuntimeFailedConfig", "simulator exited with status 1"]
    assert [c.name for c in copy.campaigns()] == ["failures of project p.zip"]
    scan = best_designs(copy.get("model").value, SPACE, top=2, level=None,
                        results=pd.concat([copy.get("results").value.table, got], ignore_index=True))
    assert scan.left_out == 2  # neither failed design's group is recommended
    assert scan.rows.loc[0, "predicted"] == pytest.approx(plain.loc[2, "predicted"], rel=1e-12)


def rezip(data: bytes, failures_text: str | None) -> bytes:
    """*data*'s project zip with ``failures.csv`` replaced by *failures_text* (left out when None)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if info.filename != "failures.csv":
                out.writestr(info.filename, src.read(info.filename))
        if failures_text is not None:
            out.writestr("failures.csv", failures_text)
    return buf.getvalue()


def test_a_malformed_failures_csv_is_named_and_loads_nothing(home, study):
    results, _ = study
    ws, _ = create_workspace("measured")
    with_upload_failures(ws, results, results.loc[[0, 1], PARAMS])
    data = export_project(ws).data
    good = pd.read_csv(io.BytesIO(zipfile.ZipFile(io.BytesIO(data)).read("failures.csv")))
    assert len(good) == 2 and list(good.columns) == PARAMS + ["status", "error"]
    other, _ = create_workspace("other")
    before = other.revision
    off_space = good.copy()
    off_space.loc[1, PARAMS[0]] = 12345
    ran = good.assign(status=["failed", " OK "])
    for bad, message in [(off_space.to_csv(index=False), f"failures.csv: row 2: {PARAMS[0]} = 12345 is not a value"),
                         (good.assign(note="x").to_csv(index=False), "failures.csv: unknown column.*note"),
                         (good.drop(columns=PARAMS[1]).to_csv(index=False), f"failures.csv: lacks.*{PARAMS[1]}"),
                         (ran.to_csv(index=False), "failures.csv: row 2: status 'OK' means the design ran")]:
        with pytest.raises(GpudseError, match=message):
            import_project(other, rezip(data, bad), "bad.zip")
        assert other.revision == before and other.campaigns() == []  # atomic: nothing loaded
    import_project(other, rezip(data, None), "old.zip")  # a zip saved before failures.csv existed
    assert other.get("results").value is not None and failed_points(other, PARAMS) is None


def test_lookup_takes_every_status_meaning_success_as_the_upload_does():
    """ok, success, succeeded, done and empty (any case, padded) ran; anything else failed."""
    df = pd.DataFrame({"a": [1, 2, 3, 4, 5, 6, 7], "time_ms": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, np.nan],
                       "status": ["ok", " Success", "SUCCEEDED", "done ", None, "RuntimeFailedConfig", "ok"]})
    t = LookupTable.from_frame(df, "time_ms", status_column="status")
    got = t.answer(np.arange(7).reshape(-1, 1))
    assert [v for v, _ in got] == [1.0, 2.0, 3.0, 4.0, 5.0, None, None]
    assert got[5][1] == "status = RuntimeFailedConfig" and "not a number" in got[6][1]
    with pytest.raises(TableLookupError, match="no row has status = 'ok' or another status meaning success"):
        LookupTable.from_frame(df.assign(status="CompileFailedConfig"), "time_ms", status_column="status")
