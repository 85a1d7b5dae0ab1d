"""The resilience policy: retries, backoff, circuit breaking and concurrency for LLM calls.

Passed to the ``review-documents`` flow as a parameter, so each deployment can set its own.
Times are seconds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ResiliencePolicy(BaseModel):
    """How LLM calls are retried, broken and throttled.

    - ``attempts``: total attempts per chunk review (1 = no retry).
    - Backoff before retry *n* (1-based): ``min(backoff_cap_s, backoff_base_s * 2**(n-1))``, with
      ``jitter_factor`` (Prefect ``retry_jitter_factor``: up to that fraction added at random).
    - ``honour_retry_after``: a ``retry-after`` header (seconds, values above 60 s too) lengthens
      the wait up to ``retry_after_cap_s``.
    - ``call_timeout_s``: per-call timeout of the SDK client.
    - Circuit breaker (pybreaker): opens after ``breaker_failure_threshold`` consecutive
      retryable failures, stays open ``breaker_reset_timeout_s``, then lets calls through
      half-open and closes after ``breaker_half_open_successes`` successes.
      ``breaker_storage`` is ``"memory"`` (one process) or a ``redis://`` URL so every worker
      shares one breaker.
    - ``on_open``: while the breaker is open, ``"cached"`` reuses a stored result for the same
      chunk content, prompt version and model when one exists, then defers; ``"defer"`` defers
      at once. A deferred document is picked up first by the next run.
    - ``llm_concurrency``: limit on simultaneous LLM calls. ``concurrency_scope``: ``prefect``
      (a Prefect global concurrency limit shared by every worker, slots leased for
      ``slot_lease_s`` so a killed worker cannot hold one for ever), ``process`` (a semaphore in
      this process), or ``auto`` (``prefect`` when a Prefect server is configured). A call waits
      at most ``slot_wait_s`` for a slot, then fails as retryable.
    """

    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(4, ge=1, le=20)
    backoff_base_s: float = Field(2.0, ge=0)
    backoff_cap_s: float = Field(60.0, ge=0)
    jitter_factor: float = Field(0.5, ge=0, le=2)
    honour_retry_after: bool = True
    retry_after_cap_s: float = Field(300.0, ge=0)
    call_timeout_s: float = Field(120.0, gt=0)
    breaker_failure_threshold: int = Field(5, ge=1)
    breaker_reset_timeout_s: float = Field(30.0, gt=0)
    breaker_half_open_successes: int = Field(1, ge=1)
    breaker_storage: str = "memory"
    breaker_name: str = "docreview-llm"
    on_open: Literal["defer", "cached"] = "cached"
    llm_concurrency: int = Field(16, ge=1)
    concurrency_limit_name: str = "docreview-llm-calls"
    concurrency_scope: Literal["auto", "process", "prefect"] = "auto"
    slot_lease_s: float = Field(300.0, gt=0)
    slot_wait_s: float = Field(600.0, gt=0)

    @field_validator("breaker_storage")
    @classmethod
    def _storage(cls, value: str) -> str:
        if value != "memory" and not value.startswith(("redis://", "rediss://")):
            raise ValueError("breaker_storage must be 'memory' or a redis:// URL")
        return value

    def retry_delays(self) -> list[float]:
        """Delays (seconds) before retries 1..attempts-1, exponential and capped."""
        return [min(self.backoff_cap_s, self.backoff_base_s * 2**i) for i in range(self.attempts - 1)]
