import sys

from pitchfork.cli import main

sys.exit(main())
