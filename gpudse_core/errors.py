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
