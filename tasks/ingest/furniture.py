"""Running headers, footers and page numbers: found per document, removed from the page texts.

A page's *furniture* is the text printed in its margins on every page — a company name, a
document title, ``Page 2 of 3``, ``- 7 -``, ``Confidential``. In the text layer it sits between
the last line of one page and the first line of the next, so a sentence that runs across a
page break is split by it, and a quote of that sentence cannot be found (PITFALLS: "strip
repeated headers and footers before matching").

Rule (per document, on the cleaned page texts of :func:`tasks.textnorm.clean_page_text`):

- only the first and last :data:`EDGE_LINES` non-blank lines of a page are candidates, and only
  lines of at most :data:`MAX_LINE_CHARS` characters;
- a candidate's *shape* is the line casefolded, whitespace collapsed, and, when it holds at
  most :data:`MAX_NUMBERS` digit runs, every digit run replaced by ``#`` (so ``Page 2 of 3``
  and ``Page 3 of 3`` have one shape, while table rows, with more numbers, must repeat as
  written);
- a shape is *running* when it occurs at the same edge (top or bottom) of at least
  :data:`MIN_PAGES` pages and of at least :data:`MIN_SHARE` of the pages that have text;
- a page-number line (``7``, ``Page 7``, ``Page 7 of 9``, ``- 7 -``, ``7 | Page``) on the very
  first or last line of a page is furniture even when it does not repeat;
- lines are removed from the edges inwards only while they are furniture, so a running
  line is never taken out of the middle of a page; a page that holds nothing but running
  lines keeps them (it is body text that repeats), except page numbers;
- position: a *sentence-like* line (at least :data:`SENTENCE_CHARS` characters, mostly lower-case
  letters, ending in ``.`` or ``;``: body prose, such as a governing-law sentence that happens to end
  every page) is furniture only when the page's text in its top or bottom margin
  (:data:`tasks.ingest.extract_worker.MARGIN_SHARE` of its height, read by PDFium) holds it; on pages
  without that information (pypdf, OCR) it is never furniture. Of the 8,547 lines this removes from
  200 CUAD contracts and 20 shared filings, 4 are sentence-like (one exhibit's confidential-treatment
  notice): other running lines are short or capitalised, so the position is asked only where
  repetition alone cannot tell.

Only whole lines are removed; page boundaries are unchanged, so offsets still map to pages.
The removed lines are returned per page, so hostile text in a footer is still screened
(:func:`tasks.check.injection.document_flags`).
"""

from __future__ import annotations

import re
from collections import Counter

#: Lines at each edge of a page that may be furniture.
EDGE_LINES = 3
#: Longer lines are body text, never furniture (characters).
MAX_LINE_CHARS = 120
#: A line this long (characters), mostly lower case and ending a sentence, is body prose unless it sits in a margin.
SENTENCE_CHARS = 50

#: Lines with more digit runs than this keep their digits in their shape (table rows, not page numbers).
MAX_NUMBERS = 2
#: A running line occurs at the same edge on at least this many pages ...
MIN_PAGES = 2
#: ... and on at least this share of the pages with text.
MIN_SHARE = 0.5

_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
#: Page-number lines: "7", "Page 7", "Page 7 of 9", "7 of 9", "- 7 -", "7 | Page", "p. 7", "[7]".
_PAGE_NUMBER = re.compile(
    r"(?i)^\s*(?:[-\u2013\u2014\[(]\s*)?(?:page|p\.|pg\.?)?\s*\d{1,4}\s*(?:(?:of|/)\s*\d{1,4})?"
    r"\s*(?:[-\u2013\u2014\])]\s*)?(?:\|\s*page)?\s*$"
)


def shape(line: str) -> str:
    """The comparison key of a line: casefolded, whitespace collapsed, digit runs as ``#`` when
    there are at most :data:`MAX_NUMBERS` of them."""
    key = _SPACES.sub(" ", line.strip().casefold())
    return _DIGITS.sub("#", key) if len(_DIGITS.findall(key)) <= MAX_NUMBERS else key


def is_page_number(line: str) -> bool:
    """True for a line that is only a page number (``7``, ``Page 7 of 9``, ``- 7 -`` ...)."""
    return bool(line.strip()) and bool(_PAGE_NUMBER.match(line))


def _edges(lines: list[str]) -> tuple[list[int], list[int]]:
    """Indices of the first and last :data:`EDGE_LINES` non-blank lines (top in order, bottom from the end)."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return filled[:EDGE_LINES], list(reversed(filled[-EDGE_LINES:]))


def running_shapes(pages: list[str]) -> tuple[set[str], set[str]]:
    """``(top, bottom)``: the shapes that are running lines at the top and at the bottom of ``pages``."""
    top: Counter[str] = Counter()
    bottom: Counter[str] = Counter()
    with_text = 0
    for text in pages:
        lines = text.split("\n")
        head, tail = _edges(lines)
        if head:
            with_text += 1
        top.update({shape(lines[i]) for i in head if len(lines[i]) <= MAX_LINE_CHARS})
        bottom.update({shape(lines[i]) for i in tail if len(lines[i]) <= MAX_LINE_CHARS})
    need = max(MIN_PAGES, MIN_SHARE * with_text)
    return ({s for s, n in top.items() if s and n >= need}, {s for s, n in bottom.items() if s and n >= need})


def sentence_like(line: str) -> bool:
    """True for body prose: at least :data:`SENTENCE_CHARS` characters, over half of them lower-case
    letters, ending in ``.`` or ``;``."""
    text = line.strip()
    return len(text) >= SENTENCE_CHARS and text.endswith((".", ";")) and sum(c.islower() for c in text) > len(text) / 2


def _squash(text: str) -> str:
    return "".join(text.split()).casefold()


def strip_running_lines(
    pages: list[str], margins: list[tuple[str, str] | None] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Remove running headers, footers and page numbers from every page of one document.

    ``pages`` are cleaned page texts in page order; ``margins`` (optional, one per page) the text in
    each page's top and bottom margin, or None where it is unknown (see the module docstring: a
    sentence-like line is furniture only inside a margin). Returns ``(texts, removed)``: the page
    texts without their furniture (inner blank lines kept, edges stripped) and, per page, the removed
    lines in page order. A document of one page loses only a page-number line.
    """
    top, bottom = running_shapes(pages) if len(pages) >= MIN_PAGES else (set(), set())
    texts: list[str] = []
    removed: list[list[str]] = []
    for number, text in enumerate(pages):
        lines = text.split("\n")
        head, tail = _edges(lines)
        drop: set[int] = set()
        margin = margins[number] if margins is not None and number < len(margins) else None
        for edge, (order, running) in enumerate(((head, top), (tail, bottom))):
            for k, i in enumerate(order):
                line = lines[i]
                furniture = len(line) <= MAX_LINE_CHARS and (
                    shape(line) in running or (k == 0 and is_page_number(line))
                )
                if furniture and sentence_like(line):
                    furniture = margin is not None and _squash(line) in _squash(margin[edge])
                if furniture:
                    drop.add(i)
                else:
                    break
        if drop and all(not line.strip() or i in drop for i, line in enumerate(lines)):
            # Nothing but running lines: body text that repeats (a one-line page), unless a page number.
            drop = {i for i in drop if is_page_number(lines[i])}
        if not drop:
            texts.append(text)
            removed.append([])
            continue
        removed.append([lines[i].strip() for i in sorted(drop)])
        texts.append("\n".join(line for i, line in enumerate(lines) if i not in drop).strip())
    return texts, removed
