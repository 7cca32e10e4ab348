"""GPGPU-Sim-family logs and configs: real Vulkan-Sim logs, byte-exact config round trips, properties."""

from __future__ import annotations

import gzip

import pytest
from hypothesis import given, strategies as st

from gpudse_core.errors import GpudseError
from gpudse_core.sim.gpgpusim import GpgpuSimConfig, ParseError, parse_log

EXPECTED = {  # read off the logs by hand (grep); group -> (gpu_sim_cycle, gpu_sim_insn, gpu_ipc)
    0: (1335404, 29840466, 22.3456),
    1: (1162824, 26778821, 23.0291),
    2: (882413, 19080564, 21.6232),
    3: (1140294, 25366992, 22.246),
}


@pytest.mark.parametrize("group", range(4))
def test_real_vulkan_sim_logs(shared, group):
    log = parse_log(shared / f"data/zatel/gpgpusim/wknd_k4_group{group}_iter0.log.gz")
    t = log.require(["cycles", "gpu_ipc", "L1D_total_cache_miss_rate", "L2_total_cache_miss_rate", "bwutil",
                     "dram_eff", "rt_avg_efficiency"])
    cyc, insn, ipc = EXPECTED[group]
    assert t["cycles"] == cyc and t["insn"] == insn and t["gpu_ipc"] == ipc
    assert t["gpu_tot_sim_cycle"] == cyc and len(log.kernels) == 1
    assert 0 < t["L1D_total_cache_miss_rate"] < 1 and 0 < t["dram_eff"] < 1 and 0 < t["rt_avg_efficiency"] < 1


def test_group0_rates_exact(shared):
    t = parse_log(shared / "data/zatel/gpgpusim/wknd_k4_group0_iter0.log.gz").totals()
    assert (t["L1D_total_cache_miss_rate"], t["L2_total_cache_miss_rate"], t["dram_eff"], t["rt_avg_efficiency"]) \
        == (0.5504, 0.6871, 0.845, 0.191428)
    assert t["bwutil"] == pytest.approx(0.709639)


KERNEL = """kernel_name = {name}
kernel_launch_uid = {uid}
gpu_sim_cycle = {cyc}
gpu_sim_insn = {insn}
gpu_ipc =      {ipc:.4f}
gpu_tot_sim_cycle = {tot}
L2_total_cache_miss_rate = {l2}
n_cmd=10 n_activity=20 dram_eff={e1}
bwutil = {b1}
n_cmd=10 n_activity=20 dram_eff={e2}
bwutil = {b2}
"""


def test_kernel_series_totals_runtime():
    text = "GPGPU-Sim: starting\n" + KERNEL.format(name="bfs_k1", uid=1, cyc=1000, insn=5000, ipc=5, tot=1000, l2=0.5,
                                                   e1=0.4, b1=0.2, e2=0.6, b2=0.4) \
        + KERNEL.format(name="bfs_k2", uid=2, cyc=3000, insn=3000, ipc=1, tot=4000, l2=0.25, e1=0.5, b1=0.1, e2=0.7,
                        b2=0.3)
    log = parse_log("run.log", text=text, extra={"uid": r"kernel_launch_uid = (\d+)"})
    t = log.totals()
    assert [k.name for k in log.kernels] == ["bfs_k1", "bfs_k2"]
    assert t["cycles"] == 4000 and t["insn"] == 8000 and t["ipc"] == 2.0  # Stargazer §6.2: totals
    assert t["L2_total_cache_miss_rate"] == 0.25 and t["gpu_tot_sim_cycle"] == 4000
    assert t["dram_eff"] == pytest.approx(0.6) and t["bwutil"] == pytest.approx(0.2)  # channel means
    assert t["uid"] == 2


@pytest.mark.parametrize("text", ["", "Segmentation fault (core dumped)\n", "gpu_sim_cycle = 10\n",
                                  "kernel_name = k\ngpu_sim_cycle = banana\n"])
def test_garbage_output_is_a_clear_error(text):
    with pytest.raises(ParseError, match="no cycles in the output"):
        parse_log("run.log", text=text).require(["cycles"])


def test_bad_extra_patterns():
    with pytest.raises(ParseError, match="invalid"):
        parse_log("x", text="", extra={"m": "("})
    with pytest.raises(ParseError, match="one \\(group\\)"):
        parse_log("x", text="", extra={"m": "abc"})


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999"])
def test_an_extra_metric_that_matches_no_finite_number_is_refused(value):
    """As the built-in statistics skip 1e999, a metric's pattern matching 'nan' or an infinity names the
    metric instead of recording a value that means nothing (found by the fuzz test: 'gpu_sim_cycle = nan'
    with the pattern (\\S+))."""
    with pytest.raises(ParseError, match=f"metric 'm': matched '{value}', which is not a number a statistic"):
        parse_log("run.log", text=f"gpu_sim_cycle = 5\nm = {value}\n", extra={"m": r"m = (\S+)"})
    assert parse_log("run.log", text="gpu_sim_cycle = 5\nm = 7.5\n", extra={"m": r"m = (\S+)"}).totals()["m"] == 7.5


def test_missing_and_truncated_files(tmp_path):
    with pytest.raises(ParseError, match="no such file"):
        parse_log(tmp_path / "none.log")
    bad = tmp_path / "cut.log.gz"
    bad.write_bytes(gzip.compress(b"kernel_name = k\ngpu_sim_cycle = 5\n")[:20])
    with pytest.raises(ParseError, match="cannot be read"):
        parse_log(bad)


@pytest.mark.parametrize("name", ["mobile_soc", "mobile_soc_downscaled_k4", "rtx2060"])
def test_real_configs_round_trip_byte_for_byte(shared, name):
    path = shared / f"data/zatel/gpgpusim/{name}.config"
    text = path.read_text()
    assert GpgpuSimConfig.parse(text).to_text() == text


def test_downscaling_reproduces_the_real_k4_file(shared):
    base = shared / "data/zatel/gpgpusim"
    cfg = GpgpuSimConfig.load(base / "mobile_soc.config")
    assert (cfg.get("gpgpu_n_clusters"), cfg.get("-gpgpu_n_mem")) == ("8", "4")
    cfg.set("gpgpu_n_clusters", 8 // 4, comment="MODIFIED")
    cfg.set("-gpgpu_n_mem", 4 // 4, comment="MODIFIED")
    assert cfg.to_text() == (base / "mobile_soc_downscaled_k4.config").read_text()


def test_set_keeps_comments_and_last_occurrence_wins():
    cfg = GpgpuSimConfig.parse("# header\n-a 1  # keep me\n\n-b x\n-a 2\n")
    assert cfg.get("a") == "2"
    cfg.set("a", 7)
    cfg.set("c", "S:1:128", comment="new")
    assert cfg.to_text() == "# header\n-a 1  # keep me\n\n-b x\n-a 7\n-c S:1:128 # new\n"
    cfg2 = GpgpuSimConfig.parse("-a 1  # keep me\n")
    cfg2.set("a", 3)
    assert cfg2.to_text() == "-a 3  # keep me\n"
    with pytest.raises(GpudseError, match="one line"):
        cfg.set("a", "1 # no")


line = st.one_of(
    st.builds(lambda o, v, sp, c: f"-{o}{sp}{v}" + (f"  # {c}" if c else ""),
              st.from_regex(r"[a-z_:]{1,12}", fullmatch=True), st.from_regex(r"[0-9A-Za-z:,.]{1,10}", fullmatch=True),
              st.sampled_from([" ", "  ", "\t"]), st.one_of(st.none(), st.from_regex(r"[a-z ]{0,12}", fullmatch=True))),
    st.from_regex(r"#[^\n\r]{0,20}", fullmatch=True),
    st.just(""),
)


@given(st.lists(line, max_size=15), st.booleans(), st.sampled_from(["\n", "\r\n"]))
def test_config_round_trip_property(lines, trailing, nl):
    text = nl.join(lines) + (nl if trailing and lines else "")
    assert GpgpuSimConfig.parse(text).to_text() == text


@given(st.lists(line, min_size=1, max_size=10), st.from_regex(r"[0-9]{1,6}", fullmatch=True))
def test_set_changes_only_that_option(lines, value):
    cfg = GpgpuSimConfig.parse("\n".join(lines) + "\n")
    before = cfg.options()
    if not before:
        return
    opt = sorted(before)[0]
    cfg.set(opt, value)
    after = GpgpuSimConfig.parse(cfg.to_text()).options()
    assert after[opt] == value and {k: v for k, v in after.items() if k != opt} == \
        {k: v for k, v in before.items() if k != opt}


@given(st.lists(st.tuples(st.integers(1, 10**9), st.integers(0, 10**10)), min_size=1, max_size=5))
def test_log_totals_property(kernels):
    text = "".join(KERNEL.format(name=f"k{i}", uid=i, cyc=c, insn=n, ipc=n / c, tot=c, l2=0.5, e1=0.5, b1=0.5,
                                 e2=0.5, b2=0.5) + "noise line = garbage\n" for i, (c, n) in enumerate(kernels))
    t = parse_log("x", text=text).totals()
    assert t["cycles"] == sum(c for c, _ in kernels) and t["insn"] == sum(n for _, n in kernels)
    assert t["kernels"] == len(kernels)


# ---- bounded reading and truncated output --------------------------------------------------------
def test_truncated_output_uses_cumulative_counters_and_only_later_matches():
    """Output whose middle was dropped: kernels there cannot be summed, so cycles/insn come from the last
    dump's cumulative counters, 'kernels' is not claimed, and user metrics count only after the gap."""
    text = (KERNEL.format(name="k1", uid=1, cyc=1000, insn=5000, ipc=5, tot=1000, l2=0.5, e1=0.4, b1=0.2, e2=0.6,
                          b2=0.4) + "rays = 7\n"
            + "[gpudse: output dropped here: 123456 bytes of output dropped (limit sim_output_bytes = 8)]\n"
            + "gpu_sim_cycle = 3000\ngpu_tot_sim_cycle = 9000\ngpu_tot_sim_insn = 18000\n"
            + "L2_total_cache_miss_rate = 0.25\n")
    log = parse_log("run.log", text=text, extra={"rays": r"rays = (\d+)"})
    assert log.truncated and log.dropped == 123456
    t = log.totals()
    assert t["cycles"] == 9000 and t["insn"] == 18000 and t["ipc"] == 2.0 and "kernels" not in t
    assert t["L2_total_cache_miss_rate"] == 0.25 and "rays" not in t
    with pytest.raises(ParseError, match="truncated .*sim_output_bytes"):
        log.require(["rays"])


def test_many_kernels_are_summed_but_only_the_last_kept():
    text = "".join(f"kernel_name = k{i}\ngpu_sim_cycle = 10\ngpu_sim_insn = 30\n" for i in range(2500))
    log = parse_log("run.log", text=text)
    assert len(log.kernels) == 1000 and log.kernels[-1].name == "k2499"
    t = log.totals()
    assert t["kernels"] == 2500 and t["cycles"] == 25000 and t["ipc"] == 3.0


def test_non_finite_values_are_not_statistics():
    log = parse_log("run.log", text="kernel_name = k\ngpu_sim_cycle = 1e999\ngpu_sim_insn = 5\n")
    with pytest.raises(ParseError, match="no cycles"):
        log.require(["cycles"])


def test_config_files_are_read_up_to_the_document_limit(tmp_path):
    from gpudse_core import limits

    big = tmp_path / "huge.config"
    big.write_text("-gpgpu_n_clusters 8\n" + "# padding\n" * 200_000)
    with limits.override(document_bytes=1 << 20), pytest.raises(limits.LimitError, match="document_bytes"):
        GpgpuSimConfig.load(big)
    assert GpgpuSimConfig.load(big).get("gpgpu_n_clusters") == "8"


def test_option_names_and_values_that_would_corrupt_the_file_are_refused():
    cfg = GpgpuSimConfig.parse("-a 1\n")
    for option, value in (("-a", "2\r3"), ("-a", "2\n3"), ("-a", "  "), ("-a b", "1"), ("-x#", "1"), ("-", "1")):
        with pytest.raises(GpudseError):
            cfg.set(option, value)
    assert cfg.to_text() == "-a 1\n"
