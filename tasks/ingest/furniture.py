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
#: A footer ending with its page number after other numbers (:func:`folio_shape`, "2023 FORM 10-K 37") runs
#: on at least this share: filings set one on odd pages and another on even ones.
MIN_FOLIO_SHARE = 0.25

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


_LAST_NUMBER = re.compile(r"(\d{1,4})\s*$")


def folio_shape(line: str) -> str | None:
    """The comparison key of a footer that ends with its page number after other numbers (``"Apple Inc. |
    2024 Form 10-K | 29"``: too many digit runs for :func:`shape` to mask): the line casefolded, whitespace
    collapsed, its final digit run as ``#`` and the others kept; None for a line that does not end with a
    number, or that :func:`shape` already masks."""
    key = _SPACES.sub(" ", line.strip().casefold())
    if len(_DIGITS.findall(key)) <= MAX_NUMBERS or not _LAST_NUMBER.search(key):
        return None
    return _LAST_NUMBER.sub("#", key)


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
        top.update({k for i in head if len(lines[i]) <= MAX_LINE_CHARS for k in _keys(lines[i])})
        bottom.update({k for i in tail if len(lines[i]) <= MAX_LINE_CHARS for k in _keys(lines[i])})
    need = max(MIN_PAGES, MIN_SHARE * with_text)
    folio = max(MIN_PAGES, MIN_FOLIO_SHARE * with_text)  # a recto or verso footer is on every other page

    def running(counts: Counter[str]) -> set[str]:
        return {s for s, n in counts.items() if s and (n >= need or (_is_folio(s) and n >= folio))}

    return running(top), running(bottom)


def _is_folio(key: str) -> bool:
    """Whether a comparison key is a :func:`folio_shape` (other numbers kept, the last one masked)."""
    return key.endswith("#") and "#" not in key[:-1] and len(_DIGITS.findall(key)) >= MAX_NUMBERS


def _keys(line: str) -> set[str]:
    """A line's comparison keys: its :func:`shape` and, for a footer ending with its page number after other
    numbers, its :func:`folio_shape`."""
    folio = folio_shape(line)
    return {shape(line), folio} if folio else {shape(line)}


#: A financial-statement page's number: "F-12", "Page F-12", "- F-12 -".
_F_PAGE = re.compile(r"(?i)^\s*(?:[-\u2013\u2014]\s*)?(?:page\s+)?(F-\d{1,3})\s*(?:[-\u2013\u2014]\s*)?$")


def printed_numbers(removed: list[list[str]]) -> list[str | None]:
    """The page number printed on each page, read from the running lines :func:`strip_running_lines` removed
    (its ``removed``): the last of them that is a page number (``"29"``, ``"Page 29 of 80"``, ``"- 29 -"``), a
    financial-statement page (``"F-12"``), or a running footer ending with its number (``"Apple Inc. | 2024
    Form 10-K | 29"``, :func:`folio_shape`) whose number is not the same on every page that has it. None for a
    page without one."""
    folios: dict[str, set[str]] = {}
    for lines in removed:
        for line in lines:
            key = folio_shape(line)
            if key is not None and (m := _LAST_NUMBER.search(line)):
                folios.setdefault(key, set()).add(m.group(1))
    out: list[str | None] = []
    for lines in removed:
        found = None
        for line in reversed(lines):
            key = folio_shape(line)
            if is_page_number(line):
                found = str(int(_DIGITS.findall(line)[0]))
            elif m := _F_PAGE.match(line):
                found = m.group(1).upper()
            elif key is not None and len(folios.get(key, ())) > 1 and (n := _LAST_NUMBER.search(line)):
                found = str(int(n.group(1)))
            if found is not None:
                break
        out.append(found)
    return out


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
                    bool(_keys(line) & running) or (k == 0 and (is_page_number(line) or bool(_F_PAGE.match(line))))
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
