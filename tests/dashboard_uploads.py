"""Bad uploads for every uploader of the dashboard ("20 bad uploads across every uploader").

    from dashboard_uploads import UPLOADERS, bad_uploads

    for up in bad_uploads():        # Upload(surface, filename, data, why)
        page, key, button = UPLOADERS[up.surface]

Each surface is one uploader: the page it is on, the widget key and the button that loads the file
(None where the upload is used at once). Every case must be refused with our error naming the
file, leaving the workspace as it was. Bombs are built compressed, never expanded here. The
hostile-input corpus of the core (``hostile_corpus.py``, hostile input) is added when it is present.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

UPLOADERS = {  # surface: (page, uploader key, button that loads it or None)
    "space": ("Design space", "space_upload", "Load file"),
    "results": ("Simulations", "results_upload", None),
    "project": ("Home", "project_upload", "Load this project"),
    "heatmap": ("Ray tracing", "heatmap_upload", None),
    "wfg": ("Analytical models", "wfg_upload", None),
    "config": ("Ray tracing", "gpgpusim_config", None),
}


@dataclass(frozen=True)
class Upload:
    surface: str
    filename: str
    data: bytes
    why: str

    def __repr__(self) -> str:
        return f"Upload({self.surface}/{self.filename}: {self.why}, {len(self.data):,} bytes)"


def laughs(levels: int = 9, width: int = 9, key: str = "description") -> str:
    """Nested YAML anchors inside one field: a few hundred bytes that expand to width**levels strings."""
    items = ['&a0 ["lol"]'] + [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return f"{key}: [" + ", ".join(items) + "]\n"


def png_header(width: int, height: int) -> bytes:
    """A PNG whose header declares *width* × *height* pixels (the data are a few bytes)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def zip_of(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def zip_bomb(total: int = 700 * 2**20) -> bytes:
    """One entry of *total* zero bytes, deflated (about a thousandth of its size)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("results.csv", "w", force_zip64=True) as fh:
        block = b"0" * 2**20
        for _ in range(total // len(block)):
            fh.write(block)
    return buf.getvalue()


def good_project_parts() -> dict[str, bytes]:
    """The parts of a valid project zip (a small space) to spoil one at a time."""
    space = "name: t\nparameters:\n  - {name: a, values: [1, 2, 4]}\n  - {name: b, values: [1, 2]}\n"
    from gpudse_core.workspace.project import SCHEMA

    return {"manifest.json": json.dumps({"schema": SCHEMA, "response": "y"}).encode(), "space.yaml": space.encode()}


def bad_uploads() -> Iterator[Upload]:
    deep = "[" * 100_000 + "]" * 100_000
    yield Upload("space", "laughs.yaml", ("name: x\nparameters:\n  - {name: a, values: [1, 2]}\n" + laughs()).encode(),
                 "billion laughs in a description")
    yield Upload("space", "deep.json", deep.encode(), "100,000-deep JSON")
    yield Upload("space", "binary.yaml", bytes(range(256)) * 20, "binary bytes")
    yield Upload("space", "fixed.yaml", b"name: x\nparameters:\n  - {name: a, values: [1, 2]}\nfixed: 7\n",
                 "fixed is not a mapping")
    yield Upload("space", "range.yaml", b"name: x\nparameters:\n  - {name: a, values: '0::1::3e7'}\n",
                 "a 30-million-value range")
    yield Upload("space", "empty.yaml", b"", "an empty file")
    yield Upload("results", "noparams.csv", b"x,y\n1,2\n3,4\n", "no parameter column of the space")
    yield Upload("results", "text.csv", ("blk,cc,tc,smp,ccp,simd,mshr,dramq,intra,inter,cycles\n"
                                         + "1,8,8,1,1,8,8,8,1,1,fast\n" * 5).encode(), "a text response")
    yield Upload("results", "garbage.parquet", b"PAR1" + b"\xff" * 500 + b"PAR1", "a damaged Parquet file")
    yield Upload("results", "nested.json", deep.encode(), "100,000-deep JSON")
    yield Upload("results", "latin1.csv", "blk,cycles\n1,\xe9\n".encode("latin-1") + b"\xff\xfe", "not UTF-8")
    yield Upload("project", "bomb.zip", zip_bomb(), "a zip whose entry expands to 700 MB")
    yield Upload("project", "notazip.zip", b"PK\x03\x04" + b"\0" * 200, "not a zip")
    parts = good_project_parts()
    yield Upload("project", "samples-list.zip", zip_of({**parts, "samples.json": b"[1, 2, 3]"}),
                 "samples.json is a list (the space is valid: a partial load would change it)")
    yield Upload("project", "slip.zip", zip_of({**parts, "../../evil.yaml": b"x: 1"}), "a path outside the archive")
    yield Upload("project", "laughs.zip", zip_of({**parts, "space.yaml": ("name: t\nparameters:\n"
                                                                          "  - {name: a, values: [1, 2]}\n"
                                                                          + laughs()).encode()}),
                 "billion laughs inside the project's space")
    yield Upload("heatmap", "huge.png", png_header(70_000, 70_000), "a PNG declaring 4.9 G pixels")
    yield Upload("heatmap", "digits.ppm", b"P3\n" + b"9" * 5000 + b" 2\n255\n0 0 0\n", "a 5,000-digit width")
    yield Upload("heatmap", "text.csv", b"a,b\nx,y\n", "a CSV of words")
    yield Upload("heatmap", "garbage.npy", b"\x93NUMPY" + b"\xff" * 100, "a damaged NPY file")
    yield Upload("wfg", "laughs.yaml", laughs(key="kernel").encode(), "billion laughs")
    yield Upload("wfg", "deep.json", deep.encode(), "100,000-deep JSON")
    yield Upload("wfg", "nodes.json", json.dumps({"kernel": {"nodes": "many"}}).encode(), "nodes is not a list")
    yield Upload("config", "binary.config", b"\xff\xfe\x00garbage", "not UTF-8 text")
