"""Where the equation's rows do not pin it down: its prediction blended with a forest, by leverage.

Stargazer's model (§5.2) predicts every design from its fitted equation. At a new design whose model
columns take combinations the training rows do not span, the equation extrapolates: the design's
leverage h = x'(A'A)⁻¹x (the variance of the equation's prediction in units of the residual variance
σ², Lee & Brooks §3.3's diagnostics; the training rows' mean is columns / rows) is large, and so is its
error. On the built-in kernels at draws no benchmark uses (300 rows, 1 % noise), 20–45 % of BFS's test
designs have h > 1, and the equation's error there is 4.2 % against 1.1–1.8 % below
(docs/models.md, "Leverage-weighted forest").

So the default model blends, per design, the equation's value with a random forest (Breiman 2001)
fitted on the same training rows, on the model's own scale and parameters, weighting each by the
inverse of its error variance (Bates & Granger 1969, *The combination of forecasts*):

* the equation's variance at the design is σ² h (its residual variance σ² from its own fit);
* the forest's is c σ², its out-of-bag mean squared error on the training rows less the noise σ²,
  so c = max(oob / σ² − 1, :data:`C_MIN`);
* the forest's weight is w = h / (c + h), the equation's 1 − w.

Where the rows pin the equation down (h small against c) the prediction is the equation's; at a design
the rows do not span, the forest's average of nearby training responses takes over; outside the training
support (unseen values and corners) the forest alone predicts and the row says so. A forest that predicts
its left-out rows much worse than the equation fits them (large c: AES, c = 4–11) gets little weight
anywhere. Measured (``benchmarks/bench_accuracy.py``, seeds 11–13, pools of 1,500 and 4,000, and
``benchmarks/bench_tables.py``): every kernel's and table's mean error within 1.05× the forest's and its
maximum within 1.37× (the equation alone: 1.92× and 5.1×).

The forest is fitted by :func:`.learners.fit_fallback` (scikit-learn's, with its out-of-bag predictions) and
stored as plain arrays (:mod:`.frozen`), so a saved model predicts without scikit-learn.
The equation itself, its terms, curves, contributions and trace, is unchanged: the blend is part of the
guarded prediction, like the bound and the neighbour envelope (:meth:`.fitted.StepwiseModel.guarded`).
``blend="off"`` (``gpudse fit --blend off``) gives the equation alone; the paper model never blends.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import GpudseError
from .frozen import Trees

C_MIN = 0.1  # the forest's error variance is taken as at least this share of the equation's residual variance
TREES = 100  # trees of the blended forest (200 for the ``forest`` kind; 100 cost half and measured the same)
CHUNK = 65_536  # designs per block of the leverage's matrix product (bounds its memory)
BLENDS = ("forest", "off")
EXACT = 1e-9  # a residual SD below this share of the response's is an exact fit: no forest to weigh against it


@dataclass
class Fallback:
    """The blended forest of a stepwise model: its trees (on the model's parameters and scale) and c, the
    forest's error variance in units of the equation's residual variance."""

    trees: Trees
    c: float
    categorical: list[str]

    def weights(self, model: Any, X: pd.DataFrame) -> np.ndarray:
        """The forest's weight h / (c + h) at each design of *X* (the model's leverage h, from its noise root)."""
        root = np.asarray(model.noise["root"], dtype=float)
        h = np.empty(len(X))
        for a in range(0, len(X), CHUNK):
            part = X.iloc[a:a + CHUNK]
            m = model.design(part) @ root
            h[a:a + len(part)] = np.einsum("ij,ij->i", m, m)
        return self.weight_of(h)

    def weight_of(self, h: np.ndarray) -> np.ndarray:
        """The forest's weight h / (c + h) at leverages *h* (1 where h is not finite)."""
        with np.errstate(over="ignore", invalid="ignore"):
            w = h / (self.c + h)
        return np.where(np.isnan(h) | np.isinf(h), 1.0, np.clip(w, 0.0, 1.0))

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """The forest's prediction on the model's transformed scale."""
        points = {p: X[p].to_numpy(dtype=object if p in self.categorical else float)
                  for p, _ in self.trees.inputs}
        return self.trees.predict(points, len(X))

    def blend(self, model: Any, X: pd.DataFrame, z: np.ndarray, forest_only: np.ndarray | None = None) -> np.ndarray:
        """*z* (the equation's values at *X*, transformed scale) blended with the forest's; the forest's alone at
        the rows *forest_only* marks."""
        if not len(X):
            return z
        if forest_only is None:
            w = self.weights(model, X)
        else:  # no leverage where the forest alone predicts
            w = np.ones(len(X))
            rest = ~np.asarray(forest_only, dtype=bool)
            if rest.any():
                w[rest] = self.weights(model, X.iloc[np.flatnonzero(rest)])
        f = self.predict(X)
        with np.errstate(over="ignore", invalid="ignore"):
            out = (1.0 - w) * z + w * f
        return np.where(w >= 1.0, f, out)

    def range(self) -> tuple[float, float]:
        """Bounds of what the forest can predict (transformed scale): the mean over its trees of each tree's
        lowest and highest leaf. A blended value lies between the equation's and the forest's, so no design's
        blend is below min(equation, this low end) (what lets Explore scan the equation and stay exact)."""
        t = self.trees
        lo = hi = 0.0
        leaf = t.left < 0
        for k in range(t.n_trees):
            a, b = int(t.starts[k]), int(t.starts[k + 1])
            v = t.value[a:b][leaf[a:b]]
            lo += float(v.min())
            hi += float(v.max())
        return lo / t.n_trees, hi / t.n_trees

    def note(self, model: Any, X: pd.DataFrame) -> str:
        """The fit's note: what the prediction is, and how much of it the forest carries at the training rows."""
        w = self.weights(model, model._with_derived(X)) if len(X) else np.zeros(1)
        return (f"predictions blend this equation with a {self.trees.n_trees}-tree random forest fitted on the same "
                f"rows: the forest's weight at a design is h / (c + h), h its leverage and c = {self.c:.3g} (the "
                f"forest's out-of-bag error less the noise, in units of the equation's residual variance); at the "
                f"training designs it carries a median {100 * float(np.median(w)):.0f} % of the prediction, more "
                f"where the rows do not pin the equation down, and all of it outside the training support. R² and "
                f"the leave-one-out error are the equation's; held-out errors (validate, the Accuracy page) are the "
                f"blend's. --blend off (Fit page: Forest blend) fits the equation alone")

    def to_dict(self) -> dict:
        return {"c": self.c, "categorical": list(self.categorical), "trees": self.trees.to_doc()}

    @classmethod
    def from_dict(cls, d: Any, params: Sequence[str], source: str) -> Fallback:
        if not isinstance(d, Mapping):
            raise GpudseError(f"{source}: 'fallback' must be an object with 'c', 'categorical' and 'trees'")
        c = d.get("c")
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c < C_MIN:
            raise GpudseError(f"{source}: fallback 'c' must be a finite number of at least {C_MIN}")
        cat = d.get("categorical", [])
        if not isinstance(cat, list) or any(p not in params for p in cat):
            raise GpudseError(f"{source}: fallback 'categorical' must list parameters of the model")
        trees = Trees.from_doc(d.get("trees") if isinstance(d.get("trees"), Mapping) else {}, list(params), cat,
                               f"{source} (fallback)")
        if trees.combine != "mean":
            raise GpudseError(f"{source}: the fallback's trees must be a forest (combine 'mean')")
        return cls(trees, float(c), list(cat))
