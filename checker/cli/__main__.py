"""`python -m kmc.checker.cli`: the `kmc` command."""

import sys

from kmc.checker.cli.app import main

sys.exit(main())
