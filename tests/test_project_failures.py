"""A measured table read as a simulator takes every status meaning success (``choices.OK_STATUS``) as a
configuration that ran, as an upload does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpudse_core.sim.lookup import LookupTable, TableLookupError


def test_lookup_takes_every_status_meaning_success_as_the_upload_does():
    """ok, success, succeeded, done and empty (any case, padded) ran; anything else failed."""
    df = pd.DataFrame({"a": [1, 2, 3, 4, 5, 6, 7], "time_ms": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, np.nan],
                       "status": ["ok", " Success", "SUCCEEDED", "done ", None, "RuntimeFailedConfig", "ok"]})
    t = LookupTable.from_frame(df, "time_ms", status_column="status")
    got = t.answer(np.arange(7).reshape(-1, 1))
    assert [v for v, _ in got] == [1.0, 2.0, 3.0, 4.0, 5.0, None, None]
    assert got[5][1] == "status = RuntimeFailedConfig" and "not a number" in got[6][1]
    with pytest.raises(TableLookupError, match="no row has status = 'ok' or another status meaning success"):
        LookupTable.from_frame(df.assign(status="CompileFailedConfig"), "time_ms", status_column="status")
