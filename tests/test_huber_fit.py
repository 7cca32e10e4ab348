"""The robust stepwise fit (StepwiseRegression(robust="huber"), the default; docs/models.md "Real
tuning spaces"): the search rerun on Huber pseudo-observations, a round kept where it predicts the
rows left out clearly better than least squares, inference on the kept fit's own working response."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from gpudse_core.model.fitted import FitError, StepwiseModel, design_matrix, mad_scale, transform_response
from gpudse_core.model.inference import _response, anova, coefficient_table
from gpudse_core.model.stepwise import LEAST_SQUARES, ROBUST_K, ROBUST_ROUNDS, ROBUST_TIE, StepwiseRegression

INERT = {"inert1", "inert2"}


def slow_cells(n: int, seed: int, slow: bool = True) -> tuple[pd.DataFrame, np.ndarray]:
    """Known structure (a, b × c; two inert parameters), 2 % noise, and with *slow* about 6 % of
    the designs 3–8× slower than the rest (a tuning space's pathological cells)."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"a": rng.choice([1, 2, 4, 8, 16, 32], n), "b": rng.choice([1, 2, 4, 8], n),
                      "c": rng.integers(0, 2, n), "inert1": rng.choice([1, 2, 3, 4, 5], n),
                      "inert2": rng.choice([10, 20, 40], n)})
    truth = (2.0 + 1.5 / d.a + 0.3 * np.log2(d.b) * d.c + 0.2 * np.log2(d.a)).to_numpy()
    y = truth * np.exp(rng.normal(0, 0.02, n))
    if slow:
        y = np.where(rng.random(n) < 0.06, y * rng.uniform(3, 8, n), y)
    return d.assign(y=y), truth


@pytest.mark.parametrize("seed", range(5))
def test_a_few_slow_designs_no_longer_decide_the_model(seed):
    train, _ = slow_cells(300, seed)
    test, truth = slow_cells(2000, 100 + seed, slow=False)
    x = test.drop(columns="y")
    ls = StepwiseRegression(response="y", robust="none").fit(train).model_
    hub = StepwiseRegression(response="y").fit(train).model_
    err_ls = np.mean(np.abs(ls.predict(x) - truth) / truth)
    err_hub = np.mean(np.abs(hub.predict(x) - truth) / truth)
    # least squares misses most of the structure (11–19 % off the truth); the Huber fit finds a, b
    # and c and no inert parameter, and predicts the clean truth within a few per cent
    assert err_ls > 0.10
    assert err_hub < 0.05 and err_hub < err_ls / 3
    assert {"a", "b", "c"} <= set(hub.parameters) and not INERT & set(hub.parameters)
    assert hub.robust is not None and hub.robust["method"] == "huber" and hub.robust["k"] == ROBUST_K


def test_the_kept_model_is_the_best_by_leave_one_out_error():
    train, _ = slow_cells(300, 2)
    m = StepwiseRegression(response="y", cells=False).fit(train).model_
    row = m.trace[-1]
    names = [LEAST_SQUARES] + [f"Huber round {r}" for r in range(1, ROBUST_ROUNDS + 1)]
    assert row["kind"] == "robust" and row["metric"] == "loo_error" and list(row["candidates"]) == names
    scores = row["candidates"]
    best = min(names[1:], key=scores.get)
    assert scores[LEAST_SQUARES] > scores[best] * (1 + ROBUST_TIE) and row["chosen"] == best
    assert m.robust["rounds"] == int(row["chosen"].rsplit(" ", 1)[1])
    assert m.settings["robust"] == "huber" and any(n.startswith("robust fit:") for n in m.notes)
    # the response scale (least squares' decision, no R² of its own), the kept round's search (each row
    # marked with its fit), the robust row; numbered on
    assert m.trace[0]["kind"] == "transform" and m.trace[0]["r2"] is None
    assert all(r.get("fit") == best for r in m.trace[1:-1]) and m.trace[-2]["kind"] != "robust"
    assert [r["step"] for r in m.trace] == list(range(1, len(m.trace) + 1))
    from gpudse_core.report import trace

    text = trace.text(trace.build(m.trace, list(train.columns[:-1])))
    assert f"kept {best} (mean LOO error of the others: least squares" in text
    # the score is the mean leave-one-out relative error of least squares on the kept fit's own
    # pseudo-observations, recomputed here by refitting without each row (bounded as predictions are)
    A = design_matrix(m, train)
    working = _response(m, train)
    y = train.y.to_numpy()
    errs = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        coef = np.linalg.lstsq(A[keep], working[keep], rcond=None)[0]
        errs.append(abs(np.exp(m.bound(np.array([A[i] @ coef]))[0][0]) - y[i]) / y[i])
    assert np.mean(errs) == pytest.approx(row["candidates"][row["chosen"]], rel=1e-6)


def test_clean_data_keep_least_squares():
    """Without slow rows the reruns only trade noise: least squares is kept, and says so."""
    train, _ = slow_cells(300, 2, slow=False)
    m = StepwiseRegression(response="y", cells=False).fit(train).model_
    ls = StepwiseRegression(response="y", robust="none", cells=False).fit(train).model_
    row = m.trace[-1]
    assert row["kind"] == "robust" and row["chosen"] == LEAST_SQUARES and m.robust is None
    assert m.coefficients == ls.coefficients and m.r2 == ls.r2 and m.settings["robust"] == "huber"
    assert any("least squares, whose model is kept" in n for n in m.notes)


def test_noise_free_data_stay_least_squares():
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"a": rng.choice([1, 2, 4, 8], 120), "b": rng.choice([0.0, 1.0, 2.0], 120)})
    d["y"] = 3 + 2 * d.a + 5 * d.b  # exactly linear: the least-squares fit goes through every row
    m = StepwiseRegression(response="y", response_transform="none").fit(d).model_
    ls = StepwiseRegression(response="y", response_transform="none", robust="none").fit(d).model_
    assert m.robust is None and m.coefficients == ls.coefficients and m.terms == ls.terms
    assert not any(r["kind"] == "robust" for r in m.trace)
    assert m.settings["robust"] == "huber" and any("nothing to make robust" in n for n in m.notes)


def test_inference_is_least_squares_on_the_kept_fits_pseudo_observations():
    train, _ = slow_cells(300, 3)
    m = StepwiseRegression(response="y").fit(train).model_
    assert m.robust is not None
    A = design_matrix(m, train)
    z = transform_response(train.y.to_numpy(), m.transform)
    fitted = A @ np.asarray(m.coefficients)
    working = _response(m, train)
    # the coefficient table reproduces the model's coefficients, with statsmodels' standard errors of
    # the pseudo-observations
    table = coefficient_table(m, train)
    np.testing.assert_allclose(table.coef, m.coefficients, rtol=1e-8, atol=1e-10)
    ols = sm.OLS(working, A).fit()
    np.testing.assert_allclose(table.std_err, ols.bse, rtol=1e-10)
    # pseudo-observations: every residual inside the clip (scaled by the share inside), the outlying
    # rows pulled in; the part along the model's columns is removed, the rest kept
    e = z - fitted
    s = m.robust["scale"]
    assert s == pytest.approx(mad_scale(e), rel=1e-12)
    e = e - np.median(e)  # centred, as the search's pseudo-observations
    inside = np.mean(np.abs(e) <= ROBUST_K * s)
    raw = np.clip(e, -ROBUST_K * s, ROBUST_K * s) / inside
    np.testing.assert_allclose(working - fitted, raw - A @ np.linalg.lstsq(A, raw, rcond=None)[0], atol=1e-10)
    assert np.abs(working - fitted).max() < 0.5 * np.abs(e).max()  # the 3–8× slow rows are pulled in
    # R² is of the pseudo-observations (positive, as the table's), the ANOVA finite
    assert m.r2 == pytest.approx(ols.rsquared, rel=1e-9) and 0 < m.r2 < 1
    table = anova(m, train)
    tests = table[table.factor != "ERROR"]
    assert np.isfinite(tests[["F", "P"]].to_numpy(dtype=float)).all()
    rows = list(table.factor.str.strip())
    p = dict(zip(rows, table.P))
    b = rows.index("b  (Factor+Higher Order Factors)")
    # the truth: a non-linear in a, b × c linear in log2 b; the tests say so (b's block: its non-linear
    # columns, with those of its interaction, add nothing)
    assert max(p["a"], p["b  (Factor+Higher Order Factors)"], p["c  (Factor+Higher Order Factors)"],
               p["REGRESSION"]) < 1e-6
    assert rows[b + 2] == "Nonlinear (Factor+Higher Order Factors)" and table.P.iloc[b + 2] > 0.01


def test_the_model_file_keeps_the_robust_fit(tmp_path):
    train, _ = slow_cells(300, 4)
    m = StepwiseRegression(response="y").fit(train).model_
    path = tmp_path / "m.json"
    m.save(path)
    back = StepwiseModel.load(path)
    assert back.robust == m.robust and back.r2 == m.r2
    x = train.drop(columns="y")
    np.testing.assert_array_equal(back.predict(x), m.predict(x))
    d = json.loads(path.read_text())
    for bad in ({"method": "huber", "k": 1.0, "scale": -0.5, "rounds": 2}, {"method": "huber"}, "huber",
                {"method": "huber", "k": 1.0, "scale": 0.1, "rounds": True}):
        path.write_text(json.dumps({**d, "robust": bad}))
        with pytest.raises(FitError, match="robust must be"):
            StepwiseModel.load(path)


def test_bad_settings_and_the_cli_flag(tmp_path, capsys):
    from gpudse_core.cli import main

    with pytest.raises(FitError, match="robust must be one of huber, none"):
        StepwiseRegression(response="y", robust="tukey").fit(slow_cells(50, 0)[0])
    data = tmp_path / "d.csv"
    slow_cells(200, 1)[0].to_csv(data, index=False)
    out = {}
    for flag in ("huber", "none"):
        path = tmp_path / f"{flag}.json"
        assert main(["fit", str(data), "--response", "y", "--robust", flag, "-o", str(path)]) == 0
        out[flag] = json.loads(path.read_text())
    assert out["huber"]["settings"]["robust"] == "huber" and "robust" in out["huber"]
    assert out["none"]["settings"]["robust"] == "none" and "robust" not in out["none"]
    capsys.readouterr()
    assert main(["fit", str(data), "--response", "y", "--model", "paper", "--robust", "huber",
                 "-o", str(tmp_path / "p.json")]) == 2
    assert "--robust" in capsys.readouterr().err
