"""The check stage's ground floor: one document's index, and where a quote lies in it.

:class:`DocumentIndex` is built once per document (``flows/document.py:chunk_and_route``) from its
extracted text: the text in the matching form (:func:`tasks.textnorm.match_form`) with and without
spaces, its page starts, numbered headings and section titles, its day/month order, the words an OCR
read with low confidence and an inline XBRL filing's facts. Nothing in it changes once built. Every
check reads it, in two passes over the document's findings, each going one way:

1. per reviewed chunk, :func:`tasks.check.factcheck.fact_check` grounds each finding's quote in it
   (:func:`ground_quote`: the chunk, its neighbours, the whole document; across a page break) and runs
   the per-finding checks (support, values, arithmetic, redaction, OCR confidence, XBRL, verifier);
2. per document, findings → findings, in this order: support relative to the document's other passages
   (:mod:`tasks.check.support`, each quote under its section titles: :func:`headings_in`), operative
   zones (:mod:`tasks.check.zones`), one finding per clause (:mod:`tasks.check.merge`) and consistency
   of key terms (:mod:`tasks.check.consistency`, in the index's date order). They find a checked
   finding's quote again with :func:`locate`, as the grounding found it.

The check modules take the index and what locates a quote in it from here, never from each other.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from schemas.documents import PAGE_SEPARATOR, Chunk, ExtractedDocument, XbrlFact, page_for_offset
from schemas.findings import CheckedFinding, Verdict
from tasks.check.values import DateOrder, decide_date_order, heading_refs
from tasks.review.chunk import heading_path, section_headings
from tasks.review.facts import period_facts
from tasks.textnorm import match_form, squeeze_spaces

#: Quotes shorter than this (in normalised characters) are not trusted to a space-insensitive
#: match, which could join unrelated words.
MIN_SQUEEZED_QUOTE = 20

#: Page-seam matching (:func:`_seam_match`): at most this many normalised characters between a
#: quote's part and the page break, on either side ...
SEAM_GAP = 300
#: ... in at most this many non-blank lines per side, each at most this long (characters): the
#: running header, footer or page number a faithful quote leaves out.
SEAM_MAX_LINES = 3
SEAM_MAX_LINE_CHARS = 120

#: Heading lines whose number a section reference may name ("12.3 Term", "Section 5.", "ARTICLE IV").
_HEADING_LINE = re.compile(
    r"(?m)^[ \t]*(?:(?:ARTICLE|Article|SECTION|Section|CLAUSE|Clause|SCHEDULE|Schedule|EXHIBIT|Exhibit)\s+[IVXLC\d]+(?:\.\d+)*"
    r"|\d{1,2}(?:\.\d{1,2}){0,3}\.?(?=[ \t]+[A-Z(\"']))"
)


@dataclass
class DocumentIndex:
    """The matching form of one document, built once and shared by its fact-check tasks.

    ``norm``/``offsets`` come from :func:`match_form` over the document text; :attr:`squeezed`/
    :attr:`squeezed_offsets` are the same with spaces removed, made on first use (only a quote not
    found as written needs them: a 10-K's are about 5 MB); ``page_starts`` are page offsets
    in the document text; ``glued_pages`` are 1-based pages flagged ``glued_words``;
    ``date_order`` is the document's day/month order (:func:`tasks.check.values.decide_date_order`);
    ``heading_offsets``/``heading_numbers`` are the document offsets and section numbers
    (``"12.3"``, ``"iv"``) of its numbered heading lines, in order; ``text`` is the document text
    (for the page-seam search, :func:`_seam_match`); ``uncertain`` maps the 1-based number of each
    OCR'd page (``PageQuality.ocr``) with low-confidence words to them, as ``(word in the
    :func:`word_key` form, confidence 0..1, word as read)`` (for :func:`check_ocr_confidence`);
    ``facts``/``period_facts`` are an inline XBRL filing's facts and those of its own period (for the
    ``xbrl`` check, :mod:`tasks.check.xbrl`); ``emphasis`` maps an HTML unit's number to its lines
    set in bold or italic (offsets into the unit's text; :meth:`PageText.emphasised_spans`), for a
    filing's risk-factor headings; ``headings`` are the chunker's section heading lines
    (:func:`tasks.review.chunk.section_headings`: ``(offset, line)``), for the titles of the sections a
    quote sits in (:meth:`heading_path`), which the support check reads; ``places`` names each unit whose
    place is not "page N" of its own number (:meth:`schemas.documents.Locator.place`: a DOCX paragraph, an
    HTML filing's page by its page breaks), for the reasons that say where a quote is (:meth:`on`).
    """

    norm: str
    offsets: list[int]
    page_starts: list[int]
    glued_pages: frozenset[int]
    date_order: DateOrder = DateOrder.unknown
    heading_offsets: list[int] = field(default_factory=list)
    heading_numbers: list[str] = field(default_factory=list)
    text: str = ""
    uncertain: dict[int, list[tuple[str, float, str]]] = field(default_factory=dict)
    facts: list[XbrlFact] = field(default_factory=list)
    period_facts: list[XbrlFact] = field(default_factory=list)
    emphasis: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    headings: list[tuple[int, str]] = field(default_factory=list)
    places: dict[int, str] = field(default_factory=dict)

    def on(self, unit: int | None) -> str:
        """Where 1-based text unit ``unit`` is, as a reason says it: ``"on page 3"``, ``"on page 6 (printed 4)"``,
        ``"at § 7.2 Limitation of Liability, paragraph 3"`` (a DOCX paragraph: never a page)."""
        place = self.places.get(unit or 0) or f"page {unit}"
        return f"on {place}" if place.startswith("page ") else f"at {place}"

    _squeezed: tuple[str, list[int]] | None = field(default=None, repr=False, compare=False)

    @property
    def squeezed(self) -> str:
        """:attr:`norm` without its spaces (:func:`tasks.textnorm.squeeze_spaces`), made on first use."""
        return self._squeeze()[0]

    @property
    def squeezed_offsets(self) -> list[int]:
        """The document offset of each character of :attr:`squeezed`, made with it."""
        return self._squeeze()[1]

    def _squeeze(self) -> tuple[str, list[int]]:
        # Threads checking the same document at once may each make it: the same value, kept once.
        if self._squeezed is None:
            self._squeezed = squeeze_spaces(self.norm, self.offsets)
        return self._squeezed

    @classmethod
    def build(cls, document: ExtractedDocument) -> DocumentIndex:
        """Index ``document`` (one pass over its text)."""
        text = document.text
        norm, offsets = match_form(text)
        glued = frozenset(p.number for p in document.pages if p.quality.glued_words)
        offs, nums = [], []
        for m in _HEADING_LINE.finditer(text):
            number = heading_refs([m.group(0)])
            if number:
                offs.append(m.start())
                nums.append(next(iter(number)))
        uncertain = {
            p.number: [(word_key(w), c, w) for w, c in p.uncertain_words if word_key(w)]
            for p in document.pages
            if p.quality.ocr and p.uncertain_words
        }
        return cls(
            norm,
            offsets,
            document.page_starts(),
            glued,
            decide_date_order(text),
            offs,
            nums,
            text,
            {n: words for n, words in uncertain.items() if words},
            list(document.facts),
            period_facts(document) if document.facts else [],
            {p.number: p.emphasised_spans() for p in document.pages if p.emphasis},
            section_headings(text),
            {n: p for n, where in document.unit_locators().items() if (p := where.place()) != f"page {n}"},
        )

    def heading_path(self, offset: int | None) -> str | None:
        """The titles of the sections enclosing document ``offset`` (:func:`tasks.review.chunk.heading_path`
        over :attr:`headings`, the chunker's heading lines); None when ``offset`` is None or no titled
        heading precedes it."""
        if offset is None:
            return None
        return heading_path(self.headings, offset) or None

    def sections_at(self, offset: int | None) -> set[str]:
        """Section number of the heading that encloses document ``offset``, with its parents
        (``"12.3"`` → ``{"12.3", "12"}``); empty when unknown."""
        if offset is None:
            return set()
        i = bisect.bisect_right(self.heading_offsets, offset) - 1
        if i < 0:
            return set()
        parts = self.heading_numbers[i].split(".")
        return {".".join(parts[:k]) for k in range(1, len(parts) + 1)}

    def norm_span(self, char_start: int, char_end: int, squeezed: bool = False) -> tuple[int, int]:
        """Map a span of document offsets to a span of the (squeezed) normalised text."""
        offs = self.squeezed_offsets if squeezed else self.offsets
        return bisect.bisect_left(offs, char_start), bisect.bisect_left(offs, char_end)


@dataclass
class Grounding:
    """Where a quote was found: ``scope`` (chunk, neighbours, document), document ``offset`` (start)
    and ``end`` (just past its last character, None when unknown), 1-based ``page``."""

    found: bool
    scope: str | None = None
    offset: int | None = None
    page: int | None = None
    ignoring_spaces: bool = False
    similarity: float = 0.0
    across_pages: int | None = None  # found split over a page break: the 1-based page it continues on
    end: int | None = None


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
                        end=offs[pos + len(needle) - 1] + 1,
                    )
    for scope, spans in scopes:  # a quote running across a page break, over the margin lines between
        ranges = (
            [index.norm_span(c.char_start, c.char_end + SEAM_GAP) for c in spans]
            if spans is not None
            else [(0, len(index.norm))]
        )
        for lo, hi in ranges:
            hit = _seam_match(q, index, lo, hi)
            if hit is not None:
                doc_offset, skipped = hit
                return Grounding(
                    found=True,
                    scope=scope,
                    offset=doc_offset,
                    page=page_for_offset(index.page_starts, doc_offset),
                    across_pages=skipped,
                )
    lo, hi = index.norm_span(chunk.char_start, chunk.char_end)
    similarity = fuzz.partial_ratio(q, index.norm[lo:hi]) if hi > lo else 0.0
    return Grounding(found=False, similarity=float(similarity))


def _margin_lines(text: str) -> bool:
    """True when ``text`` (between a quote's part and a page break) is at most
    :data:`SEAM_MAX_LINES` non-blank lines of at most :data:`SEAM_MAX_LINE_CHARS` characters each:
    the size of a running header, footer or page number, not of body text."""
    lines = [line for line in text.split("\n") if line.strip()]
    return len(lines) <= SEAM_MAX_LINES and all(len(line.strip()) <= SEAM_MAX_LINE_CHARS for line in lines)


def _seam_match(q: str, index: DocumentIndex, lo: int, hi: int) -> tuple[int, int] | None:
    """Find the normalised quote ``q`` split at a word boundary across a page break inside the
    normalised range ``[lo, hi)``: its head ends a page and its tail starts the next one, with
    only margin lines (:func:`_margin_lines`) between them and the break. Returns ``(document
    offset of the quote, 1-based page it continues on)`` or None."""
    if " " not in q:
        return None
    text = index.text
    cuts = [k for k, ch in enumerate(q) if ch == " "]
    for start in index.page_starts[1:]:
        p = bisect.bisect_left(index.offsets, start)
        if p <= lo or p >= hi:
            continue
        base = max(lo, p - SEAM_GAP - len(q))
        before = index.norm[base:p]
        after = index.norm[p : min(hi, p + SEAM_GAP + len(q))]
        for k in cuts:
            head, tail = q[:k], q[k + 1 :]
            i = before.rfind(head)
            if i < 0:
                continue
            j = after.find(tail)
            if j < 0:
                continue
            head_end = index.offsets[base + i + len(head) - 1] + 1
            tail_start = index.offsets[p + j]
            page_end = start - len(PAGE_SEPARATOR)
            if _margin_lines(text[head_end:page_end]) and _margin_lines(text[start:tail_start]):
                doc_offset = index.offsets[base + i]
                return doc_offset, page_for_offset(index.page_starts, start)
    return None


_EDGE_PUNCTUATION = re.compile(r"^[^\w]+|[^\w]+$")


def word_key(word: str) -> str:
    """A word as compared with a quote's words: its :func:`match_form` (the grounding's form) without
    the punctuation at its ends (Tesseract's ``exceed,`` is the quote's ``exceed``; ``$l,000,000.``
    is ``l,000,000``)."""
    return _EDGE_PUNCTUATION.sub("", match_form(word)[0])


def headings_in(index: DocumentIndex) -> Callable[[CheckedFinding], str | None]:
    """``heading_of`` for :func:`tasks.check.support.relative_support`: the section heading path
    (:meth:`DocumentIndex.heading_path`) of a checked finding's quote, located as the grounding found it
    (:func:`locate`)."""

    def heading_of(cf: CheckedFinding) -> str | None:
        return index.heading_path(locate(cf, index))

    return heading_of


def locate(cf: CheckedFinding, index: DocumentIndex) -> int | None:
    """Document offset of ``cf``'s quote as the grounding finds it (verbatim, then ignoring spaces,
    then across a page break), preferring an occurrence on its (corrected) page; None when the quote
    is empty or was not found."""
    grounding = next((c for c in cf.checks if c.name == "grounding"), None)
    if grounding is not None and grounding.verdict is Verdict.unsupported:
        return None
    q, _ = match_form(cf.finding.evidence)
    if not q:
        return None
    page = grounding.page if grounding is not None and grounding.page else cf.finding.page
    for squeezed in (False, True):
        needle = q.replace(" ", "") if squeezed else q
        if squeezed and len(needle) < MIN_SQUEEZED_QUOTE:
            break
        hay = index.squeezed if squeezed else index.norm
        offs = index.squeezed_offsets if squeezed else index.offsets
        first: int | None = None
        pos = hay.find(needle)
        while pos >= 0:
            offset = offs[pos]
            if first is None:
                first = offset
            if bisect.bisect_right(index.page_starts, offset) == page:
                return offset
            pos = hay.find(needle, pos + 1)
        if first is not None:
            return first
    hit = _seam_match(q, index, 0, len(index.norm))
    return hit[0] if hit else None
