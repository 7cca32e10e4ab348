"""Using a fitted model over a whole design space (speed at scale for the whole-space scans).

* :mod:`.best` — :func:`~.best.find_best`: the exact best designs and Pareto front of a space (the
  ``gpudse explore`` command and the Explore page);
* :mod:`.designs` — :func:`~.designs.best_designs`: the best designs as one row per group the model
  cannot tell apart, with counts, prediction intervals and simulated designs marked;
* :mod:`.structure`, :mod:`.terms` — the used parameters' sub-space and the model and cost as tables;
* :mod:`.stream`, :mod:`.pool` — block-by-block evaluation and the exact candidate pools;
* :mod:`.distributed` — the same scan on a Dask cluster;
* :mod:`.scan` — response curves, interaction grids, one-at-a-time sensitivity.
"""
