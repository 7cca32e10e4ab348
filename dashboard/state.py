"""Which workspace a browser session works on, and whether it may change it.

The pipeline's data live in a :class:`gpudse_core.workspace.Workspace` (SQLite, versioned), never
in ``st.session_state``: the session only holds an open handle on it. The page's address carries
the workspace's id (``?ws=…``), so F5, a server restart or a copied link bring the same work back.
The edit key never goes into the address: the browser keeps it in a cookie per workspace
(``gpudse_k_<id>``, set by a one-line script, read back with ``st.context.cookies`` when the next
session starts), so a link sent to a colleague opens read-only, with "Make my own copy".

A first visit (no ``?ws``) opens the workspace this browser used last, or a new copy of the
built-in example: a template workspace holding the example's stages and its analyses (validation,
whole-space scan, true error) built once per ``$GPUDSE_HOME`` and code version, then forked, so
every page is filled at once and a new visitor costs a file copy. Each workspace this server makes
for a browser counts against that client's hourly budget, and a first visit's copy left unchanged
is deleted after a few idle days (:mod:`gpudse_core.workspace.visitors`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

import streamlit as st

from gpudse_core import GpudseError
from gpudse_core.atomicfile import pause_at
from gpudse_core.workspace import NotFound, Workspace, create_workspace, fill_example, home, open_workspace
from gpudse_core.workspace import upkeep, visitors

from . import work

HANDLE = "_gpudse_ws"  # session_state: the open Workspace
KEYS = "_gpudse_keys"  # session_state: {workspace id: edit key} learnt in this session
FORGOTTEN = "_gpudse_forgotten"  # session_state: ids whose key this session dropped (deleted)
COOKIES = "_gpudse_cookie_ops"  # session_state: cookie writes not yet sent to the browser
KEY_COOKIE = "gpudse_k_"  # + id: the edit key of one workspace
LAST_COOKIE = "gpudse_last"  # the workspace this browser opened last (an id: grants nothing)
COOKIE_AGE_S = 400 * 86400  # browsers cap cookie lifetimes at 400 days
EXAMPLE_NAME = "Built-in example"
TEMPLATE_FILE = "example-template.json"
ROOT = Path(__file__).resolve().parent


class Gone(GpudseError):
    """The address names a workspace that does not exist here."""


# ---- cookies ------------------------------------------------------------------------------------
def cookies() -> dict[str, str]:
    """The cookies the browser sent when this session started (none under AppTest)."""
    try:
        return dict(st.context.cookies)
    except Exception:  # noqa: BLE001 - no browser request behind this session (AppTest, bare mode)
        return {}


def held_keys() -> dict[str, str]:
    """{workspace id: edit key} this browser holds: its cookies plus what this session learnt."""
    gone = st.session_state.get(FORGOTTEN, set())
    keys = {k[len(KEY_COOKIE):]: v for k, v in cookies().items() if k.startswith(KEY_COOKIE) and v}
    keys.update(st.session_state.get(KEYS, {}))
    return {k: v for k, v in keys.items() if k not in gone}


def remember(ws_id: str, key: str) -> None:
    st.session_state.setdefault(KEYS, {})[ws_id] = key
    st.session_state.get(FORGOTTEN, set()).discard(ws_id)
    _cookie(KEY_COOKIE + ws_id, key)


def forget(ws_id: str) -> None:
    st.session_state.setdefault(KEYS, {}).pop(ws_id, None)
    st.session_state.setdefault(FORGOTTEN, set()).add(ws_id)
    _cookie(KEY_COOKIE + ws_id, None)


def _cookie(name: str, value: str | None) -> None:
    st.session_state.setdefault(COOKIES, {})[name] = value


def flush_cookies() -> None:
    """Send pending cookie writes to the browser (a script in an invisible element)."""
    ops = st.session_state.get(COOKIES)
    if not ops:
        return
    lines = []
    for name, value in ops.items():
        age = COOKIE_AGE_S if value is not None else 0
        text = json.dumps(f"{name}={value or ''}")
        lines.append(f"document.cookie = {text} + '; Max-Age={age}; Path=/; SameSite=Strict' + secure;")
    script = ("<script>(function(){var secure = location.protocol === 'https:' ? '; Secure' : '';"
              + "".join(lines) + "})();</script>")
    with st.sidebar:
        st.html(script, unsafe_allow_javascript=True, width=1)
    st.session_state[COOKIES] = {}


def client() -> str | None:
    """The client this session's new workspaces are counted against (None without a browser request)."""
    try:
        address = st.context.ip_address
        headers = dict(st.context.headers or {})
    except Exception:  # noqa: BLE001 - no browser request behind this session (AppTest, bare mode)
        return None
    return visitors.client_key(address, headers)


# ---- page state in the address -----------------------------------------------------------------------
# Besides the workspace (?ws=) and presentation mode (?present=1), the address carries what a page shows,
# so a copied link opens the same view: the page's tab (?tab=), the replay's row (?row=), Explore's
# settings (?goal=, ?top=, ?cost=). A value from the address is user input: a widget bound to it keeps
# only a legal one (Streamlit's bind="query-params" drops the rest from the address), a number out of
# range is clamped first, and a bad value is ignored — never a traceback.
RESERVED_PARAMS = frozenset({"ws", "present"})


def bound(key: str, default_arg: str | None = None, default: Any = None, *, lo: float | None = None,
          hi: float | None = None) -> dict[str, Any]:
    """Keyword arguments that keep a widget's value in the address under *key* (its session key too):
    ``st.slider("Top", 5, 100, **bound("top", "value", 20, lo=5, hi=100))``. *default_arg* names the
    widget's own default argument (value, index, default), given *default* unless a clamped number from
    the address already sits in the session (a widget must not get both)."""
    if key in RESERVED_PARAMS:
        raise ValueError(f"{key!r} is the address's own parameter")
    kw: dict[str, Any] = {"key": key, "bind": "query-params"}
    if (lo is not None or hi is not None) and key not in st.session_state:
        number = url_number(key, lo, hi)
        if number is not None and str(number) != st.query_params.get(key):  # out of range: clamped
            st.session_state[key] = number
            return kw
    if default_arg is not None:
        kw[default_arg] = default
    return kw


def url_number(key: str, lo: float | None = None, hi: float | None = None) -> int | None:
    """The whole number the address gives *key*, clamped to [lo, hi]; None when absent or not a number."""
    raw = st.query_params.get(key)
    try:
        value = float(str(raw).strip())
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value):
        return None
    value = round(value)
    if lo is not None:
        value = max(value, int(math.ceil(lo)))
    if hi is not None:
        value = min(value, int(math.floor(hi)))
    return int(value)


def to_url(key: str, value: Any, default: Any = None) -> None:
    """Keep *value* in the address under *key* (for state no widget holds, such as the replay's row);
    the default is left out, so a plain link stays plain."""
    if key in RESERVED_PARAMS:
        raise ValueError(f"{key!r} is the address's own parameter")
    if value is None or value == default:
        if key in st.query_params:
            st.query_params.pop(key, None)
    elif st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)


# ---- the session's workspace ------------------------------------------------------------------
def current() -> Workspace:
    """The session's workspace (bound by :func:`bind` at the top of every page)."""
    return st.session_state[HANDLE]


def bind() -> Workspace:
    """Open the workspace the address names (or this browser's last one, or a new copy of the
    example), keep it in the session and put its id in the address."""
    ss = st.session_state
    want = st.query_params.get("ws")
    ws: Workspace | None = ss.get(HANDLE)
    if ws is not None and want not in (None, ws.id):
        _close(ws)
        ws = None
    if ws is not None:
        try:
            _ = ws.revision  # still there (another tab may have deleted it)
        except GpudseError:
            _close(ws)
            ws = None
            if want:
                raise Gone("this workspace has been deleted") from None
    if ws is None:
        ws = _open(want) if want else _first_visit()
        ss[HANDLE] = ws
        visitors.seen(ws.id)
    if st.query_params.get("ws") != ws.id:
        st.query_params["ws"] = ws.id
    key = held_keys().get(ws.id)
    if ws.writable and key and cookies().get(KEY_COOKIE + ws.id) != key:
        _cookie(KEY_COOKIE + ws.id, key)  # again on every run until the browser is known to hold it
    _cookie(LAST_COOKIE, ws.id)
    if cookies().get(LAST_COOKIE) == ws.id:
        st.session_state[COOKIES].pop(LAST_COOKIE, None)
    return ws


def _close(ws: Workspace) -> None:
    with contextlib.suppress(Exception):  # already closed, or its file deleted
        ws.close()
    st.session_state.pop(HANDLE, None)


def _open(ws_id: str) -> Workspace:
    try:
        return open_workspace(ws_id, held_keys().get(ws_id))
    except NotFound as e:
        raise Gone(str(e)) from None


def _first_visit() -> Workspace:
    last = cookies().get(LAST_COOKIE)
    keys = held_keys()
    if last and last in keys:
        try:
            ws = open_workspace(last, keys[last])
            if ws.writable:
                return ws
            ws.close()
        except GpudseError:
            pass
    visitors.expire(keep=set(keys))
    return new_example(first_visit=True)


def switch_to(ws: Workspace, key: str | None = None) -> None:
    """Make *ws* the session's workspace (after a fork, a new workspace, or Open on Home)."""
    old = st.session_state.get(HANDLE)
    if old is not None and old is not ws:
        _close(old)
    if key:
        remember(ws.id, key)
    st.session_state[HANDLE] = ws
    st.query_params["ws"] = ws.id
    _cookie(LAST_COOKIE, ws.id)


def new_example(name: str = EXAMPLE_NAME, first_visit: bool = False) -> Workspace:
    """A new workspace holding the built-in example with its analyses, this browser its owner
    (refused with a LimitError when this client has had its hour's workspaces)."""
    who = client()
    visitors.admit(who)
    with st.spinner("Preparing the built-in example (the first time on this server takes a few seconds)…"):
        tpl = example_template()
        with open_workspace(tpl) as t:
            ws, key = t.fork(name, client=who)  # counted against this client while it is copied
    visitors.record(who, ws.id, ws.info().updated, expires=first_visit)
    remember(ws.id, key)
    return ws


def new_empty(name: str = "Untitled workspace") -> Workspace:
    who = client()
    visitors.admit(who)
    ws, key = create_workspace(name)
    visitors.record(who, ws.id, ws.info().updated, expires=False)
    remember(ws.id, key)
    return ws


def fork(ws: Workspace) -> Workspace:
    """This browser's own copy of *ws* (a read-only one included)."""
    who = client()
    visitors.admit(who)
    mine, key = ws.fork(f"{ws.name} (my copy)" if not ws.name.endswith("(my copy)") else ws.name, client=who)
    visitors.record(who, mine.id, mine.info().updated, expires=False)
    switch_to(mine, key)
    return mine


# ---- the built-in example's template ------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def _template_lock() -> threading.Lock:
    return threading.Lock()


def _code_digest() -> str:
    """The example depends on the code that computes it: a template built by other code is rebuilt."""
    h = hashlib.sha256()
    core = ROOT.parent / "gpudse_core"
    for rel in ("workspace/example.py", "model/stepwise", "model/splines.py", "model/validation.py",
                "sim/simulator.py", "explore/scan.py", "explore/results.py", "model/true_error.py",
                "explore/designs.py", "model/calibration.py", "model/intervals.py", "model/fitted.py",
                "space/sampling.py", "space/presets.py",
                "../dashboard/work.py", "_data/presets/stargazer.yaml", "../data/presets/stargazer.yaml"):
        p = (core / rel).resolve()
        for key, f in ([(f"{rel}/{f.name}", f) for f in sorted(p.glob("*.py"))] if p.is_dir()  # a package's modules
                       else [(rel, p)]):
            if f.is_file():
                h.update(key.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:20]


def template_id() -> str | None:
    """The id of this server's example template, if one was built (Home leaves it out of lists)."""
    try:
        return json.loads((home() / TEMPLATE_FILE).read_text()).get("id")
    except (OSError, ValueError, AttributeError):
        return None


def example_template() -> str:
    """The id of a workspace holding the example's four stages and its analyses, all current."""
    path = home() / TEMPLATE_FILE
    code = _code_digest()
    with _template_lock():
        _clean_once()
        try:
            rec = json.loads(path.read_text())
            if rec.get("code") == code:
                with open_workspace(rec["id"]) as t:
                    if all(s.ok for s in t.overview().values()) and {"validation", "scan"} <= set(t.analyses()):
                        return rec["id"]
        except (OSError, ValueError, KeyError, TypeError, GpudseError):
            pass
        ws, _ = create_workspace("gpudse built-in example (template)")
        upkeep.mark_template(ws.id)  # "building": never listed; a build killed half-way goes at the next listing
        try:
            with ws:
                fill_example(ws)
                pause_at("template-build")  # tests: a kill half-way through the build
                work.example_analyses(ws)
            upkeep.template_built(ws.id)
        except BaseException:
            try:
                with open_workspace(ws.id, trusted=True) as t:
                    t.delete()
            except GpudseError:
                pass
            raise
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"id": ws.id, "code": code}))
        os.replace(tmp, path)
        return ws.id


_CLEANED: set[str] = set()  # homes this process has cleaned


def _clean_once() -> None:
    """Remove leftovers of interrupted forks and template builds, once per server process and home."""
    root = str(home())
    if root not in _CLEANED:
        _CLEANED.add(root)
        upkeep.clean(keep_template=template_id())


def workspace_ids() -> list[str]:
    """Workspaces this browser may list on Home: those it holds keys for (every one on a
    single-user server), without the example's template."""
    from gpudse_core.workspace import list_workspaces, single_user

    tpl = template_id()
    infos = list_workspaces() if single_user() else list_workspaces(ids=sorted(held_keys()))
    return [i for i in infos if i.id != tpl]


def open_by_id(ws_id: str) -> Workspace:
    return open_workspace(ws_id, held_keys().get(ws_id))

