"""The neighbour envelope: the default stepwise model's prediction outside the training support is held
to the responses of its nearest training designs, flagged, and said (gpudse_core/model/envelope.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from gpudse_core.model.envelope import K, Neighbours
from gpudse_core.model.fitted import FitError, inverse_transform
from gpudse_core.model.registry import fit_model, load_model


def _table(n: int, seed: int) -> pd.DataFrame:
    """Two counts and a word; log time rises with a and falls with b, plus a step at c = "slow"."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"a": rng.integers(1, 17, n).astype(float), "b": rng.integers(1, 17, n).astype(float),
                      "c": rng.choice(["fast", "slow"], n)})
    d["t"] = np.exp(0.25 * d.a - 0.1 * d.b + 0.7 * (d.c == "slow")) * np.exp(rng.normal(0, 0.02, n))
    return d


@pytest.fixture(scope="module")
def model_and_data():
    train = _table(120, 3)
    # the envelope alone: the forest blend (model/fallback.py, tests/test_fallback.py) comes after it
    model = fit_model("stepwise", train, "t", ["a", "b", "c"], transform=None, stepwise_kw={"blend": "off"})
    far = pd.DataFrame({"a": [24.0, 32.0, 48.0, 64.0], "b": [1.0, 4.0, 9.0, 16.0], "c": ["slow", "fast"] * 2})
    return model, train, pd.concat([_table(60, 4).drop(columns="t"), far], ignore_index=True)


def _nearest_range(model, train: pd.DataFrame, row: pd.Series) -> tuple[float, float]:
    """Brute force: the responses of every training design at most as far as the K-th nearest (ties kept)."""
    d2 = np.zeros(len(train))
    for p, b in model.bases.items():
        if b.kind == "categorical":
            d2 += (train[p].astype(str) != str(row[p])).to_numpy(float)
            continue
        enc = np.log2 if b.scale == "log2" else (lambda v: v)
        x = enc(train[p].to_numpy(float))
        d2 += ((enc(float(row[p])) - x) / (np.ptp(x) or 1.0)) ** 2
    y = train["t"].to_numpy(float)[d2 <= np.sort(d2)[K - 1] + 1e-12]
    return float(y.min()), float(y.max())


def test_far_predictions_are_held_to_their_neighbours_and_say_so(model_and_data):
    model, train, X = model_and_data
    det = model.predict_details(X)
    outside = model.support.outside(X)
    z, mask, held = model.guarded(X)
    # the far rows lie beyond a's training range, where the log-linear rise in a runs on: held, flagged, said
    assert outside[-4:].all() and held[-4:].all() and det.bounded.iloc[-4:].all()
    assert det.extrapolation.iloc[-1].startswith("a=64 outside the training range [1, 16]; prediction held")
    assert not held[~outside].any()  # inside the support the model's own prediction stands
    own = inverse_transform(model.bound(model.linear_predictor(X))[0], model.transform)
    np.testing.assert_allclose(det.predicted.to_numpy()[~held], own[~held])
    for i in np.flatnonzero(held):
        lo, hi = _nearest_range(model, train, X.iloc[i])
        assert lo * (1 - 1e-9) <= det.predicted.iloc[i] <= hi * (1 + 1e-9)
        # held at an end of the envelope: one of the training responses itself
        assert np.isclose(train["t"].to_numpy(), det.predicted.iloc[i], rtol=1e-9).any()
    assert "prediction held" not in "".join(det.extrapolation[~held])


def test_the_envelope_is_saved_with_the_model_and_checked(model_and_data, tmp_path):
    model, _, X = model_and_data
    doc = json.loads(model.to_json())
    assert len(doc["neighbours"]["z"]) == 120 and set(doc["neighbours"]["values"]) == set(model.bases)
    back = load_model(doc)
    pd.testing.assert_frame_equal(back.predict_details(X), model.predict_details(X))
    # a file without it (written before the envelope) predicts as before: bounded only
    old = load_model({k: v for k, v in doc.items() if k != "neighbours"})
    assert old.neighbours is None and not old.guarded(X)[2].any()
    bad = json.loads(json.dumps(doc))
    bad["neighbours"]["values"]["a"] = bad["neighbours"]["values"]["a"][:-1]
    with pytest.raises(FitError, match=r"neighbours: the values of 'a' must be a list of 120 entries"):
        load_model(bad, source="m.json")
    bad = json.loads(json.dumps(doc))
    bad["neighbours"]["z"][0] = None
    with pytest.raises(FitError, match="m.json: neighbours: z must be"):
        load_model(bad, source="m.json")


def test_the_guard_is_the_same_for_each_copy_of_a_design(model_and_data):
    """The support and the envelope are checked once per distinct design of the model's parameters: copies
    of a design, differing only in a column the model does not read, get what the design gets alone."""
    model, _, X = model_and_data
    rows = X.iloc[[0, len(X) - 1, 1, len(X) - 2]].reset_index(drop=True)  # two inside, two far (held)
    alone = [model.guarded(rows.iloc[[i]]) for i in range(len(rows))]
    copies = pd.concat([rows] * 3, ignore_index=True).assign(unused=np.arange(12.0))
    z, bounded, held = model.guarded(copies)
    for i, (z1, b1, h1) in enumerate(alone):
        assert np.array_equal(z[i::4], np.repeat(z1, 3)) and (held[i::4] == h1[0]).all()
        assert (bounded[i::4] == b1[0]).all()
    assert held[1] and held[3] and not held[0]


def test_envelope_of_known_neighbours():
    """Four designs on a line and one word: the K nearest are found on the modelling scale."""
    from gpudse_core.model.splines import Basis

    class _B:  # the two things the envelope reads of a basis
        def __init__(self, kind, scale="linear", levels=()):
            self.kind, self.scale, self.levels = kind, scale, list(levels)

        numeric_levels = Basis.numeric_levels

    bases = {"x": _B("rcs", "log2"), "w": _B("categorical", levels=["p", "q"])}
    X = pd.DataFrame({"x": [1.0, 2.0, 4.0, 1024.0], "w": ["p", "p", "q", "q"]})
    nb = Neighbours.build(X, np.array([0.0, 1.0, 2.0, 10.0]), bases)
    lo, hi = nb.envelope(pd.DataFrame({"x": [1.5, 2048.0, -3.0], "w": ["p", "q", "p"]}), bases, k=2)
    np.testing.assert_array_equal(lo, [0.0, 2.0, 0.0])  # x=-3 cannot be placed on log2: only the word counts
    np.testing.assert_array_equal(hi, [1.0, 10.0, 1.0])


def test_the_paper_model_keeps_no_envelope():
    m = fit_model("paper", _table(60, 5).drop(columns="c"), "t", ["a", "b"])
    assert m.neighbours is None and "neighbours" not in json.loads(m.to_json())


def test_explore_names_the_best_rows_outside_the_training_rows():
    """Fitted where blk ≤ 8 only, the model's best design on the whole space has blk = 16: explore says so."""
    from gpudse_core import load_preset, sample
    from gpudse_core.explore.designs import best_designs
    from gpudse_core.sim.simulator import simulate

    space = load_preset("stargazer")
    pts = sample(space, 60, seed=3).points
    rows = pts.assign(cycles=simulate(pts, "matMul").cycles.to_numpy())
    rows = rows[rows.blk <= 8].reset_index(drop=True)
    model = fit_model("stepwise", rows, "cycles", list(space.parameter_names), transform=None)
    found = best_designs(model, space, top=3, level=None)
    outside = (found.rows.blk > 8).to_numpy()
    assert outside.any()
    first = int(np.flatnonzero(outside)[0]) + 1
    note = next(n for n in found.notes if "outside what the training rows cover" in n)
    named = [int(x) for x in re.match(r"row\(s\) ([\d, ]+) lie", note).group(1).split(", ")]
    assert first in named  # (a row inside blk's range may be named too: an unseen corner of overlapping terms)
    assert model.extrapolation(found.rows.iloc[[first - 1]])[0].startswith("blk=16 outside the training range [1, 8]")
    assert not any("blk=16" in n for n in best_designs(model, space, top=3, level=None, where="blk <= 8").notes)


def test_gpudse_predict_says_which_rows_were_held(model_and_data, tmp_path, capsys):
    from gpudse_core.cli import main
    from gpudse_core.model.registry import save_model

    model, _, X = model_and_data
    save_model(model, tmp_path / "m.json")
    X.to_csv(tmp_path / "pts.csv", index=False)
    assert main(["predict", str(tmp_path / "m.json"), str(tmp_path / "pts.csv"), "-o", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    out = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    held = out.extrapolation.str.contains("prediction held to the responses of the 10 nearest training designs")
    assert held.sum() >= 4 and out.bounded.astype(str).eq("True")[held].all()
    assert f"; {int(held.sum())} of them to the responses of their nearest training designs)" in err


def test_a_held_prediction_has_an_interval_covering_its_neighbours_and_the_equation(model_and_data):
    """Where the envelope held a prediction the data cannot say whether the neighbours or the equation are
    right: the calibrated interval spans both, and the row is flagged bounded. (a = 17…24 lie beyond the
    training range [1, 16] but inside the global bound, where the rise in a runs on.)"""
    from gpudse_core.model.calibration import calibrate, calibrated_interval

    model, train, _ = model_and_data
    X = pd.DataFrame({"a": [17.0, 18.0, 20.0, 24.0], "b": [1.0, 4.0, 9.0, 16.0], "c": ["slow", "fast"] * 2})
    held = model.guarded(X)[2]
    assert held.all() and not model.bound(model.linear_predictor(X))[1].any()
    own = inverse_transform(model.bound(model.linear_predictor(X))[0], model.transform)
    iv = calibrated_interval(model, X, calibrate(model, train))
    assert iv.bounded.all()
    for i in range(len(X)):
        lo, hi = _nearest_range(model, train, X.iloc[i])
        assert iv.lower.iloc[i] <= min(lo, own[i]) * (1 + 1e-9) and iv.upper.iloc[i] >= max(hi, own[i]) * (1 - 1e-9)
    truth = np.exp(0.25 * X.a - 0.1 * X.b + 0.7 * (X.c == "slow"))  # the table's own law, without noise
    assert ((truth >= iv.lower) & (truth <= iv.upper)).all()
