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
CITATIONS = "https://platform.claude.com/docs/en/build-with-claude/citations"
SONNET_5_5 = "https://platform.claude.com/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5"
EXTENDED_THINKING = "https://platform.claude.com/docs/en/build-with-claude/extended-thinking"

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


def _forced(body: dict[str, Any]) -> bool:
    return (body.get("tool_choice") or {}).get("type") in ("tool", "any")


def _strict_schemas(body: dict[str, Any]) -> list[tuple[str, Any]]:
    tools = body.get("tools") or []
    out = [(f"tools.{n}.input_schema", t.get("input_schema")) for n, t in enumerate(tools) if t.get("strict")]
    fmt = (body.get("output_config") or {}).get("format")
    if isinstance(fmt, dict) and "schema" in fmt:
        out.append(("output_config.format.schema", fmt["schema"]))
    return out


def _strict_schema(body: dict[str, Any]) -> str | None:
    from docreview_testing.stub_llm import strict_schema_problem

    return strict_schema_problem(_strict_schemas(body))


def _forced_tool(body: dict[str, Any]) -> str | None:
    from docreview_testing.stub_llm import forced_tool_problem

    return forced_tool_problem(str(body.get("model")), _forced(body))


def _thinking_type(body: dict[str, Any]) -> str | None:
    from docreview_testing.stub_llm import thinking_type_problem

    return thinking_type_problem(str(body.get("model")), body.get("thinking"))


def _thinking_with_forced_tool(body: dict[str, Any]) -> str | None:
    from docreview_testing.stub_llm import thinking_with_forced_tool_problem

    return thinking_with_forced_tool_problem(str(body.get("model")), _forced(body), body.get("thinking"))


def _cited(body: dict[str, Any]) -> list[bool]:
    from docreview_testing.stub_llm import request_documents

    return [bool((d.get("citations") or {}).get("enabled")) for d in request_documents(body.get("messages") or [])]


def _citations_all_or_none(body: dict[str, Any]) -> str | None:
    from docreview_testing.stub_llm import CITATIONS_ALL_OR_NONE

    cited = _cited(body)
    return CITATIONS_ALL_OR_NONE if any(cited) and not all(cited) else None


def _citations_with_structured_outputs(body: dict[str, Any]) -> str | None:
    from docreview_testing.stub_llm import CITATIONS_WITH_STRUCTURED_OUTPUTS

    structured = (body.get("output_config") or {}).get("format") is not None or "output_format" in body
    return CITATIONS_WITH_STRUCTURED_OUTPUTS if structured and any(_cited(body)) else None


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

_DOC = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "The grass is green."}}
_CITED = {**_DOC, "citations": {"enabled": True}}
_ASK = {"type": "text", "text": "What colour is the grass?"}

RULES = RULES + (
    DocumentedRule(
        "strict-schema-keywords",
        STRUCTURED_OUTPUTS,
        "JSON Schema limitations",
        "2026-12-06",
        "Not supported: ... Numerical constraints (such as `minimum`, `maximum`, `multipleOf`); String constraints "
        "(`minLength`, `maxLength`) ... If you use an unsupported feature, you'll receive a 400 error with details.",
        _strict_schema,
        refused={
            "output_config": {
                "format": {
                    "type": "json_schema",
                    "schema": {
                        "type": "object",
                        "properties": {"n": {"type": "integer", "minimum": 1}},
                        "required": ["n"],
                        "additionalProperties": False,
                    },
                }
            }
        },
        accepted={
            "output_config": {
                "format": {
                    "type": "json_schema",
                    "schema": {
                        "type": "object",
                        "properties": {"n": {"type": "integer", "description": "at least 1"}},
                        "required": ["n"],
                        "additionalProperties": False,
                    },
                }
            }
        },
    ),
    DocumentedRule(
        "forced-tool-choice-refused",
        SONNET_5_5,
        "Forced tool use",
        "2026-12-06",
        'Claude Sonnet 5.5 doesn\'t support forced tool use. `tool_choice` set to `{"type": "any"}` or `{"type": '
        '"tool", "name": "..."}` returns a 400 `invalid_request_error`',
        _forced_tool,
        refused={"model": "claude-sonnet-5-5", "tools": [_TOOL], "tool_choice": {"type": "any"}},
        accepted={"model": "claude-sonnet-5-5", "tools": [_TOOL], "tool_choice": {"type": "auto"}},
    ),
    DocumentedRule(
        "thinking-type",
        SONNET_5_5,
        "Thinking",
        "2026-12-06",
        'On Claude Sonnet 5.5, a request that sends `thinking: {"type": "disabled"}` returns a 400 '
        "`invalid_request_error` whose message points to `between_tools`.",
        _thinking_type,
        refused={"model": "claude-sonnet-5-5", "thinking": {"type": "disabled"}},
        accepted={"model": "claude-sonnet-5-5", "thinking": {"type": "between_tools"}},
    ),
    DocumentedRule(
        "thinking-with-forced-tool",
        EXTENDED_THINKING,
        "Extended thinking with tool use",
        "2026-12-06",
        'Tool use with thinking only supports `tool_choice: {"type": "auto"}` (the default) or `tool_choice: '
        '{"type": "none"}`. Using `tool_choice: {"type": "any"}` or `tool_choice: {"type": "tool", "name": "..."}` '
        "will result in an error because these options force tool use, which is incompatible with extended thinking.",
        _thinking_with_forced_tool,
        refused={
            "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "tools": [_TOOL],
            "tool_choice": {"type": "tool", "name": "record"},
        },
        accepted={
            "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "tools": [_TOOL],
            "tool_choice": {"type": "auto"},
        },
        notes="The sentence is the extended-thinking page's as recalled, not re-read from a stored copy on the date "
        "given (notes citing that page agree: auto or none only). A model that thinks by default (adaptive, 5.x) "
        "counts as thinking: the stricter reading where the pages are silent; docreview always sends thinking off "
        "with a forced tool.",
    ),
    DocumentedRule(
        "citations-all-or-none",
        CITATIONS,
        "How to use citations",
        "2026-12-06",
        "Currently, citations must be enabled on all or none of the documents within a request.",
        _citations_all_or_none,
        refused={"messages": [{"role": "user", "content": [_CITED, _DOC, _ASK]}]},
        accepted={"messages": [{"role": "user", "content": [_CITED, _CITED, _ASK]}]},
    ),
    DocumentedRule(
        "citations-with-structured-outputs",
        CITATIONS,
        "Citations and structured outputs are incompatible",
        "2026-12-06",
        "If you enable citations on any user-provided document (`document` blocks or `search_result` blocks) and "
        "also include the `output_config.format` parameter (or the deprecated `output_format` parameter), the API "
        "returns a 400 error.",
        _citations_with_structured_outputs,
        refused={"messages": [{"role": "user", "content": [_CITED, _ASK]}], "output_config": {"format": _FORMAT}},
        accepted={"messages": [{"role": "user", "content": [_DOC, _ASK]}], "output_config": {"format": _FORMAT}},
    ),
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
