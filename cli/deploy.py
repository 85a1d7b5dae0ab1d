"""``docreview serve`` and ``docreview deployments check``: the Prefect deployments of the review flow."""

from __future__ import annotations

import os
from typing import Any

from cli.common import console, err, prepare_environment
from flows.deploy import (
    DOCUMENT_RECEIVED,
    FLOW_NAME,
    NIGHTLY_DEPLOYMENT,
    UPLOAD_DEPLOYMENT,
    CheckResult,
    DeploySettings,
    build_deployments,
    check_deployments,
    serve,
)
from schemas.settings import masked_database_url


def register(app: Any) -> None:
    """Add ``serve`` and ``deployments check`` to the ``docreview`` Typer app."""

    import typer
    from rich.markup import escape

    deployments_app = typer.Typer(no_args_is_help=True, help="Prefect deployments of the review flow.")
    app.add_typer(deployments_app, name="deployments")

    def need_api() -> None:
        from prefect.settings import PREFECT_API_URL

        if not (os.environ.get("PREFECT_API_URL") or PREFECT_API_URL.value()):
            err.print(
                "[red]error:[/] PREFECT_API_URL is not set: deployments need a running Prefect server "
                "(`prefect server start`, then PREFECT_API_URL=http://127.0.0.1:4200/api)"
            )
            raise typer.Exit(2)

    def unreachable(exc: Exception) -> None:
        """Exit 2 naming PREFECT_API_URL when ``exc`` says the Prefect API cannot be reached (a setting
        to fix, like the other configuration errors); return otherwise."""
        import httpx
        from prefect.settings import PREFECT_API_URL

        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError)):
            err.print(
                f"[red]error:[/] PREFECT_API_URL: cannot reach the Prefect API at "
                f"{escape(str(os.environ.get('PREFECT_API_URL') or PREFECT_API_URL.value()))} ({escape(str(exc) or type(exc).__name__)})"
            )
            raise typer.Exit(2) from None

    def print_check(result: CheckResult) -> None:
        for name, line in result.details.items():
            console.print(f"  [bold]{name}[/]: {line}")
        for problem in result.problems:
            err.print(f"  [red]problem:[/] {problem}")

    @app.command("serve")
    def serve_command(
        endpoint_url: str | None = typer.Option(
            None, "--endpoint-url", help="S3-compatible endpoint for s3:// sources."
        ),
        db: str | None = typer.Option(
            None,
            "--db",
            help="Database URL parameter (default: DATABASE_URL of this process, or sqlite:///docreview.db).",
        ),
        nightly_source: str | None = typer.Option(
            None, "--nightly-source", help="What the nightly run reviews (default DOCREVIEW_NIGHTLY_SOURCE or ./inbox)."
        ),
        window: float | None = typer.Option(
            None, "--window", min=0, help="Upload batching window, seconds (default DOCREVIEW_BATCH_WINDOW_S or 30)."
        ),
        limit: int | None = typer.Option(
            None, "--limit", min=1, help="Most flow runs at a time (default: PREFECT_RUNNER_PROCESS_LIMIT)."
        ),
        check: bool = typer.Option(
            True, "--check/--no-check", help="Check the deployments and trigger after registering them."
        ),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's logs on the console."),
    ) -> None:
        """Serve the review-on-upload and nightly-review deployments from this process (Ctrl-C stops)."""
        prepare_environment(verbose)
        need_api()
        if db and masked_database_url(db) != db:  # the served runs (this process) read the password from here
            os.environ["DOCREVIEW_DATABASE_URL"] = db
        overrides: dict[str, Any] = {}
        if nightly_source:
            overrides["nightly_source"] = nightly_source
        if window is not None:
            overrides["batch_window_s"] = window
        try:
            settings = DeploySettings(**overrides)
        except ValueError as exc:
            err.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2) from None

        def ready(result: CheckResult | None) -> None:
            console.print(
                f"Serving [bold]{FLOW_NAME}/{UPLOAD_DEPLOYMENT}[/] (on {DOCUMENT_RECEIVED}, "
                f"window {settings.batch_window_s:g} s) and [bold]{FLOW_NAME}/{NIGHTLY_DEPLOYMENT}[/] "
                f"({settings.nightly_cron} {settings.nightly_timezone}, {settings.nightly_source})."
            )
            if result is not None:
                print_check(result)
            console.print("Press Ctrl-C to stop.")

        try:
            failed = serve(
                build_deployments(settings, endpoint_url=endpoint_url, database_url=db),
                check=check,
                limit=limit,
                on_ready=ready,
            )
        except Exception as exc:
            unreachable(exc)
            err.print(f"[red]serve failed:[/] {type(exc).__name__}: {exc}")
            raise typer.Exit(1) from None
        if failed is not None:
            err.print("[red]The deployments failed their check: they are registered, but nothing is served.[/]")
            print_check(failed)
            raise typer.Exit(1)
        console.print("Stopped; the nightly schedule is paused until the deployments are served again.")

    @deployments_app.command("check")
    def check_command(
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's logs on the console."),
    ) -> None:
        """Read the deployments and their trigger back from the Prefect API; exit 1 on a problem."""
        prepare_environment(verbose)
        need_api()
        try:
            result = check_deployments()
        except Exception as exc:
            unreachable(exc)
            err.print(f"[red]check failed:[/] {type(exc).__name__}: {exc}")
            raise typer.Exit(1) from None
        print_check(result)
        if not result.ok:
            raise typer.Exit(1)
        console.print("[green]OK[/]: both deployments exist; the upload trigger passes a templated, non-empty source.")
