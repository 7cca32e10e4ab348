"""Using a fitted model: response curves, whole-space scans, best designs and Pareto fronts."""
