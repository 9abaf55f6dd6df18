"""``python -m elicit``: the same as the ``elicit`` command."""

import sys

from elicit.cli.main import main

sys.exit(main())
