"""``python -m cli``: the ``docreview`` command line."""

from cli.app import main

main()
