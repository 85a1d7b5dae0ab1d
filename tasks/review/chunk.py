"""Chunk: split a document's text into clause-aware chunks with page spans and offsets.

Chunks are cut over the *whole-document* text, not page by page, so a clause that crosses a
page break is kept together. Cut points are chosen by priority inside a window of the size
budget: a section heading (``1.``, ``12.3``, ``Section 5``, ``ARTICLE IV``, an upper-case
heading line) beats a paragraph break, which beats a sentence end, which beats a space.
Consecutive chunks overlap by about ``overlap`` characters, and the overlap starts at the best
boundary available, so the start of a clause cut at the end of one chunk reappears whole at
the start of the next.
"""

from __future__ import annotations

import bisect
import re

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import PAGE_SEPARATOR, Chunk, DocumentKind, ExtractedDocument, page_for_offset
from tasks.runnames import for_document

#: Bumped when the cutting rules change; part of the natural key of stored chunks.
CHUNKER_VERSION = "chunk-v1"

_HEADING = re.compile(
    r"(?m)^[ \t]*(?:"
    r"(?:ARTICLE|Article|SECTION|Section|CLAUSE|Clause|SCHEDULE|Schedule|EXHIBIT|Exhibit)\s+[IVXLC\d]+[.:]?"
    r"|\d{1,2}(?:\.\d{1,2}){0,3}\.?[ \t]+(?=[A-Z(\"'])"
    r"|[A-Z][A-Z0-9 ,;&'()/-]{3,80}$"
    r")"
)
_PARAGRAPH = re.compile(r"\n[ \t]*\n|\.[ \t]*\n")
_SENTENCE = re.compile(r"[.;:!?][\"')\]]?[ \t\n]+(?=[A-Z(\"'\d])")
_SPACE = re.compile(r"\s+")

# Priorities of cut points (higher wins).
_P_HEADING, _P_PARAGRAPH, _P_SENTENCE, _P_SPACE = 3, 2, 1, 0


def section_headings(text: str) -> list[tuple[int, str]]:
    """``[(offset, heading line)]`` of the section headings of ``text`` in order: each line the chunker
    cuts before as a heading (``1.``, ``12.3``, ``Section 5``, ``ARTICLE IV``, an upper-case line), its
    text from the heading's first character to the end of the line, stripped, at most 120 characters."""
    out: list[tuple[int, str]] = []
    seen: set[int] = set()
    for m in _HEADING.finditer(text):
        pos = m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))
        if pos in seen:
            continue
        seen.add(pos)
        line_end = text.find("\n", pos)
        out.append((pos, text[pos : line_end if line_end >= 0 else len(text)].strip()[:120]))
    return out


_HEADING_NUMBER = re.compile(
    r"^(?:(?P<word>ARTICLE|Article|SECTION|Section|CLAUSE|Clause|SCHEDULE|Schedule|EXHIBIT|Exhibit)\s+)?"
    r"(?P<number>(?:[IVXLC]+|\d{1,2}(?:\.\d{1,2}){0,3})\b)?[.:]?\s*"
)
#: A heading's title: the words after its number up to the first full stop, colon or dash (at most
#: this many words; a longer run is the clause's first sentence, not a title).
TITLE_WORDS = 10


def heading_depth(line: str) -> int:
    """Nesting depth of a heading line: 0 for an ARTICLE, SCHEDULE or EXHIBIT line or an upper-case
    line without a number, 1 + the number of dots in its number otherwise (``12.`` → 1, ``12.3`` → 2,
    ``Section 5.1`` → 2)."""
    m = _HEADING_NUMBER.match(line)
    word = (m.group("word") or "").lower() if m else ""
    number = m.group("number") if m else None
    if word in ("article", "schedule", "exhibit") or number is None:
        return 0
    return 1 + number.rstrip(".").count(".")


def heading_title(line: str) -> str:
    """The title of a heading line without its number: ``"12.3 Limitation of Liability. In no event …"``
    → ``"Limitation of Liability"``; ``"ARTICLE IX INDEMNIFICATION"`` → ``"INDEMNIFICATION"``; empty when
    the words after the number run on for more than :data:`TITLE_WORDS` words before a stop (a clause's
    sentence, not a title)."""
    m = _HEADING_NUMBER.match(line)
    rest = line[m.end() :] if m else line
    title = re.split(r"\.(?:\s|$)|:|\s[-–—]\s", rest, maxsplit=1)[0].strip(" .:;-–—\t")
    return title if 0 < len(title.split()) <= TITLE_WORDS else ""


def heading_path(headings: list[tuple[int, str]], pos: int, levels: int = 2) -> str:
    """The titles of the sections enclosing document offset ``pos``, outermost first, joined by
    ``" / "`` (``"LIMITATION OF LIABILITY / Cap"``): the nearest heading of :func:`section_headings`
    at or before ``pos``, then the nearest earlier heading of a lower :func:`heading_depth`, up to
    ``levels`` headings; titles that are empty (:func:`heading_title`) are left out. Empty before the
    first heading."""
    i = bisect.bisect_right([h for h, _ in headings], pos) - 1
    titles: list[str] = []
    depth = None
    while i >= 0 and len(titles) < levels:
        d = heading_depth(headings[i][1])
        if depth is None or d < depth:
            title = heading_title(headings[i][1])
            if title:
                titles.append(title)
            depth = d
            if d == 0:
                break
        i -= 1
    return " / ".join(reversed(titles))


class _Breaks:
    """Sorted candidate cut offsets per priority, for window queries."""

    def __init__(self, text: str, page_starts: list[int], units_are_paragraphs: bool = False):
        # Offsets in and around the separators between pages: a page end is not a paragraph end
        # (a clause may continue on the next page). A DOCX's units are its paragraphs: every unit
        # end is a paragraph end.
        page_breaks = (
            set() if units_are_paragraphs else {s - k for s in page_starts[1:] for k in range(len(PAGE_SEPARATOR) + 2)}
        )
        self.heading_at: dict[int, str] = dict(section_headings(text))
        heads = list(self.heading_at)
        paras = [
            m.end() for m in _PARAGRAPH.finditer(text) if m.start() not in page_breaks and m.end() not in page_breaks
        ]
        sents = [m.end() for m in _SENTENCE.finditer(text)]
        spaces = [m.end() for m in _SPACE.finditer(text)]
        self.by_priority = {
            _P_HEADING: sorted(heads),
            _P_PARAGRAPH: paras,
            _P_SENTENCE: sents,
            _P_SPACE: spaces,
        }
        self.headings = sorted(heads)

    def best(self, lo: int, hi: int, latest: bool = True) -> int | None:
        """Best cut in ``[lo, hi]``: highest priority, then latest (or earliest) position."""
        for prio in (_P_HEADING, _P_PARAGRAPH, _P_SENTENCE, _P_SPACE):
            arr = self.by_priority[prio]
            i = bisect.bisect_left(arr, lo)
            j = bisect.bisect_right(arr, hi)
            if i < j:
                return arr[j - 1] if latest else arr[i]
        return None

    def heading_before(self, pos: int) -> str | None:
        """Text of the nearest heading at or before ``pos``."""
        i = bisect.bisect_right(self.headings, pos)
        return self.heading_at[self.headings[i - 1]] if i else None


def chunk_text(
    sha256: str,
    text: str,
    page_starts: list[int],
    budget: int = 4000,
    overlap: int = 600,
    units_are_paragraphs: bool = False,
) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``budget`` characters overlapping by ~``overlap``.

    ``page_starts`` are the offsets where pages begin (see
    :meth:`ExtractedDocument.page_starts`); ``units_are_paragraphs`` (a DOCX, whose units are
    paragraphs) makes every unit end a paragraph cut. Returns chunks in order, with ``index`` from 0.
    Raises ``ValueError`` if ``overlap`` is not smaller than half the budget.
    """
    if budget <= 0 or overlap < 0 or overlap * 2 >= budget:
        raise ValueError("chunk budget must be positive and overlap smaller than half of it")
    n = len(text)
    breaks = _Breaks(text, page_starts, units_are_paragraphs)
    chunks: list[Chunk] = []
    start = 0
    while start < n:
        # Skip leading whitespace so chunks start on text.
        while start < n and text[start].isspace():
            start += 1
        if start >= n:
            break
        if n - start <= budget:
            end = n
        else:
            end = breaks.best(start + budget // 2, start + budget) or start + budget
        piece = text[start:end]
        stripped_end = start + len(piece.rstrip())
        first_page = page_for_offset(page_starts, start)
        last_page = page_for_offset(page_starts, max(start, stripped_end - 1))
        offsets = [s - start for s in page_starts[first_page:last_page]]
        chunks.append(
            Chunk(
                document_sha256=sha256,
                index=len(chunks),
                char_start=start,
                char_end=stripped_end,
                page_start=first_page,
                page_end=last_page,
                text=text[start:stripped_end],
                heading=breaks.heading_before(start),
                page_offsets=offsets,
            )
        )
        if end >= n:
            break
        nxt = breaks.best(end - overlap, end - 1, latest=False)
        start = nxt if nxt is not None and nxt > start else end
    return chunks


@task(name="chunk-document", task_run_name=for_document("chunk"), cache_policy=NO_CACHE)
def chunk_document(document: ExtractedDocument, budget: int = 4000, overlap: int = 600) -> list[Chunk]:
    """Prefect task: clause-aware chunks of ``document`` (sizes in characters)."""
    paragraphs = document.kind == DocumentKind.docx
    return chunk_text(document.sha256, document.text, document.page_starts(), budget, overlap, paragraphs)
