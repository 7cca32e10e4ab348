"""A corpus of hostile inputs for every input surface of hostile input that the core owns: design-space
files, results tables, project zips, work flow graphs, and sampling requests; and scenarios — events on
a shared server rather than files (tests/hostile_scenarios.py describes them).

    from hostile_corpus import cases, SURFACES

    for case in cases():              # a generator: big inputs are built when reached
        case.surface                  # "space", "results", "table", "project", "wfg", "sample" or "scenario"
        case.filename, case.data      # what a user would upload or pass on the command line
        case.expect                   # "error": our one-line error, matching case.pattern
                                      # "flagged": accepted, and the output says case.pattern
                                      # "ok": accepted (case.pattern, if any, is in the output)
        case.cls                      # the class: amplification, traceback, silently-wrong,
                                      # partial-state, code-execution, or valid (a control)
        case.concern                  # for cases written for a shared-server class, which one
                                      # (hostile_scenarios.CONCERNS); "" otherwise

Every case is independent of the others and of the machine (bombs are built as raw deflate
streams, never expanded here). ``SURFACES`` says which dashboard uploader and which CLI command
take each surface, so the dashboard tests (a later phase) can feed the same corpus through every
uploader; :func:`cli_argv` builds the CLI command for a case. ``MARKER`` is a file that a case
trying to execute code would create; it must never exist.

Expected outcomes are the *contract*, not what the code happened to do: an "error" pattern is the
substance of our message (which limit, which field), an "ok"/"flagged" pattern is the fact the user
must be told (a note, a dropped column, the exact feasible size).

Run ``python tests/hostile_corpus.py`` for the counts per class and surface.
"""

from __future__ import annotations

import io
import json
import struct
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

MARKER = Path(tempfile.gettempdir()) / "gpudse_hostile_marker"

SURFACES = {  # surface: (dashboard uploader, CLI command; PATH is the case written to a file)
    "space": ("Design space page: upload (space.presets.load_space_bytes)", "gpudse space show PATH"),
    "sample": ("Sampling page: request on the uploaded space", "gpudse sample PATH ARGS -o OUT.csv"),
    "results": ("Simulations page: upload results (sim.upload.read_upload + validate_results against "
                "case.space)", "gpudse import PATH --space SPACE -o OUT.csv"),
    "table": ("(CLI only: a points table)", "gpudse simulate PATH -o OUT.csv (the table is read before any run)"),
    "project": ("Home page: load project (ui.load_project_zip -> workspace.project.load_project)",
                "(no CLI command: workspace.project.load_project in a subprocess)"),
    "wfg": ("Analytical models page: upload a work flow graph (ui.parse_upload + sim.wfg.graph_view)",
            "gpudse wfg PATH"),
    "scenario": ("visits, workspaces, jobs and the storage under them (app.py through AppTest, dashboard.state, "
                 "gpudse_core.workspace)", "steps of tests/hostile_scenarios/NAME.json, gpudse commands among them "
                 "(tests/hostile_scenarios.py)"),
}
CLASSES = ("amplification", "traceback", "silently-wrong", "partial-state", "code-execution", "valid")


@dataclass(frozen=True)
class Case:
    cls: str
    surface: str
    name: str
    filename: str
    data: bytes
    expect: str  # "error" | "flagged" | "ok"
    pattern: str = ""  # regex (re.S) over the output
    args: tuple[str, ...] = ()  # extra CLI arguments (sample requests)
    space: str = "stargazer"  # the space results are validated against (a preset name)
    concern: str = ""  # the shared-server class (hostile_scenarios.CONCERNS), for the cases added for it
    timeout: float = 0.0  # seconds the case may take, when more than the runner's default

    def __repr__(self) -> str:
        return f"Case({self.cls}/{self.surface}/{self.name}, {len(self.data):,} bytes, {self.expect})"


def cli_argv(case: Case, path: Path, out_dir: Path) -> list[str] | None:
    """The ``gpudse`` arguments that feed *case* (written at *path*) to the CLI; None for surfaces
    without a command (projects)."""
    if case.surface == "space":
        return ["space", "show", str(path)]
    if case.surface == "sample":
        return ["sample", str(path), *case.args, "-o", str(out_dir / "samples.csv")]
    if case.surface == "results":
        return ["import", str(path), "--space", case.space, "-o", str(out_dir / "clean.csv")]
    if case.surface == "table":
        return ["simulate", str(path), "--store", str(out_dir / "c.db"), "-o", str(out_dir / "out.csv")]
    if case.surface == "wfg":
        return ["wfg", str(path)]
    return None


# ---- builders -----------------------------------------------------------------------------------------
GOOD_PARAMS = "  - {name: simd, values: [8, 16, 32]}\n  - {name: blk, values: {pow2: 1..16}}\n"


def space(body: str = GOOD_PARAMS, head: str = "name: h\n", tail: str = "") -> bytes:
    return (head + "parameters:\n" + body + tail).encode()


def laughs(levels: int, width: int, key: str = "description") -> str:
    """A "billion laughs" value: *width*^*levels* strings from a few hundred bytes of anchors."""
    lines = ['x0: &l0 "lol"']
    for i in range(1, levels + 1):
        lines.append(f"x{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + f"\n{key}: *l{levels}\n"


def deflate_zeros(n: int, byte: bytes = b"\0") -> tuple[bytes, int]:
    """A raw deflate stream of *n* copies of *byte* and its CRC-32, built chunk by chunk."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = byte * (1 << 20)
    parts, crc = [], 0
    for _ in range(n >> 20):
        parts.append(c.compress(chunk))
        crc = zlib.crc32(chunk, crc)
    rest = byte * (n & ((1 << 20) - 1))
    parts.append(c.compress(rest) + c.flush())
    return b"".join(parts), zlib.crc32(rest, crc)


def raw_zip(entries: list[dict]) -> bytes:
    """A zip written by hand so that headers can lie: each entry has ``name``, ``data`` (already
    compressed), ``crc``, ``size`` (declared uncompressed), ``method`` (8 deflate, 0 stored) and ``flags``."""
    out, central = io.BytesIO(), io.BytesIO()
    for e in entries:
        name = e["name"].encode()
        off = out.tell()
        head = struct.pack("<HHHHHIIIHH", 20, e.get("flags", 0), e.get("method", 8), 0, 0, e["crc"],
                           len(e["data"]), e["size"], len(name), 0)
        out.write(b"PK\x03\x04" + head + name + e["data"])
        central.write(b"PK\x01\x02" + struct.pack("<HHHHHHIIIHHHHHII", 20, 20, e.get("flags", 0), e.get("method", 8),
                                                  0, 0, e["crc"], len(e["data"]), e["size"], len(name), 0, 0, 0, 0,
                                                  0, off) + name)
    cd = central.getvalue()
    start = out.tell()
    out.write(cd + b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, len(entries), len(entries), len(cd), start, 0))
    return out.getvalue()


def entry(name: str, payload: bytes, **kw) -> dict:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    data = c.compress(payload) + c.flush()
    return {"name": name, "data": data, "crc": zlib.crc32(payload), "size": len(payload), **kw}


def zipped(parts: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, b in parts.items():
            zf.writestr(n, b)
    return buf.getvalue()


MANIFEST = json.dumps({"schema": "gpudse.project/1", "response": "cycles"}).encode()
SPACE_YAML = space()
RESULTS_CSV = ("simd,blk,cycles\n" + "".join(f"{s},{b},{1000 + 7 * s + b}\n" for s in (8, 16, 32)
                                           for b in (1, 2, 4, 8, 16))).encode()


def project(**parts: bytes | None) -> bytes:
    base = {"manifest.json": MANIFEST, "space.yaml": SPACE_YAML, "results.csv": RESULTS_CSV,
            "settings.json": b"{}"}
    base.update({k.replace("_", "."): v for k, v in parts.items()})
    return zipped({k: v for k, v in base.items() if v is not None})


def samples_doc(points: list[dict], **meta) -> bytes:
    return json.dumps({"meta": {"space": "h", "method": "uniform", "seed": 1, "request": {"n": len(points)},
                                **meta}, "points": points}).encode()


STARGAZER_ROW = {"blk": 1, "cc": 1, "tc": 1, "smp": 1, "ccp": 1, "simd": 8, "mshr": 1, "dramq": 16, "intra": 1,
                 "inter": 2}


def results_csv(rows: int = 20, extra: dict[str, list] | None = None, header: str | None = None) -> bytes:
    """A Stargazer results table: distinct points, varying cycles (plus *extra* columns)."""
    import itertools

    names = list(STARGAZER_ROW)
    pts = itertools.islice(itertools.product([1, 2, 4, 8, 16], [1, 2, 4], [8, 16, 32], [1, 2, 3]), rows)
    lines = []
    for i, (blk, cc, simd, mshr) in enumerate(pts):
        row = {**STARGAZER_ROW, "blk": blk, "cc": cc, "simd": simd, "mshr": mshr, "cycles": 1000 + 37 * i}
        for k, v in (extra or {}).items():
            row[k] = v[i % len(v)]
        lines.append(row)
    cols = list(lines[0])
    text = (header if header is not None else ",".join(cols)) + "\n"
    text += "".join(",".join(str(r[c]) for c in cols) + "\n" for r in lines)
    assert names == cols[:10]
    return text.encode()


WFG_GOOD = {
    "hardware": {"pipeline_latency": 24, "warp_size": 32, "simd_width": 8, "wlp_max": 16,
                 "bandwidth_bytes_per_cycle": 4, "memory_latency": 250},
    "kernel": {"nodes": [{"id": "C1", "type": "C", "insts": 1}, {"id": "M", "type": "M", "bytes": 4}],
               "arcs": [["entry", "C1"], ["C1", "M"], ["M", "exit"]]},
}


def _model_doc(response: str) -> dict:
    """A stepwise model of the project space's (simd, blk) fitted on RESULTS_CSV, as JSON, with *response*."""
    import pandas as pd

    from gpudse_core.model.stepwise import fit_stepwise

    df = pd.read_csv(io.BytesIO(RESULTS_CSV))
    doc = fit_stepwise(df, "cycles").to_dict()
    doc["response"] = response
    return doc


def wfg(**changes) -> bytes:
    doc = json.loads(json.dumps(WFG_GOOD))
    for path, value in changes.items():
        node = doc
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[int(keys[-1]) if isinstance(node, list) else keys[-1]] = value
    return json.dumps(doc).encode()


# ---- the corpus ------------------------------------------------------------------------------------------
CONCERN_OF = {  # file cases written for a shared-server class (scenario cases carry theirs in their JSON)
    "space/constraints-200-costly-over-4M": "costly-legal-input", "sample/chain-of-comparisons": "costly-legal-input",
    "space/chain-of-120-comparisons": "costly-legal-input", "space/chains-no-search-sweep": "costly-legal-input",
    "space/markdown-image-label": "attacker-urls", "sample/formula-categorical": "csv-formula",
    **{f"space/{n}": "silent-value-change" for n in (
        "nfc-equal-values", "long-integers-distinct", "yaml11-no-yes", "yaml11-octal", "yaml11-sexagesimal",
        "underflow-1e-400", "name-trailing-newline", "values-int-float-above-2^53",
        "values-int-float-above-2^53-json")},
    **{f"results/{n}": "silent-value-change" for n in (
        "nfc-equal-columns", "boolean-column", "constant-response", "wide-ints-47-digits-response",
        "wide-ints-uint64-response", "wide-ints-beside-decimal", "wide-ints-json")},
    "wfg/branch-probabilities-1.8": "silent-value-change",
}


def cases() -> Iterator[Case]:
    import dataclasses

    for case in _cases():
        concern = CONCERN_OF.get(f"{case.surface}/{case.name}")
        yield dataclasses.replace(case, concern=concern) if concern else case


_K = (CLASSES[0], CLASSES[1], CLASSES[2], CLASSES[3], CLASSES[4], "valid", "error", "flagged", "ok",
      r"nested more than|too deeply", "space", "results")  # classes, outcomes, messages, surfaces


def _cases() -> Iterator[Case]:
    """Every case, surface by surface."""
    yield from _space_cases()
    yield from _sample_cases()
    yield from _results_cases()
    yield from _points_cases()
    yield from _project_cases()
    yield from _wfg_cases()
    yield from _scenario_cases()


def _space_cases() -> Iterator[Case]:
    # == design-space files ===============================================================================
    A, T, S, P, X, V, E, F, OK, NESTED, sp, rs = _K
    sp = "space"
    yield Case(V, sp, "good", "s.yaml", space(), OK, r"size: 15 design points")
    yield Case(V, sp, "good-json", "s.json", json.dumps({"parameters": [{"name": "a", "values": [1, 2]}]}).encode(),
               OK, r"size: 2 design points")
    yield Case(V, sp, "shared-anchors", "s.yaml", space("  - {name: a, values: &v [1, 2, 3]}\n"
                                                       "  - {name: b, values: *v}\n"), OK, "size: 9")
    yield Case(V, sp, "unicode-label", "s.yaml", space("  - {name: a, label: \"α → β ✓\", values: [1, 2]}\n"), OK,
               "α → β")
    for lv, w in ((9, 9), (12, 5), (30, 2)):
        yield Case(A, sp, f"laughs-description-{lv}x{w}", "s.yaml", space(tail=laughs(lv, w)), E,
                   r"expands to more than .* counted as expanded")
    yield Case(A, sp, "laughs-label", "s.yaml",
               (laughs(9, 9, "lab") + "parameters:\n  - {name: a, values: [1], label: *l9}\n").encode(), E,
               r"expands to more than")
    yield Case(A, sp, "laughs-values", "s.yaml",
               (laughs(9, 9, "v") + "parameters:\n  - {name: a, values: *l9}\n").encode(), E, r"expands to more than")
    yield Case(A, sp, "recursive-alias", "s.yaml", b"a: &a [*a]\nparameters: *a\n", E, r"recursive|alias")
    yield Case(A, sp, "deep-flow-100k", "s.yaml", b"parameters: " + b"[" * 100_000 + b"]" * 100_000, E, NESTED)
    yield Case(A, sp, "deep-block", "s.yaml", "".join(" " * i + "a:\n" for i in range(2000)).encode(), E, NESTED)
    yield Case(A, sp, "deep-json-100k", "s.json", b"[" * 100_000 + b"]" * 100_000, E, NESTED)
    yield Case(A, sp, "deep-json-objects", "s.json", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, E, NESTED)
    yield Case(A, sp, "range-3e7", "s.yaml", space("  - {name: a, values: '0::1::3e7'}\n"), E,
               r"30,000,001 values.*values_per_parameter")
    yield Case(A, sp, "range-tiny-step", "s.yaml", space("  - {name: a, values: '0::1e-300::1'}\n"), E,
               r"values_per_parameter")
    yield Case(A, sp, "range-huge-end", "s.yaml", space("  - {name: a, values: '0::1::1e308'}\n"), E,
               r"values_per_parameter")
    yield Case(A, sp, "range-inf-end", "s.yaml", space("  - {name: a, values: '0::1::1e999'}\n"), E,
               r"infinite or beyond")
    yield Case(A, sp, "pow2-2^13000-literal", "s.yaml", space("  - {name: a, values: {pow2: [1, %d]}}\n" % 2 ** 13000),
               E, r"more than 400 digits")
    yield Case(A, sp, "pow2-2^13000-text", "s.yaml", space("  - {name: a, values: 'pow2: 1..2**13000'}\n"), E,
               r"'2\*\*13000' is not a number")
    yield Case(A, sp, "pow2-2^1000", "s.yaml", space("  - {name: a, values: {pow2: [1, %d]}}\n" % 2 ** 1000), E,
               r"beyond the range of whole-number values")
    yield Case(A, sp, "pow2-1e300-float", "s.yaml",
               space("  - {name: a, values: {pow2: [1, 8.98846567431158e307]}}\n"), E,
               r"beyond the range of whole-number values")
    yield Case(A, sp, "list-200k", "s.yaml", space("  - {name: a, values: '" + ",".join(map(str, range(200_000)))
                                                     + "'}\n"), E, r"200,000 values.*values_per_parameter")
    yield Case(A, sp, "params-2000", "s.yaml", space("".join(f"  - {{name: p{i}, values: [1]}}\n"
                                                             for i in range(2000))), E, r"2,000 parameters.*parameters")
    yield Case(A, sp, "values-100M-in-all", "s.yaml", space("".join(f"  - {{name: p{i}, values: '1::1::100000'}}\n"
                                                                    for i in range(1000))), E, r"space_values")
    yield Case(A, sp, "constraints-500-components", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(1000)),
                     tail="constraints:\n" + "".join(f"  - p{2 * i} + p{2 * i + 1} == 1999\n" for i in range(500))),
               F, r"not enumerated: evaluating its constraints at every combination would exceed the space's "
                  r"analysis budget")
    yield Case(A, sp, "constraints-200-costly-over-4M", "s.yaml",  # enumerated: 16 G array operations (minutes)
               space("".join(f"  - {{name: {n}, values: '1::1::45'}}\n" for n in "abcd"),
                     tail="constraints:\n" + "".join(f"  - 'a * b + c * d - a * c + b * d + {i} < 100000 + a*a'\n"
                                                     for i in range(200))),
               F, r"4,100,625 combinations, not enumerated.*constraint_work.*estimate")
    yield Case(A, sp, "constraint-long", "s.yaml",
               space(tail="constraints: ['" + " + ".join(["simd"] * 800) + " > 0']\n"), E,
               r"characters long.*expression_chars")
    yield Case(A, sp, "constraint-nodes", "s.yaml",
               space(tail="constraints: ['" + "+".join(["simd"] * 300) + " > 0']\n"), E,
               r"too complex.*expression_nodes")
    yield Case(A, sp, "constraint-parens", "s.yaml", space(tail="constraints: ['" + "(" * 900 + "simd" + ")" * 900
                                                             + " > 1']\n"), E,
               r"nested too deeply|too complex|not a valid expression")
    yield Case(A, sp, "constraints-5000", "s.yaml", space(tail="constraints:\n" + "  - simd > 1\n" * 5000), E,
               r"5,000 constraints.*constraints")
    yield Case(A, sp, "file-9MB", "s.yaml", space(tail="description: '" + "x" * (9 << 20) + "'\n"), E,
               r"document_bytes")
    # -- type confusion and malformed files (the traceback class) --
    tc = [
        ("fixed-7", space(tail="fixed: 7\n"), r"'fixed' must be a list"),
        ("fixed-mapping", space(tail="fixed: {a: 1}\n"), r"'fixed' must be a list"),
        ("fixed-value-list", space(tail="fixed: [{name: f, value: [1]}]\n"), r"one number or word"),
        ("fixed-value-huge", space(tail="fixed: [{name: f, value: %d}]\n" % 10 ** 300), r"beyond the range"),
        ("fixed-value-inf", space(tail="fixed: [{name: f, value: .inf}]\n"), r"infinite"),
        ("constraints-5", space(tail="constraints: 5\n"), r"'constraints' must be a list"),
        ("constraint-number", space(tail="constraints: [5]\n"), r"a constraint is text"),
        ("constraint-expr-list", space(tail="constraints: [{expr: [a]}]\n"), r"'expr' must be"),
        ("constraint-1990-digits", space(tail="constraints: ['simd < " + "9" * 1990 + "']\n"),
         r"more than 400 digits|a number with 1,990 digits \(limit 400, number_digits\)"),
        ("constraint-inf-literal", space(tail="constraints: ['simd < 1e999']\n"), r"beyond the range"),
        ("constraint-syntax", space(tail="constraints: ['simd >']\n"), r"not a valid expression"),
        ("constraint-unknown-name", space(tail="constraints: ['simdd > 1']\n"), r"did you mean 'simd'"),
        ("parameters-string", b"parameters: x\n", r"non-empty list"),
        ("parameters-numbers", b"parameters: [5]\n", r"each parameter is a mapping"),
        ("name-list", space("  - {name: [a], values: [1]}\n"), r"name is missing|name"),
        ("name-number", space("  - {name: 5, values: [1]}\n"), r"name is missing|name"),
        ("top-name-mapping", space(head="name: {a: 1}\n"), r"'name' must be one word"),
        ("description-list", space(head="description: [1, 2]\n"), r"'description' must be one word"),
        ("label-mapping", space("  - {name: a, label: {x: 1}, values: [1]}\n"), r"'label' must be one word"),
        ("kind-list", space("  - {name: a, kind: [x], values: [1]}\n"), r"'kind' must be one word"),
        ("values-nested", space("  - {name: a, values: [1, [2]]}\n"), r"single number or word"),
        ("values-pow2-one", space("  - {name: a, values: {pow2: [1]}}\n"), r"pow2 needs a range"),
        ("values-pow2-null", space("  - {name: a, values: {pow2: null}}\n"), r"pow2 needs a range"),
        ("values-range-list", space("  - {name: a, values: {range: [1, 2]}}\n"), r"not of the form i::j::k"),
        ("values-inf", space("  - {name: a, values: [1, .inf]}\n"), r"infinite"),
        ("values-nan", space("  - {name: a, values: [1, .nan]}\n"), r"not a number"),
        ("values-huge-int", space("  - {name: a, values: [1, %d]}\n" % 10 ** 30), r"beyond the range"),
        ("values-dates", space("  - {name: a, values: [2020-01-01]}\n"), r"not a number"),
        ("members-5", space("  - {name: g, members: 5}\n"), r"'members' must be a non-empty list"),
        ("members-numbers", space("  - {name: g, members: [5]}\n"), r"each parameter is a mapping"),
        ("members-nested-group", space("  - {name: g, members: [{name: h, members: [{name: a, values: [1]}]}]}\n"),
         r"unknown field 'members'"),
        ("schema-list", space(head="schema: [1]\n"), r"schema .* is not supported"),
        ("top-scalar", b"5\n", r"must be a mapping"),
        ("top-null", b"null\n", r"must be a mapping|the file is empty"),
        ("empty", b"", r"must be a mapping|the file is empty"),
        ("comments-only", b"# nothing\n", r"must be a mapping|the file is empty"),
        ("binary", bytes(range(256)) * 4, r"not UTF-8 text"),
        ("utf16", "parameters:\n  - {name: a, values: [1]}\n".encode("utf-16"), r"not UTF-8 text"),
        ("tab-indent", b"parameters:\n\t- {name: a, values: [1]}\n", r"not valid YAML"),
        ("unhashable-key", b"? [a]\n: 1\nparameters: [{name: a, values: [1]}]\n", r"not valid YAML|unhashable"),
        ("duplicate-key", b"parameters: [{name: a, values: [1]}]\nparameters: [{name: b, values: [1]}]\n",
         r"appears twice"),
        ("duplicate-key-json", b'{"parameters": [{"name": "a", "values": [1]}], "parameters": []}', r"appears twice"),
        ("json-nan", b'{"parameters": [{"name": "a", "values": [NaN]}]}', r"not a JSON number"),
        ("non-string-key", b"1: 2\nparameters: [{name: a, values: [1]}]\n", r"unknown top-level field 1"),
        ("yaml-binary-tag", space("  - {name: a, values: !!binary aGVsbG8=}\n"), r"values must be|single number"),
        ("yaml-set-tag", space("  - {name: a, values: !!set {1, 2}}\n"), r"values must be a list"),
        ("group-mismatch", space("  - {name: g, members: [{name: a, values: [1, 2]}, {name: b, values: [1]}]}\n"),
         r"member 'b' has 1 values"),
    ]
    for n, data, pat in tc:
        yield Case(T, sp, n, "s.json" if n.endswith("-json") or n == "json-nan" else "s.yaml", data, E, pat)
    yield from _space_cases_wrong()


def _space_cases_wrong() -> Iterator[Case]:
    """Design-space files that were read silently wrong."""
    A, T, S, P, X, V, E, F, OK, NESTED, sp, rs = _K
    # -- silently wrong --
    for name in ("config", "run_dir", "design_index", "predicted"):
        yield Case(S, sp, f"reserved-parameter-{name}", "s.yaml", space(f"  - {{name: {name}, values: [1, 2]}}\n"), E,
                   rf"'{name}' is reserved")
    yield Case(S, sp, "reserved-fixed-config", "s.yaml", space(tail="fixed: [{name: config, value: x}]\n"), E,
               r"'config' is reserved")
    yield Case(S, sp, "reserved-group-point", "s.yaml", space("  - {name: point, members: [{name: a, values: [1]}]}\n"),
               E, r"'point' is reserved")
    yield Case(S, sp, "division-by-zero", "s.yaml",
               space("  - {name: a, values: [0, 1, 2]}\n  - {name: b, values: [0, 1]}\n",
                     tail="constraints: [a/b > 1]\n"), F,
               r"feasible: 1 design points.*'a/b > 1' is undefined .* at 3 of 6 combinations.*infeasible")
    yield Case(S, sp, "division-by-zero-guarded", "s.yaml",
               space("  - {name: a, values: [0, 1, 2]}\n  - {name: b, values: [0, 1]}\n",
                     tail="constraints: ['b > 0 and a / b > 1']\n"), OK, r"feasible: 1 design points(?!.*undefined)")
    yield Case(S, sp, "log-of-zero", "s.yaml", space("  - {name: a, values: [0, 1, 2, 4]}\n",
                                                     tail="constraints: ['log2(a) >= 1']\n"),
               F, r"feasible: 2 design points.*undefined")
    yield Case(S, sp, "undefined-everywhere", "s.yaml", space(tail="constraints: ['simd / 0 > 1']\n"), E,
               r"undefined at every combination")
    yield Case(S, sp, "huge-satisfiable-sum", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(6)),
                     tail="constraints: ['p0 + p1 + p2 + p3 + p4 + p5 == 5990']\n"), F,
               r"size: 1,000,000,000,000,000,000 .*feasible: unknown .*no feasible point found in 65,536 random probes"
               r".*feasible share is below 4.6e-05.*a feasible point exists")
    yield Case(S, sp, "huge-satisfiable-equalities", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(6)),
                     tail="constraints: ['p0 == p1 and p2 == p3 and p4 == p5']\n"), OK,
               r"feasible: 1,000,000,000 design points")
    yield Case(S, sp, "huge-satisfiable-chain", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(6)),
                     tail="constraints: ['p0 == p1', 'p1 == p2', 'p2 == p3', 'p3 == p4', 'p4 == p5']\n"), OK,
               r"feasible: 1,000 design points")
    yield Case(S, sp, "huge-unsatisfiable-bounds", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(6)),
                     tail="constraints: ['p0 + p1 + p2 + p3 + p4 + p5 > 6000']\n"), E, r"can never hold")
    # -- code execution --
    yield Case(X, sp, "yaml-python-tag", "s.yaml",
               f"!!python/object/apply:os.system ['touch {MARKER}']\n".encode(), E, r"not valid YAML")
    yield Case(X, sp, "yaml-python-tag-in-value", "s.yaml",
               space(f"  - {{name: a, values: !!python/object/apply:os.system ['touch {MARKER}']}}\n"), E,
               r"not valid YAML")
    yield Case(X, sp, "constraint-import", "s.yaml",
               space(tail=f"constraints: [\"__import__('os').system('touch {MARKER}')\"]\n"), E, r"not allowed")
    yield Case(X, sp, "constraint-dunder", "s.yaml", space(tail="constraints: ['simd.__class__ == 1']\n"), E,
               r"attribute access")
    yield Case(X, sp, "name-shell", "s.yaml", space(f"  - {{name: 'a; touch {MARKER}', values: [1]}}\n"), E,
               r"not usable in constraints")
    # shared text is text (a label or description with image Markdown is kept as typed; the dashboard and
    # the browser test check it is never rendered as an image or a link)
    yield Case(X, sp, "markdown-image-label", "s.yaml",
               space("  - {name: a, label: '![x](http://127.0.0.1:9/leak.png)', values: [1, 2]}\n",
                     tail="description: '<img src=http://127.0.0.1:9/d.png> [a](javascript:alert(1))'\n"), OK,
               r"!\[x\]\(http://127\.0\.0\.1:9/leak\.png\)")
    # values YAML 1.1 and YAML 1.2 read differently, numbers that would become 0, names with a line break
    yield Case(S, sp, "nfc-equal-values", "s.yaml",  # YAML escapes: precomposed e-acute, and e + combining accent
               space('  - {name: a, kind: categorical, values: ["caf\\u00e9", "cafe\\u0301"]}\n'), E,
               r"same text once Unicode-normalised \(NFC\)")
    yield Case(S, sp, "long-integers-distinct", "s.yaml",
               space("  - {name: a, values: ['1" + "0" * 45 + "1', '1" + "0" * 45 + "2']}\n"), E,
               r"beyond the range of whole-number values")
    yield Case(S, sp, "yaml11-no-yes", "s.yaml", space("  - {name: a, values: [no, yes]}\n"), E,
               r"'no' is False in YAML 1\.1")
    yield Case(S, sp, "yaml11-octal", "s.yaml", space("  - {name: a, values: [010, 8]}\n"), E,
               r"'010'.*YAML 1\.1 \(8\)")
    yield Case(S, sp, "yaml11-sexagesimal", "s.yaml", space("  - {name: a, values: [1:30, 90]}\n"), E,
               r"'1:30'.*YAML 1\.1 \(90\)")
    yield Case(S, sp, "underflow-1e-400", "s.yaml", space("  - {name: a, values: ['1e-400', 1]}\n"), E,
               r"1e-400.*silently become 0")
    yield Case(S, sp, "name-trailing-newline", "s.yaml",
               space('  - {name: "a\\n", values: [1, 2]}\n  - {name: a, values: [1, 2]}\n'), E, r"not usable")

    # whole numbers beyond 2^53 beside decimals would be one float; all whole numbers stay exact (int64)
    yield Case(S, sp, "values-int-float-above-2^53", "s.yaml",
               space("  - {name: a, values: [9007199254740993, 9007199254740992.0, 1]}\n"), E,
               r"9007199254740993 is a whole number beyond 2\^53.*same number as the value 9007199254740992\.0")
    yield Case(S, sp, "values-int-float-above-2^53-json", "s.json",
               b'{"parameters": [{"name": "a", "values": [9007199254740993, 0.5]}]}', E,
               r"9007199254740993 is a whole number beyond 2\^53 in a list with decimal values")
    yield Case(V, sp, "values-int-above-2^53-exact", "s.yaml",
               space("  - {name: a, values: [9007199254740993, 9007199254740992]}\n"), OK,
               r"9007199254740993, 9007199254740992.*size: 2 design points")


def _sample_cases() -> Iterator[Case]:
    # == sampling requests ================================================================================
    A, T, S, P, X, V, E, F, OK, NESTED, sp, rs = _K
    sa = "sample"
    small = space("  - {name: a, values: [1, 2, 3]}\n  - {name: b, values: [1, 2]}\n")
    yield Case(V, sa, "n-3", "s.yaml", small, OK, r"wrote 3 design points", ("-n", "3", "--seed", "1"))
    # CSV formula injection: values a spreadsheet would run are written as text (verdict reads the CSV)
    yield Case(X, sa, "formula-categorical", "s.yaml",
               space('  - {name: sched, kind: categorical, values: ["=HYPERLINK(\\"http://e\\")", "@SUM(1)", "+1+1", '
                     '"-1+1", "gto"]}\n  - {name: simd, values: [-8, 16]}\n'), OK, r"wrote 10 design points",
               ("-n", "10", "--seed", "1"))
    yield Case(S, sa, "fraction-1e-300", "s.yaml", small, E, r"0 points|rounds to none.*above 0\.0833",
               ("--fraction", "1e-300"))
    yield Case(S, sa, "fraction-tiny-percent", "s.yaml", small, E, r"rounds to none", ("--fraction", "1e-5%"))
    yield Case(S, sa, "per-dim-1e-300", "s.yaml", small, F, r"wrote 1 design points.*less than one value",
               ("--per-dim-fraction", "1e-300"))
    yield Case(T, sa, "fraction-nan", "s.yaml", small, E, r"not a finite number", ("--fraction", "nan"))
    yield Case(T, sa, "fraction-inf", "s.yaml", small, E, r"not a finite number", ("--fraction", "inf"))
    yield Case(T, sa, "n-5000-digits", "s.yaml", small, E, r"not a whole number", ("-n", "9" * 5000))
    yield Case(A, sa, "n-too-many", "s.yaml", small, E, r"only 6 points", ("-n", "1000000"))
    yield Case(A, sa, "n-over-limit", "s.yaml", small, E, r"sample_points", ("-n", "100000000"))
    yield Case(S, sa, "unknown-share", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(6)),
                     tail="constraints: ['p0 + p1 + p2 + p3 + p4 + p5 == 5990']\n"), E,
               r"cannot sample uniformly.*feasible share is below", ("-n", "5"))
    yield Case(S, sa, "fraction-of-unknown", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(6)),
                     tail="constraints: ['p0 + p1 + p2 + p3 + p4 + p5 == 5990']\n"), E,
               r"feasible size .* is unknown", ("--fraction", "0.5"))
    chain7 = space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(7)),
                   tail="constraints: ['" + " < ".join(f"p{i}" for i in range(7)) + "']\n")
    yield Case(A, sa, "chain-of-comparisons", "s.yaml", chain7, E,  # one draw in 5,040 feasible: 26 s for 20,000
               r"drawing 20,000 points by rejection.*keep about 0\.0001\d of random draws.*sampling_work",
               ("-n", "20000", "--seed", "1"))
    # showing a space is bounded like sampling: the local search for a feasible point counts its steps
    chain120 = space("".join(f"  - {{name: p{i}, values: [1, 2]}}\n" for i in range(120)),
                     tail="constraints: ['" + " <= ".join(f"p{i}" for i in range(120)) + "']\n")
    yield Case(A, sp, "chain-of-120-comparisons", "s.yaml", chain120, F,  # took minutes: 65,536 steps of 32 rows
               r"feasible: unknown.*a local search bounded at [\d,]+ point evaluations")
    yield Case(A, sp, "chains-no-search-sweep", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: [1, 2]}}\n" for i in range(120)),
                     tail="constraints:\n" + "".join("  - '" + " <= ".join(f"p{i}" for i in range(120))
                                                     + f" or p0 > {1000 + j}'\n" for j in range(10))),
               F, r"no local search was made: one sweep over its 120 dimensions would exceed")
    yield Case(V, sa, "chain-of-comparisons-small", "s.yaml", chain7, OK, r"wrote 200 design points",
               ("-n", "200", "--seed", "1"))
    yield Case(V, sa, "huge-equalities-sample", "s.yaml",
               space("".join(f"  - {{name: p{i}, values: '1::1::1000'}}\n" for i in range(6)),
                     tail="constraints: ['p0 == p1 and p2 == p3 and p4 == p5']\n"), OK, r"wrote 5 design points",
               ("-n", "5", "--seed", "2"))


def _results_cases() -> Iterator[Case]:
    # == results tables (uploads and `gpudse import`) ===================================================
    A, T, S, P, X, V, E, F, OK, NESTED, sp, rs = _K
    rs = "results"
    yield Case(V, rs, "good-csv", "r.csv", results_csv(), OK, r"kept 20 of 20 rows")
    yield Case(V, rs, "good-json", "r.json", json.dumps([{**STARGAZER_ROW, "blk": b, "cycles": 100 + b}
                                                         for b in (1, 2, 4)]).encode(), OK, r"kept 3 of 3 rows")
    yield Case(S, rs, "duplicated-blk-csv", "r.csv",
               results_csv(header="blk,cc,tc,smp,ccp,simd,mshr,dramq,intra,inter,blk"), E,
               r"column\(s\) 'blk' appear more than once")
    yield Case(S, rs, "nfc-equal-columns", "r.csv", results_csv(extra={"caf\u00e9": [1.0], "cafe\u0301": [2.0]}), E,
               r"same text once Unicode-normalised \(NFC\)")
    yield Case(S, rs, "duplicated-after-strip", "r.csv", results_csv(header="blk,cc,tc,smp,ccp,simd,mshr,dramq,intra,"
                                                                            "inter, inter"), E, r"'inter' appear more")
    yield Case(S, rs, "duplicated-json-key", "r.json",
               b'[{"blk": 1, "cc": 1, "tc": 1, "smp": 1, "ccp": 1, "simd": 8, "mshr": 1, "dramq": 16, "intra": 1, '
               b'"inter": 2, "cycles": 5, "cycles": 6}]', E, r"appears twice")
    yield Case(S, rs, "constant-response", "r.csv", results_csv(extra={"ipc": [2.0]}), F,
               r"constant response.*ipc: every row kept has the value 2")
    yield Case(S, rs, "inf-response", "r.csv", results_csv(extra={"ipc": [1.5, "inf", 2.5]}), F,
               r"infinite response")
    yield Case(S, rs, "huge-number-response", "r.csv", results_csv(extra={"ipc": [1.5, "1e999", 2.5]}), F,
               r"infinite response")
    yield Case(S, rs, "nan-response", "r.csv", results_csv(extra={"ipc": [1.5, "nan", 2.5]}), F,
               r"missing or not numbers")
    yield Case(S, rs, "design-index-column", "r.csv", results_csv(extra={"design_index": list(range(20))}), F,
               r"reserved columns.*design_index.*dropped")
    yield Case(S, rs, "boolean-column", "r.csv", results_csv(extra={"ok": ["True", "False"]}), F,
               r"boolean columns.*ok hold True/False.*kept 20 of 20 rows")
    yield Case(S, rs, "config-column", "r.csv", results_csv(extra={"config": [5]}), F, r"reserved columns.*config")
    yield Case(S, rs, "values-not-in-space", "r.csv", results_csv(extra={}).replace(b",8,", b",12,"), F,
               r"not among")
    yield Case(S, rs, "all-rows-bad", "r.csv", b"blk,cc,tc,smp,ccp,simd,mshr,dramq,intra,inter,cycles\n"
               + b"".join(b"%d,1,1,1,1,12,1,16,1,2,%d\n" % (b, 100 + b) for b in (1, 2, 4)), E,
               r"no usable rows.*simd: 3 value\(s\)")
    # whole numbers beyond 64 bits are refused, naming the row and column (never one float for two numbers)
    wide = r"r\.\w+: row {}, column '{}': .*beyond the 64-bit integer range"
    yield Case(T, rs, "huge-number-parameter", "r.csv",
               results_csv().replace(b"\n1,", b"\n" + b"1" * 5000 + b",", 1), E, wide.format(1, "blk"))
    yield Case(S, rs, "wide-ints-47-digits-response", "r.csv",
               results_csv(extra={"ipc": [1, "1" + "0" * 45 + "1", "1" + "0" * 45 + "2"]}), E, wide.format(2, "ipc"))
    yield Case(S, rs, "wide-ints-uint64-response", "r.csv", results_csv(extra={"ipc": [3, 2 ** 64 - 1, 2 ** 64 - 2]}),
               E, wide.format(2, "ipc"))
    yield Case(S, rs, "wide-ints-beside-decimal", "r.csv", results_csv(extra={"ipc": [1.5, 2 ** 70, 2 ** 70 + 1]}), E,
               wide.format(2, "ipc"))
    wide_json = json.dumps([{**STARGAZER_ROW, "blk": b, "cycles": 10 ** 30 + b} for b in (1, 2, 4)]).encode()
    yield Case(S, rs, "wide-ints-json", "r.json", wide_json, E, wide.format(1, "cycles"))
    yield Case(V, rs, "int64-edges-exact", "r.csv", results_csv(extra={"ipc": [2 ** 63 - 1, 2 ** 63 - 2, 7]}), OK,
               r"kept 20 of 20 rows")
    yield Case(T, rs, "empty", "r.csv", b"", E, r"cannot be read as CSV|holds no table")
    yield Case(T, rs, "header-only", "r.csv", b"blk,cycles\n", E, r"no rows")
    yield Case(T, rs, "binary-csv", "r.csv", bytes(range(256)) * 64, E,
               r"cannot be read as CSV|lack parameter|not UTF-8|control character")
    yield Case(T, rs, "utf16-csv", "r.csv", results_csv().decode().encode("utf-16"), E,
               r"cannot be read as CSV|not UTF-8")
    yield Case(T, rs, "nul-bytes", "r.csv", results_csv().replace(b",", b"\0,", 3), E,
               r"cannot be read|lack parameter|no usable|appear more than once|control character")
    yield Case(T, rs, "missing-parameters", "r.csv", b"a,b\n1,2\n", E, r"lack parameter column")
    yield Case(T, rs, "unknown-type", "r.pkl", b"\x80\x04\x95pickle", E, r"unknown file type")
    yield Case(T, rs, "parquet-garbage", "r.parquet", b"PAR1" + b"\0" * 100 + b"PAR1", E, r"cannot be read as Parquet")
    yield Case(T, rs, "parquet-truncated", "r.parquet", _parquet_bytes()[:-20], E, r"cannot be read as Parquet")
    yield Case(T, rs, "parquet-nested", "r.parquet", _parquet_bytes(nested=True), E, r"holds list")
    yield Case(S, rs, "parquet-duplicate-columns", "r.parquet", _parquet_bytes(duplicate=True), E, r"appear more")
    yield Case(V, rs, "parquet-good", "r.parquet", _parquet_bytes(), OK, r"kept 3 of 3 rows")
    yield Case(T, rs, "json-nan", "r.json", b'[{"blk": NaN}]', E, r"not a JSON number")
    yield Case(T, rs, "json-columns-dict", "r.json", b'{"blk": [1, 2], "cycles": [3, 4]}', E, r"list of records")
    yield Case(T, rs, "json-nested-cell", "r.json", json.dumps([{**STARGAZER_ROW, "cycles": [1, 2]}]).encode(), E,
               r"holds a list")
    yield Case(T, rs, "json-scalar-rows", "r.json", b"[1, 2, 3]", E, r"record 1 is not an object")
    yield Case(A, rs, "json-deep", "r.json", b"[" * 100_000 + b"]" * 100_000, E, NESTED)
    yield Case(A, rs, "json-40MB", "r.json", b"[" + b'{"blk": 1},' * ((40 << 20) // 11) + b'{"blk": 1}]', E,
               r"json_table_bytes")
    yield Case(A, rs, "csv-1M-columns", "r.csv", b",".join(b"c%d" % i for i in range(1_000_000)) + b"\n", E,
               r"table_columns")
    yield Case(A, rs, "csv-11M-rows", "r.csv", b"blk\n" + b"1\n" * 11_000_000, E, r"table_rows")
    yield Case(A, rs, "csv-over-upload-limit", "r.csv", b"blk\n" + b"1,2,3,4\n" * (7 << 20), E,
               r"upload limit|upload_bytes")
    yield Case(A, rs, "parquet-rle-rows", "r.parquet", _parquet_rle(11_000_000, 1), E, r"table_rows")
    yield Case(A, rs, "parquet-rle-cells", "r.parquet", _parquet_rle(600_000, 90), E, r"table_cells")
    yield Case(X, rs, "shell-in-column", "r.csv", results_csv(extra={f"$(touch {MARKER})": [1, 2]}), F,
               r"neither parameters nor responses|dropped|kept 20")


def _points_cases() -> Iterator[Case]:
    # == points tables for the CLI (gpudse simulate reads them before any run) ==============================
    A, T, S, P, X, V, E, F, OK, NESTED, sp, rs = _K
    tb = "table"
    for n, fn, data, pat in (("table-duplicate", "p.csv", b"blk,blk\n1,2\n", r"appear more than once"),
                             ("table-binary", "p.parquet", b"\x00" * 64, r"cannot be read as Parquet"),
                             ("table-deep", "p.json", b"[" * 100_000 + b"]" * 100_000, NESTED),
                             ("table-columns", "p.csv", b",".join(b"c%d" % i for i in range(20_000)) + b"\n",
                              r"table_columns"),
                             ("table-empty", "p.csv", b"a,b\n", r"no rows")):
        yield Case(T if "deep" not in n and "columns" not in n else A, tb, n, fn, data, E, pat)
    # the built-in simulator models Stargazer's space: points outside it are refused before any run
    yield Case(S, tb, "table-value-outside-space", "p.csv", results_csv().replace(b"\n1,", b"\n3,", 1), E,
               r"blk takes values outside Stargazer's space at row 1")
    yield Case(S, tb, "table-negative-value", "p.csv", results_csv().replace(b"\n1,", b"\n-4,", 1), E,
               r"blk takes values outside")
    yield Case(S, tb, "table-missing-parameters", "p.csv", b"blk,cc\n1,1\n", E, r"lack column\(s\) tc, smp")
    yield Case(S, rs, "nul-in-header", "r.csv", results_csv().replace(b"cycles", b"cyc\0les", 1), E,
               r"control character")


def _project_cases() -> Iterator[Case]:
    # == project zips ===================================================================================
    A, T, S, P, X, V, E, F, OK, NESTED, sp, rs = _K
    pj = "project"
    good_samples = samples_doc([{"simd": 8, "blk": 1, "design_index": 0}, {"simd": 16, "blk": 4, "design_index": 7}])
    yield Case(V, pj, "good", "p.zip", project(samples_json=good_samples), OK)
    yield Case(P, pj, "samples-list", "p.zip", project(samples_json=b"[1, 2, 3]"), E,
               r"samples.json: expected an object with 'meta' and a 'points' list \(got a list\)")
    yield Case(P, pj, "samples-other-space", "p.zip",
               project(samples_json=samples_doc([{"simd": 8, "blk": 1, "cc": 2}])), E, r"not parameters of space")
    yield Case(P, pj, "samples-bad-value", "p.zip", project(samples_json=samples_doc([{"simd": 12, "blk": 1}])), E,
               r"point 1: value '12' of 'simd' is not one of its values|point 1: value 12")
    yield Case(P, pj, "samples-wrong-index", "p.zip",
               project(samples_json=samples_doc([{"simd": 8, "blk": 1, "design_index": 3}])), E,
               r"design_index 3 is not the index")
    yield Case(P, pj, "samples-bad-meta", "p.zip", project(samples_json=samples_doc([], method="magic")), E,
               r"meta.method")
    yield Case(P, pj, "settings-list", "p.zip", project(settings_json=b"[1]"), E, r"settings.json: must be an object")
    yield Case(S, pj, "samples-repeated-point", "p.zip",
               project(samples_json=samples_doc([{"simd": 8, "blk": 1}, {"simd": 16, "blk": 4},
                                                 {"simd": 8, "blk": 1}])),
               E, r"point 3 repeats point 1")
    yield Case(S, pj, "results-value-outside-space", "p.zip",
               project(results_csv=RESULTS_CSV.replace(b"\n8,2,", b"\n8,3,", 1)), E,
               r"results.csv: row 2: blk = 3 is not a value")
    yield Case(S, pj, "model-of-a-column-not-in-results", "p.zip",
               project(model_json=json.dumps(_model_doc("ipc")).encode()), E,
               r"a model of 'ipc', which is not a column")
    yield Case(P, pj, "results-missing-params", "p.zip", project(results_csv=b"x,cycles\n1,2\n"), E,
               r"lacks the space's parameter column")
    yield Case(P, pj, "results-duplicated", "p.zip", project(results_csv=b"simd,blk,blk,cycles\n8,1,1,5\n"), E,
               r"appear more than once")
    yield Case(P, pj, "results-no-response", "p.zip", project(results_csv=b"simd,blk,x\n8,1,5\n"), E,
               r"response 'cycles' is not a column")
    yield Case(P, pj, "model-garbage", "p.zip", project(model_json=b'{"schema": "gpudse.model/1", "bases": 5}'), E,
               r"model.json")
    yield Case(P, pj, "manifest-list", "p.zip", project(manifest_json=b"[]"), E, r"manifest schema")
    yield Case(P, pj, "manifest-response-list", "p.zip",
               project(manifest_json=b'{"schema": "gpudse.project/1", "response": [1]}'), E, r"'response' must be")
    yield Case(P, pj, "space-bad", "p.zip", project(space_yaml=b"fixed: 7\nparameters: [{name: a, values: [1]}]\n"), E,
               r"space.yaml.*'fixed' must be a list")
    yield Case(P, pj, "space-laughs", "p.zip", project(space_yaml=space(tail=laughs(9, 9))), E, r"expands to more than")
    yield Case(P, pj, "manifest-deep", "p.zip", project(manifest_json=b"[" * 100_000 + b"]" * 100_000), E, NESTED)
    yield Case(T, pj, "not-a-zip", "p.zip", b"hello", E, r"not a zip file")
    yield Case(T, pj, "empty-zip", "p.zip", zipped({}), E, r"manifest.json is missing")
    yield Case(T, pj, "truncated", "p.zip", project()[:-30], E, r"not a zip file|damaged")
    good_entries = [entry("manifest.json", MANIFEST), entry("space.yaml", SPACE_YAML)]
    yield Case(T, pj, "encrypted", "p.zip", raw_zip([{**good_entries[0], "flags": 1}, good_entries[1]]), E,
               r"encrypted")
    yield Case(T, pj, "unknown-method", "p.zip", raw_zip([{**good_entries[0], "method": 99}, good_entries[1]]), E,
               r"compression method 99")
    yield Case(T, pj, "bzip2-method", "p.zip", raw_zip([{**good_entries[0], "method": 12}, good_entries[1]]), E,
               r"compression method 12")
    yield Case(T, pj, "bad-crc", "p.zip", raw_zip([{**good_entries[0], "crc": 12345}, good_entries[1]]), E,
               r"manifest.json is damaged")
    yield Case(T, pj, "bad-deflate", "p.zip", raw_zip([{**good_entries[0], "data": b"\xff" * 40}, good_entries[1]]), E,
               r"damaged")
    yield Case(T, pj, "directory-entry", "p.zip", raw_zip([entry("space.yaml/", b""), *good_entries]), E,
               r"unexpected entry")
    yield Case(T, pj, "duplicate-entry", "p.zip", raw_zip([*good_entries, entry("space.yaml", b"x: 1\n")]), E,
               r"appears twice")
    yield Case(A, pj, "many-entries", "p.zip", raw_zip([entry(f"e{i}", b"") for i in range(100)]), E,
               r"archive_entries")
    bomb, crc = deflate_zeros(300 << 20, b" ")
    yield Case(A, pj, "bomb-space-honest", "p.zip",
               raw_zip([good_entries[0], {"name": "space.yaml", "data": bomb, "crc": crc, "size": 300 << 20}]), E,
               r"space.yaml declares 314,572,800 bytes.*document_bytes")
    yield Case(A, pj, "bomb-space-lying", "p.zip",
               raw_zip([good_entries[0], {"name": "space.yaml", "data": bomb, "crc": crc, "size": 1000}]), E,
               r"space.yaml is damaged|document_bytes")
    yield Case(A, pj, "bomb-space-lying-zero", "p.zip",
               raw_zip([good_entries[0], {"name": "space.yaml", "data": bomb, "crc": crc, "size": 0}]), E,
               r"space.yaml is damaged|document_bytes|must be a mapping")
    yield Case(A, pj, "bomb-results-honest", "p.zip",
               raw_zip([*good_entries, {"name": "results.csv", "data": bomb, "crc": crc, "size": 300 << 20}]), E,
               r"archive_entry_bytes")
    yield Case(A, pj, "bomb-results-lying", "p.zip",
               raw_zip([*good_entries, {"name": "results.csv", "data": bomb, "crc": crc, "size": 200 << 20}]), E,
               r"results.csv is damaged")
    yield Case(A, pj, "bomb-stored-size-lie", "p.zip",
               raw_zip([*good_entries, {"name": "samples.json", "data": b"[]" * 100, "crc": 0, "size": 4,
                                        "method": 0}]), E, r"damaged")
    # -- code execution --
    for n, path in (("zip-slip", "../../gpudse_hostile_marker"), ("absolute", "/tmp/gpudse_hostile_marker"),
                    ("backslash", "..\\..\\gpudse_hostile_marker"), ("drive", "C:/x")):
        yield Case(X, pj, n, "p.zip", raw_zip([entry(path, b"x"), *good_entries]), E, r"unsafe path")
    yield Case(X, pj, "pickle-entry", "p.zip", raw_zip([*good_entries, entry("model.pkl", b"\x80\x04cos\nsystem\n")]),
               E, r"unexpected entry 'model.pkl'")
    yield Case(X, pj, "yaml-tag-space", "p.zip",
               project(space_yaml=f"!!python/object/apply:os.system ['touch {MARKER}']\n".encode()), E,
               r"not valid YAML")


def _wfg_cases() -> Iterator[Case]:
    # == work flow graphs ===============================================================================
    A, T, S, P, X, V, E, F, OK, NESTED, sp, rs = _K
    wf = "wfg"
    yield Case(V, wf, "good", "g.json", wfg(), OK, r"warp latency|Latency")
    yield Case(A, wf, "laughs", "g.yaml", (laughs(9, 9, "kernel") + "hardware: {}\n").encode(), E,
               r"expands to more than")
    yield Case(A, wf, "deep", "g.json", b"[" * 100_000 + b"]" * 100_000, E, NESTED)
    yield Case(A, wf, "huge-graph", "g.json",
               wfg(kernel__nodes=[{"id": f"C{i}", "type": "C"} for i in range(1000)],
                   kernel__arcs=[["entry", "C0"]] + [[f"C{i}", f"C{i + 1}"] for i in range(999)] + [["C999", "exit"]]),
               E, r"wfg_elements")
    yield Case(T, wf, "hardware-list", "g.json", wfg(hardware=[1, 2]), E, r"'hardware' is missing")
    yield Case(T, wf, "nodes-dict", "g.json", wfg(kernel__nodes={"a": 1}), E, r"'nodes' must be a non-empty list")
    yield Case(T, wf, "node-id-list", "g.json", wfg(kernel__nodes__0__id=[1, 2]), E, r"short name")
    yield Case(T, wf, "type-list", "g.json", wfg(kernel__nodes__0__type=["C"]), E, r"is not C, M, S or B")
    yield Case(T, wf, "unknown-arc-node", "g.json", wfg(kernel__arcs=[["entry", "Z"]]), E, r"unknown node 'Z'")
    yield Case(T, wf, "arc-scalar", "g.json", wfg(kernel__arcs=[5]), E, r"an arc is")
    yield Case(T, wf, "inf-yaml", "g.yaml",
               json.dumps(WFG_GOOD).replace('"pipeline_latency": 24', '"pipeline_latency": .inf').encode(), E,
               r"finite number")
    yield Case(T, wf, "string-number", "g.json", wfg(hardware__warp_size="32"), E, r"must be a number")
    yield Case(T, wf, "zero-probability", "g.json",
               wfg(kernel__arcs=[["entry", "C1"], {"from": "C1", "to": "M", "probability": 0}, ["M", "exit"]]), E,
               r"must be positive")
    yield Case(S, wf, "overflow", "g.json", wfg(kernel__nodes__0__insts=1e308, hardware__pipeline_latency=1e308), E,
               r"overflow")
    yield Case(S, wf, "branch-probabilities-1.8", "g.json",
               wfg(kernel__nodes=[{"id": "C1", "type": "C", "insts": 1}, {"id": "A", "type": "C", "insts": 2},
                                  {"id": "B", "type": "C", "insts": 3}],
                   kernel__arcs=[["entry", "C1"], {"from": "C1", "to": "A", "probability": 0.9},
                                 {"from": "C1", "to": "B", "probability": 0.9}, ["A", "exit"], ["B", "exit"]]), E,
               r"summing to 1\.8")
    yield Case(T, wf, "top-list", "g.json", b"[1]", E, r"expected a mapping")
    yield Case(T, wf, "binary", "g.yaml", b"\xff\xfe\x00", E, r"not UTF-8")
    yield Case(X, wf, "python-tag", "g.yaml", f"!!python/object/apply:os.system ['touch {MARKER}']\n".encode(), E,
               r"not valid YAML")


def _scenario_cases() -> Iterator[Case]:
    # == scenarios: sequences of events on a shared server (tests/hostile_scenarios/*.json) ==========
    A, T, S, P, X, V, E, F, OK, NESTED, sp, rs = _K
    import hostile_scenarios

    for name, raw, doc in hostile_scenarios.load_cases():
        yield Case(doc["cls"], "scenario", name, "scenario.json", raw, OK, r"scenario ok", concern=doc["concern"],
                   timeout=float(doc.get("timeout_s", 60)))


def _parquet_bytes(nested: bool = False, duplicate: bool = False) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {k: [v] * 3 for k, v in STARGAZER_ROW.items()}
    cols["blk"] = [1, 2, 4]
    cols["cycles"] = [10.0, 20.0, 30.0]
    names, arrays = list(cols), [pa.array(v) for v in cols.values()]
    if nested:
        names.append("extra")
        arrays.append(pa.array([[1, 2], [3], []]))
    if duplicate:
        names.append("blk")
        arrays.append(pa.array([1, 2, 4]))
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, names=names), buf)
    return buf.getvalue()


def _parquet_rle(rows: int, columns: int) -> bytes:
    """A small Parquet file of *rows* × *columns* zeros (run-length encoded: amplification)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import numpy as np

    col = pa.array(np.zeros(rows, dtype=np.int8))
    buf = io.BytesIO()
    pq.write_table(pa.table({f"c{i}": col for i in range(columns)}), buf, compression="zstd")
    return buf.getvalue()


def summary() -> dict:
    out: dict = {}
    for c in cases():
        out.setdefault(c.cls, {}).setdefault(c.surface, {}).setdefault(c.expect, 0)
        out[c.cls][c.surface][c.expect] += 1
    return out


# ---- running the corpus through the CLI, one forked process per case -------------------------------------
def _child(case: Case, argv: list[str] | None, path: Path, work: Path, out: Path, err: Path, mem_mb: int) -> None:
    import os
    import resource
    import sys
    import traceback

    code = 1
    try:
        os.chdir(work)
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        os.dup2(os.open(out, flags), 1)
        os.dup2(os.open(err, flags), 2)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        if case.surface == "scenario":  # steps of a data-only description, in this process
            import hostile_scenarios

            code = hostile_scenarios.run(json.loads(case.data), work / "home")
        elif argv is not None:
            from gpudse_core.cli import main

            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
        else:  # projects: the library call the dashboard makes, reported the way the CLI reports
            from gpudse_core.errors import GpudseError
            from gpudse_core.workspace.project import load_project

            try:
                proj = load_project(path.read_bytes(), case.filename)
                print(f"loaded {case.filename}: space {proj.space.name}")
                code = 0
            except GpudseError as e:
                print(f"gpudse: error: {e}", file=sys.stderr)
                code = 2
    except BaseException:  # a bug: the traceback is the evidence
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def run_corpus(names: set[str] | None = None, timeout: float = 30.0, mem_mb: int = 4096) -> list[dict]:
    """Run every case (or those named ``surface/name``) through the CLI in a forked child under an
    address-space cap of *mem_mb*; returns one record per case: exit code, output, peak resident
    memory (MB), seconds, and whether it was killed after *timeout* seconds."""
    import os
    import signal
    import time

    import gpudse_core.cli  # noqa: F401 - imported once here, inherited by every child
    import gpudse_core.workspace.project  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import yaml  # noqa: F401

    records = []
    with tempfile.TemporaryDirectory(prefix="gpudse-hostile-") as tmp:
        for i, case in enumerate(cases()):
            key = f"{case.surface}/{case.name}"
            if names is not None and key not in names:
                continue
            work = Path(tmp) / f"{i:04d}"
            work.mkdir()
            path = work / case.filename
            path.write_bytes(case.data)
            argv = cli_argv(case, path, work)
            out, err = work / "stdout", work / "stderr"
            t0 = time.monotonic()
            pid = os.fork()
            if pid == 0:
                _child(case, argv, path, work, out, err, mem_mb)
            timed_out = False
            while True:
                done, status, usage = os.wait4(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() - t0 > max(timeout, case.timeout):
                    os.kill(pid, signal.SIGKILL)
                    _, status, usage = os.wait4(pid, 0)
                    timed_out = True
                    break
                time.sleep(0.01)
            records.append({
                "key": key, "cls": case.cls, "surface": case.surface, "expect": case.expect,
                "pattern": case.pattern, "code": os.waitstatus_to_exitcode(status),
                "stdout": out.read_text(errors="replace")[-20000:], "stderr": err.read_text(errors="replace")[-20000:],
                "rss_mb": usage.ru_maxrss / 1024, "seconds": time.monotonic() - t0, "timed_out": timed_out,
                "bytes": len(case.data), "formula_cells": formula_cells(work, case.filename),
            })
            del case
    return records


def formula_cells(work: Path, input_name: str) -> list[str]:
    """Cells of the CSV files a case wrote that a spreadsheet would run as formulas (OWASP: a text
    starting with = + - @, tab or CR; a plain number is not one)."""
    import csv
    import re

    number = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")
    bad = []
    for p in work.glob("*.csv"):
        if p.name == input_name:
            continue
        with open(p, newline="", encoding="utf-8", errors="replace") as fh:
            for row in csv.reader(fh):
                bad += [c for c in row if c[:1] in ("=", "+", "-", "@", "\t", "\r") and not number.match(c)]
                if len(bad) > 20:
                    return bad
    return bad


def verdict(rec: dict) -> str | None:
    """None when the record meets its case's contract, else what is wrong."""
    import re

    text = rec["stdout"] + rec["stderr"]
    if rec.get("formula_cells"):
        return f"CSV formula injection: wrote {rec['formula_cells'][:3]}"
    if rec["timed_out"]:
        return "hang: killed after the time limit"
    if "Traceback" in text:
        return "traceback"
    if rec["rss_mb"] >= 1024:
        return f"peak resident memory {rec['rss_mb']:.0f} MB"
    if rec["expect"] == "error":
        if rec["code"] != 2 or not re.search(r"^gpudse( [a-z-]+)*: error: ", rec["stderr"], re.M):
            return f"expected our error (exit 2), got exit {rec['code']}"
        if not re.search(rec["pattern"], rec["stderr"], re.S):
            return "error message does not say what the case requires"
        return None
    if rec["code"] != 0:
        return f"expected acceptance (exit 0), got exit {rec['code']}"
    if rec["pattern"] and not re.search(rec["pattern"], text, re.S):
        return "accepted without saying what the case requires (silently wrong?)"
    return None


if __name__ == "__main__":  # pragma: no cover
    import sys

    if sys.argv[1:2] == ["--run"]:  # python tests/hostile_corpus.py --run OUT.json [surface/name ...]
        recs = run_corpus(set(sys.argv[3:]) or None)
        Path(sys.argv[2]).write_text(json.dumps(recs))
        sys.exit(0)
    total = 0
    for cls, by_surface in summary().items():
        n = sum(sum(v.values()) for v in by_surface.values())
        total += n
        print(f"{cls:15s} {n:4d}  " + ", ".join(f"{s}: {sum(v.values())}" for s, v in by_surface.items()))
    print(f"{'total':15s} {total:4d}")
