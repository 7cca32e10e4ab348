"""The training data of a stepwise fit, checked: the parameter frame and the response (Stargazer §5.2 fits
one response over the design parameters; Lee & Brooks §3 on the samples a regression needs). Bad input gets a
message naming the column, the rows and what to do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...errors import suggest
from ..fitted import FitError, _rows
from .transform import Data


def check_response(data: pd.DataFrame, response: str) -> None:
    """The response column is there and is not a True/False column (which would be fitted as 1/0).

    Parameters
    ----------
    data : DataFrame
    response : str

    Raises
    ------
    FitError
        Naming the column (and the nearest name when it is missing).
    """
    from ...dataio import is_boolean_column

    if response not in data.columns:
        hint = suggest(str(response), list(map(str, data.columns)))
        raise FitError(f"response column {response!r} is not in the data"
                       + (f" (did you mean {hint!r}?)" if hint else "")
                       + f"; columns: {', '.join(map(str, data.columns))}")
    if is_boolean_column(data[response]):
        raise FitError(f"response column {response!r} holds True/False values, not a measurement: a model of it would "
                       f"fit them as 1/0; choose a numeric column as the response")


def training_data(est: Any, X: Any, y: Any, constant_ok: bool = False) -> Data:
    """The parameter frame (string column names, response left out), response values, parameter names and
    response name of ``est.fit(X, y)``; sets the scikit-learn attributes ``n_features_in_`` and
    ``feature_names_in_`` of *est*. A constant parameter is an error unless *constant_ok* (Stargazer 1.0 leaves
    it out with a note).

    Parameters
    ----------
    est : StepwiseRegression
    X : array-like or DataFrame
    y : array-like or None
        None: the response is ``est.response``'s column of the frame *X*.
    constant_ok : bool, default False

    Returns
    -------
    Data
        ``(X, y, names, response)``.

    Raises
    ------
    FitError
        Naming the column, the rows and what to do.
    """
    X, yv, raw = _frame(est, X, y)
    col = est.response or "response"
    if len(yv) != len(X):
        raise FitError(f"{len(X)} rows of parameters but {len(yv)} responses")
    bad = np.flatnonzero(~np.isfinite(yv))
    if bad.size:
        raise FitError(f"column {col!r}: rows {_rows(bad)} are missing, not numbers, NaN or infinite "
                       f"(e.g. {raw.iloc[int(bad[0])]!r}); fix or drop those rows")
    if params := est.params:
        missing = [p for p in params if p not in X.columns]
        if missing:
            raise FitError(f"unknown column(s) {', '.join(map(repr, missing))}; columns: "
                           f"{', '.join(map(str, X.columns))}")
        names = list(params)
    else:
        names = list(X.columns)
    if not names:
        raise FitError("no parameter columns to model")
    for p in names:
        if X[p].isna().any():
            raise FitError(f"column {p!r}: rows {_rows(np.flatnonzero(X[p].isna().to_numpy()))} are empty")
    if len(yv) < 3:
        raise FitError(f"only {len(yv)} rows ({len(yv)} sample{'s' if len(yv) != 1 else ''}); a regression "
                       f"needs more rows than terms")
    const = [p for p in names if X[p].nunique() < 2]
    if const and not constant_ok:
        raise FitError(f"column(s) {', '.join(map(repr, const))} are constant, so they cannot explain "
                       f"anything; leave them out (--params) or sample more widely")
    return Data(X, yv, names, col)


def _frame(est: Any, X: Any, y: Any) -> tuple[pd.DataFrame, np.ndarray, pd.Series]:
    """(parameter frame, response values, the response as given) from arrays or a DataFrame."""
    from sklearn.utils.validation import _check_feature_names, validate_data

    cls = type(est).__name__
    if not isinstance(X, pd.DataFrame):
        if y is None:
            raise FitError(f"{cls} requires y to be passed, but the target y is None; give y, or a DataFrame "
                           f"and the response column (response=... or --response COL)")
        Xa, ya = validate_data(est, X, y, dtype="numeric", y_numeric=True)
        est._columns_ = [f"x{i}" for i in range(Xa.shape[1])]
        yv = np.asarray(ya, dtype=float)
        return pd.DataFrame(Xa, columns=est._columns_), yv, pd.Series(yv)
    if y is None:
        if not est.response:
            raise FitError(f"{cls} requires y to be passed, but the target y is None; say which column is "
                           f"the response (response=... or --response COL)")
        check_response(X, est.response)
        raw = X[est.response]
        if isinstance(raw, pd.DataFrame):
            raise FitError(f"the data have more than one column named {est.response!r}; rename them")
        yv = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        X = X.drop(columns=[est.response])
    else:
        raw = pd.Series(np.asarray(y).ravel()) if not isinstance(y, pd.Series) else y.reset_index(drop=True)
        yv = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    if X.columns.duplicated().any():
        dup = X.columns[X.columns.duplicated()].unique().tolist()
        raise FitError(f"the data have more than one column named {', '.join(map(repr, dup))}; rename them")
    _check_feature_names(est, X, reset=True)
    est.n_features_in_ = X.shape[1]
    est._columns_ = [str(c) for c in X.columns]
    return X.set_axis(est._columns_, axis=1), yv, raw
