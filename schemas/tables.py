"""SQLModel tables. Separate from the LLM-facing models in :mod:`schemas.findings`.

Every table has a natural key with a unique constraint, so that writes are idempotent
(``INSERT … ON CONFLICT``): a re-run, a retry or a duplicate event never duplicates a row.
JSON columns only hold JSON-safe values (str, int, float, bool, None, lists and dicts of them).
Times are timezone-aware UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    """Current time, UTC, timezone-aware."""
    return datetime.now(UTC)


class DocumentRow(SQLModel, table=True):
    """A document, identified by the sha256 of its bytes (same bytes = same document).

    ``kind`` is its detected format (``pdf``, ``docx``, ``image``; None for rows of earlier versions:
    PDF); ``structure`` is JSON ``{"locators": {"<unit>": label}, "changes": [TrackedChange],
    "comments": [Comment]}`` (see :func:`tasks.store.persist.structure_of`).
    """

    __tablename__ = "documents"

    id: int | None = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, unique=True, max_length=64)
    file_name: str
    size_bytes: int
    pages: int = 0
    page_flags: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    first_seen_at: datetime = Field(default_factory=utcnow)
    kind: str | None = None
    structure: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class RunRow(SQLModel, table=True):
    """One run of the review flow over a source."""

    __tablename__ = "runs"

    id: str = Field(primary_key=True, max_length=36)
    source: str
    backend: str
    model: str
    prompt_version: str
    flow_run_id: str | None = None
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    status: str = "running"


class RunDocumentRow(SQLModel, table=True):
    """The terminal state of one source object in one run: reviewed, deferred or failed."""

    __tablename__ = "run_documents"
    __table_args__ = (UniqueConstraint("run_id", "source", name="uq_run_documents_run_source"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True, foreign_key="runs.id")
    source: str
    file_name: str
    sha256: str | None = Field(default=None, index=True, max_length=64)
    status: str
    failure_kind: str | None = None
    reason: str | None = Field(default=None, sa_column=Column(Text))
    pages: int = 0
    findings: int = 0
    reused: bool = False  # reviewed in an earlier run (same sha256, prompt version, model)
    updated_at: datetime = Field(default_factory=utcnow)


class DocumentReviewRow(SQLModel, table=True):
    """Marks a document reviewed with a prompt version and model: the skip ledger."""

    __tablename__ = "document_reviews"
    __table_args__ = (UniqueConstraint("sha256", "prompt_version", "model", name="uq_document_reviews_key"),)

    id: int | None = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, max_length=64)
    prompt_version: str
    model: str
    backend: str
    run_id: str
    chunks: int = 0
    findings: int = 0
    reviewed_at: datetime = Field(default_factory=utcnow)


class ChunkRow(SQLModel, table=True):
    """A chunk of a document's text; ``chunker`` names the cutting rules and budget."""

    __tablename__ = "chunks"
    __table_args__ = (UniqueConstraint("sha256", "chunker", "chunk_index", name="uq_chunks_key"),)

    id: int | None = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, max_length=64)
    chunker: str
    chunk_index: int
    char_start: int
    char_end: int
    page_start: int
    page_end: int
    heading: str | None = None
    text: str = Field(sa_column=Column(Text, nullable=False))
    # The router's decision (``deep`` | ``skip``, see tasks/review/route.py) and its reason; None for
    # chunks stored before routing existed.
    route: str | None = None
    route_reason: str | None = Field(default=None, sa_column=Column(Text))
    # JSON list of the [start, end) document ranges this chunk sends to review (its deep segments).
    route_ranges: str | None = Field(default=None, sa_column=Column(Text))


class FindingRow(SQLModel, table=True):
    """A fact-checked finding.

    ``finding_key`` = sha256 of (document sha256, prompt version, model, clause type,
    normalised evidence): the same clause quoted from two overlapping chunks is one row.
    ``page`` is where the quote was found; ``stated_page`` is what the reviewer said (for a DOCX
    both are the 1-based paragraph unit, :class:`schemas.documents.PageText`); ``locator`` is where
    the quote is as a reviewer finds it (``"page 3"``, ``"page 3 (OCR, confidence 0.91)"``,
    ``"§ 7.2 Limitation of Liability, paragraph 3"``; None on rows of earlier versions: ``page``).
    ``values`` is a JSON object ``{name: value}``.
    """

    __tablename__ = "findings"

    id: int | None = Field(default=None, primary_key=True)
    finding_key: str = Field(index=True, unique=True, max_length=64)
    sha256: str = Field(index=True, max_length=64)
    prompt_version: str
    model: str
    backend: str
    chunk_index: int
    clause_type: str = Field(index=True)
    summary: str = Field(sa_column=Column(Text, nullable=False))
    risk: str
    evidence: str = Field(sa_column=Column(Text, nullable=False))
    page: int
    stated_page: int
    values: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    verdict: str = Field(index=True)
    run_id: str
    created_at: datetime = Field(default_factory=utcnow)
    locator: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class CheckRow(SQLModel, table=True):
    """One fact-check of one finding."""

    __tablename__ = "checks"
    __table_args__ = (UniqueConstraint("finding_key", "name", name="uq_checks_key"),)

    id: int | None = Field(default=None, primary_key=True)
    finding_key: str = Field(index=True, max_length=64)
    name: str
    verdict: str
    reason: str = Field(sa_column=Column(Text, nullable=False))


class LLMCallRow(SQLModel, table=True):
    """One model call: tokens from the API's ``usage`` (tokens), latencies (ms), cost (USD)."""

    __tablename__ = "llm_calls"
    __table_args__ = (UniqueConstraint("run_id", "sha256", "chunk_index", "attempt", name="uq_llm_calls_key"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    sha256: str = Field(max_length=64)
    chunk_index: int
    attempt: int = 1
    backend: str
    model: str
    request_id: str | None = None
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    first_token_ms: float | None = None
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    error_class: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class RunMetricRow(SQLModel, table=True):
    """One named metric of one run (long form, so new metrics need no migration)."""

    __tablename__ = "run_metrics"
    __table_args__ = (UniqueConstraint("run_id", "name", name="uq_run_metrics_key"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    name: str
    value: float


class AbsenceRow(SQLModel, table=True):
    """A high-risk CUAD category with no finding in a fully reviewed document (evidence of absence).

    ``absence_key`` = sha256 of (document sha256, prompt version, model, clause type).
    ``chunks`` is the JSON list of examined chunk indexes; ``chunk_count`` its length.
    ``verdict`` is ``needs_review``: absence goes to the review queue.
    """

    __tablename__ = "absences"

    id: int | None = Field(default=None, primary_key=True)
    absence_key: str = Field(index=True, unique=True, max_length=64)
    sha256: str = Field(index=True, max_length=64)
    prompt_version: str
    model: str
    clause_type: str
    chunks: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    chunk_count: int = 0
    verdict: str = "needs_review"
    reason: str = Field(sa_column=Column(Text, nullable=False))
    run_id: str
    created_at: datetime = Field(default_factory=utcnow)


class ReviewerDecision(SQLModel, table=True):
    """A reviewer's decision on a queued finding or absence; the history is kept, the latest wins.

    ``target_kind`` is ``finding`` or ``absence``; ``target_key`` its ``finding_key`` or
    ``absence_key``; ``seq`` numbers the decisions on one target from 1. ``decision`` is
    ``approve``, ``reject`` or ``reclassify`` (:class:`schemas.decisions.Decision`); ``category`` the
    clause type a ``reclassify`` gives the finding (None otherwise); ``reviewer`` who decided (an
    account name, a proxy's identity, ``docreview decide --reviewer``; None for decisions recorded
    before reviewers were kept whose note named nobody); ``decided_at`` when (UTC).

    Append-only (the database refuses UPDATE and DELETE on the table) and hash-chained:
    ``row_hash`` is :func:`schemas.decisions.decision_hash` of the row's content and ``prev_hash``,
    the previous row's ``row_hash`` (unique: the chain cannot fork).
    """

    __tablename__ = "reviewer_decisions"
    __table_args__ = (
        UniqueConstraint("target_key", "seq", name="uq_reviewer_decisions_key"),
        UniqueConstraint("prev_hash", name="uq_reviewer_decisions_prev_hash"),
    )

    id: int | None = Field(default=None, primary_key=True)
    target_kind: str
    target_key: str = Field(index=True, max_length=64)
    seq: int = 1
    decision: str
    note: str | None = Field(default=None, sa_column=Column(Text))
    decided_at: datetime = Field(default_factory=utcnow)
    reviewer: str | None = Field(default=None, max_length=80)
    category: str | None = Field(default=None, max_length=64)
    prev_hash: str = Field(max_length=64)
    row_hash: str = Field(max_length=64)


class ReviewerAccount(SQLModel, table=True):
    """A reviewer who may log in to ``docreview report serve`` (``docreview users add NAME``).

    ``name`` as given (shown on decisions), ``name_key`` its case-folded form (unique: ``Alice``
    and ``alice`` are one account); ``password_hash`` an Argon2id hash in PHC string format
    (argon2-cffi); ``failed_logins`` counts failed logins since the last good one (or since a lockout
    ended), and at ``Settings.report_login_attempts`` the account is locked until ``locked_until`` (UTC),
    the count kept so ``docreview users list`` shows what caused the lock;
    ``disabled`` accounts cannot log in (``docreview users disable``).
    """

    __tablename__ = "reviewer_accounts"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=80)
    name_key: str = Field(index=True, unique=True, max_length=80)
    password_hash: str = Field(sa_column=Column(Text, nullable=False))
    disabled: bool = False
    failed_logins: int = 0
    locked_until: datetime | None = None
    last_login_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)


class DocumentFlagRow(SQLModel, table=True):
    """A hostile-input flag on a document (see :mod:`tasks.check.injection`).

    ``kind`` is ``prompt_injection`` (instruction-like text aimed at the reviewer) or
    ``page_truncated`` (a page over ``max_chars_per_page``); ``detector`` is the rules version.
    ``char_start``/``char_end`` index the document text (pages joined, after the page cap);
    ``page`` is 1-based; ``chunk_indices`` (JSON list) are the chunks holding the span.
    """

    __tablename__ = "document_flags"
    __table_args__ = (
        UniqueConstraint("sha256", "detector", "kind", "rule", "char_start", name="uq_document_flags_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, max_length=64)
    detector: str
    kind: str
    rule: str
    char_start: int
    char_end: int
    page: int
    reason: str = Field(sa_column=Column(Text, nullable=False))
    excerpt: str = Field(sa_column=Column(Text, nullable=False))
    chunk_indices: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class FindingObservationRow(SQLModel, table=True):
    """A finding as one run saw it: per-run membership of findings, for drift between runs.

    :class:`FindingRow` holds one row per ``finding_key`` across runs; this table records which
    findings a run produced for a document, with the verdict and ``values`` (JSON object
    ``{name: value}``) of that run. ``anchor`` = sha256 of (document sha256, clause type,
    normalised evidence): unlike ``finding_key`` it does not depend on model or prompt version,
    so the same clause can be paired across a model change.
    """

    __tablename__ = "finding_observations"
    __table_args__ = (UniqueConstraint("run_id", "finding_key", name="uq_finding_observations_key"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True, max_length=36)
    sha256: str = Field(index=True, max_length=64)
    finding_key: str = Field(max_length=64)
    anchor: str = Field(max_length=64)
    clause_type: str
    values: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    verdict: str


class DocumentDriftRow(SQLModel, table=True):
    """Drift of one fully reviewed document in one run against its previous review.

    Written for every document a run reviewed completely (not for reused reviews), so it also
    marks "this run observed this document". ``score`` is in [0, 1] (0 = same findings, 1 =
    nothing in common) and None when there is no earlier observation; ``added``, ``removed``
    and ``changed`` are JSON lists of findings (see :func:`tasks.observe.monitoring.compute_drift`).
    ``baseline_model``/``baseline_prompt_version`` name what produced the earlier review.
    """

    __tablename__ = "document_drift"
    __table_args__ = (UniqueConstraint("run_id", "sha256", name="uq_document_drift_key"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True, max_length=36)
    sha256: str = Field(index=True, max_length=64)
    model: str
    prompt_version: str
    findings: int = 0
    baseline_run_id: str | None = Field(default=None, max_length=36)
    baseline_model: str | None = None
    baseline_prompt_version: str | None = None
    baseline_findings: int | None = None
    score: float | None = None
    added: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    removed: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    changed: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class ChunkResultRow(SQLModel, table=True):
    """A chunk review result, reusable for the same chunk content, prompt version and model.

    ``cache_key`` = sha256 of (sha256 of the chunk text, prompt version, model);
    ``findings`` is the JSON list of :class:`schemas.findings.Finding` dumps (JSON-safe).
    Used while the circuit breaker is open, so a chunk seen before is not deferred.
    """

    __tablename__ = "chunk_results"

    id: int | None = Field(default=None, primary_key=True)
    cache_key: str = Field(index=True, unique=True, max_length=64)
    prompt_version: str
    model: str
    findings: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class BatchRow(SQLModel, table=True):
    """A Message Batch submitted to the Anthropic API, so a restarted run resumes it.

    ``batch_key`` = sha256 of the sorted ``custom_ids`` (the pending requests: chunk content
    identity, prompt version and model); ``custom_ids`` is the JSON list sent; ``status`` is
    ``in_progress``, ``ended`` (results not yet fetched) or ``fetched``.
    """

    __tablename__ = "message_batches"

    id: int | None = Field(default=None, primary_key=True)
    batch_key: str = Field(index=True, unique=True, max_length=64)
    batch_id: str
    model: str
    prompt_version: str
    custom_ids: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    status: str = "in_progress"
    created_at: datetime = Field(default_factory=utcnow)


class DocumentClaimRow(SQLModel, table=True):
    """A document (sha256) claimed for review by one run, so concurrent runs never review it twice.

    At most one claim per document (the primary key). ``worker`` is ``host:pid`` of the flow run's
    process. A claim past ``lease_expires_at`` (UTC) may be taken over by another run, so the
    documents of a killed worker are not lost; a live run renews its leases. The row is deleted
    when its run concludes the document (see :mod:`tasks.store.claims`).
    """

    __tablename__ = "document_claims"

    sha256: str = Field(primary_key=True, max_length=64)
    run_id: str = Field(index=True, max_length=36)
    worker: str
    claimed_at: datetime = Field(default_factory=utcnow)
    lease_expires_at: datetime


class SourceObjectRow(SQLModel, table=True):
    """One version of a bucket object as a run fetched it: its S3 ETag, VersionId and sha256.

    Natural key ``(uri, etag)``: the same object bytes listed again update ``last_run_id``;
    an overwrite (new ETag) is a new row. ``sha256`` is None when the object failed before its
    bytes were read (e.g. over the size limit). ``size_bytes`` as listed, bytes.
    """

    __tablename__ = "source_objects"
    __table_args__ = (UniqueConstraint("uri", "etag", name="uq_source_objects_uri_etag"),)

    id: int | None = Field(default=None, primary_key=True)
    uri: str = Field(sa_column=Column(Text, nullable=False))
    etag: str = Field(max_length=200)
    version_id: str | None = None
    sha256: str | None = Field(default=None, index=True, max_length=64)
    size_bytes: int = 0
    first_run_id: str = Field(max_length=36)
    last_run_id: str = Field(max_length=36)
    fetched_at: datetime = Field(default_factory=utcnow)


class WatchedObjectRow(SQLModel, table=True):
    """The bucket/folder watcher's cursor: one row per object version it has seen.

    Natural key ``(uri, etag)`` (for a local file the "etag" is ``<size>-<mtime ns>``). The
    insert is the idempotency check: a watcher that inserts the row owns its
    ``docreview.document.received`` event; ``emitted_at`` is set once the event was handed to
    Prefect and stays None while it still has to be (re-)emitted. ``size_bytes`` in bytes.
    """

    __tablename__ = "watched_objects"
    __table_args__ = (UniqueConstraint("uri", "etag", name="uq_watched_objects_uri_etag"),)

    id: int | None = Field(default=None, primary_key=True)
    uri: str = Field(sa_column=Column(Text, nullable=False))
    etag: str = Field(max_length=200)
    size_bytes: int = 0
    first_seen_at: datetime = Field(default_factory=utcnow)
    emitted_at: datetime | None = Field(default=None, index=True)


class ExtractionBackoffRow(SQLModel, table=True):
    """A document whose text extraction timed out: not extracted again before ``retry_after``.

    One row per document (sha256); ``timeouts`` counts consecutive timeouts (the wait doubles
    with each, see :mod:`tasks.ingest.backoff`); ``last_reason`` is the last timeout's reason;
    times are UTC; ``timeout_s`` is the extraction timeout it timed out under. The row is deleted
    when an extraction of the document finishes.
    """

    __tablename__ = "extraction_backoff"

    sha256: str = Field(primary_key=True, max_length=64)
    timeouts: int = 0
    last_reason: str = Field(sa_column=Column(Text, nullable=False))
    last_failed_at: datetime = Field(default_factory=utcnow)
    retry_after: datetime = Field(default_factory=utcnow)
    #: ``Limits.extraction_timeout_s`` of the last timeout, seconds (None: recorded before it was kept);
    #: a run with a higher limit does not wait for ``retry_after``.
    timeout_s: float | None = None


class RunPlaybookRow(SQLModel, table=True):
    """The playbook a run applied, as validated (:class:`schemas.playbook.Playbook` as JSON in ``definition``),
    with its ``name`` and the file it came from (``source``). One row per run: the report evaluates these rules
    again on every read, with the reviewer decisions made since (:func:`tasks.observe.report.build_report`),
    so a decision moves the playbook's results at once; ``playbook_results`` keeps what the run itself found.
    """

    __tablename__ = "run_playbooks"

    run_id: str = Field(primary_key=True, max_length=36)
    name: str
    source: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    definition: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class PlaybookResultRow(SQLModel, table=True):
    """One playbook rule's outcome on one document in one run (see :mod:`tasks.check.playbook`).

    ``status`` is ``pass``, ``deviation`` or ``unknown``; ``severity`` the rule's (low, medium,
    high); ``finding_ids`` (JSON list of ``findings.id``) the findings the result rests on;
    ``playbook`` the playbook's name. Written once per (run, document, rule): a re-run of the same
    run's step does not duplicate it.
    """

    __tablename__ = "playbook_results"
    __table_args__ = (UniqueConstraint("run_id", "sha256", "rule_id", name="uq_playbook_results_key"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True, max_length=36)
    sha256: str = Field(index=True, max_length=64)
    file_name: str
    playbook: str
    rule_id: str = Field(max_length=80)
    clause_type: str
    expect: str
    status: str = Field(index=True)
    severity: str
    reason: str = Field(sa_column=Column(Text, nullable=False))
    finding_ids: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class DocumentProfileRow(SQLModel, table=True):
    """How a document was classified and, for a filing, what the next filing is compared with.

    One row per document (sha256). ``profile`` (``contract``/``filing``), ``document_type``
    (``contract`` or the SEC form, :class:`schemas.filings.FilingForm`), ``reason`` (what decided
    it); for a filing ``company`` (the name as read) and ``company_key`` (what groups one registrant's
    filings: ``"SEC file <Commission file number>"``, else the reduced name),
    ``period`` (ISO date of the period end), ``summary`` (:class:`schemas.filings.FilingSummary` as
    JSON: sections, risk-factor headings, flags, key figures), ``previous_sha256`` (the earlier
    filing of the same company and form it was compared with) and ``changes``
    (:class:`schemas.filings.FilingChange` list as JSON); for a document reviewed under the contract profile
    ``not_judged``: why it is judged neither for missing clauses nor by the playbook
    (:func:`tasks.check.absences.contract_expected`: no agreement, an exhibit or SEC form that is no commercial
    agreement, a partial copy), None for an agreement. Times are UTC.
    """

    __tablename__ = "document_profiles"

    sha256: str = Field(primary_key=True, max_length=64)
    profile: str = Field(max_length=16)
    document_type: str = Field(max_length=32)
    reason: str = Field(sa_column=Column(Text, nullable=False))
    company: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    company_key: str = Field(default="", index=True, max_length=200)
    period: str | None = Field(default=None, max_length=10)
    summary: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    previous_sha256: str | None = Field(default=None, max_length=64)
    changes: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    not_judged: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    updated_at: datetime = Field(default_factory=utcnow)
    #: A Form 10-K/A or 10-Q/A: ``previous_sha256`` is then the filing it amends (same company, form, period).
    amendment: bool = False


class DocumentVersionRow(SQLModel, table=True):
    """Which earlier document a contract (or an amended filing) is a new version of.

    One row per document (sha256). ``title`` (as read: the Document Name finding, else the first
    line of its text) and ``parties`` (JSON list of the party names its Parties findings state) with
    their match forms ``title_key`` and ``parties_key`` (upper case, punctuation and legal suffixes
    dropped; parties sorted and joined by ``|``): a contract with the same keys first seen earlier
    is its previous version. ``previous_sha256`` that version (None: none found), ``linked_by`` how
    (``title and parties``, ``named`` for ``docreview review --previous``, ``amends`` for an
    amended filing). Times are UTC.
    """

    __tablename__ = "document_versions"

    sha256: str = Field(primary_key=True, max_length=64)
    title: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    title_key: str = Field(default="", index=True, max_length=200)
    parties: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    parties_key: str = Field(default="", index=True, max_length=500)
    previous_sha256: str | None = Field(default=None, max_length=64)
    linked_by: str | None = Field(default=None, max_length=40)
    updated_at: datetime = Field(default_factory=utcnow)
