"""``anthropic`` backend: Claude through the Messages API, findings as structured output.

- How findings are obtained is chosen by model capability (:mod:`tasks.review.backends.models`):
  a model with structured outputs gets ``output_config={"format": {"type": "json_schema",
  "schema": ...}}`` and answers with a text block holding JSON (``stop_reason: end_turn``); a
  model without them gets the tool ``record_findings`` with a forced
  ``tool_choice={"type": "tool", "name": "record_findings", "disable_parallel_tool_use": True}``.
  Both schemas are :class:`schemas.findings.ReviewToolInput`'s, through the SDK's
  ``transform_schema`` (:func:`prompt.api_schema`); the reply is validated with the pydantic model.
  Never ``stop_sequences``. In tool mode every ``tool_use`` block with the tool's name is
  collected and merged; a block with another name is logged and named in the review's
  ``detail`` (nothing is dropped silently). Thinking blocks are skipped.
- ``stop_reason`` is handled explicitly (:class:`ToolReviewer`): ``max_tokens`` is a
  truncation, never "no findings" — the call is repeated with a larger ``max_tokens`` (up to
  the configured ceiling, streamed), then the chunk is split in two at a sentence boundary and
  each half reviewed; ``refusal`` → :attr:`ReviewOutcome.refusal`;
  ``model_context_window_exceeded`` → :attr:`ReviewOutcome.context_overflow`; a reply without
  the findings (no tool call, text that is not JSON) or failing validation is retried once with
  the validation error fed back, then recorded as :attr:`ReviewOutcome.invalid_output`. A 400
  context overflow (:data:`CONTEXT_OVERFLOW_MESSAGES`) splits the chunk the same way.
- One narrow, logged repair (:func:`repair_tool_input`): a field the schema says is an array or
  object that arrives as a string holding clean JSON of that type. Anything else fails validation.
- Prompt caching: the output format or tools and the system prompt (:func:`prompt.system_blocks`)
  form a byte-stable prefix ending in the one ``cache_control`` breakpoint; the passage comes
  after it. :func:`cache_prefix_check` compares the prefix with the model's minimum cacheable
  length; :meth:`AnthropicBackend.warm_cache` writes it once before the first concurrent calls
  (``max_tokens=0`` in tool mode; one output token with structured outputs, where the docs refuse
  ``max_tokens: 0``: :meth:`AnthropicBackend.warm_up_request`).
- Streaming (default) measures first-token latency; tool input (``input_json_delta``) or JSON
  text (``text_delta``) is accumulated per content block and parsed once at the end. The parsed result
  is identical to the non-streaming call's.
- Every call, failed ones included, becomes an :class:`LLMCallRecord`. When a call raises, the
  records of the review so far are attached to the exception as ``exc.llm_calls`` so the task
  can persist them before the retry.
- The SDK client is built with ``max_retries=0`` and an explicit timeout: the Prefect task owns
  retries (exactly one retry layer). Configuration is validated before any call
  (:func:`validate_config`).
"""

from __future__ import annotations

import bisect
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from schemas.documents import Chunk
from schemas.filings import FilingReviewToolInput
from schemas.findings import REVIEW_TOOL_NAME, Finding, ReviewToolInput
from schemas.review import ChunkReview, LLMCallRecord, ReviewOutcome
from tasks.review.backends.models import (
    OutputMode,
    capability,
    model_family,
    output_mode,
    price_table,
    retired,
    structured_call,
)
from tasks.review.backends.prompt import (
    min_cacheable_tokens,
    output_format,
    prefix_tokens_estimate,
    prompt_version_for,
    render_chunk,
    review_tool,
    system_blocks,
)

logger = logging.getLogger("docreview.llm")

#: USD per million tokens: (input, output, 5-minute cache write, cache read), by model-id prefix,
#: from the capability table (:mod:`tasks.review.backends.models`, where each price names its
#: source). Override or extend with ``DOCREVIEW_LLM_PRICES``; an unknown model costs 0 and is
#: logged when the backend is built.
PRICES_USD_PER_MTOK: dict[str, tuple[float, float, float, float]] = price_table()

#: Largest ``max_tokens`` sent without streaming (tokens). Above it the call is always streamed
#: (PITFALLS: a very large ``max_tokens`` on a non-streaming call makes the SDK refuse).
NONSTREAMING_MAX_TOKENS = 16_384

#: Error messages that mean the input is longer than the model's context window (re-chunk, do
#: not retry). Sources: Anthropic errors reference ("prompt is too long"; "input length and
#: `max_tokens` exceed context limit: A + B > C", the 400 when input plus ``max_tokens`` is over the
#: window), Bedrock Converse ValidationException ("Input is too long for requested model").
CONTEXT_OVERFLOW_MESSAGES = ("prompt is too long", "input is too long", "exceed context limit")

#: ``chunk_index`` under which a run stores its prompt-cache warm-up calls (``warm_cache``), with
#: ``sha256=""``: ``save_llm_calls(db, run_id, "", WARMUP_CHUNK_INDEX, records)``.
WARMUP_CHUNK_INDEX = -1

#: Smallest passage (characters) that is still split in two after a truncation or overflow.
MIN_SPLIT_CHARS = 400


class LLMConfigError(ValueError):
    """The LLM backend configuration cannot work (raised before any call is made)."""


def supports_forced_tool_choice(model: str) -> bool:
    """Whether ``model`` accepts ``tool_choice={"type": "tool", ...}`` (capability table; an
    unknown model is assumed not to)."""
    return capability(model, warn=False).forced_tool_choice


def validate_config(
    model: str,
    max_tokens: int,
    max_tokens_ceiling: int,
    timeout_s: float,
    thinking_budget_tokens: int = 0,
    mode: OutputMode | None = None,
    structured_outputs_offered: bool = True,
) -> OutputMode:
    """Reject configurations the API would refuse or that cannot review a chunk; return the
    output mode to use (``mode``, or by capability when None: :func:`models.output_mode`).

    Raises :class:`LLMConfigError` for an empty model id, ``max_tokens < 1``, a ceiling below
    ``max_tokens``, a non-positive timeout, a retired model (:data:`models.RETIRED`), ``mode="tool"`` on a model that rejects forced tool
    use (Sonnet/Opus 5.5, Fable/Mythos 5.x: 400 ``invalid_request_error``), ``mode="json_schema"``
    on a model without structured outputs, or extended thinking (``thinking_budget_tokens > 0``):
    with the forced tool the API rejects it ("Tool use with extended thinking": thinking is not
    allowed with ``tool_choice`` of type ``tool``/``any``), and the 5.x models reject manual
    thinking budgets (Sonnet 5 "What's new": manual extended thinking returns 400). An unknown
    model id is not an error: :func:`models.capability` warns and assumes structured outputs.
    ``structured_outputs_offered=False`` (an endpoint without them, Claude in Amazon Bedrock) always gives
    ``tool``: the caller forces the tool only where the model takes a forced ``tool_choice``.
    """
    if not model or not model.strip():
        raise LLMConfigError("no model id configured")
    gone = retired(model)
    if gone is not None:
        raise LLMConfigError(f"model {model!r} is {gone}, a retired model: requests to it fail (docs/models.md)")
    if max_tokens < 1:
        raise LLMConfigError(f"max_tokens must be at least 1 (got {max_tokens})")
    if max_tokens_ceiling < max_tokens:
        raise LLMConfigError(f"max_tokens ceiling {max_tokens_ceiling} is below max_tokens {max_tokens}")
    if timeout_s <= 0:
        raise LLMConfigError(f"the LLM timeout must be positive seconds (got {timeout_s})")
    if thinking_budget_tokens > 0:
        raise LLMConfigError(
            "extended thinking with a token budget is not supported by the review: a forced tool_choice "
            "rejects it and the current models take only adaptive thinking; set DOCREVIEW_LLM_THINKING_BUDGET_TOKENS=0"
        )
    cap = capability(model)
    if not structured_outputs_offered:  # the endpoint has none: the tool, forced where the model allows it
        if mode == "json_schema":
            raise LLMConfigError(
                f"structured outputs are not offered for {model!r} on this endpoint; use DOCREVIEW_LLM_OUTPUT_MODE=auto"
            )
        return "tool"
    chosen: OutputMode = mode or output_mode(model)
    if chosen == "tool" and not cap.forced_tool_choice:
        raise LLMConfigError(
            f"model {model!r} rejects a forced tool_choice (or is not in the capability table); use structured "
            "outputs (DOCREVIEW_LLM_OUTPUT_MODE=auto or json_schema)"
        )
    if chosen == "json_schema" and not cap.structured_outputs:
        raise LLMConfigError(f"model {model!r} has no structured outputs; use DOCREVIEW_LLM_OUTPUT_MODE=tool")
    return chosen


def cache_prefix_check(model: str, prefix_tokens: int) -> tuple[bool, int]:
    """``(reaches_minimum, minimum)``: whether a cached prefix of ``prefix_tokens`` tokens is at
    least the model's minimum cacheable length (:func:`prompt.min_cacheable_tokens`). Below it
    the API silently caches nothing."""
    minimum = min_cacheable_tokens(model)
    return prefix_tokens >= minimum, minimum


def price_for(
    model: str, prices: dict[str, tuple[float, float, float, float]] | None = None
) -> tuple[float, float, float, float] | None:
    """USD per million tokens ``(input, output, cache write, cache read)`` for ``model``: the
    longest matching prefix in ``prices`` (defaults to :data:`PRICES_USD_PER_MTOK`), else that
    of its :func:`model_family` (so ``global.anthropic.claude-sonnet-4-6`` is priced as
    ``claude-sonnet-4-6``), else None."""
    table = PRICES_USD_PER_MTOK if prices is None else prices
    best = max((name for name in table if model.startswith(name)), key=len, default=None)
    if best is None:  # a Bedrock id priced under its model family (global./us. profiles)
        family = model_family(model)
        best = max((name for name in table if family.startswith(name)), key=len, default=None)
    return table[best] if best is not None else None


#: Price of a 1-hour cache write as a multiple of the model's input price. Source:
#: platform.claude.com/docs/en/build-with-claude/prompt-caching, "Pricing" (read 2026-12-06): "1-hour cache
#: write tokens are 2 times the base input tokens price" (5-minute writes: 1.25 times).
ONE_HOUR_WRITE_FACTOR = 2.0


def cost_usd(
    model: str,
    usage: Any,
    prices: dict[str, tuple[float, float, float, float]] | None = None,
    cache_ttl: str | None = None,
) -> float:
    """Cost of one call in USD from its ``usage`` (an object or dict with ``input_tokens``,
    ``output_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``) and the
    price table (0 when the model has no price). Cache writes are priced by their lifetime: the tokens
    the usage reports under ``cache_creation.ephemeral_1h_input_tokens`` (or, when it has no such
    breakdown, every written token of a request sent with ``cache_ttl == "1h"``) at
    :data:`ONE_HOUR_WRITE_FACTOR` times the input price, the rest at the 5-minute write price."""
    price = price_for(model, prices)
    if price is None or usage is None:
        return 0.0

    def get(name: str, where: Any = usage) -> int:
        value = where.get(name) if isinstance(where, dict) else getattr(where, name, 0)
        return int(value or 0)

    pin, pout, pwrite, pread = price
    written = get("cache_creation_input_tokens")
    breakdown = usage.get("cache_creation") if isinstance(usage, dict) else getattr(usage, "cache_creation", None)
    if breakdown is not None:
        one_hour = min(written, get("ephemeral_1h_input_tokens", breakdown))
    else:
        one_hour = written if cache_ttl == "1h" else 0
    return (
        get("input_tokens") * pin
        + get("output_tokens") * pout
        + (written - one_hour) * pwrite
        + one_hour * pin * ONE_HOUR_WRITE_FACTOR
        + get("cache_read_input_tokens") * pread
    ) / 1_000_000


# --- tool input: narrow repair, validation, merge --------------------------------------


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return root.get("$defs", {}).get(ref.split("/")[-1], {})
    return schema


def repair_tool_input(
    data: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, path: str = "$"
) -> tuple[Any, list[str]]:
    """Replace JSON-in-a-string where ``schema`` wants an array or object.

    Returns ``(data, repaired_paths)``. A string is replaced only when the schema type at that
    place is ``array`` or ``object`` and ``json.loads`` of the string gives a value of exactly
    that type; anything else is left alone for validation to reject. Never raises.
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    kind = schema.get("type")
    repaired: list[str] = []
    if kind in ("array", "object") and isinstance(data, str):
        try:
            parsed = json.loads(data)
        except ValueError:
            return data, repaired
        if (kind == "array" and isinstance(parsed, list)) or (kind == "object" and isinstance(parsed, dict)):
            data = parsed
            repaired.append(path)
        else:
            return data, repaired
    if kind == "array" and isinstance(data, list) and isinstance(schema.get("items"), dict):
        out = []
        for i, item in enumerate(data):
            fixed, notes = repair_tool_input(item, schema["items"], root, f"{path}[{i}]")
            out.append(fixed)
            repaired += notes
        data = out
    elif kind == "object" and isinstance(data, dict):
        props = schema.get("properties", {})
        out_d = dict(data)
        for key, sub in props.items():
            if key in out_d:
                out_d[key], notes = repair_tool_input(out_d[key], sub, root, f"{path}.{key}")
                repaired += notes
        data = out_d
    return data, repaired


@dataclass
class ToolBlock:
    """A content block of a reply in Messages API terms.

    ``type`` is ``tool_use`` or ``text``; ``input`` the parsed tool input (``None`` when the
    streamed JSON did not parse: ``error`` says why); ``raw`` the streamed JSON text.
    """

    type: str
    name: str | None = None
    id: str | None = None
    input: Any = None
    text: str = ""
    raw: str | None = None
    error: str | None = None

    def finish(self, raw: str) -> None:
        """Close a streamed block: parse a tool block's accumulated JSON once (``error`` set when it
        does not parse), or keep a text block's text."""
        if self.type != "tool_use":
            self.text = raw
            return
        self.raw = raw
        try:
            self.input = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            self.error = f"tool input is not valid JSON ({exc.msg} at char {exc.pos} of {len(raw)})"


@dataclass
class Reply:
    """One model reply, independent of API (Messages or Converse) and of streaming."""

    stop_reason: str | None
    blocks: list[ToolBlock]
    usage: dict[str, int]
    request_id: str | None = None
    first_token_ms: float | None = None
    latency_ms: float = 0.0


@dataclass
class ParsedTool:
    """Findings merged from every ``record_findings`` block, or the reason they are invalid."""

    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    repaired: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    blocks: int = 0


def parse_tool_blocks(blocks: list[Any], stop_reason: str | None = None, profile: str = "contract") -> ParsedTool:
    """Merge the input of every ``tool_use`` block named ``record_findings`` in ``blocks``.

    Blocks may be SDK content blocks or :class:`ToolBlock`. Applies :func:`repair_tool_input`
    (logged), then validates each input against :class:`ReviewToolInput`. All-or-nothing: one
    invalid block makes the whole reply invalid (``error`` set, no findings). Tool blocks with
    another name are listed in ``ignored``. ``profile == "filing"`` validates against
    :class:`schemas.filings.FilingReviewToolInput` instead.
    """
    schema = review_tool(profile=profile)["input_schema"]
    model = FilingReviewToolInput if profile == "filing" else ReviewToolInput
    out = ParsedTool()
    tool_blocks = []
    for b in blocks:
        if getattr(b, "type", None) != "tool_use":
            continue
        if getattr(b, "name", None) == REVIEW_TOOL_NAME:
            tool_blocks.append(b)
        else:
            out.ignored.append(str(getattr(b, "name", None)))
    out.blocks = len(tool_blocks)
    if out.ignored:
        logger.warning("ignored tool_use block(s) named %s", ", ".join(out.ignored))
    if not tool_blocks:
        out.error = f"no {REVIEW_TOOL_NAME} call in the reply (stop_reason={stop_reason})"
        return out
    findings: list[Finding] = []
    for n, b in enumerate(tool_blocks):
        if getattr(b, "error", None):
            out.error = f"tool_use block {n + 1}: {b.error}"
            return out
        data, repaired = repair_tool_input(getattr(b, "input", None), schema)
        if repaired:
            logger.warning("repaired tool input: %s sent as a JSON string", ", ".join(repaired))
            out.repaired += repaired
        try:
            findings.extend(model.model_validate(data).findings)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            out.error = (
                f"tool_use block {n + 1} failed validation: {exc.error_count()} error(s); "
                f"first at {where or '$'}: {first['msg']}"
            )
            return out
    out.findings = findings
    return out


def parse_json_blocks(blocks: list[Any], stop_reason: str | None = None, profile: str = "contract") -> ParsedTool:
    """Findings from a structured-outputs reply: the text of its ``text`` blocks (``thinking``
    blocks are skipped) parsed as JSON, repaired by :func:`repair_tool_input` (logged) and
    validated against :class:`ReviewToolInput` (so ``page >= 1`` holds although the schema sent
    cannot say it). ``error`` is set when there is no text, the text is not JSON, or validation
    fails; no findings are kept then. A ``tool_use`` block is listed in ``ignored``. ``profile``
    as in :func:`parse_tool_blocks`."""
    schema = review_tool(profile=profile)["input_schema"]
    model = FilingReviewToolInput if profile == "filing" else ReviewToolInput
    out = ParsedTool()
    text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text")
    out.ignored = [str(getattr(b, "name", None)) for b in blocks if getattr(b, "type", None) == "tool_use"]
    if out.ignored:
        logger.warning("ignored tool_use block(s) named %s", ", ".join(out.ignored))
    if not text.strip():
        out.error = f"no JSON text in the reply (stop_reason={stop_reason})"
        return out
    out.blocks = 1
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        out.error = f"reply is not valid JSON ({exc.msg} at char {exc.pos} of {len(text)})"
        return out
    data, repaired = repair_tool_input(data, schema)
    if repaired:
        logger.warning("repaired structured output: %s sent as a JSON string", ", ".join(repaired))
        out.repaired += repaired
    try:
        out.findings = list(model.model_validate(data).findings)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        out.error = (
            f"JSON reply failed validation: {exc.error_count()} error(s); first at {where or '$'}: {first['msg']}"
        )
    return out


def parse_findings(
    blocks: list[Any], stop_reason: str | None, mode: OutputMode, profile: str = "contract"
) -> ParsedTool:
    """:func:`parse_json_blocks` for ``json_schema`` replies, :func:`parse_tool_blocks` for ``tool``
    (``profile``: the chunk's review profile, which chooses the schema)."""
    if mode == "json_schema":
        return parse_json_blocks(blocks, stop_reason, profile)
    return parse_tool_blocks(blocks, stop_reason, profile)


def parse_tool_reply(
    chunk_index: int,
    stop_reason: str | None,
    content: list[Any],
    record: LLMCallRecord,
    mode: OutputMode = "tool",
    profile: str = "contract",
) -> ChunkReview:
    """One reply → :class:`ChunkReview` without any follow-up call (stop_reason mapping plus
    :func:`parse_findings` for ``mode`` and the chunk's ``profile``). Kept for callers that hold a
    single reply (batches)."""
    review = ChunkReview(chunk_index=chunk_index, calls=[record])
    terminal = _terminal_outcome(stop_reason)
    if terminal is not None:
        review.outcome, review.detail = terminal
        return review
    parsed = parse_findings(content, stop_reason, mode, profile)
    if parsed.error:
        review.outcome, review.detail = ReviewOutcome.invalid_output, parsed.error
    else:
        review.findings = parsed.findings
    return review


def _terminal_outcome(stop_reason: str | None) -> tuple[ReviewOutcome, str] | None:
    if stop_reason == "max_tokens":
        return ReviewOutcome.truncated, "reply truncated at max_tokens"
    if stop_reason == "refusal":
        return ReviewOutcome.refusal, "the model declined to review this passage (stop_reason=refusal)"
    if stop_reason == "model_context_window_exceeded":
        return ReviewOutcome.context_overflow, "passage exceeds the context window (model_context_window_exceeded)"
    return None


# --- chunk splitting --------------------------------------------------------------------


def split_chunk(chunk: Chunk, min_chars: int = MIN_SPLIT_CHARS) -> tuple[Chunk, Chunk] | None:
    """Split ``chunk`` in two at the sentence boundary nearest its middle.

    Both halves keep the chunk's ``index`` and document; ``char_start``/``char_end``, page span
    and ``page_offsets`` are recomputed so every character keeps its page. Falls back to the
    whitespace nearest the middle when there is no sentence boundary. Returns ``None`` when
    the text is shorter than ``min_chars`` characters or has no place to cut.
    """
    from tasks.review.backends.rules import split_sentences

    text = chunk.text
    if len(text) < min_chars:
        return None
    middle = len(text) // 2
    cuts = [a for a, _ in split_sentences(text) if 0 < a < len(text)]
    if not cuts:
        cuts = [i + 1 for i, ch in enumerate(text[:-1]) if ch.isspace() and not text[i + 1].isspace()]
    if not cuts:
        return None
    cut = min(cuts, key=lambda c: abs(c - middle))
    left_offsets = [o for o in chunk.page_offsets if o < cut]
    right_offsets = [o - cut for o in chunk.page_offsets if o > cut]
    right_page = chunk.page_start + bisect.bisect_right(chunk.page_offsets, cut)
    left = chunk.model_copy(
        update=dict(
            text=text[:cut],
            char_end=chunk.char_start + cut,
            page_end=chunk.page_start + len(left_offsets),
            page_offsets=left_offsets,
        )
    )
    right = chunk.model_copy(
        update=dict(
            text=text[cut:], char_start=chunk.char_start + cut, page_start=right_page, page_offsets=right_offsets
        )
    )
    return left, right


# --- the review loop shared by the Anthropic and Bedrock backends -------------------------


def is_context_overflow(exc: BaseException) -> bool:
    """True for an API error saying the input is longer than the context window."""
    lowered = str(exc).lower()
    return any(m in lowered for m in CONTEXT_OVERFLOW_MESSAGES)


class ToolReviewer:
    """Structured-output review of one chunk (``mode``: ``json_schema`` or forced ``tool``),
    independent of the wire API.

    Subclasses implement :meth:`_call` (one model call → :class:`Reply`) and set ``name``,
    ``model``. Budgets: ``max_tokens`` (tokens, first try), ``max_tokens_ceiling`` (tokens, the
    most a truncated reply is retried with), ``max_split_depth`` (halvings of a passage),
    ``max_calls_per_chunk`` (calls for one chunk, repairs and splits included).
    """

    name = "llm"
    model = ""
    mode: OutputMode = "tool"
    cache_ttl: str | None = None  # the prompt-cache lifetime the requests ask for ("1h" prices writes at 2x input)

    def __init__(
        self,
        *,
        max_tokens: int,
        max_tokens_ceiling: int,
        prices: dict[str, tuple[float, float, float, float]] | None,
        max_split_depth: int = 3,
        max_calls_per_chunk: int = 12,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_tokens_ceiling = max_tokens_ceiling
        self.max_split_depth = max_split_depth
        self.max_calls_per_chunk = max_calls_per_chunk
        self.prices = {**PRICES_USD_PER_MTOK, **(prices or {})}
        self._attempts: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()
        if price_for(self.model, self.prices) is None:
            logger.warning("no price configured for model %s: its calls are recorded at 0 USD", self.model)

    # subclasses ---------------------------------------------------------------------------

    def _call(self, chunk: Chunk, document_name: str, max_tokens: int, feedback: tuple[Reply, str] | None) -> Reply:
        raise NotImplementedError

    # shared -------------------------------------------------------------------------------

    def _next_attempt(self, chunk: Chunk) -> int:
        key = (chunk.document_sha256, chunk.index)
        with self._lock:
            self._attempts[key] = self._attempts.get(key, 0) + 1
            return self._attempts[key]

    def review_chunk(self, chunk: Chunk, document_name: str) -> ChunkReview:
        """Review one chunk; see the module docstring for the outcomes.

        Returns a :class:`ChunkReview` whose ``calls`` hold one record per model call. Transport
        and API errors propagate (the Prefect task classifies them) with ``exc.llm_calls``
        holding the records of this review so far, the failed call included.
        """
        calls: list[LLMCallRecord] = []
        try:
            review = self._review(chunk, document_name, calls, depth=0)
        except Exception as exc:
            exc.llm_calls = list(calls)  # type: ignore[attr-defined]
            raise
        review.calls = calls
        return review

    def _recorded_call(
        self,
        chunk: Chunk,
        document_name: str,
        max_tokens: int,
        feedback: tuple[Reply, str] | None,
        calls: list[LLMCallRecord],
    ) -> Reply:
        attempt = self._next_attempt(chunk)
        started = time.perf_counter()
        try:
            reply = self._call(chunk, document_name, max_tokens, feedback)
        except Exception as exc:
            calls.append(
                LLMCallRecord(
                    backend=self.name,
                    model=self.model,
                    attempt=attempt,
                    request_id=_request_id_of(exc),
                    latency_ms=(time.perf_counter() - started) * 1000,
                    error_class=type(exc).__name__,
                )
            )
            raise
        calls.append(
            LLMCallRecord(
                backend=self.name,
                model=self.model,
                request_id=reply.request_id,
                attempt=attempt,
                stop_reason=reply.stop_reason,
                input_tokens=reply.usage.get("input_tokens", 0),
                output_tokens=reply.usage.get("output_tokens", 0),
                cache_creation_input_tokens=reply.usage.get("cache_creation_input_tokens", 0),
                cache_read_input_tokens=reply.usage.get("cache_read_input_tokens", 0),
                first_token_ms=reply.first_token_ms,
                latency_ms=reply.latency_ms,
                cost_usd=cost_usd(self.model, reply.usage, self.prices, self.cache_ttl),
            )
        )
        return reply

    def _review(
        self, chunk: Chunk, document_name: str, calls: list[LLMCallRecord], depth: int, max_tokens: int | None = None
    ) -> ChunkReview:
        max_tokens = max_tokens or self.max_tokens
        feedback: tuple[Reply, str] | None = None
        while True:
            if len(calls) >= self.max_calls_per_chunk:
                return ChunkReview(
                    chunk_index=chunk.index,
                    outcome=ReviewOutcome.truncated,
                    detail=f"gave up after {len(calls)} calls for this passage",
                )
            try:
                reply = self._recorded_call(chunk, document_name, max_tokens, feedback, calls)
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                calls[-1].error_class = calls[-1].error_class or type(exc).__name__
                split = self._split(
                    chunk, document_name, calls, depth, "input longer than the context window", max_tokens
                )
                if split is not None:
                    return split
                return ChunkReview(
                    chunk_index=chunk.index,
                    outcome=ReviewOutcome.context_overflow,
                    detail=f"passage exceeds the context window and cannot be split: {str(exc)[:200]}",
                )
            if reply.stop_reason == "max_tokens":
                if max_tokens < self.max_tokens_ceiling:
                    logger.warning(
                        "chunk %d: reply truncated at max_tokens=%d, retrying with %d",
                        chunk.index,
                        max_tokens,
                        min(2 * max_tokens, self.max_tokens_ceiling),
                    )
                    max_tokens = min(2 * max_tokens, self.max_tokens_ceiling)
                    continue
                split = self._split(
                    chunk, document_name, calls, depth, f"reply truncated at max_tokens={max_tokens}", max_tokens
                )
                if split is not None:
                    return split
            terminal = _terminal_outcome(reply.stop_reason)
            if terminal is not None:
                outcome, detail = terminal
                return ChunkReview(chunk_index=chunk.index, outcome=outcome, detail=detail)
            parsed = parse_findings(reply.blocks, reply.stop_reason, self.mode, chunk.profile)
            if parsed.error is None:
                notes = []
                if parsed.blocks > 1 and self.mode == "tool":
                    notes.append(f"merged {parsed.blocks} {REVIEW_TOOL_NAME} blocks")
                if parsed.repaired:
                    notes.append("repaired JSON-string field(s): " + ", ".join(parsed.repaired))
                if parsed.ignored:
                    notes.append("ignored tool_use block(s) named " + ", ".join(parsed.ignored))
                return ChunkReview(chunk_index=chunk.index, findings=parsed.findings, detail="; ".join(notes) or None)
            if feedback is None:
                logger.warning(
                    "chunk %d: invalid structured output (%s); retrying once with the error", chunk.index, parsed.error
                )
                feedback = (reply, parsed.error)
                continue
            return ChunkReview(
                chunk_index=chunk.index,
                outcome=ReviewOutcome.invalid_output,
                detail=f"{parsed.error} (after one corrective retry)",
            )

    def _split(
        self, chunk: Chunk, document_name: str, calls: list[LLMCallRecord], depth: int, why: str, max_tokens: int
    ) -> ChunkReview | None:
        if depth >= self.max_split_depth:
            return None
        halves = split_chunk(chunk)
        if halves is None:
            return None
        logger.warning("chunk %d: %s; reviewing it in two halves (depth %d)", chunk.index, why, depth + 1)
        parts = [self._review(h, document_name, calls, depth + 1, max_tokens) for h in halves]
        merged = ChunkReview(chunk_index=chunk.index, findings=[f for p in parts for f in p.findings])
        bad = [p for p in parts if p.outcome != ReviewOutcome.ok]
        if bad:
            merged.outcome = bad[0].outcome
            merged.detail = f"split after {why}; " + "; ".join(p.detail or p.outcome.value for p in bad)
        else:
            merged.detail = f"split in two after {why}"
        return merged


def _request_id_of(exc: BaseException) -> str | None:
    rid = getattr(exc, "request_id", None)
    if isinstance(rid, str):
        return rid
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return (response.get("ResponseMetadata") or {}).get("RequestId")
    return None


class AnthropicBackend(ToolReviewer):
    """Reviews chunks with Claude via the ``anthropic`` SDK (see the module docstring).

    ``api_key`` is the secret value (kept only in the SDK client); ``timeout_s`` is the per-call
    timeout in seconds; ``max_tokens`` / ``max_tokens_ceiling`` are output budgets in tokens;
    ``stream`` streams every call (first-token latency is only measured when streaming);
    ``prices`` overrides :data:`PRICES_USD_PER_MTOK`; ``count_tokens_preflight`` measures the
    cached prefix with ``messages.count_tokens`` before the first review and logs whether it
    reaches the model's minimum cacheable length; ``output_mode`` forces ``json_schema`` or
    ``tool`` (None: by the model's capability, :func:`models.output_mode`); ``cache_ttl`` is the
    prompt-cache lifetime (``"5m"`` or ``"1h"``; None sends the API default, 5 minutes); ``party``
    is the party the review is for (a playbook's, :func:`prompt.party_instructions`); ``client`` an SDK
    client to send with (None: ``anthropic.Anthropic`` with ``max_retries=0``), for example
    ``AnthropicBedrockMantle``; ``structured_outputs_offered=False`` for an endpoint without structured
    outputs (the tool, forced only where the model takes it, never strict). Raises :class:`LLMConfigError`
    for a configuration the API would reject (:func:`validate_config`).
    """

    name = "anthropic"

    def __init__(
        self,
        api_key: str,
        model: str,
        *,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        max_tokens: int = 4096,
        max_tokens_ceiling: int = 16_384,
        stream: bool = True,
        prices: dict[str, tuple[float, float, float, float]] | None = None,
        thinking_budget_tokens: int = 0,
        count_tokens_preflight: bool = False,
        default_headers: dict[str, str] | None = None,
        output_mode: OutputMode | None = None,
        cache_ttl: str | None = None,
        party: str | None = None,
        client: Any = None,
        structured_outputs_offered: bool = True,
    ) -> None:
        self.mode = validate_config(
            model,
            max_tokens,
            max_tokens_ceiling,
            timeout_s,
            thinking_budget_tokens,
            output_mode,
            structured_outputs_offered,
        )
        import anthropic

        self.model = model
        super().__init__(max_tokens=max_tokens, max_tokens_ceiling=max_tokens_ceiling, prices=prices)
        self.stream = stream
        self.cache_ttl = cache_ttl
        self._client = client or anthropic.Anthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s, default_headers=default_headers
        )
        cap = capability(model, warn=False)
        strict = cap.structured_outputs and structured_outputs_offered
        self.forced_tool_choice = cap.forced_tool_choice  # False: the tool is offered with tool_choice auto
        self._tool = review_tool(strict=strict)
        self._format = output_format()
        self.party = party
        self.prompt_version = prompt_version_for(party)  # reviews are stored and reused under it
        self._system = system_blocks(cache=True, mode=self.mode, ttl=cache_ttl, party=party)
        self._filing: dict[str, Any] = {
            "tool": review_tool(strict=strict, profile="filing"),
            "format": output_format("filing"),
            "system": system_blocks(cache=True, mode=self.mode, ttl=cache_ttl, profile="filing"),
        }
        self.prefix_tokens = prefix_tokens_estimate(self.mode)
        self._preflight = count_tokens_preflight
        ok, minimum = cache_prefix_check(model, self.prefix_tokens)
        if not ok:
            logger.warning(
                "cached prefix is about %d tokens, below the %d-token minimum for %s: "
                "prompt caching will not take effect",
                self.prefix_tokens,
                minimum,
                model,
            )

    def _prefix_kwargs(self, profile: str = "contract") -> dict[str, Any]:
        """The byte-stable part of every request: system (ending in the cache breakpoint) and either
        the strict tool with its forced ``tool_choice`` or ``output_config.format``; plus the
        ``thinking`` value that turns thinking off, when the model needs one. ``profile``
        (``contract`` or ``filing``) chooses the prompt and schema; each has its own cached prefix."""
        filing = profile == "filing"
        kw: dict[str, Any] = {"system": self._filing["system"] if filing else self._system}
        kw.update(
            structured_call(
                self.model,
                tool=self._filing["tool"] if filing else self._tool,
                output_format=self._filing["format"] if filing else self._format,
                mode=self.mode,
                single_tool_call=True,
                forced=self.mode == "json_schema" or self.forced_tool_choice,
            )
        )
        return kw

    def request(
        self, chunk: Chunk, document_name: str, max_tokens: int | None = None, feedback: tuple[Reply, str] | None = None
    ) -> dict[str, Any]:
        """Keyword arguments of ``messages.create`` for one chunk: cached prefix (tools or output
        format, system) first, then the passage; with ``feedback`` (the invalid reply and its error)
        the conversation continues with that reply and the error (a ``tool_result`` in tool mode).
        The structured-outputs request has the shape ``messages.parse(output_format=ReviewToolInput)``
        sends (the same ``transform_schema`` output), built here so batches and streaming share it."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": render_chunk(chunk, document_name, self.mode)}]
        if feedback is not None:
            messages += _feedback_turns(*feedback, mode=self.mode)
        return dict(
            model=self.model,
            max_tokens=max_tokens or self.max_tokens,
            messages=messages,
            **self._prefix_kwargs(chunk.profile),
        )

    def count_prefix_tokens(self) -> int:
        """Tokens of the cached prefix measured with ``messages.count_tokens`` (the prefix with a
        one-word user message: an upper bound by a few tokens)."""
        kw = self._prefix_kwargs()
        kw.pop("tool_choice", None)
        counted = self._client.messages.count_tokens(
            model=self.model, messages=[{"role": "user", "content": "."}], **kw
        )
        return int(counted.input_tokens)

    def warm_up_request(self) -> dict[str, Any]:
        """Keyword arguments of the warm-up request (:meth:`warm_cache`): the run's cached prefix with a
        one-word user turn, in the one form the Messages API accepts for each output mode.

        platform.claude.com/docs/en/build-with-claude/prompt-caching, "Pre-warming the cache >
        Limitations" (read 2026-12-06): "A ``max_tokens: 0`` request is rejected with an
        ``invalid_request_error`` if any of the following are set: ``stream: true``; Extended thinking
        (``thinking.type: "enabled"``); Structured outputs (``output_config.format``); ``tool_choice`` of
        ``{"type": "tool", ...}`` or ``{"type": "any"}``." So:

        - ``tool`` mode: ``max_tokens=0`` with the tools and system, without the forced ``tool_choice``.
          The cached prefix is tools then system up to the breakpoint; a ``tool_choice`` change
          invalidates only the message blocks' cache (prompt-caching, "What invalidates the cache"), so
          the reviews read what this writes. Thinking is sent as the review sends it (never
          ``enabled``: :func:`validate_config`).
        - ``json_schema`` mode: ``output_config.format`` cannot go with ``max_tokens: 0``, and it cannot
          be left out either: the schema is part of the prompt the API caches (structured-outputs page:
          "Changing the ``output_config.format`` parameter will invalidate any prompt cache for that
          conversation thread"). The warm-up is then the review's own prefix with ``max_tokens=1``: the
          same cache write, plus one output token (``stop_reason: max_tokens``).

        Never streamed."""
        kw = self._prefix_kwargs()
        if self.mode == "tool":
            kw.pop("tool_choice", None)
            return dict(model=self.model, max_tokens=0, messages=[{"role": "user", "content": "."}], **kw)
        return dict(model=self.model, max_tokens=1, messages=[{"role": "user", "content": "."}], **kw)

    def warm_cache(self) -> list[LLMCallRecord]:
        """Write the run's cached prefix into the prompt cache with one request, before the first
        concurrent review calls, so they read the cache instead of each writing it.

        Sends :meth:`warm_up_request`: ``max_tokens=0`` where the docs allow it (tool mode: the API fills
        the prompt cache without generating), else the exact review prefix with ``max_tokens=1``
        (structured outputs). Returns one :class:`LLMCallRecord` (``stop_reason`` as the API gives it,
        ``cache_creation_input_tokens`` > 0 when the prefix was written, ``cache_read_input_tokens``
        when it was already warm) for the caller to store with the run's calls
        (``save_llm_calls(db, run_id, "", WARMUP_CHUNK_INDEX, records)``). Raises the SDK's errors
        with ``exc.llm_calls`` set (no retry here: the caller may go on without a warm cache).
        """
        req = self.warm_up_request()
        started = time.perf_counter()
        try:
            message = self._client.messages.create(**req)
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
        usage = _usage_dict(message.usage)
        return [
            LLMCallRecord(
                backend=self.name,
                model=self.model,
                attempt=1,
                request_id=getattr(message, "_request_id", None) or message.id,
                stop_reason=message.stop_reason,
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
                cache_creation_input_tokens=usage.get("cache_creation_input_tokens", 0),
                cache_read_input_tokens=usage.get("cache_read_input_tokens", 0),
                latency_ms=(time.perf_counter() - started) * 1000,
                cost_usd=cost_usd(self.model, usage, self.prices, self.cache_ttl),
            )
        ]

    def close(self) -> None:
        """Close the SDK client's HTTP connections (end of a run)."""
        self._client.close()

    def review_chunk(self, chunk: Chunk, document_name: str) -> ChunkReview:
        if self._preflight:
            self._preflight = False
            self.prefix_tokens = self.count_prefix_tokens()
            ok, minimum = cache_prefix_check(self.model, self.prefix_tokens)
            log = logger.info if ok else logger.warning
            log(
                "count_tokens: cached prefix is %d tokens (minimum cacheable for %s: %d)",
                self.prefix_tokens,
                self.model,
                minimum,
            )
        return super().review_chunk(chunk, document_name)

    review_chunk.__doc__ = ToolReviewer.review_chunk.__doc__

    def _call(self, chunk: Chunk, document_name: str, max_tokens: int, feedback: tuple[Reply, str] | None) -> Reply:
        req = self.request(chunk, document_name, max_tokens, feedback)
        if self.stream or max_tokens > NONSTREAMING_MAX_TOKENS:
            return self.call_streaming(req)
        return self.call_once(req)

    def call_once(self, req: dict[str, Any]) -> Reply:
        """One non-streaming ``messages.create`` call → :class:`Reply` (``first_token_ms`` None)."""
        started = time.perf_counter()
        message = self._client.messages.create(**req)
        latency_ms = (time.perf_counter() - started) * 1000
        blocks = []
        for b in message.content:
            if b.type == "tool_use":
                blocks.append(ToolBlock(type="tool_use", name=b.name, id=b.id, input=b.input))
            elif b.type == "text":
                blocks.append(ToolBlock(type="text", text=b.text))
        return Reply(
            stop_reason=message.stop_reason,
            blocks=blocks,
            usage=_usage_dict(message.usage),
            request_id=getattr(message, "_request_id", None) or message.id,
            latency_ms=latency_ms,
        )

    def call_streaming(self, req: dict[str, Any]) -> Reply:
        """One streamed ``messages.create(stream=True)`` call → :class:`Reply`.

        ``first_token_ms`` is the time to the first ``content_block_delta`` (ms). Tool input is
        accumulated per content block from ``input_json_delta`` and parsed once at
        ``content_block_stop``; JSON that does not parse (a truncated reply) leaves
        ``input=None`` with ``error`` set. An ``error`` event mid-stream raises the SDK's
        status error and the partial reply is discarded.
        """
        started = time.perf_counter()
        first_token_ms: float | None = None
        blocks: dict[int, ToolBlock] = {}
        parts: dict[int, list[str]] = {}
        usage: dict[str, int] = {}
        stop_reason = None
        request_id = None
        with self._client.messages.create(**req, stream=True) as events:
            request_id = events.response.headers.get("request-id")
            for ev in events:
                kind = ev.type
                if kind == "message_start":
                    usage.update(_usage_dict(ev.message.usage))
                    request_id = request_id or ev.message.id
                elif kind == "content_block_start":
                    cb = ev.content_block
                    blocks[ev.index] = ToolBlock(
                        type=cb.type, name=getattr(cb, "name", None), id=getattr(cb, "id", None)
                    )
                    parts[ev.index] = []
                elif kind == "content_block_delta":
                    if first_token_ms is None:
                        first_token_ms = (time.perf_counter() - started) * 1000
                    delta = ev.delta
                    if delta.type == "input_json_delta":
                        parts[ev.index].append(delta.partial_json)
                    elif delta.type == "text_delta":
                        parts[ev.index].append(delta.text)
                elif kind == "content_block_stop":
                    blocks[ev.index].finish("".join(parts.pop(ev.index, [])))
                elif kind == "message_delta":
                    stop_reason = ev.delta.stop_reason or stop_reason
                    for key, value in _usage_dict(ev.usage).items():
                        if value:
                            usage[key] = value
        for index, block in blocks.items():  # a block never stopped (stream cut at max_tokens)
            if index in parts and block.type == "tool_use":
                block.raw = "".join(parts[index])
                block.error = "tool input never completed (no content_block_stop)"
        return Reply(
            stop_reason=stop_reason,
            blocks=[blocks[i] for i in sorted(blocks)],
            usage=usage,
            request_id=request_id,
            first_token_ms=first_token_ms,
            latency_ms=(time.perf_counter() - started) * 1000,
        )


def _usage_dict(usage: Any) -> dict[str, int]:
    out = {}
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = getattr(usage, key, None) if usage is not None else None
        if value is not None:
            out[key] = int(value)
    return out


def _feedback_turns(reply: Reply, error: str, mode: OutputMode = "tool") -> list[dict[str, Any]]:
    """The invalid reply as an assistant turn and the validation error as the next user turn
    (a ``tool_result`` per tool call in tool mode; thinking blocks are not replayed)."""
    if mode == "json_schema":
        text = "".join(b.text for b in reply.blocks if b.type == "text").strip() or "(no content)"
        ask = (
            f"Your previous reply was not valid findings JSON: {error}. Reply once more with JSON that "
            "matches the schema exactly (findings is a list of objects)."
        )
        return [
            {"role": "assistant", "content": [{"type": "text", "text": text}]},
            {"role": "user", "content": [{"type": "text", "text": ask}]},
        ]
    tool_blocks = [b for b in reply.blocks if b.type == "tool_use" and b.id]
    ask = (
        f"Your previous reply was not a valid {REVIEW_TOOL_NAME} call: {error}. Call {REVIEW_TOOL_NAME} "
        "once more with input that matches its schema exactly (findings is a list of objects)."
    )
    if tool_blocks:
        assistant = [
            {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input if isinstance(b.input, dict) else {}}
            for b in tool_blocks
        ]
        results: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": b.id, "is_error": True, "content": error} for b in tool_blocks
        ]
        return [
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": results + [{"type": "text", "text": ask}]},
        ]
    text = "".join(b.text for b in reply.blocks if b.type == "text").strip() or "(no content)"
    return [
        {"role": "assistant", "content": [{"type": "text", "text": text}]},
        {"role": "user", "content": [{"type": "text", "text": ask}]},
    ]
