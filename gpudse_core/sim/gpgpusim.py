"""GPGPU-Sim-family output and configuration files (GPGPU-Sim, Accel-Sim, Vulkan-Sim).

One implementation, used by simulation campaigns and by the Zatel ray-tracing workflow.

Logs: :func:`parse_log` reads a simulator's stdout (plain or ``.gz``). Each kernel's statistics start
at ``kernel_name = …``; the metrics read are ``gpu_sim_cycle``, ``gpu_tot_sim_cycle``,
``gpu_sim_insn``, ``gpu_ipc``, ``gpu_tot_ipc``, ``L1D_total_cache_miss_rate``,
``L2_total_cache_miss_rate``, ``bwutil`` and ``dram_eff`` (printed once per memory channel: averaged),
``rt_avg_efficiency``, and any user-supplied regular expression with one group. For a series of
kernels the runtime is the total across kernels (Stargazer §6.2): ``cycles`` = Σ gpu_sim_cycle,
``insn`` = Σ gpu_sim_insn, ``ipc`` = insn / cycles; rate metrics are taken from the last kernel's
dump (GPGPU-Sim's ``*_total_*`` counters are cumulative).

Configs: :class:`GpgpuSimConfig` keeps every line of a ``-option value  # comment`` file; changing an
option rewrites only its value (and optionally appends a comment), so everything else stays
byte-for-byte identical. When an option appears twice, the last occurrence (the one GPGPU-Sim uses)
is read and changed.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import GpudseError

METRICS = ("gpu_sim_cycle", "gpu_tot_sim_cycle", "gpu_sim_insn", "gpu_ipc", "gpu_tot_ipc",
           "L1D_total_cache_miss_rate", "L2_total_cache_miss_rate", "bwutil", "dram_eff", "rt_avg_efficiency")
PER_CHANNEL = ("bwutil", "dram_eff")
_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_PATTERNS = {m: re.compile(rf"(?:^|\s){re.escape(m)}\s*=\s*{_NUM}") for m in METRICS}
_KERNEL = re.compile(r"^kernel_name\s*=\s*(\S+)")


class ParseError(GpudseError):
    """Simulator output without the expected metrics, or an unreadable file."""


@dataclass
class KernelStats:
    name: str
    metrics: dict[str, float] = field(default_factory=dict)
    channels: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class SimLog:
    """Per-kernel statistics of one simulator run and its totals."""

    kernels: list[KernelStats]
    extra: dict[str, float] = field(default_factory=dict)
    source: str = ""

    def totals(self) -> dict[str, float]:
        """Runtime totals across kernels and the last kernel's rate metrics."""
        out: dict[str, float] = {}
        if not self.kernels:
            return dict(self.extra)
        cyc = [k.metrics["gpu_sim_cycle"] for k in self.kernels if "gpu_sim_cycle" in k.metrics]
        ins = [k.metrics["gpu_sim_insn"] for k in self.kernels if "gpu_sim_insn" in k.metrics]
        if cyc:
            out["cycles"] = float(sum(cyc))
        if ins:
            out["insn"] = float(sum(ins))
        if cyc and ins and sum(cyc) > 0:
            out["ipc"] = float(sum(ins)) / float(sum(cyc))
        last = self.kernels[-1]
        for m in METRICS:
            if m in last.metrics:
                out[m] = last.metrics[m]
        out["kernels"] = float(len(self.kernels))
        out.update(self.extra)
        return out

    def require(self, metrics: list[str] | tuple[str, ...]) -> dict[str, float]:
        t = self.totals()
        missing = [m for m in metrics if m not in t]
        if missing:
            found = ", ".join(sorted(t)) or "nothing"
            raise ParseError(f"{self.source or 'simulator output'}: no {', '.join(missing)} in the output "
                             f"(found: {found}); did the simulation finish?")
        return t


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        if p.suffix == ".gz":
            with gzip.open(p, "rt", encoding="utf-8", errors="replace") as f:
                return f.read()
        return p.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ParseError(f"{p}: no such file") from None
    except (OSError, EOFError) as e:
        raise ParseError(f"{p}: cannot be read ({e})") from None


def parse_log(source: str | Path, extra: Mapping[str, str] | None = None, text: str | None = None) -> SimLog:
    """Parse simulator output from a path (``.gz`` allowed) or from *text*.

    *extra* maps names to regular expressions with one capture group for a number; the last match
    in the output is kept (e.g. ``{"rays": r"total_rays\\s*=\\s*(\\d+)"}``).
    """
    name = str(source) if text is None else (str(source) or "output")
    body = read_text(source) if text is None else text
    extra_re = {}
    for k, pattern in (extra or {}).items():
        try:
            rx = re.compile(pattern, re.M)
        except re.error as e:
            raise ParseError(f"metric {k!r}: the regular expression {pattern!r} is invalid ({e})") from None
        if rx.groups < 1:
            raise ParseError(f"metric {k!r}: the regular expression {pattern!r} needs one (group) for the number")
        extra_re[k] = rx
    kernels: list[KernelStats] = []
    current: KernelStats | None = None
    for line in body.splitlines():
        km = _KERNEL.match(line)
        if km:
            current = KernelStats(km.group(1))
            kernels.append(current)
            continue
        if current is None or "=" not in line:
            continue
        for m, rx in _PATTERNS.items():
            hit = rx.search(line)
            if hit:
                try:
                    v = float(hit.group(1))
                except ValueError:
                    continue
                if m in PER_CHANNEL:
                    current.channels.setdefault(m, []).append(v)
                else:
                    current.metrics[m] = v
    for k in kernels:
        for m, vals in k.channels.items():
            k.metrics[m] = sum(vals) / len(vals)
    extras = {}
    for k, rx in extra_re.items():
        found = rx.findall(body)
        if found:
            v = found[-1][0] if isinstance(found[-1], tuple) else found[-1]
            try:
                extras[k] = float(v)
            except ValueError:
                raise ParseError(f"metric {k!r}: matched {v!r}, which is not a number") from None
    return SimLog(kernels, extras, name)


# ---- config files -------------------------------------------------------------------------------
_OPT = re.compile(r"^(\s*)(-\S+)(\s+)([^#\n]*?)(\s*)(#.*)?$")


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
        Path(path).write_text(self.to_text(), encoding="utf-8", newline="")

    def _find(self, option: str) -> int | None:
        name = option if option.startswith("-") else "-" + option
        hit = None
        for i, line in enumerate(self.lines):
            m = _OPT.match(line)
            if m and m.group(2) == name:
                hit = i
        return hit

    def options(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in self.lines:
            m = _OPT.match(line)
            if m:
                out[m.group(2)] = m.group(4).strip()
        return out

    def get(self, option: str) -> str | None:
        i = self._find(option)
        return None if i is None else _OPT.match(self.lines[i]).group(4).strip()

    def set(self, option: str, value: Any, comment: str | None = None) -> None:
        """Change (or append) an option; only the value — and, if given, the comment — change."""
        text = str(value)
        if not text or "\n" in text or "#" in text:
            raise GpudseError(f"option {option}: the value {text!r} must be one line without '#'")
        name = option if option.startswith("-") else "-" + option
        i = self._find(name)
        if i is None:
            new = f"{name} {text}" + (f" # {comment}" if comment else "")
            if self.lines and self.lines[-1] == "":
                self.lines.insert(len(self.lines) - 1, new)
            else:
                self.lines.append(new)
            return
        m = _OPT.match(self.lines[i])
        lead, opt, sep, _, space, old_comment = m.groups()
        new_comment = f"# {comment}" if comment else (old_comment or "")
        space = space if space else (" " if new_comment else "")
        self.lines[i] = f"{lead}{opt}{sep}{text}{space if new_comment else ''}{new_comment}"
