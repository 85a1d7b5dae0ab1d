"""``bedrock`` backend: Claude on Amazon Bedrock through boto3 ``bedrock-runtime`` Converse.

The same tool schema and prompt as the Anthropic backend, sent as ``toolConfig`` with
``toolChoice={"tool": {"name": "record_findings"}}``. boto3's own retries are switched off
(``retries={"max_attempts": 1}``) so the Prefect task is the only retry layer; throttling
surfaces as a ``ClientError`` that :func:`tasks.retry.is_retryable` classifies.
Source: AWS Bedrock Runtime API reference, Converse.
"""

from __future__ import annotations

import time
from typing import Any

from schemas.documents import Chunk
from schemas.findings import REVIEW_TOOL_NAME
from tasks.backends.anthropic_backend import parse_tool_reply
from tasks.backends.base import ChunkReview, LLMCallRecord
from tasks.backends.prompt import SYSTEM_PROMPT, render_chunk, review_tool

#: Converse ``stopReason`` values mapped to the Messages API's ``stop_reason`` vocabulary.
STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "refusal",
    "content_filtered": "refusal",
    "model_context_window_exceeded": "model_context_window_exceeded",
}


class _Block:
    """Converse ``toolUse`` content as an object shaped like an Anthropic ``tool_use`` block."""

    def __init__(self, name: str, data: Any) -> None:
        self.type, self.name, self.input = "tool_use", name, data


class BedrockBackend:
    """Reviews chunks with Claude on Bedrock. ``timeout_s`` is the read timeout in seconds."""

    name = "bedrock"

    def __init__(self, model_id: str, *, region: str, endpoint_url: str | None = None, timeout_s: float = 120.0,
                 max_tokens: int = 4096) -> None:
        import boto3
        from botocore.config import Config

        self.model = model_id
        self.max_tokens = max_tokens
        config = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=timeout_s, connect_timeout=10)
        self._client = boto3.client("bedrock-runtime", region_name=region, endpoint_url=endpoint_url, config=config)
        tool = review_tool()
        self._tool_config = {
            "tools": [{"toolSpec": {"name": tool["name"], "description": tool["description"],
                                    "inputSchema": {"json": tool["input_schema"]}}}],
            "toolChoice": {"tool": {"name": REVIEW_TOOL_NAME}},
        }

    def review_chunk(self, chunk: Chunk, document_name: str) -> ChunkReview:
        """Review one chunk via Converse; ``ClientError``s propagate to the task."""
        started = time.perf_counter()
        response = self._client.converse(
            modelId=self.model,
            system=[{"text": SYSTEM_PROMPT}],
            messages=[{"role": "user", "content": [{"text": render_chunk(chunk, document_name)}]}],
            toolConfig=self._tool_config,
            inferenceConfig={"maxTokens": self.max_tokens},
        )
        latency_ms = (time.perf_counter() - started) * 1000
        usage = response.get("usage", {})
        stop_reason = STOP_REASONS.get(response.get("stopReason", ""), response.get("stopReason"))
        blocks = [
            _Block(c["toolUse"]["name"], c["toolUse"].get("input"))
            for c in response.get("output", {}).get("message", {}).get("content", [])
            if "toolUse" in c
        ]
        record = LLMCallRecord(
            backend=self.name,
            model=self.model,
            request_id=response.get("ResponseMetadata", {}).get("RequestId"),
            stop_reason=stop_reason,
            input_tokens=usage.get("inputTokens", 0),
            output_tokens=usage.get("outputTokens", 0),
            cache_creation_input_tokens=usage.get("cacheWriteInputTokens", 0),
            cache_read_input_tokens=usage.get("cacheReadInputTokens", 0),
            latency_ms=latency_ms,
        )
        return parse_tool_reply(chunk.index, stop_reason, blocks, record)
