"""The stepwise search's results are those of the golden fixture (tests/fixtures/stepwise_golden.json).

Every case of tests/stepwise_golden_cases.py (Stargazer Algorithm 1 and the robust default's layers on the R
reference cases, the authors' matrix-multiply data, the built-in kernels, the benchmark_hub tables and planted
structures) is refitted and compared with what the fixture recorded: the terms, the trace rows (Table 1: kinds,
candidates, decisions), the steps shown as the fit ran and the notes exactly, every number (coefficients, scores,
R²) to a relative 1e-9. A change of the model's results is made deliberately: regenerate the fixture
(tests/fixtures/make_stepwise_golden.py) and say why in the commit.
"""

from __future__ import annotations

import json
import math
import re

import pytest
import stepwise_golden_cases as golden

GOLDEN = json.loads(golden.FIXTURE.read_text())["cases"]
RTOL = 1e-9
ATOL = 1e-12


def same(got, want, where: str = "") -> None:
    """*got* equals *want*: the same keys, strings, flags and whole numbers, floats to RTOL."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for k in want:
            same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(got, bool) and isinstance(got, (int, float)):
        assert math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL), f"{where}: {got!r} != {want!r}"
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r} != {want!r}"


# A figure below 1e-8 in a note is rounding noise (a noise-free fit's leave-one-out error, say): its digits
# depend on the BLAS build, so notes compare with such figures reduced to "~0".
_NOISE = re.compile(r"\d+(?:\.\d+)?e-(?:0*(?:[89]|[1-9]\d+))")


def noise_free(notes: list[str]) -> list[str]:
    return [_NOISE.sub("~0", n) for n in notes]


CASES = list(golden.cases())


def test_every_case_is_in_the_fixture():
    assert sorted(name for name, *_ in CASES) == sorted(GOLDEN)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refit_equals_the_golden_fit(case, request):
    name, data, response, settings, needs_shared = case
    if needs_shared:
        request.getfixturevalue("shared")  # skips with a reason when ../shared is absent
    want = GOLDEN[name]
    got = json.loads(json.dumps(golden.fit(data(), response, settings), sort_keys=True))
    if "error" in want:
        assert got == want
        return
    assert got["terms"] == want["terms"]
    assert [r["kind"] for r in got["trace"]] == [r["kind"] for r in want["trace"]]
    assert noise_free(got["notes"]) == noise_free(want["notes"])
    got["notes"] = want["notes"]
    assert [r[:5] for r in got["shown"]] == [r[:5] for r in want["shown"]]
    same(got, want, name)
