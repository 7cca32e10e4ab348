r"""User-supplied text shown as text: the one renderer for names, descriptions, labels, column and
file names wherever a page, a chart or a message shows them.

Text that came from a user (a workspace's name, a space's description, a parameter's label, a
response column, an uploaded file's name, an error message quoting any of those) is shared: a
read-only link shows it to other people. Rendered as Markdown it could make their browser fetch an
attacker's URL (``![x](http://…)`` becomes an ``<img>``; a link, an autolinked ``www.…``) or draw
coloured or iconic text. So:

* :func:`markdown` escapes with a backslash (CommonMark §2.4: escaped punctuation reads as itself)
  every character that can start Markdown — `` \\ ` * ~ [ ] < > $ | # ``, an ``_`` that could open
  emphasis, a list or underline marker at a line's start — which leaves no image, link, autolink,
  emphasis, heading, HTML, colour directive (``:red[…]``) or math in the text; the reader sees
  the characters typed, and the text keeps its commas, dots and hyphens unescaped. GFM's autolink literals
  (``http://…``, ``www.…``, ``a@b.c``) are
  found in the text *after* escapes are read (Streamlit turned an escaped ``http\://`` into a link in
  the browser test), so a word joiner (U+2060, invisible) goes before ``://``, after ``www`` and
  before ``@``. Our own Markdown around the text (``**Workspace** {name}``) is kept.
* :func:`chart` neutralises the tags Plotly would honour in a label (``<a href>`` links, ``<b>``,
  ``<span style>``…) by writing ``<`` and ``>`` as entities, which Plotly draws as the characters.
* :func:`neutralise_links` is the backstop applied to every figure by ``style.apply``: no ``<a>``
  tag survives in any title, label, legend entry or hover text, whoever built the figure.

The HTML report escapes with :func:`html.escape`; ``javascript:`` and raw HTML stay inert in all three.
"""

from __future__ import annotations

import re
from typing import Any

# what can start Markdown in a line: code, emphasis, strike, links and images, HTML and autolinks,
# math, tables, headings, hard breaks; "_" only where it can open or close emphasis (not in blk_size)
_ACTIVE = re.compile(r"([\\`*~\[\]<>$|#])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_START = re.compile(r"(?m)^([ \t]*)([-+=]|\d{1,9}(?=[.)]))")  # list items, setext underlines
WORD_JOINER = "\u2060"  # invisible, not a \w: splits what GFM's autolink transform looks for
_AUTOLINK = re.compile(r"(?<=[A-Za-z0-9])(?=://)|(?<=www)(?=\.)|(?=@)", re.I)
_LINK_TAG = re.compile(r"<(\s*/?\s*a)(?=[\s>/])", re.I)


def markdown(text: Any) -> str:
    """*text* for a Markdown context (st.markdown, st.caption, st.error, a widget label): read as typed."""
    s = str(text).replace("\r\n", "\n").replace("\r", "\n")
    s = _AUTOLINK.sub(WORD_JOINER, s)
    s = _ACTIVE.sub(lambda m: "\\" + m.group(0), s)
    return _LINE_START.sub(lambda m: m.group(1) + (m.group(2) + "\\" if m.group(2).isdigit() else "\\" + m.group(2)), s)


def chart(text: Any) -> str:
    """*text* for a Plotly label, title, legend entry or hover text: no tag Plotly would interpret."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _walk(obj: Any, found: list[bool]) -> Any:
    if isinstance(obj, str):
        if _LINK_TAG.search(obj):
            found.append(True)
            return _LINK_TAG.sub(r"&lt;\1", obj)
        return obj
    if isinstance(obj, dict):
        return {k: _walk(v, found) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_walk(v, found) for v in obj]
    if getattr(obj, "dtype", None) is not None and getattr(obj.dtype, "kind", "") in "OU":
        return [_walk(v, found) for v in obj.tolist()]
    return obj


def neutralise_links(fig: Any) -> Any:
    """Write every ``<a …>`` and ``</a>`` in *fig*'s texts as text (in place; returns *fig*)."""
    for tr in fig.data:
        found: list[bool] = []
        new = _walk(tr.to_plotly_json(), found)
        if found:
            new.pop("type", None)
            tr.update(new)
    layout = fig.layout.to_plotly_json()
    layout.pop("template", None)
    found = []
    new = _walk(layout, found)
    if found:
        fig.update_layout(new)
    return fig
