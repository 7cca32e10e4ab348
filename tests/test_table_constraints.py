"""A space inferred from a measured table: how much of the product the table holds, and the constraints it
shows (a product bound of two counts, a pair never measured), suggested as comments and never applied."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from gpudse_core.cli import main
from gpudse_core.sim.lookup import infer_space
from gpudse_core.sim.table_constraints import commented_yaml, feasible_with, suggest_constraints, table_coverage
from gpudse_core.space.presets import load_space

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "benchmark_hub" / "convolution_A4000.csv"


def tuning_table() -> pd.DataFrame:
    """Every combination of bx (32..512) × by (1..8) × pad × shm × tile (1, 2) that a GPU can run: at most 1,024
    threads per block, padding only with shared memory. 5 × 4 × 2 × 2 × 2 = 160 combinations in the product;
    the table holds the bx·by ≤ 1,024 ones (17 of the 20 block shapes: not 256×8, 512×4, 512×8) without
    pad = 1, shm = 0: 17 × 3 × 2 = 102 rows."""
    rows = [dict(bx=bx, by=by, pad=pad, shm=shm, tile=tile, time_ms=1.0 + bx / 1000 + by + tile)
            for bx, by, pad, shm, tile in itertools.product((32, 64, 128, 256, 512), (1, 2, 4, 8), (0, 1), (0, 1),
                                                            (1, 2))
            if bx * by <= 1024 and not (pad == 1 and shm == 0)]
    return pd.DataFrame(rows)


PARAMS = ["bx", "by", "pad", "shm", "tile"]


def test_coverage_and_the_constraints_of_a_table_of_known_structure():
    frame = tuning_table()
    space = infer_space(frame, PARAMS)
    assert table_coverage(frame, space) == (102, 160)
    found = {s.expr: s for s in suggest_constraints(frame, space)}
    assert set(found) == {"bx * by <= 1024", "not (pad == 1 and shm == 0)"}
    assert found["bx * by <= 1024"].excludes == 3 * 8  # 3 shapes × pad × shm × tile
    assert found["not (pad == 1 and shm == 0)"].excludes == 5 * 4 * 2
    assert feasible_with(space, list(found.values())) == 102  # together: exactly the table's rows
    assert suggest_constraints(frame, space)[0].excludes >= suggest_constraints(frame, space)[-1].excludes


def test_a_table_that_holds_the_whole_product_gets_no_suggestion():
    frame = pd.DataFrame([dict(a=a, b=b, f=f, y=1.0) for a, b, f in itertools.product((1, 2, 4), (8, 16), (0, 1))])
    space = infer_space(frame, ["a", "b", "f"])
    assert table_coverage(frame, space) == (12, 12) and suggest_constraints(frame, space) == []
    assert "holds all 12 combinations" in commented_yaml([], 12, 12, 12)


def test_every_suggestion_holds_on_every_row_of_a_sparse_table():
    """Rows dropped at random: whatever is suggested, no row violates it (checked here by the space's own
    compiler again, independently of how it was found)."""
    frame = tuning_table().sample(frac=0.5, random_state=3).reset_index(drop=True)
    space = infer_space(frame, PARAMS)
    found = suggest_constraints(frame, space)
    assert found  # half the rows: pairs go missing by chance, and are suggested (a person decides)
    for s in found:
        d = space.to_dict()
        d["constraints"] = [s.expr]
        constrained = load_space_dict(d)
        assert all(constrained.is_feasible(r) for r in frame[PARAMS].to_dict("records")), s.expr
        assert s.excludes > 0


def load_space_dict(d):
    from gpudse_core.space.design import space_from_dict

    return space_from_dict(d)


def test_space_infer_writes_the_suggestions_as_comments_that_load_when_uncommented(tmp_path, capsys):
    src = tmp_path / "measured.csv"
    tuning_table().to_csv(src, index=False)
    out = tmp_path / "space.yaml"
    assert main(["space", "infer", str(src), "--params", ",".join(PARAMS), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "the table holds 102 of the 160 combinations" in err and "explore may recommend designs it never" in err
    assert "bx * by <= 1024" in err and "together leave 102 combinations" in err
    text = out.read_text()
    assert load_space(str(out)).size == 160 and not load_space(str(out)).constraints  # never applied silently
    assert "# constraints:" in text
    on = re.sub(r"^# constraints:", "constraints:", text, flags=re.M)
    on = re.sub(r"^#   - ", "  - ", on, flags=re.M)
    (tmp_path / "on.yaml").write_text(on)
    assert load_space(str(tmp_path / "on.yaml")).feasible_size == 102
    assert main(["space", "infer", str(src), "--params", ",".join(PARAMS), "-o", str(tmp_path / "s.json")]) == 0
    assert "bx * by <= 1024" in capsys.readouterr().err and load_space(str(tmp_path / "s.json")).size == 160


@pytest.mark.skipif(not SHARED.is_file(), reason="needs ../shared/data/benchmark_hub (the project's shared data)")
def test_the_a4000_convolution_table_shows_the_thread_limit_and_padding_with_shared_memory():
    frame = pd.read_csv(SHARED)
    params = [c for c in frame.columns if c not in ("time_ms", "status")]
    space = infer_space(frame, params)
    assert table_coverage(frame, space) == (4362, 10240)
    found = [s.expr for s in suggest_constraints(frame, space)]
    assert "block_size_x * block_size_y <= 1024" in found and "not (use_padding == 1 and use_shmem == 0)" in found


@given(st.lists(st.booleans(), min_size=160, max_size=160))
@settings(max_examples=40, deadline=None)
def test_any_subset_of_a_product_keeps_every_row_feasible_under_the_suggestions(keep):
    """Whatever rows a table holds, the suggestions together admit every one of them (none is a rule the
    table breaks), and each excludes some combination of the product."""
    full = pd.DataFrame([dict(bx=bx, by=by, pad=pad, shm=shm, tile=tile, time_ms=1.0)
                         for bx, by, pad, shm, tile in itertools.product((32, 64, 128, 256, 512), (1, 2, 4, 8),
                                                                         (0, 1), (0, 1), (1, 2))])
    frame = full[keep].reset_index(drop=True)
    if frame.empty:
        return
    space = infer_space(frame, PARAMS)
    found = suggest_constraints(frame, space)
    held, size = table_coverage(frame, space)
    assert held == len(frame) and size == space.size
    assert all(s.excludes > 0 for s in found)
    together = feasible_with(space, found)
    assert together is not None and held <= together <= size
    if found:
        d = space.to_dict()
        d["constraints"] = [s.expr for s in found]
        both = load_space_dict(d)
        assert all(both.is_feasible(r) for r in frame[PARAMS].to_dict("records"))
