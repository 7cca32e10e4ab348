"""Hostile and broken model JSON files: every one gives a clear FitError naming the file,
never a traceback, never inf predictions; a hypothesis fuzz test runs in a memory-capped child."""

from __future__ import annotations

import copy
import json
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest
from bounded import bounded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudse_core import load_preset, sample
from gpudse_core.errors import GpudseError
from gpudse_core.model.stepwise import FitError, StepwiseModel, fit_stepwise


@lru_cache(maxsize=1)
def _good() -> tuple[str, pd.DataFrame]:
    pts = sample(load_preset("stargazer"), 150, seed=3).points
    rng = np.random.default_rng(1)
    y = (3e5 / pts.simd * (1 + 4 / pts.blk) + 5e4 / pts.smp) * np.exp(rng.normal(0, 0.01, len(pts)))
    m = fit_stepwise(pts.assign(cycles=y), "cycles", transform="log")
    return m.to_json(), sample(load_preset("stargazer"), 50, seed=4).points


def good() -> dict:
    return json.loads(_good()[0])


def _set(d: dict, path: tuple, value) -> dict:
    d = copy.deepcopy(d)
    node = d
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return d


CASES = {
    "one-element range": (lambda d: _set(d, ("bases", 0, "range"), [4]), "range must be \\[low, high\\]"),
    "reversed range": (lambda d: _set(d, ("bases", 0, "range"), [16, 1]), "range must be"),
    "huge coefficient": (lambda d: _set(d, ("coefficients", 1), 1e308), "coefficients must be finite"),
    "overflowing coefficients": (lambda d: _set(d, ("coefficients",), [1e299] * len(d["coefficients"])),
                                 "finite predictions over the training range"),
    "string coefficient": (lambda d: _set(d, ("coefficients", 0), "1"), "coefficients must be finite"),
    "missing coefficient": (lambda d: _set(d, ("coefficients",), d["coefficients"][:-1]), "coefficients for"),
    "column of four": (lambda d: _set(d, ("columns", 0), {"params": ["blk"] * 4, "index": [0] * 4}),
                       "refers to unknown parameters"),
    "index out of range": (lambda d: _set(d, ("columns", 0, "index"), [99]), "does not exist"),
    "bool index": (lambda d: _set(d, ("columns", 0, "index"), [True]), "does not exist"),
    "columns not a list": (lambda d: _set(d, ("columns",), {"a": 1}), "must be lists"),
    "basis not an object": (lambda d: _set(d, ("bases", 0), "blk"), "must be an object"),
    "duplicate basis": (lambda d: _set(d, ("bases",), d["bases"] + d["bases"][:1]), "two bases"),
    "knots not increasing": (lambda d: _set(d, ("bases", 0, "knots"), [3, 2, 1]), "knots must be"),
    "bad scale": (lambda d: _set(d, ("bases", 0, "scale"), "exp"), "unknown scale"),
    "level twice": (lambda d: _set(d, ("bases", [b["kind"] for b in d["bases"]].index("categorical"), "levels"),
                                   [8, 8, 32]), "levels must be"),
    "bad z_range": (lambda d: _set(d, ("z_range",), [5, 1]), "z_range"),
    "negative margin": (lambda d: _set(d, ("bound_margin",), -1), "bound_margin"),
    "text margin": (lambda d: _set(d, ("bound_margin",), "wide"), "bound_margin"),
    "unknown unseen rule": (lambda d: _set(d, ("unseen",), "guess"), "unseen must be one of"),
    "list as unseen rule": (lambda d: _set(d, ("unseen",), ["model"]), "unseen must be one of"),
    "bad support hex": (lambda d: _set(d, ("support", "seen", 0, "cells"), "zz"), "not hexadecimal"),
    "short support": (lambda d: _set(d, ("support", "seen", 0, "cells"), "00"), "bytes, expected"),
    "unknown support param": (lambda d: _set(d, ("support", "params", 0, "name"), "nope"), "does not use"),
    "negative n": (lambda d: _set(d, ("n",), -3), "n must be a whole number"),
    "bad transform": (lambda d: _set(d, ("transform",), "exp"), "unknown transform"),
    "other kind": (lambda d: _set(d, ("kind",), "forest"), "not a stepwise"),
    "old schema": (lambda d: _set(d, ("schema",), "gpudse.model/0"), "schema"),
    "missing key": (lambda d: {k: v for k, v in d.items() if k != "bases"}, "malformed model file"),
    "labels wrong length": (lambda d: _set(d, ("column_labels",), ["a"]), "one label per coefficient"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_broken_model_files_are_refused_clearly(name, tmp_path):
    mutate, pattern = CASES[name]
    doc = mutate(good())
    assert doc["support"]["seen"], "the fixture model has an interaction term"
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FitError, match=pattern) as err:
        StepwiseModel.load(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("text, pattern", [
    ("{ not json", "malformed JSON"),
    ('{"coefficients": [1e999]}', "schema|finite"),
    ("[" * 100_000 + "]" * 100_000, "nested"),
    ('{"schema": "gpudse.model/2", "coefficients": [NaN]}', "not a JSON number"),
    ("", "malformed JSON"),
])
def test_unreadable_model_files(text, pattern, tmp_path):
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(FitError, match=pattern):
        StepwiseModel.load(path)


def test_model_file_paths(tmp_path):
    with pytest.raises(FitError, match="no such model file"):
        StepwiseModel.load(tmp_path / "none.json")
    with pytest.raises(FitError, match="cannot read"):
        StepwiseModel.load(tmp_path)
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(FitError, match="UTF-8"):
        StepwiseModel.load(tmp_path / "bin.json")


def test_a_large_but_finite_model_still_predicts_finitely(tmp_path):
    doc = good()
    doc["coefficients"] = [c * 1e150 for c in doc["coefficients"]]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    m = StepwiseModel.load(path)
    d = m.predict_details(_good()[1])
    assert np.all(np.isfinite(d.predicted)) and d.bounded.all()


def test_version_1_model_files_still_load(tmp_path):
    doc = good()
    for key in ("support", "z_range", "bound_margin", "notes", "kind"):
        doc.pop(key)
    for b in doc["bases"]:
        b.pop("scale", None)
    doc["schema"] = "gpudse.model/1"
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    m = StepwiseModel.load(path)
    assert m.support is None and m.bound_margin is None
    assert np.all(np.isfinite(m.predict(_good()[1])))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:6]):
            yield from _paths(v, prefix + (i,))


# address space: NumPy's and SciPy's OpenBLAS each reserve (not use) hundreds of MB of buffers; the
# resident peak is what is checked against 1 GB
@pytest.mark.slow
@bounded(mem_mb=3072, max_rss_mb=1024, timeout=300)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_model_json_our_error_or_a_finite_model(data):
    doc = good()
    paths = [p for p in _paths(doc) if p and p[0] != "trace"]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        action = data.draw(st.sampled_from(["replace", "delete", "scale"]))
        try:
            node = doc
            for key in path[:-1]:
                node = node[key]
            if action == "delete":
                del node[path[-1]]
            elif (action == "scale" and isinstance(node[path[-1]], (int, float))
                  and not isinstance(node[path[-1]], bool)):
                node[path[-1]] = node[path[-1]] * data.draw(st.sampled_from([-1, 0, 1e10, 1e300, 1e-300]))
            else:
                node[path[-1]] = data.draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue
    text = json.dumps(doc)
    from gpudse_core.safeload import load_json

    try:
        model = StepwiseModel.from_dict(load_json(text, "fuzz.json"), "fuzz.json")
    except GpudseError:  # FitError, or the reader's DocumentError; anything else fails the test
        return
    try:
        d = model.predict_details(_good()[1])
    except FitError:
        return
    assert np.all(np.isfinite(d.predicted.to_numpy(dtype=float)))
