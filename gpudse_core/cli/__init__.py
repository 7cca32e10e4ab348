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
               [--interactions full|restricted] [--max-terms N] [--force TERM ...] -o model.json [--json]
    gpudse predict MODEL.json POINTS -o predictions.csv
    gpudse explore MODEL.json SPACE [--top K] [--maximize] [--pareto COST] [--where EXPR]
                   [--scheduler ADDRESS|local] [--workers W] [-o best.csv] [--json]
    gpudse validate DATA --response COL [--transform …] [--train-sizes 30,60,…] [--test-size 200]
                    [--repeats 5] [--models stepwise,fixed,regional,forest,boosting,hybrid] [--json]
    gpudse simulate SAMPLES --backend analytical|command [--kernel NAME] [--config SIM.toml]
                    [--workers W | --scheduler ADDRESS] [--store campaign.db] [--retries R] -o results.csv
    gpudse import RESULTS --space SPACE [--responses a,b] [--snap reject|nearest]
                  [--duplicates keep|average|reject] [--store campaign.db] -o clean.csv
    gpudse pixels HEATMAP --sms N --mem M [--k K] [--division fine|coarse] [--distribution uniform|lintmp|exptmp]
                  [--block 32x2] [--chunk 32x2] [--percent P | --bounds 0.3,0.6] [--clusters 5] [--seed S]
                  [--config GPU.config] -o OUTDIR [--json]
    gpudse combine LOG... --fractions P1,P2,... [--aggregate metric=sum|mean|hmean ...] [--json]
    gpudse equal-area [--bandwidth GBPS] [--regs-per-thread R] [--json]
    gpudse wfg GRAPH.json|.yaml [--json]
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .. import __version__
from ..errors import GpudseError
from . import explore_cmds, model_cmds, ray_cmds, sim_cmds, space_cmds

# Start-up: building the parser and printing --help import only argparse and these command modules,
# which import NumPy, pandas or scikit-learn inside the command that needs them (issue 12).
COMMAND_MODULES = (space_cmds, model_cmds, explore_cmds, sim_cmds, ray_cmds)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpudse", description="Regression-based GPU design space exploration.")
    p.add_argument("--version", action="version", version=f"gpudse {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in COMMAND_MODULES:
        mod.add_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GpudseError as e:
        print(f"gpudse: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"gpudse: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gpudse: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
