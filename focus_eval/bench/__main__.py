"""``python -m focus_eval.bench``: the throughput benchmark from the command line."""

import sys

from focus_eval.bench.runner import main

sys.exit(main())
