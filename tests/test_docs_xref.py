"""The manual and the code cannot drift apart.

* Every Markdown link in README.md and docs/*.md resolves: the file exists and its ``#anchor`` is a heading
  of that file (GitHub's slugs).
* Every README or docs/ section named in the code — docstrings, comments, help text, error messages, in
  gpudse_core/, dashboard/, pages/, app.py, benchmarks/ and tests/ — is a heading of that file: ``README
  "Name"``, ``docs/models.md ("Name")``, ``'Name' in the README``. A named section may be the start of a
  longer heading ("Regression choices" names "Regression choices (where the papers leave room)").
* docs/architecture.md's map of the code names every module of gpudse_core/, dashboard/ and pages/ in its
  package's row, and nothing that does not exist (see :func:`architecture_rows` for the map's form).
* Code, tests, benchmarks and the manual cite papers and concepts, never a tracker's "issue" (the
  issue-number check is ``tests/test_import_graph.py``).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

MANUAL = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE_DIRS = ("gpudse_core", "dashboard", "pages", "benchmarks", "tests")
THIS = Path(__file__).resolve()

# A file another change is rewriting: its references are known to be stale and are fixed there. Each entry
# must still be needed (the test fails when the file is gone or its references resolve), so none outlives it.
PENDING: dict[str, str] = {}


# ---- the manual: headings, anchors, links ----

def without_code(text: str) -> str:
    """The Markdown text with fenced code blocks blanked (line numbers kept)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


@functools.cache
def headings(path: Path) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", without_code(path.read_text()),
                                                    re.M)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (hyphens and underscores kept),
    spaces to hyphens."""
    text = re.sub(r"`", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for h in headings(path):
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link and image in *path*, outside code."""
    found = []
    for k, line in enumerate(without_code(path.read_text()).splitlines(), 1):
        line = re.sub(r"`[^`]*`", "", line)  # inside code, even in a link's text, nothing is a link
        for m in re.finditer(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            found.append((k, m.group(1)))
    return found


def broken_links(path: Path) -> list[str]:
    problems = []
    for k, target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: — not checked offline
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        where = f"{path.relative_to(ROOT)}:{k}: ({target})"
        if not dest.exists():
            problems.append(f"{where} — {file} does not exist")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where} — {dest.relative_to(ROOT)} has no heading with the anchor #{anchor}")
    return problems


def test_headings_and_slugs_follow_github():
    assert slug("Regression choices (where the papers leave room)") == "regression-choices-where-the-papers-leave-room"
    assert slug("`--goal accuracy` against uniform sampling") == "--goal-accuracy-against-uniform-sampling"
    assert slug("Measured: regret against random search, the one-shot workflow and TPE") == \
        "measured-regret-against-random-search-the-one-shot-workflow-and-tpe"
    limits = headings(ROOT / "docs" / "limits.md")
    assert limits[0] == "Limits and hostile input"
    assert not any(h.startswith("not run") for h in limits)  # a shell comment inside a code block is no heading


def test_a_broken_link_is_reported_with_its_line(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "other.md").write_text("# Other page\n\n## A section\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md#a-section) [ok](#page) `[not a link](nowhere.md)`\n"
                    "```\n[not a link](nowhere.md)\n```\n[bad](missing.md) [bad](other.md#b-section)\n")
    assert broken_links(page) == ["page.md:7: (missing.md) — missing.md does not exist",
                                  "page.md:7: (other.md#b-section) — other.md has no heading with the anchor "
                                  "#b-section"]


@pytest.mark.parametrize("page", MANUAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_of_the_manual_resolves(page):
    problems = broken_links(page)
    assert not problems, "broken links:\n" + "\n".join(problems)


# ---- sections named in the code ----

DOC = r"(README(?:\.md)?|docs/[\w-]+\.md)"
QUOTED = r"(?:\"([^\"]{3,100}?)\"|'([^']{3,100}?)'|“([^”]{3,100}?)”|‘([^’]{3,100}?)’)"
NAMED_AFTER = re.compile(DOC + r"[\s,:(]+" + QUOTED)  # README "Name", docs/x.md ("Name"), README, "Name"
NAMED_BEFORE = re.compile(QUOTED + r"\s+in\s+(?:the\s+)?" + DOC)  # 'Name' in the README
FILE = re.compile(r"\bdocs/[\w-]+\.md\b")


def texts(source: str) -> list[tuple[int, str]]:
    """(first line, text) of every string constant (implicitly joined parts as one; an f-string with ``{}`` for
    its fields) and of every run of comment lines (one line of text each)."""
    out = []
    nodes = list(ast.walk(ast.parse(source)))
    parts = {id(v) for n in nodes if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in nodes:
        if isinstance(node, ast.JoinedStr):
            out.append((node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            out.append((node.lineno, node.value))
    run: list[str] = []
    start = last = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        line = tok.start[0]
        if run and line != last + 1:
            out.append((start, "\n".join(run)))
            run = []
        if not run:
            start = line
        run.append(tok.string.lstrip("#").strip())
        last = line
    if run:
        out.append((start, "\n".join(run)))
    return out


def references(source: str) -> list[tuple[int, str, str | None]]:
    """(line, manual file, section name or None) of every reference to README or a docs/ page."""
    found = []
    for k, text in texts(source):
        for pattern, doc, names in ((NAMED_AFTER, 0, slice(1, 5)), (NAMED_BEFORE, 4, slice(0, 4)), (FILE, None, None)):
            for m in pattern.finditer(text):
                where = k + text[:m.start()].count("\n")
                if doc is None:
                    found.append((where, m.group(0), None))
                else:
                    name = next(g for g in m.groups()[names] if g)
                    found.append((where, m.groups()[doc], re.sub(r"\s+", " ", name)))
    return sorted(found, key=lambda f: (f[0], f[1], f[2] or ""))


def names_a_section(name: str, page_headings: list[str]) -> bool:
    """*name* is a heading, or the start of one up to a word boundary (case-insensitive)."""
    n = name.strip().rstrip(".").lower()
    return any(h.lower() == n or (h.lower().startswith(n) and not h[len(n)].isalnum()) for h in page_headings)


def unresolved(source: str, where: str) -> list[str]:
    problems = []
    for k, doc, name in references(source):
        path = ROOT / ("README.md" if doc.startswith("README") else doc)
        if not path.exists():
            problems.append(f"{where}:{k}: {doc} does not exist")
        elif name is not None and not names_a_section(name, headings(path)):
            elsewhere = [str(p.relative_to(ROOT)) for p in MANUAL if names_a_section(name, headings(p))]
            hint = f" (it is in {', '.join(elsewhere)})" if elsewhere else ""
            problems.append(f"{where}:{k}: {doc} has no section {name!r}{hint}")
    return problems


def code_files() -> list[Path]:
    files = [ROOT / "app.py"] + [p for d in CODE_DIRS for p in sorted((ROOT / d).rglob("*.py"))]
    return [p for p in files if p.resolve() != THIS]


def test_references_in_code_are_found_and_checked():
    source = ('"""Measured in README "Regression choices"; see docs/models.md ("Real tuning spaces")."""\n'
              'help = ("see \'Limits and hostile input\' in the README "\n'
              '        "or docs/nowhere.md")\n'
              '# as in docs/models.md "Real\n'
              '# tuning spaces" and README\'s test command\n')
    assert references(source) == [
        (1, "README", "Regression choices"), (1, "docs/models.md", None), (1, "docs/models.md", "Real tuning spaces"),
        (2, "README", "Limits and hostile input"), (2, "docs/nowhere.md", None),
        (4, "docs/models.md", None), (4, "docs/models.md", "Real tuning spaces")]
    assert unresolved(source, "x.py") == [
        "x.py:1: README has no section 'Regression choices' (it is in docs/models.md)",
        "x.py:2: README has no section 'Limits and hostile input' (it is in docs/limits.md)",
        "x.py:2: docs/nowhere.md does not exist"]


@pytest.mark.slow
def test_every_section_named_in_the_code_exists():
    problems, pending = [], {}
    for path in code_files():
        rel = str(path.relative_to(ROOT))
        found = unresolved(path.read_text(encoding="utf-8"), rel)
        if rel in PENDING:
            pending[rel] = found
        else:
            problems.extend(found)
    assert not problems, "sections named in the code that the manual does not have:\n" + "\n".join(problems)
    for rel, reason in PENDING.items():
        assert pending.get(rel), f"{rel} is listed in PENDING ({reason}) but is gone or resolves now: remove it"


# ---- docs/architecture.md's map ----

PACKAGES = ("gpudse_core", "dashboard", "pages")


def architecture_rows(text: str) -> list[tuple[str, str]]:
    """(path, description) of each row of the map (the first code block of docs/architecture.md).

    A row starts with its key — one or more paths, ``, ``-separated, relative to the checkout, or, indented by
    two spaces, to the row above it that is not indented — then two or more spaces and a description;
    lines that start with spaces only continue the description. One row per key path."""
    block = re.search(r"```\n(.*?)```", text, re.S).group(1)
    rows: list[list[str]] = []
    parent = ""
    for line in block.splitlines():
        m = re.match(r"( {0,2})(\S.*?)(?: {2,}(.*))?$", line)
        if m and len(m.group(1)) < 3:
            keys = [k.strip() for k in m.group(2).split(", ")]
            if not m.group(1):
                parent = keys[0]
            rows.extend([[(parent + k) if m.group(1) else k, m.group(3) or ""] for k in keys])
        elif rows:
            cont = line.strip()
            for row in rows[-len(keys):]:
                row[1] += " " + cont
    return [(k, d.strip()) for k, d in rows]


def listed_modules(description: str) -> list[str]:
    """The modules a package's row names: after its last colon outside parentheses (or the whole description),
    the items separated by commas or semicolons, each item's first word (``sub/`` for a folder)."""
    flat = description
    while True:
        stripped = re.sub(r"\([^()]*\)", "", flat)
        if stripped == flat:
            break
        flat = stripped
    flat = flat.rsplit(":", 1)[-1]
    return [item.split()[0] for item in re.split(r"[,;]", flat) if item.strip()]


def package_dirs() -> list[Path]:
    """Every folder of gpudse_core/, dashboard/ and pages/ that holds Python modules."""
    dirs = {p.parent for d in PACKAGES for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts}
    return sorted(dirs)


def modules(folder: Path) -> set[str]:
    """The names a package row must list: its modules (no ``__init__``) and its sub-folders."""
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    names |= {p.name + "/" for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"}
    return names


def map_problems(text: str) -> list[str]:
    rows = dict(architecture_rows(text))
    problems = [f"{key}: no such file or folder" for key in rows if not (ROOT / key).exists()]
    for folder in package_dirs():
        key = str(folder.relative_to(ROOT)) + "/"
        if key not in rows:
            problems.append(f"{key}: the map has no row for it")
            continue
        listed = set(listed_modules(rows[key]))
        wanted = modules(folder)
        if key == "gpudse_core/":  # its folders have rows of their own
            wanted = {m for m in wanted if not m.endswith("/")}
        problems += [f"{key}: {name} is not named" for name in sorted(wanted - listed)]
        problems += [f"{key}: {name} is named but does not exist" for name in sorted(listed - modules(folder))]
    return problems


def test_the_map_parser_reads_rows_and_module_lists():
    text = ("```\nREADME.md, docs/   the manual\ngpudse_core/       all logic: choices (the names), errors\n"
            "  model/           fitting: splines, stepwise (Algorithm 1, Table 1),\n"
            "                   fitted; kinds (by name)\n```\n")
    rows = architecture_rows(text)
    assert [k for k, _ in rows] == ["README.md", "docs/", "gpudse_core/", "gpudse_core/model/"]
    assert listed_modules(rows[3][1]) == ["splines", "stepwise", "fitted", "kinds"]
    assert listed_modules(rows[2][1]) == ["choices", "errors"]
    problems = map_problems(text)
    assert "gpudse_core/model/: kinds is named but does not exist" not in problems  # model/kinds.py exists
    assert "gpudse_core/model/: cells is not named" in problems
    assert "gpudse_core/: limits is not named" in problems and "pages/: the map has no row for it" in problems


def test_the_architecture_map_names_every_module_and_nothing_else():
    problems = map_problems((ROOT / "docs" / "architecture.md").read_text())
    assert not problems, "docs/architecture.md's map is out of date:\n" + "\n".join(problems)


# ---- citations ----

CITES_AN_ISSUE = [re.compile(p, re.I) for p in (r"(?<![a-z])the[ _]issue(?![a-z])", r"\bissue's\b",
                                                r"\b[a-z]+(?:-[a-z]+)* issue\s*[);]")]


def test_code_tests_and_manual_cite_papers_and_concepts_not_an_issue():
    files = code_files() + MANUAL
    found = [f"{p.relative_to(ROOT)}:{k}: {line.strip()[:90]}" for p in files
             for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if any(c.search(line) for c in CITES_AN_ISSUE)]
    assert not found, "cite the paper, section or concept instead:\n" + "\n".join(found)


# ---- the fast loop ----

def test_the_markers_contributing_md_selects_by_are_registered():
    registered = {m.split(":")[0].strip() for m in
                  tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]}
    text = (ROOT / "CONTRIBUTING.md").read_text()
    expressions = re.findall(r"pytest[^\n]*? -m \"([^\"]+)\"", text)
    assert expressions, "CONTRIBUTING.md gives no fast-loop command (python -m pytest -m \"…\")"
    used = {w for e in expressions for w in re.findall(r"\w+", e)} - {"not", "and", "or"}
    assert used and used <= registered, f"unregistered markers: {used - registered}"
