"""``docreview server start|stop|status``: the local Prefect server runs share (see
:mod:`cli.prefect_server`, which finds it before Prefect is imported and imports nothing of the CLI)."""

from __future__ import annotations

import os
from typing import Any

from cli import resident
from cli.prefect_server import DEFAULT_PORT, prefect_home, running, start, state_file, stop


def register(app: Any) -> None:
    """Add ``server start|stop|status`` to the ``docreview`` Typer app."""
    import typer
    from rich.markup import escape

    from cli.common import console, err

    server_app = typer.Typer(
        no_args_is_help=True,
        help="The local Prefect server runs share (runs start in about a second; its UI shows them).",
    )
    app.add_typer(server_app, name="server")

    def describe(state: dict[str, Any]) -> None:
        console.print(f"Prefect UI: [bold]{state['ui_url']}[/]  (API {state['api_url']}, pid {state['pid']})")
        console.print(f"Log: {state['log']}")
        if "started_at" in state:
            console.print(f"Started: {state['started_at']}")

    def describe_runner(state: dict[str, Any]) -> None:
        runner = resident.status(prefect_home(), int(state["pid"]))
        where = prefect_home() / "docreview-runner.log"
        if runner is None:
            console.print("Resident runner: not running (`docreview review` imports and runs itself)")
        elif runner.get("starting"):
            console.print(f"Resident runner: starting (pid {runner['pid']}; importing). Log: {where}")
        else:  # ask it whether it would run this shell's `docreview review` (its own check)
            differ = resident.probe(prefect_home())
            if differ is None:
                console.print(
                    f"Resident runner: running (pid {runner['pid']}) but not answering (restarting after a code "
                    f"change, or still importing: commands run themselves until it serves). Log: {where}"
                )
            elif differ:
                console.print(
                    f"Resident runner: running (pid {runner['pid']}) but will not serve this checkout: "
                    f"{escape(resident.refusal_text(differ))} ({_remedy(differ)}). Log: {where}"
                )
            else:
                console.print(f"Resident runner: serving (pid {runner['pid']}). Log: {where}")

    @server_app.command("start")
    def start_command(
        port: int = typer.Option(
            DEFAULT_PORT, "--port", min=0, max=65535, help="Port (another free one if taken; 0: any)."
        ),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    ) -> None:
        """Start the local Prefect server (UI on) and keep it running; later commands use it."""
        if os.environ.get("PREFECT_API_URL"):
            err.print(
                f"[yellow]note:[/] PREFECT_API_URL={escape(os.environ['PREFECT_API_URL'])} is set: "
                "commands in this environment use it, not this server"
            )
        try:
            state, started = start(host=host, port=port)
        except RuntimeError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(1) from None
        runner = resident.ensure(prefect_home(), str(state["api_url"]), int(state["pid"]))
        console.print("Started." if started else "Already running.")
        describe(state)
        if runner is not None:
            console.print(
                f"Resident runner: starting (pid {runner}; `docreview review` hands itself to it once it has "
                f"imported everything, in a few seconds). Log: {prefect_home() / 'docreview-runner.log'}"
            )

    @server_app.command("stop")
    def stop_command() -> None:
        """Stop the local Prefect server (its database, and so the runs it recorded, stay in PREFECT_HOME)."""
        resident.stop(prefect_home())
        state = stop()
        console.print("Stopped." if state else "No local Prefect server is recorded.")

    @server_app.command("status")
    def status_command() -> None:
        """Whether the local Prefect server is running; exit 1 when it is not."""
        state = running()
        if state is None:
            console.print(f"Not running (no answering server recorded in {state_file()}).")
            raise typer.Exit(1)
        describe(state)
        describe_runner(state)


def _remedy(differ: list[str]) -> str:
    """What makes the resident runner serve this shell's commands, for :func:`cli.resident.refusal`'s names: a
    restart, except when this shell asks for a temporary Prefect server (``DOCREVIEW_PREFECT_SERVER=temporary``),
    whose commands never report to the local server the runner serves."""
    import os

    if "PREFECT_API_URL" in differ and os.environ.get("DOCREVIEW_PREFECT_SERVER", "").strip().lower() == "temporary":
        return "this shell sets DOCREVIEW_PREFECT_SERVER=temporary: its commands start a Prefect server of their own"
    return "restart with docreview server stop && docreview server start"
