"""Fact-check: test every finding against the source text.

Checks, each with a verdict and a reason:

- ``grounding`` — the evidence quote must occur in the document. Quote and source get the same
  normalisation (:func:`tasks.textnorm.match_form`: NFKC, ligatures, quotes, dashes, case,
  whitespace, end-of-line hyphen joins). The search goes chunk → neighbouring chunks → whole
  document; the finding's page is corrected to where the quote truly is. On pages whose text
  layer glues words together, a second search ignores spaces on both sides.
- ``values`` — every number written in the finding's values must occur among the numbers of
  the quote (PITFALLS: "a real quote does not prove the value").

The overall verdict is the worst of the checks: contradicted > unsupported > needs_review >
verified.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from prefect import task
from prefect.cache_policies import NO_CACHE
from rapidfuzz import fuzz

from schemas.documents import Chunk, ExtractedDocument, page_for_offset
from schemas.findings import CheckResult, Finding, Verdict
from tasks.textnorm import match_form, numbers_in, squeeze_spaces

#: Quotes shorter than this (in normalised characters) are not trusted to a space-insensitive
#: match, which could join unrelated words.
MIN_SQUEEZED_QUOTE = 20

_SEVERITY = {Verdict.verified: 0, Verdict.needs_review: 1, Verdict.unsupported: 2, Verdict.contradicted: 3}


@dataclass
class DocumentIndex:
    """The matching form of one document, built once and shared by its fact-check tasks.

    ``norm``/``offsets`` come from :func:`match_form` over the document text; ``squeezed``/
    ``squeezed_offsets`` are the same with spaces removed; ``page_starts`` are page offsets
    in the document text; ``glued_pages`` are 1-based pages flagged ``glued_words``.
    """

    norm: str
    offsets: list[int]
    squeezed: str
    squeezed_offsets: list[int]
    page_starts: list[int]
    glued_pages: frozenset[int]

    @classmethod
    def build(cls, document: ExtractedDocument) -> "DocumentIndex":
        """Index ``document`` (one pass over its text)."""
        norm, offsets = match_form(document.text)
        squeezed, sq_offsets = squeeze_spaces(norm, offsets)
        glued = frozenset(p.number for p in document.pages if p.quality.glued_words)
        return cls(norm, offsets, squeezed, sq_offsets, document.page_starts(), glued)

    def norm_span(self, char_start: int, char_end: int, squeezed: bool = False) -> tuple[int, int]:
        """Map a span of document offsets to a span of the (squeezed) normalised text."""
        offs = self.squeezed_offsets if squeezed else self.offsets
        return bisect.bisect_left(offs, char_start), bisect.bisect_left(offs, char_end)


@dataclass
class Grounding:
    """Where a quote was found: ``scope`` (chunk, neighbours, document), document offset, page."""

    found: bool
    scope: str | None = None
    offset: int | None = None
    page: int | None = None
    ignoring_spaces: bool = False
    similarity: float = 0.0


def ground_quote(quote: str, index: DocumentIndex, chunk: Chunk, neighbours: list[Chunk]) -> Grounding:
    """Find ``quote`` in the chunk, then its neighbours, then the whole document."""
    q, _ = match_form(quote)
    if not q:
        return Grounding(found=False)
    scopes = [("chunk", [chunk]), ("neighbouring chunks", neighbours), ("document", None)]
    for squeezed in (False, True):
        needle = q.replace(" ", "") if squeezed else q
        if squeezed and len(needle) < MIN_SQUEEZED_QUOTE:
            break
        hay = index.squeezed if squeezed else index.norm
        offs = index.squeezed_offsets if squeezed else index.offsets
        for scope, spans in scopes:
            ranges = (
                [index.norm_span(c.char_start, c.char_end, squeezed) for c in spans]
                if spans is not None
                else [(0, len(hay))]
            )
            for lo, hi in ranges:
                pos = hay.find(needle, lo, hi)
                if pos >= 0:
                    doc_offset = offs[pos]
                    return Grounding(
                        found=True,
                        scope=scope,
                        offset=doc_offset,
                        page=page_for_offset(index.page_starts, doc_offset),
                        ignoring_spaces=squeezed,
                    )
    lo, hi = index.norm_span(chunk.char_start, chunk.char_end)
    similarity = fuzz.partial_ratio(q, index.norm[lo:hi]) if hi > lo else 0.0
    return Grounding(found=False, similarity=float(similarity))


def check_grounding(finding: Finding, grounding: Grounding, index: DocumentIndex) -> CheckResult:
    """Verdict of the ``grounding`` check from a :class:`Grounding`."""
    if not finding.evidence.strip():
        return CheckResult(name="grounding", verdict=Verdict.needs_review, reason="no evidence quote given")
    if not grounding.found:
        return CheckResult(
            name="grounding",
            verdict=Verdict.unsupported,
            reason=f"quote not found in the document (closest passage in its chunk is {grounding.similarity:.0f}% similar)",
        )
    where = f"found in the {grounding.scope} on page {grounding.page}"
    if grounding.page != finding.page:
        where += f" (stated page {finding.page} corrected)"
    if grounding.ignoring_spaces:
        glued = grounding.page in index.glued_pages
        return CheckResult(
            name="grounding",
            verdict=Verdict.verified if glued else Verdict.needs_review,
            reason=where + (" ignoring spaces: the page's text layer glues words together"
                            if glued else " only when spaces are ignored"),
            page=grounding.page,
        )
    return CheckResult(name="grounding", verdict=Verdict.verified, reason=where, page=grounding.page)


def check_values(finding: Finding) -> CheckResult:
    """Every number in the finding's values must be among the numbers of its quote."""
    quote_numbers = set(numbers_in(finding.evidence))
    missing = []
    for item in finding.values:
        for num in numbers_in(item.value):
            if num not in quote_numbers:
                missing.append(f"{item.name}={item.value!r} ({num})")
    if missing:
        shown = ", ".join(sorted(quote_numbers)[:8]) or "none"
        return CheckResult(
            name="values",
            verdict=Verdict.contradicted,
            reason=f"not in the quote: {'; '.join(missing)}; numbers in the quote: {shown}",
        )
    counted = sum(len(numbers_in(v.value)) for v in finding.values)
    return CheckResult(
        name="values",
        verdict=Verdict.verified,
        reason=f"all {counted} number(s) in the values occur in the quote" if counted else "no numbers to check",
    )


def overall_verdict(checks: list[CheckResult]) -> Verdict:
    """Worst verdict among ``checks`` (verified when there are none)."""
    return max((c.verdict for c in checks), key=_SEVERITY.__getitem__, default=Verdict.verified)


@dataclass
class CheckedFinding:
    """A finding after the fact-check: ``page`` corrected, overall ``verdict`` and its checks."""

    finding: Finding
    chunk_index: int
    ordinal: int
    stated_page: int
    verdict: Verdict
    checks: list[CheckResult]


def fact_check(
    findings: list[Finding], chunk: Chunk, neighbours: list[Chunk], index: DocumentIndex
) -> list[CheckedFinding]:
    """Run every check on every finding of one chunk; returns them in input order."""
    out = []
    for ordinal, finding in enumerate(findings):
        grounding = ground_quote(finding.evidence, index, chunk, neighbours)
        checks = [check_grounding(finding, grounding, index), check_values(finding)]
        page = grounding.page if grounding.found and grounding.page else finding.page
        out.append(
            CheckedFinding(
                finding=finding.model_copy(update={"page": page}),
                chunk_index=chunk.index,
                ordinal=ordinal,
                stated_page=finding.page,
                verdict=overall_verdict(checks),
                checks=checks,
            )
        )
    return out


@task(name="fact-check-findings", cache_policy=NO_CACHE)
def fact_check_findings(
    findings: list[Finding], chunk: Chunk, neighbours: list[Chunk], index: DocumentIndex
) -> list[CheckedFinding]:
    """Prefect task: :func:`fact_check` for the findings of one reviewed chunk."""
    return fact_check(findings, chunk, neighbours, index)
