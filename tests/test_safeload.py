"""The one bounded reader of YAML/JSON/TOML (gpudse_core.safeload) and the limits module."""

from __future__ import annotations

import pytest
from bounded import bounded
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudse_core import limits
from gpudse_core.errors import GpudseError
from gpudse_core.safeload import DocumentError, load_document, load_json, load_toml, load_yaml


def laughs(levels: int = 9, width: int = 9) -> str:
    lines = ["description: x", 'l0: &l0 [' + ",".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_refused_while_small():
    with pytest.raises(DocumentError, match="expands to more than .* aliases are counted as expanded"):
        load_yaml(laughs(), "space.yaml")


def test_a_few_shared_aliases_are_fine():
    doc = load_yaml(laughs(levels=3, width=3), "space.yaml")
    assert len(doc["l2"]) == 3 and doc["l2"][0][0] == ["lol"] * 3


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "".join(" " * i + "a:\n" for i in range(500)),
                                  "a: &x [*x]"])
def test_deep_or_recursive_yaml_refused(text):
    with pytest.raises(DocumentError, match="nested|recursive"):
        load_yaml(text, "deep.yaml")


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000])
def test_deep_json_refused(text):
    with pytest.raises(DocumentError, match="nested more than 64 levels"):
        load_json(text, "deep.json")


def test_deep_json_brackets_inside_strings_do_not_count():
    assert load_json('{"a": "' + "[" * 1000 + '"}', "x.json") == {"a": "[" * 1000}


@pytest.mark.parametrize("loader,text", [(load_yaml, "a: " + "9" * 5000), (load_json, '{"a": ' + "1" * 5000 + "}"),
                                         (load_toml, "a = " + "1" * 5000)])
def test_huge_number_literals_refused(loader, text):
    with pytest.raises(DocumentError, match="more than 400 digits"):
        loader(text, "n")


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', "[-Infinity]"])
def test_json_non_numbers_refused(text):
    with pytest.raises(DocumentError, match="not a JSON number"):
        load_json(text, "m.json")


def test_yaml_tags_that_build_objects_refused():
    with pytest.raises(DocumentError, match="not valid YAML"):
        load_yaml("!!python/object/apply:os.system ['echo hi']", "evil.yaml")


def test_size_limit_before_parsing():
    with limits.override(document_bytes=100):
        with pytest.raises(limits.LimitError, match="document_bytes"):
            load_document("a: 1\n" * 100, "big.yaml")


def test_errors_name_the_line():
    with pytest.raises(DocumentError, match=r"^bad.yaml:3: not valid YAML"):
        load_yaml("a: 1\nb: 2\nc: x: y\n", "bad.yaml")
    with pytest.raises(DocumentError, match=r"^bad.json:2: malformed JSON"):
        load_json('{"a": 1,\n}', "bad.json")


def test_format_from_suffix():
    assert load_document('{"a": 1}', "x.json") == {"a": 1}
    assert load_document("a = 1", "x.toml") == {"a": 1}
    assert load_document("a: 1", "x.yml") == {"a": 1}


def test_limits_from_server_config(tmp_path, monkeypatch):
    cfg = tmp_path / "gpudse.toml"
    cfg.write_text("[limits]\nupload_bytes = 1234\n")
    monkeypatch.setenv(limits.CONFIG_ENV, str(cfg))
    assert limits.current().upload_bytes == 1234
    cfg.write_text("[limits]\nupload_bytes = nan\n")
    with pytest.raises(GpudseError, match="positive finite"):
        limits.current()
    cfg.write_text("[limits]\nno_such = 1\n")
    with pytest.raises(GpudseError, match="unknown limit"):
        limits.current()


@pytest.mark.parametrize("v", [float("nan"), float("inf"), 0, -1, "10", True, 1e9])
def test_timeouts_must_be_finite_positive_and_bounded(v):
    with pytest.raises(GpudseError):
        limits.finite_timeout(v, "timeout")


@pytest.mark.slow
@bounded(mem_mb=1536, max_rss_mb=1024, timeout=300)
@settings(max_examples=300)
@given(st.text(alphabet="[]{}:,-&*!ab1 \n\"'|>#%@`.\\", max_size=400))
def test_fuzz_every_format_our_error_or_plain_data(text):
    for fmt in ("yaml", "json", "toml"):
        try:
            load_document(text, "fuzz", fmt)
        except GpudseError:
            pass


def test_every_limit_is_documented():
    """Every limit's default is documented in the manual, docs/ (a new limit without a word fails here)."""
    import dataclasses

    from conftest import ROOT

    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
    missing = [f.name for f in dataclasses.fields(limits.Limits) if f"`{f.name}`" not in text]
    assert not missing, f"limits missing from docs/ (the table is in docs/limits.md): {missing}"


@pytest.mark.parametrize("load,text", [
    (load_json, '{"cells": "%s", "n": 1}'), (load_yaml, 'cells: "%s"\nn: 1\n'), (load_yaml, "cells: '%s'\nn: 1\n"),
    (load_toml, 'cells = "%s"\nn = 1\n')])
def test_a_long_run_of_digits_inside_a_quoted_string_is_text_not_a_number(load, text):
    """A stored model's bit-set cells ("000…0400…", hex digits that happen to be all decimal for 400+
    characters) made the file gpudse had just written unreadable ("a number with more than 400 digits")."""
    digits = "0" * 450 + "4" + "0" * 30
    assert load(text % digits, "m")["cells"] == digits
    with pytest.raises(DocumentError, match=r"m:2: a number with more than 400 digits.*number_digits"):
        load((text % "abc").replace("n = 1", "n = " + "9" * 450).replace("n: 1", "n: " + "9" * 450)
             .replace('"n": 1', '"n": ' + "9" * 450).replace(', "n"', ',\n"n"'), "m")
