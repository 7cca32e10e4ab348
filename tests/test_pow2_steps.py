"""Power-of-two steps in the robust stepwise model (model/encoding.py, model/splines.py) and the
look-ahead with a parameter whose own columns add nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpudse_core.errors import GpudseError
from gpudse_core.model import encoding
from gpudse_core.model.fitted import StepwiseModel
from gpudse_core.model.splines import Basis, is_pow2, make_basis
from gpudse_core.model.stepwise import ALGORITHM1_SETTINGS, FitError, StepwiseRegression, interaction_block

HUB = Path(__file__).resolve().parents[2] / "shared" / "data" / "benchmark_hub" / "convolution_A100.csv"
WIDTHS = np.arange(16, 257, 16)  # 16, 32, 48, … 256: five powers of two among sixteen values


def step_data(n: int, seed: int) -> pd.DataFrame:
    """A block width that runs 3× faster at powers of two, a smooth tile effect and a flag."""
    rng = np.random.default_rng(seed)
    bx = rng.choice(WIDTHS, n)
    tile = rng.choice([1, 2, 3, 4, 5, 6, 7, 8], n)
    flag = rng.integers(0, 2, n)
    t = 30.0 * np.where(is_pow2(bx) > 0, 1 / 3, 1.0) * (1 + 0.2 * np.log2(bx)) / np.sqrt(tile) * (1 + 0.3 * flag)
    return pd.DataFrame({"bx": bx, "tile": tile, "flag": flag, "time": t * rng.lognormal(0, 0.01, n)})


@pytest.mark.parametrize("values, expected", [
    ([1, 2, 3, 4, 8, 0.5, 6, 0, -2, 1024, 1023], [1, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0]),
])
def test_is_pow2(values, expected):
    assert is_pow2(np.array(values, dtype=float)).tolist() == expected


@pytest.mark.parametrize("values, mixed", [
    (WIDTHS, True),                    # 16, 32, 48, …: powers and others
    ([1, 2, 3, 4], False),             # only one value that is not a power of two
    ([1, 2, 4, 8, 16], False),         # powers only (those get the log2 scale)
    ([3, 5, 6, 7, 9], False),          # no power of two at all
    ([16, 24, 32, 40.5], False),       # not whole numbers
    ([2, 4, 6, 10], True),
])
def test_mixes_powers_of_two(values, mixed):
    assert encoding.mixes_powers_of_two(values) is mixed


def test_plan_adds_the_column_only_when_asked_and_on_the_linear_scale():
    cols = {"bx": WIDTHS, "blk": np.array([1, 2, 4, 8, 16]), "flag": np.array([0, 1, 0, 1])}
    plain = encoding.plan(cols)
    assert not any(e.pow2 for e in plain.values())
    robust = encoding.plan(cols, powers_of_two=True)
    assert robust["bx"].pow2 and "pow2(bx)" in robust["bx"].note
    assert not robust["blk"].pow2 and not robust["flag"].pow2
    assert not encoding.plan(cols, scale={"bx": "log2"}, powers_of_two=True)["bx"].pow2


def test_basis_column_evaluation_and_file_round_trip():
    b = make_basis("bx", WIDTHS, 6, "distinct", pow2=True)
    assert b.pow2 and b.width == 6 and b.column_names[-1] == "pow2(bx)" and b.pow2_column == 5
    cols = b.evaluate(WIDTHS)
    assert cols[:, -1].tolist() == is_pow2(WIDTHS).tolist()
    plain = make_basis("bx", WIDTHS, 6, "distinct")
    assert np.array_equal(cols[:, :-1], plain.evaluate(WIDTHS))
    again = Basis.from_dict(json.loads(json.dumps(b.to_dict())))
    assert again == b and np.array_equal(again.evaluate([24, 64, 300]), b.evaluate([24, 64, 300]))
    assert "pow2" not in plain.to_dict()
    # a spline with a knot at every distinct value spans the indicator already: no column
    assert not make_basis("t", [1, 2, 3, 4, 5], 6, "distinct", pow2=True).pow2


def test_basis_file_refuses_a_pow2_column_where_it_cannot_be():
    d = make_basis("flag", np.array([0, 1, 2]), categorical=True).to_dict() | {"pow2": True}
    with pytest.raises(GpudseError, match="pow2"):
        Basis.from_dict(d)
    with pytest.raises(GpudseError, match="pow2"):
        Basis.from_dict(make_basis("bx", WIDTHS, 6, "distinct").to_dict() | {"pow2": "yes"})


def test_pow2_column_enters_restricted_products_only():
    a = make_basis("bx", WIDTHS, 4, "even", pow2=True)
    b = make_basis("t", np.arange(1.0, 9.0), 4, "even")
    blocks = [a.evaluate(WIDTHS), b.evaluate(np.linspace(1, 8, WIDTHS.size))]
    step = a.pow2_column
    _, restricted = interaction_block(blocks, [a, b], "restricted")
    _, doubly = interaction_block(blocks, [a, b], "doubly")
    _, full = interaction_block(blocks, [a, b], "full")
    assert (step, 0) in restricted  # pow2(bx) × t
    assert all(ix[0] != step or ix[1] in b.linear_columns for ix in restricted)
    assert not any(ix[0] == step for ix in doubly + full)


def test_default_model_finds_the_step_and_predicts_better():
    train, test = step_data(300, 1), step_data(1000, 2)
    on = StepwiseRegression(response="time").fit(train).model_
    off = StepwiseRegression(response="time", powers_of_two=False).fit(train).model_
    assert any("pow2(bx)" in lab for lab in on.column_labels)
    assert not any("pow2" in lab for lab in off.column_labels)
    assert any("pow2(bx)" in n for n in on.notes)

    def err(m):
        return float(np.mean(np.abs(m.predict(test) - test["time"]) / test["time"]))
    assert err(on) < 0.5 * err(off)
    assert "[pow2(bx)]" in on.equation()
    # the saved model predicts the same, bit for bit
    again = StepwiseModel.from_dict(json.loads(json.dumps(on.to_dict())))
    assert np.array_equal(again.predict(test), on.predict(test))


def test_algorithm1_settings_leave_it_out():
    m = StepwiseRegression(response="time", **ALGORITHM1_SETTINGS).fit(step_data(200, 3)).model_
    assert not any("pow2" in lab for lab in m.column_labels)
    with pytest.raises(FitError, match="powers_of_two"):
        StepwiseRegression(response="time", powers_of_two="yes").fit(step_data(50, 3))


@pytest.mark.skipif(not HUB.is_file(), reason="needs ../shared/data/benchmark_hub (the real A100 tuning space)")
def test_look_ahead_skips_a_parameter_whose_columns_add_nothing():
    """A 0/1 column that is a function of a saturated four-valued parameter adds no column once that
    parameter is in; when the look-ahead then tried it, the search failed with a KeyError."""
    d = pd.read_csv(HUB)
    d = d[d["status"] == "ok"].drop(columns="status").dropna(subset=["time_ms"]).reset_index(drop=True)
    d = d[[c for c in d.columns if d[c].nunique() > 1]]
    for c in ("block_size_x", "tile_size_x", "tile_size_y"):
        d.insert(0, "p2_" + c, is_pow2(d[c].to_numpy()).astype(int))
    idx = np.random.default_rng(13).permutation(len(d))
    train = d.iloc[idx[1000:1300]].reset_index(drop=True)
    est = StepwiseRegression(response="time_ms", response_transform="log", powers_of_two=False,
                             robust="none").fit(train)
    assert est.model_.r2 > 0.5 and "p2_tile_size_x" not in est.model_.terms
    # the Huber reruns (the default) search other pseudo-observations and may take the 0/1 column
    # before its parameter; they must not fail either (a round's model is kept here: the reruns ran)
    assert StepwiseRegression(response="time_ms", response_transform="log",
                              powers_of_two=False).fit(train).model_.robust["rounds"] in (1, 2, 3)


def test_cli_flag(tmp_path, capsys):
    from gpudse_core.cli import main

    data = tmp_path / "steps.csv"
    step_data(200, 4).to_csv(data, index=False)
    labels = {}
    for flag in ("on", "off"):
        out = tmp_path / f"{flag}.json"
        assert main(["fit", str(data), "--response", "time", "--powers-of-two", flag, "-o", str(out)]) == 0
        labels[flag] = json.loads(out.read_text())["column_labels"]
    assert any("pow2(bx)" in lab for lab in labels["on"]) and not any("pow2" in lab for lab in labels["off"])
    capsys.readouterr()
    assert main(["fit", str(data), "--response", "time", "--model", "paper", "--powers-of-two", "on",
                 "-o", str(tmp_path / "p.json")]) == 2
    assert "--powers-of-two" in capsys.readouterr().err


def test_response_curve_shows_the_steps():
    """A curve on an even grid would step over 32, 64 and 128; the grid holds every power of two."""
    from gpudse_core.explore.scan import response_curve

    train = step_data(300, 1)
    m = StepwiseRegression(response="time").fit(train).model_
    curve = response_curve(m, train, "bx", {"tile": 2, "flag": 0})
    x = curve["bx"].to_numpy(dtype=float)
    y = dict(zip(x.tolist(), curve["predicted"].to_numpy(dtype=float)))
    assert {16.0, 32.0, 64.0, 128.0, 256.0} <= set(y) and x.size > 100
    for p2 in (32.0, 64.0, 128.0):
        right = min(v for v in y if v > p2)
        assert y[p2] < 0.6 * y[right], (p2, y[p2], y[right])  # 3× faster at the power of two
