"""Property-based fuzzing of the simulator-facing parsers, each in a memory-capped child
(tests/bounded.py): the GPGPU-Sim log parser (plain, gzipped, huge, bombs, chunk boundaries, RE2
patterns), the config reader/writer, and the backend description reader. Each input gives our error or
a valid result, within the memory and time budget."""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gpudse_core import limits
from gpudse_core.errors import GpudseError
from gpudse_core.sim import gpgpusim
from gpudse_core.sim.command import BackendError, CommandBackend
from gpudse_core.sim.gpgpusim import GpgpuSimConfig, ParseError, compile_patterns, parse_log
from gpudse_core.sim.supervise import TRUNCATION_MARK

from bounded import bounded

FUZZ = settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                         HealthCheck.too_slow], deadline=None)
NUM = st.one_of(st.integers(-10**6, 10**12).map(str), st.floats(allow_nan=False, allow_infinity=False).map(repr),
                st.sampled_from(["1e999", "nan", ".5", "-0", "12e", "0x10", "9" * 400]))
LOG_LINE = st.one_of(
    st.builds(lambda n: f"kernel_name = {n}", st.from_regex(r"[a-z_0-9]{1,12}", fullmatch=True)),
    st.builds(lambda m, v, sp: f"{m}{sp}={sp}{v}", st.sampled_from(gpgpusim.METRICS), NUM,
              st.sampled_from(["", " ", "  ", "\t"])),
    st.builds(lambda v: f"n_cmd=10 n_activity=20 dram_eff={v}", NUM),
    st.builds(lambda n: f"{TRUNCATION_MARK} {n} bytes of output dropped (limit sim_output_bytes = 8)]",
              st.integers(0, 10**30)),
    st.text(max_size=80).map(lambda t: t.replace("\n", " ")),
    st.just(""),
)


def _valid(log) -> None:
    t = log.totals()
    assert all(isinstance(v, float) for v in t.values())
    if "ipc" in t:
        assert t["cycles"] > 0


# ---- the log parser ---------------------------------------------------------------------------------
@bounded(mem_mb=1536, max_rss_mb=400, timeout=600)
@FUZZ
@given(st.lists(LOG_LINE, max_size=40), st.sampled_from(["\n", "\r\n"]),
       st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True),
                       st.sampled_from([r"rays\s*=\s*(\d+)", r"^(\d+)$", r"(\S+)", r"x(\d*)y", r"(a|b)+", r"(=)"]),
                       max_size=3))
@pytest.mark.slow
def test_log_parser_gives_a_result_or_our_error(tmp_path_factory, lines, nl, extra):
    text = nl.join(lines) + nl
    try:
        from_text = parse_log("run.log", text=text, extra=extra)
    except ParseError as e:
        assert "not a number" in str(e)
        return
    _valid(from_text)
    d = tmp_path_factory.mktemp("log")
    (d / "run.log").write_bytes(text.encode("utf-8", errors="surrogatepass"))
    (d / "run.log.gz").write_bytes(gzip.compress(text.encode("utf-8", errors="surrogatepass")))
    for name in ("run.log", "run.log.gz"):  # the same statistics from a file, plain or gzipped
        try:
            got = parse_log(d / name, extra=extra)
        except ParseError:
            assert any(0xD800 <= ord(c) <= 0xDFFF for c in text)  # a lone surrogate decodes differently
            continue
        if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            assert got.totals() == from_text.totals() and got.dropped == from_text.dropped


@pytest.mark.slow
@bounded(mem_mb=1536, max_rss_mb=400, timeout=600)
@FUZZ
@given(st.lists(LOG_LINE, max_size=30), st.integers(1, 64), st.integers(4, 64))
def test_chunk_boundaries_do_not_change_the_result(lines, chunk, max_line):
    """Streaming in chunks of any size (lines cut only beyond MAX_LINE) reads what a single block reads."""
    text = "\n".join(lines) + "\n"
    if len(max(lines, key=len, default="")) >= max_line:
        max_line = 10**6
    extra = {"rays": r"rays\s*=\s*(\d+)", "any": r"(\d+)$"}
    try:
        whole = parse_log("x", text=text, extra=extra).totals()
    except ParseError:
        return
    data = text.encode()
    saved = gpgpusim.CHUNK, gpgpusim.MAX_LINE
    gpgpusim.CHUNK, gpgpusim.MAX_LINE = chunk, max_line
    try:
        parser = gpgpusim._LogParser(compile_patterns(extra))
        parser.feed_all(gpgpusim._blocks(iter([data[i:i + chunk] for i in range(0, len(data), chunk)])))
        streamed = parser.result("x").totals()
        texted = parse_log("x", text=text, extra=extra).totals()
    finally:
        gpgpusim.CHUNK, gpgpusim.MAX_LINE = saved
    assert streamed == whole and texted == whole


PIECE = st.sampled_from(["a", "b", "=", " ", "x", "1", "23", r"\d", r"\d+", r"\s*", "[ab]", "(?:a|b)", ".", "a?",
                         "b*", "^", "$", r"\w+"])


@bounded(mem_mb=1536, max_rss_mb=400, timeout=600)
@FUZZ
@given(st.lists(PIECE, max_size=4), st.lists(PIECE, min_size=1, max_size=3), st.lists(PIECE, max_size=3),
       st.lists(st.text(alphabet="ab= x123\t", max_size=20), max_size=12))
@pytest.mark.slow
def test_user_patterns_match_line_by_line_like_python_re(before, inside, after, lines):
    """RE2 over whole blocks (never_nl) finds the same last match as Python's re applied line by line
    (matches with an empty group carry no number and are skipped)."""
    pattern = "".join(before) + "(" + "".join(inside) + ")" + "".join(after)
    try:
        ref = re.compile(pattern)
    except re.error:
        return
    rx = compile_patterns({"m": pattern})["m"]
    want = None
    for line in lines:
        for m in ref.finditer(line):
            want = m.group(1) or want
    parser = gpgpusim._LogParser({"m": rx})
    parser.feed_all(["".join(line + "\n" for line in lines)])
    assert parser.extras.get("m") == want


def _bomb(path: Path, mib: int, line: bytes = b"0" * 1023 + b"\n") -> None:
    """A gzip file of *mib* MiB of *line*s, written in pieces (small on disk)."""
    block = line * ((1 << 20) // len(line))
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        for _ in range(mib):
            fh.write(comp.compress(block))
        fh.write(comp.flush())


@pytest.mark.slow
@bounded(mem_mb=1024, max_rss_mb=250, timeout=600)
def test_gzipped_log_bomb_stops_at_the_limit(tmp_path):
    bomb = tmp_path / "run.log.gz"
    _bomb(bomb, 300)
    assert bomb.stat().st_size < 2 * 2**20
    with pytest.raises(limits.LimitError, match="log_gzip_ratio"):  # by default: its expansion, within seconds
        parse_log(bomb)
    with limits.override(log_bytes=64 * 2**20, log_gzip_ratio=10**9), pytest.raises(limits.LimitError,
                                                                                    match="log_bytes"):
        parse_log(bomb)
    one_line = tmp_path / "line.log.gz"  # 200 MiB without a newline: cut, never held whole
    _bomb(one_line, 200, b"x" * 1024)
    with limits.override(log_gzip_ratio=10**9):
        assert parse_log(one_line).kernels == []


def test_a_dense_log_is_bounded_by_its_statistics(tmp_path):
    """Each statistic line costs Python work: a log of nothing else is stopped by their number, not after
    minutes (a 4 MB .gz of 1 GiB kernel dumps took 169 s before the limit), and a real log is far below."""
    block = "kernel_name = k\ngpu_sim_cycle = 1000\ngpu_sim_insn = 5000\ngpu_ipc = 5.0\n"
    path = tmp_path / "dense.log"
    path.write_text(block * 30_000)  # 120,000 statistic lines
    with limits.override(log_statistics=100_000), pytest.raises(limits.LimitError, match="log_statistics"):
        parse_log(path)
    assert parse_log(path).totals()["kernels"] == 30_000


@pytest.mark.slow
@bounded(mem_mb=1024, max_rss_mb=250, timeout=600)
def test_a_large_log_is_parsed_in_bounded_memory(tmp_path):
    """300 MiB of kernel dumps (the old reader held the text and its lines: > 1 GB) in < 250 MB."""
    dump = "".join(f"kernel_name = k{i}\ngpu_sim_cycle = 1000\ngpu_sim_insn = 2000\ngpu_tot_sim_cycle = "
                   f"{1000 * (i + 1)}\n" + "shader 0 stats = 1\n" * 40 for i in range(4))
    reps = 300 * 2**20 // len(dump)
    path = tmp_path / "run.log.gz"
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        for _ in range(reps):
            fh.write(comp.compress(dump.encode()))
        fh.write(comp.flush())
    with limits.override(log_gzip_ratio=10**9):  # identical dumps compress far beyond a real log's ~10x
        t = parse_log(path).totals()
    assert t["kernels"] == 4 * reps and t["cycles"] == 1000 * 4 * reps and t["ipc"] == 2.0


@pytest.mark.slow
@bounded(mem_mb=1024, max_rss_mb=300, timeout=120)
def test_catastrophic_user_pattern_runs_in_linear_time():
    line = "a" * 200_000 + "!"
    log = parse_log("x", text=f"kernel_name = k\ngpu_sim_cycle = 5\n{line}\n", extra={"m": r"(a+)+$"})
    assert "m" not in log.extra  # Python's re would backtrack here for longer than the universe exists


# ---- the config reader/writer -----------------------------------------------------------------------
_REFERENCE = re.compile(r"^(\s*)(-\S+)(\s+)([^#\n]*?)(\s*)(#.*)?$")  # the grammar, as the old quadratic regex


@pytest.mark.slow
@bounded(mem_mb=1536, max_rss_mb=400, timeout=600)
@FUZZ
@given(st.text(alphabet=st.sampled_from(list("-ab# \t\r\x0b\x1c\u2003=:,1")), max_size=30))
def test_config_line_split_matches_the_grammar(line):
    ref = _REFERENCE.match(line)
    got = gpgpusim._split(line)
    if ref is None:
        assert got is None
    else:
        assert got == (ref.group(1), ref.group(2), ref.group(3), ref.group(4), ref.group(5), ref.group(6))


@bounded(mem_mb=1536, max_rss_mb=400, timeout=600)
@FUZZ
@given(st.text(max_size=400), st.from_regex(r"-?[a-z_:]{1,12}", fullmatch=True),
       st.text(min_size=1, max_size=20), st.one_of(st.none(), st.text(max_size=10)))
@pytest.mark.slow
def test_config_round_trip_and_set_on_any_text(text, option, value, comment):
    cfg = GpgpuSimConfig.parse(text)
    assert cfg.to_text() == text
    before = cfg.options()
    try:
        cfg.set(option, value, comment=comment if comment and "\n" not in comment and "\r" not in comment else None)
    except GpudseError:
        assert not value.strip() or any(c in value for c in "\n\r#")
        return
    again = GpgpuSimConfig.parse(cfg.to_text())
    name = option if option.startswith("-") else "-" + option
    assert again.get(name) == value.strip()
    assert {k: v for k, v in again.options().items() if k != name} == {k: v for k, v in before.items() if k != name}


@pytest.mark.slow
@bounded(mem_mb=1024, max_rss_mb=300, timeout=120)
def test_pathological_config_line_is_linear():
    cfg = GpgpuSimConfig.parse("-gpgpu_a b" + " " * 2_000_000 + "x\n")
    assert cfg.get("gpgpu_a") == "b" + " " * 2_000_000 + "x"


# ---- the backend description reader -------------------------------------------------------------------
def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + "}"


SCALAR = st.one_of(st.text(max_size=12), st.integers(-10**20, 10**20), st.floats(), st.booleans())
VALUE = st.recursive(SCALAR, lambda c: st.one_of(st.lists(c, max_size=4),
                                                 st.dictionaries(st.text(max_size=6), c, max_size=4)), max_leaves=12)
FIELDS = st.sampled_from(list(CommandBackend.FIELDS) + ["shell", "batch_size", ""])
GOOD = {"command": st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=4),
        "timeout": st.one_of(st.floats(), st.integers(-5, 10**12)),
        "metrics": st.lists(st.sampled_from(list(gpgpusim.METRICS) + ["cycles", "bogus"]), max_size=3),
        "env": st.dictionaries(st.text(max_size=8), SCALAR, max_size=3),
        "extra_metrics": st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True),
                                         st.text(alphabet="()\\d+s*=a[]|?", max_size=12), max_size=2),
        "log_name": st.text(max_size=10), "config_name": st.text(max_size=10), "workdir": st.text(max_size=10),
        "options": st.dictionaries(st.text(max_size=5), st.text(max_size=8), max_size=2)}


@st.composite
def backend_docs(draw):
    doc = {k: draw(GOOD[k]) for k in draw(st.lists(st.sampled_from(sorted(GOOD)), unique=True))}
    for _ in range(draw(st.integers(0, 2))):  # and some wrong types or unknown fields
        doc[draw(FIELDS)] = draw(VALUE)
    return doc


def _check_backend(be: CommandBackend) -> None:
    assert be.command and all(isinstance(a, str) and "\x00" not in a for a in be.command)
    assert math.isfinite(be.timeout) and 0 < be.timeout <= limits.current().timeout_max_s
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in be.env.items())
    for name in (be.log_name, be.config_name):
        assert "/" not in name and name not in (".", "..")
    compile_patterns(be.extra)


@pytest.mark.slow
@bounded(mem_mb=1536, max_rss_mb=400, timeout=600)
@FUZZ
@given(backend_docs(), st.sampled_from(["toml", "yaml"]))
def test_backend_reader_gives_a_valid_backend_or_our_error(tmp_path_factory, doc, fmt):
    import yaml

    d = tmp_path_factory.mktemp("be")
    path = d / f"sim.{fmt}"
    if fmt == "toml":
        path.write_text("".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in doc.items()), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    try:
        be = CommandBackend.from_file(path)
    except BackendError:
        return
    _check_backend(be)


@pytest.mark.slow
@bounded(mem_mb=1536, max_rss_mb=400, timeout=600)
@FUZZ
@given(st.binary(max_size=600), st.sampled_from(["toml", "yaml"]))
def test_backend_reader_on_arbitrary_bytes(tmp_path_factory, data, fmt):
    path = tmp_path_factory.mktemp("raw") / f"sim.{fmt}"
    path.write_bytes(data)
    try:
        _check_backend(CommandBackend.from_file(path))
    except BackendError:
        pass
