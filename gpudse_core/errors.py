"""User-facing errors.

Every problem a user can cause (a malformed file, an impossible request) is raised as a
:class:`GpudseError` whose message says *where* (file, line, field, row) and *what to do*. The CLI
prints these without a traceback and the dashboard shows them with ``st.error``; anything else that
escapes is a bug in gpudse.
"""

from __future__ import annotations


class GpudseError(ValueError):
    """A problem with the user's input or request, with a message meant for the user."""


class SpaceError(GpudseError):
    """A design-space file or definition is invalid."""


class ExpressionError(GpudseError):
    """A constraint expression cannot be parsed, type-checked or evaluated."""


class SamplingError(GpudseError):
    """A sampling request cannot be satisfied (too many points, unsatisfiable constraints)."""


def where(source: str | None = None, line: int | None = None, field: str | None = None) -> str:
    """Format a location prefix such as ``space.yaml:12: parameters[3] (simd): ``."""
    parts = []
    if source:
        parts.append(f"{source}:{line}" if line else source)
    elif line:
        parts.append(f"line {line}")
    if field:
        parts.append(field)
    return ": ".join(parts) + ": " if parts else ""


def suggest(name: str, choices: list[str]) -> str | None:
    """The name the user probably meant: one that *name* begins (``cyc`` → ``cycles``) or that begins
    *name*, the closest such; else the closest spelling (difflib); None when nothing is close."""
    import difflib

    low = str(name).lower()
    if low:
        prefix = [c for c in choices if c.lower().startswith(low) or low.startswith(c.lower())]
        if prefix:
            return min(prefix, key=lambda c: abs(len(c) - len(low)))
    close = difflib.get_close_matches(str(name), list(choices), n=1)
    return close[0] if close else None


_CONTROL = None


def printable(text: str, limit: int | None = 4000) -> str:
    """*text* safe to print on a terminal: control characters other than newline and tab (e.g. the
    escape sequences a hostile file name or label could carry) shown as ``\\xNN``; cut to *limit*
    characters with a note of how many were left out."""
    global _CONTROL
    import re

    if _CONTROL is None:
        _CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}",
                        str(text))
    if limit is not None and len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    return text
