"""A small vectorised ray caster that produces real per-pixel cost heatmaps (for the Zatel workflow).

The product may not ship the LumiBench heatmaps, so the Ray-tracing page renders its own: a
procedural scene (spheres and boxes on a ground plane, diffuse and mirror materials, one point light)
is ray traced through a bounding-volume hierarchy, and each pixel's *cost* is the work its rays did:
BVH node tests plus primitive intersection tests over its primary ray, its shadow ray and (for mirrors)
one reflection ray with its own shadow ray. That is the quantity a ray-tracing GPU spends its time
on, so the heatmap has the structure Zatel exploits (cheap sky, expensive clusters and reflections).

Everything is NumPy over all rays at once; the Python loops run over BVH nodes and primitives only.
The BVH is a median split on the longest axis of the primitives' centroids (two primitives per leaf).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import GpudseError
from .heatmap import Heatmap, from_times

EPS = 1e-4


@dataclass
class Scene:
    kind: np.ndarray  # 0 sphere, 1 box
    centre: np.ndarray  # spheres: centre; boxes: unused
    radius: np.ndarray
    lo: np.ndarray  # bounding boxes (boxes: the box itself)
    hi: np.ndarray
    colour: np.ndarray
    mirror: np.ndarray  # bool


def procedural_scene(n_spheres: int = 18, n_boxes: int = 6, seed: int = 0) -> Scene:
    if n_spheres < 0 or n_boxes < 0 or n_spheres + n_boxes < 1:
        raise GpudseError("the scene needs at least one sphere or box")
    rng = np.random.default_rng(seed)
    kinds, centres, radii, los, his, cols, mirrors = [], [], [], [], [], [], []
    for _ in range(n_spheres):
        r = rng.uniform(0.25, 0.9)
        c = np.array([rng.uniform(-4, 4), r, rng.uniform(2, 10)])
        kinds.append(0), centres.append(c), radii.append(r), los.append(c - r), his.append(c + r)
        cols.append(rng.uniform(0.2, 1.0, 3)), mirrors.append(rng.random() < 0.35)
    for _ in range(n_boxes):
        size = rng.uniform(0.4, 1.4, 3)
        base = np.array([rng.uniform(-4, 4), 0.0, rng.uniform(3, 11)])
        lo, hi = base - np.array([size[0] / 2, 0, size[2] / 2]), base + np.array([size[0] / 2, size[1], size[2] / 2])
        kinds.append(1), centres.append((lo + hi) / 2), radii.append(0.0), los.append(lo), his.append(hi)
        cols.append(rng.uniform(0.2, 1.0, 3)), mirrors.append(rng.random() < 0.2)
    return Scene(np.array(kinds), np.array(centres), np.array(radii), np.array(los), np.array(his),
                 np.array(cols), np.array(mirrors))


@dataclass
class BVH:
    lo: np.ndarray
    hi: np.ndarray
    left: np.ndarray  # child index or -1
    right: np.ndarray
    prims: list[np.ndarray]  # primitive indices at leaves (empty for inner nodes)


def build_bvh(scene: Scene, leaf_size: int = 2) -> BVH:
    lo_l, hi_l, left, right, prims = [], [], [], [], []

    def node(idx: np.ndarray) -> int:
        me = len(lo_l)
        lo_l.append(scene.lo[idx].min(axis=0))
        hi_l.append(scene.hi[idx].max(axis=0))
        left.append(-1), right.append(-1), prims.append(np.zeros(0, dtype=np.int64))
        if idx.size <= leaf_size:
            prims[me] = idx
            return me
        cen = (scene.lo[idx] + scene.hi[idx]) / 2
        axis = int(np.argmax(cen.max(axis=0) - cen.min(axis=0)))
        order = idx[np.argsort(cen[:, axis], kind="stable")]
        half = order.size // 2
        left[me] = node(order[:half])
        right[me] = node(order[half:])
        return me

    node(np.arange(scene.kind.size))
    return BVH(np.array(lo_l), np.array(hi_l), np.array(left), np.array(right), prims)


def _slab(o: np.ndarray, inv: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t1 = (lo - o) * inv
    t2 = (hi - o) * inv
    tmin = np.minimum(t1, t2).max(axis=1)
    tmax = np.maximum(t1, t2).min(axis=1)
    return tmin, tmax


def _prim_hit(scene: Scene, p: int, o: np.ndarray, d: np.ndarray, inv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hit distance (inf for a miss) and normal of primitive *p* for rays (o, d)."""
    if scene.kind[p] == 0:
        oc = o - scene.centre[p]
        b = np.einsum("ij,ij->i", oc, d)
        c = np.einsum("ij,ij->i", oc, oc) - scene.radius[p] ** 2
        disc = b * b - c
        sq = np.sqrt(np.maximum(disc, 0))
        t = np.where(-b - sq > EPS, -b - sq, -b + sq)
        t = np.where((disc >= 0) & (t > EPS), t, np.inf)
        n = (o + t[:, None] * d - scene.centre[p]) / scene.radius[p]
        return t, n
    tmin, tmax = _slab(o, inv, scene.lo[p], scene.hi[p])
    t = np.where(tmin > EPS, tmin, tmax)
    t = np.where((tmax >= np.maximum(tmin, EPS)), t, np.inf)
    pt = o + np.where(np.isfinite(t), t, 0)[:, None] * d
    centre = (scene.lo[p] + scene.hi[p]) / 2
    half = (scene.hi[p] - scene.lo[p]) / 2
    rel = (pt - centre) / half
    axis = np.argmax(np.abs(rel), axis=1)
    n = np.zeros_like(pt)
    n[np.arange(len(pt)), axis] = np.sign(rel[np.arange(len(pt)), axis])
    return t, n


def trace(scene: Scene, bvh: BVH, o: np.ndarray, d: np.ndarray, any_hit: bool = False, t_max: np.ndarray | None = None):
    """Closest (or any) hit of every ray; returns t, primitive, normal and work (node + primitive tests)."""
    n = o.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / np.where(d == 0, 1e-12, d)
    best = np.full(n, np.inf) if t_max is None else t_max.copy()
    prim = np.full(n, -1)
    normal = np.zeros((n, 3))
    work = np.zeros(n)
    stack = [(0, np.arange(n))]
    while stack:
        node, rays = stack.pop()
        if rays.size == 0:
            continue
        work[rays] += 1
        tmin, tmax = _slab(o[rays], inv[rays], bvh.lo[node], bvh.hi[node])
        rays = rays[(tmax >= np.maximum(tmin, 0)) & (tmin < best[rays])]
        if rays.size == 0:
            continue
        if bvh.left[node] < 0:
            for p in bvh.prims[node]:
                work[rays] += 1
                t, nn = _prim_hit(scene, int(p), o[rays], d[rays], inv[rays])
                closer = t < best[rays]
                hit_rays = rays[closer]
                best[hit_rays] = t[closer]
                prim[hit_rays] = p
                normal[hit_rays] = nn[closer]
            if any_hit:
                rays = rays[prim[rays] < 0]
            continue
        stack.append((int(bvh.right[node]), rays))
        stack.append((int(bvh.left[node]), rays))
    return best, prim, normal, work


@dataclass
class Render:
    image: np.ndarray  # H x W x 3 in [0, 1]
    cost: np.ndarray  # H x W: node + primitive tests of all the pixel's rays

    def heatmap(self) -> Heatmap:
        return from_times(self.cost, "built-in ray caster")


class RenderStopped(GpudseError):
    """The progress callback of :func:`render` asked to stop (no partial frame is returned)."""


BAND_RAYS = 1 << 14  # primary rays traced at once when progress is reported (one band of rows)


def render(width: int = 256, height: int = 256, scene: Scene | None = None, seed: int = 0,
           progress: Callable[[int, int], Any] | None = None) -> Render:
    """Ray trace the scene: primary rays, shadow rays to one light, one mirror bounce.

    With *progress(rows_done, height)* the frame is traced in bands of rows (each pixel's rays are
    independent, so the frame is the same) and the callback is called after each band; returning
    ``False`` stops with :class:`RenderStopped`."""
    if not (8 <= width <= 2048 and 8 <= height <= 2048):
        raise GpudseError("render size must be between 8 and 2048 pixels per side")
    scene = scene or procedural_scene(seed=seed)
    bvh = build_bvh(scene)
    y, x = np.mgrid[0:height, 0:width]
    aspect = width / height
    px = (2 * (x + 0.5) / width - 1) * aspect * 0.6
    py = (1 - 2 * (y + 0.5) / height) * 0.6
    d = np.stack([px, py + 0.05, np.ones_like(px)], axis=-1).reshape(-1, 3)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    o = np.tile(np.array([0.0, 1.6, -3.0]), (d.shape[0], 1))
    light = np.array([4.0, 9.0, -2.0])
    band = height if progress is None else max(1, min(height, BAND_RAYS // width))
    colour, cost = np.empty((height * width, 3)), np.empty(height * width)
    for y0 in range(0, height, band):
        rows = slice(y0 * width, min(height, y0 + band) * width)
        colour[rows], cost[rows] = _shade(scene, bvh, o[rows], d[rows], light, depth=1)
        if progress is not None and progress(min(height, y0 + band), height) is False:
            raise RenderStopped(f"ray casting stopped after {min(height, y0 + band)} of {height} rows")
    return Render(colour.reshape(height, width, 3), cost.reshape(height, width))


def _shade(scene, bvh, o, d, light, depth):
    t, prim, normal, work = trace(scene, bvh, o, d)
    n = o.shape[0]
    colour = np.zeros((n, 3))
    # ground plane y = 0 (outside the BVH): hit if nothing nearer
    with np.errstate(divide="ignore", invalid="ignore"):
        tg = np.where(d[:, 1] < -1e-6, -o[:, 1] / d[:, 1], np.inf)
    ground = tg < t
    t = np.where(ground, tg, t)
    hit = np.isfinite(t)
    sky = np.array([0.55, 0.7, 0.95])
    colour[~hit] = sky * (0.6 + 0.4 * np.clip(d[~hit, 1], 0, 1))[:, None]
    idx = np.flatnonzero(hit)
    if idx.size == 0:
        return colour, work
    pt = o[idx] + t[idx, None] * d[idx]
    nrm = np.where(ground[idx, None], np.array([0.0, 1.0, 0.0]), normal[idx])
    base = np.where(ground[idx, None], np.where(((np.floor(pt[:, 0]) + np.floor(pt[:, 2])) % 2 == 0)[:, None],
                                                 0.8, 0.45) * np.ones(3), scene.colour[np.maximum(prim[idx], 0)])
    to_l = light - pt
    dist = np.linalg.norm(to_l, axis=1)
    ldir = to_l / dist[:, None]
    so = pt + nrm * 1e-3
    _, sprim, _, swork = trace(scene, bvh, so, ldir, any_hit=True, t_max=dist)
    work[idx] += swork
    lit = (sprim < 0).astype(float)
    diffuse = np.clip(np.einsum("ij,ij->i", nrm, ldir), 0, 1) * lit
    col = base * (0.15 + 0.85 * diffuse)[:, None]
    mirror = (~ground[idx]) & scene.mirror[np.maximum(prim[idx], 0)]
    if depth > 0 and mirror.any():
        m = np.flatnonzero(mirror)
        r = d[idx[m]] - 2 * np.einsum("ij,ij->i", d[idx[m]], nrm[m])[:, None] * nrm[m]
        rc, rw = _shade(scene, bvh, so[m], r, light, depth - 1)
        work[idx[m]] += rw
        col[m] = 0.25 * col[m] + 0.75 * rc
    colour[idx] = col
    return colour, work
