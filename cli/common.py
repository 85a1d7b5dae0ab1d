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


_QUIET_ENV = {
    # The temporary Prefect server logs its own shutdown at ERROR; keep that out of a normal run.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # Prefect's client telemetry (and its first-run notice on a terminal): off unless asked for.
    "DO_NOT_TRACK": "1",
    # The flow run's log keeps what an operator reads (documents not reviewed, breaker changes,
    # run summary) instead of one "Finished in state Completed()" line per task run.
    "PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL": "WARNING",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "60",
}


def prepare_environment(verbose: bool) -> dict[str, Any] | None:
    """Set Prefect's quiet defaults before Prefect is imported (its settings load at import), and
    choose the Prefect API: without ``PREFECT_API_URL``, the local server of ``docreview server
    start`` when one is running (:func:`cli.prefect_server.use_local_server`). Returns that
    server's record (``ui_url``, ``api_url``, ...), or None when Prefect's own choice stands (a
    configured API, or a temporary server for this command). A bad ``DOCREVIEW_PREFECT_SERVER``,
    or a ``keep`` server that does not start, ends the command with one line (exit 2)."""
    for key, value in _QUIET_ENV.items():
        os.environ.setdefault(key, value)
    if not verbose:
        # Prefect's console handler reads its level from the environment (logging.yml); the
        # API handler keeps INFO, so the Prefect UI still shows every log line.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
        # Prefect's internal services (e.g. the events worker) log to stderr through its `debug`
        # handler; in a normal run those lines go to the run's log file only.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_DEBUG_LEVEL", "CRITICAL")
    from cli.prefect_server import use_local_server

    try:
        return use_local_server()
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
    from prefect.logging.configuration import setup_logging

    setup_logging()
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
