"""Corners the training rows never showed, though every interaction term's own combinations were seen
(gpudse_core/model/support.py): unions of overlapping terms, and a binned parameter beyond the values seen
with the others' levels; the default model holds such predictions to their neighbours (fitted.guarded)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core.errors import GpudseError
from gpudse_core.model.splines import Basis
from gpudse_core.model.support import Support, joint_combinations


def _bases(*names: str) -> dict[str, Basis]:
    return {p: Basis(p, "linear", lo=0.0, hi=300.0) for p in names}


def _corner_rows() -> pd.DataFrame:
    """Every (a, b), (b, c) and (a, c) combination of two levels each, but not a = b = c = 1: the three
    two-way terms each saw all their combinations, the three-way corner none."""
    rows = [r for r in itertools.product([0.0, 1.0], repeat=3) if r != (1.0, 1.0, 1.0)]
    return pd.DataFrame(rows * 2, columns=["a", "b", "c"])


def test_unions_of_overlapping_terms_are_recorded_up_to_four_parameters():
    got = joint_combinations([("b", "a"), ("b", "c"), ("c", "d"), ("d", "e"), ("f", "g")], list("abcdefg"))
    # the terms first as given, then the unions sharing a parameter, in the data's order; none over four
    # parameters (a, b, c, d, e) and none joining terms that share nothing (f, g)
    assert got == [("b", "a"), ("b", "c"), ("c", "d"), ("d", "e"), ("f", "g"),
                   ("a", "b", "c"), ("b", "c", "d"), ("c", "d", "e"), ("a", "b", "c", "d"), ("b", "c", "d", "e")]


def test_a_corner_no_training_row_had_is_outside_though_every_term_saw_its_combination():
    sup = Support.build(_corner_rows(), _bases("a", "b", "c"), [("a", "b"), ("b", "c"), ("a", "c")])
    assert set(sup.joint) == {("a", "b", "c")}
    X = pd.DataFrame({"a": [1.0, 1.0, 0.0, 1.0], "b": [1.0, 1.0, 1.0, 0.0], "c": [1.0, 0.0, 1.0, 1.0]})
    own, joint = sup.outside_parts(X)
    assert not own.any() and joint.tolist() == [True, False, False, False]
    assert sup.reasons(X).tolist() == ["a=1 with b=1 and c=1 not seen in training", "", "", ""]
    # a parameter beyond its range is named for itself, not again for every union holding it
    far = pd.DataFrame({"a": [2.0], "b": [1.0], "c": [1.0]})
    assert sup.reasons(far)[0] == "a=2 outside the training range [0, 1]"
    assert sup.outside_parts(far)[0].tolist() == [True]


def test_a_union_with_more_combinations_than_training_rows_is_not_recorded():
    """With fewer training rows than combinations most combinations are unseen by construction: not flagged."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({p: rng.integers(0, 8, 40).astype(float) for p in "abc"})
    sup = Support.build(X, _bases("a", "b", "c"), [("a", "b"), ("b", "c")])
    assert set(sup.seen) == {("a", "b"), ("b", "c")} and not sup.joint  # 8 × 8 × 8 = 512 > 40 rows


def _binned_rows() -> pd.DataFrame:
    """x has 200 distinct values (binned); at g = 0 the training rows reach x = 100, at g = 1 x = 200."""
    x = np.concatenate([np.arange(1.0, 101.0), np.arange(1.0, 201.0)])
    return pd.DataFrame({"x": x, "g": np.r_[np.zeros(100), np.ones(200)]})


def test_a_binned_value_beyond_those_seen_with_the_other_levels_is_outside():
    sup = Support.build(_binned_rows(), _bases("x", "g"), [("x", "g")])
    assert sup.params["x"].kind == "bins"
    edges = np.asarray(sup.params["x"].edges)
    inside_bin = float(np.floor(edges[edges > 100.0][0]))  # past 100, in the bin that holds x = 100
    assert inside_bin > 100.0
    X = pd.DataFrame({"x": [inside_bin, 100.0, 50.0, inside_bin], "g": [0.0, 0.0, 0.0, 1.0]})
    # the bins alone see (bin of x = 100, g = 0): the value beyond every g = 0 training row is outside only
    # by the range recorded per level of g
    assert Support(sup.params, sup.seen).outside(X).tolist() == [False] * 4
    own, joint = sup.outside_parts(X)
    assert own.tolist() == [True, False, False, False] and not joint.any()
    assert sup.reasons(X)[0] == f"x={inside_bin:g} beyond the values [1, 100] seen with g=0"


def test_unions_and_ranges_are_saved_and_checked():
    bases = _bases("a", "b", "c")
    sup = Support.build(_corner_rows(), bases, [("a", "b"), ("b", "c"), ("a", "c")])
    back = Support.from_dict(json.loads(json.dumps(sup.to_dict())), bases)
    assert set(back.joint) == set(sup.joint) and np.array_equal(back.joint[("a", "b", "c")], sup.joint[("a", "b", "c")])
    b2 = _bases("x", "g")
    sup2 = Support.build(_binned_rows(), b2, [("x", "g")])
    back2 = Support.from_dict(json.loads(json.dumps(sup2.to_dict())), b2)
    X = pd.DataFrame({"x": [150.0, 150.0], "g": [0.0, 1.0]})
    assert back2.reasons(X).tolist() == sup2.reasons(X).tolist()
    bad = sup2.to_dict()
    bad["ranges"][0]["high"] = bad["ranges"][0]["high"][:-1]
    with pytest.raises(GpudseError, match=r"'high' of the range of 'x' must be 2 numbers or nulls"):
        Support.from_dict(bad, b2)
    # a support written before (no unions, no ranges) reads and checks what it recorded
    old = {k: v for k, v in sup.to_dict().items() if k != "joint"}
    assert not Support.from_dict(old, bases).outside(pd.DataFrame({"a": [1.0], "b": [1.0], "c": [1.0]})).any()


@pytest.mark.slow  # one default fit: about 2 s of CPU
def test_a_corner_only_a_union_flags_is_held_from_below_only(monkeypatch):
    """The default model's guard: a row outside a term's support is held to its neighbours both ways, a row
    outside only by a union of terms only when predicted below every neighbour (an optimistic time)."""
    from gpudse_core.model.registry import fit_model

    rng = np.random.default_rng(3)
    train = pd.DataFrame({"a": rng.integers(1, 17, 50).astype(float), "b": rng.integers(1, 17, 50).astype(float)})
    train["t"] = np.exp(0.25 * train.a - 0.1 * train.b) * np.exp(rng.normal(0, 0.02, 50))
    # the guard alone: the forest blend (model/fallback.py) comes after it
    model = fit_model("stepwise", train, "t", ["a", "b"], transform="log", stepwise_kw={"blend": "off"})
    # beyond a's range the rise runs on (above every neighbour); beyond b's the fall does (below every one)
    X = pd.DataFrame({"a": [40.0, 64.0, 8.0, 8.0], "b": [8.0, 8.0, 40.0, 64.0]})
    z = model.bound(model.linear_predictor(X))[0]
    lo, hi = model.neighbours.envelope(X, model.bases)
    assert (z[:2] > hi[:2]).all() and (z[2:] < lo[2:]).all()
    both = model.guarded(X)
    assert both[2].all() and np.allclose(both[0], np.clip(z, lo, hi))  # outside a's or b's range: both ways
    none = np.zeros(4, dtype=bool)
    monkeypatch.setattr(type(model.support), "outside_parts", lambda self, X: (none, np.ones(len(X), dtype=bool)))
    zj, bounded, held = model.guarded(X)
    assert held.tolist() == [False, False, True, True] and bounded[2:].all()
    np.testing.assert_allclose(zj, np.r_[z[:2], lo[2:]])
