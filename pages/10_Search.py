"""Search page: the sequential search (gpudse_core.search) over the workspace's design space on the
built-in simulator, run as a job (progress, Stop, resume); the study is the workspace's ``search``
analysis — every simulation with its round and model version — stored while it runs, so the page shows
the best so far, the model's estimated error and which values the proposals explore live, and a reload
finds it. The same loop as ``gpudse search … --goal min|max|accuracy|pareto [--cost] [--objective]``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import frame as ui
from dashboard import jobs as ui_jobs
from dashboard import search_views as views
from dashboard.work import POLL_S
from gpudse_core.choices import MGPUSIM_BENCHMARKS, MGPUSIM_PARAMETERS
from gpudse_core.report import figures
from gpudse_core.search import timing
from gpudse_core.search.runner import describe_differences, same_study, search_settings, start_search
from gpudse_core.search.result import SearchStudy
from gpudse_core.search.study import default_initial
from gpudse_core.sim.simulator import KERNELS

GOALS = {"min": "min — the lowest value", "max": "max — the highest value",
         "accuracy": "accuracy — a model good everywhere", "pareto": "pareto — the front against a cost"}
METHODS = {"uniform": "uniform", "lhs": "Latin hypercube"}
RESPONSES = ["cycles", "ipc", "cycles_trimmed"]
MGPUSIM_RESPONSES = ["kernel_exec_s", "kernel_time_s", "kernel_cycles", "ipc", "occupancy"]

w = ui.page("Search")
st.title("Sequential search")
st.caption("Simulate where a random-forest model expects the most improvement, round by round (expected "
           "improvement, Jones et al. 1998; the forest's spread as its uncertainty, SMAC); while the stepwise "
           "model predicts the designs simulated so far significantly better, it proposes half of each round "
           "(its predicted best; the table's \"model used\" column). Each proposal carries the value its model "
           "predicted and a calibrated 95 % interval. For a Pareto front, hypervolume improvement. The measured "
           "regret against random search, one-shot sampling and TPE is in docs/search.md.")
(space_sv,) = ui.need("space")
space = space_sv.value
sv = ui.analysis("search")  # a damaged or forged study: the banner names it, offers to drop it; read as missing
study = sv.value  # a SearchStudy (gpudse_core.search.result) or None
stored = study.settings if study is not None else {}
# the widgets open on the stored search's settings (a reload, or coming back to the page), so resuming it
# is one click; the defaults otherwise
source_kernel = str(stored.get("source", "")).rsplit("kernel ", 1)[-1]
for key, value in {"se_kernel": source_kernel if source_kernel in KERNELS else "BFS",
                   "se_goal": stored.get("goal") if stored.get("goal") in GOALS else "min",
                   "se_response": stored.get("response") if stored.get("response") in RESPONSES else "cycles",
                   "se_objective": stored.get("objective", ""), "se_cost": stored.get("cost", ""),
                   "se_budget": min(max(int(stored.get("budget") or 100), 12), 2000),
                   "se_batch": min(max(int(stored.get("batch") or 4), 1), 64),
                   "se_initial": int(stored.get("initial") or default_initial(int(stored.get("budget") or 100))),
                   "se_method": stored.get("initial_method") if stored.get("initial_method") in METHODS else "uniform",
                   "se_seed": int(stored.get("seed") or 0)}.items():
    st.session_state.setdefault(key, value)
c1, c2, c3 = st.columns([2, 3, 1])
benches: list = []
on_mgpusim = set(space.parameter_names) <= set(MGPUSIM_PARAMETERS)  # the mgpusim preset: MGPUSim simulates
if on_mgpusim:
    st.session_state.setdefault("se_benches", ["matmul"])
    benches = c1.multiselect("Benchmarks (MGPUSim, default sizes)", MGPUSIM_BENCHMARKS, key="se_benches",
                             help="several: each design runs every one and the search optimises their geometric "
                             "mean (geomean_kernel_exec_s)")
    kernel = "mgpusim " + ",".join(benches)
    RESPONSES = ([f"geomean_{r}" for r in ("kernel_exec_s", "kernel_time_s")] if len(benches) > 1
                 else MGPUSIM_RESPONSES)
    if st.session_state.get("se_response") not in RESPONSES:
        st.session_state["se_response"] = RESPONSES[0]
else:
    kernel = c1.selectbox("Kernel (built-in simulator)", list(KERNELS), key="se_kernel")
goal = c2.selectbox("Goal", list(GOALS), format_func=GOALS.get, key="se_goal",
                    help="min/max: the best design; accuracy: a model good everywhere; pareto: the designs not "
                         "beaten on both the response and a cost")
response = c3.selectbox("Response", RESPONSES, key="se_response")
# both fields always there (disabled when the goal does not use them), so what was typed in one survives
# a look at another goal
c1, c2 = st.columns(2)
objective = c1.text_input("Objective (min/max, optional)", key="se_objective", max_chars=500,
                          disabled=goal not in ("min", "max"), placeholder=f"e.g. {response} * (40 + simd + 4 * smp)",
                          help=f"optimise this expression of {response} and the parameters instead of {response} "
                               f"itself, e.g. {response} × a die-area expression (performance per area); the "
                               "constraint language of the Design space page")
cost = c2.text_input("Cost (pareto)", key="se_cost", max_chars=500, disabled=goal != "pareto",
                     placeholder="e.g. simd * smp",
                     help=f"a cost computed from the parameters; the front is {response} against it")
objective = objective if goal in ("min", "max") else ""
cost = cost if goal == "pareto" else ""
c1, c2, c3, c4, c5 = st.columns(5)
budget = c1.number_input("Simulations in all", min_value=12, max_value=2000, step=10, key="se_budget",
                         help="failed simulations count too")
batch = c2.number_input("Per round", min_value=1, max_value=64, key="se_batch",
                        help="proposals simulated together each round")
initial = c3.number_input("Initial sample", min_value=1, max_value=1999, key="se_initial",
                          help="space-filling simulations before the model proposes")
method = c4.selectbox("Initial sample method", list(METHODS), format_func=METHODS.get, key="se_method")
seed = c5.number_input("Seed", min_value=0, max_value=2**31 - 1, key="se_seed")

wanted = search_settings(space, kernel, goal, int(budget), int(seed), initial=int(initial), initial_method=method,
                         cost=cost, objective=objective, response=response, batch=int(batch), stored=stored or None)
resumable = bool(study and study.trials) and same_study(stored, wanted) and len(study.trials) < int(budget)


def begin(resume: bool = True) -> None:
    """Start (or, with *resume*, go on with) the search of the settings above; an interrupted search is
    rerun from what it stored."""
    backend = None
    if on_mgpusim:
        from gpudse_core import GpudseError
        from gpudse_core.sim import mgpusim

        if not benches:
            raise GpudseError("Benchmarks: choose at least one MGPUSim benchmark")

        backend = mgpusim.MgpusimBackend(",".join(benches), binary=str(mgpusim.build()))
    start_search(w, kernel, goal, int(budget), int(batch), int(seed), initial=int(initial), initial_method=method,
                 cost=cost, objective=objective, response=response, resume=resume, backend=backend,
                 on_stop="finish" if st.session_state.get("se_finish") else "kill")


if on_mgpusim:  # its simulations are processes of their own, which a Stop may kill or wait for
    st.toggle("Stop lets the simulations in flight finish", key="se_finish",
              help="off: Stop kills the simulations in flight at once (they are not counted; resuming simulates "
                   "them again); on: Stop waits for them and counts them")
running = ui_jobs.job_panel(w, "search", "The search", rerun=begin)
ended = ui_jobs.last(w, "search")
if not running and ended is not None and ended.state == "stopped" and ended.message.startswith("stopped"):
    st.caption(":material/stop_circle: The last search " + ui.plain(ended.message) + ".")
if not running:
    label = (f"Resume the search ({len(study.trials):,} of {int(budget):,} simulated)" if resumable
             else "Start the search")
    differ = describe_differences(stored, wanted) if study and study.trials else ""
    if differ:  # each differing setting with its stored and its given value, as the CLI's refusal says it
        st.caption("Starting replaces the stored search, whose settings differ from those above: "
                   + ui.plain(differ) + ".")
    if st.button(label, type="primary", disabled=not w.writable, key="se_start"):
        if int(initial) >= int(budget):
            st.error(f"Initial sample: {int(initial):,} leaves nothing for the search in {int(budget):,} simulations; "
                     "give a smaller initial sample or more simulations in all.")
        elif ui.guarded(lambda: begin(resumable)):  # a finished search of the same settings starts afresh
            st.rerun()


def show(study: SearchStudy, partial: bool, live: bool, version: int) -> None:
    trials = study.trials
    response, g, objective = study.response, study.goal, study.objective
    res = study.result()
    valued = "objective" if objective else response
    what = {"min": f"lowest {valued}", "max": f"highest {valued}", "accuracy": "a model good everywhere",
            "pareto": f"the front of {response} against the cost"}.get(g, str(g))
    status = "running" if live else ("partial: stopped" if partial else "ended: " + study.stopped)
    st.markdown(f"**{ui.plain(study.source)}** — goal: {ui.plain(what)} — {ui.plain(status)}")
    if objective:
        st.markdown("Objective: " + ui.plain(objective))
    if study.cost:
        st.markdown("Cost: " + ui.plain(study.cost))
    ok = res.ok
    best = study.best()
    errors = study.model_error
    m = st.columns(5)
    m[0].metric("Simulated", ui.fmt_count(len(trials)))
    m[1].metric("Failed", ui.fmt_count(len(trials) - len(ok)))
    m[2].metric("Rounds", ui.fmt_count(study.rounds))
    if best is not None:
        m[3].metric(f"Best {ui.plain(valued)}",
                    ui.fmt_num(best.value, None if objective else ui.response_unit(response)))
    elif g == "pareto":
        m[3].metric("Designs on the front", ui.fmt_count(len(res.front())))
    if errors:
        m[4].metric("Model error", ui.fmt_pct(errors[-1][1]),
                    help="the forest's mean relative out-of-bag error on every design simulated so far")
    if best is not None:
        unit = ui.response_unit(response)
        measured = ui.fmt_num(best.measured, unit) if unit else ui.plain(response) + " " + ui.fmt_num(best.measured)
        shown = (f" ({measured})"
                 if objective else "")
        st.markdown("Best design" + shown + ": " + ui.plain(", ".join(f"{k} = {v}" for k, v in best.design.items())))
    left, right = st.columns([3, 2])
    if g == "accuracy":  # no best design sought: how good the model has become is the progress
        left, right = st, None
    elif g == "pareto":
        front = res.front()
        with_cost = [t for t in ok if t.cost is not None]
        ui.chart(figures.search_front([t.cost for t in with_cost], [t.value for t in with_cost],
                                      [t.cost for t in front], [t.value for t in front], study.cost,
                                      response), left, narrow=True)
    else:
        ui.chart(figures.search_progress([t.value for t in trials], [t.round for t in trials], valued,
                                         g == "max"), left, narrow=True)
    if errors:
        ui.chart(figures.search_model_error([n for n, _ in errors], [e for _, e in errors]), right,
                 narrow=right is not None)
    else:
        (right or st).caption("The model's estimated error appears once ten designs have simulated.")
    table = views.history_frame(study)
    st.subheader("Which values the proposals explore")
    st.caption("How often each parameter value was simulated after the initial sample (model version ≥ 1).")
    chosen = table[table["model version"] > 0]
    if len(chosen):
        counts = {p: chosen[p].astype(str).value_counts().to_dict() for p in study.params
                  if p in chosen.columns}
        ui.table(pd.DataFrame([{"parameter": p, "values (count)": ", ".join(f"{v} ({n})" for v, n in c.items())}
                               for p, c in counts.items()]))
    else:
        st.caption("Nothing yet: the initial sample is still being simulated.")
    views.explore_views(w.id, version, study, live)
    st.subheader("Every simulation")
    views.interval_note(study)
    views.history_table(table, space)
    if study.times:  # (a study stored before rounds were timed has none)
        total = sum(r.total_s for r in study.times)
        st.subheader("Time per round")
        st.caption(f"{ui.fmt_count(len(study.times), 'rounds')} in {ui.fmt_duration(total)}: proposing (fitting the "
                   "models, then scoring the candidates), simulating, and the round in all (with storing the study); "
                   "wall-clock seconds, which on a shared machine include waiting for a core.")
        ui.table(timing.round_table(study.times), units={c: "s" for c in timing.SECONDS})


@st.fragment(run_every=POLL_S * 4)
def live() -> None:
    sv = ui.stored(w, "search")
    job = ui_jobs.active(w, "search")
    if (sv is not None and job is not None and sv.created >= job.started and isinstance(sv.value, SearchStudy)
            and sv.value.trials):
        show(sv.value, sv.partial, live=True, version=sv.version)  # this search's own study, stored as it runs
    else:
        st.caption("The search's simulations appear here after its first round.")


if running:
    live()
elif study is not None and study.trials:
    show(study, sv.partial, live=False, version=sv.version)
elif "search" not in w.damaged():  # a damaged study is named above, with the offer to drop it
    st.info("No search yet in this workspace: choose a kernel, a goal and a budget, then start it.",
            icon=":material/info:")
if not running:
    views.side_by_side(w)
