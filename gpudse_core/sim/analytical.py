"""Analytical GPU performance models (paper 001: "Design space exploration for GPU-based architecture").

Every equation used, with its source:

Kernel launch overhead (001 §3.1, eq. 1; parameters of Table 4, GeForce 8800 GT at 1.6 GHz):

    Overhead_per_kernel = Overhead_per_block × Blocks + Overhead_per_arg × Args + Overhead_base     (1)
    Table 4: Overhead_base = 17,600 cycles (0.011 ms), Overhead_per_arg = 800 cycles (0.0005 ms),
             Overhead_per_block = 16 cycles (0.00001 ms).

Memory/compute warp parallelism (Hong & Kim, ISCA 2009, the model 001 §3 summarises and extends).
N = active warps per SM, Mem_L = average memory latency, Departure_delay = cycles between two memory
requests of consecutive warps:

    MWP_without_BW = min(Mem_L / Departure_delay, N)
    BW_per_warp    = f × Load_bytes_per_warp / Mem_L
    MWP_peak_BW    = Mem_bandwidth / (BW_per_warp × Active_SMs)
    MWP            = min(MWP_without_BW, MWP_peak_BW, N)
    Mem_cycles     = Mem_L × Mem_insts
    Comp_cycles    = Issue_cycles × (PWP_full / PWP × Comp_insts + Mem_insts)                       (001 eq. 5)
      with PWP_full = Pipeline_latency / Issue_cycles (001 eq. 3), PWP = min(PWP_full, N) (eq. 4);
      without the pipeline term this is eq. 2: Issue_cycles × (Comp_insts + Mem_insts)
    CWP            = min((Mem_cycles + Comp_cycles) / Comp_cycles, N)
    Rep            = Blocks / (Active_blocks_per_SM × Active_SMs)
    Case 1, not enough warps (MWP = CWP = N):
        cycles = (Mem_cycles + Comp_cycles + Comp_cycles / Mem_insts × (MWP − 1)) × Rep
    Case 2, memory bound (CWP ≥ MWP):
        cycles = (Mem_cycles × N / MWP + Comp_cycles / Mem_insts × (MWP − 1)) × Rep
    Case 3, compute bound (MWP > CWP):
        cycles = (Mem_L + Comp_cycles × N) × Rep
    Synchronisation: + Departure_delay × (MWP − 1) × Sync_insts × Active_blocks_per_SM × Rep

The equal-area model (001 §5.2, eqs. 34–41, Tables 8–10):

    Performance       = N_PE × f / CPI_exe × η                                                   (34)
    η                 = min(1, effective_threads / (N_PE × (1 + t_avg × r_m / CPI_exe)))          (35)
    effective_threads = min(n_threads, threads_full_smem, threads_full_BW)                         (36)
    threads_full_smem = N_SM × smem / workingset_min                                               (37)
    threads_full_BW   = bandwidth × t_avg / (f × bytes_per_thread)                                 (38)
    smem              = (total_area − N_SM × fixed_area_per_SM − n_threads × regs_per_thread ×
                         reg_area_per_word) / (N_SM × smem_area_per_word)                          (39)*
    N_SM              = N_PE / PEs_per_SM                                                          (40)
    r_m               = 2 / √smem  (blocked matrix multiplication)                                 (41)

    * Eq. 39 as printed omits the SMs' fixed area that Tables 8–10 list; the area left for
      scratchpad is what remains after the fixed area and the register files. With that term the
      sweep over N_PE = 128 … 216 (multiples of 8) and n_threads = 1,000 … 10,000 finds the optimum
      N_PE of each of Fig. 18's six captions (160, 160, 176, 176, 192, 184).

Performance is in GFLOP/s (one operation per PE per cycle at CPI_exe = 1 and f = 1.5 GHz).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import GpudseError

# ---- kernel launch overhead (001 §3.1) -------------------------------------------------------------


@dataclass(frozen=True)
class LaunchOverheadParams:
    """Table 4 (GeForce 8800 GT, core clock 1.6 GHz), in cycles."""

    base_cycles: float = 17_600.0
    per_arg_cycles: float = 800.0
    per_block_cycles: float = 16.0
    clock_ghz: float = 1.6


def launch_overhead(blocks: Any, args: Any = 0, params: LaunchOverheadParams = LaunchOverheadParams()) -> Any:
    """Eq. 1: cycles to launch a kernel of *blocks* thread blocks with *args* arguments (vectorised)."""
    b = np.asarray(blocks, dtype=float)
    a = np.asarray(args, dtype=float)
    if np.any(b < 1):
        raise GpudseError("launch overhead: a kernel has at least one thread block (blocks >= 1)")
    if np.any(a < 0):
        raise GpudseError("launch overhead: the number of arguments cannot be negative")
    out = params.per_block_cycles * b + params.per_arg_cycles * a + params.base_cycles
    return float(out) if np.ndim(out) == 0 else out


def cycles_to_ms(cycles: Any, clock_ghz: float) -> Any:
    return np.asarray(cycles, dtype=float) / (clock_ghz * 1e6)


# ---- MWP / CWP with pipeline warp parallelism (Hong & Kim; 001 §3.2) --------------------------------
CASES = {1: "not enough warps", 2: "memory bound", 3: "compute bound"}


def pipeline_warp_parallelism(pipeline_latency: Any, issue_cycles: Any, active_warps: Any) -> tuple[Any, Any]:
    """Eqs. 3–4: (PWP_full, PWP)."""
    full = np.asarray(pipeline_latency, dtype=float) / np.asarray(issue_cycles, dtype=float)
    return full, np.minimum(full, np.asarray(active_warps, dtype=float))


def comp_cycles(issue_cycles: Any, comp_insts: Any, mem_insts: Any, pipeline_latency: Any = None,
                active_warps: Any = None) -> Any:
    """Eq. 2, or eq. 5 when the pipeline latency and active warps are given."""
    ic = np.asarray(issue_cycles, dtype=float)
    if pipeline_latency is None:
        return ic * (np.asarray(comp_insts, dtype=float) + np.asarray(mem_insts, dtype=float))
    full, pwp = pipeline_warp_parallelism(pipeline_latency, ic, active_warps)
    return ic * (full / pwp * np.asarray(comp_insts, dtype=float) + np.asarray(mem_insts, dtype=float))


def mwp_cwp(*, mem_latency: Any, departure_delay: Any, active_warps: Any, mem_insts: Any, comp_insts: Any,
            issue_cycles: Any = 4.0, pipeline_latency: Any = None, clock_ghz: Any = 1.6, mem_bandwidth_gbps: Any = 57.6,
            load_bytes_per_warp: Any = 128.0, active_sms: Any = 14, blocks: Any = 1, active_blocks_per_sm: Any = 1,
            sync_insts: Any = 0) -> dict[str, Any]:
    """Hong & Kim's execution-cycle estimate with 001's PWP extension; every argument may be an array.

    Returns MWP, CWP, the case (1, 2, 3), Mem_cycles, Comp_cycles, Rep and total cycles.
    """
    f = lambda x: np.asarray(x, dtype=float)  # noqa: E731
    mem_l, dep, n = f(mem_latency), f(departure_delay), f(active_warps)
    mem_i, comp_i = f(mem_insts), f(comp_insts)
    for name, v in (("mem_latency", mem_l), ("departure_delay", dep), ("active_warps", n),
                    ("issue_cycles", f(issue_cycles)), ("clock_ghz", f(clock_ghz)),
                    ("mem_bandwidth_gbps", f(mem_bandwidth_gbps)), ("load_bytes_per_warp", f(load_bytes_per_warp)),
                    ("active_sms", f(active_sms)), ("blocks", f(blocks)),
                    ("active_blocks_per_sm", f(active_blocks_per_sm))):
        if np.any(v <= 0):
            raise GpudseError(f"MWP/CWP model: {name} must be positive")
    if np.any(mem_i <= 0):
        raise GpudseError("MWP/CWP model: mem_insts must be positive (a kernel with no memory instruction is "
                          "purely compute bound; use comp_cycles)")
    if np.any(comp_i < 0) or np.any(f(sync_insts) < 0):
        raise GpudseError("MWP/CWP model: instruction counts cannot be negative")
    bw_per_warp = f(clock_ghz) * f(load_bytes_per_warp) / mem_l  # GB/s per warp (GHz x bytes/cycle)
    mwp_peak_bw = f(mem_bandwidth_gbps) / (bw_per_warp * f(active_sms))
    comp_cyc = comp_cycles(issue_cycles, comp_i, mem_i, pipeline_latency, n if pipeline_latency is not None else None)
    rep = f(blocks) / (f(active_blocks_per_sm) * f(active_sms))
    out = warp_parallelism_cycles(mem_l, dep, n, mem_i, comp_cyc, mwp_peak_bw)
    sync = dep * (out["mwp"] - 1) * f(sync_insts) * f(active_blocks_per_sm)
    out["cycles"] = (out["cycles"] + sync) * rep
    out["rep"] = rep
    return {k: (v.item() if np.ndim(v) == 0 else v) for k, v in out.items()}


def warp_parallelism_cycles(mem_latency: Any, departure_delay: Any, active_warps: Any, mem_insts: Any,
                            comp_cycles_per_warp: Any, mwp_peak_bw: Any) -> dict[str, Any]:
    """The core of Hong & Kim's model for one repetition (one round of N active warps on an SM):
    MWP, CWP, the case, and cycles. Used by :func:`mwp_cwp` and the built-in simulator.

    MWP is kept in [1, N]: below one warp the case-2 formula would credit extra computation."""
    mem_l, n, mem_i, comp_cyc = (np.asarray(x, dtype=float) for x in (mem_latency, active_warps, mem_insts,
                                                                       comp_cycles_per_warp))
    mwp = np.minimum(np.minimum(mem_l / np.asarray(departure_delay, dtype=float), n),
                     np.asarray(mwp_peak_bw, dtype=float))
    mwp = np.clip(mwp, 1.0, n)  # at least the one warp that is waiting can access memory
    mem_cyc = mem_l * mem_i
    cwp = np.minimum((mem_cyc + comp_cyc) / comp_cyc, n)
    case1 = (mwp == n) & (cwp == n)
    case2 = ~case1 & (cwp >= mwp)
    cyc1 = mem_cyc + comp_cyc + comp_cyc / mem_i * (mwp - 1)
    cyc2 = mem_cyc * n / mwp + comp_cyc / mem_i * (mwp - 1)
    cyc3 = mem_l + comp_cyc * n
    cycles = np.where(case1, cyc1, np.where(case2, cyc2, cyc3))
    return {"mwp": mwp, "cwp": cwp, "case": np.where(case1, 1, np.where(case2, 2, 3)), "mem_cycles": mem_cyc,
            "comp_cycles": comp_cyc, "cycles": cycles}


# ---- the equal-area model (001 §5.2) ---------------------------------------------------------------
@dataclass(frozen=True)
class EqualAreaParams:
    """Table 10 (areas in mm², frequency in GHz, latencies in cycles)."""

    total_area: float = 118.88
    fixed_area_per_sm: float = 3.99
    smem_area_per_word: float = 0.144e-3
    reg_area_per_word: float = 0.352e-3
    pes_per_sm: int = 8
    cpi_exe: float = 1.0
    clock_ghz: float = 1.5
    t_avg: float = 400.0
    bytes_per_thread: float = 4.0
    workingset_min: float = 3.0

    def check(self) -> None:
        for k, v in asdict(self).items():
            if not v > 0:
                raise GpudseError(f"equal-area model: {k} must be positive (got {v})")


LIMITS = ("pe", "scratchpad", "bandwidth", "threads")


def equal_area(n_pe: Any, n_threads: Any, bandwidth_gbps: Any, regs_per_thread: Any,
               params: EqualAreaParams = EqualAreaParams()) -> dict[str, Any]:
    """Eqs. 34–41 (with the fixed per-SM area in eq. 39), vectorised over every argument.

    Points whose area leaves no scratchpad get performance 0 and ``feasible`` False.
    """
    params.check()
    npe = np.asarray(n_pe, dtype=float)
    nthr = np.asarray(n_threads, dtype=float)
    bw = np.asarray(bandwidth_gbps, dtype=float)
    regs = np.asarray(regs_per_thread, dtype=float)
    for name, v in (("n_pe", npe), ("n_threads", nthr), ("bandwidth_gbps", bw)):
        if np.any(v <= 0):
            raise GpudseError(f"equal-area model: {name} must be positive")
    if np.any(regs < 0):
        raise GpudseError("equal-area model: regs_per_thread cannot be negative")
    nsm = npe / params.pes_per_sm                                                           # (40)
    left = params.total_area - nsm * params.fixed_area_per_sm - nthr * regs * params.reg_area_per_word
    smem = left / (nsm * params.smem_area_per_word)                                         # (39)*
    feasible = smem > 0
    safe = np.where(feasible, smem, 1.0)
    r_m = 2.0 / np.sqrt(safe)                                                               # (41)
    full_smem = nsm * safe / params.workingset_min                                          # (37)
    full_bw = bw * params.t_avg / (params.clock_ghz * params.bytes_per_thread)              # (38) GB/s / GHz = B/cycle
    eff = np.minimum(np.minimum(nthr, full_smem), full_bw)                                  # (36)
    eta = np.minimum(1.0, eff / (npe * (1 + params.t_avg * r_m / params.cpi_exe)))          # (35)
    perf = np.where(feasible, npe * params.clock_ghz / params.cpi_exe * eta, 0.0)           # (34) GFLOP/s
    limit = np.where(eta >= 1.0, 0, np.where(full_smem <= np.minimum(full_bw, nthr), 1,
                                             np.where(full_bw <= nthr, 2, 3)))
    names = ("performance_gflops", "eta", "smem_words", "r_m", "effective_threads", "threads_full_smem",
             "threads_full_bw", "n_sm", "feasible", "limit_code")
    values = np.broadcast_arrays(perf, eta, np.where(feasible, smem, 0.0), r_m, eff, full_smem, full_bw, nsm,
                                 feasible, limit)
    return {k: (v.item() if np.ndim(v) == 0 else v) for k, v in zip(names, values)}


@dataclass
class EqualAreaOptimum:
    bandwidth_gbps: float
    regs_per_thread: float
    optimum_n_pe: int
    n_threads: int
    performance_gflops: float
    limited_by: str
    threads_limited_by: str
    curves: dict[int, np.ndarray]  # N_PE -> performance over n_threads (for Fig. 18 plots)
    n_threads_grid: np.ndarray

    def to_dict(self) -> dict:
        return {"bandwidth_gbps": self.bandwidth_gbps, "regs_per_thread": self.regs_per_thread,
                "optimum_n_pe": self.optimum_n_pe, "n_threads": self.n_threads,
                "performance_gflops": self.performance_gflops, "limited_by": self.limited_by,
                "threads_limited_by": self.threads_limited_by}


FIG18 = [(104, 30, 160), (32, 30, 160), (104, 20, 176), (32, 20, 176), (104, 10, 192), (32, 10, 184)]


def equal_area_sweep(bandwidth_gbps: float, regs_per_thread: float, n_pe: Any = range(128, 217, 8),
                     n_threads: Any = range(1000, 10001), params: EqualAreaParams = EqualAreaParams()
                     ) -> EqualAreaOptimum:
    """Fig. 18: the best (N_PE, n_threads); ties go to the smallest N_PE, then fewest threads.

    ``limited_by`` is what bounds performance at the optimum: ``pe`` (η = 1, the PEs are saturated),
    ``scratchpad`` or ``bandwidth``. ``threads_limited_by`` is the cap on effective threads at the
    optimum N_PE: where effective threads peak as n_threads grows, the smaller of threads_full_smem
    and threads_full_BW (eqs. 37–38) — 001 §5.3's "effective_threads limited by" for each panel."""
    pes = np.asarray(list(n_pe), dtype=float)
    thr = np.asarray(list(n_threads), dtype=float)
    if pes.size == 0 or thr.size == 0:
        raise GpudseError("equal-area sweep: give at least one N_PE and one thread count")
    res = equal_area(pes[:, None], thr[None, :], bandwidth_gbps, regs_per_thread, params)
    perf = res["performance_gflops"]
    if not np.any(res["feasible"]):
        raise GpudseError(f"equal-area sweep: for every N_PE the SMs' fixed area and the register files "
                          f"({regs_per_thread} registers/thread) leave no room for scratchpad in "
                          f"{params.total_area} mm²; use fewer PEs, threads or registers")
    best = float(perf.max())
    i, j = np.argwhere(perf >= best * (1 - 1e-12))[0]  # row-major: smallest N_PE, then fewest threads
    # where effective threads peak along the n_threads axis at the optimum N_PE, which cap binds?
    k = int(np.argmax(res["effective_threads"][i]))
    smem_cap, bw_cap = res["threads_full_smem"][i, k], res["threads_full_bw"][i, k]
    threads_cap = "scratchpad" if smem_cap <= bw_cap else "bandwidth"
    code = int(res["limit_code"][i, j])
    limited = LIMITS[code] if code != 3 else threads_cap  # n_threads itself: name the cap it runs into
    return EqualAreaOptimum(float(bandwidth_gbps), float(regs_per_thread), int(pes[i]), int(thr[j]), best,
                            limited, threads_cap, {int(p): perf[k] for k, p in enumerate(pes)}, thr)
