"""Encodings from the design space: log2 scale for powers of two and geometric
series (inside the Basis: callers pass raw values), categorical terms for few-valued parameters and
0/1 flags, distinct-value knots, the space file's ``scale:`` key, and the effect on a known function."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudse_core import load_preset, sample
from gpudse_core.errors import GpudseError
from gpudse_core.model import encoding
from gpudse_core.model.splines import Basis, distinct_knots, make_basis, place_knots, rcs_basis
from gpudse_core.model.stepwise import ALGORITHM1_SETTINGS, PAPER_SETTINGS, FitError, fit_stepwise
from gpudse_core.space.design import parse_space_text as load_space_text


@pytest.mark.parametrize("values, scale", [
    ([1, 2, 4, 8, 16], "log2"), ([8, 16, 32], "log2"), ([0.5, 1, 2, 64], "log2"), ([1, 3, 9, 27], "log2"),
    ([16, 32, 48, 64, 80, 96], "linear"), ([1, 2, 3, 4], "linear"), ([0, 1, 2, 4], "linear"), ([2, 4], "linear"),
    ([1.5, 2.5, 3.5], "linear"),
])
def test_infer_scale(values, scale):
    assert encoding.infer_scale(np.array(values * 3, dtype=float))[0] == scale


def test_plan_notes_and_categorical_levels():
    cols = {"blk": np.array([1, 2, 4, 8, 16] * 4), "flag": np.array([0, 1] * 10), "simd": np.array([8, 16, 32, 8] * 5),
            "tile": np.array([1, 2, 3, 4] * 5), "sched": np.array(["gto", "lrr"] * 10, dtype=object)}
    plan = encoding.plan(cols)
    assert (plan["blk"].scale, plan["blk"].categorical) == ("log2", False)
    assert plan["blk"].note == "blk: log2 scale (powers of two in the data)"
    assert plan["flag"].categorical and plan["flag"].note == "flag: categorical (a 0/1 flag)"
    assert plan["simd"].categorical and plan["simd"].note == "simd: categorical (3 distinct values)"
    assert (plan["tile"].scale, plan["tile"].categorical, plan["tile"].note) == ("linear", False, "")
    assert plan["sched"].categorical
    paper = encoding.plan(cols, "linear", categorical_levels=0)
    assert all(e.scale == "linear" and (e.categorical is False or k == "sched") for k, e in paper.items())
    given_ = encoding.plan(cols, {"blk": "linear", "tile": "log2"})
    assert given_["blk"].scale == "linear" and given_["tile"].note == "tile: log2 scale (set)"
    with pytest.raises(GpudseError, match="log2 scale needs positive"):
        encoding.plan({"z": np.array([0, 1, 2, 4, 8])}, {"z": "log2"})
    with pytest.raises(GpudseError, match="unknown scale"):
        encoding.plan(cols, "log10")


def test_basis_applies_the_encoding_to_raw_values():
    x = np.array([1, 2, 4, 8, 16, 32] * 5, dtype=float)
    b = make_basis("blk", x, knots=4, placement="distinct", scale="log2")
    assert b.scale == "log2" and b.label == "log2(blk)" and b.column_names[1] == "log2(blk)'"
    np.testing.assert_allclose(b.knots, distinct_knots(np.log2(x), 4))
    raw = np.array([1.0, 3.0, 32.0, 100.0])
    np.testing.assert_allclose(b.evaluate(raw), rcs_basis(np.log2(raw), b.knots))
    back = Basis.from_dict(b.to_dict())
    assert back == b and back.to_dict()["scale"] == "log2"
    with pytest.raises(GpudseError, match="needs positive values"):
        b.evaluate(np.array([0.0]))
    with pytest.raises(GpudseError, match="unknown scale"):
        Basis.from_dict({**b.to_dict(), "scale": "ln"})


def test_distinct_knots():
    u = np.arange(5.0)  # log2 of 1..16
    np.testing.assert_allclose(distinct_knots(u, 4), np.quantile(u, [0.05, 0.35, 0.65, 0.95]))
    np.testing.assert_allclose(distinct_knots(u, 6), u)  # no more distinct values than knots: all of them
    assert distinct_knots(np.array([1.0, 2.0]), 4).size == 0
    # uneven sampling does not move distinct-value knots; quantile knots follow the sample
    x = np.array([0.0] * 50 + [1, 2, 3, 4, 5, 6, 7, 8, 9] * 2)
    np.testing.assert_allclose(place_knots(x, 4, "distinct"), distinct_knots(np.arange(10.0), 4))


def test_numeric_categorical_levels_interpolate():
    b = make_basis("simd", np.array([8, 16, 32, 16]), categorical=True, scale="log2")
    assert b.levels == [8.0, 16.0, 32.0] and b.numeric_levels and b.column_names == ["simd=16", "simd=32"]
    np.testing.assert_allclose(b.evaluate([8, 16, 32]), [[0, 0], [1, 0], [0, 1]])
    # between levels: a linear blend on the modelling scale (log2 24 is 0.585 of the way from 16 to 32)
    w = np.log2(24 / 16)
    np.testing.assert_allclose(b.evaluate([24.0]), [[1 - w, w]])
    np.testing.assert_allclose(b.evaluate([64.0, 4.0]), [[0, 1], [0, 0]])  # beyond: the nearest level
    assert Basis.from_dict(b.to_dict()) == b


@given(st.lists(st.sampled_from([1, 2, 4, 8, 16, 32, 64]), min_size=3, max_size=40))
def test_basis_round_trip_and_raw_evaluation(values):
    x = np.array(values, dtype=float)
    if np.unique(x).size < 2:
        return
    b = make_basis("p", x, knots=5, placement="distinct", scale="log2")
    out = b.evaluate(x)
    assert out.shape == (x.size, b.width) and np.all(np.isfinite(out))
    np.testing.assert_array_equal(Basis.from_dict(b.to_dict()).evaluate(x), out)


def test_space_file_scale_key(tmp_path):
    text = """
schema: gpudse.space/1
name: s
parameters:
  - {name: threads, values: [64, 128, 192, 256], scale: log2}
  - {name: blk, values: {pow2: 1..16}}
  - {name: tile, values: [1, 2, 3, 4], scale: linear}
"""
    space = load_space_text(text, "s.yaml")
    assert space.parameter("threads").scale == "log2"
    scales, notes = encoding.scales_from_space(space)
    assert scales == {"threads": "log2", "blk": "log2", "tile": "linear"}
    assert "threads: log2 scale (space file)" in notes and any("blk: log2 scale (powers of two" in n for n in notes)
    again = load_space_text(space.to_yaml(), "again.yaml")
    assert again.parameter("threads").scale == "log2" and again.parameter("blk").scale == ""
    with pytest.raises(GpudseError, match="scale 'ln'"):
        load_space_text(text.replace("scale: log2", "scale: ln"), "bad.yaml")
    with pytest.raises(GpudseError, match="positive values"):
        load_space_text(text.replace("[64, 128, 192, 256]", "[0, 128]"), "bad.yaml")


def test_notes_on_the_fitted_model():
    pts = sample(load_preset("stargazer"), 200, seed=2).points
    y = 2e5 / pts.simd * (1 + 6 / pts.blk)
    m = fit_stepwise(pts.assign(y=y), "y", transform="log")
    assert "blk: log2 scale (powers of two in the data)" in m.notes
    assert "simd: categorical (3 distinct values)" in m.notes
    assert m.bases["blk"].scale == "log2" and m.bases["simd"].kind == "categorical"
    assert fit_stepwise(pts.assign(y=y), "y", transform="log", **PAPER_SETTINGS).notes == []


def test_robust_default_on_a_known_function():
    """y = 2e5/simd·(1 + 6/blk) + 4e4/√smp with 1 % noise: Algorithm 1 as the text reads
    (two even knots on raw values) stops at R² ≈ 0.96; the defaults find the same terms and fit to the
    noise."""
    pts = sample(load_preset("stargazer"), 300, seed=3).points
    rng = np.random.default_rng(0)
    y = (2e5 / pts.simd * (1 + 6 / pts.blk) + 4e4 / np.sqrt(pts.smp)) * np.exp(rng.normal(0, 0.01, len(pts)))
    paper = fit_stepwise(pts.assign(y=y), "y", **ALGORITHM1_SETTINGS)
    robust = fit_stepwise(pts.assign(y=y), "y")
    assert set(robust.terms) == set(paper.terms) == {"blk", "simd", "simd:blk", "smp"}
    assert paper.r2 < 0.97 and robust.r2 > 0.999
    test = sample(load_preset("stargazer"), 1000, seed=4).points
    truth = 2e5 / test.simd * (1 + 6 / test.blk) + 4e4 / np.sqrt(test.smp)
    assert np.mean(np.abs(robust.predict(test) - truth) / truth) < 0.01


def test_three_valued_scale_errors_are_fit_errors():
    df = pd.DataFrame({"a": [0.0, 1, 2, 4, 8] * 4, "y": np.arange(20.0)})
    with pytest.raises(FitError, match="log2 scale needs positive"):
        fit_stepwise(df, "y", scale={"a": "log2"})
