"""The ``review-documents`` flow: list → for each document (fingerprint → claim → extract → chunk →
route → review chunks → fact-check → conclude) → report.

Control flow only. Each document's steps are in :mod:`flows.document`; the run's shared state, its
ledger of documents and the helpers that bound concurrency are in :mod:`flows.pipeline`; the work
itself is in :mod:`tasks`. Documents move through their steps side by side: while one is being
extracted, another's chunks are under review, and each reviewed chunk's findings are
fact-checked as soon as they arrive. Every source object ends the run ``reviewed``, ``deferred``
or ``failed`` with a reason, and the batch goes on.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.runtime import flow_run as runtime_flow_run
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner

from flows import heartbeat, progress
from flows.document import (
    check_and_conclude,
    deferred_first,
    prepare_for_batch,
    reuse_unchanged_objects,
    review_document,
    review_in_batch,
)
from flows.parameters import flow
from flows.pipeline import (
    TASK_RUNNER_WORKERS,
    DocumentPool,
    NothingReviewed,
    RunBook,
    apply_playbook,
    close_run,
    open_run,
    stop_cleanly_when_interrupted,
    stop_if_misconfigured,
)
from flows.quoting import quote
from schemas.policy import ResiliencePolicy
from schemas.settings import masked_database_url
from tasks.ingest.sources import list_source_objects
from tasks.ingest.submission import split_submissions
from tasks.observe.changes import compare_filings
from tasks.observe.deadlines import emit_deadline_events
from tasks.observe.events import emit_document_events, emit_filing_change_events
from tasks.observe.metrics import run_outcome_text
from tasks.observe.playbook import publish_deviations
from tasks.observe.portfolio import refresh_portfolio
from tasks.observe.report import (
    publish_artifacts,
    report_link,
    run_report_dir,
    warm_plots_in_background,
    write_report,
)
from tasks.observe.versions import link_versions

heartbeat.install()  # the flow run's heartbeat thread ends with the run (flows/heartbeat.py)


def check_source(source: Any) -> str:
    """``source`` stripped, or ``ValueError`` with a message an operator can act on: empty (e.g. a
    deployment trigger whose template rendered to nothing) or an unrendered template such as
    ``{{ event.resource.id }}`` (the run was started without the event it expects)."""
    text = "" if source is None else str(source).strip()
    if not text:
        raise ValueError(
            "source is empty: give a folder, a file or an s3:// URI to review "
            "(for an event-triggered run: check the trigger's parameters with "
            "`docreview deployments check`)"
        )
    if "{{" in text or "{%" in text:
        raise ValueError(
            f"source {text[:120]!r} is an unrendered template: this run was started without "
            "the event its parameters are templated from; start it from its trigger, or give "
            "the source explicitly"
        )
    return text


def _run_name() -> str:
    """``review-<source folder or prefix>-<UTC date and time>-<flow-run id[:8]>``: unique per run; the id's
    prefix is the run id's as ``docreview runs`` shows it (:func:`flows.pipeline.new_run_id`)."""
    params = runtime_flow_run.parameters or {}
    source = str(params.get("source", "")).rstrip("/").split("/")[-1] or "source"
    return f"review-{source}-{time.strftime('%Y-%m-%dT%H-%M-%S', time.gmtime())}-{str(runtime_flow_run.id)[:8]}"


@flow(  # Prefect's flow(), its plain parameters recorded without FastAPI (flows/parameters.py)
    name="review-documents",
    flow_run_name=_run_name,
    task_runner=ThreadPoolTaskRunner(max_workers=TASK_RUNNER_WORKERS),
    log_prints=False,
)
def review_documents(
    source: str,
    out_dir: str = "out",
    database_url: str | None = None,
    backend: str | None = None,
    rereview: bool = False,
    policy: ResiliencePolicy | None = None,
    routing: str = "auto",
    batch: bool = False,
    batch_poll_s: float = 60.0,
    batch_timeout_s: float = 86_400.0,
    endpoint_url: str | None = None,
    suffix: str | None = None,
    playbook: str | None = None,
    profile: str = "auto",
    previous: str | None = None,
) -> dict[str, Any]:
    """Review every document in ``source`` and write a report into ``out_dir``.

    ``source``: a folder, a file, ``s3://bucket/prefix`` or ``s3://bucket/exact-key``
    (``endpoint_url``: an S3-compatible endpoint; ``suffix``: the key ending listed, default
    ``.pdf``). ``backend``: ``auto``, ``anthropic``, ``bedrock`` or ``rules``; ``None`` takes
    ``DOCREVIEW_BACKEND`` (default ``auto``: anthropic with a key, else rules). ``rereview``: review unchanged documents again (nightly drift). ``routing``:
    ``all``, ``decision-points`` or ``auto`` (:mod:`tasks.review.route`). ``batch``: the deep
    chunks of every document in one Message Batch (anthropic only), polled every
    ``batch_poll_s`` s for at most ``batch_timeout_s`` s (:mod:`tasks.review.batches`).
    ``playbook``: a playbook file (YAML, :mod:`schemas.playbook`; default ``DOCREVIEW_PLAYBOOK``)
    every reviewed document is checked against. ``profile``: ``auto`` classifies each document as
    a contract or an SEC filing (:mod:`tasks.ingest.classify`); ``contract`` or ``filing`` forces
    that review profile. ``previous``: the sha256 of the earlier version of the run's contract
    (``docreview review --previous``); without it each contract is linked to the earlier one with its
    title and parties (:mod:`tasks.observe.versions`).

    Returns ``{"run_id", "flow_run_id", "source", "report_json", "report_html", "published", "backend",
    "model", "offline", "endpoint", "geography", "database", "metrics", "documents", "report_url"}``
    (``published``: whether this run's report became ``out_dir/report.*`` and ``deadlines.ics``, only when it
    reviewed a document; else ``report_json``/``report_html`` are its own copy in ``out_dir/runs/<run id>/``) (``database``: the URL with its
    password masked) (``run_id``: the flow run's id, see
    :func:`flows.pipeline.new_run_id`; ``report_url``: the kept report's URL when
    ``DOCREVIEW_REPORT_URL_BASE`` is set, else None; ``endpoint``: where the model calls went when not the vendor's own
    API, else None; ``geography``: where the model calls are processed,
    :meth:`schemas.settings.Settings.data_geography`, None offline). Raises ``ValueError`` for an empty or unrendered-template ``source``, an
    unknown ``routing`` or ``batch`` without the anthropic backend, and
    :class:`tasks.ingest.local.SourceError` when the source cannot be listed, and
    :class:`tasks.review.resilience.RunMisconfigured` (the run ends Failed, after its report) when
    the API refused the run's requests; a bad *document* never raises: it ends ``failed`` with a
    reason.
    """
    run = open_run(
        check_source(source),
        out_dir,
        database_url,
        backend,
        rereview,
        policy,
        routing,
        batch=(batch_poll_s, batch_timeout_s) if batch else None,
        playbook=playbook,
        profile=profile,
        previous=previous,
    )
    warm_plots_in_background()  # the report's matplotlib, imported while extraction children run (after open_run)
    objects = list_source_objects(run.source, endpoint_url=endpoint_url or None, suffix=suffix, exclude=run.own_files)
    objects = split_submissions(objects)  # an EDGAR submission file's exhibits are documents of their own
    book = RunBook(run, objects)
    progress.begin(len(objects))
    get_run_logger().info(
        "Reviewing %d object(s) from %s with the %s backend (%s)",
        len(objects),
        run.source,
        run.reviewer.name,
        run.reviewer.model,
    )

    to_review = deferred_first(run, reuse_unchanged_objects(run, book, objects))
    with stop_cleanly_when_interrupted(run), DocumentPool(run, run.documents_in_flight) as pool:
        if not batch:
            pool.map(lambda obj: review_document(run, book, obj), to_review, on_error=book.fail)
        else:  # every document up to its deep chunks, one Message Batch, then each one's checks
            prepared = [
                p
                for p in pool.map(lambda obj: prepare_for_batch(run, book, obj), to_review, on_error=book.fail)
                if p is not None
            ]
            reviews = review_in_batch(run, prepared)
            pool.map(
                lambda p: check_and_conclude(run, book, p, reviews),
                prepared,
                on_error=lambda p, exc: book.fail(p.document.outcome.source, exc),
            )

    apply_playbook(run)  # the team's rules on every reviewed document (when the run has a playbook)
    metrics = close_run(run, book)
    result = publish_report(run, metrics)
    stop_if_misconfigured(run, result)  # the API refused the run's requests: Failed, saying why
    # A returned State is the flow run's end state; the flow's caller gets its data (the dict) or the
    # NothingReviewed it raises, hence the declared dict return.
    return final_state(result, batch, waiting=len(run.held_elsewhere))  # type: ignore[return-value]


def final_state(result: dict[str, Any], batch: bool = False, waiting: int = 0) -> State | dict[str, Any]:
    """The flow run's end state, so the Prefect UI does not show a plain "Completed" when it should not:

    - ``Failed`` when the run had documents and none of them ended reviewed: all failed, or were
      deferred because they could not be reviewed (API errors, an open breaker, an extraction
      backing off). Documents that are only waiting do not count: the ``waiting`` deferred while
      another live run reviews them (its claim), and in ``batch`` mode those deferred while their
      Message Batch is still being processed. Its data is
      :class:`NothingReviewed`, which carries ``result`` (calling the flow raises it);
    - ``Completed (no documents)`` when the source held none, its message naming the source read;
    - ``Completed with failures`` / ``Completed with deferrals`` (a Completed state whose name and
      message count them, e.g. "1 of 7 failed") when some documents failed or were deferred;
    - else the plain ``result`` (see :func:`review_documents`)."""
    m = result["metrics"]
    failed, deferred, total = int(m["documents_failed"]), int(m["documents_deferred"]), int(m["documents_total"])
    if not total:  # a mistyped folder or an empty prefix: not a plain success in the UI either
        return Completed(
            name="Completed (no documents)", message=f"no documents found in {result.get('source')}", data=result
        )
    if not failed and not deferred:
        return result
    parts = [f"{failed} of {total} failed"] if failed else []
    parts += (
        [f"{deferred} deferred (the next run takes them first, or once a stated back-off ends)"] if deferred else []
    )
    if not int(m["documents_reviewed"]) and (failed or (not batch and deferred > waiting)):
        message = "nothing reviewed: " + "; ".join(parts)
        return Failed(message=message, data=NothingReviewed(message, result))
    name = "Completed with failures" if failed else "Completed with deferrals"
    return Completed(name=name, message="; ".join(parts), data=result)


def refresh_portfolio_after_run(run: Any) -> dict[str, Any]:
    """The portfolio after this run (:func:`tasks.observe.portfolio.refresh_portfolio`): ``OUT/portfolio.ics`` and
    the ``docreview.portfolio.deadlines`` event naming every contract's deadlines due within
    ``DOCREVIEW_DEADLINE_ALERT_DAYS``. A portfolio that cannot be built is logged, not raised: the run's own
    report is already written."""
    try:
        return refresh_portfolio(run.db, run.out_dir, run.settings.deadline_alert_days, run.id, run.flow_run_id or None)
    except Exception as exc:  # the run's report stands; the next run refreshes the portfolio
        get_run_logger().warning("Portfolio not refreshed: %s: %s", type(exc).__name__, exc)
        return {}


def publish_report(run: Any, metrics: dict[str, float]) -> dict[str, Any]:
    """Write ``report.json``/``report.html``, publish the Prefect artifacts and the document
    events, and return the flow's result (see :func:`review_documents`)."""
    offline = run.reviewer.name == "rules"
    compare_filings(run.db, run.id)  # each filing of the run against the previous one of its company and form
    link_versions(run.db, run.id, run.prompt_version, run.reviewer.model, run.previous)  # each contract's last version
    playbook = {"name": run.playbook.name, "source": run.playbook.source} if run.playbook else None
    endpoint = run.settings.model_endpoint(run.reviewer.name)
    url_base = run.settings.report_url_base  # where OUT is published: the report is shown by its URL then
    report = write_report(run.db, run.id, run.out_dir, offline, playbook, endpoint, url_base)
    published = bool(report["run"].get("published"))  # else OUT/report.* is still the last run that reviewed
    folder = Path(run.out_dir) if published else run_report_dir(run.out_dir, run.id)
    report_html = str(folder / "report.html")
    publish_artifacts(quote(report), report_link(run.out_dir, run.id, url_base))
    publish_deviations(report)  # the playbook's deviations table artifact
    emit_document_events(quote(report))  # docreview.finding.high-risk, docreview.document.failed
    emit_filing_change_events(quote(report))  # docreview.filing.change
    emit_deadline_events(report, run.settings.deadline_alert_days)  # docreview.deadline.upcoming
    portfolio = refresh_portfolio_after_run(run)  # OUT/portfolio.ics, docreview.portfolio.deadlines
    get_run_logger().info("Run %s finished: %s", run.label, run_outcome_text(report["run"]["metrics"]))
    return {
        "run_id": run.id,
        "flow_run_id": run.flow_run_id or None,
        "source": run.source,
        "report_json": str(folder / "report.json"),
        "portfolio_ics": portfolio.get("calendar"),
        "report_html": report_html,
        "published": published,
        "run_report_html": str(run_report_dir(run.out_dir, run.id) / "report.html"),
        "report_url": report_link(run.out_dir, run.id, url_base) if url_base else None,
        "backend": run.reviewer.name,
        "model": run.reviewer.model,
        "offline": offline,
        "endpoint": endpoint,
        "geography": run.settings.data_geography(run.reviewer.name, run.reviewer.model),
        "database": masked_database_url(run.db),  # its password, if any, as ***
        "metrics": report["run"]["metrics"],
        "documents": [{k: d[k] for k in ("file_name", "status", "reason")} for d in report["documents"]],
    }
