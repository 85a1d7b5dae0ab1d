"""``anthropic`` backend: Claude through the Messages API with a forced, strict tool call.

- ``tool_choice={"type": "tool", "name": "record_findings", "disable_parallel_tool_use": True}``;
  never ``stop_sequences``. Every ``tool_use`` block with the tool's name is collected and
  merged, so nothing is dropped if the model emits several.
- ``stop_reason`` is handled explicitly: ``max_tokens`` → :attr:`ReviewOutcome.truncated`
  (never "no findings"), ``refusal`` → :attr:`ReviewOutcome.refusal`,
  ``model_context_window_exceeded`` → :attr:`ReviewOutcome.context_overflow`; a reply without
  the tool call or with input failing validation → :attr:`ReviewOutcome.invalid_output`.
- The SDK client is built with ``max_retries=0`` and an explicit timeout: the Prefect task
  owns retries (exactly one retry layer).
- Token counts come from the response's ``usage``.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import ValidationError

from schemas.documents import Chunk
from schemas.findings import REVIEW_TOOL_NAME, ReviewToolInput
from tasks.backends.base import ChunkReview, LLMCallRecord, ReviewOutcome
from tasks.backends.prompt import SYSTEM_PROMPT, render_chunk, review_tool

#: USD per million tokens: (input, output, cache write, cache read). Source: Anthropic pricing page
#: (cache writes 1.25x input, cache reads 0.1x input). Unknown models cost 0 and are flagged by name.
PRICES_USD_PER_MTOK: dict[str, tuple[float, float, float, float]] = {
    "claude-sonnet-4-5": (3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4-5": (1.0, 5.0, 1.25, 0.10),
    "claude-opus-4-1": (15.0, 75.0, 18.75, 1.50),
}


def cost_usd(model: str, usage: Any) -> float:
    """Cost of one call in USD from its ``usage`` and :data:`PRICES_USD_PER_MTOK` (0 if unknown)."""
    price = next((p for name, p in PRICES_USD_PER_MTOK.items() if model.startswith(name)), None)
    if price is None or usage is None:
        return 0.0
    pin, pout, pwrite, pread = price
    return (
        (getattr(usage, "input_tokens", 0) or 0) * pin
        + (getattr(usage, "output_tokens", 0) or 0) * pout
        + (getattr(usage, "cache_creation_input_tokens", 0) or 0) * pwrite
        + (getattr(usage, "cache_read_input_tokens", 0) or 0) * pread
    ) / 1_000_000


class AnthropicBackend:
    """Reviews chunks with Claude via the ``anthropic`` SDK.

    ``api_key`` is the secret value (kept only in the SDK client); ``timeout_s`` is the per-call
    timeout in seconds; ``max_tokens`` is the output budget in tokens.
    """

    name = "anthropic"

    def __init__(self, api_key: str, model: str, *, base_url: str | None = None, timeout_s: float = 120.0,
                 max_tokens: int = 4096) -> None:
        import anthropic

        self.model = model
        self.max_tokens = max_tokens
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
        self._tool = review_tool()

    def request(self, chunk: Chunk, document_name: str) -> dict[str, Any]:
        """Keyword arguments of ``messages.create`` for one chunk (cached prefix first)."""
        tool = dict(self._tool, cache_control={"type": "ephemeral"})
        return dict(
            model=self.model,
            max_tokens=self.max_tokens,
            system=[{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}],
            tools=[tool],
            tool_choice={"type": "tool", "name": REVIEW_TOOL_NAME, "disable_parallel_tool_use": True},
            messages=[{"role": "user", "content": render_chunk(chunk, document_name)}],
        )

    def review_chunk(self, chunk: Chunk, document_name: str) -> ChunkReview:
        """Review one chunk. Transport and HTTP errors propagate (the task classifies them)."""
        started = time.perf_counter()
        message = self._client.messages.create(**self.request(chunk, document_name))
        latency_ms = (time.perf_counter() - started) * 1000
        usage = message.usage
        record = LLMCallRecord(
            backend=self.name,
            model=self.model,
            request_id=getattr(message, "_request_id", None) or message.id,
            stop_reason=message.stop_reason,
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_creation_input_tokens=getattr(usage, "cache_creation_input_tokens", 0) or 0,
            cache_read_input_tokens=getattr(usage, "cache_read_input_tokens", 0) or 0,
            latency_ms=latency_ms,
            cost_usd=cost_usd(self.model, usage),
        )
        return parse_tool_reply(chunk.index, message.stop_reason, message.content, record)


def parse_tool_reply(chunk_index: int, stop_reason: str | None, content: list[Any], record: LLMCallRecord) -> ChunkReview:
    """Turn a reply's ``stop_reason`` and content blocks into a :class:`ChunkReview`."""
    review = ChunkReview(chunk_index=chunk_index, calls=[record])
    if stop_reason == "max_tokens":
        review.outcome, review.detail = ReviewOutcome.truncated, "reply truncated at max_tokens"
        return review
    if stop_reason == "refusal":
        review.outcome, review.detail = ReviewOutcome.refusal, "the model declined to review this passage"
        return review
    if stop_reason == "model_context_window_exceeded":
        review.outcome, review.detail = ReviewOutcome.context_overflow, "passage exceeds the context window"
        return review
    inputs = [getattr(b, "input", None) for b in content
              if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == REVIEW_TOOL_NAME]
    if not inputs:
        review.outcome, review.detail = ReviewOutcome.invalid_output, f"no {REVIEW_TOOL_NAME} call (stop_reason={stop_reason})"
        return review
    try:
        for data in inputs:
            review.findings.extend(ReviewToolInput.model_validate(data).findings)
    except ValidationError as exc:
        review.findings = []
        review.outcome = ReviewOutcome.invalid_output
        review.detail = f"tool input failed validation: {exc.error_count()} error(s): {exc.errors()[0]['msg']}"
    return review
