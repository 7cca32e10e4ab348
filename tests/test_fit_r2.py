"""The R² a fit is quoted by (model.headline.fit_r2): the data's, on the response scale the model fits; a
Huber fit's pseudo-observations' R² (Huber 1981, §7.8) only as a secondary note, and leave-one-out figures
labelled mean (the search's scores) or median (the headline)."""

from __future__ import annotations

import re

import pytest

from gpudse_core.cli.model_cmds import final_line
from gpudse_core.model.headline import fit_r2
from gpudse_core.model.stepwise import StepwiseRegression
from gpudse_core.model.summary import summarize
from gpudse_core.report import trace
from tests.test_huber_fit import slow_cells


@pytest.fixture(scope="module")
def huber():
    train, _ = slow_cells(300, 2)
    return StepwiseRegression(response="y", cells=False, response_transform="auto").fit(train).model_, train


def test_a_huber_fit_is_quoted_by_the_datas_r2(huber):
    m, train = huber
    assert m.robust is not None
    r = fit_r2(m, train)
    # the robust fit's own note computes the data's R² independently (stepwise/robust.py); the slow rows the
    # pseudo-observations clip make theirs higher
    note = next(n for n in m.notes if n.startswith("robust fit:"))
    on_data = re.search(r"([0-9.]+) on the data", note).group(1)
    assert f"{r.r2:.4f}" == on_data
    assert r.pseudo == (pytest.approx(m.r2), pytest.approx(m.adj_r2)) and r.r2 < m.r2 - 0.05
    line = final_line(m, train).splitlines()[0]
    tail = line.split("; ", 2)[-1]
    assert tail.startswith(f"R² {r.r2:.4f}, adj R² ") and f"of {m.transform}(y) on the training rows" in tail
    assert tail.index("pseudo-observations") > tail.index(f"{r.r2:.4f}") and "(median, over 300 rows)" in line
    s = summarize(m, train)
    assert s.r2 == pytest.approx(r.r2) and s.pseudo_r2 == pytest.approx(m.r2)
    assert ("Pseudo-obs. R-sq.:", f"{m.r2:.4f}") in s.statistics()


def test_a_least_squares_fit_quotes_its_own_r2():
    train, _ = slow_cells(120, 3, slow=False)
    m = StepwiseRegression(response="y", robust="none", cells=False).fit(train).model_
    r = fit_r2(m, train)
    assert (r.r2, r.adj_r2, r.pseudo) == (m.r2, m.adj_r2, None) and r.scale == "y"
    assert "pseudo" not in final_line(m, train)


def test_the_searchs_leave_one_out_figures_say_mean(huber):
    m, train = huber
    rows = trace.build(m.trace, ["a", "b", "c", "inert1", "inert2"])
    first = rows.rows[0]
    assert first.kind == "transform" and trace.statistic_text(first).startswith("mean LOO error ")
    assert any("scale chosen by the mean leave-one-out error" in n for n in m.notes)


def test_fit_json_gives_the_datas_r2_and_the_pseudo_observations_apart(huber, tmp_path, capsys):
    """`gpudse fit --json` quotes the R² the last line quotes: a script reading ``r2`` gets the data's,
    and a Huber fit's pseudo-observations' R² only under its own name."""
    import json

    from gpudse_core.cli import main

    m, train = huber
    path = tmp_path / "slow.csv"
    train.to_csv(path, index=False)
    assert main(["fit", str(path), "--response", "y", "--params", "a,b,c,inert1,inert2", "--cells", "off",
                 "--transform", "auto", "-o", str(tmp_path / "m.json"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["robust"] is not None and doc["terms"] == m.terms  # the fit of the module's fixture
    assert doc["r2"] == pytest.approx(fit_r2(m, train).r2) and doc["pseudo_r2"] == pytest.approx(m.r2)
    assert doc["pseudo_r2"] > doc["r2"] + 0.05 and doc["r2_scale"] == f"{m.transform}(y)"
