import sys

from pitchfork.cli import entry

sys.exit(entry())
