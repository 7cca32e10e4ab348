"""JSON encoding of NumPy scalars and arrays (the one ``default=`` hook every writer uses)."""

from __future__ import annotations

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
