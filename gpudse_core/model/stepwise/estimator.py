"""Stargazer Algorithm 1 (§5.2) and its robust default as a scikit-learn estimator (:class:`StepwiseRegression`)
and the one-call fit on a results table (:func:`fit_stepwise`).

The estimator validates its parameters (:mod:`.params`) and its data (:mod:`.data`), then runs the layers
from the outside in: level cells (:mod:`.level_cells`) around the Huber rounds (:mod:`.robust`) around the
automatic response transform (:mod:`.transform`) around the search itself (:mod:`.search`); or, with
``reference=True``, the authors' released implementation (:mod:`..reference`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin

from ..fitted import DEFAULT_BOUND_MARGIN, FitError, StepwiseModel, note_constant_response
from ..trace import TraceStep
from .data import check_response, training_data
from .finish import recorded
from .level_cells import with_cells, without_cells
from .ols import OLSState
from .params import PARAMETER_CONSTRAINTS, validate
from .scores import loo_errors, loo_path
from .transform import Data, Steps


class StepwiseRegression(RegressorMixin, BaseEstimator):
    """Stargazer Algorithm 1 as a scikit-learn estimator (``fit``/``predict``/``get_params``).

    Every parameter is keyword-only; :data:`.PAPER_SETTINGS` gives the paper's exact reading
    (``StepwiseRegression(**PAPER_SETTINGS)``) and :data:`.ALGORITHM1_SETTINGS` Algorithm 1 as its text reads.

    Parameters
    ----------
    response : str, optional
        The response column when ``fit`` is given one DataFrame.
    params : list of str, optional
        The parameter columns to model (default: every column but the response).
    theta, phi, phi3 : float, default 0.001
        Thresholds θ (main effects), φ (pairs) and φ3 (three-way terms), read by the criterion.
    criterion : {"ftest", "adjr2", "aic", "bic"}, default "ftest"
        How a candidate is accepted: its partial F-test p-value below the threshold (Lee & Brooks eq. 10, the
        default); its adjusted R² gaining more than the threshold (the paper's); its AIC or BIC dropping by more.
    compare : {"r2", "adj_r2"}, default "r2"
        With ``adjr2``: the gain is measured against the model's R² (Algorithm 1) or its adjusted R².
    knots : int, list or mapping, default 6
        Harrell's k, a list of knots, or a mapping parameter → k or knot list with an optional ``"__default__"``.
    knot_placement : {"distinct", "even", "quantile"}, default "distinct"
        Table 1's quantiles of the distinct values on the modelling scale, Stargazer's even spacing, or Lee &
        Brooks's quantiles as rms places them.
    norm : {"harrell", "none"}, default "harrell"
        Scaling of the restricted cubic spline columns (:mod:`..splines`).
    interactions : {"adaptive", "restricted", "full"}, default "adaptive"
        Restricted products (rms' ``%ia%``), every product, or restricted with F-tested doubly non-linear parts.
    response_transform : {"auto", "none", "log", "sqrt"}, default "auto"
        The response scale; ``auto`` chooses by leave-one-out error.
    max_terms : int, optional
        The most terms the model may have.
    forced : list of str, default ()
        Terms that start the model (e.g. Stargazer §7.4's ``["simd", "blk", "simd:blk"]``).
    search : bool, default True
        False: fit the forced terms only.
    categorical : list of str, default ()
        Parameters modelled as categorical.
    scale : str or mapping, default "auto"
        ``auto``, ``linear``, or a mapping parameter → ``log2``/``linear`` (:mod:`..encoding`).
    categorical_levels : int, default 3
        Numeric parameters with at most this many distinct values get a categorical term.
    max_order : {2, 3}, default 3
        2: pairs (Algorithm 1); 3: also three-way terms.
    revisit, lookahead, prune : bool, default True
        Steps 4, 5 and 7 of the package docstring.
    bound_margin : float or None, default 0.25
        Predictions are bounded to the training response range widened by this share of it on each side.
    unseen : {"lower-order", "model"}, default "lower-order"
        How a term with a full part predicts an unseen level combination
        (:meth:`.StepwiseModel.unseen_corrections`).
    threshold_rule : {"absolute", "relative"}, default "absolute"
        With ``adjr2``: the gain must exceed θ/φ, or reach θ/φ times the model's R².
    reference : bool, default False
        True: Stargazer 1.0 exactly (:mod:`..reference`); it uses θ, φ, ``threshold_rule``, ``params``,
        ``forced``, ``search``, ``max_terms``, ``response_transform`` other than auto, ``bound_margin`` and
        ``unseen``, and its own knots, basis and interactions.
    powers_of_two : bool, default True
        A ``pow2(x)`` column for whole-number parameters that mix powers of two with other values.
    robust : {"huber", "none"}, default "huber"
        The search rerun on Huber pseudo-observations (:mod:`.robust`), or least squares.
    cells : bool, default True
        Level cells for corners no smooth curve follows (:mod:`.level_cells`).
    row_guard : bool, default True
        Judge an interaction without the one training row that carries most of its gain (step 11).
    count_pairs : bool, default True
        When no main effect (nor the look-ahead) passes θ, offer two count parameters with their interaction
        (``cu_per_sa + sa + cu_per_sa:sa``) as one block (step 12); False is Algorithm 1's reading: only
        interactions of chosen parameters.

    Attributes
    ----------
    model_ : StepwiseModel
        The fitted model (its ``trace`` holds every step, Stargazer Table 1).
    n_features_in_ : int
        Number of parameter columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Their names, for frames with string column names.

    References
    ----------
    Jia, Shaw, Martonosi, "Stargazer: Automated regression-based GPU design space exploration", ISPASS 2012.
    Lee, Brooks, "Regression modeling strategies for microarchitectural performance and power prediction",
    Harvard TR-08-06, 2006. Huber, *Robust Statistics*, 1981, §7.8.
    """

    _parameter_constraints: dict = PARAMETER_CONSTRAINTS

    def __init__(self, *, response: str | None = None, params: Sequence[str] | None = None, theta: float = 0.001,
                 phi: float = 0.001, phi3: float = 0.001, criterion: str = "ftest", compare: str = "r2",
                 knots: int | Mapping[str, Any] = 6, knot_placement: str = "distinct", norm: str = "harrell",
                 interactions: str = "adaptive", response_transform: str = "auto", max_terms: int | None = None,
                 forced: Sequence[str] = (), search: bool = True, categorical: Sequence[str] = (),
                 scale: str | Mapping[str, str] = "auto", categorical_levels: int = 3, max_order: int = 3,
                 revisit: bool = True, bound_margin: float | None = DEFAULT_BOUND_MARGIN, lookahead: bool = True,
                 prune: bool = True, unseen: str = "lower-order", threshold_rule: str = "absolute",
                 reference: bool = False, powers_of_two: bool = True, robust: str = "huber", cells: bool = True,
                 row_guard: bool = True, count_pairs: bool = True):
        self.response = response
        self.params = params
        self.theta = theta
        self.phi = phi
        self.phi3 = phi3
        self.criterion = criterion
        self.compare = compare
        self.knots = knots
        self.knot_placement = knot_placement
        self.norm = norm
        self.interactions = interactions
        self.response_transform = response_transform
        self.max_terms = max_terms
        self.forced = forced
        self.search = search
        self.categorical = categorical
        self.scale = scale
        self.categorical_levels = categorical_levels
        self.max_order = max_order
        self.revisit = revisit
        self.bound_margin = bound_margin
        self.lookahead = lookahead
        self.prune = prune
        self.unseen = unseen
        self.threshold_rule = threshold_rule
        self.reference = reference
        self.powers_of_two = powers_of_two
        self.robust = robust
        self.cells = cells
        self.row_guard = row_guard
        self.count_pairs = count_pairs

    # -- scikit-learn protocol (get_params/set_params/score come from BaseEstimator/RegressorMixin) --
    def fit(self, X: Any, y: Any = None, callback: Callable[[TraceStep], None] | None = None) -> StepwiseRegression:
        """Fit the model.

        Parameters
        ----------
        X : array-like or DataFrame
            The parameters; a DataFrame may hold the response column (``response=``) when *y* is None.
        y : array-like, optional
            The response.
        callback : callable, optional
            Called with every :class:`.TraceStep` as the search makes it.

        Returns
        -------
        self
        """
        from ..threads import limited

        with limited():  # BLAS threads that never outnumber the free cores (model/threads.py: 7x on 2 cores)
            for step in self.iter_fit(X, y):
                if callback is not None:
                    callback(step)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions of the fitted model for the designs *X* (guarded by its support and bound).

        Returns
        -------
        ndarray of shape (n,)
        """
        from sklearn.utils.validation import _check_feature_names, check_is_fitted, validate_data

        check_is_fitted(self, "model_")
        if isinstance(X, pd.DataFrame):
            names = getattr(self, "feature_names_in_", None)
            if names is not None and X.shape[1] > len(names) and set(names) <= set(X.columns):
                X = X[list(names)]  # extra columns (the response, an index) are not features
            _check_feature_names(self, X, reset=False)
            if names is None:  # fitted on unnamed (or non-text) columns: match them by position
                if X.shape[1] != self.n_features_in_:
                    raise FitError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                                   f"{self.n_features_in_} features as input")
                X = X.set_axis(self._columns_, axis=1)
            return self.model_.predict(X)
        Xa = validate_data(self, X, reset=False, dtype="numeric")
        return self.model_.predict(pd.DataFrame(Xa, columns=self._columns_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags

    def iter_fit(self, X: Any, y: Any = None) -> Iterator[TraceStep]:
        """Fit, yielding one :class:`.TraceStep` per Table 1 row; sets ``model_`` at the end.

        Parameters
        ----------
        X : array-like or DataFrame
        y : array-like, optional

        Yields
        ------
        TraceStep
        """
        validate(self)
        settings = self.get_params(deep=False)
        if self.reference:
            yield from self._reference(X, y, settings)
            return
        data = training_data(self, X, y)
        fit = yield from self._layers(settings, data)
        self._loo_error_ = fit.loo_error
        self.model_ = fit.model

    def _layers(self, settings: dict, data: Data) -> Steps:
        if self.cells and self.search:
            return (yield from with_cells(settings, data))
        return (yield from without_cells(settings, data))

    def _reference(self, X: Any, y: Any, settings: dict) -> Iterator[TraceStep]:
        """Stargazer 1.0 exactly (:mod:`..reference`)."""
        from ..reference import ReferenceSearch

        self._loo_error_ = None
        data = training_data(self, X, y, constant_ok=True)
        search = ReferenceSearch(
            data.X, data.y, data.names, data.response, theta=self.theta, phi=self.phi, rule=self.threshold_rule,
            transform=self.response_transform, forced=self.forced, search=self.search, max_terms=self.max_terms,
            bound_margin=self.bound_margin, unseen=self.unseen, settings=recorded(settings))
        yield from search.steps()
        self.model_ = search.model

    # -- the leave-one-out scores the layers choose by (:mod:`.scores`), at this estimator's settings --
    def _loo_errors(self, A: np.ndarray, working: np.ndarray, y: np.ndarray, transform: str,
                    z: np.ndarray) -> np.ndarray:
        """Leave-one-out errors of least squares on *working* with the columns *A* (:func:`.scores.loo_errors`)."""
        return loo_errors(A, working, y, transform, z, self.bound_margin)

    def _loo(self, st: OLSState, z: np.ndarray, y: np.ndarray, marks: list[tuple[int, int, int]],
             floor: int) -> list[tuple[tuple[int, int, int], float, float]]:
        """Leave-one-out errors of the prefixes of a selection path (:func:`.scores.loo_path`)."""
        return loo_path(st, z, y, marks, floor, self.response_transform, self.bound_margin)


def fit_stepwise(data: pd.DataFrame, response: str, callback: Callable[[TraceStep], None] | None = None,
                 transform: str | None = None, **kw: Any) -> StepwiseModel:
    """Fit Algorithm 1 on a results table.

    Parameters
    ----------
    data : DataFrame
        The parameters and the response column.
    response : str
        The response column.
    callback : callable, optional
        Called with every :class:`.TraceStep`.
    transform : str, optional
        The response transform (``response_transform`` of the estimator).
    **kw
        Any other :class:`StepwiseRegression` parameter.

    Returns
    -------
    StepwiseModel
        The model; its ``trace`` holds every step.

    References
    ----------
    Stargazer §5.2, Algorithm 1 and Table 1.
    """
    check_response(data, response)
    if transform is not None:
        kw["response_transform"] = transform
    return note_constant_response(StepwiseRegression(response=response, **kw).fit(data, callback=callback).model_,
                                  data, response)
