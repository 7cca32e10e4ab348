"""The one reader of structured text documents: YAML, JSON and TOML, bounded.

Every space file, model file, backend description, work flow graph and project entry is read through
:func:`load_document` (or the per-format functions), which

* refuses more than ``limits.document_bytes`` before parsing;
* builds plain data only: YAML with the safe loader (no tags that construct objects), JSON without
  ``NaN``/``Infinity`` literals, TOML with the standard library;
* bounds nesting depth and the number of nodes *before* anything large is built. YAML aliases are
  counted as expanded, so a "billion laughs" document of a few hundred bytes is refused while it
  is still a small node graph; a self-referencing alias is refused;
* bounds number literals to ``limits.number_digits`` digits;
* refuses a key given twice in one mapping (YAML and JSON would silently keep the last);
* turns every parser failure (including ``RecursionError`` and ``MemoryError``) into a
  :class:`DocumentError` naming the file, the line where known, and what to do.
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import limits
from .errors import GpudseError


class DocumentError(GpudseError):
    """A YAML/JSON/TOML document is malformed or too large."""


_LONG_NUMBER = None


def _check_size(text: str | bytes, source: str, limit: str = "document_bytes") -> str:
    lim = limits.current()
    n = len(text)
    lim.check(limit, n, f"{source}: document of {n:,} bytes", "split it or check it is the right file")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise DocumentError(f"{source}: not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    elif text.startswith("\ufeff"):
        text = text[1:]
    return text


_QUOTED_OR_DIGITS = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|\d+')


def _check_digits(text: str, source: str) -> None:
    global _LONG_NUMBER
    lim = limits.current().number_digits
    if _LONG_NUMBER is None or _LONG_NUMBER[0] != lim:
        _LONG_NUMBER = (lim, re.compile(r"\d{%d,}" % (lim + 1)))
    m = _LONG_NUMBER[1].search(text)
    if m:  # a long run of digits: a number, or only text inside a quoted string (a hex digest, cells)?
        m = next((q for q in _QUOTED_OR_DIGITS.finditer(text) if q.group()[0] not in "\"'"
                  and len(q.group()) > lim), None)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise DocumentError(f"{source}:{line}: a number with more than {lim:,} digits; no design parameter or "
                            f"setting needs one (limit number_digits)")


def _walk_limits(root: Any, source: str, nodes_limit: str = "document_nodes") -> None:
    """Depth and node count of built plain data (lists, dicts, scalars), iteratively."""
    lim = limits.current()
    max_nodes = getattr(lim, nodes_limit)
    count = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > max_nodes:
            lim.check(nodes_limit, count, f"{source}: more nodes than allowed")
        if isinstance(node, dict):
            if depth > lim.document_depth:
                lim.check("document_depth", depth, f"{source}: nesting depth")
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth + 1) for k in node.keys() if isinstance(k, (dict, list, tuple)))
        elif isinstance(node, (list, tuple)):
            if depth > lim.document_depth:
                lim.check("document_depth", depth, f"{source}: nesting depth")
            stack.extend((v, depth + 1) for v in node)


# ---- YAML -------------------------------------------------------------------------------------------
def strict_loader() -> type:
    """The YAML loader class: PyYAML's safe loader (plain data only) refusing duplicate keys.
    Subclass it to construct differently (e.g. to record line numbers) and pass it to :func:`load_yaml`."""
    global _STRICT
    if _STRICT is None:
        import yaml

        class StrictLoader(yaml.SafeLoader):
            def construct_mapping(self, node: Any, deep: bool = False) -> dict:
                if isinstance(node, yaml.MappingNode):
                    seen: set = set()
                    for key_node, _ in node.value:
                        if key_node.tag == "tag:yaml.org,2002:merge":
                            continue  # '<<: *base' merges; explicit keys may override merged ones
                        key = self.construct_object(key_node, deep=True) if isinstance(key_node, yaml.ScalarNode) \
                            else id(key_node)
                        try:
                            dup = key in seen
                            seen.add(key)
                        except TypeError:  # unhashable: the base constructor reports it
                            continue
                        if dup:
                            raise yaml.constructor.ConstructorError(
                                None, None, f"the key {key!r} appears twice in one mapping; keep one",
                                key_node.start_mark)
                return super().construct_mapping(node, deep=deep)

            # YAML 1.2 reads these plain scalars differently from PyYAML's YAML 1.1: refuse, never guess
            def construct_yaml_bool(self, node: Any) -> bool:
                if node.value.lower() not in ("true", "false"):
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the plain word {node.value!r} is {node.value.lower() in _YES} in YAML 1.1 but "
                        f"text in YAML 1.2; write {str(node.value.lower() in _YES).lower()} for a yes/no, or quote it "
                        f"('{node.value}') for the text", node.start_mark)
                return super().construct_yaml_bool(node)

            def construct_yaml_int(self, node: Any) -> int:
                v = node.value.lstrip("+-")
                if ("_" in v or ":" in v or v.startswith(("0b", "0B"))
                        or (len(v) > 1 and v[0] == "0" and v[1].isdigit())):
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the number {node.value!r} reads differently in YAML 1.1 "
                                    f"({_yaml11_hint(node.value)}) "
                        f"and YAML 1.2; write it as a plain decimal number, or quote it for text", node.start_mark)
                return super().construct_yaml_int(node)

            def construct_yaml_float(self, node: Any) -> float:
                v = node.value
                if "_" in v or ":" in v:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the number {v!r} reads differently in YAML 1.1 and YAML 1.2; write it as a plain "
                        f"decimal number, or quote it for text", node.start_mark)
                f = super().construct_yaml_float(node)
                if f == 0.0 and any(c in "123456789" for c in v.lower().split("e")[0]):
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the number {v!r} is too small for a floating-point number (below about 5e-324) "
                        f"and would silently become 0; write 0 if you mean it", node.start_mark)
                return f

        for tag, name in (("bool", "construct_yaml_bool"), ("int", "construct_yaml_int"),
                          ("float", "construct_yaml_float")):
            StrictLoader.add_constructor(f"tag:yaml.org,2002:{tag}", getattr(StrictLoader, name))
        _STRICT = StrictLoader
    return _STRICT


_STRICT: type | None = None
_YES = ("yes", "y", "on", "true")


def _yaml11_hint(text: str) -> str:
    """What PyYAML's YAML 1.1 makes of an integer-looking plain scalar (for the message)."""
    import yaml

    try:
        return f"{yaml.SafeLoader.construct_yaml_int(yaml.SafeLoader(''), yaml.ScalarNode('', text))}"
    except Exception:  # noqa: BLE001 - only for the message
        return "another number"


def load_yaml(text: str | bytes, source: str = "document", loader: type | None = None) -> Any:
    """Parse YAML with :func:`strict_loader` (or *loader*, a subclass of it), bounded as the module says."""
    import yaml

    text = _check_size(text, source)
    _check_digits(text, source)
    lim = limits.current()
    # 1. the token stream (iterative): nesting depth and token count, before any tree is built
    depth = tokens = 0
    try:
        for tok in yaml.scan(text, Loader=yaml.SafeLoader):
            tokens += 1
            if isinstance(tok, (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockMappingStartToken,
                                yaml.BlockSequenceStartToken)):
                depth += 1
                if depth > lim.document_depth:
                    raise DocumentError(f"{source}:{tok.start_mark.line + 1}: nested more than "
                                        f"{lim.document_depth} levels deep (limit document_depth)")
            elif isinstance(tok, (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)):
                depth -= 1
            if tokens > 4 * lim.document_nodes:
                lim.check("document_nodes", tokens // 4, f"{source}: document")
        # 2. the node graph (aliases are shared nodes here, still small)
        loader = (loader or strict_loader())(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            # 3. expanded size and depth with aliases followed, memoised per node, cycles refused
            _yaml_expanded(node, source, lim)
            # 4. plain data
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except GpudseError:
        raise
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        hint = "; indent with spaces, not tabs" if "\\t" in str(problem) or "\t" in str(problem) else ""
        raise DocumentError(f"{where}: not valid YAML ({problem}){hint}") from None
    except (RecursionError, MemoryError):
        raise DocumentError(f"{source}: too deeply nested or too large to read; check it is the right file") from None
    except (ValueError, TypeError, OverflowError) as e:  # e.g. an int literal beyond Python's digit limit
        raise DocumentError(f"{source}: a value cannot be read ({str(e).splitlines()[0]})") from None


def _yaml_expanded(root: Any, source: str, lim: limits.Limits) -> None:
    size: dict[int, int] = {}
    deep: dict[int, int] = {}
    state: dict[int, int] = {}  # 1 = on the stack (cycle detection), 2 = done
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, post = stack.pop()
        key = id(node)
        if post:
            children = _yaml_children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            deep[key] = 1 + max((deep[id(c)] for c in children), default=0)
            state[key] = 2
            if size[key] > lim.document_nodes:
                line = node.start_mark.line + 1 if node.start_mark else 0
                raise DocumentError(f"{source}:{line}: expands to more than {lim.document_nodes:,} values "
                                    f"(YAML anchors and aliases are counted as expanded; limit document_nodes)")
            if deep[key] > lim.document_depth:
                raise DocumentError(f"{source}: nested more than {lim.document_depth} levels deep through aliases "
                                    f"(limit document_depth)")
            continue
        st = state.get(key)
        if st == 2:
            continue
        if st == 1:
            line = node.start_mark.line + 1 if node.start_mark else 0
            raise DocumentError(f"{source}:{line}: an alias refers to a collection that contains it; "
                                f"recursive YAML is not allowed")
        state[key] = 1
        stack.append((node, True))
        for c in _yaml_children(node):
            if state.get(id(c)) != 2:
                stack.append((c, False))


def _yaml_children(node: Any) -> list:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return []


# ---- JSON -------------------------------------------------------------------------------------------
def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; write a finite number or null")


def _no_duplicates(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {dup!r} appears twice in one object; keep one")
    return out


def load_json(text: str | bytes, source: str = "document", *, bytes_limit: str = "document_bytes",
              nodes_limit: str = "document_nodes") -> Any:
    """Parse JSON, bounded as the module says; *bytes_limit*/*nodes_limit* name the limits that apply
    (a results table given as JSON uses ``json_table_bytes``/``json_table_nodes``)."""
    text = _check_size(text, source, bytes_limit)
    _check_digits(text, source)
    _json_depth_precheck(text, source)
    try:
        doc = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        raise DocumentError(f"{source}:{e.lineno}: malformed JSON ({e.msg})") from None
    except (RecursionError, MemoryError):
        raise DocumentError(f"{source}: too deeply nested or too large to read; check it is the right file") from None
    except ValueError as e:
        raise DocumentError(f"{source}: {str(e).splitlines()[0]}") from None
    _walk_limits(doc, source, nodes_limit)
    return doc


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_depth_precheck(text: str, source: str) -> None:
    """Refuse deep nesting before the recursive C parser sees it (strings are skipped)."""
    lim = limits.current().document_depth
    if text.count("[") + text.count("{") <= lim:
        return
    depth = 0
    for m in _BRACKETS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > lim:
                line = text.count("\n", 0, m.start()) + 1
                raise DocumentError(f"{source}:{line}: nested more than {lim} levels deep (limit document_depth)")
        elif c in "]}":
            depth -= 1


# ---- TOML -------------------------------------------------------------------------------------------
def load_toml(text: str | bytes, source: str = "document") -> Any:
    import tomllib

    text = _check_size(text, source)
    _check_digits(text, source)
    _json_depth_precheck(text, source)  # inline arrays/tables nest with the same brackets
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise DocumentError(f"{source}: not valid TOML ({e})") from None
    except (RecursionError, MemoryError):
        raise DocumentError(f"{source}: too deeply nested or too large to read") from None
    except ValueError as e:
        raise DocumentError(f"{source}: a value cannot be read ({str(e).splitlines()[0]})") from None
    _walk_limits(doc, source)
    return doc


# ---- by name ------------------------------------------------------------------------------------------
def load_document(text: str | bytes, source: str, fmt: str | None = None) -> Any:
    """Parse *text* as ``fmt`` (``yaml``, ``json`` or ``toml``; default: from *source*'s suffix, YAML
    for anything else, since JSON is YAML too but YAML's reader is the stricter about size)."""
    if fmt is None:
        low = source.lower()
        fmt = "json" if low.endswith(".json") else "toml" if low.endswith(".toml") else "yaml"
    if fmt == "json":
        return load_json(text, source)
    if fmt == "toml":
        return load_toml(text, source)
    if fmt in ("yaml", "yml"):
        return load_yaml(text, source)
    raise DocumentError(f"{source}: unknown document format {fmt!r}; use YAML, JSON or TOML")
