"""The review run's shared state and the small helpers that bound its concurrency.

- :class:`Run` holds what every document's pipeline needs (settings, backend, policy, the run id
  and its limits); :func:`open_run` makes it, and :func:`close_run` computes and stores the run's
  metrics when every document has ended.
- :class:`RunBook` is the run's ledger of documents: each source object ends exactly once
  (``reviewed``, ``deferred`` or ``failed`` with a reason), copies of one content end with their
  first object, claims are released, and a safety net ends anything left over.
- :class:`DocumentPool` runs document pipelines side by side, at most ``size`` at a time, and
  renews the run's claims while it waits; :class:`Slots` bounds a kind of task (extractions,
  chunk reviews in flight) so the task runner's workers are never all waiting on one kind.

Numbers: the task runner has :data:`TASK_RUNNER_WORKERS` threads. At most ``1.5 × review slots``
chunk reviews are submitted at a time (the calls plus a prefetch that waits on the LLM slot
itself, so a freed slot is taken at once); ``review slots`` is the policy's LLM concurrency,
capped so extractions and fact-checks keep workers. A new document starts while fewer than
``2 × review slots + extraction slots`` are in flight, so the review slots never wait for text and
memory stays flat in the number of documents.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager, suppress
from contextvars import copy_context
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from prefect import Task, get_run_logger
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run as runtime_flow_run
from sqlmodel import Session

from flows import progress
from flows.quoting import quote
from schemas.documents import DocumentStatus, FailureKind, IngestOutcome, SourceObject
from schemas.findings import PROMPT_VERSION
from schemas.policy import ResiliencePolicy
from schemas.settings import Settings, resolve_database_url
from schemas.tables import utcnow
from tasks.check.injection import TokenBudget
from tasks.check.playbook import LoadedPlaybook, load_playbook
from tasks.check.support import checks_version
from tasks.check.support import require_model as require_support_model
from tasks.ingest.s3 import discard_download, remove_downloads
from tasks.observe.events import emit_run_misconfigured, tag_flow_run
from tasks.observe.metrics import compute_run_metrics
from tasks.observe.monitoring import AlertThresholds, evaluate_alerts
from tasks.observe.playbook import record_playbook_results
from tasks.review.backends.base import ReviewBackend
from tasks.review.chunk import CHUNKER_VERSION
from tasks.review.resilience import (
    RunMisconfigured,
    counters,
    ensure_concurrency_limit,
    llm_slot,
    misconfiguration,
    retry_options,
)
from tasks.review.reviewer import error_text, make_backend, review_chunk
from tasks.review.route import resolve_mode
from tasks.store.claims import LeaseKeeper, release_claim, release_claims, worker_name
from tasks.store.persist import (
    finish_run,
    reviewed_keys,
    save_document_outcome,
    save_source_object,
    start_run,
    unit_of_work,
)

T = TypeVar("T")
R = TypeVar("R")

#: Worker threads of the review flow's task runner (see the module docstring).
TASK_RUNNER_WORKERS = 64


class Slots:
    """At most ``size`` holders at a time: ``with slots:`` around a blocking step, or
    :meth:`submit` to hold a slot for as long as a submitted task runs."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._semaphore = threading.BoundedSemaphore(self.size)
        self._turn = threading.Lock()

    def __enter__(self) -> Slots:
        self._semaphore.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._semaphore.release()

    def submit(self, task: Task, *args: Any, **kwargs: Any) -> PrefectFuture:
        """``task.submit(*args, **kwargs)`` once a slot is free; the slot is freed when the task ends."""
        self._semaphore.acquire()
        try:
            future = task.submit(*args, **kwargs)
        except BaseException:
            self._semaphore.release()
            raise
        future.add_done_callback(lambda _: self._semaphore.release())
        return future

    def submit_in_turn(self, task: Task, calls: list[tuple[tuple, dict]]) -> list[PrefectFuture]:
        """Submit ``task(*args, **kwargs)`` for every ``(args, kwargs)`` of ``calls``, one caller at
        a time: a document's chunk reviews all go ahead of the next document's, so documents
        conclude one after another (less work in flight, less lost when a run is killed)."""
        with self._turn:
            return [self.submit(task, *args, **kwargs) for args, kwargs in calls]


class NothingReviewed(RuntimeError):
    """The run had documents and none ended reviewed (every one failed or was deferred); the flow
    run ends Failed. ``result`` is the flow's result (see :func:`flows.review.review_documents`),
    so a caller can still print the summary and the report path."""

    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message, result)  # both in args: the exception pickles with its result
        self.result = result

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass
class Run:
    """One run of the review flow: what each document's pipeline reads (never a live client of
    its own: the backend is shared, its SDK client thread-safe)."""

    id: str
    source: str
    out_dir: str
    settings: Settings
    reviewer: ReviewBackend
    policy: ResiliencePolicy
    routing_mode: str
    rereview: bool
    batch: bool
    started: float = field(default_factory=time.monotonic)
    worker: str = field(default_factory=worker_name)
    reviewed_since: datetime | None = None  # rereview: only reviews made since the run started count
    already_reviewed: set[str] = field(default_factory=set)  # sha256 reviewed with this ledger version and model
    recheck: set[str] = field(default_factory=set)  # sha256 reviewed with this prompt and model, other checks
    checks_version: str = ""  # tasks.check.support.checks_version(), set by open_run
    extraction_slots: Slots = field(default_factory=lambda: Slots(2))
    review_slots: Slots = field(default_factory=lambda: Slots(2))
    documents_in_flight: int = 6
    budget: TokenBudget = field(default_factory=lambda: TokenBudget(None))  # unlimited unless open_run sets it
    budget_lock: threading.Lock = field(default_factory=threading.Lock)
    review_task: Task | None = None
    batch_poll_s: float = 60.0
    batch_timeout_s: float = 86_400.0
    profile: str = "auto"  # auto | contract | filing (schemas.filings.Profile), forced for every document
    stopping: threading.Event = field(default_factory=threading.Event)  # set when the run is interrupted
    warmed: threading.Event = field(default_factory=threading.Event)  # the prompt-cache warm-up was tried
    warm_lock: threading.Lock = field(default_factory=threading.Lock)
    playbook: LoadedPlaybook | None = None  # the team's rules, checked on every reviewed document
    held_elsewhere: set[str] = field(default_factory=set)  # deferred: another live run holds their claim
    flow_run_id: str = ""  # the Prefect flow run's id ("" outside a flow run); usually ``id`` itself
    previous: str | None = None  # sha256 of the previous version of the run's contract (review --previous)

    @property
    def label(self) -> str:
        """The run as operators see it: ``3f2a1b2c`` (the id's first 8 characters, as in
        ``docreview runs``), or ``3f2a1b2c (flow run 9e8d7c6b)`` when the run id is not the flow
        run's (see :func:`new_run_id`)."""
        return run_label(self.id, self.flow_run_id)

    @property
    def db(self) -> str:
        """The run's database URL."""
        return self.settings.database_url

    @property
    def prompt_version(self) -> str:
        """The prompt version the run's reviews are stored and reused under (the backend's: it
        names the playbook's party when the prompt does, :func:`tasks.review.backends.prompt.prompt_version_for`)."""
        return getattr(self.reviewer, "prompt_version", PROMPT_VERSION)

    @property
    def ledger_version(self) -> str:
        """The key a document's review is marked reviewed and reused under, besides its model:
        ``"<prompt version>; checks <checks version>"``. A document stored under the same prompt version
        and model but other checks (a new judge, a changed fact-check) is not reused as it was: it is
        checked again from its stored review (:attr:`recheck`)."""
        return f"{self.prompt_version}; checks {self.checks_version}"

    @property
    def uses_model(self) -> bool:
        """True for the model backends (anthropic, bedrock), False for the offline rules."""
        return self.reviewer.name != "rules"

    @property
    def chunker(self) -> str:
        """The chunker's version and parameters, stored with every chunk."""
        return f"{CHUNKER_VERSION}:{self.settings.chunk_chars}:{self.settings.chunk_overlap_chars}"

    @property
    def own_files(self) -> list[str]:
        """Paths the run writes (report folder, SQLite file): never listed as documents."""
        db = self.db
        return [self.out_dir] + ([db.split(":///", 1)[1]] if db.startswith("sqlite:///") else [])


def run_label(run_id: str, flow_run_id: str | None) -> str:
    """``<run id[:8]>``, with ``(flow run <flow-run id[:8]>)`` when the two differ."""
    if not flow_run_id or flow_run_id == run_id:
        return run_id[:8]
    return f"{run_id[:8]} (flow run {flow_run_id[:8]})"


def new_run_id(database_url: str, flow_run_id: str | None) -> str:
    """The id of a new run: its Prefect flow run's id, so logs, reports, ``docreview runs`` and the
    Prefect UI name a run alike; a new UUID outside a flow run, or when a ``runs`` row already has
    that id (the same flow run started again, e.g. a retry from the Prefect UI: each attempt is a
    run of its own, its ``flow_run_id`` column naming the flow run)."""
    from schemas.tables import RunRow

    if flow_run_id:
        with unit_of_work(database_url) as session:
            if session.get(RunRow, flow_run_id) is None:
                return flow_run_id
    return str(uuid.uuid4())


def open_run(
    source: str,
    out_dir: str,
    database_url: str | None,
    backend: str | None,
    rereview: bool,
    policy: ResiliencePolicy | None,
    routing: str,
    batch: tuple[float, float] | None = None,
    playbook: str | None = None,
    profile: str = "auto",
    previous: str | None = None,
) -> Run:
    """Settings, backend and policy for a new run, its ``runs`` row and its concurrency bounds.
    ``batch``: ``(poll interval, timeout)`` in seconds for Message Batches mode, None otherwise.
    ``playbook``: a playbook file (else ``DOCREVIEW_PLAYBOOK``, else none).
    ``profile``: ``auto`` (classify each document), ``contract`` or ``filing`` (force one).
    ``previous``: the sha256 of the document the run's contract is a new version of (else found by
    title and parties, :mod:`tasks.observe.versions`).

    ``database_url``: the parameter as :func:`schemas.settings.resolve_database_url` reads it (a password is
    never a parameter: masked as ``***``, completed from ``DOCREVIEW_DATABASE_URL``).

    Raises ``ValueError`` for an unknown ``routing``, for ``batch`` without the anthropic backend, for a
    ``database_url`` holding a password or masking one the environment cannot complete,
    :class:`tasks.check.playbook.PlaybookError` for a playbook that cannot be used, and
    :class:`tasks.review.reviewer.BackendConfigError` when the backend cannot be built, and
    ``ValueError`` naming the support model's file when it is missing or unreadable.
    """
    if profile not in ("auto", "contract", "filing"):
        raise ValueError(f"unknown profile {profile!r} (choose auto, contract or filing)")
    require_support_model()  # a missing or broken model file fails the run at once, not every document
    overrides: dict[str, Any] = {"backend": backend} if backend else {}  # None: DOCREVIEW_BACKEND
    database_url = resolve_database_url(database_url)  # a masked password is completed from the environment
    if database_url:
        overrides["database_url"] = database_url
    settings = Settings(**overrides)
    playbook_path = playbook or settings.playbook
    rules = load_playbook(playbook_path) if playbook_path else None
    if rules is not None and rules.playbook.party:  # the model backends review for the playbook's party
        settings = settings.model_copy(update={"review_party": rules.playbook.party})
    reviewer = make_backend(settings)
    tag_flow_run(reviewer.name)  # docreview, backend:<name>, trigger:<event|schedule|deployment|manual>
    policy = policy_for(policy, settings)
    poll_s, timeout_s = batch or (60.0, 86_400.0)
    if batch is not None and reviewer.name != "anthropic":
        raise ValueError(f"batch mode needs the anthropic backend (got {reviewer.name})")
    flow_run_id = str(runtime_flow_run.id or "")
    run = Run(
        id=new_run_id(settings.database_url, flow_run_id),
        flow_run_id=flow_run_id,
        source=source,
        out_dir=out_dir,
        settings=settings,
        reviewer=reviewer,
        policy=policy,
        routing_mode=resolve_mode(routing, reviewer.name),
        rereview=rereview,
        batch=batch is not None,
        batch_poll_s=poll_s,
        batch_timeout_s=timeout_s,
        reviewed_since=utcnow() if rereview else None,
        budget=TokenBudget(settings.limits.max_run_tokens or None),
        playbook=rules,
        profile=profile,
        previous=previous,
    )
    if run.uses_model:
        ensure_concurrency_limit(policy)
    counters.reset()
    misconfiguration.reset()
    run.review_task = review_chunk.with_options(**retry_options(policy))
    _size_slots(run)
    run.checks_version = checks_version()
    with unit_of_work(run.db) as session:
        if not rereview:
            run.already_reviewed = reviewed_keys(session, run.ledger_version, reviewer.model)
            run.recheck = (
                reviewed_keys(session, run.prompt_version, reviewer.model, any_checks=True) - run.already_reviewed
            )
        start_run(session, run.id, source, reviewer.name, reviewer.model, run.prompt_version, flow_run_id)
    return run


def policy_for(policy: ResiliencePolicy | None, settings: Settings) -> ResiliencePolicy:
    """The run's resilience policy: ``policy`` as given, with ``call_timeout_s`` taken from the
    ``DOCREVIEW_LLM_TIMEOUT_S`` setting (``settings.llm_timeout_s``, seconds) unless the policy
    sets it; the default policy when None."""
    if policy is None:
        return ResiliencePolicy(call_timeout_s=settings.llm_timeout_s)
    if "call_timeout_s" in policy.model_fields_set:
        return policy
    return policy.model_copy(update={"call_timeout_s": settings.llm_timeout_s})


def _size_slots(run: Run) -> None:
    extractions = max(2, run.settings.max_workers)  # each in a child process
    calls = run.policy.llm_concurrency if run.uses_model else extractions
    calls_cap = (TASK_RUNNER_WORKERS - extractions - 8) * 2 // 3  # with the prefetch, below the workers
    if run.uses_model and calls > calls_cap:
        get_run_logger().warning(
            "LLM concurrency %d capped at %d by the flow's %d task-runner workers",
            calls,
            calls_cap,
            TASK_RUNNER_WORKERS,
        )
    calls = min(calls, calls_cap)
    run.extraction_slots = Slots(extractions)
    run.review_slots = Slots(calls + max(1, calls // 2))
    run.documents_in_flight = 2 * calls + extractions


@contextmanager
def stop_cleanly_when_interrupted(run: Run) -> Iterator[None]:
    """On Ctrl-C or a stop signal (any exception that is not an ``Exception``): tell the document
    pipelines to stop at their next step, release the run's claims and mark the run ``interrupted``
    in ``runs``; the documents it did not end are left for the next run. The interruption goes on."""
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, Exception):
            raise
        run.stopping.set()
        with suppress(Exception), unit_of_work(run.db) as session:  # the database may be what is going away
            release_claims(session, run.id)
            finish_run.fn(session, run.id, {"wall_s": time.monotonic() - run.started}, status="interrupted")
        raise


def warm_up(run: Run) -> None:
    """Once per model run, before the first extraction (the first document found to need a
    review waits for it; a run that reuses every document makes no call): one request with the
    run's exact cached prompt prefix (the backend's ``warm_cache``), so the first concurrent
    review calls read the prompt cache instead of each writing it. It is also the run's start-up
    check: a key, model id or request schema the API refuses stops the run here
    (:data:`misconfiguration`), before anything is extracted. A transient failure only costs the
    warm cache. Not in batch mode (the batch has its own 1-hour cache)."""
    warm = getattr(run.reviewer, "warm_cache", None)
    if not run.uses_model or run.batch or warm is None or run.warmed.is_set():
        return
    with run.warm_lock:
        if not run.warmed.is_set():
            _warm(run, warm)
            run.warmed.set()


def _warm(run: Run, warm: Callable[[], list[Any]]) -> None:
    from tasks.review.backends.anthropic_backend import WARMUP_CHUNK_INDEX
    from tasks.review.retry import is_permanent
    from tasks.store.persist import save_llm_calls

    try:  # the warm-up call holds an LLM slot like every other call to the API
        with misconfiguration.admit(), llm_slot(run.policy):
            records = warm()
    except Exception as exc:
        records = getattr(exc, "llm_calls", None) or []
        if is_permanent(exc):
            misconfiguration.trip(exc)
        else:
            get_run_logger().warning(
                "prompt-cache warm-up failed (%s: %s); reviewing without it", type(exc).__name__, str(exc)[:200]
            )
    if records:
        with unit_of_work(run.db) as session:
            save_llm_calls.fn(session, run.id, "", WARMUP_CHUNK_INDEX, records)


def stop_if_misconfigured(run: Run, result: dict[str, Any]) -> None:
    """When the API refused the run's requests (:data:`tasks.review.resilience.misconfiguration`):
    emit ``docreview.run.misconfigured`` and raise :class:`tasks.review.resilience.RunMisconfigured`
    (the flow run ends Failed with its message) naming what to check."""
    if not misconfiguration.tripped:
        return
    cause = misconfiguration.cause or ""
    emit_run_misconfigured(
        run.id,
        run.flow_run_id or None,
        run.reviewer.name,
        run.reviewer.model,
        cause,
        int(result["metrics"]["documents_deferred"]),
    )
    raise RunMisconfigured(
        f"{cause} (check the API key, the model id {run.reviewer.model!r} and the request "
        f"schema; the {int(result['metrics']['documents_deferred'])} document(s) not reviewed "
        "are deferred to the next run)"
    )


def apply_playbook(run: Run) -> None:
    """Check every document the run reviewed against the run's playbook, if it has one, and store
    the results (:func:`tasks.observe.playbook.record_playbook_results`); the run's metrics, report,
    artifacts and events then show them."""
    if run.playbook is not None:
        counts = record_playbook_results(run.db, run.id, run.playbook)
        get_run_logger().info(
            "Playbook %r: %d deviation(s), %d unknown, %d pass",
            run.playbook.name,
            counts["deviation"],
            counts["unknown"],
            counts["pass"],
        )


def close_run(run: Run, book: RunBook) -> dict[str, float]:
    """End the run: close the backend's client, remove downloads, end any object the pipelines
    left (the safety net), release claims, store the metrics and evaluate the alerts.

    Returns the run's metrics (see :func:`tasks.observe.metrics.compute_run_metrics`).
    """
    close = getattr(run.reviewer, "close", None)
    if callable(close):
        close()  # the SDK client's connections; every review is done
    remove_downloads(book.objects)  # the run's S3 download folder, if any
    book.end_leftovers()
    with unit_of_work(run.db) as session:
        release_claims(session, run.id)  # none should be left; after an internal error, free them now
    elapsed = time.monotonic() - run.started
    metrics = compute_run_metrics(run.db, run.id, run.prompt_version, run.reviewer.model, elapsed, chunker=run.chunker)
    metrics.update(counters.reset())  # retries, breaker_openings
    with unit_of_work(run.db) as session:
        finish_run(session, run.id, metrics)
    evaluate_alerts(run.db, run.id, AlertThresholds.from_settings(run.settings))
    return metrics


@dataclass
class Document:
    """One content (sha256) to review: its first source object, fingerprinted, and the later
    objects of the run with the same bytes (they end with it, without a review of their own)."""

    outcome: IngestOutcome
    copies: list[IngestOutcome] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The first object's file name."""
        return self.outcome.source.name

    @property
    def sha256(self) -> str:
        """The content's sha256 (a Document is made of a fingerprinted object only)."""
        assert self.outcome.sha256 is not None, "fingerprinted"
        return self.outcome.sha256


@dataclass
class Conclusion:
    """A document's conclusion in the making (:meth:`RunBook.concluding`): ``session`` is its unit of
    work, into which the block writes what concludes the document, and :meth:`ends` states how it ends."""

    session: Session
    outcome: IngestOutcome
    status: DocumentStatus | None = None
    reason: str | None = None
    findings: int = 0
    reused: bool = False

    def ends(
        self,
        status: DocumentStatus,
        reason: str | None,
        findings: int = 0,
        reused: bool = False,
        failure: FailureKind | None = None,
    ) -> None:
        """The document ends ``status`` with ``reason`` and ``findings`` stored (``reused``: an earlier
        review's); ``failure`` sets the outcome's failure kind."""
        self.status, self.reason, self.findings, self.reused = status, reason, findings, reused
        if failure is not None:
            self.outcome = self.outcome.model_copy(update={"failure": failure})


class RunBook:
    """The run's ledger of source objects: each ends exactly once, thread-safe.

    ``objects`` are the run's listed objects; :meth:`end_leftovers` fails any that no pipeline
    ended (an internal error), so nothing is lost. An object's end (its ``run_documents`` row, and
    for a bucket object its ``source_objects`` row) is one unit of work; a document's conclusion
    (:meth:`concluding`) adds what concludes it to the same one.
    """

    def __init__(self, run: Run, objects: list[SourceObject]) -> None:
        self.run, self.objects = run, objects
        self._lock = threading.Lock()
        self._ended: set[str] = set()
        self._claimed: set[str] = set()
        self._first: dict[str, str] = {}  # sha256 -> uri of the first object with that content
        self._concluded: dict[str, tuple[IngestOutcome, DocumentStatus, str | None, int, bool]] = {}
        self._waiting: dict[str, list[IngestOutcome]] = {}

    def end(
        self,
        outcome: IngestOutcome,
        status: DocumentStatus,
        reason: str | None,
        findings: int = 0,
        reused: bool = False,
    ) -> None:
        """Record one object's terminal state (one transaction), free its download, advance the progress bar."""
        with unit_of_work(self.run.db) as session:
            self._record(session, outcome, status, reason, findings, reused)
        self._ended_now(outcome, status, reason)

    def _record(
        self,
        session: Session,
        outcome: IngestOutcome,
        status: DocumentStatus,
        reason: str | None,
        findings: int,
        reused: bool,
    ) -> None:
        """Write one object's terminal state into ``session`` (its run-document row; a bucket object's ETag)."""
        run = self.run
        state = save_document_outcome(
            session, run.id, quote(outcome), status, reason, findings, reused, return_state=True
        )  # Failed for a failed object: its concluding task run shows it; the flow run goes on
        if state.is_failed() and isinstance(error := state.result(raise_on_failure=False), BaseException):
            raise error  # the write itself failed (an internal error), as when the task is called plainly
        if outcome.source.is_s3:  # the ETag/version fetched
            save_source_object(session, run.id, quote(outcome))

    def _ended_now(self, outcome: IngestOutcome, status: DocumentStatus, reason: str | None) -> None:
        """What follows an object's committed end: its download freed, the ledger, log and progress bar."""
        if outcome.source.is_s3:  # the downloaded bytes are no longer needed
            discard_download(outcome.source)
        with self._lock:
            self._ended.add(outcome.source.uri)
        if status is not DocumentStatus.reviewed:
            get_run_logger().warning("%s %s: %s", outcome.source.name, status.value, reason)
        progress.advance(outcome.source.name, status.value)
        _forget_task_results()  # memory stays flat in the number of documents

    def first_of_content(self, outcome: IngestOutcome) -> bool:
        """True when ``outcome`` is the run's first object with its sha256 (it is reviewed); a
        later copy is ended with the first one's result, now or when that one concludes."""
        sha = outcome.sha256 or ""
        with self._lock:
            if sha not in self._first:
                self._first[sha] = outcome.source.uri
                return True
            done = self._concluded.get(sha)
            if done is None:
                self._waiting.setdefault(sha, []).append(outcome)
                return False
        self._end_copy(outcome, done)
        return False

    def claimed(self, sha256: str) -> None:
        """The run holds the claim on ``sha256`` until its document concludes."""
        with self._lock:
            self._claimed.add(sha256)

    def conclude(
        self,
        outcome: IngestOutcome,
        status: DocumentStatus,
        reason: str | None,
        findings: int = 0,
        reused: bool = False,
    ) -> None:
        """End a document's first object, release its claim, and end its copies the same way."""
        with self.concluding(outcome) as conclusion:
            conclusion.ends(status, reason, findings, reused)

    @contextmanager
    def concluding(self, outcome: IngestOutcome) -> Iterator[Conclusion]:
        """A document's conclusion as one unit of work: the block writes what concludes the document
        into ``conclusion.session`` and states its end (:meth:`Conclusion.ends`); when the block ends,
        the first object's outcome is written into the same session and all of it commits at once.
        Then the claim is released and the document's copies end the same way. An exception in the
        block (or in a write) rolls all of it back: nothing of the conclusion is stored, the
        exception goes on, and the document is still the pipeline's to end (:meth:`fail`).
        Raises ``RuntimeError`` when the block states no end."""
        with unit_of_work(self.run.db) as session:
            conclusion = Conclusion(session=session, outcome=outcome)
            yield conclusion
            if conclusion.status is None:
                raise RuntimeError(f"the conclusion of {outcome.source.name} stated no end")
            ended = conclusion.outcome
            self._record(session, ended, conclusion.status, conclusion.reason, conclusion.findings, conclusion.reused)
        self._concluded_now(ended, conclusion.status, conclusion.reason, conclusion.findings, conclusion.reused)

    def _concluded_now(
        self, outcome: IngestOutcome, status: DocumentStatus, reason: str | None, findings: int, reused: bool
    ) -> None:
        """After a first object's end is committed: the ledger, the claim released, its copies ended."""
        self._ended_now(outcome, status, reason)
        sha = outcome.sha256 or ""
        with self._lock:
            release = sha in self._claimed
            self._claimed.discard(sha)
            copies: list[IngestOutcome] = []
            if sha and self._first.get(sha) == outcome.source.uri:
                done = (outcome.model_copy(update={"document": None}), status, reason, findings, reused)
                self._concluded[sha] = done  # kept without the text: memory stays flat
                copies = self._waiting.pop(sha, [])
        if release:
            with unit_of_work(self.run.db) as session:
                release_claim(session, sha, self.run.id)
        for copy in copies:
            self._end_copy(copy, self._concluded[sha])

    def _end_copy(self, copy: IngestOutcome, done: tuple[IngestOutcome, DocumentStatus, str | None, int, bool]) -> None:
        primary, status, reason, findings, reused = done
        note = f"same content as {primary.source.name}"
        self.end(
            copy.model_copy(update={"pages": primary.pages, "failure": primary.failure}),
            status,
            f"{note}; {reason}" if reason else note,
            findings,
            reused,
        )

    def fail(self, obj: SourceObject, exc: BaseException) -> None:
        """End ``obj`` failed with the internal error ``exc`` (its claim released, its copies ended
        alike), unless it already ended."""
        with self._lock:
            if obj.uri in self._ended:
                return
            sha256 = next((sha for sha, uri in self._first.items() if uri == obj.uri), None)
        reason = f"internal error: {type(exc).__name__}: {str(exc)[:300]}"
        outcome = IngestOutcome(source=obj, sha256=sha256, failure=FailureKind.unreadable)
        if sha256:
            self.conclude(outcome, DocumentStatus.failed, reason)
        else:
            self.end(outcome, DocumentStatus.failed, reason)

    def end_leftovers(self) -> None:
        """Fail every listed object that did not reach a terminal state (nothing is lost)."""
        for obj in self.objects:
            with self._lock:
                ended = obj.uri in self._ended
            if not ended:
                self.end(
                    IngestOutcome(source=obj, failure=FailureKind.unreadable),
                    DocumentStatus.failed,
                    "internal error: the document did not reach a terminal state",
                )


class DocumentPool:
    """Runs ``pipeline(item)`` for many items, at most ``size`` at a time, each in a thread that
    carries the flow run's Prefect context (its task runs belong to the flow run). While the pool
    is open, a background thread renews the run's document claims every ``lease / 3`` seconds
    (:class:`tasks.store.claims.LeaseKeeper`), however long a step takes (a Message Batch: hours)."""

    def __init__(self, run: Run, size: int) -> None:
        self.size = max(1, size)
        self.leases = LeaseKeeper(run.db, run.id, run.settings.claim_lease_s)
        self._executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="document")
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name="claim-leases", daemon=True)

    def __enter__(self) -> DocumentPool:
        self._renewer.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._executor.shutdown(wait=exc_type is None, cancel_futures=exc_type is not None)
        self._stop.set()
        self._renewer.join(timeout=30)

    def _renew(self) -> None:
        while not self._stop.wait(self.leases.timeout()):
            try:
                self.leases.renew_if_due()
            except Exception:
                logging.getLogger("docreview").warning("renewing the run's claims failed", exc_info=True)

    def map(self, pipeline: Callable[[T], R], items: Iterable[T], on_error: Callable[[T, BaseException], R]) -> list[R]:
        """``[pipeline(item) or on_error(item, exc)]`` in input order; items start in input order.
        A pipeline that raises (an internal error) is handed to ``on_error``; the others go on."""
        results: dict[int, R] = {}
        running: dict[Future, tuple[int, T]] = {}
        pending = iter(enumerate(items))
        while True:
            while len(running) < self.size and (nxt := next(pending, None)) is not None:
                running[self._executor.submit(copy_context().run, pipeline, nxt[1])] = nxt
            if not running:
                return [results[i] for i in sorted(results)]
            done, _ = wait_futures(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                index, item = running.pop(future)
                try:
                    results[index] = future.result()
                except Exception as exc:
                    logging.getLogger("docreview").exception("document pipeline failed")
                    results[index] = on_error(item, exc)


def _forget_task_results() -> None:
    """Empty Prefect's map from task results to task-run states for this flow run.

    Prefect records every task result (and each item one level inside it) in
    ``FlowRunContext.run_results`` to draw dependency links when a result is passed unquoted to
    another task; entries are never dropped, so the map grows with every task run of a long run.
    The pipelines pass results to tasks inside ``quote(...)``, which skips that lookup, so the map
    is emptied whenever a document ends.
    """
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is not None:
        context.run_results.clear()


def result_or_error(future: Any) -> tuple[Any, str | None]:
    """``(value, None)`` for a completed task, ``(None, "ErrorType: message")`` for a failed one."""
    try:
        return future.result(), None
    except Exception as exc:
        return None, error_text(exc)
