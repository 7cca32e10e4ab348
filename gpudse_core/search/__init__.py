"""Sequential search: fewer simulations to the best design, a good model, or the Pareto front.

Sequential model-based optimisation (Jones, Schonlau & Welch 1998, "Efficient Global Optimization";
Hutter, Hoos & Leyton-Brown 2011, SMAC): an initial space-filling sample, then rounds of *fit a
surrogate → score every feasible candidate → simulate a diverse batch → record → refit*, until a
budget, a target or no improvement. Modules:

* :mod:`.pool` — the candidates: the whole feasible space, enumerated when small, otherwise a large
  uniform pool plus local moves around the incumbents each round; a simulated point is never proposed
  again.
* :mod:`.surrogate` — the random-forest surrogate with its per-tree spread (SMAC), and the
  feasibility classifier that learns which designs fail.
* :mod:`.choice` — which surrogate drives: the forest, or the stepwise model when its cross-validated
  error is significantly below the forest's out-of-bag error (it then proposes part of each batch:
  its best predicted design not yet simulated).
* :mod:`.acquisition` — expected improvement, the lower confidence bound, hypervolume improvement for
  a two-objective front, and the diverse batch. For ``accuracy`` (a model good everywhere; Ipek et al.
  2006 sample where an ensemble disagrees, active learning) the search simulates the uniform sample of
  its budget, and follows the forest's spread with 30 % of the simulations only once the out-of-bag
  spread has shown it ranks the model's errors (on measured tables it does not: chasing disagreement,
  and maximin space filling, measured worse than uniform there).
* :mod:`.study` — the loop and its history (every proposal: round, model version, acquisition value,
  value or failure), resumable; its settings checked in one step before anything is simulated.
* :mod:`.runner` — rounds as campaigns (pools sized by the work), the study stored in a workspace.
* :mod:`.stored` — a stored study validated whenever it is read (a damaged one is a damaged stage).
* :mod:`.lease` — one run of a study at a time (a lease row in the workspace's SQLite file).
* :mod:`.importance` — each parameter's share of the value's variance (fANOVA-like main effects of a forest).
* :mod:`.figures` — the history as optuna-dashboard draws a study: parallel coordinates, importance, best so far.
"""
