"""Heatmap input for Zatel (002 §III-B, Fig. 3 step 1): PPM (P3/P6), PNG, or per-pixel times (NPY/CSV).

Colour heatmaps are drawn with a jet-like gradient: blue for fast (cold) pixels through cyan, green,
yellow and red, and beyond red to crimson for the slowest. The relative cost of a colour is read back
from its *shifted hue*: hues above 300° (crimson, magenta) are shifted down by 360° so that the
gradient is one interval from −30° (hottest) to 240° (coldest); coldness c = (h_s + 30°) / 270°,
clipped to [0, 1], and cost = 1 − c. Per-pixel time arrays are normalised by their maximum (cost)
and c = 1 − cost. The PPM reader handles comments, P3 (ASCII) and P6 (binary, 8 or 16 bit).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import GpudseError

HUE_HOT = -30.0
HUE_COLD = 240.0
WRAP = 300.0
MAX_PIXELS = 50_000_000


class HeatmapError(GpudseError):
    """A heatmap file cannot be read or used."""


@dataclass
class Heatmap:
    """A frame's per-pixel cost in [0, 1] (1 = slowest) and, for colour heatmaps, its RGB pixels."""

    cost: np.ndarray  # H x W float32
    rgb: np.ndarray | None  # H x W x 3 uint8, or None for arrays
    source: str = ""

    @property
    def coldness(self) -> np.ndarray:
        return 1.0 - self.cost

    @property
    def shape(self) -> tuple[int, int]:
        return self.cost.shape  # type: ignore[return-value]


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


def unique_colours(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct colours (n×3), each pixel's colour number, and pixel counts — by counting over the
    2^24 24-bit colours (linear time; no sort of the pixels)."""
    packed = ((rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]).ravel()
    counts_all = np.bincount(packed, minlength=1 << 24)
    values = np.flatnonzero(counts_all)
    lut = np.zeros(1 << 24, dtype=np.int32)
    lut[values] = np.arange(values.size, dtype=np.int32)
    palette = np.stack([(values >> 16) & 255, (values >> 8) & 255, values & 255], axis=-1).astype(np.uint8)
    return palette, lut[packed], counts_all[values]


def from_rgb(rgb: np.ndarray, source: str = "") -> Heatmap:
    _check_size(rgb.shape[:2], source)
    rgb = np.ascontiguousarray(rgb[..., :3].astype(np.uint8))
    palette, inverse, _ = unique_colours(rgb)  # few colours: map each once
    cold = rgb_coldness(palette)[inverse].reshape(rgb.shape[:2])
    return Heatmap((1.0 - cold).astype(np.float32), rgb, source)


def from_times(times: np.ndarray, source: str = "") -> Heatmap:
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 2:
        raise HeatmapError(f"{source}: a per-pixel time array must be 2-D (height x width), got shape {t.shape}")
    _check_size(t.shape, source)
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise HeatmapError(f"{source}: per-pixel times must be finite and non-negative")
    top = t.max()
    if top <= 0:
        raise HeatmapError(f"{source}: every pixel has time 0; nothing to select by")
    return Heatmap((t / top).astype(np.float32), None, source)


def _check_size(shape: tuple[int, ...], source: str) -> None:
    h, w = int(shape[0]), int(shape[1])
    if h < 1 or w < 1:
        raise HeatmapError(f"{source}: the image is empty ({w}x{h})")
    if h * w > MAX_PIXELS:
        raise HeatmapError(f"{source}: {w}x{h} pixels is more than the {MAX_PIXELS:,}-pixel limit")


def parse_ppm(data: bytes, source: str = "") -> np.ndarray:
    """RGB pixels (H×W×3 uint8) of a P3 or P6 PPM; 16-bit samples are scaled to 8 bits."""
    if data[:2] not in (b"P3", b"P6"):
        raise HeatmapError(f"{source}: not a PPM image (expected 'P3' or 'P6' at the start)")
    magic = data[:2]
    pos = 2
    fields: list[int] = []
    while len(fields) < 3:
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        if pos >= len(data):
            raise HeatmapError(f"{source}: truncated PPM header")
        if data[pos:pos + 1] == b"#":
            end = data.find(b"\n", pos)
            pos = len(data) if end < 0 else end + 1
            continue
        start = pos
        while pos < len(data) and not data[pos:pos + 1].isspace() and data[pos:pos + 1] != b"#":
            pos += 1
        tok = data[start:pos]
        if not tok.isdigit():
            raise HeatmapError(f"{source}: malformed PPM header field {tok[:20]!r}")
        fields.append(int(tok))
    w, h, maxval = fields
    if w < 1 or h < 1:
        raise HeatmapError(f"{source}: the image is empty ({w}x{h})")
    if not 0 < maxval < 65536:
        raise HeatmapError(f"{source}: PPM maxval {maxval} is outside 1..65535")
    _check_size((h, w), source)
    n = w * h * 3
    if magic == b"P6":
        pos += 1  # exactly one whitespace byte after maxval
        width = 2 if maxval > 255 else 1
        raw = data[pos:pos + n * width]
        if len(raw) < n * width:
            raise HeatmapError(f"{source}: truncated P6 data ({len(raw):,} of {n * width:,} bytes)")
        px = np.frombuffer(raw, dtype=">u2" if width == 2 else np.uint8).astype(np.float64)
    else:
        import warnings

        try:  # fast path: numpy's C parser of integers (P3 samples are integers)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                px = np.fromstring(data[pos:].decode("latin-1"), dtype=np.int64, sep=" ")[:n].astype(np.float64)
        except ValueError:
            px = np.zeros(0)
        if px.size < n:  # slow path, to say precisely what is wrong
            try:
                px = np.array(data[pos:].split()[:n], dtype=np.float64)
            except ValueError:
                raise HeatmapError(f"{source}: P3 data contains something that is not a number") from None
            if px.size < n:
                raise HeatmapError(f"{source}: truncated P3 data ({px.size:,} of {n:,} samples)")
    if px.max(initial=0) > maxval:
        raise HeatmapError(f"{source}: a sample exceeds the declared maxval {maxval}")
    return np.round(px.reshape(h, w, 3) * (255.0 / maxval)).astype(np.uint8)


def read_heatmap(source: str | Path, data: bytes | None = None) -> Heatmap:
    """A heatmap from a path or from *data* named by *source*: .ppm, .png, .npy or .csv."""
    name = str(source)
    if data is None:
        try:
            data = Path(source).read_bytes()
        except FileNotFoundError:
            raise HeatmapError(f"{name}: no such file") from None
    low = name.lower()
    if low.endswith(".ppm") or data[:2] in (b"P3", b"P6"):
        return from_rgb(parse_ppm(data, name), name)
    if low.endswith(".png"):
        try:
            from PIL import Image, UnidentifiedImageError

            with Image.open(io.BytesIO(data)) as im:
                rgb = np.asarray(im.convert("RGB"))
        except (UnidentifiedImageError, OSError) as e:
            raise HeatmapError(f"{name}: not a readable PNG ({e})") from None
        return from_rgb(rgb, name)
    if low.endswith(".npy"):
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError) as e:
            raise HeatmapError(f"{name}: not a NumPy array file ({str(e).splitlines()[0]})") from None
        return from_times(arr, name)
    if low.endswith(".csv"):
        try:
            arr = np.loadtxt(io.StringIO(data.decode("utf-8")), delimiter=",", ndmin=2)
        except (ValueError, UnicodeDecodeError) as e:
            raise HeatmapError(f"{name}: not a numeric CSV grid ({str(e).splitlines()[0]})") from None
        return from_times(arr, name)
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
