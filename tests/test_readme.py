"""The documentation's examples are executed, not just displayed.

Every ``gpudse …`` (or ``python -m gpudse_core …``) command in a ```bash block of README.md or of a page
in ``docs/`` is run, in one temporary folder, as ``python -m gpudse_core`` from this checkout, and must
exit 0. New commands and new pages are picked up automatically. Commands run in reading order (README,
then the pages of :data:`DOC_ORDER`, then any other page by name), except that a command whose input
another command writes (``-o FILE``) runs after that command, so one page's output can feed another's
example.

Markers (a comment on the command's line, or on a comment line right above it):

* ``# not run: REASON`` — needs something a test machine does not have (GPGPU-Sim, a cluster); reported as
  skipped with the reason.
* ``# exit N`` — the documented exit status when it is not 0.
* ``# sets NAME`` — the last word of the command's first output line (e.g. the id ``gpudse workspace new``
  prints) replaces the placeholder NAME (e.g. ``ID``) in the commands after it.

Commands joined on one line with ``;`` or ``&&`` run one after the other. ``$GPUDSE_HOME`` points into the
temporary folder, so nothing is written to the home directory.

The commands run with ``OMP_NUM_THREADS=1``: on a machine shared with other work, scikit-learn's OpenMP
gradient boosting spins its threads (README's ``validate`` took 145 s per boosting model instead of 10 s
under load); the test checks that the commands work, not how fast.

The files a user would bring (a heatmap, a GPGPU-Sim config, simulator logs, an upload) are provided as
stand-ins: :data:`STAND_INS` says where each comes from; those from ``../shared`` make their commands skip
when it is absent. ``data/`` and ``docs/`` of the checkout are visible in the folder, as in a checkout.
"""

from __future__ import annotations

import gzip
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import ROOT, SHARED

ZATEL = SHARED / "data" / "zatel"
TIMEOUT = 600


def _copy(src: Path):
    return lambda dst: shutil.copyfile(src, dst)


def _gunzip(src: Path):
    def make(dst: Path) -> None:
        dst.write_bytes(gzip.decompress(src.read_bytes()))
    return make


def _png(src: Path):
    def make(dst: Path) -> None:
        from PIL import Image

        Image.open(src).save(dst)
    return make


# a README file name → (what stands in for the user's file, how to make it); None: from a README command
STAND_INS = {
    "heatmap.ppm": ("a real Zatel heatmap (../shared)", ZATEL / "heatmaps" / "wknd_path-tracer.ppm",
                    _copy(ZATEL / "heatmaps" / "wknd_path-tracer.ppm")),
    "heatmap.png": ("a real Zatel heatmap as PNG (../shared)", ZATEL / "heatmaps" / "ship_shadow.ppm",
                    _png(ZATEL / "heatmaps" / "ship_shadow.ppm")),
    "mobile_soc.config": ("the Mobile SoC GPGPU-Sim config (../shared)", ZATEL / "gpgpusim" / "mobile_soc.config",
                          _copy(ZATEL / "gpgpusim" / "mobile_soc.config")),
    "measured.csv": ("a complete measured tuning table, benchmark_hub's A100 convolution (../shared)",
                     SHARED / "data" / "benchmark_hub" / "convolution_A100.csv",
                     _copy(SHARED / "data" / "benchmark_hub" / "convolution_A100.csv")),
    "starchart.csv": ("Starchart's k-means table with runtime and wattage (../shared)",
                      SHARED / "data" / "starchart" / "kmeans.csv",
                      _copy(SHARED / "data" / "starchart" / "kmeans.csv")),
    **{f"group{i}.log": (f"a real Vulkan-Sim log of group {i} (../shared)",
                         ZATEL / "gpgpusim" / f"wknd_k4_group{i}_iter0.log.gz",
                         _gunzip(ZATEL / "gpgpusim" / f"wknd_k4_group{i}_iter0.log.gz")) for i in range(4)},
}
# a README file name that stands for another command's output (an upload is a results table)
SAME_AS = {"uploaded.csv": "results.csv"}


# the order a reader meets the pages in (README links them in this order); other pages follow by name
DOC_ORDER = ("README.md", "docs/cli.md", "docs/design-spaces.md", "docs/models.md", "docs/simulations.md",
             "docs/search.md", "docs/workspaces.md", "docs/raytracing.md", "docs/limits.md")


def doc_files() -> list[Path]:
    pages = sorted((ROOT / "docs").glob("*.md")) if (ROOT / "docs").is_dir() else []
    known = [ROOT / name for name in DOC_ORDER if (ROOT / name).exists()]
    return known + [p for p in pages if p not in known]


@dataclass
class Command:
    line: int
    text: str
    argv: list[str]
    skip: str | None = None
    exit: int = 0
    outputs: list[str] = field(default_factory=list)
    sets: str | None = None
    file: str = "README.md"

    @property
    def id(self) -> str:
        page = "" if self.file == "README.md" else f"{Path(self.file).stem}:"
        return f"{page}L{self.line}:" + " ".join(self.argv[:4])

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"


def readme_commands(text: str | None = None, file: str = "README.md") -> list[Command]:
    """Every gpudse command in the bash blocks of README and docs/ (or of *text*), continuation lines
    joined, markers read."""
    if text is None:
        return [c for p in doc_files() for c in readme_commands(p.read_text(encoding="utf-8"),
                                                                  str(p.relative_to(ROOT)))]
    out: list[Command] = []
    for block in re.finditer(r"```bash\n(.*?)```", text, re.S):
        first = text.count("\n", 0, block.start(1)) + 1
        lines = block.group(1).splitlines()
        pending_comment = ""
        i = 0
        while i < len(lines):
            start = i
            logical = lines[i]
            while logical.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                logical = logical.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            stripped = logical.strip()
            if stripped.startswith("#"):
                pending_comment = stripped
                continue
            if not stripped:
                pending_comment = ""
                continue
            markers = f"{pending_comment} {_comment(stripped)}"
            pending_comment = ""
            skip = re.search(r"#\s*not run:\s*([^#]+)", markers)
            code = re.search(r"#\s*exit\s+(\d+)", markers)
            sets = re.search(r"#\s*sets\s+([A-Za-z_][A-Za-z0-9_]*)", markers)
            for part in _split(stripped):
                tokens = shlex.split(part, comments=True)
                if tokens[:1] == ["gpudse"]:
                    argv = tokens[1:]
                elif tokens[:3] == ["python", "-m", "gpudse_core"]:
                    argv = tokens[3:]
                else:
                    continue
                out.append(Command(first + start, stripped, argv, skip.group(1).strip() if skip else None,
                                   int(code.group(1)) if code else 0, _outputs(argv),
                                   sets.group(1) if sets else None, file))
    return out


def _split(line: str) -> list[str]:
    """A shell line's commands: split on ``;`` and ``&&`` outside quotes, the trailing comment dropped."""
    parts, cur, quote, k = [], "", None, 0
    while k < len(line):
        ch = line[k]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1].isspace()):
            break
        elif ch == ";" or line.startswith("&&", k):
            parts.append(cur)
            cur = ""
            k += 2 if ch == "&" else 1
            continue
        cur += ch
        k += 1
    return [p.strip() for p in [*parts, cur] if p.strip()]


def _comment(line: str) -> str:
    """The trailing ``# …`` comment of a shell line (a ``#`` inside quotes is not one)."""
    quote = None
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1].isspace()):
            return line[k:]
    return ""


def _outputs(argv: list[str]) -> list[str]:
    outs = []
    for k, a in enumerate(argv):
        if a in ("-o", "--output", "--store") and k + 1 < len(argv):
            outs.append(argv[k + 1].rstrip("/"))
        elif a.startswith("--output="):
            outs.append(a.split("=", 1)[1].rstrip("/"))
    return outs


def run_order(cmds: list[Command]) -> list[Command]:
    """README order, except that a command runs after the (runnable) command that writes one of its inputs."""
    producer: dict[str, int] = {}
    for k, c in enumerate(cmds):
        if c.skip is None:
            for o in c.outputs:
                producer.setdefault(o, k)
    done: set[int] = set()
    order: list[Command] = []

    def visit(k: int, stack: tuple[int, ...] = ()) -> None:
        if k in done or k in stack:
            return
        c = cmds[k]
        for a in c.argv:
            a = SAME_AS.get(a.rstrip("/"), a.rstrip("/"))
            p = producer.get(a)
            if p is not None and p != k and a not in c.outputs:
                visit(p, (*stack, k))
        done.add(k)
        order.append(c)

    for k in range(len(cmds)):
        visit(k)
    return order


def test_readme_parser_reads_markers_and_continuations():
    text = ("```bash\ngpudse fit a.csv --response cycles \\\n   --theta 0.01 -o m.json   # a comment\n"
            "# not run: needs GPGPU-Sim\ngpudse simulate s.csv --backend command -o r.csv\n"
            "gpudse glossary colness   # exit 2\npip install .\n"
            "python -m gpudse_core presets  # not run: just because\n```\n```python\ngpudse = 1\n```\n")
    cmds = readme_commands(text)
    assert [c.argv[0] for c in cmds] == ["fit", "simulate", "glossary", "presets"]
    assert cmds[0].argv[-2:] == ["-o", "m.json"] and cmds[0].outputs == ["m.json"] and cmds[0].line == 2
    assert cmds[1].skip == "needs GPGPU-Sim" and cmds[2].exit == 2 and cmds[3].skip == "just because"
    two = readme_commands('```bash\ngpudse workspace rename ID "a; b" && gpudse workspace delete ID --yes  # sets '
                          'X\n```')
    assert [c.argv for c in two] == [["workspace", "rename", "ID", "a; b"], ["workspace", "delete", "ID", "--yes"]]
    assert two[0].sets == "X" and two[0].id != two[1].id
    order = run_order(readme_commands("```bash\ngpudse fit r.csv -o m.json\ngpudse simulate s.csv -o r.csv\n"
                                      "gpudse sample stargazer -n 3 -o s.csv\n```\n"))
    assert [c.argv[0] for c in order] == ["sample", "simulate", "fit"]


COMMANDS = readme_commands()


def test_readme_has_commands_to_run():
    assert len([c for c in COMMANDS if c.skip is None]) >= 20


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("readme")
    for name in ("data", "docs"):
        (d / name).symlink_to(ROOT / name, target_is_directory=True)
    return d


_results: dict[str, subprocess.CompletedProcess] = {}
_values: dict[str, str] = {}  # placeholders set by `# sets NAME`


def _run(cmd: Command, workdir: Path) -> subprocess.CompletedProcess:
    if cmd.id in _results:
        return _results[cmd.id]
    inputs = {SAME_AS.get(a.rstrip("/"), a.rstrip("/")) for a in cmd.argv}
    for dep in run_order(COMMANDS):  # what this command reads is written first (when run on its own, -k)
        if dep is cmd:
            break
        if dep.skip is None and dep.id not in _results and inputs & set(dep.outputs) - set(cmd.outputs):
            _run(dep, workdir)
    for a in cmd.argv:
        name = a.rstrip("/")
        if name in STAND_INS and not (workdir / name).exists():
            why, src, make = STAND_INS[name]
            if not src.exists():
                pytest.skip(f"{name}: {why} is not present")
            make(workdir / name)
        if name in SAME_AS and not (workdir / name).exists() and (workdir / SAME_AS[name]).exists():
            shutil.copyfile(workdir / SAME_AS[name], workdir / name)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "GPUDSE_HOME": str(workdir / ".gpudse")}
    argv = [_values.get(a, a) for a in cmd.argv]
    r = subprocess.run([sys.executable, "-m", "gpudse_core", *argv], cwd=workdir, env=env, capture_output=True,
                       text=True, timeout=TIMEOUT)
    _results[cmd.id] = r
    if cmd.sets and r.returncode == 0 and r.stdout.strip():
        _values[cmd.sets] = r.stdout.strip().splitlines()[0].split()[-1]
    return r


def _needs_go(argv: list[str]) -> bool:
    """``gpudse mgpusim …`` and ``simulate --backend mgpusim`` build MGPUSim with Go on first use."""
    k = argv.index("--backend") if "--backend" in argv else -1
    return argv[:1] == ["mgpusim"] or (0 <= k < len(argv) - 1 and argv[k + 1] == "mgpusim")


@pytest.mark.slow
@pytest.mark.parametrize("cmd", run_order(COMMANDS), ids=lambda c: c.id)
def test_readme_command_runs(cmd: Command, workdir: Path):
    if cmd.skip:
        pytest.skip(f"{cmd.where} marks it not run: {cmd.skip}")
    if _needs_go(cmd.argv):
        from gpudse_core.sim.mgpusim import MgpusimError, find_go

        try:
            find_go()
        except MgpusimError as e:
            pytest.skip(f"MGPUSim is built with Go: {e}")
    r = _run(cmd, workdir)
    assert r.returncode == cmd.exit, f"{cmd.where}: {cmd.text}\n{r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    for o in cmd.outputs:
        assert (workdir / o).exists(), f"{cmd.where}: {o} was not written"
