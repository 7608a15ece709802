"""``python -m evalstop``: the ``evalstop`` command, for when its script is not on PATH."""

import sys

from evalstop.cli.main import main

sys.exit(main())
