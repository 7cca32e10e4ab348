"""The one renderer for user-supplied text (gpudse_core.report.plaintext): Markdown that reads as
typed (no image, link, autolink, emphasis, directive), chart labels without tags, and the figure
backstop that leaves no link in any chart. The real browser check is in test_browser_shared.py."""

from __future__ import annotations

import re

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from gpudse_core.report import figures, plaintext

HOSTILE = ["![x](http://127.0.0.1:9/leak.png)", "[click](javascript:alert(1))", "<img src=http://e/x>",
           "www.example.com", "http://e.example/x", ":red[alert] :material/home:", "**bold** _it_ `code`",
           "# heading", "$x^2$", "a\\b", "mail me: a@b.example", "WWW.EXAMPLE.COM", "<a href='http://e'>x</a>"]


def unescape(md: str) -> str:
    """CommonMark's reading of backslash escapes (§2.4): a backslash before ASCII punctuation is dropped."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", md)


def unescaped_active(md: str) -> list[str]:
    """Characters left that could start Markdown: code, emphasis, links, HTML, math, tables, headings,
    an emphasis underscore, a list marker at a line's start."""
    out, i = [], 0
    while i < len(md):
        if md[i] == "\\":
            i += 2
            continue
        ch = md[i]
        before, after = md[i - 1:i], md[i + 1:i + 2]
        if ch in "`*~[]<>$|#" or (ch == "_" and not (before.isascii() and before.isalnum()
                                                       and after.isascii() and after.isalnum())):
            out.append(ch)
        elif ch in "-+=" and md[:i].split("\n")[-1].strip(" \t") == "":
            out.append(ch)
        elif ch in ".)" and re.fullmatch(r"[ \t]*\d+", md[:i].split("\n")[-1]):
            out.append(ch)
        i += 1
    return out


@given(st.text(max_size=200))
def test_markdown_reads_as_typed_and_leaves_nothing_active(text):
    md = plaintext.markdown(text)
    typed = text.replace("\r\n", "\n").replace("\r", "\n")
    assert unescape(md).replace(plaintext.WORD_JOINER, "") == typed.replace(plaintext.WORD_JOINER, "")
    assert unescaped_active(md) == []


def test_known_payloads_have_no_active_markdown():
    for text in HOSTILE:
        md = plaintext.markdown(text)
        assert "![" not in md and "<" not in md.replace("\\<", ""), md
        assert unescaped_active(md) == [], md
        # GFM finds autolink literals after escapes are read: none may survive that reading
        read = unescape(md)
        assert not re.search(r"https?://|www\.|\w@", read, re.I), read


def test_ordinary_names_stay_as_they_are():
    for name in ["lee-brooks", "blk_size", "random forest, 200 trees", "study.zip", "clock_mhz: 1400"]:
        assert plaintext.markdown(name) == name
    assert plaintext.markdown("1. first\n- second") == "1\\. first\n\\- second"


def test_chart_text_has_no_tag_plotly_would_interpret():
    s = plaintext.chart("<a href='http://e'>x</a> & <b>y</b>")
    assert "<" not in s and ">" not in s and s.startswith("&lt;a href=")


def test_no_figure_carries_a_link_from_a_label_or_response_name():
    evil = "<a href='http://e.example/x'>simd</a>"
    curve = pd.DataFrame({"simd": [8, 16, 32], "predicted": [3.0, 2.0, 1.0], "lower": [2.5, 1.5, 0.5],
                          "upper": [3.5, 2.5, 1.5]})
    data = pd.DataFrame({"simd": [8, 16, 32], evil: [3.1, 2.1, 0.9]})
    fig = figures.response_curve(curve, "simd", evil, evil, data)
    text = fig.to_json()
    assert not re.search(r"<\s*/?\s*a[\s>/]", text.replace("\\u003c", "<"), re.I), "a link tag survived"
    assert "&lt;a href=" in text  # shown as the characters typed
