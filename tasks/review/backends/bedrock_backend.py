"""``bedrock`` backend: Claude on Amazon Bedrock through boto3 ``bedrock-runtime`` Converse.

The same tool schema, prompt and review loop as the Anthropic backend
(:class:`tasks.review.backends.anthropic_backend.ToolReviewer`: truncation → larger ``maxTokens`` then
split, refusal, one corrective retry for invalid structured output, merge of every tool block),
sent as ``toolConfig`` with ``toolChoice={"tool": {"name": "record_findings"}}`` and
``strict: true``. The system prompt ends in a ``cachePoint`` (Bedrock prompt caching) so the
tools and system prompt are the cached prefix.

- ``ConverseStream`` (default) measures first-token latency (time to the first
  ``contentBlockDelta``); tool input is accumulated per ``contentBlockIndex`` and parsed once at
  ``contentBlockStop``. ``Converse`` is used when streaming is off.
- boto3's own retries are off (``retries={"total_max_attempts": 1}``): the Prefect task is the only
  retry layer. ``ThrottlingException`` (including "Too many tokens") is a rate limit, retried by
  the task — never a context overflow; ``ValidationException`` "Input is too long" splits the
  chunk; a ``throttlingException`` in the middle of a stream raises, the partial output is
  discarded and the task retries the whole call.

Source: AWS Bedrock Runtime API reference (Converse, ConverseStream, ToolConfiguration,
CachePointBlock, error types).
"""

from __future__ import annotations

import time
from typing import Any

from schemas.documents import Chunk
from schemas.findings import REVIEW_TOOL_NAME
from tasks.review.backends.anthropic_backend import (
    LLMConfigError,
    Reply,
    ToolBlock,
    ToolReviewer,
    cache_prefix_check,
    logger,
    parse_tool_reply,
    validate_config,
)
from tasks.review.backends.prompt import (
    FIXED_INSTRUCTIONS,
    SYSTEM_PROMPT,
    prefix_tokens_estimate,
    render_chunk,
    review_tool,
)

#: Converse ``stopReason`` values mapped to the Messages API's ``stop_reason`` vocabulary.
#: ``malformed_tool_use``/``malformed_model_output`` become ``end_turn``: the reply then fails
#: tool validation and gets the one corrective retry.
STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "refusal",
    "content_filtered": "refusal",
    "model_context_window_exceeded": "model_context_window_exceeded",
    "malformed_tool_use": "end_turn",
    "malformed_model_output": "end_turn",
}


class BedrockBackend(ToolReviewer):
    """Reviews chunks with Claude on Bedrock.

    ``model_id`` is the Bedrock model or inference-profile id; ``region`` the AWS region;
    ``endpoint_url`` overrides the endpoint (a local Converse server in tests); ``timeout_s``
    the read timeout in seconds; ``max_tokens`` / ``max_tokens_ceiling`` output budgets in
    tokens; ``stream`` uses ConverseStream. Raises :class:`LLMConfigError` for an impossible
    configuration.
    """

    name = "bedrock"

    def __init__(self, model_id: str, *, region: str, endpoint_url: str | None = None, timeout_s: float = 120.0,
                 max_tokens: int = 4096, max_tokens_ceiling: int = 16_384, stream: bool = True,
                 prices: dict[str, tuple[float, float, float, float]] | None = None,
                 thinking_budget_tokens: int = 0) -> None:
        validate_config(model_id, max_tokens, max_tokens_ceiling, timeout_s, thinking_budget_tokens)
        if not region:
            raise LLMConfigError("no AWS region configured for the bedrock backend (AWS_REGION)")
        import boto3
        from botocore.config import Config

        self.model = model_id
        super().__init__(max_tokens=max_tokens, max_tokens_ceiling=max_tokens_ceiling, prices=prices)
        self.stream = stream
        # total_max_attempts counts the first call; botocore's max_attempts counts retries only,
        # so {"max_attempts": 1} would still retry once.
        config = Config(retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=timeout_s,
                        connect_timeout=10)
        self._client = boto3.client("bedrock-runtime", region_name=region, endpoint_url=endpoint_url, config=config)
        tool = review_tool()
        self._tool_config = {
            "tools": [{"toolSpec": {"name": tool["name"], "description": tool["description"],
                                    "inputSchema": {"json": tool["input_schema"]}, "strict": True}}],
            "toolChoice": {"tool": {"name": REVIEW_TOOL_NAME}},
        }
        self._system = [{"text": SYSTEM_PROMPT}, {"text": FIXED_INSTRUCTIONS}, {"cachePoint": {"type": "default"}}]
        ok, minimum = cache_prefix_check(model_id, prefix_tokens_estimate())
        if not ok:
            logger.warning("cached prefix is below the %d-token minimum for %s: prompt caching will not take effect",
                           minimum, model_id)

    def close(self) -> None:
        """Close the boto3 client's HTTP connections (end of a run)."""
        self._client.close()

    def request(self, chunk: Chunk, document_name: str, max_tokens: int | None = None,
                feedback: tuple[Reply, str] | None = None) -> dict[str, Any]:
        """Keyword arguments of ``converse``/``converse_stream`` for one chunk."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": render_chunk(chunk, document_name)}]}]
        if feedback is not None:
            messages += _feedback_turns(*feedback)
        return dict(modelId=self.model, system=self._system, messages=messages, toolConfig=self._tool_config,
                    inferenceConfig={"maxTokens": max_tokens or self.max_tokens})

    def _call(self, chunk: Chunk, document_name: str, max_tokens: int, feedback: tuple[Reply, str] | None) -> Reply:
        req = self.request(chunk, document_name, max_tokens, feedback)
        return self.call_streaming(req) if self.stream else self.call_once(req)

    def call_once(self, req: dict[str, Any]) -> Reply:
        """One ``converse`` call → :class:`Reply` (``first_token_ms`` None)."""
        started = time.perf_counter()
        response = self._client.converse(**req)
        latency_ms = (time.perf_counter() - started) * 1000
        blocks = []
        for c in response.get("output", {}).get("message", {}).get("content", []):
            if "toolUse" in c:
                tu = c["toolUse"]
                blocks.append(ToolBlock(type="tool_use", name=tu.get("name"), id=tu.get("toolUseId"),
                                        input=tu.get("input")))
            elif "text" in c:
                blocks.append(ToolBlock(type="text", text=c["text"]))
        return Reply(stop_reason=_stop(response.get("stopReason")), blocks=blocks,
                     usage=_usage(response.get("usage", {})),
                     request_id=response.get("ResponseMetadata", {}).get("RequestId"), latency_ms=latency_ms)

    def call_streaming(self, req: dict[str, Any]) -> Reply:
        """One ``converse_stream`` call → :class:`Reply`; see the module docstring."""
        started = time.perf_counter()
        response = self._client.converse_stream(**req)
        request_id = response.get("ResponseMetadata", {}).get("RequestId")
        first_token_ms: float | None = None
        blocks: dict[int, ToolBlock] = {}
        parts: dict[int, list[str]] = {}
        stop_reason = None
        usage: dict[str, int] = {}
        for event in response["stream"]:
            if "contentBlockStart" in event:
                ev = event["contentBlockStart"]
                tu = (ev.get("start") or {}).get("toolUse") or {}
                blocks[ev["contentBlockIndex"]] = ToolBlock(type="tool_use", name=tu.get("name"),
                                                            id=tu.get("toolUseId"))
                parts[ev["contentBlockIndex"]] = []
            elif "contentBlockDelta" in event:
                ev = event["contentBlockDelta"]
                if first_token_ms is None:
                    first_token_ms = (time.perf_counter() - started) * 1000
                index, delta = ev["contentBlockIndex"], ev.get("delta") or {}
                if index not in blocks:
                    blocks[index] = ToolBlock(type="text")
                    parts[index] = []
                if "toolUse" in delta:
                    parts[index].append(delta["toolUse"].get("input", ""))
                elif "text" in delta:
                    parts[index].append(delta["text"])
            elif "contentBlockStop" in event:
                index = event["contentBlockStop"]["contentBlockIndex"]
                blocks.setdefault(index, ToolBlock(type="text")).finish("".join(parts.pop(index, [])))
            elif "messageStop" in event:
                stop_reason = _stop(event["messageStop"].get("stopReason"))
            elif "metadata" in event:
                usage = _usage(event["metadata"].get("usage", {}))
        for index, block in blocks.items():
            if index in parts and block.type == "tool_use":
                block.raw = "".join(parts[index])
                block.error = "tool input never completed (no contentBlockStop)"
        return Reply(stop_reason=stop_reason, blocks=[blocks[i] for i in sorted(blocks)], usage=usage,
                     request_id=request_id, first_token_ms=first_token_ms,
                     latency_ms=(time.perf_counter() - started) * 1000)


def _stop(reason: str | None) -> str | None:
    return STOP_REASONS.get(reason or "", reason)


def _usage(usage: dict[str, Any]) -> dict[str, int]:
    """Converse ``usage`` → Messages API ``usage`` names (tokens)."""
    return {"input_tokens": int(usage.get("inputTokens", 0) or 0),
            "output_tokens": int(usage.get("outputTokens", 0) or 0),
            "cache_creation_input_tokens": int(usage.get("cacheWriteInputTokens", 0) or 0),
            "cache_read_input_tokens": int(usage.get("cacheReadInputTokens", 0) or 0)}


def _feedback_turns(reply: Reply, error: str) -> list[dict[str, Any]]:
    """The invalid reply as an assistant turn and the error as a ``toolResult`` (Converse shapes)."""
    ask = (f"Your previous reply was not a valid {REVIEW_TOOL_NAME} call: {error}. Call {REVIEW_TOOL_NAME} "
           "once more with input that matches its schema exactly (findings is a list of objects).")
    tool_blocks = [b for b in reply.blocks if b.type == "tool_use" and b.id]
    if tool_blocks:
        assistant = [{"toolUse": {"toolUseId": b.id, "name": b.name,
                                  "input": b.input if isinstance(b.input, dict) else {}}} for b in tool_blocks]
        results: list[dict[str, Any]] = [{"toolResult": {"toolUseId": b.id, "content": [{"text": error}],
                                                         "status": "error"}} for b in tool_blocks]
        return [{"role": "assistant", "content": assistant}, {"role": "user", "content": results + [{"text": ask}]}]
    text = "".join(b.text for b in reply.blocks if b.type == "text").strip() or "(no content)"
    return [{"role": "assistant", "content": [{"text": text}]}, {"role": "user", "content": [{"text": ask}]}]
