"""One versioned workspace per piece of work: the pipeline's stages, persistent and shared by link.

A workspace holds the pipeline's stages — ``space`` → ``samples`` → ``results`` → ``model`` → named
analyses (``validation``, ``scan``, ``curves``, a ray-tracing ``plan``, anything) — each as a series
of stored versions, and records for every derived version the versions (and content digests) of the
stages it was computed from. Changing a stage makes everything computed from it **stale**; pages
ask the workspace instead of keeping pipeline data in ``st.session_state``, and never show a stale
or missing value as current. No Streamlit here: the dashboard and the CLI call the same functions.

Storage: one SQLite file (WAL) per workspace under ``$GPUDSE_HOME/workspaces`` (default
``~/.gpudse``; a local disk), one row per stage version, tables as Parquet and arrays as ``.npy``
inside the row, never pickle. Campaigns run with ``--workspace`` live in the same file.

Opening, sharing, listing::

    from gpudse_core.workspace import create_workspace, open_workspace, list_workspaces

    ws, key = create_workspace("matMul study")   # ws.id: 192 random bits, for the URL (?ws=…)
    ws = open_workspace(ws_id, key)              # writable with the edit key …
    ws = open_workspace(ws_id)                   # … read-only without it (a colleague with the link)
    mine, key = ws.fork()                        # "make my own copy" (works on a read-only one)
    ws.rename("…"); ws.delete()                  # owner only
    list_workspaces(ids=[…])                     # those a browser holds keys for; every one only on a
                                                 # single-user server (GPUDSE_SINGLE_USER=1)

Stages (writes need the key; read-only handles raise :class:`ReadOnly`)::

    ws.set_space(space, "preset stargazer")            # -> StageValue
    ws.set_samples(sample_set, "uniform, seed 1")      # computed from the current space
    ws.set_results(table, "cycles", "uploaded r.csv")  # app_column="auto"; inputs=("space",) for an
                                                       # upload, ("space", "samples") for a campaign
    ws.set_model(model, "stepwise, θ=0.01")            # computed from the current results
    ws.put_analysis("validation", result, inputs=[results_sv, model_sv])
    ws.remove("model"); ws.restore("space", 1)         # restore: earlier content, current again
    with ws.batch(): …                                 # several changes, all or none

    sv = ws.get("model")       # StageValue(value, version, inputs, status, origin, partial, note …)
    sv.ok                      # current?  sv.value is None when missing
    st = ws.status("model")    # Status(state="stale", reason="the results changed after this model
                               #   was fitted", action="Refit on the new results", fix="model")
    st.message()               # "The results changed after this model was fitted. Refit on the new results."
    ws.ready("model", "space") # None, or the first Status (pipeline order) a page shows as its banner
    ws.require("results", "model")  # current StageValues, or NotReady(status)
    ws.value("scan")           # the value if current, else None
    ws.overview()              # {stage: Status} for the sidebar / Home
    ws.input_of(model_sv, "results")   # the results version the model was fitted on
    ws.history("model"); ws.revision   # versions; a counter that moves on every change
    ws.changes_since(rev)              # what other tabs, sessions or the CLI stored after revision rev

Typed analyses (:mod:`.results`, one registry): ``scan`` is read as a ScanResult, ``true_error`` as a
TrueError, ``heatmap`` as a HeatmapResult, ``validation`` as a ValidationResult, ``comparison``
as a Comparison, ``app_models`` as AppModels and ``check`` (a "Simulate these" check of the model and
scan, :mod:`.checks`, which leaves the results unchanged) as a SimulatedCheck — also when an
earlier version stored them as dicts; a stored value that cannot be read as its class is a
:class:`Damaged` (named by ``ws.damaged()``), and a malformed one is refused by ``put``.

Pass the :class:`StageValue` objects you read as ``inputs`` (race-free: another session may change a
stage while you compute) and ``expect=sv.version`` to refuse a write over someone else's
(:class:`Conflict`).

Long work (see :mod:`.jobs`): ``job = ws.start_job(kind, work, stage=name, inputs=[…])`` runs
``work(ctx)`` in a thread; ``ctx.progress(done, total, msg)`` and ``ctx.stopped()``; the result is
stored as *stage* (partial when stopped). ``ws.jobs(active=True)`` re-attaches after a reload,
``ws.stop_job(id)`` stops it (also a CLI campaign in another process). Ready-made:
:func:`start_validation`, :func:`start_scan`, :func:`start_campaign`.

Campaigns: ``ws.campaigns()`` (live progress from the store), ``ws.adopt_campaign(name)`` makes its
results the results stage. Projects and reports: :func:`export_project`, :func:`import_project`,
:func:`report_contents` (current stages and analyses only, or stale ones labelled). A new workspace
can start from the built-in example: :func:`fill_example`.
"""

from __future__ import annotations

# Every module here imports NumPy, pandas and the pipeline's packages only inside the functions that
# need them, so importing the package (and the CLI's --help) stays cheap.
from .campaigns import CampaignInfo, CliCampaign, adopt_campaign, start_campaign
from .codec import register
from .db import NotFound, ReadOnly, WorkspaceError, home, single_user
from .example import fill_example
from .exchange import ProjectExport, ReportContents, export_project, import_project, report_contents, samples_from_dict
from .jobs import Job, JobContext, JobInfo, Stopped, start_job
from .results import Damaged, result_class
from .stages import BASE_STAGES, Results, StageError, Status
from .tasks import start_scan, start_validation
from .workspace import (
                        Conflict,
                        StageDamaged,
                        NotReady,
                        StageValue,
                        VersionInfo,
                        Workspace,
                        WorkspaceInfo,
                        application_column,
                        create_workspace,
                        list_workspaces,
                        open_workspace,
)

__all__ = ["BASE_STAGES", "CampaignInfo", "CliCampaign", "Conflict", "Damaged", "StageDamaged", "Job", "JobContext",
           "JobInfo", "NotFound", "NotReady", "ProjectExport", "ReadOnly", "ReportContents", "Results", "StageError",
           "StageValue", "Status", "Stopped", "VersionInfo", "Workspace", "WorkspaceError", "WorkspaceInfo",
           "adopt_campaign", "application_column", "create_workspace", "export_project", "fill_example", "home",
           "import_project", "list_workspaces", "open_workspace", "register", "report_contents", "result_class",
           "samples_from_dict", "single_user", "start_campaign", "start_job", "start_scan", "start_validation"]
