"""The ``gpudse`` command line (also ``python -m gpudse_core``): scripting on clusters.

It calls the same functions as the dashboard pages. User errors print one line
``gpudse: error: …`` on stderr and exit with status 2; no traceback.

    gpudse presets
    gpudse space show SPACE [--json]
    gpudse space export SPACE -o FILE.yaml|.json
    gpudse sample SPACE (-n N | --fraction F | --per-dim-fraction F) [--per-dim-mode count|subgrid]
                  [--seed S] [--method uniform|lhs] [--with-index] -o samples.csv|.parquet|.json
    gpudse fit DATA --response COL [--params a,b] [--transform none|log|sqrt] [--theta T] [--phi P]
               [--criterion adjr2|aic|bic|ftest] [--knots K] [--knot-placement even|quantile]
               [--interactions full|restricted] [--powers-of-two on|off] [--robust huber|none]
               [--cells on|off] [--row-guard on|off] [--count-pairs on|off] [--blend forest|off]
               [--max-terms N] [--force TERM ...]
               -o model.json [--json]
    gpudse fit --workspace ID [settings as above] [-o model.json] [--json]   (the workspace's results)
    gpudse predict MODEL.json POINTS -o predictions.csv
    gpudse explore MODEL.json SPACE [--top K] [--maximize] [--pareto COST] [--where EXPR]
                   [--scheduler ADDRESS|local] [--workers W] [-o best.csv] [--json]
    gpudse validate DATA --response COL [--transform …] [--train-sizes 30,60,…] [--test-size 200]
                    [--repeats 5] [--models stepwise,fixed,regional,forest,boosting,hybrid] [--json]
    gpudse simulate SAMPLES --backend analytical|command|mgpusim [--kernel NAME] [--config SIM.toml]
                    [--benchmark matmul|fir|aes|kmeans|bfs|stencil2d] [--size N] [--timeout S]
                    [--workers W | --scheduler ADDRESS] [--store campaign.db | --workspace ID] [--retries R]
                    -o results.csv
    gpudse search (SPACE [--kernel K | --backend command --config F] | --table FILE [--response COL] [--params a,b]
                  [--status-column COL]) --goal min|max|accuracy|pareto [--cost EXPR] [--objective EXPR]
                  --budget N [--initial N0]
                  [--batch B] [--seed S] [--scheduler ADDR|local] [--workspace ID] [-o history.csv] [--json]
    gpudse space infer FILE --params a,b -o space.yaml
    gpudse mgpusim build [--force] | benchmarks [--json]
    gpudse import RESULTS --space SPACE [--responses a,b] [--snap reject|nearest]
                  [--duplicates keep|average|reject] [--store campaign.db] -o clean.csv
    gpudse pixels HEATMAP --sms N --mem M [--k K] [--division fine|coarse] [--distribution uniform|lintmp|exptmp]
                  [--block 32x2] [--chunk 32x2] [--percent P | --bounds 0.3,0.6] [--clusters 5] [--seed S]
                  [--config GPU.config] -o OUTDIR [--json]
    gpudse combine LOG... --fractions P1,P2,... [--aggregate metric=sum|mean|hmean ...] [--json]
    gpudse equal-area [--bandwidth GBPS] [--regs-per-thread R] [--json]
    gpudse wfg GRAPH.json|.yaml [--json]
    gpudse workspace list|show ID|new [--space S]|rename ID NAME|delete ID --yes|export ID -o F|adopt ID CAMPAIGN
    gpudse glossary [TERM] [--search TEXT] [--json]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from .. import __version__
from ..errors import GpudseError, printable
from . import explore_cmds, glossary_cmds, model_cmds, ray_cmds, search_cmds, sim_cmds, space_cmds, workspace_cmds

# Start-up: building the parser and printing --help import only argparse and these command modules,
# which import NumPy, pandas or scikit-learn inside the command that needs them.
COMMAND_MODULES = (space_cmds, model_cmds, sim_cmds, search_cmds, ray_cmds, explore_cmds, workspace_cmds, glossary_cmds)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpudse", description="Regression-based GPU design space exploration.")
    p.add_argument("--version", action="version", version=f"gpudse {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in COMMAND_MODULES:
        mod.add_parsers(sub)
    return p


def _safe_streams() -> None:
    """Never fail to print: characters the terminal's encoding lacks are escaped, not an error."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # replaced by a test harness, or closed
            pass


def _error(message: str) -> int:
    print(f"gpudse: error: {printable(message)}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. A problem with the user's input or request (a :class:`GpudseError`, an
    unreadable or unwritable file, memory exhausted by an input) prints ``gpudse: error: …`` and
    returns 2; anything else is a bug in gpudse and keeps its traceback."""
    _safe_streams()
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse reports its own errors ("gpudse: error: …", status 2)
    try:
        return int(args.func(args) or 0)
    except GpudseError as e:
        return _error(str(e))
    except MemoryError:
        return _error("ran out of memory reading or processing the input; it is larger than this machine can "
                      "handle — see 'Limits and hostile input' in docs/limits.md")
    except BrokenPipeError:  # the reader of our output went away (e.g. `gpudse space show x | head`)
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 141
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        return _error(f"{where}{e.strerror or e}")
    except KeyboardInterrupt:
        print("gpudse: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
