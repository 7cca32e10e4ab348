"""Built-in design spaces shipped in ``data/presets`` and the one entry point to load any space.

``stargazer``  Stargazer Table 2 (10 parameters, 933,120 points) with Table 3 as fixed baseline.
``lee-brooks`` Lee & Brooks Table 2 (12 parameter groups, 937,500,000 points).
``zatel``      The two GPU configurations of Zatel Table II (Mobile SoC, RTX 2060) as one group.
``mgpusim``    The settings of MGPUSim's R9 Nano GPU builder (6 parameters, 3,000 points), run by ``--backend mgpusim``.

In a source checkout the files live in ``<repo>/data/presets``; an installed wheel carries them as
``gpudse_core/_data/presets`` (see ``pyproject.toml``).
"""

from __future__ import annotations

from pathlib import Path

from .. import limits
from ..choices import PRESETS
from ..errors import SpaceError
from .design import DesignSpace, parse_space_text


def presets_dir() -> Path:
    here = Path(__file__).resolve().parent.parent  # gpudse_core/
    for cand in (here / "_data" / "presets", here.parent / "data" / "presets"):
        if cand.is_dir():
            return cand
    raise SpaceError("the built-in presets are missing from this installation; reinstall gpudse")


def preset_path(name: str) -> Path:
    key = name.lower().replace("_", "-")
    if key not in PRESETS:
        raise SpaceError(f"no preset named {name!r}; presets: {', '.join(PRESETS)}")
    return presets_dir() / PRESETS[key]


def load_preset(name: str) -> DesignSpace:
    path = preset_path(name)
    return parse_space_text(path.read_bytes(), source=f"preset {name} ({path.name})")


def read_document_file(path: Path) -> bytes:
    """A document file's bytes, never more than ``limits.document_bytes`` + 1 of them (the reader
    then refuses it with the limit's message), whatever size the file system reports."""
    with open(path, "rb") as fh:
        return fh.read(limits.current().document_bytes + 1)


def load_space(spec: str | Path) -> DesignSpace:
    """Load a design space from a YAML/JSON file path or a preset name (``stargazer``, ``lee-brooks``, ``zatel``)."""
    path = Path(spec)
    if path.is_file():
        return parse_space_text(read_document_file(path), source=str(path))
    if str(spec).lower().replace("_", "-") in PRESETS:
        return load_preset(str(spec))
    if path.suffix.lower() in (".yaml", ".yml", ".json") or "/" in str(spec):
        raise SpaceError(f"{spec}: no such file; give an existing YAML/JSON file or a preset ({', '.join(PRESETS)})")
    raise SpaceError(f"{str(spec)[:200]!r} is neither a file nor a preset; presets: {', '.join(PRESETS)}")


def load_space_bytes(data: bytes, name: str) -> DesignSpace:
    """Parse an uploaded design-space file (YAML or JSON by its name), bounded like any document."""
    return parse_space_text(data, source=name)
