"""MGPUSim in the loop: the Go driver program built from the module proxy, real timing simulations run as a
campaign on two local workers, their metrics parsed and stored, a campaign resumed after SIGKILL, and bad
configurations refused with their reason. Skips (with the reason) where there is no 'go'."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from gpudse_core import choices
from gpudse_core.sim import mgpusim
from gpudse_core.sim.campaign import run_campaign
from gpudse_core.sim.command import BackendError
from gpudse_core.sim.store import CampaignStore, progress_of

from conftest import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SIZE = 32  # matmul 32 x 32: a point simulates in about a second of CPU here
# four R9 Nano variants; the last two differ only in the core clock
POINTS = pd.DataFrame([
    {"cu_per_sa": 1, "sa": 4, "l2_kb": 512, "mem_banks": 4, "line": 64, "freq_mhz": 500},
    {"cu_per_sa": 2, "sa": 4, "l2_kb": 1024, "mem_banks": 8, "line": 128, "freq_mhz": 1000},
    {"cu_per_sa": 4, "sa": 4, "l2_kb": 2048, "mem_banks": 16, "line": 64, "freq_mhz": 1000},
    {"cu_per_sa": 4, "sa": 4, "l2_kb": 2048, "mem_banks": 16, "line": 64, "freq_mhz": 1500},
])


@pytest.fixture(scope="module")
def binary() -> Path:
    try:
        mgpusim.find_go()
    except mgpusim.MgpusimError as e:
        pytest.skip(f"no Go toolchain: {e}")
    try:
        return mgpusim.build()
    except mgpusim.MgpusimError as e:
        if mgpusim.BLOCKED_HINT in str(e):
            pytest.skip(f"blocked: the Go module proxy is not reachable from here: {e}")
        raise


def test_program_lists_the_benchmarks_the_cli_offers(binary):
    specs = mgpusim.benchmarks(binary)
    assert tuple(b["name"] for b in specs) == choices.MGPUSIM_BENCHMARKS
    for b in specs:
        assert b["min_size"] <= b["default_size"] <= b["max_size"]
        assert b["default_size"] % max(b["size_multiple"], 1) == 0


def test_one_run_prints_one_json_object_of_metrics(binary, tmp_path):
    out = subprocess.run([str(binary), "-benchmark", "matmul", "-size", str(SIZE), "-sa", "4", "-verify",
                          "-o", str(tmp_path / "m.json")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1  # the benchmarks' own prints go to stderr
    doc = json.loads(lines[0])
    assert doc == json.loads((tmp_path / "m.json").read_text())
    assert doc["verified"] is True  # the GPU's product matched the CPU's
    assert doc["cus"] == 16 and doc["benchmark"] == "matmul" and doc["size"] == SIZE
    assert doc["kernel_cycles"] == pytest.approx(doc["kernel_time_s"] * 1e9)  # 1 GHz default
    # every instruction a CU issued is counted, and vector ALU ones are among them
    assert 0 < doc["valu_instructions"] < doc["instructions"]
    # a 32 x 32 float product reads two 4 KiB matrices from DRAM at least once and writes one
    assert doc["dram_read_bytes"] >= 2 * 4096 and doc["dram_write_bytes"] >= 4096
    assert 0 <= doc["l1v_hit_rate"] <= 1 and 0 <= doc["l2_hit_rate"] <= 1
    metrics = mgpusim.parse_metrics(tmp_path / "m.json")
    assert set(metrics) <= set(choices.MGPUSIM_METRICS) and "kernel_cycles" in metrics


def test_four_point_campaign_on_two_workers(binary, tmp_path):
    backend = mgpusim.MgpusimBackend("matmul", size=SIZE, binary=str(binary), workdir=str(tmp_path / "runs"))
    backend.check_table(POINTS)
    with CampaignStore(tmp_path / "c.db") as store:
        store.open(backend.spec(), POINTS)
        final = run_campaign(store, backend, workers=2)
        assert (final.done, final.failed) == (4, 0)
        table = store.table()
        attempts = store.attempts()
    assert list(table[list(POINTS.columns)].astype(int).to_dict(orient="records")) == POINTS.to_dict(orient="records")
    # the design changes the time, not the program: every point ran the same instructions
    assert table.instructions.nunique() == 1 and table.instructions.iloc[0] > 0
    assert (table.kernel_cycles > 0).all()
    # a faster core clock makes the kernel take less time but more cycles (memory stays at 500 MHz)
    slow, fast = table.iloc[2], table.iloc[3]
    assert fast.kernel_time_s < slow.kernel_time_s and fast.kernel_cycles > slow.kernel_cycles
    assert table.kernel_time_s.iloc[0] == table.kernel_time_s.max()  # 4 CUs at 500 MHz: the slowest
    assert set(attempts.outcome) == {"done"} and attempts.worker.nunique() == 2  # both workers ran points
    for run_dir in attempts.run_dir:
        assert json.loads((Path(run_dir) / "metrics.json").read_text())["benchmark"] == "matmul"


def test_campaign_on_a_dask_cluster(binary, tmp_path):
    """Dask workers run the binary the runner built (its path travels with the backend)."""
    pytest.importorskip("distributed")
    backend = mgpusim.MgpusimBackend("bfs", size=64, binary=str(binary), workdir=str(tmp_path / "runs"))
    with CampaignStore(tmp_path / "c.db") as store:
        store.open(backend.spec(), POINTS.head(2))
        final = run_campaign(store, backend, workers=2, scheduler="local")
        table, attempts = store.table(), store.attempts()
    assert (final.done, final.failed) == (2, 0) and (table.kernel_cycles > 0).all()
    assert attempts.worker.str.startswith("dask ").all()


def test_campaign_resumes_after_sigkill(binary, tmp_path):
    """SIGKILL the CLI's whole process group once a point is stored: the rerun keeps what was done and
    runs only the rest."""
    POINTS.to_csv(tmp_path / "p.csv", index=False)
    cmd = [sys.executable, "-m", "gpudse_core", "simulate", "p.csv", "--backend", "mgpusim", "--benchmark", "matmul",
           "--size", str(SIZE), "--workers", "1", "--store", "c.db", "-o", "r.csv"]
    env = {**ENV, "GPUDSE_CACHE": str(mgpusim.cache_root())}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        prog = progress_of(tmp_path / "c.db") if (tmp_path / "c.db").exists() else None
        if prog is not None and prog.done >= 1:
            break
        assert proc.poll() is None, "the campaign ended before it could be killed"
        time.sleep(0.2)
    else:
        pytest.fail("no point finished within 240 s")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with CampaignStore(tmp_path / "c.db", readonly=True) as st:
        first = st.table()
    assert 1 <= len(first) < 4
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "resumed campaign" in out.stderr or f"{len(first)} of 4 points done" in out.stderr
    with CampaignStore(tmp_path / "c.db", readonly=True) as st:
        table, attempts = st.table(), st.attempts()
    assert len(table) == 4 and (table.kernel_cycles > 0).all()
    for _, row in first.iterrows():  # done before the kill: kept as it was, never run again
        again = table[table.freq_mhz.eq(row.freq_mhz) & table.cu_per_sa.eq(row.cu_per_sa) & table.line.eq(row.line)]
        assert again.kernel_cycles.tolist() == [row.kernel_cycles]
    runs = attempts.groupby("idx").size()
    assert (runs[attempts[attempts.outcome == "done"].idx.unique()] >= 1).all()
    assert (attempts.outcome == "done").sum() == 4
    assert pd.read_csv(tmp_path / "r.csv").shape[0] == 4


def test_impossible_configurations_are_refused_with_their_reason(binary, tmp_path):
    backend = mgpusim.MgpusimBackend("matmul", size=SIZE, binary=str(binary), workdir=str(tmp_path))
    bad = POINTS.copy()
    bad.loc[1, "line"] = 32
    bad.loc[3, "mem_banks"] = 64
    with pytest.raises(BackendError) as e:
        backend.check_table(bad, "p.csv")
    msg = str(e.value)
    assert "p.csv: MGPUSim cannot assemble 2 of 4 point(s)" in msg
    assert "row 2: -line=32" in msg and "row 4: -mem-banks=64: at most 32 banks" in msg
    with pytest.raises(BackendError, match=r"column\(s\) simd, which MGPUSim does not take"):
        backend.check_table(POINTS.assign(simd=8))
    with pytest.raises(BackendError, match=r"row 1: l2_kb = 1.5: give a whole number"):
        backend.check_table(POINTS.assign(l2_kb=1.5))
    with pytest.raises(BackendError, match=r"-size=33 for matmul .*multiple of 32"):
        mgpusim.MgpusimBackend("matmul", size=33, binary=str(binary)).check_table(POINTS)
    with pytest.raises(BackendError, match="unknown MGPUSim benchmark 'gemm'"):
        mgpusim.MgpusimBackend("gemm", binary=str(binary))
    # the program itself: exit 2 and one line
    out = subprocess.run([str(binary), "-l2-kb", "100"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        "invalid configuration: -l2-kb=100 over 16 banks gives 6400 bytes per L2 slice: must be a power-of-two "
        "number of 16-way sets of 64-byte lines"]
    # the CLI: before anything runs, one error line, exit 2
    bad.to_csv(tmp_path / "bad.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "gpudse_core", "simulate", "bad.csv", "--backend", "mgpusim",
                          "-o", "r.csv"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("gpudse: error: bad.csv: MGPUSim cannot assemble 2 of 4")
    assert not (tmp_path / "r.db").exists()


def test_missing_go_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUDSE_CACHE", str(tmp_path))  # nothing built there
    monkeypatch.delenv("GPUDSE_GO", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(mgpusim, "GO_FALLBACKS", ())
    with pytest.raises(mgpusim.MgpusimError, match=r"needs the Go toolchain \('go', 1.20 or newer\).*no 'go' on PATH"):
        mgpusim.build()
    monkeypatch.setenv("GPUDSE_GO", str(tmp_path / "go"))
    with pytest.raises(mgpusim.MgpusimError, match=r"\$GPUDSE_GO=.*not an executable file"):
        mgpusim.find_go()
    out = subprocess.run([sys.executable, "-m", "gpudse_core", "mgpusim", "build"], cwd=tmp_path,
                         env={**ENV, "GPUDSE_CACHE": str(tmp_path), "GPUDSE_GO": str(tmp_path / "go")},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.startswith("gpudse: error: $GPUDSE_GO=")


def test_an_unreachable_module_proxy_is_reported_as_blocked_with_gos_error(monkeypatch, tmp_path):
    try:
        mgpusim.find_go()
    except mgpusim.MgpusimError as e:
        pytest.skip(f"no Go toolchain: {e}")
    monkeypatch.setenv("GPUDSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "modules"))  # nothing downloaded yet
    monkeypatch.setenv("GOPROXY", "off")
    lines = []
    with pytest.raises(mgpusim.MgpusimError) as e:
        mgpusim.build(progress=lines.append)
    msg = str(e.value)
    assert msg.startswith("downloading modules MGPUSim failed (mod download in ")
    assert "@v" in msg and "module lookup disabled by GOPROXY=off" in msg  # go's own words, naming a module
    assert msg.endswith(mgpusim.BLOCKED_HINT)
    assert lines and lines[0].startswith(f"fetching {mgpusim.MODULE} {mgpusim.VERSION}")
    assert not any((tmp_path / "cache").rglob(mgpusim.BINARY))


def test_a_silent_hang_of_go_is_stopped(monkeypatch, tmp_path):
    """A download that stalls without printing anything is killed at the build timeout, with the reason."""
    monkeypatch.setattr(mgpusim, "BUILD_TIMEOUT_S", 0.5)
    start = time.monotonic()
    with pytest.raises(mgpusim.MgpusimError, match=r"downloading modules MGPUSim took longer than 0.5 s and was "
                                                   r"stopped; the Go module proxy refused or could not be reached"):
        mgpusim._run_go([sys.executable, "-c", "import time; time.sleep(30)"], tmp_path, dict(os.environ),
                        lambda line: None, "downloading modules", keep=lambda line: True)
    assert time.monotonic() - start < 20


def test_mgpusim_options_with_another_backend_are_refused(tmp_path):
    POINTS.to_csv(tmp_path / "p.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "gpudse_core", "simulate", "p.csv", "--benchmark", "fir", "-o",
                          "r.csv"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--benchmark, --size, --timeout and --verify set up --backend mgpusim" in out.stderr
    assert not (tmp_path / "r.db").exists()


def test_binary_is_keyed_by_the_sources(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(mgpusim.source_dir(), src)
    before = mgpusim.source_hash(src)
    assert before == mgpusim.source_hash()
    (src / "main.go").write_text((src / "main.go").read_text() + "\n// changed\n")
    assert mgpusim.source_hash(src) != before


def test_go_sources_are_gofmt_clean():
    gofmt = shutil.which("gofmt") or ("/usr/local/go/bin/gofmt" if os.access("/usr/local/go/bin/gofmt", os.X_OK)
                                      else None)
    if gofmt is None:
        pytest.skip("no gofmt (Go toolchain) on this machine")
    out = subprocess.run([gofmt, "-l", str(mgpusim.source_dir())], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "", out.stdout


def test_dashboard_runs_mgpusim_and_uses_its_results(binary, tmp_path, monkeypatch):
    """The Simulations page offers MGPUSim for the mgpusim preset's samples; a campaign started there runs real
    timing simulations as a workspace job and its results become the workspace's."""
    pytest.importorskip("streamlit")
    from gpudse_core import load_preset, sample
    from test_app import button, goto, new_app, ok, wait_jobs, ws

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    assert isinstance(binary, Path) and binary.is_file()  # the page finds the same build, offers no Build button
    app = new_app()
    w = ws(app)
    space = load_preset("mgpusim")
    with w.batch():
        w.set_space(space, "preset mgpusim")
        w.set_samples(sample(space, 2, seed=5), "uniform, seed 5")
    goto(app, "Simulations")
    assert app.radio[0].value.startswith("MGPUSim")  # chosen by default for this space
    assert [b.label for b in app.button if b.label == "Build MGPUSim"] == []
    app.multiselect[0].set_value(["bfs"]).run()
    next(n for n in app.number_input if n.label.startswith("Problem size")).set_value(64).run()
    ok(app, "choose bfs on 64 nodes")
    assert any("launches 1 work-group(s) per kernel" in x.value for x in app.warning)
    button(app, "Start").click().run()
    ok(app, "start the campaign")
    wait_jobs(app)
    results = w.get("results")
    assert results.ok and "bfs" in results.origin
    table = results.value.table
    assert len(table) == 2 and (table.kernel_cycles > 0).all() and table.instructions.nunique() == 1


# ---- the architect's metrics, suites, the work-group plan and the cache ------------------------------------
def _run(binary: Path, tmp_path: Path, *flags: str) -> dict:
    out = subprocess.run([str(binary), *flags], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_kernel_time_without_launch_occupancy_cpi_and_tlbs(binary, tmp_path):
    """matmul 64 x 64 is 4 work-groups of one wavefront: on 16 CUs the 40-slot occupancy is at most 4 / 640, the
    command processor's execution is shorter than the driver's launch-to-completion time, and MGPUSim's CPI stack
    partitions the CUs' time (its parts add up to the total)."""
    doc = _run(binary, tmp_path, "-benchmark", "matmul", "-size", "64", "-sa", "4")
    assert doc["work_groups"] == 4 and doc["wavefronts"] == 4 and doc["kernel_launches"] == 1
    assert 0 < doc["kernel_exec_s"] < doc["kernel_time_s"]
    assert doc["launch_overhead_s"] == pytest.approx(doc["kernel_time_s"] - doc["kernel_exec_s"])
    assert doc["kernel1_exec_s"] == pytest.approx(doc["kernel_exec_s"])
    assert 0 < doc["occupancy"] <= 4 / (16 * 40)
    assert 0 < doc["simd_busy"] < 1
    parts = sum(v for k, v in doc.items() if k.startswith("cpi_") and k != "cpi_total")
    assert parts == pytest.approx(doc["cpi_total"], rel=0.01) and doc["cpi_valu"] > 0
    assert doc["l1v_tlb_hits"] + doc["l1v_tlb_misses"] > 0 and 0 <= doc["l1v_tlb_hit_rate"] <= 1
    moved = doc["dram_read_bytes"] + doc["dram_write_bytes"]
    assert doc["dram_bandwidth_gbs"] == pytest.approx(moved / doc["kernel_exec_s"] / 1e9)
    (tmp_path / "m.json").write_text(json.dumps(doc))
    parsed = mgpusim.parse_metrics(tmp_path / "m.json")
    assert {"kernel_exec_s", "occupancy", "cpi_total", "l1v_tlb_hit_rate"} <= set(parsed)


def test_per_kernel_times_of_a_multi_kernel_benchmark(binary, tmp_path):
    """kmeans launches two kernels (swap, then compute per iteration): each code object's time is reported and
    they add up to the whole execution; every launch has the work-groups the plan says."""
    doc = _run(binary, tmp_path, "-benchmark", "kmeans", "-size", "64", "-sa", "4")
    plan = mgpusim.plan(binary, "kmeans", 64)
    assert doc["kernel_codes"] == 2 and doc["kernel_launches"] > 2
    assert doc["kernel1_exec_s"] + doc["kernel2_exec_s"] == pytest.approx(doc["kernel_exec_s"])
    assert doc["work_groups"] == plan["work_groups"] * doc["kernel_launches"]
    assert [k["kernel"] for k in doc["kernels"]][:2] == [1, 2]


@pytest.mark.parametrize("bench,size", [("matmul", 96), ("fir", 512), ("aes", 2048), ("bfs", 2048),
                                        ("stencil2d", 64)])
def test_plan_gives_the_work_groups_each_launch_has(binary, tmp_path, bench, size):
    """The launch warning rests on -plan: its work-groups per launch are what the simulation launches."""
    plan = mgpusim.plan(binary, bench, size)
    doc = _run(binary, tmp_path, "-benchmark", bench, "-size", str(size), "-sa", "4", "-count-insts=false")
    assert plan["size"] == size and doc["work_groups"] == plan["work_groups"] * doc["kernel_launches"]


def test_default_sizes_fill_the_baseline_gpu(binary):
    """At every default size each launch has at least as many work-groups as the R9 Nano has CUs (64)."""
    for b in mgpusim.benchmarks(binary):
        assert mgpusim.plan(binary, b["name"])["work_groups"] >= 64, b["name"]


def test_launch_warning_and_timeouts_scale_with_the_size(binary):
    small = mgpusim.MgpusimBackend("matmul", size=64, binary=str(binary))
    small.check_table(POINTS)  # 4 to 16 CUs
    assert len(small.warnings) == 1 and "launches 4 work-group(s) per kernel" in small.warnings[0]
    assert "3 of 4 design(s) (up to 16)" in small.warnings[0]
    wide = mgpusim.MgpusimBackend("matmul", size=128, binary=str(binary))
    wide.check_table(POINTS)
    assert wide.warnings == []  # 16 work-groups, at most 16 CUs
    default = mgpusim.plan(binary, "matmul")["default_size"]
    base = mgpusim.MgpusimBackend("matmul", binary=str(binary))
    double = mgpusim.MgpusimBackend("matmul", size=2 * default, binary=str(binary))
    assert base.timeouts == [mgpusim.TIMEOUT_BASE_S] and double.timeouts == [8 * mgpusim.TIMEOUT_BASE_S]
    assert mgpusim.MgpusimBackend("matmul", size=32, binary=str(binary)).timeouts == [mgpusim.TIMEOUT_BASE_S]
    assert mgpusim.MgpusimBackend("matmul", timeout=5, binary=str(binary)).timeouts == [5.0]
    with pytest.raises(BackendError, match=r"-size=33 for matmul .*multiple of 32"):
        mgpusim.MgpusimBackend("matmul", size=33, binary=str(binary))


def test_workload_lists_are_checked():
    assert mgpusim.parse_workloads("matmul:512, fir") == [("matmul", 512), ("fir", 0)]
    assert mgpusim.parse_workloads("fir", 1024) == [("fir", 1024)]
    for text, size, msg in [("matmul,matmul", 0, "given twice"), ("gemm", 0, "unknown MGPUSim benchmark 'gemm'"),
                            ("matmul,fir", 64, "for a suite give each its size"), ("fir:x", 0, "whole number"),
                            ("", 0, "no MGPUSim benchmark")]:
        with pytest.raises(BackendError, match=msg):
            mgpusim.parse_workloads(text, size)
    assert mgpusim.geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        mgpusim.geometric_mean([1.0, 0.0])


def test_a_suite_reports_each_benchmark_and_the_geometric_mean(binary, tmp_path):
    backend = mgpusim.MgpusimBackend("matmul:32,fir:256", binary=str(binary), workdir=str(tmp_path), verify=True)
    first = backend.run_one(0, POINTS.iloc[0].to_dict(), 1)
    second = backend.run_one(1, POINTS.iloc[1].to_dict(), 1)
    assert first.ok and second.ok, (first.error, second.error)
    r = first.result
    assert r["geomean_kernel_exec_s"] == pytest.approx((r["matmul_kernel_exec_s"] * r["fir_kernel_exec_s"]) ** 0.5)
    assert r["wall_seconds"] == pytest.approx(r["matmul_wall_seconds"] + r["fir_wall_seconds"])
    assert set(r) <= set(choices.MGPUSIM_SUITE_METRICS) | {"wall_seconds"}
    assert r["matmul_verified"] == 1 and r["fir_verified"] == 1  # the first point is checked against the CPU
    assert second.result["matmul_verified"] == 0
    assert backend.spec()["sizes"] == [32, 256]
    run_dir = Path(first.attempts[-1].run_dir)
    assert {p.name for p in run_dir.glob("metrics-*.json")} == {"metrics-matmul.json", "metrics-fir.json"}


def test_search_drives_mgpusim(binary, tmp_path):
    """gpudse search --backend mgpusim runs its rounds as MGPUSim campaigns and minimises the kernels' time."""
    cmd = [sys.executable, "-m", "gpudse_core", "search", "mgpusim", "--backend", "mgpusim", "--benchmark",
           "matmul:32", "--goal", "min", "--budget", "3", "--initial", "2", "--workers", "2", "-o", "h.csv"]
    out = subprocess.run(cmd, cwd=tmp_path, env={**ENV, "GPUDSE_CACHE": str(mgpusim.cache_root())},
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    history = pd.read_csv(tmp_path / "h.csv")
    assert len(history) == 3 and (history.status == "ok").all() and (history.kernel_exec_s > 0).all()
    assert "best kernel_exec_s" in out.stdout
    assert "launches 1 work-group(s) per kernel" in out.stderr  # 32 x 32 on up to 128 CUs
    assert any((tmp_path / "h.db.runs").rglob("metrics.json"))


def test_relative_cache_folder_is_made_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUDSE_CACHE", "rel-cache")
    assert mgpusim.cache_root() == tmp_path / "rel-cache"
    assert mgpusim.binary_path().is_absolute()


def test_damaged_cached_binary_is_rebuilt(binary, tmp_path, monkeypatch):
    """A truncated binary in the cache fails the self-check; build() says so and builds a working one."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("GPUDSE_CACHE", str(cache))
    target = mgpusim.binary_path()
    target.parent.mkdir(parents=True)
    target.write_bytes(binary.read_bytes()[:4096])
    target.chmod(0o755)
    assert mgpusim.self_check(target) != ""
    lines: list[str] = []
    built = mgpusim.build(progress=lines.append)
    assert built == target and mgpusim.self_check(built) == ""
    assert any("fails its self-check" in ln and "rebuilding" in ln for ln in lines)


def test_search_page_core_runs_mgpusim_rounds_as_workspace_campaigns(binary, tmp_path, monkeypatch):
    """start_search with the MGPUSim backend (the Search page's choice for the mgpusim space) stores the study
    and runs every round as a campaign in the workspace's store."""
    from gpudse_core.search.runner import start_search
    from gpudse_core.space.presets import load_space
    from gpudse_core.workspace import create_workspace, open_workspace

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    ws, _ = create_workspace("mgpusim search")
    ws.put("space", load_space("mgpusim"))
    backend = mgpusim.MgpusimBackend("matmul:32", binary=str(binary), workdir=str(tmp_path / "runs"))
    job = start_search(ws, "mgpusim matmul", "min", budget=3, batch=1, initial=2, response="kernel_exec_s",
                       backend=backend)
    assert job.wait(900)
    w = open_workspace(ws.id, trusted=True)
    doc = w.get("search").value.to_stored()
    assert len(doc["trials"]) == 3 and all(t["value"] > 0 for t in doc["trials"])
    assert doc["settings"]["response"] == "kernel_exec_s"
    for k, n in enumerate((2, 1)):  # the initial sample's round, then one proposal, each a campaign in the store
        with CampaignStore(w.path, name=f"{ws.id}/search-{k:05d}") as store:
            assert store.spec()["backend"] == "mgpusim" and store.progress().done == n
    assert len(list((tmp_path / "runs").rglob("metrics.json"))) == 3


@pytest.mark.slow
def test_search_page_offers_mgpusim_benchmarks_for_its_space(tmp_path, monkeypatch):
    pytest.importorskip("streamlit")
    from gpudse_core import load_preset
    from test_app import goto, new_app, ok, ws

    monkeypatch.setenv("GPUDSE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GPUDSE_SINGLE_USER", raising=False)
    app = new_app()
    ws(app).set_space(load_preset("mgpusim"), "preset mgpusim")
    goto(app, "Search")
    ok(app, "open the Search page on the mgpusim space")
    assert [m.label for m in app.multiselect][:1] == ["Benchmarks (MGPUSim, default sizes)"]
    assert app.selectbox(key="se_response").value == "kernel_exec_s"
    app.multiselect[0].set_value(["matmul", "fir"]).run()
    assert app.selectbox(key="se_response").value == "geomean_kernel_exec_s"


def test_a_suites_columns_are_outputs_not_parameters():
    """fit and validate without --params take the design parameters of a suite's results, never the
    per-benchmark metrics or their geometric mean."""
    from gpudse_core.cli.common import default_params

    cols = list(choices.MGPUSIM_PARAMETERS) + ["matmul_kernel_exec_s", "fir_kernel_exec_s", "fir_occupancy",
                                                "fir_cpi_vmem", "geomean_kernel_time_s", "geomean_kernel_exec_s",
                                                "wall_seconds"]
    params, note = default_params(cols, "geomean_kernel_exec_s")
    assert params == list(choices.MGPUSIM_PARAMETERS), note


def test_launch_warning_for_points_that_keep_the_baseline_cus(binary):
    """Points without the CU columns keep the R9 Nano's 64 CUs, which bfs on 1,024 nodes (1 work-group) cannot fill."""
    backend = mgpusim.MgpusimBackend("bfs", size=1024, binary=str(binary))
    backend.check_table(POINTS[["l2_kb", "freq_mhz"]])
    assert len(backend.warnings) == 1 and "4 of 4 design(s) (up to 64)" in backend.warnings[0]


@pytest.mark.parametrize("launches, says", [(1, "although the command processor ran 1 kernel"),
                                            (0, "launched no kernel")])
def test_a_run_without_kernel_time_is_refused_with_the_reason(tmp_path, launches, says):
    """A metrics file with kernel_cycles 0 is not a result; the message tells a missing driver trace (kernels
    ran) from a benchmark that launched nothing."""
    (tmp_path / "m.json").write_text(json.dumps({"kernel_cycles": 0, "kernel_time_s": 0, "kernel_launches": launches,
                                                 "kernel_exec_s": 2.4e-05}))
    with pytest.raises(mgpusim.MgpusimError, match=says):
        mgpusim.parse_metrics(tmp_path / "m.json")
