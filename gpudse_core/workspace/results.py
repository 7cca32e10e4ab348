"""The workspace's analyses that have a type: one registry, stage name → result class.

Pages, the command line and the report read an analysis such as ``scan`` as the class registered
here (:class:`~gpudse_core.explore.results.ScanResult`), never as a dict whose keys each reader
knows. The workspace applies the registry at both ends:

* writing (:meth:`Workspace.put`): an instance is stored in its plain stored form (``to_stored``);
  a plain record from an earlier caller is first read as the class, so a malformed one is refused
  with the field it lacks instead of being stored;
* growing: a class with ``grows_from(old)`` (a search study) says when a new value is the stored one
  grown (its next round); :meth:`Workspace.put` then rewrites that version in place, atomically, so a
  study is one version however many rounds it stores (:func:`grows`);
* reading (:meth:`Workspace.get`): the stored form — including the dict forms earlier versions of
  gpudse wrote, and the ``SpaceScan`` the core's scan stored — becomes the class. A damaged or
  forged value becomes :class:`Damaged` (the stage, its version and what is wrong), which every
  reader can show, never an ``AttributeError`` in a page.

A class here has ``from_stored(value)`` (raising :class:`~gpudse_core.stored.StoredFormError`) and
``to_stored()``. Analyses not listed (any name a caller chooses) are stored and read as the plain
data they are.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ..errors import GpudseError
from .stages import StageError, noun

# stage name -> "module:Class" (imported on first use: reading a workspace imports no analysis code)
RESULT_TYPES = {"scan": "gpudse_core.explore.results:ScanResult",
                "true_error": "gpudse_core.model.true_error:TrueError",
                "heatmap": "gpudse_core.raytrace.result:HeatmapResult",
                "validation": "gpudse_core.model.validation:ValidationResult",
                "comparison": "gpudse_core.report.comparison:Comparison",
                "app_models": "gpudse_core.model.per_application:AppModels",
                "search": "gpudse_core.search.result:SearchStudy",
                "check": "gpudse_core.explore.checks:SimulatedCheck"}
# analyses :meth:`Workspace.damaged` reads to know, so a damaged one is named before any page reads it
# (a study is small and a resume must not start from a forged one; a scan's tables are left until read)
READ_TO_NAME = ("search",)


@dataclass(frozen=True)
class Damaged:
    """A stored analysis that cannot be read as its type: which one, which version, and why."""

    stage: str
    version: int
    why: str

    def message(self) -> str:
        return f"The stored {noun(self.stage)} (version {self.version}) cannot be read: {self.why}"


def result_class(stage: str) -> type | None:
    """The class of the analysis *stage*, or None for an untyped one."""
    path = RESULT_TYPES.get(stage)
    if path is None:
        return None
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def typed(stage: str, value: Any) -> Any:
    """*value* as the class of *stage* (unchanged for an untyped stage or None); a malformed value
    raises :class:`StageError` naming the field (nothing is stored)."""
    cls = result_class(stage)
    if cls is None or value is None or isinstance(value, cls):
        return value
    try:
        return cls.from_stored(value)
    except GpudseError as e:
        raise StageError(f"{noun(stage)}: not a {cls.__name__}: {e}") from None


def stored_form(stage: str, value: Any) -> Any:
    """What the workspace encodes for *value* (already :func:`typed`)."""
    return value.to_stored() if result_class(stage) is not None and value is not None else value


def read(stage: str, version: int, stored: Any) -> Any:
    """The stored value of *stage* as its class, or :class:`Damaged` when it cannot be read as one."""
    cls = result_class(stage)
    if cls is None or stored is None:
        return stored
    try:
        return cls.from_stored(stored)
    except GpudseError as e:
        return Damaged(stage, version, str(e))
    except (TypeError, ValueError, KeyError, AttributeError) as e:  # a forged value the checks did not foresee
        return Damaged(stage, version, f"{type(e).__name__}: {e}")


def growable(stage: str) -> bool:
    """Whether a stored value of *stage* can grow in place (its class has ``grows_from``): only then does
    :meth:`Workspace.put` read the current value to compare (a results table or a scan is never read)."""
    cls = result_class(stage)
    return cls is not None and hasattr(cls, "grows_from")


def grows(stage: str, old: Any, new: Any) -> bool:
    """Whether *new* is the stored *old* of *stage* grown — the same record with more in it (a running
    search's next round: ``SearchStudy.grows_from``) — and so replaces it in place instead of becoming
    a new version. False for a stage whose class does not say, and for a damaged or missing *old*."""
    cls = result_class(stage)
    if not growable(stage) or not isinstance(old, cls) or not isinstance(new, cls):
        return False
    return bool(new.grows_from(old))
