"""The stepwise estimator's parameters, declared once with their constraints (scikit-learn's
``_parameter_constraints``, checked by ``BaseEstimator._validate_params`` at fit), and the message a bad value
gets: the parameter, what it must be (read from the same table) and the value given.

The papers' vocabulary: θ, φ (Stargazer §5.2, Algorithm 1's thresholds), φ3 (three-way terms), k knots
(Lee & Brooks's restricted cubic splines), the criterion (adjusted R², AIC, BIC or Lee & Brooks's F-test).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

from sklearn.utils._param_validation import Interval, InvalidParameterError, Options, StrOptions, make_constraint

from ...choices import (
    CRITERIA,
    FIT_TRANSFORMS,
    INTERACTION_FORMS,
    MAX_ORDERS,
    ROBUST_FITS,
    SPLINE_NORMS,
    THRESHOLD_RULES,
)
from ...errors import GpudseError
from .. import encoding
from ..fitted import UNSEEN, FitError
from ..splines import PLACEMENTS


class Choice(StrOptions):
    """One of the given words, kept in the order given (for the message)."""

    def __init__(self, options: tuple[str, ...]):
        super().__init__(set(options))
        self.ordered = tuple(options)

    def __str__(self) -> str:
        return f"one of {', '.join(self.ordered)}"


class Number(Interval):
    """A finite number (not True/False) in an interval."""

    def is_satisfied_by(self, val: Any) -> bool:
        return not isinstance(val, bool) and super().is_satisfied_by(val) and math.isfinite(val)

    def __str__(self) -> str:
        whole = self.type is Integral
        what = "a whole number" if whole else ("a non-negative number" if self.left == 0 else "a finite number")
        if whole and self.left is not None:
            what += f" of at least {self.left}" if self.left else " ≥ 0"
        return what


class OneOf(Options):
    """One of the given whole numbers (not True/False)."""

    def is_satisfied_by(self, val: Any) -> bool:
        return not isinstance(val, bool) and super().is_satisfied_by(val)

    def __str__(self) -> str:
        return " or ".join(map(str, sorted(self.options)))


FINITE = Number(Real, None, None, closed="neither")
BOOL = ["boolean"]

# parameter -> the values it may take (scikit-learn's constraint objects); the order is the signature's
PARAMETER_CONSTRAINTS: dict[str, list] = {
    "response": [str, None],
    "params": ["array-like", None],
    "theta": [FINITE],
    "phi": [FINITE],
    "phi3": [FINITE],
    "criterion": [Choice(CRITERIA)],
    "compare": [Choice(("r2", "adj_r2"))],
    "knots": [Integral, Mapping, "array-like"],
    "knot_placement": [Choice(PLACEMENTS)],
    "norm": [Choice(SPLINE_NORMS)],
    "interactions": [Choice(INTERACTION_FORMS)],
    "response_transform": [Choice(FIT_TRANSFORMS)],
    "max_terms": [Number(Integral, 1, None, closed="left"), None],
    "forced": ["array-like"],
    "search": BOOL,
    "categorical": ["array-like"],
    "scale": [str, Mapping],
    "categorical_levels": [Number(Integral, 0, None, closed="left")],
    "max_order": [OneOf(Integral, set(MAX_ORDERS))],
    "revisit": BOOL,
    "bound_margin": [Number(Real, 0, None, closed="left"), None],
    "lookahead": BOOL,
    "prune": BOOL,
    "unseen": [Choice(UNSEEN)],
    "threshold_rule": [Choice(THRESHOLD_RULES)],
    "reference": BOOL,
    "powers_of_two": BOOL,
    "robust": [Choice(ROBUST_FITS)],
    "cells": BOOL,
    "row_guard": BOOL,
    "count_pairs": BOOL,
}

# parameters whose bad value is named "unknown <noun>" (the word a user knows them by)
NOUNS = {"criterion": "criterion", "interactions": "interaction form", "knot_placement": "knot placement",
         "response_transform": "transform", "threshold_rule": "threshold rule"}
DESCRIBED = {"boolean": "True or False", "array-like": "a list", "str": "a string", "Mapping": "a mapping",
             "Integral": "a whole number", "None": "None"}


def describe(constraints: list) -> str:
    """What a parameter must be, in words, from its constraints."""
    words = []
    for c in constraints:
        if isinstance(c, (Choice, Number, OneOf)):
            words.append(str(c))
        else:
            key = "None" if c is None else getattr(c, "__name__", c)
            words.append(DESCRIBED.get(key, str(make_constraint(c))))
    return " or ".join(words)


def message(name: str, value: Any) -> str:
    """The message for a bad *value* of parameter *name*."""
    constraints = PARAMETER_CONSTRAINTS[name]
    if name in NOUNS and len(constraints) == 1 and isinstance(constraints[0], Choice):
        return f"unknown {NOUNS[name]} {value!r}; choose {', '.join(constraints[0].ordered)}"
    return f"{name} must be {describe(constraints)} (got {value!r})"


def validate(est: Any) -> None:
    """Check every parameter of *est* against :data:`PARAMETER_CONSTRAINTS` (``est._validate_params()``) and the
    rules between parameters; a bad one is a :class:`.FitError` naming it.

    Parameters
    ----------
    est : StepwiseRegression

    Raises
    ------
    FitError
        ``unknown criterion 'r2'; choose adjr2, aic, bic, ftest``, ``theta must be a finite number (got nan)``, …
    """
    try:
        est._validate_params()
    except InvalidParameterError:
        params = est.get_params(deep=False)
        for name, constraints in PARAMETER_CONSTRAINTS.items():
            if not any(make_constraint(c).is_satisfied_by(params[name]) for c in constraints):
                raise FitError(message(name, params[name])) from None
        raise
    if est.reference and est.response_transform == "auto":
        raise FitError("Stargazer 1.0 models the response as given: choose the transform none (its own), log "
                       "or sqrt, not auto")
    try:
        encoding.check_scale_setting(est.scale)
    except GpudseError as e:
        raise FitError(str(e)) from None
