"""Statistics around a fitted model (Lee & Brooks §2.4–2.5 and §4; the tables of Harrell's rms).

* :func:`ols_results` — the statsmodels OLS results object of the final design (t-tests per
  coefficient, covariance, everything statsmodels offers), on the model's transformed scale.
* :func:`anova` — Wald F-tests as ``rms::anova`` reports them (Lee & Brooks Table 5): per predictor,
  every column that involves it (main, non-linear and interaction columns); its interactions; its
  non-linear columns; per interaction, its columns and non-linear parts; then total non-linear, total
  interaction, both, regression and error. Each test is statsmodels' ``f_test`` of the columns being
  zero (for OLS identical to the partial F-test of eq. 10).
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

from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats
from scipy.cluster.hierarchy import linkage

from ..errors import GpudseError
from .stepwise import StepwiseModel, transform_response


def design_matrix(model: StepwiseModel, X: pd.DataFrame) -> np.ndarray:
    """The model's columns (intercept first) evaluated on *X*."""
    evaluated = {p: b.evaluate(X[p].to_numpy()) for p, b in model.bases.items()}
    cols = [np.ones(len(X))]
    for t, lab in model.columns:
        c = evaluated[t[0]][:, lab[0]]
        if len(t) == 2:
            c = c * evaluated[t[1]][:, lab[1]]
        cols.append(c)
    return np.column_stack(cols)


def _response(model: StepwiseModel, data: pd.DataFrame) -> np.ndarray:
    if model.response not in data.columns:
        raise GpudseError(f"the data lack the response column {model.response!r} the model was fitted on")
    y = pd.to_numeric(data[model.response], errors="coerce").to_numpy(float)
    return transform_response(y, model.transform, model.response)


def ols_results(model: StepwiseModel, data: pd.DataFrame):
    """statsmodels OLS results of the model's design on its training *data* (transformed scale)."""
    z = _response(model, data)
    X = pd.DataFrame(design_matrix(model, data), columns=model.column_labels or None)
    return sm.OLS(z, X).fit()


def coefficient_table(model: StepwiseModel, data: pd.DataFrame) -> pd.DataFrame:
    """Coefficient, standard error, t and two-sided p per model column (Lee & Brooks eq. 6–7)."""
    res = ols_results(model, data)
    return pd.DataFrame({"column": list(res.params.index), "coef": res.params.to_numpy(),
                         "std_err": res.bse.to_numpy(), "t": res.tvalues.to_numpy(), "p": res.pvalues.to_numpy()})


def _nonlinear(model: StepwiseModel, k: int, param: str) -> bool:
    t, lab = model.columns[k]
    b = model.bases[param]
    return param in t and b.kind == "rcs" and lab[t.index(param)] > 0


def anova_rows(model: StepwiseModel) -> list[tuple[str, list[int]]]:
    """The rows of ``rms::anova`` as (label, model column numbers counted from 1 after the intercept)."""
    cols = range(len(model.columns))
    inter = [k for k in cols if len(model.columns[k][0]) == 2]
    rows: list[tuple[str, list[int]]] = []
    for p in model.bases:
        involve = [k for k in cols if p in model.columns[k][0]]
        p_inter = [k for k in involve if k in inter]
        p_nonlin = [k for k in involve if _nonlinear(model, k, p)]
        higher = " (Factor+Higher Order Factors)" if p_inter else ""
        rows.append((f"{p} {higher}" if higher else p, involve))
        if p_inter:
            rows.append((" All Interactions", p_inter))
        if p_nonlin:
            rows.append((f" Nonlinear{higher}", p_nonlin))
    seen = []
    for k in inter:
        t = tuple(model.columns[k][0])
        if t in seen:
            continue
        seen.append(t)
        a, b = t
        mine = [j for j in inter if tuple(model.columns[j][0]) == t]
        rows.append((f"{a} * {b}  (Factor+Higher Order Factors)", mine))
        nl_a = [j for j in mine if _nonlinear(model, j, a)]
        nl_b = [j for j in mine if _nonlinear(model, j, b)]
        nl = sorted(set(nl_a) | set(nl_b))
        if nl:
            rows.append((" Nonlinear", nl))
            rows.append((" Nonlinear Interaction : f(A,B) vs. AB", nl))
            if nl_a and nl_b:
                rows.append((f" Nonlinear Interaction in {a} vs. Af(B)", nl_a))
                rows.append((f" Nonlinear Interaction in {b} vs. Bg(A)", nl_b))
    total_nl = [k for k in cols if any(_nonlinear(model, k, p) for p in model.columns[k][0])]
    if total_nl:
        rows.append(("TOTAL NONLINEAR", total_nl))
    if inter:
        rows.append(("TOTAL INTERACTION", inter))
    if total_nl and inter:
        rows.append(("TOTAL NONLINEAR + INTERACTION", sorted(set(total_nl) | set(inter))))
    rows.append(("REGRESSION", list(cols)))
    return rows


def anova(model: StepwiseModel, data: pd.DataFrame) -> pd.DataFrame:
    """``rms::anova``-style table: factor, d.f., partial SS, MS, F, P (Lee & Brooks Table 5)."""
    res = ols_results(model, data)
    mse = float(res.mse_resid)
    out = []
    p = len(res.params)
    for label, ks in anova_rows(model):
        R = np.zeros((len(ks), p))
        for r, k in enumerate(ks):
            R[r, k + 1] = 1.0
        test = res.f_test(R)
        f = float(np.squeeze(test.fvalue))
        df = int(test.df_num)
        ss = f * df * mse
        out.append({"factor": label, "df": df, "partial_ss": ss, "ms": ss / df, "F": f, "P": float(test.pvalue)})
    out.append({"factor": "ERROR", "df": int(res.df_resid), "partial_ss": float(res.ssr), "ms": mse,
                "F": np.nan, "P": np.nan})
    return pd.DataFrame(out)


def residual_table(model: StepwiseModel, data: pd.DataFrame) -> pd.DataFrame:
    """Fitted values and residuals (transformed scale) with every predictor, one row per observation."""
    z = _response(model, data)
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
            rows.append({"parameter": p, "group": f"[{edges[k]:.4g}, {edges[k + 1]:.4g}{']' if k == groups - 1 else ')'}",
                         "low": edges[k], "high": edges[k + 1], "mean": float(part.mean()) if part.size else np.nan,
                         "count": int(part.size)})
    return pd.DataFrame(rows)
