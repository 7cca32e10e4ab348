"""Benchmark: Zatel's pixel selection end to end.

Run: python benchmarks/bench_zatel.py

Times quantisation, downscaling, division, selection and the self-check (from decoded pixels) for a
512×512 heatmap with K = 4 (required < 0.3 s) and a 3840×2160 heatmap with K = 6 (required < 5 s and
peak memory < 1.5 GB, measured with tracemalloc). Uses ../shared's WKND heatmap when present (tiled
up to 4K), otherwise a synthetic gradient heatmap.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudse_core.raytrace.heatmap import from_rgb, read_heatmap  # noqa: E402
from gpudse_core.raytrace.zatel import plan  # noqa: E402


def synthetic(h: int, w: int) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    t = (np.sin(x / 37.0) * np.cos(y / 23.0) + 1) / 2
    levels = np.array([[0, 0, 255], [0, 160, 255], [0, 255, 0], [255, 255, 0], [255, 0, 0], [145, 0, 65]])
    return levels[np.minimum((t * len(levels)).astype(int), len(levels) - 1)].astype(np.uint8)


def main() -> None:
    real = ROOT.parent / "shared/data/zatel/heatmaps/wknd_path-tracer.ppm"
    if real.is_file():
        t = time.perf_counter()
        hm = read_heatmap(real)
        print(f"read the real 512x512 P3 heatmap: {time.perf_counter() - t:.3f} s")
        rgb = hm.rgb
    else:
        rgb = synthetic(512, 512)
        hm = from_rgb(rgb)
    plan(hm, {"sms": 8, "mem": 4})  # warm-up: library imports
    best = min(_time(lambda: plan(from_rgb(rgb), {"sms": 8, "mem": 4})) for _ in range(5))
    print(f"512x512, K = 4: {best:.3f} s (required < 0.3 s)")
    big = np.tile(rgb, (5, 8, 1))[:2160, :3840]
    tracemalloc.start()
    t = time.perf_counter()
    zp = plan(from_rgb(big), {"sms": 30, "mem": 12})
    dt = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"3840x2160, K = {zp.downscale.k}: {dt:.2f} s (required < 5 s), peak memory {peak:.0f} MiB (required < 1536)")


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
