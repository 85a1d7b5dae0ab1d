"""What each Claude model accepts: the one capability table the model backends and checks read.

A model id is matched by its longest prefix in :data:`CAPABILITIES`, after dropping a Bedrock
provider or inference-profile prefix (``global.anthropic.claude-sonnet-5-5`` →
``claude-sonnet-5-5``). From an entry the backends decide, per model, how findings are
obtained (:func:`output_mode`):

- ``json_schema``: structured outputs, ``output_config={"format": {"type": "json_schema",
  "schema": ...}}`` on the Messages API, ``outputConfig.textFormat`` on Bedrock Converse; the
  reply is a text block holding JSON that matches the schema.
- ``tool``: a forced ``record_findings`` tool call (``tool_choice`` of type ``tool``), strict
  when the model takes strict tool schemas.

Every model with structured outputs uses them; only a model without them falls back to the
forced tool. Models that reject a forced ``tool_choice`` (Sonnet 5.5, Opus 5.5, Fable/Mythos 5.x)
therefore work, and no model is refused by name.

An id the table does not know gets :data:`UNKNOWN_MODEL`: structured outputs, no thinking
sent, the 1024-token minimum cacheable prompt and no price; :func:`capability` logs a warning
naming those assumptions once per id (never an error: a new model id must not stop a run).

Sources (read 2026-12-01; each entry repeats its page):
- platform.claude.com/docs/en/models/<family>/overview (prices, thinking, model ids) and the
  "What's new" / migration-guide pages linked from them (forced tool use, thinking modes);
- platform.claude.com/docs/en/build-with-claude/prompt-caching ("Cache limitations": minimum
  cacheable prompt length; multipliers: 5-minute write 1.25x input, 1-hour write 2x input,
  read 0.1x input);
- platform.claude.com/docs/en/build-with-claude/structured-outputs (which models take
  ``output_config.format`` and strict tools).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Literal

logger = logging.getLogger("docreview.llm")

OutputMode = Literal["json_schema", "tool"]
ThinkingType = Literal["enabled", "adaptive", "disabled", "between_tools"]


@dataclass(frozen=True)
class ModelCapability:
    """What one model family accepts on the Messages API (and, through Bedrock, on Converse).

    - ``structured_outputs``: takes ``output_config.format`` (JSON schema) and ``strict: true`` tools.
    - ``forced_tool_choice``: takes ``tool_choice`` of type ``tool`` / ``any`` (else HTTP 400).
    - ``thinking_types``: accepted ``thinking.type`` values; ``thinking_default_on``: the model
      thinks when the request has no ``thinking`` field (adaptive by default).
    - ``min_cache_tokens``: minimum cacheable prompt length, tokens (shorter prefixes are
      silently not cached).
    - prices, USD per million tokens: ``input``, ``output``, ``cache_write_5m``,
      ``cache_write_1h``, ``cache_read`` (Batch API: half of input and output).
    - ``citations``: takes ``citations: {"enabled": true}`` on ``document`` blocks
      (build-with-claude/citations: "All active models support citations, with the exception of
      Claude Haiku 3").
    """

    structured_outputs: bool
    forced_tool_choice: bool
    thinking_types: tuple[ThinkingType, ...]
    thinking_default_on: bool
    min_cache_tokens: int
    input: float | None
    output: float | None
    cache_write_5m: float | None
    cache_write_1h: float | None
    cache_read: float | None
    citations: bool = True

    @property
    def prices(self) -> tuple[float, float, float, float] | None:
        """``(input, output, 5-minute cache write, cache read)`` USD per million tokens, or None."""
        if self.input is None or self.output is None or self.cache_write_5m is None or self.cache_read is None:
            return None
        return (self.input, self.output, self.cache_write_5m, self.cache_read)

    def thinking_off(self) -> dict[str, str] | None:
        """The ``thinking`` value that turns up-front thinking off on a model that thinks by
        default: ``{"type": "disabled"}`` where accepted, else ``{"type": "between_tools"}``
        (Sonnet 5.5), else None (thinking is always on: Opus 5.5, Fable/Mythos). None as well
        for a model that does not think unless asked (nothing needs sending)."""
        if not self.thinking_default_on:
            return None
        for kind in ("disabled", "between_tools"):
            if kind in self.thinking_types:
                return {"type": kind}
        return None


def _cap(
    structured: bool,
    forced: bool,
    thinking: tuple[ThinkingType, ...],
    default_on: bool,
    min_cache: int,
    prices: tuple[float, float, float, float, float],
    citations: bool = True,
) -> ModelCapability:
    i, o, w5, w1, r = prices
    return ModelCapability(structured, forced, thinking, default_on, min_cache, i, o, w5, w1, r, citations)


_LEGACY_THINKING: tuple[ThinkingType, ...] = ("enabled", "adaptive", "disabled")
_FABLE_PRICES = (10.0, 50.0, 12.50, 20.0, 1.00)

#: Capability table by model-id prefix (longest prefix wins). Prices: (input, output, 5-minute
#: cache write, 1-hour cache write, cache read) USD per million tokens.
CAPABILITIES: dict[str, ModelCapability] = {
    # platform.claude.com/docs/en/models/fable-5/introducing-claude-fable-5-and-claude-mythos-5 and
    # models/fable-5/overview (2026-12-01): $10 / $50, thinking adaptive and always on; Mythos shares
    # Fable's specifications and pricing. Opus 5.5 migration guide: forced tool use is rejected, "the
    # same set [of API changes] that arrived with Fable 5.1"; treated as rejected for every Fable/Mythos
    # 5.x id (stricter than documented for 5.0). Minimum cacheable prompt 512 (prompt-caching, "Cache
    # limitations", read 2026-12-06: "512 tokens for Claude Opus 5, Claude Fable 5, and Claude Mythos 5";
    # Fable/Mythos 5.1 are named with them in the newer wording). Fable/Mythos 5.1 cache reads cost 0.025x
    # input (pricing footnote: "Cache hits and refreshes on Claude Fable 5.1 and Claude Mythos 5.1 are priced
    # at 0.025x the base input price"). Fable/Mythos 5.2 (ids in SDK 2.17's model list): no price or cache
    # minimum found in the docs read; Fable 5's are assumed.
    "claude-fable-5-1": _cap(True, False, ("adaptive",), True, 512, (10.0, 50.0, 12.50, 20.0, 0.25)),
    "claude-mythos-5-1": _cap(True, False, ("adaptive",), True, 512, (10.0, 50.0, 12.50, 20.0, 0.25)),
    "claude-fable-5": _cap(True, False, ("adaptive",), True, 512, _FABLE_PRICES),
    "claude-mythos-5": _cap(True, False, ("adaptive",), True, 512, _FABLE_PRICES),
    # models/opus-5-5/overview and whats-new-opus-5-5 (2026-12-01): $4 / $20, 5m write $5, 1h write $8,
    # read $0.20; thinking cannot be disabled; forced tool use returns 400. Minimum cacheable prompt
    # not stated: 512 as for Opus 5 (models/opus-5/migration guide).
    "claude-opus-5-5": _cap(True, False, ("adaptive",), True, 512, (4.0, 20.0, 5.0, 8.0, 0.20)),
    # models/sonnet-5-5/whats-new-sonnet-5-5 (2026-12-01): $2 / $10, 5m write $2.50, 1h write $4; accepted
    # thinking.type adaptive and between_tools; minimum cacheable prompt 512 tokens; forced tool_choice returns
    # 400. Cache reads $0.10 ("except for prompt cache reads, which cost $0.10 USD per million tokens, half
    # the Claude Sonnet 5 rate", read 2026-12-06; an older copy of the page said Sonnet 5's $0.20).
    "claude-sonnet-5-5": _cap(True, False, ("adaptive", "between_tools"), True, 512, (2.0, 10.0, 2.50, 4.0, 0.10)),
    # models/haiku-5-5/overview (2026-12-01): prompts up to 100,000 tokens $0.10 / $0.50, 5m write
    # $0.125, 1h write $0.20, read $0.01 (the review's prompts stay under 100k; above it prices are 5x);
    # adaptive thinking on by default, can be turned off. Minimum cacheable prompt not stated: 1024.
    "claude-haiku-5-5": _cap(True, True, ("adaptive", "disabled"), True, 1024, (0.10, 0.50, 0.125, 0.20, 0.01)),
    # models/sonnet-5/overview (2026-12-01): $2 / $10, 5m write $2.50, 1h write $4, read $0.20; adaptive
    # thinking on by default, manual extended thinking returns 400; minimum cacheable prompt 1024.
    "claude-sonnet-5": _cap(True, True, ("adaptive", "disabled"), True, 1024, (2.0, 10.0, 2.50, 4.0, 0.20)),
    # models/opus-5/overview (2026-12-01): $5 / $25, 5m write $6.25, 1h write $10, read $0.50; adaptive
    # thinking on by default, can be disabled at effort high or below; minimum cacheable prompt 512.
    "claude-opus-5": _cap(True, True, ("adaptive", "disabled"), True, 512, (5.0, 25.0, 6.25, 10.0, 0.50)),
    # models overview / pricing pages (2026-12-01): Opus 4.5-4.8 $5 / $25, 5m write $6.25, 1h write $10,
    # read $0.50; thinking off unless requested. Minimum cacheable prompt (prompt-caching "Cache
    # limitations", read 2026-12-06): 1,024 for Opus 4.8, 2,048 for Opus 4.7, 4,096 for Opus 4.6 and 4.5.
    # Opus 4.5 is deprecated (SDK 2.17 DEPRECATED_MODELS: end of life January 22nd, 2027).
    "claude-opus-4-8": _cap(True, True, _LEGACY_THINKING, False, 1024, (5.0, 25.0, 6.25, 10.0, 0.50)),
    "claude-opus-4-7": _cap(True, True, _LEGACY_THINKING, False, 2048, (5.0, 25.0, 6.25, 10.0, 0.50)),
    "claude-opus-4-6": _cap(True, True, _LEGACY_THINKING, False, 4096, (5.0, 25.0, 6.25, 10.0, 0.50)),
    "claude-opus-4-5": _cap(True, True, _LEGACY_THINKING, False, 4096, (5.0, 25.0, 6.25, 10.0, 0.50)),
    # models/sonnet-4-6 and pricing (2026-12-01; legacy): $3 / $15, 5m write $3.75, 1h write $6, read
    # $0.30; minimum cacheable prompt 1,024 (prompt-caching "Cache limitations", read 2026-12-06).
    "claude-sonnet-4-6": _cap(True, True, _LEGACY_THINKING, False, 1024, (3.0, 15.0, 3.75, 6.0, 0.30)),
    # models/haiku-4-5 (2026-12-01): $1 / $5, 5m write $1.25, 1h write $2, read $0.10; minimum 4096.
    "claude-haiku-4-5": _cap(True, True, _LEGACY_THINKING, False, 4096, (1.0, 5.0, 1.25, 2.0, 0.10)),
}

#: Retired models: requests naming one fail (the API answers 404 ``not_found_error``), so a run that
#: would call one is refused before it starts (:func:`retired`; ``cli.checks.retired_model_setting``).
#: Source: platform.claude.com/docs/en/about-claude/model-deprecations, "Model status" (read 2026-12-06):
#: claude-3-haiku-20240307 retired April 20, 2026; claude-3-5-haiku-20241022 and claude-3-7-sonnet-20250219
#: February 19, 2026; claude-sonnet-4-20250514 and claude-opus-4-20250514 June 15, 2026;
#: claude-opus-4-1-20250805 August 5, 2026; the older Claude 3 models before them. Claude Sonnet 4.5: its
#: deprecation entry gives November 30, 2026 (seen quoted, not on a page copy) and SDK 2.17's model list no
#: longer has it. Claude Mythos Preview: SDK 2.17 ``DEPRECATED_MODELS`` gives end of life June 30th, 2026.
RETIRED: dict[str, str] = {
    "claude-mythos-preview": "Claude Mythos Preview",
    "claude-sonnet-4-5": "Claude Sonnet 4.5",
    "claude-3-haiku": "Claude Haiku 3",
    "claude-3-5-haiku": "Claude Haiku 3.5",
    "claude-3-5-sonnet": "Claude Sonnet 3.5",
    "claude-3-7-sonnet": "Claude Sonnet 3.7",
    "claude-3-opus": "Claude Opus 3",
    "claude-3-sonnet": "Claude Sonnet 3",
    "claude-opus-4-0": "Claude Opus 4",
    "claude-opus-4-2025": "Claude Opus 4",
    "claude-opus-4-1": "Claude Opus 4.1",
    "claude-sonnet-4-0": "Claude Sonnet 4",
    "claude-sonnet-4-2025": "Claude Sonnet 4",
}


def retired(model: str) -> str | None:
    """The name of the retired model ``model`` (an API id, or a Bedrock id with its provider prefix)
    names, or None when it is not retired (:data:`RETIRED`)."""
    family = model_family(model)
    return next((name for prefix, name in RETIRED.items() if family.startswith(prefix)), None)


#: Assumed for a model id the table does not know (logged once per id by :func:`capability`):
#: structured outputs, no forced tool use, no thinking sent, 1024-token cache minimum, no price.
UNKNOWN_MODEL = ModelCapability(
    structured_outputs=True,
    forced_tool_choice=False,
    thinking_types=(),
    thinking_default_on=False,
    min_cache_tokens=1024,
    input=None,
    output=None,
    cache_write_5m=None,
    cache_write_1h=None,
    cache_read=None,
)

#: The default model: Claude Sonnet 5.5, Anthropic's current Sonnet ("the best combination of speed
#: and intelligence"), $2 / $10 per million tokens against Sonnet 4.6's $3 / $15. Its newer tokenizer
#: counts the same text as about 30% more tokens, so a review costs roughly 0.67 x 1.3 = 0.87 of Sonnet
#: 4.6's, with up-front thinking turned off (``between_tools``) so no thinking tokens are billed.
DEFAULT_MODEL = "claude-sonnet-5-5"

#: The previous default, now legacy at Anthropic; still selectable (``DOCREVIEW_ANTHROPIC_MODEL``).
LEGACY_DEFAULT_MODEL = "claude-sonnet-4-6"

_warned: set[str] = set()
_warn_lock = threading.Lock()


def model_family(model: str) -> str:
    """The model id without a Bedrock provider or inference-profile prefix:
    ``global.anthropic.claude-sonnet-5-5`` and ``anthropic.claude-sonnet-5-5`` give
    ``claude-sonnet-5-5``; an Anthropic API id is returned unchanged."""
    return model.split("anthropic.", 1)[-1]


def lookup(model: str) -> tuple[str, ModelCapability] | None:
    """``(prefix, capability)`` of the longest :data:`CAPABILITIES` prefix of ``model``'s
    :func:`model_family`, or None for an unknown id."""
    family = model_family(model)
    best = max((p for p in CAPABILITIES if family.startswith(p)), key=len, default=None)
    return (best, CAPABILITIES[best]) if best is not None else None


def capability(model: str, warn: bool = True) -> ModelCapability:
    """The capability entry for ``model``; :data:`UNKNOWN_MODEL` for an unknown id, with one
    warning per id (``warn``) naming the assumptions made. Never raises."""
    found = lookup(model)
    if found is not None:
        return found[1]
    if warn:
        with _warn_lock:
            first = model not in _warned
            _warned.add(model)
        if first:
            logger.warning(
                "model %r is not in the capability table (tasks/review/backends/models.py); assuming "
                "structured outputs via output_config.format, no forced tool use, no thinking parameter, a "
                "1024-token minimum cacheable prompt and no price (its calls are recorded at 0 USD)",
                model,
            )
    return UNKNOWN_MODEL


#: Every place a request to a model is built, each reading this table (and only this table) for
#: forced ``tool_choice``, thinking and the output format: the chunk review
#: (:meth:`AnthropicBackend.request`, :meth:`BedrockBackend.request`), the model verifier
#: (:func:`tasks.check.verifier.build_cited_request` and ``build_verdict_request``), Message Batches
#: (:func:`tasks.review.batches.review_batch`, the review's requests), the prompt-cache warm-up
#: (``warm_cache``) and token counting (``count_prefix_tokens``).
CALL_SITES = ("review", "verifier", "batch", "warm_up", "count_tokens")


def structured_call(
    model: str,
    *,
    tool: dict[str, Any],
    output_format: dict[str, Any],
    mode: OutputMode | None = None,
    single_tool_call: bool = False,
    forced: bool = True,
) -> dict[str, Any]:
    """The request fields that make ``model`` answer with one schema, by this table: with structured
    outputs ``{"output_config": {"format": output_format}}``, else ``{"tools": [tool], "tool_choice":
    {"type": "tool", ...}}`` (``single_tool_call`` adds ``disable_parallel_tool_use``); plus the
    ``thinking`` value that turns up-front thinking off where the model thinks by default
    (:meth:`ModelCapability.thinking_off`). ``mode`` forces one of the two (None: :func:`output_mode`).

    Raises ``ValueError`` for ``mode="tool"`` on a model that rejects a forced ``tool_choice`` (the API
    answers 400: "What's new in Claude Sonnet 5.5", "Forced tool use returns an error") or
    ``mode="json_schema"`` on one without structured outputs (structured-outputs page, supported
    models). ``forced=False`` offers the tool with ``tool_choice`` ``auto`` instead (where an API offers
    neither structured outputs nor, for the model, a forced tool: Sonnet 5.5 on Claude in Amazon Bedrock;
    its what's-new page: "``tool_choice: {"type": "auto"}`` (the default) and ``{"type": "none"}`` are
    supported"). Sources of each entry: :data:`CAPABILITIES`."""
    cap = capability(model, warn=False)
    chosen: OutputMode = mode or output_mode(model)
    out: dict[str, Any] = {}
    if chosen == "tool":
        if forced and not cap.forced_tool_choice:
            raise ValueError(f"model {model!r} rejects a forced tool_choice; use structured outputs")
        choice: dict[str, Any] = {"type": "tool", "name": tool["name"]} if forced else {"type": "auto"}
        if single_tool_call:
            choice["disable_parallel_tool_use"] = True
        out["tools"] = [tool]
        out["tool_choice"] = choice
    else:
        if not cap.structured_outputs:
            raise ValueError(f"model {model!r} has no structured outputs; use the forced tool")
        out["output_config"] = {"format": output_format}
    thinking = cap.thinking_off()
    if thinking is not None:
        out["thinking"] = thinking
    return out


def output_mode(model: str) -> OutputMode:
    """``json_schema`` for a model with structured outputs, else ``tool`` (forced tool call)."""
    return "json_schema" if capability(model, warn=False).structured_outputs else "tool"


def price_table() -> dict[str, tuple[float, float, float, float]]:
    """``{prefix: (input, output, 5-minute cache write, cache read)}`` USD per million tokens, for
    every priced entry of :data:`CAPABILITIES`."""
    return {prefix: cap.prices for prefix, cap in CAPABILITIES.items() if cap.prices is not None}


BedrockApi = Literal["messages", "converse"]


@dataclass(frozen=True)
class BedrockRoute:
    """How one model family is called on Amazon Bedrock.

    - ``api``: ``messages`` — "Claude in Amazon Bedrock", the Messages API at
      ``https://bedrock-mantle.{region}.api.aws/anthropic/v1/messages`` (the SDK's
      ``AnthropicBedrockMantle``), for Opus 4.7 and later; ``converse`` — the ``bedrock-runtime`` Converse
      API with ARN-versioned ids, for Opus 4.6 and earlier.
    - ``base_id``: the documented Bedrock model id (``anthropic.claude-opus-4-6-v1``,
      ``anthropic.claude-haiku-4-5-20251001-v1:0``, ``anthropic.claude-sonnet-5-5``).
    - ``profiles``: the cross-Region inference-profile prefixes the docs list for it (``converse`` only:
      the id is ``{profile}.{base_id}``); empty for ``messages`` (the endpoint's region decides).
    - ``structured_outputs``: whether ``output_config.format`` / ``outputConfig.textFormat`` and strict
      tools are offered on that API for that model.

    Sources (read 2026-12-06): platform.claude.com/docs/en/build-with-claude/claude-in-amazon-bedrock
    ("serves Claude through the Messages API at ``/anthropic/v1/messages``"; "Model IDs in Claude in Amazon
    Bedrock carry an ``anthropic.`` provider prefix"; "Features not supported: Structured outputs");
    .../claude-on-amazon-bedrock-legacy (the model table: base ids and the ``global``/``us``/``eu``/``jp``/
    ``apac`` columns); structured-outputs, footnote 1: "On Amazon Bedrock, structured outputs are
    available for Claude Opus 4.6, Claude Sonnet 4.6, Claude Sonnet 4.5, Claude Opus 4.5, and Claude
    Haiku 4.5."
    """

    api: BedrockApi
    base_id: str
    profiles: tuple[str, ...] = ()
    structured_outputs: bool = False


#: The legacy integration's table (claude-on-amazon-bedrock-legacy, read 2026-12-06), for the families that
#: have an ARN-versioned id; every other family of :data:`CAPABILITIES` is on the Messages-API endpoint.
BEDROCK_CONVERSE: dict[str, BedrockRoute] = {
    "claude-opus-4-6": BedrockRoute(
        "converse", "anthropic.claude-opus-4-6-v1", ("global", "us", "eu", "jp", "apac"), True
    ),
    "claude-sonnet-4-6": BedrockRoute("converse", "anthropic.claude-sonnet-4-6", ("global", "us", "eu", "jp"), True),
    "claude-opus-4-5": BedrockRoute(
        "converse", "anthropic.claude-opus-4-5-20251101-v1:0", ("global", "us", "eu"), True
    ),
    "claude-haiku-4-5": BedrockRoute(
        "converse", "anthropic.claude-haiku-4-5-20251001-v1:0", ("global", "us", "eu"), True
    ),
}


def bedrock_route(model: str) -> BedrockRoute:
    """The :class:`BedrockRoute` of ``model`` (an Anthropic id, or a Bedrock id with its provider and
    profile prefixes): the legacy table's entry for its family, else the Messages-API endpoint with the id
    ``anthropic.<model>`` (a dated Anthropic id keeps its date: the docs give the undated ids)."""
    family = model_family(model)
    prefix = max((p for p in BEDROCK_CONVERSE if family.startswith(p)), key=len, default=None)
    if prefix is not None:
        return BEDROCK_CONVERSE[prefix]
    return BedrockRoute("messages", f"anthropic.{family.split(':', 1)[0]}")


def bedrock_model_id(model: str, profile: str = "global") -> str:
    """The Bedrock id for an Anthropic model id, by its :class:`BedrockRoute`: on Converse
    ``{profile}.{base_id}`` (``global.anthropic.claude-opus-4-6-v1``), or the base id alone when
    ``profile`` is empty (in-Region); on the Messages-API endpoint ``anthropic.{model}`` (no profile
    prefix: the endpoint's region serves it). An id that already names the provider (contains
    ``anthropic.``) is returned unchanged. Raises ``ValueError`` for a Converse model the docs list no such
    profile for (naming the ones they do)."""
    if "anthropic." in model:
        return model
    route = bedrock_route(model)
    if route.api == "messages":
        return route.base_id
    if profile and profile not in route.profiles:
        raise ValueError(
            f"DOCREVIEW_BEDROCK_INFERENCE_PROFILE: {model} has no {profile!r} inference profile on Bedrock "
            f"(the documented ones: {', '.join(route.profiles)}; or an empty value for in-Region)"
        )
    return f"{profile}.{route.base_id}" if profile else route.base_id


#: The family's own pages, read 2026-12-06 (prices and cache minimums: the pricing page and prompt-caching,
#: "Cache limitations"; forced tool use and thinking: the family's overview or what's-new page).
_DOCS = "https://platform.claude.com/docs/en"
SOURCES: dict[str, str] = {
    "claude-fable-5-1": f"{_DOCS}/about-claude/pricing",
    "claude-mythos-5-1": f"{_DOCS}/about-claude/pricing",
    "claude-fable-5": f"{_DOCS}/models/fable-5/overview",
    "claude-mythos-5": f"{_DOCS}/models/fable-5/overview",
    "claude-opus-5-5": f"{_DOCS}/models/opus-5-5/whats-new-opus-5-5",
    "claude-sonnet-5-5": f"{_DOCS}/models/sonnet-5-5/whats-new-sonnet-5-5",
    "claude-haiku-5-5": f"{_DOCS}/models/haiku-5-5/overview",
    "claude-sonnet-5": f"{_DOCS}/models/sonnet-5/overview",
    "claude-opus-5": f"{_DOCS}/models/opus-5/overview",
    "claude-opus-4-8": f"{_DOCS}/about-claude/pricing",
    "claude-opus-4-7": f"{_DOCS}/about-claude/pricing",
    "claude-opus-4-6": f"{_DOCS}/about-claude/pricing",
    "claude-opus-4-5": f"{_DOCS}/about-claude/pricing",
    "claude-sonnet-4-6": f"{_DOCS}/about-claude/pricing",
    "claude-haiku-4-5": f"{_DOCS}/about-claude/pricing",
}
READ_ON = "2026-12-06"


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:g}"


def reference_table() -> str:
    """docs/models.md's model tables (Markdown), written from this file: each family's path on Anthropic's
    API and on Bedrock, its cache minimum and prices with its page and the date read, then the retired
    families. ``tests/test_models_doc.py`` checks the page holds exactly this text."""
    rows = [
        "| Model id (prefix) | Anthropic API: findings | Bedrock: API and id | Cache minimum | "
        "Input / output / 5-min write / 1-h write / read, USD per MTok | Page (read) |",
        "|---|---|---|---|---|---|",
    ]
    for prefix, cap in CAPABILITIES.items():
        anthropic = "structured outputs" if cap.structured_outputs else "forced tool"
        if not cap.forced_tool_choice:
            anthropic += " (refuses a forced tool)"
        route = bedrock_route(prefix)
        if route.api == "messages":
            tool = "forced tool" if cap.forced_tool_choice else "tool, `tool_choice` auto"
            bedrock = f"Messages API (Claude in Amazon Bedrock), `{route.base_id}`: {tool}"
        else:
            bedrock = (
                f"Converse, `<profile>.{route.base_id}` (profiles {', '.join(route.profiles)}): structured outputs"
            )
        prices = " / ".join(
            _usd(v) for v in (cap.input, cap.output, cap.cache_write_5m, cap.cache_write_1h, cap.cache_read)
        )
        page = SOURCES.get(prefix, "")
        rows.append(
            f"| `{prefix}` | {anthropic} | {bedrock} | {cap.min_cache_tokens:,} | {prices} | "
            f"[{page.rsplit('/docs/en/', 1)[-1]}]({page}) ({READ_ON}) |"
        )
    rows += ["", "Retired (refused before a run starts: requests to them fail):", ""]
    rows += ["| Model id (prefix) | Model |", "|---|---|"]
    rows += [f"| `{prefix}` | {name} |" for prefix, name in RETIRED.items()]
    return "\n".join(rows) + "\n"
