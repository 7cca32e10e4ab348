"""The glossary: every term the dashboard uses is explained, with the paper section it comes from
(checked against the papers' headings), in gpudse's own words (no eight-word run copied from a paper), and the
`gpudse glossary` command shows it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from gpudse_core.cli import main
from gpudse_core.report import glossary
from gpudse_core.report.glossary import GlossaryError, TERMS, find, help_text, lookup

DASHBOARD_TERMS = ["θ", "theta", "φ", "phi", "adjusted R²", "adjr2", "knots", "restricted cubic spline", "S+R", "S+A",
               "coldness", "K", "lintmp", "exptmp", "N_PE", "MWP", "CWP", "PWP", "Pareto front", "extrapolation",
               "bounded prediction", "R²", "ANOVA", "p-value", "varclus", "Spearman ρ²", "error CDF"]
PAPERS = {"Stargazer": "000_", "Lee & Brooks": "003_", "Zatel": "002_", "Ye (2009)": "001_",
          "Baghsorkhi et al. (2010)": "004_"}


@pytest.mark.parametrize("name", DASHBOARD_TERMS)
def test_every_term_the_dashboard_uses_is_explained(name):
    t = lookup(name)
    assert t.short and t.long and t.source
    assert "\n" not in t.short and len(t.short) <= 160  # one line, for a tooltip
    assert help_text(name).endswith(f"({t.source})")


def test_terms_are_well_formed_and_aliases_unambiguous():
    for t in TERMS.values():
        assert re.search(r"§|gpudse's ", t.source) and "issue" not in t.source, t.key  # no internal tokens
        assert any(p in t.source for p in (*PAPERS, "gpudse")), t.key
        assert all(k in TERMS for k in t.see), t.key
        for alias in (t.key, t.name, *t.aliases):
            assert find(alias) is t, (t.key, alias)  # no alias silently resolves to another term
    assert find("THETA") is find("θ") is find(" theta ") is TERMS["theta"]
    assert find("k") is TERMS["k"] and find("knots") is TERMS["knots"]


def test_unknown_terms_get_suggestions():
    with pytest.raises(GlossaryError, match="did you mean 'coldness'"):
        lookup("colness")
    with pytest.raises(GlossaryError, match="gpudse glossary"):
        lookup("quantum flux")
    assert {"knots", "rcs"} <= {t.key for t in glossary.search("knot")}
    assert glossary.search("no such words anywhere") == []


def _sections(text: str) -> set[str]:
    heads = set()
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+(?:\.\d+)*)\.?\s+[A-Z]", line)
        if m:
            heads.add(m.group(1))
        m = re.match(r"^\s*([IVX]+)\.\s+[A-Z]", line)
        if m:
            heads.add(m.group(1))
        m = re.match(r"^\s*([A-H])\.\s+[A-Z]", line)
        if m:
            heads.add("letter " + m.group(1))
    return heads


def test_sections_exist_in_the_papers(shared):
    papers = {name: next((shared / "papers").glob(prefix + "*.txt")).read_text() for name, prefix in PAPERS.items()}
    heads = {name: _sections(text) for name, text in papers.items()}
    checked = 0
    for t in TERMS.values():
        for part in t.source.split(";"):
            paper = next((p for p in PAPERS if part.strip().startswith(p)), None)
            if paper is None:
                continue
            for sec in re.findall(r"§([0-9.]+|[IVX]+-[A-H])", part):
                if "-" in sec:
                    roman, letter = sec.split("-")
                    assert roman in heads[paper] and f"letter {letter}" in heads[paper], (t.key, part)
                else:
                    assert sec.rstrip(".") in heads[paper], (t.key, part, sec)
                checked += 1
    assert checked >= 40


def test_explanations_do_not_copy_the_papers(shared):
    def words(s: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", s.lower())

    shingles = set()
    for path in (shared / "papers").glob("*.txt"):
        w = words(path.read_text())
        shingles.update(tuple(w[i:i + 8]) for i in range(len(w) - 7))
    for t in TERMS.values():
        w = words(f"{t.short} {t.long}")
        copied = [" ".join(w[i:i + 8]) for i in range(len(w) - 7) if tuple(w[i:i + 8]) in shingles]
        assert not copied, (t.key, copied)


def test_cli_glossary(capsys):
    assert main(["glossary", "theta"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("θ (theta)") and "Source: Stargazer §5.2" in out
    assert main(["glossary", "restricted", "cubic", "spline"]) == 0
    assert "Lee & Brooks §2.3" in capsys.readouterr().out
    assert main(["glossary"]) == 0
    listing = capsys.readouterr().out
    assert all(t.name in listing for t in TERMS.values())
    assert main(["glossary", "coldness", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"].startswith("Zatel §III-E")
    assert main(["glossary", "--search", "warp", "--json"]) == 0
    assert {"mwp-cwp", "pwp"} <= {d["key"] for d in json.loads(capsys.readouterr().out)}
    assert main(["glossary", "colness"]) == 2
    assert "did you mean 'coldness'" in capsys.readouterr().err


def test_glossary_command_starts_light():
    code = ("import sys; from gpudse_core.cli import main; main(['glossary', 'theta']); "
            "print(sorted(m for m in ('numpy', 'pandas', 'plotly', 'scipy') if m in sys.modules), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr.strip().splitlines()[-1] == "[]", r.stderr
