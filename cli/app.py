"""The ``docreview`` command line.

``docreview review SOURCE`` runs the review flow with a progress bar and prints a short summary
and the report path. Prefect's own console logging is kept out of a normal run (it goes to
``OUT/docreview.log`` and to the Prefect API); ``--verbose`` shows it.

Exit status: 0 when at least one document ended reviewed (others may have failed or been
deferred, each with a reason); 1 when none did (the Prefect flow run is Failed), when the API
refused the run's requests, or when the run itself broke; 2 for bad command-line input or
settings; 130 when interrupted.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from cli.checks import (
    check_backend,
    check_database,
    check_ocr,
    check_playbook,
    check_support_model,
    describe_validation_error,
    load_settings,
)
from cli.common import console, err, log_beside, prepare_environment, route_prefect_logs, serve_until_interrupted
from schemas.settings import database_url_parameter, masked_database_url
from tasks.ingest.kinds import DEFAULT_SUFFIXES, SUPPORTED

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help=f"docreview: reviews contracts and SEC filings with Claude or offline rules; it reads {SUPPORTED}.",
)

#: Exit status of ``docreview review`` when the source holds no document (without ``--allow-empty``): a mistyped
#: folder that exists, or a bucket prefix nothing was uploaded to, is not a successful run.
EXIT_EMPTY = 3


def _local_path(source: str) -> Path:
    """The local path of a folder, file or ``file://`` URL source."""
    if source.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(source).path))
    return Path(source)


@app.command()
def review(
    source: str = typer.Argument(
        ...,
        help=f"A folder (searched recursively), one file, s3://bucket/prefix or s3://bucket/key: {SUPPORTED}.",
    ),
    out: Path = typer.Option(Path("out"), "--out", help="Folder for report.json, report.html and the log."),
    db: str | None = typer.Option(None, "--db", help="Database URL (default: sqlite:///docreview.db or DATABASE_URL)."),
    backend: str | None = typer.Option(
        None, "--backend", help="auto | anthropic | bedrock | rules (default: DOCREVIEW_BACKEND, else auto)."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's logs on the console."),
    rereview: bool = typer.Option(
        False, "--rereview", help="Review unchanged documents again (nightly mode: measures drift)."
    ),
    routing: str = typer.Option(
        "auto", "--routing", help="auto | all | decision-points (auto: decision-points for LLM backends, all for rules)"
    ),
    policy_file: Path | None = typer.Option(None, "--policy", help="Resilience policy JSON (see schemas/policy.py)."),
    breaker_storage: str | None = typer.Option(
        None, "--breaker-storage", help="memory | redis://host:port/db (shared breaker)."
    ),
    on_open: str | None = typer.Option(None, "--on-open", help="While the breaker is open: cached | defer."),
    attempts: int | None = typer.Option(
        None, "--attempts", min=1, max=20, help="Attempts per chunk review (1 = no retry)."
    ),
    llm_concurrency: int | None = typer.Option(
        None, "--llm-concurrency", min=1, help="Global limit on simultaneous LLM calls."
    ),
    batch: bool = typer.Option(
        False, "--batch", help="One Message Batch for the run (half price, up to 24 h; --backend anthropic only)."
    ),
    endpoint_url: str | None = typer.Option(
        None,
        "--endpoint-url",
        help="S3-compatible endpoint for s3:// sources (default: DOCREVIEW_S3_ENDPOINT_URL, AWS_ENDPOINT_URL_S3 or AWS).",
    ),
    suffix: str | None = typer.Option(
        None,
        "--suffix",
        help="s3:// prefixes: only keys ending in one of these comma-separated endings, case-insensitive "
        f"(default: every kind read, {DEFAULT_SUFFIXES}; '' = all).",
    ),
    allow_empty: bool = typer.Option(
        False,
        "--allow-empty",
        help=f"A source with no document is a quiet run (exit 0), as a schedule may expect; without it, exit "
        f"{EXIT_EMPTY}.",
    ),
    task_runner: str = typer.Option("thread", "--task-runner", help="thread | dask: where the flow's tasks run."),
    dask_address: str | None = typer.Option(
        None,
        "--dask-address",
        help="Dask scheduler (tcp://HOST:8786) for --task-runner dask (default: a temporary local cluster).",
    ),
    playbook: Path | None = typer.Option(
        None,
        "--playbook",
        help="The team's playbook (YAML): check every reviewed document against its rules (default: DOCREVIEW_PLAYBOOK).",
    ),
    profile: str = typer.Option(
        "auto",
        "--profile",
        help="auto | contract | filing: the review profile (auto: each document classified from its cover page).",
    ),
    previous: str | None = typer.Option(
        None,
        "--previous",
        help="SOURCE (one file) is a new version of this reviewed document: its file or sha256 "
        "(default: the earlier contract with the same title and parties).",
    ),
) -> None:
    """Review every document in SOURCE (a folder, a file, s3://bucket/prefix or s3://bucket/key) and write a report."""
    if backend is not None and backend not in ("auto", "anthropic", "bedrock", "rules"):
        err.print(f"[red]error:[/] unknown backend {backend!r} (choose auto, anthropic, bedrock or rules)")
        raise typer.Exit(2)
    try:
        policy = _policy(policy_file, breaker_storage, on_open, attempts, llm_concurrency)
    except ValueError as exc:
        err.print(f"[red]error:[/] invalid resilience policy: {exc}")
        raise typer.Exit(2) from None
    if profile not in ("auto", "contract", "filing"):
        err.print(f"[red]error:[/] unknown profile {profile!r} (choose auto, contract or filing)")
        raise typer.Exit(2)
    if routing not in ("auto", "all", "decision-points"):
        err.print(f"[red]error:[/] unknown routing {routing!r} (choose auto, all or decision-points)")
        raise typer.Exit(2)
    if task_runner not in ("thread", "dask") or (dask_address and task_runner != "dask"):
        err.print("[red]error:[/] --task-runner must be thread or dask; --dask-address needs --task-runner dask")
        raise typer.Exit(2)
    if not source.startswith("s3://") and not _local_path(source).exists():
        err.print(f"[red]error:[/] source not found: {escape(source)}")
        raise typer.Exit(2)
    overrides = {**({"backend": backend} if backend else {}), **({"database_url": db} if db else {})}
    previous_sha = None
    if previous is not None:
        previous_sha = _previous_version(source, previous, db)
    settings, problem = load_settings(
        overrides, options={k: v for k, v in (("backend", "--backend"), ("database_url", "--db")) if k in overrides}
    )
    if settings is not None and batch and settings.backend != "anthropic":
        problem = problem or "--batch needs --backend anthropic (or DOCREVIEW_BACKEND=anthropic)"
    if settings is not None and not problem:
        problem = (
            check_playbook(
                str(playbook) if playbook else settings.playbook, "--playbook" if playbook else "DOCREVIEW_PLAYBOOK"
            )
            or check_backend(settings)
            or check_database(settings.database_url)
            or check_support_model()
        )
    if problem or settings is None:  # before Prefect starts: a configuration error is exit 2 within seconds
        err.print(f"[red]error:[/] {escape(problem or 'the settings cannot be read')}")  # load_settings says why
        raise typer.Exit(2)
    ocr = check_ocr(settings)
    if ocr:  # a warning before the run, not an error: text-layer documents need no OCR
        err.print(f"[yellow]warning:[/] {escape(ocr)}")
    try:  # the report folder must be writable before any work starts
        out.mkdir(parents=True, exist_ok=True)
        (out / "docreview.log").touch()
    except OSError as exc:
        err.print(
            f"[red]error:[/] cannot write the report folder {escape(str(out))}: {escape(exc.strerror or str(exc))}"
        )
        raise typer.Exit(2) from None
    local_server = prepare_environment(verbose)
    if db and masked_database_url(db) != db:  # a password reaches the flow through the environment, never a parameter
        os.environ["DOCREVIEW_DATABASE_URL"] = db

    from flows import progress
    from flows.pipeline import NothingReviewed
    from flows.review import review_documents
    from tasks.ingest.local import SourceError
    from tasks.review.resilience import RunMisconfigured
    from tasks.store.persist import dispose_engines

    handler = route_prefect_logs(out / "docreview.log")
    bar = Progress(
        TextColumn("[bold]Reviewing[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=False,
    )
    task_id = bar.add_task("starting…", total=None)
    counts = {"reviewed": 0, "deferred": 0, "failed": 0}

    def on_event(event: str, data: dict) -> None:
        if event == "begin":
            bar.update(task_id, total=data["total"], description="")
        elif event == "advance":
            counts[data["status"]] = counts.get(data["status"], 0) + 1
            bar.update(task_id, advance=1, description=f"[dim]{escape(data['name'][:48])}[/]")

    unlisten = progress.listen(on_event)
    flow_fn = review_documents
    runner_scope: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if task_runner == "dask":  # tasks on Dask workers (flows/runners.py); they report to this run's Prefect API
        from flows.runners import make_task_runner, prefect_api_for_workers

        flow_fn = review_documents.with_options(task_runner=make_task_runner("dask", dask_address))
        runner_scope = prefect_api_for_workers()
    try:
        with bar, runner_scope, _interrupt_ends_within(INTERRUPT_GRACE_S):
            result = flow_fn(
                source=source,
                out_dir=str(out),
                database_url=database_url_parameter(db),
                backend=backend,
                rereview=rereview,
                routing=routing,
                policy=policy,
                batch=batch,
                endpoint_url=endpoint_url,
                suffix=suffix,
                profile=profile,
                playbook=str(playbook) if playbook else None,
                previous=previous_sha,
            )
    except KeyboardInterrupt:
        err.print(INTERRUPTED)
        raise typer.Exit(130) from None
    except NothingReviewed as exc:  # every document failed or was deferred: the flow run is Failed
        _print_summary(exc.result)
        err.print(f"[red]Nothing was reviewed:[/] {escape(str(exc).removeprefix('nothing reviewed: '))}")
        raise typer.Exit(1) from None
    except RunMisconfigured as exc:  # the API refused the run's requests: the configuration needs a fix
        err.print(f"[red]Stopped:[/] {escape(str(exc))}")
        base = settings.report_url_base  # where OUT is published: its latest report is this run's
        err.print(
            f"Report: {base.rstrip('/') + '/report.html' if base else out / 'report.html'}  "
            f"(Details: {out / 'docreview.log'})"
        )
        raise typer.Exit(1) from None
    except SourceError as exc:  # the bucket or folder cannot be listed: a clear line, no traceback
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    except Exception as exc:
        if INTERRUPT_SEEN.is_set():  # the interrupt surfaced as another error: the run was interrupted
            logging.getLogger("docreview").warning("interrupted; the interrupt surfaced as %r", exc)
            err.print(INTERRUPTED)
            raise typer.Exit(130) from None
        logging.getLogger("docreview").exception("run failed")
        err.print(f"[red]Run failed:[/] {type(exc).__name__}: {exc}")
        err.print(f"Details: {out / 'docreview.log'}")
        raise typer.Exit(1) from None
    finally:
        unlisten()
        dispose_engines()
        handler.close()
    _print_summary(result)
    if local_server is not None:  # where this run can be seen (docreview server start)
        console.print(f"Prefect UI: {local_server['ui_url']}  (the local server this run reported to)")
    if not result["metrics"]["documents_total"]:  # nothing to review: a mistyped folder must not pass for a quiet night
        where = empty_source_text(source, suffix)
        if allow_empty:
            console.print(f"No documents found in {escape(where)} (--allow-empty: a quiet run).", soft_wrap=True)
            return
        err.print(
            f"[red]No documents found[/] in {escape(where)}: nothing was reviewed (exit {EXIT_EMPTY}; "
            "--allow-empty makes an empty source a quiet run).",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_EMPTY)


def empty_source_text(source: str, suffix: str | None) -> str:
    """Which path an empty run read, as its message says it: ``"the folder /abs/inbox (searched recursively,
    hidden files skipped)"``, ``"the file /abs/x.pdf"`` or ``"s3://bucket/prefix (keys ending in .pdf,.docx,…)"``."""
    if source.startswith("s3://"):
        endings = DEFAULT_SUFFIXES if suffix is None else suffix
        return f"{source} (keys ending in {endings})" if endings else f"{source} (every key)"
    path = _local_path(source).expanduser().resolve()
    if path.is_dir():
        return f"the folder {path} (searched recursively, hidden files skipped)"
    return f"the file {path}" if path.exists() else str(path)


def _previous_version(source: str, previous: str, db: str | None) -> str:
    """The sha256 ``--previous`` names (a file, whose bytes are hashed, or a sha256), when SOURCE is
    one local file, ``--previous`` another document, and that document's latest outcome in this database is
    ``reviewed``; else the
    command ends with exit 2 (a document that ended failed or deferred is named with its status and
    reason)."""
    import hashlib
    import re

    from sqlmodel import Session, col, select

    from cli.checks import missing_database
    from schemas.documents import DocumentStatus
    from schemas.settings import Settings
    from schemas.tables import RunDocumentRow

    if source.startswith("s3://") or not _local_path(source).is_file():
        err.print("[red]error:[/] --previous names the earlier version of one document: give SOURCE as one file")
        raise typer.Exit(2)
    path = Path(previous)
    if path.is_file():
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
    elif re.fullmatch(r"[0-9a-f]{64}", previous):
        sha = previous
    else:
        err.print(f"[red]error:[/] --previous {escape(previous)}: no such file (or a sha256 of 64 hex digits)")
        raise typer.Exit(2)
    if sha == hashlib.sha256(_local_path(source).read_bytes()).hexdigest():
        err.print(
            f"[red]error:[/] --previous {escape(previous)} is the same document as {escape(source)}: name its earlier version"
        )
        raise typer.Exit(2)
    url = db or Settings().database_url
    problem = missing_database(url)
    latest = None
    if not problem:
        from tasks.store.persist import get_engine

        with Session(get_engine(url)) as session:  # its outcome in the latest run that read it
            latest = session.exec(
                select(RunDocumentRow.status, RunDocumentRow.reason)
                .where(RunDocumentRow.sha256 == sha)
                .order_by(col(RunDocumentRow.updated_at).desc(), col(RunDocumentRow.id).desc())
            ).first()
    if latest is None:
        err.print(f"[red]error:[/] --previous {escape(previous)} was never reviewed in this database: review it first")
        raise typer.Exit(2)
    status, reason = latest
    if status != DocumentStatus.reviewed.value:
        err.print(
            f"[red]error:[/] --previous {escape(previous)} was not reviewed ({escape(status)}"
            f"{': ' + escape(reason) if reason else ''}): name a reviewed version"
        )
        raise typer.Exit(2)
    return sha


#: Seconds Prefect may take to record an interrupted run before the process ends anyway (exit 130).
INTERRUPT_GRACE_S = 10.0
INTERRUPTED = (
    "[yellow]Interrupted:[/] the run is marked interrupted in `docreview runs`; the documents it did not "
    "finish are reviewed by the next run."
)


#: Set when Ctrl-C or SIGTERM reached a command: an error the interrupt caused on its way out (Prefect's
#: engine, stopped while it creates a task run, raises "Task run is not set" instead of the interrupt) still
#: ends the command as interrupted (exit 130), not as a failed run.
INTERRUPT_SEEN = threading.Event()


@contextlib.contextmanager
def _interrupt_ends_within(grace_s: float):
    """Ctrl-C or SIGTERM stops the run as usual (the flow marks it interrupted and releases its
    documents), and the process ends at most ``grace_s`` seconds later, or at once on a second
    signal, stopping the temporary Prefect server either way.

    Without a ``PREFECT_API_URL`` the temporary Prefect server is in the terminal's process group
    and gets the same Ctrl-C; Prefect's client would then retry reporting the crash to it for
    about half a minute.
    """
    import signal
    import threading

    def end_now() -> None:
        err.print(INTERRUPTED)
        try:  # what a normal exit would run: it stops the temporary Prefect server (atexit in Prefect)
            atexit._run_exitfuncs()
        finally:
            os._exit(130)

    def on_interrupt(signum: int, frame: object) -> None:
        if getattr(on_interrupt, "seen", False):
            end_now()
        on_interrupt.seen = True  # type: ignore[attr-defined]
        INTERRUPT_SEEN.set()
        timer = threading.Timer(grace_s, end_now)
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # SIGTERM (a service manager or container stop) ends the run like Ctrl-C. Python's default
    # would end the process at once, leaving the temporary Prefect server running on its own.
    previous = {sig: signal.signal(sig, on_interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _policy(
    policy_file: Path | None,
    breaker_storage: str | None,
    on_open: str | None,
    attempts: int | None,
    llm_concurrency: int | None,
):
    """The resilience policy from ``--policy`` JSON and flag overrides; None for the defaults.

    Raises ``ValueError`` (pydantic's ValidationError is one) for an invalid policy.
    """
    from schemas.policy import ResiliencePolicy

    data: dict = {}
    if policy_file is not None:
        try:
            data = json.loads(policy_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read {policy_file}: {exc}") from None
    overrides = {
        "breaker_storage": breaker_storage,
        "on_open": on_open,
        "attempts": attempts,
        "llm_concurrency": llm_concurrency,
    }
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return ResiliencePolicy(**data) if data else None
    except ValidationError as exc:  # one line per field: "--on-open: Input should be 'defer' or 'cached' (got 'maybe')"
        options = {k: "--" + k.replace("_", "-") for k, v in overrides.items() if v is not None}
        fields = [str(e["loc"][-1]) for e in exc.errors() if e.get("loc")]
        where = {f: options.get(f, f"{policy_file}: {f}") for f in fields}
        raise ValueError(describe_validation_error(exc, where)) from None


def _print_summary(result: dict) -> None:
    m = result["metrics"]
    table = Table(show_header=False, box=None, pad_edge=False)
    run_id, flow_run_id = result["run_id"], result.get("flow_run_id")
    table.add_row(
        "Run",
        run_id
        + (
            ""
            if not flow_run_id
            else "  (the Prefect flow run's id)"
            if flow_run_id == run_id
            else f"  (Prefect flow run {flow_run_id})"
        ),
    )
    table.add_row(
        "Documents",
        f"{m['documents_total']}  (reviewed {m['documents_reviewed']}, "
        f"deferred {m['documents_deferred']}, failed {m['documents_failed']}"
        + (f"; {m['documents_skipped']} unchanged, reused" if m.get("documents_skipped") else "")
        + (
            f"; {m['documents_reviewed_again']} reviewed again after an upgrade"
            if m.get("documents_reviewed_again")
            else ""
        )
        + ")",
    )
    verified = (
        f"{m['verification_rate'] * 100:.1f}% verified against the source"
        if m["findings_total"]
        else "nothing to verify"
        if m["documents_total"]
        else "no documents found in the source"
    )
    table.add_row("Findings", f"{m['findings_total']}  ({verified})")
    if result.get("database"):
        table.add_row("Database", str(result["database"]))
    if "playbook_deviations" in m:
        table.add_row(
            "Playbook",
            f"{m['playbook_deviations']} deviation(s), {m['playbook_deviations_high']} of high "
            f"severity; {m['playbook_unknown']} rule(s) undecided, {m['playbook_pass']} passed",
        )
    fresh = int(m["documents_reviewed"] - m.get("documents_skipped", 0))  # reviewed in this run, not reused
    if fresh and m["wall_s"]:
        table.add_row(
            "Throughput", f"{fresh * 60 / m['wall_s']:.1f} documents/min ({fresh} reviewed in {m['wall_s']:.1f} s)"
        )
    elif m.get("documents_skipped") and m["documents_skipped"] == m["documents_total"]:
        table.add_row("Throughput", "no document needed a new review")
    elif m["documents_total"]:
        table.add_row("Throughput", "no document was reviewed in this run")
    table.add_row(
        "Backend",
        f"{result['backend']} ({result['model']})"
        + (
            f" via {result['endpoint']}: not the vendor's API, figures below are that server's"
            if result.get("endpoint")
            else ""
        ),
    )
    if result.get("geography"):
        table.add_row("Data sent to", str(result["geography"]))
    from tasks.check.support import support_check_name

    table.add_row("Support check", support_check_name())
    if m.get("chunks_total") and m.get("routing_rate", 1.0) < 0.9995:  # decision-points routing sent less than all
        table.add_row(
            "Routing",
            f"{m['routing_rate'] * 100:.1f}% of the text sent to the deep review "
            f"({int(m.get('chunks_deep', 0))} of {int(m['chunks_total'])} chunks)",
        )
    if not result["offline"]:
        table.add_row(
            "Model calls",
            f"{int(m.get('llm_calls', 0))} calls, {int(m.get('retries', 0))} retries, "
            f"{int(m.get('breaker_openings', 0))} breaker opening(s), "
            f"cache hit ratio {m.get('cache_hit_ratio', 0):.2f}, cost ${m.get('cost_usd', 0):.2f}",
        )
    console.print(table)
    if result["offline"]:
        why = "" if os.environ.get("ANTHROPIC_API_KEY") else " (no ANTHROPIC_API_KEY set)"
        console.print(
            f"[yellow]Offline:[/] the rules backend was used{why}; "
            "findings come from clause patterns, not from a language model."
        )
    not_done = [d for d in result["documents"] if d["status"] != "reviewed"]
    for d in not_done[:10]:
        console.print(f"  [red]{d['status']}[/] {escape(d['file_name'])}: {escape(str(d['reason']))}")
    if len(not_done) > 10:
        console.print(f"  … and {len(not_done) - 10} more (see the report)")
    url = result.get("report_url")  # DOCREVIEW_REPORT_URL_BASE is set: the report as published
    if url:  # soft_wrap: a URL or path is never broken across lines (it is copied or clicked)
        console.print(f"Report: [bold]{url}[/]  (JSON: {url.removesuffix('report.html')}report.json)", soft_wrap=True)
    else:
        console.print(f"Report: [bold]{result['report_html']}[/]  (JSON: {result['report_json']})", soft_wrap=True)
    if result.get("published") is False:  # OUT/report.* and the subscribed calendar keep the last good run's
        console.print(
            "This run reviewed no document: the published report and calendar (report.html, deadlines.ics in "
            "the output folder) still show the last run that did.",
            soft_wrap=True,
        )


@app.command()
def samples(
    out: Path = typer.Argument(Path("inbox"), help="Folder to write the sample contract PDFs into."),
    count: int = typer.Option(4, "--count", min=1, max=200, help="Number of contracts."),
    other_formats: bool = typer.Option(
        True,
        "--other-formats/--pdf-only",
        help="Also write a scanned page (PNG, read by OCR) and a Word draft with tracked changes (DOCX).",
    ),
) -> None:
    """Generate sample contract PDFs with known ground truth (for a first run and tests), and by default
    one scanned page and one Word draft made from them."""
    from docreview_testing.samples import generate_other_formats, generate_samples, write_ground_truth

    if out.exists() and not out.is_dir():
        err.print(f"[red]error:[/] {escape(str(out))} is a file, not a folder")
        raise typer.Exit(2)
    try:
        made = generate_samples(out, count=count)
        others = generate_other_formats(out, made) if other_formats else []
    except OSError as exc:
        err.print(f"[red]error:[/] cannot write samples to {escape(str(out))}: {escape(exc.strerror or str(exc))}")
        raise typer.Exit(2) from None
    truth = out.parent / f"{out.name}-ground-truth.json"
    write_ground_truth(made, truth)
    extra = f", plus {', '.join(p.name for p in others)}" if others else ""
    console.print(f"Wrote {len(made)} sample contract(s) to {out}/{extra} (ground truth of the PDFs: {truth})")


@app.command("stub-llm")
def stub_llm(
    port: int = typer.Option(8765, "--port", help="TCP port (0 picks a free one)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    ttft_ms: float = typer.Option(
        0.0, "--ttft-ms", min=0.0, help="Injected latency before the first content delta, ms."
    ),
    token_ms: float = typer.Option(0.0, "--token-ms", min=0.0, help="Injected latency per output token, ms."),
    fault: list[str] = typer.Option(
        [], "--fault", help="Fault for every request: NAME, NAME:ARG, NAME@PROBABILITY (repeatable)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for probabilistic faults."),
) -> None:
    """Serve a local Messages-API / Bedrock Converse test double (answers from the rules backend)."""
    from docreview_testing.stub_llm import FAULTS, StubLLM, StubLLMServer, parse_faults

    try:
        faults = parse_faults(",".join(fault))
    except ValueError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    try:
        server = StubLLMServer(host, port, StubLLM(ttft_ms=ttft_ms, token_ms=token_ms, faults=faults, seed=seed))
    except OSError as exc:  # the port is taken, or the host is not ours
        err.print(f"[red]error:[/] cannot listen on {escape(host)}:{port}: {escape(exc.strerror or str(exc))}")
        raise typer.Exit(2) from None
    console.print(
        f"stub-llm (test double, answers from the rules backend, not a model) on {server.url}\n"
        f"  ANTHROPIC_BASE_URL={server.url} ANTHROPIC_API_KEY=test   |   DOCREVIEW_BEDROCK_ENDPOINT_URL={server.url}\n"
        f"  faults: {', '.join(f'{f.name}@{f.p}' for f in faults) or 'none'} (known: {', '.join(FAULTS)})"
    )
    serve_until_interrupted(server)


eval_app = typer.Typer(no_args_is_help=True, help="Score the pipeline against labelled contracts and filings.")
app.add_typer(eval_app, name="eval")


@eval_app.command("cuad")
def eval_cuad(
    data_dir: Path = typer.Argument(
        ..., help="Folder in the CUAD layout (manifest.csv, pdf/, txt/, labels/master_clauses.csv)."
    ),
    backend: str = typer.Option("rules", "--backend", help="rules | anthropic | bedrock"),
    out: Path = typer.Option(Path("eval-cuad.json"), "--out", help="JSON file for the scores."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N labelled contracts."),
    routing: str = typer.Option("all", "--routing", help="all | decision-points: which chunks the run reviews."),
    chunk_chars: int = typer.Option(1500, "--chunk-chars", min=200, help="Chunk budget for the run, characters."),
    overlap_chars: int = typer.Option(200, "--overlap-chars", min=0, help="Chunk overlap for the run, characters."),
    split: str = typer.Option(
        "all",
        "--split",
        help="test (the frozen test split: 75 contracts nothing is tuned or trained on) | train | all.",
    ),
    held_out_only: bool = typer.Option(
        False,
        "--held-out",
        hidden=True,
        help="Retired: the old split (SHA-1(Filename) % 3 == 0), which the shipped models are now trained on.",
    ),
    playbook: Path | None = typer.Option(
        None, "--playbook", help="Also score this playbook's statuses against the ones the lawyers' answers give."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's logs on the console."),
) -> None:
    """Run the pipeline over CUAD contracts and score it per category against the lawyer labels."""
    if held_out_only:
        err.print(
            "[red]error:[/] --held-out is retired: its contracts (SHA-1(Filename) % 3 == 0) are now part of the "
            "training split the shipped models learnt from. Use --split test (the frozen test split)."
        )
        raise typer.Exit(2)
    if split not in ("test", "train", "all"):
        err.print("[red]error:[/] --split must be test, train or all")
        raise typer.Exit(2)
    if backend not in ("anthropic", "bedrock", "rules") or routing not in ("all", "decision-points"):
        err.print("[red]error:[/] --backend must be rules, anthropic or bedrock; --routing all or decision-points")
        raise typer.Exit(2)
    if not (data_dir / "manifest.csv").is_file() or not (data_dir / "labels" / "master_clauses.csv").is_file():
        err.print(f"[red]error:[/] {data_dir} lacks manifest.csv or labels/master_clauses.csv")
        raise typer.Exit(2)
    if overlap_chars * 2 >= chunk_chars:
        err.print("[red]error:[/] --overlap-chars must be smaller than half of --chunk-chars")
        raise typer.Exit(2)
    problem = check_playbook(str(playbook) if playbook else None, "--playbook") or check_support_model()
    if problem:
        err.print(f"[red]error:[/] {escape(problem)}")
        raise typer.Exit(2)
    prepare_environment(verbose)

    from flows.eval import evaluate_cuad, print_table
    from tasks.store.persist import dispose_engines

    handler = route_prefect_logs(log_beside(out))  # Prefect's log beside the scores, not on the console

    try:
        with _interrupt_ends_within(INTERRUPT_GRACE_S):
            result = evaluate_cuad(
                data_dir,
                backend=backend,
                out_file=out,
                limit=limit,
                routing=routing,
                chunk_chars=chunk_chars,
                overlap_chars=overlap_chars,
                console=console,
                split=split,
                playbook=playbook,
            )
    except KeyboardInterrupt:
        err.print("[yellow]Interrupted:[/] no scores written.")
        raise typer.Exit(130) from None
    except Exception as exc:
        err.print(f"[red]Evaluation failed:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(1) from None
    finally:
        dispose_engines()
        handler.close()
    print_table(result, console)
    console.print(f"Scores: [bold]{out}[/] (log: {log_beside(out)})")


@eval_app.command("filings")
def eval_filings(
    data_dir: Path = typer.Argument(..., help="Filings folder (pdf/, documents.jsonl, questions.jsonl)."),
    backend: str = typer.Option("rules", "--backend", help="rules | anthropic | bedrock"),
    out: Path = typer.Option(Path("eval-filings.json"), "--out", help="JSON file for the scores."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N filings (name order)."),
    only: list[str] | None = typer.Option(None, "--only", help="Only this filing (doc_name); repeatable."),
    html: Path | None = typer.Option(
        None,
        "--html",
        help="Also review the EDGAR HTML filings of this folder and score their key figures against their own "
        "inline XBRL facts (e.g. ../shared/data/edgar-html).",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's logs on the console."),
) -> None:
    """Review SEC filings and score them against the analysts' questions: evidence-page recall,
    key-figure accuracy, findings per page and pages per second."""
    if backend not in ("anthropic", "bedrock", "rules"):
        err.print("[red]error:[/] --backend must be rules, anthropic or bedrock")
        raise typer.Exit(2)
    if not (data_dir / "documents.jsonl").is_file() or not (data_dir / "pdf").is_dir():
        err.print(f"[red]error:[/] {data_dir} lacks documents.jsonl or pdf/")
        raise typer.Exit(2)
    if html is not None and not html.is_dir():
        err.print(f"[red]error:[/] --html: {escape(str(html))} is not a folder")
        raise typer.Exit(2)
    if only:
        known = {
            json.loads(line).get("doc_name")
            for line in (data_dir / "documents.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()
        }
        unknown = [name for name in only if name not in known]
        if unknown:
            err.print(
                f"[red]error:[/] --only: no filing {escape(', '.join(unknown))} in {escape(str(data_dir))}/documents.jsonl"
            )
            raise typer.Exit(2)
    problem = check_support_model()
    if problem:
        err.print(f"[red]error:[/] {escape(problem)}")
        raise typer.Exit(2)
    prepare_environment(verbose)

    from flows.eval_filings import evaluate_filings, print_filing_table
    from tasks.store.persist import dispose_engines

    handler = route_prefect_logs(log_beside(out))  # Prefect's log beside the scores, not on the console

    try:
        with _interrupt_ends_within(INTERRUPT_GRACE_S):
            result = evaluate_filings(
                data_dir, backend=backend, out_file=out, names=only or None, limit=limit, console=console, html_dir=html
            )
    except KeyboardInterrupt:
        err.print("[yellow]Interrupted:[/] no scores written.")
        raise typer.Exit(130) from None
    except Exception as exc:
        err.print(f"[red]Evaluation failed:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(1) from None
    finally:
        dispose_engines()
        handler.close()
    print_filing_table(result, console)
    console.print(f"Scores: [bold]{out}[/] (log: {log_beside(out)})")


from cli import audit, db, deploy, doctor, export, monitor, portfolio, queue, report, server, users, watch  # noqa: E402 - the other command groups

monitor.register(app)  # runs, metrics show|serve
app.command("queue")(queue.queue)  # the review queue
app.command("decide")(queue.decide)
audit.register(app)  # audit verify|show: the decisions' hash chain
app.command("export")(export.export)  # a run (or the portfolio) as XLSX, CSV or .ics
app.command("portfolio")(portfolio.portfolio)  # every contract once, at its latest version
watch.register(app)  # bucket/folder -> Prefect events
deploy.register(app)  # serve, deployments check
db.register(app)  # db upgrade|check|revision|current
report.register(app)  # report serve
users.register(app)  # users add|list|passwd|unlock|disable|enable: who may decide in report serve
server.register(app)  # server start|stop|status: the local Prefect server runs share
doctor.register(app)  # doctor: what a run would find missing, before it starts


def main() -> None:  # pragma: no cover - console entry point
    """Console entry point. A database URL that cannot be used (malformed, or a folder that does
    not exist) ends any command with one line and exit code 2 instead of a traceback."""
    from sqlalchemy.exc import ArgumentError, OperationalError

    try:
        app(standalone_mode=True)
    except (ArgumentError, OperationalError) as exc:
        err.print(
            f"[red]error:[/] cannot use the database: {escape(str(exc.orig if hasattr(exc, 'orig') and exc.orig else exc).splitlines()[0])}"
        )
        raise SystemExit(2) from None


if __name__ == "__main__":  # pragma: no cover
    main()
