"""The default stepwise model's forest blend (gpudse_core/model/fallback.py): the equation where its training rows
pin it down, a forest where they do not, weighted by leverage; stored as plain arrays; off by a switch."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core import load_preset, sample
from gpudse_core.cli import main as cli_main
from gpudse_core.model.fallback import C_MIN, Fallback
from gpudse_core.model.fitted import FitError, design_matrix
from gpudse_core.model.learners import stepwise_fit
from gpudse_core.model.registry import fit_model, load_model, model_to_dict
from gpudse_core.sim.simulator import simulate


def _table(n: int, seed: int, noise: float = 0.03) -> pd.DataFrame:
    """Three counts and a word; log time has a product a·b the spline terms follow only roughly, and noise."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"a": rng.integers(1, 17, n).astype(float), "b": rng.integers(1, 17, n).astype(float),
                      "e": rng.integers(1, 9, n).astype(float), "c": rng.choice(["fast", "slow"], n)})
    d["t"] = np.exp(0.02 * d.a * d.b - 0.1 * d.e + 0.5 * (d.c == "slow") + rng.normal(0, noise, n))
    return d


SPACE = """
parameters:
  - {name: a, values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}
  - {name: b, values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}
  - {name: e, values: [1, 2, 3, 4, 5, 6, 7, 8]}
  - {name: c, values: [fast, slow]}
"""


@pytest.fixture(scope="module")
def fitted():
    train = _table(150, 1)
    return stepwise_fit(train, "t", transform=None), train


def _leverage(model, X: pd.DataFrame) -> np.ndarray:
    m = design_matrix(model, X) @ np.asarray(model.noise["root"])
    return np.einsum("ij,ij->i", m, m)


def test_the_weight_is_leverage_over_c_plus_leverage_and_the_blend_follows_it(fitted):
    model, train = fitted
    fb = model.fallback
    assert isinstance(fb, Fallback) and fb.c >= C_MIN
    assert model.settings["blend"] == "forest"
    X = _table(200, 2).drop(columns="t")
    h = _leverage(model, X)
    w = fb.weights(model, X)
    np.testing.assert_allclose(w, h / (fb.c + h), rtol=1e-9)
    # the guarded prediction is the bounded (and held) equation blended with the forest
    eq = model.bound(model.linear_predictor(X))[0]
    blended = (1 - w) * eq + w * fb.predict(X)
    z, mask, _ = model.guarded(X)
    free = ~mask
    assert free.sum() > 50
    np.testing.assert_allclose(z[free], blended[free], rtol=1e-12, atol=1e-12)
    # and it is not the equation: the forest has real weight at these designs
    assert np.max(np.abs(z[free] - eq[free])) > 1e-3


def test_a_design_far_from_the_rows_leans_on_the_forest(fitted):
    model, _ = fitted
    near = pd.DataFrame({"a": [8.0], "b": [8.0], "e": [4.0], "c": ["fast"]})
    far = pd.DataFrame({"a": [16.0], "b": [1.0], "e": [8.0], "c": ["slow"]})
    w_near, w_far = model.fallback.weights(model, near)[0], model.fallback.weights(model, far)[0]
    assert w_near < w_far
    assert 0.0 <= w_near < 1.0 and 0.0 < w_far <= 1.0


def test_blend_off_is_the_equation_alone_and_refits_keep_it():
    train = _table(150, 1)
    off = stepwise_fit(train, "t", transform=None, blend="off")
    assert off.fallback is None and off.settings["blend"] == "off"
    X = _table(50, 5).drop(columns="t")
    z, _, held = off.guarded(X)
    eq, _ = off.bound(off.linear_predictor(X))
    np.testing.assert_array_equal(z[~held], eq[~held])
    from gpudse_core.model.registry import stepwise_request

    kind, _, kw = stepwise_request(off.settings)
    assert kind == "stepwise" and kw["blend"] == "off"
    with pytest.raises(FitError, match="blend must be one of forest, off"):
        stepwise_fit(train, "t", transform=None, blend="trees")


def test_the_paper_model_never_blends():
    paper = stepwise_fit(_table(150, 1).drop(columns="c"), "t", kind="paper")
    assert paper.fallback is None


def test_an_exact_fit_has_no_forest_to_weigh():
    """No residual variance (a noise-free response the equation follows exactly): nothing to weigh the forest
    against, so no blend; the model says so in its settings."""
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"a": rng.integers(1, 9, 80).astype(float), "b": rng.integers(1, 9, 80).astype(float)})
    d["t"] = np.exp(0.3 * d.a - 0.2 * d.b)
    model = stepwise_fit(d, "t", transform="log")
    assert model.fallback is None and model.settings["blend"] == "off"


def test_the_forest_is_stored_and_read_back_exactly(fitted):
    model, _ = fitted
    doc = json.loads(json.dumps(model_to_dict(model)))
    again = load_model(doc)
    X = _table(300, 7).drop(columns="t")
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    assert again.fallback.c == model.fallback.c


@pytest.mark.parametrize("change, message", [
    (lambda f: f.update(c=-1.0), "fallback 'c' must be a finite number"),
    (lambda f: f.update(c="big"), "fallback 'c' must be a finite number"),
    (lambda f: f.update(categorical=["nope"]), "fallback 'categorical' must list parameters"),
    (lambda f: f.pop("trees"), "trees 'combine' must be"),
    (lambda f: f["trees"].update(combine="sum"), "must be a forest"),
    (lambda f: f["trees"].update(inputs=[["zz", None]]), "trees 'inputs'|input"),
])
def test_a_damaged_forest_is_refused_by_name(fitted, change, message):
    model, _ = fitted
    doc = json.loads(json.dumps(model_to_dict(model)))
    change(doc["fallback"])
    with pytest.raises(FitError, match=message):
        load_model(doc, source="m.json")


def test_a_forest_without_the_leverage_root_is_refused(fitted):
    model, _ = fitted
    doc = json.loads(json.dumps(model_to_dict(model)))
    del doc["noise"]
    with pytest.raises(FitError, match="needs its 'noise'"):
        load_model(doc, source="m.json")


def test_on_a_kernel_the_blend_predicts_new_designs_better_than_the_equation():
    """Built-in BFS, 300 rows with 1 % noise: many new designs lie where the equation's 100-odd columns are not
    pinned down by the rows; the blend's mean error is lower there and overall."""
    space = load_preset("stargazer")
    pts = sample(space, 1300, seed=11).points
    data = pts.assign(cycles=simulate(pts, "BFS", noise=0.01, seed=12).cycles.to_numpy())
    train, test = data.iloc[:300].reset_index(drop=True), data.iloc[300:].reset_index(drop=True)
    blended = fit_model("stepwise", train, "cycles", transform=None)
    alone = fit_model("stepwise", train, "cycles", transform=None, stepwise_kw={"blend": "off"})
    y = test.cycles.to_numpy(float)
    err_b = np.abs(blended.predict(test) / y - 1)
    err_a = np.abs(alone.predict(test) / y - 1)
    assert err_b.mean() < 0.9 * err_a.mean()
    high = blended.fallback.weights(blended, test) > 0.5
    assert high.any() and err_b[high].mean() < err_a[high].mean()


@pytest.mark.parametrize("maximize", [False, True])
def test_explore_ranks_a_blended_model_exactly_by_its_prediction(fitted, maximize):
    """Explore scans the equation (exact, by its sums of terms) and ranks by the blend within the bound the
    forest's range gives: the rows are what predicting every design and sorting would give."""
    from gpudse_core.explore.designs import best_designs
    from gpudse_core.space.design import parse_space_text

    model, _ = fitted
    space = parse_space_text(SPACE, "t.yaml")
    found = best_designs(model, space, top=5, level=None, maximize=maximize)
    every = space.frame(space.decode(np.arange(space.size)))
    pred = model.predict(every)
    best = np.unique(pred)[::-1][:5] if maximize else np.unique(pred)[:5]
    np.testing.assert_allclose(found.rows.predicted.to_numpy(), best, rtol=1e-12)
    assert found.result.method == "exact" and not any("could rank higher" in n for n in found.notes)


def test_cli_fit_blend_off_and_the_paper_refusal(tmp_path, capsys):
    data = _table(120, 3)
    path = tmp_path / "r.csv"
    data.to_csv(path, index=False)
    out = tmp_path / "m.json"
    assert cli_main(["fit", str(path), "--response", "t", "--blend", "off", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["settings"]["blend"] == "off" and "fallback" not in json.loads(out.read_text())
    capsys.readouterr()
    code = cli_main(["fit", str(path), "--response", "t", "--model", "paper", "--blend", "forest", "-o", str(out)])
    assert code != 0
    assert "--blend" in capsys.readouterr().err


def test_outside_the_support_the_forest_alone_predicts_and_the_row_says_so(fitted):
    """The equation is not trusted where the training rows never saw the design's values or combinations; the
    forest (an average of training responses) needs no envelope there: the row gets the forest's value, and is
    flagged and said."""
    model, train = fitted
    X = pd.concat([pd.DataFrame({"a": [40.0, 64.0], "b": [8.0, 8.0], "e": [4.0, 4.0], "c": ["fast", "slow"]}),
                   train.iloc[:1].drop(columns="t")], ignore_index=True)  # far, far, a training design
    z, mask, held = model.guarded(X)
    outside = model.support.outside(X)
    assert outside.tolist() == [True, True, False]
    assert held.tolist() == outside.tolist() and mask[:2].all()
    np.testing.assert_allclose(z[:2], model.fallback.predict(X.iloc[:2]), rtol=1e-12)
    assert model.fallback.weights(model, X.iloc[:2]).max() < 1.0  # not what the leverage alone would give
    det = model.predict_details(X)
    assert det.extrapolation.iloc[:2].str.contains("predicted by the model's forest alone").all()
    assert "forest" not in det.extrapolation.iloc[2]


def test_no_bound_keeps_the_blend_and_the_fit_says_what_the_prediction_is():
    """A negative --bound-margin (no bound, no envelope) does not drop the forest: the blend is the prediction,
    not a guard. The fit's notes say what the prediction is and how much of it the forest carries."""
    train = _table(150, 1)
    free = stepwise_fit(train, "t", transform=None, bound_margin=None)
    assert free.fallback is not None and free.neighbours is None and free.settings["blend"] == "forest"
    X = pd.DataFrame({"a": [64.0], "b": [8.0], "e": [4.0], "c": ["fast"]})
    z, mask, held = free.guarded(X)
    assert not mask.any() and not held.any()  # nothing clipped or held without the bound
    np.testing.assert_allclose(z, free.fallback.blend(free, X, free.linear_predictor(X)))
    note = next(n for n in free.notes if n.startswith("predictions blend this equation"))
    assert "carries a median" in note and "--blend off" in note


def test_cli_predict_says_which_rows_the_forest_alone_predicted(fitted, tmp_path, capsys):
    from gpudse_core.model.registry import save_model

    model, train = fitted
    save_model(model, tmp_path / "m.json")
    X = pd.concat([pd.DataFrame({"a": [40.0, 64.0], "b": [8.0, 8.0], "e": [4.0, 4.0], "c": ["fast", "slow"]}),
                   train.iloc[:3].drop(columns="t")], ignore_index=True)
    X.to_csv(tmp_path / "p.csv", index=False)
    assert cli_main(["predict", str(tmp_path / "m.json"), str(tmp_path / "p.csv"), "-o", str(tmp_path / "o.csv")]) == 0
    err = capsys.readouterr().err
    assert "2 of them predicted by the model's forest alone" in err and ": 0 bounded" in err
    out = pd.read_csv(tmp_path / "o.csv", keep_default_na=False)
    assert out.extrapolation.str.contains("predicted by the model's forest alone").sum() == 2


def test_explore_names_the_forests_rows(fitted):
    from gpudse_core.explore.designs import best_designs
    from gpudse_core.space.design import parse_space_text

    model, _ = fitted
    wide = parse_space_text(SPACE.replace("e, values: [1, 2, 3, 4, 5, 6, 7, 8]",
                                          "e, values: [1, 2, 3, 4, 5, 6, 7, 8, 16]"), "t.yaml")
    found = best_designs(model, wide, top=40, level=None)
    det = model.predict_details(found.rows[["a", "b", "e", "c"]])
    forest_rows = np.flatnonzero(det.extrapolation.str.contains("forest alone").to_numpy()) + 1
    assert forest_rows.size
    note = next(n for n in found.notes if "outside what the training rows cover" in n)
    assert f"row(s) {', '.join(map(str, forest_rows))}: predicted by the model's forest alone" in note


def test_explore_interval_notes_tell_the_forests_rows_from_the_bounds(fitted):
    """A row the forest alone predicts is not 'held at the model's bound': the note says what its interval is."""
    from gpudse_core.explore.designs import best_designs
    from gpudse_core.space.design import parse_space_text

    model, train = fitted
    wide = parse_space_text(SPACE.replace("e, values: [1, 2, 3, 4, 5, 6, 7, 8]",
                                          "e, values: [1, 2, 3, 4, 5, 6, 7, 8, 16]"), "t.yaml")
    found = best_designs(model, wide, top=40, level=0.95, results=train)
    held = np.flatnonzero(model.guarded(found.rows[["a", "b", "e", "c"]])[2]) + 1
    assert held.size
    note = next(n for n in found.notes if "the interval covers what the nearest training designs measured" in n)
    assert note.startswith(f"row(s) {', '.join(map(str, held))}: outside the training support, predicted by the "
                           f"model's forest alone")
    assert not any(n.startswith(f"row(s) {held[0]}") and "held at the model's bound" in n for n in found.notes)


@pytest.mark.parametrize("kernel", ["matMul", "LPS"])
def test_explore_on_the_stargazer_space_matches_predicting_every_design(kernel):
    """933,120 designs: the equation's exact scan, ranked by the blend within the forest's bound, gives the ten
    lowest predictions of all designs."""
    from gpudse_core.explore.designs import best_designs

    space = load_preset("stargazer")
    pts = sample(space, 300, seed=1).points
    data = pts.assign(cycles=simulate(pts, kernel, noise=0.01, seed=1).cycles.to_numpy())
    model = fit_model("stepwise", data, "cycles", list(space.parameter_names), transform=None)
    assert model.fallback is not None
    found = best_designs(model, space, top=10, level=None)
    pred = model.predict(space.frame(space.decode(np.arange(space.size))))
    np.testing.assert_allclose(found.rows.predicted.to_numpy(), np.unique(pred)[:len(found.rows)], rtol=1e-12)
    assert len(found.rows) >= 5 and not any("could rank higher" in n for n in found.notes)
