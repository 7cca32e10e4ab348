"""Learners (forest, boosting, hybrid, EBM), the registry and --model auto."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core import limits
from gpudse_core.cli import main
from gpudse_core.errors import GpudseError
from gpudse_core.model.auto import choose, cross_validate, select_model
from gpudse_core.model.learners import BOUND_MARGIN, KINDS, curve, fit_learner, guard, response_bounds
from gpudse_core.model.registry import fit_model, load_model, model_to_dict, save_model, split_name
from gpudse_core.model.stepwise import StepwiseModel, fit_stepwise
from gpudse_core.safeload import load_json


@pytest.fixture(scope="module")
def smooth():
    """A smooth multiplicative response (log-additive, with one pair): 200 rows, 1 % noise."""
    rng = np.random.default_rng(3)
    n = 260
    d = pd.DataFrame({"blk": rng.choice([1, 2, 4, 8, 16], n), "simd": rng.choice([8, 16, 32], n),
                      "q": rng.uniform(0, 1, n)})
    d["t"] = 1e3 * (1 + 4 / d.blk) * (32 / d.simd) ** 0.8 * np.exp(0.5 * d.q) * np.exp(rng.normal(0, 0.01, n))
    return d.iloc[:200].reset_index(drop=True), d.iloc[200:].reset_index(drop=True)


def test_guard_and_bounds():
    assert response_bounds(np.array([0.0, 10.0])) == pytest.approx((-10 * BOUND_MARGIN, 10 + 10 * BOUND_MARGIN))
    z, flags = guard([np.inf, -np.inf, np.nan, 5.0, 0.5], (0.0, 1.0), fallback=0.25)
    assert list(z) == [1.0, 0.0, 0.25, 1.0, 0.5] and list(flags) == [True, True, True, True, False]
    z, flags = guard([np.inf, 3.0], None)  # no bounds known: only non-finite values are replaced
    assert np.isfinite(z).all() and list(flags) == [True, False] and z[1] == 3.0


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_learner_accuracy_bounds_and_persistence(kind, smooth, tmp_path):
    train, test = smooth
    m = fit_learner(kind, train, "t", seed=1)
    assert (m.kind, m.response, m.transform, m.parameters) == (kind, "t", "log", ["blk", "simd", "q"])
    det = m.predict_details(test)
    assert list(det.columns) == ["predicted", "bounded", "extrapolation"]
    err = np.abs(det.predicted - test.t) / test.t
    assert err.median() < 0.05  # all of them learn this response
    # far outside the training range: flagged, bounded to the band, never non-finite
    far = pd.DataFrame({"blk": [1, 1024], "simd": [8, 1], "q": [0.5, 50.0]})
    fd = m.predict_details(far)
    lo, hi = m.bounds_
    assert np.isfinite(fd.predicted).all() and (np.log(fd.predicted) <= hi + 1e-12).all()
    assert (np.log(fd.predicted) >= lo - 1e-12).all()
    assert "blk=1024 outside the training range [1, 16]" in fd.extrapolation.iloc[1]
    assert fd.extrapolation.iloc[0] == ""
    # JSON only (read back through the bounded reader): the fitted model itself, loaded without a refit
    path = tmp_path / f"{kind}.json"
    save_model(m, path)
    doc = load_json(path.read_bytes(), str(path))
    assert doc["kind"] == kind and len(doc["training"]["t"]) == 200 and doc["fitted"]["kind"] in ("trees", "ebm")
    back = load_model(path)
    assert type(back) is type(m) and back.notes == [] and not hasattr(back, "estimator_")
    assert np.array_equal(back.predict(test), det.predicted.to_numpy())
    assert np.array_equal(back.predict_details(far).bounded, fd.bounded)
    assert list(back.predict_details(far).extrapolation) == list(fd.extrapolation)


def test_saved_predictions_that_differ_are_reported(smooth):
    train, _ = smooth
    d = model_to_dict(fit_learner("forest", train, "t"))
    d["check"] = [v + 0.5 for v in d["check"]]
    assert "differs from the saved predictions by up to 0.5" in load_model(d, "m.json").notes[0]


def _library_prediction(m, X: pd.DataFrame) -> np.ndarray:
    """The transformed-scale prediction of the fitted scikit-learn / InterpretML object itself."""
    P = m._points(X)
    if m.kind == "ebm":
        return m.estimator_.predict(P)
    raw = m.estimator_.predict(P if m.categorical else P.to_numpy(float))
    if m.kind == "hybrid":
        fill = {p: P[p].where(P[p].isin(m.support_.params[p].levels), m.train_[p].mode().iloc[0])
                for p in m.categorical}
        raw = m.stepwise_.linear_predictor(P.assign(**fill)) + raw
    return raw


@pytest.mark.slow
@pytest.mark.parametrize("categorical", [False, True], ids=["numeric", "with-levels"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_stored_model_predicts_exactly_as_the_fitted_object(kind, categorical, smooth):
    """The arrays in the file give the library's own predictions bit for bit, inside the training
    range, beyond it, on training rows and at an unseen level, fitted or loaded."""
    train, test = smooth
    if categorical:
        train = train.assign(simd=train.simd.map({8: "narrow", 16: "mid", 32: "wide"}))
        test = test.assign(simd=test.simd.map({8: "narrow", 16: "mid", 32: "wide"}))
        test.loc[:4, "simd"] = "huge"  # never seen in training
    rng = np.random.default_rng(5)
    far = test.assign(q=rng.uniform(-3, 4, len(test)), blk=rng.choice([0.5, 3, 64], len(test)))
    points = pd.concat([test, far, train.iloc[:40]], ignore_index=True)
    m = fit_learner(kind, train, "t", seed=2, settings={"forest": {"n_estimators": 30},
                                                        "ebm": {"outer_bags": 2}}.get(kind))
    lib = _library_prediction(m, points)
    assert np.array_equal(m.linear_predictor(points), lib)
    back = load_model(json.loads(json.dumps(model_to_dict(m))), "m.json")
    assert back.notes == [] and back.categorical == m.categorical
    assert np.array_equal(back.linear_predictor(points), lib)
    a, b = m.predict_details(points), back.predict_details(points)
    assert np.array_equal(a.predicted, b.predicted) and np.array_equal(a.bounded, b.bounded)
    assert list(a.extrapolation) == list(b.extrapolation)
    if categorical:
        assert "simd=huge not seen in training" in b.extrapolation.iloc[0]


def test_a_file_of_the_older_format_is_refitted_with_a_note(smooth):
    m = fit_learner("boosting", smooth[0], "t", settings={"max_iter": 30})
    d = model_to_dict(m)
    d = {k: v for k, v in d.items() if k not in ("fitted",)} | {"schema": "gpudse.learner/1"}
    back = load_model(d, "old.json")
    assert len(back.notes) == 1 and "older gpudse.learner/1 format, refitted" in back.notes[0]
    assert np.array_equal(back.linear_predictor(smooth[1]), m.linear_predictor(smooth[1]))


def test_stored_work_is_limited_before_decoding(smooth):
    forest = model_to_dict(fit_learner("forest", smooth[0], "t", settings={"n_estimators": 10}))
    nodes = forest["fitted"]["value"]["shape"][0]
    with limits.override(model_nodes=nodes - 1), pytest.raises(limits.LimitError, match="tree nodes.*model_nodes"):
        load_model(forest, "m.json")
    ebm = model_to_dict(fit_learner("ebm", smooth[0], "t", settings={"outer_bags": 1}))
    with limits.override(model_nodes=10), pytest.raises(limits.LimitError, match="EBM table cells.*model_nodes"):
        load_model(ebm, "e.json")


def _b64(values, dtype):
    from gpudse_core.model.frozen import encode

    return encode(np.asarray(values), dtype)


def _tamper_tree(d, field, fn):
    from gpudse_core.model.frozen import decode

    a = decode(d["fitted"][field], "t", field).copy()
    fn(a)
    d["fitted"][field] = _b64(a, d["fitted"][field]["dtype"])


@pytest.mark.parametrize("change, pattern", [
    (lambda d: _tamper_tree(d, "left", lambda a: a.__setitem__(0, 0)), "left child is not a later node of its own"),
    (lambda d: _tamper_tree(d, "right", lambda a: a.__setitem__(0, a.size)), "right child is not a later node"),
    (lambda d: _tamper_tree(d, "feature", lambda a: a.__setitem__(0, 99)), "splits on an input the model does not"),
    (lambda d: _tamper_tree(d, "value", lambda a: a.__setitem__(3, np.nan)), "trees value holds non-finite"),
    (lambda d: _tamper_tree(d, "starts", lambda a: a.__setitem__(1, a[2])), "each tree non-empty"),
    (lambda d: d["fitted"]["threshold"].update(data="!!"), "not valid base64"),
    (lambda d: d["fitted"]["threshold"].update(dtype="|O"), "dtype '|O'"),
    (lambda d: d["fitted"]["left"].update(shape=[3]), "holds .* bytes; shape \\[3\\]"),
    (lambda d: d["fitted"].update(inputs=[["blk", None], ["nope", None]]), "trees input \\['nope', None\\]"),
    (lambda d: d["fitted"].update(kind="svm"), "unknown fitted model kind 'svm'"),
    (lambda d: d["fitted"]["inputs"].__setitem__(0, ["blk", "x"]), "trees input \\['blk', 'x'\\]"),
])
def test_tampered_stored_trees(smooth, change, pattern):
    d = json.loads(json.dumps(model_to_dict(fit_learner("forest", smooth[0], "t", settings={"n_estimators": 3}))))
    change(d)
    with pytest.raises(GpudseError, match=pattern):
        load_model(d, "m.json")


@pytest.mark.parametrize("change, pattern", [
    (lambda d: d["fitted"]["terms"][0].update(scores=_b64(np.zeros(2), "<f8")), "has a table of shape \\(2,\\)"),
    (lambda d: d["fitted"]["terms"][0].update(features=[0, 0]), "distinct parameter indices"),
    (lambda d: d["fitted"]["features"].reverse(), "describe the parameters blk, simd, q in order"),
    (lambda d: d["fitted"]["features"][0]["cuts"].__setitem__(0, _b64([2.0, 1.0], "<f8")), "increasing"),
    (lambda d: d["fitted"].update(intercept=None), "'intercept' must be a finite number"),
])
def test_tampered_stored_ebm(smooth, change, pattern):
    d = json.loads(json.dumps(model_to_dict(fit_learner("ebm", smooth[0], "t", settings={"outer_bags": 1}))))
    change(d)
    with pytest.raises(GpudseError, match=pattern):
        load_model(d, "e.json")


@pytest.mark.parametrize("change, pattern", [
    (lambda d: d.update(schema="gpudse.other/9"), "schema"),
    (lambda d: d.update(kind="svm"), "unknown learner kind 'svm'"),
    (lambda d: d["settings"].update(n_estimators=10 ** 9), "n_estimators = 1000000000: give a whole number"),
    (lambda d: d["settings"].update(n_jobs=-1), "forest has no setting 'n_jobs'"),
    (lambda d: d["training"]["blk"].__setitem__(3, "x"), "training column 'blk' must hold only numbers"),
    (lambda d: d["training"]["t"].pop(), "must be a list of 199 values"),
    (lambda d: d["training"].pop("q"), "one list per parameter"),
    (lambda d: d.update(parameters="blk"), "distinct column names"),
    (lambda d: d.update(seed=-1), "'seed' must be a whole number"),
    (lambda d: d.update(transform="exp"), "unknown transform"),
])
def test_tampered_learner_files(smooth, change, pattern):
    d = json.loads(json.dumps(model_to_dict(fit_learner("forest", smooth[0], "t", settings={"n_estimators": 10}))))
    change(d)
    with pytest.raises(GpudseError, match=pattern):
        load_model(d, "m.json")


def test_refit_size_is_limited(smooth):
    d = model_to_dict(fit_learner("forest", smooth[0], "t", settings={"n_estimators": 10}))
    with limits.override(refit_rows=100), pytest.raises(limits.LimitError, match="refit_rows"):
        load_model(d, "m.json")


def test_bad_training_data(smooth):
    train, _ = smooth
    with pytest.raises(GpudseError, match=r"column 't': rows 4"):
        fit_learner("boosting", train.assign(t=train.t.where(train.index != 3, np.nan)), "t")
    with pytest.raises(GpudseError, match="log transform needs positive values"):
        fit_learner("forest", train.assign(t=train.t - 1e9), "t")
    m = fit_learner("forest", train, "t", settings={"n_estimators": 5})
    with pytest.raises(GpudseError, match="lack column"):
        m.predict(pd.DataFrame({"blk": [1]}))
    with pytest.raises(GpudseError, match="column 'simd': rows 1 are not finite numbers"):
        m.predict(pd.DataFrame({"blk": [1], "simd": ["wide"], "q": [0.1]}))
    with pytest.raises(GpudseError, match="unknown learner"):
        fit_learner("svm", train, "t")


@pytest.mark.slow
def test_ebm_additive_terms_rebuild_the_prediction(smooth):
    train, test = smooth
    m = fit_learner("ebm", train, "t")
    levels = {"blk": [1, 2, 4, 8, 16], "simd": [8, 16, 32], "q": sorted(test.q.unique())}
    intercept, terms = m.additive_terms(levels)
    names = [t for t, _ in terms]
    assert {("blk",), ("simd",), ("q",)} <= set(names) and any(len(t) == 2 for t in names)
    z = np.full(len(test), intercept)
    for t, table in terms:
        idx = tuple(np.searchsorted(levels[p], test[p].to_numpy()) for p in t)
        assert table.shape == tuple(len(levels[p]) for p in t)
        z += table[idx]
    np.testing.assert_allclose(z, m.linear_predictor(test), rtol=1e-9, atol=1e-9)
    # the shape function is the curve without a base point: intercept + the main term
    c = m.curve("blk", [1, 2, 4, 8, 16])
    blk = dict(terms)[("blk",)]
    np.testing.assert_allclose(np.log(c.predicted), intercept + blk)
    with pytest.raises(GpudseError, match="levels are missing"):
        m.additive_terms({"blk": [1]})


def test_curves(smooth):
    train, test = smooth
    m = fit_learner("forest", train, "t", settings={"n_estimators": 30})
    values = [1, 2, 4, 8, 16]
    base = test.iloc[0].to_dict()
    c = m.curve("blk", values, base)
    pts = pd.DataFrame([{**base, "blk": v} for v in values])
    np.testing.assert_allclose(c.predicted, m.predict(pts))
    # average curve: scikit-learn's partial dependence = the mean over the training rows
    avg = m.curve("blk", values)
    brute = [np.mean(m.linear_predictor(train.assign(blk=v))) for v in values]
    np.testing.assert_allclose(np.log(avg.predicted), brute, rtol=1e-12)
    assert avg.predicted.iloc[0] > 2 * avg.predicted.iloc[-1]  # blk = 1 is slow in the data
    # any model kind through the module function; a stepwise model needs a base point
    sw = fit_stepwise(train, "t", transform="log")
    sc = curve(sw, "blk", values, base)
    np.testing.assert_allclose(sc.predicted, sw.predict(pts))
    with pytest.raises(GpudseError, match="needs a base point"):
        curve(sw, "blk", values)
    with pytest.raises(GpudseError, match="does not use 'zz'"):
        m.curve("zz", [1])


def test_registry_names_and_stepwise_files(smooth, tmp_path):
    assert split_name("stepwise+3way") == ("stepwise", 3) and split_name("paper+2way") == ("paper", 2)
    assert split_name("ebm") == ("ebm", None) and split_name("stepwise") == ("stepwise", None)
    for bad in ("ebm+3way", "lasso", "forest+2way"):
        with pytest.raises(GpudseError, match="unknown model"):
            split_name(bad)
    train, test = smooth
    paper = fit_model("paper", train, "t", transform="log")
    robust = fit_model("stepwise", train, "t", transform="log")
    assert isinstance(paper, StepwiseModel) and isinstance(robust, StepwiseModel)
    path = tmp_path / "m.json"
    save_model(robust, path)
    back = load_model(path)
    np.testing.assert_allclose(back.predict(test), robust.predict(test))
    from gpudse_core.model import load_model as from_package  # the registry, as the workspace codec calls it

    forest = fit_learner("forest", train, "t", settings={"n_estimators": 5})
    again = from_package(model_to_dict(forest), source="stored model")
    np.testing.assert_allclose(again.predict(test), forest.predict(test))
    with pytest.raises(GpudseError, match="^stored model: schema 'x' is not a gpudse model"):
        from_package({"schema": "x"}, source="stored model")
    path.write_text('{"schema": "gpudse.model/1", "response": 1}')
    with pytest.raises(GpudseError, match="malformed"):
        load_model(path)
    path.write_text('{"schema": "x"}')
    with pytest.raises(GpudseError, match="is not a gpudse model"):
        load_model(path)
    with pytest.raises(GpudseError, match="no such model file"):
        load_model(tmp_path / "none.json")


# ---- automatic choice ------------------------------------------------------------------------
@pytest.mark.slow
def test_auto_picks_the_additive_model_for_additive_data():
    """log(t) is exactly linear in the parameters: the spline model wins cross-validation."""
    rng = np.random.default_rng(5)
    n = 150
    d = pd.DataFrame({"a": rng.uniform(0, 1, n), "b": rng.uniform(0, 1, n), "c": rng.uniform(0, 1, n)})
    d["t"] = np.exp(1 + 2 * d.a - d.b + 0.5 * d.c + rng.normal(0, 0.01, n))
    m = select_model(d, "t", folds=3, candidates=("paper", "stepwise", "forest", "boosting"))
    table = pd.DataFrame(m.selection["table"]).set_index("candidate")
    assert m.selection["chosen"] in ("paper", "stepwise") and isinstance(m, StepwiseModel)
    # the forest trails far behind (or so far that it was stopped once its folds' errors crossed the bar)
    forest = table.loc["forest"]
    assert (forest["note"].startswith("stopped after")
            or table.loc[m.selection["chosen"], "mean"] < 0.5 * forest["mean"]), forest
    assert m.n == n  # refitted on every row
    assert "picked" in m.selection["reason"] and m.selection["folds"] == 3


@pytest.mark.slow
def test_auto_picks_a_tree_for_a_three_way_step():
    """t jumps 8x only where x ≥ 20 and two flags are on: no additive or pairwise model has that shape,
    and x has too many levels (40) for a level cell."""
    rng = np.random.default_rng(6)
    n = 240
    d = pd.DataFrame({f"f{i}": rng.integers(0, 2, n) for i in range(4)})
    d["f0"] = rng.integers(0, 40, n)
    d["t"] = np.exp(np.log(8) * ((d.f0 >= 20) & (d.f1 == 1) & (d.f2 == 1)) + 0.3 * d.f3 + rng.normal(0, 0.01, n))
    m = select_model(d, "t", folds=4, candidates=("paper", "stepwise+2way", "ebm", "forest", "boosting"))
    assert m.selection["chosen"] in ("forest", "boosting") and m.kind == m.selection["chosen"]
    table = pd.DataFrame(m.selection["table"])
    assert table[table["mean"] <= 1.02 * table["mean"].min()].iloc[0]["candidate"] == m.selection["chosen"]
    t = table.set_index("candidate")
    assert t.loc[m.selection["chosen"], "mean"] < 0.5 * t.loc["stepwise+2way", "mean"]
    # Stargazer 1.0 leaves out parameters with fewer than 3 values: it models x alone, and says so
    assert t.loc["paper", "mean"] > 2 * t.loc[m.selection["chosen"], "mean"]
    # on flags alone it has nothing to model: its row says why, and another candidate is picked
    flags = d.assign(f0=rng.integers(0, 2, n))
    t = pd.DataFrame(select_model(flags, "t", folds=4, candidates=("paper", "forest")).selection["table"])
    paper = t.set_index("candidate").loc["paper"]
    assert not np.isfinite(paper["mean"]) and "3 or more distinct" in paper["note"]


def test_cross_validation_table_and_choice(smooth):
    train, _ = smooth
    seen = []
    t = cross_validate(train, "t", ["blk", "simd", "q"], folds=3,
                       candidates=("stepwise+2way", "stepwise+3way", "forest"),
                       progress=lambda d, n, m: seen.append((d, n)))
    assert list(t.columns) == ["candidate", "mean", "median", "p98", "max", "nonfinite", "bounded", "seconds",
                               "vs_ref", "vs_ref_se", "note"]
    assert seen[-1] == (9, 9)
    # the paired difference from the forest on the same held-out rows: its mean is the difference of the means
    r = t.set_index("candidate")
    assert np.isnan(r.loc["forest", "vs_ref"]) and np.isnan(r.loc["forest", "vs_ref_se"])
    for c in ("stepwise+2way", "stepwise+3way"):
        assert r.loc[c, "vs_ref"] == pytest.approx(r.loc[c, "mean"] - r.loc["forest", "mean"], abs=1e-12)
        assert r.loc[c, "vs_ref_se"] > 0
    chosen, reason = choose(t, 3, rule="lowest")
    ok = t[t.note == ""]
    assert chosen == ok[ok["mean"] <= 1.02 * ok["mean"].min()].iloc[0]["candidate"] and chosen in reason
    chosen, reason = choose(t, 3)
    beat = r[r.vs_ref + r.vs_ref_se < 0]
    assert (chosen == "forest") if beat.empty else (chosen in beat.index)
    assert f"picked {chosen}" in reason
    bad = t.assign(note="fold 1: broken")
    with pytest.raises(GpudseError, match="no candidate model could be fitted"):
        choose(bad, 3)
    with pytest.raises(GpudseError, match="at least 2 folds"):
        cross_validate(train, "t", ["blk"], folds=1)
    with pytest.raises(GpudseError, match="too few for 5-fold"):
        cross_validate(train.iloc[:8], "t", ["blk"], folds=5)
    with pytest.raises(GpudseError, match="auto cannot be one of its own"):
        cross_validate(train, "t", ["blk"], candidates=("auto",))
    with pytest.raises(GpudseError, match="unknown rule 'best'.*one-se, lowest"):
        choose(t, 3, rule="best")


@pytest.mark.slow
def test_stopping_a_candidate_that_cannot_matter_keeps_the_choice(smooth):
    """A learner whose errors on the folds done already exceed the bar is stopped; the choice, the
    reason and the finished candidates' figures are those of the full cross-validation, under either rule
    (under one-se the forest, the reference, always finishes, and the bar is at least its mean)."""
    train, _ = smooth
    cands = ("stepwise+2way", "stepwise+3way", "ebm", "forest")
    kw = dict(folds=4, candidates=cands)
    full = cross_validate(train, "t", ["blk", "simd", "q"], stop_early=False, **kw)
    finished = sorted(full.loc[full.candidate.isin(["stepwise+2way", "stepwise+3way"]), "mean"])
    means = full.set_index("candidate")["mean"]
    for rule in ("lowest", "one-se"):
        fast = cross_validate(train, "t", ["blk", "simd", "q"], rule=rule, **kw)
        assert list(fast.candidate) == list(cands)  # the table keeps the list's order
        stopped = fast[fast.note.str.startswith("stopped after")]
        assert choose(fast, 4, rule=rule) == choose(full, 4, rule=rule)
        done = fast[fast.note == ""].set_index("candidate")
        ref = full.set_index("candidate").loc[done.index]
        for col in ("mean", "vs_ref", "vs_ref_se") if rule == "one-se" else ("mean",):  # lowest may stop the forest
            np.testing.assert_array_equal(done[col].to_numpy(), ref[col].to_numpy())
        # the bar it crossed: above the lowest finished mean's tie band and the runner-up (and the forest's)
        bar = max(finished[0] * 1.02, finished[1], means["forest"] if rule == "one-se" else 0)
        for c in stopped.candidate:
            assert means[c] > bar
        if rule == "lowest":
            assert len(stopped) >= 1 and set(stopped.candidate) <= {"ebm", "forest"}
        else:
            assert set(stopped.candidate) <= {"ebm"}


def test_choice_rule():
    """The lowest rule: the lowest cross-validated error wins; within 2 % of it, the earliest (simplest)
    candidate. A table without the paired differences (or without the forest) is chosen so by either rule."""
    def table(means):
        return pd.DataFrame({"candidate": list(means), "mean": list(means.values()), "note": ""})

    for rule in ("lowest", "one-se"):
        assert choose(table({"stepwise": 0.050, "forest": 0.030, "boosting": 0.020}), 5, rule=rule)[0] == "boosting"
    chosen, reason = choose(table({"stepwise": 0.050, "forest": 0.0107, "boosting": 0.0106}), 5, rule="lowest")
    assert chosen == "forest" and "within 2 % of the lowest (boosting 1.06 %)" in reason
    assert "best interpretable model, stepwise, has 5.00 %" in reason
    chosen, reason = choose(table({"stepwise": 0.0101, "forest": 0.0100}), 5, rule="lowest")
    assert chosen == "stepwise" and "tie" in reason
    chosen, reason = choose(table({"stepwise": 0.0103, "forest": 0.0100}), 5, tie=0.0, rule="lowest")
    assert chosen == "forest" and "next: stepwise 1.03 %" in reason
    assert choose(table({"stepwise": 0.0101, "boosting": 0.0100}), 5)[0] == "stepwise"  # no forest: lowest


def test_one_se_rule_leaves_the_forest_only_for_a_clear_win():
    """The default rule: the forest unless a candidate's held-out errors beat the forest's on the same rows
    by more than one standard error of the paired difference (backprop, docs/models.md: stepwise+2way
    1.46 % against the forest's 1.49 % in cross-validation, 1.32 against 1.09 % on new designs)."""
    def table(rows):  # candidate: (mean, paired difference from the forest, its standard error)
        return pd.DataFrame([{"candidate": c, "mean": m, "vs_ref": d, "vs_ref_se": se, "note": ""}
                             for c, (m, d, se) in rows.items()])

    noise = {"stepwise+2way": (0.0146, -0.0003, 0.0006), "forest": (0.0149, np.nan, np.nan),
             "boosting": (0.0152, 0.0003, 0.0004)}
    chosen, reason = choose(table(noise), 5)
    assert chosen == "forest" and choose(table(noise), 5, rule="lowest")[0] == "stepwise+2way"
    assert "no candidate predicts the same held-out rows better by more than 1 standard error" in reason
    assert "lowest: stepwise+2way 1.46 %, -0.03 ± 0.06 points" in reason
    assert "best interpretable model, stepwise+2way, has 1.46 %" in reason
    clear = {**noise, "stepwise+2way": (0.0120, -0.0029, 0.0008)}
    chosen, reason = choose(table(clear), 5)
    assert chosen == "stepwise+2way"
    assert "better than forest (1.49 %) on the same held-out rows by -0.29 ± 0.08 points" in reason
    # among the clear winners, the lowest rule: a tie within 2 % goes to the simpler one
    both = {**clear, "boosting": (0.0118, -0.0031, 0.0009)}
    assert choose(table(both), 5)[0] == "stepwise+2way"
    both["boosting"] = (0.0100, -0.0049, 0.0009)
    chosen, reason = choose(table(both), 5)
    assert chosen == "boosting" and "next: stepwise+2way 1.20 %" in reason
    # a winner by exactly one standard error is not clear; a failed forest leaves the lowest rule
    assert choose(table({**noise, "stepwise+2way": (0.0141, -0.0008, 0.0008)}), 5)[0] == "forest"
    failed = table(noise).assign(note=lambda t: np.where(t.candidate == "forest", "fold 1: broken", ""))
    assert choose(failed, 5)[0] == "stepwise+2way"


@pytest.mark.slow
def test_cli_fit_auto_and_predict_any_kind(smooth, tmp_path, capsys):
    train, test = smooth
    data, pts = tmp_path / "r.csv", tmp_path / "p.csv"
    train.iloc[:120].to_csv(data, index=False)
    test.drop(columns="t").to_csv(pts, index=False)
    out = tmp_path / "auto.json"
    assert main(["fit", str(data), "--response", "t", "--transform", "log", "--model", "auto", "--folds", "3",
                 "-o", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    sel = doc["selection"]
    assert [r["candidate"] for r in sel["table"]] == ["stepwise+2way", "paper", "stepwise+3way", "ebm", "forest",
                                                      "boosting", "hybrid"]
    expect = {"stepwise+2way": "stepwise", "paper": "stepwise", "stepwise+3way": "stepwise"}
    assert doc["kind"] == expect.get(sel["chosen"], sel["chosen"])
    assert main(["predict", str(out), str(pts), "-o", str(tmp_path / "pred.csv")]) == 0
    pred = pd.read_csv(tmp_path / "pred.csv", keep_default_na=False)
    assert list(pred.columns[-3:]) == ["predicted", "bounded", "extrapolation"] and len(pred) == len(test)
    assert (np.abs(pred.predicted - test.t) / test.t).median() < 0.1
    for kind in ("forest", "paper"):
        assert main(["fit", str(data), "--response", "t", "--transform", "log", "--model", kind,
                     "-o", str(tmp_path / f"{kind}.json")]) == 0
        text = capsys.readouterr().out
        assert ("forest model of t" in text) if kind == "forest" else ("final model" in text)
        assert main(["predict", str(tmp_path / f"{kind}.json"), str(pts), "-o", str(tmp_path / "p2.csv")]) == 0
    capsys.readouterr()
    assert main(["fit", str(data), "--response", "nope", "--model", "ebm", "-o", str(tmp_path / "x.json")]) == 2
    assert "gpudse: error: response column 'nope'" in capsys.readouterr().err
    # the stepwise search's flags with a model that does not run it: refused, named, nothing written
    for kind in ("forest", "auto"):
        assert main(["fit", str(data), "--response", "t", "--model", kind, "--knots", "4", "--robust", "none",
                     "--cells", "off", "-o", str(tmp_path / "flags.json")]) == 2
        err = capsys.readouterr().err
        assert "--knots, --robust, --cells: these tune the stepwise search, and --model " + (
            "auto compares the stepwise search at fixed settings" if kind == "auto"
            else "forest does not run it") in err
        assert not (tmp_path / "flags.json").exists()


def test_the_cross_validation_flags_are_refused_without_model_auto(tmp_path, capsys):
    """--folds and --auto-rule tune only --model auto's choice: with the stepwise search (a file or a workspace),
    the paper model or a learner they are refused by name before any work, never silently ignored."""
    data = tmp_path / "r.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "t": [1.0, 2.0, 3.0, 4.0]}).to_csv(data, index=False)
    out = tmp_path / "m.json"
    for kind, flags in (("stepwise", ["--folds", "3"]), ("paper", ["--auto-rule", "lowest"]),
                        ("forest", ["--folds", "3", "--auto-rule", "lowest"])):
        assert main(["fit", str(data), "--response", "t", "--model", kind, *flags, "-o", str(out)]) == 2
        err = capsys.readouterr().err
        named = ", ".join(f for f in flags if f.startswith("--"))
        assert f"{named}: th" in err and f"--model {kind} does not run it" in err and "use --model auto" in err
        assert not out.exists()
    assert main(["fit", "--workspace", "nope", "--folds", "3"]) == 2
    assert "--folds: this tunes --model auto's choice by cross-validation" in capsys.readouterr().err


def test_validate_takes_the_auto_rule_and_refuses_it_without_auto(smooth, tmp_path, capsys, monkeypatch):
    """`gpudse validate --auto-rule` tunes the auto model's choice as `gpudse fit --auto-rule` does; without auto
    in --models it is refused by name before any fit. The cross-validation is replaced by a known table
    (stepwise+2way lowest, within noise of the forest), so the two rules pick differently."""
    import gpudse_core.model.auto as auto

    train, _ = smooth
    data = tmp_path / "r.csv"
    train.to_csv(data, index=False)
    base = ["validate", str(data), "--response", "t", "--train-sizes", "40", "--test-size", "30", "--repeats", "1"]
    assert main([*base, "--models", "stepwise,fixed", "--auto-rule", "lowest"]) == 2
    err = capsys.readouterr().err
    assert "--auto-rule: this tunes the auto model's choice" in err and "add auto to --models" in err
    known = pd.DataFrame([{"candidate": c, "mean": m, "median": m, "p98": m, "max": m, "nonfinite": 0, "bounded": 0,
                           "seconds": 0.0, "vs_ref": d, "vs_ref_se": 0.0006, "note": ""}
                          for c, m, d in (("stepwise+2way", 0.0146, -0.0003), ("forest", 0.0149, np.nan))])
    rules = []
    monkeypatch.setattr(auto, "cross_validate", lambda *a, rule, **k: rules.append(rule) or known)
    picks = []
    for flag in ([], ["--auto-rule", "lowest"]):
        assert main([*base, "--models", "auto", *flag, "--json"]) == 0
        picks.append(json.loads(capsys.readouterr().out)["auto_chosen"]["40"])
    assert rules == ["one-se", "lowest"] and picks == [["forest"], ["stepwise+2way"]]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["forest", "boosting", "hybrid", "ebm"])
def test_learners_predict_no_rows(kind, smooth):
    """A scan's last chunk may be empty: every learner answers it with no predictions, not an error."""
    train, _ = smooth
    model = fit_model(kind, train, "t", None, transform="log", seed=0)
    empty = train.drop(columns="t").head(0)
    assert model.predict(empty).shape == (0,)
    assert list(model.predict_details(empty).columns) == ["predicted", "bounded", "extrapolation"]


@pytest.mark.parametrize("transform", [None, "auto"])
def test_default_transform_reaches_every_model_kind(transform, smooth):
    """`gpudse fit --model forest|auto|paper` without --transform: the stepwise model chooses its own
    scale, the paper model keeps Stargazer 1.0's raw scale, the others use log for a positive response
    (registry.learner_transform)."""
    train, test = smooth
    for kind in ("forest", "paper", "stepwise"):
        m = fit_model(kind, train, "t", None, transform=transform, seed=0)
        assert m.transform in ("log", "sqrt", "none")
        if kind != "stepwise":
            assert m.transform == ("none" if kind == "paper" else "log")
        assert np.isfinite(m.predict(test.drop(columns="t"))).all()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["forest", "boosting", "hybrid"])
def test_grown_in_parts_is_the_same_model_and_stops_between_parts(kind, smooth, monkeypatch):
    """Forests and boosting are fitted in parts (warm_start) so that a Stop lands within a fraction of
    a fit: the model is the one a single fit gives, and a stop request interrupts between parts."""
    from gpudse_core.model import cancel, learners

    train, test = smooth
    monkeypatch.setattr(learners, "PARTS", 1)
    whole = fit_learner(kind, train, "t", seed=3).predict(test)
    monkeypatch.setattr(learners, "PARTS", 4)
    parts = fit_learner(kind, train, "t", seed=3).predict(test)
    assert np.array_equal(np.asarray(whole), np.asarray(parts))
    asked = []

    def stopped() -> bool:
        asked.append(1)
        return True

    with cancel.watching(stopped), pytest.raises(cancel.Interrupted):
        fit_learner(kind, train, "t", seed=3)
    assert len(asked) == 1  # interrupted at the first check, before the second part
    cancel.check()  # outside a job: nothing to stop


def test_predict_of_a_saved_model_imports_no_fitting_library(smooth, tmp_path):
    """`gpudse predict` of every kind evaluates the stored model with NumPy: scikit-learn, SciPy and
    InterpretML stay unloaded (each cost ~2 s of CPU per call when they were imported)."""
    import subprocess
    import sys

    from conftest import ROOT

    train, test = smooth
    test.drop(columns="t").to_csv(tmp_path / "points.csv", index=False)
    small = {"forest": {"n_estimators": 5}, "boosting": {"max_iter": 5}, "hybrid": {"max_iter": 5},
             "ebm": {"outer_bags": 1, "interactions": 1}}
    files = []
    for kind in ["stepwise", *sorted(KINDS)]:
        m = fit_stepwise(train, "t", transform="log") if kind == "stepwise" else fit_learner(kind, train, "t",
                                                                                             settings=small[kind])
        save_model(m, tmp_path / f"{kind}.json")
        files.append(kind)
    probe = ("import json, sys\nfrom gpudse_core.cli import main\n"
             "for k in sys.argv[1:]:\n"
             "    assert main(['predict', k + '.json', 'points.csv', '-o', k + '.out.csv', '--precision', '17']) == 0\n"
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n")
    r = subprocess.run([sys.executable, "-c", probe, *files], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    loaded = set(json.loads(r.stdout.strip().splitlines()[-1]))
    assert "numpy" in loaded and not loaded & {"sklearn", "scipy", "interpret", "statsmodels"}, sorted(loaded)
    for kind in files:
        out = pd.read_csv(tmp_path / f"{kind}.out.csv")
        want = load_model(tmp_path / f"{kind}.json").predict(test)
        # 17 significant digits write every double exactly (the CSV default rounds computed columns)
        assert np.array_equal(out.predicted.to_numpy(), want), kind


def test_a_project_keeps_a_learner_larger_than_a_document(tmp_path):
    """A project's model.json holds a learner's fitted trees: it is bounded by model_bytes, not by
    the (smaller) limit of a space or settings document."""
    from gpudse_core import load_preset, sample
    from gpudse_core.workspace.project import Project, load_project, save_project

    space = load_preset("stargazer")
    pts = sample(space, 120, seed=4).points
    data = pts.assign(cycles=1e5 / pts.simd * (1 + 4 / pts.blk))
    m = fit_learner("forest", data, "cycles", params=["blk", "simd", "smp"], settings={"n_estimators": 20})
    size = len(json.dumps(model_to_dict(m)))
    zipped = save_project(Project(space, model=m))
    with limits.override(document_bytes=size // 2):
        back = load_project(zipped, "p.zip").model
        assert np.array_equal(back.predict(pts), m.predict(pts))
    with limits.override(document_bytes=size // 2, model_bytes=size // 2), \
            pytest.raises(limits.LimitError, match="model_bytes"):
        load_project(zipped, "p.zip")


def test_the_rule_reaches_auto_from_the_command_line(smooth, tmp_path, capsys, monkeypatch):
    """`gpudse fit --model auto --auto-rule lowest` picks by the rule before; the default by one-se. The
    cross-validation is replaced by a known table (stepwise+2way lowest, within noise of the forest)."""
    import gpudse_core.model.auto as auto

    train, _ = smooth
    data = tmp_path / "r.csv"
    train.to_csv(data, index=False)
    known = pd.DataFrame([{"candidate": c, "mean": m, "median": m, "p98": m, "max": m, "nonfinite": 0, "bounded": 0,
                           "seconds": 0.0, "vs_ref": d, "vs_ref_se": 0.0006, "note": ""}
                          for c, m, d in (("stepwise+2way", 0.0146, -0.0003), ("forest", 0.0149, np.nan))])
    rules = []
    monkeypatch.setattr(auto, "cross_validate", lambda *a, rule, **k: rules.append(rule) or known)
    picks = {}
    for flag in ([], ["--auto-rule", "lowest"]):
        assert main(["fit", str(data), "--response", "t", "--model", "auto", *flag, "-o", str(tmp_path / "m.json"),
                     "--json"]) == 0
        sel = json.loads(capsys.readouterr().out)["selection"]
        picks[sel["rule"]] = sel["chosen"]
        assert sel["reference"] == "forest" and [r["candidate"] for r in sel["table"]] == ["stepwise+2way", "forest"]
    assert rules == ["one-se", "lowest"] and picks == {"one-se": "forest", "lowest": "stepwise+2way"}
    with pytest.raises(SystemExit) as e:
        main(["fit", str(data), "--response", "t", "--model", "auto", "--auto-rule", "best"])
    assert e.value.code == 2 and "invalid choice: 'best' (choose from 'one-se', 'lowest')" in capsys.readouterr().err
