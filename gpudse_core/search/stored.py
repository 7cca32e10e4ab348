"""A stored search study read back: every field checked before a page, a resume or a report uses it.

A workspace keeps a search as the analysis ``search`` (:func:`.runner.study_doc`: its settings, why it
stopped, every trial, each round's time, the model's estimated error after each round). What is read back may be damaged
(a torn write) or well-formed but wrong (a hand-edited or forged workspace file shared by link): a
trial without a round, a value that is text, a design of a parameter the study never had. Such a study
must be shown as damaged — with the way to drop it, like every other stage whose record cannot be read
— rather than crash the Search page for its owner and its visitors, or a resume halfway through.

:func:`check_study` is the one validation of a stored study: :meth:`.result.SearchStudy.from_stored` runs
it, so the workspace (:mod:`gpudse_core.workspace.results`) refuses a malformed study when it is stored and
reads a damaged or forged one as ``Damaged``, named (:meth:`Workspace.damaged`) and offered to be dropped.
:func:`check_designs` checks, before a resume, that every stored design is a point of the space being searched.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from .. import limits
from .study import ACQUISITIONS, GOALS, INITIAL_METHODS, SEED_MAX, SURROGATES, SearchError, Trial
from .timing import RoundTime

STATUSES = ("ok", "failed")
_ROUND_FIELDS = {f.name for f in fields(RoundTime)}
_TRIAL_FIELDS = {f.name for f in fields(Trial)}
_REQUIRED = ("number", "round", "model_version", "design", "acquisition", "value", "status")


class StudyDamaged(SearchError):
    """A stored study that is not what gpudse writes (a field missing, of the wrong type or out of range)."""


def _fail(where: str, what: str) -> StudyDamaged:
    return StudyDamaged(f"the stored search is damaged: {where} {what}; drop it (the Search page offers to) and "
                        f"run the search again")


def _whole(v: Any, least: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= least


def _number(v: Any, optional: bool = True) -> bool:
    if v is None:
        return optional
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _scalar(v: Any) -> bool:
    return isinstance(v, str) or _number(v, optional=False) or isinstance(v, bool)


def check_settings_doc(settings: Any) -> None:
    """The stored settings: the fields a page, a resume and the report read, each of its type."""
    if not isinstance(settings, dict):
        raise _fail("its settings", f"are {type(settings).__name__}, not a mapping")
    if settings.get("goal") not in GOALS:
        raise _fail("its goal", f"{str(settings.get('goal'))[:40]!r} is not one of {', '.join(GOALS)}")
    for key in ("source", "response", "cost", "objective", "cost_column"):
        if key in settings and not isinstance(settings[key], str):
            raise _fail(f"setting {key!r}", "is not text")
    params = settings.get("params", [])
    if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
        raise _fail("setting 'params'", "is not a list of parameter names")
    for key, least in (("budget", 1), ("batch", 1), ("initial", 1), ("seed", 0)):
        v = settings.get(key)
        if v is not None and not _whole(v, least):
            raise _fail(f"setting {key!r}", f"{str(v)[:40]!r} is not a whole number of at least {least}")
    if _whole(settings.get("seed")) and settings["seed"] > SEED_MAX:
        raise _fail("setting 'seed'", f"{settings['seed']} is above {SEED_MAX:,}")
    for key, allowed in (("acquisition", ACQUISITIONS), ("initial_method", INITIAL_METHODS),
                         ("surrogate", SURROGATES)):
        v = settings.get(key)
        if v not in (None, "") and v not in allowed:
            raise _fail(f"setting {key!r}", f"{str(v)[:40]!r} is not one of {', '.join(allowed)}")


def check_trial(t: Any, i: int, params: list[str]) -> None:
    """Trial *i* as :class:`~.study.Trial` stores it."""
    where = f"trial {i + 1}"
    if not isinstance(t, dict):
        raise _fail(where, f"is {type(t).__name__}, not a mapping")
    missing = [k for k in _REQUIRED if k not in t]
    if missing:
        raise _fail(where, f"has no {', '.join(missing)}")
    unknown = sorted(str(k) for k in t if k not in _TRIAL_FIELDS)
    if unknown:
        raise _fail(where, f"has fields gpudse does not write ({', '.join(unknown)[:80]})")
    if t["number"] != i:
        raise _fail(where, f"is numbered {str(t['number'])[:20]!r}")
    for key in ("round", "model_version"):
        if not _whole(t[key]):
            raise _fail(f"{where}'s {key}", f"{str(t[key])[:40]!r} is not a whole number ≥ 0")
    if t["status"] not in STATUSES:
        raise _fail(f"{where}'s status", f"{str(t['status'])[:40]!r} is not ok or failed")
    for key in ("acquisition", "value", "cost", "measured", "predicted", "lower", "upper", "level"):
        if not _number(t.get(key)):
            raise _fail(f"{where}'s {key}", f"{str(t.get(key))[:40]!r} is not a finite number")
    if t.get("level") is not None and not 0 < t["level"] < 1:
        raise _fail(f"{where}'s level", f"{t['level']!r} is not between 0 and 1")
    if (t.get("lower") is None) != (t.get("upper") is None):
        raise _fail(f"{where}'s interval", "has one end without the other")
    if (t["status"] == "ok") != (t["value"] is not None):
        raise _fail(where, "has a value and a status that disagree")
    if not _number(t.get("seconds", 0.0), optional=False) or t.get("seconds", 0.0) < 0:
        raise _fail(f"{where}'s seconds", "is not a number ≥ 0")
    for key in ("error", "surrogate"):
        if not isinstance(t.get(key, ""), str):
            raise _fail(f"{where}'s {key}", "is not text")
    design = t["design"]
    if not isinstance(design, dict) or not design:
        raise _fail(f"{where}'s design", "is not a mapping of parameters to values")
    for k, v in design.items():
        if not isinstance(k, str) or (params and k not in params):
            raise _fail(f"{where}'s design", f"names {str(k)[:40]!r}, which is not a parameter of the study")
        if not _scalar(v):
            raise _fail(f"{where}'s design", f"gives {k} the value {str(v)[:40]!r}, not a number or text")


def check_study(doc: Any) -> Any:
    """*doc* when it is a study as gpudse stores it; else :class:`StudyDamaged` naming the field."""
    if not isinstance(doc, dict):
        raise _fail("it", f"is {type(doc).__name__}, not a study")
    check_settings_doc(doc.get("settings"))
    if "stopped" in doc and not isinstance(doc["stopped"], str):
        raise _fail("its reason to stop", "is not text")
    trials = doc.get("trials")
    if not isinstance(trials, list):
        raise _fail("its trials", "are not a list")
    cap = limits.current().search_budget
    if len(trials) > cap:
        raise _fail("it", f"holds {len(trials):,} trials, more than a search may spend ({cap:,}: search_budget)")
    params = doc["settings"].get("params") or []
    for i, t in enumerate(trials):
        check_trial(t, i, params)
    check_rounds(doc.get("rounds", []), cap)
    errors = doc.get("model_error", [])
    if not isinstance(errors, list) or not all(isinstance(e, dict) and _whole(e.get("simulated"))
                                               and _number(e.get("error"), optional=False) for e in errors):
        raise _fail("its model error", "is not a list of {simulated, error} numbers")
    return doc


def check_rounds(rounds: Any, cap: int) -> None:
    """Each round's time as :class:`~.timing.RoundTime` stores it: whole round and simulations, seconds ≥ 0;
    no more records than a search may have rounds (*cap*, one simulation a round)."""
    if not isinstance(rounds, list):
        raise _fail("its rounds' times", "are not a list")
    if len(rounds) > cap:
        raise _fail("it", f"holds {len(rounds):,} round records, more than a search may have ({cap:,}: search_budget)")
    for i, r in enumerate(rounds):
        where = f"round record {i + 1}"
        if not isinstance(r, dict) or set(r) != _ROUND_FIELDS:
            raise _fail(where, f"is not a mapping of {', '.join(sorted(_ROUND_FIELDS))}")
        if not (_whole(r["round"]) and _whole(r["simulations"], 1)):
            raise _fail(where, "has a round or a count of simulations that is not a whole number")
        for key in ("propose_s", "fit_s", "simulate_s", "total_s"):
            if not _number(r[key], optional=False) or r[key] < 0:
                raise _fail(f"{where}'s {key}", f"{str(r[key])[:40]!r} is not a number of seconds ≥ 0")


def check_designs(trials: list[Trial], space: Any) -> None:
    """Every stored design a point of *space* (a resume maps each to the space's digits)."""
    from ..errors import GpudseError

    for t in trials:
        try:
            space.digits_of_point(t.design)
        except (GpudseError, TypeError, ValueError) as e:
            raise _fail(f"trial {t.number + 1}'s design", f"is not a point of space {space.name}: {e}") from None
