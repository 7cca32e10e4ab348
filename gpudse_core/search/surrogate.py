"""The search's surrogate: a random forest whose trees' spread is the uncertainty (SMAC).

Hutter, Hoos & Leyton-Brown (2011, §4.2) model the objective with a random forest and take the mean
and variance of the individual trees' predictions as the predictive distribution for expected
improvement; Ipek et al. (2006) likewise use the disagreement of an ensemble to choose what to
simulate next. Here:

* :class:`Forest` — ``n_trees`` regression trees (bootstrap samples, every feature considered per
  split, leaves of one row) on the response, log-transformed when every value is positive (times and
  cycles are multiplicative). :meth:`Forest.predict` returns the mean and the standard deviation of
  the trees' predictions on that scale. Measured on the benchmark_hub tables (docs/search.md,
  "Measured: regret against random search"): a third of the features per split, or adding the spread
  inside each tree's leaf (SMAC's law of total variance, leaves of 3 rows) found worse designs at the
  same budget than this plain between-tree spread.
* :meth:`Forest.spread_skill` — whether the spread knows where the model is wrong: the rank
  correlation of the out-of-bag spread with the out-of-bag error (Breiman 2001's out-of-bag estimate),
  which decides whether ``accuracy`` follows the spread.
* :class:`Feasibility` — the probability that a design simulates at all: a random-forest classifier
  on the designs that succeeded and failed so far (constant 1 until something fails, constant when
  everything failed). Expected improvement is multiplied by it (constrained EI, Gelbart et al. 2014).
"""

from __future__ import annotations

import numpy as np

TREES = 30  # the surrogate's trees (SMAC, Hutter et al. 2011, uses 10; 30 measured better, docs/search.md)
FEASIBILITY_TREES = 10  # the classifier's: 30 there measured worse on the tables with failures (docs/search.md)
MAX_FEATURES = 1.0


class Forest:
    def __init__(self, n_trees: int = TREES, seed: int = 0, log: bool | None = None):
        self.n_trees, self.seed, self.log = n_trees, seed, log

    def fit(self, X: np.ndarray, y: np.ndarray) -> "Forest":
        from sklearn.ensemble import RandomForestRegressor

        y = np.asarray(y, dtype=float)
        if self.log is None:
            self.log = bool(np.all(y > 0))
        z = np.log(y) if self.log else y
        self.model = RandomForestRegressor(n_estimators=self.n_trees, max_features=MAX_FEATURES,
                                           min_samples_leaf=1, bootstrap=True, random_state=self.seed, n_jobs=1)
        self.model.fit(X, z)
        return self

    def spread_skill(self, X: np.ndarray, y: np.ndarray, min_trees: int = 3) -> float:
        """How well the trees' spread ranks the forest's errors: Spearman's correlation, over the training
        rows, between the out-of-bag spread (the trees that did not see a row) and the out-of-bag error
        (rows left out by fewer than *min_trees* trees are skipped). Near 1 when the spread marks where
        the model is wrong (a deterministic simulator's sharp regions); near 0–0.5 on measured tables,
        whose errors are mostly noise the spread cannot locate. NaN when too few rows qualify."""
        from scipy.stats import spearmanr

        z = self.transform(y)
        per_tree, inbag = self._per_tree_inbag(X)
        use = (~inbag).sum(axis=0) >= min_trees
        if use.sum() < 10:
            return float("nan")
        oob = np.where(inbag[:, use], np.nan, per_tree[:, use])
        mu, sd = np.nanmean(oob, axis=0), np.nanstd(oob, axis=0)
        rho = spearmanr(sd, np.abs(mu - z[use]))[0]
        return float(rho) if np.isfinite(rho) else float("nan")

    def oob_predictions(self, X: np.ndarray) -> np.ndarray:
        """Each training row's out-of-bag prediction (the mean of the trees that did not see it; NaN
        when every tree saw it), on the model's scale (Breiman 2001)."""
        per_tree, inbag = self._per_tree_inbag(X)
        out = np.where(inbag, 0.0, per_tree).sum(axis=0)
        n = (~inbag).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, out / np.maximum(n, 1), np.nan)

    def _per_tree_inbag(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each tree's predictions of the training rows *X* (trees × rows) and which rows each tree's
        bootstrap sample held."""
        per_tree = np.stack([t.predict(X) for t in self.model.estimators_])
        inbag = np.zeros(per_tree.shape, dtype=bool)
        for k, rows in enumerate(self.model.estimators_samples_):
            inbag[k, rows] = True
        return per_tree, inbag

    def transform(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        return np.log(y) if self.log else y

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the trees' predictions, on the model's (possibly log) scale."""
        per_tree = np.stack([t.predict(X) for t in self.model.estimators_])
        return per_tree.mean(axis=0), per_tree.std(axis=0)

    def predict_values(self, X: np.ndarray) -> np.ndarray:
        mu, _ = self.predict(X)
        return np.exp(mu) if self.log else mu


class Feasibility:
    def __init__(self, seed: int = 0, n_trees: int = FEASIBILITY_TREES):
        self.seed, self.n_trees = seed, n_trees
        self.model = None
        self.constant = 1.0

    def fit(self, X: np.ndarray, ok: np.ndarray) -> "Feasibility":
        ok = np.asarray(ok, dtype=bool)
        if ok.all() or not ok.any():
            self.model, self.constant = None, float(ok.mean()) if len(ok) else 1.0
            return self
        from sklearn.ensemble import RandomForestClassifier

        self.model = RandomForestClassifier(n_estimators=self.n_trees, max_features=MAX_FEATURES, min_samples_leaf=1,
                                            random_state=self.seed, n_jobs=1)
        self.model.fit(X, ok)
        return self

    def probability(self, X: np.ndarray) -> np.ndarray:
        if self.model is None:
            return np.full(len(X), max(self.constant, 1e-3))
        col = list(self.model.classes_).index(True)
        return np.clip(self.model.predict_proba(X)[:, col], 1e-3, 1.0)
