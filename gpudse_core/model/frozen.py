"""Fitted tree ensembles and explainable boosting machines as plain arrays, evaluated with NumPy.

A random forest (Breiman 2001: the mean of its regression trees), histogram gradient boosting
(Friedman 2001: a baseline plus the sum of its trees) and an explainable boosting machine (Lou,
Caruana et al. 2013, InterpretML: an intercept plus one score table per term, indexed by the bins
of the term's parameters) are, once fitted, nothing but arrays. This module takes them out of the
fitted scikit-learn / InterpretML objects (:func:`freeze_trees`, :func:`freeze_ebm`), writes them as
plain data (:func:`to_doc`), reads them back with every index checked (:func:`from_doc`) and
evaluates them with NumPy alone — no scikit-learn, no InterpretML, no refit — giving the same
numbers, bit for bit, as the fitted object's ``predict``:

* trees: every node's feature, threshold, children and value; a point goes left when its value
  is ``<=`` the threshold. A random forest compares the input cast to float32 (as scikit-learn's
  trees do), histogram boosting the float64 input; the per-tree values are added in tree order
  (forest: from 0, then divided by the tree count; boosting: from the baseline), as the libraries
  add them;
* EBM: a continuous parameter's bin is ``searchsorted(cuts, x, side="right") + 1`` (0 is
  InterpretML's "missing" bin), a categorical one's is its level's index (unseen levels: the last,
  "unknown" bin, score 0); the prediction is the intercept plus each term's table entry, in term order.

Arrays are stored as base64 of their little-endian bytes (``{"dtype": "<f8", "shape": [...],
"data": "..."}``): exact, about half the size of decimal text, and read with :func:`numpy.frombuffer`
under a fixed dtype — plain data, never pickle. A loaded model is checked before it is used: each
child index lies after its parent and inside its own tree (so every descent ends), each feature
index names an input, each bin index fits its table; the number of tree nodes and table cells a
file implies is bounded by ``limits.model_nodes`` before any array is decoded.
"""

from __future__ import annotations

import base64
import math
from typing import Any, Mapping, Sequence

import numpy as np

from .. import limits
from ..errors import GpudseError

DTYPES = {"<f8": np.dtype("<f8"), "<i4": np.dtype("<i4"), "<i8": np.dtype("<i8")}
ROW_BLOCK = 1 << 21  # (rows × trees) descended at once: bounds the temporary arrays to ~50 MB


class FrozenError(GpudseError):
    """A stored fitted model is malformed."""


# ---- arrays as plain data ------------------------------------------------------------------------------
def encode(a: Any, dtype: str) -> dict:
    arr = np.ascontiguousarray(np.asarray(a), dtype=DTYPES[dtype])
    return {"dtype": dtype, "shape": list(arr.shape), "data": base64.b64encode(arr.tobytes()).decode("ascii")}


def decode(d: Any, source: str, what: str, dtype: str | None = None) -> np.ndarray:
    if not isinstance(d, dict) or set(d) != {"dtype", "shape", "data"}:
        raise FrozenError(f"{source}: {what} must be an array entry (dtype, shape, data)")
    dt = DTYPES.get(d["dtype"]) if isinstance(d["dtype"], str) else None
    if dt is None or (dtype is not None and d["dtype"] != dtype):
        raise FrozenError(f"{source}: {what} has dtype {d['dtype']!r}; expected {dtype or ', '.join(DTYPES)}")
    shape = d["shape"]
    if (not isinstance(shape, list) or len(shape) > 8
            or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2 ** 40 for s in shape)):
        raise FrozenError(f"{source}: {what} has a malformed shape {shape!r}")
    if not isinstance(d["data"], str):
        raise FrozenError(f"{source}: {what} data must be base64 text")
    size = math.prod(shape)
    try:
        raw = base64.b64decode(d["data"], validate=True)
    except ValueError:
        raise FrozenError(f"{source}: {what} data is not valid base64") from None
    if len(raw) != size * dt.itemsize:
        raise FrozenError(f"{source}: {what} holds {len(raw):,} bytes; shape {shape} needs {size * dt.itemsize:,}")
    out = np.frombuffer(raw, dtype=dt).reshape(shape).astype(dt.newbyteorder("="))
    if out.dtype.kind == "f" and not np.isfinite(out).all() and what.endswith(("value", "scores", "base")):
        raise FrozenError(f"{source}: {what} holds non-finite numbers")
    if out.dtype.kind == "f" and np.isnan(out).any():
        raise FrozenError(f"{source}: {what} holds NaN")
    return out


def _declared(d: Any) -> int:
    """Element count an array entry declares (0 when malformed: decode reports it)."""
    if isinstance(d, dict) and isinstance(d.get("shape"), list) and all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in d["shape"]):
        return math.prod(d["shape"])
    return 0


# ---- inputs: the model's own columns from the parameter columns -----------------------------------------
def design(points: Mapping[str, np.ndarray], inputs: Sequence[tuple[str, str | None]], n: int) -> np.ndarray:
    """The ensemble's input matrix: per input, a numeric parameter's value or, for (param, level),
    1.0 where the categorical parameter equals that level (one-hot of the training levels; an
    unseen level is all zeros)."""
    X = np.empty((n, len(inputs)), dtype=np.float64)
    for j, (p, level) in enumerate(inputs):
        X[:, j] = points[p] if level is None else (points[p] == level)
    return X


# ---- tree ensembles -----------------------------------------------------------------------------------
class Trees:
    """A tree ensemble: ``mean`` of the trees (forest) or ``base`` + their ``sum`` (boosting)."""

    def __init__(self, combine: str, base: float, float32: bool, inputs: list[tuple[str, str | None]],
                 starts: np.ndarray, feature: np.ndarray, threshold: np.ndarray, left: np.ndarray,
                 right: np.ndarray, value: np.ndarray):
        self.combine, self.base, self.float32, self.inputs = combine, float(base), bool(float32), inputs
        self.starts, self.feature, self.threshold = starts, feature, threshold
        self.left, self.right, self.value = left, right, value

    @property
    def n_trees(self) -> int:
        return len(self.starts) - 1

    def per_tree(self, points: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Each tree's value at each row (rows × trees): a forest's trees' own predictions."""
        X = design(points, self.inputs, n)
        if self.float32:
            X = X.astype(np.float32).astype(np.float64)
        T = self.n_trees
        leaf_values = np.empty((n, T), dtype=np.float64, order="F")
        block = max(1, ROW_BLOCK // max(T, 1))
        for a in range(0, n, block):
            b = min(n, a + block)
            leaf_values[a:b] = self.value[self._leaves(X[a:b])]
        return leaf_values

    def predict(self, points: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        T = self.n_trees
        leaf_values = self.per_tree(points, n)
        if self.combine == "mean":
            out = np.zeros(n, dtype=np.float64)
            for t in range(T):
                out += leaf_values[:, t]
            out /= T
        else:
            out = np.zeros(n, dtype=np.float64)
            out += self.base
            for t in range(T):
                out += leaf_values[:, t]
        return out

    def _leaves(self, X: np.ndarray) -> np.ndarray:
        """The leaf each row reaches in each tree (global node indices, rows × trees)."""
        node = np.broadcast_to(self.starts[:-1], (X.shape[0], self.n_trees)).copy()
        active = self.left[node] >= 0
        while active.any():
            r, t = np.nonzero(active)
            k = node[r, t]
            go_left = X[r, self.feature[k]] <= self.threshold[k]
            node[r, t] = np.where(go_left, self.left[k], self.right[k])
            active[r, t] = self.left[node[r, t]] >= 0
        return node

    def cells(self) -> int:
        return int(self.value.size)

    def to_doc(self) -> dict:
        return {"kind": "trees", "combine": self.combine, "base": self.base, "float32": self.float32,
                "inputs": [[p, lv] for p, lv in self.inputs], "starts": encode(self.starts, "<i8"),
                "feature": encode(self.feature, "<i4"), "threshold": encode(self.threshold, "<f8"),
                "left": encode(self.left, "<i8"), "right": encode(self.right, "<i8"),
                "value": encode(self.value, "<f8")}

    @classmethod
    def from_doc(cls, d: Mapping[str, Any], params: Sequence[str], categorical: Sequence[str],
                 source: str) -> "Trees":
        combine = d.get("combine")
        if combine not in ("mean", "sum"):
            raise FrozenError(f"{source}: trees 'combine' must be 'mean' or 'sum'")
        base = d.get("base", 0.0)
        if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base):
            raise FrozenError(f"{source}: trees 'base' must be a finite number")
        inputs = _inputs(d.get("inputs"), params, categorical, source)
        nodes = _declared(d.get("value"))
        limits.current().check("model_nodes", nodes, f"{source}: {nodes:,} tree nodes",
                               "fit fewer or smaller trees (n_estimators, max_iter, min_samples_leaf)")
        starts = decode(d.get("starts"), source, "trees starts", "<i8")
        arrays = {k: decode(d.get(k), source, f"trees {k}", dt) for k, dt in
                  (("feature", "<i4"), ("threshold", "<f8"), ("left", "<i8"), ("right", "<i8"), ("value", "<f8"))}
        N = arrays["value"].size
        if any(a.ndim != 1 or a.size != N for a in arrays.values()) or starts.ndim != 1 or starts.size < 2:
            raise FrozenError(f"{source}: the tree arrays must be flat and of one length, with at least one tree")
        if starts[0] != 0 or starts[-1] != N or np.any(np.diff(starts) < 1):
            raise FrozenError(f"{source}: trees 'starts' must rise from 0 to the node count, each tree non-empty")
        tree_end = np.repeat(starts[1:], np.diff(starts))
        idx = np.arange(N)
        left, right, feature = arrays["left"], arrays["right"], arrays["feature"]
        leaf = left < 0
        if np.any(leaf != (right < 0)) or np.any(leaf & ((left != -1) | (right != -1))):
            raise FrozenError(f"{source}: a tree node has one child only (a leaf has left = right = -1)")
        inner = ~leaf
        for name, child in (("left", left), ("right", right)):
            bad = inner & ((child <= idx) | (child >= tree_end))
            if bad.any():
                raise FrozenError(f"{source}: tree node {int(np.flatnonzero(bad)[0])}'s {name} child is not a later "
                                  f"node of its own tree")
        if np.any(inner & ((feature < 0) | (feature >= len(inputs)))):
            raise FrozenError(f"{source}: a tree node splits on an input the model does not have")
        feature = np.where(inner, feature, 0).astype(np.intp)
        return cls(combine, float(base), bool(d.get("float32", False)), inputs, starts.astype(np.intp), feature,
                   arrays["threshold"], left.astype(np.intp), right.astype(np.intp), arrays["value"])


def _inputs(raw: Any, params: Sequence[str], categorical: Sequence[str], source: str) -> list[tuple[str, str | None]]:
    if not isinstance(raw, list) or not raw:
        raise FrozenError(f"{source}: trees 'inputs' must list the ensemble's input columns")
    out = []
    for item in raw:
        ok = isinstance(item, list) and len(item) == 2 and item[0] in params
        if ok and item[1] is not None:
            ok = isinstance(item[1], str) and item[0] in categorical
        elif ok:
            ok = item[0] not in categorical
        if not ok:
            raise FrozenError(f"{source}: trees input {item!r} must be [numeric parameter, null] or "
                              f"[categorical parameter, level]")
        out.append((item[0], item[1]))
    return out


def freeze_trees(estimator: Any, parameters: Sequence[str], categorical: Sequence[str]) -> Trees:
    """The arrays of a fitted RandomForestRegressor or HistGradientBoostingRegressor, alone or after
    the one-hot ColumnTransformer of :func:`gpudse_core.model.learners._tree_pipeline`."""
    steps = getattr(estimator, "steps", None)
    est = steps[-1][1] if steps else estimator
    inputs: list[tuple[str, str | None]] = [(p, None) for p in parameters]
    if steps:
        inputs = []
        for name, trans, cols in steps[0][1].transformers_:
            names = [parameters[c] if isinstance(c, (int, np.integer)) else str(c) for c in cols]
            if name == "levels":
                for p, cats in zip(names, trans.categories_, strict=True):
                    inputs += [(p, str(c)) for c in cats]
            elif isinstance(trans, str) and trans == "passthrough" or getattr(trans, "func", "") is None:
                # the remainder passes through (scikit-learn wraps it in an identity FunctionTransformer)
                inputs += [(p, None) for p in names]
            elif len(names):
                raise FrozenError(f"cannot store the column transformer step {name!r}")
    if hasattr(est, "estimators_"):  # random forest
        combine, base, float32 = "mean", 0.0, True
        trees = [tree.tree_ for tree in est.estimators_]
        parts = [(t.feature, t.threshold, t.children_left, t.children_right, t.value[:, 0, 0]) for t in trees]
        feature, threshold, cl, cr, value = (np.concatenate(col) for col in zip(*parts))
        sizes = np.array([len(p[0]) for p in parts])
    else:  # histogram gradient boosting: every predictor's node records, concatenated once
        combine, float32 = "sum", False
        base = float(np.asarray(est._baseline_prediction).ravel()[0])
        preds = [pred.nodes for it in est._predictors for pred in it]
        nodes = np.concatenate(preds)
        if nodes["is_categorical"].any():
            raise FrozenError("cannot store native categorical splits; the learners one-hot encode levels")
        leaf = nodes["is_leaf"].astype(bool)
        feature, threshold, value = nodes["feature_idx"], nodes["num_threshold"], nodes["value"]
        cl = np.where(leaf, -1, nodes["left"].astype(np.int64))
        cr = np.where(leaf, -1, nodes["right"].astype(np.int64))
        sizes = np.array([len(p) for p in preds])
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    offset = np.repeat(starts[:-1], sizes)
    cl = np.asarray(cl, dtype=np.int64)
    cr = np.asarray(cr, dtype=np.int64)
    leaf = cl < 0
    return Trees(combine, base, float32, inputs, starts,
                 np.where(leaf, 0, np.asarray(feature, dtype=np.int64)).astype(np.intp),
                 np.where(leaf, 0.0, np.asarray(threshold, dtype=np.float64)),
                 np.where(leaf, -1, cl + offset).astype(np.intp), np.where(leaf, -1, cr + offset).astype(np.intp),
                 np.asarray(value, dtype=np.float64).copy())


# ---- explainable boosting machines -------------------------------------------------------------------------
class EBMTables:
    """Intercept + per-term score tables over the bins of each term's parameters."""

    def __init__(self, parameters: list[str], types: list[str], bins: list[list[Any]], intercept: float,
                 term_features: list[tuple[int, ...]], term_scores: list[np.ndarray]):
        self.parameters, self.types, self.bins = parameters, types, bins
        self.intercept, self.term_features, self.term_scores = float(intercept), term_features, term_scores

    def _bin(self, f: int, level: int, x: np.ndarray) -> np.ndarray:
        b = self.bins[f][level]
        if self.types[f] == "continuous":
            x = np.asarray(x, dtype=np.float64)
            out = np.searchsorted(b, x, side="right").astype(np.intp) + 1
            out[np.isnan(x)] = 0
            return out
        values = np.asarray(x).astype(str)
        uniq, inv = np.unique(values, return_inverse=True)
        codes = np.array([b.get(u, -1) for u in uniq], dtype=np.intp)
        return codes[inv.ravel()]

    def term_bins(self, points: Mapping[str, np.ndarray]) -> list[tuple[np.ndarray, ...]]:
        cache: dict[tuple[int, int], np.ndarray] = {}
        out = []
        for feats in self.term_features:
            idx = []
            for f in feats:
                key = (f, min(len(self.bins[f]), len(feats)) - 1)
                if key not in cache:
                    cache[key] = self._bin(f, key[1], points[self.parameters[f]])
                idx.append(cache[key])
            out.append(tuple(idx))
        return out

    def eval_terms(self, points: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Each term's score per point (points × terms), as InterpretML's ``eval_terms``."""
        out = np.empty((n, len(self.term_features)), dtype=np.float64, order="F")
        for t, idx in enumerate(self.term_bins(points)):
            out[:, t] = self.term_scores[t][idx]
        return out

    def predict(self, points: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        out = np.full(n, self.intercept, dtype=np.float64)
        if n:
            for scores, idx in zip(self.term_scores, self.term_bins(points)):
                out += scores[idx]
        return out

    def cells(self) -> int:
        return int(sum(s.size for s in self.term_scores))

    def to_doc(self) -> dict:
        feats = []
        for p, typ, levels in zip(self.parameters, self.types, self.bins):
            if typ == "continuous":
                feats.append({"parameter": p, "type": typ, "cuts": [encode(c, "<f8") for c in levels]})
            else:
                feats.append({"parameter": p, "type": typ, "levels": [sorted(m, key=m.get) for m in levels]})
        return {"kind": "ebm", "intercept": self.intercept, "features": feats,
                "terms": [{"features": list(f), "scores": encode(s, "<f8")}
                          for f, s in zip(self.term_features, self.term_scores)]}

    @classmethod
    def from_doc(cls, d: Mapping[str, Any], params: Sequence[str], categorical: Sequence[str],
                 source: str) -> "EBMTables":
        intercept = d.get("intercept")
        if isinstance(intercept, bool) or not isinstance(intercept, (int, float)) or not math.isfinite(intercept):
            raise FrozenError(f"{source}: ebm 'intercept' must be a finite number")
        feats, terms = d.get("features"), d.get("terms")
        if not isinstance(feats, list) or [f.get("parameter") if isinstance(f, dict) else None for f in feats] \
                != list(params):
            raise FrozenError(f"{source}: ebm 'features' must describe the parameters {', '.join(params)} in order")
        if not isinstance(terms, list):
            raise FrozenError(f"{source}: ebm 'terms' must be a list")
        cells = sum(_declared(t.get("scores")) for t in terms if isinstance(t, dict))
        limits.current().check("model_nodes", cells, f"{source}: {cells:,} EBM table cells",
                               "fit an EBM with fewer interactions or bins")
        types, bins, sizes = [], [], []
        for f in feats:
            typ = f.get("type")
            p = f["parameter"]
            if typ == "continuous" and p not in categorical and isinstance(f.get("cuts"), list) and f["cuts"]:
                cuts = [decode(c, source, f"ebm {p} cuts", "<f8") for c in f["cuts"]]
                if any(c.ndim != 1 or np.any(np.diff(c) <= 0) for c in cuts):
                    raise FrozenError(f"{source}: ebm {p} cuts must be increasing lists")
                bins.append(cuts)
                sizes.append([c.size + 3 for c in cuts])
            elif typ == "nominal" and p in categorical and isinstance(f.get("levels"), list) and f["levels"]:
                maps = []
                for lv in f["levels"]:
                    if not isinstance(lv, list) or not all(isinstance(v, str) for v in lv) or len(set(lv)) != len(lv):
                        raise FrozenError(f"{source}: ebm {p} levels must be lists of distinct text values")
                    maps.append({v: i + 1 for i, v in enumerate(lv)})
                bins.append(maps)
                sizes.append([len(m) + 2 for m in maps])
            else:
                raise FrozenError(f"{source}: ebm feature {p!r} must be continuous (a numeric parameter, with cuts) "
                                  f"or nominal (a categorical one, with levels)")
            types.append(typ)
        term_features, term_scores = [], []
        for t in terms:
            fs = t.get("features") if isinstance(t, dict) else None
            if (not isinstance(fs, list) or not fs or len(set(fs)) != len(fs)
                    or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(params) for i in fs)):
                raise FrozenError(f"{source}: an ebm term's 'features' must be distinct parameter indices")
            scores = decode(t.get("scores"), source, "ebm term scores", "<f8")
            want = tuple(sizes[i][min(len(sizes[i]), len(fs)) - 1] for i in fs)
            if scores.shape != want:
                raise FrozenError(f"{source}: ebm term {'×'.join(params[i] for i in fs)} has a table of shape "
                                  f"{scores.shape}; its bins need {want}")
            term_features.append(tuple(fs))
            term_scores.append(scores)
        return cls(list(params), types, bins, float(intercept), term_features, term_scores)


def freeze_ebm(ebm: Any, parameters: Sequence[str]) -> EBMTables:
    """The bins, intercept and term tables of a fitted ExplainableBoostingRegressor."""
    types = [str(t) for t in ebm.feature_types_in_]
    bins: list[list[Any]] = []
    for typ, levels in zip(types, ebm.bins_, strict=True):
        if typ == "continuous":
            bins.append([np.asarray(c, dtype=np.float64) for c in levels])
        elif typ == "nominal":
            maps = [{str(k): int(v) for k, v in m.items()} for m in levels]
            if any(sorted(m.values()) != list(range(1, len(m) + 1)) for m in maps):
                raise FrozenError("cannot store an EBM whose level indices are not 1..n")
            bins.append(maps)
        else:
            raise FrozenError(f"cannot store an EBM feature of type {typ!r}")
    intercept = float(np.asarray(ebm.intercept_, dtype=np.float64).ravel()[0])
    return EBMTables(list(parameters), types, bins, intercept, [tuple(int(i) for i in f) for f in ebm.term_features_],
                     [np.asarray(s, dtype=np.float64) for s in ebm.term_scores_])


def from_doc(d: Any, params: Sequence[str], categorical: Sequence[str], source: str) -> Trees | EBMTables:
    if not isinstance(d, dict):
        raise FrozenError(f"{source}: the fitted model entry must be an object")
    if d.get("kind") == "trees":
        return Trees.from_doc(d, params, categorical, source)
    if d.get("kind") == "ebm":
        return EBMTables.from_doc(d, params, categorical, source)
    raise FrozenError(f"{source}: unknown fitted model kind {d.get('kind')!r} (trees or ebm)")
