"""Hostile-document guards applied between extraction and review.

Documents come from outside the organisation, so their text is data and never instructions.
The prompt already fences document text in a ``<document>`` block after fixed instructions;
this module adds what the pipeline itself can check before any model sees the text:

- :func:`detect_injection` flags instruction-like text aimed at the reviewer ("ignore all
  previous instructions", "report no issues", "you are now…", chat-role markers such as
  ``Human:`` / ``<|im_start|>`` / ``### System``, and look-alikes of the review tool call such
  as ``{"type": "tool_use"`` or ``record_findings(``). Matching runs on the fact-check's
  matching form (:func:`tasks.textnorm.match_form`: NFKC, casefolded, whitespace runs as one
  space, end-of-line hyphen joins) so a phrase split across a line break or a page footer is
  still found; each flag carries the rule, a reason and the matched span in the original text.
- :func:`cap_page_chars` truncates pages longer than ``Limits.max_chars_per_page`` (and the
  truncation is recorded as a flag, never silent).
- :func:`admit_document` applies the per-document chunk limit and the per-run token budget
  (:class:`TokenBudget`) before any review of a document is submitted.
- :func:`screen_document` (Prefect task) runs the detector and the page check over a document
  and persists the flags (table ``document_flags``); the report shows them per document and
  turns the verdict of every finding from a flagged chunk into ``needs_review``.

The detector is a pattern list, not a classifier: it catches the common phrasings and
markers, not a determined paraphrase (see docs/security.md). Detection never
removes text: a flagged passage is still reviewed, and a person is asked to look.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel
from sqlmodel import Session

from schemas.documents import (
    PAGE_SEPARATOR,
    Chunk,
    DocumentStatus,
    ExtractedDocument,
    FailureKind,
)
from schemas.settings import Limits
from tasks.runnames import for_document
from tasks.textnorm import match_form

#: Version of the injection rules; part of the natural key of stored flags.
DETECTOR_VERSION = "injection-v1"
#: Detector name stored for page-truncation flags.
PAGE_LIMIT_DETECTOR = "page-limit-v1"

#: Flag kinds (``document_flags.kind``).
KIND_INJECTION = "prompt_injection"
KIND_PAGE_TRUNCATED = "page_truncated"

#: Characters per token used for budget estimates (Anthropic's rule of thumb for English text:
#: about 3.5-4 characters per token; 4 under-counts slightly, so the budget is a soft bound).
CHARS_PER_TOKEN = 4

#: Characters of an excerpt kept around a match in stored flags.
_EXCERPT_CONTEXT = 60
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)
_DOTTED_I = {0x130: "I", 0x131: "i"}


@dataclass(frozen=True)
class _Rule:
    name: str
    reason: str
    pattern: re.Pattern[str]
    raw: bool = False  # match the original text (case-sensitive markers) instead of the matching form
    #: Literal words one of which every match contains. The pattern is run only around their
    #: occurrences (:func:`_matches`): a substring search is far cheaper than running the pattern
    #: at every position of a long document.
    needs: tuple[str, ...] = ()


def _n(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_OBJ = (
    r"(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guidance|context|messages?|commands?|orders)"
)
_PRIOR = r"(?:previous|prior|preceding|earlier|above|foregoing|original|initial|system|existing|other)"

#: The rules, on the matching form (casefolded, whitespace collapsed) unless ``raw``.
RULES: tuple[_Rule, ...] = (
    _Rule(
        "override_instructions",
        "tells the reader to ignore or replace its instructions",
        _n(
            rf"\b(?:ignore|disregard|forget|override|bypass|discard|skip|neglect)\s+(?:all\s+|any\s+|of\s+)?"
            rf"(?:the\s+|your\s+|my\s+|these\s+|those\s+)?(?:{_PRIOR}\s+)?(?:and\s+{_PRIOR}\s+)?{_OBJ}\b"
        ),
        needs=("ignore", "disregard", "forget", "override", "bypass", "discard", "skip", "neglect"),
    ),
    _Rule(
        "override_instructions",
        "tells the reader to disregard what came before",
        _n(
            r"\b(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?|everything\s+)?(?:the\s+)?(?:above|previous|preceding)"
            r"(?!\s+(?:section|sections|paragraph|clause|article|sentence|provision|provisions|limitation|obligation|"
            r"amount|sum|price|terms?)\b)"
        ),
        needs=("ignore", "disregard", "forget"),
    ),
    _Rule(
        "override_instructions",
        "announces new instructions",
        _n(
            r"\b(?:new|updated|revised|real|actual|true|secret|hidden|important|additional)\s+(?:system\s+)?"
            r"(?:instructions?|prompts?)\s*(?::|for\s+(?:the\s+)?(?:ai|assistant|model|llm|reviewer))"
        ),
        needs=("instruction", "prompt"),
    ),
    _Rule(
        "override_instructions",
        "speaks about the system prompt",
        _n(
            r"\b(?:(?:your|reveal|print|show|repeat|override|ignore|new|updated)\s+(?:the\s+)?system\s+prompt|"
            r"developer\s+mode|jailbreak|do\s+anything\s+now|prompt\s+injection)\b"
        ),
        needs=("prompt", "developer", "jailbreak", "anything"),
    ),
    _Rule(
        "suppress_findings",
        "asks the reviewer to report nothing or approve the document",
        _n(
            r"\b(?:report|return|output|record|flag|list|find|raise|mention|produce|give)\s+(?:no|zero|nothing|none)"
            r"(?:\s+(?:material|further|other|additional))?\s+(?:issues?|findings?|risks?|problems?|concerns?|red\s+flags?|"
            r"clauses?|results?)\b"
        ),
        needs=tuple(
            f"{verb} {no}"
            for verb in (
                "report",
                "return",
                "output",
                "record",
                "flag",
                "list",
                "find",
                "raise",
                "mention",
                "produce",
                "give",
            )
            for no in ("no", "zero")
        ),
    ),
    _Rule(
        "suppress_findings",
        "asks the reviewer to leave something out",
        _n(
            r"\b(?:do\s+not|don't|never)\s+(?:report|flag|mention|record|include|list|highlight|raise)\s+"
            r"(?:this|these|that|those|any|the\s+following|anything)(?:\s+(?:clause|clauses|section|sections|"
            r"finding|findings|issue|issues|risk|risks|paragraph|text))?\s*(?:\.|,|;|:|to|in|as|$)"
        ),
        needs=tuple(
            f"{neg} {verb}"
            for neg in ("do not", "don't", "never")
            for verb in ("report", "flag", "mention", "record", "include", "list", "highlight", "raise")
        ),
    ),
    _Rule(
        "suppress_findings",
        "tells the reviewer what its verdict must be",
        _n(
            r"\b(?:this|the)\s+(?:contract|document|agreement)\s+(?:is|has\s+been)\s+(?:already\s+)?"
            r"(?:fully\s+)?(?:approved|pre-?approved|verified|cleared)\s+(?:by|for)\s+(?:legal|compliance|the\s+reviewer|"
            r"review)\b.{0,40}?\b(?:no|skip|without)\b"
        ),
        needs=("approved", "verified", "cleared"),
    ),
    _Rule(
        "role_play",
        "tries to change who the reader is",
        _n(
            r"\b(?:you\s+are\s+now|from\s+now\s+on,?\s+you|pretend\s+(?:to\s+be|you\s+are)|act\s+as\s+(?:an?\s+)?"
            r"(?:ai|assistant|chatbot|language\s+model|llm|unrestricted|different)|roleplay\s+as|role-?play\s+as)\b"
        ),
        needs=("you are now", "now on", "pretend", "act as", "roleplay as", "role-play as"),
    ),
    _Rule(
        "role_play",
        "addresses an AI model",
        _n(
            r"\b(?:as\s+an\s+ai|as\s+a\s+(?:large\s+)?language\s+model|dear\s+(?:ai|assistant|claude|chatgpt|gpt|llm|"
            r"model|reviewer)|(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+)?(?:ai|assistant|llm|language\s+model|"
            r"claude|chatgpt|gpt|review(?:ing)?\s+(?:model|bot|system|ai)))\b"
        ),
        needs=(
            "as an ai",
            "language model",
            "dear ",
            "note to",
            "note for",
            "message to",
            "message for",
            "instruction to",
            "instruction for",
            "instructions to",
            "instructions for",
        ),
    ),
    _Rule(
        "role_marker",
        "contains a chat-role marker",
        re.compile(r"(?:^|(?<=[\"'>\]]))[ \t]*(?:Human|Assistant|HUMAN|ASSISTANT)[ \t]*:(?=[ \t]*\S)", re.M),
        raw=True,
        needs=("Human", "Assistant", "HUMAN", "ASSISTANT"),
    ),
    _Rule(
        "role_marker",
        "contains a chat-template token",
        _n(
            r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\|>|"
            r"\[/?inst\]|<<\s*/?sys\s*>>|<\s*/?\s*(?:system|instructions?|admin|user_query|document)\s*>"
        ),
        needs=("<", "inst]"),
    ),
    _Rule(
        "role_marker",
        "contains a role heading",
        _n(r"#{2,}\s*(?:system|assistant|human|user|instructions?|developer)\b"),
        needs=("##",),
    ),
    _Rule(
        "tool_call",
        "imitates a tool call",
        _n(
            r"<\s*/?\s*(?:tool_use|tool_result|function_calls?|invoke|tool_call)\b|\"type\"\s*:\s*\"tool_(?:use|result)\"|"
            r"\btool_choice\b|\brecord_findings\b"
        ),
        needs=("<", "tool_", "record_findings"),
    ),
)


class InjectionFlag(BaseModel):
    """One instruction-like passage found in a text.

    ``start``/``end`` are character offsets into the text that was scanned (end exclusive);
    ``rule`` names the pattern family (``override_instructions``, ``suppress_findings``,
    ``role_play``, ``role_marker``, ``tool_call``); ``matched`` is the original text of the span.
    """

    rule: str
    reason: str
    start: int
    end: int
    matched: str


#: Characters on each side of an occurrence of a rule's needed word that hold every match
#: containing it: on the matching form (whitespace runs are one space) no pattern but a run of
#: ``#`` (itself made of needed ``##``) matches more than about 250 characters.
NEED_WINDOW = 400


def _matches(rule: _Rule, hay: str) -> Iterator[re.Match[str]]:
    """``rule.pattern.finditer(hay)``, run only where a match can be: in windows of
    :data:`NEED_WINDOW` characters around each occurrence of one of ``rule.needs`` (a raw rule:
    the whole text once one occurs). Every match contains a needed word, so none is missed; an
    overlapping match found in two windows is reported once by the caller."""
    if not rule.needs:
        yield from rule.pattern.finditer(hay)
        return
    if rule.raw:
        if any(word in hay for word in rule.needs):
            yield from rule.pattern.finditer(hay)
        return
    spans: list[tuple[int, int]] = []
    for word in rule.needs:
        at = hay.find(word)
        while at >= 0:
            spans.append((max(0, at - NEED_WINDOW), min(len(hay), at + len(word) + NEED_WINDOW)))
            at = hay.find(word, at + 1)
    spans.sort()
    lo = hi = -1
    for a, b in spans + [(len(hay) + 1, len(hay) + 1)]:
        if a > hi:
            if hi > lo:
                yield from rule.pattern.finditer(hay, lo, hi)
            lo, hi = a, b
        else:
            hi = max(hi, b)


def detect_injection(text: str) -> list[InjectionFlag]:
    """Flags of instruction-like text aimed at the reviewer in ``text``, ordered by offset.

    Overlapping matches of the same rule are reported once. Never raises for any input string.
    """
    if not text:
        return []
    stripped = text.translate(_ZERO_WIDTH) if any(chr(z) in text for z in _ZERO_WIDTH) else text
    # Offsets of ``stripped`` back into ``text`` (zero-width characters removed).
    back = [i for i, ch in enumerate(text) if ord(ch) not in _ZERO_WIDTH] if len(stripped) != len(text) else None
    # Dotted İ casefolds to "i" plus a combining dot, dotless ı to itself: both read as "i" to a
    # model ("İGNORE ALL PREVIOUS INSTRUCTIONS"), so both are "i" here (one character for one:
    # offsets are unchanged).
    norm, offs = match_form(stripped.translate(_DOTTED_I) if "\u0130" in stripped or "\u0131" in stripped else stripped)
    found: list[InjectionFlag] = []
    for rule in RULES:
        hay = stripped if rule.raw else norm
        for m in _matches(rule, hay):
            a, b = m.span()
            if rule.raw:  # skip the leading blanks the pattern consumed
                while a < b and stripped[a] in " \t":
                    a += 1
                start, end = a, b
            else:
                if a >= len(offs):
                    continue
                while a < b and norm[a] == " ":
                    a += 1
                start, end = offs[a], offs[max(a, b - 1)] + 1
            if back is not None:
                start, end = back[start], back[end - 1] + 1
            if any(f.rule == rule.name and f.start < end and start < f.end for f in found):
                continue
            found.append(
                InjectionFlag(rule=rule.name, reason=rule.reason, start=start, end=end, matched=text[start:end])
            )
    return sorted(found, key=lambda f: (f.start, f.rule))


# --- limits --------------------------------------------------------------------------------


def cap_page_chars(document: ExtractedDocument, max_chars: int) -> ExtractedDocument:
    """``document`` with every page's text cut to at most ``max_chars`` characters.

    Returns the same object when no page is over the limit. The cut is recorded by
    :func:`screen_document` (flag ``page_truncated``), so it is never silent.
    Raises ``ValueError`` for a non-positive ``max_chars``.
    """
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    if all(len(p.text) <= max_chars for p in document.pages):
        return document
    pages = [
        p if len(p.text) <= max_chars else p.model_copy(update={"text": p.text[:max_chars]}) for p in document.pages
    ]
    return document.model_copy(update={"pages": pages})


def prompt_overhead_chars() -> int:
    """Characters sent with every chunk besides its text: system prompt and tool definition."""
    from tasks.review.backends.prompt import SYSTEM_PROMPT, review_tool

    return len(SYSTEM_PROMPT) + len(json.dumps(review_tool()))


def estimate_tokens(chunks: list[Chunk], overhead_chars: int | None = None) -> int:
    """Estimated input tokens to review ``chunks``: (text + per-call prompt overhead) / 4 per chunk.

    Uses :data:`CHARS_PER_TOKEN`; the prompt overhead counts at full price although most of it is
    a cache read, so the estimate errs high.
    """
    over = prompt_overhead_chars() if overhead_chars is None else overhead_chars
    return sum(math.ceil((len(c.text) + over) / CHARS_PER_TOKEN) for c in chunks)


@dataclass
class TokenBudget:
    """The run's input-token budget (estimated tokens; ``None`` = unlimited).

    Documents reserve their estimate before their reviews are submitted. The first document
    that does not fit closes the budget: it and every later document are deferred to the next
    run (never dropped), so one run's spend stays bounded.
    """

    limit: int | None
    used: int = 0
    closed: bool = False

    def reserve(self, tokens: int) -> bool:
        """Reserve ``tokens``; False (and the budget closes) when they do not fit."""
        if self.limit is None:
            self.used += tokens
            return True
        if self.closed or self.used + tokens > self.limit:
            self.closed = True
            return False
        self.used += tokens
        return True


@dataclass
class Admission:
    """Whether a chunked document may be reviewed now.

    ``status`` is None when admitted; otherwise ``failed`` (``failure`` set) or ``deferred``,
    with ``reason`` saying which limit and by how much. ``tokens`` is the estimate (tokens).
    """

    status: DocumentStatus | None = None
    reason: str | None = None
    failure: FailureKind | None = None
    tokens: int = 0


def admit_document(
    chunks: list[Chunk],
    limits: Limits,
    budget: TokenBudget,
    overhead_chars: int | None = None,
    billable: list[Chunk] | None = None,
) -> Admission:
    """Apply the chunk limit, then the run's token budget, to a chunked document.

    ``billable`` are the chunks that will be sent to a model (those routed ``deep``, none for
    the offline rules backend); the token estimate counts only them (default: all chunks).

    Over ``limits.max_chunks_per_document``: the document fails (``too_large``, reason starts
    "too many chunks") before any token is spent; a partial review would look complete.
    Over the budget: the document is deferred to the next run.
    """
    if len(chunks) > limits.max_chunks_per_document:
        return Admission(
            DocumentStatus.failed,
            f"too many chunks: {len(chunks):,} over the limit of {limits.max_chunks_per_document:,} "
            f"(DOCREVIEW_MAX_CHUNKS_PER_DOCUMENT)",
            FailureKind.too_large,
        )
    billed = chunks if billable is None else billable
    tokens = estimate_tokens(billed, overhead_chars) if billed else 0
    if tokens and not budget.reserve(tokens):
        return Admission(
            DocumentStatus.deferred,
            f"run token budget reached: the document needs ~{tokens:,} input tokens and "
            f"{max(0, (budget.limit or 0) - budget.used):,} of {budget.limit:,} are left "
            f"(DOCREVIEW_MAX_RUN_TOKENS); deferred to the next run",
            tokens=tokens,
        )
    return Admission(tokens=tokens)


# --- screening (persisted) -----------------------------------------------------------------


@dataclass
class DocumentFlag:
    """A flag on a document, as stored in ``document_flags``.

    ``char_start``/``char_end`` index :attr:`ExtractedDocument.text` after the page cap;
    ``page`` is 1-based; ``chunk_indices`` are the chunks (of this run's chunker) holding the span.
    """

    kind: str
    detector: str
    rule: str
    reason: str
    char_start: int
    char_end: int
    page: int
    excerpt: str
    chunk_indices: list[int] = field(default_factory=list)


def _excerpt(text: str, start: int, end: int) -> str:
    a, b = max(0, start - _EXCERPT_CONTEXT), min(len(text), end + _EXCERPT_CONTEXT)
    return ("…" if a else "") + " ".join(text[a:b].split()) + ("…" if b < len(text) else "")


def document_flags(original: ExtractedDocument, chunks: list[Chunk], max_chars_per_page: int) -> list[DocumentFlag]:
    """Flags of one document: injection spans (from its text and from the running headers and
    footers removed from its pages) and truncated pages.

    ``chunks`` were cut from ``cap_page_chars(original, max_chars_per_page)``. An injection span is
    one flag listing every chunk that holds it (overlapping chunks), or every chunk it touches when
    a chunk boundary cuts it.
    """
    capped = cap_page_chars(original, max_chars_per_page)
    starts = capped.page_starts()
    text = capped.text
    flags: dict[tuple[str, int], DocumentFlag] = {}
    # One scan of the whole text: a span is listed under every chunk that holds all of it, or, when a
    # chunk boundary cuts it, every chunk it touches (chunks are slices of ``text``).
    for f in detect_injection(text):
        inside = [c.index for c in chunks if c.char_start <= f.start and f.end <= c.char_end]
        touched = inside or [c.index for c in chunks if c.char_start < f.end and f.start < c.char_end]
        flags[(f.rule, f.start)] = DocumentFlag(
            kind=KIND_INJECTION,
            detector=DETECTOR_VERSION,
            rule=f.rule,
            reason=f.reason,
            char_start=f.start,
            char_end=f.end,
            page=capped.page_at(f.start),
            excerpt=_excerpt(text, f.start, f.end),
            chunk_indices=touched,
        )
    # Running headers and footers were removed from the text (tasks.ingest.furniture) but are
    # still on the page a model's reader sees: screened too, flagged at the page's start.
    for page, start in zip(original.pages, starts):
        for line in page.running:
            for f in detect_injection(line):
                key = (f.rule, start)
                if key in flags:
                    continue
                flags[key] = DocumentFlag(
                    kind=KIND_INJECTION,
                    detector=DETECTOR_VERSION,
                    rule=f.rule,
                    reason=f"{f.reason} (in a running header or footer)",
                    char_start=start,
                    char_end=start,
                    page=page.number,
                    excerpt=_excerpt(line, f.start, f.end),
                    chunk_indices=[
                        c.index
                        for c in chunks
                        if c.char_start <= start + 1 and start <= c.char_end + len(PAGE_SEPARATOR)
                    ]
                    or [c.index for c in chunks if c.page_start <= page.number <= c.page_end][:1],
                )
    out = sorted(flags.values(), key=lambda g: (g.char_start, g.rule))
    for page, start in zip(original.pages, starts):
        if len(page.text) > max_chars_per_page:
            cut = start + max_chars_per_page
            out.append(
                DocumentFlag(
                    kind=KIND_PAGE_TRUNCATED,
                    detector=PAGE_LIMIT_DETECTOR,
                    rule="max_chars_per_page",
                    reason=(
                        f"page {page.number} has {len(page.text):,} characters; only the first "
                        f"{max_chars_per_page:,} were reviewed (DOCREVIEW_MAX_CHARS_PER_PAGE)"
                    ),
                    char_start=cut,
                    char_end=cut,
                    page=page.number,
                    excerpt="",
                    chunk_indices=[c.index for c in chunks if c.char_start <= cut <= c.char_end + len(PAGE_SEPARATOR)],
                )
            )
    return out


@task(name="screen-document", task_run_name=for_document("screen"), cache_policy=NO_CACHE)
def screen_document(
    session: Session, original: ExtractedDocument, chunks: list[Chunk], max_chars_per_page: int
) -> list[DocumentFlag]:
    """Prefect task: find a document's flags (:func:`document_flags`) and store them in ``session``
    (the caller commits).

    Storing is idempotent (natural key: sha256, detector, kind, rule, char_start). Returns the flags.
    """
    from tasks.store.persist import save_document_flags

    flags = document_flags(original, chunks, max_chars_per_page)
    save_document_flags(session, original.sha256, flags)
    return flags


#: Detector versions whose stored flags the report shows.
REPORTED_DETECTORS = (DETECTOR_VERSION, PAGE_LIMIT_DETECTOR)


def report_flags(session: Session, sha256: str | None, findings: list[dict]) -> tuple[list[dict], list[dict]]:
    """Flags and document-level checks of one document for the report.

    Returns ``(flags, checks)``: ``flags`` = ``[{kind, rule, reason, page, chunk_indices,
    excerpt}]``; ``checks`` = ``[{name, verdict, reason}]`` with a ``needs_review`` check per flag
    kind present (``prompt_injection``, ``page_truncated``). Every finding (report dict) from a
    chunk holding an injection flag gets verdict ``needs_review`` and a ``prompt_injection``
    check, in place; its stored fact-check verdict is kept in that check's reason.
    """
    if not sha256:
        return [], []
    from tasks.store.persist import load_document_flags

    rows = load_document_flags(session, sha256, REPORTED_DETECTORS)
    flags = [
        dict(
            kind=r.kind,
            rule=r.rule,
            reason=r.reason,
            page=r.page,
            chunk_indices=list(r.chunk_indices),
            excerpt=r.excerpt,
        )
        for r in rows
    ]
    checks = []
    injected = [f for f in flags if f["kind"] == KIND_INJECTION]
    if injected:
        pages = sorted({f["page"] for f in injected})
        checks.append(
            dict(
                name=KIND_INJECTION,
                verdict="needs_review",
                reason=f"{len(injected)} instruction-like passage(s) aimed at the reviewer on page(s) "
                f"{', '.join(map(str, pages))}; findings from those passages need a person's review",
            )
        )
        tainted: dict[int, list[dict]] = {}
        for f in injected:
            for idx in f["chunk_indices"]:
                tainted.setdefault(idx, []).append(f)
        for finding in findings:
            hits = tainted.get(finding.get("chunk_index", -1), [])
            if not hits:
                continue
            reason = (
                f"the passage this finding came from contains instruction-like text "
                f"({'; '.join(sorted({h['reason'] for h in hits}))}); fact-check verdict was {finding['verdict']}"
            )
            finding["verdict"] = "needs_review"
            finding.setdefault("checks", []).append(dict(name=KIND_INJECTION, verdict="needs_review", reason=reason))
    truncated = [f for f in flags if f["kind"] == KIND_PAGE_TRUNCATED]
    if truncated:
        checks.append(
            dict(
                name=KIND_PAGE_TRUNCATED,
                verdict="needs_review",
                reason="; ".join(f["reason"] for f in truncated[:5])
                + (f"; and {len(truncated) - 5} more page(s)" if len(truncated) > 5 else ""),
            )
        )
    return flags, checks
