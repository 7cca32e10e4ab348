"""One fit entry point (``model.registry.fit_model``) for every front end and model kind, and the paper
model's fixed settings in one place (``stepwise.PAPER_SETTINGS``; what may be given with it,
``learners.PAPER_TUNABLE``)."""

from __future__ import annotations

import ast
import json

import numpy as np
import pytest

from conftest import ROOT
from gpudse_core import load_preset, sample
from gpudse_core.cli import main
from gpudse_core.errors import GpudseError
from gpudse_core.model.learners import paper_conflicts, stepwise_settings
from gpudse_core.model.registry import fit_model
from gpudse_core.model.stepwise import ABSOLUTE_THRESHOLD, PAPER_SETTINGS
from gpudse_core.sim.simulator import simulate


@pytest.fixture(scope="module")
def data():
    space = load_preset("stargazer")
    pts = sample(space, 60, seed=5).points
    return pts.assign(cycles=simulate(pts, "matMul", noise=0.01, seed=5).cycles), list(space.parameter_names)


def test_the_paper_models_settings_are_paper_settings_and_only_the_tunable_ones_change():
    assert stepwise_settings("paper") == PAPER_SETTINGS
    assert stepwise_settings("paper", given={"theta": 0.02})["theta"] == 0.02
    absolute = stepwise_settings("paper", given={"threshold_rule": "absolute"})
    assert absolute["theta"] == absolute["phi"] == ABSOLUTE_THRESHOLD  # §5.2's text: θ = φ = 0.01
    assert stepwise_settings("paper", 3) is None  # Stargazer 1.0 tries pairs only
    # a fixed setting may be restated with the paper's own value, never changed
    assert paper_conflicts({"robust": PAPER_SETTINGS["robust"], "max_order": 2, "theta": 0.5}) == []
    assert paper_conflicts({"knots": 4, "robust": "huber", "theta": 0.5}) == ["knots", "robust"]
    with pytest.raises(GpudseError, match="knots: the paper model is Stargazer 1.0"):
        stepwise_settings("paper", given={"knots": 4})


def test_the_command_and_the_core_fit_the_same_paper_model(data, tmp_path, capsys):
    table, params = data
    csv = tmp_path / "d.csv"
    table.to_csv(csv, index=False)
    core = fit_model("paper", table, "cycles", params, stepwise_kw={"theta": 0.001})
    for flags in (["--model", "paper"], ["--preset", "stargazer"]):
        out = tmp_path / "m.json"
        assert main(["fit", str(csv), "--response", "cycles", "--params", ",".join(params), "--theta", "0.001",
                     *flags, "-o", str(out), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        saved = json.loads(out.read_text())
        assert doc["terms"] == core.terms
        np.testing.assert_allclose(saved["coefficients"], core.coefficients, rtol=1e-12)
        assert doc["settings"]["reference"] is True and doc["settings"]["theta"] == 0.001


def test_the_command_and_the_core_fit_the_same_stepwise_model(data, tmp_path, capsys):
    table, params = data
    csv = tmp_path / "d.csv"
    table.to_csv(csv, index=False)
    core = fit_model("stepwise", table, "cycles", params, transform=None, stepwise_kw={"knots": 4})
    out = tmp_path / "m.json"
    assert main(["fit", str(csv), "--response", "cycles", "--params", ",".join(params), "--knots", "4",
                 "-o", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["terms"] == core.terms and doc["settings"]["knots"] == 4


def test_a_constant_parameter_is_left_out_with_a_note(data):
    table, params = data
    one = table.assign(simd=32)
    m = fit_model("stepwise", one, "cycles", params, transform=None)
    assert "simd" not in m.parameters and any("simd" in n and "left out" in n for n in m.notes)


def test_no_front_end_fits_a_model_but_through_the_registry():
    """The command line, the dashboard, the search and the workspace call ``registry.fit_model``; only the
    model package itself runs the estimator (``StepwiseRegression(...)``, ``fit_stepwise``)."""
    fronts = [*(ROOT / "gpudse_core").rglob("*.py"), *(ROOT / "dashboard").glob("*.py"), *(ROOT / "pages").glob("*.py"),
              ROOT / "app.py"]
    found = []
    for path in fronts:
        if (ROOT / "gpudse_core" / "model") in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for n in ast.walk(tree):
            if not isinstance(n, ast.Call):
                continue
            name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            if name in ("fit_stepwise", "stepwise_fit", "fit_kind", "fit_learner") or (
                    name == "StepwiseRegression" and (n.args or n.keywords)):
                found.append(f"{path.relative_to(ROOT)}:{n.lineno} {name}")
    assert not found, "fits outside model.registry.fit_model: " + ", ".join(found)
