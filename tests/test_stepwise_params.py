"""The stepwise estimator's parameters: keyword-only, declared once in a constraints table (scikit-learn's
``_parameter_constraints``), and a bad value is refused at fit with a message naming the parameter, what it
must be and the value given; and the package keeps its functions short (the search as named steps)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpudse_core.model.stepwise import FitError, StepwiseRegression
from gpudse_core.model.stepwise.params import PARAMETER_CONSTRAINTS

PACKAGE = Path(__file__).resolve().parent.parent / "gpudse_core" / "model" / "stepwise"


def small() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"a": rng.choice([1, 2, 4, 8], 40), "b": rng.choice([1, 2, 3], 40)})
    return d.assign(y=1.0 + d.a + 0.5 * d.b + rng.normal(0, 0.1, 40))


def test_every_parameter_is_keyword_only_and_declared():
    sig = inspect.signature(StepwiseRegression.__init__)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    assert [p.name for p in params] == list(PARAMETER_CONSTRAINTS)
    with pytest.raises(TypeError):
        StepwiseRegression("y")  # a positional response is refused


@pytest.mark.parametrize("kwargs, message", [
    ({"criterion": "r2"}, "unknown criterion 'r2'; choose adjr2, aic, bic, ftest"),
    ({"response_transform": "exp"}, "unknown transform 'exp'; choose none, log, sqrt, auto"),
    ({"robust": "tukey"}, "robust must be one of huber, none (got 'tukey')"),
    ({"theta": float("nan")}, "theta must be a finite number (got nan)"),
    ({"phi": True}, "phi must be a finite number (got True)"),
    ({"phi3": "0.01"}, "phi3 must be a finite number (got '0.01')"),
    ({"max_terms": 0}, "max_terms must be a whole number of at least 1 or None (got 0)"),
    ({"categorical_levels": -1}, "categorical_levels must be a whole number ≥ 0 (got -1)"),
    ({"bound_margin": float("inf")}, "bound_margin must be a non-negative number or None (got inf)"),
    ({"max_order": 4}, "max_order must be 2 or 3 (got 4)"),
    ({"cells": "yes"}, "cells must be True or False (got 'yes')"),
    ({"search": 1}, "search must be True or False (got 1)"),
    ({"forced": "a:b"}, "forced must be a list (got 'a:b')"),
    ({"reference": True, "response_transform": "auto"}, "not auto"),
    ({"scale": "log10"}, "unknown scale 'log10'"),
])
def test_bad_values_are_refused_by_name(kwargs, message):
    with pytest.raises(FitError) as e:
        StepwiseRegression(response="y", **kwargs).fit(small())
    assert message in str(e.value)


def test_good_values_of_every_kind_are_accepted():
    m = StepwiseRegression(response="y", theta=np.float64(0.01), max_terms=np.int64(3), bound_margin=None,
                           knots={"__default__": 4, "a": 3}, scale={"a": "log2"}, forced=("a",), max_order=2,
                           robust="none", cells=False, response_transform="none").fit(small()).model_
    assert m.terms[0] == "a" and len(m.terms) <= 3


def test_no_function_of_the_package_is_long():
    """The search is named steps, not one long method: no function over 60 lines."""
    long = []
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60:
                long.append(f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long
