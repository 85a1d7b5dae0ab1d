"""The ``docreview`` console entry point: hand the command to the resident runner when one can run
it (:func:`cli.resident.hand_off`, milliseconds), else run it here (:func:`cli.app.main`)."""

from __future__ import annotations

import sys


def main() -> None:  # pragma: no cover - console entry point
    """Run ``docreview`` with ``sys.argv``; exits with the command's status."""
    from cli.resident import hand_off

    code = hand_off(sys.argv[1:])
    if code is not None:
        raise SystemExit(code)
    from cli.app import main as run_here

    run_here()
