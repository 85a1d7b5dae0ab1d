"""The ``docreview`` command line.

``docreview review SOURCE`` runs the review flow with a progress bar and prints a short summary
and the report path. Prefect's own console logging is kept out of a normal run (it goes to
``OUT/docreview.log`` and to the Prefect API); ``--verbose`` shows it.

Exit status: 0 when every document reached a terminal state (even if some failed with a
reason); 1 when the run itself broke; 2 for bad command-line input.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, help="docreview: contract review pipeline.")
console = Console(stderr=False)
err = Console(stderr=True)

_QUIET_ENV = {
    # The temporary Prefect server logs its own shutdown at ERROR; keep that out of a normal run.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "60",
}


def _prepare_environment(verbose: bool) -> None:
    """Set Prefect's quiet defaults before Prefect is imported (its settings load at import)."""
    for key, value in _QUIET_ENV.items():
        os.environ.setdefault(key, value)
    if not verbose:
        # Prefect's console handler reads its level from the environment (logging.yml); the
        # API handler keeps INFO, so the Prefect UI still shows every log line.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")


def _route_prefect_logs(log_file: Path) -> logging.Handler:
    """Also write Prefect's and docreview's logs (INFO and up) to ``log_file``."""
    from prefect.logging.configuration import setup_logging

    setup_logging()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.setLevel(logging.INFO)
    for name in ("prefect", "docreview"):
        logging.getLogger(name).addHandler(handler)
    return handler


@app.command()
def review(
    source: str = typer.Argument(..., help="Folder (or single file) of documents to review."),
    out: Path = typer.Option(Path("out"), "--out", help="Folder for report.json, report.html and the log."),
    db: Optional[str] = typer.Option(None, "--db", help="Database URL (default: sqlite:///docreview.db or DATABASE_URL)."),
    backend: str = typer.Option("auto", "--backend", help="auto | anthropic | bedrock | rules"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's logs on the console."),
) -> None:
    """Review every document in SOURCE and write a report."""
    if backend not in ("auto", "anthropic", "bedrock", "rules"):
        err.print(f"[red]error:[/] unknown backend {backend!r} (choose auto, anthropic, bedrock or rules)")
        raise typer.Exit(2)
    if not source.startswith("s3://") and not Path(source).exists():
        err.print(f"[red]error:[/] source not found: {source}")
        raise typer.Exit(2)
    _prepare_environment(verbose)

    from flows import progress
    from flows.review import review_documents
    from tasks.persist import dispose_engines

    handler = _route_prefect_logs(out / "docreview.log")
    bar = Progress(
        TextColumn("[bold]Reviewing[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), console=console, transient=False,
    )
    task_id = bar.add_task("starting…", total=None)
    counts = {"reviewed": 0, "deferred": 0, "failed": 0}

    def on_event(event: str, data: dict) -> None:
        if event == "begin":
            bar.update(task_id, total=data["total"], description="")
        elif event == "advance":
            counts[data["status"]] = counts.get(data["status"], 0) + 1
            bar.update(task_id, advance=1, description=f"[dim]{data['name'][:48]}[/]")

    unlisten = progress.listen(on_event)
    try:
        with bar:
            result = review_documents(source=source, out_dir=str(out), database_url=db, backend=backend)
    except Exception as exc:  # noqa: BLE001 - the run broke: say why, keep the traceback in the log
        logging.getLogger("docreview").exception("run failed")
        err.print(f"[red]Run failed:[/] {type(exc).__name__}: {exc}")
        err.print(f"Details: {out / 'docreview.log'}")
        raise typer.Exit(1) from None
    finally:
        unlisten()
        dispose_engines()
        handler.close()
    _print_summary(result)


def _print_summary(result: dict) -> None:
    m = result["metrics"]
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("Documents", f"{m['documents_total']}  (reviewed {m['documents_reviewed']}, "
                  f"deferred {m['documents_deferred']}, failed {m['documents_failed']}"
                  + (f"; {m['documents_skipped']} unchanged, reused" if m.get("documents_skipped") else "") + ")")
    table.add_row("Findings", f"{m['findings_total']}  ({m['verification_rate'] * 100:.1f}% verified against the source)")
    table.add_row("Throughput", f"{m['docs_per_min']:.1f} documents/min over {m['wall_s']:.1f} s")
    table.add_row("Backend", f"{result['backend']} ({result['model']})")
    console.print(table)
    if result["offline"]:
        console.print("[yellow]Offline:[/] the rules backend was used (no ANTHROPIC_API_KEY set); "
                      "findings come from clause patterns, not from a language model.")
    not_done = [d for d in result["documents"] if d["status"] != "reviewed"]
    for d in not_done[:10]:
        console.print(f"  [red]{d['status']}[/] {d['file_name']}: {d['reason']}")
    if len(not_done) > 10:
        console.print(f"  … and {len(not_done) - 10} more (see the report)")
    console.print(f"Report: [bold]{result['report_html']}[/]  (JSON: {result['report_json']})")


@app.command()
def samples(
    out: Path = typer.Argument(Path("inbox"), help="Folder to write the sample contract PDFs into."),
    count: int = typer.Option(4, "--count", min=1, max=200, help="Number of contracts."),
) -> None:
    """Generate sample contract PDFs with known ground truth (for a first run and tests)."""
    from tasks.samples import generate_samples, write_ground_truth

    made = generate_samples(out, count=count)
    truth = out.parent / f"{out.name}-ground-truth.json"
    write_ground_truth(made, truth)
    console.print(f"Wrote {len(made)} sample contract(s) to {out}/ (ground truth: {truth})")


def main() -> None:  # pragma: no cover - console entry point
    """Console entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
