"""Search page: the sequential search (gpudse_core.search) over the workspace's design space on the
built-in simulator, run as a job (progress, Stop); the study is the workspace's ``search`` analysis —
every simulation with its round and model version, the best so far, and which values the proposals
explore. The same study as ``gpudse search … --workspace ID``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import frame as ui
from dashboard import jobs as ui_jobs
from gpudse_core.report import figures
from gpudse_core.search.runner import start_search
from gpudse_core.sim.simulator import KERNELS

w = ui.page("Search")
st.title("Sequential search")
st.caption("Simulate where a random-forest model expects the most improvement, round by round (expected "
           "improvement, Jones et al. 1998; the forest's spread as its uncertainty, SMAC). The measured regret "
           "against random search, one-shot sampling and TPE is in docs/search.md.")
(space_sv,) = ui.need("space")
space = space_sv.value
c1, c2, c3, c4 = st.columns(4)
kernel = c1.selectbox("Kernel (built-in simulator)", list(KERNELS), index=list(KERNELS).index("BFS"))
goal = c2.radio("Best design has the", ["lowest cycles", "highest cycles"])
budget = c3.number_input("Simulations in all", min_value=12, max_value=2000, value=100, step=10)
batch = c4.number_input("Per round", min_value=1, max_value=64, value=4)



def begin() -> None:
    start_search(w, kernel, "max" if goal.startswith("highest") else "min", int(budget), int(batch))


running = ui_jobs.job_panel(w, "search", "The search", rerun=begin)
if not running and st.button("Start the search", type="primary", disabled=not w.writable) and ui.guarded(begin):
    st.rerun()

sv = w.get("search")
doc = sv.value
if isinstance(doc, dict) and doc.get("trials"):
    trials = doc["trials"]
    settings = doc.get("settings", {})
    response = settings.get("response", "value")
    maximize = settings.get("goal") == "max"
    ok = [t for t in trials if t["status"] == "ok"]
    best = (max if maximize else min)(ok, key=lambda t: t["value"]) if ok else None
    st.markdown(f"**{settings.get('source', 'search')}, goal {settings.get('goal')}** — "
                f"{'partial: stopped' if sv.partial else 'ended: ' + str(doc.get('stopped', ''))}")
    m = st.columns(4)
    m[0].metric("Simulated", ui.fmt_count(len(trials)))
    m[1].metric("Failed", ui.fmt_count(len(trials) - len(ok)))
    m[2].metric("Rounds", ui.fmt_count(max(t["round"] for t in trials) + 1))
    if best is not None:
        m[3].metric(f"Best {response}", ui.fmt_num(best["value"], ui.response_unit(response)))
        st.markdown("Best design: " + ", ".join(f"{k} = {v}" for k, v in best["design"].items()))
    ui.chart(figures.search_progress([t["value"] for t in trials], [t["round"] for t in trials], response,
                                     maximize))
    table = pd.DataFrame([{"round": t["round"], "model": t["model_version"], **t["design"], response: t["value"],
                           "acquisition": t["acquisition"], "status": t["status"]} for t in trials])
    st.subheader("Which values the proposals explore")
    st.caption("How often each parameter value was simulated after the initial sample (model version ≥ 1).")
    chosen = table[table["model"] > 0]
    if len(chosen):
        counts = {p: chosen[p].astype(str).value_counts().to_dict() for p in settings.get("params", [])
                  if p in chosen.columns}
        ui.table(pd.DataFrame([{"parameter": p, "values (count)": ", ".join(f"{v} ({n})" for v, n in c.items())}
                               for p, c in counts.items()]))
    st.subheader("Every simulation")
    ui.data_table(table, units=ui.units(space))
elif not running:
    st.info("No search yet in this workspace: choose a kernel and a budget, then start it.", icon=":material/info:")
