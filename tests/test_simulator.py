"""The built-in simulator: sensitivity directions per kernel (as Stargazer reports), the structure the
stepwise regression finds, the tail effect, noise, the whole-space truth, and bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from gpudse_core import GpudseError, load_preset, sample
from gpudse_core.cli import main
from gpudse_core.sim.simulator import KERNELS, PARAMETERS, simulate, whole_space_errors
from gpudse_core.model.stepwise import fit_stepwise

BASE = dict(blk=8, cc=8, tc=8, smp=4, ccp=4, simd=16, mshr=2, dramq=32, intra=4, inter=4)
SPACE = load_preset("stargazer")


def sweep(kernel, param):
    values = SPACE.parameter(param).values
    df = pd.DataFrame([{**BASE, param: v} for v in values])
    return simulate(df, kernel).cycles.to_numpy()


def effect(kernel, param):
    c = sweep(kernel, param)
    return c.max() / c.min()


@pytest.fixture(scope="module")
def fits():
    pts = sample(SPACE, 300, seed=1).points
    return {k: fit_stepwise(pts.assign(y=simulate(pts, k).cycles), "y", transform="log") for k in KERNELS}


SIMD_DOMINANT = ["CP", "RAY", "STO", "backprop", "hotspot"]


@pytest.mark.parametrize("kernel", SIMD_DOMINANT + ["AES", "LPS", "matMul"])
def test_wider_simd_is_faster(kernel):
    c = sweep(kernel, "simd")
    assert np.all(np.diff(c) <= 1e-9) and c[0] / c[-1] > 1.5


@pytest.mark.slow
@pytest.mark.parametrize("kernel", SIMD_DOMINANT)
def test_simd_is_the_dominant_factor(fits, kernel):
    assert fits[kernel].terms[0] == "simd"
    assert fits[kernel].contributions()[0][1] > 0.5


def test_nw_is_driven_by_shared_memory_ports(fits):
    assert fits["nw"].terms[0] == "smp" and fits["nw"].contributions()[0][1] > 0.9
    assert effect("nw", "smp") > 1.2 and effect("nw", "simd") < 1.05
    wide = sweep("nw", "simd")
    assert wide[1] == wide[2]  # 16-thread blocks gain nothing from SIMD beyond 16 lanes
    assert np.all(np.diff(sweep("nw", "smp")) <= 0)


@pytest.mark.parametrize("kernel", ["BFS", "bfs"])
def test_bfs_depends_on_dram_queue_and_block_concurrency(fits, kernel):
    assert set(fits[kernel].terms[:2]) == {"dramq", "blk"}
    assert np.all(np.diff(sweep(kernel, "dramq")) <= 0) and effect(kernel, "dramq") > 1.3
    assert effect(kernel, "simd") < 1.5


def test_matmul_is_memory_bound_at_low_block_concurrency(fits):
    m = fits["matMul"]
    assert m.terms[0] == "blk" and "simd" in m.terms[:3]
    assert any(t in m.terms for t in ("simd:blk", "blk:simd"))  # Stargazer Table 1's simd:#blk
    assert np.all(np.diff(sweep("matMul", "blk")) < 0) and effect("matMul", "blk") > 3
    # the interaction: SIMD width matters more once enough blocks hide memory latency
    low = pd.DataFrame([{**BASE, "blk": 1, "simd": s} for s in (8, 32)])
    high = pd.DataFrame([{**BASE, "blk": 16, "simd": s} for s in (8, 32)])
    r_low = simulate(low, "matMul").cycles.to_numpy()
    r_high = simulate(high, "matMul").cycles.to_numpy()
    assert r_high[0] / r_high[1] > r_low[0] / r_low[1]


def test_lps_depends_more_on_block_concurrency_than_ray():
    # Stargazer Fig. 7: LPS streams memory with little computation; RAY computes heavily
    assert effect("LPS", "blk") > effect("RAY", "blk")


def test_aes_uses_shared_and_constant_ports(fits):
    assert {"smp", "ccp"} <= set(fits["AES"].parameters)
    assert np.all(np.diff(sweep("AES", "ccp")) <= 0) and effect("AES", "ccp") > 1.1


def test_tail_effect():
    # AES: 64 blocks on 30 cores -> 4 cores run a third block while 26 idle (Stargazer §7.2)
    df = pd.DataFrame([{**BASE, "blk": b} for b in (1, 2, 4, 8, 16)])
    r = simulate(df, "AES")
    assert (r.tail_cycles > 0).all()
    busy = 64 - 2 * 30
    np.testing.assert_allclose(r.cycles - r.cycles_trimmed, r.tail_cycles * (1 - busy / 30), rtol=1e-12)
    even = dataclasses.replace(KERNELS["AES"], name="AES60", blocks=60)  # divides evenly: no tail
    r60 = simulate(df, even)
    assert (r60.tail_cycles == 0).all() and (r60.cycles == r60.cycles_trimmed).all()


def test_breakdown_and_ipc():
    pts = sample(SPACE, 50, seed=2).points
    for k in KERNELS:
        r = simulate(pts, k)
        assert (r[["cycles", "compute_cycles", "memory_cycles", "launch_cycles"]] >= 0).all().all()
        np.testing.assert_allclose(r.ipc, KERNELS[k].insts / r.cycles)
        core = r.cycles - r.launch_cycles
        np.testing.assert_allclose(r.compute_cycles + r.memory_cycles, core, rtol=1e-9)


def test_noise_is_seeded_and_lognormal():
    pts = sample(SPACE, 4000, seed=3).points
    clean = simulate(pts, "CP").cycles
    a = simulate(pts, "CP", noise=0.05, seed=7).cycles
    b = simulate(pts, "CP", noise=0.05, seed=7).cycles
    assert a.equals(b) and not a.equals(clean)
    assert np.std(np.log(a / clean)) == pytest.approx(0.05, rel=0.1)


def test_whole_space_truth():
    pts = sample(SPACE, 300, seed=5).points
    m = fit_stepwise(pts.assign(cycles=simulate(pts, "CP").cycles), "cycles", transform="log")
    err = whole_space_errors(m, SPACE, "CP", chunk_size=200_000)
    assert err.size == 933_120 and np.median(err) < 0.1
    seen = []
    part = whole_space_errors(m, SPACE, "CP", chunk_size=200_000,
                              progress=lambda done, total: seen.append((done, total)) or done < 400_000)
    assert seen == [(200_000, 933_120), (400_000, 933_120)]  # stopped after the second chunk
    np.testing.assert_array_equal(part, err[:400_000])


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda p: simulate(p.drop(columns="simd"), "CP"), "lack column 'simd'"),
        (lambda p: simulate(p.assign(simd=0), "CP"), "'simd': rows 1"),
        (lambda p: simulate(p, "LULESH"), "unknown kernel"),
        (lambda p: simulate(p, "CP", noise=-1), "from 0 to 1"),
        (lambda p: simulate(p, "CP", noise=float("nan")), "from 0 to 1"),
        (lambda p: simulate(p, "CP", noise=1e300), "from 0 to 1"),
        (lambda p: simulate(p, dataclasses.replace(KERNELS["CP"], f_mem=0.9, f_const=0.5)), "more than 1"),
        (lambda p: simulate(p, dataclasses.replace(KERNELS["CP"], blocks=0)), "blocks must be positive"),
    ],
)
def test_bad_input(call, pattern):
    with pytest.raises(GpudseError, match=pattern):
        call(pd.DataFrame([BASE] * 3))


@pytest.mark.slow
def test_cli_loop_sample_simulate_fit(tmp_path, capsys):
    s, r, m = tmp_path / "s.csv", tmp_path / "r.csv", tmp_path / "m.json"
    assert main(["sample", "stargazer", "-n", "200", "--seed", "1", "-o", str(s)]) == 0
    assert main(["simulate", str(s), "--kernel", "matMul", "-o", str(r)]) == 0
    res = pd.read_csv(r)
    assert set(PARAMETERS) <= set(res.columns) and {"cycles", "cycles_trimmed", "ipc"} <= set(res.columns)
    assert main(["fit", str(r), "--response", "cycles", "--params", ",".join(PARAMETERS), "--transform", "log",
                 "-o", str(m), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"blk"' in out
