"""hostile input's acceptance corpus (tests/hostile_corpus.py): every case through the CLI in its own
process — 0 tracebacks, 0 hangs over 30 s, 0 processes over 1 GB peak, 0 silently accepted wrong
results — and through the library functions the dashboard's uploaders call."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest
from bounded import bounded

import hostile_corpus as hc
import hostile_scenarios as hs
from conftest import ROOT

ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "MALLOC_ARENA_MAX": "2", "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}


@pytest.mark.slow
def test_corpus_covers_every_class_and_surface():
    cases = list(hc.cases())
    keys = [f"{c.surface}/{c.name}" for c in cases]
    assert len(keys) == len(set(keys)), "case names must be unique per surface"
    by_class = Counter(c.cls for c in cases)
    assert set(by_class) == set(hc.CLASSES) and min(by_class.values()) >= 10, by_class
    assert {c.surface for c in cases} == set(hc.SURFACES)
    for c in cases:
        assert c.expect in ("error", "flagged", "ok") and (c.expect == "ok" or c.pattern), c
        re.compile(c.pattern)
    # every class of shared-server faults has cases: files where a file carries it, scenarios otherwise
    by_concern = Counter(c.concern for c in cases if c.concern)
    assert set(by_concern) == set(hs.CONCERNS), by_concern
    assert set(hc.CONCERN_OF) <= set(keys), set(hc.CONCERN_OF) - set(keys)


def test_scenarios_are_data_and_their_checks_can_fail(tmp_path):
    """A scenario names operations of a fixed vocabulary (an unknown one is refused before anything
    runs); a step whose expectation is not met fails the case — it is not merely logged."""
    with pytest.raises(ValueError, match="unknown operation"):
        hs.check_doc({"concern": "lost-edit", "about": "x", "steps": [{"do": "__import__('os')"}]}, "bad.json")
    with pytest.raises(ValueError, match="only"):
        hs.check_doc({"concern": "lost-edit", "about": "x", "steps": [{"do": "files"}], "code": "1"}, "bad.json")
    ok = {"concern": "storage-fault", "about": "x", "steps": [
        {"do": "workspace", "as": "w", "space": "stargazer", "samples": 4},
        {"do": "open", "ws": "w", "as": "h"}, {"do": "save_version", "handle": "h", "stage": "samples", "as": "v"},
        {"do": "disk_full", "handle": "h"}]}
    meets = {**ok, "steps": ok["steps"] + [{"do": "set_samples", "handle": "h", "n": 3000, "error": "disk full"}]}
    wrong_message = {**ok, "steps": ok["steps"] + [{"do": "set_samples", "handle": "h", "n": 3000,
                                                    "error": "no such message"}]}
    no_error = {**ok, "steps": ok["steps"][:3] + [{"do": "set_samples", "handle": "h", "n": 3, "error": "disk full"}]}
    changed = {**ok, "steps": ok["steps"][:3] + [{"do": "digest", "of": "w", "as": "d"},
                                                 {"do": "set_samples", "handle": "h", "n": 3},
                                                 {"do": "unchanged", "of": "w", "as": "d"}]}
    prior = os.environ.get("GPUDSE_HOME")
    try:
        assert hs.run(meets, tmp_path / "a") == 0
        for i, doc in enumerate((wrong_message, no_error, changed)):
            assert hs.run(doc, tmp_path / f"b{i}") == 1, doc["steps"][-1]
    finally:
        os.environ.pop("GPUDSE_HOME", None) if prior is None else os.environ.__setitem__("GPUDSE_HOME", prior)


@pytest.mark.slow
def test_corpus_through_the_cli(tmp_path):
    """One forked process per case, started from an interpreter that has imported gpudse (the same
    ``main()`` as ``python -m gpudse_core``, without paying the imports 200 times)."""
    out = tmp_path / "records.json"
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "hostile_corpus.py"), "--run", str(out)], cwd=ROOT,
                       env=ENV, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    records = json.loads(out.read_text())
    assert len(records) == sum(1 for _ in hc.cases())
    failures = [f"{rec['key']} ({rec['cls']}): {v}\n    {(rec['stderr'] or rec['stdout'])[-400:]!r}"
                for rec in records if (v := hc.verdict(rec))]
    assert not failures, f"{len(failures)} of {len(records)} cases broke their contract:\n" + "\n".join(failures)
    assert max(rec["rss_mb"] for rec in records) < 1024 and not any(rec["timed_out"] for rec in records)
    assert not hc.MARKER.exists(), "a hostile input executed code"


@pytest.mark.parametrize("key", ["space/laughs-description-9x9", "space/fixed-7", "space/division-by-zero",
                                 "sample/fraction-1e-300", "results/duplicated-blk-csv", "results/constant-response",
                                 "wfg/inf-yaml", "table/table-deep"])
@pytest.mark.slow
def test_real_entry_point(key, tmp_path):
    """A sample of the corpus through ``python -m gpudse_core`` itself, in a fresh process."""
    case = next(c for c in hc.cases() if f"{c.surface}/{c.name}" == key)
    path = tmp_path / case.filename
    path.write_bytes(case.data)
    r = subprocess.run([sys.executable, "-m", "gpudse_core", *hc.cli_argv(case, path, tmp_path)], cwd=tmp_path,
                       env=ENV, capture_output=True, text=True, timeout=120)
    rec = {"key": key, "expect": case.expect, "pattern": case.pattern, "code": r.returncode, "stdout": r.stdout,
           "stderr": r.stderr, "rss_mb": 0, "timed_out": False}
    assert hc.verdict(rec) is None, (hc.verdict(rec), r.stderr[-2000:])


def uploader(case: hc.Case):
    """What the dashboard does with an upload of this case (the core calls behind each uploader)."""
    from gpudse_core.space.presets import load_preset, load_space_bytes

    if case.surface == "space":
        return load_space_bytes(case.data, case.filename)
    if case.surface == "results":
        from gpudse_core.sim.upload import read_upload, validate_results

        return validate_results(read_upload(case.data, case.filename), load_preset(case.space))
    if case.surface == "project":
        from gpudse_core.workspace.project import load_project

        return load_project(case.data, case.filename)
    if case.surface == "wfg":
        from gpudse_core.safeload import load_document
        from gpudse_core.sim.wfg import graph_view

        doc = load_document(case.data, case.filename)
        if not isinstance(doc, dict):
            from gpudse_core.sim.wfg import WFGError

            raise WFGError(f"{case.filename}: expected a mapping with 'hardware' and 'kernel'")
        return graph_view(doc)
    return None


@pytest.mark.slow
@bounded(mem_mb=4096, max_rss_mb=1024, timeout=900)
def test_corpus_through_the_uploaders():
    """The dashboard's uploaders raise our error (never another exception) exactly where the CLI
    does, with the same substance, and accept what it accepts; in one memory-capped process."""
    from gpudse_core.errors import GpudseError

    wrong = []
    for case in hc.cases():
        if case.surface not in ("space", "results", "project", "wfg"):
            continue
        try:
            result = uploader(case)
        except GpudseError as e:
            if case.expect != "error" or not re.search(case.pattern, str(e), re.S):
                wrong.append(f"{case.surface}/{case.name}: {str(e)[:300]}")
            continue
        if case.expect == "error":
            wrong.append(f"{case.surface}/{case.name}: accepted ({type(result).__name__})")
        elif case.surface == "results" and case.expect == "flagged":
            text = "; ".join(f"{p.kind}: {p}" for p in result.problems)
            if not re.search(case.pattern, text + f" kept {result.rows_kept} of {result.rows_in} rows", re.S):
                wrong.append(f"{case.surface}/{case.name}: not flagged ({text[:200]})")
        elif case.surface == "space" and case.expect == "flagged":
            if not result.notes:
                wrong.append(f"{case.surface}/{case.name}: no note")
    assert not wrong, "\n".join(wrong)
    assert not hc.MARKER.exists()
