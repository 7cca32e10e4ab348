"""Safe, vectorised evaluation of feasibility constraints (foundation issue).

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
overflows to ``inf`` instead of hanging the process.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import ExpressionError

MAX_LENGTH = 2000
MAX_NODES = 400

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
        with np.errstate(all="ignore"):
            return _Eval(columns, self.text).visit(self._tree)

    def mask(self, columns: Mapping[str, Any], n: int) -> np.ndarray:
        """Boolean feasibility mask of length *n*; NaN results count as infeasible."""
        out = np.asarray(self.evaluate(columns))
        if out.dtype != bool:
            out = np.nan_to_num(out.astype(float), nan=0.0) != 0
        return np.broadcast_to(out, (n,)).copy() if out.shape != (n,) else out


def compile_expression(text: str, types: Mapping[str, str], label: str = "expression") -> Expression:
    """Parse and check *text*. *types* maps each known name to ``"number"`` or ``"text"``.

    Raises :class:`ExpressionError` naming *label* and the problem.
    """
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(f"{label}: the expression is empty; write e.g. smem_kb * 1024 >= threads * 12")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"{label}: the expression is {len(text)} characters long (limit {MAX_LENGTH})")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        col = f" at column {e.offset}" if e.offset else ""
        raise ExpressionError(f"{label}: {text!r} is not a valid expression (syntax error{col}: {e.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError(f"{label}: {text!r} is nested too deeply to read") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ExpressionError(f"{label}: the expression is too complex ({len(nodes)} syntax nodes, limit {MAX_NODES})")
    checker = _Check(types, text, label)
    kind = checker.visit(tree.body)
    if kind == TEXT:
        raise ExpressionError(f"{label}: {text!r} gives text, not a condition; compare it, e.g. sched == 'gto'")
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
    """Interpreter over the checked whitelist (no other node type can reach it)."""

    def __init__(self, columns: Mapping[str, Any], text: str):
        self.columns, self.text = columns, text

    def visit(self, node: ast.expr) -> Any:
        return getattr(self, "visit_" + type(node).__name__)(node)

    def visit_Constant(self, node: ast.Constant) -> Any:
        v = node.value
        return np.float64(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id == "True":
            return True
        if node.id == "False":
            return False
        v = self.columns[node.id]
        arr = np.asarray(v)
        return arr.astype(np.float64) if arr.dtype.kind in "iub" else arr

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return _BINOPS[type(node.op)](self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return np.logical_not(_truth(v))
        return np.negative(v) if isinstance(node.op, ast.USub) else v

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        fn = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        out = _truth(self.visit(node.values[0]))
        for v in node.values[1:]:
            out = fn(out, _truth(self.visit(v)))
        return out

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        return np.where(_truth(self.visit(node.test)), self.visit(node.body), self.visit(node.orelse))

    def visit_Compare(self, node: ast.Compare) -> Any:
        out = True
        left = self.visit(node.left)
        for op, comp in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                items = [self.visit(e) for e in comp.elts]
                hit = np.zeros(np.shape(left), dtype=bool)
                for it in items:
                    hit = hit | np.equal(left, it)
                out = np.logical_and(out, hit if isinstance(op, ast.In) else ~hit)
                left = hit
                continue
            right = self.visit(comp)
            out = np.logical_and(out, _CMPOPS[type(op)](left, right))
            left = right
        return out

    def visit_Call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]
        args = [self.visit(a) for a in node.args]
        if name == "min":
            return np.minimum.reduce(np.broadcast_arrays(*args))
        if name == "max":
            return np.maximum.reduce(np.broadcast_arrays(*args))
        return FUNCTIONS[name][0](args[0])


def _truth(v: Any) -> Any:
    arr = np.asarray(v)
    if arr.dtype == bool:
        return arr
    return np.nan_to_num(arr.astype(float), nan=0.0) != 0
