"""The pandas-free sample writer writes what pandas writes: the CSV a sample set saves is
byte for byte ``DataFrame.to_csv(index=False)``, and its JSON is the records pandas would give."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudse_core.space.presets import load_preset
from gpudse_core.space.sampling import SampleSet, sample, write_csv

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
columns = st.one_of(
    st.lists(st.integers(-2**63, 2**63 - 1), min_size=3, max_size=3).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.floats(allow_infinity=True, allow_nan=True), min_size=3, max_size=3).map(np.array),
    st.lists(texts, min_size=3, max_size=3).map(lambda v: np.array(v, dtype=object)),
    st.lists(st.booleans(), min_size=3, max_size=3).map(np.array),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(names, columns, min_size=1, max_size=4))
def test_csv_is_byte_for_byte_what_pandas_writes(cols):
    """Streamed columns are what pandas writes for the same frame, once formula-like text cells and
    names are neutralised (gpudse_core.csvout, one rule for both paths); untouched otherwise."""
    from gpudse_core import csvout

    ours = io.StringIO()
    write_csv(ours, cols)
    df = pd.DataFrame(cols)
    assert ours.getvalue() == csvout.frame_text(df)
    formula_like = any(str(n).startswith(csvout.FORMULA_START) for n in cols) or any(
        isinstance(v, str) and v.startswith(csvout.FORMULA_START) for a in cols.values() for v in a.tolist())
    if not formula_like:
        assert ours.getvalue() == df.to_csv(index=False, lineterminator="\n")


def test_sample_set_files_equal_the_dataframe_they_stand_for(tmp_path):
    space = load_preset("lee-brooks")
    s = sample(space, 200, seed=4)
    assert "points" not in vars(s)  # not built until asked for
    s.save(tmp_path / "a.csv", with_index=True)
    assert (tmp_path / "a.csv").read_text() == s.table(True).to_csv(index=False)
    doc = json.loads(s.to_json())
    assert doc["points"] == json.loads(s.table(True).to_json(orient="records"))
    assert len(s) == 200 and list(s.points.columns) == list(space.parameter_names)


def test_a_sample_set_given_a_dataframe_keeps_it_as_columns():
    df = pd.DataFrame({"blk": [1, 2], "simd": [8, 16]})
    s = SampleSet("x", "uniform", None, {}, df, np.arange(2))
    assert s.columns["simd"].tolist() == [8, 16] and s.points.equals(df)
