"""``python -m cli``: the ``docreview`` command line."""

import sys

from cli.app import main

sys.exit(main())
