"""Which surrogate drives the search: the forest or the stepwise model, by held-out error.

A search's random forest (:mod:`.surrogate`) is a good general-purpose surrogate, but where the
response is close to an additive function of the parameters — the built-in simulator's kernels, for
which the stepwise model (Stargazer, Jia et al. 2012; the project's robust default) predicts cycles
almost exactly — the stepwise model's predicted best is better than anything forest expected
improvement proposes. Neither is better everywhere (on measured tables the stepwise model is poor), so
the search *measures* which predicts the designs simulated so far better and lets the winner drive:

* held-out error of each, on the scale the forest models the objective (log when every value is
  positive): the forest's **out-of-bag** predictions (Breiman 2001; each row predicted by the trees
  whose bootstrap sample left it out), the stepwise model's **k-fold cross-validation** predictions
  (k = 3; each fold's model selected and fitted without it, so the selection is held out too), as the
  mean absolute error over the rows both predict;
* the stepwise model is of the *response* (as the one-shot workflow fits it), an objective computed
  from the response and the parameters (e.g. cycles × area) being applied to its prediction — a
  product of an additive model and a known area is no longer additive, and fitted directly it
  measured far worse;
* it is refitted, and the comparison repeated, only when the successful designs have grown by
  ``REFIT_GROWTH`` (15 %) since the last comparison — about 17 fits over a search of 200;
* while it wins, ``stepwise_slots`` of each batch are its best predicted objective among the designs
  not yet simulated: over a lookup table's rows, the exact structure-aware scan
  (:func:`gpudse_core.explore.best.find_best`) without an objective, every design streamed once per
  fit when the space has at most ``SCAN_POINTS`` points, and otherwise the forest's candidates.

The trial records which surrogate chose it (``forest``, ``stepwise``; empty for the initial sample).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

SIGNIFICANCE = 0.05  # the stepwise model drives only when its smaller held-out errors are significant
START = 20  # successful designs before the stepwise model is first compared
REFIT_GROWTH = 1.15  # the comparison is repeated when the successful designs have grown by this factor
FOLDS = 3
SCAN_POINTS = 2_000_000  # a space up to this size is predicted whole, once per fit, with an objective
SCAN_BLOCK = 1 << 17


def stepwise_slots(batch: int) -> int:
    """Proposals of a batch the stepwise model makes while it wins: half, at least one."""
    return max(1, batch // 2)


class StepwiseSurrogate:
    """The stepwise model of the response, the objective applied to its predictions."""

    def __init__(self, space: Any, objective: Callable | None, log: bool):
        self.space, self.objective, self.log = space, objective, log
        self.model = None
        self._cache: dict = {}
        self.held_out: np.ndarray = np.zeros(0)  # the last cv_predictions (they calibrate its proposals' intervals)
        self.calibration: Any = None

    def _fit(self, digits: np.ndarray, response: np.ndarray) -> Any:
        from ..model.registry import fit_model

        data = self.space.frame(digits)
        name = "response__"
        data[name] = response
        # ranks up to SCAN_POINTS designs a round: the equation alone, without the neighbour envelope or the forest
        # blend (docs/models.md, "Leverage-weighted forest"), whose per-design forest and leverage would cost a
        # scan through every design each round; the search's own forest stands beside it
        model = fit_model("stepwise", data, name, list(self.space.parameter_names), stepwise_kw={"blend": "off"},
                          derived=self.space.derived_map() or None)
        model.neighbours = None
        return model

    def _objective(self, model: Any, digits: np.ndarray) -> np.ndarray:
        pred = np.asarray(model.predict(self.space.frame(digits)), dtype=float)
        if self.objective is None:
            return pred
        with np.errstate(all="ignore"):
            return np.asarray(self.objective(digits, pred), dtype=float)

    def scale(self, v: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.log(v) if self.log else np.asarray(v, dtype=float)

    def cv_predictions(self, digits: np.ndarray, response: np.ndarray, seed: int) -> np.ndarray:
        """k-fold held-out predictions of the objective, on the forest's scale (NaN where a fold failed)."""
        n = len(digits)
        out = np.full(n, np.nan)
        fold = np.random.default_rng(seed).permutation(n) % FOLDS
        from ..model.cancel import Interrupted, check

        for f in range(FOLDS):
            check()  # a Stop asked for during the search's proposal ends it between folds (Interrupted)
            test = fold == f
            try:
                m = self._fit(digits[~test], response[~test])
                out[test] = self.scale(self._objective(m, digits[test]))
            except Interrupted:
                raise
            except Exception:  # noqa: BLE001 - a fold whose fit fails predicts nothing
                continue
        self.held_out = out
        return out

    def fit(self, digits: np.ndarray, response: np.ndarray) -> "StepwiseSurrogate":
        self.model = self._fit(digits, response)
        self._cache = {}
        return self

    def predict(self, digits: np.ndarray) -> np.ndarray:
        """The predicted objective (original scale)."""
        return self._objective(self.model, digits)

    def best_unseen(self, pool: Any, k: int, maximize: bool, candidates: np.ndarray) -> np.ndarray:
        """The *k* designs not yet simulated whose predicted objective is best (see the module docstring)."""
        from .pool import FinitePool, row_keys

        sign = -1.0 if maximize else 1.0
        if isinstance(pool, FinitePool):
            if "all" not in self._cache:
                self._cache["all"] = sign * self.predict(pool.all)
            score = np.where(pool.left, self._cache["all"], np.inf)
            return _take(pool.all, score, k)
        space = self.space
        if self.objective is None:
            try:
                from ..explore.best import find_best

                res = find_best(self.model, space, top=min(len(pool.seen) + k, 10_000), maximize=maximize)
                d = space.decode(np.asarray(res.best["design_index"], dtype=np.int64)).reshape(-1, len(space.radices))
                keep = [i for i, key in enumerate(row_keys(d)) if key.tobytes() not in pool.seen][:k] if len(d) else []
                if keep:
                    return d[np.array(keep)]
            except Exception:  # noqa: BLE001 - a model the exact scan cannot read: the candidates below
                pass
        elif space.size <= SCAN_POINTS:
            if "all" not in self._cache:
                parts = []
                for a in range(0, space.size, SCAN_BLOCK):
                    d = space.decode_range(a, min(SCAN_BLOCK, space.size - a))
                    s = sign * self.predict(d)
                    if space.constraints:
                        s[~space.feasible_mask(d)] = np.inf
                    parts.append(s)
                self._cache["all"] = np.concatenate(parts)
            score = self._cache["all"]
            n = min(len(pool.seen) + k, space.size)
            top = np.argpartition(score, n - 1)[:n] if n < space.size else np.arange(space.size)
            top = top[np.argsort(score[top], kind="stable")]
            top = top[np.isfinite(score[top])]
            d = space.decode(top) if len(top) else np.zeros((0, len(space.radices)), dtype=np.int64)
            keep = [i for i, key in enumerate(row_keys(d)) if key.tobytes() not in pool.seen][:k] if len(d) else []
            return d[np.array(keep, dtype=np.int64)] if keep else d[:0]
        if not len(candidates):
            return candidates
        return _take(candidates, sign * self.predict(candidates), k)


def _take(digits: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    score = np.where(np.isfinite(score), score, np.inf)
    order = np.argsort(score, kind="stable")[:k]
    order = order[np.isfinite(score[order])]
    return digits[order]


def held_out_error(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - truth))) if len(pred) else math.inf


def compare(forest: Any, X: np.ndarray, z: np.ndarray, stepwise: StepwiseSurrogate, digits: np.ndarray,
            response: np.ndarray, seed: int) -> tuple[float, float, float]:
    """(forest's out-of-bag error, stepwise's k-fold error, p) on the rows both predict, on the forest's
    scale; p is the one-sided Wilcoxon signed-rank test's of the stepwise model's absolute errors being
    the smaller, row by row (1 when they are not smaller on average)."""
    oob = forest.oob_predictions(X)
    cv = stepwise.cv_predictions(digits, response, seed)
    both = np.isfinite(oob) & np.isfinite(cv) & np.isfinite(z)
    if both.sum() < max(5, len(z) // 2):
        return held_out_error(oob[np.isfinite(oob)], z[np.isfinite(oob)]), math.inf, 1.0
    a_f, a_s = np.abs(oob[both] - z[both]), np.abs(cv[both] - z[both])
    e_f, e_s = float(a_f.mean()), float(a_s.mean())
    if not e_s < e_f:
        return e_f, e_s, 1.0
    from scipy.stats import wilcoxon

    diff = a_f - a_s
    if not np.any(diff != 0):
        return e_f, e_s, 1.0
    return e_f, e_s, float(wilcoxon(diff, alternative="greater", zero_method="zsplit").pvalue)
