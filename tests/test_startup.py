"""Start-up stays cheap: `gpudse --help`, every sub-command's --help and argument errors import no
NumPy, pandas, SciPy, scikit-learn or dashboard code. Checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

HEAVY = ("numpy", "pandas", "scipy", "sklearn", "streamlit", "plotly", "statsmodels", "dask", "yaml", "pyarrow")
PROBE = """
import json, sys
from gpudse_core.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)), file=sys.stderr)
"""


def _loaded(*argv: str) -> set[str]:
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [("--help",), ("fit", "--help"), ("sample", "--help"), ("simulate", "--help"),
                                  ("pixels", "--help"), ("fit",), ("sample", "stargazer", "--bogus"), ("nonsense",)])
def test_help_and_argument_errors_import_nothing_heavy(argv):
    heavy = _loaded(*argv) & set(HEAVY)
    assert not heavy, f"gpudse {' '.join(argv)} imported {sorted(heavy)}"


def test_import_gpudse_core_is_lazy_but_complete():
    code = ("import sys, gpudse_core; assert 'pandas' not in sys.modules; "
            "s = gpudse_core.load_preset('stargazer'); print(s.size, type(gpudse_core.DesignSpace).__name__)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["933120", "type"]


def test_choice_names_match_their_implementations():
    from gpudse_core import choices
    from gpudse_core.model import splines, stepwise
    from gpudse_core.sim.simulator import KERNELS

    assert tuple(KERNELS) == choices.KERNELS
    from gpudse_core.sim.gpgpusim import DERIVED, METRICS
    from gpudse_core.sim.simulator import simulate

    pts = load_preset_points()
    assert tuple(simulate(pts, "CP").columns) == choices.SIMULATOR_OUTPUTS
    assert set(METRICS) | set(DERIVED) <= choices.OUTPUT_NAMES
    assert splines.PLACEMENTS == choices.KNOT_PLACEMENTS and stepwise.TRANSFORMS == choices.TRANSFORMS


def test_python_m_gpudse_core_is_the_same_command():
    a = subprocess.run([sys.executable, "-m", "gpudse_core", "--help"], cwd=ROOT, capture_output=True, text=True)
    from gpudse_core.cli import build_parser

    assert a.returncode == 0 and a.stdout == build_parser().format_help()


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_sample_to_csv_or_json_never_imports_pandas(tmp_path, suffix):
    """`gpudse sample` is the command a cluster script runs most; pandas alone costs it 0.5–1 s."""
    out = tmp_path / f"s{suffix}"
    loaded = _loaded("sample", "lee-brooks", "-n", "300", "--seed", "1", "--with-index", "-o", str(out))
    assert out.stat().st_size > 300 * 10
    assert not loaded & {"pandas", "pyarrow", "scipy", "sklearn"}, sorted(loaded & set(HEAVY))


def load_preset_points():
    from gpudse_core import load_preset, sample

    return sample(load_preset("stargazer"), 5, seed=1).points


def test_example_template_fingerprint_reads_the_code_it_depends_on(tmp_path, monkeypatch):
    """The example template is rebuilt when the code that computed it changes: its fingerprint hashes that code
    (a path mistake once made it hash nothing, so an edited model never rebuilt the example)."""
    import hashlib

    from dashboard import state

    digest = state._code_digest()
    assert digest != hashlib.sha256().hexdigest()[:20]
    core = tmp_path / "gpudse_core"
    (core / "model").mkdir(parents=True)
    (core / "model" / "splines.py").write_text("a = 1\n")
    monkeypatch.setattr(state, "ROOT", tmp_path / "dashboard")
    first = state._code_digest()
    (core / "model" / "splines.py").write_text("a = 2\n")
    assert state._code_digest() != first
