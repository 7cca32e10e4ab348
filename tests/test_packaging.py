"""Packaging and set-up: pip install . gives a working `gpudse`; README and CI agree."""

from __future__ import annotations

import json
import os
import re
import subprocess
import venv

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
            for line in (ROOT / "requirements.txt").read_text().splitlines() if line.strip() and line[0] != "#"}
    for needed in ("numpy", "scipy", "pandas", "pyarrow", "pyyaml", "streamlit", "plotly", "pytest", "hypothesis"):
        assert needed in reqs, needed


def test_core_never_imports_streamlit():
    for path in (ROOT / "gpudse_core").rglob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+streamlit", path.read_text(), re.M), path


@pytest.mark.slow
def test_pip_install_gives_gpudse_command(tmp_path):
    """A real `pip install .` into a fresh virtual environment; the command runs outside the checkout."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=True).create(env_dir)
    py = env_dir / "bin" / "python"
    inst = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q", str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert inst.returncode == 0, inst.stderr[-2000:]
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for argv in ([str(env_dir / "bin" / "gpudse")], [str(py), "-m", "gpudse_core"]):
        out = subprocess.run([*argv, "space", "show", "stargazer", "--json"], capture_output=True, text=True,
                             cwd=tmp_path, env=clean_env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["size"] == 933120
    where = subprocess.run([str(py), "-c", "import gpudse_core; print(gpudse_core.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path, env=clean_env)
    assert str(env_dir) in where.stdout  # the installed copy, not the checkout
