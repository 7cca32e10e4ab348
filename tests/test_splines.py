"""Restricted cubic spline basis and knot placement against R's Hmisc/rms (golden fixture), and eq. (5)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from gpudse_core.errors import GpudseError
from gpudse_core.model.splines import QUANTILES, Basis, make_basis, place_knots, rcs_basis

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "rms_splines.json").read_text())
CASES = [(name, int(nk)) for name, c in FIXTURE["cases"].items() for nk in c["results"]]


def test_table1_quantiles_are_harrells_sequence():
    # Lee & Brooks Table 1 is seq(outer, 1 - outer, length = k) with outer = .1/.05/.025
    for k, q in QUANTILES.items():
        outer = 0.1 if k == 3 else (0.025 if k > 6 else 0.05)
        np.testing.assert_allclose(q, np.linspace(outer, 1 - outer, k), atol=1e-4)


@pytest.mark.parametrize("name, nk", CASES)
def test_quantile_knots_match_rms(name, nk):
    case = FIXTURE["cases"][name]
    expected = case["results"][str(nk)]["knots"]
    got = place_knots(np.array(case["x"]), nk, "quantile")
    if expected is None:
        assert got.size == 0
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, nk", CASES)
def test_basis_matches_rms(name, nk):
    res = FIXTURE["cases"][name]["results"][str(nk)]
    if res["knots"] is None:
        pytest.skip("R finds fewer than 3 knots here")
    x = np.array(FIXTURE["cases"][name]["x"][:12])
    np.testing.assert_allclose(rcs_basis(x, res["knots"], "harrell"), np.array(res["basis_norm2"]), rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(rcs_basis(x, res["knots"], "none"), np.array(res["basis_norm0"]), rtol=1e-10,
                               atol=1e-8)


def test_eq5_by_hand():
    t = [1.0, 2.0, 4.0, 8.0]
    x = np.array([0.0, 1.5, 3.0, 5.0, 10.0])
    b = rcs_basis(x, t, norm="none")
    p = lambda u: np.maximum(u, 0) ** 3  # noqa: E731
    for j in range(2):
        ref = p(x - t[j]) - p(x - t[2]) * (t[3] - t[j]) / (t[3] - t[2]) + p(x - t[3]) * (t[2] - t[j]) / (t[3] - t[2])
        np.testing.assert_allclose(b[:, j + 1], ref)
    np.testing.assert_allclose(b[:, 0], x)


@given(st.lists(st.floats(-50, 50), min_size=3, max_size=6, unique=True))
def test_linear_beyond_the_outer_knots(knots):
    t = np.sort(np.array(knots))
    if np.min(np.diff(t)) < 1e-3:
        return
    span = t[-1] - t[0]
    x = t[-1] + span * np.array([1.0, 2.0, 3.0])
    b = rcs_basis(x, t)
    np.testing.assert_allclose(np.diff(b, n=2, axis=0), 0, atol=1e-7 * max(1.0, np.abs(b).max()))
    x = t[0] - span * np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(rcs_basis(x, t)[:, 1:], 0)


def test_even_knots_are_stargazers():
    x = np.array([1, 2, 4, 8, 16] * 10, dtype=float)
    np.testing.assert_allclose(place_knots(x, 4, "even"), [1, 6, 11, 16])
    np.testing.assert_allclose(place_knots(np.array([8.0, 16.0, 32.0] * 5), 4, "even"), [8, 20, 32])  # ≤ distinct
    assert place_knots(np.array([1.0, 2.0] * 5), 4, "even").size == 0


def test_fallbacks_and_coding():
    assert make_basis("a", np.array([1, 2] * 10), knots=4).kind == "linear"
    assert make_basis("a", np.array([8, 16, 32] * 10), knots=4).kind == "rcs"
    b = make_basis("s", np.array(["lrr", "gto", "gto", "two"], dtype=object))
    assert b.kind == "categorical" and b.levels == ["gto", "lrr", "two"] and b.width == 2
    np.testing.assert_array_equal(b.evaluate(np.array(["gto", "two"], dtype=object)), [[0, 0], [0, 1]])
    with pytest.raises(GpudseError, match="not seen in training"):
        b.evaluate(np.array(["fifo"], dtype=object))
    assert Basis.from_dict(b.to_dict()) == b


def test_bad_knots_rejected():
    with pytest.raises(GpudseError, match="at least 3 knots"):
        rcs_basis(np.arange(3.0), [1, 2])
    with pytest.raises(GpudseError, match="strictly increasing"):
        rcs_basis(np.arange(3.0), [1, 3, 2])
    with pytest.raises(GpudseError, match="unknown knot placement"):
        place_knots(np.arange(10.0), 4, "quartile")
