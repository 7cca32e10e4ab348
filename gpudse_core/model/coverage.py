"""Whether simulated values fell inside the intervals predicted for them: one count for every reader.

A design proposed by a model (a search's proposal, :mod:`gpudse_core.search.intervals`) carries the value
predicted for it and an interval at a level, recorded before it was simulated; once simulated, its value is
inside or not. :func:`coverage` counts them, :func:`coverage_text` says it, :func:`interval_fields` gives a
record's columns — for ``gpudse search`` (its history, ``--json``), the Search page and the report, which
read any record with ``status``, ``value``, ``predicted``, ``lower``, ``upper`` and ``level``.
"""

from __future__ import annotations

from typing import Any, Iterable

LEVEL = 0.95  # the level a record without its own is said at


def inside(value: float | None, lower: float | None, upper: float | None) -> bool | None:
    """Whether a simulated *value* fell inside [lower, upper] (None without a value or an interval)."""
    if value is None or lower is None or upper is None:
        return None
    return bool(lower <= value <= upper)


def interval_fields(t: Any) -> dict:
    """A trial's ``predicted``, ``lower``, ``upper``, ``level`` and ``inside`` (the simulated value in the
    interval; None without one): the columns of ``gpudse search``'s history, --json and the Search page."""
    return {"predicted": t.predicted, "lower": t.lower, "upper": t.upper, "level": t.level,  # with an objective:
            "inside": inside(t.value if t.status == "ok" else None, t.lower, t.upper)}  # the objective's


def coverage(trials: Iterable[Any]) -> tuple[int, int]:
    """(inside, checked): of the successful trials that carried an interval, how many fell inside it."""
    hits = [inside(t.value, t.lower, t.upper) for t in trials if t.status == "ok"]
    hits = [h for h in hits if h is not None]
    return sum(hits), len(hits)


def coverage_text(trials: Iterable[Any], level: float = LEVEL) -> str:
    """``41 of 47 simulated values (87 %) inside their 95 % intervals``, or "" when none was checked."""
    from ..fmt import fmt_count

    k, n = coverage(trials)
    if not n:
        return ""
    return (f"{k:,} of {fmt_count(n, 'simulated values')} ({100 * k / n:.0f} %) inside their "
            f"{100 * level:g} % intervals")
