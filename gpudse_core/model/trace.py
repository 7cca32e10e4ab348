"""One row of Stargazer Table 1: a step of the forward-stepwise search (Stargazer §5.2, Algorithm 1).

Both searches record their steps this way: the robust one (:mod:`.stepwise`) and Stargazer 1.0's
(:mod:`.reference`). ``candidates`` maps each candidate term to the step's score (``metric``: ``r2``
on Algorithm 1's first step, ``adj_r2`` after it, or ``aic``, ``bic``, ``p_value``, ``loo_error``
by the rule in use); ``r2s`` and ``adj_r2s`` map every candidate that was fitted to the R² and the
adjusted R² of the model with it added, whatever the rule, so a trace can always be shown as Table
1 (R² in the first step, adjusted R² after; the accepted one is ``chosen`` with ``accepted`` true).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TraceStep:
    """One row of Stargazer Table 1 (``kind``: forced, initial, main, interaction, … see the module docstring)."""

    step: int
    kind: str
    metric: str  # what the candidate scores are: r2, adj_r2, aic, bic, p_value, loo_error
    candidates: dict[str, float]
    skipped: dict[str, str]
    chosen: str | None
    accepted: bool
    gain: float | None
    terms: list[str]
    r2: float
    adj_r2: float
    r2s: dict[str, float] = field(default_factory=dict)  # candidate -> R² of the model with it
    adj_r2s: dict[str, float] = field(default_factory=dict)  # candidate -> that model's adjusted R²

    def to_dict(self) -> dict:
        return {"step": self.step, "kind": self.kind, "metric": self.metric, "candidates": dict(self.candidates),
                "skipped": dict(self.skipped), "chosen": self.chosen, "accepted": self.accepted, "gain": self.gain,
                "terms": list(self.terms), "r2": self.r2, "adj_r2": self.adj_r2, "r2s": dict(self.r2s),
                "adj_r2s": dict(self.adj_r2s)}
