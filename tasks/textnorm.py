"""Text normalisation shared by ingest, chunking and the fact-check.

Two forms:

- :func:`clean_page_text` — the *document text* form stored and chunked: NFKC (turns U+00A0
  into a space and ``ﬁ`` into ``fi``), NUL and private-use characters removed, line endings
  unified, runs of spaces collapsed, trailing spaces stripped. Quotes are taken from this form.
- :func:`match_form` — the *matching* form used to ground a quote: the clean form plus
  casefolding, one kind of quote and dash, intra-word hyphens dropped (so an end-of-line break
  ``re-\\nceipt`` and a real compound ``price-determining`` both compare equal on both sides)
  and every whitespace run as one space. It returns an offset map back into its input, so a
  match can be located on a page.

The same function is applied to the quote and to the source: normalisation is symmetric by
construction (PITFALLS: "apply the same normalisation to quote and source").
"""

from __future__ import annotations

import re
import unicodedata
from itertools import compress

#: First line of the text of a page whose words stay glued with both extractors: tells a model
#: why its words run together (quotes from it are matched ignoring spaces, see tasks.check.factcheck).
GLUED_PAGE_NOTE = "[docreview: the words of this page run together in the PDF's text layer]"

_QUOTES = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "`": "'",
    "\u00b4": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u00ab": '"',
    "\u00bb": '"',
}
_DASHES = {
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    "\u00ad": "",
}
_CHAR_MAP = {**_QUOTES, **_DASHES}

_SPACE_RUN = re.compile(r"[ \t\f\v]+")
#: Characters :func:`clean_page_text` removes: control characters (category ``Cc``) except tab
#: and newline, and private-use characters (category ``Co``: U+E000-U+F8FF and planes 15-16).
_NO_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")
_TRAILING = re.compile(r"[ \t]+\n")
_MANY_NEWLINES = re.compile(r"\n{3,}")


def is_private_use(ch: str) -> bool:
    """True for characters in the Unicode private-use areas (category ``Co``)."""
    return unicodedata.category(ch) == "Co"


def clean_page_text(raw: str) -> str:
    """Return the stored form of one page's extracted text (see module docstring).

    NUL and private-use characters are removed here; count them *before* cleaning
    (:func:`quality_counts`) to flag the page.
    """
    text = unicodedata.normalize("NFKC", raw)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # NUL, private-use and other control characters (except newline/tab) carry no text.
    text = _NO_TEXT.sub("", text)
    text = _SPACE_RUN.sub(" ", text)
    text = _TRAILING.sub("\n", text)
    text = _MANY_NEWLINES.sub("\n\n", text)
    return text.strip()


#: Words of printable ASCII other than ``-`` and the backtick, separated by single spaces: each
#: such character maps to its lower case (a single space to itself), so :func:`match_form`
#: copies these runs whole.
_PLAIN_RUN = re.compile(r"[!-,.-_a-~]+(?: [!-,.-_a-~]+)*")
#: A whitespace run (``\s`` matches exactly the characters for which ``str.isspace()`` is true).
_SPACE = re.compile(r"\s+")


def match_form(text: str) -> tuple[str, list[int]]:
    """Return ``(normalised, offsets)`` where ``offsets[i]`` is the index in ``text`` of the
    character that produced ``normalised[i]``.

    Rules, in order: NFKC per character; NUL/private-use/soft hyphen dropped; curly quotes to
    straight; dashes to ``-``; casefold; a hyphen between two letters dropped, together with a
    following line break (``re-\\nceipt`` → ``receipt``, ``price-determining`` →
    ``pricedetermining``); whitespace runs to one space; leading/trailing space dropped.

    Runs of plain ASCII and of whitespace are handled a run at a time (regular expressions);
    every other character goes through the per-character rules. On contract text this is about
    5x faster than a per-character loop (it runs on every page, chunk and quote).
    """
    out: list[str] = []
    offs: list[int] = []
    n = len(text)
    i = 0
    last = ""  # last character emitted
    pending_space = -1  # index in text of a whitespace run not yet emitted
    plain, space = _PLAIN_RUN.match, _SPACE.match
    while i < n:
        m = space(text, i)
        if m:
            if pending_space < 0:
                pending_space = i
            i = m.end()
            continue
        m = plain(text, i)
        if m:
            if pending_space >= 0:
                if last:
                    out.append(" ")
                    offs.append(pending_space)
                pending_space = -1
            end = m.end()
            run = m.group().lower()
            out.append(run)
            offs.extend(range(i, end))
            last = run[-1]
            i = end
            continue
        ch = text[i]
        piece = _CHAR_MAP.get(ch)
        if piece is None:
            piece = unicodedata.normalize("NFKC", ch) if not ch.isascii() else ch
        if ch == "\x00" or (not ch.isascii() and is_private_use(ch)):
            piece = ""
        if piece == "-" and last.isalpha():
            # Look past an optional whitespace run that contains a line break (or none).
            j = i + 1
            while j < n and text[j] in " \t":
                j += 1
            had_newline = False
            while j < n and text[j] in "\n\r":
                had_newline = True
                j += 1
            while had_newline and j < n and text[j] in " \t":
                j += 1
            if j < n and text[j].isalpha() and (had_newline or j == i + 1):
                pending_space = -1
                i = j
                continue
        if not piece:
            i += 1
            continue
        if pending_space >= 0:
            if last:
                out.append(" ")
                offs.append(pending_space)
            pending_space = -1
        for pc in piece.casefold():
            out.append(pc)
            offs.append(i)
            last = pc
        i += 1
    return "".join(out), offs


def squeeze_spaces(normalised: str, offsets: list[int]) -> tuple[str, list[int]]:
    """Drop every space from a :func:`match_form` result, keeping the offset map aligned.

    Used to ground quotes on pages whose words are glued together in the text layer.
    """
    squeezed = normalised.replace(" ", "")
    if len(squeezed) == len(normalised):
        return squeezed, list(offsets)
    return squeezed, list(compress(offsets, map(" ".__ne__, normalised)))


_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")


def numbers_in(text: str) -> list[str]:
    """Numbers written with digits in ``text``, canonicalised.

    Thousands separators are removed (``1,500,000`` → ``1500000``); a trailing ``.0``/``.00``
    is kept as written except that ``5.00`` and ``5`` compare equal via :func:`canonical_number`.
    Returns the canonical strings in order of appearance.
    """
    return [canonical_number(m.group(0)) for m in _NUMBER.finditer(unicodedata.normalize("NFKC", text))]


def canonical_number(raw: str) -> str:
    """Canonical form of a digit string: ``"1,500,000.00"`` → ``"1500000"``; ``"8.75"`` → ``"8.75"``.

    A comma followed by exactly three digits is a thousands separator; a final ``.`` or ``,``
    followed by one or two digits is a decimal mark (``"1.250.000,50"`` → ``"1250000.5"``).
    """
    s = raw.strip(".,")
    m = re.fullmatch(r"(.*?)[.,](\d{1,2})", s)
    if m and ("," in m.group(1) or "." in m.group(1) or len(m.group(2)) <= 2):
        whole, frac = m.group(1), m.group(2)
    else:
        whole, frac = s, ""
    whole = re.sub(r"[.,]", "", whole) or "0"
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole
