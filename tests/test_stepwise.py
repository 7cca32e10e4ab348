"""Stargazer Algorithm 1: accept/stop logic on data with known structure, against an independent
brute-force implementation, degenerate candidates, bad input, JSON round trips, sklearn protocol."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gpudse_core import load_preset, sample
from gpudse_core.model import encoding
from gpudse_core.model.splines import make_basis
from gpudse_core.model.stepwise import (
    ALGORITHM1_SETTINGS,
    PAPER_SETTINGS,
    FitError,
    StepwiseModel,
    StepwiseRegression,
    fit_stepwise,
    interaction_block,
)

PAPER = {k: v for k, v in ALGORITHM1_SETTINGS.items() if k not in ("theta", "phi", "compare")}


@pytest.fixture(scope="module")
def stargazer_data():
    pts = sample(load_preset("stargazer"), 300, seed=11).points
    rng = np.random.default_rng(5)
    # True structure: simd and blk with an interaction, intra nonlinear; the other 7 parameters inert.
    y = (4e5 / pts.simd * (1 + 3 / pts.blk) + 2e4 * np.log2(pts.intra) ** 2 + 800 * pts.simd * np.log2(pts.blk)
         + rng.normal(0, 1500, len(pts)))
    return pts.assign(cycles=y)


def paper_bases(df, names, knots=4):
    return {p: make_basis(p, df[p].to_numpy(), knots, "even") for p in names}


def robust_bases(df, names, knots=4):
    plan = encoding.plan({p: df[p].to_numpy() for p in names})
    return {p: make_basis(p, df[p].to_numpy(), knots, "distinct", categorical=plan[p].categorical,
                          scale=plan[p].scale) for p in names}


def brute_force(df, response, theta, phi, compare="r2", knots=4, form="restricted", make=paper_bases, phi3=None):
    """Algorithm 1 written plainly: refit every candidate with lstsq. Returns [(chosen, accepted, scores)].
    With *phi3*, each accepted pair is followed by its three-way extensions."""
    names = [c for c in df.columns if c != response]
    y = df[response].to_numpy(float)
    n = y.size
    bases = make(df, names, knots)
    cols = {p: bases[p].evaluate(df[p].to_numpy()) for p in names}
    tss = float(np.sum((y - y.mean()) ** 2))

    def stats_of(blocks):
        A = np.column_stack([np.ones(n)] + blocks)
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        rss = float(np.sum((y - A @ coef) ** 2))
        rank = np.linalg.matrix_rank(A)
        return 1 - rss / tss, 1 - (rss / (n - rank)) / (tss / (n - 1))

    def block(t):
        if len(t) == 1:
            return cols[t[0]]
        return interaction_block([cols[p] for p in t], [bases[p] for p in t], form)[0]

    model, chosen, remaining, steps = [], [], list(names), []

    def inner(cands, limit, then=None):
        """Add the best interaction while it passes *limit*; *then* runs after each accepted one."""
        while cands:
            r2, adj = stats_of(model)
            sc = {":".join(t): stats_of(model + [block(t)])[1] for t in cands}
            tb = max(sc, key=sc.get)
            ok = sc[tb] - (r2 if compare == "r2" else adj) > limit
            steps.append((tb, ok, sc))
            if not ok:
                break
            t = tuple(tb.split(":"))
            model.append(block(t))
            cands.remove(t)
            if then is not None:
                then(t)

    scores = {p: stats_of([block((p,))])[0] for p in remaining}
    first = max(scores, key=scores.get)
    model.append(block((first,)))
    chosen.append(first)
    remaining.remove(first)
    steps.append((first, True, scores))
    while remaining:
        r2, adj = stats_of(model)
        scores = {p: stats_of(model + [block((p,))])[1] for p in remaining}
        best = max(scores, key=scores.get)
        ok = scores[best] - (r2 if compare == "r2" else adj) > theta
        steps.append((best, ok, scores))
        if not ok:
            break
        model.append(block((best,)))
        partners = list(chosen)
        chosen.append(best)
        remaining.remove(best)
        inner([(best, p) for p in partners], phi,
              None if phi3 is None else (lambda t: inner([t + (m,) for m in chosen if m not in t], phi3)))
    return steps


def test_recovers_the_true_terms(stargazer_data):
    m = fit_stepwise(stargazer_data, "cycles", theta=0.01, phi=0.01, robust="none")
    assert set(m.terms) == {"simd", "blk", "intra", "blk:simd"} or set(m.terms) == {"simd", "blk", "intra", "simd:blk"}
    assert m.r2 > 0.98
    inert = {"cc", "tc", "smp", "ccp", "mshr", "dramq", "inter"}
    assert not inert & set(m.parameters)
    # contributions in selection order sum to the final R² (Stargazer Fig. 3)
    assert math.isclose(sum(g for _, g in m.contributions()), m.r2, rel_tol=1e-9)


@pytest.mark.parametrize("theta, phi, compare", [(0.003, 0.0, "r2"), (0.01, 0.01, "r2"), (0.0, 0.0, "adj_r2"),
                                                  (0.05, 0.2, "r2")])
@pytest.mark.slow
def test_trace_matches_brute_force_algorithm_1(stargazer_data, theta, phi, compare):
    ref = brute_force(stargazer_data, "cycles", theta, phi, compare)
    est = StepwiseRegression(response="cycles", theta=theta, phi=phi, compare=compare, **PAPER)
    got = list(est.iter_fit(stargazer_data))
    assert [(s.chosen, s.accepted) for s in got] == [(c, ok) for c, ok, _ in ref]
    for s, (_, _, scores) in zip(got, ref):
        assert set(s.candidates) == set(scores)
        for k, v in scores.items():
            assert s.candidates[k] == pytest.approx(v, abs=1e-9)


def test_first_row_is_r2_then_adjusted(stargazer_data):
    steps = list(StepwiseRegression(response="cycles", **PAPER_SETTINGS).iter_fit(stargazer_data))
    assert steps[0].metric == "r2" and steps[0].kind == "initial" and len(steps[0].candidates) == 10
    assert all(s.metric == "adj_r2" for s in steps[1:])
    inter = [s for s in steps if s.kind == "interaction"]
    assert inter and all(":" in k for s in inter for k in s.candidates)
    assert steps[-1].accepted is False or len(steps[-1].terms) == 10


def test_thresholds_control_the_size(stargazer_data):
    big = fit_stepwise(stargazer_data, "cycles", **{**PAPER, "theta": 0.0, "phi": 0.0})
    small = fit_stepwise(stargazer_data, "cycles", **{**PAPER, "theta": 0.5, "phi": 0.5})
    assert len(small.terms) == 1 and len(big.terms) >= 4
    loose = fit_stepwise(stargazer_data, "cycles", **{**PAPER, "theta": 0.0, "phi": 0.0, "compare": "adj_r2"})
    assert len(loose.terms) >= len(big.terms)
    capped = fit_stepwise(stargazer_data, "cycles", **{**PAPER, "theta": 0.0, "phi": 0.0, "max_terms": 3})
    assert len(capped.terms) == 3 and capped.terms == big.terms[:3]


@pytest.mark.parametrize("criterion", ["aic", "bic", "ftest"])
def test_other_criteria_find_the_structure(stargazer_data, criterion):
    m = fit_stepwise(stargazer_data, "cycles", criterion=criterion, theta=0.0 if criterion != "ftest" else 1e-4,
                     phi=0.0 if criterion != "ftest" else 1e-4)
    assert {"simd", "blk", "intra"} <= set(m.terms)
    assert any(t in m.terms for t in ("blk:simd", "simd:blk"))


def test_forced_fixed_factor_model(stargazer_data):
    m = fit_stepwise(stargazer_data, "cycles", forced=["simd", "blk", "simd:blk"], search=False, transform="none")
    assert m.terms == ["simd", "blk", "simd:blk"]
    # the fixed terms are fitted robustly (the default): the search of forced terms, then the Huber row
    assert [s["kind"] for s in m.trace] == ["forced"] * 3 + ["robust"] and m.robust["rounds"] >= 1
    ls = fit_stepwise(stargazer_data, "cycles", forced=["simd", "blk", "simd:blk"], search=False, transform="none",
                      robust="none")
    assert [s["kind"] for s in ls.trace] == ["forced"] * 3 and ls.terms == m.terms
    grown = fit_stepwise(stargazer_data, "cycles", forced=["simd", "blk", "simd:blk"])
    assert grown.terms[:3] == ["simd", "blk", "simd:blk"] and "intra" in grown.terms
    with pytest.raises(FitError, match="unknown parameter"):
        fit_stepwise(stargazer_data, "cycles", forced=["simd:nope"])


def test_degenerate_candidates_are_skipped_not_fatal():
    rng = np.random.default_rng(1)
    a = rng.integers(1, 9, 200).astype(float)
    df = pd.DataFrame({"a": a, "twice_a": 2 * a, "b": rng.integers(1, 5, 200).astype(float)})
    df["y"] = 3 * a + df.b ** 2 + rng.normal(0, 0.1, 200)
    steps = list(StepwiseRegression(response="y", theta=0.0, phi=0.0).iter_fit(df))
    skipped = {k: v for s in steps for k, v in s.skipped.items()}
    assert any("collinear" in v for v in skipped.values())
    model = StepwiseRegression(response="y", theta=0.0, phi=0.0).fit(df).model_
    assert np.all(np.isfinite(model.coefficients))


def test_fewer_rows_than_terms_is_handled():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({f"p{i}": rng.integers(1, 20, 9).astype(float) for i in range(8)})
    df["y"] = rng.normal(size=9)
    m = fit_stepwise(df, "y", theta=-1.0, phi=-1.0)  # accept anything: must stop when rows run out
    assert len(m.coefficients) <= 9
    assert any("only 9 rows" in v for s in m.trace for v in s["skipped"].values())


@pytest.mark.parametrize(
    "mutate, kwargs, pattern",
    [
        (lambda d: d.assign(cycles=d.cycles.where(d.index != 7, np.nan)), {}, r"rows 8 .*NaN"),
        (lambda d: d.assign(cycles=d.cycles.where(d.index != 3, np.inf)), {}, r"rows 4 "),
        (lambda d: d.assign(cycles=d.cycles.astype(object).where(d.index != 0, "n/a")), {}, r"rows 1 .*'n/a'"),
        (lambda d: d.assign(cycles=d.cycles - d.cycles.median()), {"transform": "log"},
         r"log transform needs positive"),
        (lambda d: d.assign(cc=4), {}, r"'cc' .*constant"),
        (lambda d: d, {"params": ["simd", "nope"]}, r"unknown column\(s\) 'nope'"),
        (lambda d: d.rename(columns={"cycles": "time"}), {}, r"response column 'cycles' is not in the data"),
        (lambda d: d.head(2), {}, r"only 2 rows"),
        (lambda d: d, {"criterion": "r2"}, r"unknown criterion"),
        (lambda d: d, {"transform": "exp"}, r"unknown transform"),
    ],
)
def test_bad_input_messages(stargazer_data, mutate, kwargs, pattern):
    with pytest.raises(FitError, match=pattern):
        fit_stepwise(mutate(stargazer_data.copy()), "cycles", **kwargs)


@pytest.mark.parametrize("transform", ["none", "log", "sqrt"])
def test_json_round_trip_and_prediction(stargazer_data, transform, tmp_path):
    m = fit_stepwise(stargazer_data, "cycles", transform=transform, theta=0.0, phi=0.0, interactions="full")
    path = tmp_path / "m.json"
    m.save(path)
    back = StepwiseModel.load(path)
    x = stargazer_data.drop(columns="cycles")
    np.testing.assert_allclose(back.predict(x), m.predict(x), rtol=1e-13)
    assert back.terms == m.terms and back.trace == json.loads(m.to_json())["trace"]
    # vectorised, tabulated prediction equals the fitted values of the least-squares design
    from gpudse_core.model.stepwise import transform_response
    z = transform_response(stargazer_data.cycles.to_numpy(), transform)
    # the default Huber fit: the coefficients are least squares on its own pseudo-observations, whose
    # residuals have mean zero as a least-squares fit's with an intercept do, and R² is theirs
    from gpudse_core.model.inference import _response

    assert m.robust is not None and back.robust == m.robust
    working = _response(m, stargazer_data)
    resid = working - m.linear_predictor(x)
    assert abs(resid.mean()) < 1e-8 * max(1.0, abs(z).max())
    assert 1 - np.sum(resid ** 2) / np.sum((working - working.mean()) ** 2) == pytest.approx(m.r2, abs=1e-9)
    # least squares (robust="none"): the same on the data themselves
    ls = fit_stepwise(stargazer_data, "cycles", transform=transform, theta=0.0, phi=0.0, interactions="full",
                      robust="none")
    assert ls.robust is None and "robust" not in ls.to_dict()
    resid = z - ls.linear_predictor(x)
    assert abs(resid.mean()) < 1e-8 * max(1.0, abs(z).max())
    assert 1 - np.sum(resid ** 2) / np.sum((z - z.mean()) ** 2) == pytest.approx(ls.r2, abs=1e-9)


def test_model_files_are_validated(tmp_path, stargazer_data):
    good = json.loads(fit_stepwise(stargazer_data, "cycles").to_json())
    cases = {
        "schema": ({**good, "schema": "gpudse.model/0"}, "schema"),
        "coef": ({**good, "coefficients": good["coefficients"][:-1]}, "coefficients for"),
        "nan": ({**good, "coefficients": [float("nan")] * len(good["coefficients"])}, "finite"),
        "basis": ({**good, "bases": [{"name": "simd", "kind": "__import__('os')"}]}, "unknown kind"),
        "column": ({**good, "columns": [{"params": ["zz"], "index": [0]}] * len(good["columns"])},
                   "unknown parameters"),
        "list": ([1, 2], "not a gpudse model"),
        "robust": ({**good, "robust": {"method": "huber", "k": -1, "scale": 0.1, "rounds": 3}}, "robust must be"),
        "robust method": ({**good, "robust": {"method": "tukey", "k": 1, "scale": 0.1, "rounds": 3}}, "robust must be"),
    }
    for name, (doc, pattern) in cases.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc))
        with pytest.raises(FitError, match=pattern):
            StepwiseModel.load(p)
    (tmp_path / "bad.json").write_text("{ not json")
    with pytest.raises(FitError, match="malformed JSON"):
        StepwiseModel.load(tmp_path / "bad.json")


def test_predict_rejects_unknown_levels_and_missing_columns(stargazer_data):
    m = fit_stepwise(stargazer_data, "cycles")
    with pytest.raises(FitError, match="lack column"):
        m.predict(stargazer_data[["cc"]])


def test_sklearn_cross_validation(stargazer_data):
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    est = StepwiseRegression(theta=0.01, phi=0.01)
    assert clone(est).get_params() == est.get_params()
    scores = cross_val_score(est, stargazer_data.drop(columns="cycles"), stargazer_data.cycles, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.9)


def test_categorical_parameters():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"sched": rng.choice(["gto", "lrr", "two_level"], 240),
                       "simd": rng.choice([8.0, 16.0, 32.0], 240)})
    effect = df.sched.map({"gto": 0.0, "lrr": 5.0, "two_level": -3.0})
    df["y"] = 100 / df.simd + effect + rng.normal(0, 0.05, 240)
    m = fit_stepwise(df, "y", theta=0.001, phi=0.001)
    assert set(m.parameters) == {"sched", "simd"} and m.r2 > 0.99
    np.testing.assert_allclose(m.predict(pd.DataFrame({"sched": ["lrr"], "simd": [16.0]})), [100 / 16 + 5], atol=0.1)


@pytest.mark.parametrize("theta, phi, phi3", [(0.001, 0.001, 0.001), (0.0, 0.0, 0.0), (0.01, 0.003, 0.0005)])
def test_three_way_search_matches_brute_force(theta, phi, phi3):
    """max_order=3: after each accepted pair, its extensions with a third chosen parameter,
    accepted by the same rule with φ3 — checked candidate by candidate against plain refits, on the
    robust encodings (log2 scale, categorical 3-level parameters, distinct-value knots)."""
    pts = sample(load_preset("stargazer"), 300, seed=21).points
    from gpudse_core.sim.simulator import simulate

    df = pts.assign(cycles=np.log(simulate(pts, "matMul", noise=0.01, seed=3).cycles))
    ref = brute_force(df, "cycles", theta, phi, make=robust_bases, phi3=phi3)
    est = StepwiseRegression(response="cycles", criterion="adjr2", theta=theta, phi=phi, phi3=phi3, knots=4,
                             max_order=3, revisit=False, interactions="restricted", lookahead=False, prune=False,
                             response_transform="none", robust="none", cells=False, row_guard=False)
    got = list(est.iter_fit(df))
    assert [(s.chosen, s.accepted) for s in got] == [(c, ok) for c, ok, _ in ref]
    assert any(s.kind == "interaction3" and s.accepted for s in got)
    for s, (_, _, scores) in zip(got, ref):
        assert set(s.candidates) == set(scores)
        for k, v in scores.items():
            assert s.candidates[k] == pytest.approx(v, abs=1e-9)
    three = [t for t, _ in est.model_.columns if len(t) == 3]
    assert {frozenset(t) for t in three} == {frozenset(("blk", "simd", "smp"))}


def test_matmul_needs_its_three_way_term():
    from gpudse_core.sim.simulator import simulate

    pts = sample(load_preset("stargazer"), 600, seed=8).points
    test = sample(load_preset("stargazer"), 1000, seed=9).points
    y, truth = simulate(pts, "matMul", noise=0.01, seed=1).cycles, simulate(test, "matMul").cycles
    # without level cells on both: a three-way cell can stand in for part of the missing term
    three = fit_stepwise(pts.assign(y=y), "y", transform="log", cells=False)
    pairs = fit_stepwise(pts.assign(y=y), "y", transform="log", max_order=2, cells=False)
    assert any(set(t.split(":")) == {"blk", "simd", "smp"} for t in three.terms)
    err = {k: np.mean(np.abs(m.predict(test) - truth) / truth) for k, m in (("3", three), ("2", pairs))}
    assert err["3"] < 0.02 and err["3"] < 0.6 * err["2"]


def test_forced_interaction_keeps_hierarchy(stargazer_data):
    m = fit_stepwise(stargazer_data, "cycles", forced=["blk:simd"], search=False)
    assert m.terms == ["blk", "simd", "blk:simd"]
    assert [s["chosen"] for s in m.trace if s["kind"] == "forced"] == ["blk", "simd", "blk:simd"]
    grown = fit_stepwise(stargazer_data, "cycles", forced=["simd", "intra:simd"])
    assert grown.terms[:3] == ["simd", "intra", "intra:simd"]
    # a main effect already forced is not forced twice, and the search may still add the others
    assert "blk" in grown.terms and grown.terms.count("simd") == 1
    with pytest.raises(FitError, match="two or three different parameters"):
        fit_stepwise(stargazer_data, "cycles", forced=["simd:simd"])


@pytest.mark.parametrize("values, transform", [([5.0] * 40, "none"), ([3.0] * 40, "log"), ([1e-300] * 40, "none")])
def test_constant_response_is_refused(values, transform):
    df = pd.DataFrame({"a": np.arange(40.0) % 7, "y": values})
    with pytest.raises(FitError, match="'y' is constant .* nothing to model"):
        fit_stepwise(df, "y", transform=transform)


@pytest.mark.slow
def test_scikit_learn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    failures = [r for r in check_estimator(StepwiseRegression(), on_fail=None) if r["status"] == "failed"]
    assert not failures, [(r["check_name"], str(r["exception"])[:300]) for r in failures]


def test_fit_takes_arrays_and_frames(stargazer_data):
    X, y = stargazer_data.drop(columns="cycles"), stargazer_data.cycles
    by_frame = StepwiseRegression(response_transform="log").fit(X, y)
    by_column = StepwiseRegression(response="cycles", response_transform="log").fit(stargazer_data)
    by_array = StepwiseRegression(response_transform="log").fit(X.to_numpy(), y.to_numpy())
    np.testing.assert_allclose(by_frame.predict(X), by_column.predict(X), rtol=1e-12)
    np.testing.assert_allclose(by_array.predict(X.to_numpy()), by_frame.predict(X), rtol=1e-10)
    assert list(by_frame.feature_names_in_) == list(X.columns) and by_array.n_features_in_ == 10
    assert by_array.model_.parameters[0].startswith("x")
    # the model keeps its response transform under the JSON key "transform"; fit_stepwise keeps transform=
    assert by_frame.model_.transform == "log"
    assert fit_stepwise(stargazer_data, "cycles", transform="sqrt").transform == "sqrt"
    assert "transform" not in StepwiseRegression().get_params() and not hasattr(StepwiseRegression(), "transform")
    with pytest.raises(ValueError, match="Feature names must be in the same order"):
        by_frame.predict(X[X.columns[::-1]])
    # extra columns (the response, an index) are not features
    np.testing.assert_allclose(by_frame.predict(stargazer_data), by_frame.predict(X))


def test_the_search_runs_with_blas_threads_capped_and_restores_them(monkeypatch):
    """OpenBLAS threads that outnumber the free cores spin: 48.9 s instead of 6.6 s for the 40 x 20,000
    search on a busy 2-core machine. A fit caps them (half the usable cores) and gives them back."""
    from threadpoolctl import threadpool_info

    from gpudse_core.model import threads

    def blas() -> set[int]:
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    before = blas()
    seen: list[set[int]] = []
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    df = sample(load_preset("stargazer"), 80, seed=3).points
    df["y"] = 1e5 / df.simd + 3e3 * np.log2(df.blk) + np.random.default_rng(1).normal(0, 100, 80)
    fit_stepwise(df, "y", callback=lambda step: seen.append(blas()))
    assert seen and all(s == {1} for s in seen)
    assert blas() == before
    assert threads.fit_threads() == 1
    monkeypatch.setattr(threads, "usable_cores", lambda: 64)
    assert threads.fit_threads() == threads.MAX_THREADS


def test_every_candidate_carries_its_r2_and_adjusted_r2_under_every_criterion():
    """Stargazer Table 1's columns: whatever decides (an F-test's p, AIC, adjusted R²), each candidate
    of each step has the R² and adjusted R² of the model with it added; the accepted one's are the
    model's own after the step, and R² never decreases along accepted steps."""
    import numpy as np
    import pandas as pd

    from gpudse_core.model.stepwise import fit_stepwise

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.choice([1, 2, 4, 8, 16], 240), "b": rng.choice([8, 16, 32], 240),
                      "c": rng.choice([1, 2, 3, 4, 5], 240)})
    X["y"] = 100 / X.a * (1 + 8 / X.b) + rng.normal(0, 0.5, 240)
    for criterion in ("ftest", "adjr2", "aic"):
        m = fit_stepwise(X, "y", criterion=criterion, theta=0.001 if criterion != "aic" else 2.0,
                         phi=0.001 if criterion != "aic" else 2.0)
        scored = [t for t in m.trace if t.get("candidates") and t["kind"] in ("initial", "main", "interaction")]
        assert scored, criterion
        for t in scored:
            assert set(t["r2s"]) == set(t["candidates"]) == set(t["adj_r2s"]), (criterion, t["step"])
            assert all(t["adj_r2s"][k] <= t["r2s"][k] + 1e-12 for k in t["r2s"])
            if t["accepted"]:
                assert t["r2s"][t["chosen"]] == pytest.approx(t["r2"], rel=1e-12)
                assert t["adj_r2s"][t["chosen"]] == pytest.approx(t["adj_r2"], rel=1e-12)
        first = scored[0]
        assert max(first["r2s"], key=first["r2s"].get) == "a"  # a explains most alone


def test_doubly_non_linear_parts_only_on_grid_parameters(monkeypatch):
    """The adaptive form's doubly non-linear part (a tensor spline) is offered on grid parameters (a max of two
    bottlenecks over 8 × 6 levels needs it) but not on a parameter of more than DOUBLY_MAX_VALUES distinct values,
    whose tensor columns reach single rows and swing between them (docs/models.md, Starchart k-means)."""
    from gpudse_core.model.stepwise import StepwiseRegression
    from gpudse_core.model.stepwise import search as stepwise_search

    rng = np.random.default_rng(0)
    a = rng.choice([1, 2, 4, 8, 16, 32, 64, 128], 300).astype(float)
    b = rng.choice([1, 2, 3, 4, 5, 6], 300).astype(float)
    y = np.maximum(100 / a, 20 / b) + np.exp(rng.normal(0, 0.01, 300))
    grid = StepwiseRegression(response="y").fit(pd.DataFrame({"a": a, "b": b, "y": y})).model_
    assert "b:a (full)" in grid.terms
    b_near = b + rng.uniform(-0.45, 0.45, 300).round(3)  # the same grid, near-continuous: ~290 values
    near = pd.DataFrame({"a": a, "b": b_near, "y": y})
    assert not any(t.endswith("(full)") for t in StepwiseRegression(response="y").fit(near).model_.terms)
    monkeypatch.setattr(stepwise_search, "DOUBLY_MAX_VALUES", 10_000)
    assert any(t.endswith("(full)") for t in StepwiseRegression(response="y").fit(near).model_.terms)
