"""Property-based fuzzing of every heatmap reader and of Zatel's request checking.

Each test asserts "our error or a valid result": a :class:`GpudseError` (HeatmapError, LimitError,
ZatelError), or a heatmap whose cost is finite in [0, 1] with the shape its header declared (and the
exact pixels, when the input was well formed). Each runs in a memory-limited child process
(``bounded.py``), so a decoder that blows up fails the test instead of the machine.
"""

from __future__ import annotations

import numpy as np
import pytest
from bounded import bounded
from heatmap_inputs import gradient_rgb, npy_of, png_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudse_core.errors import GpudseError
from gpudse_core.raytrace.heatmap import read_heatmap
from gpudse_core.raytrace.zatel import plan

pytestmark = pytest.mark.slow  # each fuzz test takes seconds of CPU

BUDGET = {"mem_mb": 2048, "max_rss_mb": 1024, "timeout": 900}  # no process over 1 GB
FUZZ = settings(max_examples=250, suppress_health_check=list(HealthCheck))


def outcome(name: str, data: bytes):
    """The heatmap read from *data*, or None for our error; anything else escaping fails the test."""
    try:
        hm = read_heatmap(name, data)
    except GpudseError as e:
        assert str(e).startswith(name), f"the message must name the file: {e}"
        return None
    assert hm.cost.dtype == np.float32 and hm.cost.ndim == 2 and hm.cost.size > 0
    assert np.isfinite(hm.cost).all() and hm.cost.min() >= 0 and hm.cost.max() <= 1
    if hm.rgb is not None:
        assert hm.rgb.dtype == np.uint8 and hm.rgb.shape == (*hm.cost.shape, 3)
    return hm


@st.composite
def mutated(draw, data: bytes) -> tuple[bytes, bool]:
    """*data*, or a copy with bytes flipped, cut, inserted or duplicated; and whether it is unchanged."""
    how = draw(st.sampled_from(["same", "flip", "cut", "insert", "repeat"]))
    if how == "same" or not data:
        return data, True
    i = draw(st.integers(0, len(data) - 1))
    if how == "flip":
        return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:], False
    if how == "cut":
        return data[:i], False
    if how == "insert":
        return data[:i] + draw(st.binary(min_size=1, max_size=8)) + data[i:], False
    return data[:i] + data[i:] * draw(st.integers(2, 4)), False


# ---- PPM -----------------------------------------------------------------------------------------------------
NUMBER = st.one_of(st.integers(0, 20).map(str), st.sampled_from(["0", "255", "256", "65535", "65536", "-1", "+3",
                                                                 "1e3", "9" * 30, "9" * 500, "0x1f", "٣"]))


@st.composite
def ppm_files(draw):
    magic = draw(st.sampled_from([b"P3", b"P6", b"P3", b"P6", b"P5", b"P3x"]))
    w, h = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    maxval = draw(st.sampled_from([1, 7, 255, 256, 1000, 65535]))
    comment = draw(st.sampled_from([b"", b"# a comment\n", b"#\n#x\r\n", b"# no newline"]))
    px = np.array(draw(st.lists(st.integers(0, maxval), min_size=w * h * 3, max_size=w * h * 3)))
    fields = [str(w), str(h), str(maxval)]
    if draw(st.booleans()):  # a damaged header field
        fields[draw(st.integers(0, 2))] = draw(NUMBER)
    head = magic + b"\n" + comment + " ".join(fields).encode() + b"\n"
    if magic == b"P3":
        tokens = [str(v) for v in px]
        if draw(st.booleans()) and tokens:  # a damaged sample
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(NUMBER)
        sep = draw(st.sampled_from([" ", "\n", "\t", " # c\n"]))
        body = sep.join(tokens).encode() + b"\n"
    else:
        body = px.astype(">u2" if maxval > 255 else np.uint8).tobytes()
    valid = magic in (b"P3", b"P6") and fields == [str(w), str(h), str(maxval)] and comment != b"# no newline" and \
        (magic == b"P6" or body == (sep.join(str(v) for v in px) + "\n").encode())
    return head + body, valid, (w, h, maxval, px)


@bounded(**BUDGET)
@FUZZ
@given(ppm_files(), st.data())
def test_fuzz_ppm(case, data):
    raw, valid, (w, h, maxval, px) = case
    raw, same = data.draw(mutated(raw))
    hm = outcome("f.ppm", raw)
    if valid and same:
        assert hm is not None, "a well-formed PPM was refused"
        np.testing.assert_array_equal(hm.rgb, np.round(px.reshape(h, w, 3) * 255.0 / maxval).astype(np.uint8))


@bounded(**BUDGET)
@FUZZ
@given(st.sampled_from([b"P3", b"P6", b"P3\n", b"P6\n", b"P3 1 1 255\n", b"P6 2 1 65535\n"]),
       st.binary(max_size=300))
def test_fuzz_ppm_random_bytes(magic, rest):
    outcome("r.ppm", magic + rest)


# ---- PNG -----------------------------------------------------------------------------------------------------
@st.composite
def png_files(draw):
    h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    rgb = np.array(draw(st.lists(st.integers(0, 255), min_size=h * w * 3, max_size=h * w * 3)), dtype=np.uint8)
    rgb = rgb.reshape(h, w, 3)
    from PIL import Image

    mode = draw(st.sampled_from(["RGB", "RGBA", "P", "L", "1"]))
    img = Image.fromarray(rgb).convert(mode)
    import io

    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=draw(st.booleans()))
    return buf.getvalue(), np.asarray(img.convert("RGB"))


@bounded(**BUDGET)
@FUZZ
@given(png_files(), st.data())
def test_fuzz_png(case, data):
    raw, expect = case
    raw, same = data.draw(mutated(raw))
    hm = outcome("f.png", raw)
    if same:
        assert hm is not None, "a well-formed PNG was refused"
        np.testing.assert_array_equal(hm.rgb, expect)


@bounded(**BUDGET)
@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_png_random_bytes_after_a_header(rest):
    outcome("r.png", png_of(gradient_rgb(4, 4))[:33] + rest)


# ---- NPY -----------------------------------------------------------------------------------------------------
@st.composite
def npy_files(draw):
    dtype = draw(st.sampled_from(["<f8", "<f4", ">f8", "<i4", "<u2", "|u1", "<f2", "<c16", "|b1", "<U3"]))
    shape = draw(st.sampled_from([(3, 4), (1, 1), (2, 5), (4,), (2, 2, 2), (0, 3)]))
    values = draw(st.lists(st.one_of(st.floats(0, 1e6), st.sampled_from([float("nan"), float("inf"), -1.0, 0.0])),
                           min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    arr = np.array(values).reshape(shape)
    with np.errstate(all="ignore"):
        arr = arr.astype(dtype)
    if draw(st.booleans()):
        arr = np.asfortranarray(arr)
    return npy_of(arr), arr


@bounded(**BUDGET)
@FUZZ
@given(npy_files(), st.data())
def test_fuzz_npy(case, data):
    raw, arr = case
    raw, same = data.draw(mutated(raw))
    hm = outcome("f.npy", raw)
    ok = arr.ndim == 2 and arr.size and arr.dtype.kind in "iuf" and np.all(np.isfinite(arr)) and np.all(arr >= 0) \
        and arr.max() > 0
    if same:
        assert (hm is not None) == bool(ok)
        if ok:
            np.testing.assert_allclose(hm.cost, arr.astype(float) / float(arr.max()), rtol=1e-6, atol=1e-7)


# ---- CSV -----------------------------------------------------------------------------------------------------
@st.composite
def csv_files(draw):
    rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    grid = np.array(draw(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=rows * cols,
                                  max_size=rows * cols))).reshape(rows, cols)
    sep = draw(st.sampled_from([",", ", ", " ,"]))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    text = end.join(sep.join(repr(float(v)) for v in row) for row in grid) + draw(st.sampled_from(["", end, end * 3]))
    return text.encode(), grid


@bounded(**BUDGET)
@FUZZ
@given(csv_files(), st.data())
def test_fuzz_csv(case, data):
    raw, grid = case
    raw, same = data.draw(mutated(raw))
    hm = outcome("f.csv", raw)
    if same and grid.max() > 0:
        assert hm is not None, "a well-formed CSV was refused"
        np.testing.assert_allclose(hm.cost, grid / grid.max(), rtol=1e-6, atol=1e-7)


@bounded(**BUDGET)
@FUZZ
@given(st.text(alphabet="0123456789.,-+eEnaif \n\r\t#x", max_size=200))
def test_fuzz_csv_random_text(text):
    outcome("r.csv", text.encode())


# ---- Zatel requests ------------------------------------------------------------------------------------------
SIZES = st.tuples(st.sampled_from([0, 1, 2, 8, 16, 32, 64, 10**12]), st.sampled_from([0, 1, 2, 4, 10**12]))


@bounded(**BUDGET)
@settings(max_examples=200, suppress_health_check=list(HealthCheck))
@given(st.sampled_from([1, 2, 3, 8, 30, 80, 10**6, 10**30]), st.sampled_from([1, 4, 10, 12, 10**30]),
       st.one_of(st.none(), st.integers(-1, 12)), st.integers(-1, 70), st.sampled_from(["fine", "coarse"]), SIZES,
       SIZES, st.sampled_from(["uniform", "lintmp", "exptmp"]), st.one_of(st.none(), st.floats(-1, 120)),
       st.integers(0, 2**70))
def test_fuzz_plan_requests(sms, mem, k, clusters, division, chunk, block, distribution, percent, seed):
    from gpudse_core.raytrace.heatmap import from_rgb

    hm = from_rgb(gradient_rgb(48, 96))
    try:
        zp = plan(hm, {"sms": sms, "mem": mem}, k_force=k, clusters=clusters, division=division, chunk=chunk,
                  block=block, distribution=distribution, percent=percent, seed=seed)
    except GpudseError:
        return
    sel = zp.selection
    assert len(sel.groups) == zp.downscale.k and all(g.traced_pixels >= 1 for g in sel.groups)
    assert int(sel.mask.sum()) == sum(g.traced_pixels for g in sel.groups)
    for g in sel.groups:
        xy = sel.coordinates(g.group)
        assert np.all(zp.groups[xy[:, 1], xy[:, 0]] == g.group)
