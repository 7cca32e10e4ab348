"""Hostile and clumsy heatmap inputs and Zatel requests: every class is refused with our
error naming the file and what to do, sizes are checked before decoding, and the CLI exits 2 without
a traceback. The inputs come from the generators in ``heatmap_inputs.py``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from bounded import bounded
from conftest import ROOT
from heatmap_inputs import gradient_rgb, npy_declaring, npy_of, own_peak_mb, png_bomb, png_header_only, png_of, ppm

from gpudse_core import limits
from gpudse_core.errors import GpudseError
from gpudse_core.raytrace.heatmap import HeatmapError, from_rgb, from_times, read_heatmap
from gpudse_core.raytrace.zatel import ZatelError, counts_from_config, downscale_factor, plan
from gpudse_core.sim.gpgpusim import GpgpuSimConfig

ONE = np.array([[[0, 0, 255], [255, 0, 0]]], dtype=np.uint8)  # 2x1: blue, red


# ---- amplification: the pixel count is checked from the header, before decoding ------------------------------
@pytest.mark.slow
@bounded(mem_mb=2048, max_rss_mb=1024, timeout=120)
def test_png_bomb_is_refused_before_decoding():
    data = png_bomb(7000, 7000)  # 147 MB of pixels in ~150 KB
    assert len(data) < 400_000
    with pytest.raises(limits.LimitError, match=r"bomb.png: a 7000x7000 image: 49,000,000 is more than "
                                                r".*\(image_pixels\)"):
        read_heatmap("bomb.png", data)
    assert own_peak_mb() < 250  # nothing was decoded (decoding it peaks at ~690 MB)


def test_png_over_pillows_bomb_limit_is_our_error():
    from PIL import Image

    side = int((2 * Image.MAX_IMAGE_PIXELS) ** 0.5) + 10
    with limits.override(image_pixels=10**12), pytest.raises(HeatmapError, match="decompression-bomb limit"):
        read_heatmap("huge.png", png_header_only(side, side))


@pytest.mark.parametrize("name, data", [
    ("big.ppm", b"P6\n8000 8000\n255\n"),  # header only: refused before any raster is read
    ("big.ppm", b"P3\n# a comment\n100000 401\n255\n"),
    ("big.png", png_header_only(100_000, 401)),
    ("big.npy", npy_declaring((401, 100_000))),
    ("big.npy", npy_declaring((10**18, 10**18))),
])
def test_declared_size_over_the_limit(name, data):
    with pytest.raises(limits.LimitError, match="image_pixels"):
        read_heatmap(name, data)


def test_file_size_is_checked_before_reading(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b"1,2\n" * 1000)
    with limits.override(image_bytes=1000), pytest.raises(limits.LimitError, match="4,000-byte heatmap file"):
        read_heatmap(p)


def test_csv_rows_times_columns_counted_before_parsing():
    with limits.override(image_pixels=100), pytest.raises(limits.LimitError, match="a 11x10 image"):
        read_heatmap("t.csv", b"1,2,3,4,5,6,7,8,9,10,11\n" * 10)
    with limits.override(image_pixels=100), pytest.raises(limits.LimitError, match="a 1x101 image"):
        read_heatmap("t.csv", b"1\n" * 101)


@pytest.mark.slow
@bounded(mem_mb=3072, max_rss_mb=1024, timeout=240)
def test_a_heatmap_at_the_pixel_limit_stays_in_bounded_memory():
    # a tiny file that decodes to 36 M pixels of two colours passes the limit: the whole plan must still fit
    import io

    from PIL import Image

    img = Image.new("RGB", (6000, 6000), (0, 0, 255))
    img.paste((255, 0, 0), (1500, 1500, 4500, 4500))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    del img
    hm = read_heatmap("two.png", buf.getvalue())
    zp = plan(hm, {"sms": 30, "mem": 12})
    assert zp.downscale.k == 6 and len(zp.selection.groups) == 6
    assert zp.check["relative_error"] < 0.05
    assert own_peak_mb() < 1024


# ---- PPM -----------------------------------------------------------------------------------------------------------
def test_5000_digit_width_is_our_error():
    with pytest.raises(limits.LimitError, match="width has more than 400 digits"):
        read_heatmap("w.ppm", b"P3\n" + b"9" * 5000 + b" 1\n255\n0 0 0\n")


def test_negative_p3_sample_is_refused_with_its_position():
    data = b"P3\n2 2\n255\n0 0 255  0 0 255\n255 0 0  0 -5 0\n"
    with pytest.raises(HeatmapError, match=r"w.ppm: line 5: sample 11 \(pixel x=1, y=1, green\) is '-5', not a number"):
        read_heatmap("w.ppm", data)


@pytest.mark.parametrize("data, pattern", [
    (b"P3\n1 1\n0\n0 0 0\n", "maxval 0 is outside 1..65535"),
    (b"P3\n1 1\n65536\n0 0 0\n", "maxval 65536 is outside"),
    (b"P3\n1 1\n99999999999\n0 0 0\n", "maxval 99999999999 is outside"),
    (b"P6\n1 1\n-1\n\x00\x00\x00", "maxval is b'-1', not a whole number"),
    (b"P3\n2 1\n100\n0 0 100 101 0 0\n", r"sample 4 \(pixel x=1, y=0, red\) is 101, which exceeds the declared maxval"),
    (b"P3\n1 1\n255\n0 0 99999999999999999999999\n", "exceeds the declared maxval 255"),
    (b"P6\n1 2\n1000\n" + np.array([0, 0, 1000, 0, 1001, 0], ">u2").tobytes(),
     r"sample 5 \(pixel x=0, y=1, green\) is 1001"),
    (b"P3\n2 2\n255\n1 2 3\n", "truncated P3 data: 3 of the 12 samples"),
    (b"P6\n2 2\n255\n\x00\x00", "truncated P6 data: 2 of the 12 bytes"),
    (b"P6\n2 2\n65535\n" + b"\x00" * 12, "truncated P6 data: 12 of the 24 bytes"),
    (b"P3\n2 2\n", "header is truncated"),
    (b"P5\n2 2\n255\n" + b"\x00" * 4, "not a PPM image.*starts with b'P5'"),
    (b"P3x 1 1 255 0 0 0", "not a PPM image"),
    (b"\x89PNG\r\n\x1a\n", "not a PPM image"),
    (b"P6\n1 1\n255", "one whitespace character after maxval"),
    (b"P3\n1 1\n255\n1.5 0 0\n", "'1.5', not a number"),
    (b"P3\n1 1\n255\n0 0 0x10\n", "'0x10', not a number"),
    (b"P3\n1 1\n255\n" + "\u0663".encode() + b" 0 0\n", "not a number"),
    (b"P3\n" + b"# " + b"c" * (1 << 20) + b"\n1 1\n255\n0 0 0\n", "longer than 1 MiB"),
])
def test_bad_ppm_files(data, pattern):
    with pytest.raises(HeatmapError, match=pattern):
        read_heatmap("x.ppm", data)


def test_ppm_comments_everywhere_and_extra_samples():
    data = b"P3 # magic\n# size\n2 # w\n1 # h\n255 # maxval\n0 0 255 # blue\n# red next\n255 0 0\n7 7 7\n"
    hm = read_heatmap("c.ppm", data)
    assert np.array_equal(hm.rgb, ONE)  # samples after the image's last are ignored (netpbm: another image)


def test_p3_split_across_read_pieces(monkeypatch):
    from gpudse_core.raytrace import readers

    monkeypatch.setattr(readers, "CHUNK", 7)  # every sample and comment straddles pieces somewhere
    rgb = gradient_rgb(9, 13)
    data = ppm(b"P3", 13, 9, 255, rgb).replace(b"\n", b" # note\n", 3)
    assert np.array_equal(read_heatmap("s.ppm", data).rgb, rgb)
    bad = data.rstrip().rsplit(b" ", 3)[0] + b" -5 0 0\n"
    with pytest.raises(HeatmapError, match=r"pixel x=12, y=8, red\) is '-5'"):
        read_heatmap("s.ppm", bad)


def test_ppm_from_a_path_is_read_in_pieces(tmp_path, monkeypatch):
    from gpudse_core.raytrace import readers

    monkeypatch.setattr(readers, "CHUNK", 1000)
    rgb = gradient_rgb(40, 64)
    for magic, maxval in ((b"P3", 255), (b"P3", 1023), (b"P6", 255), (b"P6", 65535)):
        p = tmp_path / "a.ppm"
        samples = np.round(rgb.astype(float) * maxval / 255).astype(int)
        p.write_bytes(ppm(magic, 64, 40, maxval, samples))
        assert np.array_equal(read_heatmap(p).rgb, rgb)


# ---- PNG -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("data, pattern", [
    (b"GIF89a" + b"\x00" * 40, "no PNG signature"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 4 + b"tEXt" + b"\x00" * 20, "first chunk is not the IHDR"),
    (png_header_only(0, 5), "the image is empty"),
    (png_header_only(4, 4), "not a readable PNG"),  # no image data
    (png_of(gradient_rgb(8, 8))[:60], "not a readable PNG"),  # truncated
])
def test_bad_png_files(data, pattern):
    with pytest.raises(HeatmapError, match=pattern):
        read_heatmap("x.png", data)


def test_png_with_a_bad_crc_or_a_jpeg_inside():
    good = bytearray(png_of(gradient_rgb(8, 8)))
    good[29] ^= 0xFF  # inside the IHDR chunk: its CRC no longer matches
    with pytest.raises(HeatmapError, match="not a readable PNG"):
        read_heatmap("x.png", bytes(good))
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(gradient_rgb(8, 8)).save(buf, format="JPEG")
    with pytest.raises(HeatmapError, match="no PNG signature"):
        read_heatmap("x.png", buf.getvalue())  # only the PNG decoder is enabled


@pytest.mark.parametrize("mode", ["RGBA", "P", "L", "I;16"])
def test_png_modes_are_converted_to_rgb(mode):
    import io

    from PIL import Image

    img = Image.fromarray(gradient_rgb(8, 16)).convert(mode if mode != "I;16" else "L")
    if mode == "I;16":
        img = Image.fromarray(np.asarray(img).astype(np.uint16) * 257)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    hm = read_heatmap("m.png", buf.getvalue())
    assert hm.rgb.shape == (8, 16, 3) and hm.rgb.dtype == np.uint8


# ---- NPY and CSV ------------------------------------------------------------------------------------------------
def test_npy_object_arrays_and_pickles_are_refused():
    with pytest.raises(HeatmapError, match="Python objects, which would need pickle"):
        read_heatmap("o.npy", npy_of(np.array([[1, None]], dtype=object)))
    with pytest.raises(HeatmapError, match="not a NumPy array"):
        read_heatmap("p.npy", b"\x80\x04\x95pickle")


@pytest.mark.parametrize("arr, pattern", [
    (np.array([[1.0, np.nan], [2.0, 3.0]]), r"pixel x=1, y=0 \(row 1, column 2\) is nan"),
    (np.array([[1.0, 2.0], [np.inf, 3.0]]), r"pixel x=0, y=1 .* is inf"),
    (np.array([[1.0, 2.0], [3.0, -4.0]]), "is -4.0: per-pixel times must be finite and non-negative"),
    (np.array([[1 + 2j, 3]]), "dtype complex128 is not one number per pixel"),
    (np.zeros((2, 2), dtype=[("a", "f4"), ("b", "f4")]), "not one number per pixel"),
    (np.array([["a", "b"]]), "not one number per pixel"),
    (np.zeros((2, 3, 3)), "must be 2-D"),
    (np.zeros((0, 3)), "the image is empty"),
    (np.zeros((3, 3)), "every pixel has time 0"),
])
def test_bad_npy_arrays(arr, pattern):
    with pytest.raises(HeatmapError, match=pattern):
        read_heatmap("t.npy", npy_of(arr))


def test_npy_truncated_or_with_a_hostile_header():
    with pytest.raises(HeatmapError, match="truncated NPY data: 8 of the 32 bytes"):
        read_heatmap("t.npy", npy_declaring((2, 2), payload=b"\x00" * 8))
    with pytest.raises(HeatmapError, match="not a NumPy array"):
        read_heatmap("t.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': __import__('os')}")
    with pytest.raises(HeatmapError, match="not a NumPy array"):
        read_heatmap("t.npy", b"\x93NUMPY\x01\x00\xff\xff" + b"{" * 65535)


def test_npy_fortran_order_and_integer_times():
    t = np.asfortranarray(np.arange(12, dtype=np.uint16).reshape(3, 4))
    hm = read_heatmap("t.npy", npy_of(t))
    np.testing.assert_allclose(hm.cost, t / 11.0, rtol=1e-6)


@pytest.mark.parametrize("data, pattern", [
    (b"1,2,3\n4,5\n", "row 2 has 2 cells but row 1 has 3"),
    (b"1,2\n3,4,5\n", "row 2 has 3 cells but row 1 has 2"),
    (b"1,2\n\n3,4\n", "row 2 is empty"),
    (b"a,b\n1,2\n", "row 1, column 1: 'a' is not a number"),
    (b"1,2\n3,\n", "row 2, column 2: '' is not a number"),
    (b"1,2\n3,nan\n", r"pixel x=1, y=1 \(row 2, column 2\) is nan"),
    (b"1,2\n3,1e400\n", "is inf"),
    (b"1,2\n3,-1\n", "is -1.0"),
    (b"", "the CSV file is empty"),
    (b"\n \n", "the CSV file is empty"),
    (b"1,2\n3,4\xff\n", "row 2, column 2"),
])
def test_bad_csv_files(data, pattern):
    with pytest.raises(HeatmapError, match=pattern):
        read_heatmap("t.csv", data)


def test_csv_line_endings_and_trailing_blank_lines(monkeypatch):
    from gpudse_core.raytrace import readers

    expect = np.array([[1, 2], [3, 4.5]]) / 4.5
    for data in (b"1,2\r\n3,4.5\r\n", b"1, 2\n3 ,4.5", b"1,2\n3,4.5\n\n  \n"):
        np.testing.assert_allclose(read_heatmap("t.csv", data).cost, expect, rtol=1e-6)
    monkeypatch.setattr(readers, "CHUNK", 5)
    np.testing.assert_allclose(read_heatmap("t.csv", b"1,2\n3,4.5\n").cost, expect, rtol=1e-6)


def test_unknown_kinds_and_missing_files(tmp_path):
    with pytest.raises(HeatmapError, match="not an image"):
        read_heatmap("t.txt", b"hello")
    with pytest.raises(HeatmapError, match="no such file"):
        read_heatmap(tmp_path / "none.ppm")
    with pytest.raises(HeatmapError, match="is a folder"):
        read_heatmap(tmp_path)
    (tmp_path / "zero.csv").symlink_to("/dev/zero")  # an endless stream: refused, not read forever
    with pytest.raises(HeatmapError, match="not a regular file"):
        read_heatmap(tmp_path / "zero.csv")
    assert read_heatmap("noext", ppm(b"P3", 2, 1, 255, ONE)).rgb.shape == (1, 2, 3)  # sniffed by magic


def test_arrays_given_directly_are_checked():
    with pytest.raises(HeatmapError, match="height x width x 3"):
        from_rgb(np.zeros((4, 4)))
    with limits.override(image_pixels=10), pytest.raises(limits.LimitError, match="image_pixels"):
        from_times(np.ones((4, 4)))


# ---- Zatel requests: counts, K, clusters, sizes validated against the image ----------------------------------
def test_component_counts_are_bounded():
    cfg = GpgpuSimConfig.parse("-gpgpu_n_clusters " + "1" + "0" * 100 + "\n-gpgpu_n_mem 4\n")
    with pytest.raises(ZatelError, match=r"gpu.config: -gpgpu_n_clusters = '10000.*whole number from 1 to 10,000"):
        counts_from_config(cfg, "gpu.config")
    cfg = GpgpuSimConfig.parse("-gpgpu_n_clusters 5000\n-gpgpu_n_cores_per_cluster 4\n-gpgpu_n_mem 4\n")
    with pytest.raises(limits.LimitError, match="gpu.config: 20,000 sms"):
        counts_from_config(cfg, "gpu.config")
    for bad in ("-8", "8.0", "0x10", "", "1e3"):
        with pytest.raises(ZatelError, match="-gpgpu_n_mem"):
            counts_from_config(GpgpuSimConfig.parse(f"-gpgpu_n_clusters 8\n-gpgpu_n_mem {bad}\n"), "g")
    with pytest.raises(ZatelError, match="no -gpgpu_n_mem option"):
        counts_from_config(GpgpuSimConfig.parse("-gpgpu_n_clusters 8\n"), "g")
    with pytest.raises(limits.LimitError, match="gpu_components"):
        downscale_factor({"sms": 10**100, "mem": 10**100})
    with pytest.raises(ZatelError, match="forced K must be a whole number"):
        downscale_factor({"sms": 8, "mem": 4}, force=2.5)


@pytest.mark.parametrize("kw, pattern", [
    ({"clusters": 10**100}, "colour_clusters"),
    ({"chunk": (0, 2)}, "chunk size 0x2 must be positive"),
    ({"block": (10**100, 2)}, "smaller than one"),
    ({"chunk": (10**100, 10**100)}, "K = 4 is larger than the number of"),
    ({"block": (64, 2)}, "block must tile"),
    ({"k_force": 3}, "does not divide"),
    ({"division": "coarse", "chunk": (64, 32), "block": (64, 64)}, "has no 64x64 section block wholly inside it"),
    ({"percent": float("nan")}, "percentage"),
    ({"bounds": (float("nan"), 0.5)}, "bounds"),
    ({"distribution": "lifo"}, "unknown distribution"),
])
def test_requests_are_validated_against_the_image(kw, pattern):
    hm = from_rgb(gradient_rgb(64, 128))
    with pytest.raises(GpudseError, match=pattern):
        plan(hm, {"sms": 8, "mem": 4}, **kw)


def test_cli_writes_nothing_when_the_config_cannot_be_downscaled(tmp_path, capsys):
    from gpudse_core.cli import main

    (tmp_path / "h.ppm").write_bytes(ppm(b"P3", 128, 64, 255, gradient_rgb(64, 128)))
    # 10 clusters of 2 SMs and 4 partitions: K = gcd(20, 4) = 4 does not divide the 10 clusters
    (tmp_path / "g.config").write_text("-gpgpu_n_clusters 10\n-gpgpu_n_cores_per_cluster 2\n-gpgpu_n_mem 4\n")
    assert main(["pixels", str(tmp_path / "h.ppm"), "--config", str(tmp_path / "g.config"), "-o",
                 str(tmp_path / "out")]) == 2
    assert "not divisible by K = 4" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_every_group_gets_at_least_one_block():
    zp = plan(from_rgb(gradient_rgb(64, 128)), {"sms": 8, "mem": 4}, percent=0.1)
    assert all(len(g.blocks) >= 1 for g in zp.selection.groups)


# ---- the CLI: exit 2, one line, no traceback ---------------------------------------------------------------------
@pytest.mark.parametrize("name, data, extra, pattern", [pytest.param(*case, id=case[3]) for case in [
    ("bomb.png", png_bomb(7000, 7000), [], "image_pixels"),
    ("w.ppm", b"P3\n" + b"9" * 5000 + b" 1\n255\n", [], "number_digits"),
    ("n.ppm", b"P3\n2 1\n255\n0 0 255 -5 0 0\n", [], "'-5', not a number"),
    ("o.npy", npy_of(np.array([[1, None]], dtype=object)), [], "pickle"),
    ("r.csv", b"1,2\n3\n", [], "row 2 has 1 cells"),
    ("ok.ppm", ppm(b"P3", 64, 8, 255, gradient_rgb(8, 64)), ["--clusters", "1" + "0" * 100], "colour_clusters"),
    ("ok.ppm", ppm(b"P3", 64, 8, 255, gradient_rgb(8, 64)), ["--sms", "1" + "0" * 100], "gpu_components"),
    ("ok.ppm", ppm(b"P3", 64, 8, 255, gradient_rgb(8, 64)), ["--config", "gpu.config"],
     "gpu.config: -gpgpu_n_clusters"),
]])
def test_cli_refuses_hostile_heatmaps_cleanly(tmp_path, name, data, extra, pattern):
    (tmp_path / name).write_bytes(data)
    (tmp_path / "gpu.config").write_text("-gpgpu_n_clusters 1" + "0" * 100 + "\n-gpgpu_n_mem 4\n")
    args = ["--sms", "8", "--mem", "4"] if "--sms" not in extra and "--config" not in extra else \
        (["--mem", "4"] if "--sms" in extra else [])
    r = subprocess.run([sys.executable, "-m", "gpudse_core", "pixels", name, *args, *extra, "-o", "out"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.startswith("gpudse: error: ")
    assert len(r.stderr.strip().splitlines()) == 1
    import re

    assert re.search(pattern, r.stderr), r.stderr
    assert not (tmp_path / "out").exists()  # nothing written for a refused request
