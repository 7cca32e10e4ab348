"""The design a row of the best designs shows — the one "Simulate these" runs — by a stated rule.

A row of :func:`.designs.best_designs` stands for every feasible design with one prediction (Lee &
Brooks' models read few parameters, and a level cell or a conditional term leaves others without
effect at some values), so which of them it shows is a choice. The choice must not depend on the
order a space file lists its values in (a tie broken by the design index would show the smallest GPU
of an MGPUSim space as "the best"). The rule, over the designs of the row's members (each a set of
designs sharing the values of the parameters the model reads):

1. with simulated designs (an ok results row giving every parameter): the design differing from a
   simulated one in the fewest parameters — the simulated design *moved onto* a member (the member's
   values of the dimensions the model reads, the simulated design's for the others), when feasible;
2. then the design nearest the middle of the space: the smallest sum over the parameters of
   ``|r / (n - 1) - 1/2|``, where ``r`` is the rank of the design's value among the parameter's
   ``n`` values sorted (by number; categorical ones by text), so 8 is the middle of 1, 2, …, 64;
3. then the smallest ranks, parameter by parameter in the space's order.

Step 2 is separable over dimensions, so the member's best design is its values of the used
dimensions with each other dimension at its own nearest-the-middle value; when that design is not
feasible (a constraint couples it), the member's feasible designs are enumerated (at most
:data:`ENUMERATED` of them, in index order, a note says when there were more).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..space.design import DesignSpace

ENUMERATED = 4096  # feasible designs of one member compared when its nearest-the-middle one is infeasible
_ROUND = 9  # distances are compared to this many decimals (sums of exact fractions in floating point)


@dataclass
class Ranks:
    """Per dimension and digit: the distance to the middle (summed over the dimension's parameters),
    the ranks of its parameters' values, and how many parameters the dimension holds."""

    dist: list[np.ndarray]
    rank: list[np.ndarray]  # (radix, parameters of the dimension)
    width: np.ndarray  # parameters per dimension

    @classmethod
    def of(cls, space: DesignSpace) -> Ranks:
        dist, rank = [], []
        for dim in space.dimensions:
            cols = []
            for par in dim.parameters:
                keyed = [(str(v),) if par.kind == "categorical" else (float(v),) for v in par.values]
                order = sorted(range(len(keyed)), key=lambda i: keyed[i])
                r = np.empty(len(keyed), dtype=np.int64)
                r[order] = np.arange(len(keyed))
                cols.append(r)
            ranks = np.stack(cols, axis=1)
            n = ranks.shape[0]
            dist.append(np.abs(ranks / (n - 1) - 0.5).sum(axis=1) if n > 1 else np.zeros(n))
            rank.append(ranks)
        return cls(dist, rank, np.array([len(d.parameters) for d in space.dimensions], dtype=np.int64))

    def order(self, digits: np.ndarray) -> np.ndarray:
        """Positions of *digits*' rows sorted by the rule's steps 2 and 3."""
        d = np.asarray(digits, dtype=np.int64)
        dist = np.zeros(d.shape[0])
        ranks = []
        for j in range(d.shape[1]):
            dist += self.dist[j][d[:, j]]
            ranks.extend(self.rank[j][d[:, j]].T)
        return np.lexsort((*ranks[::-1], np.round(dist, _ROUND)))

    def middle(self, digits: np.ndarray, keep: Sequence[int]) -> np.ndarray:
        """*digits* with every dimension not in *keep* at its nearest-the-middle value (ties: the
        smaller ranks)."""
        out = np.array(digits, dtype=np.int64, copy=True)
        for j in range(out.shape[0]):
            if j not in keep:
                out[j] = int(np.lexsort((*self.rank[j].T[::-1], np.round(self.dist[j], _ROUND)))[0])
        return out


def choose(space: DesignSpace, used_dims: Sequence[int], members: np.ndarray,
           feasible: Callable[[np.ndarray], np.ndarray], enumerate_member: Callable[[int], tuple[np.ndarray, bool]],
           simulated: np.ndarray | None = None, ranks: Ranks | None = None) -> tuple[np.ndarray, bool]:
    """The digits of the design a row shows (see the module docstring) and whether a member had to be
    enumerated only in part. *members*: one design (digits) per member; *feasible(digits)*: which rows
    are feasible designs (constraints and ``--where``); *enumerate_member(i)*: member *i*'s feasible
    designs (digits, in index order) and whether there were more; *simulated*: digits of simulated
    designs (or None)."""
    ranks = ranks or Ranks.of(space)
    used = sorted(set(used_dims))
    members = np.asarray(members, dtype=np.int64).reshape(-1, len(space.radices))
    if simulated is not None and len(simulated):
        sim = np.asarray(simulated, dtype=np.int64)
        moved = np.repeat(sim[None, :, :], members.shape[0], axis=0)  # (member, simulated, dimension)
        moved[:, :, used] = members[:, None, used]
        moved = moved.reshape(-1, sim.shape[1])
        ok = feasible(moved)
        if ok.any():
            differ = ((moved != np.tile(sim, (members.shape[0], 1))) * ranks.width).sum(axis=1)
            differ = np.where(ok, differ, np.iinfo(np.int64).max)
            best = moved[differ == differ.min()]
            return best[ranks.order(best)[0]], False
    cands, partial = [], False
    for i, m in enumerate(members):
        mid = ranks.middle(m, used)
        if feasible(mid[None, :])[0]:
            cands.append(mid[None, :])
            continue
        got, more = enumerate_member(i)
        partial |= more
        if len(got):
            cands.append(np.asarray(got, dtype=np.int64)[ranks.order(got)[:1]])
    if not cands:  # (no member has a feasible design: cannot happen for rows a scan found)
        return members[0], partial
    every = np.concatenate(cands)
    return every[ranks.order(every)[0]], partial
