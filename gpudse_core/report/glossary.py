"""THE glossary of gpudse: the papers' terms as the pages, the CLI help and ``gpudse glossary`` explain them
 ("help text for every term from the papers, a glossary shared by pages and CLI help").

Each :class:`Term` has a one-line explanation (for tooltips: ``help_text``), a longer one, and where it comes
from — the paper and section — so a reader can look it up. The explanations are written for gpudse; they do
not quote the papers. Papers (``/work/shared/papers``): Stargazer = Jia, Shaw & Martonosi (000); Lee & Brooks
= Regression Modeling Strategies for Microarchitectural Performance and Power Prediction (003); Zatel =
Grigoryan et al. (002); Ye (2009) = Design space exploration for GPU-based architecture, TU/e thesis (001);
Baghsorkhi et al. (2010) = An Adaptive Performance Modeling Tool for GPU Architectures (004). Sources name
papers as readers cite them (author, year), never by the file numbers.

This module imports nothing heavy (the CLI's ``--help`` uses it).
"""

from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass, field

from ..errors import GpudseError

STARGAZER = "Stargazer"
LEE_BROOKS = "Lee & Brooks"
ZATEL = "Zatel"
DSE_REPORT = "Ye (2009)"
WFG_PAPER = "Baghsorkhi et al. (2010)"
MGPUSIM_PAPER = "Sun et al. (ISCA 2019)"
GPUDSE = "gpudse"


class GlossaryError(GpudseError):
    """A term that is not in the glossary."""


@dataclass(frozen=True)
class Term:
    key: str
    name: str
    short: str
    long: str
    source: str  # "Stargazer §5.2, Algorithm 1"
    aliases: tuple[str, ...] = ()
    see: tuple[str, ...] = field(default=())

    def help(self) -> str:
        """One line for a tooltip or ``--help``: the short explanation and its source."""
        return f"{self.short} ({self.source})"

    def to_dict(self) -> dict:
        return {"key": self.key, "name": self.name, "short": self.short, "long": self.long, "source": self.source,
                "aliases": list(self.aliases), "see": list(self.see)}


_TERMS = (
    Term("design-space", "design space",
         "Every combination of the explored parameters' values: the designs a study could simulate.",
         "Each parameter is one dimension with a finite list of legal values; the space is their Cartesian "
         "product, minus the combinations a constraint rules out. Stargazer's GPU space has ten parameters and "
         "933,120 designs, Lee & Brooks' processor space about 10^9, which is why only a sample is simulated.",
         f"{STARGAZER} §5.1, Table 2; {LEE_BROOKS} §3.4, Table 2", ("space", "design point", "designs"),
         ("uar", "legal-values")),
    Term("legal-values", "legal values",
         "The values a parameter can actually take (e.g. #blk ∈ {1, 2, 4, 8, 16}); designs exist only there.",
         "A response curve is drawn on a fine grid between the legal values because the spline is defined "
         "there, but only the marked points are designs that can be built and simulated; gpudse dashes the line "
         "between them. Powers of two are drawn on a log2 axis so that equal ratios look equal.",
         f"{STARGAZER} §5.1, Table 2", ("legal value", "levels", "values"), ("design-space", "response-curve")),
    Term("uar", "uniform random sampling (UAR)",
         "Drawing design points uniformly at random without replacement from the whole space.",
         "Every design is equally likely to be simulated, so every value of every parameter appears about "
         "equally often and the unobserved designs are missing completely at random: a model fitted on the "
         "sample is not biased towards any region. Stargazer asks for a number of points, a fraction of the "
         "space or a fraction of each dimension.",
         f"{STARGAZER} §5.1; {LEE_BROOKS} §3.4", ("uniform sampling", "sampling", "mcar", "uniformly at random"),
         ("design-space",)),
    Term("stepwise", "stepwise regression (Algorithm 1)",
         "Forward selection: start empty, add the parameter or interaction that helps most, stop when none helps "
         "by more than θ (φ).",
         "Stargazer's Algorithm 1 first picks the single parameter with the highest R², then repeatedly adds the "
         "remaining parameter whose model has the highest adjusted R² if that beats the current R² by more than "
         "θ; after each addition it tries the new parameter's interactions with those already chosen, accepting "
         "them while they gain more than φ. Each parameter enters as a spline. The trace (Table 1) records every "
         "candidate's score.",
         f"{STARGAZER} §5.2, Algorithm 1, Table 1", ("algorithm 1", "forward selection", "stepwise fit", "trace"),
         ("theta", "phi", "adjr2", "rcs")),
    Term("theta", "θ (theta)",
         "The smallest gain a new parameter must bring to be added to the model (Stargazer: 0.01 in R²; "
         "gpudse's robust default: an F-test p-value below 0.001).",
         "In Algorithm 1 a parameter is accepted when the adjusted R² of the model with it exceeds the current "
         "model's R² by more than θ. θ = 0 accepts any improvement; a small positive θ stops the search once R² "
         "has converged, keeping the model small. Stargazer found 0.01 a good default and used 0.003 in its "
         "Table 1 example. With --criterion aic/bic θ is the required drop of the criterion, with ftest a p-value.",
         f"{STARGAZER} §5.2, §5.4", ("θ", "--theta"), ("phi", "stepwise")),
    Term("phi", "φ (phi)",
         "The smallest gain an interaction term must bring to be added (Stargazer: 0.01 in R²; gpudse's "
         "robust default: an F-test p-value below 0.001).",
         "After a parameter enters the model, Algorithm 1 tries its pairwise interactions with the parameters "
         "already chosen and accepts the best while its adjusted R² beats the current R² by more than φ. "
         "Stargazer's Table 1 example uses φ = 0.",
         f"{STARGAZER} §5.2, §5.4", ("φ", "ϕ", "--phi"), ("theta", "interaction")),
    Term("r2", "R² (coefficient of determination)",
         "The share of the response's variance the model explains: 1 − SSE/SST.",
         "R² is 0 for a model no better than the mean and 1 for a perfect fit on the training data. It never "
         "decreases when a term is added, so it cannot tell a useful term from noise on its own; a value very "
         "close to 1 with many terms may mean over-fitting. It says how well the model fits the sample, not how "
         "well it predicts unseen designs (see relative error).",
         f"{STARGAZER} §3; {LEE_BROOKS} §2.4.2 eq. 9, §2.5", ("r²", "r^2", "r squared", "coefficient of "
                                                                                       "determination"),
         ("adjr2", "relative-error")),
    Term("adjr2", "adjusted R² (adjr2)",
         "R² penalised for the number of coefficients: it rises only if a term helps more than a random column "
         "would.",
         "Adjusted R² = 1 − (1 − R²)(n − 1)/(n − p − 1) for n observations and p coefficients. Algorithm 1 ranks "
         "candidate terms by it and compares the best with the current model's R² (θ, φ). `--criterion adjr2` "
         "(the default) selects this rule; `--compare adj_r2` compares with the current adjusted R² instead.",
         f"{STARGAZER} §3, §5.2, §5.4", ("adjusted r2", "adjusted r²", "adj_r2", "adj r²", "adjusted r^2"),
         ("r2", "theta")),
    Term("criterion", "selection criterion (adjr2, AIC, BIC, F-test)",
         "The score that decides which candidate term enters: adjusted R² (the paper's), AIC, BIC or an F-test.",
         "Stargazer uses adjusted R² and notes that AIC or t/F tests can replace it without changing the "
         "algorithm. AIC and BIC trade fit against the number of coefficients (BIC more strictly); with them θ "
         "and φ are the required decrease. With ftest a block of coefficients enters when its p-value is below θ "
         "(φ).",
         f"{STARGAZER} §3, §5.4; {LEE_BROOKS} §2.4.2", ("aic", "bic", "ftest", "--criterion"),
         ("adjr2", "anova")),
    Term("rcs", "restricted cubic spline (natural cubic spline)",
         "A smooth piecewise cubic curve, linear beyond its outer knots, that lets a parameter act non-linearly.",
         "Between knots the curve is a cubic polynomial; at each knot the pieces join with matching first and "
         "second derivatives; before the first and after the last knot it is a straight line, which keeps "
         "predictions near the edges of the space tame. With k knots it costs k − 1 coefficients. Stargazer "
         "calls it a natural cubic spline; Lee & Brooks write it as rcs(x, k) following Harrell.",
         f"{LEE_BROOKS} §2.3 eq. 5; {STARGAZER} §5.3", ("natural cubic spline", "spline", "splines", "rcs(x, k)",
                                                        "restricted cubic splines"),
         ("knots",)),
    Term("knots", "knots",
         "Where a spline's cubic pieces meet; more knots bend more but over-fit sooner (--knots).",
         "gpudse's --knots K is Harrell's k, boundary knots included, so K = 3 … 5 matches Stargazer's '1 to 3 "
         "knots' of a natural spline. Placement 'even' spaces them from the minimum to the maximum value "
         "(Stargazer); 'quantile' puts them at Lee & Brooks' Table 1 quantiles (as R's rms::rcs). Parameters with "
         "few distinct values get fewer knots or a straight line.",
         f"{STARGAZER} §5.3; {LEE_BROOKS} §2.3, Table 1", ("knot", "--knots", "knot placement", "k knots"),
         ("rcs",)),
    Term("interaction", "interaction (a:b)",
         "A term whose effect depends on two parameters at once, written a:b (e.g. simd:blk).",
         "The model's prediction along one parameter then changes shape with the other. gpudse's default "
         "'restricted' form follows rms' %ia% (no product of two non-linear parts); 'full' multiplies both spline "
         "bases. Stargazer only considers pairwise interactions with parameters already in the model.",
         f"{STARGAZER} §3 eq. 1–2, §5.2; {LEE_BROOKS} §2.2", ("interactions", "a:b", "pairwise interaction", "%ia%",
                                                              "--interactions"), ("phi",)),
    Term("contribution", "contribution to R²",
         "How much R² rose when a term entered the model, in selection order (the stacked bars of Fig. 3).",
         "The heights add up to the final model's R². The first terms usually carry most of it; a long tail of "
         "small contributions is what θ and φ cut off.",
         f"{STARGAZER} §7.1, Fig. 3", ("contributions", "fig. 3", "r² contribution"), ("r2", "stepwise")),
    Term("transform", "response transform (log, sqrt)",
         "Fitting log(y) or √y instead of y, so errors are relative and the variance is steadier.",
         "Lee & Brooks' variance-stabilised model fits √y; run times that span orders of magnitude fit better on "
         "a log scale. Predictions are transformed back (without a smearing correction). auto (the stepwise "
         "model's default) fits each of log, sqrt and none and keeps the one with the lowest leave-one-out "
         "error.",
         f"{LEE_BROOKS} §2.1, §5.1 (model S)", ("log", "sqrt", "variance stabilising", "--transform"),
         ("bounded",)),
    Term("anova", "ANOVA table (F-tests)",
         "For each parameter (all its terms together), an F-test of whether it matters, as R's rms::anova.",
         "Rows group a parameter with its non-linear and interaction terms (Factor+Higher Order Factors), then "
         "the non-linear and interaction parts on their own, then totals. d.f. is the number of coefficients "
         "tested, partial SS their share of the sum of squares, F = MS / MS(error), and P its p-value. The ERROR "
         "row has no test (shown as –).",
         f"{LEE_BROOKS} §2.4.2 eq. 10, Table 5", ("f-test", "f test", "rms::anova", "table 5", "partial ss"),
         ("p-value",)),
    Term("p-value", "p-value",
         "The probability of a test statistic at least this extreme if the term had no effect; small means the "
         "effect is real.",
         "gpudse shows p-values with three decimals and anything below 0.001 as '< 0.001'. A p-value is about "
         "evidence of an effect, not its size: with many samples tiny effects are 'significant'.",
         f"{LEE_BROOKS} §2.4.1", ("p", "pvalue", "p value", "significance"), ("anova",)),
    Term("residuals", "residuals",
         "Observed minus fitted response (on the transformed scale); they should look like structureless noise.",
         "Plotted against the fitted values and against each parameter they should show no trend and an even "
         "spread; a Q-Q plot checks that they are roughly normal. Patterns mean the model misses a non-linearity "
         "or interaction.",
         f"{LEE_BROOKS} §2.5 eq. 11", ("residual", "residual plot"), ("qq",)),
    Term("qq", "normal Q-Q plot",
         "Sorted residuals against normal quantiles: a straight line means normally distributed residuals.",
         "gpudse draws the line through the first and third quartiles, as Lee & Brooks do; bends at the ends show "
         "heavy tails or skew, which a response transform may remove.",
         f"{LEE_BROOKS} §2.5, Fig. 8", ("q-q", "qq plot", "quantile-quantile"), ("residuals", "transform")),
    Term("spearman", "Spearman ρ² (rho²)",
         "How strongly a parameter is associated with the response, allowing non-monotone shapes (0 to 1).",
         "The squared rank correlation, generalised (Hmisc's spearman2 with p = 2) so that a U-shaped effect "
         "counts. Parameters with a high ρ² deserve more knots; it also measures how alike two predictors are in "
         "variable clustering.",
         f"{LEE_BROOKS} §4.2.1, §4.2.3, Fig. 6", ("ρ²", "rho2", "rho²", "spearman rho", "spearman2"), ("varclus",)),
    Term("varclus", "variable clustering (varclus)",
         "A tree that joins predictors by similarity (Spearman ρ²); tightly joined predictors carry the same "
         "information.",
         "Hmisc's varclus: hierarchical clustering on 1 − ρ². When there are many predictors for few "
         "observations, keeping one predictor per tight cluster avoids over-fitting.",
         f"{LEE_BROOKS} §4.2.1, Fig. 1", ("variable clustering", "dendrogram", "hmisc varclus"), ("spearman",)),
    Term("relative-error", "relative error",
         "|predicted − simulated| / simulated for a design the model was not trained on, in per cent.",
         "The accuracy that matters to a designer. Stargazer reports the mean, 75th and 98th percentile and "
         "maximum over 200 unseen designs × 5 repeats; Lee & Brooks the quartiles and the error CDF.",
         f"{STARGAZER} §7.3; {LEE_BROOKS} §5.2, Table 6", ("error", "prediction error", "percentage error",
                                                          "true error"), ("error-cdf", "sample-train-test")),
    Term("error-cdf", "error CDF",
         "For each error size, the fraction of predictions at or below it; the higher and further left, the "
         "better.",
         "Lee & Brooks argue the whole distribution says more than a mean or median: e.g. '90 % of predictions "
         "within 15 %'. Errors that are not finite count in the denominator, so such a curve ends below 100 %.",
         f"{LEE_BROOKS} §5.2, Figs. 9, 12", ("cdf", "empirical cdf", "ecdf"), ("relative-error",)),
    Term("sample-train-test", "sample-train-test validation",
         "Train on N sampled designs, predict a disjoint test set, repeat, and pool the relative errors.",
         "Stargazer draws N = 30, 60, …, 300 training points and 200 test points from 500 simulated designs, "
         "five times each, to show how accuracy grows with N (Figs. 5 and 6).",
         f"{STARGAZER} §7.3, Figs. 5–6", ("validation", "train sizes", "--train-sizes", "--test-size"),
         ("relative-error", "fixed-factor")),
    Term("fixed-factor", "fixed-factor model",
         "A model with three hand-picked terms (simd, #blk, simd:#blk) instead of a search: the baseline "
         "Stargazer beats.",
         "It stands for a designer who already knows the top factors; Stargazer's automated search is never "
         "worse than it (Fig. 6).",
         f"{STARGAZER} §7.4, Fig. 6", ("fixed", "fixed three-factor", "fixed factor"), ("stepwise",)),
    Term("s+r", "S+R (regional model)",
         "Lee & Brooks' regional model: for each query, refit on the training designs nearest to it.",
         "Nearness is the relative Euclidean distance between parameter vectors, d = √Σ(1 − b_i/a_i)² (the "
         "printed formula is garbled; this is gpudse's reading). The region size r is a share of the sample.",
         f"{LEE_BROOKS} §5.1, Table 6", ("s+r", "regional", "regional model", "region size"), ("s+a",)),
    Term("s+a", "S+A (application-specific model)",
         "Lee & Brooks' application-specific model: one model per benchmark instead of one for all.",
         "Each application's designs are fitted on their own, so application-specific behaviour does not blur "
         "into a pooled model; Lee & Brooks found these the most accurate (median error 4–11 %).",
         f"{LEE_BROOKS} §5.1–5.2, Table 6", ("s+a", "application-specific", "application model", "per-application"),
         ("s+r",)),
    Term("extrapolation", "extrapolation (outside the training support)",
         "A prediction for a design outside what the model was trained on: a value beyond the sampled range, or "
         "an interaction level combination never seen.",
         "Splines are only anchored where there is data; beyond it the prediction follows the linear tails and "
         "can be far off. gpudse flags such predictions (an 'extrapolation' column saying why) rather than "
         "presenting them like the rest. (Zatel's 'extrapolation' is different: scaling a group's metric from "
         "the traced fraction of pixels to all of them, §III-G.)",
         f"{LEE_BROOKS} §2.6; {ZATEL} §III-G; {GPUDSE}'s guarded predictions",
         ("extrapolated", "support", "training support"),
         ("bounded",)),
    Term("robust-fit", "robust fit (Huber)",
         "The stepwise search rerun on Huber pseudo-observations, so a few very slow designs do not decide the terms.",
         "Least squares lets a handful of pathological designs (a tuning space's 30× slower cells) choose terms and "
         "pull every coefficient. The default fit clips each residual at the residuals' typical size (the MAD "
         "scale), reruns the search on the fitted values plus the clipped residuals three times, and keeps a "
         "rerun's model only where it predicts the rows left out clearly better than least squares; then its "
         "coefficient table, ANOVA, R² and intervals are least squares on those pseudo-observations, and its "
         "residual plots show the data's residuals. 'least squares' (and the paper model) fit the data as they are.",
         "Huber (1981), Robust Statistics §7.8; " + GPUDSE, ("robust fit", "huber", "robust", "--robust",
                                                         "pseudo-observations"), ("stepwise", "bounded")),
    Term("level-cells", "level cells",
         "Columns for combinations of two or three parameter levels, such as tile_size_x=3 & use_shmem=1.",
         "After the search, each combination of two or three parameter levels is a candidate column, on parameters "
         "with at most 32 distinct values (one of more than 16 values also as a threshold, such as tpp>=18). It is 1 "
         "for the designs that have those levels and 0 for the rest, and "
         "it must hold for at least 8 training rows and fail for at least 8. "
         "A cell is added when its F-test passes at 0.05 divided by the number of candidates (Bonferroni). The "
         "cells are kept only if they predict the rows left out more than 2 % better. A cell joins the term of "
         "its parameters (tile_size_x:use_shmem) and shows as [tile_size_x=3] * [use_shmem=1] in the "
         "coefficient table and the equation. It catches a tuning space's corners that no smooth curve follows. "
         "The paper model has none.",
         "Friedman & Popescu (2008), Predictive learning via rule ensembles §2 (rules as 0/1 terms); "
         "gpudse's level cells",
         ("level cells", "cells", "--cells", "cell"), ("stepwise", "robust-fit")),
    Term("one-row-guard", "one-row guard",
         "An interaction term must pass its test without the one training row that carries most of its fit.",
         "A term whose columns reach one design almost alone fits that design whatever its value: on the A4000 a "
         "107 ms design alone in its combination of block height, tile height and cache, among 2–7 ms neighbours, "
         "brought in a three-way term that then predicted every design of that combination 10–30× too slow. The "
         "search therefore scores an interaction candidate once more without the drop in the residual sum of "
         "squares of its most helped row (the F-test on the rest); a real effect is carried by several rows and "
         "still passes. The fit's notes name each term held back and its row. The paper model has none.",
         GPUDSE + "'s stepwise search (a deletion check in the spirit of Belsley, Kuh & Welsch 1980)",
         ("one-row guard", "row guard", "--row-guard"), ("stepwise", "robust-fit")),
    Term("count-pairs", "count pairs",
         "Two count parameters tried together with their product, where neither passes alone.",
         "Where the stepwise search would stop because no parameter passes θ alone, each pair of count parameters "
         "(whole numbers ≥ 1, at least three values) is scored as one block, cu_per_sa + sa + cu_per_sa:sa, for "
         "a quantity that is their product (the total CU count of CUs per shader array × shader arrays). Off is "
         "Algorithm 1's reading: only interactions of parameters already chosen. The paper model has none.",
         GPUDSE + "'s stepwise search (docs/models.md, \"Products of counts and real corners\")",
         ("count pairs", "count-pairs", "--count-pairs"), ("stepwise", "interaction")),
    Term("forest-blend", "forest blend",
         "The default model's prediction: its equation blended with a forest where the training rows do not pin it "
         "down.",
         "A new design whose model columns take combinations the training rows do not span has a high leverage h "
         "(the variance of the equation's prediction in units of its residual variance), and the equation "
         "extrapolates there. The default model also fits a 100-tree random forest on the same rows and gives it "
         "the weight h / (c + h) at each design, c being the forest's out-of-bag error in units of the equation's "
         "residual variance (inverse-variance weighting of two forecasts). Where the rows pin the equation down "
         "its value stands. The equation, its terms, curves and trace are unchanged. Off: the equation alone. "
         "The paper model never blends.",
         GPUDSE + "'s default model (docs/models.md, \"Leverage-weighted forest\"; Bates & Granger 1969)",
         ("forest blend", "blend", "--blend", "leverage"), ("stepwise", "extrapolation")),
    Term("bounded", "bounded prediction",
         "A prediction clipped to the training response range (widened by a documented margin), and counted.",
         "On a log scale a model can return absurd values (1e27 cycles) far from the data; gpudse bounds "
         "predictions on the transformed scale by default and reports how many were bounded, never silently.",
         f"{GPUDSE}'s guarded predictions", ("bound", "clipped", "bounded predictions"),
         ("extrapolation", "transform")),
    Term("response-curve", "response curve",
         "The model's prediction along one parameter with the others held fixed, with a 95 % band.",
         "It is the spline the model fitted for that parameter (plus any interactions at the chosen values of "
         "the others): Stargazer's Fig. 7 compares the #blk curves of two applications to see which is more "
         "memory-bound. Only the marked legal values are real designs.",
         f"{STARGAZER} §8.2, Fig. 7", ("response curves", "fig. 7", "spline curve"), ("legal-values",)),
    Term("tail-effect", "tail effect (trimmed cycles)",
         "At the end of a kernel few blocks remain and most cores idle; on short runs this distorts the runtime.",
         "Stargazer weights the tail time by the share of cores actually busy ('trimming the tail'); gpudse's "
         "built-in simulator reports both cycles and cycles_trimmed.",
         f"{STARGAZER} §7.2, Fig. 4", ("tail", "trimmed", "cycles_trimmed", "tail trimming"), ()),
    Term("pareto", "Pareto front",
         "The designs no other design beats on both predicted response and cost at once.",
         "Moving along the front trades one for the other; every design off the front is worse than some design "
         "on it in both respects. gpudse computes it over every predicted design of the space against a cost "
         "column you choose. (Pareto-optimal pruning of GPU optimisation spaces is cited in 004's introduction.)",
         f"{WFG_PAPER} §1.3; {GPUDSE}'s Explore page", ("pareto-optimal", "pareto front", "front"), ()),
    Term("sensitivity", "one-at-a-time sensitivity",
         "How much the prediction changes when one parameter moves over its values, the others fixed.",
         "A quick reading of which parameters matter near a chosen design; interactions mean the answer changes "
         "with the design you start from.",
         f"cf. {LEE_BROOKS} §5.3; {GPUDSE}'s Explore page", ("one at a time", "sensitivity analysis"),
         ("response-curve",)),
    Term("k", "K (downscaling factor)",
         "Zatel splits the GPU and the image into K parts: K = gcd(#SMs, #memory partitions) (not a number of "
         "knots).",
         "Each of the K downscaled GPUs (SMs and memory partitions divided by K) traces one group of pixels in "
         "its own simulation, in parallel; e.g. 80 SMs and 10 memory controllers give K = 10 GPUs of 8 SMs and 1 "
         "partition.",
         f"{ZATEL} §III-C", ("downscaling factor", "gcd", "scaling factor"), ("division", "coldness")),
    Term("division", "fine- and coarse-grained division",
         "How the image plane is split into K groups: coarse = K big rectangles; fine = small chunks dealt out "
         "round-robin.",
         "Fine division (32×2-pixel chunks, a warp wide) gives every group a sample of the whole scene; coarse "
         "keeps neighbouring rays together (locality).",
         f"{ZATEL} §III-D, Figs. 5–7", ("fine", "coarse", "--division", "chunk"), ("k",)),
    Term("coldness", "coldness c",
         "How cool a heatmap colour is, from 0 (hottest, slowest pixels) to 1 (coldest), read from its hue.",
         "Zatel maps each quantised colour to c by its shifted hue. The share of pixels a group traces is its mean "
         "coldness, clamped to [0.3, 0.6] (eq. 1): cold groups need more pixels to keep the GPU busy.",
         f"{ZATEL} §III-E eq. 1", ("cold", "c_i", "temperature", "warmth", "heat"), ("lintmp-exptmp", "p-traced")),
    Term("p-traced", "P (share of pixels traced)",
         "The fraction of a group's pixels Zatel simulates: its mean coldness, between 0.3 and 0.6.",
         "Tracing fewer pixels shortens the simulation; the bound keeps every group's accuracy and speed-up "
         "similar. --percent fixes P instead.",
         f"{ZATEL} §III-E eq. 1", ("percent traced", "--percent", "--bounds", "pixel share"), ("coldness",)),
    Term("lintmp-exptmp", "lintmp / exptmp (pixel distributions)",
         "How Zatel chooses which colours the traced pixels have: uniform (as in the group), lintmp (weighted by "
         "warmth) or exptmp (warmth to the fifth power).",
         "Weighting by warmth (1 − c) favours slow pixels that stress the GPU (eq. 2); raising it to the fifth "
         "power amplifies that (eq. 3). Zatel's evaluation chose uniform for the reported metrics.",
         f"{ZATEL} §III-E eqs. 2–3, §IV-C",
         ("lintmp", "exptmp", "--distribution", "distribution", "pixel distribution"),
         ("coldness",)),
    Term("n-pe", "N_PE (number of processing elements)",
         "How many PEs (cores) the chip has; the equal-area model trades them against scratchpad memory.",
         "With a fixed die area, more PEs leave less room for on-chip memory; performance peaks at an optimum "
         "N_PE that depends on bandwidth and registers per thread (Fig. 18).",
         f"{DSE_REPORT} §5.1 Table 7, §5.2 eqs. 34–41, Fig. 18", ("n_pe", "npe", "pe", "pes", "opt n_pe"),
         ("equal-area",)),
    Term("equal-area", "equal-area model",
         "Performance of chips of the same area with different splits between PEs and scratchpad memory.",
         "It extends a scratchpad model (PE utilisation from threads, memory latency and bandwidth) with area "
         "costs of PEs, registers and memory, to find the best number of PEs for a budget.",
         f"{DSE_REPORT} §5.2, Tables 8–10, Fig. 18", ("equal area", "area model"), ("n-pe",)),
    Term("mwp-cwp", "MWP / CWP (memory and computation warp parallelism)",
         "MWP: how many warps can access memory at once; CWP: how many warps' computation fits in one memory "
         "wait.",
         "From Hong & Kim's analytical model, as summarised in the DSE report: if CWP > MWP the kernel is memory "
         "bound, if MWP > CWP compute bound; with too few active warps both are limited by them.",
         f"{DSE_REPORT} §3 (after Hong & Kim)", ("mwp", "cwp", "warp parallelism"), ("pwp",)),
    Term("pwp", "PWP (pipeline warp parallelism)",
         "How many warps per SM can be in the execution pipeline at once: pipeline latency / issue cycles.",
         "When fewer warps are active than PWP_full the pipeline latency is not hidden and compute cycles grow "
         "(eqs. 3–5), which Hong & Kim's model alone misses for small blocks.",
         f"{DSE_REPORT} §3.2 eqs. 3–5", ("pwp_full", "pipeline warp parallelism"), ("mwp-cwp",)),
    Term("launch-overhead", "kernel launch overhead",
         "The time to start a kernel, growing with its number of blocks and arguments.",
         "Measured and modelled as a per-kernel cost plus per-block and per-argument costs; it matters for short "
         "kernels.",
         f"{DSE_REPORT} §3.1 eq. 1, Table 4", ("launch", "overhead"), ()),
    Term("wfg", "work flow graph (WFG)",
         "A kernel's control-flow graph annotated with memory operations, barriers and compute blocks, whose "
         "longest weighted path estimates run time.",
         "Nodes are global (M) or scratchpad (S) memory operations, barriers (B) and runs of n computational "
         "instructions (C_n); data-dependence arcs link loads to their uses. Weights come from the hardware's "
         "latencies.",
         f"{WFG_PAPER} §2.1, Fig. 1", ("work flow graph", "workflow graph"), ()),
    Term("mgpusim", "MGPUSim",
         "A cycle-level simulator of AMD GCN3 GPUs in Go; gpudse runs it as a campaign backend "
         "(simulate --backend mgpusim, the mgpusim preset).",
         "Its GPU is assembled by builders (compute units per shader array, shader arrays, L2 size and banks, "
         "cache line, clock) and its benchmarks carry their compiled kernels, so it needs no vendor SDK. gpudse's "
         "default problem sizes launch at least 64 work-groups per kernel (the R9 Nano's 64 CUs), up to about 2 "
         "CPU minutes a point; kernel_time_s includes the PCIe launch round trip, kernel_exec_s is the kernels' "
         "execution alone, occupancy the resident wavefronts over the CUs' 40 slots, l1v_hit_rate and l2_hit_rate "
         "the caches' hits over all accesses, dram_bandwidth_gbs the DRAM traffic over kernel_exec_s. A suite "
         "(--benchmark matmul,fir) reports each benchmark's metrics and geomean_kernel_exec_s, their geometric "
         "mean.",
         f"{GPUDSE}'s MGPUSim backend (simulator: {MGPUSIM_PAPER})",
         ("mgpusim backend", "gcn3", "kernel_time_s", "kernel_cycles", "r9 nano", "kernel_exec_s", "occupancy",
          "geomean_kernel_exec_s"),
         ("design-space",)),
)

TERMS: dict[str, Term] = {t.key: t for t in _TERMS}


def _norm(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).strip().lower()
    return " ".join(t.replace("_", " ").replace("-", " ").split()) if t not in ("s+r", "s+a") else t


_INDEX: dict[str, str] = {}
for _t in _TERMS:
    for _name in (_t.key, _t.name, *_t.aliases):
        _INDEX.setdefault(_norm(_name), _t.key)
    _INDEX.setdefault(_norm(_t.name.split(" (")[0]), _t.key)


def find(text: str) -> Term | None:
    """The term named *text* (key, name or alias, any case; θ and 'theta' alike), or None."""
    key = _INDEX.get(_norm(text))
    return TERMS[key] if key else None


def lookup(text: str) -> Term:
    """Like :func:`find`, but an unknown term raises :class:`GlossaryError` with the closest names."""
    term = find(text)
    if term is not None:
        return term
    close = difflib.get_close_matches(_norm(text), list(_INDEX), n=5, cutoff=0.6)
    keys = list(dict.fromkeys(_INDEX[c] for c in close))[:3]
    hint = f"; did you mean {' or '.join(repr(k) for k in keys)}?" if keys else ""
    raise GlossaryError(f"{text!r} is not in the glossary{hint} Run `gpudse glossary` to list every term")


def search(query: str) -> list[Term]:
    """Terms whose name, aliases or explanations mention *query*."""
    q = _norm(query)
    return [t for t in _TERMS if q in _norm(" ".join((t.name, t.short, t.long, *t.aliases)))]


def help_text(key: str) -> str:
    """The one-line help for *key* (for ``st.…(help=…)`` and argparse), with its source."""
    return lookup(key).help()


def markdown(keys: list[str] | None = None) -> str:
    """The glossary (or the given terms) as Markdown, for a page or an expander."""
    terms = [lookup(k) for k in keys] if keys else list(_TERMS)
    return "\n\n".join(f"**{t.name}** — {t.short} {t.long} *({t.source})*" for t in terms)


def text(term: Term) -> str:
    """A term for the terminal: name, short line, explanation, source, related terms."""
    lines = [term.name, "", term.short, "", term.long, "", f"Source: {term.source}"]
    if term.see:
        lines.append("See also: " + ", ".join(TERMS[k].name for k in term.see if k in TERMS))
    return "\n".join(lines)
