"""Derived quantities of a design space (docs/design-spaces.md "Derived quantities"): checked at load, never
enumerated as parameters, predictors of every model kind, kept and computed by the model; and the stepwise
search's count pairs and the robust fit's real corners (docs/models.md "Products of counts and real corners")."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core import limits, sample
from gpudse_core.cli import main
from gpudse_core.errors import GpudseError
from gpudse_core.explore.terms import is_additive, model_parameters
from gpudse_core.model.registry import fit_model, load_model, model_to_dict
from gpudse_core.model.stepwise import ALGORITHM1_SETTINGS, PAPER_SETTINGS, FitError
from gpudse_core.model.stepwise.robust import OUTLYING, real_corners
from gpudse_core.space.design import parse_space_text
from gpudse_core.space.presets import load_preset

HEAD = """
parameters:
  - {name: cu_per_sa, values: [1, 2, 4, 8]}
  - {name: sa, values: [4, 8, 16, 32]}
  - {name: freq, values: [500, 1000, 1500]}
  - {name: line, values: [64, 128]}
"""


def space(derived: str = "derived: {total_cus: cu_per_sa * sa}"):
    return parse_space_text(HEAD + derived, "gpu.yaml")


def cu_data(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """A time that follows the CUs in all (flat from 16, slower below) and the clock, 0.3 % noise."""
    rng = np.random.default_rng(seed)
    d = sample(space(), n, seed=seed).points
    cus = d.cu_per_sa * d.sa
    d["t"] = 20.0 * np.maximum(1.0, 16.0 / cus) ** 0.8 * (1000.0 / d.freq) ** 0.3 * rng.lognormal(0, 0.003, n)
    return d


def truth(points: pd.DataFrame) -> np.ndarray:
    cus = points.cu_per_sa * points.sa
    return (20.0 * np.maximum(1.0, 16.0 / cus) ** 0.8 * (1000.0 / points.freq) ** 0.3).to_numpy()


# ---- the space file ------------------------------------------------------------------------------------------
def test_derived_columns_are_computed_and_round_trip():
    s = space("derived:\n  total_cus: cu_per_sa * sa\n  per_cu: {expr: freq / cu_per_sa, unit: MHz, label: f/CU}\n")
    f = s.with_derived(s.frame(s.decode(np.arange(s.size))))
    np.testing.assert_array_equal(f.total_cus, f.cu_per_sa * f.sa)
    np.testing.assert_allclose(f.per_cu, f.freq / f.cu_per_sa)
    again = parse_space_text(s.to_yaml(), "again.yaml")
    assert again == s and again.derived[1].unit == "MHz" and again.derived[1].display == "f/CU"
    assert [d["name"] for d in s.summary()["derived"]] == ["total_cus", "per_cu"]


def test_derived_quantities_are_never_enumerated_as_parameters():
    s = space()
    assert s.parameter_names == ("cu_per_sa", "sa", "freq", "line") and s.size == 4 * 4 * 3 * 2
    assert "total_cus" not in sample(s, 10, seed=1).points.columns


@pytest.mark.parametrize("derived, message", [
    ("derived: {sa: cu_per_sa * 2}", "already a parameter"),
    ("derived: {t: cu_per_sa * cores}", "unknown name 'cores'"),
    ("derived: {t: cu_per_sa > 2}", "not a number"),
    ("derived: {t: 'cu_per_sa *'}", "not a valid expression"),
    ("derived: {log: sa}", "reserved word"),
    ("derived: [cu_per_sa * sa]", "must be a mapping"),
    ("derived: {t: {expr: sa, colour: red}}", "unknown field 'colour'"),
    ("derived: {t: 3}", "must be text"),
])
def test_bad_derived_quantities_are_refused_with_the_entry_named(derived, message):
    with pytest.raises(GpudseError, match=message) as e:
        space(derived)
    assert "gpu.yaml" in str(e.value)


def test_the_number_of_derived_quantities_is_bounded():
    text = "derived:\n" + "".join(f"  d{i}: sa * {i}\n" for i in range(4))
    with limits.override(derived=3), pytest.raises(GpudseError, match="derived quantities"):
        space(text)


def test_the_editable_tables_keep_the_derived_quantities():
    from gpudse_core.space.design import fixed_table, space_from_table, space_table

    s = load_preset("mgpusim")
    again = space_from_table(space_table(s), [c.expr for c in s.constraints], fixed_table(s), name=s.name, base=s)
    assert again.derived == s.derived
    renamed = space_table(s).replace({"name": {"sa": "arrays"}})
    with pytest.raises(GpudseError, match="derived 'total_cus'.*unknown name 'sa'"):
        space_from_table(renamed, [], fixed_table(s), base=s)


def test_mgpusim_preset_declares_total_cus():
    s = load_preset("mgpusim")
    assert s.derived_map()["total_cus"] == "cu_per_sa * sa" and "total_cus" not in s.parameter_names


# ---- models --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["stepwise", "forest"])
def test_every_kind_uses_derived_quantities_and_computes_them_when_predicting(kind):
    s, d = space(), cu_data()
    test = s.frame(s.decode(np.arange(s.size)))  # parameters only
    kw = {"transform": None if kind == "stepwise" else "log"}
    with_d = fit_model(kind, d, "t", list(s.parameter_names), derived=s.derived_map(), **kw)
    without = fit_model(kind, d, "t", list(s.parameter_names), **kw)
    assert "total_cus" in with_d.parameters and with_d.derived == {"total_cus": "cu_per_sa * sa"}
    err = {name: np.abs(m.predict(test) / truth(test) - 1) for name, m in (("with", with_d), ("without", without))}
    small = ((test.cu_per_sa * test.sa) <= 8).to_numpy()
    if kind == "forest":  # trees step along cu_per_sa and sa apart; along total_cus at once
        assert err["with"][small].mean() < err["without"][small].mean()
    else:
        assert err["with"][small].mean() < 0.02  # within 2 % where the physics is (4 and 8 CUs)
    loaded = load_model(json.loads(json.dumps(model_to_dict(with_d))))
    np.testing.assert_allclose(loaded.predict(test), with_d.predict(test), rtol=1e-12)
    assert loaded.derived == with_d.derived
    # Explore reads the space's own parameters, and scans a derived model through its predictions
    assert "total_cus" not in model_parameters(with_d) and {"cu_per_sa", "sa"} <= set(model_parameters(with_d))
    assert not is_additive(with_d)


def test_stepwise_takes_the_derived_quantity_as_a_term():
    s = space()
    m = fit_model("stepwise", cu_data(), "t", list(s.parameter_names), transform=None, derived=s.derived_map())
    assert "total_cus" in m.terms and "total_cus" in m.equation()


def test_curves_hold_the_derived_quantity_to_its_parameters():
    from gpudse_core.model.learners import curve

    s = space()
    m = fit_model("stepwise", cu_data(), "t", list(s.parameter_names), transform=None, derived=s.derived_map())
    base = {"cu_per_sa": 1, "sa": 4, "freq": 1000, "line": 64}
    c = curve(m, "sa", [4, 8, 16, 32], base)
    # 4, 8, 16, 32 CUs: slower below 16, flat from there
    assert c.predicted.iloc[0] > 1.5 * c.predicted.iloc[2] and abs(c.predicted.iloc[3] / c.predicted.iloc[2] - 1) < 0.05


def test_a_model_file_with_a_bad_derived_expression_is_refused():
    s = space()
    doc = model_to_dict(fit_model("stepwise", cu_data(), "t", list(s.parameter_names), transform=None,
                                  derived=s.derived_map()))
    doc["derived"] = {"total_cus": "__import__('os')"}
    with pytest.raises(FitError, match="derived"):
        load_model(doc)
    doc["derived"] = {"not_a_parameter": "sa * 2"}
    with pytest.raises(FitError, match="not one of the model's parameters"):
        load_model(doc)


def test_a_derived_quantity_undefined_at_a_row_names_it():
    s = space("derived: {inv: 1 / (cu_per_sa - 1)}")
    with pytest.raises(FitError, match=r"derived 'inv'.*row"):
        fit_model("forest", cu_data(), "t", list(s.parameter_names), derived=s.derived_map())


def test_fit_cli_with_a_space_keeps_its_derived_quantities(tmp_path, capsys):
    path, spath, out = tmp_path / "r.csv", tmp_path / "gpu.yaml", tmp_path / "m.json"
    cu_data().to_csv(path, index=False)
    spath.write_text(HEAD + "derived: {total_cus: cu_per_sa * sa}\n")
    assert main(["fit", str(path), "--response", "t", "--space", str(spath), "-o", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "total_cus" in doc["terms"]
    assert json.loads(out.read_text())["derived"] == {"total_cus": "cu_per_sa * sa"}


def test_validate_cli_with_a_space_takes_its_derived_quantities(tmp_path, capsys):
    """`gpudse validate --space` adds the space's derived quantities to every model compared, as `fit`
    does: a fixed model of total_cus and the clock predicts the time about half as wrong as the same
    model without total_cus (the clock alone: 3.2 % against 6.1 % on this draw). Without the space,
    total_cus names no column, and the term is refused by name rather than left out."""
    path, spath = tmp_path / "r.csv", tmp_path / "gpu.yaml"
    cu_data(80).to_csv(path, index=False)
    spath.write_text(HEAD + "derived: {total_cus: cu_per_sa * sa}\n")
    args = ["validate", str(path), "--response", "t", "--models", "fixed", "--train-sizes", "40", "--test-size",
            "30", "--repeats", "1", "--transform", "log", "--json"]
    errors = []
    for given in (["--fixed-terms", "total_cus,freq", "--space", str(spath)], ["--fixed-terms", "freq"]):
        assert main([*args, *given]) == 0
        errors.append(json.loads(capsys.readouterr().out)["models"]["fixed"]["40"]["mean"])
    assert errors[0] < 0.75 * errors[1]
    assert main([*args, "--fixed-terms", "total_cus,freq"]) == 2
    assert "'total_cus' not a parameter" in capsys.readouterr().err


# ---- count pairs -----------------------------------------------------------------------------------------------
def pair_only(n: int = 160, seed: int = 3) -> pd.DataFrame:
    """c acts alone; a and b only together (a pure interaction in a balanced design: no main effect of either)."""
    rng = np.random.default_rng(seed)
    lv = np.array([1, 2, 4, 8])
    d = pd.DataFrame({"a": rng.choice(lv, n), "b": rng.choice(lv, n), "c": rng.choice([1, 2, 3, 4, 5], n)})
    la, lb = np.log2(d.a) - 1.5, np.log2(d.b) - 1.5
    d["y"] = np.exp(0.5 * d.c / 5 + 0.25 * la * lb + rng.normal(0, 0.01, n))
    return d


def test_count_pairs_bring_in_an_interaction_neither_factor_passes_alone():
    d = pair_only()
    kw = {"robust": "none", "cells": False}  # level cells would patch a:b's corners in as indicators
    on = fit_model("stepwise", d, "y", ["a", "b", "c"], transform="log", stepwise_kw=kw)
    off = fit_model("stepwise", d, "y", ["a", "b", "c"], transform="log", stepwise_kw={**kw, "count_pairs": False})
    assert not any(t in ("a:b", "b:a") for t in off.terms)
    assert any(t in ("a:b", "b:a") for t in on.terms)
    assert any(r["kind"] == "lookahead" and r["chosen"] in ("a + b + a:b", "b + a + b:a") for r in on.trace)
    err = {k: np.mean(np.abs(m.predict(d) / d.y - 1)) for k, m in (("on", on), ("off", off))}
    assert err["on"] < 0.5 * err["off"]


def test_the_paper_readings_keep_count_pairs_off():
    assert PAPER_SETTINGS["count_pairs"] is False and ALGORITHM1_SETTINGS["count_pairs"] is False


# ---- real corners ----------------------------------------------------------------------------------------------
class _Fit:
    def __init__(self, coefficients):
        self.coefficients = coefficients


def test_rows_least_squares_predicts_are_real_corners_not_outliers():
    n = 40
    z = np.zeros(n)
    z[[3, 7, 11]] = 1.0  # three rows far from the round's constant fit
    A = np.ones((n, 1))
    scale = 0.05  # the round's residual scale: the three rows lie beyond OUTLYING scales
    assert 1.0 > OUTLYING * scale
    round_errors = np.full(n, 0.01)
    round_errors[[3, 7, 11]] = 0.6
    round_ = ("Huber round 1", _Fit([0.0]), 0.04, scale, z, A, round_errors)
    predicted = ("least squares", None, 0.05, 0.0, z, A, np.full(n, 0.02))  # it predicts them left out
    np.testing.assert_array_equal(real_corners(round_, predicted, z), [3, 7, 11])
    lone = np.full(n, 0.02)
    lone[[3, 7, 11]] = 0.55  # least squares misses them too: outliers, which the round may discount
    assert real_corners(round_, ("least squares", None, 0.05, 0.0, z, A, lone), z).size == 0


def test_response_curve_and_scan_read_the_parameters_behind_a_derived_term():
    from gpudse_core.explore.scan import predict_space, response_curve

    s, d = space(), cu_data()
    m = fit_model("stepwise", d, "t", list(s.parameter_names), transform=None, derived=s.derived_map())
    base = {"cu_per_sa": 1, "sa": 4, "freq": 1000, "line": 64}
    c = response_curve(m, d, "cu_per_sa", base, s)  # cu_per_sa may be read only through total_cus
    np.testing.assert_array_equal(c.cu_per_sa, [1, 2, 4, 8])
    assert c.predicted.iloc[0] > 1.5 * c.predicted.iloc[2] and (c.lower <= c.predicted).all()
    best = predict_space(m, s, k=1).best
    assert int(best.cu_per_sa.iloc[0] * best.sa.iloc[0]) >= 16 and best.freq.iloc[0] == 1500
