"""Hostile input to design spaces: value syntax, constraints and space files fuzzed in a
memory-capped child process ("our error or a valid result, within a memory and time budget"), the
semantics of undefined constraint points against a scalar reference, the soundness of the interval
proofs and the feasibility analysis on spaces too large to enumerate, and sampling requests."""

from __future__ import annotations

import ast
import itertools
import math
import re

import numpy as np
import pytest
from bounded import bounded
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpudse_core import limits
from gpudse_core.errors import GpudseError, SamplingError, SpaceError
from gpudse_core.space.design import Constraint, DesignSpace, Fixed, Parameter, parse_space_text
from gpudse_core.space.expr import FALSE, TRUE, always, compile_expression
from gpudse_core.space.sampling import sample, sample_size
from gpudse_core.space.values import parse_values

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


# ---- value syntax ---------------------------------------------------------------------------------------
number_text = st.one_of(st.integers(-10**30, 10**30).map(str), st.floats(allow_nan=True).map(repr),
                        st.sampled_from(["1e999", "-1e999", "1e-400", "9" * 500, "0", "0.0", "2**10", "nan", ""]))
value_text = st.one_of(
    st.tuples(number_text, number_text, number_text).map(lambda t: "::".join(t)),
    st.tuples(number_text, number_text).map(lambda t: f"pow2: {t[0]}..{t[1]}"),
    st.lists(number_text, max_size=8).map(", ".join),
    st.text(max_size=60),
)
value_spec = st.one_of(value_text, st.lists(st.one_of(st.integers(), st.floats(), st.text(max_size=5), st.none(),
                                                      st.booleans()), max_size=8),
                       st.dictionaries(st.sampled_from(["pow2", "range", "x"]),
                                       st.one_of(value_text, st.lists(number_text, max_size=3), st.integers()),
                                       max_size=2))


@bounded(mem_mb=4096, max_rss_mb=512, timeout=300)
@FUZZ
@given(value_spec)
@example(
    spec='-179769314.0::1e-300::0',
).via('discovered failure')
@pytest.mark.slow
def test_values_fuzz_our_error_or_a_bounded_parameter(spec):
    try:
        vals = parse_values(spec, "ctx: ")
        p = Parameter("x", vals) if vals else None
    except GpudseError:
        return
    if p is not None:
        assert 1 <= p.size <= limits.current().values_per_parameter
        if p.kind == "numeric":
            assert np.isfinite(p.array.astype(float)).all()


@pytest.mark.parametrize("spec, pattern", [
    ("0::1::3e7", r"30,000,001 values.*values_per_parameter"),
    ("0::1e-300::1", r"1e\+300 values"),
    ({"pow2": [1, 2 ** 13000]}, r"beyond the range"),
    ({"pow2": "1..2**13000"}, r"is not a number"),
    ({"pow2": [1, 2.0 ** 1023]}, r"pow2 range .* has 1,024 values|beyond the range of whole-number"),
    ("1e308::1e308::1e999", r"infinite or beyond"),
])
def test_amplifying_value_specs_are_refused_before_expansion(spec, pattern):
    with pytest.raises(GpudseError, match=pattern):
        Parameter("x", parse_values(spec))


def test_value_limit_is_the_servers():
    with limits.override(values_per_parameter=10):
        with pytest.raises(GpudseError, match="values_per_parameter"):
            parse_values("1::1::11")
        assert len(parse_values("1::1::10")) == 10


# ---- constraints: undefined points against a scalar reference ------------------------------------------
NUMS = {"a": [-2.0, 0.0, 0.5, 3.0], "b": [0.0, 1.0, 4.0]}
TEXTS = {"s": ["x", "y"]}
TYPES = {"a": "number", "b": "number", "s": "text"}
leaf = st.one_of(st.sampled_from(["a", "b", "0", "1", "2", "0.5", "1e308", "(-1)"]),
                 st.integers(-3, 3).map(lambda i: f"({i})"))
num = st.recursive(leaf, lambda ch: st.one_of(
    st.tuples(ch, st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), ch).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    st.tuples(st.sampled_from(["log", "log2", "log10", "sqrt", "abs", "floor", "ceil", "exp"]), ch)
    .map(lambda t: f"{t[0]}({t[1]})"),
    st.tuples(st.sampled_from(["min", "max"]), ch, ch).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
    ch.map(lambda x: f"(-{x})"),
), max_leaves=6)
atom = st.one_of(st.tuples(num, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), num).map(" ".join),
                 st.tuples(num, st.sampled_from(["<", "<="]), num, st.sampled_from(["<", "<="]), num).map(" ".join),
                 st.sampled_from(["s == 'x'", "s != 'y'", "a in (0, 3)", "b not in (1,)"]), num)
cond = st.recursive(atom, lambda ch: st.one_of(
    st.tuples(ch, st.sampled_from(["and", "or"]), ch).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    ch.map(lambda x: f"(not {x})"),
    st.tuples(num, ch, num).map(lambda t: f"(({t[0]}) if ({t[1]}) else ({t[2]})) > 0"),
), max_leaves=5)


class Undefined(Exception):
    pass


def reference(node: ast.AST, env: dict):
    """Python's own control flow over NumPy float64 scalars: a division by zero, an invalid operation
    (NaN) or log of a non-positive number raises, which is what "undefined" means; overflow is inf."""
    if isinstance(node, ast.Expression):
        return reference(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else np.float64(node.value)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BoolOp):
        v = reference(node.values[0], env)
        for sub in node.values[1:]:
            if (bool(v) if isinstance(node.op, ast.And) else not bool(v)):
                v = reference(sub, env)
        return v
    if isinstance(node, ast.UnaryOp):
        v = reference(node.operand, env)
        return (not v) if isinstance(node.op, ast.Not) else -np.float64(v) if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.IfExp):
        return reference(node.body if reference(node.test, env) else node.orelse, env)
    if isinstance(node, ast.BinOp):
        x, y = np.float64(reference(node.left, env)), np.float64(reference(node.right, env))
        op = type(node.op)
        if op in (ast.Div, ast.FloorDiv, ast.Mod) and y == 0 or op is ast.Pow and x == 0 and y < 0:
            raise Undefined
        r = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
             ast.FloorDiv: np.floor_divide, ast.Mod: np.mod, ast.Pow: np.power}[op](x, y)
        if np.isnan(r):
            raise Undefined
        return r
    if isinstance(node, ast.Call):
        args = [np.float64(reference(a, env)) for a in node.args]
        name = node.func.id
        if name in ("log", "log2", "log10") and args[0] <= 0:
            raise Undefined
        r = {"min": np.minimum, "max": np.maximum}[name](*args) if name in ("min", "max") else \
            getattr(np, name if name != "abs" else "abs")(args[0])
        if np.isnan(r):
            raise Undefined
        return r
    if isinstance(node, ast.Compare):
        left = reference(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                hit = any(left == reference(e, env) for e in comp.elts)
                if hit != isinstance(op, ast.In):
                    return False
                left = hit
                continue
            right = reference(comp, env)
            ok = {ast.Lt: lambda p, q: p < q, ast.LtE: lambda p, q: p <= q, ast.Gt: lambda p, q: p > q,
                  ast.GtE: lambda p, q: p >= q, ast.Eq: lambda p, q: p == q, ast.NotEq: lambda p, q: p != q}[type(op)]
            if not ok(left, right):
                return False
            left = right
        return True
    raise AssertionError(type(node))


GRID = list(itertools.product(NUMS["a"], NUMS["b"], TEXTS["s"]))
COLS = {"a": np.array([g[0] for g in GRID]), "b": np.array([g[1] for g in GRID]),
        "s": np.array([g[2] for g in GRID], dtype=object)}


@pytest.mark.slow
@bounded(mem_mb=4096, max_rss_mb=512, timeout=300)
@FUZZ
@given(cond)
def test_constraint_semantics_match_python_with_undefined_points(text):
    try:
        e = compile_expression(text, TYPES)
    except GpudseError:
        return
    mask, undefined = e.mask_undefined(COLS, len(GRID))
    violation = e.violation(COLS, len(GRID))
    tree = ast.parse(text, mode="eval")
    for i, (a, b, s) in enumerate(GRID):
        with np.errstate(all="ignore"):
            try:
                ok, undef = bool(reference(tree, {"a": np.float64(a), "b": np.float64(b), "s": s})), False
            except Undefined:
                ok, undef = False, True
        assert (bool(mask[i]), bool(undefined[i])) == (ok and not undef, undef), (text, a, b, s)
        assert (violation[i] == 0) == bool(mask[i]) and violation[i] >= 0, (text, a, b, s, violation[i])
    ranges = {"a": (min(NUMS["a"]), max(NUMS["a"])), "b": (min(NUMS["b"]), max(NUMS["b"]))}
    verdict = always(e, ranges)  # soundness of the interval proof (undefined points are infeasible)
    if verdict == FALSE:
        assert not mask.any(), text
    if verdict == TRUE:
        assert (mask | undefined).all(), text


@pytest.mark.slow
@bounded(mem_mb=4096, max_rss_mb=512, timeout=300)
@FUZZ
@given(st.text(max_size=120))
def test_constraint_text_fuzz_never_escapes(text):
    try:
        e = compile_expression(text, TYPES)
    except GpudseError:
        return
    e.mask(COLS, len(GRID))


@pytest.mark.parametrize("text, pattern", [
    ("a < " + "9" * 1990, r"1,990 digits"),
    ("a < 1e999", r"beyond the range"),
    ("a" + " + a" * 700 + " > 1", r"characters long"),
    ("__import__('os').system('true')", r"not allowed"),
    ("().__class__", r"not allowed"),
])
def test_constraint_text_refused(text, pattern):
    with pytest.raises(GpudseError, match=pattern):
        compile_expression(text, TYPES)


def test_division_by_zero_is_a_note_and_infeasible():
    s = DesignSpace((Parameter("a", (0, 1, 2)), Parameter("b", (0, 1))), constraints=(Constraint("a / b > 1"),))
    assert s.feasible_size == 1  # only a=2, b=1: the three points with b = 0 are undefined, not "inf > 1"
    assert len(s.notes) == 1 and "undefined" in s.notes[0] and "3 of 6" in s.notes[0] and "b=0" in s.notes[0]
    guarded = DesignSpace(s.dimensions, constraints=(Constraint("b > 0 and a / b > 1"),))
    assert guarded.feasible_size == 1 and not guarded.notes  # Python's short circuit: never evaluated


def test_constraint_undefined_everywhere_is_an_error():
    with pytest.raises(SpaceError, match="undefined at every combination"):
        DesignSpace((Parameter("a", (1, 2)),), constraints=(Constraint("log(a - 5) > 0 or a / 0 > 1"),)).check()


def test_bool_arithmetic_follows_python():
    e = compile_expression("(a > 0) - (b > 0) + -(a > 1) == 0 and (2 and a) == a", TYPES)
    np.testing.assert_array_equal(e.mask(COLS, len(GRID)), [((a > 0) - (b > 0) - (a > 1) == 0) for a, b, _ in GRID])


# ---- feasibility analysis: never "unsatisfiable" without a proof ----------------------------------------
def big(n_params: int = 6, values: int = 1000, *constraints: str) -> DesignSpace:
    dims = tuple(Parameter(f"p{i}", tuple(range(1, values + 1))) for i in range(n_params))
    return DesignSpace(dims, constraints=tuple(Constraint(c) for c in constraints))


def test_satisfiable_1e18_space_is_not_called_unsatisfiable():
    s = big(6, 1000, "p0 + p1 + p2 + p3 + p4 + p5 == 5990")
    assert s.size == 10**18
    (comp,) = s.analysis.components
    assert comp.method == "searched" and comp.feasible_fraction is None
    assert comp.witness is not None and sum(comp.witness.values()) == 5990
    assert s.is_feasible(comp.witness)
    note = s.notes[-1]
    assert "no feasible point found in 65,536 random probes" in note and "below 4.6e-05" in note
    assert "a feasible point exists" in note
    assert s.feasible_size is None and math.isnan(s.feasible_size_estimate)
    assert s.feasible_size_upper == pytest.approx(10**18 * 3 / 65536)
    with pytest.raises(SamplingError, match="cannot sample uniformly"):
        sample(s, 5, seed=1)


def test_conjuncts_make_tight_spaces_exact():
    s = big(6, 1000, "p0 == p1 and p2 == p3 and p4 == p5")
    assert s.feasible_size == 10**9 and all(c.method == "enumerated" for c in s.analysis.components)
    res = sample(s, 50, seed=3)
    assert s.feasible_mask(s.decode(res.indices)).all()


def test_joined_enumeration_is_exact_and_proves_emptiness():
    s = big(5, 100, "p0 == p1", "p1 == p2", "p2 < p3", "p3 + p4 == 150")
    (comp,) = s.analysis.components
    assert comp.method == "joined"
    brute = sum(1 for a in range(1, 101) for d in range(1, 101) for e in range(1, 101) if a < d and d + e == 150)
    assert s.feasible_size == brute
    with pytest.raises(SpaceError, match="admit no combination .*proved by enumerating"):
        big(5, 100, "p0 == p1", "p1 == p2", "p2 == p3", "p3 == p4", "p0 != p4").check()


@bounded(mem_mb=4096, max_rss_mb=1024, timeout=600)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(radices=st.lists(st.integers(1, 7), min_size=2, max_size=4), k=st.integers(0, 14),
       ops=st.lists(st.sampled_from(["+", "-", "*", "%"]), min_size=3, max_size=3), cap=st.integers(1, 60))
@pytest.mark.slow
def test_every_analysis_path_agrees_with_brute_force(radices, k, ops, cap):
    """Enumerated, joined, probed and searched components against itertools.product on small spaces
    (the limits are lowered so that every path is taken)."""
    dims = tuple(Parameter(f"p{i}", tuple(range(m))) for i, m in enumerate(radices))
    n = len(radices)
    cons = [f"p0 {ops[0]} p1 >= {k // 2}", f"p{n - 1} {ops[1]} p0 != {k % 5}"]
    fn = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
          "%": lambda x, y: None if y == 0 else x % y}

    def ok(c: tuple) -> bool:
        first, second = fn[ops[0]](c[0], c[1]), fn[ops[1]](c[n - 1], c[0])
        return first is not None and first >= k // 2 and second is not None and second != k % 5

    brute = sum(ok(c) for c in itertools.product(*[range(m) for m in radices]))
    with limits.override(feasibility_points=cap, feasibility_probes=512):
        s = DesignSpace(dims, constraints=tuple(Constraint(c) for c in cons))
        try:
            s.check()
        except SpaceError as e:
            assert brute == 0, f"called unsatisfiable with {brute} feasible points: {e}"
            return
        for c in s.analysis.components:
            if c.witness is not None:
                digits = [[s.dimensions[i].parameters[0].position(c.witness[s.dimensions[i].name]) for i in c.dims]]
                assert s.feasible_mask(np.array(digits), c.conjuncts, c.dims)[0]
        if s.feasible_size is not None:
            assert s.feasible_size == brute
        elif brute == 0:
            assert all(c.feasible_fraction is None for c in s.analysis.components if not c.exact)


@bounded(mem_mb=4096, max_rss_mb=1024, timeout=600)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.text(max_size=40), st.sampled_from(
    ["parameters:", "  - {name: a, values: [1, 2]}", "  - {name: b, values: '1::1::9'}", "fixed: [{name: f, value: 3}]",
     "constraints: [a / (b - 3) > 1]", "  - name: g", "    members:", "      - {name: c, values: [1, 2]}",
     "      - {name: d, values: {pow2: 1..2}}", "name: &x [1, 2]", "description: *x", "fixed: 7", "- 1",
     "constraints: ['log(b - 5) < 1 and a < f']", "x: !!binary aGk=", "? [a]\n: b"])), max_size=12),
    st.sampled_from(["s.yaml", "s.json"]))
@pytest.mark.slow
def test_space_file_fuzz(lines, name):
    text = "\n".join(lines)
    try:
        s = parse_space_text(text, name)
    except GpudseError:
        return
    assert s.size >= 1
    s.summary()
    if s.feasible_size is not None:
        assert 1 <= s.feasible_size <= s.size


def test_fixed_values_are_numbers_when_they_spell_numbers():
    s = DesignSpace((Parameter("a", (1, 2)),), fixed=(Fixed("f", "3"),), constraints=(Constraint("a + f > 4"),))
    assert s.fixed[0].value == 3 and s.feasible_size == 1


# ---- sampling requests ----------------------------------------------------------------------------------
SMALL = DesignSpace((Parameter("a", (1, 2, 3)), Parameter("b", (1, 2))))


@pytest.mark.parametrize("fraction", [1e-300, 1e-9, 0.08])
def test_fraction_that_rounds_to_no_point_is_refused(fraction):
    with pytest.raises(SamplingError, match=r"rounds to none; ask for a fraction above 0\.0833"):
        sample_size(SMALL, fraction=fraction)
    assert sample_size(SMALL, fraction=0.09) == 1


def test_per_dimension_fraction_below_one_value_is_noted():
    res = sample(SMALL, per_dim_fraction=1e-300, seed=1)
    assert len(res) == 1 and any("less than one value of a, b" in n for n in res.notes)


@bounded(mem_mb=4096, max_rss_mb=768, timeout=300)
@settings(max_examples=150, deadline=None)
@given(n=st.one_of(st.none(), st.integers(-5, 10**12)), fraction=st.one_of(st.none(), st.floats(allow_nan=True)),
       pdf=st.one_of(st.none(), st.floats(allow_nan=True)), seed=st.one_of(st.none(), st.integers(-1, 2**70)))
@pytest.mark.slow
def test_sampling_requests_fuzz(n, fraction, pdf, seed):
    space = big(3, 50, "p0 + p1 > 60")
    try:
        res = sample(space, n, fraction=fraction, per_dim_fraction=pdf, seed=seed)
    except GpudseError:
        return
    assert 1 <= len(res) <= space.feasible_size and space.feasible_mask(space.decode(res.indices)).all()


def _chain_space(n: int, copies: int = 1) -> str:
    chain = " <= ".join(f"p{i}" for i in range(n))
    return ("name: chain\nparameters:\n" + "".join(f"  - {{name: p{i}, values: [1, 2]}}\n" for i in range(n))
            + "constraints:\n" + "".join(f"  - '{chain} or p0 > {1000 + j}'\n" for j in range(copies)))


def test_a_long_chain_of_comparisons_is_bounded_by_steps_not_rows(monkeypatch):
    """``p0 <= p1 <= … <= p119`` over two-value parameters: 121 feasible points of 2^120, none found by
    probing, so the local search runs; its steps are on 32 rows each (16 starts × 2 values), where the
    interpreter's overhead per syntax node is the cost. It took minutes (65,536 steps of 120 nodes);
    charged at CALL_ROWS a step, it makes at most 16 × feasibility_probes / CALL_ROWS of them, and the
    note says how far it went."""
    from gpudse_core.space import design
    from gpudse_core.space.expr import Expression

    calls = []
    real = Expression.violation
    monkeypatch.setattr(Expression, "violation", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    space = parse_space_text(_chain_space(120), "chain.yaml")
    note = " ".join(space.notes)
    assert space.feasible_size is None and "no feasible point found in 65,536 random probes" in note
    steps = 16 * limits.current().feasibility_probes // design.CALL_ROWS
    assert 120 <= len(calls) <= steps + 1, len(calls)  # at least one sweep, at most the bound
    assert re.search(r"a local search bounded at [\d,]+ point evaluations .*constraint_work\) found no feasible", note)


def test_a_search_that_cannot_make_one_sweep_is_not_started(monkeypatch):
    """Ten such chains on one component cost 2,400 nodes a point: even one sweep over the 120
    dimensions would exceed what the probes left of constraint_work, so no step is taken at all
    (refused before it starts, as sampling's rejection work is) and the note says so."""
    from gpudse_core.space.expr import Expression

    calls = []
    real = Expression.violation
    monkeypatch.setattr(Expression, "violation", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    space = parse_space_text(_chain_space(120, copies=10), "chain.yaml")
    assert not calls
    assert "no local search was made: one sweep over its 120 dimensions would exceed" in " ".join(space.notes)
