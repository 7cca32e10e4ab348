"""Where a search's time goes: one record per round (propose, simulate, the round in all).

A round of the sequential search (:func:`.study.run_search`) proposes a batch — fitting the forest,
the feasibility classifier and, under ``--surrogate auto``, the stepwise model, then scoring every
candidate — simulates it, and records it (the caller's ``on_round``: the progress line, the study
stored in a workspace). :class:`RoundTime` keeps the wall-clock seconds of each part, so a script
(``gpudse search --json``), the stderr progress and the Search page can tell a search that waits
for its simulator from one that waits for its models. Every figure is wall time on the machine that
ran the round: on a shared machine it includes waiting for a core.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence


@dataclass
class RoundTime:
    """Round *round*'s seconds: *propose* (of which *fit* fitting the models), *simulate* (the
    simulator, or the campaign that runs it, on *simulations* designs) and *total* (from the round's
    start until the next could start: also its bookkeeping — the progress line, the stored study)."""

    round: int
    simulations: int
    propose_s: float
    fit_s: float
    simulate_s: float
    total_s: float

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> RoundTime:
        return cls(**d)


def timing_doc(rounds: Sequence[RoundTime]) -> dict[str, Any]:
    """The time of a search for ``--json``: every round's record and the sums over them (seconds)."""
    return {"propose_s": sum(r.propose_s for r in rounds), "fit_s": sum(r.fit_s for r in rounds),
            "simulate_s": sum(r.simulate_s for r in rounds), "total_s": sum(r.total_s for r in rounds),
            "rounds": [r.to_dict() for r in rounds]}


def describe(r: RoundTime) -> str:
    """``propose 0.41 s (fit 0.32 s), simulate 0.08 s``: one round's time for the progress line."""
    from ..fmt import fmt_duration

    return (f"propose {fmt_duration(r.propose_s)} (fit {fmt_duration(r.fit_s)}), "
            f"simulate {fmt_duration(r.simulate_s)}")


SECONDS = ("propose", "fit", "simulate", "in all")  # round_table's columns in seconds


def round_table(rounds: Sequence[RoundTime]) -> Any:
    """The rounds' times as a table for reading (the Search page): round, simulations, and the
    propose, fit, simulate and in-all seconds (SECONDS)."""
    import pandas as pd

    return pd.DataFrame([{"round": r.round, "simulations": r.simulations, "propose": r.propose_s, "fit": r.fit_s,
                          "simulate": r.simulate_s, "in all": r.total_s} for r in rounds],
                        columns=["round", "simulations", *SECONDS])
