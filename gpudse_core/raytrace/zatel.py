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
   Fig. 6's diagonal pattern, still exactly balanced — and each group samples the whole scene. Coarse-grained division
   orders chunks by column band, then row, then
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

from .. import limits
from ..errors import GpudseError
from ..sim.gpgpusim import GpgpuSimConfig, parse_log
from .heatmap import Heatmap, lookup, rgb_coldness, row_bands, unpack
from .kmeans import assign, kmeans

DISTRIBUTIONS = ("uniform", "lintmp", "exptmp")
DIVISIONS = ("fine", "coarse")
DOWNSCALE_OPTIONS = {"sms": "-gpgpu_n_clusters", "mem": "-gpgpu_n_mem"}
TIME_LEVELS = 1024  # per-pixel time arrays are binned to this many levels before K-means


class ZatelError(GpudseError):
    """A Zatel request cannot be carried out (bad sizes, bounds, K …)."""


# ---- step 2: colour quantisation ------------------------------------------------------------------
@dataclass
class Quantized:
    labels: np.ndarray  # H x W, cluster per pixel (0 = hottest), uint8
    coldness: np.ndarray  # per cluster, in [0, 1]
    counts: np.ndarray  # pixels per cluster
    colours: np.ndarray  # per cluster: mean RGB (or grey level) for display
    inertia: float = 0.0  # K-means objective over the pixels (sum of squared distances to their centre)
    notes: list[str] = field(default_factory=list)


def check_clusters(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ZatelError(f"the number of colour clusters must be a whole number of at least 1 (got {k!r})")
    limits.check("colour_clusters", k, f"{k} colour clusters", "Zatel quantises a heatmap into a handful of colours")


def quantize(hm: Heatmap, k: int = 5, seed: int = 0, n_init: int = 10) -> Quantized:
    """Step 2: K-means of the heatmap's colours (see :mod:`.kmeans`), clusters numbered hottest first."""
    check_clusters(k)
    name = hm.source or "the heatmap"
    notes = []
    if hm.rgb is not None:
        packed, counts = hm.colours()
        feats = unpack(packed).astype(np.float64)
        cold = rgb_coldness(unpack(packed)).astype(np.float64)
    else:  # per-pixel times: 1,024 levels of cost
        counts = np.zeros(TIME_LEVELS, dtype=np.int64)
        for rows in row_bands(*hm.shape):
            counts += np.bincount(_levels(hm.cost[rows]).ravel(), minlength=TIME_LEVELS)
        packed = np.flatnonzero(counts)
        counts = counts[packed]
        feats = (packed / (TIME_LEVELS - 1.0))[:, None]
        cold = 1.0 - feats[:, 0]
    n = len(packed)
    if n < 2:
        raise ZatelError(f"{name}: every pixel has the same colour, so it says nothing about where the work is; "
                         f"render or upload a real heatmap")
    k_eff = min(k, n)
    if k_eff < k:
        notes.append(f"{k} colour clusters asked for but the heatmap has only {n} distinct colours: each is a cluster")
    x, w = feats, counts.astype(np.float64)
    cap = limits.current().quantize_colours
    if n > cap:  # photographs, not rendered heatmaps: cluster the colours merged on a 32-level grid
        cells, cell_of = np.unique((feats // 8) @ np.array([1024.0, 32.0, 1.0])[: feats.shape[1]],
                                   return_inverse=True)
        w = np.bincount(cell_of, weights=counts.astype(np.float64))
        x = np.stack([np.bincount(cell_of, weights=counts * feats[:, j]) / w for j in range(feats.shape[1])], axis=-1)
        notes.append(f"{name} has {n:,} distinct colours (more than quantize_colours = {cap:,}): K-means ran on "
                     f"{len(cells):,} colours merged on a 32-level grid")
    km = kmeans(x, w, k_eff, n_init=n_init, seed=seed)
    lab = km.labels if x is feats else assign(feats, km.centres)[0]
    wsum = np.bincount(lab, weights=counts, minlength=k_eff)
    cluster_cold = np.bincount(lab, weights=counts * cold, minlength=k_eff) / wsum
    order = np.argsort(cluster_cold, kind="stable")  # hottest first
    remap = np.empty(k_eff, dtype=np.uint8)
    remap[order] = np.arange(k_eff)
    table = remap[lab]
    if hm.rgb is not None:
        labels = lookup(hm.rgb, packed, table)
    else:
        full = np.zeros(TIME_LEVELS, dtype=np.uint8)
        full[packed] = table
        labels = np.empty(hm.shape, dtype=np.uint8)
        for rows in row_bands(*hm.shape):
            labels[rows] = full[_levels(hm.cost[rows])]
    colours = np.stack([np.bincount(lab, weights=counts * feats[:, j], minlength=k_eff) / wsum
                        for j in range(feats.shape[1])], axis=-1)[order]
    inertia = float(assign(feats, km.centres)[1] @ counts)
    return Quantized(labels, cluster_cold[order], wsum[order].astype(np.int64), colours, inertia, notes)


def _levels(cost: np.ndarray) -> np.ndarray:
    return np.minimum((cost * (TIME_LEVELS - 1)).astype(np.intp), TIME_LEVELS - 1)


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
        limits.check("gpu_components", v, f"{v} {name}", "give the GPU's real SM and memory-partition counts")
    g = reduce(math.gcd, (int(v) for v in counts.values()))
    note = ""
    if force is not None:
        if isinstance(force, bool) or not isinstance(force, (int, np.integer)) or force < 1:
            raise ZatelError(f"a forced K must be a whole number of at least 1 (got {force!r})")
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


def counts_from_config(cfg: GpgpuSimConfig, source: str = "the config") -> dict[str, int]:
    """SMs (clusters × cores per cluster) and memory partitions of a GPGPU-Sim config, each a plain whole
    number of at most ``limits.gpu_components``."""
    def number(opt: str, default: int | None = None) -> int:
        text = cfg.get(opt)
        if text is None:
            if default is not None:
                return default
            raise ZatelError(f"{source}: no {opt} option; it is needed to count the GPU's components")
        text = text.strip()
        if not text.isdigit() or len(text) > 9 or int(text) < 1:
            raise ZatelError(f"{source}: {opt} = {text[:40]!r}: give a whole number from 1 to "
                             f"{limits.current().gpu_components:,}")
        return int(text)

    counts = {"sms": number("-gpgpu_n_clusters") * number("-gpgpu_n_cores_per_cluster", 1),
              "mem": number("-gpgpu_n_mem")}
    for name, v in counts.items():
        limits.check("gpu_components", v, f"{source}: {v:,} {name}",
                     "give the GPU's real SM and memory-partition counts")
    return counts


# ---- step 4: dividing the image plane ---------------------------------------------------------------
def divide(shape: tuple[int, int], k: int, method: str = "fine", chunk: tuple[int, int] = (32, 2)) -> np.ndarray:
    """Group of every pixel (H×W int array); see the module docstring."""
    if method not in DIVISIONS:
        raise ZatelError(f"unknown division {method!r}; choose fine or coarse")
    h, w = shape
    cw, ch = _size(chunk, "chunk")
    rows, cols = -(-h // ch), -(-w // cw)
    n = rows * cols
    if k > n:
        raise ZatelError(f"K = {k} is larger than the number of {cw}x{ch} chunks ({n}) of the {w}x{h}-pixel heatmap; "
                         f"use smaller chunks or K, or a larger heatmap")
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
    grid = grid.astype(np.uint16 if k <= np.iinfo(np.uint16).max else np.int32)
    return np.repeat(np.repeat(grid, min(ch, h), axis=0), min(cw, w), axis=1)[:h, :w]


def _size(size: Sequence[int], what: str) -> tuple[int, int]:
    try:
        sw, sh = (int(v) for v in size)
    except (TypeError, ValueError):
        raise ZatelError(f"a {what} size is two whole numbers, width and height (got {size!r})") from None
    if sw < 1 or sh < 1:
        raise ZatelError(f"{what} size {sw}x{sh} must be positive")
    return sw, sh


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
        return block_pixels(self.groups[g].blocks, self.block)

    def write_coordinates(self, g: int, path: str | Path) -> None:
        """``x y`` per line for group *g* (as :meth:`coordinates`), written a million pixels at a time."""
        blocks = self.groups[g].blocks
        step = max(1, (1 << 20) // (self.block[0] * self.block[1]))
        with open(path, "wb") as fh:
            for a in range(0, len(blocks), step):
                fh.write(xy_lines(block_pixels(blocks[a:a + step], self.block)))


def block_pixels(blocks: np.ndarray, block: tuple[int, int]) -> np.ndarray:
    """(x, y) of the pixels of (block_row, block_col) *blocks*, row-major within each block."""
    bw, bh = block
    if len(blocks) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    dy, dx = np.divmod(np.arange(bw * bh), bw)
    ys = (blocks[:, 0:1] * bh + dy[None, :]).ravel()
    xs = (blocks[:, 1:2] * bw + dx[None, :]).ravel()
    return np.stack([xs, ys], axis=1)


def select_pixels(hm: Heatmap, quant: Quantized, groups: np.ndarray, *, block: tuple[int, int] = (32, 2),
                  distribution: str = "uniform", bounds: tuple[float, float] = (0.3, 0.6),
                  percent: float | None = None, seed: int = 0) -> Selection:
    """Step 5 for every group (see the module docstring); every group gets at least one block."""
    _check_selection(distribution, bounds, percent)
    lo, hi = bounds
    h, w = hm.shape
    bw, bh = _size(block, "block")
    if h < bh or w < bw:
        raise ZatelError(f"the {w}x{h} image is smaller than one {bw}x{bh} section block")
    br, bc = h // bh, w // bw
    k = int(quant.coldness.size)
    n_groups = int(groups.max()) + 1
    # per block: its group (when wholly inside one) and dominant colour; per group: pixels of each colour
    block_group = np.empty((br, bc), dtype=np.int64)
    dominant = np.empty((br, bc), dtype=np.int64)
    for rows in row_bands(br * bh, bc * bw, bh):
        r0, r1 = rows.start // bh, rows.stop // bh
        g = groups[rows, : bc * bw].reshape(r1 - r0, bh, bc, bw)
        gmin = g.min(axis=(1, 3))
        block_group[r0:r1] = np.where(gmin == g.max(axis=(1, 3)), gmin, -1)
        lab = quant.labels[rows, : bc * bw].reshape(r1 - r0, bh, bc, bw).transpose(0, 2, 1, 3).reshape(-1, bh * bw)
        ids = (np.arange(lab.shape[0], dtype=np.int64) * k)[:, None] + lab
        dominant[r0:r1] = np.bincount(ids.ravel(), minlength=lab.shape[0] * k).reshape(-1, k).argmax(axis=1) \
            .reshape(r1 - r0, bc)
    per_group = np.zeros(n_groups * k, dtype=np.int64)
    for rows in row_bands(h, w):
        per_group += np.bincount((groups[rows].astype(np.int64) * k + quant.labels[rows]).ravel(),
                                 minlength=n_groups * k)
    per_group = per_group.reshape(n_groups, k)
    pix_per_group = per_group.sum(axis=1)
    cold_per_group = per_group @ quant.coldness / np.maximum(pix_per_group, 1)
    # candidate blocks of each group, in row-major order
    flat = block_group.ravel()
    cand_all = np.flatnonzero(flat >= 0)
    cand_all = cand_all[np.argsort(flat[cand_all], kind="stable")]
    starts = np.searchsorted(flat[cand_all], np.arange(n_groups + 1))
    empty = np.flatnonzero(np.diff(starts) == 0)
    if empty.size:
        raise ZatelError(f"group {int(empty[0])} has no {bw}x{bh} section block wholly inside it; use smaller blocks, "
                         f"larger chunks or a smaller K")
    rng = np.random.default_rng(seed)
    chosen_blocks = np.zeros(br * bc, dtype=bool)
    out, notes = [], []
    warmth = 1.0 - quant.coldness
    for g in range(n_groups):
        cand = cand_all[starts[g]:starts[g + 1]]
        m = int(pix_per_group[g])
        frac = (percent / 100.0) if percent is not None else float(np.clip(cold_per_group[g], lo, hi))
        want = max(1, round(frac * m / (bw * bh)))
        if want > len(cand):
            notes.append(f"group {g}: {want} blocks wanted but only {len(cand)} lie wholly inside it")
            want = len(cand)
        col = dominant.ravel()[cand]
        n_j = np.bincount(col, minlength=k).astype(float)
        weight = {"uniform": n_j, "lintmp": n_j * warmth, "exptmp": n_j * warmth ** 5}[distribution]
        p = weight / weight.sum() if weight.sum() > 0 else n_j / max(n_j.sum(), 1)
        quota = _largest_remainder(p * want, want)
        chosen_parts, leftover = [], []
        for j in range(k):
            idx = np.flatnonzero(col == j)
            idx = idx[rng.permutation(idx.size)]
            chosen_parts.append(idx[: quota[j]])
            leftover.append(idx[quota[j]:])
        chosen = np.concatenate(chosen_parts)
        short = want - chosen.size
        if short > 0:  # a colour ran out: random blocks fill the rest
            rest = np.concatenate(leftover)
            chosen = np.concatenate([chosen, rest[rng.permutation(rest.size)[:short]]])
        sel = cand[np.sort(chosen)]
        chosen_blocks[sel] = True
        rc = np.stack(np.divmod(sel, bc), axis=1)
        out.append(GroupSelection(g, m, float(cold_per_group[g]), frac, rc, dominant.ravel()[sel], len(cand),
                                  {j: int(quota[j]) for j in range(k)}, int(len(sel) * bw * bh)))
    mask = np.zeros((h, w), dtype=bool)
    mask[: br * bh, : bc * bw] = np.repeat(np.repeat(chosen_blocks.reshape(br, bc), bh, axis=0), bw, axis=1)
    return Selection(out, (bw, bh), mask, distribution, notes)


def _check_selection(distribution: str, bounds: tuple[float, float], percent: float | None) -> None:
    if distribution not in DISTRIBUTIONS:
        raise ZatelError(f"unknown distribution {distribution!r}; choose {', '.join(DISTRIBUTIONS)}")
    lo, hi = bounds
    if not (0 <= lo <= hi <= 1):
        raise ZatelError(f"bounds {lo}, {hi} must satisfy 0 ≤ lower ≤ upper ≤ 1")
    if percent is not None and not 0 < percent <= 100:
        raise ZatelError(f"the percentage to trace must be in (0, 100] (got {percent})")


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
    n_groups = len(sel.groups)
    total, picked = 0.0, np.zeros(n_groups)
    for rows in row_bands(*hm.shape):
        cost, m = hm.cost[rows], sel.mask[rows]
        total += float(cost.sum(dtype=np.float64))
        picked += np.bincount(groups[rows][m], weights=cost[m], minlength=n_groups)
    est = sum(float(picked[gs.group]) / gs.fraction for gs in sel.groups if gs.traced_pixels)
    return {"true_total": total, "estimated_total": est, "relative_error": abs(est - total) / total if total else 0.0}


DIM = 0.35  # brightness of a pixel that is not traced in the overlay


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
            "notes": ([self.downscale.note] if self.downscale.note else []) + self.quant.notes + self.selection.notes,
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

    def cluster_colours(self) -> np.ndarray:
        """(clusters × 3) uint8: each colour cluster's colour in :meth:`overlay` (a selected pixel's colour)."""
        base = self.quant.colours
        if base.shape[-1] == 1:  # time arrays: cluster level from blue (fast) to red (slow)
            v = base[:, 0]
            base = np.stack([v * 255, np.zeros_like(v), (1 - v) * 255], axis=-1)
        return np.clip(base, 0, 255).astype(np.uint8)

    def overlay(self) -> np.ndarray:
        """RGB image: the quantised heatmap dimmed (× DIM), selected pixels at full brightness."""
        bright = self.cluster_colours()
        dim = np.clip(bright.astype(np.float32) * DIM, 0, 255).astype(np.uint8)
        h, w = self.quant.labels.shape
        img = np.empty((h, w, 3), dtype=np.uint8)
        for rows in row_bands(h, w):
            lab = self.quant.labels[rows]
            img[rows] = np.where(self.selection.mask[rows][..., None], bright[lab], dim[lab])
        return img

    def write(self, outdir: str | Path) -> list[Path]:
        """``group_{i}.coords`` (``x y`` per line), ``summary.json`` and ``overlay.png`` in *outdir*."""
        out = Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for g in range(len(self.selection.groups)):
            p = out / f"group_{g}.coords"
            self.selection.write_coordinates(g, p)
            written.append(p)
        (out / "summary.json").write_text(json.dumps(self.summary(), indent=1), encoding="utf-8")
        written.append(out / "summary.json")
        from PIL import Image

        Image.fromarray(self.overlay()).save(out / "overlay.png", compress_level=1)
        written.append(out / "overlay.png")
        return written


def xy_lines(xy: np.ndarray) -> bytes:
    """``x y`` and a newline for every row of a non-negative integer (n × 2) array: the text
    ``np.savetxt(fmt="%d")`` writes, built with array operations (a 4K frame's selection is millions of lines)."""
    xy = np.asarray(xy, dtype=np.int64).reshape(-1, 2)
    if xy.size == 0:
        return b""
    (tx, kx), (ty, ky) = _number_text(xy[:, 0], " "), _number_text(xy[:, 1], "\n")
    return np.concatenate([tx, ty], axis=1)[np.concatenate([kx, ky], axis=1)].tobytes()


def _number_text(v: np.ndarray, end: str) -> tuple[np.ndarray, np.ndarray]:
    """Decimal digits of each value, zero-padded to a common width and followed by *end* (n × (p + 1) bytes),
    and which of those bytes to keep (the padding dropped). Coordinates repeat: when their range is
    small the text of each value in it is built once and gathered."""
    lo, hi = int(v.min()), int(v.max())
    values = np.arange(lo, hi + 1, dtype=np.int64) if hi - lo < len(v) else v
    p = len(str(hi))
    digits = (values[:, None] // 10 ** np.arange(p - 1, -1, -1, dtype=np.int64)) % 10
    text = np.empty((len(values), p + 1), dtype=np.uint8)
    text[:, :p] = digits + 48
    text[:, p] = ord(end)
    keep = np.ones(text.shape, dtype=bool)
    keep[:, :p] = np.logical_or.accumulate(digits != 0, axis=1)
    keep[:, p - 1] = True  # the last digit, so that 0 is written as 0
    if values is v:
        return text, keep
    return text[v - lo], keep[v - lo]


def plan(hm: Heatmap, counts: Mapping[str, int], *, k_force: int | None = None, clusters: int = 5,
         division: str = "fine", chunk: tuple[int, int] = (32, 2), block: tuple[int, int] = (32, 2),
         distribution: str = "uniform", bounds: tuple[float, float] = (0.3, 0.6), percent: float | None = None,
         seed: int = 0) -> ZatelPlan:
    """Fig. 3 steps 2–6 for one heatmap; every parameter is checked against the image before the work."""
    check_clusters(clusters)
    _check_selection(distribution, bounds, percent)
    ds = downscale_factor(counts, k_force)
    chunk, block = _size(chunk, "chunk"), _size(block, "block")
    h, w = hm.shape
    if h < block[1] or w < block[0]:
        raise ZatelError(f"the {w}x{h} image is smaller than one {block[0]}x{block[1]} section block")
    if division == "fine" and (chunk[0] % block[0] or chunk[1] % block[1]):
        raise ZatelError(f"with fine division a {block[0]}x{block[1]} block must tile a {chunk[0]}x{chunk[1]} chunk "
                         f"(otherwise no block lies inside one group); use a block that divides the chunk")
    groups = divide(hm.shape, ds.k, division, chunk)
    quant = quantize(hm, clusters, seed)
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
    for i, f in enumerate(fractions, 1):
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not math.isfinite(f) or not 0 < f <= 1:
            raise ZatelError(f"traced fraction {f!r} of group {i} must be a number in (0, 1]")
    agg = dict(aggregation or {})
    bad = {m: a for m, a in agg.items() if a not in AGGREGATIONS}
    if bad:
        raise ZatelError(f"unknown aggregation(s) {bad}; choose {', '.join(AGGREGATIONS)}")
    metrics = sorted(set.intersection(*(set(m) for m in group_metrics))) if group_metrics else []
    unknown = sorted(set(agg) - set(metrics))
    if unknown:
        raise ZatelError(f"--aggregate names metric(s) {', '.join(map(repr, unknown))} that not every group reports; "
                         f"the groups report {', '.join(metrics) or 'none'}")
    out = {}
    for m in metrics:
        with np.errstate(all="ignore"):
            vals = np.array([gm[m] / (f if m in ABSOLUTE else 1.0) for gm, f in zip(group_metrics, fractions)])
            how = agg.get(m, default_aggregation(m))
            if how == "hmean" and not np.all(vals > 0):
                raise ZatelError(f"{m}: the harmonic mean needs a positive value in every group (got "
                                 f"{', '.join(f'{v:g}' for v in vals)}); aggregate it with mean or sum")
            value = float(vals.sum() if how == "sum" else vals.mean() if how == "mean"
                          else len(vals) / np.sum(1.0 / vals))
        if not math.isfinite(value):
            raise ZatelError(f"{m}: the combined value is not a finite number (the groups' values divided by their "
                             f"traced fractions overflow); check the fractions "
                             f"({', '.join(f'{f:g}' for f in fractions)})")
        out[m] = value
    return out


def combine_logs(paths: Sequence[str | Path], fractions: Sequence[float],
                 aggregation: Mapping[str, str] | None = None) -> dict[str, float]:
    seen: dict[Path, str] = {}
    for p in paths:
        key = Path(p).resolve()
        if key in seen:
            raise ZatelError(f"{p}: given twice (also as {seen[key]}); give each downscaled GPU group's log once")
        seen[key] = str(p)
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
