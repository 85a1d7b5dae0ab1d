"""``docreview doctor``: the start-up checks a review runs, and the warnings it would print, without
starting Prefect or reading a document: settings, backend and its credentials, database, support model,
OCR (Tesseract), and where model calls would be processed."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

console = Console(soft_wrap=True)  # a line stays whole (the apt command can be copied)


def doctor(
    backend: str = typer.Option(
        None, "--backend", help="auto | anthropic | bedrock | rules (default: DOCREVIEW_BACKEND)."
    ),
    db: str = typer.Option(None, "--db", help="Database URL (default: DATABASE_URL)."),
    live: bool = typer.Option(
        False,
        "--live",
        help="Also send one minimal request per call site the run will make (warm-up, review, token count, "
        "verifier, page read, batch create and cancel) to the real API with your key: pass or fail with the "
        "API's own error text, latency and cost (a few cents at most).",
    ),
) -> None:
    """Check what a review needs before it starts. Prints one line per check (ok, warning or problem);
    exit status 2 when a problem would stop a review, else 0 (warnings, such as OCR unavailable, do not).
    With ``--live`` (a model backend only) each call site is then tried once against the API itself
    (:mod:`cli.live`); a failed call is a problem."""
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
    if failed:  # where data would go is said only of a run that can start
        raise typer.Exit(2)
    from tasks.review.reviewer import bedrock_model_for

    geography = settings.data_geography(name, bedrock_model_for(settings) if name == "bedrock" else None)
    console.print(f"[green]ok[/]       data sent to: {escape(geography or 'nowhere (offline rules backend)')}")
    if live:
        _live(settings, name)


def _live(settings: Any, name: str) -> None:
    """``--live``: the call sites of :func:`cli.live.live_checks`, a line each, then the total cost."""
    from cli.live import BUDGET_USD, live_checks

    if name == "rules":
        console.print(
            "[red]problem[/]  --live: the rules backend makes no model calls; set ANTHROPIC_API_KEY (or use "
            "--backend anthropic | bedrock) to check the API with your key"
        )
        raise typer.Exit(2)
    endpoint = settings.model_endpoint(name)
    if endpoint:
        console.print(
            f"[yellow]note[/]     --live sends to {escape(endpoint)}, not the vendor's own API: what answers there "
            "says nothing about Claude itself"
        )
    try:
        results = live_checks(settings)
    except ValueError as exc:
        console.print(f"[red]problem[/]  --live: {escape(str(exc))}")
        raise typer.Exit(2) from None
    for r in results:
        mark = "[yellow]busy[/]   " if r.busy else "[green]pass[/]   " if r.ok else "[red]fail[/]   "
        console.print(f"{mark}  {r.site:<13} {r.latency_ms:8.0f} ms  ${r.cost_usd:.4f}  {escape(r.detail)}")
    total = sum(r.cost_usd for r in results)
    passed = sum(r.ok and not r.busy for r in results)
    busy = sum(r.busy for r in results)
    console.print(
        f"live check: {passed} of {len(results)} passed"
        + (f", {busy} met a busy API (retried by a run; not a configuration problem)" if busy else "")
        + f", ${total:.4f} in all"
    )
    if total > BUDGET_USD:
        console.print(f"[yellow]warning[/]  the live check cost more than ${BUDGET_USD:.2f}")
    if not all(r.ok for r in results):
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add ``docreview doctor`` to the ``docreview`` app."""
    app.command("doctor")(doctor)
