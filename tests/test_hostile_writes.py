"""A process killed *mid-write* of a report, a project zip or a table: a real ``gpudse`` subprocess is
paused half-way through the write (``GPUDSE_TEST_PAUSE_WRITE``: the first half of the bytes is on
disk) and SIGKILLed there. The reader must find the old file, or none, never half of the new one;
the next write replaces it whole and removes the killed writer's temporary file
(gpudse_core.atomicfile)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import zipfile

import pytest
from conftest import ROOT

from gpudse_core.atomicfile import SUFFIX

OLD = b"the reviewer's previous file\n"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    from gpudse_core.space.presets import load_preset
    from gpudse_core.space.sampling import sample
    from gpudse_core.workspace import create_workspace

    ws, _ = create_workspace("writes")
    with ws:
        space = load_preset("stargazer")
        ws.set_space(space, "preset")
        ws.set_samples(sample(space, n=400, seed=1), "400 points")
    return ws.id


def _env(**extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", **extra}


def _kill_mid_write(argv: list[str], marker) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "gpudse_core", *argv], env=_env(GPUDSE_TEST_PAUSE_WRITE=str(marker)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while not (marker.exists() and marker.read_text().strip()):  # created, then its pid written: wait for both
        if proc.poll() is not None:
            pytest.fail(f"the writer ended before pausing: {proc.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the writer never reached the write")
        time.sleep(0.05)
    assert int(marker.read_text()) == proc.pid
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    proc.stdout.close()
    proc.stderr.close()


def _valid(out, kind: str) -> None:
    data = out.read_bytes()
    if kind == "zip":
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
        assert "space.yaml" in names and "samples.json" in names
    elif kind == "html":
        assert data.rstrip().endswith(b"</html>")
    else:
        assert data.count(b"\n") == 401  # header + 400 sampled points


@pytest.mark.slow
@pytest.mark.parametrize("prior", [True, False], ids=["over-an-old-file", "new-file"])
@pytest.mark.parametrize("what", ["report", "project", "stage-table"])
def test_a_kill_mid_write_leaves_the_old_file_or_none_never_half(workspace, tmp_path, what, prior):
    home = str(tmp_path / "home")
    out, kind = {"report": (tmp_path / "r.html", "html"), "project": (tmp_path / "p.zip", "zip"),
                 "stage-table": (tmp_path / "s.csv", "csv")}[what]
    argv = {"report": ["workspace", "report", workspace, "-o", str(out), "--home", home],
            "project": ["workspace", "export", workspace, "-o", str(out), "--home", home],
            "stage-table": ["workspace", "export", workspace, "--stage", "samples", "-o", str(out),
                            "--home", home]}[what]
    if prior:
        out.write_bytes(OLD)
    _kill_mid_write(argv, tmp_path / "paused")
    if prior:
        assert out.read_bytes() == OLD  # the old file, untouched
    else:
        assert not out.exists()  # no file rather than half of one
    (left,) = tmp_path.glob(f".{out.name}.*{SUFFIX}")  # the killed writer's half, recognisable by its name
    half = left.stat().st_size
    r = subprocess.run([sys.executable, "-m", "gpudse_core", *argv], env=_env(), capture_output=True, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    _valid(out, kind)
    if kind != "csv":  # the bytes writers pause half-way through: what was left was less than the whole
        assert 0 < half < out.stat().st_size
    assert not list(tmp_path.glob(f".{out.name}.*{SUFFIX}")), "the killed writer's temporary file was not removed"
