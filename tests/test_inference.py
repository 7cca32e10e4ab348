"""Lee & Brooks statistics against R's rms/Hmisc (golden fixture tests/fixtures/rms_anova.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.cluster.hierarchy import fcluster

from gpudse_core.model.inference import (anova, anova_rows, coefficient_table, qq_points, residual_table, spearman_rho2,
                                   stratified_association, variable_clusters)
from gpudse_core.model.stepwise import fit_stepwise

FIX = json.loads((Path(__file__).parent / "fixtures" / "rms_anova.json").read_text())


@pytest.fixture(scope="module")
def data():
    return pd.DataFrame(FIX["data"])


@pytest.fixture(scope="module")
def model(data):
    # the R model: rcs(x1, k1) + rcs(x2, k2) + x3 + g + rcs(x1) %ia% x3 + rcs(x1) %ia% rcs(x2)
    return fit_stepwise(data, "y", forced=["x1", "x2", "x3", "g", "x1:x3", "x1:x2"], search=False,
                        knots={"x1": FIX["knots"]["x1"], "x2": FIX["knots"]["x2"], "x3": 0, "g": 0},
                        interactions="restricted", scale="linear", categorical_levels=0, robust="none")


def test_coefficients_and_standard_errors_match_rms(model, data):
    table = coefficient_table(model, data)
    np.testing.assert_allclose(table["coef"], FIX["coef"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(table["std_err"], FIX["se"], rtol=1e-7)
    assert model.r2 == pytest.approx(FIX["r2"][0], abs=1e-10)  # jsonlite stores scalars as 1-lists
    # the column names follow rms (x1, x1', x1'', g=b, x1 * x3 …)
    assert list(table["column"])[1:] == FIX["coef_names"][1:]


def test_anova_matches_rms(model, data):
    ours = anova(model, data)
    r = FIX["anova"]
    expected_rows = ["REGRESSION" if x == "TOTAL" else x for x in r["raw_rows"]]
    assert list(ours["factor"]) == expected_rows
    np.testing.assert_array_equal(ours["df"], r["df"])
    np.testing.assert_allclose(ours["partial_ss"], r["ss"], rtol=1e-7)
    np.testing.assert_allclose(ours["F"][:-1], r["f"][:-1], rtol=1e-7)
    np.testing.assert_allclose(ours["P"][:-1], r["p"][:-1], rtol=1e-6, atol=1e-14)


def test_anova_rows_pool_terms_like_rms(model):
    rows = dict((label.strip(), ks) for label, ks in anova_rows(model))
    # x1 pools its main columns and every interaction column involving it: 3 + 3 + 5
    assert len(rows["x1  (Factor+Higher Order Factors)"]) == 11
    assert len(rows["TOTAL NONLINEAR"]) == 10


def test_spearman_rho2_matches_hmisc(data):
    ours = spearman_rho2(data, "y", ["x1", "x2", "x3", "g"]).set_index("parameter")
    r = FIX["spearman2"]
    for i, name in enumerate(r["names"]):
        assert ours.loc[name, "rho2"] == pytest.approx(r["rho2"][i], rel=1e-8)
        assert ours.loc[name, "F"] == pytest.approx(r["F"][i], rel=1e-8)
        assert ours.loc[name, "df1"] == r["df1"][i] and ours.loc[name, "df2"] == r["df2"][i]
        assert ours.loc[name, "adj_rho2"] == pytest.approx(r["adj"][i], rel=1e-8)
        assert ours.loc[name, "P"] == pytest.approx(r["P"][i], rel=1e-6, abs=1e-12)
    assert list(ours.index)[0] == "x2"  # strongest first (Lee & Brooks Fig. 6 order)


def test_variable_clusters_match_varclus(data):
    vc = variable_clusters(data, ["x1", "x2", "x3"])
    np.testing.assert_allclose(vc.similarity.to_numpy(), np.array(FIX["varclus"]["sim"]), rtol=1e-8)
    np.testing.assert_allclose(np.sort(vc.heights), np.sort(FIX["varclus"]["height"]), rtol=1e-8)


def test_variable_clusters_find_correlated_groups():
    rng = np.random.default_rng(0)
    a = rng.normal(size=300)
    b = rng.normal(size=300)
    df = pd.DataFrame({"a1": a, "a2": a + rng.normal(0, 0.1, 300), "b1": b, "b2": b ** 3})
    vc = variable_clusters(df, list(df.columns))
    labels = dict(zip(vc.labels, fcluster(vc.linkage, 2, criterion="maxclust")))
    assert labels["a1"] == labels["a2"] != labels["b1"] == labels["b2"]


def test_residuals_and_qq(model, data):
    res = residual_table(model, data)
    assert list(res.columns[:2]) == ["fitted", "residual"] and len(res) == len(data)
    assert abs(res.residual.mean()) < 1e-9
    qq = qq_points(res.residual.to_numpy())
    assert qq["sample"].is_monotonic_increasing and qq["theoretical"].is_monotonic_increasing
    # R: qqnorm(1:5) gives qnorm(ppoints(5)) = qnorm(c(.119, .3095, .5, .6905, .881))
    np.testing.assert_allclose(qq_points(np.arange(5.0))["theoretical"],
                               [-1.179761, -0.4972006, 0.0, 0.4972006, 1.179761], atol=1e-6)


def test_stratified_association():
    df = pd.DataFrame({"x": [0, 1, 2, 3, 4, 5, 6, 7, 8.0], "y": [1, 1, 1, 2, 2, 3, 3, 4, 4.0],
                       "c": list("aabbbcccc")})
    out = stratified_association(df, "y", ["x", "c"], groups=4)
    x = out[out.parameter == "x"]
    assert list(x["count"]) == [2, 2, 2, 3] and list(x["mean"]) == [1, 1.5, 2.5, 11 / 3]
    c = out[out.parameter == "c"].set_index("group")
    assert c.loc["a", "count"] == 2 and c.loc["c", "mean"] == 3.5


FULL = json.loads((Path(__file__).parent / "fixtures" / "rms_anova_full.json").read_text())


@pytest.mark.parametrize("case", ["pair", "three"])
def test_full_interaction_anova_matches_rms(case):
    """rms with tensor (full) interactions: the doubly non-linear row "f(A,B) vs. Af(B) + Bg(A)" of
    rcs(x1, 4) * rcs(x2, 3), and a three-way term rcs(x1, 3) * x2 * x3 (tests/fixtures/r/rms_anova_full.R)."""
    data = pd.DataFrame(FULL["data"])
    kn = FULL["knots"]
    if case == "pair":
        kw = dict(forced=["x1", "x2", "x3", "x1:x2"], knots={"x1": kn["x1_4"], "x2": kn["x2_3"], "x3": 0})
    else:
        kw = dict(forced=["x1", "x2", "x3", "x1:x2", "x1:x3", "x2:x3", "x1:x2:x3"],
                  knots={"x1": kn["x1_3"], "x2": 0, "x3": 0})
    m = fit_stepwise(data, "y", search=False, interactions="full", scale="linear", categorical_levels=0,
                     transform="none", robust="none", **kw)
    r = FULL[case]
    table = coefficient_table(m, data).set_index("column")
    np.testing.assert_allclose(table.loc[r["coef_names"], "coef"], r["coef"], rtol=1e-7, atol=1e-9)
    ours = anova(m, data)
    assert list(ours["factor"]) == ["REGRESSION" if x == "TOTAL" else x for x in r["raw_rows"]]
    np.testing.assert_array_equal(ours["df"], r["df"])
    np.testing.assert_allclose(ours["partial_ss"], r["ss"], rtol=1e-7)
    np.testing.assert_allclose(ours["F"][:-1], r["f"][:-1], rtol=1e-7)
    np.testing.assert_allclose(ours["P"][:-1], r["p"][:-1], rtol=1e-6, atol=1e-14)
    if case == "pair":
        row = ours.set_index("factor").loc[" f(A,B) vs. Af(B) + Bg(A)"]
        assert row["df"] == 2  # the doubly non-linear columns x1'·x2', x1''·x2'


def test_a_rank_deficient_design_says_so_in_the_anova_and_prints_nothing(model, data):
    """On rows where the factor g takes one level its dummy columns are collinear with the intercept: the
    Wald tests are then of fewer independent constraints than columns (Lee & Brooks Table 5's d.f.), which
    the table must say rather than statsmodels' ValueWarning on stderr."""
    import warnings

    from gpudse_core.model.inference import design_matrix
    from gpudse_core.model.summary import summarize

    assert "note" not in anova(model, data).columns  # a full-rank design: the table as rms prints it
    one = data[data["g"] == "b"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = anova(model, one)
        s = summarize(model, one)
    assert not [w for w in caught if "rank" in str(w.message)], [str(w.message) for w in caught]
    reg = table[table["factor"] == "REGRESSION"].iloc[0]
    cols = len(model.column_labels) - 1  # every column but the intercept
    independent = np.linalg.matrix_rank(design_matrix(model, one)) - 1
    assert independent < cols and reg["df"] == independent
    assert reg["note"] == f"df {independent} of {cols} constraints: the rest are collinear"
    short = table[table["note"] != ""]
    assert "g" in set(short["factor"]) and (short["df"] < short["factor"].map(
        dict((label, len(ks)) for label, ks in anova_rows(model)))).all()
    assert table.attrs["note"].startswith(f"{len(short)} ANOVA rows test fewer independent constraints")
    assert any(n.startswith(table.attrs["note"]) and "REGRESSION (df " in n for n in s.notes)
