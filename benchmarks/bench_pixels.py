"""Benchmark: ``gpudse pixels`` on a 512×512 heatmap as a whole process, side by side in the
same run with the obvious pure-Python implementation of the same selection (per-pixel loops).

Run: python benchmarks/bench_pixels.py [--heatmap PATH] [--runs 5] [--skip-python]

Prints the minimum over *runs* of ``python -m gpudse_core pixels HEATMAP --sms 8 --mem 4 -o DIR``
(interpreter start, imports, reading, K-means, division, selection and writing; the goal was
≤ 1.0 s), the time of one whole-process run of :func:`pure_python_pixels` (same steps, per-pixel
loops in plain Python, also a fresh interpreter), their ratio (the goal was ≥ 50×), and whether the
two wrote the same ``group_*.coords`` files.

The pure-Python version is the product's algorithm written the obvious way: it reads the P3 text
with ``split``, computes each pixel's coldness from its hue, runs K-means over the *pixels* (k-means++
seeding and Lloyd iterations to a fixed point, best of 10 seedings), numbers the groups pixel by
pixel, counts every block's colours, draws the quotas and writes ``x y`` lines. Its only non-Python
part is the random generator: it draws from the same seeded NumPy ``Generator`` in the same order as
the product, and walks the pixels sorted by colour where k-means++ draws a colour, so that the same
random numbers pick the same colours (both sides use exact integer cumulative sums). It runs once: it
takes minutes. It writes no overlay image (the product's is ~20 ms of its time).

When the selections differ the script says where; the possible causes are float rounding (the
product computes hue coldness in float32, this in float64), or a cluster emptied during Lloyd's
iterations (the product moves one *colour*, this would move one *pixel*); both are reported.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared/data/zatel/heatmaps/wknd_path-tracer.ppm"
SMS, MEM, CLUSTERS, N_INIT, SEED = 8, 4, 5, 10, 0
CHUNK = BLOCK = (32, 2)
BOUNDS = (0.3, 0.6)


# ---- the obvious pure-Python implementation -------------------------------------------------------------
def read_p3(path: str) -> tuple[int, int, list[tuple[int, int, int]]]:
    lines = [ln.split(b"#", 1)[0] for ln in Path(path).read_bytes().splitlines()]
    tokens = b" ".join(lines).split()
    if tokens[0] != b"P3":
        raise SystemExit(f"{path}: the pure-Python reference reads plain PPM (P3) only")
    w, h, maxval = int(tokens[1]), int(tokens[2]), int(tokens[3])
    vals = [round(int(t) * 255 / maxval) for t in tokens[4:4 + w * h * 3]]
    return w, h, [(vals[i], vals[i + 1], vals[i + 2]) for i in range(0, len(vals), 3)]


def coldness(r: int, g: int, b: int) -> float:
    """The product's shifted-hue coldness: hue −30° (hottest) … 240° (coldest), greys coldest."""
    x, y, z = r / 255, g / 255, b / 255
    mx, mn = max(x, y, z), min(x, y, z)
    d = mx - mn
    if d == 0:
        hue = 240.0
    elif mx == x:
        hue = ((y - z) / d % 6) * 60
    elif mx == y:
        hue = ((z - x) / d + 2) * 60
    else:
        hue = ((x - y) / d + 4) * 60
    if hue > 300:
        hue -= 360
    return min(1.0, max(0.0, (hue + 30) / 270))


def dist2(p, c) -> float:
    return (p[0] - c[0]) * (p[0] - c[0]) + (p[1] - c[1]) * (p[1] - c[1]) + (p[2] - c[2]) * (p[2] - c[2])


def nearest(p, centres) -> tuple[int, float]:
    best, bd = 0, dist2(p, centres[0])
    for j in range(1, len(centres)):
        d = dist2(p, centres[j])
        if d < bd:
            best, bd = j, d
    return best, bd


def kmeans_pixels(pixels, k, rng, n_init, notes):
    n = len(pixels)
    by_colour = sorted(range(n), key=lambda i: pixels[i])  # k-means++ walks the pixels in colour order
    trials = 2 + int(math.log(k))
    best = None
    for _ in range(n_init):
        # k-means++ seeding over pixels
        t = rng.random() * n
        centres = [pixels[by_colour[min(int(t), n - 1)]]]
        closest = [dist2(p, centres[0]) for p in pixels]
        potential = sum(closest[i] for i in by_colour)
        for _c in range(1, k):
            picks = []
            for r in rng.uniform(size=trials) * potential:
                cum, pick = 0.0, by_colour[-1]
                for i in by_colour:
                    cum += closest[i]
                    if cum >= r:
                        pick = i
                        break
                picks.append(pixels[pick])
            pots, cands = [], []
            for c in picks:
                d = [min(closest[i], dist2(pixels[i], c)) for i in range(n)]
                pots.append(sum(d[i] for i in by_colour))
                cands.append(d)
            j = pots.index(min(pots))
            potential, closest = pots[j], cands[j]
            centres.append(picks[j])
        # Lloyd iterations until no pixel changes cluster
        centres = [tuple(float(v) for v in c) for c in centres]
        labels = [nearest(p, centres)[0] for p in pixels]
        for _it in range(300):
            sums = [[0.0, 0.0, 0.0] for _ in range(k)]
            cnt = [0] * k
            for p, lab in zip(pixels, labels):
                s = sums[lab]
                s[0] += p[0]
                s[1] += p[1]
                s[2] += p[2]
                cnt[lab] += 1
            if 0 in cnt:
                notes.append("a cluster emptied during Lloyd's iterations")
                cnt = [max(c, 1) for c in cnt]
            centres = [(s[0] / c, s[1] / c, s[2] / c) for s, c in zip(sums, cnt)]
            new = [nearest(p, centres)[0] for p in pixels]
            if new == labels:
                break
            labels = new
        inertia = sum(nearest(p, centres)[1] for p in pixels)
        if best is None or inertia < best[0]:
            best = (inertia, labels)
    return best[1]


def pure_python_pixels(path: str, out: str) -> dict:
    import numpy as np  # only its seeded random generator, shared with the product

    notes: list[str] = []
    w, h, pixels = read_p3(path)
    cold = [coldness(*p) for p in pixels]
    k = min(CLUSTERS, len(set(pixels)))
    labels = kmeans_pixels(pixels, k, np.random.default_rng(SEED), N_INIT, notes)
    # clusters numbered hottest (lowest mean coldness) first
    csum, ccnt = [0.0] * k, [0] * k
    for lab, c in zip(labels, cold):
        csum[lab] += c
        ccnt[lab] += 1
    mean_cold = [s / c for s, c in zip(csum, ccnt)]
    order = sorted(range(k), key=lambda j: mean_cold[j])
    rank = {old: new for new, old in enumerate(order)}
    labels = [rank[lab] for lab in labels]
    ccold = [mean_cold[old] for old in order]
    # downscaling and fine division (diagonal when each row holds a multiple of K chunks)
    kk = math.gcd(SMS, MEM)
    cw, ch = CHUNK
    cols = -(-w // cw)
    group = []
    for y in range(h):
        for x in range(w):
            r, c = y // ch, x // cw
            group.append((r + c) % kk if cols % kk == 0 else (r * cols + c) % kk)
    # per group: pixels and their coldness; per block: its group (if wholly inside one) and dominant colour
    gpix = [0] * kk
    gcount = [[0] * k for _ in range(kk)]
    for g, lab in zip(group, labels):
        gpix[g] += 1
        gcount[g][lab] += 1
    gcold = [sum(gcount[g][j] * ccold[j] for j in range(k)) / gpix[g] for g in range(kk)]
    bw, bh = BLOCK
    br, bc = h // bh, w // bw
    cand = [[] for _ in range(kk)]
    dominant = {}
    for by in range(br):
        for bx in range(bc):
            gs, counts = set(), [0] * k
            for dy in range(bh):
                for dx in range(bw):
                    i = (by * bh + dy) * w + bx * bw + dx
                    gs.add(group[i])
                    counts[labels[i]] += 1
            dominant[by, bx] = counts.index(max(counts))
            if len(gs) == 1:
                cand[gs.pop()].append((by, bx))
    lo, hi = BOUNDS
    rng = np.random.default_rng(SEED)  # the selection's own generator, as in the product
    summary = {"K": kk, "groups": []}
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    for g in range(kk):
        frac = min(hi, max(lo, gcold[g]))
        want = min(max(1, round(frac * gpix[g] / (bw * bh))), len(cand[g]))
        col = [dominant[b] for b in cand[g]]
        n_j = [float(col.count(j)) for j in range(k)]
        total = sum(n_j)
        x = [n / total * want for n in n_j]
        quota = [math.floor(v) for v in x]
        left = want - sum(quota)
        for j in sorted(range(k), key=lambda j: -(x[j] - quota[j]))[:max(left, 0)]:
            quota[j] += 1
        chosen, leftover = [], []
        for j in range(k):
            idx = [i for i, c in enumerate(col) if c == j]
            idx = [idx[p] for p in rng.permutation(len(idx))]
            chosen += idx[:quota[j]]
            leftover += idx[quota[j]:]
        short = want - len(chosen)
        if short > 0:
            chosen += [leftover[p] for p in rng.permutation(len(leftover))[:short]]
        blocks = [cand[g][i] for i in sorted(chosen)]
        with open(outdir / f"group_{g}.coords", "w") as fh:
            for by, bx in blocks:
                for dy in range(bh):
                    for dx in range(bw):
                        fh.write(f"{bx * bw + dx} {by * bh + dy}\n")
        summary["groups"].append({"group": g, "pixels": gpix[g], "fraction_target": frac,
                                  "traced": len(blocks) * bw * bh})
    summary["notes"] = notes
    (outdir / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


# ---- the benchmark ------------------------------------------------------------------------------------------
def run(cmd: list[str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--heatmap", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-python", action="store_true", help="time only the product")
    ap.add_argument("--pure", nargs=2, metavar=("HEATMAP", "OUTDIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pure:
        pure_python_pixels(*args.pure)
        return
    if not Path(args.heatmap).is_file():
        raise SystemExit(f"{args.heatmap}: not found (../shared/data/zatel/heatmaps/ holds the real heatmaps)")
    with tempfile.TemporaryDirectory() as tmp:
        prod_out, py_out = Path(tmp) / "product", Path(tmp) / "python"
        cmd = [sys.executable, "-m", "gpudse_core", "pixels", args.heatmap, "--sms", str(SMS), "--mem", str(MEM),
               "--clusters", str(CLUSTERS), "--seed", str(SEED), "-o", str(prod_out)]
        times = [run(cmd) for _ in range(args.runs)]
        best = min(times)
        print(f"gpudse pixels, {Path(args.heatmap).name}, whole process: min {best:.3f} s of {args.runs} "
              f"({', '.join(f'{t:.3f}' for t in times)}); required <= 1.0 s")
        if args.skip_python:
            return
        py = run([sys.executable, str(Path(__file__).resolve()), "--pure", args.heatmap, str(py_out)])
        print(f"pure-Python per-pixel loops, whole process: {py:.1f} s (one run)")
        print(f"ratio: {py / best:.0f}x (goal >= 50x)")
        groups = sorted(p.name for p in prod_out.glob("group_*.coords"))
        same = groups == sorted(p.name for p in py_out.glob("group_*.coords")) and all(
            (prod_out / g).read_bytes() == (py_out / g).read_bytes() for g in groups)
        notes = json.loads((py_out / "summary.json").read_text())["notes"]
        if same:
            print(f"same selection: yes ({len(groups)} group_*.coords files byte-identical)")
        else:
            diff = [g for g in groups if not (py_out / g).is_file() or (prod_out / g).read_bytes() !=
                    (py_out / g).read_bytes()]
            print(f"same selection: NO, {diff} differ" + (f"; pure-Python notes: {notes}" if notes else
                  "; see the module docstring for the possible causes"))


if __name__ == "__main__":
    main()
