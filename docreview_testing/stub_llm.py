"""A local server that speaks the Anthropic Messages API and Bedrock Converse wire formats.

It is a **test double** for dry runs, load tests and the test suite: its answers come from the
offline ``rules`` extractor (:class:`tasks.review.backends.rules.RulesBackend`) run over the passage in
the request, never from a language model, so nothing measured against it says anything about
Claude's quality. What it does reproduce is the protocol the real SDK and boto3 parse:

- ``POST /v1/messages`` — JSON, or Server-Sent Events with ``stream: true``
  (``message_start``, ``content_block_start``, ``ping``, ``content_block_delta`` with
  ``input_json_delta``/``text_delta``, ``content_block_stop``, ``message_delta``,
  ``message_stop``; ``error`` events mid-stream);
- ``POST /v1/messages/count_tokens`` — ``{"input_tokens": n}``;
- ``POST /anthropic/v1/messages`` (and its ``count_tokens``) — Claude in Amazon Bedrock's Messages-API
  endpoint, as ``AnthropicBedrockMantle`` calls it: the same wire format, with that endpoint's rows of the
  documented rule table (no structured outputs) and no Message Batches;
- Message Batches: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}`` (``ended``
  at once, or, after :meth:`StubLLM.hold_batches`, not before :meth:`StubLLM.release_batches`) and
  ``GET /v1/messages/batches/{id}/results`` (JSONL, ``succeeded`` or ``errored`` per request),
  kept in memory; :attr:`StubLLM.batches_created` counts submissions;
- ``POST /model/{modelId}/converse`` and ``/model/{modelId}/converse-stream`` — Bedrock
  Converse JSON and the AWS event-stream binary framing (``application/vnd.amazon.eventstream``);
- ``usage`` with ``cache_creation_input_tokens``/``cache_read_input_tokens`` from a simulated
  prompt cache keyed by the sha256 of the request prefix up to each ``cache_control``
  breakpoint (Converse: ``cachePoint``), readable once the writing response begins (after the
  injected first-token latency), with a 5-minute TTL (or ``ttl: "1h"``) refreshed on read and the model's
  minimum cacheable length (:func:`tasks.review.backends.prompt.min_cacheable_tokens`) applied.
  Token counts are estimates (:func:`tasks.review.backends.prompt.estimate_tokens`, ~4 characters a
  token), not Claude's tokenizer.
- structured outputs: ``output_config.format`` (Converse ``outputConfig.textFormat``) is answered
  with a text block holding the findings JSON (streamed as ``text_delta``s), ``stop_reason:
  end_turn``; a model that thinks by default (the 5.x families) answers with a thinking block
  first (``thinking_delta``/``signature_delta``; Converse ``reasoningContent``);
  ``max_tokens: 0`` (cache pre-warming) writes the cache and returns no content.
- requests the real API rejects are rejected the same way (400 ``invalid_request_error``; Converse
  ``ValidationException``), each rule with its source next to it (:func:`_validate_messages`,
  :func:`_validate_converse`, :func:`check_model_rules`): missing ``model``/``max_tokens``/``messages``,
  ``tool_choice`` naming an absent tool, strict schemas with keywords the API does not support
  (:func:`schema_errors`: numeric bounds, string lengths, ``minItems`` other than 0/1, unsupported
  ``format``s, non-false ``additionalProperties``), a forced ``tool_choice`` on models that reject it
  (Sonnet/Opus 5.5, Fable/Mythos 5.x), thinking types a model does not take, thinking with a forced
  ``tool_choice``, structured outputs on models without them, the Citations rules and the documented
  image and PDF limits (:func:`check_documents`); a missing ``x-api-key`` is a 401. Every such 400 is
  listed in :attr:`StubLLM.refusals`.
- Citations: a request with citations on a plain-text or custom-content ``document`` is answered with the
  sentence(s) or block(s) holding the question's quoted evidence, carrying a ``char_location`` /
  ``content_block_location`` citation whose offsets are exact for the text sent (:func:`cited_answer`;
  streamed as ``citations_delta``). A page-transcription request is answered from
  :attr:`StubLLM.transcripts` (the double reads no image).

Fault injection (see :data:`FAULTS`): per request with the ``x-stub-fault`` header
(``name[:arg]`` items, comma separated), for the next N requests with :meth:`StubLLM.enqueue`
or ``POST /stub/faults`` (``{"faults": "rate_limit:2", "times": 1}``), or for every request
with probability p from the command line (``docreview stub-llm --fault overloaded@0.1``).
Latency: ``--ttft-ms`` (before the first content delta) and ``--token-ms`` (per output
token), or the ``x-stub-ttft-ms`` / ``x-stub-token-ms`` headers.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import struct
import sys
import threading
import time
import uuid
import zlib
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from docreview_testing.api_rules import (  # the documented rules, and what the double's older checks share
    first_broken,
    forced_tool_problem,
    request_documents,
    strict_schema_problem,
    thinking_type_problem,
    thinking_with_forced_tool_problem,
    thinks,
)
from tasks.review.backends.prompt import estimate_tokens, min_cacheable_tokens, parse_rendered_chunk

#: Fault names and what they do (Messages API behaviour; Bedrock equivalent in brackets).
FAULTS: dict[str, str] = {
    "rate_limit": "HTTP 429 rate_limit_error with retry-after: ARG seconds (default 1) "
    "[429 ThrottlingException 'Too many tokens, please wait before trying again.']",
    "overloaded": "HTTP 529 overloaded_error 'Overloaded' [503 ServiceUnavailableException]",
    "server_error": "HTTP 500 api_error 'Internal server error' [500 InternalServerException]",
    "api_overloaded": "HTTP 500 api_error with message 'Overloaded' [500 InternalServerException 'Overloaded']",
    "stream_error": "streaming only: an overloaded_error event after the first content delta "
    "[throttlingException event]; non-streaming: as overloaded",
    "context_overflow": "HTTP 400 invalid_request_error 'prompt is too long' "
    "[400 ValidationException 'Input is too long for requested model.']",
    "context_limit": "HTTP 400 invalid_request_error 'input length and `max_tokens` exceed context limit: "
    "A + B > C' [400 ValidationException with the same message]",
    "bad_request": "HTTP 400 invalid_request_error for every request, as for a schema the API does not accept "
    "[400 ValidationException]",
    "unauthorized": "HTTP 401 authentication_error 'invalid x-api-key' "
    "[403 UnrecognizedClientException 'The security token included in the request is invalid.']",
    "unknown_model": "HTTP 404 not_found_error 'model: …' [400 ValidationException 'The provided model "
    "identifier is invalid.']",
    "truncate": "stop_reason max_tokens with the tool input cut in the middle of its JSON",
    "multi_tool": "findings spread over several tool_use blocks",
    "string_array": "the findings array sent as a JSON string",
    "refusal": "stop_reason refusal and no tool call [stopReason content_filtered]",
    "window_exceeded": "stop_reason model_context_window_exceeded",
    "no_tool": "a text reply without the tool call (stop_reason end_turn)",
    "fabricate": "evidence quotes that are not in the passage and altered numbers in values",
    "spike": "a latency spike: ARG ms (default 2000) before the answer starts",
    "bad_citation": "a cited answer whose char_location ends past the end of the document sent",
}

#: Simulated prompt-cache lifetime, seconds (Anthropic's default ephemeral TTL is 5 minutes).
CACHE_TTL_S = 300.0

#: Characters of tool-input JSON per streamed delta.
DELTA_CHARS = 48


@dataclass
class Fault:
    """One fault: ``name`` from :data:`FAULTS`, optional ``arg``, probability ``p`` (0-1)."""

    name: str
    arg: str | None = None
    p: float = 1.0


def parse_faults(spec: str | None) -> list[Fault]:
    """Parse ``"name[:arg][@p], …"``. Raises ``ValueError`` for an unknown fault name or a
    probability that is not a number in 0..1."""
    out: list[Fault] = []
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        p = 1.0
        if "@" in item:
            item, prob = item.rsplit("@", 1)
            try:
                p = float(prob)
            except ValueError:
                raise ValueError(f"fault {item!r}: probability {prob!r} is not a number") from None
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"fault {item!r}: probability {prob} is outside 0..1")
        name, _, arg = item.partition(":")
        if name not in FAULTS:
            raise ValueError(f"unknown fault {name!r} (known: {', '.join(FAULTS)})")
        out.append(Fault(name, arg or None, p))
    return out


class StubError(Exception):
    """An API error to send: HTTP ``status``, Anthropic error ``type``, AWS ``code``, headers."""

    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        aws_code: str,
        headers: dict[str, str] | None = None,
        rule: bool = False,
    ):
        super().__init__(message)
        self.status, self.kind, self.message, self.aws_code = status, kind, message, aws_code
        self.headers = headers or {}
        self.rule = rule  # a documented request rule refused it (recorded in StubLLM.refusals)


@dataclass
class Answer:
    """What the double replies: content blocks (Messages API shape) and the stop reason."""

    blocks: list[dict[str, Any]]
    stop_reason: str
    output_tokens: int
    cut: dict[int, int] = field(default_factory=dict)  # block index -> chars of JSON actually sent


@dataclass
class _Segment:
    key: str
    tokens: int
    breakpoint: bool
    ttl_s: float | None = None  # the breakpoint's cache lifetime (cache_control.ttl / cachePoint.ttl)


def _ttl_s(value: Any) -> float | None:
    """Seconds of a ``"5m"`` / ``"1h"`` cache TTL; None when absent."""
    return {"5m": 300.0, "1h": 3600.0}.get(value) if value else None


class StubLLM:
    """The double's state: configuration, simulated prompt cache, fault queue and counters.

    ``ttft_ms`` / ``token_ms`` are injected latencies in milliseconds; ``faults`` apply to every
    request with their probability; ``seed`` makes probabilistic faults reproducible.
    """

    def __init__(
        self,
        ttft_ms: float = 0.0,
        token_ms: float = 0.0,
        faults: list[Fault] | None = None,
        seed: int = 0,
        cache_ttl_s: float = CACHE_TTL_S,
    ) -> None:
        self.ttft_ms, self.token_ms = ttft_ms, token_ms
        self.faults = list(faults or [])
        self.cache_ttl_s = cache_ttl_s
        self._rng = random.Random(seed)
        self._cache: dict[str, tuple[float, float]] = {}  # prefix hash -> (expires at, readable from)
        self._queue: deque[list[Fault]] = deque()
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.system_prompts: Counter[str] = Counter()  # system text of Messages requests -> how many
        self.errors: Counter[int] = Counter()  # HTTP status -> error responses sent (faults included)
        self.refusals: list[str] = []  # the message of every 400 a request rule gave (not injected faults)
        self.outage_until = 0.0  # time.monotonic() until which every model request gets a 529
        self.batches_held = False  # True: every batch stays in_progress until release_batches()
        self._gate = threading.Condition()  # model answers wait on it while held (hold_first_token)
        self._passes: int | None = None  # None: answers go on; n: n more answers may go on, then hold
        self.hold_limit_s = 600.0  # a held first token is sent after this long even if never released
        self.answers = 0  # model answers with content that reached their first token
        self.in_flight = 0  # model requests (Messages, Converse) being answered now
        self.max_in_flight = 0  # the most model requests answered at once since creation or reset()
        self.batches: dict[str, dict[str, Any]] = {}  # batch id -> {"created", "requests", "results"}
        self.batches_created = 0
        # (document name, 1-based page) -> the text a page-transcription request for it is answered with
        # (tasks.review.pages): the double reads no image, the test says what the page shows
        self.transcripts: dict[tuple[str, int], str] = {}

    def outage(self, seconds: float, start_in: float = 0.0) -> None:
        """Answer every model request with 529 ``overloaded_error`` (Bedrock: 503) for ``seconds``,
        starting ``start_in`` seconds from now: a full outage window."""
        with self._lock:
            self.outage_start = time.monotonic() + start_in
            self.outage_until = self.outage_start + seconds

    # --- control ------------------------------------------------------------------------

    def hold_first_token(self, allow: int = 0) -> None:
        """Hold model answers (Messages and Converse, streamed or not) before their first token
        until :meth:`release_first_token` (or ``hold_limit_s``), after letting ``allow`` more go on:
        a test decides when calls finish (two flow runs kept in flight at once, a run stopped
        before its last answer) instead of racing an injected latency. A cache warm-up
        (``max_tokens`` 0 or 1) is never held."""
        with self._gate:
            self._passes = allow

    def release_first_token(self) -> None:
        """Let every held and future model answer go on."""
        with self._gate:
            self._passes = None
            self._gate.notify_all()

    def await_first_token(self) -> None:
        """Block one answer while answers are held (see :meth:`hold_first_token`), then count it."""
        with self._gate:
            self._gate.wait_for(lambda: self._passes is None or self._passes > 0, timeout=self.hold_limit_s)
            if self._passes:
                self._passes -= 1
            self.answers += 1

    @contextmanager
    def model_call(self) -> Iterator[Callable[[], None]]:
        """Count one model request in flight for its whole answer (:attr:`max_in_flight`).

        Yields ``finish``, which ends the count early (at most once): the handler calls it just
        before the answer's last bytes are written, since a client cannot have the whole answer,
        and start its next call in the slot it frees, before that. Counting until the handler's
        thread gets to run again after the write would let a busy machine show one request
        more in flight than the client ever had."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        open_ = [True]

        def finish() -> None:
            with self._lock:
                if open_[0]:
                    open_[0] = False
                    self.in_flight -= 1

        try:
            yield finish
        finally:
            finish()

    def hold_batches(self) -> None:
        """Keep every message batch ``in_progress`` (created before or after this call) until
        :meth:`release_batches`: a test decides when a batch ends instead of racing a timer."""
        with self._lock:
            self.batches_held = True

    def release_batches(self) -> None:
        """End every held batch: the next retrieve reports ``ended`` with its results."""
        with self._lock:
            self.batches_held = False

    def expire_batches(self) -> None:
        """End every batch not yet ended as its 24-hour expiry would: each of its requests not yet sent to
        the model is an ``expired`` result (batch-processing page: "Batch reached its 24-hour expiration
        before this request could be sent to the model")."""
        with self._lock:
            for batch in self.batches.values():
                if batch["results"] is None:
                    batch["ending"] = "expired"
            self.batches_held = False

    def enqueue(self, spec: str, times: int = 1) -> None:
        """Apply the faults in ``spec`` to each of the next ``times`` requests (any endpoint)."""
        faults = parse_faults(spec)
        with self._lock:
            for _ in range(times):
                self._queue.append(faults)

    def reset(self) -> None:
        """Forget the prompt cache, queued faults and request counters."""
        with self._lock:
            self._cache.clear()
            self._queue.clear()
            self.requests.clear()
            self.system_prompts.clear()
            self.errors.clear()
            self.refusals.clear()
            self.max_in_flight = self.in_flight

    def active_faults(self, header: str | None, queued: bool = True) -> dict[str, str | None]:
        """Faults for one request: queued (one entry consumed; ``queued=False`` leaves the queue for the model
        calls it was meant for), header, and global by probability."""
        chosen: dict[str, str | None] = {}
        with self._lock:
            if getattr(self, "outage_start", 0.0) <= time.monotonic() < self.outage_until:
                chosen["overloaded"] = None
            if self._queue and queued:
                for f in self._queue.popleft():
                    chosen[f.name] = f.arg
            for f in self.faults:
                if f.p >= 1.0 or self._rng.random() < f.p:
                    chosen.setdefault(f.name, f.arg)
        for f in parse_faults(header):
            chosen[f.name] = f.arg
        return chosen

    # --- prompt cache -------------------------------------------------------------------

    def cache_usage(self, model: str, segments: list[_Segment], visible_after_s: float = 0.0) -> dict[str, int]:
        """``usage`` token fields for a request made of ``segments`` (in prefix order).

        A prefix this request writes becomes readable ``visible_after_s`` seconds later (when its
        response begins: Anthropic prompt-caching docs, "a cache entry only becomes available after
        the first response begins"), so concurrent requests sent before then each write it too."""
        total = sum(s.tokens for s in segments)
        points = [i for i, s in enumerate(segments) if s.breakpoint]
        read = write = 0
        minimum = min_cacheable_tokens(model)
        if points:
            digest = hashlib.sha256(model.encode())
            hashes, cum, running = [], [], 0
            for s in segments:
                digest.update(s.key.encode())
                running += s.tokens
                hashes.append(digest.hexdigest())
                cum.append(running)
            now = time.monotonic()
            with self._lock:

                def readable(h: str) -> bool:
                    expires, ready = self._cache.get(h, (0.0, 0.0))
                    return expires > now and ready <= now

                hit = next((i for i in reversed(points) if readable(hashes[i])), None)
                if hit is not None:
                    read = cum[hit]
                    self._cache[hashes[hit]] = (
                        now + (segments[hit].ttl_s or self.cache_ttl_s),
                        self._cache[hashes[hit]][1],
                    )
                last = points[-1]
                if (hit is None or hit < last) and cum[last] >= minimum:
                    write = cum[last] - read
                    expires, ready = self._cache.get(hashes[last], (0.0, 0.0))
                    ready = min(ready, now + visible_after_s) if expires > now else now + visible_after_s
                    self._cache[hashes[last]] = (now + (segments[last].ttl_s or self.cache_ttl_s), ready)
        return {
            "input_tokens": total - read - write,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }

    # --- answers ------------------------------------------------------------------------

    def answer(
        self,
        user_text: str,
        max_tokens: int,
        tool_name: str | None,
        faults: dict[str, str | None],
        json_output: bool = False,
        thinking: bool = False,
        profile: str = "contract",
    ) -> Answer:
        """Findings from the rules extractor over the passage in ``user_text``, shaped by faults:
        a ``tool_use`` block for ``tool_name``, or with ``json_output`` (structured outputs) a text
        block holding the JSON and ``stop_reason: end_turn``. ``thinking`` puts a short thinking
        block first (a model that thinks by default). ``max_tokens=0`` (cache pre-warming) gives
        no content and ``stop_reason: max_tokens``."""
        if max_tokens == 0:
            return Answer([], "max_tokens", 0)
        answer = self._answer(user_text, max_tokens, tool_name, faults, json_output, profile)
        if thinking and answer.stop_reason not in ("refusal", "model_context_window_exceeded"):
            block = {
                "type": "thinking",
                "thinking": "Reviewing the passage clause by clause.",
                "signature": f"sig_stub_{uuid.uuid4().hex[:16]}",
            }
            answer.blocks.insert(0, block)
            answer.cut = {i + 1: n for i, n in answer.cut.items()}
            answer.output_tokens += estimate_tokens(block["thinking"])
        return answer

    def _answer(
        self,
        user_text: str,
        max_tokens: int,
        tool_name: str | None,
        faults: dict[str, str | None],
        json_output: bool,
        profile: str = "contract",
    ) -> Answer:
        from tasks.review.backends.rules import RulesBackend

        if "refusal" in faults:
            return Answer([], "refusal", 5)
        if "window_exceeded" in faults:
            return Answer([], "model_context_window_exceeded", 0)
        if "no_tool" in faults or (tool_name is None and not json_output):
            text = "I reviewed the passage."
            return Answer([{"type": "text", "text": text}], "end_turn", estimate_tokens(text))
        if tool_name == "record_verification":
            data = verification_answer(user_text)
            block = {"type": "tool_use", "id": f"toolu_stub_{uuid.uuid4().hex[:20]}", "name": tool_name, "input": data}
            return Answer([block], "tool_use", estimate_tokens(json.dumps(data)) + 10)
        chunk = parse_rendered_chunk(user_text)
        findings: list[dict[str, Any]] = []
        if chunk is not None:
            chunk = chunk.model_copy(
                update={"document_sha256": hashlib.sha256(chunk.text.encode()).hexdigest(), "profile": profile}
            )
            review = RulesBackend().review_chunk(chunk, "")
            findings = [f.model_dump(mode="json") for f in review.findings]
        if "fabricate" in faults:
            for f in findings:
                f["evidence"] = f["evidence"] + " and the Supplier shall pay all such amounts twice"
                for v in f["values"]:
                    v["value"] = re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), v["value"], count=1)
        if json_output:
            data: Any = {"findings": json.dumps(findings) if "string_array" in faults else findings}
            text = json.dumps(data)
            out_tokens = estimate_tokens(text) + 10
            if "truncate" in faults or out_tokens > max_tokens:
                keep = len(text) // 2 if "truncate" in faults else max(1, (max_tokens - 10)) * 4
                return Answer(
                    [{"type": "text", "text": text}],
                    "max_tokens",
                    max_tokens if "truncate" not in faults else out_tokens // 2,
                    cut={0: min(keep, len(text))},
                )
            return Answer([{"type": "text", "text": text}], "end_turn", out_tokens)
        groups = [findings]
        if "multi_tool" in faults:
            groups = [findings[i : i + 1] for i in range(len(findings))] if len(findings) >= 2 else [findings, []]
        blocks = []
        for group in groups:
            data = {"findings": group}
            if "string_array" in faults:
                data = {"findings": json.dumps(group)}
            blocks.append(
                {"type": "tool_use", "id": f"toolu_stub_{uuid.uuid4().hex[:20]}", "name": tool_name, "input": data}
            )
        sizes = [len(json.dumps(b["input"])) for b in blocks]
        out_tokens = sum(estimate_tokens(json.dumps(b["input"])) for b in blocks) + 10
        if "truncate" in faults or out_tokens > max_tokens:
            budget = sum(sizes) // 2 if "truncate" in faults else max(1, (max_tokens - 10)) * 4
            cut: dict[int, int] = {}
            for i, size in enumerate(sizes):
                cut[i] = max(0, min(size, budget))
                budget -= cut[i]
            kept = [i for i in cut if cut[i] > 0] or [0]
            blocks = [blocks[i] for i in kept]
            return Answer(
                blocks,
                "max_tokens",
                max_tokens if "truncate" not in faults else out_tokens // 2,
                cut={n: cut[i] for n, i in enumerate(kept)},
            )
        return Answer(blocks, "tool_use", out_tokens)


def verification_answer(user_text: str) -> dict[str, Any]:
    """The stub's ``record_verification`` input for a verifier request
    (:func:`tasks.check.verifier.build_verifier_request`): ``supported`` when the quoted evidence
    occurs in the ``<passage>`` and the offline support check (:func:`tasks.check.support.assess`:
    heading, negation, category model) finds nothing wrong — rules, not a language model."""
    from schemas.findings import Finding
    from schemas.taxonomy import CUAD_LABELS
    from tasks.check.support import assess
    from tasks.textnorm import match_form

    answer = re.search(r"<answer>\n(.*?)\n</answer>\n<cited>\n(.*?)\n</cited>", user_text, re.S)
    if answer is not None:  # the verdict on a cited answer: supported when the answer quoted something
        from tasks.check.verifier import NOT_STATED

        cited = [re.sub(r"^\[\d+-\d+\] ", "", line) for line in answer.group(2).splitlines() if line.startswith("[")]
        if answer.group(1).strip().startswith(NOT_STATED) or not cited:
            return {"supported": False, "supporting_span": "", "reason": "The answer cites nothing that states it."}
        return {"supported": True, "supporting_span": cited[0], "reason": "The cited text states the clause."}
    passage = re.search(r"<passage>\n(.*?)\n</passage>", user_text, re.S)
    quote = re.search(r"Quoted evidence: (.*?)\n(?:Does the passage|Quote, with)", user_text, re.S)
    label = re.search(r"clause category: (.*?)\n", user_text)
    by_label = {v: k for k, v in CUAD_LABELS.items()}
    if not (passage and quote and label) or label.group(1) not in by_label:
        return {"supported": False, "supporting_span": "", "reason": "The request names no passage, quote or category."}
    evidence = quote.group(1).strip()
    if match_form(evidence)[0] not in match_form(passage.group(1))[0]:
        return {"supported": False, "supporting_span": "", "reason": "The quoted evidence is not in the passage."}
    finding = Finding(clause_type=by_label[label.group(1)], summary="-", risk="low", evidence=evidence, page=1)
    problem = assess(finding).problem
    if problem:
        return {"supported": False, "supporting_span": "", "reason": f"The passage does not state it: {problem}."}
    return {
        "supported": True,
        "supporting_span": evidence,
        "reason": f"The passage states the {label.group(1)} clause.",
    }


def document_units(document: dict[str, Any]) -> tuple[str, list[tuple[int, int]], str] | None:
    """``(text, units, kind)`` of a document the double can cite: a plain-text document's text and its
    sentences as character spans (the API chunks plain text into sentences; the double's sentences are
    :func:`tasks.review.backends.rules.split_sentences`'s), kind ``char_location``; a custom-content
    document's text blocks joined, each block one unit, kind ``content_block_location`` (the API does no
    further chunking). None for PDFs, URLs and files (the double extracts no PDF text)."""
    from tasks.review.backends.rules import split_sentences

    source = document.get("source") or {}
    if source.get("type") == "text":
        text = str(source.get("data", ""))
        sentences = split_sentences(text)
        # The API's sentence chunks run on to the next sentence: the citations page's example cites "The grass
        # is green." at characters 0-20 of "The grass is green. The sky is blue." (the space is inside).
        spans = [
            (a, sentences[i + 1][0] if i + 1 < len(sentences) else len(text)) for i, (a, _) in enumerate(sentences)
        ]
        return text, spans, "char_location"
    if source.get("type") == "content":
        spans, parts, at = [], [], 0
        for block in source.get("content") or []:
            piece = str(block.get("text", "")) if block.get("type") == "text" else ""
            spans.append((at, at + len(piece)))
            parts.append(piece)
            at += len(piece)
        return "".join(parts), spans, "content_block_location"
    return None


def cited_answer(
    documents: list[dict[str, Any]], question: str, faults: dict[str, str | None], max_tokens: int
) -> Answer:
    """The double's cited answer to a verifier question (:func:`tasks.check.verifier.build_cited_request`):
    the units (sentences or content blocks) of the first document that hold the question's quoted evidence,
    as one text block citing them, when the offline support check finds nothing wrong with the quote
    (:func:`verification_answer`'s rules); else :data:`tasks.check.verifier.NOT_STATED` citing nothing.
    Shaped as the citations page prints them (read 2026-12-06): a plain-text document's sentence chunks run
    on to the next sentence, so a ``char_location``'s indices hold the sentence's trailing whitespace while its
    ``cited_text`` does not ("The grass is green." at 0-20); one citation per sentence, all on the text block
    of the claim (several when the quote spans sentences); the block's text is the claim, not the cited text.
    Fault ``bad_citation``: a ``char_location`` whose end lies past the document's end."""
    from tasks.check.verifier import NOT_STATED
    from tasks.textnorm import match_form

    def plain(text: str) -> Answer:
        return Answer([{"type": "text", "text": text}], "end_turn", estimate_tokens(text) + 2)

    if max_tokens == 0:
        return Answer([], "max_tokens", 0)
    quote = re.search(r"Quoted evidence: (.*?)\n", question, re.S)
    for index, document in enumerate(documents):
        units = document_units(document)
        if units is None or quote is None:
            continue
        text, spans, kind = units
        norm, offsets = match_form(text)
        q = match_form(quote.group(1).strip())[0]
        at = norm.find(q) if q else -1
        if at < 0:
            continue
        verdict = verification_answer(f"<passage>\n{text}\n</passage>\n\n{question}")
        if not verdict["supported"]:
            return plain(NOT_STATED)
        start, end = offsets[at], offsets[at + len(q) - 1] + 1
        hit = [i for i, (a, b) in enumerate(spans) if a < end and start < b] or [0]
        if kind == "char_location":  # one citation per sentence, as the citations page's example has them
            cited = [(i, i + 1) for i in hit]
        else:
            cited = [(hit[0], hit[-1] + 1)]
        citations: list[dict[str, Any]] = []
        for first, after in cited:
            lo, hi = spans[first][0], spans[after - 1][1]
            citation: dict[str, Any] = {
                "type": kind,
                "cited_text": text[lo:hi].strip(),  # the indices may hold trailing whitespace; cited_text not
                "document_index": index,
                "document_title": document.get("title"),
            }
            if kind == "char_location":
                citation.update(start_char_index=lo, end_char_index=hi)
                if "bad_citation" in faults:
                    citation["end_char_index"] = len(text) + 40
            else:
                citation.update(start_block_index=first, end_block_index=after)
            citations.append(citation)
        said = " ".join(c["cited_text"] for c in citations)
        claim = said[:1].lower() + said[1:].rstrip(".")  # the claim in the answer's words, not the cited text
        blocks = [
            {"type": "text", "text": "According to the document, "},
            {"type": "text", "text": claim, "citations": citations},
        ]
        return Answer(blocks, "end_turn", estimate_tokens(said) + 8)
    return plain(NOT_STATED)


# --- request parsing helpers ------------------------------------------------------------------


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, dict):
        if "text" in block:
            return str(block["text"])
        if "content" in block:
            content = block["content"]
            return content if isinstance(content, str) else " ".join(_block_text(c) for c in content)
        return _canon(block.get("input", block))
    return ""


def messages_segments(body: dict[str, Any]) -> list[_Segment]:
    """Prefix segments of a Messages API request: tools, system blocks, message blocks."""
    segs: list[_Segment] = []
    fmt = (body.get("output_config") or {}).get("format")
    if fmt:  # the output schema is part of the prompt the API caches
        segs.append(_Segment("format:" + _canon(fmt), estimate_tokens(_canon(fmt)), False))
    for tool in body.get("tools") or []:
        t = {k: v for k, v in tool.items() if k != "cache_control"}
        segs.append(
            _Segment(
                _canon(t),
                estimate_tokens(_canon(t)),
                "cache_control" in tool,
                _ttl_s((tool.get("cache_control") or {}).get("ttl")),
            )
        )
    system = body.get("system")
    if isinstance(system, str):
        segs.append(_Segment(system, estimate_tokens(system), False))
    for block in system or [] if not isinstance(system, str) else []:
        text = _block_text(block)
        segs.append(
            _Segment(
                _canon({k: v for k, v in block.items() if k != "cache_control"}),
                estimate_tokens(text),
                "cache_control" in block,
                _ttl_s((block.get("cache_control") or {}).get("ttl")),
            )
        )
    for msg in body.get("messages") or []:
        content = msg.get("content")
        blocks = [content] if isinstance(content, str) else (content or [])
        for block in blocks:
            text = _block_text(block)
            bp = isinstance(block, dict) and "cache_control" in block
            key = _canon({k: v for k, v in block.items() if k != "cache_control"}) if isinstance(block, dict) else text
            segs.append(_Segment(msg.get("role", "") + key, media_tokens(block) or estimate_tokens(text), bp))
    return segs


def media_tokens(block: Any) -> int:
    """Estimated input tokens of an ``image`` block or a base64 PDF ``document`` block (0 for anything
    else): an image costs about width x height / 750 tokens after the API's scaling to a 1568 px long edge
    (build-with-claude/vision, "Calculate image costs"); a PDF page its image plus its text, taken as
    1,600 tokens a page (pdf-support: each page is converted into an image as well as text)."""
    if not isinstance(block, dict) or block.get("type") not in ("image", "document"):
        return 0
    source = block.get("source") or {}
    if source.get("type") != "base64":
        return 0
    import base64

    try:
        raw = base64.b64decode(str(source.get("data", "")))
    except ValueError:
        return 0
    if block["type"] == "document":
        return 1600 * (pdf_pages(raw) or 1)
    size = image_size(raw)
    if size is None:
        return 0
    w, h = size
    scale = min(1.0, 1568 / max(w, h))
    return max(1, round(w * scale * h * scale / 750))


def converse_media_tokens(item: Any) -> int:
    """:func:`media_tokens` of a Converse ``document`` (``format: pdf``) or ``image`` content block, whose
    ``source.bytes`` arrive base64-encoded in the JSON body; 0 for anything else."""
    if not isinstance(item, dict):
        return 0
    if "document" in item and (item["document"] or {}).get("format") == "pdf":
        data, kind, media = (item["document"].get("source") or {}).get("bytes"), "document", "application/pdf"
    elif "image" in item:
        data, kind, media = (item["image"].get("source") or {}).get("bytes"), "image", "image/png"
    else:
        return 0
    return media_tokens({"type": kind, "source": {"type": "base64", "media_type": media, "data": data or ""}})


def converse_segments(body: dict[str, Any]) -> list[_Segment]:
    """Prefix segments of a Converse request; a ``cachePoint`` marks the segment before it."""
    segs: list[_Segment] = []

    def add(items: list[Any], prefix: str) -> None:
        for item in items:
            if isinstance(item, dict) and "cachePoint" in item:
                if segs:
                    segs[-1].breakpoint = True
                    segs[-1].ttl_s = _ttl_s((item["cachePoint"] or {}).get("ttl"))
                continue
            text = item.get("text") if isinstance(item, dict) and "text" in item else _canon(item)
            segs.append(
                _Segment(prefix + _canon(item), converse_media_tokens(item) or estimate_tokens(str(text)), False)
            )

    fmt = (body.get("outputConfig") or {}).get("textFormat")
    if fmt:
        add([fmt], "format:")
    add((body.get("toolConfig") or {}).get("tools") or [], "tool:")
    add(body.get("system") or [], "system:")
    for msg in body.get("messages") or []:
        add(msg.get("content") or [], msg.get("role", "") + ":")
    return segs


def first_user_text(messages: list[dict[str, Any]]) -> str:
    """Text of the first user turn (the rendered passage), for either API's message shape."""
    for msg in messages:
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, str):
                return content
            return "".join(str(c.get("text", "")) for c in content or [] if isinstance(c, dict))
    return ""


# --- AWS event-stream framing -----------------------------------------------------------------


def eventstream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total and header lengths, CRC32), string headers
    (type 7), payload, message CRC32. Source: AWS "Event stream encoding" reference."""
    hb = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v.encode())) + v.encode()
        for k, v in headers.items()
    )
    prelude = struct.pack(">II", 12 + len(hb) + len(payload) + 4, len(hb))
    head = prelude + struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    msg = head + hb + payload
    return msg + struct.pack(">I", zlib.crc32(msg) & 0xFFFFFFFF)


def _aws_event(event_type: str, payload: dict[str, Any]) -> bytes:
    return eventstream_message(
        {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
        json.dumps(payload).encode(),
    )


def _aws_exception(exc_type: str, message: str) -> bytes:
    return eventstream_message(
        {":exception-type": exc_type, ":content-type": "application/json", ":message-type": "exception"},
        json.dumps({"message": message}).encode(),
    )


# --- HTTP -------------------------------------------------------------------------------------

_CONVERSE_RE = re.compile(r"^/model/([^/]+)/(converse|converse-stream)$")
_BATCH_RE = re.compile(r"^/v1/messages/batches/([A-Za-z0-9_-]+)(/results)?/?$")
_CANCEL_RE = re.compile(r"^/v1/messages/batches/([A-Za-z0-9_-]+)/cancel/?$")
_CUSTOM_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _fault_error(faults: dict[str, str | None], streaming: bool) -> StubError | None:
    if "rate_limit" in faults:
        after = faults["rate_limit"] or "1"
        return StubError(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            "ThrottlingException",
            {"retry-after": after},
        )
    if "overloaded" in faults or ("stream_error" in faults and not streaming):
        return StubError(529, "overloaded_error", "Overloaded", "ServiceUnavailableException")
    if "server_error" in faults:
        return StubError(500, "api_error", "Internal server error", "InternalServerException")
    if "api_overloaded" in faults:
        return StubError(500, "api_error", "Overloaded", "InternalServerException")
    # Refusals of the request itself, the same for every document (Anthropic API errors reference;
    # Bedrock Runtime API errors: UnrecognizedClientException is a 403, the model id a ValidationException).
    if "bad_request" in faults:
        return StubError(
            400,
            "invalid_request_error",
            "output_config.format.schema: For 'integer' type, properties minimum are not supported",
            "ValidationException",
        )
    if "unauthorized" in faults:
        return StubError(401, "authentication_error", "invalid x-api-key", "UnrecognizedClientException")
    if "unknown_model" in faults:
        return StubError(404, "not_found_error", "model: the requested model was not found", "ValidationException")
    if "context_overflow" in faults:
        return StubError(
            400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", "ValidationException"
        )
    if "context_limit" in faults:
        return StubError(
            400,
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: "
            "195000 + 16384 > 200000, decrease input length or `max_tokens` and try again",
            "ValidationException",
        )
    return None


# --- request rules of the real API ----------------------------------------------------------
#
# Each rule below is one the Messages API (and Bedrock Converse for Claude) documents; the source is
# named next to it. The double must be at least as strict as the service: where a page leaves a case
# open, the stricter reading is taken and said so.


def _bad(message: str) -> StubError:
    return StubError(400, "invalid_request_error", message, "ValidationException", rule=True)


def check_model_rules(
    model: str,
    *,
    forced_tool: bool,
    thinking: dict[str, Any] | None,
    strict_schemas: list[tuple[str, Any]],
    structured: bool,
) -> None:
    """The model-dependent rules as Bedrock Converse meets them (the Messages API holds them as rows of
    :data:`docreview_testing.api_rules.RULES`); raises a 400 :class:`StubError` for the first broken one."""
    for problem in (
        strict_schema_problem(strict_schemas),
        forced_tool_problem(model, forced_tool),
        thinking_type_problem(model, thinking),
        thinking_with_forced_tool_problem(model, forced_tool, thinking),
    ):
        if problem is not None:
            raise _bad(problem)


#: Documented input limits. PDF support ("Check PDF requirements"): at most 100 pages per request for a
#: model whose context window is under 1M tokens (600 otherwise; the double applies 100), 32 MB per
#: request. Vision ("Basics and limits"): at most 100 images per request (600 for 1M-context models; the
#: double applies 100), an image over 8000x8000 px is rejected, over 20 images in one request the limit is
#: 2000x2000 px, at most 5 MB per image on the API; JPEG, PNG, GIF and WebP.
MAX_PDF_PAGES = 100
MAX_REQUEST_BYTES = 32 * 1024 * 1024
MAX_IMAGES = 100
MAX_IMAGE_PX = 8000
MAX_IMAGE_PX_MANY = 2000
MAX_IMAGE_BYTES = 5 * 1024 * 1024
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")

_DOCUMENT_KEYS = {"type", "source", "title", "context", "citations", "cache_control"}


def _images(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for msg in messages:
        content = msg.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "image":
                out.append(block)
    return out


def _b64(data: Any, where: str) -> bytes:
    import base64
    import binascii

    if not isinstance(data, str):
        raise _bad(f"{where}.data: Input should be a valid string")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(f"{where}.data: invalid base64 data") from None


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels of PNG, JPEG, GIF or WebP bytes (read with Pillow), None when unreadable."""
    import io

    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as img:
            return int(img.width), int(img.height)
    except Exception:
        return None


def pdf_pages(data: bytes) -> int | None:
    """Pages of a PDF (pypdf), None when it does not open."""
    import io

    try:
        from pypdf import PdfReader

        return len(PdfReader(io.BytesIO(data)).pages)
    except Exception:
        return None


def check_documents(model: str, messages: list[dict[str, Any]], structured: bool) -> None:
    """The ``document`` / ``image`` block rules and the Citations rules; raises a 400 for the first broken
    one. Document shapes (build-with-claude/citations, "Document types"; pdf-support): ``source.type``
    ``text`` (``media_type: text/plain``, string ``data``), ``base64`` (``media_type: application/pdf``,
    base64 ``data``), ``content`` (a non-empty list of ``text``/``image`` blocks), ``url`` or ``file``;
    optional ``title``/``context`` strings and ``citations: {"enabled": bool}``. The Citations rules (on all
    documents or none, never with structured outputs) are rows of :data:`docreview_testing.api_rules.RULES`. Limits: :data:`MAX_PDF_PAGES`, :data:`MAX_IMAGES`, image size
    and dimensions."""
    documents = request_documents(messages)
    pages = 0
    for n, doc in enumerate(documents):
        where = f"document {n}"
        extra = sorted(set(doc) - _DOCUMENT_KEYS)
        if extra:
            raise _bad(f"{where}.{extra[0]}: Extra inputs are not permitted")
        source = doc.get("source")
        if not isinstance(source, dict):
            raise _bad(f"{where}.source: Field required")
        kind = source.get("type")
        if kind == "text":
            if source.get("media_type") != "text/plain" or not isinstance(source.get("data"), str):
                raise _bad(f"{where}.source: a text source needs media_type 'text/plain' and string data")
        elif kind == "base64":
            if source.get("media_type") != "application/pdf":
                raise _bad(f"{where}.source.media_type: Input should be 'application/pdf'")
            count = pdf_pages(_b64(source.get("data"), f"{where}.source"))
            if count is None:
                raise _bad(f"{where}: The PDF specified was not valid.")
            pages += count
        elif kind == "content":
            content = source.get("content")
            if not isinstance(content, list) or not content:
                raise _bad(f"{where}.source.content: a non-empty list of content blocks is required")
            for i, block in enumerate(content):
                if not isinstance(block, dict) or block.get("type") not in ("text", "image"):
                    raise _bad(f"{where}.source.content.{i}: Input tag must be 'text' or 'image'")
                if block["type"] == "text" and not isinstance(block.get("text"), str):
                    raise _bad(f"{where}.source.content.{i}.text: Field required")
        elif kind == "url":
            if not isinstance(source.get("url"), str):
                raise _bad(f"{where}.source.url: Field required")
        elif kind == "file":
            if not isinstance(source.get("file_id"), str):
                raise _bad(f"{where}.source.file_id: Field required")
        else:
            raise _bad(
                f"{where}.source.type: Input tag {kind!r} found using 'type' does not match any of the expected tags"
            )
        for key in ("title", "context"):
            if key in doc and doc[key] is not None and not isinstance(doc[key], str):
                raise _bad(f"{where}.{key}: Input should be a valid string")
        citations = doc.get("citations")
        if citations is not None and not (isinstance(citations, dict) and isinstance(citations.get("enabled"), bool)):
            raise _bad(f"{where}.citations.enabled: Input should be a valid boolean")
    if pages > MAX_PDF_PAGES:
        raise _bad(f"A maximum of {MAX_PDF_PAGES} PDF pages may be provided (got {pages}).")
    images = _images(messages)
    if len(images) > MAX_IMAGES:
        raise _bad(f"Too many images: at most {MAX_IMAGES} images may be provided in one request (got {len(images)}).")
    limit = MAX_IMAGE_PX_MANY if len(images) > 20 else MAX_IMAGE_PX
    for n, img in enumerate(images):
        source = img.get("source") or {}
        where = f"image {n}"
        if source.get("type") != "base64":
            continue
        if source.get("media_type") not in IMAGE_MEDIA_TYPES:
            raise _bad(f"{where}.source.media_type: Input should be one of {', '.join(IMAGE_MEDIA_TYPES)}")
        raw = _b64(source.get("data"), f"{where}.source")
        if len(raw) > MAX_IMAGE_BYTES:
            raise _bad(f"{where}.source.base64: image exceeds 5 MB maximum: {len(raw)} bytes > {MAX_IMAGE_BYTES} bytes")
        size = image_size(raw)
        if size is None:
            raise _bad(f"{where}: Could not process image")
        if max(size) > limit:
            raise _bad(f"{where}: image dimensions exceed max allowed size: {limit} pixels (got {size[0]}x{size[1]})")


def _validate_messages(body: dict[str, Any], count_tokens: bool = False, where: str = "messages") -> None:
    """The Messages API's request rules (400 ``invalid_request_error``): required fields,
    ``max_tokens >= 0`` (0 pre-warms the prompt cache: SDK ``messages.create`` docstring), the rows of
    the documented rule table (:data:`docreview_testing.api_rules.RULES`: the pre-warming limitations,
    retired models; ``where="batch"`` for a request inside a batch),
    ``tool_choice`` naming a present tool, ``cache_control.ttl`` of ``5m``/``1h``,
    ``output_config.format`` of type ``json_schema``, the ``document`` and ``image`` blocks and the
    Citations rules (:func:`check_documents`), and :func:`check_model_rules`. ``count_tokens``: the
    ``/v1/messages/count_tokens`` body (no ``max_tokens``)."""
    for key in ("model", "messages") if count_tokens else ("model", "max_tokens", "messages"):
        if key not in body:
            raise StubError(400, "invalid_request_error", f"{key}: Field required", "ValidationException")
    if not count_tokens and (
        not isinstance(body["max_tokens"], int) or isinstance(body["max_tokens"], bool) or body["max_tokens"] < 0
    ):
        raise _bad("max_tokens: must be a non-negative integer")
    broken = first_broken(body, where=where)
    if broken is not None:  # a row of the documented rule table (docreview_testing.api_rules)
        rule, message = broken
        aws = "ResourceNotFoundException" if rule.status == 404 else "ValidationException"
        raise StubError(rule.status, rule.error_type, message, aws, rule=True)
    choice = body.get("tool_choice") or {}
    tools = body.get("tools") or []
    names = [t.get("name") for t in tools]
    if choice.get("type") == "tool" and choice.get("name") not in names:
        raise _bad(f"tool_choice.name {choice.get('name')!r} is not a tool")
    blocks = list(tools) + (list(body["system"]) if isinstance(body.get("system"), list) else [])
    for block in blocks:
        ttl = (block.get("cache_control") or {}).get("ttl") if isinstance(block, dict) else None
        if ttl is not None and ttl not in ("5m", "1h"):
            raise _bad(f"cache_control.ttl: {ttl!r} is not one of '5m', '1h'")
    fmt = (body.get("output_config") or {}).get("format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or "schema" not in fmt):
        raise _bad("output_config.format: type must be 'json_schema' with a schema")
    check_documents(body["model"], body["messages"], structured=fmt is not None or "output_format" in body)


def _where(path: str) -> str:
    """Which API a Messages-API path belongs to: ``bedrock-messages`` for Claude in Amazon Bedrock's
    ``/anthropic/v1/messages`` (the endpoint the SDK's ``AnthropicBedrockMantle`` posts to), else ``messages``."""
    return "bedrock-messages" if path.startswith("/anthropic/") else "messages"


def _validate_converse(model_id: str, body: dict[str, Any]) -> None:
    """Bedrock Converse's rules for Claude (400 ``ValidationException``): ``maxTokens >= 1``
    (botocore service model), ``cachePoint.ttl`` of ``5m``/``1h`` (CacheTTL), ``outputConfig.textFormat``
    of type ``json_schema`` whose ``structure.jsonSchema.schema`` is JSON text, and the same model
    rules as the Messages API (:func:`check_model_rules`; ``toolSpec.strict`` schemas checked, a
    ``toolChoice`` of ``tool``/``any`` counts as forced, ``additionalModelRequestFields.thinking``)."""
    max_tokens = (body.get("inferenceConfig") or {}).get("maxTokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise _bad("inferenceConfig.maxTokens: must be at least 1")
    for item in body.get("system") or []:
        ttl = (item.get("cachePoint") or {}).get("ttl") if isinstance(item, dict) and "cachePoint" in item else None
        if ttl is not None and ttl not in ("5m", "1h"):
            raise _bad(f"cachePoint.ttl: {ttl!r} is not one of '5m', '1h'")
    tool_config = body.get("toolConfig") or {}
    strict: list[tuple[str, Any]] = []
    for n, tool in enumerate(tool_config.get("tools") or []):
        spec = tool.get("toolSpec") or {}
        if spec.get("strict"):
            strict.append(
                (f"toolConfig.tools.{n}.toolSpec.inputSchema.json", (spec.get("inputSchema") or {}).get("json"))
            )
    fmt = (body.get("outputConfig") or {}).get("textFormat")
    if fmt is not None:
        raw = ((fmt.get("structure") or {}).get("jsonSchema") or {}).get("schema")
        if fmt.get("type") != "json_schema" or not isinstance(raw, str):
            raise _bad("outputConfig.textFormat: type json_schema with structure.jsonSchema.schema as JSON text")
        try:
            strict.append(("outputConfig.textFormat.structure.jsonSchema.schema", json.loads(raw)))
        except ValueError:
            raise _bad("outputConfig.textFormat.structure.jsonSchema.schema is not valid JSON") from None
    choice = tool_config.get("toolChoice") or {}
    thinking = (body.get("additionalModelRequestFields") or {}).get("thinking")
    check_model_rules(
        model_id,
        forced_tool="tool" in choice or "any" in choice,
        thinking=thinking,
        strict_schemas=strict,
        structured=fmt is not None,
    )


def _answer_messages(stub: StubLLM, body: dict[str, Any], faults: dict[str, str | None]) -> Answer:
    """The double's answer to a valid Messages API request: the forced (or first) tool, or JSON
    text for ``output_config.format``; a thinking block first when the request runs with thinking."""
    choice = body.get("tool_choice") or {}
    fmt = (body.get("output_config") or {}).get("format")
    json_output = bool(fmt)
    tool_name = choice.get("name") if choice.get("type") == "tool" else None
    if tool_name is None and body.get("tools") and not json_output:
        tool_name = body["tools"][0].get("name")
    asked = re.fullmatch(r"Transcribe page (\d+) of '(.*)'\.", first_user_text(body["messages"]).strip(), re.S)
    if asked is not None:  # a page the text layer and OCR could not read (tasks.review.pages)
        if body["max_tokens"] == 0:
            return Answer([], "max_tokens", 0)
        return transcription(stub, asked, body["messages"])
    documents = request_documents(body["messages"])
    if documents and any((d.get("citations") or {}).get("enabled") for d in documents):
        return cited_answer(documents, first_user_text(body["messages"]), faults, body["max_tokens"])
    if json_output and "supported" in ((fmt or {}).get("schema") or {}).get("properties", {}):
        data = verification_answer(first_user_text(body["messages"]))
        text = json.dumps(data)
        return Answer([{"type": "text", "text": text}], "end_turn", estimate_tokens(text) + 10)
    return stub.answer(
        first_user_text(body["messages"]),
        body["max_tokens"],
        tool_name,
        faults,
        json_output=json_output,
        thinking=thinks(body["model"], body.get("thinking")),
        profile=request_profile(body.get("system")),
    )


def transcription(stub: StubLLM, asked: re.Match[str], messages: list[dict[str, Any]] | None = None) -> Answer:
    """The answer to "Transcribe page N of 'name'." (:mod:`tasks.review.pages`): the text a test registered
    in :attr:`StubLLM.transcripts` for ``(name, N)``; else, for a PDF ``document`` block, the page's text layer
    (pdf-support: "PDF text is extracted" beside each page's image, so a text PDF reads as its text and a
    scan, which has none, as nothing: the double reads no image); else nothing."""
    text = stub.transcripts.get((asked.group(2), int(asked.group(1))), "")
    if not text and messages:
        text = _pdf_text(request_documents(messages))
    return Answer([{"type": "text", "text": text}] if text else [], "end_turn", estimate_tokens(text) + 1)


def _pdf_text(documents: list[dict[str, Any]]) -> str:
    """The text layer of the base64 PDF ``document`` blocks (pypdf), empty when there is none."""
    import base64
    import io

    from pypdf import PdfReader

    parts = []
    for doc in documents:
        source = doc.get("source") or {}
        if source.get("type") != "base64" or source.get("media_type") != "application/pdf":
            continue
        try:
            reader = PdfReader(io.BytesIO(base64.b64decode(source.get("data", ""))))
            parts += [(page.extract_text() or "").strip() for page in reader.pages]
        except Exception:
            continue
    return "\n".join(p for p in parts if p)


def converse_transcription(stub: StubLLM, asked: re.Match[str], messages: list[dict[str, Any]]) -> Answer:
    """Converse's answer to a page transcription. pdf-support (read 2026-12-06): "Converse API: Visual PDF
    analysis requires citations to be enabled. There is currently no option to use visual analysis without
    citations"; without them a PDF is read as its extracted text only, which a scanned page does not have: the
    answer is then empty. With citations on, the registered transcript comes back as a ``citationsContent``
    block citing the page (Converse's ``CitationsContentBlock``: ``content`` texts and ``citations`` with a
    ``documentPage`` location). An image page is read as for the Messages API (:func:`transcription`)."""
    documents = [
        block["document"]
        for msg in messages
        for block in msg.get("content") or []
        if isinstance(block, dict) and isinstance(block.get("document"), dict)
    ]
    if not documents:
        return transcription(stub, asked)
    if not (documents[0].get("citations") or {}).get("enabled"):
        return Answer([], "end_turn", 1)  # text extraction only: a scan has no text to extract
    text = stub.transcripts.get((asked.group(2), int(asked.group(1))), "")
    if not text:
        return Answer([], "end_turn", 1)
    block = {
        "type": "citations",
        "citationsContent": {
            "content": [{"text": text}],
            "citations": [
                {
                    "title": documents[0].get("name"),
                    "sourceContent": [{"text": text[:200]}],
                    "location": {"documentPage": {"documentIndex": 0, "start": 1, "end": 2}},
                }
            ],
        },
    }
    return Answer([block], "end_turn", estimate_tokens(text) + 1)


def request_profile(system: Any) -> str:
    """``"filing"`` when a request's system prompt is the filing profile's
    (:data:`tasks.review.backends.filing_prompt.FILING_SYSTEM_PROMPT`), else ``"contract"``; the
    double then answers with the filing rules, as the real model answers with the filing schema."""
    from tasks.review.backends.filing_prompt import FILING_SYSTEM_PROMPT

    blocks = system if isinstance(system, list) else [system]
    texts = [b.get("text", "") if isinstance(b, dict) else str(b or "") for b in blocks]
    return "filing" if any(t.startswith(FILING_SYSTEM_PROMPT[:60]) for t in texts) else "contract"


def _content(answer: Answer) -> list[dict[str, Any]]:
    """Non-streaming ``content``: a cut tool input becomes ``{}`` (what parsed: nothing), a cut text
    block keeps the characters sent before ``max_tokens``."""
    out = []
    for i, b in enumerate(answer.blocks):
        if i in answer.cut:
            b = dict(b, input={}) if b["type"] == "tool_use" else dict(b, text=b["text"][: answer.cut[i]])
        out.append(b)
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StubLLMServer
    _finish_call: Callable[[], None] | None = None  # ends the in-flight count of the model request answered

    def log_message(self, format: str, *args: Any) -> None:
        return

    # plumbing ----------------------------------------------------------------------------

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError as exc:
            raise StubError(
                400, "invalid_request_error", f"invalid JSON body: {exc}", "SerializationException"
            ) from exc

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self._answered()
        self.wfile.write(data)

    def _start_chunked(self, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunked(self) -> None:
        self._answered()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _answered(self) -> None:
        """The model request being answered stops counting as in flight (see
        :meth:`StubLLM.model_call`): called just before its last bytes are written."""
        finish, self._finish_call = getattr(self, "_finish_call", None), None
        if finish is not None:
            finish()

    def _send_error(self, err: StubError, aws: bool, request_id: str) -> None:
        with self.server.stub._lock:
            self.server.stub.errors[err.status] += 1
            if err.rule:
                self.server.stub.refusals.append(err.message)
        if aws:
            self._send_json(
                err.status,
                {"message": err.message},
                {
                    "x-amzn-ErrorType": f"{err.aws_code}:http://internal.amazon.com/coral/com.amazon.bedrock/",
                    "x-amzn-RequestId": request_id,
                    **err.headers,
                },
            )
        else:
            self._send_json(
                err.status,
                {"type": "error", "error": {"type": err.kind, "message": err.message}, "request_id": request_id},
                {"request-id": request_id, **err.headers},
            )

    def _hold_first_token(self, answer: Answer, max_tokens: int | None = None) -> None:
        """Wait while :meth:`StubLLM.hold_first_token` holds answers that have content. A cache warm-up is
        never held: ``max_tokens: 0`` has no first token, and the one-token warm-up a structured-output run
        sends (``max_tokens: 1``) is a warm-up too (the hold is for review answers)."""
        if answer.blocks and (max_tokens is None or max_tokens > 1):
            self.server.stub.await_first_token()

    def _latency(self) -> tuple[float, float]:
        stub = self.server.stub
        ttft = float(self.headers.get("x-stub-ttft-ms") or stub.ttft_ms)
        per_token = float(self.headers.get("x-stub-token-ms") or stub.token_ms)
        return ttft / 1000, per_token / 1000

    # routes ------------------------------------------------------------------------------

    def do_GET(self) -> None:
        m = _BATCH_RE.match(self.path.split("?", 1)[0])
        if self.path.rstrip("/") in ("", "/health"):
            self._send_json(200, {"status": "ok", "double": "docreview stub-llm (rules-backed test double)"})
        elif m is not None:
            try:
                self._require_key()
                self._batch_get(m.group(1), results=m.group(2) is not None)
            except StubError as err:
                self._send_error(err, False, f"req_stub_{uuid.uuid4().hex[:24]}")
        else:
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    def do_POST(self) -> None:
        stub = self.server.stub
        path = self.path.split("?", 1)[0]
        m = _CONVERSE_RE.match(path)
        aws = m is not None
        request_id = str(uuid.uuid4()) if aws else f"req_stub_{uuid.uuid4().hex[:24]}"
        with stub._lock:
            stub.requests[path if not aws else f"converse{'-stream' if m.group(2) == 'converse-stream' else ''}"] += 1
        try:
            body = self._body()
            if path == "/stub/faults":
                stub.enqueue(str(body.get("faults", "")), int(body.get("times", 1)))
                self._send_json(200, {"queued": int(body.get("times", 1))})
            elif path == "/stub/outage":
                stub.outage(float(body.get("seconds", 60)), float(body.get("start_in", 0)))
                self._send_json(200, {"outage_s": float(body.get("seconds", 60))})
            elif path == "/stub/reset":
                stub.reset()
                self._send_json(200, {"reset": True})
            elif path in ("/v1/messages/count_tokens", "/anthropic/v1/messages/count_tokens"):
                self._require_key()
                self._standing_faults()
                _validate_messages(body, count_tokens=True, where=_where(path))
                total = sum(s.tokens for s in messages_segments(body))
                self._send_json(200, {"input_tokens": total}, {"request-id": request_id})
            elif path in ("/v1/messages", "/anthropic/v1/messages"):
                self._require_key()
                system = body.get("system")
                text = (
                    system
                    if isinstance(system, str)
                    else "\n".join(str(b.get("text", "")) for b in system or [] if isinstance(b, dict))
                )
                with stub._lock:
                    stub.system_prompts[text] += 1
                with stub.model_call() as self._finish_call:
                    self._messages(body, request_id, _where(path))
            elif path == "/v1/messages/batches":
                self._require_key()
                self._standing_faults()
                self._batch_create(body, request_id)
            elif _CANCEL_RE.match(path):
                self._require_key()
                self._batch_cancel(_CANCEL_RE.match(path).group(1), request_id)  # type: ignore[union-attr]
            elif aws:
                with stub.model_call() as self._finish_call:
                    self._converse(m.group(1), body, request_id, streaming=m.group(2) == "converse-stream")
            else:
                raise StubError(404, "not_found_error", f"no route {path}", "UnknownOperationException")
        except StubError as err:
            self._send_error(err, aws, request_id)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _standing_faults(self) -> None:
        """Token counting and batch creation meet the faults of the header and of the command line
        (``--fault``: a refused key or an overloaded API answers every endpoint), not the queued ones, which
        are kept for the model calls (and batch results) a test queued them for."""
        err = _fault_error(self.server.stub.active_faults(self.headers.get("x-stub-fault"), queued=False), False)
        if err is not None:
            raise err

    def _require_key(self) -> None:
        if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
            raise StubError(401, "authentication_error", "x-api-key header is required", "UnrecognizedClientException")

    # Messages API ------------------------------------------------------------------------

    def _messages(self, body: dict[str, Any], request_id: str, where: str = "messages") -> None:
        stub = self.server.stub
        _validate_messages(body, where=where)
        streaming = bool(body.get("stream"))
        faults = stub.active_faults(self.headers.get("x-stub-fault"))
        if "spike" in faults:
            time.sleep(float(faults["spike"] or 2000) / 1000)
        err = _fault_error(faults, streaming)
        if err is not None:
            raise err
        model = body["model"]
        ttft, per_token = self._latency()
        usage = stub.cache_usage(model, messages_segments(body), ttft)
        answer = _answer_messages(stub, body, faults)
        self._hold_first_token(answer, body.get("max_tokens"))
        message_id = f"msg_stub_{uuid.uuid4().hex[:24]}"
        if not streaming:
            time.sleep(ttft + per_token * answer.output_tokens)
            content = _content(answer)
            self._send_json(
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": answer.stop_reason,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": answer.output_tokens},
                },
                {"request-id": request_id},
            )
            return
        self._start_chunked("text/event-stream", {"request-id": request_id})
        for event in self._sse_events(message_id, model, usage, answer, faults, ttft, per_token):
            self._chunk(event)
        self._end_chunked()

    def _sse_events(
        self,
        message_id: str,
        model: str,
        usage: dict[str, int],
        answer: Answer,
        faults: dict[str, str | None],
        ttft: float,
        per_token: float,
    ) -> Iterator[bytes]:
        def sse(kind: str, data: dict[str, Any]) -> bytes:
            return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()

        yield sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
        )
        yield sse("ping", {"type": "ping"})
        first = True
        for index, block in enumerate(answer.blocks):
            if block["type"] == "tool_use":
                yield sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                    },
                )
                text = json.dumps(block["input"])
                if index in answer.cut:
                    text = text[: answer.cut[index]]
                kind, key = "input_json_delta", "partial_json"
            elif block["type"] == "thinking":
                yield sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                    },
                )
                text, kind, key = block["thinking"], "thinking_delta", "thinking"
            else:
                start_block: dict[str, Any] = {"type": "text", "text": ""}
                if block.get("citations"):
                    start_block["citations"] = []
                yield sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start_block},
                )
                text, kind, key = block["text"][: answer.cut.get(index, len(block["text"]))], "text_delta", "text"
            for pos in range(0, len(text), DELTA_CHARS):
                piece = text[pos : pos + DELTA_CHARS]
                time.sleep(ttft if first else per_token * estimate_tokens(piece))
                first = False
                yield sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: piece}},
                )
                if "stream_error" in faults:
                    yield sse(
                        "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
                    )
                    return
            if block["type"] == "thinking":
                yield sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "signature_delta", "signature": block["signature"]},
                    },
                )
            for citation in block.get("citations") or []:  # streaming support: one citations_delta each
                yield sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "citations_delta", "citation": citation},
                    },
                )
            yield sse("content_block_stop", {"type": "content_block_stop", "index": index})
        if first and ttft:
            time.sleep(ttft)
        yield sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": answer.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": answer.output_tokens},
            },
        )
        yield sse("message_stop", {"type": "message_stop"})

    # Message Batches ---------------------------------------------------------------------

    def _batch_object(self, batch_id: str) -> dict[str, Any]:
        stub = self.server.stub
        batch = stub.batches[batch_id]
        with stub._lock:
            ended = not stub.batches_held or batch.get("ending") == "canceled"
        n = len(batch["requests"])
        counts = {"processing": 0 if ended else n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ended:
            results = self._batch_results(batch)
            for line in results:
                counts[line["result"]["type"]] += 1
        iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
        host, port = self.server.server_address[:2]
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": iso(batch["created"]),
            "expires_at": iso(batch["created"] + 86400),
            "ended_at": iso(time.time()) if ended else None,
            "archived_at": None,
            "cancel_initiated_at": iso(batch["canceled_at"]) if batch.get("canceled_at") else None,
            "results_url": f"http://{host}:{port}/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def _batch_create(self, body: dict[str, Any], request_id: str) -> None:
        stub = self.server.stub
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            raise StubError(400, "invalid_request_error", "requests: must be a non-empty list", "ValidationException")
        ids = [r.get("custom_id") for r in requests]
        if any(not isinstance(i, str) or not _CUSTOM_ID_RE.match(i) for i in ids) or len(set(ids)) != len(ids):
            raise StubError(
                400,
                "invalid_request_error",
                "custom_id must be unique and match ^[a-zA-Z0-9_-]{1,64}$",
                "ValidationException",
            )
        # Each request's params are validated when the batch is processed, not here: an invalid request is
        # an ``errored`` result (batch-processing page, "Batch validation", read 2026-12-06).
        batch_id = f"msgbatch_stub_{uuid.uuid4().hex[:24]}"
        with stub._lock:
            stub.batches[batch_id] = {"created": time.time(), "requests": requests, "results": None}
            stub.batches_created += 1
        self._send_json(200, self._batch_object(batch_id), {"request-id": request_id})

    def _batch_cancel(self, batch_id: str, request_id: str) -> None:
        """``POST /v1/messages/batches/{id}/cancel``: requests not yet processed become ``canceled`` results
        (the batch then ends); a batch that has ended keeps its results; an unknown id is a 404."""
        stub = self.server.stub
        with stub._lock:
            batch = stub.batches.get(batch_id)
            if batch is None:
                raise StubError(404, "not_found_error", f"no message batch {batch_id}", "ResourceNotFoundException")
            if batch["results"] is None and stub.batches_held:
                batch["ending"] = "canceled"
            batch["canceled_at"] = time.time()
        self._send_json(200, self._batch_object(batch_id), {"request-id": request_id})

    def _batch_results(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        """One result line per request, computed once (faults are drawn per request)."""
        stub = self.server.stub
        if batch["results"] is None and batch.get("ending") in ("expired", "canceled"):
            # batch-processing page, result types: "canceled" (the user canceled the batch before this request
            # could be sent to the model) and "expired" (the 24-hour expiry came first); no other fields
            batch["results"] = [
                {"custom_id": r["custom_id"], "result": {"type": batch["ending"]}} for r in batch["requests"]
            ]
        if batch["results"] is None:
            lines = []
            for r in batch["requests"]:
                params = r.get("params") or {}
                faults = stub.active_faults(None)
                err = None
                try:
                    _validate_messages(params, where="batch")
                except StubError as refused:
                    err = refused
                    if refused.rule:
                        with stub._lock:
                            stub.refusals.append(refused.message)
                err = err or _fault_error(faults, False)
                if err is not None:
                    lines.append(
                        {
                            "custom_id": r["custom_id"],
                            "result": {
                                "type": "errored",
                                "error": {
                                    "type": "error",
                                    "error": {"type": err.kind, "message": err.message},
                                    "request_id": f"req_stub_{uuid.uuid4().hex[:24]}",
                                },
                            },
                        }
                    )
                    continue
                usage = stub.cache_usage(params["model"], messages_segments(params))
                answer = _answer_messages(stub, params, faults)
                content = _content(answer)
                lines.append(
                    {
                        "custom_id": r["custom_id"],
                        "result": {
                            "type": "succeeded",
                            "message": {
                                "id": f"msg_stub_{uuid.uuid4().hex[:24]}",
                                "type": "message",
                                "role": "assistant",
                                "model": params["model"],
                                "content": content,
                                "stop_reason": answer.stop_reason,
                                "stop_sequence": None,
                                "usage": {**usage, "output_tokens": answer.output_tokens},
                            },
                        },
                    }
                )
            batch["results"] = lines
        return batch["results"]

    def _batch_get(self, batch_id: str, results: bool) -> None:
        stub = self.server.stub
        if batch_id not in stub.batches:
            raise StubError(404, "not_found_error", f"no message batch {batch_id}", "ResourceNotFoundException")
        obj = self._batch_object(batch_id)
        if not results:
            self._send_json(200, obj)
            return
        if obj["processing_status"] != "ended":
            raise StubError(400, "invalid_request_error", "the batch has not ended yet", "ValidationException")
        data = "".join(json.dumps(line) + "\n" for line in self._batch_results(stub.batches[batch_id])).encode()
        self.send_response(200)
        self.send_header("content-type", "application/binary")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # Bedrock Converse --------------------------------------------------------------------

    def _converse(self, model_id: str, body: dict[str, Any], request_id: str, streaming: bool) -> None:
        stub = self.server.stub
        if "messages" not in body:
            raise StubError(400, "invalid_request_error", "messages is required", "ValidationException")
        _validate_converse(model_id, body)
        faults = stub.active_faults(self.headers.get("x-stub-fault"))
        if "spike" in faults:
            time.sleep(float(faults["spike"] or 2000) / 1000)
        err = _fault_error(faults, streaming)
        if err is not None:
            if err.aws_code == "ThrottlingException":
                err.message = "Too many tokens, please wait before trying again."
            elif err.aws_code == "ValidationException":
                err.message = "Input is too long for requested model."
            elif err.aws_code == "ServiceUnavailableException":
                err.status = 503
            raise err
        tool_config = body.get("toolConfig") or {}
        choice = (tool_config.get("toolChoice") or {}).get("tool") or {}
        tool_name = choice.get("name")
        json_output = bool((body.get("outputConfig") or {}).get("textFormat"))
        usage = stub.cache_usage(model_id, converse_segments(body), self._latency()[0])
        asked = re.fullmatch(r"Transcribe page (\d+) of '(.*)'\.", first_user_text(body["messages"]).strip(), re.S)
        answer = (
            converse_transcription(stub, asked, body["messages"])
            if asked is not None
            else stub.answer(
                first_user_text(body["messages"]),
                int((body.get("inferenceConfig") or {}).get("maxTokens", 4096)),
                tool_name,
                faults,
                json_output=json_output,
                thinking=thinks(model_id, (body.get("additionalModelRequestFields") or {}).get("thinking")),
                profile=request_profile(body.get("system")),
            )
        )
        self._hold_first_token(answer, (body.get("inferenceConfig") or {}).get("maxTokens"))
        stop = {"refusal": "content_filtered"}.get(answer.stop_reason, answer.stop_reason)
        aws_usage = {
            "inputTokens": usage["input_tokens"],
            "outputTokens": answer.output_tokens,
            "totalTokens": sum(usage.values()) + answer.output_tokens,
            "cacheReadInputTokens": usage["cache_read_input_tokens"],
            "cacheWriteInputTokens": usage["cache_creation_input_tokens"],
        }
        ttft, per_token = self._latency()
        started = time.perf_counter()
        if not streaming:
            time.sleep(ttft + per_token * answer.output_tokens)
            content = []
            for b in _content(answer):
                if b["type"] == "tool_use":
                    content.append({"toolUse": {"toolUseId": b["id"], "name": b["name"], "input": b["input"]}})
                elif b["type"] == "thinking":
                    content.append(
                        {"reasoningContent": {"reasoningText": {"text": b["thinking"], "signature": b["signature"]}}}
                    )
                elif b["type"] == "citations":
                    content.append({"citationsContent": b["citationsContent"]})
                else:
                    content.append({"text": b["text"]})
            self._send_json(
                200,
                {
                    "output": {"message": {"role": "assistant", "content": content}},
                    "stopReason": stop,
                    "usage": aws_usage,
                    "metrics": {"latencyMs": int((time.perf_counter() - started) * 1000)},
                },
                {"x-amzn-RequestId": request_id},
            )
            return
        self._start_chunked("application/vnd.amazon.eventstream", {"x-amzn-RequestId": request_id})
        self._chunk(_aws_event("messageStart", {"role": "assistant"}))
        first = True
        for index, block in enumerate(answer.blocks):
            if block["type"] == "tool_use":
                self._chunk(
                    _aws_event(
                        "contentBlockStart",
                        {
                            "contentBlockIndex": index,
                            "start": {"toolUse": {"toolUseId": block["id"], "name": block["name"]}},
                        },
                    )
                )
                text = json.dumps(block["input"])
                if index in answer.cut:
                    text = text[: answer.cut[index]]
            elif block["type"] == "thinking":
                text = block["thinking"]
            else:
                text = block["text"][: answer.cut.get(index, len(block["text"]))]
            for pos in range(0, len(text), DELTA_CHARS):
                piece = text[pos : pos + DELTA_CHARS]
                time.sleep(ttft if first else per_token * estimate_tokens(piece))
                first = False
                delta = (
                    {"toolUse": {"input": piece}}
                    if block["type"] == "tool_use"
                    else {"reasoningContent": {"text": piece}}
                    if block["type"] == "thinking"
                    else {"text": piece}
                )
                self._chunk(_aws_event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
                if "stream_error" in faults:
                    self._chunk(
                        _aws_exception("throttlingException", "Too many tokens, please wait before trying again.")
                    )
                    self._end_chunked()
                    return
            self._chunk(_aws_event("contentBlockStop", {"contentBlockIndex": index}))
        self._chunk(_aws_event("messageStop", {"stopReason": stop}))
        self._chunk(
            _aws_event(
                "metadata", {"usage": aws_usage, "metrics": {"latencyMs": int((time.perf_counter() - started) * 1000)}}
            )
        )
        self._end_chunked()


class StubLLMServer(ThreadingHTTPServer):
    """The HTTP server (one thread per connection) around a :class:`StubLLM`.

    ``port=0`` picks a free port; :attr:`url` is the base URL to give ``ANTHROPIC_BASE_URL``
    or ``DOCREVIEW_BEDROCK_ENDPOINT_URL``. Use as a context manager to run it in a background
    thread (stopped and closed on exit).
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, stub: StubLLM | None = None) -> None:
        super().__init__((host, port), _Handler)
        self.stub = stub or StubLLM()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that closed or reset its connection (an SDK dropping a pooled keep-alive
        connection, a test ending) is not an error of the double: no traceback on stderr. Anything
        else is reported as :class:`socketserver.BaseServer` does."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def start(self) -> StubLLMServer:
        """Serve in a daemon thread; returns self."""
        self._thread = threading.Thread(target=self.serve_forever, name="stub-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StubLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
