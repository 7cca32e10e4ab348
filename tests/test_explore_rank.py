"""Explore's best rows ranked by the prediction they show (explore/designs.py, ``_scan_guarded``): the scan
bounds the model's equation, the neighbour envelope then raises predictions in unseen corners
(docs/models.md, "Unseen corners"); the rows must be the best by the raised (guarded) prediction, exactly
what predicting every feasible design and ranking would give."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from explore_models import TableModel, brute_force_by_prediction, positions

from gpudse_core import GpudseError
from gpudse_core.explore.best import equation_of
from gpudse_core.explore.designs import best_designs
from gpudse_core.model.stepwise import inverse_transform
from gpudse_core.space.design import DesignSpace, Parameter


class HeldModel(TableModel):
    """A table model with a neighbour envelope of known structure: designs whose (a, b) positions lie in
    *corner* are raised to at least about *floor* (a hold from below, as the default model holds an unseen
    corner of overlapping terms); with *lower* they are instead held down to at most that."""

    def __init__(self, space, intercept, terms, corner, floor, lower=False, **kw):
        super().__init__(space, intercept, terms, **kw)
        self.corner, self.floor, self.lower = set(corner), float(floor), lower
        # what marks a model with an envelope: the training responses (transformed scale) it holds to
        self.neighbours = SimpleNamespace(z=np.array([5.0, 12.0, 20.0]))

    def linear_predictor(self, X: pd.DataFrame) -> np.ndarray:
        return self.linear(X)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        z = self.bound(self.linear(X))[0]
        ab = zip(positions(self.space, "a", X["a"]).tolist(), positions(self.space, "b", X["b"]).tolist())
        inside = np.array([k in self.corner for k in ab], dtype=bool)
        floor = self.floor + z / 100  # a neighbourhood's own value, as the fastest of its nearest designs
        held = np.minimum(z, floor) if self.lower else np.maximum(z, floor)
        return inverse_transform(np.where(inside, held, z), self.transform)


def _space() -> DesignSpace:
    return DesignSpace((Parameter("a", tuple(range(1, 9))), Parameter("b", tuple(range(1, 9))),
                        Parameter("c", (1, 2, 4, 8)), Parameter("d", (0, 1))), name="corner").check()


def _model(**kw) -> HeldModel:
    space = _space()
    # a and b: the lower the position the faster; c a small step; d unread. Every (a, b) with both in the
    # first three positions is a corner held up to 30 (slower than every other design but (8, 8)'s 30.3)
    terms = [(("a",), np.arange(8.0) * 2), (("b",), np.arange(8.0) * 2), (("c",), np.array([0, 0.1, 0.2, 0.3]))]
    corner = {(i, j) for i in range(3) for j in range(3)}  # held to floor + z / 100: no two tie
    return HeldModel(space, 1.0, terms, corner, kw.pop("floor", 30.0), **kw)


def test_an_unseen_corner_held_up_is_not_recommended_first():
    """The equation's best design (a = b = 1) lies in the held corner: ranked by the equation it comes
    first showing 30.01; ranked by the shown prediction the rows are the brute-force best and avoid the corner."""
    model, space = _model(), _space()
    old = best_designs(model, space, top=3, level=None, rank="equation")
    assert (old.rows.a.iloc[0], old.rows.b.iloc[0]) == (1, 1) and old.rows.predicted.iloc[0] == pytest.approx(30.01)
    new = best_designs(model, space, top=3, level=None)
    expected = brute_force_by_prediction(model, space, 3)
    assert new.rows.predicted.tolist() == [e["predicted"] for e in expected]
    assert new.rows.predicted.tolist() == pytest.approx([7.0, 7.1, 7.2])  # a or b at position 3, the other 0
    assert not any((a <= 3 and b <= 3) for a, b in zip(new.rows.a, new.rows.b))
    assert new.rows.designs.tolist() == [len(e["designs"]) for e in expected]
    assert not new.notes  # proven: nothing beyond the scanned groups can enter


def test_guarded_rank_is_brute_force_at_every_depth():
    """Holds reaching deeper than the first scan (every top from 1 to 12, min goal): the rows are the
    distinct predictions of every feasible design, best first."""
    model, space = _model(floor=9.05), _space()  # the corner lands among the others, tying none
    for top in (1, 5, 12):
        got = best_designs(model, space, top=top, level=None)
        assert got.rows.predicted.tolist() == [e["predicted"] for e in brute_force_by_prediction(model, space, top)]


def test_a_hold_that_improves_a_scanned_group_is_said():
    """A hold both ways can lower a prediction (min goal), and for a max goal a raise improves one: there
    the exactness argument stops, and a note says so."""
    model, space = _model(floor=0.5, lower=True), _space()
    model.neighbours.z = np.array([0.5, 5.0, 12.0])  # a held value is one of the training responses or above
    got = best_designs(model, space, top=3, level=None)
    assert got.rows.predicted.iloc[0] == pytest.approx(0.51)
    assert any("better prediction than the model's equation" in n for n in got.notes)
    raised = _model(floor=40.0)  # the corner raised above every other design: the best for a max goal
    raised.neighbours.z = np.array([5.0, 41.0])  # (a neighbour that slow: what it is raised to)
    top = best_designs(raised, space, top=3, level=None, maximize=True)
    assert any("an unseen corner is held to a better prediction" in n for n in top.notes)
    assert not any("better prediction" in n for n in best_designs(raised, space, top=3, level=None).notes)
    # the 4th prediction (1.3, a = b = 1) better than every training response (2 and 9; the corner's others
    # held down to 2.03-2.1, the 5th group scanned among them): no hold can beat it, exact and no note
    low = _model(floor=2.0, lower=True)
    low.neighbours.z = np.array([2.0, 9.0])
    got = best_designs(low, space, top=4, level=None)
    assert got.rows.predicted.tolist() == [e["predicted"] for e in brute_force_by_prediction(low, space, 4)]
    assert not any("better prediction" in n for n in got.notes)


def test_equation_of_a_model_without_envelope_is_its_prediction():
    model, space = TableModel(_space(), 1.0, [(("a",), np.arange(8.0))]), _space()
    X = space.frame(space.decode(np.arange(10)))
    assert equation_of(model) == model.predict
    held = _model()
    np.testing.assert_allclose(equation_of(held)(X), held.bound(held.linear(X))[0])
    with pytest.raises(GpudseError, match="unknown rank 'best'"):
        best_designs(model, space, top=3, level=None, rank="best")
