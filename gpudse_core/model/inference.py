"""Statistics around a fitted model (Lee & Brooks §2.4–2.5 and §4; the tables of Harrell's rms).

* :func:`ols_results` — the statsmodels OLS results object of the final design (t-tests per
  coefficient, covariance, everything statsmodels offers), on the model's transformed scale.
* :func:`anova` — Wald F-tests as ``rms::anova`` reports them (Lee & Brooks Table 5): per predictor,
  every column that involves it (main, non-linear and interaction columns); its interactions; its
  non-linear columns; per interaction, its columns and non-linear parts; then total non-linear, total
  interaction, both, regression and error. Each test is statsmodels' ``f_test`` of the columns being
  zero (for OLS identical to the partial F-test of eq. 10). Where a row's columns are collinear on the
  data (a rank-deficient design), the test is of their rank: its d.f. is that rank and a ``note`` column
  says so ("df 29 of 32 constraints: the rest are collinear"); statsmodels' warnings are caught, never
  printed.
* :func:`residual_table` and :func:`qq_points` — residuals vs fitted values and each predictor, and
  normal Q-Q coordinates (R's ``ppoints`` plotting positions), Lee & Brooks §2.5.
* :func:`spearman_rho2` — strength of marginal relationships (Lee & Brooks Fig. 6): ``Hmisc::spearman2``
  with ``p = 2`` (ρ² of rank(y) regressed on rank(x) and its square; categories as dummies).
* :func:`variable_clusters` — hierarchical clustering of predictors on squared Spearman correlation
  (Lee & Brooks Fig. 1; ``Hmisc::varclus``: distance 1 − ρ², complete linkage).
* :func:`stratified_association` — each predictor cut into equal-width intervals with the mean
  response and count per interval (Lee & Brooks Figs. 2–5).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import GpudseError
from .fitted import design_matrix, working_response  # design_matrix re-exported: its users import it from here
from .stepwise import StepwiseModel, transform_response


def _response(model: StepwiseModel, data: pd.DataFrame) -> np.ndarray:
    """The response the model's coefficients are least squares on: the transformed response, or for a
    Huber fit its pseudo-observations (:func:`.fitted.working_response`)."""
    if model.response not in data.columns:
        raise GpudseError(f"the data lack the response column {model.response!r} the model was fitted on")
    y = pd.to_numeric(data[model.response], errors="coerce").to_numpy(float)
    z = transform_response(y, model.transform, model.response)
    robust = getattr(model, "robust", None)
    if robust is None:
        return z
    return working_response(design_matrix(model, data), z, model.coefficients, robust["k"], robust["scale"])


def ols_results(model: StepwiseModel, data: pd.DataFrame):
    """statsmodels OLS results of the model's design on its training *data* (transformed scale)."""
    import statsmodels.api as sm  # here, not at the top: a fit's headline needs this module, not statsmodels (0.4 s)

    from statsmodels.tools.sm_exceptions import SingularMatrixWarning

    z = _response(model, data)
    X = pd.DataFrame(design_matrix(model, data), columns=model.column_labels or None)
    with warnings.catch_warnings():  # a rank-deficient design: the ANOVA's rows say what it costs them
        warnings.simplefilter("ignore", SingularMatrixWarning)
        return sm.OLS(z, X).fit()


def coefficient_table(model: StepwiseModel, data: pd.DataFrame) -> pd.DataFrame:
    """Coefficient, standard error, t and two-sided p per model column (Lee & Brooks eq. 6–7)."""
    res = ols_results(model, data)
    return pd.DataFrame({"column": list(res.params.index), "coef": res.params.to_numpy(),
                         "std_err": res.bse.to_numpy(), "t": res.tvalues.to_numpy(), "p": res.pvalues.to_numpy()})


def _nonlinear(model: StepwiseModel, k: int, param: str) -> bool:
    t, lab = model.columns[k]
    b = model.bases[param]
    return param in t and b.kind in ("rcs", "linear") and lab[t.index(param)] > 0  # spline columns, pow2(x)


def anova_rows(model: StepwiseModel) -> list[tuple[str, list[int]]]:
    """The rows of ``rms::anova`` as (label, model column numbers counted from 0 after the intercept).

    Per predictor: every column involving it, its interaction columns, its non-linear columns.
    Per interaction term (pairs, then as they appear; three-way terms included): its columns and
    those of higher-order terms containing it; non-linear columns; for a pair, the non-linear
    interaction, the doubly non-linear columns ("f(A,B) vs. Af(B) + Bg(A)", full interactions
    only) and the non-linear interaction in each factor. Then the totals, as rms prints them
    (TOTAL INTERACTION only when there are several interaction terms)."""
    cols = range(len(model.columns))
    sets = [frozenset(model.columns[k][0]) for k in cols]
    inter = [k for k in cols if len(sets[k]) >= 2]
    rows: list[tuple[str, list[int]]] = []

    def nonlin(k: int, params) -> bool:
        return any(_nonlinear(model, k, p) for p in params)

    for p in model.bases:
        involve = [k for k in cols if p in sets[k]]
        p_inter = [k for k in involve if k in inter]
        p_nonlin = [k for k in involve if _nonlinear(model, k, p)]
        higher = " (Factor+Higher Order Factors)" if p_inter else ""
        rows.append((f"{p} {higher}" if higher else p, involve))
        if p_inter:
            rows.append((" All Interactions", p_inter))
        if p_nonlin:
            rows.append((f" Nonlinear{higher}", p_nonlin))
    terms: list[tuple[str, ...]] = []
    for k in inter:
        t = tuple(model.columns[k][0])
        if frozenset(t) not in {frozenset(u) for u in terms}:
            terms.append(t)
    for t in terms:
        key = frozenset(t)
        mine = [k for k in inter if sets[k] == key]
        above = [k for k in inter if sets[k] > key]
        rows.append((f"{' * '.join(t)}  (Factor+Higher Order Factors)", sorted(mine + above)))
        nl_own = [k for k in mine if nonlin(k, t)]
        nl_all = [k for k in sorted(mine + above) if nonlin(k, t)]
        if above and nl_all:
            rows.append((" Nonlinear (Factor+Higher Order Factors)", nl_all))
        elif nl_own:
            rows.append((" Nonlinear", nl_own))
        if len(t) == 2 and nl_own:
            a, b = t
            nl_a = [k for k in mine if _nonlinear(model, k, a)]
            nl_b = [k for k in mine if _nonlinear(model, k, b)]
            rows.append((" Nonlinear Interaction : f(A,B) vs. AB", nl_own))
            both = [k for k in nl_a if k in nl_b]
            if both:
                rows.append((" f(A,B) vs. Af(B) + Bg(A)", both))
            if nl_a and nl_b:
                rows.append((f" Nonlinear Interaction in {a} vs. Af(B)", nl_a))
                rows.append((f" Nonlinear Interaction in {b} vs. Bg(A)", nl_b))
    total_nl = [k for k in cols if nonlin(k, sets[k])]
    if total_nl:
        rows.append(("TOTAL NONLINEAR", total_nl))
    if len(terms) > 1:
        rows.append(("TOTAL INTERACTION", inter))
    if total_nl and inter:
        rows.append(("TOTAL NONLINEAR + INTERACTION", sorted(set(total_nl) | set(inter))))
    rows.append(("REGRESSION", list(cols)))
    return rows


def _wald(res: Any, R: np.ndarray, ks: list[int]) -> tuple[int, float, float]:
    """(d.f., F, P) of the test that the columns *ks* (counted after the intercept; *R* selects them) are zero.

    A full-rank design: statsmodels' Wald F-test (rms's). When their covariance is rank-deficient (statsmodels
    warns "covariance of constraints does not have full rank"; caught, the caller says it in the table), the
    partial F-test of Lee & Brooks eq. 10 instead, which the Wald test equals for OLS on a full-rank design:
    d.f. = rank(X) − rank(X without the columns), the independent constraints; (0, NaN, NaN) when none is left."""
    from statsmodels.tools.sm_exceptions import ValueWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("always", message="covariance of constraints", category=ValueWarning)
        try:
            test = res.f_test(R)
        except ZeroDivisionError:
            test = None
    short = test is None or any("covariance of constraints" in str(w.message) for w in caught)
    for w in caught:  # anything else is not ours to hide
        if "covariance of constraints" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if not short:
        return int(test.df_num), float(np.squeeze(test.fvalue)), float(test.pvalue)
    X, y = np.asarray(res.model.exog, dtype=float), np.asarray(res.model.endog, dtype=float)
    reduced = np.delete(X, [k + 1 for k in ks], axis=1)
    df = int(np.linalg.matrix_rank(X) - (np.linalg.matrix_rank(reduced) if reduced.shape[1] else 0))
    if df <= 0:
        return 0, np.nan, np.nan
    rss_r = float(np.sum((y - reduced @ np.linalg.lstsq(reduced, y, rcond=None)[0]) ** 2)) if reduced.shape[1] \
        else float(y @ y)
    f = ((rss_r - float(res.ssr)) / df) / float(res.mse_resid)
    return df, f, float(stats.f.sf(f, df, res.df_resid))


def anova(model: StepwiseModel, data: pd.DataFrame) -> pd.DataFrame:
    """``rms::anova``-style table: factor, d.f., partial SS, MS, F, P (Lee & Brooks Table 5).

    A row whose columns are collinear on *data* is a Wald test of fewer independent constraints than
    columns: its d.f. is their rank (statsmodels' ``f_test``), and a ``note`` column, present only then,
    says "df 29 of 32 constraints: the rest are collinear" (the table's ``attrs["note"]`` says it once)."""
    res = ols_results(model, data)
    mse = float(res.mse_resid)
    out = []
    p = len(res.params)
    for label, ks in anova_rows(model):
        R = np.zeros((len(ks), p))
        for r, k in enumerate(ks):
            R[r, k + 1] = 1.0
        df, f, pval = _wald(res, R, ks)
        ss = f * df * mse if df > 0 else 0.0
        note = f"df {df} of {len(ks)} constraints: the rest are collinear" if df < len(ks) else ""
        out.append({"factor": label, "df": df, "partial_ss": ss, "ms": ss / df if df > 0 else np.nan, "F": f,
                    "P": pval, "note": note})
    out.append({"factor": "ERROR", "df": int(res.df_resid), "partial_ss": float(res.ssr), "ms": mse,
                "F": np.nan, "P": np.nan, "note": ""})
    table = pd.DataFrame(out)
    short = int((table["note"] != "").sum())
    if not short:
        return table.drop(columns="note")
    table.attrs["note"] = (f"{short} ANOVA row{'s test' if short > 1 else ' tests'} fewer independent constraints "
                           "than columns: the model's columns are collinear on the data (a rank-deficient "
                           "design), so each such F-test is of the independent part only, its d.f. the rank")
    return table


def residual_table(model: StepwiseModel, data: pd.DataFrame) -> pd.DataFrame:
    """Fitted values and residuals (transformed scale) with every predictor, one row per observation.
    The residuals are the data's, also for a Huber fit (whose tables use its pseudo-observations):
    the plots are where the rows it discounts show."""
    if model.response not in data.columns:
        raise GpudseError(f"the data lack the response column {model.response!r} the model was fitted on")
    z = transform_response(pd.to_numeric(data[model.response], errors="coerce").to_numpy(float), model.transform,
                           model.response)
    fitted = model.linear_predictor(data)
    out = data[[p for p in model.bases]].copy()
    out.insert(0, "residual", z - fitted)
    out.insert(0, "fitted", fitted)
    return out


def ppoints(n: int) -> np.ndarray:
    """R's plotting positions: (i − a)/(n + 1 − 2a), a = 3/8 for n ≤ 10 else 1/2."""
    a = 3 / 8 if n <= 10 else 0.5
    return (np.arange(1, n + 1) - a) / (n + 1 - 2 * a)


def qq_points(residuals: np.ndarray) -> pd.DataFrame:
    """Normal Q-Q coordinates: theoretical quantiles vs the ranked residuals (as R's qqnorm)."""
    r = np.sort(np.asarray(residuals, dtype=float))
    return pd.DataFrame({"theoretical": stats.norm.ppf(ppoints(r.size)), "sample": r})


def _rank(x: pd.Series) -> np.ndarray:
    return stats.rankdata(x.to_numpy(), method="average")


def spearman_rho2(data: pd.DataFrame, response: str, params: list[str] | None = None, p: int = 2) -> pd.DataFrame:
    """``Hmisc::spearman2(y ~ x, p = 2)``: ρ², F, d.f., P and adjusted ρ² per predictor, strongest first."""
    params = params or [c for c in data.columns if c != response]
    ry = _rank(data[response])
    n = ry.size
    rows = []
    for name in params:
        col = data[name]
        if col.dtype.kind in "OUSb":
            dummies = pd.get_dummies(col.astype(str), drop_first=True).to_numpy(float)
            X = dummies
        else:
            rx = _rank(col)
            X = np.column_stack([rx ** j for j in range(1, p + 1)]) if np.unique(rx).size > 2 else rx[:, None]
        X1 = np.column_stack([np.ones(n), X])
        coef, *_ = np.linalg.lstsq(X1, ry, rcond=None)
        rss = float(np.sum((ry - X1 @ coef) ** 2))
        tss = float(np.sum((ry - ry.mean()) ** 2))
        r2 = 1 - rss / tss
        df1 = np.linalg.matrix_rank(X1) - 1
        df2 = n - df1 - 1
        f = (r2 / df1) / ((1 - r2) / df2) if r2 < 1 else np.inf
        rows.append({"parameter": name, "rho2": r2, "F": f, "df1": df1, "df2": df2,
                     "P": float(stats.f.sf(f, df1, df2)), "adj_rho2": 1 - (1 - r2) * (n - 1) / df2, "n": n})
    return pd.DataFrame(rows).sort_values("rho2", ascending=False, kind="stable").reset_index(drop=True)


@dataclass
class VariableClusters:
    """``Hmisc::varclus``: similarity (squared Spearman ρ) and the complete-linkage tree on 1 − ρ²."""

    labels: list[str]
    similarity: pd.DataFrame
    linkage: np.ndarray  # scipy format: rows (a, b, height, size)

    @property
    def heights(self) -> np.ndarray:
        return self.linkage[:, 2]


def variable_clusters(data: pd.DataFrame, params: list[str]) -> VariableClusters:
    if len(params) < 2:
        raise GpudseError("variable clustering needs at least two predictors")
    from scipy.cluster.hierarchy import linkage  # here: only this function clusters

    ranks = np.column_stack([_rank(data[p]) for p in params])
    rho = np.corrcoef(ranks, rowvar=False)
    sim = rho ** 2
    dist = 1 - sim[np.triu_indices(len(params), 1)]
    return VariableClusters(list(params), pd.DataFrame(sim, index=params, columns=params),
                            linkage(np.clip(dist, 0, None), method="complete"))


def stratified_association(data: pd.DataFrame, response: str, params: list[str], groups: int = 4) -> pd.DataFrame:
    """Each predictor in *groups* equal-width intervals: interval, mean response and count (Figs. 2–5)."""
    rows = []
    y = pd.to_numeric(data[response], errors="coerce")
    for p in params:
        col = data[p]
        if col.dtype.kind in "OUSb":
            g = col.astype(str)
            for level, part in y.groupby(g, sort=True):
                rows.append({"parameter": p, "group": str(level), "low": np.nan, "high": np.nan,
                             "mean": float(part.mean()), "count": int(part.size)})
            continue
        x = col.astype(float)
        lo, hi = float(x.min()), float(x.max())
        edges = np.linspace(lo, hi, groups + 1)
        idx = np.clip(np.searchsorted(edges, x.to_numpy(), side="right") - 1, 0, groups - 1)
        for k in range(groups):
            part = y[idx == k]
            rows.append({"parameter": p, "group": f"[{edges[k]:.4g}, "
                                                  f"{edges[k + 1]:.4g}{']' if k == groups - 1 else ')'}",
                         "low": edges[k], "high": edges[k + 1], "mean": float(part.mean()) if part.size else np.nan,
                         "count": int(part.size)})
    return pd.DataFrame(rows)
