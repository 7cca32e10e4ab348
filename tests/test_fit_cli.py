"""``gpudse fit`` presets and encodings, ``gpudse predict``'s guarded output."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpudse_core import load_preset, sample
from gpudse_core.cli import main
from gpudse_core.model.stepwise import PAPER_SETTINGS
from gpudse_core.sim.simulator import simulate


@pytest.fixture
def n30_csv(tmp_path):
    """The extrapolation guard's N = 30 matMul case (blk = 8 only seen with simd = 32) and points to predict."""
    space = load_preset("stargazer")
    train = sample(space, 30, seed=91).points
    train["cycles"] = simulate(train, "matMul").cycles
    path = tmp_path / "train.csv"
    train.to_csv(path, index=False)
    points = sample(space, 500, seed=99).points
    pts_path = tmp_path / "points.csv"
    points.to_csv(pts_path, index=False)
    return path, pts_path


def fit_json(train, out, capsys, *flags: str) -> dict:
    """``gpudse fit TRAIN --response cycles FLAGS -o OUT --json``: the printed document."""
    assert main(["fit", str(train), "--response", "cycles", *flags, "-o", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_preset_stargazer_is_the_paper_and_flags_override(n30_csv, tmp_path, capsys):
    train, _ = n30_csv
    out = tmp_path / "m.json"
    doc = fit_json(train, out, capsys, "--transform", "log", "--preset", "stargazer")
    for k, v in PAPER_SETTINGS.items():
        assert doc["settings"][k] == ("log" if k == "response_transform" else v), k  # the flag wins
    assert doc["trace"][0]["metric"] == "r2" and doc["notes"] == []
    # every candidate of every step carries its model's R² and adjusted R² (Table 1)
    assert all(set(s["r2s"]) == set(s["adj_r2s"]) == set(s["candidates"]) for s in doc["trace"])
    paper = fit_json(train, out, capsys, "--model", "paper")  # one model, however it is asked for
    preset = fit_json(train, out, capsys, "--preset", "stargazer")
    assert paper["settings"] == preset["settings"] and paper["trace"] == preset["trace"]
    assert paper["settings"]["response_transform"] == "none" and paper["settings"]["threshold_rule"] == "relative"
    doc = fit_json(train, out, capsys, "--preset", "stargazer", "--theta", "0.002", "--threshold-rule", "absolute")
    assert doc["settings"]["theta"] == 0.002 and doc["settings"]["phi"] == 0.01  # the text's φ unless given
    assert main(["fit", str(train), "--response", "cycles", "--model", "paper", "--max-order", "3",
                 "-o", str(out)]) == 2
    assert "--max-order: the paper model is Stargazer 1.0" in capsys.readouterr().err


def test_default_fit_reports_its_encodings(n30_csv, tmp_path, capsys):
    train, _ = n30_csv
    out = tmp_path / "m.json"
    assert main(["fit", str(train), "--response", "cycles", "--transform", "log", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "note: blk: log2 scale (powers of two in the data)" in text
    saved = json.loads(out.read_text())
    assert saved["settings"]["max_order"] == 3 and saved["support"]["params"]


def test_scale_flags_and_space_file(n30_csv, tmp_path, capsys):
    train, _ = n30_csv
    out = tmp_path / "m.json"
    doc = fit_json(train, out, capsys, "--scale", "linear", "--params", "blk,simd")
    saved = json.loads(out.read_text())
    assert all(b.get("scale", "linear") == "linear" for b in saved["bases"])
    assert not any("log2" in n for n in doc["notes"]) and any("categorical" in n for n in doc["notes"])
    space = tmp_path / "space.yaml"
    space.write_text("schema: gpudse.space/1\nname: s\nparameters:\n"
                     "  - {name: blk, values: {pow2: 1..16}, scale: linear}\n"
                     "  - {name: simd, values: [8, 16, 32]}\n  - {name: smp, values: {pow2: 1..8}}\n")
    assert main(["fit", str(train), "--response", "cycles", "--params", "blk,simd,smp", "--space", str(space),
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    saved = json.loads(out.read_text())
    scales = {b["name"]: b.get("scale", "linear") for b in saved["bases"]}
    assert scales.get("blk") == "linear" and scales.get("smp", "log2") == "log2"
    assert f"note: scales from {space}" in text
    with pytest.raises(SystemExit) as e:
        main(["fit", str(train), "--response", "cycles", "--scale", "auto,blk=ln", "-o", str(out)])
    assert e.value.code == 2 and "the scale of a parameter is linear or log2" in capsys.readouterr().err


def test_predict_adds_bounded_and_extrapolation_columns(n30_csv, tmp_path, capsys):
    train, points = n30_csv
    model = tmp_path / "m.json"
    fit_json(train, model, capsys, "--transform", "log", "--preset", "stargazer")
    preds = tmp_path / "p.csv"
    assert main(["predict", str(model), str(points), "-o", str(preds)]) == 0
    err = capsys.readouterr().err
    df = pd.read_csv(preds, keep_default_na=False)
    assert list(df.columns[-3:]) == ["predicted", "bounded", "extrapolation"] and len(df) == 500
    n_bounded = int(df.bounded.astype(str).eq("True").sum())
    n_outside = int((df.extrapolation != "").sum())
    assert n_bounded >= 1 and n_outside >= 1  # Stargazer 1.0 on 30 rows: many predictions run away
    assert f"{n_bounded:,} bounded" in err and f"{n_outside:,} outside the training support" in err
    assert np.all(np.isfinite(df.predicted.astype(float)))
    assert df.extrapolation.str.contains("blk=8 with simd=8 not seen in training").any()
    # a points table that already has a column predict would add is refused, not overwritten
    pd.read_csv(points).assign(predicted=1.0).to_csv(tmp_path / "clash.csv", index=False)
    assert main(["predict", str(model), str(tmp_path / "clash.csv"), "-o", str(preds)]) == 2
    assert "already have column(s) 'predicted'" in capsys.readouterr().err


def test_robust_trace_has_r2_and_adjusted_r2_per_candidate(n30_csv, tmp_path, capsys):
    """Under the default F-test rule too, every scored candidate carries R² and adjusted R² (Table 1's
    columns), and the CLI trace prints Table 1: adjusted R² per candidate, the chosen one's p beside it."""
    train, _ = n30_csv
    out = tmp_path / "m.json"
    doc = fit_json(train, out, capsys, "--transform", "log")
    # the search's own steps (the transform, pruning, robust and cells rows compare whole fits by leave-one-out)
    steps = [s for s in doc["trace"] if s["kind"] not in ("prune", "transform", "robust", "cells")]
    assert steps and any(s["metric"] == "p_value" for s in steps)
    for s in steps:
        assert set(s["r2s"]) == set(s["adj_r2s"]) == set(s["candidates"]), s["step"]
        assert all(s["adj_r2s"][k] <= r2 <= 1 for k, r2 in s["r2s"].items())
    assert main(["fit", str(train), "--response", "cycles", "--transform", "log", "-o", str(out)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line[:4].strip().isdigit()]
    assert rows and any(line.split()[1:3] == ["adj.", "R²"] and "p = " in line for line in rows), out
