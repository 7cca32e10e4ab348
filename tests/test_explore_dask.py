"""The exploration scan on a real Dask cluster (a scheduler and two worker processes on loopback):
the merged per-worker pools give exactly the local answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from gpudse_core import load_preset  # noqa: E402
from gpudse_core.explore.best import find_best  # noqa: E402

from explore_models import StepModel, TableModel  # noqa: E402
from test_dask import cluster  # noqa: E402,F401 - the fixture

pytestmark = pytest.mark.slow


def model_for(space):
    rng = np.random.default_rng(4)
    terms = [((p.name,), rng.integers(0, 4, p.size).astype(float)) for p in space.parameters[:5]]
    terms.append((("blk", "simd"), rng.normal(0, 0.5, (5, 3))))
    return TableModel(space, 10.0, terms, "log", lo=10.5, hi=20.0)  # a clip: plateaus of exact ties


@pytest.mark.parametrize("method", ["exact", "stream", "predict"])
def test_dask_scan_equals_the_local_scan(cluster, method):  # noqa: F811 — the fixture imported above
    address, _ = cluster
    space = load_preset("stargazer")
    model = model_for(space) if method != "predict" else StepModel(space, 2)
    kw = dict(top=25, pareto="simd * blk + smp", where="mshr >= 2", method=method, block=1 << 12)
    local = find_best(model, space, **kw)
    remote = find_best(model, space, scheduler=address, **kw)
    assert remote.workers == 2 and remote.complete and remote.method == method
    pd.testing.assert_frame_equal(remote.best, local.best)
    pd.testing.assert_frame_equal(remote.pareto, local.pareto)
    if method != "exact":
        assert remote.feasible == local.feasible == 933_120 * 2 // 3


def test_stop_on_dask_keeps_what_was_done(cluster):  # noqa: F811 — the fixture imported above
    address, _ = cluster
    space = load_preset("stargazer")
    calls = []
    r = find_best(StepModel(space, 1), space, top=5, scheduler=address, block=1 << 12,
                  stop=lambda: len(calls) > 2 or calls.append(1))
    assert not r.complete and r.evaluated < 933_120 and r.feasible is None
    assert len(r.best) == (5 if r.evaluated else 0)  # the tasks that finished are in the answer
