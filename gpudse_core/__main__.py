"""``python -m gpudse_core`` runs the ``gpudse`` command line."""

import sys

from .cli import main

sys.exit(main())
