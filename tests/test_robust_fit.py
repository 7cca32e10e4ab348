"""The robust default's additions to Algorithm 1 (accuracy): look-ahead for parameters that act
only jointly, adaptive interactions (F-tested doubly non-linear parts), the lower-order fill of unseen
level combinations, leave-one-out pruning of the selection path and ``response_transform="auto"``.

Each is checked against an independent computation: the search candidate by candidate against a plain
implementation that refits every candidate with statsmodels and takes its nested-model F-test; the
pruning scores against explicit leave-one-out refits; the fill against a statsmodels two-way fit of the
term's table on the seen combinations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from gpudse_core import load_preset, sample
from gpudse_core.model import encoding
from gpudse_core.model.fitted import StepwiseModel
from gpudse_core.model.inference import design_matrix
from gpudse_core.model.splines import make_basis
from gpudse_core.model.stepwise import ALGORITHM1_SETTINGS, StepwiseRegression, fit_stepwise, interaction_block

NOISE = 0.01


def joint_data(n: int = 300, seed: int = 4) -> pd.DataFrame:
    """Stargazer points with a log-scale response of known structure: simd and tc main effects; a step
    in blk and tc at once (blk = 1 and tc ≥ 2 adds 0.4: a product of two non-linear functions, as the
    built-in ray tracer's texture cache and block count); smp with a main effect; mshr acting only with
    smp (its average effect is zero); the other five parameters inert."""
    pts = sample(load_preset("stargazer"), n, seed=seed).points
    rng = np.random.default_rng(seed)
    smp = np.log2(pts.smp) - 1.5
    z = (0.8 * (pts.simd == 8) + 0.4 * (pts.simd == 16) + 0.35 * (pts.tc == 1) + 0.2 * smp
         + 0.4 * ((pts.blk == 1) & (pts.tc >= 2)) + 0.05 * (pts.mshr - 2) * smp + rng.normal(0, NOISE, n))
    return pts.assign(y=z.to_numpy())


def bases_of(df: pd.DataFrame, names: list[str], knots: int = 6) -> dict:
    plan = encoding.plan({p: df[p].to_numpy() for p in names})
    return {p: make_basis(p, df[p].to_numpy(), knots, "distinct", categorical=plan[p].categorical,
                          scale=plan[p].scale) for p in names}


def reference(df: pd.DataFrame, response: str, limit: float = 0.001) -> list[tuple[str, bool, dict]]:
    """The robust search written plainly (no revisit, no pruning): every candidate refitted with
    statsmodels OLS and scored by the p-value of the nested F-test against the current model.

    Algorithm 1 with the F-test rule; when the best main effect fails, each remaining parameter P
    with each pair P:Q (Q chosen) as one block (look-ahead); after an accepted interaction, first
    its doubly non-linear products ("a:b (full)"), then its extensions by one more chosen parameter."""
    names = [c for c in df.columns if c != response]
    y = df[response].to_numpy(float)
    n = y.size
    bases = bases_of(df, names)
    cols = {p: bases[p].evaluate(df[p].to_numpy()) for p in names}

    def block(t: tuple[str, ...], form: str = "restricted") -> np.ndarray:
        if len(t) == 1:
            return cols[t[0]]
        return interaction_block([cols[p] for p in t], [bases[p] for p in t], form)[0]

    def fit(blocks: list[np.ndarray]):
        return sm.OLS(y, np.column_stack([np.ones(n)] + blocks)).fit()

    model: list[np.ndarray] = []
    taken: set[frozenset] = set()
    chosen: list[str] = []
    steps: list[tuple[str, bool, dict]] = []

    def p_value(extra: np.ndarray) -> float:
        small, big = fit(model), fit(model + [extra])
        return float(big.compare_f_test(small)[1])

    def doubly(t: tuple[str, ...]) -> bool:
        return sum(bases[p].width > len(bases[p].linear_columns) for p in t) >= 2

    def grow(cands: list[tuple[str, ...]], label, get, then=None) -> None:
        cands = [t for t in cands if frozenset(t) not in taken]
        while cands:
            scores = {label(t): p_value(get(t)) for t in cands}
            best = min(scores, key=scores.get)
            ok = scores[best] < limit
            steps.append((best, ok, scores))
            if not ok:
                return
            t = next(t for t in cands if label(t) == best)
            model.append(get(t))
            taken.add(frozenset(t))
            cands.remove(t)
            if then is not None:
                then(t)

    def higher(t: tuple[str, ...]) -> None:
        if doubly(t):
            grow([t + ("full",)], lambda u: ":".join(u[:-1]) + " (full)", lambda u: block(u[:-1], "doubly"))
        if len(t) < 3:
            grow([t + (m,) for m in chosen if m not in t], ":".join, block, higher)

    remaining = list(names)
    scores = {p: p_value(block((p,))) for p in remaining}
    first = min(scores, key=scores.get)
    steps.append((first, True, scores))
    while True:
        if first is None:
            scores = {p: p_value(block((p,))) for p in remaining}
            best = min(scores, key=scores.get)
            ok = scores[best] < limit
            steps.append((best, ok, scores))
            partner = None
            if not ok:
                la = {f"{p} + {p}:{q}": p_value(np.hstack([block((p,)), block((p, q))]))
                      for p in remaining for q in chosen}
                best_la = min(la, key=la.get)
                if la[best_la] >= limit:
                    break
                best, partner = best_la.split(" + ")[0], best_la.split(":")[-1]
                steps.append((best, True, la))
        else:
            best, partner = first, None
            first = None
        model.append(block((best,)))
        taken.add(frozenset((best,)))
        remaining.remove(best)
        partners = list(chosen)
        chosen.append(best)
        if partner is not None:
            t = (best, partner)
            steps.append((":".join(t), True, {":".join(t): p_value(block(t))}))
            model.append(block(t))
            taken.add(frozenset(t))
            partners.remove(partner)
            higher(t)
        grow([(best, p) for p in partners], ":".join, block, higher)
        if not remaining:
            break
    return steps


@pytest.mark.slow
def test_search_matches_a_plain_statsmodels_implementation():
    df = joint_data()
    ref = reference(df, "y")
    est = StepwiseRegression(response="y", revisit=False, prune=False, response_transform="none", robust="none",
                             cells=False, row_guard=False)
    got = list(est.iter_fit(df))
    assert [(s.chosen, bool(s.accepted)) for s in got] == [(c, ok) for c, ok, _ in ref]
    for s, (_, _, scores) in zip(got, ref):
        assert set(s.candidates) == set(scores)
        for k, v in scores.items():
            assert s.candidates[k] == pytest.approx(v, rel=1e-6, abs=1e-12), (s.step, k)
    kinds = {s.kind for s in got if s.accepted}
    # the data exercise both additions: mshr enters only with mshr:smp, blk:tc needs its full part
    assert {"lookahead", "nonlinear"} <= kinds
    assert "mshr" in est.model_.terms and any(t.endswith("(full)") and "tc" in t for t in est.model_.terms)


def test_look_ahead_finds_a_parameter_without_main_effect():
    df = joint_data()
    # without level cells: a cell mshr = v & smp = w would bring mshr in without the look-ahead
    plain = fit_stepwise(df, "y", transform="none", lookahead=False, revisit=False, prune=False, cells=False)
    ahead = fit_stepwise(df, "y", transform="none", revisit=False, prune=False, cells=False)
    assert "mshr" not in plain.parameters
    assert {"mshr", "mshr:smp"} <= set(ahead.terms)
    grid = sample(load_preset("stargazer"), 2000, seed=5).points
    truth = joint_data(2000, seed=5).y.to_numpy()  # same points (same seed), noise of 1 %
    err = {k: np.sqrt(np.mean((m.linear_predictor(grid) - truth) ** 2)) for k, m in (("plain", plain),
                                                                                      ("ahead", ahead))}
    assert err["ahead"] < 0.5 * err["plain"]


def test_adaptive_form_fits_a_step_in_two_parameters():
    df = joint_data()
    # without level cells: a cell at the step would narrow the gap between the two forms
    restricted = fit_stepwise(df, "y", transform="none", interactions="restricted", cells=False)
    adaptive = fit_stepwise(df, "y", transform="none", cells=False)
    assert not any(t.endswith("(full)") for t in restricted.terms)
    test = joint_data(2000, seed=5)
    rmse = {k: np.sqrt(np.mean((m.linear_predictor(test) - test.y) ** 2)) for k, m in (("r", restricted),
                                                                                      ("a", adaptive))}
    assert rmse["a"] < 0.6 * rmse["r"] and rmse["a"] < 3 * NOISE
    # the full part's columns are the doubly non-linear products only (the restricted ones came first)
    full = [(t, lab) for t, lab in adaptive.columns if len(t) > 1
            and sum(i not in adaptive.bases[p].linear_columns for p, i in zip(t, lab)) >= 2]
    assert full and all({"blk", "tc"} <= set(t) for t, _ in full)


def test_unseen_combination_takes_the_lower_order_fit():
    """Leave out every training row with blk = 16 and tc = 32: in that combination the blk:tc term's
    full part is unconstrained; the model predicts its two-way margins fitted to the seen ones."""
    df = joint_data(600, seed=8)
    train = df[~((df.blk == 16) & (df.tc == 32))].reset_index(drop=True)
    m = fit_stepwise(train, "y", transform="none", revisit=False, prune=False,
                     params=["blk", "tc", "simd", "smp", "mshr"])
    assert m.unseen == "lower-order" and "tc:blk (full)" in m.terms
    base = {"simd": [32], "smp": [2], "mshr": [2]}
    point = pd.DataFrame({"blk": [16], "tc": [32], **base})
    assert "blk=16 with tc=32 not seen in training" in m.predict_details(point).extrapolation.iloc[0]
    levels = {p: np.asarray(m.support.params[p].levels) for p in m.bases}
    intercept, tables = m.additive_terms(levels)
    (table,) = [tab for t, tab in tables if set(t) == {"blk", "tc"}]
    seen = m.support.seen[next(k for k in m.support.seen if set(k) == {"blk", "tc"})].reshape(table.shape)
    assert seen.sum() == seen.size - 1
    # independent fill: the table on the seen cells by OLS on row and column indicators
    i, j = np.nonzero(np.ones(table.shape, bool))
    cells = pd.DataFrame({"r": i, "c": j, "v": table.ravel()})
    X = pd.get_dummies(cells[["r", "c"]].astype(str), drop_first=True, dtype=float).assign(const=1.0)
    ols = sm.OLS(cells.v[seen.ravel()], X[seen.ravel()]).fit()
    filled = float(ols.predict(X[~seen.ravel()]).iloc[0])
    equation = intercept + sum(float(tab[tuple(list(levels[p]).index(point[p][0]) for p in tt)])
                               for tt, tab in tables)
    cell_value = float(table[~seen][0])
    assert m.linear_predictor(point)[0] == pytest.approx(equation - cell_value + filled, abs=1e-9)
    # seen combinations are untouched; "model" gives the equation itself
    seen_point = pd.DataFrame({"blk": [16], "tc": [16], **base})
    plain = StepwiseModel.from_dict({**m.to_dict(), "unseen": "model"})
    assert plain.linear_predictor(point)[0] == pytest.approx(equation, abs=1e-9)
    assert plain.linear_predictor(seen_point)[0] == pytest.approx(m.linear_predictor(seen_point)[0], abs=1e-12)
    # the setting survives the model file; files without it keep the equation
    assert StepwiseModel.from_dict(m.to_dict()).unseen == "lower-order"
    old = m.to_dict()
    del old["unseen"]
    assert StepwiseModel.from_dict(old).unseen == "model"


@pytest.mark.slow
def test_pruning_scores_are_leave_one_out_refits():
    df = joint_data(200, seed=3)
    # a lax rule lets noise terms onto the path; restricted terms: no row alone in a cell (leverage < 1)
    kw = {"response": "y", "response_transform": "log", "interactions": "restricted", "theta": 0.1, "phi": 0.1,
          "phi3": 0.1, "robust": "none", "cells": False}
    full = StepwiseRegression(prune=False, **kw).fit(df.assign(y=np.exp(df.y))).model_
    pruned = StepwiseRegression(**kw).fit(df.assign(y=np.exp(df.y))).model_
    step = pruned.trace[-1]
    assert step["kind"] == "prune" and step["metric"] == "loo_error"
    A = design_matrix(full, df)
    y = np.exp(df.y.to_numpy())
    z = np.log(y)
    lo, hi = full.bounds()
    def key(k: int) -> tuple:  # a term's columns are contiguous; a full part follows its restricted term
        t, lab = full.columns[k]
        return frozenset(t), sum(i not in full.bases[p].linear_columns for p, i in zip(t, lab)) >= 2 and len(t) > 1

    ends = [0] + [k for k in range(1, len(full.columns) + 1) if k == len(full.columns) or key(k) != key(k - 1)]
    assert len(ends) - 1 == len(full.terms)
    expected = {}
    for term, stop in zip(full.terms, ends[1:]):
        q = np.linalg.qr(A[:, :stop + 1])[0]
        if np.einsum("ij,ij->i", q, q).max() > 0.99:
            continue  # a row alone in its cell: no leave-one-out fit exists (scored at the bound instead)
        err = []
        for i in range(len(df)):
            keep = np.arange(len(df)) != i
            coef, *_ = np.linalg.lstsq(A[keep, :stop + 1], z[keep], rcond=None)
            err.append(abs(math.exp(min(max(A[i, :stop + 1] @ coef, lo), hi)) - y[i]) / y[i])
        expected[f"through {term}"] = float(np.mean(err))
    assert set(expected) <= set(step["candidates"]) and len(expected) >= 5
    assert set(step["candidates"]) == {f"through {t}" for t in full.terms}
    for k, v in expected.items():
        assert step["candidates"][k] == pytest.approx(v, rel=1e-7), k
    best = min(step["candidates"], key=step["candidates"].get)
    assert step["chosen"] == best and pruned.terms == full.terms[:full.terms.index(best[len("through "):]) + 1]
    assert len(pruned.terms) < len(full.terms)  # these data do prune: the tail does not pay its way
    assert [t for t, _ in pruned.contributions()] == pruned.terms
    assert math.isclose(sum(g for _, g in pruned.contributions()), pruned.r2, rel_tol=1e-9)


@pytest.mark.slow
def test_auto_transform_chooses_by_leave_one_out_error():
    df = joint_data(300, seed=6)
    times = df.assign(y=np.exp(3 * df.y))  # multiplicative: additive on the log scale, spanning ~100x
    m = fit_stepwise(times, "y", robust="none", cells=False)
    step = m.trace[-1]
    assert step["kind"] == "transform" and set(step["candidates"]) == {"log", "sqrt", "none"}
    assert m.transform == "log" == step["chosen"] and step["chosen"] == min(step["candidates"],
                                                                            key=step["candidates"].get)
    assert m.settings["response_transform"] == "auto" and any("log scale chosen" in n for n in m.notes)
    for t, score in step["candidates"].items():
        single = StepwiseRegression(response="y", response_transform=t, robust="none", cells=False).fit(times)
        assert single._loo_error_ == pytest.approx(score, rel=1e-12)
    sums = df.assign(y=10 + df.y)  # additive on the raw scale, spanning 1.2x: none or sqrt beats log
    assert fit_stepwise(sums, "y").transform in ("none", "sqrt")
    signed = df.assign(y=df.y - df.y.mean())  # zeros and negatives: only the untransformed fit
    m = fit_stepwise(signed, "y", robust="none", cells=False)
    assert m.transform == "none" and set(m.trace[-1]["candidates"]) == {"none"}
    # the robust default chooses the transform by the least-squares searches, then reruns at it
    robust = fit_stepwise(times, "y", cells=False)
    kinds = [s["kind"] for s in robust.trace]
    assert kinds[-1] == "robust" and kinds.count("transform") == 1 and robust.transform == "log"


def test_paper_preset_switches_every_addition_off():
    for k, v in {"lookahead": False, "prune": False, "unseen": "model", "interactions": "restricted",
                 "response_transform": "none"}.items():
        assert ALGORITHM1_SETTINGS[k] == v
    defaults = StepwiseRegression().get_params()
    assert defaults["interactions"] == "adaptive" and defaults["response_transform"] == "auto"
    assert defaults["lookahead"] and defaults["prune"] and defaults["unseen"] == "lower-order"


def test_a_near_saturated_fit_says_so():
    """148 coefficients on 150 rows gives R² 1.0000 and means nothing: the model's notes (the fit
    page's warning, the CLI's notes) say so; a model with few coefficients per row has no such note."""
    from gpudse_core.model.stepwise import saturation_warning

    rng = np.random.default_rng(3)
    n = 40
    X = pd.DataFrame({f"x{i}": rng.choice([1, 2, 4, 8, 16], n) for i in range(6)})
    X["y"] = rng.lognormal(0, 1, n)  # pure noise: only a saturated model "explains" it
    m = fit_stepwise(X, "y", criterion="adjr2", theta=-1.0, phi=-1.0, prune=False, lookahead=False,
                     interactions="full", bound_margin=None)
    k = len(m.coefficients)
    assert k >= n / 2, k
    assert any(note.startswith(f"{k} coefficients on {n} training rows") and "held-out" in note for note in m.notes)
    assert saturation_warning(10, 300) is None and saturation_warning(150, 300) is not None
    assert saturation_warning(5, 0) is None
