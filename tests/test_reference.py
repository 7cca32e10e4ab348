"""The ``paper`` model is Stargazer 1.0 exactly: golden results of R's splines::ns and lm.

Fixtures: tests/fixtures/stargazer_reference.json (data sets of our own) and stargazer_matrix.json
(the authors' training half in ../shared, R's results only), both written by
tests/fixtures/r/make_stargazer_reference.py with tests/fixtures/r/stargazer_reference.R.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from gpudse_core.model.fitted import StepwiseModel
from gpudse_core.model.splines import ns_basis, reference_knots
from gpudse_core.model.stepwise import PAPER_SETTINGS, FitError, fit_stepwise

FIXTURES = ROOT / "tests" / "fixtures"
CASES = json.loads((FIXTURES / "stargazer_reference.json").read_text())["cases"]
RTOL = 1e-8


def close(a, b, scale: float = 1.0) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=RTOL,
                               atol=1e-12 * scale)


def fit_case(c: dict) -> StepwiseModel:
    settings = {**PAPER_SETTINGS, "theta": c["theta"], "phi": c["phi"], "threshold_rule": c["rule"]}
    return fit_stepwise(pd.DataFrame(c["data"]), c["response"], **settings)


@pytest.mark.parametrize("name", sorted(CASES))
def test_paper_model_equals_r(name):
    c = CASES[name]
    r = c["r"]
    m = fit_case(c)
    assert m.terms == r["terms"]
    left_out = [note.split(":")[0] for note in m.notes if "left out" in note]
    assert left_out == list(r["dropped"])
    close(m.r2, r["r2"])
    close(m.adj_r2, r["adj_r2"])
    scale = max(abs(v) for v in r["coefficients"])
    close(m.coefficients, r["coefficients"], scale)
    close(m.predict(pd.DataFrame(c["data"]).drop(columns=c["response"])), r["fitted"])
    # new points, some beyond the training ranges (ns continues linearly there): R's predictions, but
    # for the few beyond the guard's band, which are bounded and flagged
    det = m.predict_details(pd.DataFrame(c["points"]))
    bounded = det["bounded"].to_numpy()
    rp = np.asarray(r["predictions"])
    assert (~bounded).sum() >= 3
    close(det["predicted"].to_numpy()[~bounded], rp[~bounded])
    lo, hi = m.bounds()
    assert np.all((rp[bounded] < lo) | (rp[bounded] > hi))
    # every step of Table 1: the same candidates, each with R's R² and adjusted R², the same choice
    steps = [s for s in m.trace if s["candidates"]]
    assert len(steps) == len(r["steps"])
    for s, rs in zip(steps, r["steps"]):
        assert s["kind"] == rs["kind"]
        assert list(s["r2s"]) == list(s["adj_r2s"]) == [row["term"] for row in rs["candidates"]]
        for row in rs["candidates"]:
            close(s["r2s"][row["term"]], row["r2"])
            close(s["adj_r2s"][row["term"]], row["adj_r2"])
        assert (s["chosen"], s["accepted"]) == (rs["chosen"], rs["accepted"])
        assert s["metric"] == ("r2" if s["kind"] == "initial" else "adj_r2")
        assert s["candidates"] == s["r2s" if s["metric"] == "r2" else "adj_r2s"]


def test_cases_cover_aliasing_skipping_and_both_spacings():
    """The fixtures exercise what makes the reference differ from a naive fit."""
    assert CASES["aliased"]["r"]["aliased"] > 0 and CASES["small"]["r"]["aliased"] > 0
    small = fit_case(CASES["small"])
    assert any("undefined" in why for s in small.trace for why in s["skipped"].values())
    assert len(small.coefficients) == len(CASES["small"]["r"]["coefficients"])  # aliased columns left out
    spacings = {reference_knots(v)[1] for c in CASES.values() for k, v in c["data"].items()
                if k != "y" and reference_knots(v) is not None}
    assert {"even", "geometric", "even (a geometric spacing needs positive values)"} <= spacings


def test_reference_knots():
    k, how = reference_knots([1, 2, 4, 8, 16, 16, 1])
    assert how == "geometric"
    close(k, [2, 4, 8])
    k, how = reference_knots(np.arange(1, 10))  # 7 distinct − 2 interior capped at 3, midrange = mean
    assert how == "even"
    close(k, [3, 5, 7])
    k, how = reference_knots([10, 20, 30, 30, 30])  # distinct values, not rows, decide
    assert (how, list(k)) == ("even", [20.0])
    k, how = reference_knots([2, 3, 5, 9])  # midrange 5.5 vs mean 4.75: geometric, two knots
    assert how == "geometric"
    close(k, [2 * 4.5 ** (1 / 3), 2 * 4.5 ** (2 / 3)])
    k, how = reference_knots([99.0, 100.0, 101.5])  # midrange 100.25 within 1 % of the mean 100.17
    assert how == "even"
    assert reference_knots([1, 2, 1, 2]) is None


def test_ns_basis_is_linear_beyond_the_boundary_knots():
    knots = [1.0, 2.0, 4.0, 8.0, 16.0]
    x = np.array([16.0, 17.0, 18.0, 30.0, 1.0, 0.0, -1.0])
    b = ns_basis(x, knots)
    assert b.shape == (7, 4)
    close(b[2] - b[1], b[1] - b[0])  # constant slope to the right
    close(b[3] - b[0], 14 * (b[1] - b[0]))
    close(b[6] - b[5], b[5] - b[4])  # and to the left
    np.testing.assert_array_equal(ns_basis([1.0], knots), np.zeros((1, 4)))  # ns without intercept: 0 at lo


def test_paper_model_saves_and_loads(tmp_path):
    c = CASES["pow2"]
    m = fit_case(c)
    m.save(tmp_path / "m.json")
    back = StepwiseModel.load(tmp_path / "m.json")
    assert back.bases["blk"].kind == "ns"
    pts = pd.DataFrame(c["points"])
    np.testing.assert_array_equal(back.predict(pts), m.predict(pts))
    assert back.bound_margin == m.bound_margin is not None and back.transform == "none"
    assert back.trace == json.loads(m.to_json())["trace"]


def test_paper_thresholds_relative_and_absolute():
    """θ relative to R² (default 0) versus the paper text's absolute θ = 0.01: the absolute rule stops
    at the first gain below 0.01, which the relative one accepts."""
    c = CASES["pow2_absolute"]
    assert c["rule"] == "absolute" and fit_case(c).terms == c["r"]["terms"]
    relative = fit_case({**c, "theta": 0.0, "phi": 0.0, "rule": "relative"})
    assert len(relative.terms) > len(c["r"]["terms"])
    assert relative.terms[:len(c["r"]["terms"])] == c["r"]["terms"]


def test_forced_terms_and_errors():
    data = pd.DataFrame(CASES["pow2"]["data"])
    m = fit_stepwise(data, "y", **{**PAPER_SETTINGS, "forced": ["simd:blk"], "search": False})
    assert m.terms == ["simd", "blk", "simd:blk"]
    assert len(m.coefficients) == 1 + 2 + 4 + 8
    with pytest.raises(FitError, match="flag"):
        fit_stepwise(data, "y", **{**PAPER_SETTINGS, "forced": ["flag"]})
    with pytest.raises(FitError, match="pairs only"):
        fit_stepwise(data, "y", **{**PAPER_SETTINGS, "forced": ["simd:blk:smp"]})
    with pytest.raises(FitError, match="3 or more distinct"):
        fit_stepwise(data[["flag", "y"]], "y", **PAPER_SETTINGS)
    with pytest.raises(FitError, match="not auto"):
        fit_stepwise(data, "y", **{**PAPER_SETTINGS, "response_transform": "auto"})


def test_matrix_training_is_the_reference(shared):
    """Stargazer's own training half: blk, simd, simd:blk, smp, smp:blk, intra; R² 0.98059; 33
    coefficients, each equal to R's, and R's predictions at new design points."""
    data = pd.read_csv(shared / "data" / "stargazer" / "matrix-training.csv")
    fx = json.loads((FIXTURES / "stargazer_matrix.json").read_text())
    m = fit_stepwise(data, "runtime", **PAPER_SETTINGS)
    assert m.terms == ["blk", "simd", "simd:blk", "smp", "smp:blk", "intra"] == fx["r"]["terms"]
    assert f"{m.r2:.5f}" == "0.98059"
    assert len(m.coefficients) == 33
    close(m.r2, fx["r"]["r2"])
    close(m.coefficients, fx["r"]["coefficients"], max(map(abs, fx["r"]["coefficients"])))
    det = m.predict_details(pd.DataFrame(fx["points"]))
    assert not det["bounded"].any()  # design points of Table 2: inside the band
    close(det["predicted"], fx["r"]["predictions"])
    assert math.isclose(m.trace[0]["r2s"]["blk"], fx["r"]["steps"][0]["candidates"][0]["r2"], rel_tol=RTOL)
