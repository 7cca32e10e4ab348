"""Packaging and set-up: pip install . gives a working `gpudse`; README and CI agree."""

from __future__ import annotations

import json
import os
import re
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
    assert cmds["tests"] == "pip install -r requirements.txt && python -m pytest -q"


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
    """This interpreter's site-packages (a venv's own, or the system's)."""
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
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
    inst = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert inst.returncode == 0, inst.stderr[-2000:]
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
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
