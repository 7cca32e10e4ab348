"""A sequential search's study as a typed result: what the Search page, ``gpudse search`` and the report share.

A :class:`SearchStudy` is the workspace's ``search`` analysis (:mod:`gpudse_core.workspace.results`):
the search's settings (goal, response, objective or cost, budget, the space's parameters …), why it
stopped, every trial (:class:`~.study.Trial`: its round, the model version that chose it, the design and
the value), each round's time (:class:`~.timing.RoundTime`: propose, simulate, in all) and the model's
estimated error after each round (the dashboard's). It is stored as the plain
record gpudse has always stored (:meth:`SearchStudy.to_stored`, so earlier workspaces open) and read back
with every field checked by :func:`.stored.check_study` — the one validation of a stored study — so a
damaged or forged study reads as :class:`~gpudse_core.workspace.results.Damaged`, naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .study import SearchResult, Trial
from .timing import RoundTime

RESUMABLE = ("budget", "batch")  # settings a resumed search may change (a larger budget goes on)


@dataclass(frozen=True)
class SearchStudy:
    """A stored search: *settings* (as :func:`.runner.search_settings` makes them), *stopped* (budget,
    target, no improvement, exhausted, stopped), *trials* in the order simulated, *model_error*
    ``(simulated, error)`` pairs (the forest's out-of-bag error after each round, Breiman 2001), *times*
    each round's seconds (none for a study stored before rounds were timed)."""

    STAGE: ClassVar[str] = "search"
    WHAT: ClassVar[str] = "search"

    settings: dict
    trials: tuple[Trial, ...] = ()
    stopped: str = ""
    model_error: tuple[tuple[int, float], ...] = ()
    times: tuple[RoundTime, ...] = ()

    @classmethod
    def of(cls, settings: dict, res: SearchResult, model_error: list | None = None) -> SearchStudy:
        """The study of a search's *settings* and its result so far (*model_error*: {simulated, error} dicts)."""
        errors = tuple((int(e["simulated"]), float(e["error"])) for e in model_error or ())
        return cls(dict(settings), tuple(res.trials), res.stopped, errors, tuple(res.rounds))

    # ---- what the readers use --------------------------------------------------------------------
    @property
    def goal(self) -> str:
        return self.settings["goal"]

    @property
    def response(self) -> str:
        return self.settings.get("response") or "value"

    @property
    def objective(self) -> str:
        return self.settings.get("objective") or ""

    @property
    def cost(self) -> str:
        """The front's cost: its expression of the parameters, or the measured column (``cost_column``)."""
        return self.settings.get("cost") or self.settings.get("cost_column") or ""

    @property
    def params(self) -> list[str]:
        return list(self.settings.get("params") or [])

    @property
    def source(self) -> str:
        return self.settings.get("source") or "search"

    @property
    def rounds(self) -> int:
        return max((t.round for t in self.trials), default=-1) + 1

    def result(self) -> SearchResult:
        """The trials as a :class:`~.study.SearchResult` (best, front, best so far)."""
        return SearchResult(self.goal, self.response, list(self.trials), self.stopped, rounds=list(self.times))

    def best(self) -> Trial | None:
        """The best trial of a min or max search (None for accuracy, pareto, or nothing simulated yet)."""
        return self.result().best() if self.goal in ("min", "max") else None

    def describe(self) -> str:
        """One line for a listing (``gpudse workspace show``)."""
        from ..fmt import fmt_count

        res = self.result()
        return (f"a {self.goal} search of {fmt_count(len(self.trials), 'simulations')} "
                f"({fmt_count(res.failed, 'failed')}), " + (f"stopped: {self.stopped}" if self.stopped else "running"))

    def grows_from(self, earlier: SearchStudy) -> bool:
        """Whether this study is *earlier* gone on: the same settings (but for a larger budget or another
        batch: RESUMABLE) and *earlier*'s trials as its first ones. The workspace
        then stores it in place of *earlier* — one version per study, however many rounds it stores
        (:func:`gpudse_core.workspace.results.grows`); a search started afresh is a new version."""
        n = len(earlier.trials)
        fixed = lambda s: {k: v for k, v in s.items() if k not in RESUMABLE}  # noqa: E731
        return (len(self.trials) >= n and fixed(earlier.settings) == fixed(self.settings)
                and [t.to_dict() for t in self.trials[:n]] == [t.to_dict() for t in earlier.trials])

    # ---- stored form ---------------------------------------------------------------------------
    def to_stored(self) -> dict:
        doc: dict[str, Any] = {"settings": dict(self.settings), "stopped": self.stopped,
                               "trials": [t.to_dict() for t in self.trials]}
        if self.model_error:
            doc["model_error"] = [{"simulated": n, "error": e} for n, e in self.model_error]
        if self.times:
            doc["rounds"] = [r.to_dict() for r in self.times]
        return doc

    @classmethod
    def from_stored(cls, stored: Any) -> SearchStudy:
        """The study from its stored record; a damaged or forged one raises
        :class:`~.stored.StudyDamaged` naming the field (:func:`~.stored.check_study`)."""
        if isinstance(stored, cls):
            return stored
        from .stored import check_study

        doc = check_study(stored)
        settings = dict(doc["settings"])
        order = settings.get("params") or ()
        return cls(settings, tuple(Trial.from_dict(t, order) for t in doc["trials"]), str(doc.get("stopped", "")),
                   tuple((int(e["simulated"]), float(e["error"])) for e in doc.get("model_error", [])),
                   tuple(RoundTime.from_dict(r) for r in doc.get("rounds", [])))
