"""Helpers shared by the command modules: argument types and table output. Imports nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import GpudseError

PLAIN_EVERY_S = 10.0  # when stderr is not a terminal (a log file, a batch job): a progress line this often


def write_table(table: Any, out: Path, precision: int | None = None) -> None:
    """Write a DataFrame as CSV, Parquet or JSON records according to the file's suffix; CSV through
    the one CSV writer (space.sampling.write_csv), its floats at *precision* (``--precision``); whole
    or not at all (:mod:`gpudse_core.atomicfile`)."""
    from ..atomicfile import replacing

    with replacing(out) as tmp:
        if out.suffix.lower() == ".parquet":
            table.to_parquet(tmp, index=False)
        elif out.suffix.lower() == ".json":
            tmp.write_text(table.to_json(orient="records"), encoding="utf-8")
        else:
            from ..csvout import write_frame

            write_frame(table, tmp, precision)  # formula-like text cells neutralised


def precision_arg(text: str) -> int | None:
    """``--precision auto`` (None: the data's own precision) or significant digits (1-17)."""
    from ..report.fmt import csv_precision

    try:
        return csv_precision(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).replace("--precision ", "")) from None


def add_precision(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--precision", type=precision_arg, default=None, metavar="auto|DIGITS",
                        help="CSV numbers: auto (default) keeps values the data wrote in up to 12 digits exactly "
                             "and writes computed ones to 7 significant digits; or a number of significant digits")


def writable(path: str, suffixes: tuple[str, ...] = (".csv", ".parquet", ".json", ".yaml", ".yml")) -> Path:
    p = Path(path)
    if p.is_dir():
        raise GpudseError(f"{p} is a directory; give a file name such as {p / 'samples.csv'}")
    if not p.parent.exists():
        raise GpudseError(f"{p}: the folder {p.parent} does not exist; create it first")
    if p.suffix.lower() not in suffixes:
        raise GpudseError(f"{p}: unknown file type {p.suffix!r}; use {', '.join(suffixes)}")
    return p


def knots_arg(text: str) -> int | dict:
    """``4`` or ``4,simd=3,blk=5``: a default and per-parameter numbers of knots."""
    default, per = 4, {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, value = part.rpartition("=")
        try:
            k = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part[:40]!r}: give a number of knots, e.g. 4 or simd=3") from None
        if name:
            per[name.strip()] = k
        else:
            default = k
    return {"__default__": default, **per} if per else default


def scale_arg(text: str) -> str | dict:
    """``auto``, ``linear`` or ``auto,threads=log2,tile=linear``: a default and per-parameter scales."""
    from ..choices import SCALE_MODES, SCALES

    default, per = "auto", {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, value = part.rpartition("=")
        value = value.strip().lower()
        if name:
            if value not in SCALES:
                raise argparse.ArgumentTypeError(f"{part!r}: the scale of a parameter is {' or '.join(SCALES)}")
            per[name.strip()] = value
        elif value in SCALE_MODES:
            default = value
        else:
            raise argparse.ArgumentTypeError(f"{part!r}: give auto or linear, then param=log2 or param=linear")
    return {"__default__": default, **per} if per else default


def nonnegative_int(text: str) -> int:
    """A whole number ≥ 0 (seeds, retries)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is negative")
    return v


def count_arg(text: str) -> int:
    """A whole number ≥ 1 (points, repeats, workers, clusters …)."""
    v = nonnegative_int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give a whole number of at least 1")
    return v


def fraction(text: str) -> float:
    """``0.001`` or ``0.1%``: a finite number (the range (0, 1] is checked where it is used)."""
    import math

    try:
        v = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number (e.g. 0.001 or 0.1%)") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a finite number (e.g. 0.001 or 0.1%)")
    return v


def positive_number(text: str) -> float:
    """A finite number above zero (e.g. a size in MB)."""
    import math

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give a finite number above zero")
    return v


MAX_SIZE = 1 << 16


def size_arg(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` with each side a whole number from 1 to 65,536."""
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: write a size as WIDTHxHEIGHT, e.g. 32x2") from None
    if not (1 <= w <= MAX_SIZE and 1 <= h <= MAX_SIZE):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: each side must be a whole number from 1 to {MAX_SIZE:,}")
    return w, h


class Progress:
    """One progress line on stderr: rewritten in place on a terminal; in a log (stderr not a terminal)
    a plain line every PLAIN_EVERY_S seconds and at the end, without carriage returns or escapes."""

    def __init__(self) -> None:
        import sys

        self.tty = sys.stderr.isatty()
        self.last = float("-inf")
        self.shown = False

    def __call__(self, text: str, done: bool = False) -> None:
        import sys
        import time

        if self.tty:
            print(f"\r  {text}\033[K", end="\n" if done else "", file=sys.stderr, flush=True)
            self.shown = not done
            return
        now = time.monotonic()
        if done or now - self.last >= PLAIN_EVERY_S:
            self.last = now
            print(f"  {text}", file=sys.stderr, flush=True)

    def end(self) -> None:
        """Close a line left open on a terminal."""
        import sys

        if self.tty and self.shown:
            print(file=sys.stderr)
            self.shown = False


def default_params(columns: Any, response: str, space: str | None = None, app_column: str | None = None,
                   ) -> tuple[list[str] | None, str]:
    """The parameter columns when ``--params`` is not given, and a note saying which were taken: the
    space's parameters with ``--space``, else every other column but simulator outputs and gpudse's own."""
    from ..choices import OUTPUT_NAMES, RESERVED_NAMES

    cols = [str(c) for c in columns]
    if response not in cols:  # the fit's own error names the response and the columns
        return None, ""
    if space:
        from ..space.presets import load_space

        names = list(load_space(space).parameter_names)
        missing = [p for p in names if p not in cols]
        if missing:
            raise GpudseError(f"the data lack parameter column(s) {', '.join(missing[:8])} of {space}; pass --params")
        return names, f"parameters: the {len(names)} of {space}"
    left = [c for c in cols if c != response and c != app_column and (c in OUTPUT_NAMES or c in RESERVED_NAMES)]
    params = [c for c in cols if c != response and c != app_column and c not in left]
    note = f"parameters: {', '.join(params)} (every other column; pass --params to choose)"
    if left:
        note += f"; left out as simulator outputs: {', '.join(left)}"
    return params, note
