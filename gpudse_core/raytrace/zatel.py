"""Zatel's pixel selection, GPU downscaling and result combination (002 §III, Fig. 3 steps 2–7).

2. Quantise the heatmap's colours with scikit-learn's K-means (k clusters, seeded), clustering the
   distinct colours weighted by their pixel counts (a 4K heatmap has few distinct colours); each
   cluster's coldness c is the pixel-weighted mean coldness of its colours. Clusters are numbered from
   hottest to coldest. Per-pixel time arrays are binned (1,024 levels) and clustered the same way.
3. Downscaling factor K = gcd of the component counts (SMs and memory partitions), or forced (it must
   divide every count); gcd 1 means no downscaling (K = 1, said so). The downscaled GPGPU-Sim config
   has those options divided by K (:class:`~gpudse_core.gpgpusim.GpgpuSimConfig`, rest byte-for-byte).
4. The frame is cut into chunks (32×2 by default). Fine-grained division deals chunks round-robin in
   row-major order (Fig. 6); when a row holds a multiple of K chunks that would repeat the same
   columns on every row (vertical stripes), so the chunk in row r, column c goes to (r + c) mod K —
   Fig. 6's diagonal pattern, still exactly balanced — and each group samples the whole scene. Coarse-grained division orders chunks by column band, then row, then
   column, and cuts that order into K equal runs. With c bands (c the divisor of K nearest
   √(K·W/H), rows = K/c) the groups are the rectangles of Fig. 5 when the chunk grid divides evenly,
   and near-rectangles otherwise. Either way every group has the same number of chunks ±1.
5. Per group, P = mean coldness of its pixels clamped to [0.3, 0.6] (eq. 1; bounds configurable) or a
   constant. Section blocks (32×2 by default) on the block grid that lie wholly inside the group are
   the candidates; round(P·M / block size) of them are chosen. Colour quotas follow the distribution of
   the candidates' dominant colours: ``uniform`` (as in the group), ``lintmp`` (eq. 2: weight n_j·c'_j
   with warmth c' = 1 − c) or ``exptmp`` (eq. 3: n_j·c'_j⁵ — eq. 3 prints c_j⁵, but the text amplifies
   *warm* colours, so warmth is raised to the fifth power). Quotas are rounded by largest remainder;
   when a colour runs out, random remaining blocks fill the rest. Seeded.
6. Outputs: ``group_{i}.coords`` (``x y`` per line), an overlay image, per-group statistics, the
   speedup of eq. 4 (181 · perc^−1.15 for perc ≥ 10 %, perc the traced percentage), and a self-check:
   the frame's total cost estimated from the selected pixels (each group's sum divided by its traced
   fraction) against the heatmap's own total.
7. Combining per-group results (§III-G/H): absolute metrics (cycles, instructions) are extrapolated
   by 1/P; IPC is summed across groups (the groups run side by side on the GPU: 20 + 50 = 70 IPC),
   rates are averaged; each metric's aggregation (sum, mean, hmean) can be changed. Optional
   exponential regression y = a·e^{b·p} through runs at several fractions, extrapolated to p = 1.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import GpudseError
from ..sim.gpgpusim import GpgpuSimConfig, parse_log
from .heatmap import Heatmap, rgb_coldness, unique_colours

DISTRIBUTIONS = ("uniform", "lintmp", "exptmp")
DIVISIONS = ("fine", "coarse")
DOWNSCALE_OPTIONS = {"sms": "-gpgpu_n_clusters", "mem": "-gpgpu_n_mem"}


class ZatelError(GpudseError):
    """A Zatel request cannot be carried out (bad sizes, bounds, K …)."""


# ---- step 2: colour quantisation ------------------------------------------------------------------
@dataclass
class Quantized:
    labels: np.ndarray  # H x W, cluster per pixel (0 = hottest)
    coldness: np.ndarray  # per cluster, in [0, 1]
    counts: np.ndarray  # pixels per cluster
    colours: np.ndarray  # per cluster: mean RGB (or grey level) for display


def quantize(hm: Heatmap, k: int = 5, seed: int = 0) -> Quantized:
    from sklearn.cluster import KMeans

    if k < 1:
        raise ZatelError("the number of colour clusters k must be at least 1")
    if hm.rgb is not None:
        palette, inverse, counts = unique_colours(hm.rgb)
        values = palette
        feats = palette.astype(np.float64)
        cold = rgb_coldness(palette).astype(np.float64)
    else:
        levels = np.minimum((hm.cost.ravel() * 1023).astype(np.int64), 1023)
        values, inverse, counts = np.unique(levels, return_inverse=True, return_counts=True)
        feats = (values / 1023.0)[:, None]
        cold = 1.0 - feats[:, 0]
    if len(values) < 2:
        raise ZatelError(f"{hm.source or 'the heatmap'}: every pixel has the same colour, so it says nothing about "
                         f"where the work is; render or upload a real heatmap")
    k_eff = int(min(k, len(values)))
    km = KMeans(n_clusters=k_eff, n_init=4, random_state=seed).fit(feats, sample_weight=counts)
    lab = km.labels_
    wsum = np.bincount(lab, weights=counts, minlength=k_eff)
    cluster_cold = np.bincount(lab, weights=counts * cold, minlength=k_eff) / wsum
    order = np.argsort(cluster_cold, kind="stable")  # hottest first
    remap = np.empty(k_eff, dtype=np.int64)
    remap[order] = np.arange(k_eff)
    labels = remap[lab][inverse].reshape(hm.shape).astype(np.int16)
    colours = np.stack([np.bincount(lab, weights=counts * feats[:, j], minlength=k_eff) / wsum
                        for j in range(feats.shape[1])], axis=-1)[order]
    return Quantized(labels, cluster_cold[order], wsum[order].astype(np.int64), colours)


# ---- step 3: downscaling -----------------------------------------------------------------------------
@dataclass
class Downscale:
    k: int
    counts: dict[str, int]
    scaled: dict[str, int]
    note: str = ""


def downscale_factor(counts: Mapping[str, int], force: int | None = None) -> Downscale:
    """K = gcd of the component counts (or *force*, which must divide each of them)."""
    if not counts:
        raise ZatelError("give the component counts to downscale (e.g. SMs and memory partitions)")
    for name, v in counts.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ZatelError(f"the number of {name} must be a whole number of at least 1 (got {v!r})")
    g = reduce(math.gcd, (int(v) for v in counts.values()))
    note = ""
    if force is not None:
        if force < 1:
            raise ZatelError("a forced K must be at least 1")
        bad = {n: v for n, v in counts.items() if v % force}
        if bad:
            raise ZatelError(f"K = {force} does not divide {', '.join(f'{n} = {v}' for n, v in bad.items())}; "
                             f"divisors of all counts: {[d for d in range(1, g + 1) if g % d == 0]}")
        k = int(force)
    else:
        k = g
        if g == 1:
            note = ("the component counts have gcd 1, so the GPU cannot be divided evenly: running undownscaled "
                    "(K = 1)")
    return Downscale(k, dict(counts), {n: int(v) // k for n, v in counts.items()}, note)


def downscale_config(cfg: GpgpuSimConfig, k: int, options: Sequence[str] = tuple(DOWNSCALE_OPTIONS.values()),
                     comment: str | None = "MODIFIED") -> GpgpuSimConfig:
    """A copy of *cfg* with each option divided by *k*; everything else unchanged byte-for-byte."""
    out = GpgpuSimConfig(list(cfg.lines), cfg.newline)
    for opt in options:
        v = cfg.get(opt)
        if v is None:
            raise ZatelError(f"the config has no {opt} option to downscale")
        try:
            n = int(v)
        except ValueError:
            raise ZatelError(f"{opt} = {v!r} is not a whole number") from None
        if n % k:
            raise ZatelError(f"{opt} = {n} is not divisible by K = {k}")
        if k > 1:
            out.set(opt, n // k, comment=comment)
    return out


def counts_from_config(cfg: GpgpuSimConfig) -> dict[str, int]:
    """SMs (clusters × cores per cluster) and memory partitions of a GPGPU-Sim config."""
    try:
        sms = int(cfg.get("-gpgpu_n_clusters")) * int(cfg.get("-gpgpu_n_cores_per_cluster") or 1)
        mem = int(cfg.get("-gpgpu_n_mem"))
    except (TypeError, ValueError):
        raise ZatelError("the config lacks -gpgpu_n_clusters or -gpgpu_n_mem") from None
    return {"sms": sms, "mem": mem}


# ---- step 4: dividing the image plane ---------------------------------------------------------------
def divide(shape: tuple[int, int], k: int, method: str = "fine", chunk: tuple[int, int] = (32, 2)) -> np.ndarray:
    """Group of every pixel (H×W int array); see the module docstring."""
    if method not in DIVISIONS:
        raise ZatelError(f"unknown division {method!r}; choose fine or coarse")
    h, w = shape
    cw, ch = chunk
    if cw < 1 or ch < 1:
        raise ZatelError(f"chunk size {cw}x{ch} must be positive")
    rows, cols = -(-h // ch), -(-w // cw)
    n = rows * cols
    if k > n:
        raise ZatelError(f"K = {k} is larger than the number of {cw}x{ch} chunks ({n}); use smaller chunks or K")
    if method == "fine":
        if cols % k == 0:  # round-robin would give every row the same pattern: vertical stripes
            r_idx, c_idx = np.divmod(np.arange(n), cols)
            grid = ((r_idx + c_idx) % k).reshape(rows, cols)
        else:
            grid = (np.arange(n) % k).reshape(rows, cols)
    else:
        divs = [d for d in range(1, k + 1) if k % d == 0]
        target = math.sqrt(k * w / h)
        c = min(divs, key=lambda d: (abs(d - target), d))
        r_idx, c_idx = np.divmod(np.arange(n), cols)
        band = c_idx * c // cols
        order = np.lexsort((c_idx, r_idx, band))
        grid = np.empty(n, dtype=np.int64)
        grid[order] = np.arange(n) * k // n
        grid = grid.reshape(rows, cols)
    return np.repeat(np.repeat(grid, ch, axis=0), cw, axis=1)[:h, :w].astype(np.int32)


# ---- step 5: selecting representative pixels ------------------------------------------------------------
@dataclass
class GroupSelection:
    group: int
    pixels: int
    mean_coldness: float
    fraction_target: float
    blocks: np.ndarray  # selected (block_row, block_col)
    block_colours: np.ndarray  # dominant colour of each selected block
    candidates: int
    quota: dict[int, int]
    traced_pixels: int = 0

    @property
    def fraction(self) -> float:
        return self.traced_pixels / self.pixels if self.pixels else 0.0


@dataclass
class Selection:
    groups: list[GroupSelection]
    block: tuple[int, int]
    mask: np.ndarray  # H x W bool: selected pixels
    distribution: str
    notes: list[str] = field(default_factory=list)

    def coordinates(self, g: int) -> np.ndarray:
        """(x, y) of every selected pixel of group *g*, row-major within each block."""
        bw, bh = self.block
        blocks = self.groups[g].blocks
        if blocks.size == 0:
            return np.zeros((0, 2), dtype=np.int64)
        dy, dx = np.divmod(np.arange(bw * bh), bw)
        ys = (blocks[:, 0:1] * bh + dy[None, :]).ravel()
        xs = (blocks[:, 1:2] * bw + dx[None, :]).ravel()
        return np.stack([xs, ys], axis=1)


def select_pixels(hm: Heatmap, quant: Quantized, groups: np.ndarray, *, block: tuple[int, int] = (32, 2),
                  distribution: str = "uniform", bounds: tuple[float, float] = (0.3, 0.6),
                  percent: float | None = None, seed: int = 0) -> Selection:
    if distribution not in DISTRIBUTIONS:
        raise ZatelError(f"unknown distribution {distribution!r}; choose {', '.join(DISTRIBUTIONS)}")
    lo, hi = bounds
    if not (0 <= lo <= hi <= 1):
        raise ZatelError(f"bounds {lo}, {hi} must satisfy 0 ≤ lower ≤ upper ≤ 1")
    if percent is not None and not 0 < percent <= 100:
        raise ZatelError(f"the percentage to trace must be in (0, 100] (got {percent})")
    h, w = hm.shape
    bw, bh = block
    if bw < 1 or bh < 1:
        raise ZatelError(f"block size {bw}x{bh} must be positive")
    if h < bh or w < bw:
        raise ZatelError(f"the {w}x{h} image is smaller than one {bw}x{bh} section block")
    br, bc = h // bh, w // bw
    k = int(quant.coldness.size)
    g_blocks = groups[: br * bh, : bc * bw].reshape(br, bh, bc, bw)
    gmin, gmax = g_blocks.min(axis=(1, 3)), g_blocks.max(axis=(1, 3))
    inside = gmin == gmax
    lab = quant.labels[: br * bh, : bc * bw].reshape(br, bh, bc, bw).transpose(0, 2, 1, 3).reshape(br * bc, -1)
    ids = np.repeat(np.arange(br * bc, dtype=np.int64) * k, lab.shape[1]) + lab.ravel()
    counts = np.bincount(ids, minlength=br * bc * k).reshape(br * bc, k)
    dominant = counts.argmax(axis=1).reshape(br, bc)
    pixel_cold = quant.coldness[quant.labels]
    n_groups = int(groups.max()) + 1
    pix_per_group = np.bincount(groups.ravel(), minlength=n_groups)
    cold_per_group = np.bincount(groups.ravel(), weights=pixel_cold.ravel(), minlength=n_groups) / \
        np.maximum(pix_per_group, 1)
    rng = np.random.default_rng(seed)
    chosen_blocks = np.zeros((br, bc), dtype=bool)
    out, notes = [], []
    warmth = 1.0 - quant.coldness
    for g in range(n_groups):
        cand = np.argwhere(inside & (gmin == g))  # (row, col) of candidate blocks
        m = int(pix_per_group[g])
        frac = (percent / 100.0) if percent is not None else float(np.clip(cold_per_group[g], lo, hi))
        want = int(round(frac * m / (bw * bh)))
        if want > len(cand):
            notes.append(f"group {g}: {want} blocks wanted but only {len(cand)} lie wholly inside it")
            want = len(cand)
        col = dominant[cand[:, 0], cand[:, 1]] if len(cand) else np.zeros(0, dtype=np.int64)
        n_j = np.bincount(col, minlength=k).astype(float)
        weight = {"uniform": n_j, "lintmp": n_j * warmth, "exptmp": n_j * warmth ** 5}[distribution]
        p = weight / weight.sum() if weight.sum() > 0 else n_j / max(n_j.sum(), 1)
        quota = _largest_remainder(p * want, want)
        chosen_parts = []
        leftover = []
        for j in range(k):
            idx = np.flatnonzero(col == j)
            idx = idx[rng.permutation(idx.size)]
            chosen_parts.append(idx[: quota[j]])
            leftover.append(idx[quota[j]:])
        chosen = np.concatenate(chosen_parts) if chosen_parts else np.zeros(0, dtype=np.int64)
        short = want - chosen.size
        if short > 0:  # a colour ran out: random blocks fill the rest
            rest = np.concatenate(leftover)
            chosen = np.concatenate([chosen, rest[rng.permutation(rest.size)[:short]]])
        sel = cand[np.sort(chosen)]
        chosen_blocks[sel[:, 0], sel[:, 1]] = True
        gs = GroupSelection(g, m, float(cold_per_group[g]), frac, sel, dominant[sel[:, 0], sel[:, 1]] if len(sel)
                            else np.zeros(0, dtype=np.int64), len(cand), {j: int(quota[j]) for j in range(k)},
                            int(len(sel) * bw * bh))
        out.append(gs)
    mask = np.zeros((h, w), dtype=bool)
    mask[: br * bh, : bc * bw] = np.repeat(np.repeat(chosen_blocks, bh, axis=0), bw, axis=1)
    return Selection(out, block, mask, distribution, notes)


def _largest_remainder(x: np.ndarray, total: int) -> np.ndarray:
    base = np.floor(x).astype(np.int64)
    left = total - int(base.sum())
    if left > 0:
        base[np.argsort(-(x - base), kind="stable")[:left]] += 1
    return base


# ---- step 6: outputs --------------------------------------------------------------------------------
def predicted_speedup(percent: float) -> float:
    """Eq. 4: speedup = 181 · perc^−1.15 (perc in %, fitted for perc ≥ 10 %)."""
    if percent <= 0:
        raise ZatelError("the traced percentage must be positive")
    return 181.0 * percent ** -1.15


def self_check(hm: Heatmap, groups: np.ndarray, sel: Selection) -> dict[str, float]:
    """Frame cost estimated from the selected pixels (per group, ÷ traced fraction) vs the true total."""
    total = float(hm.cost.sum())
    picked = np.bincount(groups.ravel(), weights=(hm.cost * sel.mask).ravel(), minlength=len(sel.groups))
    est = sum(float(picked[gs.group]) / gs.fraction for gs in sel.groups if gs.traced_pixels)
    return {"true_total": total, "estimated_total": est, "relative_error": abs(est - total) / total if total else 0.0}


@dataclass
class ZatelPlan:
    heatmap: Heatmap
    quant: Quantized
    downscale: Downscale
    groups: np.ndarray
    selection: Selection
    check: dict[str, float]

    @property
    def traced_percent(self) -> float:
        return 100.0 * float(self.selection.mask.sum()) / self.selection.mask.size

    def summary(self) -> dict:
        pct = self.traced_percent
        return {
            "K": self.downscale.k, "components": self.downscale.counts, "downscaled": self.downscale.scaled,
            "notes": ([self.downscale.note] if self.downscale.note else []) + self.selection.notes,
            "distribution": self.selection.distribution, "block": list(self.selection.block),
            "clusters": [{"coldness": float(c), "pixels": int(n)} for c, n in zip(self.quant.coldness,
                                                                               self.quant.counts)],
            "groups": [{"group": g.group, "pixels": g.pixels, "mean_coldness": g.mean_coldness,
                        "fraction_target": g.fraction_target, "fraction_traced": g.fraction,
                        "blocks": int(len(g.blocks))} for g in self.selection.groups],
            "traced_percent": pct,
            "predicted_speedup": predicted_speedup(pct) if pct > 0 else None,
            "speedup_in_fitted_range": pct >= 10.0,
            "self_check": self.check,
        }

    def overlay(self) -> np.ndarray:
        """RGB image: the quantised heatmap dimmed, selected pixels at full brightness with a white edge."""
        base = self.quant.colours[self.quant.labels]
        if base.shape[-1] == 1:
            v = base[..., 0]
            base = np.stack([v * 255, np.zeros_like(v), (1 - v) * 255], axis=-1)
        img = base.astype(np.float32) * 0.35
        img[self.selection.mask] = base[self.selection.mask]
        return np.clip(img, 0, 255).astype(np.uint8)

    def write(self, outdir: str | Path) -> list[Path]:
        out = Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for g in range(len(self.selection.groups)):
            xy = self.selection.coordinates(g)
            p = out / f"group_{g}.coords"
            np.savetxt(p, xy, fmt="%d", delimiter=" ")
            written.append(p)
        (out / "summary.json").write_text(json.dumps(self.summary(), indent=1), encoding="utf-8")
        written.append(out / "summary.json")
        from PIL import Image

        Image.fromarray(self.overlay()).save(out / "overlay.png")
        written.append(out / "overlay.png")
        return written


def plan(hm: Heatmap, counts: Mapping[str, int], *, k_force: int | None = None, clusters: int = 5,
         division: str = "fine", chunk: tuple[int, int] = (32, 2), block: tuple[int, int] = (32, 2),
         distribution: str = "uniform", bounds: tuple[float, float] = (0.3, 0.6), percent: float | None = None,
         seed: int = 0) -> ZatelPlan:
    """Fig. 3 steps 2–6 for one heatmap."""
    quant = quantize(hm, clusters, seed)
    ds = downscale_factor(counts, k_force)
    groups = divide(hm.shape, ds.k, division, chunk)
    if division == "fine" and (chunk[0] % block[0] or chunk[1] % block[1]):
        raise ZatelError(f"with fine division a {block[0]}x{block[1]} block must tile a {chunk[0]}x{chunk[1]} chunk "
                         f"(otherwise no block lies inside one group); use a block that divides the chunk")
    sel = select_pixels(hm, quant, groups, block=block, distribution=distribution, bounds=bounds, percent=percent,
                        seed=seed)
    return ZatelPlan(hm, quant, ds, groups, sel, self_check(hm, groups, sel))


# ---- step 7: combining results ------------------------------------------------------------------------
ABSOLUTE = ("cycles", "insn", "gpu_sim_cycle", "gpu_tot_sim_cycle", "gpu_sim_insn", "gpu_tot_sim_insn")
THROUGHPUT = ("ipc", "gpu_ipc", "gpu_tot_ipc")
AGGREGATIONS = ("sum", "mean", "hmean")


def default_aggregation(metric: str) -> str:
    if metric in THROUGHPUT or metric in ("insn", "gpu_sim_insn", "gpu_tot_sim_insn"):
        return "sum"
    return "mean"


def combine(group_metrics: Sequence[Mapping[str, float]], fractions: Sequence[float],
            aggregation: Mapping[str, str] | None = None) -> dict[str, float]:
    """Combine per-group results: extrapolate absolute metrics by 1/P, then aggregate per metric."""
    if len(group_metrics) != len(fractions):
        raise ZatelError(f"{len(group_metrics)} groups but {len(fractions)} fractions; give one fraction per group")
    for f in fractions:
        if not 0 < f <= 1:
            raise ZatelError(f"traced fraction {f} must be in (0, 1]")
    agg = dict(aggregation or {})
    bad = {m: a for m, a in agg.items() if a not in AGGREGATIONS}
    if bad:
        raise ZatelError(f"unknown aggregation(s) {bad}; choose {', '.join(AGGREGATIONS)}")
    metrics = sorted(set.intersection(*(set(m) for m in group_metrics))) if group_metrics else []
    out = {}
    for m in metrics:
        vals = np.array([gm[m] / (f if m in ABSOLUTE else 1.0) for gm, f in zip(group_metrics, fractions)])
        how = agg.get(m, default_aggregation(m))
        if how == "sum":
            out[m] = float(vals.sum())
        elif how == "mean":
            out[m] = float(vals.mean())
        else:
            out[m] = float(len(vals) / np.sum(1.0 / vals)) if np.all(vals > 0) else float("nan")
    return out


def combine_logs(paths: Sequence[str | Path], fractions: Sequence[float],
                 aggregation: Mapping[str, str] | None = None) -> dict[str, float]:
    metrics = []
    for p in paths:
        t = parse_log(p).totals()
        if "cycles" not in t:
            raise ZatelError(f"{p}: no simulation statistics (gpu_sim_cycle) found; did the run finish?")
        t.pop("kernels", None)
        metrics.append(t)
    return combine(metrics, fractions, aggregation)


def extrapolate_exponential(fractions: Sequence[float], values: Sequence[float], at: float = 1.0) -> float:
    """Exponential regression y = a·e^{b·p} through runs at several fractions (least squares on log y)."""
    p = np.asarray(fractions, dtype=float)
    y = np.asarray(values, dtype=float)
    if p.size < 2 or p.size != y.size:
        raise ZatelError("exponential extrapolation needs values at two or more fractions (the paper uses three)")
    if np.any(y <= 0):
        raise ZatelError("exponential extrapolation needs positive values")
    b, log_a = np.polyfit(p, np.log(y), 1)
    return float(np.exp(log_a + b * at))
