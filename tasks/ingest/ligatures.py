"""Ligatures a font maps to no text: restored from ``/ActualText`` or expanded from the document's words.

Some fonts map the ligature glyphs fi, fl, ff, ffi, ffl (and Word's ti, tt, ft) to a private-use code point
(U+E000–U+F8FF) or to U+0000 instead of their letters. pypdf then returns ``O\\ue001ce`` for
"Office"; PDFium drops the glyph. Cleaning removes such characters, so a model would read "Oce"
and a faithful quote of "Office" would not ground.

Restoring, in order (per character of the page text that is private-use or NUL):

1. the PDF's ``/ActualText`` (ISO 32000-1:2008 §14.9.4, the replacement text of a marked-content
   span): the spans seen while extracting are aligned with the characters in order
   (:func:`actual_text_replacements`);
2. a fixed mapping of code points that some fonts use for ligatures (U+F001 fi and U+F002 fl,
   Apple's legacy private-use assignments);
3. an expansion among :data:`LIGATURES` that turns the word into one the document spells
   elsewhere in full, or into a word of :data:`COMMON_WORDS` (a short list of contract and
   filing words holding a ligature); several possible expansions: the one whose word is most
   frequent in the document.

A character that none of these resolves is left for cleaning to drop, and the page keeps its
``private_use_chars``/``nul_chars`` flag.
"""

from __future__ import annotations

import re
from collections import Counter

#: The letter sequences typographic ligatures stand for: U+FB00–U+FB04 (ff, fi, fl, ffi, ffl), and
#: ti, tt, ft, which Word sets as ligatures in Calibri and Cambria (the 2022 American Express 10-K
#: maps them to NUL: "Sec\x00on", "Op\x00on").
LIGATURES = ("ffi", "ffl", "ff", "fi", "fl", "ti", "tt", "ft")

#: Code points some fonts assign to ligatures (Apple's legacy private-use area mapping).
KNOWN_CODEPOINTS = {"\uf001": "fi", "\uf002": "fl"}

#: Words with a ligature that contracts and filings use (lower case), for pages whose document
#: never spells the word in full.
COMMON_WORDS = frozenset(
    [
        "affect",
        "affected",
        "affecting",
        "affects",
        "affiliate",
        "affiliated",
        "affiliates",
        "affirm",
        "affirmative",
        "afford",
        "benefit",
        "benefits",
        "beneficial",
        "beneficiary",
        "certificate",
        "certificates",
        "certified",
        "certify",
        "classified",
        "confidential",
        "confidentiality",
        "conflict",
        "conflicts",
        "defined",
        "define",
        "defines",
        "definition",
        "definitions",
        "definitive",
        "deficiency",
        "difference",
        "different",
        "differ",
        "difficult",
        "effect",
        "effective",
        "effectively",
        "effectiveness",
        "effects",
        "efficiency",
        "efficient",
        "efforts",
        "effort",
        "field",
        "fields",
        "file",
        "filed",
        "files",
        "filing",
        "filings",
        "final",
        "finally",
        "finance",
        "financial",
        "financing",
        "find",
        "finding",
        "findings",
        "first",
        "fiscal",
        "fixed",
        "flow",
        "flows",
        "fluctuations",
        "identified",
        "identify",
        "influence",
        "insufficient",
        "justified",
        "modification",
        "modifications",
        "modified",
        "modify",
        "notification",
        "notified",
        "notify",
        "off",
        "offer",
        "offered",
        "offering",
        "offerings",
        "offers",
        "office",
        "officer",
        "officers",
        "offices",
        "official",
        "offset",
        "profit",
        "profits",
        "qualified",
        "qualify",
        "ratified",
        "ratify",
        "reflect",
        "reflected",
        "reflects",
        "satisfied",
        "satisfy",
        "scientific",
        "significant",
        "significantly",
        "specific",
        "specifically",
        "specified",
        "specify",
        "staff",
        "staffing",
        "sufficient",
        "suffer",
        "suffered",
        "terrific",
        "traffic",
        "waived",
        "financially",
        "flexibility",
        "flexible",
        "floor",
        "diligence",
        "affiliation",
        "section",
        "sections",
        "option",
        "options",
        "election",
        "participant",
        "vesting",
        "notice",
        "termination",
        "obligation",
        "obligations",
        "information",
        "application",
        "compensation",
        "condition",
        "conditions",
        "settlement",
        "matter",
        "matters",
        "after",
    ]
)

_WORD = re.compile(r"[A-Za-z]+")
_MARK = re.compile(r"[\x00\ue000-\uf8ff]")
_SPLIT_WORD = re.compile(r"[A-Za-z\x00\ue000-\uf8ff]*[\x00\ue000-\uf8ff][A-Za-z\x00\ue000-\uf8ff]*")


def is_marker(ch: str) -> bool:
    """True for U+0000 and private-use characters (U+E000–U+F8FF)."""
    return ch == "\x00" or "\ue000" <= ch <= "\uf8ff"


def actual_text_replacements(spans: list[tuple[str, str]]) -> list[str | None]:
    """Replacement text for each marker character inside ``/ActualText`` spans, in order.

    ``spans`` are ``(extracted text, ActualText)`` pairs in content-stream order (only spans whose
    extracted text holds a marker matter). A span whose text is one marker gives that marker its
    whole ActualText; otherwise the text's unmarked parts are matched in the ActualText and the
    gaps between them are the replacements. Returns one entry per marker character of the spans
    (None where the alignment fails).
    """
    out: list[str | None] = []
    for text, actual in spans:
        marks = [i for i, ch in enumerate(text) if is_marker(ch)]
        if not marks:
            continue
        if len(text) == 1:
            out.append(actual)
            continue
        parts = _MARK.split(text)  # one more than the markers
        fills: list[str] = []
        pos = len(parts[0])
        ok = actual.startswith(parts[0]) and actual.endswith(parts[-1])
        for k, part in enumerate(parts[1:], start=1):
            if not ok:
                break
            if k == len(parts) - 1:
                end = len(actual) - len(part)
            else:
                end = actual.find(part, pos + 1) if part else -1
            if end <= pos:
                ok = False
                break
            fills.append(actual[pos:end])
            pos = end + len(part)
        out.extend(fills if ok else [None] * len(marks))
    return out


def vocabulary(texts: list[str]) -> Counter[str]:
    """Lower-case words (letters only) of ``texts`` and their counts; words touching a marker are left out."""
    counts: Counter[str] = Counter()
    for text in texts:
        clean = _SPLIT_WORD.sub(" ", text)
        counts.update(w.lower() for w in _WORD.findall(clean))
    return counts


def _expand(word: str, vocab: Counter[str]) -> str | None:
    """The ligature (one of :data:`LIGATURES`) for the one marker character of ``word`` that makes
    a word of ``vocab`` (preferred, most frequent) or of :data:`COMMON_WORDS`; None when none does."""
    slot = next(i for i, ch in enumerate(word) if is_marker(ch))
    best, best_score = None, 0
    for lig in LIGATURES:
        low = (word[:slot] + lig + word[slot + 1 :]).lower()
        score = vocab.get(low, 0) * 2 + (1 if low in COMMON_WORDS else 0)
        if score > best_score:
            best, best_score = lig, score
    return best


def restore_ligatures(
    text: str, actual: list[str | None] | None = None, vocab: Counter[str] | None = None
) -> tuple[str, int]:
    """Replace the marker characters of one page's raw text by the letters they stand for.

    ``actual`` are the page's ``/ActualText`` replacements (:func:`actual_text_replacements`),
    used only when there is exactly one per marker of ``text``; ``vocab`` the document's words
    (:func:`vocabulary`). Returns ``(text, restored)`` where ``restored`` counts the marker
    characters replaced; the others stay in place (cleaning drops them).
    """
    marks = [m.start() for m in _MARK.finditer(text)]
    if not marks:
        return text, 0
    fills: dict[int, str] = {}
    if actual is not None and len(actual) == len(marks):
        fills.update({pos: rep for pos, rep in zip(marks, actual) if rep})
    for pos in marks:
        if pos not in fills and text[pos] in KNOWN_CODEPOINTS:
            fills[pos] = KNOWN_CODEPOINTS[text[pos]]
    vocab = vocab or Counter()
    for m in _SPLIT_WORD.finditer(text):
        todo = [p for p in range(m.start(), m.end()) if is_marker(text[p]) and p not in fills]
        if len(todo) != 1:  # none left, or two unknown ligatures in one word: too ambiguous
            continue
        word = "".join(fills.get(p, text[p]) for p in range(m.start(), m.end()))
        lig = _expand(word, vocab)
        if lig is not None:
            fills[todo[0]] = lig
    if not fills:
        return text, 0
    pieces, last = [], 0
    for pos in sorted(fills):
        pieces.append(text[last:pos])
        pieces.append(fills[pos])
        last = pos + 1
    pieces.append(text[last:])
    return "".join(pieces), len(fills)


#: A word PDFium split after an ``f``: the font maps the ff/fi/fl/ffi/ffl ligature glyph to a plain
#: "f" and PDFium adds a space for the rest of the glyph's width ("ef ects", "af ected", "of erings").
_SPLIT_AFTER_F = re.compile(r"\b([A-Za-z]*f) ([a-z]+)\b")

#: What the lost letters after the "f" can be, for ff, fi, fl, ffi, ffl.
_LOST_AFTER_F = ("f", "i", "l", "fi", "fl")


def free_words(texts: list[str]) -> Counter[str]:
    """Lower-case words of ``texts`` that do not follow a word ending in "f" and one space: where a
    fragment such as "ects" occurs on its own, it is a word, not the rest of a split one."""
    counts: Counter[str] = Counter()
    for text in texts:
        for m in re.finditer(r"(?<![A-Za-z])([A-Za-z]+)", text):
            start = m.start()
            if start >= 2 and text[start - 1] == " " and text[start - 2] in "fF":
                continue
            counts[m.group(1).lower()] += 1
    return counts


def rejoin_split_ligatures(
    text: str, vocab: Counter[str] | None = None, free: Counter[str] | None = None
) -> tuple[str, int]:
    """Rejoin words PDFium split at a ligature the font maps to a lone "f" (the 2015 3M 10-K:
    "the ef ects of" for "the effects of").

    A ``<letters>f <letters>`` pair is rejoined when putting back the lost letters (one of
    :data:`_LOST_AFTER_F`) makes a word of ``vocab`` (the document's words, :func:`vocabulary`) or
    of :data:`COMMON_WORDS`, and the second part is neither a word of :data:`COMMON_WORDS` nor found
    on its own anywhere in the document (``free``, :func:`free_words`: "of set" stays when the
    document also says "the set"); several candidates: the most frequent in ``vocab``. Returns
    ``(text, rejoined)``, the count of words rejoined.
    """
    vocab = vocab or Counter()
    free = free or Counter()
    count = 0

    def fix(m: re.Match[str]) -> str:
        nonlocal count
        left, right = m.group(1), m.group(2)
        if right in COMMON_WORDS or free.get(right, 0):
            return m.group(0)
        best, best_score = None, 0
        for lost in _LOST_AFTER_F:
            word = (left + lost + right).lower()
            score = vocab.get(word, 0) * 2 + (1 if word in COMMON_WORDS else 0)
            if score > best_score:
                best, best_score = left + lost + right, score
        if best is None:
            return m.group(0)
        count += 1
        return best

    return _SPLIT_AFTER_F.sub(fix, text), count
