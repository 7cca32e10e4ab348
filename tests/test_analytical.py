"""Analytical models (paper 001 §3, §5; paper 004 §2): every equation pinned to hand-computed values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gpudse_core.sim.analytical import (FIG18, EqualAreaParams, comp_cycles, equal_area, equal_area_sweep,
                                    launch_overhead, mwp_cwp, pipeline_warp_parallelism)
from gpudse_core.cli import main
from gpudse_core.errors import GpudseError
from gpudse_core.sim.wfg import FIGURE1, WFGError, analyze, load_wfg

from conftest import ROOT


# ---- 001 §3.1, eq. 1 and Table 4 ------------------------------------------------------------------
def test_launch_overhead_eq1_table4():
    assert launch_overhead(1, 0) == 17_600 + 16
    assert launch_overhead(1000, 10) == 16 * 1000 + 800 * 10 + 17_600  # 41,600 cycles = 0.026 ms at 1.6 GHz
    np.testing.assert_allclose(launch_overhead(np.array([2, 50]), 3), [17_600 + 32 + 2400, 17_600 + 800 + 2400])
    with pytest.raises(GpudseError, match="at least one thread block"):
        launch_overhead(0)
    with pytest.raises(GpudseError, match="negative"):
        launch_overhead(5, -1)


# ---- 001 §3.2, eqs. 2–5 ------------------------------------------------------------------------------
def test_pipeline_warp_parallelism_eqs_2_to_5():
    full, pwp = pipeline_warp_parallelism(24, 4, 3)  # 8800: 24-cycle pipeline, 4 issue cycles
    assert full == 6 and pwp == 3                    # "at least 6 active warps to hide the latency"
    assert comp_cycles(4, 10, 2) == 4 * (10 + 2)                                  # eq. 2
    assert comp_cycles(4, 10, 2, pipeline_latency=24, active_warps=3) == 4 * (6 / 3 * 10 + 2)   # eq. 5
    assert comp_cycles(4, 10, 2, pipeline_latency=24, active_warps=8) == 4 * (10 + 2)  # enough warps: eq. 2


def test_mwp_cwp_three_cases_by_hand():
    common = dict(mem_latency=420.0, departure_delay=10.0, mem_insts=10, issue_cycles=4, clock_ghz=1.0,
                  mem_bandwidth_gbps=1000.0, load_bytes_per_warp=128, active_sms=1, blocks=1, active_blocks_per_sm=1)
    # case 1: N = 4 warps. MWP = min(420/10, 4, BW: 1000/(128/420)) = 4; Comp = 4*(20+10) = 120;
    # Mem = 4200; CWP = min(4320/120, 4) = 4 -> (4200 + 120 + 120/10*3) = 4356
    r = mwp_cwp(active_warps=4, comp_insts=20, **common)
    assert (r["case"], r["mwp"], r["cwp"], r["cycles"]) == (1, 4, 4, pytest.approx(4356))
    # case 2 (memory bound): N = 64: MWP = 42, CWP = min(36, 64) = 36 ... CWP < MWP -> compute bound? choose
    # comp so that CWP >= MWP: comp_insts = 2 -> Comp = 48, CWP = min(4248/48 = 88.5, 64) = 64 >= 42
    r = mwp_cwp(active_warps=64, comp_insts=2, **common)
    assert r["case"] == 2 and r["mwp"] == 42 and r["cwp"] == 64
    assert r["cycles"] == pytest.approx(4200 * 64 / 42 + 48 / 10 * 41)
    # case 3 (compute bound): comp_insts = 400 -> Comp = 1640, CWP = 5840/1640 = 3.56 < MWP = 42
    r = mwp_cwp(active_warps=64, comp_insts=400, **common)
    assert r["case"] == 3 and r["cwp"] == pytest.approx(5840 / 1640)
    assert r["cycles"] == pytest.approx(420 + 1640 * 64)


def test_mwp_bandwidth_limit_and_repetitions():
    r = mwp_cwp(mem_latency=400, departure_delay=4, active_warps=64, mem_insts=1, comp_insts=1, clock_ghz=1.0,
                mem_bandwidth_gbps=64, load_bytes_per_warp=128, active_sms=2, blocks=40, active_blocks_per_sm=2)
    # BW_per_warp = 1 * 128 / 400 = 0.32 GB/s; MWP_peak_BW = 64 / (0.32 * 2) = 100 -> MWP = min(100, 100, 64)
    assert r["mwp"] == 64 and r["rep"] == 10
    r = mwp_cwp(mem_latency=400, departure_delay=4, active_warps=64, mem_insts=1, comp_insts=1, clock_ghz=1.0,
                mem_bandwidth_gbps=16, load_bytes_per_warp=128, active_sms=2)
    assert r["mwp"] == pytest.approx(16 / 0.64)  # bandwidth-limited MWP


@pytest.mark.parametrize("bad", ["mem_latency", "active_warps", "mem_insts", "blocks"])
def test_mwp_cwp_rejects_non_positive(bad):
    kw = dict(mem_latency=400, departure_delay=4, active_warps=8, mem_insts=1, comp_insts=1)
    kw[bad] = 0
    with pytest.raises(GpudseError, match=bad):
        mwp_cwp(**kw)


# ---- 001 §5.2, eqs. 34–41 and Fig. 18 -----------------------------------------------------------------
def test_equal_area_equations_by_hand():
    p = EqualAreaParams()
    r = equal_area(128, 2000, 104, 20)
    nsm = 16
    smem = (118.88 - 16 * 3.99 - 2000 * 20 * 0.352e-3) / (16 * 0.144e-3)       # (39) with the fixed area
    assert r["smem_words"] == pytest.approx(smem)
    assert r["r_m"] == pytest.approx(2 / math.sqrt(smem))                        # (41)
    assert r["threads_full_smem"] == pytest.approx(nsm * smem / 3)               # (37)
    assert r["threads_full_bw"] == pytest.approx(104 * 400 / (1.5 * 4))          # (38): 6,933 threads
    eff = min(2000, nsm * smem / 3, 104 * 400 / 6)                               # (36)
    eta = min(1, eff / (128 * (1 + 400 * 2 / math.sqrt(smem))))                  # (35)
    assert r["eta"] == pytest.approx(eta) and r["performance_gflops"] == pytest.approx(128 * 1.5 * eta)  # (34)
    assert p.pes_per_sm == 8


@pytest.mark.parametrize("bw, regs, expected", FIG18)
def test_fig18_optima(bw, regs, expected):
    opt = equal_area_sweep(bw, regs)
    assert opt.optimum_n_pe == expected
    assert opt.limited_by in ("pe", "scratchpad", "bandwidth")


def test_fig18_limiting_factors_as_001_section_5_3():
    assert equal_area_sweep(104, 30).threads_limited_by == "scratchpad"   # Fig. 18(a)
    assert equal_area_sweep(32, 10).threads_limited_by == "bandwidth"     # Fig. 18(f)


def test_equal_area_bad_input():
    with pytest.raises(GpudseError, match="no room for scratchpad"):
        equal_area_sweep(104, 30, n_pe=[400, 480])  # 60 SMs x 3.99 mm² > 118.88 mm²
    with pytest.raises(GpudseError, match="n_pe must be positive"):
        equal_area(0, 1000, 104, 10)
    with pytest.raises(GpudseError, match="total_area must be positive"):
        equal_area(128, 1000, 104, 10, EqualAreaParams(total_area=0))
    assert equal_area(216, 10000, 104, 30)["feasible"] is False


def test_cli_equal_area(capsys):
    assert main(["equal-area", "--bandwidth", "104", "--regs-per-thread", "30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["optimum_n_pe"] == 160 and set(doc) >= {"n_threads", "performance_gflops", "limited_by"}
    assert main(["equal-area"]) == 0
    out = capsys.readouterr().out
    assert out.count("GB/s") == 6 and "184" in out


# ---- 004 §2: the work flow graph -------------------------------------------------------------------------
def test_figure1_worked_example():
    r = analyze(FIGURE1)
    assert r.latency_comp == 1 and r.cyc_compute == 16 and r.nbc_avg == 8
    assert r.arc_weights["M->C1"] == 20 and r.latency_exposed == 130
    assert r.dependence_adjustments == {"M->C1": 130}
    assert r.warp_latency == 4 + 4 + 130 + 4


def test_shipped_figure1_file_matches(tmp_path):
    assert analyze(load_wfg(ROOT / "data/wfg/figure1.yaml")).latency_exposed == 130


def test_loop_and_divergent_branch_by_hand():
    r = analyze(load_wfg(ROOT / "data/wfg/loop_branch.yaml"))
    # init 2 insts (8) + head 9 evaluations (36) + 8 x (load that work + acc 8) + barrier 4 + both sides of
    # the divergent branch (16 + 4) + store that work
    assert r.cyc_compute == 8 + 36 + 96 + 4 + 20 + 4
    assert (r.num_mem, r.num_sync, r.num_bytes) == (9, 1, 9 * 128)
    assert r.nbc_avg == pytest.approx(168 / 11)


def test_eq1_eq2_with_several_blocks():
    doc = json.loads(json.dumps(FIGURE1))
    doc["hardware"]["active_blocks"] = 4
    doc["kernel"].update(wlp_local=4, wlp_avg=8, ilp_local=1, ilp_avg=2)
    r = analyze(doc)
    assert r.wlp_effect == (4 + 3 * 8) / 4 and r.ilp_effect == (1 + 3 * 2) / 4
    assert r.latency_comp == max(1, 24 / (4 * r.ilp_effect * r.wlp_effect))


@pytest.mark.parametrize(
    "mutate, pattern",
    [
        (lambda d: d.pop("hardware"), "'hardware' is missing"),
        (lambda d: d["hardware"].pop("memory_latency"), "'memory_latency' is missing"),
        (lambda d: d["hardware"].update(simd_width=0), "'simd_width' must be positive"),
        (lambda d: d["kernel"]["nodes"][2].update(bytes=-4), "'bytes' must be positive"),
        (lambda d: d["kernel"]["arcs"].append(["C1", "C3"]), "not a loop|does not reduce"),
        (lambda d: d["kernel"]["arcs"].append(["C1", "ghost"]), "unknown node 'ghost'"),
        (lambda d: d["kernel"]["nodes"].append({"id": "Z", "type": "X"}), "not C, M, S or B"),
        (lambda d: d["kernel"]["nodes"].append({"id": "lonely", "type": "C"}), "does not reduce"),
        (lambda d: d["kernel"].update(dependences=[["C1", "M"]]), "from a memory node"),
    ],
)
def test_wfg_bad_input(mutate, pattern):
    doc = json.loads(json.dumps(FIGURE1))
    mutate(doc)
    with pytest.raises(WFGError, match=pattern):
        analyze(doc)


def test_cli_wfg(tmp_path, capsys):
    assert main(["wfg", str(ROOT / "data/wfg/figure1.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["latency_exposed"] == 130 and doc["cyc_compute"] == 16
    bad = tmp_path / "g.json"
    bad.write_text("{ nope")
    assert main(["wfg", str(bad)]) == 2
    assert "malformed JSON" in capsys.readouterr().err
