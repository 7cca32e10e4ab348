"""Heatmap input for Zatel (002 §III-B, Fig. 3 step 1): PPM (P3/P6), PNG, or per-pixel times (NPY/CSV).

Colour heatmaps are drawn with a jet-like gradient: blue for fast (cold) pixels through cyan, green,
yellow and red, and beyond red to crimson for the slowest. The relative cost of a colour is read back
from its *shifted hue*: hues above 300° (crimson, magenta) are shifted down by 360° so that the
gradient is one interval from −30° (hottest) to 240° (coldest); coldness c = (h_s + 30°) / 270°,
clipped to [0, 1], and cost = 1 − c. Per-pixel time arrays are normalised by their maximum (cost)
and c = 1 − cost. The file formats (PPM P3/P6, PNG, NPY, CSV) and their limits are in
:mod:`.readers`. Per-pixel passes run over bands of rows (:func:`row_bands`), so their temporaries do
not grow with the image (a heatmap at the pixel limit stays within a bounded memory).
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import limits
from .readers import NPY_MAGIC, PNG_SIGNATURE, HeatmapError, check_pixels, read_csv, read_npy, read_png, read_ppm

__all__ = ["Heatmap", "HeatmapError", "colourise", "from_rgb", "from_times", "lookup", "pack", "parse_ppm",
           "read_heatmap", "rgb_coldness", "row_bands", "unique_colours", "unpack"]

HUE_HOT = -30.0
HUE_COLD = 240.0
WRAP = 300.0
BAND_PIXELS = 1 << 20  # pixels handled at a time by per-pixel passes: bounds their temporaries


@dataclass
class Heatmap:
    """A frame's per-pixel cost in [0, 1] (1 = slowest) and, for colour heatmaps, its RGB pixels."""

    cost: np.ndarray  # H x W float32
    rgb: np.ndarray | None  # H x W x 3 uint8, or None for arrays
    source: str = ""
    # a cache, not state: not an __init__ field, so a stored Heatmap (workspace codec) is the same bytes either way
    _colours: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def coldness(self) -> np.ndarray:
        return 1.0 - self.cost

    @property
    def shape(self) -> tuple[int, int]:
        return self.cost.shape  # type: ignore[return-value]

    def colours(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct colours (packed 0xRRGGBB, ascending) and their pixel counts (colour heatmaps only)."""
        if self._colours is None:
            if self.rgb is None:
                raise HeatmapError(f"{self.source or 'the heatmap'}: a per-pixel time array has no colours")
            self._colours = unique_colours(self.rgb)
        return self._colours


def row_bands(h: int, w: int, multiple: int = 1):
    """Row slices covering an H×W image, each of about BAND_PIXELS pixels and a multiple of *multiple* rows."""
    step = max(multiple, (BAND_PIXELS // max(w, 1)) // multiple * multiple)
    for a in range(0, h, step):
        yield slice(a, min(h, a + step))


def pack(rgb: np.ndarray) -> np.ndarray:
    """0xRRGGBB of every pixel (uint32)."""
    return (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]


def unique_colours(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct colours (packed, ascending) and pixel counts, counted band by band."""
    h, w = rgb.shape[:2]
    parts = [np.unique(pack(rgb[rows]), return_counts=True) for rows in row_bands(h, w)]
    if len(parts) == 1:
        return parts[0][0], parts[0][1].astype(np.int64)
    values, inverse = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
    return values, np.bincount(inverse, weights=np.concatenate([p[1] for p in parts])).astype(np.int64)


def unpack(packed: np.ndarray) -> np.ndarray:
    """RGB (n×3 uint8) of packed colours."""
    return np.stack([(packed >> 16) & 255, (packed >> 8) & 255, packed & 255], axis=-1).astype(np.uint8)


def lookup(rgb: np.ndarray, palette: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``table[i]`` for every pixel whose colour is ``palette[i]`` (palette packed and ascending)."""
    h, w = rgb.shape[:2]
    out = np.empty((h, w), dtype=table.dtype)
    for rows in row_bands(h, w):
        out[rows] = table[np.searchsorted(palette, pack(rgb[rows]))]
    return out


def rgb_coldness(rgb: np.ndarray) -> np.ndarray:
    """Coldness in [0, 1] of RGB colours (…×3, 0–255) from the shifted hue (see the module docstring)."""
    x = rgb.astype(np.float32) / 255.0
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    mx = x.max(axis=-1)
    mn = x.min(axis=-1)
    d = mx - mn
    safe = np.where(d > 0, d, 1.0)
    h = np.where(mx == r, ((g - b) / safe) % 6.0, np.where(mx == g, (b - r) / safe + 2.0, (r - g) / safe + 4.0)) * 60.0
    h = np.where(d > 0, h, HUE_COLD)  # greys carry no heat information: treat as coldest
    h = np.where(h > WRAP, h - 360.0, h)
    return np.clip((h - HUE_HOT) / (HUE_COLD - HUE_HOT), 0.0, 1.0).astype(np.float32)


def from_rgb(rgb: np.ndarray, source: str = "") -> Heatmap:
    """A colour heatmap from RGB(A) pixels (H×W×3 or ×4, 0–255)."""
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] not in (3, 4):
        raise HeatmapError(f"{source or 'the heatmap'}: RGB pixels must be height x width x 3, got {rgb.shape}")
    check_pixels(source or "the heatmap", rgb.shape[1], rgb.shape[0])
    rgb = np.ascontiguousarray(rgb[..., :3], dtype=np.uint8)
    hm = Heatmap(np.empty(0, dtype=np.float32), rgb, source)
    palette, _ = hm.colours()
    hm.cost = lookup(rgb, palette, 1.0 - rgb_coldness(unpack(palette)))
    return hm


def from_times(times: np.ndarray, source: str = "") -> Heatmap:
    """A heatmap from per-pixel times (any non-negative finite numbers), normalised by the largest."""
    name = source or "the time array"
    t = np.asarray(times)
    if t.ndim != 2:
        raise HeatmapError(f"{name}: a per-pixel time array must be 2-D (height x width), got shape {t.shape}")
    check_pixels(name, t.shape[1], t.shape[0])
    if t.dtype.kind not in "iuf":
        raise HeatmapError(f"{name}: per-pixel times must be numbers, not {t.dtype}")
    top = 0.0
    for rows in row_bands(*t.shape):
        band = t[rows]
        bad = ~np.isfinite(band) if band.dtype.kind == "f" else np.zeros(band.shape, dtype=bool)
        bad |= band < 0
        if bad.any():
            y, x = np.argwhere(bad)[0]
            v = band[y, x]
            raise HeatmapError(f"{name}: the time of pixel x={x}, y={rows.start + y} (row {rows.start + y + 1}, "
                               f"column {x + 1}) is {v}: per-pixel times must be finite and non-negative")
        top = max(top, float(band.max()))
    if top <= 0:
        raise HeatmapError(f"{name}: every pixel has time 0; nothing to select by")
    cost = np.empty(t.shape, dtype=np.float32)
    for rows in row_bands(*t.shape):
        cost[rows] = t[rows] / top
    return Heatmap(cost, None, source)


def parse_ppm(data: bytes, source: str = "") -> np.ndarray:
    """RGB pixels (H×W×3 uint8) of a P3 or P6 PPM held in memory; 16-bit samples are scaled to 8 bits."""
    return read_ppm(io.BytesIO(data), source)


def read_heatmap(source: str | Path, data: bytes | None = None) -> Heatmap:
    """A heatmap from a path or from *data* named by *source*: .ppm, .png, .npy or .csv.

    The file's size is checked before it is read and its pixel count before it is decoded
    (:mod:`gpudse_core.limits`); every failure is a :class:`HeatmapError` or a ``LimitError``."""
    name = str(source)
    if data is not None:
        fh, size = io.BytesIO(data), len(data)
    else:
        try:
            fh = open(source, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            raise HeatmapError(f"{name}: no such file") from None
        except IsADirectoryError:
            raise HeatmapError(f"{name}: is a folder; give a heatmap file") from None
        except OSError as e:
            raise HeatmapError(f"{name}: cannot be read ({e.strerror or e})") from None
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):  # a pipe or device (/dev/zero) has no size to check: an endless read
            fh.close()
            raise HeatmapError(f"{name}: not a regular file; give a heatmap file")
        size = info.st_size
    with fh:
        limits.check("image_bytes", size, f"{name}: a {size:,}-byte heatmap file")
        magic = fh.read(8)
        fh.seek(0)
        low = name.lower()
        ext = os.path.splitext(low)[1]
        if ext == ".ppm" or (ext not in (".png", ".npy", ".csv") and magic[:2] in (b"P3", b"P6")):
            return from_rgb(read_ppm(fh, name), name)
        if ext == ".png" or (ext not in (".npy", ".csv") and magic == PNG_SIGNATURE):
            return from_rgb(read_png(fh, name), name)
        if ext == ".npy" or (ext != ".csv" and magic.startswith(NPY_MAGIC)):
            return from_times(read_npy(fh, name), name)
        if ext == ".csv":
            return from_times(read_csv(fh, name), name)
    raise HeatmapError(f"{name}: not an image: give a .ppm, .png, .npy or .csv heatmap")


def colourise(cost: np.ndarray) -> np.ndarray:
    """RGB (uint8) of a cost map on the same shifted-hue gradient: cost 0 blue (240°) … 1 crimson (−30°)."""
    h = (HUE_COLD - np.clip(cost, 0, 1) * (HUE_COLD - HUE_HOT)) % 360.0
    hp = h / 60.0
    x = 1 - np.abs(hp % 2 - 1)
    z = np.zeros_like(hp)
    one = np.ones_like(hp)
    sector = np.floor(hp).astype(int) % 6
    rgb = np.select([sector[..., None] == i for i in range(6)],
                    [np.stack(c, axis=-1) for c in ((one, x, z), (x, one, z), (z, one, x), (z, x, one),
                                                    (x, z, one), (one, z, x))])
    return np.round(rgb * 255).astype(np.uint8)
