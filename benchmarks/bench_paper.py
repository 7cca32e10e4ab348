"""The paper model (Stargazer 1.0 exactly) on the authors' own training half (docs/models.md "Stargazer as written").

Run: python benchmarks/bench_paper.py [--repeats 3]
Reads ../shared/data/stargazer/matrix-training.csv (300 GPGPU-Sim runs of the matrix-multiply example;
the authors' 200 test designs are not public here). Prints, per model, the fit on all 300 rows
(terms, R², coefficients) and the relative error (%) of K-fold cross-validation on them (5 folds,
shuffled, each repeat with its own seed): mean / median / p90 / max over every held-out row.
Models: the paper model (relative θ = φ = 0), the paper text's absolute reading (θ = φ = 0.01), and
the robust default (`gpudse fit`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from gpudse_core.model.metrics import relative_errors, summarize  # noqa: E402
from gpudse_core.model.stepwise import PAPER_SETTINGS, fit_stepwise  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "stargazer" / "matrix-training.csv"
MODELS = {
    "paper (Stargazer 1.0, relative θ = φ = 0)": dict(PAPER_SETTINGS),
    "paper --threshold-rule absolute (θ = φ = 0.01)": {**PAPER_SETTINGS, "threshold_rule": "absolute", "theta": 0.01,
                                                       "phi": 0.01},
    "robust default (gpudse fit)": {},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    if not DATA.exists():
        print(f"skipped: {DATA} is not present")
        return 0
    data = pd.read_csv(DATA)
    y = data["runtime"].to_numpy(float)
    for name, kw in MODELS.items():
        t0 = time.perf_counter()
        m = fit_stepwise(data, "runtime", **kw)
        errs = []
        for rep in range(args.repeats):
            order = np.random.default_rng(rep).permutation(len(data))
            for fold in np.array_split(order, args.folds):
                train = data.drop(index=data.index[fold])
                fm = fit_stepwise(train, "runtime", **kw)
                errs.append(relative_errors(y[fold], fm.predict(data.iloc[fold].drop(columns="runtime"))))
        s = summarize(np.concatenate(errs))
        print(f"{name}: terms {', '.join(m.terms)}; R² {m.r2:.5f}; {len(m.coefficients)} coefficients; "
              f"{m.transform} scale")
        print(f"  {args.folds}-fold CV x {args.repeats}: mean {100 * s['mean']:.2f} / median {100 * s['median']:.2f} / "
              f"p90 {100 * s['p90']:.2f} / max {100 * s['max']:.1f} %  ({time.perf_counter() - t0:.0f} s)")
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
