"""Validation and model variants (Stargazer §7.3–7.4; Lee & Brooks §5, Tables 6–7, Figs. 9–13).

Sample-train-test as Stargazer §7.3: for each training size N (default 30, 60, …, 300) draw N rows,
fit, predict a disjoint test set (default 200 rows), repeat R times (default 5); relative errors
|ŷ − y| / |y| of all repeats are pooled and summarised as mean, median, 75th and 98th percentile and
true maximum (Stargazer Fig. 5), as Lee & Brooks Table 6 (min, 1st quartile, median, mean, 3rd
quartile, max), and as empirical CDFs (Lee & Brooks Figs. 9, 12).

Models compared in one run, each on the same draws and the same response transform:

``stepwise``     Stargazer Algorithm 1 (:mod:`gpudse_core.stepwise`).
``fixed``        Stargazer §7.4's fixed-factor model: the given terms (default ``simd``, ``blk``,
                 ``simd:blk`` when those columns exist, else the first three terms the stepwise fit
                 picks on the training set, i.e. a designer who knows the top factors).
``regional``     Lee & Brooks S+R: for each query, the stepwise model's columns are refitted on the
                 r training rows nearest to it by relative Euclidean distance
                 d = √Σ (1 − b_i/a_i)² (a = query, b = sample; the paper's formula is garbled in
                 print, this is its evident reading; where a_i = 0 the difference is divided by the
                 parameter's range instead; categories add 0 or 1). r = max(region × N, columns + 10),
                 at most N (``region`` default 0.5; the paper used 1,000 of 4,000).
``application``  Lee & Brooks S+A: one stepwise model per value of an application column (given with
                 ``app_column``); rows of an application with too few training rows use the pooled
                 model.
``forest``       scikit-learn random forest on the same transform (beyond the papers).
``boosting``     scikit-learn histogram gradient boosting on the same transform.
``hybrid``       the stepwise model plus gradient boosting fitted to its residuals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import GpudseError
from .inference import design_matrix
from .stepwise import StepwiseModel, fit_stepwise, inverse_transform, transform_response

MODELS = ("stepwise", "fixed", "regional", "application", "forest", "boosting", "hybrid")
DEFAULT_SIZES = tuple(range(30, 301, 30))


class Cancelled(GpudseError):
    """The progress callback asked to stop; ``partial`` is the result of the fits finished before
    (each model's errors pooled over the repeats it finished), or None when none had finished."""

    def __init__(self, message: str = "validation cancelled", partial: ValidationResult | None = None):
        super().__init__(message)
        self.partial = partial


class _Stop(Exception):
    pass


def relative_errors(y_true: Any, y_pred: Any) -> np.ndarray:
    t = np.asarray(y_true, dtype=float)
    p = np.asarray(y_pred, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(p - t) / np.abs(t)


def summarize(errors: Any) -> dict[str, float]:
    """Stargazer's mean/median/p75/p98/max and Lee & Brooks Table 6's min/q1/q3 (fractions, not %)."""
    e = np.asarray(errors, dtype=float)
    e = e[np.isfinite(e)]
    if e.size == 0:
        return {k: float("nan") for k in ("mean", "median", "p75", "p98", "max", "min", "q1", "q3", "count")}
    q = np.quantile(e, [0.0, 0.25, 0.5, 0.75, 0.98, 1.0])
    return {"mean": float(e.mean()), "median": float(q[2]), "p75": float(q[3]), "p98": float(q[4]),
            "max": float(q[5]), "min": float(q[0]), "q1": float(q[1]), "q3": float(q[3]), "count": int(e.size)}


def ecdf(errors: Any) -> tuple[np.ndarray, np.ndarray]:
    """Sorted errors and the fraction of predictions at or below each (Lee & Brooks Fig. 9)."""
    e = np.sort(np.asarray(errors, dtype=float))
    return e, np.arange(1, e.size + 1) / e.size


# ---- model variants -------------------------------------------------------------------------------
def _features(train: pd.DataFrame, test: pd.DataFrame, params: list[str]) -> tuple[np.ndarray, np.ndarray]:
    both = pd.concat([train[params], test[params]], ignore_index=True)
    cat = [p for p in params if both[p].dtype.kind in "OUSb"]
    enc = pd.get_dummies(both, columns=cat, dtype=float) if cat else both.astype(float)
    m = enc.to_numpy(float)
    return m[: len(train)], m[len(train):]


def _tree(kind: str, n: int, seed: int):
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor

    if kind == "forest":
        return RandomForestRegressor(n_estimators=200, min_samples_leaf=1, random_state=seed, n_jobs=1)
    return HistGradientBoostingRegressor(max_iter=300, learning_rate=0.1, min_samples_leaf=max(2, min(20, n // 10)),
                                         random_state=seed)


def relative_distance(queries: pd.DataFrame, samples: pd.DataFrame, params: list[str]) -> np.ndarray:
    """Lee & Brooks' relative Euclidean distance between every query (rows) and sample (columns)."""
    d2 = np.zeros((len(queries), len(samples)))
    for p in params:
        a = queries[p].to_numpy()
        b = samples[p].to_numpy()
        if queries[p].dtype.kind in "OUSb":
            d2 += (a[:, None] != b[None, :]).astype(float)
            continue
        a = a.astype(float)
        b = b.astype(float)
        span = float(np.ptp(np.concatenate([a, b]))) or 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(a[:, None] != 0, 1.0 - b[None, :] / a[:, None], (b[None, :] - a[:, None]) / span)
        d2 += rel ** 2
    return np.sqrt(d2)


def _regional(model: StepwiseModel, train: pd.DataFrame, test: pd.DataFrame, params: list[str],
              region: float) -> np.ndarray:
    A_train = design_matrix(model, train)
    A_test = design_matrix(model, test)
    z = transform_response(train[model.response].to_numpy(float), model.transform, model.response)
    n, p = A_train.shape
    r = int(min(n, max(math.ceil(region * n), p + 10)))
    dist = relative_distance(test, train, params)
    nearest = np.argpartition(dist, r - 1, axis=1)[:, :r] if r < n else np.tile(np.arange(n), (len(test), 1))
    out = np.empty(len(test))
    for i in range(len(test)):
        rows = nearest[i]
        coef, *_ = np.linalg.lstsq(A_train[rows], z[rows], rcond=None)
        out[i] = A_test[i] @ coef
    return inverse_transform(out, model.transform)


@dataclass
class ValidationResult:
    """Relative errors per model and training size, pooled over repeats, with the settings used."""

    response: str
    transform: str
    train_sizes: list[int]
    test_size: int
    repeats: int
    models: list[str]
    errors: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    terms: dict[int, list[list[str]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> pd.DataFrame:
        rows = []
        for m in self.models:
            for n in self.train_sizes:
                if n in self.errors.get(m, {}):
                    rows.append({"model": m, "train_size": n, **summarize(self.errors[m][n])})
        return pd.DataFrame(rows)

    def to_json_dict(self) -> dict:
        """``{"models": {name: {"N": {mean, median, p75, p98, max, …}}}}``, errors as fractions."""
        return {"response": self.response, "transform": self.transform, "test_size": self.test_size,
                "repeats": self.repeats, "notes": self.notes,
                "models": {m: {str(n): summarize(e) for n, e in sizes.items()} for m, sizes in self.errors.items()}}


def validate(data: pd.DataFrame, response: str, params: Sequence[str] | None = None, *,
             train_sizes: Sequence[int] = DEFAULT_SIZES, test_size: int = 200, repeats: int = 5,
             models: Sequence[str] = ("stepwise", "fixed"), transform: str = "none", seed: int = 0,
             fixed_terms: Sequence[str] | None = None, app_column: str | None = None, region: float = 0.5,
             progress: Callable[[int, int, str], Any] | None = None, **fit_kw: Any) -> ValidationResult:
    """Sample-train-test validation of several models on the same draws (see the module docstring).

    *progress(done, total, message)* is called after each model of each draw (a unit is one model
    fitted on one training draw and scored on its test set); returning ``False`` cancels with
    :class:`Cancelled`, whose ``partial`` holds the fits finished so far.
    """
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise GpudseError(f"unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
    if "application" in models and not app_column:
        raise GpudseError("the application model (S+A) needs the application column (app_column / --app-column)")
    if response not in data.columns:
        raise GpudseError(f"response column {response!r} is not in the data; columns: {', '.join(map(str, data.columns))}")
    y = pd.to_numeric(data[response], errors="coerce")
    bad = np.flatnonzero(~np.isfinite(y.to_numpy(float)))
    notes: list[str] = []
    if bad.size:
        raise GpudseError(f"column {response!r}: {bad.size} rows are missing or not numbers (first: row {bad[0] + 1}); "
                          f"drop them before validating")
    exclude = {response, app_column}
    if params is None:
        params = [c for c in data.columns if c not in exclude]
    missing = [p for p in params if p not in data.columns]
    if missing:
        raise GpudseError(f"unknown column(s) {missing}")
    const = [p for p in params if data[p].nunique() < 2]
    if const:
        notes.append(f"left out constant column(s): {', '.join(const)}")
    params = [p for p in params if p not in const]
    sizes = sorted({int(n) for n in train_sizes})
    if not sizes or sizes[0] < 3:
        raise GpudseError("training sizes must be whole numbers of at least 3")
    if sizes[-1] + test_size > len(data):
        raise GpudseError(f"the largest training size ({sizes[-1]}) plus the test set ({test_size}) needs "
                          f"{sizes[-1] + test_size} rows but the data have {len(data)}; use smaller sizes")
    cols = list(params) + [response] + ([app_column] if app_column else [])
    data = data[cols].reset_index(drop=True)
    res = ValidationResult(response, transform, sizes, test_size, repeats, list(models), notes=notes)
    res.errors = {m: {} for m in models}
    rng = np.random.default_rng(seed)
    total = len(sizes) * repeats * len(models)
    done = 0

    def tick(message: str) -> None:
        nonlocal done
        done += 1
        if progress is not None and progress(done, total, message) is False:
            raise _Stop

    def score(preds: dict[str, np.ndarray], test: pd.DataFrame, n: int) -> None:
        for m, p in preds.items():
            err = relative_errors(test[response].to_numpy(float), p)
            res.errors[m][n] = np.concatenate([res.errors[m].get(n, np.zeros(0)), err])

    try:
        for rep in range(repeats):
            order = rng.permutation(len(data))
            test = data.iloc[order[:test_size]].reset_index(drop=True)
            pool = order[test_size:]
            for n in sizes:
                train = data.iloc[rng.choice(pool, size=n, replace=False)].reset_index(drop=True)
                preds: dict[str, np.ndarray] = {}  # filled model by model: what a stop leaves is kept
                try:
                    _predict_all(train, test, response, list(params), models, transform, seed + rep, fixed_terms,
                                 app_column, region, fit_kw, res, n,
                                 lambda m, rep=rep, n=n: tick(f"repeat {rep + 1}/{repeats}, N = {n}: {m}"), preds)
                finally:
                    score(preds, test, n)
    except _Stop:
        if not done or not any(res.errors[m] for m in models):
            raise Cancelled("validation cancelled before the first fit finished") from None
        res.notes.append(f"stopped after {done} of {total} fits (model × repeat × training size); a model's "
                         f"errors pool the repeats it finished")
        res.errors = {m: e for m, e in res.errors.items() if e}
        raise Cancelled("validation cancelled", partial=res) from None
    return res


def _predict_all(train, test, response, params, models, transform, seed, fixed_terms, app_column, region, fit_kw,
                 res: ValidationResult, n: int, tick: Callable[[str], None] = lambda m: None,
                 out: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Each model's predictions on *test*, added to *out* as they are made; ``tick(model)`` after
    each one (it may raise to stop between models: *out* then holds the models finished)."""
    out = {} if out is None else out
    X_params = params + ([app_column] if app_column and app_column not in params else [])
    need_stepwise = any(m in models for m in ("stepwise", "regional", "hybrid", "fixed"))
    stepwise = None
    if need_stepwise:
        stepwise = _fit(train[X_params + [response]], response, transform, fit_kw)
        res.terms.setdefault(n, []).append(stepwise.terms)
    if "stepwise" in models:
        out["stepwise"] = stepwise.predict(test)
        tick("stepwise")
    if "fixed" in models:
        terms = list(fixed_terms) if fixed_terms else (
            ["simd", "blk", "simd:blk"] if {"simd", "blk"} <= set(params) else stepwise.terms[:3])
        fixed = _fit(train[X_params + [response]], response, transform, {**fit_kw, "forced": terms, "search": False})
        out["fixed"] = fixed.predict(test)
        tick("fixed")
    if "regional" in models:
        out["regional"] = _regional(stepwise, train, test, [p for p in params if p in stepwise.bases] or params, region)
        tick("regional")
    if "application" in models:
        pred = stepwise.predict(test) if stepwise is not None else np.full(len(test), np.nan)
        for app, part in train.groupby(app_column):
            mask = (test[app_column] == app).to_numpy()
            if not mask.any():
                continue
            if len(part) < 10:
                res.notes.append(f"N = {n}: application {app!r} has {len(part)} training rows; used the pooled model")
                continue
            m = _fit(part[params + [response]], response, transform, fit_kw)
            pred[mask] = m.predict(test[mask])
        out["application"] = pred
        tick("application")
    z = transform_response(train[response].to_numpy(float), transform, response)
    if any(m in models for m in ("forest", "boosting", "hybrid")):
        Xtr, Xte = _features(train, test, X_params)
        for kind in ("forest", "boosting"):
            if kind in models:
                est = _tree(kind, len(train), seed).fit(Xtr, z)
                out[kind] = inverse_transform(est.predict(Xte), transform)
                tick(kind)
        if "hybrid" in models:
            resid = z - stepwise.linear_predictor(train)
            est = _tree("boosting", len(train), seed).fit(Xtr, resid)
            out["hybrid"] = inverse_transform(stepwise.linear_predictor(test) + est.predict(Xte), transform)
            tick("hybrid")
    return out


def _fit(train: pd.DataFrame, response: str, transform: str, fit_kw: dict) -> StepwiseModel:
    """Fit on one training draw; columns constant in this draw (likely at small N) are left out."""
    cols = [c for c in train.columns if c != response and train[c].nunique() > 1]
    kw = dict(fit_kw)
    if "forced" in kw:
        kw["forced"] = [t for t in kw["forced"] if all(p in cols for p in t.split(":"))]
    return fit_stepwise(train[cols + [response]], response, transform=transform, **kw)
