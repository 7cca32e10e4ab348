"""``gpudse workspace list | show | new | rename | delete | export | report | adopt``: the dashboard's workspaces.

The command line's user owns the workspace files under ``$GPUDSE_HOME`` (or ``--home``), so these
commands list and change every workspace there; the dashboard needs a workspace's edit key instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..errors import GpudseError
from .common import add_precision, writable


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"


def _open(args: argparse.Namespace):
    from ..workspace import open_workspace

    return open_workspace(args.id, root=args.home, trusted=True)


def cmd_ws_list(args: argparse.Namespace) -> int:
    from ..workspace import list_workspaces

    skipped: list[tuple[str, str]] = []
    infos = list_workspaces(args.home, trusted=True, skipped=skipped)
    for ws_id, why in skipped:
        print(f"gpudse workspace list: skipped {ws_id}.db: {why}", file=sys.stderr)
    if args.json:
        print(json.dumps([{"id": i.id, "name": i.name, "created": i.created, "updated": i.updated,
                           "revision": i.revision, "forked_from": i.forked_from, "bytes": i.bytes,
                           "stages": dict(i.stages)} for i in infos], indent=1))
        return 0
    if not infos:
        print("no workspaces yet (gpudse workspace new)", file=sys.stderr)
    for i in infos:
        st = " ".join(f"{s}:{v}" for s, v in i.stages.items())
        print(f"{i.id}  {_when(i.updated)}  {i.bytes / 1e6:7.1f} MB  {i.name}  [{st}]")
    return 0


def cmd_ws_show(args: argparse.Namespace) -> int:
    with _open(args) as ws:
        info = ws.info()
        stages = {}
        for name, status in ws.overview().items():
            try:
                sv = ws.get(name)
            except GpudseError:  # a damaged stored value: listed below with the damaged records
                continue
            stages[name] = {"state": status.state, "version": sv.version, "origin": sv.origin,
                            "partial": sv.partial, "note": sv.note, "reason": status.reason, "action": status.action,
                            "inputs": {k: r.version for k, r in sv.inputs.items()}}
            if callable(getattr(sv.value, "describe", None)):  # a typed analysis (gpudse_core.workspace.results)
                stages[name]["holds"] = sv.value.describe()
        camps = [{"name": c.name, "done": c.progress.done, "failed": c.progress.failed, "total": c.progress.total,
                  "running": c.running} for c in ws.campaigns()]
        jobs = [{"id": j.id, "kind": j.kind, "state": j.state, "done": j.done, "total": j.total,
                 "message": j.message} for j in ws.jobs()[:10]]
        damaged = ws.damaged()
    for name, why in damaged.items():  # read as missing, but never silently: a stored record is unreadable
        stages.setdefault(name, {"state": "missing", "version": None, "origin": "", "partial": False, "note": "",
                                 "reason": "", "action": "", "inputs": {}})
        stages[name].update(state="damaged", reason=why, action="the dashboard's page for it offers to drop it")
    if args.json:
        print(json.dumps({"id": info.id, "name": info.name, "revision": info.revision, "forked_from": info.forked_from,
                          "stages": stages, "campaigns": camps, "jobs": jobs}, indent=1))
        return 0
    print(f"{info.name}  ({info.id}, revision {info.revision}, changed {_when(info.updated)})")
    for name, s in stages.items():
        ver = f"v{s['version']}" if s["version"] else "  "
        line = f"  {name:12s} {ver:>4s} {s['state']:8s} {s['origin']}"
        if s["partial"]:
            line += f"  (partial: {s['note']})"
        print(line)
        if s.get("holds") and s["state"] != "damaged":
            print(f"  {'':12s}      {s['holds']}")
        if s["state"] in ("stale", "damaged"):
            print(f"  {'':12s}      {s['reason']} -> {s['action']}")
    for c in camps:
        print(f"  campaign {c['name']}: {c['done']:,}/{c['total']:,} done, {c['failed']:,} failed"
              + (" (running)" if c["running"] else ""))
    for j in jobs:
        print(f"  job {j['id']} {j['kind']}: {j['state']}, {j['message']}")
    return 0


def cmd_ws_new(args: argparse.Namespace) -> int:
    from ..workspace import create_workspace, import_project

    ws, key = create_workspace(args.name, root=args.home)
    try:
        if args.example:
            from ..workspace import fill_example

            fill_example(ws)
        elif args.project:
            from pathlib import Path

            p = Path(args.project)
            if not p.is_file():
                raise GpudseError(f"{p}: no such project zip")
            import_project(ws, p.read_bytes(), p.name)
        elif args.space:
            from ..space.presets import load_space

            ws.set_space(load_space(args.space), f"gpudse workspace new --space {args.space}")
    except BaseException:
        ws.delete()
        raise
    ws.close()
    if args.json:
        print(json.dumps({"id": ws.id, "key": key, "path": str(ws.path)}))
    else:
        print(f"created workspace {ws.id}\n  edit key: {key}  (keep it: it allows changes from the dashboard)\n"
              f"  open it in the dashboard with ?ws={ws.id}")
    return 0


def cmd_ws_rename(args: argparse.Namespace) -> int:
    with _open(args) as ws:
        ws.rename(args.name)
    return 0


def cmd_ws_delete(args: argparse.Namespace) -> int:
    if not args.yes:
        raise GpudseError("deleting a workspace cannot be undone; add --yes to confirm")
    ws = _open(args)
    name = ws.name
    ws.delete()
    print(f"deleted workspace {args.id} ({name})", file=sys.stderr)
    return 0


def cmd_ws_export(args: argparse.Namespace) -> int:
    with _open(args) as ws:
        if args.stage:
            from .common import write_table

            out = writable(args.output, (".csv", ".parquet", ".json"))
            (sv,) = ws.require(args.stage)
            table = sv.value.table() if args.stage == "samples" else sv.value.table
            write_table(table, out, args.precision)
            print(f"wrote {len(table):,} rows of the {args.stage} (v{sv.version}) to {out}", file=sys.stderr)
            return 0
        from ..workspace import export_project

        out = writable(args.output, (".zip",))
        exp = export_project(ws, include_stale=args.include_stale)
    from ..atomicfile import write_bytes

    write_bytes(out, exp.data)  # a kill mid-write leaves the old file (or none), never half a zip
    for stage, why in exp.left_out.items():
        print(f"  left out {stage}: {why}", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def cmd_ws_report(args: argparse.Namespace) -> int:
    from ..report.workspace_report import workspace_report

    out = writable(args.output, (".html", ".htm"))
    with _open(args) as ws:
        html = workspace_report(ws, include_stale=args.include_stale)
    from ..atomicfile import write_text

    write_text(out, html)  # a kill mid-write leaves the old report (or none), never half of one
    print(f"wrote {out}", file=sys.stderr)
    return 0


def cmd_ws_adopt(args: argparse.Namespace) -> int:
    with _open(args) as ws:
        sv = ws.adopt_campaign(args.campaign, response=args.response)
    print(f"results v{sv.version}: {len(sv.value.table):,} rows from campaign {args.campaign}, response "
          f"{sv.value.response}" + (f" (partial: {sv.note})" if sv.partial else ""), file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    wp = sub.add_parser("workspace", help="the dashboard's saved workspaces: list, show, new, rename, delete, "
                        "export, report, adopt")
    wsub = wp.add_subparsers(dest="ws_command", required=True, metavar="ACTION")

    def action(name: str, help: str, func, with_id: bool = True) -> argparse.ArgumentParser:
        p = wsub.add_parser(name, help=help)
        if with_id:
            p.add_argument("id", metavar="ID", help="the workspace's id (the dashboard's ?ws=…)")
        p.add_argument("--home", metavar="DIR",
                       help="the folder holding workspaces (default: $GPUDSE_HOME or ~/.gpudse)")
        p.set_defaults(func=func)
        return p

    p = action("list", "every workspace in the folder, most recently changed first", cmd_ws_list, with_id=False)
    p.add_argument("--json", action="store_true")
    p = action("show", "a workspace's stages (current, stale or missing, and why), campaigns and jobs", cmd_ws_show)
    p.add_argument("--json", action="store_true")
    p = action("new", "create a workspace; prints its id and edit key", cmd_ws_new, with_id=False)
    p.add_argument("--name", default="Untitled workspace")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--space", metavar="SPACE", help="start with this design space (YAML/JSON file or preset)")
    start.add_argument("--project", metavar="ZIP", help="start from a saved project zip")
    start.add_argument("--example", action="store_true", help="start from the dashboard's built-in example "
                       "(Stargazer space, 300 samples, matMul results, a fitted model)")
    p.add_argument("--json", action="store_true", help='print {"id", "key", "path"}')
    p = action("rename", "rename a workspace", cmd_ws_rename)
    p.add_argument("name", metavar="NAME")
    p = action("delete", "delete a workspace and everything in it", cmd_ws_delete)
    p.add_argument("--yes", action="store_true", help="confirm: deleting cannot be undone")
    p = action("export", "write the current stages as a project zip, or one stage's table", cmd_ws_export)
    p.add_argument("--stage", choices=("samples", "results"), help="write this stage's table instead of a project")
    add_precision(p)
    p.add_argument("--include-stale", action="store_true", help="project: keep stale stages (labelled in "
                   "settings.json) instead of leaving them out")
    p.add_argument("-o", "--output", required=True, metavar="project.zip|table.csv")
    p = action("report", "write the HTML report of the current stages and analyses (the dashboard's)", cmd_ws_report)
    p.add_argument("--include-stale", action="store_true", help="keep stale analyses, labelled out of date")
    p.add_argument("-o", "--output", required=True, metavar="report.html")
    p = action("adopt", "make a finished (or stopped) campaign's results the workspace's results", cmd_ws_adopt)
    p.add_argument("campaign", metavar="CAMPAIGN", help="the name given to gpudse simulate --campaign")
    p.add_argument("--response", help="the response column (default: cycles, else the first numeric one)")
