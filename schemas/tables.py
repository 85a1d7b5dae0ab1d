"""SQLModel tables. Separate from the LLM-facing models in :mod:`schemas.findings`.

Every table has a natural key with a unique constraint, so that writes are idempotent
(``INSERT … ON CONFLICT``): a re-run, a retry or a duplicate event never duplicates a row.
JSON columns only hold JSON-safe values (str, int, float, bool, None, lists and dicts of them).
Times are timezone-aware UTC.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    """Current time, UTC, timezone-aware."""
    return datetime.now(timezone.utc)


class DocumentRow(SQLModel, table=True):
    """A document, identified by the sha256 of its bytes (same bytes = same document)."""

    __tablename__ = "documents"

    id: Optional[int] = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, unique=True, max_length=64)
    file_name: str
    size_bytes: int
    pages: int = 0
    page_flags: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    first_seen_at: datetime = Field(default_factory=utcnow)


class RunRow(SQLModel, table=True):
    """One run of the review flow over a source."""

    __tablename__ = "runs"

    id: str = Field(primary_key=True, max_length=36)
    source: str
    backend: str
    model: str
    prompt_version: str
    flow_run_id: Optional[str] = None
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None
    status: str = "running"


class RunDocumentRow(SQLModel, table=True):
    """The terminal state of one source object in one run: reviewed, deferred or failed."""

    __tablename__ = "run_documents"
    __table_args__ = (UniqueConstraint("run_id", "source", name="uq_run_documents_run_source"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(index=True, foreign_key="runs.id")
    source: str
    file_name: str
    sha256: Optional[str] = Field(default=None, index=True, max_length=64)
    status: str
    failure_kind: Optional[str] = None
    reason: Optional[str] = Field(default=None, sa_column=Column(Text))
    pages: int = 0
    findings: int = 0
    reused: bool = False  # reviewed in an earlier run (same sha256, prompt version, model)
    updated_at: datetime = Field(default_factory=utcnow)


class DocumentReviewRow(SQLModel, table=True):
    """Marks a document reviewed with a prompt version and model: the skip ledger."""

    __tablename__ = "document_reviews"
    __table_args__ = (
        UniqueConstraint("sha256", "prompt_version", "model", name="uq_document_reviews_key"),
    )

    id: Optional[int] = Field(default=None, primary_key=True)
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

    id: Optional[int] = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, max_length=64)
    chunker: str
    chunk_index: int
    char_start: int
    char_end: int
    page_start: int
    page_end: int
    heading: Optional[str] = None
    text: str = Field(sa_column=Column(Text, nullable=False))


class FindingRow(SQLModel, table=True):
    """A fact-checked finding.

    ``finding_key`` = sha256 of (document sha256, prompt version, model, clause type,
    normalised evidence): the same clause quoted from two overlapping chunks is one row.
    ``page`` is where the quote was found; ``stated_page`` is what the reviewer said.
    ``values`` is a JSON object ``{name: value}``.
    """

    __tablename__ = "findings"

    id: Optional[int] = Field(default=None, primary_key=True)
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


class CheckRow(SQLModel, table=True):
    """One fact-check of one finding."""

    __tablename__ = "checks"
    __table_args__ = (UniqueConstraint("finding_key", "name", name="uq_checks_key"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    finding_key: str = Field(index=True, max_length=64)
    name: str
    verdict: str
    reason: str = Field(sa_column=Column(Text, nullable=False))


class LLMCallRow(SQLModel, table=True):
    """One model call: tokens from the API's ``usage`` (tokens), latencies (ms), cost (USD)."""

    __tablename__ = "llm_calls"
    __table_args__ = (
        UniqueConstraint("run_id", "sha256", "chunk_index", "attempt", name="uq_llm_calls_key"),
    )

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    sha256: str = Field(max_length=64)
    chunk_index: int
    attempt: int = 1
    backend: str
    model: str
    request_id: Optional[str] = None
    stop_reason: Optional[str] = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    first_token_ms: Optional[float] = None
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    error_class: Optional[str] = None
    created_at: datetime = Field(default_factory=utcnow)


class RunMetricRow(SQLModel, table=True):
    """One named metric of one run (long form, so new metrics need no migration)."""

    __tablename__ = "run_metrics"
    __table_args__ = (UniqueConstraint("run_id", "name", name="uq_run_metrics_key"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    name: str
    value: float
