"""Incremental least squares for the stepwise search (Stargazer §5.2, Algorithm 1: every candidate model is
scored without a refit from scratch).

The search keeps an orthonormal basis Q of the current model's columns (:class:`OLSState`). Candidate blocks are
kept *residualised* (orthogonal to Q) in contiguous arrays (:class:`Candidates`): when terms are accepted, only the
new columns of Q are projected out of them (twice, for stability), as one matrix product over all candidates.
Each candidate's residual block is factorised with a column-pivoted QR (:meth:`OLSState.factor`), and the drop in
the residual sum of squares is the squared norm of the residual's projection on it. A block that adds no
independent column is reported as such, never a crash. :func:`r2`, :func:`adj_r2` and :func:`llf` are the
scores of a residual sum of squares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg

RANK_TOL = 1e-9
REORTH = 0.1  # Gram–Schmidt: a second pass for columns reduced below this share of their norm


class OLSState:
    """Orthonormal basis Q of the current model's columns (preallocated, grown by doubling),
    the residual and the RSS.

    Parameters
    ----------
    z : ndarray of shape (n,)
        The response; the model starts as the intercept.

    Attributes
    ----------
    rank : int
        Columns of Q.
    tss, rss : float
        Total and residual sums of squares.
    resid : ndarray of shape (n,)
        The current residuals.
    """

    def __init__(self, z: np.ndarray):
        n = z.size
        self.n = n
        self._q = np.empty((n, 64), order="F")  # columns contiguous: BLAS-friendly slices
        self._q[:, 0] = 1.0 / math.sqrt(n)
        self.rank = 1  # intercept
        self.tss = float(np.sum((z - z.mean()) ** 2))
        self.resid = z - z.mean()
        self.rss = self.tss

    @property
    def q(self) -> np.ndarray:
        """Q's columns (intercept first, in the order the terms entered)."""
        return self._q[:, :self.rank]

    def project_out(self, block: np.ndarray, start: int = 0) -> np.ndarray:
        """*block* minus its projection on Q's columns from *start* on, in place: one classical
        Gram–Schmidt pass, and a second for the columns that lost more than 1 − REORTH of their norm
        in it (where cancellation could leave a component along Q; "twice is enough")."""
        qn = self._q[:, start:self.rank]
        if qn.shape[1] and block.shape[1]:
            before = np.einsum("ij,ij->j", block, block)
            block -= qn @ (qn.T @ block)
            after = np.einsum("ij,ij->j", block, block)
            redo = np.flatnonzero(after < REORTH ** 2 * before)
            if redo.size:
                sub = block[:, redo]
                sub -= qn @ (qn.T @ sub)
                block[:, redo] = sub
        return block

    def factor(self, res: np.ndarray, norms: np.ndarray) -> Factor | None:
        """Pivoted QR of a residualised block: which columns are independent (a column is dependent
        when its new part is below RANK_TOL of its original norm) and the gain in fit."""
        if res.shape[1] == 0:
            return None
        qr, piv, _, _, info = _geqp3(res if res.flags.f_contiguous else np.asfortranarray(res))
        if info != 0:
            return None
        piv = piv - 1
        w = min(res.shape)  # a block wider than the rows has at most as many independent columns
        rb = np.triu(qr[:w, :w])
        diag = np.abs(np.diag(rb))
        keep = diag > RANK_TOL * np.maximum(norms[piv[:w]], 1e-300)
        # pivoted QR orders |diag| decreasingly, so the independent columns come first
        r = int(np.sum(np.cumprod(keep)))
        if r == 0:
            return None
        cols = piv[:r]
        if diag[0] > 1e6 * diag[r - 1]:  # ill-conditioned: gains from an explicit orthonormal basis
            qb = np.linalg.qr(res[:, cols])[0]
            c = qb.T @ self.resid
        else:  # c = Q_bᵀ resid = R⁻ᵀ B_kᵀ resid, without forming Q_b
            qb = None
            c = scipy.linalg.solve_triangular(rb[:r, :r], res[:, cols].T @ self.resid, trans="T", check_finite=False)
        return Factor(np.sort(cols), cols, float(c @ c), qb)

    def basis(self, res: np.ndarray, f: Factor) -> np.ndarray:
        """Orthonormal columns spanning the independent part of a residualised block."""
        return f.qb if f.qb is not None else np.linalg.qr(res[:, f.cols])[0]

    def add(self, qb: np.ndarray) -> None:
        """Orthonormal columns *qb* (orthogonal to Q) join the model."""
        c = qb.T @ self.resid
        self.resid = self.resid - qb @ c
        self.rss = max(float(self.resid @ self.resid), 0.0)
        need = self.rank + qb.shape[1]
        if need > self._q.shape[1]:
            grown = np.empty((self.n, max(need, 2 * self._q.shape[1])), order="F")
            grown[:, :self.rank] = self._q[:, :self.rank]
            self._q = grown
        self._q[:, self.rank:need] = qb
        self.rank = need


def _geqp3(a: np.ndarray):
    """LAPACK's column-pivoted QR (R and the pivots only; Q_b is not formed for every candidate)."""
    return scipy.linalg.lapack.dgeqp3(a, overwrite_a=False)


@dataclass
class Factor:
    """A candidate block's pivoted QR: its independent columns and its gain in fit."""

    keep: np.ndarray  # independent block columns, in block order
    cols: np.ndarray  # the same in pivot order
    gain: float  # drop in the residual sum of squares
    qb: np.ndarray | None  # orthonormal basis when already computed


class Candidates:
    """Candidate blocks kept residualised against the model in one contiguous array.

    ``refresh`` projects out only the model columns added since the last refresh, for all
    candidates at once (one BLAS-3 product)."""

    def __init__(self, st: OLSState, terms: list[tuple[str, ...]], blocks: list[np.ndarray], labels: list[list]):
        self.st = st
        self.terms = list(terms)
        self.labels = dict(zip(terms, labels))
        widths = [b.shape[1] for b in blocks]
        self.offsets = dict(zip(terms, np.cumsum([0] + widths[:-1]).tolist()))
        self.widths = dict(zip(terms, widths))
        self.res = stack(blocks, st.n)
        self.norms = np.sqrt(np.einsum("ij,ij->j", self.res, self.res))
        self.done = 0

    def drop(self, term: tuple[str, ...]) -> None:
        """*term* is no longer a candidate (its columns are compacted away once few are left)."""
        self.terms.remove(term)
        live = sum(self.widths[t] for t in self.terms)
        if live < 0.6 * self.res.shape[1]:  # compact: stop projecting blocks nobody will use
            parts = [self.res[:, self.offsets[t]:self.offsets[t] + self.widths[t]] for t in self.terms]
            nparts = [self.norms[self.offsets[t]:self.offsets[t] + self.widths[t]] for t in self.terms]
            self.offsets = dict(zip(self.terms, np.cumsum([0] + [self.widths[t] for t in self.terms][:-1]).tolist()))
            self.res = stack(parts, self.st.n)
            self.norms = np.concatenate(nparts) if nparts else np.zeros(0)

    def refresh(self) -> None:
        """Project out of every block the model columns added since the last refresh."""
        if self.done < self.st.rank:
            self.st.project_out(self.res, self.done)
            self.done = self.st.rank

    def block(self, term: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """*term*'s residualised columns and their norms before residualising."""
        o, w = self.offsets[term], self.widths[term]
        return self.res[:, o:o + w], self.norms[o:o + w]


def stack(blocks: list[np.ndarray], n: int) -> np.ndarray:
    """Blocks side by side in one Fortran-ordered array (each block's columns contiguous)."""
    out = np.empty((n, sum(b.shape[1] for b in blocks)), order="F")
    o = 0
    for b in blocks:
        out[:, o:o + b.shape[1]] = b
        o += b.shape[1]
    return out


def r2(rss: float, tss: float) -> float:
    """R² (0 when the response has no spread)."""
    return 1.0 - rss / tss if tss > 0 else 0.0


def adj_r2(rss: float, tss: float, n: int, rank: int) -> float:
    """Adjusted R² of a fit with *rank* columns on *n* rows (NaN without residual degrees of freedom)."""
    dof = n - rank
    if dof <= 0 or tss <= 0:
        return float("nan")
    return 1.0 - (rss / dof) / (tss / (n - 1))


def llf(rss: float, n: int) -> float:
    """The Gaussian log-likelihood of a least-squares fit (for AIC and BIC)."""
    return -n / 2.0 * (math.log(2 * math.pi) + math.log(max(rss, 1e-300) / n) + 1.0)
