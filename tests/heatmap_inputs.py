"""Generators of heatmap files, well-formed and hostile, for the reader tests.

Each returns the bytes of one file. The large images are built without holding their pixels: the
PNG writer compresses rows as it goes, so a 7000×7000 PNG is ~150 KB of bytes and a few MB of memory.
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np


def own_peak_mb() -> float:
    """This process's own peak resident memory (VmHWM). ``ru_maxrss`` is not used: Linux carries the forked
    parent's peak across exec into it, so a child of a large pytest process reports the parent's size."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def png_bomb(w: int, h: int, colour: tuple[int, int, int] = (0, 0, 255)) -> bytes:
    """A valid 8-bit RGB PNG of w×h pixels of one colour, compressed row by row (tiny file, huge image)."""
    z = zlib.compressobj(9)
    row = b"\x00" + bytes(colour) * w
    parts = []
    for _ in range(h):
        parts.append(z.compress(row))
    parts.append(z.flush())
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", b"".join(parts))
            + png_chunk(b"IEND", b""))


def png_header_only(w: int, h: int) -> bytes:
    """A PNG whose IHDR declares w×h and whose image data is empty."""
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + png_chunk(b"IDAT", zlib.compress(b"")) + png_chunk(b"IEND", b""))


def png_of(rgb: np.ndarray, **save) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG", **save)
    return buf.getvalue()


def ppm(magic: bytes, w: int, h: int, maxval: int, samples, comment: bytes = b"") -> bytes:
    head = magic + b"\n" + (b"# " + comment + b"\n" if comment else b"") + f"{w} {h}\n{maxval}\n".encode()
    s = np.asarray(samples)
    if magic == b"P3":
        return head + " ".join(map(str, s.ravel().tolist())).encode() + b"\n"
    return head + s.astype(">u2" if maxval > 255 else np.uint8).tobytes()


def npy_of(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=arr.dtype.hasobject)
    return buf.getvalue()


def npy_declaring(shape: tuple[int, ...], descr: str = "<f8", payload: bytes = b"") -> bytes:
    """An NPY 1.0 file whose header declares *shape* and *descr*, followed by *payload*."""
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    pad = 64 - (10 + len(header) + 1) % 64
    header += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + payload


def gradient_rgb(h: int, w: int, levels: int = 6) -> np.ndarray:
    """A jet-like heatmap with *levels* colours in bands (known structure: hot in the middle)."""
    y, x = np.mgrid[0:h, 0:w]
    t = 1 - np.hypot((x - w / 2) / w, (y - h / 2) / h) * 1.4
    lut = np.array([[0, 0, 255], [0, 160, 255], [0, 255, 0], [255, 255, 0], [255, 0, 0], [145, 0, 65]])
    idx = np.clip((t * levels).astype(int), 0, levels - 1) * (len(lut) - 1) // max(levels - 1, 1)
    return lut[idx].astype(np.uint8)
