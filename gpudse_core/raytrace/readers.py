"""Heatmap file formats, read with every size checked before the work: PPM, PNG, NPY, CSV.

Each reader takes a binary file object (a file on disk, or the bytes of an upload) and returns the
image's pixels: H×W×3 ``uint8`` RGB for PPM and PNG, an H×W array of per-pixel times for NPY and CSV.
Nothing is decoded before the pixel count declared by the file (PPM and PNG headers, the NPY header,
CSV rows × columns) has passed :data:`~gpudse_core.limits.Limits.image_pixels`, and nothing is read
before the file's size has passed ``image_bytes``. Every failure is a :class:`HeatmapError` (or a
:class:`~gpudse_core.limits.LimitError`) naming the file, the place (header field, pixel, row and
column) and what to do; no exception of a decoder escapes.

* **PPM** (netpbm): ``P3`` (ASCII) and ``P6`` (binary, 8 or 16-bit big-endian samples), comments
  (``#`` to the end of the line) in the header and, for P3, between samples. Header numbers are
  plain decimal digits, at most ``number_digits`` of them; maxval is 1–65535; samples are scaled to
  8 bits (round(v·255/maxval)). P3 is parsed in pieces of :data:`CHUNK` bytes, so memory does not
  grow with the text; a P3 sample must be digits only (``-5`` is refused, not wrapped to 251).
  Samples after the image's last one are ignored (netpbm allows several images in one file).
* **PNG** via Pillow, after the width and height of the IHDR chunk have passed the limit; only the
  PNG decoder is enabled; Pillow's own decompression-bomb limit is reported as our error.
* **NPY**: the header is parsed with NumPy's header reader (a literal, never a pickle); only
  integer, unsigned and floating dtypes are accepted (object arrays, which need pickle, are
  refused); 2-D only.
* **CSV**: one row of pixels per line, comma-separated numbers; every row must have as many cells
  as the first; blank lines may only end the file.
"""

from __future__ import annotations

import re
import struct
import warnings
from typing import BinaryIO

import numpy as np

from .. import limits
from ..errors import GpudseError

CHUNK = 8 << 20  # bytes of P3 or CSV text parsed at a time
HEADER_BYTES = 1 << 20  # a PPM header (with its comments) must fit in the first MiB
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NPY_MAGIC = b"\x93NUMPY"
CHANNELS = ("red", "green", "blue")
_WS = b" \t\n\r\x0b\x0c"
_P3_TEXT = b"0123456789" + _WS
_COMMENT = re.compile(rb"#[^\n\r]*")


class HeatmapError(GpudseError):
    """A heatmap file cannot be read or used."""


def check_pixels(name: str, w: int, h: int) -> None:
    """Refuse an empty image, or one over ``limits.image_pixels``, from its declared size."""
    if w < 1 or h < 1:
        raise HeatmapError(f"{name}: the image is empty ({w}x{h} pixels)")
    limits.check("image_pixels", w * h, f"{name}: a {w}x{h} image",
                 "downscale the heatmap (Zatel needs the frame's hot regions, not every pixel)")


def _sample(i: int, w: int) -> str:
    pixel, channel = divmod(i, 3)
    y, x = divmod(pixel, w)
    return f"pixel x={x}, y={y}, {CHANNELS[channel]}"


# ---- PPM ------------------------------------------------------------------------------------------------
def ppm_header(head: bytes, name: str) -> tuple[bytes, int, int, int, int]:
    """Magic, width, height, maxval and the offset of the first raster byte of a PPM header."""
    magic = head[:2]
    if magic not in (b"P3", b"P6") or (len(head) > 2 and head[2:3] not in tuple(bytes([c]) for c in _WS + b"#")):
        found = f"; it starts with {head[:2]!r}" if head[:1] == b"P" else ""
        raise HeatmapError(f"{name}: not a PPM image: a colour heatmap in PPM starts with 'P3' (plain) or 'P6' "
                           f"(binary){found}; convert it to P3, P6 or PNG")
    pos, fields, digits = 2, [], limits.current().number_digits
    labels = ("width", "height", "maxval")
    while len(fields) < 3:
        while pos < len(head) and head[pos] in _WS:
            pos += 1
        if pos < len(head) and head[pos:pos + 1] == b"#":
            m = _COMMENT.match(head, pos)
            pos = m.end()
            if pos >= len(head) and len(head) >= HEADER_BYTES:
                break
            continue
        if pos >= len(head):
            break
        start = pos
        while pos < len(head) and head[pos] not in _WS and head[pos:pos + 1] != b"#":
            pos += 1
            if pos - start > digits:
                raise limits.LimitError(f"{name}: the PPM {labels[len(fields)]} has more than {digits} digits "
                                        f"(number_digits); the header is damaged")
        tok = head[start:pos]
        if not tok.isdigit():
            raise HeatmapError(f"{name}: malformed PPM header: the {labels[len(fields)]} is {tok[:20]!r}, "
                               f"not a whole number")
        fields.append(int(tok))
    if len(fields) < 3:
        what = "longer than 1 MiB (comments?)" if len(head) >= HEADER_BYTES else "truncated"
        raise HeatmapError(f"{name}: the PPM header is {what}: it needs width, height and maxval")
    w, h, maxval = fields
    check_pixels(name, w, h)
    if not 1 <= maxval <= 65535:
        raise HeatmapError(f"{name}: PPM maxval {maxval} is outside 1..65535")
    if pos >= len(head) or head[pos] not in _WS:
        raise HeatmapError(f"{name}: the PPM header must end with one whitespace character after maxval")
    return magic, w, h, maxval, pos + 1


def _scale(samples: np.ndarray, maxval: int) -> np.ndarray:
    """Samples (0..maxval) scaled to 8 bits, round(v·255/maxval)."""
    if maxval == 255:
        return samples.astype(np.uint8, copy=False)
    lut = np.round(np.arange(maxval + 1) * (255.0 / maxval)).astype(np.uint8)
    return lut[samples]


def _over_maxval(values: np.ndarray, maxval: int, done: int, w: int, name: str) -> None:
    over = np.flatnonzero(values > maxval)
    if over.size:
        i = int(over[0])
        raise HeatmapError(f"{name}: sample {done + i + 1:,} ({_sample(done + i, w)}) is {int(values[i])}, "
                           f"which exceeds the declared maxval {maxval}; fix maxval or the pixel")


def read_ppm(fh: BinaryIO, name: str) -> np.ndarray:
    """RGB pixels (H×W×3 uint8) of a P3 or P6 PPM read from *fh*."""
    head = fh.read(HEADER_BYTES)
    magic, w, h, maxval, start = ppm_header(head, name)
    n = w * h * 3
    out = np.empty(n, dtype=np.uint8)
    if magic == b"P6":
        width = 2 if maxval > 255 else 1
        raw = np.empty(n * width, dtype=np.uint8)
        have = head[start:start + n * width]
        raw[:len(have)] = np.frombuffer(have, dtype=np.uint8)
        got = len(have)
        if got < raw.size:
            got += fh.readinto(memoryview(raw)[got:]) or 0
        if got < raw.size:
            raise HeatmapError(f"{name}: truncated P6 data: {got:,} of the {raw.size:,} bytes a {w}x{h} image needs")
        samples = raw.view(">u2") if width == 2 else raw
        step = 1 << 22
        for a in range(0, n, step):
            part = samples[a:a + step]
            if maxval < (65535 if width == 2 else 255):
                _over_maxval(part, maxval, a, w, name)
            out[a:a + step] = _scale(part.astype(np.uint16 if width == 2 else np.uint8), maxval)
        return out.reshape(h, w, 3)
    _read_p3(fh, head[start:], head[:start].count(b"\n") + 1, out, w, maxval, name)
    return out.reshape(h, w, 3)


def _read_p3(fh: BinaryIO, carry: bytes, line: int, out: np.ndarray, w: int, maxval: int, name: str) -> None:
    n, done = out.size, 0
    while done < n:
        piece = fh.read(CHUNK)
        buf = carry + piece
        if piece:  # keep a sample or comment cut at the end of this piece for the next one
            cut = max(buf.rfind(bytes([c])) for c in _WS) + 1
            hash_at = buf.rfind(b"#")
            if hash_at >= max(buf.rfind(b"\n"), buf.rfind(b"\r")):
                cut = min(cut, hash_at) if hash_at >= 0 else cut
            if cut <= 0 and len(buf) > HEADER_BYTES:
                raise HeatmapError(f"{name}: line {line}: more than 1 MiB without a space or line break; "
                                   f"not a P3 image")
            text, carry = buf[:max(cut, 0)], buf[max(cut, 0):]
        else:
            text, carry = buf, b""
        if b"#" in text:  # comments become spaces of the same length (positions stay true)
            text = _COMMENT.sub(lambda m: b" " * len(m.group()), text)
        bad = text.translate(None, _P3_TEXT)
        if bad:
            at = text.find(bad[:1])
            s, e = at, at
            while s > 0 and text[s - 1] not in _WS:
                s -= 1
            while e < len(text) and text[e] not in _WS:
                e += 1
            k = done + len(text[:s].split())
            where = f"sample {k + 1:,} ({_sample(k, w)})" if k < n else f"after the last sample ({n:,})"
            if k < n:
                at_line = line + text[:at].count(b"\n")
                raise HeatmapError(f"{name}: line {at_line}: {where} is "
                                   f"{text[s:e][:24].decode('latin-1')!r}, not a number: P3 samples are whole numbers "
                                   f"from 0 to maxval {maxval}")
            return
        values = _p3_numbers(text)[: n - done]
        _over_maxval(values, maxval, done, w, name)
        out[done:done + values.size] = _scale(values, maxval)
        done += values.size
        line += text.count(b"\n")
        if not piece:
            break
    if done < n:
        raise HeatmapError(f"{name}: truncated P3 data: {done:,} of the {n:,} samples a {w}-pixel-wide image "
                           f"needs; the file was cut short")


def _p3_numbers(text: bytes) -> np.ndarray:
    """The whitespace-separated decimal numbers of *text* (digits and whitespace only, checked by the caller);
    a number too large for int64 saturates, which is above any maxval."""
    if not text.strip():
        return np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.fromstring(text.decode("latin-1"), dtype=np.int64, sep=" ")


# ---- PNG ------------------------------------------------------------------------------------------------
def read_png(fh: BinaryIO, name: str) -> np.ndarray:
    """RGB pixels of a PNG; the size in its IHDR chunk is checked before Pillow decodes anything."""
    head = fh.read(24)
    if head[:8] != PNG_SIGNATURE:
        raise HeatmapError(f"{name}: not a readable PNG (no PNG signature); save the heatmap as PNG or PPM")
    if len(head) < 24 or head[12:16] != b"IHDR":
        raise HeatmapError(f"{name}: not a readable PNG (its first chunk is not the IHDR header)")
    w, h = struct.unpack(">II", head[16:24])
    check_pixels(name, w, h)
    fh.seek(0)
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow's DecompressionBombWarning: our limit has been checked
            with Image.open(fh, formats=["PNG"]) as im:
                if im.size != (w, h):
                    raise HeatmapError(f"{name}: not a readable PNG (its header is inconsistent)")
                rgb = np.asarray(im.convert("RGB"))
    except HeatmapError:
        raise
    except Image.DecompressionBombError:
        raise HeatmapError(f"{name}: a {w}x{h} PNG is over the image library's decompression-bomb limit; "
                           f"downscale the heatmap") from None
    except Exception as e:  # noqa: BLE001 - whatever the decoder raises on hostile bytes is a bad file
        why = "the decoder does not recognise it" if type(e).__name__ == "UnidentifiedImageError" else str(e)[:200]
        raise HeatmapError(f"{name}: not a readable PNG ({why}); re-export it, or save the heatmap as PPM") \
            from None
    if rgb.shape != (h, w, 3) or rgb.dtype != np.uint8:
        raise HeatmapError(f"{name}: not a readable PNG (decoded to {rgb.shape} {rgb.dtype})")
    return rgb


# ---- NPY ------------------------------------------------------------------------------------------------
def read_npy(fh: BinaryIO, name: str) -> np.ndarray:
    """A 2-D numeric array from an .npy file; object (pickled) arrays are refused."""
    from numpy.lib import format as npformat

    try:
        version = npformat.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = npformat.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = npformat.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unknown format version {version}")
    except Exception as e:  # noqa: BLE001 - NumPy's header parser raises many kinds on hostile bytes
        why = (str(e).splitlines() or [type(e).__name__])[0][:200]
        if "magic" in why.lower():  # NumPy's message quotes the file's first bytes: not for a reader
            why = "it does not start with NumPy's signature"
        raise HeatmapError(f"{name}: not a NumPy array file ({why}); save per-pixel times with numpy.save") from None
    if dtype.hasobject:
        raise HeatmapError(f"{name}: the array holds Python objects, which would need pickle; pickles are never "
                           f"loaded: save per-pixel times as a float array")
    if dtype.kind not in "iuf" or dtype.fields is not None or dtype.subdtype is not None:
        raise HeatmapError(f"{name}: dtype {dtype} is not one number per pixel; save per-pixel times as floats")
    if len(shape) != 2:
        raise HeatmapError(f"{name}: a per-pixel time array must be 2-D (height x width), got shape {shape}")
    h, w = (int(s) for s in shape)
    check_pixels(name, w, h)
    need = w * h * dtype.itemsize
    raw = np.empty(need, dtype=np.uint8)
    got = fh.readinto(memoryview(raw)) or 0
    if got < need:
        raise HeatmapError(f"{name}: truncated NPY data: {got:,} of the {need:,} bytes of a {shape} {dtype} array")
    return raw.view(dtype).reshape((h, w), order="F" if fortran else "C")


# ---- CSV ------------------------------------------------------------------------------------------------
def read_csv(fh: BinaryIO, name: str) -> np.ndarray:
    """A grid of numbers, one row of pixels per line; its rows × columns are counted before parsing."""
    rows = cols = newlines = 0
    first = None
    for piece in iter(lambda: fh.read(CHUNK), b""):
        if first is None:
            first = piece.split(b"\n", 1)[0]
            cols = first.count(b",") + 1
        content = len(piece.rstrip(_WS))
        if content:  # rows run to the line of the last non-blank byte
            rows = newlines + piece.count(b"\n", 0, content) + 1
        newlines += piece.count(b"\n")
    if not rows:
        raise HeatmapError(f"{name}: the CSV file is empty; give one row of per-pixel times per line")
    check_pixels(name, cols, rows)
    fh.seek(0)
    out = np.empty((rows, cols), dtype=np.float64)
    done, carry = 0, b""
    for piece in iter(lambda: fh.read(CHUNK), b""):
        buf = carry + piece
        cut = buf.rfind(b"\n") + 1
        carry = buf[cut:]
        done = _csv_rows(buf[:cut], out, done, name)
        if done == rows:
            return out
    _csv_rows(carry + b"\n", out, done, name)
    return out


def _csv_rows(text: bytes, out: np.ndarray, done: int, name: str) -> int:
    """Parse the complete lines of *text* into rows *done*, *done* + 1, … of *out*; return the next row."""
    rows, cols = out.shape
    b = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(b == 10)[: rows - done]
    if ends.size == 0:
        return done
    text = text[: int(ends[-1])]
    b = b[: int(ends[-1]) + 1]
    commas = np.concatenate([[0], np.cumsum(b == 44, dtype=np.int64)[ends]])
    filled = np.concatenate([[0], np.cumsum(np.isin(b, np.frombuffer(_WS, np.uint8), invert=True),
                                            dtype=np.int64)[ends]])
    cells, blank = np.diff(commas) + 1, np.diff(filled) == 0
    if blank.any():
        i = int(np.flatnonzero(blank)[0])
        raise HeatmapError(f"{name}: row {done + i + 1} is empty: a CSV heatmap is a grid of numbers, one row of "
                           f"pixels per line; remove the blank line")
    if np.any(cells != cols):
        i = int(np.flatnonzero(cells != cols)[0])
        raise HeatmapError(f"{name}: row {done + i + 1} has {int(cells[i])} cells but row 1 has {cols}: every row of "
                           f"the grid needs the same number of cells")
    n = ends.size
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            values = np.fromstring(text.replace(b"\n", b",").decode("latin-1"), dtype=np.float64, sep=",")
    except (ValueError, DeprecationWarning):
        values = None
    if values is None or values.size != n * cols:
        for i, ln in enumerate(text.split(b"\n")):
            for j, cell in enumerate(ln.split(b",")):
                if not _is_number(cell):
                    raise HeatmapError(f"{name}: row {done + i + 1}, column {j + 1}: "
                                       f"{cell.strip()[:24].decode('latin-1')!r} is not a number: a numeric CSV "
                                       f"grid holds numbers only (no header row)")
        raise HeatmapError(f"{name}: rows {done + 1}-{done + n}: not a numeric CSV grid")
    out[done:done + n] = values.reshape(n, cols)
    return done + n


def _is_number(cell: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return np.fromstring(cell.decode("latin-1"), dtype=np.float64, sep=",").size == 1
    except (ValueError, DeprecationWarning):
        return False
