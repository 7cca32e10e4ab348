"""Packaging and set-up: pip install . gives a working `gpudse`; README and CI agree."""

from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
import sysconfig
import tomllib
import venv
from pathlib import Path

import pytest

from conftest import ROOT


def readme_commands() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    found = {}
    for b in blocks:
        for line in b.splitlines():
            if "streamlit run app.py" in line:
                found.setdefault("dashboard", line.strip())
            if "pytest" in line and "pip install" in line:
                found.setdefault("tests", line.strip())
    return found


def test_readme_gives_the_two_commands():
    cmds = readme_commands()
    assert cmds["dashboard"] == "pip install -r requirements.txt && streamlit run app.py"
    assert cmds["tests"] == "pip install -r requirements.txt && python -m pytest -q -n 2 --dist loadfile"


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_commands()["tests"] in [line.strip() for line in ci]
    assert os.access(ROOT / ".ci" / "run", os.X_OK)


def test_requirements_cover_imports():
    reqs = {re.split(r"[<>=\[ ]", line.strip())[0].lower()
            for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.strip() and line[0] not in "#-"}
    for needed in ("numpy", "scipy", "pandas", "pyarrow", "pyyaml", "streamlit", "plotly", "pytest", "hypothesis"):
        assert needed in reqs, needed


def test_core_never_imports_streamlit():
    for path in (ROOT / "gpudse_core").rglob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+streamlit", path.read_text(), re.M), path


def _site_dirs() -> list[str]:
    """This interpreter's site-packages (a venv's own, or the system's; both for a venv made with
    ``--system-site-packages``, whose own holds only what was added to it)."""
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}
    return [p for p in sorted(paths) if os.path.isdir(p)]


@pytest.mark.slow
def test_pip_install_gives_gpudse_command(tmp_path):
    """A real wheel of the checkout installed into a fresh virtual environment; the command runs outside the
    checkout and imports the installed copy.

    The wheel is built by *this* interpreter (whose environment has the build requirements from
    requirements.txt) rather than inside the new environment: a new venv only has the setuptools that
    ``ensurepip`` bundles (65/66 on Python 3.11, which cannot build a wheel without the ``wheel`` package —
    "invalid command 'bdist_wheel'") and, with ``system_site_packages``, the *base* interpreter's packages,
    which on a fresh machine are not the venv the tests run in (numpy missing). The new environment sees
    this environment's packages for the dependencies through a ``.pth`` file of plain paths (so an editable
    install here is not activated there), and the wheel goes in with ``--no-deps --no-index``: no network.
    """
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(wheels), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(wheels.glob("gpudse-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "outer_environment.pth").write_text("\n".join(_site_dirs()) + "\n")
    # without PYTHONPATH: a checkout on it (its gpudse.egg-info) would read as gpudse installed already
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    inst = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=600, env=clean_env)
    assert inst.returncode == 0, inst.stderr[-2000:]
    for argv in ([str(env_dir / "bin" / "gpudse")], [str(py), "-m", "gpudse_core"]):
        out = subprocess.run([*argv, "space", "show", "stargazer", "--json"], capture_output=True, text=True,
                             cwd=tmp_path, env=clean_env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["size"] == 933120
    where = subprocess.run([str(py), "-c", "import gpudse_core; print(gpudse_core.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path, env=clean_env)
    assert str(env_dir) in where.stdout  # the installed copy, not the checkout
    data = subprocess.run([str(py), "-c", "import gpudse_core.space.presets as p; print(p.__file__)"],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env)
    assert str(env_dir) in data.stdout, data.stderr
    # the MGPUSim driver program's Go sources travel with the wheel (built on first use)
    src = subprocess.run([str(py), "-c", "from gpudse_core.sim.mgpusim import source_dir, source_hash; "
                          "print(source_dir()); print(source_hash())"], capture_output=True, text=True, cwd=tmp_path,
                         env=clean_env)
    where_src, digest = src.stdout.split()
    assert str(env_dir) in where_src and where_src.endswith("_sims/mgpusim"), src.stderr
    from gpudse_core.sim.mgpusim import source_hash

    assert digest == source_hash()  # the same files as the checkout's gpudse_core/_sims/mgpusim


def test_requirements_install_the_package_itself_editable():
    """README's `pip install -r requirements.txt` leaves the `gpudse` command installed, and a developer's
    edits take effect without reinstalling."""
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert "-e ." in lines
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert any(r.startswith("setuptools>=") and tuple(map(int, r.split(">=")[1].split("."))) >= (70, 1)
               for r in build)  # bdist_wheel is part of setuptools from 70.1: no separate `wheel` needed


# Libraries the core may import without declaring them in `dependencies`: the optional Dask runner
# (the [dask] extra), whose importers must catch the ImportError and say what to install.
OPTIONAL = {"dask": "dask", "distributed": "dask"}


def _core_imports() -> dict[str, list[tuple[Path, bool]]]:
    """Every top-level library the core imports (module level or inside functions): name → [(file,
    guarded)], *guarded* when the import sits in a ``try`` whose handlers catch ImportError."""
    import ast

    found: dict[str, list[tuple[Path, bool]]] = {}
    for path in sorted((ROOT / "gpudse_core").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                    h.type is not None and "ImportError" in ast.unparse(h.type) for h in node.handlers):
                guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "gpudse_core":
                    found.setdefault(top, []).append((path, id(node) in guarded))
    return found


def _dist(name: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[ ;]", name.strip())[0]).lower()


@pytest.mark.slow
def test_every_library_the_core_imports_is_installed_by_pip_install_dot():
    """After `pip install .` (README: just the package and the CLI) no command dies on a missing module:
    each library the core imports is a dependency, or optional with a message saying what to install."""
    from importlib.metadata import packages_distributions

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_dist(d) for d in project["dependencies"]}
    dists = packages_distributions()
    missing, unguarded = [], []
    for top, where in sorted(_core_imports().items()):
        if top in OPTIONAL:
            assert OPTIONAL[top] in project["optional-dependencies"], top
            for path in {p for p, ok in where if not ok}:  # an unguarded import: its module says what to install
                text = path.read_text(encoding="utf-8")
                if not ("except ImportError" in text and "pip install" in text):
                    unguarded.append(f"{path.relative_to(ROOT)} imports {top} without saying what to install")
            continue
        names = {_dist(d) for d in dists.get(top, [top])}
        if not names & declared:
            missing.append(f"{top} ({', '.join(sorted(names))}; e.g. {where[0][0].relative_to(ROOT)})")
    assert not missing, "imported by the core but not in pyproject's dependencies: " + "; ".join(missing)
    assert not unguarded, "\n".join(unguarded)


def test_requirements_hold_every_dependency_of_the_package():
    """requirements.txt is the full set: the package's dependencies and every extra."""
    reqs = {_dist(line) for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.strip() and line.strip()[0] not in "#-"}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_dist(d) for d in project["dependencies"]}
    wanted |= {_dist(d) for extra in project["optional-dependencies"].values() for d in extra}
    assert wanted <= reqs, sorted(wanted - reqs)


def test_every_subpackage_of_the_core_is_packaged():
    """pyproject lists packages by hand: a new sub-package left out is missing after `pip install .`."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gpudse_core").rglob("__init__.py")}
    assert present <= listed, sorted(present - listed)
