"""What a chunk review returns: its outcome, findings and the LLM calls it made."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field, SerializeAsAny

from schemas.findings import Finding


class ReviewOutcome(str, Enum):
    """How a chunk review ended (Anthropic ``stop_reason`` mapped to outcomes)."""

    ok = "ok"
    truncated = "truncated"  # stop_reason == "max_tokens": never treated as "no findings"
    refusal = "refusal"
    context_overflow = "context_overflow"
    invalid_output = "invalid_output"  # no tool call or tool input failing validation
    error = "error"


class LLMCallRecord(BaseModel):
    """One model call, as recorded in the ``llm_calls`` table.

    Token counts come from the API's ``usage`` fields (tokens); latencies are milliseconds;
    ``cost_usd`` is US dollars from the configured price table.
    """

    backend: str
    model: str
    request_id: str | None = None
    attempt: int = 1
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    first_token_ms: float | None = None
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    error_class: str | None = None


class ChunkReview(BaseModel):
    """Findings for one chunk, the calls that produced them, and how the review ended.

    ``findings`` serialise as their own class (a filing's :class:`schemas.filings.FilingFinding`
    keeps its topic); read back with :func:`tasks.review.reviewer.cached_review`."""

    chunk_index: int
    findings: list[SerializeAsAny[Finding]] = Field(default_factory=list)
    outcome: ReviewOutcome = ReviewOutcome.ok
    detail: str | None = None
    calls: list[LLMCallRecord] = Field(default_factory=list)
    cached: bool = False  # reused from an earlier review of the same content, prompt version and model
