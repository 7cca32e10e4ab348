"""The built-in "simulator": an analytical GPU model over Stargazer's design space (Table 2 + Table 3).

It lets the whole exploration loop run on a laptop without GPGPU-Sim. It is not GPGPU-Sim and does
not reproduce its cycle counts; it responds to the ten Table 2 parameters in the directions, and
with the interactions, that Stargazer reports (§7.1, Fig. 3): SIMD width dominant for most kernels,
#blk important for the memory-bound matMul and BFS, nw driven by shared-memory ports, BFS/bfs by the
DRAM scheduler queue, interactions with #blk, and the tail effect of §7.2.

Per design point (vectorised over a DataFrame of points), for one kernel profile:

* Fixed baseline (Table 3): 30 cores at 325 MHz, no L1/L2 data cache, 8 DRAM controllers × 2 chips
  of GDDR3 at 800 MHz → 8 × 2 × 4 B × 2 (DDR) × 800/325 ≈ 315 bytes per core cycle of DRAM peak.
* Compute per warp (cycles): issue = ⌈lanes / simd⌉ per instruction (lanes = active threads of a
  warp; nw's 16-thread blocks cannot use SIMD beyond 16), plus shared-memory instructions at
  max(issue, ⌈lanes × conflicts / (4 × smp)⌉), constant-memory instructions at ⌈distinct / ccp⌉ plus
  misses of a constant cache of c$ KB against the kernel's constant footprint, and texture
  instructions at issue plus misses of a t$ KB texture cache.
* Global memory: a warp's memory instruction becomes 1 + 7u / intra transactions of 32 bytes (u: the
  kernel's uncoalesced share; intra: intra-warp coalescing width); inter-warp coalescing removes a
  share (inter − 2)/8 of the kernel's inter-warp-shared traffic. DRAM efficiency falls with a short
  scheduler queue for irregular kernels: 1 − irregular × 12 / dramq. Memory latency is 280 cycles
  plus DRAM transfer.
* Warp parallelism: Hong & Kim's MWP/CWP core (:func:`gpudse_core.analytical.warp_parallelism_cycles`)
  with N = active warps of the blocks a core runs at once (≤ #blk), MWP further limited by the MSHRs
  (N × min(mshr, mlp) / mlp: a warp needs mlp MSHRs to keep its independent loads in flight) and by
  the core's share of DRAM bandwidth.
* Scheduling and the tail (Stargazer §7.2): blocks go round-robin to the 30 cores; the busiest core
  runs ⌈blocks / 30⌉ blocks in rounds of #blk. Raw time is that core's; the tail is the time after
  the less-loaded cores finish, and the tail-trimmed time weights it by the share of cores it employs.
* Launch overhead: 001 eq. 1 (Table 4 values scaled from 1.6 GHz to the 325 MHz core clock) per launch.

Outputs: ``cycles`` (raw), ``cycles_trimmed``, ``ipc`` (thread instructions per cycle) and a breakdown
``compute_cycles``, ``memory_cycles`` (exposed), ``launch_cycles``, ``tail_cycles``. Optional seeded
multiplicative log-normal noise (``noise`` = σ) imitates measurement noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import GpudseError
from .analytical import LaunchOverheadParams, launch_overhead, warp_parallelism_cycles

PARAMETERS = ("blk", "cc", "tc", "smp", "ccp", "simd", "mshr", "dramq", "intra", "inter")
MAX_NOISE = 1.0  # σ of log noise: a factor e^±1 for one σ is already far beyond any measurement
CORES = 30
CORE_MHZ = 325.0
DRAM_BYTES_PER_CYCLE = 8 * 2 * 4 * 2 * 800.0 / CORE_MHZ
BASE_MEM_LATENCY = 280.0
WARP = 32
SEGMENT = 32.0


@dataclass(frozen=True)
class KernelProfile:
    """What a kernel does, in the terms the model needs. Fractions are of its instructions."""

    name: str
    description: str
    threads_per_block: int
    blocks: int
    insts: float  # thread instructions in all launches (Stargazer Table 4 "Inst Count")
    launches: int = 1
    args: int = 4
    f_mem: float = 0.05  # global memory instructions
    f_shared: float = 0.0
    f_const: float = 0.0
    f_tex: float = 0.0
    uncoalesced: float = 0.1  # share of a warp's accesses that do not coalesce
    inter_share: float = 0.0  # share of traffic mergeable across warps
    irregular: float = 0.0  # DRAM row-locality sensitivity (0 streaming … 1 random)
    mlp: float = 1.0  # independent loads a warp can have in flight
    const_footprint_kb: float = 1.0
    tex_footprint_kb: float = 1.0
    shared_conflicts: float = 1.0
    divergence: float = 1.0  # average share of a warp's lanes active

    def check(self) -> None:
        for k in ("threads_per_block", "blocks", "insts", "launches"):
            if not getattr(self, k) > 0:
                raise GpudseError(f"kernel {self.name!r}: {k} must be positive")
        for k in ("f_mem", "f_shared", "f_const", "f_tex", "uncoalesced", "inter_share", "irregular"):
            if not 0 <= getattr(self, k) <= 1:
                raise GpudseError(f"kernel {self.name!r}: {k} must lie in [0, 1]")
        if self.f_mem + self.f_shared + self.f_const + self.f_tex > 1:
            raise GpudseError(f"kernel {self.name!r}: instruction fractions add up to more than 1")
        if self.f_mem <= 0:
            raise GpudseError(f"kernel {self.name!r}: f_mem must be positive (every kernel reads or writes memory)")
        if not 0 < self.divergence <= 1 or self.mlp <= 0:
            raise GpudseError(f"kernel {self.name!r}: divergence must be in (0, 1] and mlp positive")

    def to_dict(self) -> dict:
        return asdict(self)


# Stargazer Table 4: threads per block and instruction counts as printed; the rest from what the
# papers say about each program (§7.1, §8.2) and what the programs are known to do.
KERNELS: dict[str, KernelProfile] = {k.name: k for k in [
    KernelProfile("AES", "128-bit AES encryption of a 256 KB image; T-box lookups in shared and constant memory; "
                  "few blocks, so the tail effect shows (§7.2)", 256, 64, 28e6, f_mem=0.03, f_shared=0.22,
                  f_const=0.12, uncoalesced=0.05, const_footprint_kb=1.5, shared_conflicts=2.0),
    KernelProfile("BFS", "breadth-first search on 65,536 nodes (GPGPU-Sim suite); irregular, memory bound",
                  512, 128, 17e6, launches=8, f_mem=0.22, uncoalesced=0.2, irregular=1.0, mlp=1.5,
                  divergence=0.6),
    KernelProfile("CP", "Coulombic potential on a 256×256 grid; atoms in constant memory; compute bound",
                  128, 512, 126e6, f_mem=0.01, f_const=0.08, const_footprint_kb=1, uncoalesced=0.0),
    KernelProfile("LPS", "3-D Laplace solver on a 100³ grid, streaming through shared memory", 128, 625, 82e6,
                  f_mem=0.08, f_shared=0.18, uncoalesced=0.1, inter_share=0.3, mlp=2),
    KernelProfile("RAY", "ray tracing of a 256×256 image: heavy arithmetic, divergent", 128, 512, 71e6,
                  f_mem=0.02, f_tex=0.03, tex_footprint_kb=2, divergence=0.75, uncoalesced=0.2),
    KernelProfile("STO", "sliding-window MD5 over a 192 KB file; shared-memory buffers", 128, 384, 134e6,
                  f_mem=0.02, f_shared=0.14, shared_conflicts=1.5),
    KernelProfile("backprop", "training a layered neural network, 65,536 input nodes, two kernels", 512, 256,
                  193e6, launches=2, f_mem=0.04, f_shared=0.08, uncoalesced=0.1, mlp=2),
    KernelProfile("bfs", "breadth-first search on 65,536 nodes (Rodinia), two kernels per level", 512, 128, 28e6,
                  launches=24, f_mem=0.2, uncoalesced=0.25, irregular=1.0, mlp=1.2, divergence=0.5),
    KernelProfile("hotspot", "thermal simulation on a 500×500 grid; stencil through shared memory", 256, 961, 80e6,
                  f_mem=0.05, f_shared=0.2, uncoalesced=0.1, inter_share=0.2),
    KernelProfile("nw", "Needleman-Wunsch on 256×256 points: 16-thread blocks along diagonals, shared-memory "
                  "bound (§7.1)", 16, 16, 3.4e6, launches=32, f_mem=0.01, f_shared=0.5, shared_conflicts=16.0,
                  uncoalesced=0.3),
    KernelProfile("matMul", "CUDA SDK matrix multiply of 256×256 matrices with 8×8 blocks: memory bound at low "
                  "block concurrency (§7.1, Table 1)", 64, 1024, 78e6, f_mem=0.05, f_shared=0.12,
                  uncoalesced=0.3, inter_share=0.5, mlp=1),
]}


def _col(points: pd.DataFrame, name: str) -> np.ndarray:
    if name not in points.columns:
        raise GpudseError(f"the design points lack column {name!r}; the built-in simulator needs Stargazer's "
                          f"parameters {', '.join(PARAMETERS)}")
    x = pd.to_numeric(points[name], errors="coerce").to_numpy(float)
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        bad = np.flatnonzero(~(np.isfinite(x) & (x > 0)))
        raise GpudseError(f"column {name!r}: rows {', '.join(str(i + 1) for i in bad[:5])} are not positive numbers")
    return x


def simulate(points: pd.DataFrame, kernel: str | KernelProfile, noise: float = 0.0, seed: int | None = None
             ) -> pd.DataFrame:
    """Runtime of *kernel* at every design point (one row per point; see the module docstring)."""
    prof = KERNELS.get(kernel) if isinstance(kernel, str) else kernel
    if prof is None:
        raise GpudseError(f"unknown kernel {kernel!r}; built-in kernels: {', '.join(KERNELS)}")
    prof.check()
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0 <= noise <= MAX_NOISE:
        raise GpudseError(f"noise {noise!r}: give σ of the log-normal measurement noise, from 0 to {MAX_NOISE:g} "
                          f"(0.01 is 1 % noise)")
    blk, cc, tc, smp, ccp, simd, mshr, dramq, intra, inter = (_col(points, p) for p in PARAMETERS)

    lanes = min(prof.threads_per_block, WARP) * prof.divergence
    warps_per_block = math.ceil(prof.threads_per_block / WARP)
    total_warps = prof.blocks * warps_per_block * prof.launches
    insts_per_warp = prof.insts / (total_warps * min(prof.threads_per_block, WARP))
    mem_i = insts_per_warp * prof.f_mem
    comp_i = insts_per_warp * (1 - prof.f_mem - prof.f_shared - prof.f_const - prof.f_tex)

    issue = np.ceil(lanes / simd)
    shared = insts_per_warp * prof.f_shared * np.maximum(issue, np.ceil(lanes * prof.shared_conflicts / (4 * smp)))
    const_hit = np.minimum(1.0, cc / prof.const_footprint_kb)
    const = insts_per_warp * prof.f_const * (np.ceil(4 / ccp) * issue + (1 - const_hit) * 60.0)
    tex_hit = np.minimum(1.0, tc / prof.tex_footprint_kb)
    tex = insts_per_warp * prof.f_tex * (issue + (1 - tex_hit) * 80.0)
    comp_cycles = comp_i * issue + mem_i * issue + shared + const + tex

    transactions = 1 + prof.uncoalesced * 7.0 / intra
    traffic = transactions * SEGMENT * (1 - prof.inter_share * (inter - 2) / 8)
    efficiency = 1 - prof.irregular * 12.0 / dramq
    mem_latency = BASE_MEM_LATENCY + traffic / 8.0
    departure = 4.0 * transactions

    def round_cycles(blocks_now: np.ndarray) -> dict[str, np.ndarray]:
        n = np.maximum(blocks_now * warps_per_block, 1.0)
        bw_share = DRAM_BYTES_PER_CYCLE * efficiency / np.minimum(CORES, np.maximum(prof.blocks, 1))
        mwp_bw = bw_share * mem_latency / traffic
        mwp_mshr = n * np.minimum(mshr, prof.mlp) / prof.mlp  # a warp needs mlp MSHRs for all its loads
        res = warp_parallelism_cycles(mem_latency, departure, n, mem_i, comp_cycles, np.minimum(mwp_bw, mwp_mshr))
        return {"cycles": np.where(blocks_now > 0, res["cycles"], 0.0),
                "compute": np.where(blocks_now > 0, comp_cycles * n, 0.0)}

    def core_time(b: int) -> tuple[np.ndarray, np.ndarray]:
        """Cycles (and pure compute cycles) of a core that runs *b* blocks in rounds of #blk."""
        if b <= 0:
            z = np.zeros_like(blk)
            return z, z
        full = np.floor(b / blk)
        rest = b - full * blk
        r_full, r_rest = round_cycles(np.minimum(blk, b)), round_cycles(rest)
        return full * r_full["cycles"] + r_rest["cycles"], full * r_full["compute"] + r_rest["compute"]

    b_max = math.ceil(prof.blocks / CORES)
    busy = prof.blocks - (b_max - 1) * CORES  # cores that got b_max blocks; the others got b_max - 1
    t_max, c_max = core_time(b_max)
    t_less, _ = core_time(b_max - 1) if busy < CORES else (t_max, c_max)
    tail = t_max - t_less
    trimmed = t_less + tail * busy / CORES
    launch_params = LaunchOverheadParams()
    launch = launch_overhead(prof.blocks, prof.args) * CORE_MHZ / (launch_params.clock_ghz * 1000)
    per_launch = t_max + launch
    cycles = per_launch * prof.launches
    cycles_trimmed = (trimmed + launch) * prof.launches
    compute = np.minimum(c_max, t_max) * prof.launches
    if noise > 0:
        factor = np.exp(np.random.default_rng(seed).normal(0.0, noise, size=cycles.shape))
        cycles = cycles * factor
        cycles_trimmed = cycles_trimmed * factor
    return pd.DataFrame({
        "cycles": cycles, "cycles_trimmed": cycles_trimmed, "ipc": prof.insts / cycles,
        "compute_cycles": compute, "memory_cycles": np.maximum(t_max * prof.launches - compute, 0.0),
        "launch_cycles": np.full_like(cycles, launch * prof.launches), "tail_cycles": tail * prof.launches,
    }, index=points.index)


def whole_space_errors(model: Any, space: Any, kernel: str | KernelProfile, response: str = "cycles",
                       chunk_size: int = 1 << 18, progress: Callable[[int, int], Any] | None = None) -> np.ndarray:
    """Relative error of *model* at every point of *space* against the built-in simulator (the true
    error over the entire space, not a test sample). Streams the space in chunks; *progress(done,
    total)* is called after each chunk, and returning ``False`` stops with the errors so far."""
    out = []
    done = 0
    for _, frame in space.iter_chunks(chunk_size=chunk_size):
        truth = simulate(frame, kernel)[response].to_numpy()
        out.append(np.abs(model.predict(frame) - truth) / truth)
        done += len(frame)
        if progress is not None and progress(done, space.size) is False:
            break
    return np.concatenate(out) if out else np.zeros(0)
