"""Models passed between pipeline tasks: source objects, extracted pages, chunks, outcomes.

Offsets are character offsets (Python ``str`` indices) into :attr:`ExtractedDocument.text`,
the document's pages joined by :data:`PAGE_SEPARATOR`. Page numbers are 1-based.
"""

from __future__ import annotations

import bisect
from datetime import datetime
from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

#: Joins page texts into the document text; a blank line so paragraphs never glue across pages.
PAGE_SEPARATOR = "\n\n"


class DocumentStatus(str, Enum):
    """Terminal state of a document in a run."""

    reviewed = "reviewed"
    deferred = "deferred"
    failed = "failed"


class FailureKind(str, Enum):
    """Why a document could not be reviewed (stable codes for reports and metrics)."""

    empty_file = "empty_file"
    not_pdf = "not_pdf"  #: kept for rows of earlier runs; now ``unsupported_kind``
    unsupported_kind = "unsupported_kind"
    too_large = "too_large"
    too_many_pages = "too_many_pages"
    password_required = "password_required"
    corrupt = "corrupt"
    timeout = "timeout"
    memory_limit = "memory_limit"
    resource_limit = "resource_limit"
    no_text = "no_text"
    unreadable = "unreadable"
    review_error = "review_error"


class DocumentKind(str, Enum):
    """The format of a document, detected from its bytes (:func:`tasks.ingest.kinds.detect_kind`).

    ``pdf`` (``%PDF-`` header; scanned pages are OCR'd), ``docx`` (an Office Open XML ZIP with
    ``word/document.xml``, ECMA-376), ``image`` (a TIFF, PNG or JPEG page image, OCR'd), ``html`` (an
    HTML or XHTML document, e.g. an SEC filing as filed on EDGAR, with its inline XBRL; or EDGAR's
    complete submission text file with its ``<DOCUMENT>`` parts).
    """

    pdf = "pdf"
    docx = "docx"
    image = "image"
    html = "html"


#: What a locator's ``page`` counts (:attr:`Locator.page_basis`): ``pdf`` the PDF file's own page (the
#: physical page a PDF viewer opens, 1-based), ``image`` the frame of a page-image file (TIFF, PNG, JPEG),
#: ``page_break`` the page of an HTML filing as its filer's page breaks divide it (the page of the filing as
#: printed; :mod:`tasks.ingest.html`).
PageBasis = Literal["pdf", "image", "page_break"]


class Locator(BaseModel):
    """Where one unit of a document's text sits in its source, as a reviewer finds it. Every surface that says
    where a finding, figure or flag is (WHERE, a check's reason, ``page`` in report.json, the "open the
    source" link) reads this one value (:meth:`ExtractedDocument.locator_of`).

    - a PDF page: ``page`` (1-based, the PDF file's own page);
    - an OCR'd page (a scanned PDF page or a page image): ``page`` and ``ocr_confidence``, the
      mean of Tesseract's word confidences on the page (0..1);
    - an HTML filing: ``page`` where the filer put page breaks (else None), ``printed_page`` the page
      number printed at that page's foot when it is not ``page`` (``"4"`` on the sixth page of a 10-Q whose
      cover and contents are unnumbered; None when the same or not printed) and ``section`` (the Part and
      Item path, e.g. ``"Part II > Item 7. Management's Discussion and Analysis"``): ``"page 41, Part II >
      Item 7. …"``; a PDF filing's pages carry the Item their page falls under as ``section`` too
      (:func:`tasks.review.filing.with_sections`);
    - a DOCX paragraph: ``section`` (the heading path, e.g. ``"7.2 Limitation of Liability"``; None
      before the first heading) and ``paragraph`` (1-based within that section). A DOCX has no
      pages: ``page`` stays None, none is invented.

    ``page_basis`` names what ``page`` counts (:data:`PageBasis`); None when there is no page, or for a
    locator recorded without it (a PDF page's).
    """

    page: int | None = None
    section: str | None = None
    paragraph: int | None = None
    ocr_confidence: float | None = None
    printed_page: str | None = None
    page_basis: PageBasis | None = None

    def place(self) -> str:
        """The page part of :meth:`label` (``"page 3"``, ``"page 6 (printed 4)"``), or, without a page, the
        whole label (``"§ 7.2 Limitation of Liability, paragraph 3"``): how a check's reason names where a
        quote was found."""
        if self.page is None:
            return self.label()
        return f"page {self.page}" + (f" (printed {self.printed_page})" if self.printed_page else "")

    def label(self) -> str:
        """The locator as a reviewer reads it: ``"page 3"``, ``"page 3 (OCR, confidence 0.91)"``,
        ``"page 6 (printed 4), Part I > Item 1. Financial Statements"``,
        ``"§ 7.2 Limitation of Liability, paragraph 3"`` or ``"paragraph 3"``."""
        if self.page is not None:
            text = self.place()
            if self.ocr_confidence is not None:
                text += f" (OCR, confidence {self.ocr_confidence:.2f})"
            if self.section:
                text += f", {self.section}"
            return text
        where = f"§ {self.section}" if self.section else ""
        if self.paragraph is not None:
            where = f"{where}, paragraph {self.paragraph}" if where else f"paragraph {self.paragraph}"
        return where or "document"


class TrackedChange(BaseModel):
    """One tracked change of a DOCX (``w:ins``, ``w:del``, ``w:moveFrom``/``w:moveTo``, ECMA-376 Part 1
    §17.13.5). The reviewed text is the text with every change accepted.

    ``kind``: ``insertion``, ``deletion``, ``replacement`` (a deletion next to an insertion in one run of
    changes) or ``move``; ``before``/``after``: the text removed/added (``""`` for none); ``author`` and
    ``date`` (ISO 8601, as written) from the change's attributes; ``unit``: the 1-based number of the
    :class:`PageText` (paragraph) it sits in; ``context``: the paragraph's accepted text around it;
    ``scope``: ``text`` (runs), or a whole table ``row`` (``w:trPr/w:del``, ``w:trPr/w:ins``) or ``cell``
    (``w:cellDel``, ``w:cellIns``) deleted or inserted as one change, its cells joined by ``" | "``.
    """

    kind: Literal["insertion", "deletion", "replacement", "move"]
    before: str = ""
    after: str = ""
    author: str | None = None
    date: str | None = None
    unit: int
    context: str = ""
    scope: Literal["text", "row", "cell"] = "text"


class Comment(BaseModel):
    """A DOCX comment (``word/comments.xml``, ECMA-376 Part 1 §17.13.4): ``author``, ``date`` (ISO 8601),
    ``text``, the ``anchor`` text it is attached to (between ``w:commentRangeStart`` and ``End``) and the
    1-based ``unit`` (paragraph) where the anchor starts."""

    author: str | None = None
    date: str | None = None
    text: str
    anchor: str = ""
    unit: int


class XbrlFact(BaseModel):
    """One inline XBRL fact of an HTML filing (``ix:nonFraction`` or ``ix:nonNumeric``; Inline XBRL 1.1
    §§ 4.1.5–4.1.6), with its context and unit resolved.

    - ``concept``: the QName as written, e.g. ``us-gaap:Revenues``, ``dei:DocumentPeriodEndDate``;
    - ``value``: a numeric fact's value as an exact decimal string with ``scale`` and ``sign`` applied
      (``"26974000000"``, ``"-12.5"``), None for a nil or non-numeric fact; ``text``: the displayed text
      (a non-numeric fact's text, cut at 2,000 characters);
    - ``unit``: the unit's measure(s) (``"USD"``, ``"shares"``, ``"USD/shares"``); ``decimals`` as written
      (``"-6"``, ``"INF"``);
    - ``period_start``/``period_end``: ISO dates of a duration context; an instant context has
      ``instant`` true and only ``period_end`` (XBRL 2.1 §4.7.2: an instant is the end of its day);
    - ``dimensions``: ``{axis QName: member QName or typed value}`` of the context's segment/scenario
      (empty for the entity as a whole);
    - ``context_id``; ``unit_number``: the 1-based :class:`PageText` holding the fact (None when hidden);
    - ``problem``: why the fact is not used as a figure (its format cannot be read, its ``contextRef``
      names no context, a per-share amount with a ``scale``, duplicates that disagree), None for a good fact.
    """

    concept: str
    value: str | None = None
    text: str = ""
    unit: str | None = None
    decimals: str | None = None
    period_start: str | None = None
    period_end: str | None = None
    instant: bool = False
    dimensions: dict[str, str] = Field(default_factory=dict)
    context_id: str = ""
    unit_number: int | None = None
    problem: str | None = None


class SourceObject(BaseModel):
    """A document in the source: a local file or an S3 object.

    ``uri`` is how users name it (a path or ``s3://bucket/key``); ``local_path`` is where its
    bytes are readable on this machine (for an S3 object: a file in the run's download folder,
    written by the fingerprint step, see :mod:`tasks.ingest.s3`); ``size_bytes`` is the size in
    bytes (for S3: as listed).

    S3 objects also carry ``etag`` (the listed ETag without its quotes; the download is made
    conditional on it), ``version_id`` (the S3 VersionId of the bytes downloaded, when the
    bucket is versioned) and ``endpoint_url`` (the S3 endpoint they come from; None = the AWS
    default or ``AWS_ENDPOINT_URL_S3``).

    An exhibit of an EDGAR complete submission file (:mod:`tasks.ingest.submission`) has ``part_of``:
    the submission's ``uri`` (its own ``uri`` is ``<that uri>#<file name>``); None otherwise.
    """

    uri: str
    name: str
    local_path: str
    size_bytes: int
    etag: str | None = None
    version_id: str | None = None
    endpoint_url: str | None = None
    part_of: str | None = None

    @property
    def is_s3(self) -> bool:
        """True for an object of an S3 bucket (``uri`` starts with ``s3://``)."""
        return self.uri.startswith("s3://")


#: ``PageQuality.not_read`` of a scanned page when Tesseract is missing: the cause and the fix (Debian's
#: packages; ``brew install tesseract`` elsewhere, see README). A model backend reads such pages itself
#: (:mod:`tasks.review.pages`); offline the document fails with this reason.
TESSERACT_MISSING = "tesseract not installed: apt-get install tesseract-ocr tesseract-ocr-eng"


class PageQuality(BaseModel):
    """Quality signals of one page's text layer.

    - ``empty``: no text at all (image-only or blank page);
    - ``glued_words``: words run together (long tokens, few spaces) — quotes cannot be
      matched word by word on such a page; set after the other extractor was tried too
      (the page text then starts with :data:`tasks.textnorm.GLUED_PAGE_NOTE`, so a model is told);
    - ``private_use_chars`` / ``nul_chars``: counts of U+E000–U+F8FF and U+0000 characters in the
      extracted text, typical of fonts that map ligatures (fi, ff, ffi) to no Unicode text;
    - ``ligatures_restored``: how many of those were replaced by the PDF's ``/ActualText`` or by
      an expansion (fi, fl, ff, ffi, ffl) that spells a word of the document; the rest are
      dropped from the text (counts, characters);
    - ``not_read``: the page could not be read, with the library's message (e.g. pypdf's
      ``LimitReachedError`` on a decompression bomb); its text is empty and the report says
      the page was not reviewed;
    - ``running_lines``: lines removed as running headers, footers or page numbers
      (``Page 2 of 3``), repeated on the document's pages (count of lines);
    - ``extractor``: ``pdfium``, ``pypdf``, ``tesseract`` (OCR) or ``docx``, whichever text was kept;
    - ``ocr`` / ``ocr_confidence``: the page's text comes from OCR, with the mean word confidence (0..1).
    """

    empty: bool = False
    glued_words: bool = False
    private_use_chars: int = 0
    nul_chars: int = 0
    ligatures_restored: int = 0
    not_read: str | None = None
    running_lines: int = 0
    extractor: str | None = None
    ocr: bool = False
    ocr_confidence: float | None = None

    def flags(self) -> list[str]:
        """Names of the raised flags, e.g. ``["empty"]`` (``not_read`` replaces ``empty``)."""
        out = []
        if self.not_read:
            out.append("not_read")
        elif self.empty:
            out.append("empty")
        if self.glued_words:
            out.append("glued_words")
        if self.private_use_chars:
            out.append("private_use_chars")
        if self.nul_chars:
            out.append("nul_chars")
        return out


class PageText(BaseModel):
    """The cleaned text of one page and its quality signals. ``number`` is 1-based.

    For a DOCX, a "page" is one paragraph (or table) of the document: ``number`` is its 1-based
    order and :attr:`locator` says where it is; see :class:`Locator`.

    ``running`` are the lines removed from the page as running headers, footers or page numbers
    (:mod:`tasks.ingest.furniture`): not part of :attr:`text`, still screened for injected
    instructions (:func:`tasks.check.injection.document_flags`).
    """

    number: int
    text: str
    quality: PageQuality = Field(default_factory=PageQuality)
    running: list[str] = Field(default_factory=list)
    locator: Locator | None = None
    uncertain_words: list[tuple[str, float]] = Field(
        default_factory=list,
        description="OCR'd page: the words read with a confidence under tasks.ingest.ocr.LOW_CONFIDENCE, with "
        "their confidence (0..1), so a quote resting on them is not verified silently.",
    )
    emphasis: list[int] = Field(
        default_factory=list,
        description="HTML unit: 0-based indices of the lines of ``text`` set wholly in bold or italic (headings, "
        "such as a 10-K's risk factors; tasks.ingest.html); empty for other formats.",
    )

    def emphasised_spans(self) -> list[tuple[int, int]]:
        """``[(start, end)]`` offsets in :attr:`text` of the lines listed in :attr:`emphasis`, in order
        (an index past the last line is ignored)."""
        return line_spans(self.text, self.emphasis)

    def where(self) -> Locator:
        """This unit's locator (a plain PDF page when none was recorded)."""
        return self.locator or Locator(page=self.number)


class ExtractedDocument(BaseModel):
    """A document's text, unit by unit (PDF pages, OCR'd pages, DOCX paragraphs), with the offsets
    needed to map text back to its units and each unit's :class:`Locator`.

    ``kind`` is the detected format; ``changes`` and ``comments`` are a DOCX's tracked changes and
    comments, ``facts`` an HTML filing's inline XBRL facts (empty for other kinds).
    """

    sha256: str
    source: SourceObject
    pages: list[PageText]
    encrypted: bool = False
    kind: DocumentKind = DocumentKind.pdf
    changes: list[TrackedChange] = Field(default_factory=list)
    comments: list[Comment] = Field(default_factory=list)
    facts: list[XbrlFact] = Field(default_factory=list)
    dei: dict[str, str] = Field(
        default_factory=dict,
        description="An iXBRL filing's cover facts (dei: DocumentType, DocumentPeriodEndDate as an ISO date, "
        "EntityRegistrantName, DocumentFiscalYearFocus, DocumentFiscalPeriodFocus).",
    )
    parts: list[dict[str, str]] = Field(
        default_factory=list,
        description="EDGAR complete submission file: its other documents ({type, sequence, filename, description}), "
        "e.g. the EX-99.1 press release of an 8-K; not read as part of this document.",
    )
    edgar: dict[str, str] = Field(
        default_factory=dict,
        description="The document's own EDGAR header when it comes as a <DOCUMENT> of a submission file "
        "({type, sequence, filename, description}, e.g. type EX-99.1, filename bke20241122-8kexhibit.htm); "
        "empty otherwise.",
    )
    exhibit_links: list[str] = Field(
        default_factory=list,
        description="File names of the exhibits an HTML filing links to from its exhibit index "
        "(e.g. ['bke20241122-8kexhibit.htm']): an exhibit reviewed in the same run is linked to this filing.",
    )

    def locator_of(self, number: int) -> Locator:
        """The locator of 1-based unit ``number``, its ``page_basis`` set from the document's kind (a page
        locator when out of range; a paragraph for a DOCX, which has no pages)."""
        if 1 <= number <= len(self.pages):
            where = self.pages[number - 1].where()
        else:
            where = Locator(page=number) if self.kind != DocumentKind.docx else Locator(paragraph=number)
        if where.page is None or self.kind == DocumentKind.docx:
            return where.model_copy(update={"page": None, "page_basis": None})
        bases: dict[DocumentKind, PageBasis] = {DocumentKind.image: "image", DocumentKind.html: "page_break"}
        return where.model_copy(update={"page_basis": bases.get(self.kind, "pdf")})

    def unit_locators(self) -> dict[int, Locator]:
        """``{unit number: locator}`` (:meth:`locator_of`) of the units whose locator is not the plain PDF page
        of the same number: every unit of a DOCX, an HTML filing or a page image, OCR'd and sectioned pages."""
        out = {}
        for page in self.pages:
            where = self.locator_of(page.number)
            if where != Locator(page=page.number, page_basis="pdf"):
                out[page.number] = where
        return out

    @property
    def text(self) -> str:
        """Whole-document text: pages joined by :data:`PAGE_SEPARATOR`."""
        return PAGE_SEPARATOR.join(p.text for p in self.pages)

    def page_starts(self) -> list[int]:
        """Offset in :attr:`text` where each page begins (list of len(pages))."""
        starts, pos = [], 0
        for page in self.pages:
            starts.append(pos)
            pos += len(page.text) + len(PAGE_SEPARATOR)
        return starts

    def page_at(self, offset: int) -> int:
        """1-based page number holding character ``offset`` of :attr:`text`."""
        return page_for_offset(self.page_starts(), offset)


def line_spans(text: str, indices: list[int]) -> list[tuple[int, int]]:
    """``[(start, end)]`` offsets in ``text`` of its lines (split at ``\n``) numbered ``indices`` (0-based),
    in line order; an index past the last line is ignored."""
    wanted, out, pos = set(indices), [], 0
    for k, line in enumerate(text.split("\n")):
        if k in wanted:
            out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def page_for_offset(page_starts: list[int], offset: int) -> int:
    """1-based page number for ``offset`` given the pages' start offsets (sorted)."""
    return max(1, bisect.bisect_right(page_starts, offset))


class Chunk(BaseModel):
    """A clause-aware slice of a document.

    ``char_start``/``char_end`` index :attr:`ExtractedDocument.text` (end exclusive); a review
    unit built by the router holds only some ranges of it (``segments``);
    ``page_start``/``page_end`` are the 1-based pages it spans; ``heading`` is the nearest
    section heading at or before its start, if any; ``profile`` is the review profile of its
    document (``contract`` or ``filing``, :class:`schemas.filings.Profile`), which chooses the
    taxonomy, prompt, schema and rules the chunk is reviewed with.
    """

    document_sha256: str
    index: int
    char_start: int
    char_end: int
    page_start: int
    page_end: int
    text: str
    heading: str | None = None
    page_offsets: list[int] = Field(
        default_factory=list,
        description="Offsets within ``text`` where pages page_start+1 .. page_end begin.",
    )
    segments: list[tuple[int, int]] | None = Field(
        default=None,
        description="For a review unit (see tasks.review.route.review_unit): the document ranges whose texts, joined "
        "by tasks.review.route.UNIT_SEPARATOR, make ``text``; None when ``text`` is the document's "
        "[char_start, char_end) range.",
    )
    profile: Literal["contract", "filing"] = "contract"
    emphasis: list[tuple[int, int]] | None = Field(
        default=None,
        description="Filing chunk of a filing that sets its risk-factor headings in bold or italic (HTML): "
        "``(start, end)`` offsets within ``text`` of its lines so set (PageText.emphasis), in order; None when "
        "the document does not mark them (headings are then read from the text).",
    )

    def page_at(self, offset: int) -> int:
        """1-based page number of character ``offset`` of this chunk's :attr:`text`."""
        return self.page_start + bisect.bisect_right(self.page_offsets, offset)


class IngestOutcome(BaseModel):
    """Result of ingesting one source object: an extracted document or a failure with reason.

    ``kind`` is the format detected by the pre-check (None before it, or when it failed).
    ``retry_after`` (UTC) is set on a ``timeout`` failure when the extraction is backed off
    (:mod:`tasks.ingest.backoff`): the document is not extracted again before then.
    """

    source: SourceObject
    sha256: str | None = None
    kind: DocumentKind | None = None
    document: ExtractedDocument | None = None
    failure: FailureKind | None = None
    reason: str | None = None
    pages: int = 0
    retry_after: datetime | None = None

    @property
    def ok(self) -> bool:
        """True when text was extracted and the document can be reviewed."""
        return self.document is not None and self.failure is None
