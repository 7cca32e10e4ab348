"""The weighted K-means of Zatel's colour quantisation against scikit-learn's KMeans.

From the same initial centres the two must give the same partition and inertia (Lloyd's algorithm is
deterministic); from their own seedings, ours must be as good (inertia within 0.1 %, measured 0.998–
1.0003 of scikit-learn's over three scenes × five k × two seeds); and clustering distinct colours
weighted by their counts must be K-means of the pixels themselves.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudse_core import limits
from gpudse_core.raytrace.heatmap import from_rgb, unpack
from gpudse_core.raytrace.kmeans import assign, kmeans, kmeans_plusplus, lloyd
from gpudse_core.raytrace.zatel import ZatelError, quantize

SCENES = ["bunny_ambient-occlusion", "ship_shadow", "wknd_path-tracer"]


def sk_fit(x, w, k, **kw):
    """scikit-learn's KMeans on one thread (its OpenMP threads crawl on a shared 2-core machine)."""
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")  # "explicit initial centres with n_init > 1" and similar notices
        return KMeans(k, **kw).fit(x, sample_weight=w)


def sk_lloyd(x, w, init):
    return sk_fit(x, w, len(init), init=init, n_init=1, tol=0, max_iter=300, algorithm="lloyd")


@pytest.fixture(scope="module")
def palettes():
    from conftest import SHARED

    from gpudse_core.raytrace.heatmap import read_heatmap

    if not SHARED.is_dir():
        pytest.skip("../shared (real Zatel heatmaps) is not present beside this checkout")
    out = {}
    for n in SCENES:
        hm = read_heatmap(SHARED / f"data/zatel/heatmaps/{n}.ppm")
        packed, counts = hm.colours()
        out[n] = (hm, unpack(packed).astype(float), counts.astype(float))
    return out


@pytest.mark.parametrize("scene", SCENES)
@pytest.mark.parametrize("k", [2, 5, 8])
def test_same_start_same_partition_as_scikit_learn(palettes, scene, k):
    _, x, w = palettes[scene]
    init = kmeans_plusplus(x, w, k, np.random.default_rng(k))
    ours, ref = lloyd(x, w, init), sk_lloyd(x, w, init)
    assert np.array_equal(ours.labels, ref.labels_)
    np.testing.assert_allclose(ours.centres, ref.cluster_centers_, rtol=1e-9, atol=1e-9)
    assert ours.inertia == pytest.approx(ref.inertia_, rel=1e-9)


@pytest.mark.parametrize("scene", SCENES)
@pytest.mark.parametrize("k", [3, 5, 12])
def test_inertia_as_good_as_scikit_learn(palettes, scene, k):
    _, x, w = palettes[scene]
    ours = kmeans(x, w, k, seed=0)
    ref = sk_fit(x, w, k, n_init=10, random_state=0)
    assert ours.inertia <= ref.inertia_ * 1.001
    assert len(np.unique(ours.labels)) == k


def test_empty_clusters_are_relocated_as_scikit_learn_does():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (300, 3)).astype(float)
    w = rng.integers(1, 50, 300).astype(float)
    for init in (np.vstack([x[0], x[0], x[1], x[2]]),  # two identical centres: one cluster starts empty
                 np.array([[0, 0, 0], [1000, 1000, 1000], [2000, 2000, 2000], [128, 128, 128.0]])):
        ours, ref = lloyd(x, w, init), sk_lloyd(x, w, init)
        assert np.array_equal(ours.labels, ref.labels_)
        assert np.bincount(ours.labels, minlength=4).min() > 0
        assert ours.inertia == pytest.approx(ref.inertia_, rel=1e-9)


@given(st.integers(2, 40), st.integers(1, 6), st.integers(0, 2**32 - 1))
@settings(max_examples=40)
def test_random_weighted_problems_match_scikit_learn(n, k, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, 3)).astype(float)
    w = rng.integers(1, 1000, n).astype(float)
    k = min(k, len(np.unique(x, axis=0)))
    init = kmeans_plusplus(x, w, k, rng)
    ours, ref = lloyd(x, w, init), sk_lloyd(x, w, init)
    assert ours.inertia == pytest.approx(ref.inertia_, rel=1e-9, abs=1e-6)
    assert np.array_equal(ours.labels, ref.labels_)


def test_weighted_colours_are_kmeans_of_the_pixels(palettes):
    hm, _, _ = palettes["wknd_path-tracer"]
    crop = from_rgb(hm.rgb[192:320, 192:320])  # 16,384 pixels: small enough for per-pixel scikit-learn
    packed, counts = crop.colours()
    x, w = unpack(packed).astype(float), counts.astype(float)
    ours = kmeans(x, w, 5, seed=3)
    pixels = crop.rgb.reshape(-1, 3).astype(float)
    ref = sk_lloyd(pixels, None, ours.centres)  # one pixel, one point; started at our answer: already converged
    np.testing.assert_allclose(ref.cluster_centers_, ours.centres, rtol=1e-9, atol=1e-9)
    assert ref.inertia_ == pytest.approx(ours.inertia, rel=1e-9)
    per_pixel = assign(pixels, ours.centres)[0]
    colour_of_pixel = np.searchsorted(packed, (crop.rgb[..., 0].astype(np.uint32) << 16 | crop.rgb[..., 1].astype(
        np.uint32) << 8 | crop.rgb[..., 2]).ravel())
    assert np.array_equal(per_pixel, ours.labels[colour_of_pixel])


def test_blobs_are_recovered():
    rng = np.random.default_rng(4)
    centres = np.array([[20, 20, 200], [200, 30, 30], [30, 200, 40], [220, 220, 20.0]])
    truth = rng.integers(0, 4, 2000)
    x = centres[truth] + rng.normal(0, 6, (2000, 3))
    res = kmeans(x, np.ones(2000), 4, seed=1)
    # the same partition up to renaming
    assert len({(int(a), int(b)) for a, b in zip(truth, res.labels)}) == 4


def test_quantize_reports_inertia_and_keeps_seeded_labels(palettes):
    hm, x, w = palettes["ship_shadow"]
    q = quantize(hm, 5, seed=2)
    assert q.inertia == pytest.approx(kmeans(x, w, 5, seed=2).inertia)
    assert q.labels.dtype == np.uint8 and q.labels.max() == 4


def test_many_colours_are_merged_on_a_grid_first():
    rng = np.random.default_rng(0)
    y, xx = np.mgrid[0:96, 0:128]
    rgb = np.stack([xx * 2, y * 2, 255 - xx], axis=-1) + rng.integers(0, 3, (96, 128, 3))
    hm = from_rgb(np.clip(rgb, 0, 255).astype(np.uint8))
    exact = quantize(hm, 4, seed=0)
    with limits.override(quantize_colours=500):
        merged = quantize(hm, 4, seed=0)
    assert any("32-level grid" in n for n in merged.notes) and not exact.notes
    assert merged.inertia <= exact.inertia * 1.05  # clustering merged colours costs little
    assert merged.labels.shape == hm.shape and set(np.unique(merged.labels)) == {0, 1, 2, 3}


def test_cluster_counts_are_bounded():
    rgb = np.zeros((4, 64, 3), dtype=np.uint8)
    rgb[:, 32:] = (255, 0, 0)
    hm = from_rgb(rgb)
    with pytest.raises(limits.LimitError, match="colour_clusters"):
        quantize(hm, 10**100)
    with pytest.raises(ZatelError, match="at least 1"):
        quantize(hm, 0)
    q = quantize(hm, 7)  # more clusters than colours: each colour its own cluster, said so
    assert q.coldness.size == 2 and "only 2 distinct colours" in q.notes[0]
