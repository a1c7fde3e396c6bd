"""Sub-commands of the `pitchfork` CLI (see pitchfork/cli.py)."""
