"""The headline accuracy of a fit: an out-of-sample error, and whether the fit merely interpolates.

R² measures a fit on the very rows it was fitted on; a model with enough columns reaches R² ≈ 1 on
noise-free results whatever it does between them (Lee & Brooks §2.5 judge a model by its errors on
held-out points; Stargazer §7.3 by sample-train-test). So a fit is headed by an *out-of-sample*
error, labelled with where it comes from:

* **leave-one-out** (stepwise models): each row predicted by the least-squares fit without it, exact
  from the hat matrix (PRESS residuals ``r_i / (1 − h_ii)``), back on the response scale and
  compared relatively (the same relative error as validation);
* **validation**: the median error of the fitted kind at the largest training size of a current
  sample-train-test run (what learners, which have no hat matrix, are headed by).

:func:`interpolation_note` is the one place that decides a fit *interpolates* (noise-free results,
a near-saturated design): then ANOVA's F statistics, the leave-one-out error and residual plots are
numerical noise, and pages and the report show the note instead of them. The rule guarantees that
a fit not called interpolating has every ANOVA F at most ``F_LIMIT``: a partial F is at most
``SST/σ̂² = (n − p)/(1 − R²)``.

:func:`fit_r2` is the one R² a fit is quoted by: the data's, on the response scale the model fits
(``log(time_ms)``). A Huber fit's coefficient table and ANOVA are least squares on its
pseudo-observations (Huber 1981, §7.8), whose R² is higher (their outlying rows are clipped); that
figure is given only as a secondary note, so a reader never quotes it as the fit's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

R2_SATURATED = 1e-9  # 1 − R² below this: the fit reproduces its rows (noise-free results)
LOO_ZERO = 1e-5  # median leave-one-out relative error below 0.001 %: no measurement noise is that small
F_LIMIT = 1e12  # an F statistic above this is numerical noise, never a test
LEVERAGE_ONE = 1 - 1e-9  # a row with h_ii this close to 1 is fitted exactly: no leave-one-out prediction


@dataclass(frozen=True)
class Headline:
    """The number a fit is introduced by: ``value`` (a relative error, a fraction) from ``source``
    ("leave-one-out", "validation" or "none"), and the interpolation note when there is one."""

    source: str
    value: float | None
    interpolates: bool = False  # in-sample statistics mean nothing: the fit interpolates, or the results are noise-free
    note: str | None = None  # why R², F-tests and residual plots are not shown (interpolates is then True)
    detail: str = ""  # e.g. "median over 300 rows", "at N = 150"

    @property
    def label(self) -> str:
        return {"leave-one-out": "Leave-one-out error (median)", "validation": "Validation error (median)"}.get(
            self.source, "Out-of-sample error")

    def text(self, short: bool = False) -> str:
        """One line for a caption, the sidebar or the report."""
        from ..fmt import fmt_percent

        if self.value is None and self.interpolates:
            return "interpolates (noise-free results): judge it on held-out points" if not short else "interpolates"
        if self.value is None:
            return "no out-of-sample error yet (validate on the Accuracy page)" if not short else "not validated"
        name = {"leave-one-out": "leave-one-out", "validation": "validation"}.get(self.source, self.source)
        detail = f", {self.detail}" if self.detail else ""
        return f"{name} error {fmt_percent(self.value)}" + ("" if short else f" (median{detail})")


def loo_errors(model: Any, data: Any) -> np.ndarray:
    """Leave-one-out relative errors of a stepwise model on its training *data* (response scale);
    a row the fit reproduces whatever its value (leverage 1) gets +inf."""
    from .fitted import column_basis, inverse_transform
    from .inference import _response, design_matrix
    from .threads import limited

    z = _response(model, data)
    keep = np.isfinite(z)  # rows without a usable response were not fitted either
    if not keep.all():
        data, z = data[keep], z[keep]
    A = design_matrix(model, data)
    with limited():  # the fit's BLAS threads (model/threads.py): unlimited, this one SVD span 0.1–0.2 s of CPU
        q = column_basis(A)
    h = np.einsum("ij,ij->i", q, q)
    resid = z - q @ (q.T @ z)
    with np.errstate(divide="ignore", invalid="ignore"):
        z_loo = np.where(h < LEVERAGE_ONE, z - resid / (1 - h), np.nan)
        y = np.asarray(data[model.response], dtype=float)
        pred = inverse_transform(z_loo, model.transform)
        err = np.abs(pred - y) / np.abs(y)
    return np.where(np.isfinite(err), err, np.inf)


def interpolation_note(r2: float | None, n: int, n_coef: int, loo_median: float | None = None) -> str | None:
    """The note saying a fit interpolates its data, or None (see the module docstring for the rule)."""
    from ..fmt import fmt_count, fmt_number, fmt_percent

    if r2 is None or not np.isfinite(r2):
        return None
    gap = 1.0 - float(r2)
    dof = max(int(n) - int(n_coef), 1)
    why = None
    if gap <= max(R2_SATURATED, dof / F_LIMIT):
        why = f"it reproduces its {fmt_count(n, 'rows')} (1 − R² = {fmt_number(gap, None, 2)})"
    elif loo_median is not None and loo_median < LOO_ZERO:
        why = f"even left out, the median row is predicted to within {fmt_percent(loo_median)}"
    if why is None:
        return None
    return (f"This fit interpolates: {why}, as noise-free results allow. R², the ANOVA F-tests, the "
            "leave-one-out error and residual plots are numerical noise here and are not shown; judge the "
            "model on held-out designs (validation, or the true error over the space with the built-in "
            "simulator), or simulate with measurement noise.")


def validation_median(validation: Any, kind: str) -> tuple[float | None, str]:
    """The median error of model *kind* at the largest training size of a validation, with that size."""
    if validation is None:
        return None, ""
    errs = getattr(validation, "errors", {}).get(kind) or {}
    sizes = [n for n in errs if np.asarray(errs[n]).size]
    if not sizes:
        return None, ""
    n = max(sizes)
    e = np.asarray(errs[n], dtype=float)
    return float(np.median(np.where(np.isnan(e), np.inf, e))), f"at N = {n:,}"


NOISE_FREE = ("These results are noise-free (simulated without measurement noise), so the fit is judged on "
              "points it has not seen only: R², the ANOVA F-tests and residual plots would describe how a smooth "
              "model misses a deterministic function, not measurement noise, and are not shown.")


def fit_headline(model: Any, data: Any, validation: Any = None, noise_free: bool = False) -> Headline:
    """The headline of a fitted *model* on its training *data*; *validation* (a current
    ValidationResult for this model, optional) heads learners and interpolating fits. *noise_free*:
    the results are known to carry no measurement noise (the built-in simulator at noise 0); their
    in-sample statistics are then set aside like an interpolating fit's, the leave-one-out error kept."""
    kind = getattr(model, "kind", "stepwise")  # learners and stepwise models name their kind
    val, at = validation_median(validation, "stepwise" if kind == "stepwise" else kind)
    if not hasattr(model, "bases") or not hasattr(model, "r2"):  # a learner: no hat matrix
        return Headline("validation" if val is not None else "none", val, detail=at)
    loo = loo_errors(model, data) if data is not None and len(data) else np.zeros(0)
    med = float(np.median(loo)) if loo.size else None
    note = interpolation_note(model.r2, model.n, len(model.coefficients), med)
    if note is not None:
        return Headline("validation" if val is not None else "none", val, True, note, at)
    if noise_free:
        return Headline("leave-one-out", med, True, NOISE_FREE, f"over {loo.size:,} rows")
    return Headline("leave-one-out", med, detail=f"over {loo.size:,} rows")


@dataclass(frozen=True)
class FitR2:
    """R² and adjusted R² of a stepwise fit on its training rows, on the response scale it fits (``scale``,
    e.g. ``log(time_ms)``); ``pseudo``: a Huber fit's (R², adjusted R²) of its pseudo-observations."""

    r2: float
    adj_r2: float
    scale: str
    pseudo: tuple[float, float] | None = None

    def text(self) -> str:
        """One line: the data's R² first, the pseudo-observations' as a parenthetical note."""
        from ..fmt import fmt_r2

        out = f"R² {fmt_r2(self.r2)}, adj R² {fmt_r2(self.adj_r2)} of {self.scale} on the training rows"
        if self.pseudo is not None:
            out += (f" (of its Huber pseudo-observations, which its coefficient table and ANOVA use: "
                    f"R² {fmt_r2(self.pseudo[0])})")
        return out

    def to_json_dict(self) -> dict:
        """``r2``/``adj_r2`` (the data's, as the fit is quoted), ``scale``, and for a Huber fit
        ``pseudo_r2``/``pseudo_adj_r2`` (its pseudo-observations')."""
        doc = {"r2": self.r2, "adj_r2": self.adj_r2, "r2_scale": self.scale}
        if self.pseudo is not None:
            doc.update(pseudo_r2=self.pseudo[0], pseudo_adj_r2=self.pseudo[1])
        return doc


def response_scale(model: Any) -> str:
    """The response as the model fits it: ``log(time_ms)``, ``sqrt(cycles)`` or ``cycles``."""
    t = getattr(model, "transform", "none")
    return str(model.response) if t in (None, "none") else f"{t}({model.response})"


def fit_r2(model: Any, data: Any) -> FitR2:
    """The data's R² of a stepwise *model* on its training *data*, on the model's response scale (for a
    least-squares fit the model's own R²; for a Huber fit, of its fitted values against the transformed data,
    with the pseudo-observations' R² as ``pseudo``). Adjusted with the design's column count."""
    import pandas as pd

    from .inference import design_matrix, transform_response

    robust = getattr(model, "robust", None)
    if not robust or data is None or model.response not in data.columns:
        return FitR2(float(model.r2), float(model.adj_r2), response_scale(model))
    y = pd.to_numeric(data[model.response], errors="coerce").to_numpy(float)
    keep = np.isfinite(y)
    z = transform_response(y[keep], model.transform, model.response)
    A = design_matrix(model, data[keep])
    fitted = A @ np.asarray(model.coefficients, dtype=float)
    rss, tss = float(np.sum((z - fitted) ** 2)), float(np.sum((z - z.mean()) ** 2))
    n, k = z.size, A.shape[1]
    r2 = 1.0 - rss / tss if tss > 0 else 0.0
    adj = 1.0 - (rss / (n - k)) / (tss / (n - 1)) if n > k and tss > 0 else float("nan")
    return FitR2(r2, adj, response_scale(model), (float(model.r2), float(model.adj_r2)))

