"""Stage values as bytes: JSON for plain data, Parquet for tables, ``.npy`` for arrays.

A value is encoded as one JSON document plus, when it holds tables or arrays, binary parts; the
whole is stored as the JSON text alone (``json``) or as a zip of ``value.json`` and its parts
(``zip``). Encoding is deterministic (sorted keys, fixed zip timestamps), so the same content gives
the same bytes and the same digest; the workspace uses that to see that a stage computed from an
identical input is still current.

Decoding never runs stored code: no pickle (``np.load(allow_pickle=False)``, Parquet through
pyarrow), and only the registered classes below are rebuilt — by their fields (dataclasses), by
their ``from_dict`` (design spaces), or through the model registry (any model kind with a
``to_dict``). Another class can be registered with :func:`register`.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import math
import zipfile
from typing import Any

from ..errors import GpudseError

FORMATS = ("json", "zip")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)

# dataclasses rebuilt field by field (class path -> None until first use)
_DATACLASSES = {
    "gpudse_core.space.sampling.SampleSet",
    "gpudse_core.model.validation.ValidationResult",
    "gpudse_core.explore.scan.SpaceScan",
    "gpudse_core.raytrace.heatmap.Heatmap",
    "gpudse_core.raytrace.caster.Render",
    "gpudse_core.raytrace.zatel.ZatelPlan",
    "gpudse_core.raytrace.zatel.Quantized",
    "gpudse_core.raytrace.zatel.Downscale",
    "gpudse_core.raytrace.zatel.Selection",
    "gpudse_core.raytrace.zatel.GroupSelection",
    "gpudse_core.sim.store.Progress",
    "gpudse_core.workspace.stages.Results",
}
# classes saved with to_dict() and rebuilt by a module-level function
_DICT_TYPES = {"gpudse_core.space.design.DesignSpace": "gpudse_core.space.design:space_from_dict"}


class CodecError(GpudseError):
    """A value cannot be stored in a workspace, or a stored value cannot be read back."""


def register(cls: type) -> type:
    """Allow instances of the dataclass *cls* in workspace values (usable as a class decorator)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    _DATACLASSES.add(_path(cls))
    return cls


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _is_model(v: Any) -> bool:
    return type(v).__module__.startswith("gpudse_core.model.") and callable(getattr(v, "to_dict", None)) \
        and callable(getattr(v, "predict", None))


def load_model(d: Any, source: str = "model") -> Any:
    """A model from its JSON dict: through ``gpudse_core.model.load_model`` (any model kind) when the
    model package provides that registry, else as a :class:`StepwiseModel`."""
    try:
        from ..model import load_model as registry  # type: ignore[attr-defined]
    except ImportError:
        registry = None
    if registry is not None:
        return registry(d, source=source)
    from ..model.stepwise import StepwiseModel

    return StepwiseModel.from_dict(d, source=source)


class _Encoder:
    def __init__(self, what: str):
        self.what = what
        self.parts: dict[str, bytes] = {}

    def part(self, stem: str, ext: str, data: bytes) -> str:
        name = f"{stem}{len(self.parts)}.{ext}"
        self.parts[name] = data
        return name

    def enc(self, v: Any) -> Any:
        import numpy as np
        import pandas as pd

        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.generic):
            return self.enc(v.item())
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if isinstance(v, pd.DataFrame):
            return self.frame(v)
        if isinstance(v, pd.Series):
            return {"__series__": self.frame(v.to_frame(name="value")), "name": self.enc(v.name)}
        if isinstance(v, np.ndarray):
            if v.dtype.kind == "O":
                return {"__objects__": [self.enc(x) for x in v.ravel().tolist()], "shape": list(v.shape)}
            buf = io.BytesIO()
            np.save(buf, v, allow_pickle=False)
            return {"__array__": self.part("a", "npy", buf.getvalue())}
        if isinstance(v, list):
            return [self.enc(x) for x in v]
        if isinstance(v, tuple):
            return {"__tuple__": [self.enc(x) for x in v]}
        if isinstance(v, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in v):
                return {k: self.enc(x) for k, x in v.items()}
            return {"__map__": [[self.enc(k), self.enc(x)] for k, x in v.items()]}
        path = _path(type(v))
        if path in _DICT_TYPES:
            return {"__obj__": path, "dict": self.enc(v.to_dict())}
        if _is_model(v):
            return {"__model__": self.enc(v.to_dict())}
        if path in _DATACLASSES and dataclasses.is_dataclass(v):
            stored = getattr(v, "_stored_fields", None)  # a class may store a field in another form
            fields = stored() if stored else {f.name: getattr(v, f.name) for f in dataclasses.fields(v) if f.init}
            return {"__obj__": path, "fields": {k: self.enc(x) for k, x in fields.items()}}
        raise CodecError(f"{self.what}: a {type(v).__name__} cannot be stored in a workspace; store plain data "
                         f"(numbers, text, lists, dicts), tables, arrays or a registered type")

    def frame(self, df: Any) -> dict:
        cols = list(df.columns)
        out: dict[str, Any] = {}
        if not all(isinstance(c, str) for c in cols):
            out["columns"] = [self.enc(c) for c in cols]
            df = df.set_axis([f"c{i}" for i in range(len(cols))], axis=1)
        import pyarrow as pa

        buf = io.BytesIO()
        try:
            df.to_parquet(buf, index=None, compression="zstd")
        except (pa.ArrowException, ValueError, TypeError) as e:  # mixed-type object columns and the like
            raise CodecError(f"{self.what}: a table cannot be stored as Parquet ({type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''}); give each column one type") from None
        out["__frame__"] = self.part("t", "parquet", buf.getvalue())
        return out


def encode(value: Any, what: str = "value") -> tuple[str, bytes]:
    """``(format, bytes)`` of *value* (see the module docstring)."""
    enc = _Encoder(what)
    doc = json.dumps(enc.enc(value), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    if not enc.parts:
        return "json", doc
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in [("value.json", doc), *sorted(enc.parts.items())]:
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_STORED if name.endswith(".parquet") else zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return "zip", buf.getvalue()


def decode(fmt: str, data: bytes, what: str = "value") -> Any:
    """The value :func:`encode` stored."""
    try:
        if fmt == "json":
            return _Decoder({}, what).dec(json.loads(data))
        if fmt == "zip":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                parts = {n: zf.read(n) for n in zf.namelist()}
            return _Decoder(parts, what).dec(json.loads(parts.pop("value.json")))
    except GpudseError:
        raise
    except Exception as e:  # noqa: BLE001 - stored bytes are data: any failure to rebuild them (a forged value
        # whose fields make a constructor raise AttributeError, a truncated .npy) is damage, named as such
        text = str(e).splitlines()[0][:200] if str(e) else ""
        raise CodecError(f"{what}: the stored value cannot be read ({type(e).__name__}: {text}); compute it again") \
            from None
    raise CodecError(f"{what}: unknown storage format {fmt!r}")


class _Decoder:
    def __init__(self, parts: dict[str, bytes], what: str):
        self.parts = parts
        self.what = what

    def dec(self, v: Any) -> Any:
        if isinstance(v, list):
            return [self.dec(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "__float__" in v:
            return float(v["__float__"])
        if "__frame__" in v:
            return self.frame(v)
        if "__series__" in v:
            s = self.frame(v["__series__"])["value"]
            s.name = self.dec(v["name"])
            return s
        if "__array__" in v:
            import numpy as np

            return np.load(io.BytesIO(self.parts[v["__array__"]]), allow_pickle=False)
        if "__objects__" in v:
            import numpy as np

            items = [self.dec(x) for x in v["__objects__"]]
            arr = np.empty(len(items), dtype=object)
            arr[:] = items
            return arr.reshape(v["shape"])
        if "__tuple__" in v:
            return tuple(self.dec(x) for x in v["__tuple__"])
        if "__map__" in v:
            return {_hashable(self.dec(k)): self.dec(x) for k, x in v["__map__"]}
        if "__model__" in v:
            return load_model(self.dec(v["__model__"]), source=self.what)
        if "__obj__" in v:
            return self.obj(v)
        return {k: self.dec(x) for k, x in v.items()}

    def frame(self, v: dict) -> Any:
        import pandas as pd

        from ..dataio import parquet_source

        df = pd.read_parquet(parquet_source(self.parts[v["__frame__"]]))
        if "columns" in v:
            df.columns = [self.dec(c) for c in v["columns"]]
        return df

    def obj(self, v: dict) -> Any:
        path = v["__obj__"]
        if path in _DICT_TYPES:
            mod, fn = _DICT_TYPES[path].split(":")
            return getattr(importlib.import_module(mod), fn)(self.dec(v["dict"]), source=self.what)
        if path not in _DATACLASSES:
            raise CodecError(f"{self.what}: stored type {path} is not one a workspace may rebuild")
        mod, _, name = path.rpartition(".")
        cls = getattr(importlib.import_module(mod), name)
        renamed = getattr(cls, "_RENAMED_FIELDS", {})  # values stored by an earlier version under another name
        try:
            return cls(**{renamed.get(k, k): self.dec(x) for k, x in v["fields"].items()})
        except TypeError as e:
            raise CodecError(f"{self.what}: stored {name} does not match this version of gpudse ({e}); compute it "
                             f"again") from None


def _hashable(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k
