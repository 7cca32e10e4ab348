"""Validation and the models it compares (Stargazer §7.3–7.4; Lee & Brooks §5, Tables 6–7, Figs. 9–13).

Sample-train-test as Stargazer §7.3: for each training size N (default 30, 60, …, 300) draw N rows,
fit, predict a disjoint test set (default 200 rows), repeat R times (default 5); relative errors
|ŷ − y| / |y| of all repeats are pooled and summarised as mean, median, 75th and 98th percentile and
true maximum (Stargazer Fig. 5), as Lee & Brooks Table 6 (min, 1st quartile, median, mean, 3rd
quartile, max), and as empirical CDFs (Lee & Brooks Figs. 9, 12).

Models compared in one run, each on the same draws and the same response transform (with ``transform="auto"``
the robust stepwise models choose theirs by leave-one-out error and the others use log, see
:func:`gpudse_core.model.registry.learner_transform`):

``stepwise``     Stargazer Algorithm 1 (:mod:`gpudse_core.model.stepwise`), robust default settings.
``paper``        the same with Stargazer's settings as written.
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
``ebm``          InterpretML's explainable boosting machine (:mod:`.learners`).
``auto``         the model chosen by cross-validation on the training draw only (:mod:`.auto`).

Every prediction is guarded as in :mod:`.learners` (bounded to the training draw's response range
widened by ``BOUND_MARGIN``). Summaries never drop an error: a non-finite error (a zero response, a
prediction that could not be guarded) makes the mean and the maximum infinite and is counted in
``nonfinite``; ``bounded`` counts the guarded predictions and ``extrapolated`` the test points
outside the training draw's support (a level never seen in it, a value beyond its range). Encodings
(dummy columns) are built from the training draw only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import limits
from ..errors import GpudseError
from .cancel import Interrupted
from .inference import design_matrix
from .learners import guard, is_categorical, response_bounds, stepwise_fit
from .metrics import STATS, Cancelled, _quantiles, ecdf, relative_errors, summarize  # noqa: F401 (re-exported)
from .stepwise import StepwiseModel, inverse_transform, transform_response
from .support import Support

MODELS = ("stepwise", "paper", "fixed", "regional", "application", "forest", "boosting", "hybrid", "ebm", "auto")
DEFAULT_SIZES = tuple(range(30, 301, 30))


class _Stop(Exception):
    pass


# ---- the models validate compares (S, S+R, S+A: Lee & Brooks §5) -------------------------------------
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
    from .inference import _response

    A_train = design_matrix(model, train)
    A_test = design_matrix(model, test)
    z = _response(model, train)  # the data, or a Huber fit's pseudo-observations (its least-squares target)
    n, p = A_train.shape
    r = int(min(n, max(math.ceil(region * n), p + 10)))
    dist = relative_distance(test, train, params)
    nearest = np.argpartition(dist, r - 1, axis=1)[:, :r] if r < n else np.tile(np.arange(n), (len(test), 1))
    out = np.empty(len(test))
    for i in range(len(test)):
        rows = nearest[i]
        coef, *_ = np.linalg.lstsq(A_train[rows], z[rows], rcond=None)
        out[i] = A_test[i] @ coef
    return out


@dataclass
class ValidationResult:
    """Relative errors per model and training size, pooled over repeats, with the settings used;
    ``bounded`` and ``extrapolated`` hold one flag per error (the same order)."""

    response: str
    transform: str
    train_sizes: list[int]
    test_size: int
    repeats: int
    models: list[str]
    errors: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    bounded: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    extrapolated: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    terms: dict[int, list[list[str]]] = field(default_factory=dict)
    chosen: dict[int, list[str]] = field(default_factory=dict)  # auto: the pick of each repeat
    notes: list[str] = field(default_factory=list)

    def cell(self, model: str, n: int) -> dict[str, float]:
        """The summary of one model at one training size, with the guard counts."""
        flags = self.bounded.get(model, {}).get(n, np.zeros(0, bool))
        extra = self.extrapolated.get(model, {}).get(n, np.zeros(0, bool))
        return {**summarize(self.errors[model][n]), "bounded": int(np.count_nonzero(flags)),
                "extrapolated": int(np.count_nonzero(extra))}

    def summary(self) -> pd.DataFrame:
        """One row per model and training size: the statistics, ``count``, ``nonfinite``, ``bounded``
        and ``extrapolated`` (always present, zero when nothing happened)."""
        rows = []
        for m in self.models:
            for n in self.train_sizes:
                if n in self.errors.get(m, {}):
                    rows.append({"model": m, "train_size": n, **self.cell(m, n)})
        return pd.DataFrame(rows, columns=["model", "train_size", *STATS, "count", "nonfinite", "bounded",
                                           "extrapolated"])

    def describe(self) -> str:
        """One line for a listing (``gpudse workspace show``)."""
        sizes = ", ".join(f"{n:,}" for n in self.train_sizes)
        return f"{', '.join(self.models)} at N = {sizes}, {self.repeats} repeats of {self.test_size:,} test points"

    # ---- stored form (the workspace's ``validation`` analysis, gpudse_core.workspace.results) -------
    STAGE = "validation"

    def to_stored(self) -> ValidationResult:
        """Stored as itself: the workspace codec keeps a ValidationResult field by field."""
        return self

    @classmethod
    def from_stored(cls, stored: Any) -> ValidationResult:
        """The result read back, its errors checked: one numeric array per model and training size."""
        from ..stored import StoredFormError

        def damaged(problem: str) -> StoredFormError:
            return StoredFormError(f"the stored validation is damaged: {problem}; run the validation again")

        if not isinstance(stored, cls):
            raise damaged(f"it is a {type(stored).__name__}, not a validation result")
        if not (isinstance(stored.models, list) and all(isinstance(m, str) for m in stored.models)):
            raise damaged("its list of models is not a list of names")
        if not (isinstance(stored.train_sizes, list) and all(isinstance(n, int) for n in stored.train_sizes)):
            raise damaged("its training sizes are not whole numbers")
        if not isinstance(stored.errors, dict):
            raise damaged("its errors are not a record per model")
        for m, by_size in stored.errors.items():
            if not isinstance(by_size, dict) or not all(
                    isinstance(e, np.ndarray) and e.dtype.kind in "biuf" for e in by_size.values()):
                raise damaged(f"the errors of model {m!r} are not numeric arrays per training size")
        return stored

    def to_json_dict(self) -> dict:
        """``{"models": {name: {"N": {mean, median, p75, p90, p98, max, …, nonfinite, bounded}}}}``, errors
        as fractions over all repeats; a statistic that is infinite (see ``nonfinite``) is ``null``."""
        def plain(d: dict) -> dict:
            return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}

        out = {"response": self.response, "transform": self.transform, "test_size": self.test_size,
               "repeats": self.repeats, "notes": self.notes,
               "models": {m: {str(n): plain(self.cell(m, n)) for n in sizes} for m, sizes in self.errors.items()}}
        if self.chosen:
            out["auto_chosen"] = {str(n): picks for n, picks in self.chosen.items()}
        return out


def validate(data: pd.DataFrame, response: str, params: Sequence[str] | None = None, *,
             train_sizes: Sequence[int] = DEFAULT_SIZES, test_size: int = 200, repeats: int = 5,
             models: Sequence[str] = ("stepwise", "fixed"), transform: str = "none", seed: int = 0,
             fixed_terms: Sequence[str] | None = None, app_column: str | None = None, region: float = 0.5,
             progress: Callable[[int, int, str], Any] | None = None, auto_rule: str | None = None,
             **fit_kw: Any) -> ValidationResult:
    """Sample-train-test validation of several models on the same draws (see the module docstring).

    *progress(done, total, message)* is called after each model of each draw (a unit is one model
    fitted on one training draw and scored on its test set); returning ``False`` cancels with
    :class:`Cancelled`, whose ``partial`` holds the fits finished so far. *auto_rule* is the ``auto``
    model's rule for choosing (:data:`.auto.RULES`; None: its default).
    """
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise GpudseError(f"unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
    if "application" in models and not app_column:
        raise GpudseError("the application model (S+A) needs the application column (app_column / --app-column)")
    if response not in data.columns:
        raise GpudseError(f"response column {response!r} is not in the data; columns: "
                          f"{', '.join(map(str, data.columns))}")
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
    if fixed_terms:
        _check_terms(fixed_terms, list(params), const)
    sizes = sorted({int(n) for n in train_sizes})
    if not sizes or sizes[0] < 3:
        raise GpudseError("training sizes must be whole numbers of at least 3")
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise GpudseError(f"repeats must be a whole number of at least 1 (got {repeats!r})")
    if isinstance(test_size, bool) or not isinstance(test_size, (int, np.integer)) or test_size < 1:
        raise GpudseError(f"the test size must be a whole number of at least 1 (got {test_size!r})")
    if "regional" in models and not (isinstance(region, (int, float)) and math.isfinite(region) and 0 < region <= 1):
        raise GpudseError(f"the S+R region must be a share of the training rows in (0, 1] (got {region!r}); "
                          f"0.5 uses the nearest half")
    limits.check("validation_fits", len(sizes) * repeats * len(models),
                 f"{len(sizes)} training sizes × {repeats} repeats × {len(models)} models (fits)",
                 "use fewer repeats, sizes or models")
    if sizes[-1] + test_size > len(data):
        raise GpudseError(f"the largest training size ({sizes[-1]}) plus the test set ({test_size}) needs "
                          f"{sizes[-1] + test_size} rows but the data have {len(data)}; use smaller sizes")
    cols = list(params) + [response] + ([app_column] if app_column else [])
    data = data[cols].reset_index(drop=True)
    res = ValidationResult(response, transform, sizes, test_size, repeats, list(models), notes=notes)
    res.errors = {m: {} for m in models}
    res.bounded = {m: {} for m in models}
    res.extrapolated = {m: {} for m in models}
    rng = np.random.default_rng(seed)
    total = len(sizes) * repeats * len(models)
    done = 0

    def tick(message: str) -> None:
        nonlocal done
        done += 1
        if progress is not None and progress(done, total, message) is False:
            raise _Stop

    def score(preds: dict[str, pd.DataFrame], test: pd.DataFrame, n: int) -> None:
        for m, det in preds.items():
            err = relative_errors(test[response].to_numpy(float), det["predicted"].to_numpy())
            for store, new in ((res.errors, err), (res.bounded, det["bounded"].to_numpy(bool)),
                               (res.extrapolated, det["extrapolation"].to_numpy(dtype=str) != "")):
                store[m][n] = np.concatenate([store[m][n], new]) if n in store[m] else new

    try:
        for rep in range(repeats):
            order = rng.permutation(len(data))
            test = data.iloc[order[:test_size]].reset_index(drop=True)
            pool = order[test_size:]
            for n in sizes:
                train = data.iloc[rng.choice(pool, size=n, replace=False)].reset_index(drop=True)
                preds: dict[str, pd.DataFrame] = {}  # filled model by model: what a stop leaves is kept
                try:
                    _predict_all(train, test, response, list(params), models, transform, seed + rep, fixed_terms,
                                 app_column, region, fit_kw, res, n,
                                 lambda m, rep=rep, n=n: tick(f"repeat {rep + 1}/{repeats}, N = {n}: {m}"), preds,
                                 auto_rule=auto_rule)
                finally:
                    score(preds, test, n)
    except (_Stop, Interrupted):  # asked between fits, or inside one (which is then left out)
        if not done or not any(res.errors[m] for m in models):
            raise Cancelled("validation cancelled before the first fit finished") from None
        res.notes.append(f"stopped after {done} of {total} fits (model × repeat × training size); a model's "
                         f"errors pool the repeats it finished")
        for store in (res.errors, res.bounded, res.extrapolated):
            for m in [m for m, e in store.items() if not e]:
                del store[m]
        raise Cancelled("validation cancelled", partial=res) from None
    return res


def _check_terms(terms: Sequence[str], params: list[str], constant: list[str]) -> None:
    """Refuse a fixed-model term that names no parameter of the data (before any fit, so a typo is never
    silently left out of the model)."""
    for t in terms:
        parts = [q.strip() for q in str(t).split(":")]
        unknown = [q for q in parts if q not in params]
        if unknown:
            why = "constant in the data" if all(q in constant for q in unknown) else "not a parameter"
            raise GpudseError(f"fixed-model term {str(t)!r}: {', '.join(map(repr, unknown))} {why}; the parameters "
                              f"are {', '.join(params)}; give terms such as simd,blk,simd:blk")
        if not 1 <= len(parts) <= 3 or len(set(parts)) != len(parts):
            raise GpudseError(f"fixed-model term {str(t)!r}: give a parameter or an interaction of two or three "
                              f"different parameters, e.g. simd:blk")


def _predict_all(train, test, response, params, models, transform, seed, fixed_terms, app_column, region, fit_kw,
                 res: ValidationResult, n: int, tick: Callable[[str], None] = lambda m: None,
                 out: dict[str, pd.DataFrame] | None = None, *,
                 auto_rule: str | None = None) -> dict[str, pd.DataFrame]:
    """Fit every requested model on the training draw; ``predict_details`` of each on the test set,
    added to *out* as they are made; ``tick(model)`` after each one (it may raise to stop between
    models: *out* then holds the models finished)."""
    from .registry import fit_model

    out = {} if out is None else out
    X_params = params + ([app_column] if app_column and app_column not in params else [])
    support = Support.of(train[X_params], [p for p in X_params if is_categorical(train[p])])

    def guarded(model_or_z: Any, tf: str | None = None) -> pd.DataFrame:
        """Details of a model (guarded by its own bounds), or of predictions on scale *tf* (S+R, S+A)
        guarded with the draw's bounds on that scale."""
        if isinstance(model_or_z, np.ndarray):
            bounds = response_bounds(transform_response(train[response].to_numpy(float), tf, response))
            zg, flags = guard(model_or_z, bounds)
            det = pd.DataFrame({"predicted": inverse_transform(zg, tf), "bounded": flags,
                                "extrapolation": ""}, index=test.index)
        else:
            det = model_or_z.predict_details(test)
        if not (det["extrapolation"] != "").any():  # a model without its own support: the draw's
            det["extrapolation"] = support.reasons(test)
        return det

    need_stepwise = any(m in models for m in ("stepwise", "regional", "fixed", "application"))
    stepwise = None
    if need_stepwise:
        stepwise = _fit(train[X_params + [response]], response, transform, fit_kw)
        res.terms.setdefault(n, []).append(stepwise.terms)
    if "stepwise" in models:
        out["stepwise"] = guarded(stepwise)
        tick("stepwise")
    if "paper" in models:
        out["paper"] = guarded(stepwise_fit(train[X_params + [response]], response, "paper", transform=transform))
        tick("paper")
    if "fixed" in models:
        terms = list(fixed_terms) if fixed_terms else (
            ["simd", "blk", "simd:blk"] if {"simd", "blk"} <= set(params) else stepwise.terms[:3])
        fixed = _fit(train[X_params + [response]], response, transform, {**fit_kw, "forced": terms, "search": False})
        out["fixed"] = guarded(fixed)
        tick("fixed")
    if "regional" in models:
        out["regional"] = guarded(_regional(stepwise, train, test, [p for p in params if p in stepwise.bases] or params,
                                            region), stepwise.transform)
        tick("regional")
    if "application" in models:
        pred = stepwise.linear_predictor(test)
        for app, part in train.groupby(app_column):
            mask = (test[app_column] == app).to_numpy()
            if not mask.any():
                continue
            if len(part) < 10:
                res.notes.append(f"N = {n}: application {app!r} has {len(part)} training rows; used the pooled model")
                continue
            m = _fit(part[params + [response]], response, stepwise.transform, fit_kw)  # the pooled model's scale
            pred[mask] = m.linear_predictor(test[mask])
        out["application"] = guarded(pred, stepwise.transform)
        tick("application")
    for kind in ("forest", "boosting", "hybrid", "ebm"):
        if kind in models:
            out[kind] = guarded(fit_model(kind, train, response, X_params, transform=transform, seed=seed))
            tick(kind)
    if "auto" in models:
        model = fit_model("auto", train, response, X_params, transform=transform, seed=seed, stepwise_kw=fit_kw,
                          auto_rule=auto_rule)
        res.chosen.setdefault(n, []).append(model.selection["chosen"])
        out["auto"] = guarded(model)
        tick("auto")
    return out


def _fit(train: pd.DataFrame, response: str, transform: str, fit_kw: dict) -> StepwiseModel:
    """The robust default stepwise model with the caller's settings (θ, φ, forced terms …)."""
    return stepwise_fit(train, response, "stepwise", transform=transform, **fit_kw)
