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
* :mod:`.acquisition` — expected improvement, the lower confidence bound, hypervolume improvement for
  a two-objective front, and the diverse batch. For ``accuracy`` (a model good everywhere; Ipek et al.
  2006 sample where an ensemble disagrees, active learning) the measured best is uniform sampling of
  the designs not yet simulated: disagreement and maximin space filling both measured worse.
* :mod:`.study` — the loop and its history (every proposal: round, model version, acquisition value,
  value or failure), resumable.
"""
