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
    not_pdf = "not_pdf"
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
    """

    uri: str
    name: str
    local_path: str
    size_bytes: int
    etag: str | None = None
    version_id: str | None = None
    endpoint_url: str | None = None

    @property
    def is_s3(self) -> bool:
        """True for an object of an S3 bucket (``uri`` starts with ``s3://``)."""
        return self.uri.startswith("s3://")


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
    - ``extractor``: ``pdfium`` or ``pypdf``, whichever text was kept for the page.
    """

    empty: bool = False
    glued_words: bool = False
    private_use_chars: int = 0
    nul_chars: int = 0
    ligatures_restored: int = 0
    not_read: str | None = None
    running_lines: int = 0
    extractor: str | None = None

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

    ``running`` are the lines removed from the page as running headers, footers or page numbers
    (:mod:`tasks.ingest.furniture`): not part of :attr:`text`, still screened for injected
    instructions (:func:`tasks.check.injection.document_flags`).
    """

    number: int
    text: str
    quality: PageQuality = Field(default_factory=PageQuality)
    running: list[str] = Field(default_factory=list)


class ExtractedDocument(BaseModel):
    """A PDF's text, page by page, with the offsets needed to map text back to pages."""

    sha256: str
    source: SourceObject
    pages: list[PageText]
    encrypted: bool = False

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

    def page_at(self, offset: int) -> int:
        """1-based page number of character ``offset`` of this chunk's :attr:`text`."""
        return self.page_start + bisect.bisect_right(self.page_offsets, offset)


class IngestOutcome(BaseModel):
    """Result of ingesting one source object: an extracted document or a failure with reason.

    ``retry_after`` (UTC) is set on a ``timeout`` failure when the extraction is backed off
    (:mod:`tasks.ingest.backoff`): the document is not extracted again before then.
    """

    source: SourceObject
    sha256: str | None = None
    document: ExtractedDocument | None = None
    failure: FailureKind | None = None
    reason: str | None = None
    pages: int = 0
    retry_after: datetime | None = None

    @property
    def ok(self) -> bool:
        """True when text was extracted and the document can be reviewed."""
        return self.document is not None and self.failure is None
