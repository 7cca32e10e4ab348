"""Analytical models page: equal-area explorer (001 Fig. 18), launch overhead (001 eq. 1), work flow
graph (004 §2) and the built-in simulator's breakdown. Every equation is in gpudse_core's docstrings."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import frame as ui
from dashboard import state as ui_state
from gpudse_core import GpudseError
from gpudse_core.report import style
from gpudse_core.sim import analytical
from gpudse_core.sim import simulator as simulator_module
from gpudse_core.sim import wfg as wfg_module
from gpudse_core.sim.analytical import FIG18, LaunchOverheadParams, equal_area_sweep, launch_overhead
from gpudse_core.sim.simulator import KERNELS, PARAMETERS, simulate
from gpudse_core.sim.wfg import FIGURE1, graph_view, load_wfg

w = ui.page("Analytical models")
st.title("Analytical models")
st.caption("The models behind the built-in simulator, from papers 001 (launch overhead, MWP/CWP with pipeline "
           "warp parallelism, the equal-area model) and 004 (the work flow graph).")

tab_ea, tab_launch, tab_wfg, tab_sim, tab_eq = st.tabs(["Equal-area model", "Launch overhead", "Work flow graph",
                                                        "Built-in simulator", "Equations and sources"],
                                                       **ui_state.bound("tab"))  # ?tab= in links


@st.cache_data(show_spinner=False)
def sweep(bw: float, regs: float):
    o = equal_area_sweep(bw, regs)
    return o.to_dict(), {k: v.tolist() for k, v in o.curves.items()}, o.n_threads_grid.tolist()


# short enough for a metric at 1280 px; the help text says the rest
LIMITED_BY = {"pe": "PE count", "scratchpad": "scratchpad", "bandwidth": "bandwidth",
              "registers": "registers", "threads": "threads"}
LIMITED_HELP = {"pe": "the PEs themselves: every PE is busy (η = 1)", "scratchpad": "the scratchpad's size",
                "bandwidth": "the bandwidth to global memory", "registers": "the register file",
                "threads": "the number of threads"}

with tab_ea:
    st.markdown("Performance = N_PE · f / CPI · η (eq. 34), η limited by effective threads (eqs. 35–38); the "
                "scratchpad gets the area the SMs' fixed parts and the register files leave (eq. 39 with the fixed "
                "area of Tables 8–10). Fig. 18 sweeps N_PE = 128…216 and 1,000…10,000 threads.")
    c1, c2 = st.columns(2)
    bw = c1.select_slider("Bandwidth to global memory (GB/s)", options=list(range(32, 105, 8)), value=104)
    regs = c2.select_slider("Registers per thread", options=list(range(10, 31, 2)), value=30)
    opt, curves, grid = sweep(float(bw), float(regs))
    m = st.columns(4)
    m[0].metric("Optimum N_PE", opt["optimum_n_pe"], help=ui.help_for("n-pe"))
    m[1].metric("Threads at the optimum", ui.fmt_count(opt["n_threads"]))
    m[2].metric("Performance", ui.fmt_num(opt["performance_gflops"], "GFLOP/s"))
    m[3].metric("Limited by", LIMITED_BY.get(opt["limited_by"], opt["limited_by"]),
                help=f"Performance is limited by {LIMITED_HELP.get(opt['limited_by'], opt['limited_by'])}; effective "
                     f"threads are capped by {LIMITED_HELP.get(opt['threads_limited_by'], opt['threads_limited_by'])}.")
    fig = go.Figure()
    for n_pe, perf in curves.items():
        width = 4 if n_pe == opt["optimum_n_pe"] else 1.2
        fig.add_trace(go.Scatter(x=grid[::50], y=perf[::50], mode="lines", name=f"{n_pe} PEs", line=dict(width=width)))
    fig.add_trace(go.Scatter(x=[opt["n_threads"]], y=[opt["performance_gflops"]], mode="markers",
                             marker=dict(size=14, symbol="star", color="black"), name="optimum"))
    fig.update_layout(xaxis_title="concurrent threads", yaxis_title="performance (GFLOP/s)", height=420,
                      margin=dict(t=30))
    ui.chart(style.apply(fig))
    paper = {(b, r): n for b, r, n in FIG18}
    if (bw, regs) in paper:
        st.caption(f"Fig. 18 prints OPT N_PE = {paper[(bw, regs)]} for bw{bw}reg{regs}.")

with tab_launch:
    st.markdown("Overhead_per_kernel = Overhead_per_block × Blocks + Overhead_per_arg × Args + Overhead_base "
                "(001 eq. 1; Table 4: GeForce 8800 GT at 1.6 GHz).")
    c1, c2 = st.columns(2)
    blocks = c1.number_input("Thread blocks", min_value=1, value=256, step=16)
    args = c2.number_input("Kernel arguments", min_value=0, value=4, step=1)
    p = LaunchOverheadParams()
    cyc = launch_overhead(blocks, args, p)
    m = st.columns(2)
    m[0].metric("Launch overhead", ui.fmt_num(cyc, "cycles"), help=ui.help_for("launch-overhead"))
    m[1].metric("at 1.6 GHz", ui.fmt_num(cyc / (p.clock_ghz * 1e3), "µs"))  # the chart's unit
    xs = list(range(1, 1001, 10))
    fig = go.Figure(go.Scatter(x=xs, y=[launch_overhead(b, args, p) / (p.clock_ghz * 1e3) for b in xs], mode="lines"))
    fig.update_layout(xaxis_title="thread blocks", yaxis_title=f"overhead (µs) with {args} arguments", height=320,
                      margin=dict(t=20))
    ui.chart(style.apply(fig))

with tab_wfg:
    st.markdown("A kernel's graph of computation (C), global memory (M), scratchpad (S) and barrier (B) nodes. "
                "Eqs. 1–6 of paper 004 weight the arcs; loops and branches are reduced until one arc is left.")
    examples = {"004 Figure 1 (x = A[threadID] + y)": FIGURE1}
    choice = st.selectbox("Graph", list(examples) + ["Loop and divergent branch (data/wfg/loop_branch.yaml)",
                                                    "Upload a JSON/YAML graph"], key="wfg_graph")
    doc = examples.get(choice)
    if choice.startswith("Loop"):
        doc = load_wfg(ui.ROOT / "data" / "wfg" / "loop_branch.yaml")
    elif choice.startswith("Upload"):
        up = ui.uploader("Work flow graph", ["json", "yaml", "yml"], key="wfg_upload")
        doc = ui.parse_upload(up) if up is not None else None
    if doc is not None:
        try:
            view = graph_view(doc)
        except GpudseError as e:
            ui.upload_error(up.name if choice.startswith("Upload") else choice, e,
                            "Correct the graph and upload it again.")
        else:
            res = view["result"]
            st.caption("In cycles:")  # the unit once: five metrics side by side at 1280 px are not cut off
            m = st.columns(5)
            m[0].metric("Latency_comp", ui.fmt_num(res.latency_comp))
            m[1].metric("CYC_compute", ui.fmt_num(res.cyc_compute))
            m[2].metric("NBC_avg", ui.fmt_num(res.nbc_avg))
            m[3].metric("Latency_exposed", ui.fmt_num(res.latency_exposed))
            m[4].metric("Warp latency", ui.fmt_num(res.warp_latency), help=ui.help_for("wfg"))
            pos = {n["id"]: (n["x"], n["y"]) for n in view["nodes"]}
            fig = go.Figure()
            for a in view["arcs"]:
                (x0, y0), (x1, y1) = pos[a["from"]], pos[a["to"]]
                loop = a["loop"]
                label = f"{a['cycles']:g} cycles" + (f" × {a['iterations']:g} iterations" if loop else "")
                if loop:  # back arc: drawn on the left, bending upwards
                    x0, x1 = x0 - 0.35, x1 - 0.35
                fig.add_annotation(x=x1, y=y1 - 0.12 * (y1 < y0) + 0.12 * (y1 > y0), ax=x0, ay=y0, xref="x",
                                   yref="y", axref="x", ayref="y", showarrow=True, arrowhead=3, arrowwidth=1.5,
                                   arrowcolor="#c0392b" if loop else "#555")
                fig.add_annotation(x=(x0 + x1) / 2 + (-0.1 if loop else 0.1), y=(y0 + y1) / 2, text=label,
                                   showarrow=False, xanchor="right" if loop else "left",
                                   font=dict(size=12, color="#c0392b" if loop else "#1f4e79"))
            for src, dst in view["dependences"]:
                (x0, y0), (x1, y1) = pos[src], pos[dst]
                fig.add_annotation(x=x1 + 0.9, y=y1, ax=x0 + 0.9, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                                   showarrow=True, arrowhead=2, arrowcolor="#8e44ad", arrowwidth=1.5)
                fig.add_annotation(x=x0 + 0.95, y=(y0 + y1) / 2, text=f"data dependence {src} → {dst}",
                                   showarrow=False, xanchor="left", font=dict(size=11, color="#8e44ad"))
            xs = [n["x"] for n in view["nodes"]]
            fig.update_xaxes(range=[min(xs) - 2.2, max(xs) + 2.6])
            colors = {"C": "#4c78a8", "M": "#e45756", "S": "#54a24b", "B": "#b279a2", "entry": "#999", "exit": "#999"}
            fig.add_trace(go.Scatter(x=[n["x"] for n in view["nodes"]], y=[n["y"] for n in view["nodes"]],
                                     mode="markers+text", text=[n["id"] for n in view["nodes"]],
                                     textposition="middle center", textfont=dict(color="white", size=10),
                                     marker=dict(size=34, color=[colors[n["type"]]
                                                                                      for n in view["nodes"]]),
                                     hovertext=[n["type"] for n in view["nodes"]], showlegend=False))
            fig.update_layout(height=120 + 90 * len({n["y"] for n in view["nodes"]}), margin=dict(t=10, l=10, r=10),
                              xaxis=dict(visible=False), yaxis=dict(visible=False))
            ui.chart(style.apply(fig))
            st.caption("Arcs: cycles after the bandwidth and dependence steps (red: loop back arcs, purple: data "
                       "dependences).")
            st.markdown("**Step through the model**")
            k = st.slider("Step", 1, len(res.steps), len(res.steps), key="wfg_step")
            st.markdown("\n".join(f"{i + 1}. " + (f"**{ui.plain(s)}**" if i == k - 1 else ui.plain(s))
                                   for i, s in enumerate(res.steps[:k])))

with tab_sim:
    st.markdown("The built-in simulator evaluates one of Stargazer's Table 4 applications at a design point of "
                "Table 2 (Table 3 fixed), on Hong & Kim's MWP/CWP core with the tail effect of §7.2.")
    space = ui.preset("stargazer")
    kernel = st.selectbox("Application", list(KERNELS), index=list(KERNELS).index("matMul"))
    st.caption(KERNELS[kernel].description)
    cols = st.columns(5)
    point = {}
    for i, name in enumerate(PARAMETERS):
        p = space.parameter(name)
        default = p.values[len(p.values) // 2]
        point[name] = cols[i % 5].select_slider(ui.plain(f"{p.display} ({p.unit})"), options=list(p.values),
                                                value=default,
                                                key=f"sim_{name}")
    r = simulate(pd.DataFrame([point]), kernel).iloc[0]
    m = st.columns(4)
    m[0].metric("Runtime", ui.fmt_num(r.cycles, "cycles"))
    m[1].metric("Tail-trimmed", ui.fmt_num(r.cycles_trimmed, "cycles"), help=ui.help_for("tail-effect"))
    m[2].metric("IPC", ui.fmt_num(r.ipc, sig=3))
    m[3].metric("at 325 MHz", ui.fmt_num(r.cycles / 325e3, "ms"))
    parts = ["compute_cycles", "memory_cycles", "launch_cycles", "tail_cycles"]
    fig = go.Figure(go.Bar(x=[p.replace("_cycles", "") for p in parts], y=[r[p] for p in parts],
                           marker_color=["#4c78a8", "#e45756", "#f58518", "#9d755d"]))
    fig.update_layout(yaxis_title="cycles", height=320, margin=dict(t=20))
    ui.chart(style.apply(fig))
    st.caption("compute and memory add up to the busiest core's time over all launches; tail is the part of it "
               "after the other cores finish (weighted by the cores it employs in the trimmed time).")

with tab_eq:
    st.markdown("Every equation the models use, with its source (the same text as the code's documentation).")
    for title, module in (("Paper 001 and Hong & Kim: launch overhead, MWP/CWP, PWP, the equal-area model", analytical),
                          ("Paper 004: the work flow graph", wfg_module),
                          ("The built-in simulator", simulator_module)):
        with st.expander(title, expanded=False):
            st.code(module.__doc__.strip(), language=None)
