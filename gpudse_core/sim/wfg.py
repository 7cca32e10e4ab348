"""The work flow graph (WFG) performance model (paper 004, §2, eqs. 1–6, Figs. 1–4).

A kernel is a graph of nodes — computation ``C`` (``insts`` instructions), global memory ``M``
(``bytes`` per thread), scratchpad ``S`` (``insts``, optional ``conflicts`` degree) and barrier ``B`` —
joined by transition arcs (control flow; a branch's arcs carry a ``probability``, a loop's back arc
carries ``iterations``) and data-dependence arcs (from a load ``M`` to its use).

Equations (004):

    WLP_effect = (WLP_local + (NUM_blocks − 1) × WLP_avg) / NUM_blocks                          (1)
    ILP_effect = (ILP_local + (NUM_blocks − 1) × ILP_avg) / NUM_blocks                          (2)
    Latency_comp = max(1, Latency_pipeline / ((SIMD_work / SIMD_engine) × ILP_effect × WLP_effect)) (3)
    Latency_BW = max(0, (CYC_mem − CYC_compute) / NUM_mem) + SIMD_work / SIMD_engine           (4)
    NBC_avg = CYC_compute / (NUM_mem + NUM_sync + 1)                                             (5)
    Latency_exposed = Latency_mem − (WLP_effect − 1) × NBC_avg                                   (6)

Weights (our reading of Fig. 1): a computation or scratchpad node's outgoing transition arc weighs
insts × Latency_comp × SIMD_work/SIMD_engine (× conflict degree for scratchpad); a memory or barrier
node's weighs SIMD_work/SIMD_engine (issue) while CYC_compute is found, and a memory node's then
becomes Latency_BW. CYC_mem = NUM_bytes / bandwidth per SM, with NUM_bytes = bytes per thread ×
SIMD_work summed over the memory nodes a warp executes.

Reduction (Figs. 2–3): repeatedly (a) merge a node with one incoming and one outgoing arc into one
arc (series: weights add), (b) merge parallel arcs between the same two nodes (a branch: weights
averaged by probability, or added when ``divergent`` — a SIMD-divergent branch runs both sides),
(c) fold a self-loop of ``iterations`` n into the node's outgoing arc (n × body weight). Each arc
carries a vector (cycles, memory operations, bytes, barriers), so counts inside loops and branches
are weighted the same way as cycles. A graph that does not reduce to entry → exit (a cycle that is
not a marked loop, an unreachable node) is rejected.

Data dependences (Fig. 4): for a dependence M → use, if Latency_exposed exceeds the cycles on the
transition path from M to its use, the difference is added to the last arc of that path. The path
must be sequential (004 reduces branches first; here a dependence across a branch is rejected).
The worked example of Fig. 1 gives Latency_comp = 1, CYC_compute = 16, NBC_avg = 8, an M → C1 arc of
20 cycles and Latency_exposed = 130 cycles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import limits
from ..errors import GpudseError

NODE_TYPES = {"C": "compute", "M": "memory", "S": "scratchpad", "B": "barrier"}
HARDWARE_FIELDS = {"pipeline_latency": "cycles", "warp_size": "threads", "simd_width": "lanes",
                   "wlp_max": "warps per SM", "bandwidth_bytes_per_cycle": "bytes/cycle per SM",
                   "memory_latency": "cycles"}


class WFGError(GpudseError):
    """A work flow graph or hardware description is invalid."""


@dataclass
class WFGResult:
    wlp_effect: float
    ilp_effect: float
    latency_comp: float
    cyc_compute: float
    num_mem: float
    num_sync: float
    num_bytes: float
    cyc_mem: float
    latency_bw: float
    nbc_avg: float
    latency_exposed: float
    warp_latency: float
    arc_weights: dict[str, float] = field(default_factory=dict)  # after BW weights, "src->dst"
    dependence_adjustments: dict[str, float] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def parse_wfg(data: bytes | str, source: str) -> dict:
    """A WFG document from YAML or JSON text (by *source*'s suffix), read by the bounded reader
    (:mod:`gpudse_core.safeload`) and checked for shape and size before any analysis."""
    from ..safeload import DocumentError, load_document

    try:
        doc = load_document(data, source)
    except DocumentError as e:
        raise WFGError(str(e)) from None
    if not isinstance(doc, dict):
        raise WFGError(f"{source}: expected a mapping with 'hardware' and 'kernel'")
    kernel = doc.get("kernel")
    if isinstance(kernel, dict):
        _check_size(kernel, source)
    return doc


BUILTIN_GRAPHS = ("figure1", "loop_branch")  # data/wfg/<name>.yaml, shipped in the package


def builtin_wfg_path(name: str) -> Path | None:
    """The file of a built-in graph (``figure1``: 004 Fig. 1; ``loop_branch``), or None."""
    if name not in BUILTIN_GRAPHS:
        return None
    here = Path(__file__).resolve().parent.parent  # gpudse_core/
    for cand in (here / "_data" / "wfg", here.parent / "data" / "wfg"):
        if (cand / f"{name}.yaml").is_file():
            return cand / f"{name}.yaml"
    return None


def load_wfg(path: str | Path) -> dict:
    """A graph file, or a built-in graph by name (``figure1``, ``loop_branch``) from any folder."""
    from ..space.presets import read_document_file

    p = Path(path)
    if not p.is_file():
        builtin = builtin_wfg_path(str(path))
        if builtin is None:
            raise WFGError(f"{p}: no such file (built-in graphs by name: {', '.join(BUILTIN_GRAPHS)})")
        p = builtin
    return parse_wfg(read_document_file(p), str(p))


def _check_size(kernel: dict, where: str = "kernel") -> None:
    n = sum(len(kernel[k]) for k in ("nodes", "arcs", "dependences") if isinstance(kernel.get(k), list))
    limits.check("wfg_elements", n, f"{where}: a graph of {n:,} nodes, arcs and dependences",
                 "a kernel's work flow graph has tens of nodes; its reduction takes time cubic in the size")


def _num(d: dict, key: str, where: str, positive: bool = True, default: Any = None,
         minimum: float | None = None) -> float:
    if key not in d:
        if default is not None:
            return float(default)
        raise WFGError(f"{where}: '{key}' is missing")
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise WFGError(f"{where}: '{key}' must be a number (got {str(v)[:40]!r})")
    try:
        finite = math.isfinite(v)
    except OverflowError:
        finite = False
    if not finite:
        raise WFGError(f"{where}: '{key}' must be a finite number (got {str(v)[:40]})")
    if positive and not v > 0:
        raise WFGError(f"{where}: '{key}' must be positive (got {v})")
    if not positive and v < 0:
        raise WFGError(f"{where}: '{key}' cannot be negative (got {v})")
    if minimum is not None and v < minimum:
        raise WFGError(f"{where}: '{key}' is a count of at least {minimum:g} (got {v})")
    return float(v)


def analyze(doc: dict) -> WFGResult:
    """Evaluate eqs. 1–6 and reduce the graph; *doc* has ``hardware`` and ``kernel`` (see module doc)."""
    try:
        return _analyze(doc)
    except (ZeroDivisionError, OverflowError):
        raise WFGError("the model's numbers overflow or vanish (a division by zero); check the magnitudes of the "
                       "hardware figures, instruction counts, bytes and iterations") from None


def _analyze(doc: dict) -> WFGResult:
    hw = doc.get("hardware")
    kernel = doc.get("kernel")
    if not isinstance(hw, dict):
        raise WFGError("'hardware' is missing: give " + ", ".join(f"{k} ({u})" for k, u in HARDWARE_FIELDS.items()))
    if not isinstance(kernel, dict):
        raise WFGError("'kernel' is missing: give its nodes, arcs and dependences")
    vals = {k: _num(hw, k, "hardware", minimum=1 if k in ("warp_size", "simd_width", "wlp_max") else None)
            for k in HARDWARE_FIELDS}
    blocks = _num(hw, "active_blocks", "hardware", default=1, minimum=1)
    wlp_local = _num(kernel, "wlp_local", "kernel", default=vals["wlp_max"], minimum=1)
    wlp_avg = _num(kernel, "wlp_avg", "kernel", default=wlp_local, minimum=1)
    ilp_local = _num(kernel, "ilp_local", "kernel", default=1, minimum=1)
    ilp_avg = _num(kernel, "ilp_avg", "kernel", default=ilp_local, minimum=1)
    steps: list[str] = []
    wlp = (wlp_local + (blocks - 1) * wlp_avg) / blocks                                           # (1)
    ilp = (ilp_local + (blocks - 1) * ilp_avg) / blocks                                           # (2)
    ratio = vals["warp_size"] / vals["simd_width"]
    lat_comp = max(1.0, vals["pipeline_latency"] / (ratio * ilp * wlp))                           # (3)
    steps.append(f"eq. 1–2: WLP_effect = {wlp:g}, ILP_effect = {ilp:g}")
    steps.append(f"eq. 3: Latency_comp = max(1, {vals['pipeline_latency']:g} / ({ratio:g} × {ilp:g} × {wlp:g})) "
                 f"= {lat_comp:g} cycles")
    g = _Graph.build(kernel)

    def node_cycles(node: dict, bw_phase: bool, latency_bw: float = 0.0) -> float:
        t = node["type"]
        if t in ("C", "S"):
            return node["insts"] * lat_comp * ratio * (node.get("conflicts", 1.0) if t == "S" else 1.0)
        if t == "M" and bw_phase:
            return latency_bw
        return ratio

    # phase 1: compute cycles (data dependences ignored)
    g.set_weights(lambda n: node_cycles(n, False), vals["warp_size"])
    totals = g.reduce(steps, "compute")
    cyc_compute, num_mem, num_bytes, num_sync = totals
    cyc_mem = num_bytes / vals["bandwidth_bytes_per_cycle"]
    lat_bw = (max(0.0, (cyc_mem - cyc_compute) / num_mem) if num_mem else 0.0) + ratio                  # (4)
    nbc = cyc_compute / (num_mem + num_sync + 1)                                                  # (5)
    exposed = vals["memory_latency"] - (wlp - 1) * nbc                                            # (6)
    steps.append(f"reduced: CYC_compute = {cyc_compute:g} cycles, NUM_mem = {num_mem:g}, NUM_sync = {num_sync:g}, "
                 f"NUM_bytes = {num_bytes:g}")
    steps.append(f"eq. 4: CYC_mem = {num_bytes:g} / {vals['bandwidth_bytes_per_cycle']:g} = {cyc_mem:g}; "
                 f"Latency_BW = {lat_bw:g} cycles")
    steps.append(f"eq. 5: NBC_avg = {cyc_compute:g} / ({num_mem:g} + {num_sync:g} + 1) = {nbc:g} cycles")
    steps.append(f"eq. 6: Latency_exposed = {vals['memory_latency']:g} − ({wlp:g} − 1) × {nbc:g} = {exposed:g} cycles")
    # phase 2: bandwidth weights, dependences, full reduction
    g = _Graph.build(kernel)
    g.set_weights(lambda n: node_cycles(n, True, lat_bw), vals["warp_size"])
    arc_weights = g.arc_cycles()
    adjustments = g.apply_dependences(max(exposed, 0.0), steps)
    total = g.reduce(steps, "latency")[0]
    steps.append(f"warp latency (entry → exit) = {total:g} cycles")
    figures = [wlp, ilp, lat_comp, cyc_compute, num_mem, num_sync, num_bytes, cyc_mem, lat_bw, nbc, exposed, total]
    if not all(math.isfinite(x) for x in figures):
        raise WFGError("the model's numbers overflow (a result is infinite or undefined); check the magnitudes of the "
                       "hardware figures, instruction counts, bytes and iterations")
    return WFGResult(wlp, ilp, lat_comp, cyc_compute, num_mem, num_sync, num_bytes, cyc_mem, lat_bw, nbc, exposed,
                     total, arc_weights, adjustments, steps)


class _Graph:
    """Multigraph of transition arcs with vector weights (cycles, mem ops, bytes, barriers)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict] = {}
        self.arcs: list[dict] = []  # {src, dst, w: np.array(4), p: probability, n: iterations, divergent}
        self.deps: list[tuple[str, str]] = []

    @classmethod
    def build(cls, kernel: dict) -> "_Graph":
        g = cls()
        nodes = kernel.get("nodes")
        if not isinstance(nodes, list) or not nodes:
            raise WFGError("kernel: 'nodes' must be a non-empty list")
        _check_size(kernel)
        g.nodes = {"entry": {"id": "entry", "type": "entry"}, "exit": {"id": "exit", "type": "exit"}}
        for i, n in enumerate(nodes):
            where = f"kernel.nodes[{i}]"
            if not isinstance(n, dict) or "id" not in n:
                raise WFGError(f"{where}: each node needs an 'id' and a 'type' (C, M, S or B)")
            if isinstance(n["id"], (dict, list)) or len(str(n["id"])) > 100:
                raise WFGError(f"{where}: a node 'id' is a short name such as C1")
            nid = str(n["id"])
            if nid in g.nodes:
                raise WFGError(f"{where}: node id {nid!r} is used twice")
            t = str(n.get("type", "")).upper()[:1]
            if t not in NODE_TYPES or not isinstance(n.get("type"), str):
                raise WFGError(f"{where} ({nid}): type {str(n.get('type'))[:20]!r} is not C, M, S or B")
            node = {"id": nid, "type": t}
            if t in ("C", "S"):
                node["insts"] = _num(n, "insts", f"{where} ({nid})", default=1)
                if t == "S":
                    node["conflicts"] = _num(n, "conflicts", f"{where} ({nid})", default=1)
            if t == "M":
                node["bytes"] = _num(n, "bytes", f"{where} ({nid})")
            g.nodes[nid] = node
        arcs = kernel.get("arcs")
        if not isinstance(arcs, list) or not arcs:
            raise WFGError("kernel: 'arcs' must list the transition arcs, e.g. [entry, C1]")
        for i, a in enumerate(arcs):
            where = f"kernel.arcs[{i}]"
            if isinstance(a, (list, tuple)) and len(a) == 2:
                a = {"from": a[0], "to": a[1]}
            if not isinstance(a, dict) or "from" not in a or "to" not in a:
                raise WFGError(f"{where}: an arc is [from, to] or {{from, to, probability, iterations}}")
            src, dst = str(a["from"])[:100], str(a["to"])[:100]
            for end in (src, dst):
                if end not in g.nodes:
                    raise WFGError(f"{where}: unknown node {end!r}")
            p = _num(a, "probability", where, default=1.0)
            if p > 1:
                raise WFGError(f"{where}: probability {p} is above 1")
            iters = _num(a, "iterations", where, positive=False, default=0)
            g.arcs.append({"src": src, "dst": dst, "w": np.zeros(4), "p": p, "n": iters,
                           "divergent": bool(a.get("divergent", False)), "loop": "iterations" in a,
                           "given_p": "probability" in a})
        g._check_reachable()
        g._check_branches()
        for i, d in enumerate(kernel.get("dependences") or []):
            if not (isinstance(d, (list, tuple)) and len(d) == 2):
                raise WFGError(f"kernel.dependences[{i}]: a dependence is [load, use]")
            src, dst = str(d[0]), str(d[1])
            if g.nodes.get(src, {}).get("type") != "M" or dst not in g.nodes:
                raise WFGError(f"kernel.dependences[{i}]: must go from a memory node (M) to an existing node")
            g.deps.append((src, dst))
        return g

    def _check_branches(self) -> None:
        """A branch's arcs (two or more non-loop arcs leaving a node that is not a loop head, not
        divergent, with probabilities given) are the alternatives taken: their probabilities sum to 1."""
        heads = {a["dst"] for a in self.arcs if a["loop"]}
        out: dict[str, list[dict]] = {}
        for a in self.arcs:
            if not a["loop"] and a["src"] not in heads:
                out.setdefault(a["src"], []).append(a)
        for src, arcs in out.items():
            if len(arcs) > 1 and any(a["given_p"] for a in arcs) and not any(a["divergent"] for a in arcs):
                total = sum(a["p"] for a in arcs)
                if abs(total - 1.0) > 1e-6:
                    raise WFGError(f"kernel.arcs: the {len(arcs)} branch arcs leaving {src!r} have probabilities "
                                   f"summing to {total:g}; a branch's probabilities sum to 1 (mark a SIMD-divergent "
                                   f"branch 'divergent: true')")

    def _check_reachable(self) -> None:
        def walk(start: str, forward: bool) -> set[str]:
            seen, todo = {start}, [start]
            while todo:
                v = todo.pop()
                for a in self.arcs:
                    u, w = (a["src"], a["dst"]) if forward else (a["dst"], a["src"])
                    if u == v and w not in seen:
                        seen.add(w)
                        todo.append(w)
            return seen

        from_entry, to_exit = walk("entry", True), walk("exit", False)
        stray = [n for n in self.nodes if n not in from_entry or n not in to_exit]
        if stray:
            raise WFGError(f"node(s) {stray} are not on a path from entry to exit; connect them with arcs or remove "
                           f"them (the graph does not reduce otherwise)")

    def set_weights(self, cycles_of: Any, warp_size: float) -> None:
        """Each arc weighs what its source node costs (the paper puts weights on transition arcs)."""
        for a in self.arcs:
            node = self.nodes[a["src"]]
            if node["type"] in ("entry", "exit"):
                continue
            mem = 1.0 if node["type"] == "M" else 0.0
            node["w"] = np.array([cycles_of(node), mem, node.get("bytes", 0.0) * warp_size * mem,
                                  1.0 if node["type"] == "B" else 0.0])
            a["w"] = node["w"].copy()

    def arc_cycles(self) -> dict[str, float]:
        return {f"{a['src']}->{a['dst']}": float(a["w"][0]) for a in self.arcs}

    def apply_dependences(self, exposed: float, steps: list[str]) -> dict[str, float]:
        out = {}
        for src, dst in self.deps:
            path, node = [], src
            while node != dst:
                outs = [a for a in self.arcs if a["src"] == node and not a["loop"]]
                if len(outs) != 1:
                    raise WFGError(f"dependence {src} → {dst}: the path from the load to its use must be sequential "
                                   f"({node!r} has {len(outs)} outgoing arcs)")
                path.append(outs[0])
                node = outs[0]["dst"]
                if len(path) > len(self.arcs):
                    raise WFGError(f"dependence {src} → {dst}: {dst!r} is not reachable from {src!r}")
            covered = float(sum(a["w"][0] for a in path))
            if exposed > covered:
                path[-1]["w"] = path[-1]["w"] + np.array([exposed - covered, 0, 0, 0])
                out[f"{path[-1]['src']}->{path[-1]['dst']}"] = float(path[-1]["w"][0])
                steps.append(f"dependence {src} → {dst}: exposed {exposed:g} > covered {covered:g}; arc "
                             f"{path[-1]['src']} → {path[-1]['dst']} set to {path[-1]['w'][0]:g} cycles")
        return out

    def reduce(self, steps: list[str], label: str) -> np.ndarray:
        arcs = [dict(a) for a in self.arcs]
        changed = True
        while changed:
            changed = False
            # (c) self-loops: fold n × body into the node's single other outgoing arc
            for a in list(arcs):
                if a["src"] == a["dst"]:
                    outs = [b for b in arcs if b["src"] == a["src"] and b is not a]
                    if len(outs) != 1:
                        raise WFGError(f"loop at {a['src']!r} needs exactly one exit arc (has {len(outs)})")
                    if not a["loop"]:
                        raise WFGError(f"the graph has a cycle through {a['src']!r} that is not a loop: mark its "
                                       f"back arc with 'iterations'")
                    outs[0]["w"] = outs[0]["w"] + a["n"] * a["w"]
                    arcs.remove(a)
                    changed = True
                    steps.append(f"{label} pass, loop: {a['n']:g} iterations of {a['w'][0]:g} cycles at {a['src']} "
                                 f"folded into {outs[0]['src']} → {outs[0]['dst']} ({outs[0]['w'][0]:g} cycles)")
            # (b) parallel arcs: a branch
            groups: dict[tuple, list] = {}
            for a in arcs:
                groups.setdefault((a["src"], a["dst"]), []).append(a)
            for (s, d), same in groups.items():
                if len(same) > 1:
                    if any(x["divergent"] for x in same):
                        # every side starts with the branching node's own cost: count it once
                        base = self.nodes[s].get("w", np.zeros(4))
                        w = base + sum(x["w"] - base for x in same)
                    else:
                        ptot = sum(x["p"] for x in same)
                        w = sum(x["p"] * x["w"] for x in same) / ptot
                    merged = {"src": s, "dst": d, "w": w, "p": min(1.0, sum(x["p"] for x in same)),
                              "n": max(x["n"] for x in same), "divergent": False,
                              "loop": any(x["loop"] for x in same)}
                    for x in same:
                        arcs.remove(x)
                    arcs.append(merged)
                    changed = True
                    kind = "divergent branch (both sides run)" if any(x["divergent"] for x in same) else "branch"
                    steps.append(f"{label} pass, {kind}: {len(same)} paths {s} → {d} merged ({w[0]:g} cycles)")
            # (a) series: a node with one arc in and one arc out
            for nid in list(self.nodes):
                if nid in ("entry", "exit"):
                    continue
                ins = [a for a in arcs if a["dst"] == nid and a["src"] != nid]
                outs = [a for a in arcs if a["src"] == nid and a["dst"] != nid]
                selfs = [a for a in arcs if a["src"] == nid and a["dst"] == nid]
                if len(ins) == 1 and len(outs) == 1 and not selfs:
                    a, b = ins[0], outs[0]
                    arcs.remove(a)
                    arcs.remove(b)
                    arcs.append({"src": a["src"], "dst": b["dst"], "w": a["w"] + b["w"], "p": a["p"],
                                 "n": max(a["n"], b["n"]), "divergent": a["divergent"], "loop": a["loop"] or b["loop"]})
                    changed = True
                    steps.append(f"{label} pass, series: {a['src']} → {nid} → {b['dst']} becomes one arc "
                                 f"({(a['w'] + b['w'])[0]:g} cycles)")
        if len(arcs) != 1 or arcs[0]["src"] != "entry" or arcs[0]["dst"] != "exit":
            left = sorted({a["src"] for a in arcs} | {a["dst"] for a in arcs})
            raise WFGError(f"the graph does not reduce to entry → exit ({label} pass stopped at nodes {left}); check "
                           f"for unreachable nodes, missing arcs, or a cycle that is not a loop")
        return arcs[0]["w"]


FIGURE1 = {
    "hardware": {"pipeline_latency": 24, "warp_size": 32, "simd_width": 8, "wlp_max": 16,
                 "bandwidth_bytes_per_cycle": 4, "memory_latency": 250},
    "kernel": {
        "description": "x = A[threadID] + y: two address calculations, a memory load, an add (004 Fig. 1)",
        "nodes": [{"id": "C3", "type": "C", "insts": 1}, {"id": "C2", "type": "C", "insts": 1},
                  {"id": "M", "type": "M", "bytes": 4}, {"id": "C1", "type": "C", "insts": 1}],
        "arcs": [["entry", "C3"], ["C3", "C2"], ["C2", "M"], ["M", "C1"], ["C1", "exit"]],
        "dependences": [["M", "C1"]],
    },
}


def graph_view(doc: dict) -> dict:
    """Drawing data for a WFG: node positions (layer by longest path from entry, loop arcs ignored)
    and every transition arc with its cycles after the bandwidth step and the dependence step."""
    kernel = doc.get("kernel") or {}
    g = _Graph.build(kernel)
    res = analyze(doc)
    layer = {"entry": 0}
    forward = [a for a in g.arcs if not a["loop"]]
    for _ in range(len(g.nodes)):
        for a in forward:
            if a["src"] in layer:
                layer[a["dst"]] = max(layer.get(a["dst"], 0), layer[a["src"]] + 1)
    rows: dict[int, list[str]] = {}
    for n in g.nodes:
        rows.setdefault(layer.get(n, 0), []).append(n)
    pos = {n: (i - (len(ns) - 1) / 2, -lvl) for lvl, ns in rows.items() for i, n in enumerate(ns)}
    final = {**res.arc_weights, **res.dependence_adjustments}
    arcs = [{"from": a["src"], "to": a["dst"], "cycles": final.get(f"{a['src']}->{a['dst']}", 0.0),
             "loop": a["loop"], "iterations": a["n"], "probability": a["p"]} for a in g.arcs]
    nodes = [{"id": n, "type": g.nodes[n]["type"], "x": pos[n][0], "y": pos[n][1]} for n in g.nodes]
    return {"nodes": nodes, "arcs": arcs, "dependences": [list(d) for d in g.deps], "result": res}
