"""``docreview doctor``: the start-up checks a review runs, and the warnings it would print, without
starting Prefect or reading a document: settings, backend and its credentials, database, support model,
OCR (Tesseract), and where model calls would be processed."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

console = Console(soft_wrap=True)  # a line stays whole (the apt command can be copied)


def doctor(
    backend: str = typer.Option(
        None, "--backend", help="auto | anthropic | bedrock | rules (default: DOCREVIEW_BACKEND)."
    ),
    db: str = typer.Option(None, "--db", help="Database URL (default: DATABASE_URL)."),
) -> None:
    """Check what a review needs before it starts. Prints one line per check (ok, warning or problem);
    exit status 2 when a problem would stop a review, else 0 (warnings, such as OCR unavailable, do not)."""
    from cli.checks import check_backend, check_database, check_ocr, check_support_model, load_settings

    overrides = {**({"backend": backend} if backend else {}), **({"database_url": db} if db else {})}
    settings, problem = load_settings(
        overrides, {k: v for k, v in (("backend", "--backend"), ("database_url", "--db")) if k in overrides}
    )
    if settings is None:
        console.print(f"[red]problem[/]  settings: {escape(problem or 'cannot be read')}")
        raise typer.Exit(2)
    name = settings.resolved_backend()
    checks = [
        (f"backend {name}", check_backend(settings), "problem"),
        ("database", check_database(settings.database_url), "problem"),
        ("support model", check_support_model(), "problem"),
        ("OCR", check_ocr(settings), "warning"),
    ]
    failed = False
    for what, issue, level in checks:
        if issue is None:
            console.print(f"[green]ok[/]       {escape(what)}")
        else:
            failed = failed or level == "problem"
            colour = "red" if level == "problem" else "yellow"
            console.print(f"[{colour}]{level:<8}[/] {escape(what)}: {escape(issue)}")
    geography = None
    if check_backend(settings) is None:
        from tasks.review.reviewer import bedrock_model_for

        geography = settings.data_geography(name, bedrock_model_for(settings) if name == "bedrock" else None)
    console.print(f"[green]ok[/]       data sent to: {escape(geography or 'nowhere (offline rules backend)')}")
    if failed:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add ``docreview doctor`` to the ``docreview`` app."""
    app.command("doctor")(doctor)
