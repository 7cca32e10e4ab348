"""Safe, vectorised evaluation of feasibility constraints (docs/design-spaces.md).

Constraints such as ``smem_kb * 1024 >= threads * 12`` are user text, so they are never given to
Python's ``eval``/``exec``. The text is *parsed* with :func:`ast.parse` (which only builds a syntax
tree) and the tree is checked against a whitelist, type-checked against the design space's
parameters and then interpreted here over NumPy arrays, one array element per design point.

Allowed: numbers, ``True``/``False``, quoted strings (to compare with categorical parameters),
parameter names, ``+ - * / // % **``, unary ``- + not``, comparisons (chained too, and
``in``/``not in`` a literal tuple or list), ``and``/``or``, ``x if cond else y``, and the functions
``min max abs log log2 log10 sqrt floor ceil exp``. Everything else — attribute access,
subscripts, calls to anything not listed, lambdas, comprehensions — is rejected with a message
naming the constraint and the construct. Arithmetic is done in float64 arrays, so ``10**10**10``
overflows to ``inf`` (and compares as infinitely large) instead of hanging the process.

**Undefined points**. Where Python would raise — a division, ``//`` or ``%`` by zero,
``0 ** negative``, ``log`` of zero or a negative number — or where a result is NaN (``sqrt(-1)``,
``inf - inf``), the expression is *undefined* at that point, and an undefined point is infeasible.
Python's short-circuit rules apply: in ``b > 0 and a / b > 1`` the division is never reached where
``b == 0``, so those points are simply infeasible, not undefined. :meth:`Expression.mask_undefined`
returns both masks, so the design space can report how many points a constraint leaves undefined
instead of deciding silently.

Length, syntax-tree size and number literals are bounded (``limits.expression_chars``,
``limits.expression_nodes``, ``limits.number_digits``) before the text is parsed; a literal beyond
float64's range is refused.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .. import limits
from ..errors import ExpressionError

FUNCTIONS: dict[str, tuple[Any, int, int]] = {
    # name: (numpy implementation, min args, max args)
    "min": (None, 2, 16),
    "max": (None, 2, 16),
    "abs": (np.abs, 1, 1),
    "log": (np.log, 1, 1),
    "log2": (np.log2, 1, 1),
    "log10": (np.log10, 1, 1),
    "sqrt": (np.sqrt, 1, 1),
    "floor": (np.floor, 1, 1),
    "ceil": (np.ceil, 1, 1),
    "exp": (np.exp, 1, 1),
}

_BINOPS = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide,
    ast.Mod: np.mod,
    ast.Pow: np.power,
}
_CMPOPS = {
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
}
_OP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}

NUM, TEXT, BOOL = "number", "text", "bool"


@dataclass(frozen=True)
class Expression:
    """A parsed, checked expression. ``names`` are the parameter names it reads."""

    text: str
    names: frozenset[str]
    _tree: ast.expr = field(repr=False, compare=False)

    def evaluate(self, columns: Mapping[str, Any]) -> np.ndarray:
        """Evaluate over *columns* (name → array or scalar); returns an array (or scalar)."""
        return self.evaluate_defined(columns)[0]

    def evaluate_defined(self, columns: Mapping[str, Any]) -> tuple[Any, Any]:
        """``(value, undefined)``: the value and where it is undefined (see the module docstring)."""
        with np.errstate(all="ignore"):
            return _Eval(columns, self.text).visit(self._tree)

    def mask_undefined(self, columns: Mapping[str, Any], n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(feasible, undefined)`` boolean masks of length *n*; undefined points are not feasible."""
        value, bad = self.evaluate_defined(columns)
        bad = _full(bad, n)
        return _full(_truth(value), n) & ~bad, bad

    def mask(self, columns: Mapping[str, Any], n: int) -> np.ndarray:
        """Boolean feasibility mask of length *n*; undefined points count as infeasible."""
        return self.mask_undefined(columns, n)[0]

    def violation(self, columns: Mapping[str, Any], n: int) -> np.ndarray:
        """How far each point is from satisfying the expression: 0 where it holds, ``inf`` where it
        is undefined, else a positive distance (``|x - y| + 1`` for a failed numeric comparison,
        summed over ``and``, least over ``or``). Guides the search for a feasible point."""
        with np.errstate(all="ignore"):
            ev = _Eval(columns, self.text)
            v = np.broadcast_to(np.asarray(_violation(ev, self._tree), dtype=float), (n,)).copy()
            value, bad = ev.visit(self._tree)
        ok = _full(_truth(value), n) & ~_full(bad, n)
        v = np.where(ok, 0.0, np.where(np.isnan(v) | (v <= 0), 1.0, v))
        return np.where(_full(bad, n), np.inf, v)

    @property
    def nodes(self) -> int:
        """Syntax-tree nodes: the cost of evaluating the expression at one point, in array operations
        (what ``limits.constraint_work`` counts, times the points evaluated)."""
        return sum(1 for _ in ast.walk(self._tree))

    def conjuncts(self) -> list["Expression"]:
        """The operands of a top-level ``and`` (flattened) as separate expressions: a point satisfies
        the whole iff it satisfies each. Lets independent parts of one constraint be analysed apart."""
        parts: list[ast.expr] = []

        def split(node: ast.expr) -> None:
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
                for v in node.values:
                    split(v)
            else:
                parts.append(node)

        split(self._tree)
        if len(parts) == 1:
            return [self]
        return [Expression(ast.unparse(t), frozenset(_names(t) & self.names), t) for t in parts]


def _names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _full(v: Any, n: int) -> np.ndarray:
    a = np.asarray(v)
    if a.dtype != bool:
        a = a.astype(bool)
    return a if a.shape == (n,) else np.broadcast_to(a, (n,)).copy()


_LONG_NUMERAL = re.compile(r"\d+")


def compile_expression(text: str, types: Mapping[str, str], label: str = "expression", *,
                       quantity: bool = False) -> Expression:
    """Parse and check *text*. *types* maps each known name to ``"number"`` or ``"text"``. With
    *quantity* the expression must give a number (a derived quantity, :mod:`.derived`), not a condition.

    Raises :class:`ExpressionError` naming *label* and the problem.
    """
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(f"{label}: the expression is empty; write e.g. smem_kb * 1024 >= threads * 12")
    lim = limits.current()
    if len(text) > lim.expression_chars:
        raise ExpressionError(f"{label}: the expression is {len(text):,} characters long (limit "
                              f"{lim.expression_chars:,}, expression_chars); split it into several constraints")
    longest = max((len(m) for m in _LONG_NUMERAL.findall(text)), default=0)
    if longest > lim.number_digits:
        raise ExpressionError(f"{label}: a number with {longest:,} digits (limit {lim.number_digits}, number_digits); "
                              f"no design constraint needs one")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        col = f" at column {e.offset}" if e.offset else ""
        raise ExpressionError(f"{label}: {text!r} is not a valid expression (syntax error{col}: {e.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError(f"{label}: {text!r} is nested too deeply to read") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > lim.expression_nodes:
        raise ExpressionError(f"{label}: the expression is too complex ({len(nodes)} syntax nodes, limit "
                              f"{lim.expression_nodes}, expression_nodes)")
    checker = _Check(types, text, label)
    try:
        kind = checker.visit(tree.body)
    except RecursionError:
        raise ExpressionError(f"{label}: {text!r} is nested too deeply to read") from None
    if kind == TEXT and not quantity:
        raise ExpressionError(f"{label}: {text!r} gives text, not a condition; compare it, e.g. sched == 'gto'")
    if quantity and kind != NUM:
        what = "text" if kind == TEXT else "a condition (true or false)"
        raise ExpressionError(f"{label}: {text!r} gives {what}, not a number; a derived quantity is arithmetic "
                              f"over the parameters, e.g. cu_per_sa * sa")
    return Expression(text.strip(), frozenset(checker.names), tree.body)


class _Check(ast.NodeVisitor):
    """Whitelist and type check; returns the type of each node."""

    def __init__(self, types: Mapping[str, str], text: str, label: str):
        self.types, self.text, self.label, self.names = types, text, label, set()

    def fail(self, msg: str) -> None:
        raise ExpressionError(f"{self.label} {self.text!r}: {msg}")

    def generic_visit(self, node: ast.AST) -> str:
        what = {
            ast.Attribute: "attribute access ('.')",
            ast.Subscript: "indexing ('[...]')",
            ast.Lambda: "lambda",
            ast.ListComp: "comprehensions",
            ast.GeneratorExp: "comprehensions",
            ast.SetComp: "comprehensions",
            ast.DictComp: "comprehensions",
            ast.NamedExpr: "assignment (':=')",
            ast.JoinedStr: "f-strings",
            ast.Starred: "'*' unpacking",
            ast.Await: "await",
            ast.Dict: "dictionaries",
            ast.Set: "sets",
        }.get(type(node), type(node).__name__)
        self.fail(f"{what} is not allowed")
        return NUM  # pragma: no cover - fail raises

    def visit_Constant(self, node: ast.Constant) -> str:
        v = node.value
        if isinstance(v, bool):
            return BOOL
        if isinstance(v, (int, float)):
            try:
                ok = math.isfinite(float(v))
            except OverflowError:
                ok = False
            if not ok:
                self.fail(f"the number {str(v)[:20]}{'…' if len(str(v)) > 20 else ''} is beyond the range of "
                          f"floating-point numbers (about ±1.8e308)")
            return NUM
        if isinstance(v, str):
            return TEXT
        self.fail(f"the constant {v!r} is not allowed")
        return NUM  # pragma: no cover

    def visit_Name(self, node: ast.Name) -> str:
        if node.id in self.types:
            self.names.add(node.id)
            return self.types[node.id]
        if node.id in ("True", "False"):
            return BOOL
        hint = difflib.get_close_matches(node.id, list(self.types), n=1)
        known = ", ".join(sorted(self.types)) or "(none)"
        did = f" (did you mean {hint[0]!r}?)" if hint else ""
        self.fail(f"unknown name {node.id!r}{did}; known parameters: {known}")
        return NUM  # pragma: no cover

    def visit_BinOp(self, node: ast.BinOp) -> str:
        if type(node.op) not in _BINOPS:
            self.fail(f"the operator {type(node.op).__name__} is not allowed")
        for side in (node.left, node.right):
            if self.visit(side) == TEXT:
                self.fail(f"arithmetic ({_OP_TEXT[type(node.op)]}) on text is not allowed")
        return NUM

    def visit_UnaryOp(self, node: ast.UnaryOp) -> str:
        t = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return BOOL
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            if t == TEXT:
                self.fail("a sign on text is not allowed")
            return NUM
        self.fail("the operator '~' is not allowed; use 'not'")
        return NUM  # pragma: no cover

    def visit_BoolOp(self, node: ast.BoolOp) -> str:
        for v in node.values:
            if self.visit(v) == TEXT:
                self.fail("text used as a condition; compare it, e.g. sched == 'gto'")
        return BOOL

    def visit_IfExp(self, node: ast.IfExp) -> str:
        self.visit(node.test)
        a, b = self.visit(node.body), self.visit(node.orelse)
        if (a == TEXT) != (b == TEXT):
            self.fail("both branches of 'x if c else y' must be numbers, or both text")
        return a

    def visit_Compare(self, node: ast.Compare) -> str:
        left = self.visit(node.left)
        for op, comp in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(comp, (ast.Tuple, ast.List)):
                    self.fail("'in' needs a literal list, e.g. simd in (8, 16)")
                kinds = {self.visit(e) for e in comp.elts}
                if not comp.elts:
                    self.fail("'in' needs a non-empty list")
                if (left == TEXT) != (kinds == {TEXT}):
                    self.fail("'in' compares text with numbers")
                left = BOOL
                continue
            if type(op) not in _CMPOPS:
                self.fail("'is' is not allowed; use == or !=")
            right = self.visit(comp)
            if (left == TEXT) != (right == TEXT):
                self.fail("a comparison between text and a number is not allowed")
            if left == TEXT and not isinstance(op, (ast.Eq, ast.NotEq)):
                self.fail("text can only be compared with == or !=")
            left = right
        return BOOL

    def visit_Call(self, node: ast.Call) -> str:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            name = repr(node.func.id) if isinstance(node.func, ast.Name) else "a method or computed function"
            self.fail(f"calling {name} is not allowed (allowed functions: {', '.join(FUNCTIONS)})")
        if node.keywords:
            self.fail("keyword arguments are not allowed")
        if any(isinstance(a, ast.Starred) for a in node.args):
            self.fail(f"starred arguments (*…) are not allowed; write the arguments of {node.func.id}() out")
        _, lo, hi = FUNCTIONS[node.func.id]
        if not lo <= len(node.args) <= hi:
            self.fail(f"{node.func.id}() takes {lo}{'' if lo == hi else f' to {hi}'} argument(s)")
        for a in node.args:
            if self.visit(a) == TEXT:
                self.fail(f"{node.func.id}() of text is not allowed")
        return NUM

    def visit_Tuple(self, node: ast.Tuple) -> str:
        self.fail("a bare tuple is not a condition")
        return NUM  # pragma: no cover

    visit_List = visit_Tuple


class _Eval:
    """Interpreter over the checked whitelist (no other node type can reach it). Each visit returns
    ``(value, undefined)``; *undefined* is ``False`` or a boolean array (see the module docstring)."""

    def __init__(self, columns: Mapping[str, Any], text: str):
        self.columns, self.text = columns, text

    def visit(self, node: ast.expr) -> tuple[Any, Any]:
        return getattr(self, "visit_" + type(node).__name__)(node)

    def visit_Constant(self, node: ast.Constant) -> tuple[Any, Any]:
        v = node.value
        return (np.float64(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v), False

    def visit_Name(self, node: ast.Name) -> tuple[Any, Any]:
        if node.id == "True":
            return True, False
        if node.id == "False":
            return False, False
        arr = np.asarray(self.columns[node.id])
        return (arr.astype(np.float64) if arr.dtype.kind in "iub" else arr), False

    def visit_BinOp(self, node: ast.BinOp) -> tuple[Any, Any]:
        (lv, lb), (rv, rb) = self.visit(node.left), self.visit(node.right)
        lv, rv = _number(lv), _number(rv)  # True + True is 2, as in Python (NumPy refuses bool - bool)
        out = _BINOPS[type(node.op)](lv, rv)
        bad = lb | rb | np.isnan(out)
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
            bad = bad | (np.asarray(rv) == 0)
        elif isinstance(node.op, ast.Pow):
            bad = bad | ((np.asarray(lv) == 0) & (np.asarray(rv) < 0))
        return out, bad

    def visit_UnaryOp(self, node: ast.UnaryOp) -> tuple[Any, Any]:
        v, b = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return np.logical_not(_truth(v)), b
        return (np.negative(_number(v)) if isinstance(node.op, ast.USub) else v), b

    def visit_BoolOp(self, node: ast.BoolOp) -> tuple[Any, Any]:
        # As in Python: the value is the first operand that decides the result (``2 and 3`` is 3),
        # and later operands cannot make the expression undefined where an earlier one decided it.
        is_and = isinstance(node.op, ast.And)
        out, bad = self.visit(node.values[0])
        t = _truth(out)
        going = ~np.asarray(bad) & (t if is_and else ~t)  # points whose result is still open
        for sub in node.values[1:]:
            v, b = self.visit(sub)
            bad = bad | (going & b)
            out = np.where(going, v, out)
            t = _truth(v)
            going = going & ~np.asarray(b) & (t if is_and else ~t)
        return out, bad

    def visit_IfExp(self, node: ast.IfExp) -> tuple[Any, Any]:
        (tv, tb), (bv, bb), (ev, eb) = self.visit(node.test), self.visit(node.body), self.visit(node.orelse)
        t = _truth(tv)
        return np.where(t, bv, ev), tb | np.where(t, bb, eb)

    def visit_Compare(self, node: ast.Compare) -> tuple[Any, Any]:
        out: Any = True
        left, bad = self.visit(node.left)
        for op, comp in zip(node.ops, node.comparators):
            reached = np.logical_and(out, True)  # a chained comparison stops at its first False
            if isinstance(op, (ast.In, ast.NotIn)):
                hit: Any = np.zeros(np.shape(left), dtype=bool)
                for e in comp.elts:
                    it, ib = self.visit(e)
                    bad = bad | (reached & ib)
                    hit = hit | np.equal(left, it)
                out = np.logical_and(out, hit if isinstance(op, ast.In) else ~hit)
                left = hit
                continue
            right, rb = self.visit(comp)
            bad = bad | (reached & rb)
            out = np.logical_and(out, _CMPOPS[type(op)](left, right))
            left = right
        return out, bad

    def visit_Call(self, node: ast.Call) -> tuple[Any, Any]:
        name = node.func.id  # type: ignore[attr-defined]
        pairs = [self.visit(a) for a in node.args]
        args = [v for v, _ in pairs]
        bad: Any = False
        for _, b in pairs:
            bad = bad | b
        if name == "min":
            out = np.minimum.reduce(np.broadcast_arrays(*args))
        elif name == "max":
            out = np.maximum.reduce(np.broadcast_arrays(*args))
        else:
            out = FUNCTIONS[name][0](args[0])
            if name in ("log", "log2", "log10"):
                bad = bad | (np.asarray(args[0]) <= 0)
        return out, bad | np.isnan(out)


def _violation(ev: _Eval, node: ast.expr) -> Any:
    """Distance from satisfying *node* (see :meth:`Expression.violation`); NaN where undefined."""
    if isinstance(node, ast.BoolOp):
        parts = [_violation(ev, v) for v in node.values]
        if isinstance(node.op, ast.And):
            return sum(parts[1:], parts[0])
        return np.minimum.reduce(np.broadcast_arrays(*parts))
    if isinstance(node, ast.Compare):
        total: Any = 0.0
        left, _ = ev.visit(node.left)
        for op, comp in zip(node.ops, node.comparators):
            numeric = np.asarray(left).dtype.kind in "fiub"
            if isinstance(op, (ast.In, ast.NotIn)):
                items = [ev.visit(e)[0] for e in comp.elts]
                hit: Any = np.zeros(np.shape(left), dtype=bool)
                for it in items:
                    hit = hit | np.equal(left, it)
                if isinstance(op, ast.In):
                    gap = np.minimum.reduce([np.abs(left - it) for it in items]) if numeric else 1.0
                    total = total + np.where(hit, 0.0, gap + 1.0)
                else:
                    total = total + np.where(hit, 1.0, 0.0)
                left = hit
                continue
            right, _ = ev.visit(comp)
            sat = _CMPOPS[type(op)](left, right)
            gap = np.abs(np.asarray(left, dtype=float) - np.asarray(right, dtype=float)) if numeric and \
                np.asarray(right).dtype.kind in "fiub" else 0.0
            total = total + np.where(sat, 0.0, gap + 1.0)
            left = right
        return total
    value, _ = ev.visit(node)
    return np.where(_truth(value), 0.0, 1.0)


def _number(v: Any) -> Any:
    a = np.asarray(v)
    return a.astype(np.float64) if a.dtype == bool else v


def _truth(v: Any) -> Any:
    arr = np.asarray(v)
    if arr.dtype == bool:
        return arr
    if arr.dtype == object:
        return np.array([bool(x) for x in arr.ravel()], dtype=bool).reshape(arr.shape)
    return np.nan_to_num(arr.astype(float), nan=0.0) != 0


# ---- interval bounds: proving that a condition can never hold ------------------------------------
TRUE, FALSE, MAYBE = "always", "never", "maybe"
_EMPTY = ("empty",)  # every point undefined (e.g. log of a range that is all ≤ 0)


def always(expr: Expression, ranges: Mapping[str, tuple[float, float]]) -> str:
    """Whether *expr* holds at every point (``TRUE``), at none (``FALSE``) or maybe, when each
    numeric name ranges over ``ranges[name] = (min, max)``. Undefined points are infeasible, so they
    are ignored: ``FALSE`` means "false or undefined at every point". Conservative interval
    arithmetic (``+ - * /`` are monotone under IEEE rounding, so corner values bound every point;
    other functions are widened by a relative 1e-9): ``FALSE`` is a proof, ``MAYBE`` is no claim."""
    with np.errstate(all="ignore"):
        return _tri(_Bounds(ranges).visit(expr._tree))


def _tri(b: tuple) -> str:
    if b[0] == "bool":
        return b[1]
    if b[0] == "empty":
        return FALSE
    if b[0] == "num":
        lo, hi = b[1], b[2]
        if lo == hi == 0:
            return FALSE
        return TRUE if (lo > 0 or hi < 0) else MAYBE
    return MAYBE


def _iv(lo: float, hi: float, widen: bool = False) -> tuple:
    lo, hi = float(lo), float(hi)
    if math.isnan(lo):
        lo = -math.inf
    if math.isnan(hi):
        hi = math.inf
    if widen:
        lo, hi = lo - abs(lo) * 1e-9 - 1e-300, hi + abs(hi) * 1e-9 + 1e-300
    return ("num", lo, hi)


class _Bounds:
    def __init__(self, ranges: Mapping[str, tuple[float, float]]):
        self.ranges = ranges

    def visit(self, node: ast.expr) -> tuple:
        fn = getattr(self, "visit_" + type(node).__name__, None)
        return fn(node) if fn else ("unknown",)

    def visit_Constant(self, node: ast.Constant) -> tuple:
        v = node.value
        if isinstance(v, bool):
            return ("bool", TRUE if v else FALSE)
        if isinstance(v, (int, float)):
            return _iv(v, v)
        return ("text",)

    def visit_Name(self, node: ast.Name) -> tuple:
        if node.id in ("True", "False"):
            return ("bool", TRUE if node.id == "True" else FALSE)
        r = self.ranges.get(node.id)
        return _iv(*r) if r is not None else ("unknown",)

    def visit_BinOp(self, node: ast.BinOp) -> tuple:
        a, b = self.visit(node.left), self.visit(node.right)
        if "empty" in (a[0], b[0]):
            return _EMPTY
        if a[0] != "num" or b[0] != "num":
            return ("unknown",)
        (_, al, ah), (_, bl, bh) = a, b
        op = type(node.op)
        if op is ast.Add:
            return _iv(al + bl, ah + bh)
        if op is ast.Sub:
            return _iv(al - bh, ah - bl)
        if op is ast.Mult:
            c = [al * bl, al * bh, ah * bl, ah * bh]
            return _iv(min(c), max(c)) if not any(map(math.isnan, c)) else _iv(-math.inf, math.inf)
        if op in (ast.Div, ast.FloorDiv):
            if bl <= 0 <= bh:
                return _iv(-math.inf, math.inf)
            c = [al / bl, al / bh, ah / bl, ah / bh]
            if any(map(math.isnan, c)):
                return _iv(-math.inf, math.inf)
            lo, hi = min(c), max(c)
            return _iv(math.floor(lo) if math.isfinite(lo) else lo, math.floor(hi) if math.isfinite(hi) else hi) \
                if op is ast.FloorDiv else _iv(lo, hi)
        if op is ast.Mod:
            if bl > 0:
                return _iv(0.0, bh)
            if bh < 0:
                return _iv(bl, 0.0)
            return _iv(-math.inf, math.inf)
        if op is ast.Pow and al > 0:
            c = [float(np.power(x, y)) for x in (al, ah) for y in (bl, bh)]
            return _iv(min(c), max(c), widen=True)
        return _iv(-math.inf, math.inf)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> tuple:
        v = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            t = _tri(v)
            return ("bool", {TRUE: FALSE, FALSE: TRUE}.get(t, MAYBE))
        if v[0] != "num":
            return v if v[0] == "empty" else ("unknown",)
        return _iv(-v[2], -v[1]) if isinstance(node.op, ast.USub) else v

    def visit_BoolOp(self, node: ast.BoolOp) -> tuple:
        ts = [_tri(self.visit(v)) for v in node.values]
        decisive, other = (FALSE, TRUE) if isinstance(node.op, ast.And) else (TRUE, FALSE)
        if decisive in ts:
            return ("bool", decisive)
        return ("bool", other if all(t == other for t in ts) else MAYBE)

    def visit_IfExp(self, node: ast.IfExp) -> tuple:
        t = _tri(self.visit(node.test))
        body, orelse = self.visit(node.body), self.visit(node.orelse)
        if t == TRUE:
            return body
        if t == FALSE:
            return orelse
        if body[0] == "num" and orelse[0] == "num":
            return _iv(min(body[1], orelse[1]), max(body[2], orelse[2]))
        tb, te = _tri(body), _tri(orelse)
        return ("bool", tb if tb == te else MAYBE)

    def visit_Compare(self, node: ast.Compare) -> tuple:
        left = self.visit(node.left)
        result = TRUE
        for op, comp in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                items = [self.visit(e) for e in comp.elts]
                t = MAYBE
                if left[0] == "empty":
                    t = FALSE
                elif isinstance(op, ast.In) and left[0] == "num" and all(i[0] == "num" for i in items):
                    if all(i[2] < left[1] or i[1] > left[2] for i in items):
                        t = FALSE
                left = ("bool", MAYBE)
            else:
                right = self.visit(comp)
                t = _compare(type(op), left, right)
                left = right
            if t == FALSE:
                return ("bool", FALSE)
            if t == MAYBE:
                result = MAYBE
        return ("bool", result)

    def visit_Call(self, node: ast.Call) -> tuple:
        name = node.func.id  # type: ignore[attr-defined]
        args = [self.visit(a) for a in node.args]
        if any(a[0] == "empty" for a in args):
            return _EMPTY
        if any(a[0] != "num" for a in args):
            return ("unknown",)
        if name in ("min", "max"):
            f = min if name == "min" else max
            return _iv(f(a[1] for a in args), f(a[2] for a in args))
        lo, hi = args[0][1], args[0][2]
        if name == "abs":
            return _iv(lo, hi) if lo >= 0 else _iv(-hi, -lo) if hi <= 0 else _iv(0.0, max(-lo, hi))
        if name in ("log", "log2", "log10", "sqrt"):
            floor_ = 0.0 if name == "sqrt" else None
            if hi < 0 or (hi == 0 and floor_ is None):
                return _EMPTY
            fn = FUNCTIONS[name][0]
            low = -math.inf if (lo <= 0 and floor_ is None) else float(fn(max(lo, 0.0)))
            return _iv(low, float(fn(hi)), widen=True)
        if name in ("exp", "floor", "ceil"):
            fn = FUNCTIONS[name][0]
            return _iv(float(fn(lo)), float(fn(hi)), widen=name == "exp")
        return ("unknown",)


def _compare(op: type, a: tuple, b: tuple) -> str:
    if "empty" in (a[0], b[0]):
        return FALSE
    if a[0] != "num" or b[0] != "num":
        return MAYBE
    (_, al, ah), (_, bl, bh) = a, b
    if op is ast.Lt:
        return TRUE if ah < bl else FALSE if al >= bh else MAYBE
    if op is ast.LtE:
        return TRUE if ah <= bl else FALSE if al > bh else MAYBE
    if op is ast.Gt:
        return TRUE if al > bh else FALSE if ah <= bl else MAYBE
    if op is ast.GtE:
        return TRUE if al >= bh else FALSE if ah < bl else MAYBE
    if op is ast.Eq:
        return FALSE if (ah < bl or al > bh) else TRUE if al == ah == bl == bh else MAYBE
    if op is ast.NotEq:
        return TRUE if (ah < bl or al > bh) else FALSE if al == ah == bl == bh else MAYBE
    return MAYBE
