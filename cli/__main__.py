"""``python -m cli``: the ``docreview`` command line."""

from cli.launch import main

main()
