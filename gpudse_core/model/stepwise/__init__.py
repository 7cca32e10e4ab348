"""Stargazer's automated forward-stepwise spline regression (Stargazer §5.2, Algorithm 1; Lee & Brooks).

The search, exactly as Algorithm 1:

1. For every parameter P_i, fit the single-term model; the one with the highest R² becomes M
   (with forced terms, M starts as those terms and this step is an ordinary step 2).
2. While parameters remain: augment M with each remaining parameter; take the one with the best
   score; accept it if score − R²(M) > θ, else stop. After accepting P_i, let R be the parameters
   already in M other than P_i; while R is not empty, augment M with each interaction P_i:P_k,
   P_k ∈ R; accept the best if score − R²(M) > φ (M is updated and P_k leaves R), else stop
   looking at interactions of P_i.
3. Optional (``max_order=3``, model accuracy): after each accepted pair P_i:P_k, its extensions
   P_i:P_k:P_m with every other chosen P_m are candidates, accepted by the same rule with their
   own threshold ``phi3`` until none passes. Stargazer found three-way terms unneeded on GPGPU-Sim
   (§5.2); the built-in simulator's matMul depends on blk:simd:smp.

The robust default adds (each measured in docs/models.md "Regression choices", each off in
:data:`PAPER_SETTINGS`):

4. ``revisit``: when Algorithm 1 stops, every pair of chosen parameters not in M (and every triple
   containing an accepted pair) is offered again, by the same rules, until none passes.
5. ``lookahead``: when the best main effect fails θ, each remaining P with each pair P:Q (Q
   chosen) is scored as one block against θ; the best that passes enters as P, then P:Q. A
   parameter acting only jointly (no main effect) no longer ends the search.
6. ``interactions="adaptive"``: interaction terms are restricted, and after each accepted term
   (and in the revisit pass) its doubly non-linear remainder, ``a:b (full)``, is a candidate by the
   term's own rule: a step in two parameters at once needs it.
7. ``prune``: the prefix of the selection path with the lowest leave-one-out error is kept
   (:func:`.scores.prune`); the F-test asks whether a term is real, this whether the
   rows estimate it well enough to predict better with it.
8. ``response_transform="auto"``: steps 1–7 once per transform (log, sqrt, none), keeping the one
   with the lowest leave-one-out error on the response scale (:mod:`.transform`).
9. ``robust="huber"``: steps 1–7 rerun on Huber pseudo-observations of the previous fit (Huber,
   *Robust Statistics*, 1981, §7.8: z* = f + ψ(z − f), ψ clipping at ``ROBUST_K`` times the MAD
   scale of the residuals), ``ROBUST_ROUNDS`` times at the chosen transform, keeping the model
   (least squares' or a round's) with the lowest leave-one-out error
   (:mod:`.robust`). A few very slow rows (a tuning space's pathological
   cells) no longer decide which terms enter and what they are worth. A round that calls rows outlying which
   least squares predicts when they are left out (real corners, not noise) is not kept
   (:func:`.robust.real_corners`).
10. ``cells``: indicator columns for combinations of two or three parameter levels (a tuning
   space's corners that no smooth curve follows), chosen by a Bonferroni F-test on the fit's working
   response and kept when the rows left out are predicted better (:mod:`..cells`,
   :mod:`.level_cells`).
11. ``row_guard``: an interaction candidate is judged without the one training row that carries most
   of its drop in the residual sum of squares (the F-test's gain less that row's share). A term that
   one row carries fits that row whatever its value (on the A4000 a 107 ms design alone in its
   block-height, tile and cache combination, among 2–7 ms neighbours) and says nothing about the
   combination's other designs; a real effect is carried by several rows and passes anyway.
12. ``count_pairs``: when neither a main effect nor the look-ahead passes θ, each pair of remaining count
   parameters (whole numbers ≥ 1, at least three values) is scored with its interaction as one block P + Q + P:Q
   against θ; the best that passes enters as Q, P, then P:Q. A product of two counts (MGPUSim's CUs in all =
   CUs per shader array × shader arrays) may show in neither factor alone, and Algorithm 1 offers only
   interactions of chosen parameters. A design space's derived quantities (:mod:`gpudse_core.space.derived`,
   ``total_cus = cu_per_sa * sa``) are the explicit form: predictors like any parameter.

The default criterion is the partial F-test (``criterion="ftest"``, Lee & Brooks eq. 10): a candidate
enters when the p-value of its added block is below θ, φ or φ3 (0.001 each). The paper's score is the adjusted
R² of the augmented model (``criterion="adjr2"``, as in :data:`PAPER_SETTINGS` and :data:`ALGORITHM1_SETTINGS`):
a candidate enters when its adjusted R² exceeds the R² of M by more than θ or φ; with ``compare="adj_r2"`` the
gain is measured against the adjusted R² of M instead (the other reading of the paper's text). ``"aic"`` and
``"bic"`` accept when the criterion drops by more than θ or φ. ``max_terms`` caps the number of terms;
``forced`` terms (e.g. Stargazer §7.4's ``["simd", "blk", "simd:blk"]``) start the model — a forced
interaction's main effects enter first (hierarchy) — and ``search=False`` fits just them.

Settings: :data:`PAPER_SETTINGS` is Stargazer as written: ``reference=True`` runs the authors'
released implementation exactly (:mod:`..reference`, R's ``ns`` and ``lm``); ``threshold_rule``
says whether θ and φ are shares of the model's R² (``relative``, the released code) or absolute
(the paper's text; the robust search's default). The estimator's defaults are the robust choice measured in
docs/models.md "Regression choices" (log2 scale for powers of two, categorical terms for parameters with at
most three values, knots at distinct-value quantiles; see :mod:`..encoding`). Predictions are
guarded by the training support and a bound (:mod:`..fitted`, :mod:`..support`).

Speed: the search never refits a candidate from scratch (:mod:`.ols`: an orthonormal basis of the model's
columns, candidate blocks kept residualised against it, gains from a pivoted QR of each block).

The package, one module per part: :mod:`.search` (Algorithm 1 as named steps), :mod:`.ols`, :mod:`.terms`,
:mod:`.scores` (criteria, leave-one-out errors, prune), the outer layers :mod:`.transform` (step 8),
:mod:`.robust` (step 9) and :mod:`.level_cells` (step 10), :mod:`.finish` (the model), :mod:`.data` and
:mod:`.params` (checked data and parameters), :mod:`.settings` and :mod:`.estimator`.

The fit is a generator (:meth:`StepwiseRegression.iter_fit`) yielding one :class:`TraceStep` per
row of Stargazer Table 1: every candidate's score and its model's R² and adjusted R² (``r2s``,
``adj_r2s``, whatever the criterion), the chosen term, whether it was accepted, and the current terms with their
R² and adjusted R².
"""

from __future__ import annotations

from ...choices import CRITERIA, INTERACTION_FORMS, TRANSFORMS
from ..fitted import MODEL_SCHEMA, FitError, StepwiseModel, inverse_transform, term_name, transform_response
from ..trace import TraceStep
from .data import check_response
from .estimator import StepwiseRegression, fit_stepwise
from .finish import SATURATION, saturation_warning
from .ols import OLSState
from .robust import LEAST_SQUARES, OUTLYING, ROBUST_K, ROBUST_ROUNDS, ROBUST_TIE
from .search import GUARD_NOTE, Search
from .settings import ABSOLUTE_THRESHOLD, ALGORITHM1_SETTINGS, PAPER_SETTINGS
from .terms import interaction_block
from .transform import AUTO_TRANSFORMS

_OLSState = OLSState  # the name tests/test_row_guard.py builds a selection path with

__all__ = [
    "ABSOLUTE_THRESHOLD",
    "ALGORITHM1_SETTINGS",
    "AUTO_TRANSFORMS",
    "CRITERIA",
    "GUARD_NOTE",
    "INTERACTION_FORMS",
    "LEAST_SQUARES",
    "MODEL_SCHEMA",
    "OUTLYING",
    "PAPER_SETTINGS",
    "ROBUST_K",
    "ROBUST_ROUNDS",
    "ROBUST_TIE",
    "SATURATION",
    "TRANSFORMS",
    "FitError",
    "OLSState",
    "Search",
    "StepwiseModel",
    "StepwiseRegression",
    "TraceStep",
    "check_response",
    "fit_stepwise",
    "interaction_block",
    "inverse_transform",
    "saturation_warning",
    "term_name",
    "transform_response",
]
