"""``gpudse glossary [TERM]``: the papers' terms explained, as the dashboard's help shows them."""

from __future__ import annotations

import argparse
import json


def cmd_glossary(args: argparse.Namespace) -> int:
    from ..report import glossary

    if args.search:
        terms = glossary.search(args.search)
    elif args.term:
        terms = [glossary.lookup(" ".join(args.term))]
    else:
        terms = list(glossary.TERMS.values())
    if args.json:
        out = [t.to_dict() for t in terms]
        print(json.dumps(out[0] if args.term and not args.search else out, indent=2, ensure_ascii=False))
    elif args.term and not args.search:
        print(glossary.text(terms[0]))
    else:
        if not terms:
            print(f"no term mentions {args.search!r}; `gpudse glossary` lists every term")
        width = max((len(t.name) for t in terms), default=0)
        for t in terms:
            print(f"{t.name.ljust(width)}  {t.short}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("glossary", help="explain a term from the papers (θ, φ, adjr2, knots, S+R, coldness, K, …)",
                       description="Without TERM, every term with a one-line explanation; with TERM (a name, "
                                   "symbol or alias such as theta, θ, adjr2, 'restricted cubic spline'), the "
                                   "full explanation and the paper section it comes from.")
    g.add_argument("term", nargs="*", metavar="TERM", help="the term to explain")
    g.add_argument("--search", metavar="TEXT", help="list the terms whose explanation mentions TEXT")
    g.add_argument("--json", action="store_true", help="machine-readable output")
    g.set_defaults(func=cmd_glossary)
