"""The figure for the hostile-input corpus (tests/hostile_corpus.py) through the CLI: per
class, how many cases ended in our error, were accepted (with the flag they must carry), broke their
contract (traceback, hang over 30 s, over 1 GB peak, silently accepted); and the slowest and the
largest case.

    python benchmarks/bench_hostile.py
"""

from __future__ import annotations

import os
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import hostile_corpus as hc  # noqa: E402
import hostile_scenarios as hs  # noqa: E402


def main() -> None:
    records = hc.run_corpus()
    table: dict[str, Counter] = defaultdict(Counter)
    broken = []
    for rec in records:
        verdict = hc.verdict(rec)
        outcome = "broken" if verdict else {"error": "our error", "flagged": "accepted, flagged",
                                            "ok": "accepted"}[rec["expect"]]
        table[rec["cls"]][outcome] += 1
        if verdict:
            broken.append(f"  {rec['key']}: {verdict}")
    cols = ["our error", "accepted, flagged", "accepted", "broken"]
    print(f"{'class':16s}" + "".join(f"{c:>19s}" for c in cols) + f"{'total':>8s}")
    for cls in hc.CLASSES:
        row = table.get(cls, Counter())
        print(f"{cls:16s}" + "".join(f"{row[c]:>19d}" for c in cols) + f"{sum(row.values()):>8d}")
    concern_of = {f"{c.surface}/{c.name}": c.concern for c in hc.cases() if c.concern}
    by_concern: dict[str, Counter] = defaultdict(Counter)
    for rec in records:
        if rec["key"] in concern_of:
            by_concern[concern_of[rec["key"]]]["broken" if hc.verdict(rec) else "held"] += 1
    print("\nshared-server classes (cases written for each; scenarios are events, not files):")
    for concern in hs.CONCERNS:
        row = by_concern.get(concern, Counter())
        print(f"  {concern:22s} {row['held']:>4d} held {row['broken']:>4d} broken")
    tracebacks = sum("Traceback" in r["stdout"] + r["stderr"] for r in records)
    hangs = sum(r["timed_out"] for r in records)
    big = sum(r["rss_mb"] >= 1024 for r in records)
    slow = max(records, key=lambda r: r["seconds"])
    fat = max(records, key=lambda r: r["rss_mb"])
    print(f"\n{len(records)} cases: {tracebacks} tracebacks, {hangs} hangs over 30 s, {big} processes over 1 GB peak, "
          f"{len(broken)} broken contracts (silently accepted or wrong message included)")
    print(f"slowest: {slow['key']} {slow['seconds']:.2f} s; largest: {fat['key']} {fat['rss_mb']:.0f} MB peak RSS "
          f"(forked from a process that has imported gpudse, NumPy, pandas and pyarrow)")
    print("\n".join(broken))


if __name__ == "__main__":
    main()
