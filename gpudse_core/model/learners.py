"""Learners beside the stepwise model, behind one interface.

``forest``    scikit-learn random forest on the transformed response.
``boosting``  scikit-learn histogram gradient boosting on the transformed response.
``hybrid``    the stepwise model (robust default) plus gradient boosting fitted to its residuals.
``ebm``       InterpretML's explainable boosting machine (``interpret-core``): one shape function per
              parameter plus pairwise interaction surfaces, learned by boosting. Additive, so it
              offers :meth:`EBMLearner.additive_terms` like the stepwise model.

Every fitted learner has ``kind``, ``response``, ``transform``, ``parameters``, ``settings``,
``linear_predictor(X)`` (transformed scale, unguarded), ``predict(X)`` (original scale, guarded),
``predict_details(X)`` (``predicted``, ``bounded``, ``extrapolation``), ``curve(param, values,
base_point=None)`` and ``to_dict()``/``from_dict()``.

Guards: a prediction on the transformed scale is clipped to the training response range widened by
``BOUND_MARGIN`` of that range on each side (non-finite values are clipped too, NaN goes to the
training median); the ``bounded`` column says which were. ``extrapolation`` names, per point, the
parameters outside the training support (a number beyond the training range, a level never seen in
training), empty when inside. Categorical parameters are one-hot encoded with the *training* levels
only; an unseen level encodes as "none of them" and is flagged, never silently given a new column.

Persistence is data only, never pickle. The file stores the FITTED model itself as arrays
(:mod:`.frozen`: every tree's nodes, the EBM's bins and score tables; the hybrid's stepwise part as a
stepwise model document) and loading evaluates them with NumPy: no refit, no scikit-learn or
InterpretML import, predictions identical to the fitted object's. The file also keeps the training
parameter rows (the average response curves are partial dependence over them) and a few training
predictions, compared on load. A file of the older ``gpudse.learner/1`` format (training rows and
settings only) is still read: it is refitted from its rows, with a note saying so and how long it took.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import limits
from ..choices import TRANSFORMS
from ..errors import GpudseError
from .fitted import DEFAULT_BOUND_MARGIN as BOUND_MARGIN
from .fitted import FitError, StepwiseModel, _rows, constant_response_note, inverse_transform, transform_response
from .fallback import BLENDS, C_MIN, EXACT, TREES, Fallback
from .support import Support

LEARNER_SCHEMA = "gpudse.learner/2"
REFIT_SCHEMA = "gpudse.learner/1"  # settings and training rows only: refitted on load
LEARNER_SCHEMAS = (LEARNER_SCHEMA, REFIT_SCHEMA)
# Width of the band around the training response range, as a share of that range on the
# transformed scale (log: 0.25 of a 100x span lets a prediction go 3.2x beyond the extremes seen).
# One margin for every model kind: the stepwise model's (training range ± 0.25 of its width)

CHECK_ROWS = 50  # training predictions stored to verify a refit on load

# Settings each kind accepts, with bounds (a model file cannot ask for a million trees).
SETTINGS: dict[str, dict[str, tuple[type, float, float, Any]]] = {  # key: (type, min, max, default)
    "forest": {"n_estimators": (int, 1, 2000, 200), "min_samples_leaf": (int, 1, 1000, 1),
               "max_features": (float, 0.05, 1.0, 1.0)},
    "boosting": {"max_iter": (int, 1, 10000, 1000), "learning_rate": (float, 1e-4, 1.0, 0.05),
                 "max_leaf_nodes": (int, 2, 1024, 15), "min_samples_leaf": (int, 1, 1000, 3),
                 "l2_regularization": (float, 0.0, 1e6, 0.0)},
    "ebm": {"outer_bags": (int, 1, 64, 4), "interactions": (int, 0, 200, 10), "max_rounds": (int, 1, 100000, 5000),
            "learning_rate": (float, 1e-4, 1.0, 0.04), "smoothing_rounds": (int, 0, 5000, 100),
            "interaction_smoothing_rounds": (int, 0, 5000, 50), "min_samples_leaf": (int, 1, 1000, 4)},
}
SETTINGS["hybrid"] = SETTINGS["boosting"]


# ---- guards ---------------------------------------------------------------------------------------
def response_bounds(z: np.ndarray, margin: float = BOUND_MARGIN) -> tuple[float, float]:
    """The training response range on the transformed scale, widened by *margin* of it on each side."""
    lo, hi = float(np.min(z)), float(np.max(z))
    pad = margin * (hi - lo)
    return lo - pad, hi + pad


def guard(z: Any, bounds: tuple[float, float] | None, fallback: float | None = None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Clip transformed-scale predictions to *bounds*; returns (guarded, bounded flags). Without
    bounds only non-finite values are replaced (±inf by the largest finite double, NaN by *fallback*)."""
    z = np.array(z, dtype=float, copy=True)
    nan = np.isnan(z)
    if bounds is None:
        flags = ~np.isfinite(z)
        big = np.finfo(float).max
        z = np.clip(z, -big, big)
    else:
        lo, hi = bounds
        flags = nan | (z < lo) | (z > hi)
        z = np.clip(z, lo, hi)
        if fallback is None:
            fallback = 0.5 * (lo + hi)
    z[nan] = 0.0 if fallback is None else fallback
    return z, flags


def is_categorical(col: pd.Series) -> bool:
    return col.dtype.kind in "OUSb" or isinstance(col.dtype, pd.CategoricalDtype)


def _one_thread():
    """Native thread pools (OpenMP in histogram boosting) single-threaded: on a shared 2-core machine
    their spin-waiting made one 300-row boosting fit take 7.5 s instead of 0.4 s (see model/threads.py)."""
    from .threads import one_thread

    return one_thread()


def check_settings(kind: str, settings: Mapping[str, Any] | None, source: str = "settings") -> dict[str, Any]:
    """Defaults of *kind* updated by *settings*, each checked against its type and bounds."""
    spec = SETTINGS[kind]
    out = {k: v[3] for k, v in spec.items()}
    for k, v in (settings or {}).items():
        if k not in spec:
            raise FitError(f"{source}: {kind} has no setting {k!r}; known: {', '.join(spec)}")
        typ, lo, hi, _ = spec[k]
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi
        if not ok or (typ is int and float(v) != int(v)):
            raise FitError(f"{source}: {kind} setting {k} = {v!r}: give a {'whole ' if typ is int else ''}number "
                           f"from {lo:g} to {hi:g}")
        out[k] = typ(v)
    return out


def refit_trees(kind: str, settings: Mapping[str, Any]) -> int:
    """Trees a fit of *kind* with *settings* grows at most (each over every training row): the
    cost of a refit in trees, known before it starts (boosting and EBM may stop early)."""
    if kind == "forest":
        return int(settings["n_estimators"])
    if kind in ("boosting", "hybrid"):
        return int(settings["max_iter"])
    if kind == "ebm":
        return int(settings["outer_bags"]) * int(settings["max_rounds"])
    return 1


# ---- the common interface ----------------------------------------------------------------------------
class Learner:
    """Base of the non-stepwise learners: data checks, guards, support, curves and persistence."""

    kind = ""

    def __init__(self, response: str, parameters: Sequence[str], transform: str = "log",
                 settings: Mapping[str, Any] | None = None, seed: int = 0):
        if transform not in TRANSFORMS:
            raise FitError(f"unknown transform {transform!r}; choose {', '.join(TRANSFORMS)}")
        self.response = str(response)
        self.parameters = [str(p) for p in parameters]
        self.transform = transform
        self.settings = check_settings(self.kind, settings)
        self.seed = int(seed)
        self.notes: list[str] = []
        self.selection: dict | None = None
        self.derived: dict[str, str] = {}  # derived quantities among the parameters (:mod:`.derived`)

    # -- fitting --
    def fit(self, data: pd.DataFrame) -> "Learner":
        X, z = self._prepare(data)
        self._libraries()  # loaded first, so that their thread pools are the ones limited
        with _one_thread():
            self._fit(X, z)
        self._freeze()
        return self

    def _prepare(self, data: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
        """Check the training rows and keep what every kind needs: the rows (for average curves),
        the guard's bounds and median, the support; returns (parameter columns, transformed response)."""
        missing = [c for c in self.parameters + [self.response] if c not in data.columns]
        if missing:
            raise FitError(f"unknown column(s) {', '.join(map(repr, missing))}; columns: "
                           f"{', '.join(map(str, data.columns))}")
        if not self.parameters:
            raise FitError("no parameter columns to learn from")
        limits.current().check("refit_rows", len(data), f"{len(data):,} training rows",
                               "fit on a sample of the rows")
        y = pd.to_numeric(data[self.response], errors="coerce").to_numpy(float)
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            raise FitError(f"column {self.response!r}: rows {_rows(bad)} are missing, not numbers or infinite; "
                           f"fix or drop those rows")
        if y.size < 5:
            raise FitError(f"only {y.size} rows; a {self.kind} model needs at least 5")
        constant = constant_response_note(self.response, y)  # every tree is one leaf
        if constant:
            self.notes.append(constant)
        self.categorical = [p for p in self.parameters if is_categorical(data[p])]
        X = self._points(data, check_levels=False)
        z = transform_response(y, self.transform, self.response)
        self.train_ = pd.concat([X, pd.Series(y, name=self.response, index=X.index)], axis=1).reset_index(drop=True)
        self.bounds_ = response_bounds(z)
        self.median_ = float(np.median(z))
        self.support_ = Support.of(X, self.categorical)
        return X.reset_index(drop=True), z

    def _points(self, X: pd.DataFrame, check_levels: bool = True) -> pd.DataFrame:
        """The parameter columns, numeric ones as floats; a clear error for anything unusable."""
        if not isinstance(X, pd.DataFrame):
            raise FitError("points must be a table (DataFrame) with the model's parameter columns")
        if self.derived:
            from .derived import add_columns

            try:
                X = add_columns(X, self.derived)
            except GpudseError as e:
                raise FitError(str(e)) from None
        missing = [p for p in self.parameters if p not in X.columns]
        if missing:
            raise FitError(f"the points lack column(s) {', '.join(map(repr, missing))} that the model uses")
        out = {}
        for p in self.parameters:
            col = X[p]
            if col.isna().any():
                raise FitError(f"column {p!r}: rows {_rows(np.flatnonzero(col.isna().to_numpy()))} are empty")
            if p in self.categorical:
                out[p] = col.astype(str).to_numpy(dtype=object)
                continue
            num = pd.to_numeric(col, errors="coerce")
            bad = np.flatnonzero(~np.isfinite(num.to_numpy(float)))
            if bad.size:
                raise FitError(f"column {p!r}: rows {_rows(bad)} are not finite numbers (e.g. {col.iloc[bad[0]]!r})")
            out[p] = num.to_numpy(float)
        return pd.DataFrame(out, index=X.index)

    def _fit(self, X: pd.DataFrame, z: np.ndarray) -> None:
        raise NotImplementedError

    def _libraries(self) -> None:
        """Import the fitting library (scikit-learn's ensembles; InterpretML for the EBM)."""
        import sklearn.ensemble  # noqa: F401

    def _freeze(self) -> None:
        """Keep the fitted model as arrays (:mod:`.frozen`): what predicts and what is saved."""
        raise NotImplementedError

    def _thaw(self, d: Mapping[str, Any], source: str) -> None:
        """The fitted model from a saved document (the inverse of :meth:`_freeze` and :meth:`_saved`)."""
        from .frozen import from_doc

        self.frozen_ = from_doc(d.get("fitted"), self.parameters, self.categorical, source)

    def _saved(self) -> dict:
        return {"fitted": self.frozen_.to_doc()}

    def _raw(self, X: pd.DataFrame) -> np.ndarray:
        return self.frozen_.predict(_columns(X, self.parameters), len(X))

    def _raw_any(self, X: pd.DataFrame) -> np.ndarray:
        """``_raw`` that also takes no rows."""
        return np.empty(0) if len(X) == 0 else np.asarray(self._raw(X), dtype=float)

    # -- predicting --
    def linear_predictor(self, X: pd.DataFrame) -> np.ndarray:
        """Prediction on the transformed scale, before the guard."""
        self._fitted()
        return self._raw_any(self._points(X))

    def predict_details(self, X: pd.DataFrame) -> pd.DataFrame:
        """``predicted`` (original scale, guarded), ``bounded`` and ``extrapolation`` per point."""
        self._fitted()
        P = self._points(X)
        raw = self._raw_any(P)
        z, flags = guard(raw, self.bounds_, self.median_)
        return pd.DataFrame({"predicted": inverse_transform(z, self.transform), "bounded": flags,
                             "extrapolation": self.support_.reasons(P)}, index=X.index)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.predict_details(X)["predicted"].to_numpy()

    def _fitted(self) -> None:
        if not hasattr(self, "train_"):
            raise FitError(f"the {self.kind} model is not fitted yet; call fit first")

    # -- response curves --
    def curve(self, param: str, values: Sequence[Any], base_point: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Prediction along *param*: at *base_point* (the other parameters held there), or without one
        the model's own average curve (partial dependence over the training rows,
        :func:`partial_dependence`; EBM: its shape function)."""
        self._fitted()
        if param not in self.parameters:
            raise GpudseError(f"the model does not use {param!r}; its parameters: {', '.join(self.parameters)}")
        values = list(values)
        if base_point is not None:
            return point_curve(self, self.parameters, param, values, base_point)
        z = self._average_curve(param, values)
        zg, flags = guard(z, self.bounds_, self.median_)
        frame = self._points(pd.DataFrame({p: [self.train_[p].iloc[0]] * len(values) for p in self.parameters}
                                          | {param: values}))
        return pd.DataFrame({param: values, "predicted": inverse_transform(zg, self.transform), "bounded": flags,
                             "extrapolation": self.support_.reasons(frame)})

    def _average_curve(self, param: str, values: list) -> np.ndarray:
        return partial_dependence(self, self.train_[self.parameters], param, values)

    # -- persistence --
    def to_dict(self) -> dict:
        self._fitted()
        k = min(CHECK_ROWS, len(self.train_))
        check = self.linear_predictor(self.train_.iloc[:k])
        training = {c: (self.train_[c].tolist()) for c in self.parameters + [self.response]}
        d = {"schema": LEARNER_SCHEMA, "kind": self.kind, "response": self.response, "transform": self.transform,
             "parameters": self.parameters, "categorical": self.categorical, "settings": dict(self.settings),
             "seed": self.seed, "n": len(self.train_), "bound_margin": BOUND_MARGIN, "training": training,
             "check": [float(v) for v in check]} | self._saved()
        if self.selection is not None:
            d["selection"] = self.selection
        if self.derived:
            d["derived"] = dict(self.derived)
        return d

    @classmethod
    def from_dict(cls, d: Any, source: str = "model") -> "Learner":
        """Validate a saved learner and rebuild its fitted model from the stored arrays (a file of the
        older format: refit it from its rows, and say so); compare with the saved predictions."""
        import time

        from .frozen import FrozenError

        if not isinstance(d, dict) or d.get("schema") not in LEARNER_SCHEMAS:
            raise FitError(f"{source}: not a gpudse learner file (schema {LEARNER_SCHEMA!r})")
        kind = d.get("kind")
        klass = KINDS.get(kind)
        if klass is None or (cls is not Learner and klass is not cls):
            raise FitError(f"{source}: unknown learner kind {kind!r}; known: {', '.join(KINDS)}")
        try:
            params = d["parameters"]
            response = d["response"]
            cat = d.get("categorical", [])
            training = d["training"]
            if (not isinstance(params, list) or not params or not all(isinstance(p, str) for p in params)
                    or len(set(params)) != len(params) or not isinstance(response, str) or response in params):
                raise FitError(f"{source}: 'parameters' must be distinct column names and 'response' another one")
            if not isinstance(cat, list) or not set(cat) <= set(params):
                raise FitError(f"{source}: 'categorical' must list some of the parameters")
            if not isinstance(training, dict) or set(training) != set(params) | {response}:
                raise FitError(f"{source}: 'training' must hold one list per parameter and the response")
            n = len(training[response]) if isinstance(training[response], list) else -1
            limits.current().check("refit_rows", n, f"{source}: {n:,} training rows",
                                   "refit the model on fewer rows")
            frame = {}
            for c in params + [response]:
                col = training[c]
                if not isinstance(col, list) or len(col) != n:
                    raise FitError(f"{source}: training column {c!r} must be a list of {n} values")
                want_text = c in cat
                ok = all(isinstance(v, str) for v in col) if want_text else all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in col)
                if not ok:
                    raise FitError(f"{source}: training column {c!r} must hold only "
                                   f"{'text' if want_text else 'numbers'}")
                frame[c] = pd.Series(col, dtype=object if want_text else float)
            seed = d.get("seed", 0)
            if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 32:
                raise FitError(f"{source}: 'seed' must be a whole number from 0 to 2**32 - 1")
            model = klass(response, params, d.get("transform", "log"), check_settings(kind, d.get("settings"), source),
                          seed)
            if d["schema"] == REFIT_SCHEMA:
                trees = refit_trees(kind, model.settings)
                limits.current().check("refit_work", trees * n,
                                       f"{source}: a file of the older {REFIT_SCHEMA} format is refitted on load: "
                                       f"{trees:,} trees × {n:,} training rows",
                                       "fit the model again on its data (gpudse fit) and save it in the current "
                                       "format, which loads without refitting")
                t0 = time.perf_counter()
                model.fit(pd.DataFrame(frame))
                model.notes.append(f"{source}: a file of the older {REFIT_SCHEMA} format, refitted from its training "
                                   f"rows in {time.perf_counter() - t0:.1f} s; save the model again to load it "
                                   f"without refitting")
            else:
                model._prepare(pd.DataFrame(frame))  # the columns' types say which are categorical
                try:
                    model._thaw(d, source)
                except FrozenError as e:
                    raise FitError(str(e)) from None
            check = d.get("check", [])
            if isinstance(check, list) and check and all(isinstance(v, (int, float)) for v in check):
                k = min(len(check), len(model.train_))
                diff = float(np.max(np.abs(model.linear_predictor(model.train_.iloc[:k]) - np.asarray(check[:k]))))
                if not diff <= 1e-6 * max(1.0, float(np.max(np.abs(check[:k])))):
                    model.notes.append(f"{source}: the loaded model differs from the saved predictions by up to "
                                       f"{diff:.3g} on the transformed scale; refit and save again")
            sel = d.get("selection")
            model.selection = sel if isinstance(sel, dict) else None
            from .derived import check_saved

            try:
                model.derived = check_saved(d.get("derived"), params, source)
            except GpudseError as e:
                raise FitError(str(e)) from None
            return model
        except (KeyError, TypeError) as e:
            raise FitError(f"{source}: malformed learner file ({type(e).__name__}: {e})") from None

    NAMES = {"forest": "random forest", "boosting": "gradient boosting", "hybrid": "stepwise + boosting",
             "ebm": "explainable boosting (EBM)"}

    def summary(self) -> str:
        """One line for a status bar: the learner, its size and response scale ("random forest, 200 trees,
        log response") — a learner has no terms to count."""
        size = {"forest": ("n_estimators", "trees"), "boosting": ("max_iter", "boosting rounds"),
                "hybrid": ("max_iter", "boosting rounds"), "ebm": ("outer_bags", "bags")}.get(self.kind)
        parts = [self.NAMES.get(self.kind, self.kind)]
        if size and size[0] in self.settings:
            n = int(self.settings[size[0]])
            parts.append(f"{n:,} {size[1][:-1] if n == 1 else size[1]}")
        parts.append(f"{self.transform} response" if self.transform != "none" else "raw response")
        return ", ".join(parts)

    def __repr__(self) -> str:
        n = len(self.train_) if hasattr(self, "train_") else 0
        return f"{type(self).__name__}(response={self.response!r}, transform={self.transform!r}, n={n})"


def point_curve(model: Any, parameters: Sequence[str], param: str, values: list,
                base_point: Mapping[str, Any]) -> pd.DataFrame:
    """Predictions along *param* with the other parameters at *base_point* (any model kind)."""
    from .derived import derived_of, inputs

    derived = derived_of(model)
    need = inputs(model, parameters)  # a derived quantity is computed from the parameters it reads
    missing = [p for p in need if p != param and p not in base_point]
    if missing:
        raise GpudseError(f"the base point lacks {', '.join(map(repr, missing))}")
    frame = pd.DataFrame({p: [base_point[p]] * len(values) for p in need if p != param})
    if param in derived:  # along a derived quantity itself: the other parameters held, it set to each value
        frame = pd.DataFrame({**{p: [base_point[p]] * len(values) for p in need}})
    frame[param] = values
    return pd.concat([frame[[param]], model.predict_details(frame)], axis=1)


def partial_dependence(model: Any, X: pd.DataFrame, param: str, values: list) -> np.ndarray:
    """Average transformed-scale prediction over the rows of *X* with *param* set to each value
    (brute-force partial dependence, Friedman 2001 §8.2: one prediction per row and value)."""
    vals = np.asarray(values, dtype=X[param].dtype)
    n = len(X)
    if n == 0 or vals.size == 0:
        return np.full(vals.size, np.nan)
    grid = X.iloc[np.tile(np.arange(n), vals.size)].reset_index(drop=True)
    grid[param] = np.repeat(vals, n)
    from .derived import derived_of

    stale = [c for c in derived_of(model) if c in grid.columns and c != param]
    if stale and param not in derived_of(model):  # recomputed from the changed parameter
        grid = grid.drop(columns=stale)
    pred = np.asarray(model.linear_predictor(grid), dtype=float).reshape(vals.size, n)
    return np.array([np.mean(row) for row in pred])


def _columns(X: pd.DataFrame, parameters: Sequence[str]) -> dict[str, np.ndarray]:
    """The parameter columns of checked points (:meth:`Learner._points`) as arrays."""
    return {p: X[p].to_numpy() for p in parameters}


# ---- trees -------------------------------------------------------------------------------------------
def _tree_pipeline(kind: str, settings: Mapping[str, Any], categorical: Sequence[str], parameters: Sequence[str],
                   seed: int):
    """The scikit-learn estimator, with one-hot columns of the training levels (unseen: all zero)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    if kind == "forest":
        est = RandomForestRegressor(random_state=seed, n_jobs=1, **settings)
    else:
        est = HistGradientBoostingRegressor(random_state=seed, early_stopping=False, **settings)
    if not categorical:
        return est
    onehot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
    enc = ColumnTransformer([("levels", onehot, list(categorical))], remainder="passthrough")
    return make_pipeline(enc, est)


PARTS = 4  # a forest or a boosting fit is grown in this many parts, a Stop checked between them


def _fit_in_parts(pipeline: Any, kind: str, data: Any, z: np.ndarray, parts: int | None = None) -> None:
    """Fit a forest (trees) or histogram boosting (rounds) in *parts* with warm_start — the same model
    as one fit (scikit-learn draws the same seeds) — calling :func:`cancel.check` between parts, so a
    Stop ends a validation within a fraction of a fit (about a second each on a 2-core machine)."""
    from .cancel import check

    est = pipeline[-1] if hasattr(pipeline, "steps") else pipeline
    size = "n_estimators" if kind == "forest" else "max_iter"
    full = int(est.get_params()[size])
    n_parts = PARTS if parts is None else parts
    steps = sorted({max(1, round(full * (i + 1) / n_parts)) for i in range(n_parts)})
    est.set_params(warm_start=len(steps) > 1)
    for i, n in enumerate(steps):
        if i:
            check()
        est.set_params(**{size: n})
        pipeline.fit(data, z)
    est.set_params(warm_start=False)


class TreeLearner(Learner):
    """Random forest (``forest``) or histogram gradient boosting (``boosting``)."""

    def _fit(self, X: pd.DataFrame, z: np.ndarray) -> None:
        self.estimator_ = _tree_pipeline(self.kind, self.settings, self.categorical, self.parameters, self.seed)
        _fit_in_parts(self.estimator_, self.kind, X if self.categorical else X.to_numpy(float), z)

    def _freeze(self) -> None:
        from .frozen import freeze_trees

        self.frozen_ = freeze_trees(self.estimator_, self.parameters, self.categorical)


class ForestLearner(TreeLearner):
    kind = "forest"


class BoostingLearner(TreeLearner):
    kind = "boosting"


class HybridLearner(Learner):
    """The stepwise model (robust default) plus gradient boosting on its transformed-scale residuals."""

    kind = "hybrid"

    def _fit(self, X: pd.DataFrame, z: np.ndarray) -> None:
        data = X.assign(**{self.response: self.train_[self.response].to_numpy()})
        self.stepwise_ = stepwise_fit(data, self.response, transform=self.transform)
        resid = z - self.stepwise_.linear_predictor(X)
        self.estimator_ = _tree_pipeline("boosting", self.settings, self.categorical, self.parameters, self.seed)
        _fit_in_parts(self.estimator_, "boosting", X if self.categorical else X.to_numpy(float), resid)

    def _freeze(self) -> None:
        from .frozen import freeze_trees

        self.frozen_ = freeze_trees(self.estimator_, self.parameters, self.categorical)

    def _saved(self) -> dict:
        return super()._saved() | {"stepwise": self.stepwise_.to_dict()}

    def _thaw(self, d: Mapping[str, Any], source: str) -> None:
        super()._thaw(d, source)
        sw = d.get("stepwise")
        if not isinstance(sw, dict):
            raise FitError(f"{source}: a hybrid model file needs its 'stepwise' part")
        self.stepwise_ = StepwiseModel.from_dict(sw, source=f"{source} (stepwise part)")
        if sw.get("response") != self.response or set(self.stepwise_.parameters) - set(self.parameters):
            raise FitError(f"{source}: the stepwise part must model {self.response!r} from the model's parameters")

    def _raw(self, X: pd.DataFrame) -> np.ndarray:
        # the spline part has no column for a level it never saw: it takes the most common training
        # level there (the point is flagged as extrapolation); the boosting part sees all-zero dummies
        S = X.copy()
        for p in self.categorical:
            known = self.support_.params[p].levels
            unseen = ~S[p].isin(known)
            if unseen.any():
                S.loc[unseen, p] = self.train_[p].mode().iloc[0]
        base = self.stepwise_.linear_predictor(S)
        return base + super()._raw(X)


# ---- EBM ---------------------------------------------------------------------------------------------
class EBMLearner(Learner):
    """InterpretML's ExplainableBoostingRegressor: intercept + shape functions + pair surfaces."""

    kind = "ebm"

    def _libraries(self) -> None:
        import interpret.glassbox  # noqa: F401

    def _fit(self, X: pd.DataFrame, z: np.ndarray) -> None:
        import warnings

        from interpret.glassbox import ExplainableBoostingRegressor

        types = ["nominal" if p in self.categorical else "continuous" for p in self.parameters]
        self.estimator_ = ExplainableBoostingRegressor(feature_names=list(self.parameters), feature_types=types,
                                                       random_state=self.seed, n_jobs=1, **self.settings)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.estimator_.fit(X, z)

    def _freeze(self) -> None:
        from .frozen import freeze_ebm

        self.frozen_ = freeze_ebm(self.estimator_, self.parameters)

    def additive_terms(self, levels: Mapping[str, Sequence[Any]]
                       ) -> tuple[float, list[tuple[tuple[str, ...], np.ndarray]]]:
        """The model as intercept + one table per term over the given *levels* of each parameter,
        on the transformed scale: a main term's table has one entry per level of its parameter, a
        pair's is a matrix (levels of the first × levels of the second). Summing the intercept and
        each term's entry at a point gives :meth:`linear_predictor` there (before the guard)."""
        self._fitted()
        missing = [p for p in self.parameters if p not in levels or len(levels[p]) == 0]
        if missing:
            raise GpudseError(f"levels are missing for {', '.join(map(repr, missing))}")
        ebm = self.frozen_
        out = []
        for t, feats in enumerate(ebm.term_features):
            names = tuple(self.parameters[i] for i in feats)
            grids = [list(levels[p]) for p in names]
            mesh = np.meshgrid(*[np.arange(len(g)) for g in grids], indexing="ij")
            size = mesh[0].size
            frame = pd.DataFrame({p: [levels[p][0]] * size for p in self.parameters})
            for p, g, m in zip(names, grids, mesh, strict=True):
                frame[p] = [g[i] for i in m.ravel()]
            points = self._points(frame)
            scores = ebm.eval_terms(_columns(points, self.parameters), len(points))[:, t]
            out.append((names, np.asarray(scores, dtype=float).reshape(mesh[0].shape)))
        return ebm.intercept, out

    def _average_curve(self, param: str, values: list) -> np.ndarray:
        """EBM's shape function of *param* (plus the intercept); pair surfaces are not included."""
        levels = {p: [self.train_[p].iloc[0]] for p in self.parameters} | {param: values}
        intercept, terms = self.additive_terms(levels)
        z = np.full(len(values), intercept)
        for names, table in terms:
            if names == (param,):
                z += table
        return z


KINDS: dict[str, type[Learner]] = {"forest": ForestLearner, "boosting": BoostingLearner, "hybrid": HybridLearner,
                                   "ebm": EBMLearner}


def fit_learner(kind: str, data: pd.DataFrame, response: str, params: Sequence[str] | None = None,
                transform: str = "log", seed: int = 0, settings: Mapping[str, Any] | None = None) -> Learner:
    """Fit one learner of *kind* on a results table (every column but the response by default)."""
    if kind not in KINDS:
        raise GpudseError(f"unknown learner {kind!r}; choose {', '.join(KINDS)}")
    if response not in data.columns:
        raise FitError(f"response column {response!r} is not in the data; columns: {', '.join(map(str, data.columns))}")
    params = list(params) if params else [c for c in data.columns if c != response]
    return KINDS[kind](response, params, transform, settings, seed).fit(data)


# ---- the stepwise models through the same interface --------------------------------------------------
# The paper model is Stargazer 1.0 as released: its settings are stepwise.PAPER_SETTINGS, the one list of
# them. Of the search's settings these may also be given with it (the thresholds and their rule, where the
# search stops, forced terms, the response scale, the guard's margin); any other one must keep the value
# PAPER_SETTINGS gives it, or be left out.
PAPER_TUNABLE = ("theta", "phi", "threshold_rule", "max_terms", "forced", "response_transform", "bound_margin")


def paper_conflicts(given: Mapping[str, Any]) -> list[str]:
    """The settings in *given* that the paper model fixes otherwise (empty: *given* suits it)."""
    from .stepwise import PAPER_SETTINGS

    return [k for k, v in given.items() if k not in PAPER_TUNABLE and not (k in PAPER_SETTINGS
                                                                          and PAPER_SETTINGS[k] == v)]


def stepwise_settings(kind: str, max_order: int | None = None,
                      given: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """Estimator settings of a stepwise model: ``stepwise`` is the estimator's robust defaults updated
    by *given*; ``paper`` is Stargazer as written (``PAPER_SETTINGS``) updated by *given*, which must
    suit it (:func:`paper_conflicts`); under the ``absolute`` threshold rule (the paper text's reading,
    §5.2) θ and φ default to ``ABSOLUTE_THRESHOLD``. *max_order* (2 or 3) overrides the highest
    interaction order, ``None`` keeps the model's own. ``None`` when the model cannot be fitted so
    (``paper`` tries pairs only)."""
    from .stepwise import ABSOLUTE_THRESHOLD, PAPER_SETTINGS

    given = dict(given or {})
    if kind != "paper":
        return given | ({} if max_order is None else {"max_order": max_order})
    if max_order not in (None, 2):
        return None
    bad = paper_conflicts(given)
    if bad:
        raise FitError(f"{', '.join(bad)}: the paper model is Stargazer 1.0 as released, with its own knots, splines "
                       f"and pairwise search; use the stepwise model to tune {'those' if len(bad) > 1 else 'that'}")
    kw = dict(PAPER_SETTINGS)
    if given.get("threshold_rule") == "absolute":
        kw.update(theta=ABSOLUTE_THRESHOLD, phi=ABSOLUTE_THRESHOLD)
    return kw | given


def curve(model: Any, param: str, values: Sequence[Any], base_point: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Response curve of any model kind (see :meth:`Learner.curve`); a stepwise model's average
    curve is its partial dependence over the rows it was fitted on, which it does not keep, so it
    needs a *base_point*."""
    if isinstance(model, Learner):
        return model.curve(param, values, base_point)
    if base_point is None:
        raise GpudseError("a stepwise model's curve needs a base point (the other parameters' values)")
    return point_curve(model, list(model.parameters), param, list(values), base_point)


def stepwise_fit(data: pd.DataFrame, response: str, kind: str = "stepwise", max_order: int | None = None,
                 transform: str | None = "log", **kw: Any) -> StepwiseModel:
    """Fit a stepwise model (``stepwise`` or ``paper``) with the settings of :func:`stepwise_settings`
    (*kw*; ``callback`` is passed to the search). Parameter columns constant in *data* are left out
    with a note (likely in a small draw). *transform* applies to ``stepwise`` (None: the estimator's
    own choice); the ``paper`` model keeps its raw scale unless *kw* gives ``response_transform``."""
    from .stepwise import fit_stepwise

    callback = kw.pop("callback", None)
    blend = kw.pop("blend", "forest")
    if blend not in BLENDS:
        raise FitError(f"blend must be one of {', '.join(BLENDS)} (got {blend!r})")
    settings = stepwise_settings(kind, max_order, kw)
    if settings is None:
        raise FitError(f"{kind} cannot have three-way interactions (Stargazer 1.0 tries pairs only)")
    cols = [c for c in data.columns if c != response and data[c].nunique() > 1]
    constant = [str(c) for c in data.columns if c != response and c not in cols]
    dropped: list = []
    if "forced" in settings:  # a term on a column constant in this draw is left out, an unknown name refused
        dropped = [t for t in settings["forced"] if any(p.strip() in constant for p in str(t).split(":"))]
        settings["forced"] = [t for t in settings["forced"] if t not in dropped]
    model = fit_stepwise(data[cols + [response]], response, callback=callback,
                         transform=None if kind == "paper" else transform, **settings)
    if constant:
        model.notes.append(f"column(s) {', '.join(constant)} constant in the data: left out"
                           + (f", with the forced term(s) {', '.join(map(str, dropped))}" if dropped else ""))
    if kind == "stepwise":
        z = transform_response(data[response].to_numpy(dtype=float), model.transform, response)
        if model.bound_margin is not None:  # the default's guard far outside the data
            from .envelope import Neighbours

            model.neighbours = Neighbours.build(data, z, model.bases)
        if blend == "forest":  # with or without the bound: the blend is the prediction, not a guard
            model.fallback = fit_fallback(model, data, z)
            if model.fallback is not None:
                model.notes.append(model.fallback.note(model, data))
        model.settings["blend"] = "forest" if model.fallback is not None else "off"
    return model


def fit_fallback(model: Any, data: pd.DataFrame, z: np.ndarray, seed: int = 0) -> Fallback | None:
    """The blended forest of *model* on its training rows *data* (with their transformed responses *z*), or
    None when the model has no residual variance to weigh it against (no degrees of freedom, or an exact fit:
    a noise-free response the equation follows to rounding)."""
    noise = model.noise
    if not noise or not noise.get("sigma") or not np.isfinite(noise["sigma"]) or not model.bases:
        return None
    from sklearn.ensemble import RandomForestRegressor

    from .frozen import freeze_trees

    X = model._with_derived(data)
    params = list(model.bases)
    categorical = [p for p in params if not pd.api.types.is_numeric_dtype(X[p])]
    pipe = _tree_pipeline("forest", {"n_estimators": TREES}, categorical, params, seed)
    est = pipe[-1] if hasattr(pipe, "steps") else pipe
    est.set_params(oob_score=True, bootstrap=True)
    if not isinstance(est, RandomForestRegressor):  # pragma: no cover - _tree_pipeline's forest
        return None
    pipe.fit(X[params] if categorical else X[params].to_numpy(float), z)
    oob = np.asarray(est.oob_prediction_, dtype=float)
    ok = np.isfinite(oob)
    s2 = float(noise["sigma"]) ** 2
    if not ok.any() or s2 <= EXACT ** 2 * float(np.var(z)):  # an exact fit: its residuals are rounding
        return None
    c = max(float(np.mean((oob[ok] - z[ok]) ** 2)) / s2 - 1.0, C_MIN)
    return Fallback(freeze_trees(pipe, params, categorical), c, categorical)
