"""`python -m benchmarks.parity -o DIR`: see benchmarks/parity/run.py."""

import sys

from benchmarks.parity.run import main

sys.exit(main())
