"""``--model auto``: the model chosen by cross-validation on the training rows.

K-fold cross-validation (default 5 folds, shuffled with the seed) over the candidates of
:data:`gpudse_core.choices.AUTO_CANDIDATES`: the stepwise model with the paper's settings and with the
robust default, each with and without three-way interactions, the explainable boosting machine,
the random forest, gradient boosting and the hybrid. Every candidate sees the same folds. The score
is the mean relative error |ŷ − y| / |y| on the original scale of the guarded predictions of the
held-out rows (the figure the validation tables report). The lowest score wins; scores within
``TIE`` (2 %, relative) of the lowest count as a tie, which goes to the earliest candidate in the
list (simplest and most interpretable first), because cross-validation on a few hundred rows cannot
tell such scores apart. Measured on the built-in hotspot kernel (N = 300): forest 1.07 % against
boosting 1.06 % in cross-validation, 0.98 % against 1.25 % on 1,000 test points. The winner is refitted
on all rows and carries the table and the reason in its ``selection``. A candidate that cannot be
fitted on some fold is shown with the reason and not chosen.

No test data are used: only the rows given (in ``gpudse validate``, only the training draw).

Speed, without changing the choice: the candidates are cross-validated cheapest first (the stepwise
models, then forest, hybrid, boosting, EBM; the table keeps the list's order), and a learner is
stopped after any fold where it can no longer matter. Relative errors are non-negative, so the
errors of the folds done, summed and divided by all n rows, are a lower bound of its final mean;
once that bound exceeds both the lowest finished mean × (1 + ``TIE``) and the second-lowest
finished mean, the learner can be neither chosen, nor the lowest (which sets the tie band), nor the
runner-up the reason names. Its row says where it stopped and why. The stepwise models always run
to the end (the reason names the best of them). Measured on the built-in matMul kernel (300 rows,
10 parameters), where the EBM trails: it stops after 2 of 5 folds.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..choices import AUTO_CANDIDATES
from .learners import stepwise_settings
from ..jsonutil import plain_json
from .kinds import fit_kind, split_name
from .stepwise import FitError

MIN_FOLDS = 2
TIE = 0.02  # cross-validated errors within 2 % (relative) of the lowest are a tie
# order in which candidates are cross-validated (cheapest first, so that the slow learners meet a
# finished bar to be stopped by); measured CPU seconds for 5 folds of 300 × 10 rows: stepwise 0.5,
# forest 1.2, hybrid 3.7, boosting 3.8, EBM 4.4
COST_ORDER = {"stepwise": 0, "paper": 0, "forest": 1, "hybrid": 2, "boosting": 3, "ebm": 4}
STOPPED = "stopped after"  # how a note of a candidate that could no longer matter begins


@dataclass
class Selection:
    """The cross-validation table, the chosen candidate and why."""

    table: pd.DataFrame  # candidate, mean, median, p98, max, nonfinite, bounded, seconds, note
    chosen: str
    reason: str
    folds: int
    seed: int

    def to_dict(self) -> dict:
        rows = plain_json(self.table.to_dict("records"))
        return {"method": f"{self.folds}-fold cross-validation on the training rows", "chosen": self.chosen,
                "reason": self.reason, "folds": self.folds, "seed": self.seed, "table": rows}


def cross_validate(data: pd.DataFrame, response: str, params: Sequence[str], *, transform: str = "log",
                   folds: int = 5, seed: int = 0, candidates: Sequence[str] = AUTO_CANDIDATES,
                   stepwise_kw: Mapping[str, Any] | None = None,
                   progress: Callable[[int, int, str], Any] | None = None, stop_early: bool = True) -> pd.DataFrame:
    """One row per candidate: the pooled held-out relative errors' mean, median, p98 and max, the
    count of non-finite and bounded predictions, the seconds spent, and a note when it failed or
    (with *stop_early*) was stopped because it could no longer matter (see the module docstring)."""
    from sklearn.model_selection import KFold

    from .metrics import Cancelled, relative_errors, summarize

    for c in candidates:
        split_name(c)
        if c == "auto":
            raise FitError("auto cannot be one of its own candidates")
    n = len(data)
    if not isinstance(folds, int) or folds < MIN_FOLDS:
        raise FitError(f"cross-validation needs at least {MIN_FOLDS} folds (got {folds!r})")
    if n < 2 * folds:
        raise FitError(f"{n} rows are too few for {folds}-fold cross-validation; give at least {2 * folds} rows "
                       f"or fewer folds")
    data = data[list(params) + [response]].reset_index(drop=True)
    splits = list(KFold(folds, shuffle=True, random_state=seed).split(np.zeros(n)))
    y = data[response].to_numpy(float)
    rows: dict[str, dict] = {}
    total = len(candidates) * folds
    done = 0
    finished: list[float] = []  # means of the candidates cross-validated on every fold
    for name in sorted(candidates, key=lambda c: COST_ORDER.get(split_name(c)[0], 5)):
        base, order = split_name(name)
        t0 = time.perf_counter()
        errs, bounded, note = [], 0, ""
        prunable = stop_early and base not in ("stepwise", "paper")
        if base in ("stepwise", "paper") and stepwise_settings(base, order) is None:
            note = "Stargazer 1.0 tries pairs only"
            done += folds
        else:
            for k, (tr, te) in enumerate(splits):
                train, test = data.iloc[tr], data.iloc[te]
                try:
                    model = fit_kind(name, train, response, params, transform=transform, seed=seed,
                                      stepwise_kw=stepwise_kw if base == "stepwise" else None)
                    det = model.predict_details(test)  # guarded by the model's own bounds (on its own scale)
                except (FitError, ValueError, np.linalg.LinAlgError) as e:
                    note = f"fold {k + 1}: {e}"
                    done += folds - k
                    break
                errs.append(relative_errors(y[te], det["predicted"].to_numpy()))
                bounded += int(det["bounded"].sum())
                done += 1
                if progress is not None and progress(done, total, f"{name}, fold {k + 1}/{folds}") is False:
                    raise Cancelled("model selection cancelled")
                bar = _bar(finished)
                if prunable and k + 1 < folds and bar is not None:
                    e = np.concatenate(errs)
                    floor = float(np.sum(np.where(np.isnan(e), np.inf, e))) / n * (1 - 1e-9)
                    if floor > bar:
                        note = (f"{STOPPED} {k + 1} of {folds} folds: its mean error is already at least "
                                f"{100 * floor:.2f} %, above the tie band and the runner-up, so it cannot matter")
                        done += folds - k - 1
                        if progress is not None and progress(done, total, f"{name}: stopped") is False:
                            raise Cancelled("model selection cancelled")
                        break
        s = summarize(np.concatenate(errs)) if errs and not note else summarize([])
        if not note and math.isfinite(s["mean"]):
            finished.append(s["mean"])
        rows[name] = {"candidate": name, "mean": s["mean"], "median": s["median"], "p98": s["p98"], "max": s["max"],
                      "nonfinite": s["nonfinite"], "bounded": bounded, "seconds": time.perf_counter() - t0,
                      "note": note}
    return pd.DataFrame([rows[c] for c in candidates])


def _bar(finished: Sequence[float], tie: float = TIE) -> float | None:
    """The mean a candidate must exceed to matter no longer: above the lowest finished mean's tie
    band and above the second-lowest finished mean (None until two candidates have finished)."""
    if len(finished) < 2:
        return None
    m1, m2 = sorted(finished)[:2]
    return max(m1 * (1 + tie), m2)


def choose(table: pd.DataFrame, folds: int, tie: float = TIE) -> tuple[str, str]:
    """The candidate with the lowest cross-validated mean relative error (a tie, within *tie* of it,
    goes to the earliest in the table), and a sentence saying why."""
    ok = table[(table["note"] == "") & np.isfinite(table["mean"].to_numpy(float))]
    if ok.empty:
        raise FitError("no candidate model could be fitted on every fold: "
                       + "; ".join(f"{r.candidate}: {r.note}" for r in table.itertuples()))
    lowest = ok.loc[ok["mean"].idxmin()]
    best = ok[ok["mean"] <= lowest["mean"] * (1 + tie)].iloc[0]
    text = (f"picked {best.candidate}: lowest {folds}-fold cross-validated mean relative error "
            f"{100 * best['mean']:.2f} %")
    if best.candidate != lowest.candidate:
        text = (f"picked {best.candidate}: {folds}-fold cross-validated mean relative error "
                f"{100 * best['mean']:.2f} %, within {100 * tie:g} % of the lowest "
                f"({lowest.candidate} {100 * lowest['mean']:.2f} %), a tie that goes to the simpler model")
    else:
        rest = ok[ok["candidate"] != best.candidate]
        if not rest.empty:
            runner = rest.loc[rest["mean"].idxmin()]
            text += f" (next: {runner.candidate} {100 * runner['mean']:.2f} %)"
    interp = ok[ok["candidate"].map(lambda c: split_name(c)[0] in ("stepwise", "paper"))]
    if not interp.empty and best.candidate not in set(interp["candidate"]):
        i = interp.loc[interp["mean"].idxmin()]
        text += f"; the best interpretable model, {i.candidate}, has {100 * i['mean']:.2f} %"
    return str(best.candidate), text


def select_model(data: pd.DataFrame, response: str, params: Sequence[str] | None = None, *, transform: str = "log",
                 folds: int = 5, seed: int = 0, candidates: Sequence[str] = AUTO_CANDIDATES,
                 stepwise_kw: Mapping[str, Any] | None = None,
                 progress: Callable[[int, int, str], Any] | None = None) -> Any:
    """Cross-validate the candidates, refit the winner on every row; its ``selection`` says why."""
    from .kinds import check_response

    check_response(data, response)
    params = list(params) if params else [c for c in data.columns if c != response]
    table = cross_validate(data, response, params, transform=transform, folds=folds, seed=seed,
                           candidates=candidates, stepwise_kw=stepwise_kw, progress=progress)
    chosen, reason = choose(table, folds)
    base, _ = split_name(chosen)
    model = fit_kind(chosen, data, response, params, transform=transform, seed=seed,
                      stepwise_kw=stepwise_kw if base == "stepwise" else None)
    model.selection = Selection(table, chosen, reason, folds, seed).to_dict()
    return model
