"""The built-in ray caster: real per-pixel work through a BVH, as a Zatel heatmap."""

from __future__ import annotations

import numpy as np
import pytest

from gpudse_core.errors import GpudseError
from gpudse_core.raytrace.caster import build_bvh, procedural_scene, render, trace
from gpudse_core.raytrace.heatmap import colourise, rgb_coldness
from gpudse_core.raytrace.zatel import plan


def brute_force(scene, o, d):
    from gpudse_core.raytrace.caster import _prim_hit

    with np.errstate(divide="ignore"):
        inv = 1.0 / np.where(d == 0, 1e-12, d)
    best = np.full(len(o), np.inf)
    prim = np.full(len(o), -1)
    for p in range(scene.kind.size):
        t, _ = _prim_hit(scene, p, o, d, inv)
        closer = t < best
        best[closer], prim[closer] = t[closer], p
    return best, prim


def test_bvh_traversal_equals_brute_force_and_saves_work():
    scene = procedural_scene(30, 8, seed=5)
    bvh = build_bvh(scene)
    rng = np.random.default_rng(1)
    o = np.tile([0.0, 1.5, -3.0], (4000, 1))
    d = rng.normal(size=(4000, 3)) * [0.5, 0.3, 0.2] + [0, 0, 1]
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    t, prim, _, work = trace(scene, bvh, o, d)
    tb, pb = brute_force(scene, o, d)
    np.testing.assert_allclose(t, tb, rtol=1e-9)
    assert np.array_equal(prim, pb)
    assert work.mean() < scene.kind.size  # the BVH tests fewer than all 38 primitives per ray on average


def test_render_produces_a_structured_heatmap():
    r = render(128, 96, seed=2)
    assert r.image.shape == (96, 128, 3) and r.cost.shape == (96, 128)
    assert r.cost.min() >= 1  # every ray tests at least the root
    sky = r.cost[:10].mean()  # the top rows see sky: cheap
    scene_rows = r.cost[50:80].mean()  # objects, shadows and reflections: expensive
    assert scene_rows > 2 * sky
    again = render(128, 96, seed=2)
    assert np.array_equal(r.cost, again.cost)
    big = render(256, 192, seed=2)  # at 128x96 the hot regions are only a few blocks
    zp = plan(big.heatmap(), {"sms": 8, "mem": 4}, block=(32, 2))
    assert zp.downscale.k == 4 and zp.check["relative_error"] < 0.05


def test_render_in_bands_reports_progress_and_stops():
    """The Ray-tracing page's job: the frame traced band by band is the frame traced at once, the
    callback sees every row once in order, and returning False stops with our error."""
    from gpudse_core.raytrace import caster

    whole = render(96, 80, seed=4)
    seen = []
    banded = render(96, 80, seed=4, progress=lambda done, total: seen.append((done, total)))
    assert np.array_equal(whole.cost, banded.cost) and np.array_equal(whole.image, banded.image)
    band = caster.BAND_RAYS // 96
    assert seen == [(min(80, b + band), 80) for b in range(0, 80, band)]
    old = caster.BAND_RAYS
    caster.BAND_RAYS = 96 * 8  # ten bands of eight rows
    try:
        calls = []
        with pytest.raises(caster.RenderStopped, match="after 16 of 80 rows"):
            render(96, 80, seed=4, progress=lambda done, total: calls.append(done) or done < 16)
        assert calls == [8, 16]
        small = render(96, 80, seed=4, progress=lambda d, t: None)
        assert np.array_equal(small.cost, whole.cost)
    finally:
        caster.BAND_RAYS = old


def test_colourise_round_trips_through_the_hue():
    cost = np.linspace(0, 1, 271)
    back = 1 - rgb_coldness(colourise(cost))
    np.testing.assert_allclose(back, cost, atol=0.01)


def test_bad_render_sizes():
    with pytest.raises(GpudseError, match="between 8 and 2048"):
        render(4, 4)
    with pytest.raises(GpudseError, match="at least one"):
        procedural_scene(0, 0)
