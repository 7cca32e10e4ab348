"""A fitted stepwise model's summary, laid out like statsmodels' ``OLS.summary()``.

:func:`summarize` (and :meth:`StepwiseModel.summary`) gives a typed :class:`Summary`: the model's
settings (response and its transform, least squares or Huber, the criterion, θ and φ of Stargazer
Algorithm 1, the knots, the interaction rule), the statistics (n, the model's and the residuals'
degrees of freedom, R², adjusted R², the out-of-sample error of :mod:`.headline` — leave-one-out
over the training rows — and the residual standard error), the coefficient table (estimate,
standard error, t, P>|t| and the 95 % interval: Lee & Brooks eqs. 6–7) and the ANOVA of Lee &
Brooks Table 5 (:func:`.inference.anova`). Its values are fields; ``str(summary)`` prints the
tables in statsmodels' layout (a title, ``=`` rules, two columns of ``name: value`` pairs, the
coefficients, then the ANOVA and numbered notes).

A fit that interpolates (or of noise-free results) has no noise to test against: its summary keeps
the coefficients but leaves out the standard errors, t-tests and the ANOVA, and says why in a note,
as the report and the fit page do. For a Huber fit the coefficient and ANOVA tables are those of its
pseudo-observations (what the coefficients are least squares on), and a note says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

WIDTH = 78  # statsmodels' summary width
COEF_COLUMNS = ("coef", "std err", "t", "P>|t|", "[0.025", "0.975]")
ANOVA_COLUMNS = ("d.f.", "Partial SS", "MS", "F", "P")


@dataclass(frozen=True)
class Summary:
    """The summary of a fitted stepwise model (see the module docstring). ``coefficients`` has the
    columns ``column, coef, std_err, t, p, lower, upper`` (the last five None when the fit
    interpolates); ``anova`` is :func:`.inference.anova`'s table or None; ``headline`` the
    out-of-sample error (:class:`.headline.Headline`)."""

    title: str
    response: str
    transform: str
    settings: tuple[tuple[str, str], ...]
    n: int
    df_model: int
    df_resid: int
    r2: float
    adj_r2: float
    headline: Any
    sigma: float | None
    coefficients: Any  # pandas.DataFrame
    anova: Any = None  # pandas.DataFrame | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    pseudo_r2: float | None = None  # a Huber fit: R² of its pseudo-observations (r2 is the data's, headline.fit_r2)

    @property
    def tests_shown(self) -> bool:
        """False when the fit interpolates: no standard errors, t-tests or ANOVA."""
        return self.anova is not None

    def statistics(self) -> tuple[tuple[str, str], ...]:
        """The right-hand column of the header: counts, R², the out-of-sample error, σ."""
        from ..fmt import fmt_count, fmt_number, fmt_percent, fmt_r2

        h = self.headline
        oos = "–" if h is None or h.value is None else fmt_percent(h.value)
        label = {"leave-one-out": "LOO error (median):", "validation": "Validation error (median):"}.get(
            getattr(h, "source", ""), "Out-of-sample error:")
        rows = [("No. Observations:", fmt_count(self.n)), ("Df Model:", fmt_count(self.df_model)),
                ("Df Residuals:", fmt_count(self.df_resid))]
        if self.tests_shown:
            rows += [("R-squared:", fmt_r2(self.r2)), ("Adj. R-squared:", fmt_r2(self.adj_r2))]
            if self.pseudo_r2 is not None:
                rows.append(("Pseudo-obs. R-sq.:", fmt_r2(self.pseudo_r2)))
        rows.append((label, oos))
        if self.sigma is not None and self.tests_shown:
            rows.append(("Residual std. err.:", fmt_number(self.sigma)))
        return tuple(rows)

    def coefficient_rows(self) -> list[tuple[str, ...]]:
        """The coefficient table's rows as text: four decimals, P>|t| to three (``0.000``) as statsmodels."""
        return [(str(r.column), _num(r.coef), _num(r.std_err), _num(r.t), _p(r.p), _num(r.lower), _num(r.upper))
                for r in self.coefficients.itertuples(index=False)]

    def __str__(self) -> str:
        return render(self)


def render(s: Summary) -> str:
    """The summary as text, in statsmodels' layout: ``=`` rules as wide as the widest table (at least
    WIDTH columns), the header's two columns of ``name: value`` pairs, the tables, then the notes."""
    rows = s.coefficient_rows()
    name_w = max([len(r[0]) for r in rows] + [12])
    coef = [" " * name_w + "".join(f"{c:>11}" for c in COEF_COLUMNS)]
    coef += [f"{r[0]:<{name_w}}" + "".join(f"{c:>11}" for c in r[1:]) for r in rows]
    anova = []
    if s.anova is not None:
        fac_w = max([len(str(f)) for f in s.anova.factor] + [12])
        anova.append(" " * fac_w + "".join(f"{c:>13}" for c in ANOVA_COLUMNS))
        for r in s.anova.itertuples(index=False):
            f, p = ("", "") if _absent(r.F) else (_num(r.F, 2), _p(r.P))  # the ERROR row has no test
            cells = (str(int(r.df)), f"{r.partial_ss:.4g}", f"{r.ms:.4g}", f, p)
            anova.append((f"{r.factor!s:<{fac_w}}" + "".join(f"{c:>13}" for c in cells)).rstrip())
    width = max([WIDTH] + [len(x) for x in coef + anova])
    rule, thin = "=" * width, "-" * width
    lines = [s.title.center(width).rstrip(), rule]
    left, right = list(s.settings), list(s.statistics())
    half = WIDTH // 2  # the header keeps statsmodels' width whatever the tables' widths
    for i in range(max(len(left), len(right))):
        a = _pair(left[i], half - 1) if i < len(left) else " " * (half - 1)
        b = _pair(right[i], WIDTH - half - 2) if i < len(right) else ""
        lines.append(f"{a}   {b}".rstrip())
    lines += [rule, coef[0], thin, *coef[1:], rule]
    if anova:
        lines += ["ANOVA (Lee & Brooks Table 5)", thin, *anova, rule]
    if s.notes:
        lines.append("Notes:")
        lines += [f"[{i}] {n}" for i, n in enumerate(s.notes, 1)]
    return "\n".join(lines)


def _absent(v: Any) -> bool:
    return v is None or math.isnan(float(v))


def _num(v: Any, decimals: int = 4) -> str:
    """A table cell: *decimals* decimals without separators (columns of statsmodels' tables), ``–`` if absent."""
    from ..fmt import fmt_fixed

    return "–" if _absent(v) else fmt_fixed(v, decimals).replace(",", "")


def _p(v: Any) -> str:
    """P>|t| or P as statsmodels prints it: three decimals, ``0.000`` below 0.0005; ``–`` when absent."""
    return "–" if _absent(v) else ("0.000" if v < 0.0005 else f"{v:.3f}")


def _pair(kv: tuple[str, str], width: int) -> str:
    """``Name:      value`` filling *width* (statsmodels' header cells), the value right-aligned."""
    k, v = kv
    gap = max(1, width - len(k) - len(v))
    return f"{k}{' ' * gap}{v}"


def summarize(model: Any, data: Any, validation: Any = None, noise_free: bool = False) -> Summary:
    """The :class:`Summary` of a fitted stepwise *model* on its training *data* (the out-of-sample
    error from :func:`.headline.fit_headline`, with *validation* and *noise_free* as there); its
    linear algebra (statsmodels' pseudo-inverse, the F-tests) on the fit's BLAS threads (.threads)."""
    from .threads import limited

    with limited():
        return _summarize(model, data, validation, noise_free)


def _summarize(model: Any, data: Any, validation: Any, noise_free: bool) -> Summary:
    import numpy as np
    import pandas as pd

    from ..errors import GpudseError
    from .headline import fit_headline, fit_r2
    from .inference import anova, ols_results

    if not hasattr(model, "bases"):
        raise GpudseError("a summary with coefficients and an ANOVA needs a stepwise spline model; this "
                          f"{type(model).__name__} has neither (see its validation instead)")
    head = fit_headline(model, data, validation, noise_free=noise_free)
    res = ols_results(model, data)
    k = len(model.coefficients)
    labels = list(res.params.index) if model.column_labels else ["Intercept", *model.column_labels]
    notes = []
    if head.interpolates:
        coef = pd.DataFrame({"column": labels, "coef": np.asarray(model.coefficients, dtype=float),
                             **{c: [None] * k for c in ("std_err", "t", "p", "lower", "upper")}})
        table, sigma = None, None
        notes.append(head.note or "the fit interpolates: standard errors and tests are not shown")
    else:
        ci = np.asarray(res.conf_int(0.05))
        coef = pd.DataFrame({"column": labels, "coef": res.params.to_numpy(), "std_err": res.bse.to_numpy(),
                             "t": res.tvalues.to_numpy(), "p": res.pvalues.to_numpy(), "lower": ci[:, 0],
                             "upper": ci[:, 1]})
        try:
            table = anova(model, data)
            if table.attrs.get("note"):  # a rank-deficient design: which rows test fewer constraints
                short = table[table["note"] != ""]
                notes.append(table.attrs["note"] + ": " + "; ".join(
                    f"{str(r.factor).strip()} ({r.note.split(':')[0]})" for r in short.itertuples(index=False)))
        except GpudseError as e:
            table = None
            notes.append(f"no ANOVA: {e}")
        sigma = float(np.sqrt(res.mse_resid))
    robust = getattr(model, "robust", None)
    r2 = fit_r2(model, data)
    if robust:
        notes.append("Huber fit: the coefficient table and the ANOVA are those of its pseudo-observations, "
                     "which the coefficients are least squares on; R-squared is the data's, Pseudo-obs. R-sq. "
                     "theirs")
    notes.append(f"on the {model.transform} scale of {model.response}" if model.transform != "none"
                 else f"on the scale of {model.response}")
    return Summary(title="Stepwise spline regression (Stargazer Algorithm 1) Results", response=model.response,
                   transform=model.transform, settings=_settings(model, robust), n=int(model.n),
                   df_model=k - 1, df_resid=int(model.n) - k, r2=r2.r2, adj_r2=r2.adj_r2,
                   pseudo_r2=r2.pseudo[0] if r2.pseudo else None, headline=head, sigma=sigma, coefficients=coef,
                   anova=table, notes=tuple(notes) + tuple(getattr(model, "notes", ()) or ()))


def _settings(model: Any, robust: Any) -> tuple[tuple[str, str], ...]:
    """The left-hand column of the header: what was fitted, and how."""
    s = model.settings or {}
    method = f"Huber (k = {robust['k']:g})" if robust else "Least Squares"
    rows = [("Dep. Variable:", str(model.response)), ("Transform:", str(model.transform)), ("Method:", method),
            ("Terms:", str(len(model.terms)))]
    if s:
        rows += [("Criterion:", str(s.get("criterion", "–"))),
                 ("θ, φ:", f"{s.get('theta', '–')}, {s.get('phi', '–')}"),
                 ("Knots:", f"{s.get('knots', '–')} ({s.get('knot_placement', '–')})"),
                 ("Interactions:", str(s.get("interactions", model.interactions)))]
    fb = getattr(model, "fallback", None)
    if fb is not None:  # predictions are not the equation's alone (model/fallback.py)
        rows.append(("Forest blend:", f"h / ({fb.c:.3g} + h)"))
    return tuple(rows)
