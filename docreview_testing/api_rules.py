"""The Messages API's documented request rules, one row each, that the local double enforces.

Each :class:`DocumentedRule` is one sentence of Anthropic's documentation (its page, section and the
date it was read) and the check the double applies for it, with two example requests: one the rule
refuses and a close one it accepts. ``tests/test_api_rules.py`` sends both to the double for every
row, so a rule stricter than its sentence fails as surely as a missing one.

Rows are written from the pages, never from docreview's own code; the retired models come from the one
model file (:data:`tasks.review.backends.models.RETIRED`, each family with its page). A rule the double does not yet
hold as a row is still enforced by the older checks in :mod:`docreview_testing.stub_llm` (each with
its source beside it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tasks.review.backends.models import retired

PROMPT_CACHING = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
BATCHES = "https://platform.claude.com/docs/en/build-with-claude/batch-processing"
MODEL_DEPRECATIONS = "https://platform.claude.com/docs/en/about-claude/model-deprecations"
STRUCTURED_OUTPUTS = "https://platform.claude.com/docs/en/build-with-claude/structured-outputs"
BEDROCK_MESSAGES = "https://platform.claude.com/docs/en/build-with-claude/claude-in-amazon-bedrock"

#: The pre-warming limitations, as the prompt-caching page lists them (read 2026-12-06).
_PREWARM = (
    "A `max_tokens: 0` request is rejected with an `invalid_request_error` if any of the following are set: "
    '`stream: true`; Extended thinking (`thinking.type: "enabled"`); Structured outputs (`output_config.format`); '
    '`tool_choice` of `{"type": "tool", ...}` or `{"type": "any"}`.'
)


@dataclass(frozen=True)
class DocumentedRule:
    """One documented rule.

    ``rule_id`` names it in the double's error messages and tests; ``page``/``section``/``read`` say
    where its ``sentence`` (verbatim) stands and when it was read. ``broken(body)`` returns the error
    message when a request body breaks the rule, else None. ``status``/``error_type`` are the answer
    (``errored`` result type inside a batch: ``where="batch"``; ``where="bedrock-messages"``: only on Claude
    in Amazon Bedrock's Messages-API endpoint). ``refused`` and ``accepted`` are the
    two example requests (keys merged over :data:`BASE_REQUEST`; a ``None`` value removes the key)."""

    rule_id: str
    page: str
    section: str
    read: str
    sentence: str
    broken: Callable[[dict[str, Any]], str | None]
    refused: dict[str, Any]
    accepted: dict[str, Any]
    status: int = 400
    error_type: str = "invalid_request_error"
    where: str = "messages"  # "messages": POST /v1/messages; "batch": a request inside a batch
    notes: str = field(default="")

    def example(self, which: str) -> dict[str, Any]:
        """The ``refused`` or ``accepted`` example as a whole request body."""
        body = dict(BASE_REQUEST)
        for key, value in (self.refused if which == "refused" else self.accepted).items():
            if value is None:
                body.pop(key, None)
            else:
                body[key] = value
        return body


#: What every example starts from: a request the API takes.
BASE_REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 16,
    "messages": [{"role": "user", "content": "Hello"}],
}

_TOOL = {
    "name": "record",
    "description": "Record a value.",
    "input_schema": {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]},
}
_FORMAT = {
    "type": "json_schema",
    "schema": {
        "type": "object",
        "properties": {"value": {"type": "string"}},
        "required": ["value"],
        "additionalProperties": False,
    },
}


def _zero(body: dict[str, Any]) -> bool:
    return body.get("max_tokens") == 0


def _prewarm_stream(body: dict[str, Any]) -> str | None:
    return "max_tokens: 0 is not supported with stream: true" if _zero(body) and body.get("stream") else None


def _prewarm_thinking(body: dict[str, Any]) -> str | None:
    kind = (body.get("thinking") or {}).get("type")
    return "max_tokens: 0 is not supported with thinking.type 'enabled'" if _zero(body) and kind == "enabled" else None


def _prewarm_format(body: dict[str, Any]) -> str | None:
    fmt = (body.get("output_config") or {}).get("format")
    structured = fmt is not None or body.get("output_format") is not None
    return "max_tokens: 0 is not supported with output_config.format" if _zero(body) and structured else None


def _prewarm_tool_choice(body: dict[str, Any]) -> str | None:
    kind = (body.get("tool_choice") or {}).get("type")
    if _zero(body) and kind in ("tool", "any"):
        return f"max_tokens: 0 is not supported with tool_choice of type '{kind}'"
    return None


def _prewarm_in_batch(body: dict[str, Any]) -> str | None:
    return "max_tokens: 0 is not supported inside a Message Batches request" if _zero(body) else None


def _structured_on_bedrock_messages(body: dict[str, Any]) -> str | None:
    if (body.get("output_config") or {}).get("format") is not None or body.get("output_format") is not None:
        return "output_config.format: Extra inputs are not permitted"
    if any(isinstance(t, dict) and t.get("strict") for t in body.get("tools") or []):
        return "tools.0.strict: Extra inputs are not permitted"
    return None


def _retired_model(body: dict[str, Any]) -> str | None:
    model = body.get("model")
    return f"model: {model}" if model is not None and retired(str(model)) else None


RULES: tuple[DocumentedRule, ...] = (
    DocumentedRule(
        "prewarm-stream",
        PROMPT_CACHING,
        "Pre-warming the cache > Limitations",
        "2026-12-06",
        _PREWARM,
        _prewarm_stream,
        refused={"max_tokens": 0, "stream": True},
        accepted={"max_tokens": 0},
    ),
    DocumentedRule(
        "prewarm-thinking-enabled",
        PROMPT_CACHING,
        "Pre-warming the cache > Limitations",
        "2026-12-06",
        _PREWARM,
        _prewarm_thinking,
        refused={"max_tokens": 0, "thinking": {"type": "enabled", "budget_tokens": 1024}},
        accepted={"max_tokens": 0, "thinking": {"type": "disabled"}},
    ),
    DocumentedRule(
        "prewarm-structured-outputs",
        PROMPT_CACHING,
        "Pre-warming the cache > Limitations",
        "2026-12-06",
        _PREWARM,
        _prewarm_format,
        refused={"max_tokens": 0, "output_config": {"format": _FORMAT}},
        accepted={"max_tokens": 1, "output_config": {"format": _FORMAT}},
    ),
    DocumentedRule(
        "prewarm-forced-tool-choice",
        PROMPT_CACHING,
        "Pre-warming the cache > Limitations",
        "2026-12-06",
        _PREWARM,
        _prewarm_tool_choice,
        refused={"max_tokens": 0, "tools": [_TOOL], "tool_choice": {"type": "tool", "name": "record"}},
        accepted={"max_tokens": 0, "tools": [_TOOL], "tool_choice": {"type": "auto"}},
    ),
    DocumentedRule(
        "prewarm-batch",
        PROMPT_CACHING,
        "Pre-warming the cache > Limitations",
        "2026-12-06",
        "`max_tokens: 0` is also rejected inside a Message Batches request.",
        _prewarm_in_batch,
        refused={"max_tokens": 0},
        accepted={"max_tokens": 1},
        where="batch",
    ),
    DocumentedRule(
        "retired-model",
        MODEL_DEPRECATIONS,
        "Model status",
        "2026-12-06",
        "Retired: Model is no longer available for use. Requests to retired models will fail.",
        _retired_model,
        refused={"model": "claude-3-haiku-20240307"},
        accepted={"model": "claude-haiku-4-5-20251001"},
        status=404,
        error_type="not_found_error",
    ),
)

RULES = RULES + (
    DocumentedRule(
        "bedrock-messages-structured-outputs",
        BEDROCK_MESSAGES,
        "Features not supported",
        "2026-12-06",
        "Features not supported - Structured outputs",
        _structured_on_bedrock_messages,
        refused={"output_config": {"format": _FORMAT}},
        accepted={"tools": [_TOOL], "tool_choice": {"type": "auto"}},
        where="bedrock-messages",
        notes="The page gives no error text; the message is one seen quoted from the endpoint. Strict tool use is "
        "structured outputs' other half (structured-outputs page), so strict tools are refused with it.",
    ),
)

RULES_BY_ID: dict[str, DocumentedRule] = {r.rule_id: r for r in RULES}


def first_broken(body: dict[str, Any], where: str = "messages") -> tuple[DocumentedRule, str] | None:
    """The first rule of :data:`RULES` that ``body`` breaks, with its error message, or None. ``where``
    ``"batch"`` checks a request inside a batch, ``"bedrock-messages"`` one sent to Claude in Amazon Bedrock
    (that place's rows as well as every general one)."""
    for rule in RULES:
        if rule.where != "messages" and rule.where != where:
            continue
        message = rule.broken(body)
        if message is not None:
            return rule, message
    return None
