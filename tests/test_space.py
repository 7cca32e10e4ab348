"""Design spaces: preset sizes from the papers, index arithmetic, enumeration, feasibility, bad input."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gpudse_core import limits
from gpudse_core import (Constraint, DesignSpace, Fixed, GpudseError, Group, Parameter, SpaceError, load_preset,
                         load_space, parse_space_text)


# ---- presets against the papers ------------------------------------------------------------
def test_stargazer_table2():
    s = load_preset("stargazer")
    assert s.size == 933_120
    expected = {
        "blk": (1, 2, 4, 8, 16), "cc": (1, 2, 4, 8, 16, 32), "tc": (1, 2, 4, 8, 16, 32), "smp": (1, 2, 4, 8),
        "ccp": (1, 2, 4, 8), "simd": (8, 16, 32), "mshr": (1, 2, 3), "dramq": (16, 32, 64),
        "intra": (1, 2, 4, 8), "inter": (2, 4, 6),
    }
    assert {p.name: p.values for p in s.parameters} == expected
    assert [p.display for p in s.parameters][:3] == ["#blk", "c$", "t$"]
    fixed = {f.name: f.value for f in s.fixed}
    assert fixed["cores"] == 30 and fixed["core_clock_mhz"] == 325 and fixed["dram_type"] == "GDDR3"
    assert len(s.fixed) == 10  # Table 3 has ten rows


def test_lee_brooks_table2():
    s = load_preset("lee-brooks")
    assert s.size == 937_500_000 and isinstance(s.size, int)
    assert s.radices == (10, 3, 10, 10, 5, 5, 5, 2, 5, 5, 5, 10)
    assert all(isinstance(d, Group) for d in s.dimensions)
    g3 = s.dimensions[2]
    assert [m.values for m in g3.members] == [tuple(range(40, 131, 10)), tuple(range(40, 113, 8)),
                                              tuple(range(42, 97, 6))]
    # one group index drives every member
    p = s.point(s.index({m.name: m.values[7] for d in s.dimensions for m in d.parameters
                         if d.size > 7} | {m.name: m.values[0] for d in s.dimensions for m in d.parameters
                                            if d.size <= 7}))
    assert p["gp_regs"] == 110 and p["fp_regs"] == 96 and p["sp_regs"] == 84


def test_zatel_table2_matches_real_configs(shared):
    s = load_preset("zatel")
    assert s.size == 2
    cfg = {}
    for name in ("mobile_soc", "rtx2060"):
        text = (shared / "data/zatel/gpgpusim" / f"{name}.config").read_text()
        cfg[name] = {m.group(1): m.group(2) for m in re.finditer(r"^(-\S+)\s+(\S+)", text, re.M)}
    for pos, name in enumerate(("mobile_soc", "rtx2060")):
        point = s.point(pos)
        for p in s.parameters:
            if p.option:
                assert int(cfg[name][p.option]) == point[p.name], (name, p.option)
    assert s.point(0)["gpu"] == "Mobile SoC" and s.point(1)["n_sm"] == 30


@pytest.mark.parametrize("name", ["stargazer", "lee-brooks", "zatel"])
def test_presets_round_trip_yaml_and_json(name, tmp_path):
    s = load_preset(name)
    for suffix in (".yaml", ".json"):
        path = s.save(tmp_path / f"x{suffix}")
        back = load_space(path)
        assert back.dimensions == s.dimensions and back.fixed == s.fixed and back.size == s.size


# ---- index arithmetic -----------------------------------------------------------------------
def make_space(radices):
    return DesignSpace(tuple(Parameter(f"p{i}", tuple(range(m))) for i, m in enumerate(radices)))


radices_st = st.lists(st.integers(1, 1000), min_size=1, max_size=12)


@given(radices=radices_st, data=st.data())
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_index_point_round_trip(radices, data):
    s = make_space(radices)
    assert s.size == math.prod(radices)
    i = data.draw(st.integers(0, s.size - 1))
    point = s.point(i)
    assert s.index(point) == i
    digits = s.decode([i])
    assert [int(x) for x in digits[0]] == [point[f"p{j}"] for j in range(len(radices))]
    assert int(s.encode(digits)[0]) == i


@given(radices=radices_st, data=st.data())
@settings(max_examples=100)
def test_decode_range_matches_decode(radices, data):
    s = make_space(radices)
    start = data.draw(st.integers(0, s.size - 1))
    count = data.draw(st.integers(0, min(50, s.size - start)))
    rng = s.decode_range(start, count)
    assert rng.shape == (count, len(radices))
    for k in range(count):
        assert [int(x) for x in rng[k]] == list(s.decode([start + k])[0])


def test_beyond_int64():
    s = make_space([1000] * 8)  # 10**24 points
    assert s.size == 10**24 and not s.fits_int64
    top = s.size - 1
    assert s.point(top) == {f"p{i}": 999 for i in range(8)}
    assert s.index(s.point(top)) == top
    chunk = next(s.iter_chunks(chunk_size=3, start=2**70))
    assert [int(x) for x in chunk[0]] == [2**70, 2**70 + 1, 2**70 + 2]
    assert s.point(2**70 + 2) == chunk[1].iloc[2].to_dict()


@pytest.mark.slow
@given(radices=st.lists(st.integers(1, 5), min_size=1, max_size=5), chunk=st.integers(1, 40))
@settings(max_examples=60)
def test_enumeration_equals_cartesian_product(radices, chunk):
    s = make_space(radices)
    rows = []
    idx = []
    for i, frame in s.iter_chunks(chunk_size=chunk):
        rows += [tuple(r) for r in frame.itertuples(index=False)]
        idx += [int(x) for x in i]
    assert rows == list(itertools.product(*[range(m) for m in radices]))
    assert idx == list(range(s.size))


def test_point_rejects_bad_values():
    s = load_preset("stargazer")
    with pytest.raises(SpaceError, match="not one of its values"):
        s.index({**s.point(0), "simd": 12})
    with pytest.raises(SpaceError, match="no value for parameter 'inter'"):
        s.index({k: v for k, v in s.point(0).items() if k != "inter"})
    with pytest.raises(SpaceError, match="outside"):
        s.point(s.size)
    assert s.index({**s.point(0), "simd": 16.0}) == s.index({**s.point(0), "simd": 16})


# ---- feasibility ------------------------------------------------------------------------------
@given(radices=st.lists(st.integers(1, 6), min_size=2, max_size=5), t1=st.integers(0, 12), t2=st.integers(0, 5))
@settings(max_examples=80, deadline=None)
def test_feasible_size_is_exact(radices, t1, t2):
    cons = [Constraint(f"p0 + p1 >= {t1 // 2}")]
    if len(radices) > 3:
        cons.append(Constraint(f"p2 * 2 != {t2} or p3 == 0"))
    base = make_space(radices)
    s = DesignSpace(base.dimensions, constraints=tuple(cons))
    brute = 0
    for combo in itertools.product(*[range(m) for m in radices]):
        ok = combo[0] + combo[1] >= t1 // 2
        if len(radices) > 3:
            ok = ok and (combo[2] * 2 != t2 or combo[3] == 0)
        brute += ok
    if brute == 0:
        with pytest.raises(SpaceError, match="admit no combination|can never hold"):
            s.check()
        return
    assert s.feasible_size == brute
    streamed = sum(len(f) for _, f in s.iter_chunks(chunk_size=7))
    assert streamed == brute


def test_large_components_are_estimated():
    with limits.override(feasibility_points=10):
        s = DesignSpace(make_space([6, 6, 6]).dimensions, constraints=(Constraint("p0 + p1 + p2 < 9"),))
        assert s.feasible_size is None and s.analysis.components[0].method == "probed"
    exact = sum(a + b + c < 9 for a, b, c in itertools.product(range(6), repeat=3))
    assert abs(s.feasible_size_estimate - exact) / exact < 0.05


def test_constraint_on_fixed_values():
    dims = (Parameter("threads", (128, 256)),)
    ok = DesignSpace(dims, fixed=(Fixed("smem_kb", 48),), constraints=(Constraint("smem_kb * 1024 >= threads * 12"),))
    assert ok.feasible_size == 2
    with pytest.raises(SpaceError, match="false for the fixed values"):
        DesignSpace(dims, fixed=(Fixed("smem_kb", 48),), constraints=(Constraint("smem_kb > 64"),)).check()


# ---- bad input: every malformed-file case, each with a message that says where and what ----
def parse(text):
    return parse_space_text(text, source="space.yaml")


GOOD = """\
name: demo
parameters:
  - {name: threads, unit: count, values: [128, 256, 512]}
  - {name: smem_kb, unit: KB, values: {pow2: 16..64}}
constraints:
  - smem_kb * 1024 >= threads * 12
"""


def test_good_file():
    s = parse(GOOD)
    assert s.size == 9
    assert s.feasible_size == sum(k * 1024 >= t * 12 for t in (128, 256, 512) for k in (16, 32, 64))


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("parameters:\n  - name: a\n   values: [1]\n", r"^space.yaml:3: not valid YAML"),
        ("parameters: [\n", r"^space.yaml:\d+: not valid YAML"),
        ("parameters:\n  - {name: a, values: []}\n", r"space.yaml:2: parameters\[0\] \(a\).*value list is empty"),
        ("parameters:\n  - {name: a, values: [1]}\n  - {name: a, values: [2]}\n", r"'a' is used twice"),
        ("parameters:\n  - {name: a, values: [1, x2, 3]}\n",
         r"space.yaml:2: parameters\[0\] \(a\).*'x2' is not a number"),
        ("parameters:\n  - {name: a, kind: numeric, values: [one, two]}\n",
         r"'one' is not a number.*kind: categorical"),
        ("parameters:\n  - {name: a, values: [1, 2]}\nconstraints: [b > 1]\n",
         r"constraints\[0\] 'b > 1': unknown name 'b'.*known parameters: a"),
        ("parameters:\n  - {name: a, values: [1, 2]}\nconstraints: ['a > 5']\n", r"'a > 5' can never hold.*a 1\.\.2"),
        ("parameters:\n  - {name: a, values: [1, 2, 3]}\nconstraints: ['a % 2 == 0 and a != 2']\n",
         r"admit no combination of a \(all 3 were checked\)"),
        ("parameters:\n  - {name: a, values: [1, 1]}\n", r"value 1 appears more than once"),
        ("parameters:\n  - {name: a, valeus: [1]}\n", r"unknown field 'valeus' \(did you mean 'values'\?\)"),
        ("parameters:\n  - {name: a}\n", r"'values' is missing"),
        ("parameters:\n  - {name: '#blk', values: [1]}\n", r"'#blk' is not usable.*label"),
        ("parameters:\n  - {name: max, values: [1]}\n", r"'max' is a reserved word"),
        ("parameters:\n  - {name: a, values: [1]}\n  - {name: a, values: [1]}\n", r"used twice"),
        ("parameters:\n  - {name: g, members: [{name: a, values: [1, 2]}, {name: b, values: [1]}]}\n",
         r"member 'b' has 1 values but 'a' has 2"),
        ("parameters: []\n", r"non-empty list"),
        ("name: x\n", r"non-empty list"),
        ("- 1\n- 2\n", r"must be a mapping"),
        ("parameters:\n  - {name: a, values: [1]}\nparameter: 1\n", r"unknown top-level field 'parameter'"),
        ("parameters:\n  - {name: a, values: [1], values: [2]}\n", r"appears twice"),
        ("!!python/object/apply:os.system ['echo hi']\n", r"not valid YAML"),
        ("parameters:\n  - {name: a, values: '1::0::3'}\n", r"step must be positive"),
    ],
)
def test_bad_input_messages(text, pattern):
    with pytest.raises(GpudseError, match=pattern):
        parse(text)


def test_unsatisfiable_large_component_is_proved():
    with limits.override(feasibility_points=10), pytest.raises(SpaceError, match="can never hold.*a 1..50, b 1..50"):
        parse("parameters:\n  - {name: a, values: '1::1::50'}\n  - {name: b, values: '1::1::50'}\n"
              "constraints: ['a + b > 1000']\n")


def test_json_errors_have_lines(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('{"parameters": [\n {"name": "a", "values": [1,]}\n]}')
    with pytest.raises(SpaceError, match=r"s.json:2: malformed JSON"):
        load_space(p)


def test_missing_file_and_unknown_preset(tmp_path):
    with pytest.raises(SpaceError, match="no such file"):
        load_space(tmp_path / "nope.yaml")
    with pytest.raises(SpaceError, match="neither a file nor a preset.*stargazer"):
        load_space("stargzer")


def test_binary_file_is_rejected(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(SpaceError, match="not UTF-8 text"):
        load_space(p)


def test_groups_and_categoricals_in_constraints():
    s = parse("parameters:\n"
              "  - {name: sched, values: [gto, lrr, two_level]}\n"
              "  - name: width\n"
              "    members:\n"
              "      - {name: issue, values: [1, 2, 4]}\n"
              "      - {name: fus, values: [2, 4, 8]}\n"
              "constraints:\n"
              "  - \"sched != 'lrr' or fus <= 4\"\n")
    assert s.radices == (3, 3) and s.feasible_size == 8
    frames = [f for _, f in s.iter_chunks()]
    assert not ((frames[0]["sched"] == "lrr") & (frames[0]["fus"] == 8)).any()
    assert (frames[0]["fus"] == frames[0]["issue"] * 2).all()
