"""The ``docreview`` console entry point: hand the command to the resident runner when one can run
it (:func:`cli.resident.hand_off`, milliseconds), else run it here (:func:`cli.app.main`)."""

from __future__ import annotations

import sys


def set_prefect_defaults() -> None:
    """Put docreview's defaults for Prefect (:func:`cli.prefect_server.quiet_defaults`: no telemetry, the
    temporary server's 90 s start-up timeout, …) into the environment where unset, before anything
    imports Prefect: Prefect reads its settings once, when imported, and the start-up checks of a
    command import it before :func:`cli.common.prepare_environment` runs. The console log levels that
    depend on ``--verbose`` are left to ``prepare_environment``."""
    import os

    from cli.prefect_server import quiet_defaults

    os.environ.update(quiet_defaults(dict(os.environ), verbose=True))


def main() -> None:  # pragma: no cover - console entry point
    """Run ``docreview`` with ``sys.argv``; exits with the command's status."""
    from cli.resident import hand_off

    code = hand_off(sys.argv[1:])
    if code is not None:
        raise SystemExit(code)
    set_prefect_defaults()
    from cli.app import main as run_here

    run_here()
