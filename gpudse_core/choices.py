"""The names of every choice the CLI and the pages offer, importable without NumPy.

The command line builds its parser (and prints ``--help``) from these tuples before any argument is
read, so this module imports nothing heavy. The modules that implement each choice import their
names from here: one list of names per choice.
"""

from __future__ import annotations

PRESETS = {  # name: file in gpudse_core/_data/presets (data/presets in a checkout)
    "stargazer": "stargazer.yaml",
    "lee-brooks": "lee-brooks.yaml",
    "zatel": "zatel.yaml",
    "mgpusim": "mgpusim.yaml",
}
SAMPLING_METHODS = ("uniform", "lhs")
PER_DIM_MODES = ("count", "subgrid")

TRANSFORMS = ("none", "log", "sqrt")
FIT_TRANSFORMS = TRANSFORMS + ("auto",)  # stepwise fits: auto = chosen by leave-one-out error
CRITERIA = ("adjr2", "aic", "bic", "ftest")
# adjusted-R² thresholds θ/φ: relative (a share of the model's R², Stargazer 1.0 and Fig. 5) or absolute (§5.2's text)
THRESHOLD_RULES = ("relative", "absolute")
# how the stepwise model treats outlying rows: huber (its search rerun on Huber pseudo-observations, the
# default) or none (least squares throughout, Algorithm 1 as written)
ROBUST_FITS = ("huber", "none")
INTERACTION_FORMS = ("full", "restricted", "adaptive")  # adaptive: restricted + F-tested full parts
KNOT_PLACEMENTS = ("even", "quantile", "distinct")  # distinct: quantiles of the distinct values
SCALES = ("linear", "log2")  # the scale a numeric parameter is modelled on (a space file's `scale:` key)
SCALE_MODES = ("auto", "linear")  # auto: space file's scale, else log2 for powers of two / geometric series
FIT_PRESETS = ("stargazer",)  # gpudse fit --preset: the paper's exact settings (stepwise.PAPER_SETTINGS)
MAX_ORDERS = (2, 3)  # highest interaction order the stepwise search tries
SPLINE_NORMS = ("harrell", "none")

# Model kinds (gpudse_core.model.registry): "stepwise" is the robust default interpretable model,
# "paper" Stargazer as written (the authors' Stargazer 1.0 exactly), "auto" the choice by cross-validation.
MODEL_KINDS = ("auto", "stepwise", "paper", "ebm", "forest", "boosting", "hybrid")
# Candidates that --model auto cross-validates, simplest and most interpretable first (a tie in
# cross-validation goes to the earlier one). "+2way"/"+3way" set the stepwise search's highest
# interaction order (pairs only / three-way terms too); "paper" is pairs only, as released.
AUTO_CANDIDATES = ("stepwise+2way", "paper", "stepwise+3way", "ebm", "forest", "boosting", "hybrid")
# how auto picks among them (gpudse_core.model.auto): the default first, then the rule before it
AUTO_RULES = ("one-se", "lowest")

# Stargazer Table 4's eleven applications, in the order of the paper (gpudse_core.sim.simulator)
KERNELS = ("AES", "BFS", "CP", "LPS", "RAY", "STO", "backprop", "bfs", "hotspot", "nw", "matMul")

# MGPUSim (gpudse_core.sim.mgpusim): the benchmarks sims/mgpusim runs, and the design parameters it
# takes (the R9 Nano builder's settings; data/presets/mgpusim.yaml)
MGPUSIM_BENCHMARKS = ("matmul", "fir", "aes", "kmeans", "bfs", "stencil2d")
MGPUSIM_PARAMETERS = ("cu_per_sa", "sa", "l2_kb", "mem_banks", "line", "freq_mhz")

# Names a parameter or results column may not take: the command backend's placeholders
# ({config}, {run_dir}, …) and the columns gpudse itself adds to tables (a parameter named
# "config" must not replace the {config} placeholder). Space files, uploads and campaigns refuse them.
RESERVED_NAMES = ("config", "run_dir", "point", "attempt", "design_index", "predicted", "bounded", "extrapolation",
                  "status", "error", "log_tail")

# A results or measured table's ``status`` that means the configuration ran (compared stripped, lower-case);
# any other status is a failed configuration: uploads keep it as a failure, explore never recommends it.
OK_STATUS = ("ok", "success", "succeeded", "done", "")

# Columns simulators write beside the design parameters: the built-in simulator's outputs and the
# GPGPU-Sim statistics (with their totals). Without --params, fit and validate never take them for
# parameters (a model of cycles on cycles_trimmed and ipc has R² 1 and says nothing).
SIMULATOR_OUTPUTS = ("cycles", "cycles_trimmed", "ipc", "compute_cycles", "memory_cycles", "launch_cycles",
                     "tail_cycles")
GPGPUSIM_METRICS = ("gpu_sim_cycle", "gpu_tot_sim_cycle", "gpu_sim_insn", "gpu_tot_sim_insn", "gpu_ipc", "gpu_tot_ipc",
                    "L1D_total_cache_miss_rate", "L2_total_cache_miss_rate", "bwutil", "dram_eff",
                    "rt_avg_efficiency", "insn", "kernels")
MGPUSIM_METRICS = ("kernel_time_s", "kernel_cycles", "simulated_end_s", "l1v_hit_rate", "l1v_hits", "l1v_misses",
                   "l1v_mshr_hits", "l2_hit_rate", "l2_hits", "l2_misses", "l2_mshr_hits", "dram_reads", "dram_writes",
                   "dram_read_bytes", "dram_write_bytes", "instructions", "valu_instructions", "ipc", "wall_seconds",
                   # the kernels at the command processor (without the PCIe launch), each code object's share,
                   # what they launched and how full the CUs were
                   "kernel_exec_s", "kernel_exec_cycles", "launch_overhead_s", "kernel_launches", "kernel_codes",
                   "kernel1_exec_s", "kernel2_exec_s", "kernel3_exec_s", "kernel4_exec_s", "work_groups",
                   "work_groups_per_launch", "wavefronts", "occupancy", "simd_busy", "l1v_tlb_hit_rate",
                   "l1v_tlb_hits", "l1v_tlb_misses", "l2_tlb_hit_rate", "l2_tlb_hits", "l2_tlb_misses",
                   "dram_bandwidth_gbs", "verified",
                   # MGPUSim's CPI stack (cycles per instruction by activity), the mean over the CUs that ran
                   "cpi_total", "cpi_valu", "cpi_vmem", "cpi_vmeminst", "cpi_lds", "cpi_idle", "cpi_fetch",
                   "cpi_branch", "cpi_special", "cpi_scalarinst", "cpi_scalarmem", "cpi_scalarmeminst")
# A design judged on a suite (simulate --backend mgpusim --benchmark matmul,fir): every metric per benchmark
# (matmul_kernel_exec_s) and the geometric mean of the times over the suite (geomean_kernel_exec_s)
MGPUSIM_GEOMEAN_METRICS = ("kernel_time_s", "kernel_exec_s", "kernel_cycles", "kernel_exec_cycles")
MGPUSIM_SUITE_METRICS = tuple(f"{b}_{m}" for b in MGPUSIM_BENCHMARKS for m in MGPUSIM_METRICS) + tuple(
    f"geomean_{m}" for m in MGPUSIM_GEOMEAN_METRICS)
OUTPUT_NAMES = frozenset(SIMULATOR_OUTPUTS + GPGPUSIM_METRICS + MGPUSIM_METRICS + MGPUSIM_SUITE_METRICS)
