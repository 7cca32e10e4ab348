"""The one CSV writer (gpudse_core.csvout): formula-like text cells and column names are written so a
spreadsheet shows them as text (OWASP CSV injection), numbers stay numbers, and every command that
writes CSV goes through it."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys

import numpy as np
import pandas as pd

from conftest import ROOT
from gpudse_core import csvout

FORMULAS = ["=1+2", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1", '=HYPERLINK("http://e.example")']


def test_formula_text_gets_an_apostrophe_numbers_do_not():
    for f in FORMULAS:
        assert csvout.cell(f) == "'" + f
    for keep in ["-3.5", "+1e3", "-7", "abc", "a=b", "", "1-2"]:
        assert csvout.cell(keep) == keep
    assert csvout.cell(-3.5) == -3.5 and csvout.cell(-7) == -7 and csvout.cell(float("nan")) == ""


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_frames_and_streamed_columns_are_neutralised_cells_and_headers():
    df = pd.DataFrame({"=evil": [1, -2], "app": ["=1+2", "bfs"], "x": [-1.5, 2.0],
                       "cat": pd.Categorical(["@x", "ok"])})
    rows = rows_of(csvout.frame_text(df))
    assert rows[0] == ["'=evil", "app", "x", "cat"]
    assert rows[1] == ["1", "'=1+2", "-1.5", "'@x"] and rows[2] == ["-2", "bfs", "2.0", "ok"]
    assert list(df.columns)[0] == "=evil" and df.app[0] == "=1+2"  # the caller's frame is not changed
    buf = io.StringIO()
    csvout.write_columns(buf, {"a": np.array([-1, 2]), "b": np.array(["-x", "y"], dtype=object)})
    assert rows_of(buf.getvalue()) == [["a", "b"], ["-1", "'-x"], ["2", "y"]]
    # numbers: byte for byte what pandas writes
    num = {"i": np.array([-3, 4]), "f": np.array([-0.1, np.nan, 1e300][:2])}
    buf = io.StringIO()
    csvout.write_columns(buf, num)
    assert buf.getvalue() == pd.DataFrame(num).to_csv(index=False)


def test_the_sample_command_writes_no_formula(tmp_path):
    """`gpudse sample` of a space whose categorical values look like formulas: text in the CSV."""
    space = tmp_path / "f.yaml"
    space.write_text('name: f\nparameters:\n  - {name: sched, kind: categorical, values: ["=1+1", "@x", "gto"]}\n'
                     '  - {name: simd, values: [-8, 16]}\n')
    out = tmp_path / "s.csv"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "sample", str(space), "-n", "6", "--seed", "1",
                        "-o", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = rows_of(out.read_text())[1:]
    assert sorted({r[0] for r in rows}) == ["'=1+1", "'@x", "gto"]
    assert sorted({r[1] for r in rows}) == ["-8", "16"]  # a negative number stays a number
