"""The ``review-documents`` flow: ingest → chunk → review → fact-check → persist → report.

Control flow only; the work is in :mod:`tasks`. Documents move through the stages
independently: while one is being extracted, another's chunks are under review, and each
reviewed chunk's findings are fact-checked as soon as they arrive. Every source object ends the
run ``reviewed``, ``deferred`` or ``failed`` with a reason, and the batch goes on.
"""

from __future__ import annotations

import queue
from collections import deque
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run as runtime_flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from flows import progress
from schemas.documents import Chunk, DocumentStatus, FailureKind, IngestOutcome
from schemas.findings import PROMPT_VERSION
from schemas.policy import ResiliencePolicy
from schemas.settings import Settings
from schemas.tables import utcnow
from schemas.review import ChunkReview, ReviewOutcome
from tasks.review.batches import review_batch
from tasks.review.chunk import CHUNKER_VERSION, chunk_document
from tasks.store.claims import (
    ClaimState,
    LeaseKeeper,
    claim_document,
    release_claim,
    release_claims,
    worker_name,
)
from schemas.findings import CheckedFinding
from tasks.check.factcheck import DocumentIndex, fact_check_findings
from tasks.ingest.extract import extract_document
from tasks.ingest.sources import fingerprint_document, list_source_objects
from tasks.check.injection import TokenBudget, admit_document, cap_page_chars, screen_document
from tasks.observe.metrics import compute_run_metrics
from tasks.store.persist import (
    deferred_keys,
    finish_run,
    known_source_sha256,
    load_document,
    mark_document_reviewed,
    reviewed_keys,
    save_chunks,
    save_document_outcome,
    save_findings,
    save_llm_calls,
    save_source_object,
    start_run,
)
from tasks.observe.monitoring import AlertThresholds, evaluate_alerts, record_drift
from tasks.observe.events import emit_document_events, tag_flow_run
from tasks.observe.report import publish_artifacts, write_report
from tasks.review.resilience import counters, ensure_concurrency_limit, retry_options
from tasks.review.reviewer import cached_review, make_backend, review_chunk, store_review
from tasks.review.route import resolve_mode, review_unit, route_chunks
from tasks.ingest.s3 import discard_download, remove_downloads

#: Review outcomes that another attempt cannot change: the document fails instead of deferring.
_TERMINAL_OUTCOMES = {ReviewOutcome.refusal, ReviewOutcome.context_overflow}

#: Worker threads of the flow's task runner. At most 1.5 x ``ResiliencePolicy.llm_concurrency``
#: chunk reviews are submitted at a time (the calls plus a prefetch waiting for a slot); the
#: other workers serve extractions, fact-checks and fingerprints. A policy asking for more
#: calls than ``(TASK_RUNNER_WORKERS - extraction slots - 8) * 2 / 3`` is capped there (logged).
TASK_RUNNER_WORKERS = 64


@dataclass
class _DocState:
    """Book-keeping for one document in flight (flow-local control state)."""

    outcome: IngestOutcome
    chunks: list[Chunk] = field(default_factory=list)
    index: DocumentIndex | None = None
    pending: int = 0
    checked: list[CheckedFinding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    terminal_problem: bool = False


def check_source(source: Any) -> str:
    """``source`` stripped, or ``ValueError`` with a message an operator can act on: empty (e.g. a
    deployment trigger whose template rendered to nothing) or an unrendered template such as
    ``{{ event.resource.id }}`` (the run was started without the event it expects)."""
    text = "" if source is None else str(source).strip()
    if not text:
        raise ValueError("source is empty: give a folder, a file or an s3:// URI to review "
                         "(for an event-triggered run: check the trigger's parameters with "
                         "`docreview deployments check`)")
    if "{{" in text or "{%" in text:
        raise ValueError(f"source {text[:120]!r} is an unrendered template: this run was started without "
                         "the event its parameters are templated from; start it from its trigger, or give "
                         "the source explicitly")
    return text


def _run_name() -> str:
    params = runtime_flow_run.parameters or {}
    source = str(params.get("source", "")).rstrip("/").split("/")[-1] or "source"
    return f"review-{source}-{time.strftime('%Y-%m-%d')}"


@flow(name="review-documents", flow_run_name=_run_name,
      task_runner=ThreadPoolTaskRunner(max_workers=TASK_RUNNER_WORKERS),
      log_prints=False)
def review_documents(
    source: str,
    out_dir: str = "out",
    database_url: str | None = None,
    backend: str = "auto",
    rereview: bool = False,
    policy: ResiliencePolicy | None = None,
    routing: str = "auto",
    batch: bool = False,
    batch_poll_s: float = 60.0,
    batch_timeout_s: float = 86_400.0,
    endpoint_url: str | None = None,
    suffix: str | None = None,
) -> dict[str, Any]:
    """Review every document in ``source`` (a folder or file) and write a report into ``out_dir``.

    ``source`` may also be ``s3://bucket/prefix`` or ``s3://bucket/exact-key``
    (:mod:`tasks.ingest.s3`): ``endpoint_url`` names an S3-compatible endpoint (default:
    ``DOCREVIEW_S3_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_S3`` or AWS) and ``suffix`` the key ending
    listed from a prefix (default ``.pdf``). Objects are downloaded by the fingerprint step into
    a per-run temporary folder; each file is removed when its document ends the run.

    ``rereview=True`` (nightly mode) reviews documents again even when unchanged since an earlier
    review with the same prompt version and model, so their drift can be measured.

    ``routing`` is ``all`` (every chunk reviewed), ``decision-points`` (only the chunks the router
    sends ``deep``, see :mod:`tasks.review.route`) or ``auto`` (decision-points for LLM backends, all for
    ``rules``); an unknown value raises ``ValueError``. Each chunk's decision and reason are stored.

    ``batch=True`` (``anthropic`` backend only, else ``ValueError``) reviews the deep chunks of
    every document in one Message Batch at half price (:mod:`tasks.review.batches`), resuming the stored
    batch of the same pending chunks after a restart; its results take the same path as
    per-chunk reviews. The batch is polled every ``batch_poll_s`` seconds for at most
    ``batch_timeout_s`` seconds (then its documents are deferred and the next run resumes it).

    Returns ``{"run_id", "report_json", "report_html", "backend", "model", "offline", "metrics"}``.
    Raises ``ValueError`` for an empty or unrendered-template ``source`` (:func:`check_source`)
    and :class:`tasks.ingest.local.SourceError` when the
    source cannot be listed; a bad *document* never raises, it ends ``failed`` with a reason.
    """
    source = check_source(source)
    endpoint_url = endpoint_url or None  # "" from an unset deployment template means "the default"
    overrides: dict[str, Any] = {"backend": backend}
    if database_url:
        overrides["database_url"] = database_url
    settings = Settings(**overrides)
    logger = get_run_logger()
    reviewer = make_backend(settings)
    tag_flow_run(reviewer.name)  # docreview, backend:<name>, trigger:<event|schedule|deployment|manual>
    policy = policy or ResiliencePolicy(call_timeout_s=settings.llm_timeout_s)
    uses_model = reviewer.name != "rules"
    if batch and reviewer.name != "anthropic":
        raise ValueError(f"batch mode needs the anthropic backend (got {reviewer.name})")
    if uses_model:
        ensure_concurrency_limit(policy)
    review_task = review_chunk.with_options(**retry_options(policy))
    counters.reset()
    routing_mode = resolve_mode(routing, reviewer.name)
    db = settings.database_url
    run_id = str(uuid.uuid4())
    started = time.monotonic()
    start_run(db, run_id, source, reviewer.name, reviewer.model, PROMPT_VERSION, str(runtime_flow_run.id or ""))

    own_files = [out_dir] + ([db.split(":///", 1)[1]] if db.startswith("sqlite:///") else [])
    objects = list_source_objects(source, endpoint_url=endpoint_url, suffix=suffix, exclude=own_files)
    progress.begin(len(objects))
    logger.info("Reviewing %d object(s) from %s with the %s backend (%s)", len(objects), source, reviewer.name,
                reviewer.model)
    already = set() if rereview else reviewed_keys(db, PROMPT_VERSION, reviewer.model)
    previously_deferred = deferred_keys(db)  # reviewed first: they waited a run already
    chunker = f"{CHUNKER_VERSION}:{settings.chunk_chars}:{settings.chunk_overlap_chars}"
    budget = TokenBudget(settings.limits.max_run_tokens or None)  # estimated input tokens this run may send
    # Claims (tasks/store/claims.py): a document is extracted and reviewed only under this run's claim,
    # so concurrent runs (workers) never review it twice; leases are renewed while the run works.
    worker, claimed = worker_name(), set()
    leases = LeaseKeeper(db, run_id, settings.claim_lease_s)
    reviewed_since = utcnow() if rereview else None  # rereview: reuse only reviews made since now

    events: queue.Queue[tuple[str, Any, PrefectFuture]] = queue.Queue()
    outstanding = 0

    def submit(kind: str, key: Any, future: PrefectFuture) -> None:
        nonlocal outstanding
        outstanding += 1
        future.add_done_callback(lambda f: events.put((kind, key, f)))

    docs: dict[str, _DocState] = {}
    first_source: dict[str, str] = {}  # sha256 -> uri of the first object with that content
    waiting_copies: dict[str, list[IngestOutcome]] = {}

    concluded: dict[str, tuple[IngestOutcome, DocumentStatus, str | None, int, bool]] = {}
    ended: set[str] = set()  # uris that reached a terminal state

    def end(outcome: IngestOutcome, status: DocumentStatus, reason: str | None, findings: int, reused: bool) -> None:
        save_document_outcome(db, run_id, quote(outcome), status, reason, findings, reused)
        if outcome.source.is_s3:  # the ETag/version fetched, then the downloaded bytes are no longer needed
            save_source_object(db, run_id, quote(outcome))
            discard_download(outcome.source)
        ended.add(outcome.source.uri)
        progress.advance(outcome.source.name, status.value)
        _forget_task_results()  # memory stays flat in the number of documents

    def end_copy(copy: IngestOutcome) -> None:
        primary, status, reason, findings, reused = concluded[copy.sha256 or ""]
        note = f"same content as {primary.source.name}"
        end(copy.model_copy(update={"pages": primary.pages, "failure": primary.failure}), status,
            f"{note}; {reason}" if reason else note, findings, reused)

    def finish(outcome: IngestOutcome, status: DocumentStatus, reason: str | None, findings: int = 0,
               reused: bool = False) -> None:
        end(outcome, status, reason, findings, reused)
        if outcome.sha256 in claimed:  # concluded: its claim is released
            claimed.discard(outcome.sha256)
            release_claim(db, outcome.sha256, run_id)
        if outcome.sha256 and first_source.get(outcome.sha256) == outcome.source.uri:
            # Kept for later copies of the same content, without the text (memory stays flat).
            concluded[outcome.sha256] = (outcome.model_copy(update={"document": None}), status, reason, findings,
                                         reused)
            for copy in waiting_copies.pop(outcome.sha256, []):
                end_copy(copy)

    # A bucket object whose (uri, ETag) an earlier run hashed, reviewed under this prompt version
    # and model, is reused without downloading it again.
    known = {} if rereview else known_source_sha256(db, [(o.uri, o.etag) for o in objects if o.is_s3 and o.etag])
    for obj in objects:
        sha = known.get((obj.uri, obj.etag or ""))
        if sha in concluded:  # same bytes as an object already reused above
            end_copy(IngestOutcome(source=obj, sha256=sha))
            continue
        if sha in already and sha not in first_source:
            first_source[sha] = obj.uri
            stored = load_document(db, sha)
            finish(IngestOutcome(source=obj, sha256=sha, pages=stored.pages if stored else 0), DocumentStatus.reviewed,
                   "unchanged since an earlier review (same ETag and sha256, prompt version and model); findings "
                   "reused without downloading", reused=True)
            continue
        submit("fingerprint", obj.uri, fingerprint_document.submit(obj, settings.limits))

    # Documents in flight (extracting, under review or fact-check) are bounded, so memory stays
    # flat in the number of documents. They are sized from the LLM concurrency: a new document
    # is extracted while fewer than two rounds of chunk reviews (2 x review slots) are queued or
    # running, so the review slots never wait for text; chunk reviews are submitted in document
    # order as soon as their chunks exist, ``review_slots`` plus a prefetch of half as many at a
    # time: the prefetched tasks wait on the LLM slot itself, so a freed slot is taken at once,
    # not when this loop gets round to it.
    to_extract: deque[IngestOutcome] = deque()
    deferred_first: deque[IngestOutcome] = deque()
    extract_slots = max(2, settings.max_workers)  # extractions at once (each in a child process)
    review_slots = min(policy.llm_concurrency if uses_model else extract_slots,
                       (TASK_RUNNER_WORKERS - extract_slots - 8) * 2 // 3)  # with the prefetch, below
    if uses_model and review_slots < policy.llm_concurrency:
        logger.warning("LLM concurrency %d capped at %d by the flow's %d task-runner workers",
                       policy.llm_concurrency, review_slots, TASK_RUNNER_WORKERS)
    max_in_flight = len(objects) + 1 if batch else 2 * review_slots + extract_slots  # batch: all wait for it
    batch_chunks: list[tuple[Chunk, str]] = []  # batch mode: deep chunks collected for one Message Batch
    review_queue: deque[tuple[tuple[str, int], Chunk, str]] = deque()  # chunks waiting for a review slot
    in_flight = extracting = reviews_running = 0

    while outstanding or to_extract or deferred_first or batch_chunks or review_queue:
        while (deferred_first or to_extract) and in_flight < max_in_flight and extracting < extract_slots and (
                batch or len(review_queue) + reviews_running < 2 * review_slots):
            fp = (deferred_first or to_extract).popleft()
            claim = claim_document(db, fp.sha256, run_id, worker, settings.claim_lease_s, PROMPT_VERSION,
                                   reviewer.model, reviewed_since)
            if claim.state == ClaimState.held:  # another live run is reviewing it
                finish(fp, DocumentStatus.deferred, claim.reason)
                continue
            if claim.state == ClaimState.reviewed:  # another run finished it meanwhile
                stored = load_document(db, fp.sha256)
                finish(fp.model_copy(update={"pages": stored.pages if stored else 0}), DocumentStatus.reviewed,
                       claim.reason, reused=True)
                continue
            claimed.add(fp.sha256)
            if claim.taken_over_from:
                logger.info("Took over %s from run %s (its claim expired)", fp.source.name, claim.taken_over_from)
            in_flight += 1
            extracting += 1
            submit("extract", fp.sha256, extract_document.submit(quote(fp), settings.limits))
        while review_queue and reviews_running < review_slots + max(1, review_slots // 2):
            review_key, chunk, name = review_queue.popleft()
            reviews_running += 1
            submit("review", review_key, review_task.submit(quote(reviewer), quote(chunk), name, db, run_id,
                                                            quote(policy)))
        if batch_chunks and not outstanding:  # every document is chunked: one batch for all of them
            sent = [(c.document_sha256, c.index) for c, _ in batch_chunks]
            submit("batch", sent, review_batch.submit(quote(reviewer), quote(batch_chunks), db,
                                                        batch_poll_s, batch_timeout_s))
            batch_chunks = []
        if not outstanding:  # the documents taken above all ended without a task to wait for
            continue
        kind, key, future = _next_event(events, leases)
        outstanding -= 1
        value, error = _result(future)
        if kind == "extract":
            extracting -= 1
        if kind == "review" and not batch:  # batch results come as "review" events too, from no slot
            reviews_running -= 1
        if kind == "extract" and error is not None:
            in_flight -= 1
        if kind in ("fingerprint", "extract") and error is not None:
            obj = next(o for o in objects if o.uri == key) if kind == "fingerprint" else None
            lost = IngestOutcome(source=obj) if obj else None
            if lost is None:  # an extraction crashed: find its fingerprint by sha256
                lost = IngestOutcome(source=next(o for o in objects if first_source.get(key) == o.uri), sha256=key)
            lost = lost.model_copy(update={"failure": FailureKind.unreadable})
            finish(lost, DocumentStatus.failed, f"internal error during {kind}: {error}")
            continue
        if kind == "fingerprint":
            fp: IngestOutcome = value
            if fp.failure:
                finish(fp, DocumentStatus.failed, fp.reason)
            elif fp.sha256 in concluded:
                end_copy(fp)
            elif fp.sha256 in first_source:
                waiting_copies.setdefault(fp.sha256, []).append(fp)
            elif fp.sha256 in already:
                first_source[fp.sha256] = fp.source.uri
                stored = load_document(db, fp.sha256)
                fp = fp.model_copy(update={"pages": stored.pages if stored else 0})
                finish(fp, DocumentStatus.reviewed,
                       "unchanged since an earlier review (same sha256, prompt version and model); findings reused",
                       reused=True)
            else:
                first_source[fp.sha256] = fp.source.uri
                (deferred_first if fp.sha256 in previously_deferred else to_extract).append(fp)

        elif kind == "extract":
            got: IngestOutcome = value
            if not got.ok:
                in_flight -= 1
                finish(got, DocumentStatus.failed, got.reason)
                continue
            doc = cap_page_chars(got.document, settings.limits.max_chars_per_page)
            state = _DocState(outcome=got)
            state.chunks = chunk_document(quote(doc), settings.chunk_chars, settings.chunk_overlap_chars)
            decisions = route_chunks(quote(state.chunks), routing_mode, settings.router_threshold)
            billable = [review_unit(c, d) for c, d in zip(state.chunks, decisions) if d.route == "deep"] if uses_model else []
            admission = admit_document(state.chunks, settings.limits, budget, billable=billable)
            if admission.status is not None:  # too many chunks (failed) or over the token budget (deferred)
                in_flight -= 1
                finish(got.model_copy(update={"failure": admission.failure}), admission.status, admission.reason)
                continue
            save_chunks(db, quote(state.chunks), chunker, quote(decisions))
            screen_document(db, quote(got.document), quote(state.chunks), settings.limits.max_chars_per_page)
            # From here on a deep chunk is its review unit: only its routed segments go to review.
            state.chunks = [review_unit(c, d) for c, d in zip(state.chunks, decisions)]
            state.index = DocumentIndex.build(doc)
            docs[key] = state
            for chunk, decision in zip(state.chunks, decisions):
                if decision.route != "deep":
                    continue  # boilerplate: not sent to review (decision and reason are stored)
                state.pending += 1
                if batch:
                    batch_chunks.append((chunk, doc.source.name))
                    continue
                review_queue.append(((key, chunk.index), chunk, doc.source.name))
            if not state.pending:  # no chunks, or none routed deep
                _conclude(db, run_id, key, state, reviewer, finish)
                del docs[key]
                in_flight -= 1

        elif kind == "batch":  # each chunk's result goes through the "review" branch below
            reviews = value if error is None else [(sha, idx, _Done(error=error)) for sha, idx in key]
            for sha, idx, review in reviews:
                outstanding += 1
                events.put(("review", (sha, idx), review if isinstance(review, _Done) else _Done(review)))

        elif kind == "review":
            sha, idx = key
            state = docs[sha]
            state.pending -= 1
            if error is not None and uses_model and policy.on_open == "cached":
                value = cached_review(db, quote(state.chunks[idx]), PROMPT_VERSION, reviewer.model)
                if value is not None:
                    error = None  # same chunk content, prompt version and model: reuse the stored result
            if error is not None:
                state.problems.append(f"chunk {idx + 1}: {error}")
            else:
                result: ChunkReview = value
                if uses_model and result.outcome == ReviewOutcome.ok and not result.cached:
                    store_review(db, quote(state.chunks[idx]), PROMPT_VERSION, reviewer.model, quote(result))
                if result.calls:
                    save_llm_calls(db, run_id, sha, idx, result.calls)
                if result.outcome != ReviewOutcome.ok:
                    state.problems.append(f"chunk {idx + 1}: {result.outcome.value} ({result.detail})")
                    state.terminal_problem |= result.outcome in _TERMINAL_OUTCOMES
                elif result.findings:
                    chunk = state.chunks[idx]
                    neighbours = [c for c in state.chunks if abs(c.index - idx) == 1]
                    state.pending += 1
                    submit("factcheck", sha,
                           fact_check_findings.submit(quote(result.findings), quote(chunk), quote(neighbours),
                                                     quote(state.index)))

        elif kind == "factcheck":
            state = docs[key]
            state.pending -= 1
            if error is not None:
                state.problems.append(f"fact-check failed: {error}")
            else:
                state.checked.extend(value)

        if kind in ("review", "factcheck"):
            sha = key[0] if kind == "review" else key
            state = docs[sha]
            if state.pending == 0:
                _conclude(db, run_id, sha, state, reviewer, finish)
                del docs[sha]
                in_flight -= 1

    if callable(getattr(reviewer, "close", None)):
        reviewer.close()  # the SDK client's connections; every review is done
    remove_downloads(objects)  # the run's S3 download folder, if any

    for obj in objects:  # safety net: nothing is lost, even on an internal error
        if obj.uri not in ended:
            end(IngestOutcome(source=obj, failure=FailureKind.unreadable), DocumentStatus.failed,
                "internal error: the document did not reach a terminal state", 0, False)
    release_claims(db, run_id)  # none should be left; after an internal error, free them now

    elapsed = time.monotonic() - started
    metrics = compute_run_metrics(db, run_id, PROMPT_VERSION, reviewer.model, elapsed, chunker=chunker)
    metrics.update(counters.reset())  # retries, breaker_openings
    finish_run(db, run_id, metrics)
    evaluate_alerts(db, run_id, AlertThresholds.from_settings(settings))
    offline = reviewer.name == "rules"
    report = write_report(db, run_id, out_dir, offline)
    report_html = str(Path(out_dir) / "report.html")
    publish_artifacts(quote(report), str(Path(out_dir).resolve() / "report.html"))
    emit_document_events(quote(report))  # docreview.finding.high-risk, docreview.document.failed
    logger.info("Run %s finished: %s", run_id, {k: report["run"]["metrics"][k] for k in
                                               ("documents_reviewed", "documents_deferred", "documents_failed")})
    return {
        "run_id": run_id,
        "report_json": str(Path(out_dir) / "report.json"),
        "report_html": report_html,
        "backend": reviewer.name,
        "model": reviewer.model,
        "offline": offline,
        "metrics": report["run"]["metrics"],
        "documents": [{k: d[k] for k in ("file_name", "status", "reason")} for d in report["documents"]],
    }


def _forget_task_results() -> None:
    """Empty Prefect's map from task results to task-run states for this flow run.

    Prefect records every task result (and each item one level inside it) in
    ``FlowRunContext.run_results`` to draw dependency links when a result is passed unquoted to
    another task; entries are never dropped, so the map grows with every task run of a long
    run. This flow passes results to tasks inside ``quote(...)``, which skips that lookup, so the
    map is emptied whenever a document ends.
    """
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is not None:
        context.run_results.clear()


class _Done:
    """A finished result shaped like a future (``result()``), for batch results fed to the loop."""

    def __init__(self, value: Any = None, error: str | None = None) -> None:
        self.value, self.error = value, error

    def result(self) -> Any:
        """The value, or raises ``RuntimeError`` with the batch's error."""
        if self.error is not None:
            raise RuntimeError(self.error)
        return self.value


def _next_event(events: queue.Queue, leases: LeaseKeeper) -> tuple[str, Any, PrefectFuture]:
    """The next finished task from ``events``; renews the run's claims (``leases``) while waiting."""
    while True:
        leases.renew_if_due()
        try:
            return events.get(timeout=leases.timeout())
        except queue.Empty:
            continue


def _result(future: PrefectFuture) -> tuple[Any, str | None]:
    """``(value, None)`` for a completed task, ``(None, "ErrorType: message")`` for a failed one."""
    try:
        return future.result(), None
    except Exception as exc:  # noqa: BLE001 - a failed task is an outcome to record, not a crash
        return None, f"{type(exc).__name__}: {str(exc)[:300]}"


def _conclude(db: str, run_id: str, sha: str, state: _DocState, reviewer: Any, finish: Any) -> None:
    """Persist a document whose chunk reviews and fact-checks are all done, and end it."""
    from tasks.check.consistency import check_consistency
    from tasks.check.absences import find_absences
    from tasks.store.persist import save_absences

    checked = sorted(state.checked, key=lambda c: (c.chunk_index, c.ordinal))
    checked = check_consistency(quote(checked), quote(state.index), sha, PROMPT_VERSION, reviewer.model)
    stored = save_findings(db, run_id, sha, reviewer.name, reviewer.model, PROMPT_VERSION, quote(checked))
    if not state.problems:
        save_absences(db, run_id, sha, PROMPT_VERSION, reviewer.model,
                      quote(find_absences(checked, [c.index for c in state.chunks])))
        mark_document_reviewed(db, sha, PROMPT_VERSION, reviewer.model, reviewer.name, run_id,
                               len(state.chunks), stored)
        record_drift(db, run_id, sha, reviewer.model, PROMPT_VERSION)
        finish(state.outcome, DocumentStatus.reviewed, None, stored)
        return
    summary = "; ".join(state.problems[:3]) + (f"; and {len(state.problems) - 3} more" if len(state.problems) > 3 else "")
    if state.terminal_problem:
        outcome = state.outcome.model_copy(update={"failure": FailureKind.review_error})
        finish(outcome, DocumentStatus.failed, f"review failed: {summary}", stored)
    else:
        finish(state.outcome, DocumentStatus.deferred,
               f"review incomplete, will be retried by the next run: {summary}", stored)
