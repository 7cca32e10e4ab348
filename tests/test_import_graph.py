"""The project's modules import one another in one direction: no import cycle, lazy imports included.

A cycle hidden behind a function-level import still ties two modules together (neither can be read,
tested or moved without the other). This test parses every project module with :mod:`ast`, collects
every import statement wherever it sits (module level, functions, ``TYPE_CHECKING`` blocks), resolves
relative imports, maps ``from package import name`` to the submodule when ``name`` is one, and looks
for strongly connected components of more than one module (Tarjan). A package's ``__init__`` counts
as its own module; importing ``pkg.mod`` does not count as importing ``pkg``'s ``__init__`` (that is
Python's mechanics, not a dependency the code chose).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from conftest import ROOT

DASHBOARD_ROOTS = ("app.py",)
PACKAGES = ("gpudse_core", "dashboard")


def _module_files() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for pkg in PACKAGES:
        base = ROOT / pkg
        if not base.is_dir():
            continue
        for path in base.rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    for name in DASHBOARD_ROOTS:
        if (ROOT / name).exists():
            mods[Path(name).stem] = ROOT / name
    for path in sorted((ROOT / "pages").glob("*.py")):
        mods[f"pages.{path.stem}"] = path
    return mods


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def import_graph() -> dict[str, set[str]]:
    mods = _module_files()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_package, node.level, node.module)
                for alias in node.names:
                    sub = f"{base}.{alias.name}" if base else alias.name
                    targets.append(sub if sub in mods else base)
            for target in targets:
                # the longest project module that the dotted name starts with
                parts = target.split(".")
                while parts and ".".join(parts) not in mods:
                    parts.pop()
                if parts:
                    dep = ".".join(parts)
                    if dep != mod:
                        graph[mod].add(dep)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_finder_sees_a_cycle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.slow
def test_the_graph_reads_function_level_and_relative_imports():
    graph = import_graph()
    # registry imports the learners at module level and is imported lazily by the model package
    assert "gpudse_core.model.learners" in graph["gpudse_core.model.registry"]
    assert "gpudse_core.model.registry" in graph["gpudse_core.model"]


@pytest.mark.slow
def test_no_import_cycle_among_the_projects_modules():
    found = cycles(import_graph())
    assert not found, "import cycles (each line one circle of modules):\n" + "\n".join(
        " <-> ".join(c) for c in found)


ROOT_ENTRIES = {"app.py", "pages", "dashboard", "gpudse_core", "data", "docs", "tests", "benchmarks",
                "README.md", "CONTRIBUTING.md", "requirements.txt", "pyproject.toml", ".ci", ".streamlit", ".gitignore",
                ".git"}


def test_the_checkout_root_holds_the_dashboard_the_core_and_packaging_only():
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        import pytest

        pytest.skip("not a git checkout")
    top = {line.split("/", 1)[0] for line in tracked.stdout.splitlines() if line}
    assert top <= ROOT_ENTRIES, f"unexpected entries at the checkout's root: {sorted(top - ROOT_ENTRIES)}"


def test_code_and_docs_cite_papers_and_concepts_not_issue_numbers():
    """A reader of the code or the manual cannot look up a tracker's issue number: cite the paper, section or
    concept instead."""
    import re
    import subprocess

    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.toml", "*.yaml"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()
    if not files:
        import pytest

        pytest.skip("not a git checkout")
    pattern = re.compile(r"\b[Ii]ssues? ?#?\d+\b")
    found = [f"{f}:{k}" for f in files for k, line in enumerate((ROOT / f).read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line)]
    assert not found, "issue numbers cited in: " + ", ".join(found[:20])


def test_no_merge_conflict_markers_are_left_in_the_checkout():
    import re
    import subprocess

    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    marker = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)
    found = []
    for f in files:
        path = ROOT / f
        if path.suffix in (".png", ".gz", ".json") or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if marker.search(text):
            found.append(f)
    assert not found, f"merge conflict markers left in: {found}"


# ---- the core's layers (docs/architecture.md, "Layers") ------------------------------------------------
def documented_layers() -> list[str]:
    """The layer list of docs/architecture.md: the backticked names of the paragraph of arrows after the
    "## Layers" heading, bottom first."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1]
    paragraph = next(p for p in section.split("\n\n") if "→" in p)
    return re.findall(r"`([\w.]+)`", re.sub(r"\([^)]*\)", "", paragraph))


def package_of(module: str) -> str | None:
    """The layer a core module belongs to: ``gpudse_core.model.fitted`` → ``model``; the package's own
    ``__init__`` → ``gpudse_core``; None outside the core."""
    parts = module.split(".")
    if parts[0] != "gpudse_core":
        return None
    return parts[1] if len(parts) > 1 else "gpudse_core"


def layer_violations(graph: dict[str, set[str]], layers: list[str]) -> list[str]:
    """Each import of a core module by one of a layer that is not below it (same layer is fine)."""
    rank = {name: k for k, name in enumerate(layers)}
    out = []
    for mod, deps in sorted(graph.items()):
        a = package_of(mod)
        if a is None:
            continue
        for dep in sorted(deps):
            b = package_of(dep)
            if b is None:
                out.append(f"{mod} imports {dep}, outside the core")
            elif a != b and (a not in rank or b not in rank):
                out.append(f"{mod} imports {dep}: {a if a not in rank else b} is not in the documented layers")
            elif a != b and not rank[b] < rank[a]:
                out.append(f"{mod} ({a}) imports {dep} ({b}), a layer not below it")
    return out


def test_the_layer_check_sees_an_upward_import_and_one_out_of_the_core():
    graph = {"gpudse_core.space.design": {"gpudse_core.fmt"}, "gpudse_core.fmt": {"gpudse_core.space.values"},
             "gpudse_core.space.values": set(), "gpudse_core.model.x": {"dashboard.frame", "gpudse_core.model.y"},
             "gpudse_core.model.y": set(), "dashboard.frame": {"gpudse_core.model.x"}}
    found = layer_violations(graph, ["fmt", "space", "model"])
    assert found == ["gpudse_core.fmt (fmt) imports gpudse_core.space.values (space), a layer not below it",
                     "gpudse_core.model.x imports dashboard.frame, outside the core"]
    assert layer_violations({"gpudse_core.space.design": {"gpudse_core.fmt"}}, ["fmt", "space"]) == []


def test_the_documented_layers_name_every_core_package_once():
    layers = documented_layers()
    assert len(layers) == len(set(layers)), layers
    present = {package_of(m) for m in import_graph()} - {None}
    assert set(layers) == present, (f"missing from docs/architecture.md's layers: {sorted(present - set(layers))}; "
                                    f"listed but absent: {sorted(set(layers) - present)}")


def test_the_core_packages_import_only_the_layers_below_them():
    """The package graph, imports inside functions included, is a DAG in the documented order."""
    found = layer_violations(import_graph(), documented_layers())
    assert not found, "imports against docs/architecture.md's layer order:\n" + "\n".join(found)


def missing_imports() -> list[str]:
    """Imports of a project module (``gpudse_core.…``, ``dashboard.…``, relative ones) that names no module
    of the tree: a module moved without its importers following (``from ..report.fmt import`` after the
    formatter moved) fails only when that function runs."""
    mods = _module_files()
    found = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_package, node.level, node.module)
                names = [base]
            else:
                continue
            for name in names:
                if name.split(".")[0] in PACKAGES and name not in mods:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    return found


def test_every_import_of_a_project_module_names_one_that_exists():
    assert not missing_imports(), "imports of modules that do not exist: " + "; ".join(missing_imports())
