"""``bedrock`` backend: Claude on Amazon Bedrock, through the API Anthropic documents for each model.

:func:`bedrock_backend_for` picks it by the model's :class:`tasks.review.backends.models.BedrockRoute`:

- **Claude in Amazon Bedrock** (Opus 4.7 and later, every 5.x model): :class:`BedrockMessagesBackend`, the
  Messages API at ``https://bedrock-mantle.{region}.api.aws/anthropic/v1/messages`` through the SDK's
  ``AnthropicBedrockMantle`` (SigV4 from boto3's credential chain, or a Bedrock API key), ids
  ``anthropic.<model>``. That endpoint offers no structured outputs (claude-in-amazon-bedrock, "Features
  not supported", read 2026-12-06), so findings come through the ``record_findings`` tool: forced where the
  model takes a forced ``tool_choice``, offered with ``tool_choice`` ``auto`` where it does not (Sonnet/Opus
  5.5, Fable/Mythos 5.x), never ``strict``; the reply is validated with the pydantic model and a reply
  without the call gets the one corrective retry. Same prompt, cache breakpoints and review loop as the
  ``anthropic`` backend.
- **Converse** (Opus 4.6, Sonnet 4.6, Opus 4.5, Haiku 4.5: the legacy integration's ARN-versioned ids):
  :class:`BedrockBackend` below.

The rest of this docstring is the Converse path's.

The same prompt, capability table (:mod:`tasks.review.backends.models`) and review loop as the
Anthropic backend (:class:`tasks.review.backends.anthropic_backend.ToolReviewer`: truncation →
larger ``maxTokens`` then split, refusal, one corrective retry for invalid structured output).

- Model ids: Claude 4.x/5.x on Bedrock are invoked through inference profiles
  (``global.anthropic.claude-sonnet-5-5``, ``us.anthropic...``); the settings derive that id from
  the Anthropic model id and a profile prefix (:func:`models.bedrock_model_id`).
- Findings: models with structured outputs get ``outputConfig.textFormat`` (``type:
  json_schema``, the SDK-transformed schema as JSON text) and answer with a text block holding
  JSON; a model without them gets ``toolConfig`` with ``toolChoice={"tool": {"name":
  "record_findings"}}`` (``strict: true`` when it takes strict tools). Models that reject a forced
  tool (Sonnet/Opus 5.5, Fable/Mythos 5.x) never get one.
- Caching: the system prompt ends in a ``cachePoint`` (optionally with ``ttl``), so the output
  format or tools and the system prompt are the cached prefix.
- ``ConverseStream`` (default) measures first-token latency (time to the first
  ``contentBlockDelta``); tool input is accumulated per ``contentBlockIndex`` and parsed once at
  ``contentBlockStop``. ``Converse`` is used when streaming is off.
- boto3's own retries are off (``retries={"total_max_attempts": 1}``): the Prefect task is the only
  retry layer. ``ThrottlingException`` (including "Too many tokens") is a rate limit, retried by
  the task — never a context overflow; ``ValidationException`` "Input is too long" splits the
  chunk; a ``throttlingException`` in the middle of a stream raises, the partial output is
  discarded and the task retries the whole call.

Source: AWS Bedrock Runtime API reference and botocore 1.44's ``bedrock-runtime`` service model
(Converse, ConverseStream, OutputConfig/OutputFormat/JsonSchemaDefinition, ToolSpecification.strict,
CachePointBlock with ``ttl`` 5m/1h, error types).
"""

from __future__ import annotations

import json
import time
from typing import Any

from schemas.documents import Chunk
from schemas.findings import REVIEW_TOOL_NAME
from schemas.review import LLMCallRecord
from tasks.review.backends.anthropic_backend import (
    AnthropicBackend,
    LLMConfigError,
    Reply,
    ToolBlock,
    ToolReviewer,
    _request_id_of,
    cache_prefix_check,
    cost_usd,
    logger,
    validate_config,
)
from tasks.review.backends.models import OutputMode, bedrock_route, capability
from tasks.review.backends.prompt import (
    api_schema,
    fixed_instructions,
    prefix_tokens_estimate,
    prompt_version_for,
    render_chunk,
    review_tool,
    system_prompt,
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

    ``model_id`` is the Bedrock model or inference-profile id (``global.anthropic.claude-sonnet-5-5``);
    ``region`` the AWS region; ``endpoint_url`` overrides the endpoint (a local Converse server in
    tests); ``timeout_s`` the read timeout in seconds; ``max_tokens`` / ``max_tokens_ceiling`` output
    budgets in tokens; ``stream`` uses ConverseStream; ``output_mode`` forces ``json_schema`` or
    ``tool`` (None: by capability); ``cache_ttl`` the ``cachePoint`` lifetime (``"5m"``/``"1h"``,
    None: Bedrock's default). Raises :class:`LLMConfigError` for an impossible configuration.
    """

    name = "bedrock"

    def __init__(
        self,
        model_id: str,
        *,
        region: str,
        endpoint_url: str | None = None,
        timeout_s: float = 120.0,
        max_tokens: int = 4096,
        max_tokens_ceiling: int = 16_384,
        stream: bool = True,
        prices: dict[str, tuple[float, float, float, float]] | None = None,
        thinking_budget_tokens: int = 0,
        output_mode: OutputMode | None = None,
        cache_ttl: str | None = None,
        party: str | None = None,
    ) -> None:
        self.mode = validate_config(
            model_id, max_tokens, max_tokens_ceiling, timeout_s, thinking_budget_tokens, output_mode
        )
        if not region:
            raise LLMConfigError("no AWS region configured for the bedrock backend (AWS_REGION)")
        import boto3
        from botocore.config import Config

        self.model = model_id
        super().__init__(max_tokens=max_tokens, max_tokens_ceiling=max_tokens_ceiling, prices=prices)
        self.stream = stream
        # total_max_attempts counts the first call; botocore's max_attempts counts retries only,
        # so {"max_attempts": 1} would still retry once.
        config = Config(
            retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=timeout_s, connect_timeout=10
        )
        self._client = boto3.client("bedrock-runtime", region_name=region, endpoint_url=endpoint_url, config=config)
        cap = capability(model_id, warn=False)
        self.party = party
        self.prompt_version = prompt_version_for(party)  # reviews are stored and reused under it
        self._prefixes = {p: self._profile_prefix(cap, p, cache_ttl) for p in ("contract", "filing")}
        self._prefix, self._system = self._prefixes["contract"]
        thinking = cap.thinking_off()
        if thinking is not None:  # Anthropic request fields Converse has no slot for
            for prefix, _ in self._prefixes.values():
                prefix["additionalModelRequestFields"] = {"thinking": thinking}
        ok, minimum = cache_prefix_check(model_id, prefix_tokens_estimate(self.mode))
        if not ok:
            logger.warning(
                "cached prefix is below the %d-token minimum for %s: prompt caching will not take effect",
                minimum,
                model_id,
            )

    def _profile_prefix(
        self, cap: Any, profile: str, cache_ttl: str | None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """``(request fields, system blocks)`` of the cached prefix for ``profile`` (``contract``
        or ``filing``): the tool or output format with that profile's schema, its system prompt."""
        prefix: dict[str, Any] = {}
        if self.mode == "tool":
            tool = review_tool(strict=cap.structured_outputs, profile=profile)
            spec: dict[str, Any] = {
                "name": tool["name"],
                "description": tool["description"],
                "inputSchema": {"json": tool["input_schema"]},
            }
            if cap.structured_outputs:
                spec["strict"] = True
            prefix["toolConfig"] = {"tools": [{"toolSpec": spec}], "toolChoice": {"tool": {"name": REVIEW_TOOL_NAME}}}
        else:
            prefix["outputConfig"] = {
                "textFormat": {
                    "type": "json_schema",
                    "structure": {
                        "jsonSchema": {
                            "schema": json.dumps(api_schema(profile)),
                            "name": "review_findings",
                            "description": f"Every finding in one passage of a {'filing' if profile == 'filing' else 'contract'}.",
                        }
                    },
                }
            }
        point: dict[str, Any] = {"type": "default", **({"ttl": cache_ttl} if cache_ttl else {})}
        system: list[dict[str, Any]] = [
            {"text": system_prompt(self.mode, profile, self.party)},
            {"text": fixed_instructions(self.mode, profile)},
            {"cachePoint": point},
        ]
        return prefix, system

    def close(self) -> None:
        """Close the boto3 client's HTTP connections (end of a run)."""
        self._client.close()

    def request(
        self, chunk: Chunk, document_name: str, max_tokens: int | None = None, feedback: tuple[Reply, str] | None = None
    ) -> dict[str, Any]:
        """Keyword arguments of ``converse``/``converse_stream`` for one chunk."""
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"text": render_chunk(chunk, document_name, self.mode)}]}
        ]
        if feedback is not None:
            messages += _feedback_turns(*feedback, mode=self.mode)
        prefix, system = self._prefixes.get(chunk.profile, self._prefixes["contract"])
        return dict(
            modelId=self.model,
            system=system,
            messages=messages,
            inferenceConfig={"maxTokens": max_tokens or self.max_tokens},
            **prefix,
        )

    def warm_cache(self) -> list[LLMCallRecord]:
        """Write the cached prefix (output format or tools, system up to its ``cachePoint``) into
        Bedrock's prompt cache with one ``converse`` call before the first concurrent reviews.

        Converse requires ``maxTokens >= 1`` (botocore service model), so the call asks for one
        output token with a one-word user turn. Returns one :class:`LLMCallRecord` (cache write or
        read tokens as reported); raises boto3's errors with ``exc.llm_calls`` set.
        """
        req = dict(
            modelId=self.model,
            system=self._system,
            messages=[{"role": "user", "content": [{"text": "."}]}],
            inferenceConfig={"maxTokens": 1},
            **self._prefix,
        )
        started = time.perf_counter()
        try:
            response = self._client.converse(**req)
        except Exception as exc:
            # the SDK's error carries the call's record to the caller (see the docstring)
            exc.llm_calls = [  # type: ignore[attr-defined]
                LLMCallRecord(
                    backend=self.name,
                    model=self.model,
                    attempt=1,
                    request_id=_request_id_of(exc),
                    latency_ms=(time.perf_counter() - started) * 1000,
                    error_class=type(exc).__name__,
                )
            ]
            raise
        usage = _usage(response.get("usage", {}))
        return [
            LLMCallRecord(
                backend=self.name,
                model=self.model,
                attempt=1,
                request_id=response.get("ResponseMetadata", {}).get("RequestId"),
                stop_reason=_stop(response.get("stopReason")),
                latency_ms=(time.perf_counter() - started) * 1000,
                cost_usd=cost_usd(self.model, usage, self.prices),
                **usage,
            )
        ]

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
                blocks.append(
                    ToolBlock(type="tool_use", name=tu.get("name"), id=tu.get("toolUseId"), input=tu.get("input"))
                )
            elif "text" in c:
                blocks.append(ToolBlock(type="text", text=c["text"]))
        return Reply(
            stop_reason=_stop(response.get("stopReason")),
            blocks=blocks,
            usage=_usage(response.get("usage", {})),
            request_id=response.get("ResponseMetadata", {}).get("RequestId"),
            latency_ms=latency_ms,
        )

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
        stream = response["stream"]
        try:  # an error event mid-stream raises: the connection is released, not left to the GC
            for event in stream:
                if "contentBlockStart" in event:  # only tool blocks have a start event
                    ev = event["contentBlockStart"]
                    tu = (ev.get("start") or {}).get("toolUse") or {}
                    blocks[ev["contentBlockIndex"]] = ToolBlock(
                        type="tool_use", name=tu.get("name"), id=tu.get("toolUseId")
                    )
                    parts[ev["contentBlockIndex"]] = []
                elif "contentBlockDelta" in event:
                    ev = event["contentBlockDelta"]
                    if first_token_ms is None:
                        first_token_ms = (time.perf_counter() - started) * 1000
                    index, delta = ev["contentBlockIndex"], ev.get("delta") or {}
                    if index not in blocks:  # text or reasoning: no start event
                        blocks[index] = ToolBlock(type="thinking" if "reasoningContent" in delta else "text")
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
        finally:
            stream.close()
        for index, block in blocks.items():
            if index in parts and block.type == "tool_use":
                block.raw = "".join(parts[index])
                block.error = "tool input never completed (no contentBlockStop)"
        return Reply(
            stop_reason=stop_reason,
            blocks=[blocks[i] for i in sorted(blocks)],
            usage=usage,
            request_id=request_id,
            first_token_ms=first_token_ms,
            latency_ms=(time.perf_counter() - started) * 1000,
        )


def _stop(reason: str | None) -> str | None:
    return STOP_REASONS.get(reason or "", reason)


def _usage(usage: dict[str, Any]) -> dict[str, int]:
    """Converse ``usage`` → Messages API ``usage`` names (tokens)."""
    return {
        "input_tokens": int(usage.get("inputTokens", 0) or 0),
        "output_tokens": int(usage.get("outputTokens", 0) or 0),
        "cache_creation_input_tokens": int(usage.get("cacheWriteInputTokens", 0) or 0),
        "cache_read_input_tokens": int(usage.get("cacheReadInputTokens", 0) or 0),
    }


def _feedback_turns(reply: Reply, error: str, mode: OutputMode = "tool") -> list[dict[str, Any]]:
    """The invalid reply as an assistant turn and the error as the next user turn (a
    ``toolResult`` per tool call in tool mode; Converse shapes)."""
    if mode == "json_schema":
        text = "".join(b.text for b in reply.blocks if b.type == "text").strip() or "(no content)"
        retry = (
            f"Your previous reply was not valid findings JSON: {error}. Reply once more with JSON that "
            "matches the schema exactly (findings is a list of objects)."
        )
        return [{"role": "assistant", "content": [{"text": text}]}, {"role": "user", "content": [{"text": retry}]}]
    ask = (
        f"Your previous reply was not a valid {REVIEW_TOOL_NAME} call: {error}. Call {REVIEW_TOOL_NAME} "
        "once more with input that matches its schema exactly (findings is a list of objects)."
    )
    tool_blocks = [b for b in reply.blocks if b.type == "tool_use" and b.id]
    if tool_blocks:
        assistant = [
            {"toolUse": {"toolUseId": b.id, "name": b.name, "input": b.input if isinstance(b.input, dict) else {}}}
            for b in tool_blocks
        ]
        results: list[dict[str, Any]] = [
            {"toolResult": {"toolUseId": b.id, "content": [{"text": error}], "status": "error"}} for b in tool_blocks
        ]
        return [{"role": "assistant", "content": assistant}, {"role": "user", "content": results + [{"text": ask}]}]
    text = "".join(b.text for b in reply.blocks if b.type == "text").strip() or "(no content)"
    return [{"role": "assistant", "content": [{"text": text}]}, {"role": "user", "content": [{"text": ask}]}]


class BedrockMessagesBackend(AnthropicBackend):
    """Reviews chunks with Claude in Amazon Bedrock: the ``anthropic`` backend's requests sent to the
    Messages-API endpoint of ``region`` by ``AnthropicBedrockMantle`` (``max_retries=0``: the Prefect task
    is the one retry layer), without structured outputs (see the module docstring). ``model_id`` is the
    Bedrock id (``anthropic.claude-sonnet-5-5``); ``endpoint_url`` overrides the endpoint's origin (the
    client posts to ``{endpoint_url}/anthropic/v1/messages``; a local double in tests). Other parameters are
    :class:`AnthropicBackend`'s. Raises :class:`LLMConfigError` for an impossible configuration (an
    ``output_mode`` of ``json_schema``, which the endpoint does not offer)."""

    name = "bedrock"

    def __init__(
        self,
        model_id: str,
        *,
        region: str,
        endpoint_url: str | None = None,
        timeout_s: float = 120.0,
        max_tokens: int = 4096,
        max_tokens_ceiling: int = 16_384,
        stream: bool = True,
        prices: dict[str, tuple[float, float, float, float]] | None = None,
        thinking_budget_tokens: int = 0,
        output_mode: OutputMode | None = None,
        cache_ttl: str | None = None,
        party: str | None = None,
    ) -> None:
        if not region:
            raise LLMConfigError("no AWS region configured for the bedrock backend (AWS_REGION)")
        from anthropic import AnthropicBedrockMantle

        base_url = f"{endpoint_url.rstrip('/')}/anthropic" if endpoint_url else None
        client = AnthropicBedrockMantle(aws_region=region, base_url=base_url, max_retries=0, timeout=timeout_s)
        super().__init__(
            "",
            model_id,
            timeout_s=timeout_s,
            max_tokens=max_tokens,
            max_tokens_ceiling=max_tokens_ceiling,
            stream=stream,
            prices=prices,
            thinking_budget_tokens=thinking_budget_tokens,
            output_mode=output_mode,
            cache_ttl=cache_ttl,
            party=party,
            client=client,
            structured_outputs_offered=False,
        )


def bedrock_backend_for(model_id: str, **options: Any) -> BedrockBackend | BedrockMessagesBackend:
    """The Bedrock backend for ``model_id`` by its route (:func:`tasks.review.backends.models.bedrock_route`):
    :class:`BedrockMessagesBackend` on the Messages-API endpoint, else :class:`BedrockBackend` (Converse).
    ``options`` are the backends' keyword arguments (``region``, ``endpoint_url``, budgets, ...)."""
    if bedrock_route(model_id).api == "messages":
        return BedrockMessagesBackend(model_id, **options)
    return BedrockBackend(model_id, **options)
