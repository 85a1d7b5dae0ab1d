"""What every ``docreview`` command shares: the consoles, Prefect's quiet defaults, the run log."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

console = Console(stderr=False)
#: Errors are one line each, never wrapped at a pipe's 80 columns (a log or a CI job greps them whole).
err = Console(stderr=True, soft_wrap=True)

#: Width of tables written to a pipe or file (no terminal to measure, ``COLUMNS`` unset): wide enough
#: that ``docreview queue | less`` or a saved listing keeps evidence and reasons on few lines.
PIPE_WIDTH = 160


def table_console(stderr: bool = False) -> Console:
    """A console for tables: the terminal's width on a terminal or with ``COLUMNS`` set, else
    :data:`PIPE_WIDTH` characters (rich's own default for a pipe is 80)."""
    stream = sys.stderr if stderr else sys.stdout
    piped = not (hasattr(stream, "isatty") and stream.isatty()) and not os.environ.get("COLUMNS")
    return Console(stderr=stderr, width=PIPE_WIDTH if piped else None)


#: Prefect was imported before :func:`prepare_environment` set its logging variables: its logging
#: configuration is set up again before a run's log is routed (:func:`route_prefect_logs`).
_LOGGING_STALE = False


def prepare_environment(verbose: bool) -> dict[str, Any] | None:
    """Set Prefect's quiet defaults before Prefect is imported (its settings load at import), and
    choose the Prefect API: without ``PREFECT_API_URL``, the local server, started first when none
    runs (:func:`cli.prefect_server.use_local_server`; what it does is said on standard error), with
    its resident runner. Returns that server's record (``ui_url``, ``api_url``, ...), or None when
    Prefect's own choice stands (a configured API, or a temporary server for this command). A bad
    ``DOCREVIEW_PREFECT_SERVER``, or a ``keep`` server that does not start, ends the command with
    one line (exit 2)."""
    from cli import resident
    from cli.prefect_server import prefect_home, quiet_defaults, use_local_server

    global _LOGGING_STALE
    before = dict(os.environ)
    os.environ.update(quiet_defaults(before, verbose))
    if "prefect" in sys.modules and any(
        os.environ.get(k) != before.get(k) for k in os.environ if k.startswith("PREFECT_LOGGING_")
    ):  # Prefect configured its logging when imported (the start-up checks import it), without these
        _LOGGING_STALE = True

    try:
        resident.mode()  # a bad DOCREVIEW_RESIDENT is said here, before the run
        state = use_local_server(say=lambda text: err.print(text, markup=False, highlight=False))
        if state is not None:  # the server's resident runner, started again if it has gone
            resident.ensure(prefect_home(), str(state["api_url"]), int(state["pid"]))
        return state
    except (ValueError, RuntimeError) as exc:
        import typer
        from rich.markup import escape

        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None


def log_beside(out: Path) -> Path:
    """Where a command that writes ``out`` keeps Prefect's log: ``out`` with the suffix ``.log``
    (``eval-cuad.json`` → ``eval-cuad.log``), or ``<out>.prefect.log`` when that is ``out`` itself."""
    log = out.with_suffix(".log")
    return log if log != out else out.with_name(out.name + ".prefect.log")


def route_prefect_logs(log_file: Path) -> logging.Handler:
    """Also write Prefect's and docreview's logs (INFO and up) to ``log_file``."""
    from prefect.logging.configuration import ensure_logging_setup, setup_logging

    # Prefect sets its logging up when it is imported; again only when that was before the quiet
    # defaults of prepare_environment (the repeat serialises every setting: 0.2-0.4 s of CPU)
    if _LOGGING_STALE:
        setup_logging()
    else:
        ensure_logging_setup()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.setLevel(logging.INFO)
    for name in ("prefect", "prefect._internal", "docreview"):  # prefect._internal does not propagate
        logging.getLogger(name).addHandler(handler)
    return handler


def serve_until_interrupted(server: Any) -> None:
    """``server.serve_forever()`` (a ``socketserver`` server) until Ctrl-C, then close its socket."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def stored_database(db: str | None) -> str:
    """``db`` (``--db``) or the configured database URL, for commands that read stored runs. A SQLite
    file that does not exist ends the command with one line and exit code 2
    (:func:`cli.checks.missing_database`): a mistyped path never becomes an empty database."""
    import typer
    from rich.markup import escape

    from cli.checks import missing_database
    from schemas.settings import Settings

    url = db or Settings().database_url
    problem = missing_database(url)
    if problem:
        err.print(f"[red]error:[/] {escape(problem)}")
        raise typer.Exit(2)
    return url
