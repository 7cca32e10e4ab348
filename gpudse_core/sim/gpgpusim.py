"""GPGPU-Sim-family output and configuration files (GPGPU-Sim, Accel-Sim, Vulkan-Sim).

One implementation, used by simulation campaigns and by the Zatel ray-tracing workflow.

Logs: :func:`parse_log` reads a simulator's stdout (plain or ``.gz``) as a stream: memory stays
bounded whatever the log's size (lines longer than 1 MiB are cut), and at most ``limits.log_bytes``
(decompressed) are read, and a ``.gz`` that expands more than ``limits.log_gzip_ratio`` times (checked
from 16 MiB on; real logs compress about 10×) is refused, so a gzipped log bomb stops with a clear
error within seconds (a parse costs 6–40 MB/s of log, so 4 GiB from a few MB would take minutes). Each kernel's
statistics start
at ``kernel_name = …``; the metrics read are ``gpu_sim_cycle``, ``gpu_tot_sim_cycle``,
``gpu_sim_insn``, ``gpu_tot_sim_insn``, ``gpu_ipc``, ``gpu_tot_ipc``, ``L1D_total_cache_miss_rate``,
``L2_total_cache_miss_rate``, ``bwutil`` and ``dram_eff`` (printed once per memory channel: averaged),
``rt_avg_efficiency``, and any user-supplied regular expression with one group. For a series of
kernels the runtime is the total across kernels (Stargazer §6.2): ``cycles`` = Σ gpu_sim_cycle,
``insn`` = Σ gpu_sim_insn, ``ipc`` = insn / cycles; rate metrics are taken from the last kernel's
dump (GPGPU-Sim's ``*_total_*`` counters are cumulative).

User regular expressions (``extra_metrics`` of a backend) are compiled with RE2 (linear time: no
catastrophic backtracking; no look-around or back-references), at most ``limits.regex_length``
characters, and matched line by line (``^`` and ``$`` are line ends; a match never spans lines); the
last match in the output is kept.

Truncated output. A run's captured output keeps its head and tail when it is longer than
``limits.sim_output_bytes`` (:mod:`gpudse_core.sim.supervise`) and marks the dropped middle. Kernels
whose statistics were dropped cannot be summed, so in a truncated log ``cycles`` and ``insn`` are the
last dump's cumulative ``gpu_tot_sim_cycle`` and ``gpu_tot_sim_insn`` (equal to the sums for
GPGPU-Sim), ``kernels`` is not reported, and user metrics count only matches after the marker.

Configs: :class:`GpgpuSimConfig` keeps every line of a ``-option value  # comment`` file; changing an
option rewrites only its value (and optionally appends a comment), so everything else stays
byte-for-byte identical. When an option appears twice, the last occurrence (the one GPGPU-Sim uses)
is read and changed. Lines are split without regular expressions (linear time on any line); a
config file is read up to ``limits.document_bytes``.
"""

from __future__ import annotations

import gzip
import math
import re
import zlib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping

from .. import limits
from ..errors import GpudseError
from .supervise import TRUNCATION_MARK

METRICS = ("gpu_sim_cycle", "gpu_tot_sim_cycle", "gpu_sim_insn", "gpu_tot_sim_insn", "gpu_ipc", "gpu_tot_ipc",
           "L1D_total_cache_miss_rate", "L2_total_cache_miss_rate", "bwutil", "dram_eff", "rt_avg_efficiency")
DERIVED = ("cycles", "insn", "ipc", "kernels")
PER_CHANNEL = ("bwutil", "dram_eff")
_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_SP = r"[^\S\n]*"  # spaces within a line
# candidates first (a plain alternation of literals: the regex engine scans for them quickly), then their context
_NAMES = re.compile("|".join(sorted(map(re.escape, (*METRICS, "kernel_name")), key=len, reverse=True)))
_VALUE = re.compile(rf"{_SP}={_SP}{_NUM}")
_KERNEL_VALUE = re.compile(rf"{_SP}={_SP}(\S+)")
KEEP_KERNELS = 1000  # kernels whose statistics a SimLog keeps (totals cover all)
RE2_MEMORY = 1 << 20  # bytes one compiled user pattern may use (a bigger program is refused)
_DROPPED = re.compile(re.escape(TRUNCATION_MARK) + r" (\d+) bytes")
CHUNK = 1 << 20  # bytes read at a time
MAX_LINE = 1 << 20  # a longer line is cut into pieces (no statistic is that long)
RATIO_AFTER = 16 << 20  # decompressed bytes after which a .gz's expansion ratio is checked (log_gzip_ratio)


class ParseError(GpudseError):
    """Simulator output without the expected metrics, or an unreadable file."""


@dataclass
class KernelStats:
    name: str
    metrics: dict[str, float] = field(default_factory=dict)
    channels: dict[str, list[float]] = field(default_factory=dict)  # per-channel metric -> [sum, count]


@dataclass
class SimLog:
    """Per-kernel statistics of one simulator run and its totals.

    ``kernels`` keeps the last :data:`KEEP_KERNELS` kernels; ``count`` and ``sums`` (Σ gpu_sim_cycle,
    Σ gpu_sim_insn) cover every kernel, so a log of millions of kernels costs bounded memory.
    """

    kernels: list[KernelStats]
    extra: dict[str, float] = field(default_factory=dict)
    source: str = ""
    dropped: int = 0  # bytes of output dropped from the middle (0: the log is complete)
    count: int | None = None  # kernels in the log (default: len(kernels))
    sums: dict[str, float] | None = None  # over all kernels (default: over ``kernels``)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def totals(self) -> dict[str, float]:
        """Runtime totals across kernels and the last kernel's rate metrics (see the module docstring)."""
        out: dict[str, float] = {}
        if not self.kernels:
            return dict(self.extra)
        last = self.kernels[-1]
        if self.truncated:  # dropped kernels cannot be summed: GPGPU-Sim's cumulative counters can
            sums = {m: last.metrics[t] for m, t in (("gpu_sim_cycle", "gpu_tot_sim_cycle"),
                                                    ("gpu_sim_insn", "gpu_tot_sim_insn")) if t in last.metrics}
        elif self.sums is not None:
            sums = self.sums
        else:
            sums = _sums(self.kernels)
        cyc, ins = sums.get("gpu_sim_cycle"), sums.get("gpu_sim_insn")
        if cyc is not None:
            out["cycles"] = float(cyc)
        if ins is not None:
            out["insn"] = float(ins)
        if cyc is not None and ins is not None and cyc > 0:
            out["ipc"] = float(ins) / float(cyc)
        for m in METRICS:
            if m in last.metrics:
                out[m] = last.metrics[m]
        if not self.truncated:
            out["kernels"] = float(self.count if self.count is not None else len(self.kernels))
        out.update(self.extra)
        return out

    def require(self, metrics: list[str] | tuple[str, ...]) -> dict[str, float]:
        t = self.totals()
        missing = [m for m in metrics if m not in t]
        if missing:
            found = ", ".join(sorted(t)) or "nothing"
            why = (f"; the output was truncated ({self.dropped:,} bytes dropped from the middle, limit "
                   f"sim_output_bytes), raise the limit or make the simulator less verbose") if self.truncated \
                else "; did the simulation finish?"
            raise ParseError(f"{self.source or 'simulator output'}: no {', '.join(missing)} in the output "
                             f"(found: {found}){why}")
        return t


# ---- user regular expressions (RE2) -------------------------------------------------------------------
def compile_patterns(extra: Mapping[str, str] | None, where: str = "") -> dict[str, Any]:
    """Compile ``extra_metrics`` patterns with RE2 (linear time), each with one group for the number."""
    import re2

    out = {}
    lim = limits.current()
    for name, pattern in (extra or {}).items():
        label = f"{where}metric {name!r}"
        if not isinstance(pattern, str) or not pattern:
            raise ParseError(f"{label}: give a regular expression (a non-empty string)")
        lim.check("regex_length", len(pattern), f"{label}: a regular expression of {len(pattern):,} characters",
                  "a metric's pattern is one short line")
        opts = re2.Options()
        opts.log_errors = False
        opts.never_nl = True  # matched line by line, whatever the chunking
        opts.max_mem = RE2_MEMORY  # per pattern (re2 caches 128 compiled patterns: at most 128 MiB)
        try:
            rx = re2.compile("(?m)" + pattern, opts)
        except re2.error as e:
            msg = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
            raise ParseError(f"{label}: the regular expression {pattern!r} is invalid or unsupported ({msg}); "
                             f"patterns use RE2 syntax (no look-around, no back-references)") from None
        if rx.groups != 1:
            raise ParseError(f"{label}: the regular expression {pattern!r} has {rx.groups} groups; give exactly one "
                             f"(group) around the number, and (?:…) for any other grouping")
        out[name] = rx
    return out


# ---- reading ----------------------------------------------------------------------------------------
def _open(p: Path) -> IO[bytes]:
    try:
        return gzip.open(p, "rb") if p.suffix == ".gz" else open(p, "rb")
    except FileNotFoundError:
        raise ParseError(f"{p}: no such file") from None
    except OSError as e:
        raise ParseError(f"{p}: cannot be read ({e.strerror or e})") from None


def _stream(fh: IO[bytes], name: str, limit_name: str) -> Iterator[bytes]:
    """Chunks of a (possibly gzipped) file, refusing more than the limit *limit_name* decompressed."""
    lim = limits.current()
    total = 0
    try:
        while True:
            data = fh.read(CHUNK)
            if not data:
                return
            total += len(data)
            if total > getattr(lim, limit_name):
                lim.check(limit_name, total, f"{name}: more than {getattr(lim, limit_name):,} bytes "
                          f"(decompressed)", "is it the right file, or a compressed bomb?")
            raw = getattr(fh, "fileobj", None)  # a gzip stream: how far into the compressed file
            if raw is not None and total >= RATIO_AFTER:
                ratio = total / max(raw.tell(), 1)
                if ratio > lim.log_gzip_ratio:
                    lim.check("log_gzip_ratio", ratio, f"{name}: {total:,} bytes decompressed from "
                              f"{raw.tell():,}: a ratio of {ratio:,.0f}",
                              "simulator logs compress about 10x; a file that expands this much is a "
                              "compressed bomb, or decompress it yourself and pass the plain log")
            yield data
    except (OSError, EOFError, zlib.error) as e:
        raise ParseError(f"{name}: cannot be read ({e})") from None


def _blocks(chunks: Iterator[bytes]) -> Iterator[str]:
    """Whole lines, a block at a time (lines over MAX_LINE are cut), decoded as UTF-8 (errors replaced)."""
    rest = b""
    for data in chunks:
        buf = rest + data if rest else data
        cut = buf.rfind(b"\n") + 1
        if cut == 0 and len(buf) <= MAX_LINE:
            rest = buf
            continue
        if cut == 0 or len(buf) - cut > MAX_LINE:
            cut = len(buf)
        rest = buf[cut:]
        yield buf[:cut].decode("utf-8", errors="replace")
    if rest:
        yield rest.decode("utf-8", errors="replace")


def _text_blocks(text: str) -> Iterator[str]:
    """Whole lines of *text*, about CHUNK characters at a time (lines over MAX_LINE are cut)."""
    i, n = 0, len(text)
    while i < n:
        cut = text.rfind("\n", i, i + CHUNK) + 1
        if cut <= i:  # no line ends within CHUNK: the line ends later, or is cut at MAX_LINE
            cut = text.find("\n", i + CHUNK, i + MAX_LINE) + 1 or min(n, i + MAX_LINE)
        yield text[i:cut]
        i = cut


def read_text(path: str | Path, limit_name: str = "document_bytes") -> str:
    """A whole (optionally gzipped) text file, up to the limit *limit_name* (configs, not logs)."""
    p = Path(path)
    with _open(p) as fh:
        data = b"".join(_stream(fh, str(p), limit_name))
    return data.decode("utf-8", errors="replace")


def parse_log(source: str | Path, extra: Mapping[str, str] | None = None, text: str | None = None) -> SimLog:
    """Parse simulator output from a path (``.gz`` allowed) or from *text*, as a stream.

    *extra* maps names to regular expressions with one capture group for a number; the last match
    in the output is kept (e.g. ``{"rays": r"total_rays\\s*=\\s*(\\d+)"}``).
    """
    name = str(source) if text is None else (str(source) or "output")
    extra_re = compile_patterns(extra)
    parser = _LogParser(extra_re, name)
    if text is not None:
        limits.check("log_bytes", len(text), f"{name}: output of {len(text):,} characters")
        parser.feed_all(_text_blocks(text))
    else:
        p = Path(source)
        with _open(p) as fh:
            parser.feed_all(_blocks(_stream(fh, name, "log_bytes")))
    return parser.result(name)


def _sums(kernels: Iterable[KernelStats]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in kernels:
        for m in ("gpu_sim_cycle", "gpu_sim_insn"):
            if m in k.metrics:
                out[m] = out.get(m, 0) + k.metrics[m]
    return out


class _LogParser:
    """Statistics of a log fed a block of whole lines at a time; memory bounded (see :class:`SimLog`)."""

    def __init__(self, extra_re: Mapping[str, Any], name: str = "output"):
        self.extra_re = extra_re
        self.name = name
        self.statistics = 0
        self.statistics_limit = limits.current().log_statistics
        self.kernels: deque[KernelStats] = deque(maxlen=KEEP_KERNELS)
        self.current: KernelStats | None = None
        self.count = 0
        self.sums: dict[str, float] = {}
        self.extras: dict[str, str] = {}
        self.dropped = 0

    def feed_all(self, blocks: Iterable[str]) -> None:
        for block in blocks:
            start = 0
            while True:
                at = block.find(TRUNCATION_MARK, start)
                while at > 0 and block[at - 1] != "\n":  # the marker starts a line
                    at = block.find(TRUNCATION_MARK, at + 1)
                if at < 0:
                    self._feed(block[start:] if start else block)
                    break
                self._feed(block[start:at])
                end = block.find("\n", at)
                start = len(block) if end < 0 else end + 1
                m = _DROPPED.match(block, at)
                self.dropped += int(m.group(1)) if m and len(m.group(1)) < 19 else 1
                # statistics after the gap belong to a kernel whose header may have been dropped
                self._start(KernelStats("(after dropped output)"))
                self.extras.clear()  # an earlier match may not be the last one any more

    def _start(self, kernel: KernelStats | None) -> None:
        k = self.current
        if k is not None:
            for m, (total, n) in k.channels.items():
                k.metrics[m] = total / n
            for m in ("gpu_sim_cycle", "gpu_sim_insn"):
                if m in k.metrics:
                    self.sums[m] = self.sums.get(m, 0) + k.metrics[m]
            if k.metrics or not k.name.startswith("("):
                self.kernels.append(k)
        self.current = kernel

    def _feed(self, block: str) -> None:
        if not block:
            return
        for k, rx in self.extra_re.items():
            last = None
            for m in rx.finditer(block):
                if m.group(1):  # an empty group carries no number
                    last = m
            if last is not None:
                self.extras[k] = last.group(1)
        hits = 0
        for hit in _NAMES.finditer(block):
            hits += 1
            at, name = hit.start(), hit.group()
            before = block[at - 1] if at else "\n"
            if name == "kernel_name":  # a header starts a line
                val = _KERNEL_VALUE.match(block, hit.end()) if before == "\n" else None
                if val is not None:
                    self.count += 1
                    self._start(KernelStats(val.group(1)))
                continue
            k = self.current
            if k is None or not before.isspace():  # a metric starts a line or follows a space
                continue
            val = _VALUE.match(block, hit.end())
            if val is None:
                continue
            after = block[val.end():val.end() + 1]
            if after and not after.isspace():  # 1,234,567 or 1.5e3.7: not a number GPGPU-Sim writes
                text = _KERNEL_VALUE.match(block, hit.end())
                raise ParseError(f"{self.name}: {name} = "
                                 f"{(text.group(1) if text else '')[:40]!r} is not a number as GPGPU-Sim writes them "
                                 f"(digits, a '.', an exponent; no thousands separators); check the log")
            v = float(val.group(1))
            if not math.isfinite(v):  # 1e999: not a statistic
                continue
            if name in PER_CHANNEL:
                acc = k.channels.setdefault(name, [0.0, 0])
                acc[0] += v
                acc[1] += 1
            else:
                k.metrics[name] = v
        # Each statistic costs Python work (~3 µs): their number, not the bytes, bounds the time.
        self.statistics += hits
        if self.statistics > self.statistics_limit:
            limits.check("log_statistics", self.statistics, f"{self.name}: statistic lines",
                         "a GPGPU-Sim log has about 80 per kernel; is it the right file?")

    def result(self, name: str) -> SimLog:
        self._start(None)
        extras = {}
        for k, v in self.extras.items():
            try:
                extras[k] = float(v)
            except (TypeError, ValueError):
                raise ParseError(f"{name}: metric {k!r}: matched {v!r}, which is not a number") from None
            if not math.isfinite(extras[k]):  # 'nan', 'inf': as the built-in statistics, not a value to show
                raise ParseError(f"{name}: metric {k!r}: matched {v!r}, which is not a number a statistic can "
                                 f"have (NaN or infinite); check the metric's pattern")
        return SimLog(list(self.kernels), extras, name, self.dropped, self.count, dict(self.sums))


# ---- config files -------------------------------------------------------------------------------


def _split(line: str) -> tuple[str, str, str, str, str, str | None] | None:
    """``(lead, option, separator, value, space, comment)`` of an option line, else None.

    The grammar of ``^(\\s*)(-\\S+)(\\s+)([^#\\n]*?)(\\s*)(#.*)?$`` without a regular expression,
    so that a pathological line costs linear time.
    """
    if "\n" in line:
        return None
    n = len(line)
    i = 0
    while i < n and line[i].isspace():
        i += 1
    if i >= n or line[i] != "-":
        return None
    j = i + 1
    while j < n and not line[j].isspace():
        j += 1
    if j == i + 1 or j >= n:
        return None  # "-" alone, or no separator after the option
    k = j
    while k < n and line[k].isspace():
        k += 1
    hash_at = line.find("#", k)
    before = line[k:] if hash_at < 0 else line[k:hash_at]
    value = before.rstrip()
    # str.rstrip() strips what str.isspace() calls space, as \s does
    return line[:i], line[i:j], line[j:k], value, before[len(value):], (None if hash_at < 0 else line[hash_at:])


@dataclass
class GpgpuSimConfig:
    """A GPGPU-Sim config file as lines; options can be read and changed without touching the rest."""

    lines: list[str]  # text.split(newline): a final "" means the file ends with a newline
    newline: str = "\n"

    @classmethod
    def parse(cls, text: str) -> "GpgpuSimConfig":
        newline = "\r\n" if "\r\n" in text else "\n"
        return cls(text.split(newline), newline)

    @classmethod
    def load(cls, path: str | Path) -> "GpgpuSimConfig":
        return cls.parse(read_text(path))

    def to_text(self) -> str:
        return self.newline.join(self.lines)

    def save(self, path: str | Path) -> None:
        from ..atomicfile import write_text

        write_text(path, self.to_text())  # whole or not at all (newlines as the file had them)

    def _find(self, option: str) -> int | None:
        name = option if option.startswith("-") else "-" + option
        hit = None
        for i, line in enumerate(self.lines):
            m = _split(line)
            if m and m[1] == name:
                hit = i
        return hit

    def options(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in self.lines:
            m = _split(line)
            if m:
                out[m[1]] = m[3]
        return out

    def get(self, option: str) -> str | None:
        i = self._find(option)
        return None if i is None else _split(self.lines[i])[3]

    def set(self, option: str, value: Any, comment: str | None = None) -> None:
        """Change (or append) an option; only the value — and, if given, the comment — change."""
        text = str(value).strip()
        if not text or any(c in text for c in "\n\r#"):
            raise GpudseError(f"option {option}: the value {str(value)!r} must be one line without '#'")
        name = option if option.startswith("-") else "-" + option
        if len(name) < 2 or "#" in name or any(c.isspace() for c in name):
            raise GpudseError(f"option {option!r}: an option name is one word without '#' (e.g. -gpgpu_n_clusters)")
        i = self._find(name)
        if i is None:
            new = f"{name} {text}" + (f" # {comment}" if comment else "")
            if self.lines and self.lines[-1] == "":
                self.lines.insert(len(self.lines) - 1, new)
            else:
                self.lines.append(new)
            return
        lead, opt, sep, _, space, old_comment = _split(self.lines[i])
        new_comment = f"# {comment}" if comment else (old_comment or "")
        space = space if space else (" " if new_comment else "")
        self.lines[i] = f"{lead}{opt}{sep}{text}{space if new_comment else ''}{new_comment}"
