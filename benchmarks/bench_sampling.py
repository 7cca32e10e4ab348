"""Benchmark: sample 1,000 design points from very large spaces (docs/design-spaces.md).

Run: python benchmarks/bench_sampling.py

Prints the median wall time of gpudse's sampler for 1,000 points from a 10**12-point space
(12 parameters × 10 values) and a 10**30-point space (10 × 1000 values), and the ratio against the
obvious implementation: ``random.sample(range(size), n)`` followed by decoding each index into a
design point with Python integer arithmetic.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpudse_core import Constraint, DesignSpace, Parameter, sample  # noqa: E402


def space(n_params: int, n_values: int, constraints=()) -> DesignSpace:
    return DesignSpace(tuple(Parameter(f"p{i}", tuple(range(1, n_values + 1))) for i in range(n_params)),
                       constraints=tuple(Constraint(c) for c in constraints))


def obvious(sp: DesignSpace, n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for idx in rng.sample(range(sp.size), n):
        digits = []
        for m in reversed(sp.radices):
            idx, r = divmod(idx, m)
            digits.append(r)
        digits.reverse()
        out.append({p.name: p.values[d] for p, d in zip(sp.parameters, digits)})
    return out


def timeit(fn, repeat: int = 15) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    n = 1000
    cases = [
        ("10^12 points (12 x 10 values)", space(12, 10)),
        ("10^30 points (10 x 1000 values)", space(10, 1000)),
        ("10^12 points, constraint p0 + p1 >= 12", space(12, 10, ["p0 + p1 >= 12"])),
    ]
    print(f"sampling {n:,} points (returned as a DataFrame with design indices), median of 15 runs")
    for label, sp in cases:
        _ = sp.analysis  # constraint analysis happens once, when the space is loaded
        t_ours = timeit(lambda: sample(sp, n, seed=1))
        line = f"  {label:42s} gpudse {t_ours * 1e3:8.2f} ms"
        if not sp.constraints:
            try:
                t_obv = timeit(lambda: obvious(sp, n, 1))
                line += f"   obvious {t_obv * 1e3:8.2f} ms   ratio {t_obv / t_ours:6.1f}x"
            except OverflowError as e:
                line += f"   obvious fails: {e} (range sizes beyond 2**63)"
        print(line)


if __name__ == "__main__":
    main()
