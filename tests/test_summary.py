"""The statsmodels-style summary of a stepwise fit: its numbers are those of the least-squares fit
of the model's design (checked against statsmodels' OLS and a leave-one-out computed here from the
hat matrix), a fit with known coefficients prints them, an interpolating fit shows no tests, and
``gpudse fit --summary`` prints the tables."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from conftest import ROOT

from gpudse_core.model.fitted import design_matrix
from gpudse_core.model.stepwise import fit_stepwise
from gpudse_core.model.summary import Summary, summarize
from gpudse_core.fmt import fmt_r2


def noisy_data(n: int = 120, seed: int = 3) -> pd.DataFrame:
    """log cycles = 4 + 0.7·log2(blk) − 0.3·[simd = 32] + N(0, 0.05²): a fit with noise to test."""
    rng = np.random.default_rng(seed)
    blk = rng.choice([1, 2, 4, 8, 16, 32, 64, 128], n)
    simd = rng.choice([8, 16, 32], n)
    z = 4 + 0.7 * np.log2(blk) - 0.3 * (simd == 32) + rng.normal(0, 0.05, n)
    return pd.DataFrame({"blk": blk, "simd": simd, "cycles": np.exp(z)})


@pytest.fixture(scope="module")
def fitted():
    data = noisy_data()
    model = fit_stepwise(data, "cycles", transform="log", robust="none")
    return model, data, summarize(model, data)


def test_the_summary_holds_the_least_squares_fit_of_the_design(fitted):
    model, data, s = fitted
    assert isinstance(s, Summary) and s.tests_shown
    ref = sm.OLS(np.log(data.cycles.to_numpy()), design_matrix(model, data)).fit()  # statsmodels, independently
    k = len(ref.params)
    assert (s.n, s.df_model, s.df_resid) == (120, k - 1, 120 - k)
    assert s.r2 == pytest.approx(ref.rsquared, rel=1e-10) and s.adj_r2 == pytest.approx(ref.rsquared_adj, rel=1e-10)
    c = s.coefficients
    np.testing.assert_allclose(c.coef, ref.params, rtol=1e-8)
    np.testing.assert_allclose(c.std_err, ref.bse, rtol=1e-8)
    np.testing.assert_allclose(c.t, ref.tvalues, rtol=1e-8)
    np.testing.assert_allclose(c.p, ref.pvalues, rtol=1e-6, atol=1e-300)
    np.testing.assert_allclose(c[["lower", "upper"]].to_numpy(), ref.conf_int(0.05), rtol=1e-8)
    assert s.sigma == pytest.approx(np.sqrt(ref.mse_resid), rel=1e-10)
    # the ANOVA's last rows: the regression's F is the overall F-test, the error row its residuals
    a = s.anova.set_index("factor")
    assert a.loc["REGRESSION", "F"] == pytest.approx(ref.fvalue, rel=1e-8)
    assert a.loc["REGRESSION", "df"] == k - 1 and a.loc["ERROR", "df"] == 120 - k
    assert a.loc["ERROR", "partial_ss"] == pytest.approx(ref.ssr, rel=1e-10)
    # the out-of-sample error: leave-one-out, e_i / (1 − h_ii) on the log scale, as a relative error
    X = design_matrix(model, data)
    h = np.diag(X @ np.linalg.pinv(X.T @ X) @ X.T)
    z = np.log(data.cycles.to_numpy())
    loo = np.exp(z - ref.resid / (1 - h))
    median = np.median(np.abs(loo - data.cycles) / data.cycles)
    assert s.headline.source == "leave-one-out" and s.headline.value == pytest.approx(median, rel=1e-8)


def test_the_summary_prints_like_statsmodels(fitted):
    s = fitted[2]
    text = str(s)
    lines = text.splitlines()
    assert lines[0].strip() == "Stepwise spline regression (Stargazer Algorithm 1) Results"
    rules = [i for i, x in enumerate(lines) if x and set(x) == {"="}]
    assert len(rules) == 4 and len({len(lines[i]) for i in rules}) == 1 and len(lines[rules[0]]) >= 78
    header = "\n".join(lines[rules[0] + 1:rules[1]])
    for name, value in (("Dep. Variable:", "cycles"), ("Transform:", "log"), ("Method:", "Least Squares"),
                        ("No. Observations:", "120"), ("R-squared:", fmt_r2(s.r2)),
                        ("Adj. R-squared:", fmt_r2(s.adj_r2)), ("Df Residuals:", str(s.df_resid))):
        assert re.search(rf"{re.escape(name)} +{re.escape(value)}( |$)", header, re.MULTILINE), (name, value, header)
    coef = lines[rules[1] + 1:rules[2]]
    assert coef[0].split() == ["coef", "std", "err", "t", "P>|t|", "[0.025", "0.975]"] and set(coef[1]) == {"-"}
    assert len(coef) == 2 + len(s.coefficients)
    first = coef[2].split()
    assert first[0] == "Intercept" and float(first[1]) == pytest.approx(s.coefficients.coef[0], abs=5e-5)
    anova = lines[rules[2] + 1:rules[3]]
    assert anova[0].startswith("ANOVA (Lee & Brooks Table 5)") and anova[-1].split()[0] == "ERROR"
    assert lines[rules[3] + 1] == "Notes:" and lines[rules[3] + 2] == "[1] on the log scale of cycles"


def test_a_fit_with_known_coefficients_that_interpolates_shows_them_and_no_tests():
    """log cycles = 1 + 0.5·log2(blk) exactly: the fit reproduces it, so no standard errors, t-tests,
    R² or ANOVA are shown, and the note says why."""
    rng = np.random.default_rng(0)
    blk = rng.choice([1, 2, 4, 8, 16, 32, 64], 80)
    data = pd.DataFrame({"blk": blk, "simd": rng.choice([8, 16, 32], 80), "cycles": np.exp(1 + 0.5 * np.log2(blk))})
    model = fit_stepwise(data, "cycles", transform="log", robust="none")
    s = summarize(model, data)
    assert model.terms == ["blk"] and not s.tests_shown and s.anova is None
    coef = s.coefficients.set_index("column").coef
    assert coef["Intercept"] == pytest.approx(1.0, abs=1e-9) and coef["log2(blk)"] == pytest.approx(0.5, abs=1e-9)
    assert s.coefficients.std_err.isna().all()
    text = str(s)
    assert "This fit interpolates" in text and "R-squared:" not in text and "ANOVA (Lee" not in text


@pytest.mark.slow
def test_gpudse_fit_summary_prints_the_tables(tmp_path):
    csv = tmp_path / "r.csv"
    noisy_data(60, seed=5).to_csv(csv, index=False)
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "fit", str(csv), "--response", "cycles", "--params",
                        "blk,simd", "--transform", "log", "--robust", "none", "--summary", "-o",
                        str(tmp_path / "m.json")], capture_output=True, text=True, timeout=300, check=False,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Dep. Variable:" in out and "No. Observations:" in out and "LOO error (median):" in out
    assert "P>|t|" in out and "ANOVA (Lee & Brooks Table 5)" in out and "final model" not in out
    assert out.index("Results\n") < out.index("log(cycles) = ")  # the summary, then the equation
