"""`python -m benchmarks`: the benchmark harness (see benchmarks/harness/run.py)."""

import sys

from benchmarks.harness.run import main

sys.exit(main())
