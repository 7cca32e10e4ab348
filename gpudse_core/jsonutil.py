"""JSON values: encoding NumPy scalars and arrays (the one ``default=`` hook every writer uses), and the
one check that a value read from a document is a finite number (:func:`finite_number`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")



def finite_number(v: Any) -> bool:
    """A finite int or float, not a bool (``true`` is no number in a model file or a trace)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def plain_json(o: Any) -> Any:
    """*o* as plain JSON data: NumPy values converted, non-finite numbers as ``None``."""
    if isinstance(o, dict):
        return {str(k): plain_json(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [plain_json(v) for v in o]
    o = json_default(o) if not isinstance(o, (str, int, float, bool, type(None))) else o
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o
