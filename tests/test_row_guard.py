"""The one-row guard of the stepwise search and honest leave-one-out scores for rows of leverage 1
(the stepwise package's step 11; fitted.loo_predictions): a term one training row carries does not enter, and
a row the model fits alone is not scored as predicted perfectly."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core.cli import main
from gpudse_core.model.fitted import StepwiseModel, loo_predictions, ordered_basis
from gpudse_core.model.stepwise import (ALGORITHM1_SETTINGS, PAPER_SETTINGS, FitError, StepwiseRegression,
                                       _OLSState)


# ---- leave-one-out predictions ----------------------------------------------------------------------------
def deleted_fit(A: np.ndarray, z: np.ndarray, i: int) -> float:
    """Row i's prediction by least squares refitted without it; a column the remaining rows leave
    unidentified (all zero there) is dropped, as R's lm drops an aliased column."""
    keep = np.ones(len(z), bool)
    keep[i] = False
    cols = np.flatnonzero(np.abs(A[keep]).sum(axis=0) > 0)
    beta = np.linalg.lstsq(A[keep][:, cols], z[keep], rcond=None)[0]
    return float(A[i, cols] @ beta)


def test_loo_predictions_are_refits_without_the_row():
    rng = np.random.default_rng(0)
    A = np.column_stack([np.ones(40), rng.normal(size=(40, 5))])
    z = A @ rng.normal(size=6) + rng.normal(size=40)
    got = loo_predictions(ordered_basis(A), z)
    assert np.allclose(got, [deleted_fit(A, z, i) for i in range(40)], rtol=1e-10, atol=1e-10)


def test_a_row_of_leverage_one_is_predicted_without_its_own_column():
    """A column nonzero on one row fits that row exactly whatever its value (leverage 1). The old
    score, z − e / max(1 − h, 1e-6), returned the row's own value: a perfect prediction. Now the row is
    predicted by the model without that column, from the other rows."""
    rng = np.random.default_rng(1)
    n = 30
    x = rng.uniform(0, 1, n)
    lone = np.zeros(n)
    lone[7] = 1.0
    A = np.column_stack([np.ones(n), x, lone])
    z = 2 + 3 * x + rng.normal(0, 0.1, n)
    z[7] += 50  # a wild value the lone column absorbs
    q = ordered_basis(A)
    assert np.einsum("ij,ij->i", q, q)[7] == pytest.approx(1.0)
    got = loo_predictions(q, z)
    assert got[7] == pytest.approx(deleted_fit(A, z, 7), rel=1e-9)
    assert abs(got[7] - z[7]) > 45  # not its own value
    others = [i for i in range(n) if i != 7]
    assert np.allclose(got[others], [deleted_fit(A, z, i) for i in others], rtol=1e-9, atol=1e-9)


def test_ordered_basis_keeps_column_order_and_drops_aliased_columns():
    rng = np.random.default_rng(2)
    B = rng.normal(size=(20, 3))
    A = np.column_stack([B[:, 0], B[:, 1], B[:, 0] + B[:, 1], B[:, 2]])  # the third is aliased
    q = ordered_basis(A)
    assert q.shape == (20, 3) and np.allclose(q.T @ q, np.eye(3))
    for k, cols in ((1, [0]), (2, [0, 1])):  # the first k basis columns span the first k independent ones
        proj = q[:, :k] @ (q[:, :k].T @ A[:, cols])
        assert np.allclose(proj, A[:, cols])
    assert np.allclose(q @ (q.T @ A), A)



def lm_deleted_fit(A: np.ndarray, z: np.ndarray, i: int) -> float:
    """Row i's prediction by least squares refitted without it, R's lm way: the columns in order,
    each one aliased with the columns kept before it (on the remaining rows) dropped."""
    keep = np.ones(len(z), bool)
    keep[i] = False
    B, cols = A[keep], []
    for k in range(A.shape[1]):
        if np.linalg.matrix_rank(B[:, cols + [k]], tol=1e-8 * np.abs(B).max()) == len(cols) + 1:
            cols.append(k)
    beta = np.linalg.lstsq(B[:, cols], z[keep], rcond=None)[0]
    return float(A[i, cols] @ beta)


def prefix_deleted_fit(A: np.ndarray, z: np.ndarray, i: int) -> float:
    """Row i left out: refitted by lm on all the columns when its leverage is below 1; else on the
    columns before the first with which its leverage reaches 1 (the lower-order prefix)."""
    for k in range(1, A.shape[1] + 1):
        q = ordered_basis(A[:, :k])
        if 1.0 - np.einsum("j,j->", q[i], q[i]) < 1e-6:
            return lm_deleted_fit(A[:, :k - 1], z, i)
    return lm_deleted_fit(A, z, i)


def isolating_design(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random columns between which sit a column of two rows (3, 4), columns of one row (3; 9 and a
    multiple of it, aliased) and an aliased sum: rows 3, 4 and 9 have leverage 1, and columns follow
    the ones that isolate them."""
    rng = np.random.default_rng(seed)
    n = 25
    X = rng.normal(size=(n, 3))
    pair, l3, l9 = np.zeros(n), np.zeros(n), np.zeros(n)
    pair[[3, 4]], l3[3], l9[9] = 1.0, 1.0, 1.0
    A = np.column_stack([np.ones(n), X[:, 0], pair, X[:, 1], l3, X[:, 0] + X[:, 1], l9, X[:, 2], 2 * l9])
    return A, rng.normal(size=n)


def test_a_row_of_leverage_one_is_predicted_by_the_columns_before_the_one_that_isolates_it():
    """Left out, the row is predicted by the model's prefix before the lone column (here the
    intercept: the other rows' mean), not by the later slope (R's lm would keep it) nor by itself."""
    rng = np.random.default_rng(1)
    n = 30
    x = rng.uniform(0, 1, n)
    lone = np.zeros(n)
    lone[7] = 1.0
    A = np.column_stack([np.ones(n), lone, x])  # the lone column first, the slope after it
    z = 2 + 3 * x + rng.normal(0, 0.1, n)
    z[7] += 50
    got = loo_predictions(ordered_basis(A), z)
    assert got[7] == pytest.approx(np.delete(z, 7).mean(), rel=1e-9)
    assert got[7] == pytest.approx(prefix_deleted_fit(A, z, 7), rel=1e-9)
    assert abs(got[7] - lm_deleted_fit(A, z, 7)) > 0.01 and abs(got[7] - z[7]) > 45


@pytest.mark.parametrize("seed", range(4))
def test_loo_predictions_match_refits_on_designs_with_isolated_rows(seed):
    A, z = isolating_design(seed)
    q = ordered_basis(A)
    assert q.shape[1] == 7  # two aliased columns dropped
    assert np.allclose(np.einsum("ij,ij->i", q, q)[[3, 4, 9]], 1.0)
    want = [prefix_deleted_fit(A, z, i) for i in range(len(z))]
    assert np.allclose(loo_predictions(q, z), want, rtol=1e-9, atol=1e-9)
    # the cells' and transform choice's scores (StepwiseRegression._loo_errors) are these predictions
    y = np.exp(z)
    err = StepwiseRegression(bound_margin=None)._loo_errors(A, z, y, "log", z)
    assert np.allclose(err, np.abs(np.exp(want) - y) / y, rtol=1e-8)


def test_the_selection_path_scores_prefixes_by_refits():
    """StepwiseRegression._loo scores each prefix of the path (the search's own basis, built term by
    term) as refits of that prefix's columns without the row would."""
    A, z = isolating_design(0)
    A = A[:, [0, 1, 2, 3, 4, 6, 7]]
    st = _OLSState(z)
    marks = []
    for k in range(1, A.shape[1]):
        b = A[:, [k]] - st.q @ (st.q.T @ A[:, [k]])
        st.add(b / np.linalg.norm(b))
        marks.append((k, k, st.rank))
    path = StepwiseRegression(bound_margin=None, response_transform="none")._loo(st, z, np.ones_like(z), marks, -1)
    for (mark, err, _), k in zip(path, range(1, A.shape[1])):
        want = [prefix_deleted_fit(A[:, :k + 1], z, i) for i in range(len(z))]
        assert err == pytest.approx(np.mean(np.abs(np.array(want) - 1.0)), rel=1e-9), mark


# ---- the guard on data with a known structure -------------------------------------------------------------
def lone_corner(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """A smooth kernel (log y additive in log2 a, b, c, d with an a × b interaction, 2 % noise) over a
    4 × 4 × 4 × 6 grid; the corner a = 8, b = 8, c = 1 has one training row, 20× too slow (a pathological
    design, as the A4000's). Returns (training rows, the corner's other designs, the lone row's index)."""
    rng = np.random.default_rng(seed)
    lv = [1, 2, 4, 8]
    g = pd.DataFrame(list(itertools.product(lv, lv, lv, [16, 32, 64, 128, 256, 512])), columns=list("abcd"))
    la, lb, lc, ld = (np.log2(g[k]) for k in "abcd")
    g["y"] = np.exp(0.5 * la - 0.3 * lb + 0.15 * la * lb + 0.2 * lc + 0.4 * ld + rng.normal(0, 0.02, len(g)))
    corner = (g.a == 8) & (g.b == 8) & (g.c == 1)
    lone = g[corner].sample(1, random_state=seed).assign(y=lambda d: d.y * 20)
    train = pd.concat([g[~corner].sample(250, random_state=seed), lone]).sample(frac=1, random_state=seed)
    train = train.reset_index()
    row = int(np.flatnonzero(train["index"].to_numpy() == lone.index[0])[0])
    return train.drop(columns="index"), g[corner].drop(lone.index), row


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_lone_slow_design_does_not_bring_in_a_term(seed):
    train, corner, row = lone_corner(seed)

    def error(**kw) -> tuple[float, StepwiseModel]:
        m = StepwiseRegression(response="y", **kw).fit(train).model_
        return float(np.mean(np.abs(m.predict(corner[list("abcd")]) - corner.y) / corner.y)), m

    unguarded, m0 = error(row_guard=False)
    guarded, m1 = error()
    # without the guard, a three-way term fits the lone row and carries it to the corner's other designs
    assert unguarded > 5.0 and any(t.startswith("b:a:c") for t in m0.terms)
    assert guarded < 0.25 and not any(len(t.split(" ")[0].split(":")) == 3 for t in m1.terms)
    ls = StepwiseRegression(response="y", robust="none").fit(train).model_
    note = [n for n in ls.notes if n.startswith("one-row guard")]
    assert len(note) == 1 and f"b:a:c (training row {row + 1} gives" in note[0]
    # each term once, whatever path the search reached it by (b:a:c and a:c:b are one term)
    named = [w.split(" (")[0] for w in note[0].split("): ", 1)[1].split("; ")]
    sets = [frozenset(w.split(" ")[0].split(":")) for w in named]
    assert len(set(sets)) == len(sets) and f"{len(sets)} interaction term" in note[0]
    assert not set(named) & set(ls.terms)


def test_smooth_data_without_a_lone_row_are_fitted_the_same():
    """The guard holds back nothing where every term is carried by many rows: same terms, same
    coefficients, no note."""
    rng = np.random.default_rng(5)
    lv = [1, 2, 4, 8]
    g = pd.DataFrame(list(itertools.product(lv, lv, lv, [16, 32, 64, 128, 256, 512])), columns=list("abcd"))
    g = g.sample(150, random_state=5).reset_index(drop=True)
    la, lb, lc, ld = (np.log2(g[k]) for k in "abcd")
    g["y"] = np.exp(0.5 * la - 0.3 * lb + 0.2 * la * lb + 0.1 * lc + 0.4 * ld + rng.normal(0, 0.02, len(g)))
    on = StepwiseRegression(response="y").fit(g).model_
    off = StepwiseRegression(response="y", row_guard=False).fit(g).model_
    assert on.terms == off.terms and np.allclose(on.coefficients, off.coefficients)
    assert not any(n.startswith("one-row guard") for n in on.notes)


def test_settings_and_the_paper_readings():
    assert PAPER_SETTINGS["row_guard"] is False and ALGORITHM1_SETTINGS["row_guard"] is False
    assert StepwiseRegression().get_params()["row_guard"] is True
    with pytest.raises(FitError, match="row_guard must be True or False"):
        StepwiseRegression(response="y", row_guard="yes").fit(lone_corner(0)[0])


def test_cli_flag_and_its_refusals(tmp_path, capsys):
    train, _, _ = lone_corner(0)
    data = tmp_path / "t.csv"
    train.to_csv(data, index=False)
    out = tmp_path / "m.json"
    assert main(["fit", str(data), "--response", "y", "--robust", "none", "--row-guard", "off", "-o", str(out)]) == 0
    off = json.loads(out.read_text())
    assert off["settings"]["row_guard"] is False
    assert main(["fit", str(data), "--response", "y", "--robust", "none", "-o", str(out)]) == 0
    on = json.loads(out.read_text())
    assert on["settings"]["row_guard"] is True and any(n.startswith("one-row guard") for n in on["notes"])
    capsys.readouterr()
    # the paper model has no guard: it accepts its own value and refuses the other; other learners refuse it
    assert main(["fit", str(data), "--response", "y", "--model", "paper", "--row-guard", "off", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["fit", str(data), "--response", "y", "--model", "paper", "--row-guard", "on", "-o", str(out)]) == 2
    assert "--row-guard" in capsys.readouterr().err
    assert main(["fit", str(data), "--response", "y", "--model", "forest", "--row-guard", "on", "-o", str(out)]) == 2
    assert "--row-guard" in capsys.readouterr().err
