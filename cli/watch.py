"""``docreview watch SOURCE``: emit ``docreview.document.received`` for new or changed documents.

``SOURCE`` is ``s3://bucket/prefix`` (polled every ``--interval`` seconds) or a local folder
(followed with watchdog, swept every ``--interval`` seconds as a safety net). ``--once`` makes
one sweep and exits (cron jobs, tests). The terminal shows one line per emitted event, and
listing errors; nothing else. See :mod:`tasks.ingest.watch` for the cursor and delivery guarantee.

Exit status: 0 after ``--once``, Ctrl+C or SIGTERM; 2 for bad arguments or a source that cannot be
listed at start.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import typer
from rich.markup import escape

from cli.common import console, err, prepare_environment
from tasks.ingest.kinds import DEFAULT_SUFFIXES


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)  # pragma: no cover


def _waiting(stats: dict[str, int]) -> str:
    return f", {stats['emit_failed']} waiting to be sent" if stats.get("emit_failed") else ""


def watch(
    source: str = typer.Argument(..., help="s3://bucket/prefix or a local folder."),
    db: str | None = typer.Option(
        None, "--db", help="Database URL of the cursor (default: sqlite:///docreview.db or DATABASE_URL)."
    ),
    endpoint_url: str | None = typer.Option(
        None,
        "--endpoint-url",
        help="S3-compatible endpoint (default: DOCREVIEW_S3_ENDPOINT_URL, AWS_ENDPOINT_URL_S3 or AWS).",
    ),
    interval: float = typer.Option(30.0, "--interval", min=0.5, help="Seconds between sweeps."),
    suffix: str = typer.Option(
        DEFAULT_SUFFIXES,
        "--suffix",
        help="Only keys/files ending in one of these comma-separated endings, case-insensitive ('' = all).",
    ),
    settle: float = typer.Option(
        2.0, "--settle", min=0.0, help="Local folders: seconds a file must stay unchanged before it counts."
    ),
    once: bool = typer.Option(
        False, "--once", help="One sweep (with --sqs-queue-url: read the queue until empty), then exit."
    ),
    sqs_queue_url: str | None = typer.Option(
        None,
        "--sqs-queue-url",
        help="s3:// only: consume the bucket's S3 event notifications from this SQS queue instead of polling.",
    ),
) -> None:
    """Emit one Prefect event per new or changed document in SOURCE (bucket prefix or folder)."""
    prepare_environment(verbose=False)

    from botocore.exceptions import BotoCoreError, ClientError

    from schemas.settings import Settings
    from tasks.ingest.local import SourceError
    from tasks.ingest.s3 import describe_error
    from tasks.ingest.watch import (
        EVENT_NAME,
        WatchTarget,
        flush_events,
        no_api_warning,
        receive_notifications,
        sqs_client,
        sweep,
        watch_folder,
        watch_s3,
        watch_sqs,
    )
    from tasks.store.persist import dispose_engines

    if sqs_queue_url and not source.startswith("s3://"):
        err.print("[red]error:[/] --sqs-queue-url needs an s3:// source")
        raise typer.Exit(2)

    database_url = db or Settings().database_url
    target = WatchTarget(
        source=source, database_url=database_url, endpoint_url=endpoint_url, suffix=suffix, settle_s=settle
    )
    warned: set[tuple[str, str | None]] = set()
    warning = no_api_warning()

    def report(kind: str, item: Any) -> None:
        stamp = time.strftime("%H:%M:%S")
        if kind == "emitted":
            console.print(
                f"[dim]{stamp}[/]  [green]received[/]  {escape(item.uri)}  "
                f"[dim]{_size(item.size_bytes)}, etag {escape((item.etag or '')[:12])}[/]",
                soft_wrap=True,
            )
        elif kind == "emit_failed" and not warning and (item.uri, item.etag) not in warned:
            warned.add((item.uri, item.etag))  # without an API the summary counts them instead
            console.print(
                f"[dim]{stamp}[/]  [yellow]pending[/]   {escape(item.uri)}  [dim](event not sent, "
                "retried by a later sweep)[/]",
                soft_wrap=True,
            )
        elif kind == "error":
            err.print(f"[dim]{stamp}[/]  [red]error:[/] {escape(str(item))}", soft_wrap=True)

    if warning:
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    try:
        if once and sqs_queue_url:
            client, messages = sqs_client(sqs_queue_url), 0
            while got := receive_notifications(target, client, sqs_queue_url, wait_s=1, report=report):
                messages += got
            console.print(
                f"{messages} notification(s) read, {target.stats['emitted']} {EVENT_NAME} event(s) "
                f"emitted{_waiting(target.stats)}"
            )
            return
        if once:
            emitted = sweep(target, report)
            console.print(
                f"{target.stats['listed']} object(s) listed, {emitted} {EVENT_NAME} event(s) "
                f"emitted{_waiting(target.stats)}"
            )
            return
        if sqs_queue_url:  # fail fast on a missing queue or bad credentials
            sqs_client(sqs_queue_url).get_queue_attributes(QueueUrl=sqs_queue_url, AttributeNames=["QueueArn"])
        elif not target.is_s3:
            target.root()  # fail fast on a missing folder
        else:
            target.list_objects()  # fail fast on a missing bucket or bad credentials
        how = (
            f"S3 event notifications from {sqs_queue_url}"
            if sqs_queue_url
            else f"every {interval:g} s" + (", and file-system events" if not target.is_s3 else "")
        )
        console.print(f"Watching [bold]{escape(source)}[/] ({escape(how)}); Ctrl+C to stop")
        stop = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())  # a container stop ends it cleanly
        try:
            if sqs_queue_url:
                watch_sqs(target, sqs_queue_url, stop, report)
            else:
                (watch_s3 if target.is_s3 else watch_folder)(target, interval, stop, report)
        except KeyboardInterrupt:
            stop.set()
        finally:
            signal.signal(signal.SIGTERM, previous)
        console.print(f"Stopped: {target.stats['emitted']} event(s) emitted")
    except SourceError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except (ClientError, BotoCoreError) as exc:  # the SQS queue cannot be read
        err.print(f"[red]error:[/] {escape(describe_error(exc, f'cannot read {sqs_queue_url}'))}")
        raise typer.Exit(2) from None
    finally:
        flush_events()
        dispose_engines()


def register(app: typer.Typer) -> None:
    """Add the ``watch`` command to the ``docreview`` app."""
    app.command("watch")(watch)
