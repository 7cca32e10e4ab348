"""Stopping long model work between its parts, not only between fits (Stop within a second).

A job's Stop is checked between units (one model fitted on one draw of a validation). A unit of a
forest (200 trees) or of histogram boosting (1,000 rounds) takes about a second on a 2-core machine,
so such fits are grown in parts, and between parts they call :func:`check`, which raises
:class:`Interrupted` when the work running in this thread was asked to stop. The job runner says how
to tell (:func:`watching`); outside a job :func:`check` does nothing. Growing in parts with
``warm_start`` gives the same model as one fit (scikit-learn draws the same seeds; tested).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_STOP: ContextVar[Callable[[], bool] | None] = ContextVar("gpudse_stop_check", default=None)


class Interrupted(Exception):
    """The work in this thread was asked to stop in the middle of a fit; the fit is abandoned."""


@contextlib.contextmanager
def watching(stopped: Callable[[], bool]) -> Iterator[None]:
    """Within the block, :func:`check` raises :class:`Interrupted` once ``stopped()`` is true."""
    token = _STOP.set(stopped)
    try:
        yield
    finally:
        _STOP.reset(token)


def check() -> None:
    stopped = _STOP.get()
    if stopped is not None and stopped():
        raise Interrupted("stopped")
