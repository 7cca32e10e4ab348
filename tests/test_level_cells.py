"""Level cells (StepwiseRegression(cells=True), the default; gpudse_core/model/cells.py): indicator
columns for combinations of two or three parameter levels, chosen after the search by a Bonferroni
F-test and kept only when they predict the rows left out better."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from gpudse_core.errors import GpudseError
from gpudse_core.model import cells as lc
from gpudse_core.model.fitted import FitError, StepwiseModel, design_matrix
from gpudse_core.model.inference import _response, anova, coefficient_table
from gpudse_core.model.stepwise import ALGORITHM1_SETTINGS, PAPER_SETTINGS, StepwiseRegression


def grid(n: int, seed: int, corner: float = 0.0, noise: float = 0.02) -> tuple[pd.DataFrame, np.ndarray]:
    """Smooth effects of a (4 levels), tile, a flag and b, all of which the spline terms follow
    exactly; with *corner*, designs with tile = 3 and flag = 1 are that much slower."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"a": rng.choice([16, 32, 64, 128], n), "tile": rng.choice([1, 2, 3, 4], n),
                      "flag": rng.integers(0, 2, n), "b": rng.choice([1, 2, 4, 8], n)})
    truth = (1.0 + 8.0 / d.a + 0.2 * d.tile + 0.3 * d.flag + 0.1 * np.log2(d.b)).to_numpy()
    truth = truth * np.where((d.tile == 3) & (d.flag == 1), 1 + corner, 1.0)
    return d.assign(y=truth * np.exp(rng.normal(0, noise, n))), truth


def widths(n: int, seed: int, noise: float = 0.02) -> tuple[pd.DataFrame, np.ndarray]:
    """A block width of 12 levels (16, 32, … 192, as a tuning space has), and one corner no spline
    follows: width 80 with the flag set is 40 % slower."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"a": rng.choice(np.arange(16, 193, 16), n), "tile": rng.choice([1, 2, 3, 4], n),
                      "flag": rng.integers(0, 2, n), "b": rng.choice([1, 2, 4, 8], n)})
    truth = (1.0 + 8.0 / d.a + 0.2 * d.tile + 0.3 * d.flag + 0.1 * np.log2(d.b)).to_numpy()
    truth = truth * np.where((d.a == 80) & (d.flag == 1), 1.4, 1.0)
    return d.assign(y=truth * np.exp(rng.normal(0, noise, n))), truth


def cells_of(m: StepwiseModel) -> list[set]:
    """The model's cell columns (the last ones, as many as its cells row kept) as sets of (parameter,
    level): a cell column's level, or a categorical parameter's own level column."""
    row = next((r for r in m.trace if r["kind"] == "cells"), None)
    if row is None or not row["accepted"]:
        return []
    k = int(row["chosen"].split()[0])
    out = []
    for params, idx in m.columns[-k:]:
        cell = set()
        for p, i in zip(params, idx):
            b = m.bases[p]
            cell.add((p, b.cells[i - b.own_width] if b.is_cell_column(i) else b.levels[i + 1]))
        out.append(cell)
    return out


def test_the_corner_is_found_and_predicted():
    found = 0
    for seed in range(4):
        train, _ = widths(300, seed)
        test, truth = widths(2000, 50 + seed, noise=0.0)
        x = test.drop(columns="y")
        with_cells = StepwiseRegression(response="y").fit(train).model_
        without = StepwiseRegression(response="y", cells=False).fit(train).model_
        row = with_cells.trace[-1]
        assert row["kind"] == "cells" and row["accepted"] and row["metric"] == "loo_error"
        # a robust model: the selection's passes, each scored; the kept one is the best of them
        rounds = [k for k in row["candidates"] if k != "without cells"]
        assert rounds[0].endswith(f"pass 1 of {lc.ROUNDS}") and row["chosen"] in rounds
        assert row["candidates"][row["chosen"]] == min(row["candidates"][k] for k in rounds)
        found += {("a", 80.0), ("flag", 1.0)} in cells_of(with_cells)
        err = {k: np.mean(np.abs(m.predict(x) - truth) / truth)
               for k, m in (("with", with_cells), ("without", without))}
        assert err["with"] < 0.85 * err["without"], (seed, err)
        # the kept model's leave-one-out error is the one the trace reports, below the one without
        assert row["candidates"]["without cells"] > row["gain"] * (1 + lc.TIE)
        cells = [lab for lab in with_cells.column_labels if lab.count("[") >= 2 and "=" in lab]
        assert cells and all(lab.replace(" ", "") in with_cells.equation().replace(" ", "") for lab in cells)
        assert any("level cells:" in n for n in with_cells.notes)
    assert found >= 3  # the corner itself, in 3 of 4 draws at least (a neighbour's cell can stand in)


@pytest.mark.parametrize("seed", range(4))
def test_no_corner_no_cells(seed):
    """Smooth data: no cell is kept, and the model is the one without cells, coefficient for coefficient."""
    train, _ = grid(300, seed)
    m = StepwiseRegression(response="y").fit(train).model_
    plain = StepwiseRegression(response="y", cells=False).fit(train).model_
    assert m.trace[-1]["kind"] == "cells" and not m.trace[-1]["accepted"]
    assert cells_of(m) == [] and m.coefficients == plain.coefficients and m.terms == plain.terms
    assert m.settings["cells"] is True


def test_linear_predictor_design_and_file_agree(tmp_path):
    train, _ = widths(300, 7)
    m = StepwiseRegression(response="y").fit(train).model_
    assert cells_of(m)
    x = widths(500, 8)[0].drop(columns="y")
    np.testing.assert_allclose(m.linear_predictor(x), design_matrix(m, x) @ np.asarray(m.coefficients),
                               rtol=1e-12, atol=1e-12)
    path = tmp_path / "m.json"
    m.save(path)
    back = StepwiseModel.load(path)
    np.testing.assert_array_equal(back.predict(x), m.predict(x))
    assert back.columns == m.columns and back.terms == m.terms
    d = json.loads(path.read_text())
    k = next(i for i, b in enumerate(d["bases"]) if b.get("cells"))
    for bad in ("3", [3.0, 3.0], [3, 3.0], [[3.0]], ["three"], list(range(1000)), [10 ** 300 * 10 ** 10]):
        d2 = json.loads(path.read_text())
        d2["bases"][k]["cells"] = bad
        path.write_text(json.dumps(d2))
        with pytest.raises(FitError, match="cells must be a list"):
            StepwiseModel.load(path)


def test_inference_reproduces_the_coefficients():
    """A cell is one more column of the least-squares fit: the coefficient table (statsmodels on the
    working response) gives the model's coefficients, and the ANOVA has a finite row for its term."""
    train, _ = widths(300, 9)
    m = StepwiseRegression(response="y").fit(train).model_
    assert cells_of(m)
    A = design_matrix(m, train)
    table = coefficient_table(m, train)
    np.testing.assert_allclose(table.coef, m.coefficients, rtol=1e-8, atol=1e-10)
    ols = sm.OLS(_response(m, train), A).fit()
    np.testing.assert_allclose(table.std_err, ols.bse, rtol=1e-9)
    assert m.r2 == pytest.approx(ols.rsquared, rel=1e-9)
    a = anova(m, train)
    assert np.isfinite(a[a.factor != "ERROR"][["F", "P"]].to_numpy(dtype=float)).all()


def test_text_and_numeric_cell_columns():
    """A cell column is 1 where the raw value is the level: by text for a text parameter (an unseen
    level gets the average, as its level columns do), by value for a number; the basis file keeps them."""
    from gpudse_core.model.splines import Basis, make_basis

    g = make_basis("g", np.array(["x", "y", "z", "y"]), categorical=True)
    g.cells = ["y"]
    assert g.width == g.own_width + 1 and g.is_cell_column(g.own_width) and g.column_names[-1] == "g=y"
    np.testing.assert_array_equal(g.evaluate(np.array(["y", "x", "w"]), unseen="average")[:, -1], [1, 0, 1 / 3])
    a = make_basis("a", np.arange(16.0, 193.0, 16.0), 4, pow2=True)
    a.cells = [80.0]
    assert a.pow2_column == a.own_width - 1  # the power-of-two column keeps its place before the cells
    np.testing.assert_array_equal(a.evaluate(np.array([80.0, 96.0, 80.0]))[:, -1], [1, 0, 1])
    g2 = g.to_dict()
    with pytest.raises(GpudseError, match="cells must be a list"):  # a text cell that is not a level
        Basis.from_dict({**g2, "cells": ["zz"]})
    for b in (g, a):
        back = Basis.from_dict(json.loads(json.dumps(b.to_dict())))
        assert back.cells == b.cells
        x = np.array(["x", "y"]) if b is g else np.array([48.0, 80.0])
        np.testing.assert_array_equal(back.evaluate(x), b.evaluate(x))
    cand = lc.candidates({"g": np.array(["x", "y"] * 20), "h": np.array([0.0] * 20 + [1.0] * 20)},
                         {"g": True, "h": False})
    assert ("g", "y") in {c for d in cand.conditions for c in d} and cand.columns.shape == (40, len(cand.conditions))


def test_noise_free_data_get_no_cells_step():
    rng = np.random.default_rng(1)
    d = pd.DataFrame({"a": rng.choice([1, 2, 4, 8], 120), "b": rng.choice([0.0, 1.0, 2.0], 120)})
    d["y"] = 3 + 2 * d.a + 5 * d.b
    m = StepwiseRegression(response="y", response_transform="none").fit(d).model_
    assert all(r["kind"] != "cells" for r in m.trace) and cells_of(m) == []
    assert m.settings["cells"] is True and any("no spread (noise-free data)" in n for n in m.notes)


def corner3(n: int, seed: int) -> pd.DataFrame:
    """A three-way corner (a = 2, b = 3, c = y: 80 % slower) and a parameter d with no effect of its own
    that the corner's cells may bring in."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"a": rng.choice([1, 2, 3, 4], n), "b": rng.choice([1, 2, 3, 4], n),
                      "c": rng.choice(["x", "y", "z"], n), "d": rng.choice([1, 2], n)})
    t = 0.2 * d.a + 0.1 * d.b + 0.1 * (d.c == "x") + 0.6 * ((d.a == 2) & (d.b == 3) & (d.c == "y"))
    return d.assign(t=np.exp(t + rng.normal(0, 0.02, n)))


def test_cells_keep_max_order_and_max_terms():
    """max_order=2: pairs only; max_terms: no cell makes a new term; a text level other than the first
    is its own level column (no second column of the same name)."""
    data = corner3(400, 2)
    three = StepwiseRegression(response="t").fit(data).model_
    assert any(len(c) == 3 for c in cells_of(three)) or any(t.count(":") == 2 for t in three.terms)
    two = StepwiseRegression(response="t", max_order=2).fit(data).model_
    assert all(len(params) <= 2 for params, _ in two.columns) and all(t.count(":") <= 1 for t in two.terms)
    capped = StepwiseRegression(response="t", max_terms=3).fit(data).model_
    assert len(capped.terms) == 3 and cells_of(capped) == []  # a, b, c: no interaction term a cell could join
    assert any("only join one of the model's interaction terms" in n for n in capped.notes)
    for m in (three, two, capped):
        for b in m.bases.values():
            assert len(set(b.column_names)) == len(b.column_names), b.column_names
            if b.kind == "categorical":
                assert all(c == b.levels[0] for c in b.cells)  # only the reference level needs a cell column


def test_a_parameter_entering_only_through_cells_is_in_the_support():
    """A spike at one of 16 levels that no spline follows: the search leaves h out, a cell brings it in,
    and its training range joins the support, so a point beyond it is flagged, not silently predicted."""
    rng = np.random.default_rng(1)
    n = 500
    d = pd.DataFrame({"a": rng.choice([1, 2, 3, 4], n), "b": rng.choice([1, 2, 4, 8], n),
                      "h": rng.choice(np.arange(1, 17), n)})
    d["t"] = np.exp(0.2 * d.a + 0.1 * np.log2(d.b) + 0.5 * ((d.a == 3) & (d.h == 7)) + rng.normal(0, 0.03, n))
    assert "h" not in StepwiseRegression(response="t", cells=False).fit(d).model_.bases
    m = StepwiseRegression(response="t").fit(d).model_
    assert {("a", 3.0), ("h", 7.0)} in cells_of(m) and "h" in m.support.params
    far = d.drop(columns="t").iloc[:2].assign(h=[7, 99])
    reasons = m.predict_details(far).extrapolation.tolist()
    assert reasons[0] == "" and "h=99 outside the training range" in reasons[1]


def test_candidates_are_bounded_and_deduplicated(monkeypatch):
    rng = np.random.default_rng(0)
    values = {f"p{i}": rng.choice(np.arange(6.0), 400) for i in range(8)}
    text = dict.fromkeys(values, False)
    cand = lc.candidates(values, text)
    C, desc = cand.columns, cand.conditions
    assert C.shape == (400, len(desc)) and set(np.unique(C)) <= {0.0, 1.0} and not cand.truncated
    support = C.sum(axis=0)
    assert support.min() >= lc.MIN_ROWS and support.max() <= 400 - lc.MIN_ROWS
    assert len({C[:, j].tobytes() for j in range(C.shape[1])}) == C.shape[1]  # no column twice
    monkeypatch.setattr(lc, "MAX_CANDIDATES", 100)
    small = lc.candidates(values, text)
    assert small.columns.shape[1] == len(small.conditions) <= 100 and small.truncated
    assert all(len(dd) == 2 for dd in small.conditions)  # pairs come first
    monkeypatch.setattr(lc, "MAX_CANDIDATES", 20_000)
    from gpudse_core import limits

    with limits.override(cell_bytes=400 * 8 * 50):  # room for 50 columns of 400 rows
        assert len(lc.candidates(values, text).conditions) == 50
    with limits.override(cell_work=400 * 30):  # 30 conjunctions tried, then it stops
        cut = lc.candidates(values, text)
        assert cut.truncated and len(cut.conditions) <= 30 and all(len(dd) == 2 for dd in cut.conditions)
    pairs_only = lc.candidates(values, text, orders=(2,))
    assert all(len(dd) == 2 for dd in pairs_only.conditions)
    many = {"q": np.arange(400.0) % 40, "r": np.arange(400.0) % 2}  # 40 levels: more than MAX_CELL_LEVELS
    wide = lc.candidates(many, dict.fromkeys(many, False))
    assert wide.conditions == [] and wide.too_many_levels == ["q"]


def test_selection_recovers_a_planted_column_and_nothing_else():
    rng = np.random.default_rng(5)
    n = 300
    A = np.column_stack([np.ones(n), rng.normal(size=n)])
    C = (rng.random((n, 400)) < 0.2).astype(float)
    z = A @ [1.0, 0.5] + 0.4 * C[:, 123] + rng.normal(0, 0.1, n)
    assert lc.select(A, z, C) == [123]
    assert lc.select(A, A @ [1.0, 0.5] + rng.normal(0, 0.1, n), C) == []


def test_settings_and_the_cli_flag(tmp_path, capsys):
    from gpudse_core.cli import main

    assert PAPER_SETTINGS["cells"] is False and ALGORITHM1_SETTINGS["cells"] is False
    with pytest.raises(FitError, match="cells must be True or False"):
        StepwiseRegression(response="y", cells="yes").fit(grid(60, 0)[0])
    data = tmp_path / "d.csv"
    widths(300, 2)[0].to_csv(data, index=False)
    out = {}
    for flag in ("on", "off"):
        path = tmp_path / f"{flag}.json"
        assert main(["fit", str(data), "--response", "y", "--cells", flag, "-o", str(path)]) == 0
        out[flag] = StepwiseModel.load(path)
    assert cells_of(out["on"]) and not cells_of(out["off"]) and out["off"].settings["cells"] is False
    capsys.readouterr()
    assert main(["fit", str(data), "--response", "y", "--model", "paper", "--cells", "on",
                 "-o", str(tmp_path / "p.json")]) == 2
    assert "--cells" in capsys.readouterr().err
    # the paper model's own values may be stated
    assert main(["fit", str(data), "--response", "y", "--model", "paper", "--cells", "off", "--robust", "none",
                 "-o", str(tmp_path / "p.json")]) == 0


def test_the_contribution_chart_names_the_level_cells():
    """Stargazer Fig. 3's chart lists every accepted step's R² gain: the level cells (Lee & Brooks'
    cells, accepted after the search) are a bar of their own named by their cells, and the bars add up
    to the model's R²."""
    from gpudse_core.report.figures import contributions

    train, _ = widths(300, 0)
    m = StepwiseRegression(response="y").fit(train).model_
    labels = [lab for cell in cells_of(m) for lab in m.column_labels if all(f"[{p}={v:g}]" in lab for p, v in cell)]
    assert labels, "this seed finds cells"
    fig = contributions(m)
    named = [t.name for t in fig.data if t.name.startswith("level cells")]
    assert len(named) == 1 and all(lab in named[0] for lab in labels), (named, labels)
    assert "[a=80] * [flag=1]" in named[0]
    assert np.isclose(sum(t.y[0] for t in fig.data), m.r2)


def lookup(n: int, seed: int, noise: float = 0.02) -> tuple[pd.DataFrame, np.ndarray]:
    """A parameter of 24 levels (3, 5, … 49; Starchart k-means' threads per point has 32) whose effect is smooth
    but for one level: with the flag set, t = 9 runs 1.6× faster (a lookup by threads per point and access
    pattern, as k-means' runtime is)."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"t": rng.choice(np.arange(3, 51, 2), n), "flag": rng.integers(0, 2, n),
                      "b": rng.choice([1, 2, 4, 8], n)})
    truth = (1.0 + 0.02 * d.t + 0.3 * d.flag + 0.1 * np.log2(d.b)).to_numpy()
    truth = truth / np.where((d.t == 9) & (d.flag == 1), 1.6, 1.0)
    return d.assign(y=truth * np.exp(rng.normal(0, noise, n))), truth


def test_a_parameter_of_more_than_16_levels_gets_its_cell():
    """24 levels are within MAX_CELL_LEVELS: the lookup's corner is a cell, and the designs there are predicted
    better (with the limit at 16 the parameter was left out of the cells and the corner missed by 58 %). The cell
    fits it only in part (30 %): Huber's pseudo-observations still clip the corner's rows after the passes
    (iterating them to convergence fixed this case but not the real tables, docs/models.md)."""
    assert lc.MAX_CELL_LEVELS >= 24
    train, _ = lookup(500, 1)
    test, truth = lookup(400, 2, noise=0.0)
    corner = ((test.t == 9) & (test.flag == 1)).to_numpy()
    m = StepwiseRegression(response="y").fit(train).model_
    assert {("t", 9.0), ("flag", 1.0)} in cells_of(m)
    assert not any("left out for having more than" in n for n in m.notes)
    err = np.abs(m.predict(test.drop(columns="y")) - truth) / truth
    assert corner.sum() >= 5 and err[corner].max() < 0.4, err[corner]


def steps(n: int, seed: int, noise: float = 0.02) -> tuple[pd.DataFrame, np.ndarray]:
    """24 levels of t (3, 5, … 49) and a flag; without the flag, t ≥ 31 runs 2× slower: a step across levels, as
    Starchart k-means' runtime doubles from 18 threads per point on with the non-consecutive access pattern."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"t": rng.choice(np.arange(3, 51, 2), n), "flag": rng.integers(0, 2, n),
                      "b": rng.choice([1, 2, 4, 8], n)})
    truth = (1.0 + 0.02 * d.t + 0.3 * d.flag + 0.1 * np.log2(d.b)).to_numpy()
    truth = truth * np.where((d.t >= 31) & (d.flag == 0), 2.0, 1.0)
    return d.assign(y=truth * np.exp(rng.normal(0, noise, n))), truth


def test_a_step_across_many_levels_is_a_threshold_cell(monkeypatch):
    """A parameter of more than STEP_LEVELS values gets threshold conditions t >= v: the step is one cell column,
    kept through the model file, and the designs on both sides of it are predicted; with equality conditions
    only, the few rows per level leave the step to the spline, which misses the designs near it by 17 % on
    average (4.5 % with the threshold)."""
    train, _ = steps(300, 3)
    test, truth = steps(1000, 4, noise=0.0)
    x = test.drop(columns="y")
    m = StepwiseRegression(response="y").fit(train).model_
    assert "[t>=31] * [flag=0]" in m.column_labels
    assert m.bases["t"].thresholds and m.bases["t"].column_names[-1].startswith("t>=")
    err = np.abs(m.predict(x) - truth) / truth
    near = ((test.t >= 27) & (test.t <= 35) & (test.flag == 0)).to_numpy()
    again = StepwiseModel.from_dict(json.loads(json.dumps(m.to_dict())))
    np.testing.assert_allclose(again.predict(x), m.predict(x), rtol=1e-12)
    monkeypatch.setattr(lc, "STEP_LEVELS", 1000)
    old = StepwiseRegression(response="y").fit(train).model_
    assert not any(">=" in lab for lab in old.column_labels)
    old_err = np.abs(old.predict(x) - truth) / truth
    assert err[near].mean() < 0.5 * old_err[near].mean() and err.mean() < old_err.mean(), (err.mean(), old_err.mean())


def test_thresholds_in_a_model_file_are_checked():
    d = {"name": "t", "kind": "linear", "range": [1.0, 9.0], "thresholds": [4.0]}
    from gpudse_core.model.splines import Basis

    b = Basis.from_dict(d)
    np.testing.assert_array_equal(b.evaluate([1, 4, 9])[:, -1], [0.0, 1.0, 1.0])
    for bad in ([4.0, 4.0], ["x"], [float("inf")], "4"):
        with pytest.raises(GpudseError, match="basis of 't': thresholds must be"):
            Basis.from_dict({**d, "thresholds": bad})
    with pytest.raises(GpudseError, match="only on a numeric parameter"):
        Basis.from_dict({"name": "m", "kind": "categorical", "levels": ["a", "b"], "thresholds": [1.0]})
