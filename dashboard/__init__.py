"""The Streamlit dashboard's helpers, shared by ``app.py`` and ``pages/`` (UI only: every computation
is a call into :mod:`gpudse_core`).

Modules, each importing only those listed before it:

``work``    what each long job computes (validation, scans, true error, fits, ray casting)
``state``   the session's workspace, its link and edit key, the built-in example's template
``frame``   the page frame, sidebar, banners for stale or missing inputs, formatting, small widgets
``jobs``    a running job on a page: progress bar, running indicator, Stop
``replay``  the stepwise fit's replay, row by row
``compare`` runs side by side on the Accuracy page (a picker over model versions and workspaces)
"""
