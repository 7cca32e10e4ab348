"""Project zips (round trip, unsafe archives rejected) and the standalone HTML report."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from gpudse_core import GpudseError, load_preset, sample
from gpudse_core.model.stepwise import fit_stepwise
from gpudse_core.report import figures
from gpudse_core.report.html import html_report
from gpudse_core.sim.simulator import simulate
from gpudse_core.workspace.project import Project, load_project, save_project


@pytest.fixture(scope="module")
def project():
    space = load_preset("stargazer")
    s = sample(space, 120, seed=4)
    results = s.table().join(simulate(s.table(), "CP"))
    model = fit_stepwise(results[list(space.parameter_names) + ["cycles"]], "cycles", transform="log")
    return Project(space, json.loads(s.to_json()), results, "cycles", model, {"theta": 0.01})


def test_round_trip(project):
    back = load_project(save_project(project))
    assert back.space.dimensions == project.space.dimensions
    assert back.results.shape == project.results.shape and back.results_response == "cycles"
    np.testing.assert_allclose(back.model.predict(project.results), project.model.predict(project.results))
    assert back.samples["meta"]["seed"] == 4 and back.settings == {"theta": 0.01}


def zip_with(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, b in entries.items():
            zf.writestr(n, b)
    return buf.getvalue()


@pytest.mark.parametrize(
    "entries, pattern",
    [
        ({"../evil.txt": b"x"}, "unsafe path"),
        ({"/etc/passwd": b"x"}, "unsafe path"),
        ({"a/../../b": b"x"}, "unsafe path"),
        ({"C:/win.ini": b"x"}, "unsafe path"),
        ({"manifest.json": b"{}", "space.yaml": b"x", "payload.pkl": b"\x80"}, "unexpected entry"),
        ({"space.yaml": b"parameters: []"}, "manifest.json is missing"),
        ({"manifest.json": b'{"schema": "other/1"}', "space.yaml": b"x"}, "schema"),
        ({"manifest.json": b"{not json", "space.yaml": b"x"}, "malformed JSON"),
    ],
)
def test_unsafe_or_broken_archives_are_rejected(entries, pattern):
    with pytest.raises(GpudseError, match=pattern):
        load_project(zip_with(entries))


def test_not_a_zip_and_bad_parts(project):
    with pytest.raises(GpudseError, match="not a zip"):
        load_project(b"hello")
    saved = zipfile.ZipFile(io.BytesIO(save_project(project)))
    good = {n: saved.read(n) for n in saved.namelist()}
    broken = {**good, "model.json": json.dumps({"schema": "gpudse.model/1", "bases": "x"}).encode()}
    with pytest.raises(GpudseError, match="model.json"):
        load_project(zip_with(broken))


def test_zip_bomb_is_refused():
    from gpudse_core import limits

    with limits.override(document_bytes=1000), pytest.raises(GpudseError, match="manifest.json declares 5,000 bytes"):
        load_project(zip_with({"manifest.json": b" " * 5000, "space.yaml": b"x"}))


def test_html_report_is_standalone(project):
    page = html_report(project, [figures.contributions(project.model),
                                 figures.predicted_vs_observed(project.model, project.results)],
                       {"Validation": project.results.head(3)})
    assert page.startswith("<!doctype html>") and "Plotly.newPlot" in page
    assert "cdn.plot.ly" not in page.split("<body>")[1][:2000] and page.count("<script") >= 2
    assert "R² " in page and project.model.terms[0] in page and "933,120" in page
