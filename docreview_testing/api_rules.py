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

import re
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


# --- what the rows read: the structured-outputs, thinking and Citations rules -----------------------

#: Keywords a strict schema (``strict: true`` tool ``input_schema``, ``output_config.format.schema``)
#: may hold. Source: platform.claude.com/docs/en/build-with-claude/structured-outputs ("JSON Schema
#: limitations", read 2026-12-06): supported are the basic types, ``enum``, ``const``, ``anyOf``/``allOf``,
#: ``$ref``/``$defs``/``definitions``, "``default`` property for all supported types", ``required``,
#: ``additionalProperties: false``, the listed string formats, ``minItems`` 0 or 1 and simple ``pattern``s;
#: not supported are numeric bounds, string lengths and other array constraints.
STRICT_SCHEMA_KEYWORDS = frozenset(
    {
        "$defs",
        "$ref",
        "type",
        "anyOf",
        "allOf",
        "enum",
        "const",
        "description",
        "title",
        "properties",
        "additionalProperties",
        "required",
        "format",
        "items",
        "minItems",
        "pattern",
        "default",
        "definitions",
    }
)

#: What a strict schema's ``pattern`` may not use. structured-outputs page, "JSON Schema limitations" (read
#: 2026-12-06): supported are full and partial matching, quantifiers, character classes and groups; "NOT
#: supported: Backreferences to groups (for example, ``\1``, ``\2``); Lookahead/lookbehind assertions ...; Word
#: boundaries: ``\b``, ``\B``".
UNSUPPORTED_PATTERN = re.compile(r"\\[1-9]|\(\?<?[=!]|\\[bB]")

#: String ``format`` values strict schemas support. Source: ``_transform.py`` ``SupportedStringFormats``.
STRICT_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)

#: Model families that answer a forced ``tool_choice`` (``tool`` or ``any``) with 400. Sources:
#: "What's new in Claude Sonnet 5.5" ("Forced tool use returns an error"), "What's new in Claude Opus
#: 5.5" and its migration guide ("the same set [of changes] that arrived with Fable 5.1"); read as
#: covering every Fable/Mythos 5.x id (stricter than documented for 5.0).
FORCED_TOOL_REJECTED = ("claude-sonnet-5-5", "claude-opus-5-5", "claude-fable-5", "claude-mythos-5")

#: No current model lacks structured outputs: the models that did (Sonnet 4.0, Opus 4.0, the Claude 3 models,
#: structured-outputs page, supported models) are retired, and a request naming one is answered 404 by the
#: documented rule table (docreview_testing.api_rules, "retired-model").

#: Accepted ``thinking.type`` values per family (longest prefix wins); a family not listed accepts
#: every type. Sources: Sonnet 5.5 "What's new" (adaptive, between_tools), Opus 5.5 / Fable 5.1
#: migration guides (thinking is always adaptive: disabling or a budget is rejected; the Fable 5 page
#: says "Adaptive (always on)"), Sonnet 5 "What's new" (manual extended thinking returns 400), Opus 5
#: and Haiku 5.5 overviews (adaptive, can be disabled).
THINKING_TYPES: dict[str, frozenset[str]] = {
    "claude-sonnet-5-5": frozenset({"adaptive", "between_tools"}),
    "claude-opus-5-5": frozenset({"adaptive"}),
    "claude-fable-5": frozenset({"adaptive"}),
    "claude-mythos-5": frozenset({"adaptive"}),
    "claude-sonnet-5": frozenset({"adaptive", "disabled"}),
    "claude-opus-5": frozenset({"adaptive", "disabled"}),
    "claude-haiku-5-5": frozenset({"adaptive", "disabled"}),
}

#: Families that think when the request has no ``thinking`` field (adaptive thinking on by default).
#: Source: the 5.x model overviews ("Adaptive thinking is on by default").
THINKING_DEFAULT_ON = ("claude-sonnet-5", "claude-opus-5", "claude-haiku-5-5", "claude-fable-5", "claude-mythos-5")


def _family(model: str) -> str:
    return str(model).split("anthropic.", 1)[-1]


def _match(model: str, prefixes: Any) -> str | None:
    family = _family(model)
    return max((p for p in prefixes if family.startswith(p)), key=len, default=None)


def thinks(model: str, thinking: dict[str, Any] | None) -> bool:
    """Whether a request to ``model`` with ``thinking`` runs with thinking on."""
    kind = (thinking or {}).get("type")
    if kind in ("enabled", "adaptive"):
        return True
    if kind in ("disabled", "between_tools"):
        return False
    return _match(model, THINKING_DEFAULT_ON) is not None


def schema_errors(schema: Any, path: str = "schema") -> list[str]:
    """Why a strict schema would be refused (empty when it is accepted): keywords outside
    :data:`STRICT_SCHEMA_KEYWORDS` (numeric bounds, string lengths, patterns, defaults, ``oneOf``...),
    ``minItems`` other than 0/1, a string ``format`` outside :data:`STRICT_STRING_FORMATS`, an object
    without ``additionalProperties: false``, a node with no type. Messages are worded like the API's
    ("For 'integer' type, properties minimum are not supported")."""
    if not isinstance(schema, dict):
        return [f"{path}: must be an object"]
    errors: list[str] = []
    kind = schema.get("type")
    extra = sorted(k for k in schema if k not in STRICT_SCHEMA_KEYWORDS)
    if extra:
        errors.append(f"{path}: For '{kind or 'schema'}' type, properties {', '.join(extra)} are not supported")
    if not any(k in schema for k in ("type", "anyOf", "allOf", "enum", "const", "$ref")):
        errors.append(f"{path}: a schema needs type, anyOf, allOf, enum, const or $ref")
    if "pattern" in schema and (
        not isinstance(schema["pattern"], str) or UNSUPPORTED_PATTERN.search(schema["pattern"])
    ):
        errors.append(f"{path}: pattern {schema.get('pattern')!r} uses a regex feature that is not supported")
    if "minItems" in schema and schema["minItems"] not in (0, 1):
        errors.append(f"{path}: For 'array' type, minItems values other than 0 or 1 are not supported")
    if "format" in schema and (kind != "string" or schema["format"] not in STRICT_STRING_FORMATS):
        errors.append(f"{path}: format {schema['format']!r} is not supported")
    if kind == "object" and schema.get("additionalProperties") is not False:
        errors.append(f"{path}: For 'object' type, 'additionalProperties' must be explicitly set to false")
    for name, sub in (schema.get("$defs") or {}).items():
        errors += schema_errors(sub, f"{path}.$defs.{name}")
    for name, sub in (schema.get("properties") or {}).items():
        errors += schema_errors(sub, f"{path}.properties.{name}")
    if isinstance(schema.get("items"), dict):
        errors += schema_errors(schema["items"], f"{path}.items")
    for key in ("anyOf", "allOf"):
        for n, sub in enumerate(schema.get(key) or []):
            errors += schema_errors(sub, f"{path}.{key}.{n}")
    return errors


def strict_schema_problem(strict_schemas: list[tuple[str, Any]]) -> str | None:
    """Why the first of ``strict_schemas`` (``(where, schema)`` pairs sent with ``strict: true`` or as the
    output format) would be refused (:func:`schema_errors`), or None."""
    for where, schema in strict_schemas:
        errors = schema_errors(schema, where)
        if errors:
            return errors[0]
    return None


def forced_tool_problem(model: str, forced_tool: bool) -> str | None:
    """The 400 a forced ``tool_choice`` gets from a model that refuses it (:data:`FORCED_TOOL_REJECTED`), in
    the Sonnet 5.5 / Opus 5.5 pages' own words (read 2026-12-06), or None."""
    if forced_tool and _match(model, FORCED_TOOL_REJECTED):
        return 'tool_choice: type "tool" and "any" are not supported for this model.'
    return None


def thinking_type_problem(model: str, thinking: dict[str, Any] | None) -> str | None:
    """The 400 for a ``thinking.type`` the model does not take (:data:`THINKING_TYPES`), or None."""
    kind = (thinking or {}).get("type")
    accepted = THINKING_TYPES.get(_match(model, THINKING_TYPES) or "")
    if kind is not None and accepted is not None and kind not in accepted:
        return f"thinking.type {kind!r} is not supported for this model (accepted: {', '.join(sorted(accepted))})"
    return None


def thinking_with_forced_tool_problem(model: str, forced_tool: bool, thinking: dict[str, Any] | None) -> str | None:
    """The 400 for thinking with a forced ``tool_choice`` ("Tool use with extended thinking"); a model that
    thinks by default counts as thinking (the stricter reading where the pages are silent), or None."""
    if forced_tool and thinks(model, thinking):
        return "Thinking may not be enabled when tool_choice forces tool use."
    return None


#: The 400 for citations with structured outputs. The page gives no verbatim error text; this message is
#: its sentence: "If you enable citations on any user-provided document (``document`` blocks or
#: ``search_result`` blocks) and also include the ``output_config.format`` parameter (or the deprecated
#: ``output_format`` parameter), the API returns a 400 error." (build-with-claude/citations, "Citations
#: and structured outputs are incompatible"; structured-outputs, "Feature compatibility").
CITATIONS_WITH_STRUCTURED_OUTPUTS = (
    "Citations cannot be used together with structured outputs: citations are enabled on a document and "
    "output_config.format is set"
)

#: "Currently, citations must be enabled on all or none of the documents within a request." (citations page).
CITATIONS_ALL_OR_NONE = "citations must be enabled on all or none of the documents within a request"


def request_documents(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every ``document`` block of a request, in order (document indices count across all messages)."""
    out = []
    for msg in messages:
        content = msg.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "document":
                out.append(block)
    return out


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
    return strict_schema_problem(_strict_schemas(body))


def _forced_tool(body: dict[str, Any]) -> str | None:
    return forced_tool_problem(str(body.get("model")), _forced(body))


def _thinking_type(body: dict[str, Any]) -> str | None:
    return thinking_type_problem(str(body.get("model")), body.get("thinking"))


def _thinking_with_forced_tool(body: dict[str, Any]) -> str | None:
    return thinking_with_forced_tool_problem(str(body.get("model")), _forced(body), body.get("thinking"))


def _cited(body: dict[str, Any]) -> list[bool]:
    return [bool((d.get("citations") or {}).get("enabled")) for d in request_documents(body.get("messages") or [])]


def _citations_all_or_none(body: dict[str, Any]) -> str | None:
    cited = _cited(body)
    return CITATIONS_ALL_OR_NONE if any(cited) and not all(cited) else None


def _citations_with_structured_outputs(body: dict[str, Any]) -> str | None:
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
