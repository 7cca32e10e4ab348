"""The checkout is clean under ruff with the project's rules (pyproject.toml ``[tool.ruff]``: pyflakes and
pycodestyle's errors and warnings, lines of at most 120 characters).

ruff runs as a subprocess, the version pinned in requirements.txt (which CI installs, so the README's test
command and ``.ci/run`` run it). Without ruff the test skips with the reason, except in CI, where it fails.
A ``# noqa`` says which rule and why.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from conftest import ROOT


def pinned() -> str:
    """The ruff version requirements.txt pins (the test extra pins the same)."""
    m = re.search(r"^ruff==([\w.]+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert m, "requirements.txt pins no ruff version (ruff==X.Y.Z)"
    return m.group(1)


def ruff_command() -> list[str]:
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    if shutil.which("ruff"):
        return [shutil.which("ruff")]
    reason = f"ruff is not installed (pip install ruff=={pinned()}, as requirements.txt does)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def ruff(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([*ruff_command(), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_is_pinned_once_and_configured():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert f"ruff=={pinned()}" in config["project"]["optional-dependencies"]["test"]
    assert config["tool"]["ruff"]["line-length"] == 120
    assert {"E", "W", "F"} <= set(config["tool"]["ruff"]["lint"]["select"])
    version = ruff("--version").stdout.split()[-1]
    assert version == pinned(), f"ruff {version} is installed, requirements.txt pins {pinned()}: pip install -r " \
                                f"requirements.txt (another version finds other things)"


def test_the_rules_catch_what_they_are_for(tmp_path):
    """The project's configuration applied to a file with one finding of each family."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import os\n\n\ndef f():\n    unused = 1\n    return " + "1 + " * 40 + "1 \n")
    found = ruff("check", "--no-cache", "--output-format", "concise", "bad.py", cwd=tmp_path)
    codes = set(re.findall(r": ([A-Z]+\d+) ", found.stdout))
    assert found.returncode == 1 and codes == {"F401", "F841", "E501", "W291"}, found.stdout


# A file another change is rewriting, its findings fixed there. Each entry must still be needed (the test fails
# when the file is gone or clean), so none outlives the rewrite.
PENDING: dict[str, str] = {}


def test_the_checkout_is_clean_under_ruff():
    skip = [arg for path in PENDING for arg in ("--extend-exclude", path)]
    found = ruff("check", "--no-cache", "--output-format", "concise", *skip, ".")
    assert found.returncode == 0, "ruff check finds (fix them, or `# noqa: CODE — why` where a rule is wrong " \
                                  "for that line):\n" + (found.stdout + found.stderr)[-6000:]
    for path, reason in PENDING.items():
        still = (ROOT / path).exists() and ruff("check", "--no-cache", "--quiet", path).returncode != 0
        assert still, f"{path} is listed in PENDING ({reason}) but is gone or clean now: remove it"
