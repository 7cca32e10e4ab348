"""Reading a typed result back from its stored form, field by field.

An analysis result (best designs, the true error, a heatmap …) is stored in a workspace as plain
data — numbers, text, lists, dicts, tables and arrays — and rebuilt by its class's ``from_stored``.
What comes back may be damaged or forged (an old file, a hand-edited database), so every field is
checked with the helpers here; a problem is a :class:`StoredFormError` naming the result and the
field, never an ``AttributeError`` or ``KeyError`` later in a page or the report.

The helpers take a :class:`Fields` (the stored mapping and the result's name) and return the field's
value in its checked type, or the default when the field is absent (older stored forms left fields
out). No NumPy or pandas at import time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .errors import GpudseError


class StoredFormError(GpudseError):
    """A stored result cannot be read back: a field is missing, of the wrong type or out of range."""


_REQUIRED = object()


class Fields:
    """The stored mapping of result *what* (e.g. ``"best designs"``), read one checked field at a time."""

    def __init__(self, stored: Any, what: str):
        if not isinstance(stored, Mapping):
            raise StoredFormError(f"the stored {what} is a {type(stored).__name__}, not a record of fields; "
                                  f"compute it again")
        self.stored = stored
        self.what = what

    def raw(self, name: str, default: Any = None) -> Any:
        """The field as stored, unchecked (for a caller that checks a nested structure itself)."""
        return self.stored.get(name, default)

    def _get(self, name: str, default: Any) -> Any:
        if name in self.stored:
            return self.stored[name]
        if default is _REQUIRED:
            raise self.error(name, "is missing")
        return default

    def error(self, name: str, problem: str) -> StoredFormError:
        return StoredFormError(f"the stored {self.what} is damaged: field {name!r} {problem}; compute it again")

    def table(self, name: str, default: Any = _REQUIRED) -> Any:
        """A pandas DataFrame (or None when the default is None and the field is None or absent)."""
        import pandas as pd

        v = self._get(name, default)
        if v is None and default is None:
            return None
        if not isinstance(v, pd.DataFrame):
            raise self.error(name, f"is a {type(v).__name__}, not a table")
        return v

    def array(self, name: str, default: Any = _REQUIRED, ndim: int | None = None) -> Any:
        """A numeric NumPy array (of *ndim* dimensions when given), or None when allowed."""
        import numpy as np

        v = self._get(name, default)
        if v is None and default is None:
            return None
        if not isinstance(v, np.ndarray) or v.dtype.kind not in "biuf":
            raise self.error(name, f"is a {type(v).__name__}, not a numeric array")
        if ndim is not None and v.ndim != ndim:
            raise self.error(name, f"has {v.ndim} dimensions, not {ndim}")
        return v

    def integer(self, name: str, default: Any = _REQUIRED, minimum: int = 0) -> Any:
        v = self._get(name, default)
        if v is None and default is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise self.error(name, f"is {_shown(v)}, not a whole number ≥ {minimum}")
        return int(v)

    def number(self, name: str, default: Any = _REQUIRED) -> Any:
        v = self._get(name, default)
        if v is None and default is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(float(v)):
            raise self.error(name, f"is {_shown(v)}, not a number")
        return float(v)

    def text(self, name: str, default: Any = _REQUIRED) -> Any:
        v = self._get(name, default)
        if v is None and default is None:
            return None
        if not isinstance(v, str):
            raise self.error(name, f"is {_shown(v)}, not text")
        return v

    def flag(self, name: str, default: Any = _REQUIRED) -> bool:
        v = self._get(name, default)
        if not isinstance(v, bool):
            raise self.error(name, f"is {_shown(v)}, not true or false")
        return v

    def texts(self, name: str, default: Any = _REQUIRED) -> list[str]:
        v = self._get(name, default)
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
            raise self.error(name, f"is {_shown(v)}, not a list of text")
        return list(v)

    def mapping(self, name: str, default: Any = _REQUIRED) -> Any:
        v = self._get(name, default)
        if v is None and default is None:
            return None
        if not isinstance(v, Mapping) or not all(isinstance(k, str) for k in v):
            raise self.error(name, f"is {_shown(v)}, not a record of named fields")
        return dict(v)


def _shown(v: Any) -> str:
    """A stored value named in a message: its type and, for short scalars, the value."""
    if isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 40):
        return f"{type(v).__name__} {v!r}"
    return f"a {type(v).__name__}"
