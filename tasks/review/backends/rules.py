"""Deterministic, offline review backend: regex clause patterns and value extractors.

:class:`RulesBackend` splits a chunk into sentences, runs per-category patterns written from
the CUAD v1 category definitions (``labels/CUAD_v1_README.txt``, "CATEGORY LIST") and general
legal drafting conventions, and emits at most one :class:`~schemas.findings.Finding` per
(category, sentence). It makes no network calls, so ``calls`` is always empty.

Guarantees (relied on by the fact-checker):

- ``evidence`` is an exact substring of ``chunk.text`` (same whitespace), at most
  :data:`MAX_EVIDENCE_CHARS` characters, cut at word boundaries;
- every ``FindingValue.value`` is an exact substring of its finding's ``evidence`` (a party's name, which a line
  break of the layout may split, once the evidence's whitespace is collapsed as :class:`FindingValue` collapses
  its own);
- ``page`` is ``chunk.page_at(offset of the evidence in chunk.text)``.
"""

from __future__ import annotations

import bisect
import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from schemas.documents import Chunk
from schemas.findings import Finding, FindingValue, Risk
from schemas.review import ChunkReview
from schemas.taxonomy import HIGH_RISK, ClauseType, label
from tasks.review.backends.filing_rules import FilingRules
from tasks.review.route import UNIT_SEPARATOR

#: Version of the rule set; part of the review idempotency key. Bump when patterns change meaning.
RULES_VERSION = "rules-v8"

#: Longest evidence quote emitted (characters).
MAX_EVIDENCE_CHARS = 600

#: Characters from the start of a document's first chunk searched for title/parties/date.
PREAMBLE_CHARS = 3000

_I = re.IGNORECASE
_S = re.DOTALL

# --------------------------------------------------------------------------------------------
# Sentence splitting
# --------------------------------------------------------------------------------------------

_ABBREV = frozenset(
    [
        "inc",
        "co",
        "corp",
        "ltd",
        "llc",
        "l.l.c",
        "l.p",
        "lp",
        "n.a",
        "no",
        "nos",
        "sec",
        "secs",
        "sect",
        "art",
        "arts",
        "u.s",
        "u.s.a",
        "e.g",
        "i.e",
        "etc",
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "vs",
        "v",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "p.c",
        "s.a",
        "b.v",
        "n.v",
        "para",
        "paras",
        "cl",
        "ch",
        "fig",
        "approx",
        "dept",
        "est",
        "int'l",
        "govt",
        "jr",
        "sr",
        "ave",
        "blvd",
        "rd",
        "ste",
        "bros",
        "assoc",
        "pty",
        "plc",
        "gmbh",
        "ag",
        "s.p.a",
        "s.r.l",
        "a.g",
        "k.k",
        "c.v",
        "de",
        "s.a.b",
        "viz",
        "cf",
        "ex",
        "exh",
    ]
)

# Hard paragraph breaks: a blank line, or a run of 3+ spaces/tabs before a capital/number
# (CUAD TXT files often use space runs where the PDF had paragraph breaks).
_PARA_RE = re.compile(r"\n[ \t]*\n\s*|[ \t]{3,}(?=[\"“(\[]?[A-Z0-9])")
# Sentence end: . ! ? (optionally followed by a closing quote/paren) then whitespace then a
# capital, digit or opening bracket/quote.
_SENT_RE = re.compile(r"(?<=[.!?])[\"'”’)\]]?\s+(?=[\"“'‘(\[]?[A-Z0-9])")
# Glued PDF artefact: "the Agreement.The Company" (word of 2+ lowercase letters, period, Capital).
_GLUE_RE = re.compile(r"(?<=[a-z]{2}[.;])(?=[A-Z][a-z])")
# A line break followed by a numbered heading or a lettered item: "\n12.3 Term" / "\n(b) ".
_HEAD_RE = re.compile(r"\n[ \t]*(?=(?:\d{1,2}(?:\.\d{1,2})*\.?|ARTICLE|Article|Section|SECTION)\s+[A-Z(\"“])")
# Enumerated items in long semicolon lists: "; (b) ..." / "; and (iii) ...".
_ENUM_RE = re.compile(r"(?<=;)\s+(?=(?:and\s+|or\s+)?\(?(?:[a-z]|[ivx]{1,4}|\d{1,2})\)\s)")
_WORD_BEFORE_DOT = re.compile(r"([A-Za-z][A-Za-z.']*)\.[\"'”’)\]]?\s*$")

_LONG_SENTENCE = 900

#: Month names and abbreviations (English, the stdlib's C locale): a period after one, before a day and a
#: year, is no sentence end ("December. 31, 1998": an OCR speck read as a period, or "Dec. 31, 1998").
_MONTH_WORDS = {m.lower() for m in (*calendar.month_name[1:], *calendar.month_abbr[1:])} | {"sept"}
_DAY_AND_YEAR = re.compile(r"\d{1,2}(?:st|nd|rd|th)?\s*,?\s+\d{4}\b")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Split ``text`` into sentence-like spans.

    Returns a sorted list of ``(start, end)`` character offsets into ``text`` (end exclusive),
    each stripped of surrounding whitespace, non-empty, non-overlapping. Splits on blank lines,
    runs of 3+ spaces before a capital, sentence punctuation followed by a capital (not after
    common abbreviations such as ``Inc.`` or ``U.S.``, nor after a month before its day and year:
    ``"December. 31, 1998"``), glued ``word.Word`` PDF artefacts,
    line breaks before numbered headings, and, in sentences longer than 900 characters,
    semicolons that introduce enumerated items (``; (b)``). Bare section numbers (``"1."``) are
    merged into the following span. Never raises.
    """
    cuts: set[int] = {0, len(text)}
    for m in _PARA_RE.finditer(text):
        cuts.add(m.start())
        cuts.add(m.end())
    for m in _HEAD_RE.finditer(text):
        cuts.add(m.start())
    for m in _GLUE_RE.finditer(text):
        cuts.add(m.start())
    for m in _SENT_RE.finditer(text):
        before = text[max(0, m.start() - 40) : m.start()]
        w = _WORD_BEFORE_DOT.search(before)
        if w:
            word = w.group(1).lower()
            if word in _ABBREV or (len(word) == 1 and word.isalpha()):
                continue
            if word in _MONTH_WORDS and _DAY_AND_YEAR.match(text, m.end()):
                continue
        cuts.add(m.start())
    points = sorted(cuts)
    spans: list[tuple[int, int]] = []
    for a, b in zip(points, points[1:]):
        # strip whitespace
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            spans.append((a, b))
    # break very long spans at enumerated semicolons
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if b - a > _LONG_SENTENCE:
            prev = a
            for m in _ENUM_RE.finditer(text, a, b):
                if m.start() > prev:
                    out.append((prev, m.start()))
                prev = m.end()
            out.append((prev, b))
        else:
            out.append((a, b))
    # merge bare numbers / tiny fragments ("1.", "(a)") into the next span
    merged: list[tuple[int, int]] = []
    carry: int | None = None
    for a, b in out:
        if carry is not None:
            a = carry
            carry = None
        if (b - a <= 6 and not any(c.isalpha() for c in text[a:b].strip("()")[:3])) or re.fullmatch(
            r"\(?[a-zA-Z0-9]{1,4}[.)]", text[a:b]
        ):
            carry = a
            continue
        merged.append((a, b))
    if carry is not None:
        if merged:
            merged[-1] = (merged[-1][0], len(text.rstrip()))
        elif carry < len(text.rstrip()):
            merged.append((carry, len(text.rstrip())))
    return merged


# --------------------------------------------------------------------------------------------
# Value patterns
# --------------------------------------------------------------------------------------------

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan\.?|Feb\.?|Mar\.?|Apr\.?|Jun\.?|Jul\.?|Aug\.?|Sept?\.?|Oct\.?|Nov\.?|Dec\.?)"
)
_BLANK = r"(?:_+|\[[^\]\n]{0,12}\]|\*+|x+|__)"
_DAY = rf"(?:(?<!\d)\d{{1,2}}(?:st|nd|rd|th)?|{_BLANK})"
_YEAR = r"(?:19|20)\d{2}"
DATE_RE = re.compile(
    rf"(?:(?:the\s+)?{_DAY}\s+day\s+of\s+(?:{_MONTH}|{_BLANK}),?\s+(?:in\s+the\s+year\s+)?{_YEAR}"
    rf"|{_MONTH}\s+{_DAY},?\s+{_YEAR}"
    rf"|{_DAY}\s+{_MONTH},?\s+{_YEAR}"
    rf"|\b{_MONTH}\s*,?\s+{_YEAR}"
    rf"|\b\d{{1,2}}/\d{{1,2}}/(?:\d{{4}}|\d{{2}})\b"
    rf"|\b\d{{4}}-\d{{2}}-\d{{2}}\b)"
)
"""A written date: ``March 1, 2020``, ``the 1st day of March, 2020``, ``1 March 2020``,
``March 2020``, ``1/3/2020``, ``2020-03-01``; blanks (``___ day of ____, 2004``) allowed."""

_NUMW = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|forty-five|fifty|sixty|"
    r"seventy|eighty|ninety|hundred|one hundred|one hundred and eighty|one hundred eighty|"
    r"one hundred twenty|twenty-four|thirty-six|a|an)"
)
DURATION_RE = re.compile(
    rf"\b(?:(?:successive|additional|consecutive|further)\s+)?"
    rf"(?:{_NUMW}(?:(?<!\ba)(?<!\ban)[\s-]+{_NUMW})?\s*(?:\(\s*\d+\s*\)\s*)?|\d+\s*(?:\(\s*\w+\s*\)\s*)?)"
    rf"-?(?:calendar\s+|business\s+|working\s+|full\s+)?(?:day|month|year|week)s?\b(?!\s+of\s+age)",
    _I,
)
"""A duration: ``ninety (90) days``, ``one (1) year``, ``12 months``, ``successive 12 month``,
``five (5)-year``, ``two-year``."""

AMOUNT_RE = re.compile(
    r"(?:(?:US|U\.S\.|USD|CAD|C|A|HK|RMB|EUR|€|£|¥)\s?)?[$€£¥]\s?\d[\d,.]*(?:\s*(?:(?i:million|billion|thousand)|[MK]\b))?"
    r"|\b(?:USD|EUR|GBP|RMB|US\s?Dollars?)\s?\d[\d,.]*(?:\s*(?i:million|billion|thousand))?"
    r"|\b\d[\d,.]*\s*(?:million\s+|billion\s+)?(?:U\.S\.\s+|US\s+)?[Dd]ollars\b",
)
"""A money amount: ``$1,000,000``, ``US$ 5 million``, ``USD 100``, ``5,000 dollars``."""

PERCENT_RE = re.compile(
    r"\b\d{1,3}(?:\.\d+)?\s*(?:%|percent\b|per\s+cent\b)|\b(?:[a-z]+[\s-])?(?:percent|per\s+cent)\s*\(\s*\d{1,3}(?:\.\d+)?\s*%\s*\)",
    _I,
)
"""A percentage: ``10%``, ``ten percent (10%)``, ``2.5 percent``."""

_JUR_WORD = r"(?:[A-Z][A-Za-z'’.\-]+)"
JURISDICTION_RE = re.compile(
    r"\blaws?\s+(?:in\s+force\s+in\s+|prevailing\s+in\s+|of\s+|in\s+)(?:the\s+)?"
    r"(?:(?:State|Commonwealth|Province|Republic|Kingdom|Government|Federal\s+Republic|People['’]s\s+Republic|Hong\s+Kong\s+Special\s+Administrative\s+Region)\s+of\s+(?:the\s+)?)?"
    rf"(?P<j>{_JUR_WORD}(?:\s+(?:of\s+|and\s+)?{_JUR_WORD}){{0,3}})"
    r"|(?P<j2>\b(?:Delaware|New\s+York|California|Texas|Nevada|Florida|Massachusetts|Illinois|English|Swiss|German|Ontario|"
    r"Washington|Georgia|Colorado|Virginia|Pennsylvania|New\s+Jersey|Minnesota|Ohio|Michigan|Utah|Arizona|Maryland|"
    r"North\s+Carolina|Connecticut|Indiana|Missouri|Tennessee|Wisconsin|Oregon))\s+law\b"
)
_JUR_STOP = re.compile(
    r"^(?:This|Such|Any|All|Agreement|Applicable|Law|Laws|United$|Party|Parties|Licensor|Licensee|Company|"
    r"Section|Article|Sections?|Exhibit|Schedule|Intellectual|Each|Which|Its|Their|The)\b"
)
_JUR_TAIL = re.compile(r"(?:\s+(?:and|of))+$|[.,'’]+$")


def _clip(values: list[FindingValue], evidence: str) -> list[FindingValue]:
    """Keep only values that occur verbatim in ``evidence`` (a party's name also across a line break of the
    layout, "Orchard Retail Group\nLLC", which :class:`FindingValue` reads as one line); drop empty and
    duplicate ones."""
    out, seen = [], set()
    flat = " ".join(evidence.split())
    for v in values:
        val = v.value.strip()
        if val and (val in evidence or (v.name == "party" and val in flat)) and (v.name, val) not in seen:
            seen.add((v.name, val))
            out.append(FindingValue(name=v.name, value=val))
    return out


def extract_dates(text: str) -> list[str]:
    """All dates in ``text`` (see :data:`DATE_RE`), verbatim, in order of appearance."""
    return [m.group(0).strip() for m in DATE_RE.finditer(text)]


def extract_durations(text: str) -> list[str]:
    """All durations in ``text`` (see :data:`DURATION_RE`), verbatim; articles alone ("a day") skipped."""
    out = []
    for m in DURATION_RE.finditer(text):
        s = m.group(0).strip()
        if re.fullmatch(r"(?:an?|the)\s+\w+", s, _I):
            continue
        out.append(s)
    return out


def extract_amounts(text: str) -> list[str]:
    """All money amounts in ``text`` (see :data:`AMOUNT_RE`), verbatim, trailing punctuation cut."""
    return [m.group(0).rstrip(".,") for m in AMOUNT_RE.finditer(text) if any(c.isdigit() for c in m.group(0))]


def extract_percentages(text: str) -> list[str]:
    """All percentages in ``text`` (see :data:`PERCENT_RE`), verbatim."""
    return [m.group(0).strip() for m in PERCENT_RE.finditer(text)]


def extract_jurisdictions(text: str) -> list[str]:
    """Jurisdictions named as governing law in ``text``, e.g. ``["Delaware"]``, ``["England and Wales"]``.

    Looks for ``laws of [the State of] X`` and ``X law``; X is 1-4 capitalised words (joined by
    ``of``/``and``). Returns verbatim substrings of ``text``.
    """
    out = []
    for m in JURISDICTION_RE.finditer(text):
        j = m.group("j") or m.group("j2")
        if not j:
            continue
        j = _JUR_TAIL.sub("", j)
        j = re.split(r"\s+(?:without|excluding|applicable|and\s+the\s+|as\s+)", j)[0]
        j = _JUR_TAIL.sub("", j)
        if not j or (
            _JUR_STOP.match(j) and j not in ("United States", "United Kingdom") and not j.startswith("United ")
        ):
            continue
        out.append(j)
    return out


_ENTITY_SUFFIX = (
    r"(?:Inc|Incorporated|LLC|L\.L\.C|Ltd|Limited|Corp|Corporation|Co|Company|L\.P|LP|LLP|N\.A|S\.A|plc|PLC|"
    r"GmbH|AG|B\.V|N\.V|S\.A\.S|S\.p\.A|Pty|SE|P\.C)\.?"
)
#: Where one party ends and the next begins in a preamble: "and" (also "- and -", "AND" on a line of its own, after
#: a closing quote or bracket), or a comma or semicolon after a party's defined term ("... (the "Company"), Blue
#: River LP ...": a list of parties "by and among").
_PARTY_SPLIT = re.compile(
    r"[)”\"]?\s*,?\s*(?:;\s*)?[-–—]*\s*\b(?:and|AND|And)\b\s*[-–—]*\s*(?::\s*)?(?=[\"“(]?[A-Z0-9])"
    r"|(?<=[)”\"])\s*[,;]\s*(?=[\"“]?[A-Z0-9])"
)
_PARTY_NAME = re.compile(
    rf"[\"“]?(?P<n>[A-Z0-9][^,(\n\"“”]*?(?:\n{_ENTITY_SUFFIX}|,\s*{_ENTITY_SUFFIX})?)(?=\s*(?:,|\(|\[|\"|“|$|\n|\s+a\s+|\s+an\s+|\s+having\s|\s+with\s|\s+located\s|\s+whose\s|\s+organized\s|\s+incorporated\s|\s+hereinafter\b))"
)
_PREAMBLE_RE = re.compile(r"\b(?:by\s+and\s+between|by\s+and\s+among|between|among)\b\s*:?\s*", _I)
#: The lines of a preamble block that are no party's name: "OF THE FIRST PART", "PARTY OF THE SECOND PART".
_PART_LINE = re.compile(r"(?im)^[ \t]*(?:\(?(?:the\s+)?party\s+)?of\s+the\s+\w+\s+part\)?[ \t.;,]*$")


def extract_parties(sentence: str) -> list[str]:
    """Party names from a preamble (``... by and between X, a ... ("A") and Y ("B")``; ``by and among X, a
    Delaware corporation (the "Company"), Y ("Y") and Z ("Z")``; a block ``BETWEEN: / X, / a corporation … /
    OF THE FIRST PART / - and - / Y, …``).

    Returns up to 6 verbatim names (substrings of ``sentence``; a name broken before its entity suffix,
    ``"Orchard Retail Group\nLLC"``, keeps its line break), in order; empty when the sentence has no
    ``between``/``among`` clause.
    """
    m = _PREAMBLE_RE.search(sentence)
    if not m:
        return []
    rest = sentence[m.end() :]
    stop = re.search(
        r"\b(?:WITNESSETH|RECITALS|W\s?I\s?T\s?N\s?E\s?S\s?S|WHEREAS|NOW,?\s+THEREFORE)\b"
        r"|(?<![\s(][A-Z])\.\s(?![ \t]*(?:\n|[a-z(]))",  # a sentence's end, not an initial's ("Gregory P. Smith")
        rest,
    )
    if stop:
        rest = rest[: stop.start()]
    rest = _PART_LINE.sub("", rest)
    names = []
    for piece in _PARTY_SPLIT.split(rest)[:6]:
        piece = piece.strip(' ,;:\t\n"“”-–—')
        pm = _PARTY_NAME.match(piece)
        if not pm:
            continue
        name = pm.group("n").strip(" ,.")
        if re.search(_ENTITY_SUFFIX + r"$", pm.group("n").strip()) and pm.group("n").strip().endswith("."):
            name = pm.group("n").strip()
        if (
            2 <= len(name) <= 120
            and len(name.split()) <= 12
            and not re.match(r"(?:the|this|each|its)\b|\d+\s", name, _I)  # nor a street address
            and not re.search(r"\bon\s+the\s+(?:one|other)\s+hand\b", name, _I)
        ):
            names.append(name)
    return names


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------


def _rx(pattern: str, flags: int = _I) -> re.Pattern[str]:
    """Compile ``pattern`` with every literal space meaning "any whitespace run"."""
    return re.compile(pattern.replace(" ", r"\s+"), flags)


@dataclass(frozen=True)
class Rule:
    """One pattern for one category.

    ``keys`` are lower-case literal stems found with ``str.find`` over the lower-cased chunk
    (fast prefilter). Each sentence holding a key is accepted if ``pattern`` (when given)
    matches it, every ``require`` pattern matches it and no ``exclude`` pattern does. ``doc_level`` rules only run on a document's
    first chunk (``index == 0`` or ``page_start == 1``) and, with ``head_chars``, only over that
    many leading characters of the chunk.
    """

    category: ClauseType
    keys: tuple[str, ...]
    pattern: re.Pattern[str] | None = None
    require: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    doc_level: bool = False
    head_chars: int | None = None


def R(
    category: ClauseType,
    key: str,
    pattern: str | None = None,
    require: tuple[str, ...] | str = (),
    exclude: tuple[str, ...] | str = (),
    doc_level: bool = False,
    head_chars: int | None = None,
) -> Rule:
    """Build a :class:`Rule`: ``key`` is ``"stem|stem|..."`` (literal, lower-case); the other
    patterns are regex strings in which spaces mean ``\\s+`` (case-insensitive)."""
    if isinstance(require, str):
        require = (require,)
    if isinstance(exclude, str):
        exclude = (exclude,)
    return Rule(
        category,
        tuple(key.split("|")),
        _rx(pattern) if pattern else None,
        tuple(_rx(p) for p in require),
        tuple(_rx(p) for p in exclude),
        doc_level,
        head_chars,
    )


C = ClauseType
# Dispute-resolution, settlement and insolvency language that mentions "validity", "claims" or
# "covenant not to sue" without restricting a challenge to the counterparty's rights.
_CNS_NOT = (
    r"arbitrat|disputes? (?:arising|regarding|relating|as to|concerning)|existence, validity|validity,? (?:interpretation|"
    r"construction|performance|breach|or termination)|settlements?|bankruptcy|insolvency|objection|jurisdiction|venue|"
    r"notify|notice of any|severab|void or unenforceable|invalid or unenforceable|unenforceab",
)
# How a term ends: a date, a length in years/months, or an anniversary / last-to-expire event.
_TERM_END = (
    DATE_RE.pattern + r"|(?:\w+ )?\(?\d+\)?[ -](?:full )?(?:calendar )?(?:years?|months?)\b|"
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty)[ -](?:\(\d+\) )?(?:years?|months?)\b|"
    r"(?:\w+ )?(?:\(\w+\) )?anniversary|last (?:date of )?(?:to )?expir"
)
# A written date or a blank one ("____, 2019", "the __ day of ____").
_DATE_OR_BLANK = (
    DATE_RE.pattern + r"|_{3,}[^.;]{0,20}(?:19|20)\d\d|day of\s*_{2,}|\b\d{1,2}[-.]\d{1,2}[-.](?:19|20)?\d\d\b"
)
# "Effective" about something other than the agreement itself (a notice, a termination, a price change).
_NOT_THE_AGREEMENT_EFFECTIVE = (
    r"effective (?:date )?of (?:any|such|the|each|an?) (?:\w+ )?(?:change|termination|notice|amendment|assignment|price|increase|decrease|"
    r"expiration|expiry|cancell?ation|resignation|transfer|revocation|adjustment|purchase order|order)|"
    r"(?<!this\s)(?<!This\s)(?:notices?|termination|assignment|revocation|resignation|cancell?ation|waiver|change|increase|amendment|order)s? "
    r"(?:\w+ ){0,6}(?:shall|will) (?:be|become) (?:deemed )?effective|deemed (?:to be )?effective|"
    r"(?:prior to|before|after|following|since|from and after|existing on|in effect (?:as of|on)) the (?:\w+ )?Effective Date|"
    r"(?:insurance polic(?:y|ies)|registration statement|prospectus)"
)
_NEG = r"(?:shall|will|may|must|agrees? to|agrees? that it will|covenants? (?:and agrees? )?that it (?:shall|will))? ?(?:not|never|neither)\b"
_LIC = r"licen[cs]"

RULES: tuple[Rule, ...] = (
    # ---- Group 1: dates and term ------------------------------------------------------------
    # The date the agreement takes effect: an effectiveness cue next to a written (or blank) date ...
    R(
        C.effective_date,
        "effective|commenc|effect",
        r"effective (?:as of|on|from|upon|date|this|for all purposes)|Effective Date|(?:become|becomes|be|is|made|and) effective|"
        r"(?:commenc|begin)\w* (?:on|as of|from)|(?:term|period) (?:commencing|beginning)|Commencement Date|enter(?:s)? into (?:force|effect)",
        require=(_DATE_OR_BLANK,),
        exclude=(_NOT_THE_AGREEMENT_EFFECTIVE,),
    ),
    # ... or a sentence fixing when this agreement takes effect without writing the date.
    R(
        C.effective_date,
        "effective|commenc|effect|force",
        r"(?:this|the) (?:Agreement|Contract|Amendment|agreement|contract)[^.;]{0,60}(?:shall|will|is|becomes?) (?:become |be |come )?"
        r"(?:effective|in (?:full )?(?:force|effect)|commence|enter into (?:force|effect)|take effect)[^.;]{0,40}(?:on|upon|as of|from|when)|"
        r"(?:executed|entered into) and (?:shall be )?effective (?:as of|on)|shall be effective simultaneously|effective term is|"
        r"Effective Date[^.;]{0,40}(?:shall be|means|is|shall mean) (?:the )?(?:later|earlier|date|day)|"
        r"(?:commences?|begins?|effective) (?:up)?on (?:the )?(?:execution|signing|date (?:of (?:execution|signing)|first|on which|this))",
        exclude=(_NOT_THE_AGREEMENT_EFFECTIVE,),
    ),
    R(
        C.expiration_date,
        "continu|remain|expir|end|terminat",
        r"(?:term of this Agreement|this Agreement|Initial Term|term)\b[^.;]{0,120}?(?:shall|will) (?:continue|remain|expire|end|terminate)"
        r"[^.;]{0,80}?(?:until|through|for a (?:period|term)|for (?:an? )?(?:initial )?(?:period|term) of|on|thereafter for)",
        exclude=(r"^[^.]{0,40}(?:following|after|upon) (?:the )?(?:termination|expiration)",),
    ),
    R(
        C.expiration_date,
        "term",
        r"\bterm\b[^.;]{0,80}(?:shall|will) be (?:for )?(?:an? )?(?:initial )?(?:period|term)? ?(?:of )?(?:\w+ )?\(?\d+\)? (?:years?|months?)|"
        r"\bterm\b[^.;]{0,80}(?:shall|will) be (?:for )?(?:an? )?(?:initial )?(?:period|term)? ?(?:of )?(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty) (?:years?|months?)",
        exclude=(_LIC, r"^[^.]{0,40}(?:following|after|upon) (?:the )?(?:termination|expiration)"),
    ),
    R(
        C.expiration_date,
        "expir|initial|term|perpetu",
        r"(?:shall|will) expire (?:on|at)|Expiration Date|initial term (?:of|shall be)|"
        r"term of (?:this Agreement )?(?:shall be )?(?:\w+ )?\(?\d+\)? (?:years|months)|\bperpetual\b|in perpetuity",
        exclude=(_LIC,),
    ),
    # The term stated as an end date, a length in years/months or an anniversary: "The term of this
    # Agreement shall be five (5) years", "shall continue until April 30, 2029", "from May 1 to April 30".
    R(
        C.expiration_date,
        "term|duration|until|expir",
        r"\b(?:term|duration)\b[^;]{0,160}?(?:\buntil|\bthrough|\bto|\bending|\bends?|\bexpir\w*|\bterminat\w*|\bbe|\bis|\bof|\bfor|\bextend)"
        r"(?: on| at| a period of| for)? (?:the )?(?:" + _TERM_END + r")",
        exclude=(
            r"notice|warrant|insurance|confidential|non-?compet|restricted period|surviv|payment|royalt|\blicen[cs]e term|"
            r"^[^.]{0,40}(?:following|after|upon) (?:the )?(?:termination|expiration)",
        ),
    ),
    R(
        C.renewal_term,
        "renew|extend|extension|successive|evergreen|year to year|year-to-year|month-to-month|month to month|thereafter|automatically",
        r"(?:automatically|shall be|will be|may be) (?:renewed|extended)|auto(?:matic|-)renew|"
        r"renew(?:ed|al|s)? (?:automatically )?(?:for|thereafter for) (?:an? )?(?:successive|additional|further|subsequent|consecutive)|"
        r"(?:successive|additional|consecutive|further) (?:\w+ )?(?:\(\d+\) )?(?:-?year|-?month|renewal) (?:periods?|terms?)|"
        r"(?:successive|additional|consecutive|further) (?:\w+|\(\d+\)|\w+ \(\d+\))-(?:year|month) (?:periods?|terms?)|"
        r"\bRenewal Term\b|option to (?:renew|extend)|\bevergreen\b|year[- ]to[- ]year|month[- ]to[- ]month|"
        r"(?:thereafter|automatically) (?:continue|remain in (?:full )?(?:force|effect))[^.;]{0,80}(?:until|unless|for)",
        # renewal by a fresh mutual agreement is not a renewal term (CUAD: automatic or unilateral extensions)
        exclude=(
            r"insur|polic(?:y|ies)|mutual(?:ly)? (?:written )?(?:agree|consent)|mutual (?:written )?agreement|common agreement|unanimous|"
            r"as (?:are |may be )?(?:mutually )?agreed|force majeure|sub-?licens|\boffering\b|extended to (?:contractors|affiliates|subsidiaries|any)|"
            r"schedule for performance|by (?:written )?agreement of (?:the|both|all)",
        ),
    ),
    # Self-executing renewal worded with the adverb first or after the verb: "shall automatically renew
    # for a period of three (3) years", "will automatically be renewed for periods of", "renew
    # automatically each year", or an evergreen continuation after the initial term.
    R(
        C.renewal_term,
        "automatic|renewable|thereafter",
        r"automatically (?:be )?(?:renew|extend)\w*|(?:renew|extend)\w* automatically|\brenewable (?:\w+[- ])?(?:year|month|term|period)|"
        r"(?:continue|remain) in (?:full )?(?:force and )?effect thereafter (?:until|unless|for)",
        exclude=(r"insur|polic(?:y|ies)|sub-?licens|\boffering\b",),
    ),
    R(
        C.notice_period_to_terminate_renewal,
        "renew|extend|extension",
        r"(?:not to renew|non-renewal|nonrenewal|intent(?:ion)? (?:not )?to (?:renew|terminate)|prevent (?:such )?renewal|elects? not to (?:renew|extend))",
        require=(
            r"\d+\)? (?:days|months)|(?:thirty|sixty|ninety|days|months)|\b(?:one|two|three|six) (?:\(\d+\) )?(?:month|week)s?\b",
        ),
        exclude=(r"insur|polic(?:y|ies)|certificate",),
    ),
    R(
        C.notice_period_to_terminate_renewal,
        "unless|until terminated",
        r"unless[^.;]{0,120}notice[^.;]{0,150}(?:prior to|before|in advance of|preceding) (?:the )?(?:end|expiration|expiry|conclusion|termination|anniversary)|"
        r"(?:renew|continue|extend)\w*[^.]{0,200}(?:until|unless) (?:terminated|cancell?ed) by (?:either|any|one|a) (?:party|of the parties)[^.]{0,120}notice",
        require=(r"\d+\)? ?-? ?(?:calendar )?(?:days|months)|(?:thirty|sixty|ninety) days",),
        exclude=(r"insur|polic(?:y|ies)",),
    ),
    R(
        C.notice_period_to_terminate_renewal,
        "renew|extend",
        r"(?:automatically|shall be|will be) (?:renewed|extended)|renew(?:ed|al)? for (?:an? )?(?:successive|additional)",
        require=(
            r"unless (?:either|a|one|any|the) [^.]{0,80}noti(?:ce|f)|noti(?:ce|fication) [^.]{0,80}(?:prior to|before) the (?:end|expiration|expiry)",
            r"\d+\)? (?:calendar )?(?:days|months)|(?:thirty|sixty|ninety) days",
        ),
    ),
    # A right to end the agreement at the end of the term or a renewal term on notice: "may be
    # terminated by either party at the expiration of its term or any renewal term upon thirty (30) days notice".
    R(
        C.notice_period_to_terminate_renewal,
        "terminat|cancel",
        r"(?:terminat|cancel)\w*[^.;]{0,80}(?:at|as of|on|effective) the (?:end|expiration|expiry) of (?:the|its|any|each|this|such) "
        r"(?:then[- ]current |initial |relevant |applicable )?(?:term|renewal term|Initial Term|Renewal Term|contract year)[^.;]{0,80}"
        r"(?:upon|by giving|with|on|by providing|by delivering)[^.;]{0,40}notice|"
        r"(?:upon|by giving|with|on)[^.;]{0,40}notice[^.;]{0,40}(?:terminat|cancel)\w*[^.;]{0,40}(?:at|as of|on|effective) the (?:end|expiration|expiry) of (?:the|its|any|each|this|such) (?:then[- ]current |initial )?(?:term|Initial Term|renewal term)",
        require=(r"\d+\)?\s?-?\s?(?:calendar )?(?:days|months)|(?:thirty|sixty|ninety) days|\[\*+\]",),
        exclude=(r"insur|polic(?:y|ies)|breach|default|insolven|bankrupt",),
    ),
    # A notice deadline counted back from the end of the (renewal) term, in a renewal context.
    R(
        C.notice_period_to_terminate_renewal,
        "prior to|before|in advance|preceding",
        r"(?:days|months)['’]?\)?(?: prior)?(?: written)? notice[^.;]{0,120}(?:prior to|before|in advance of|preceding) (?:the )?"
        r"(?:end|expiration|expiry|conclusion|anniversary|renewal)|"
        r"(?:at least|not less than|no less than|no later than|within) [^.;]{0,40}(?:days|months)\)? (?:prior to|before|in advance of|preceding) "
        r"(?:the )?(?:end|expiration|expiry|conclusion|anniversary|renewal|expiry)",
        require=(r"renew|extend|extension|(?:then[- ]current|initial|such) (?:term|period)|successive",),
        exclude=(r"insur|polic(?:y|ies)|price|forecast|purchase order|shipment",),
    ),
    # ---- governing law -----------------------------------------------------------------------
    R(
        C.governing_law,
        "govern|constru|interpret|enforced",
        r"governed (?:\w+ ){0,4}by|governing law|govern(?:s|ed)? (?:this|the) (?:Agreement|Contract)|"
        r"(?:constru|interpret|enforc)\w*[^.;]{0,40}(?:in accordance with|under|pursuant to|according to|by)|"
        r"shall (?:apply|govern|prevail)|subject to the (?:\w+ )?laws",
        require=(r"\blaws?\b",),
        exclude=(
            r"governed by the terms|governed by (?:this|such|the applicable) (?:Agreement|agreement|terms|Section|policy)$",
        ),
    ),
    # ---- Group 2: competition -----------------------------------------------------------------
    R(
        C.most_favored_nation,
        "favor|favour|lower|lowest|better|best|higher|greater",
        r"most favou?red|no less favou?rable (?:terms|prices?|than)|"
        r"(?:terms|prices?|pricing|rates?|royalt\w+) (?:that are )?(?:more|most) favou?rable|"
        r"(?:lower|lowest|better|best) (?:prices?|pricing|rates?|terms)[^.]{0,120}(?:any other|other|third part|similarly)|"
        r"no less favou?rabl[ey]|(?:higher|greater) (?:fees?|prices?|rates?) than[^.]{0,80}(?:other|any)",
        exclude=(r"economic benefit|laws?,? rules",),
    ),
    R(
        C.non_compete,
        "compet",
        r"non-?compet\w*|not to compete|shall not[^.;]{0,60}\bcompet\w+|"
        r"(?:engage|participate|invest|interest) in[^.;]{0,80}(?:competitive|competing|compete)|"
        r"(?:develop|market|sell|distribute|manufacture|promote|offer|carry|stock|display|represent|purchase|advertise)[^.;]{0,80}(?:competitive|competing) (?:products?|services?|business|goods|lines?)|"
        r"(?:develop|market|sell|distribute|manufacture|promote|offer|carry|display|link)[^.;]{0,80}competitors?['’]?s?['’]? (?:products?|services?|goods|content|sites?)",
        require=(r"\bnot\b|\bno\b|\bneither\b|\bnor\b|refrain|restrict|prohibit|non-?compet",),
        exclude=(
            r"competitive bid|compete fairly|competitive (?:price|pricing|rates?|terms)|anti-?competitive|not be construed to compete|"
            r"(?:not|nothing)[^.;]{0,60}(?:prevent|preclude|restrict|prohibit|limit)[^.;]{0,80}compet|competent",
        ),
    ),
    # Not dealing in products that compete with or resemble the counterparty's, in a business,
    # territory or period: "shall not sell ... any product which is competitive with the Products".
    R(
        C.non_compete,
        "compet|similar",
        r"(?:\bnot\b|\bneither\b|\bnor\b)[^.;]{0,150}\b(?:sell|market|promote|distribute|manufacture|develop|commerciali[sz]e|offer|carry|"
        r"procure|engage|represent|produce|license|advertise)\w*[^.;]{0,160}(?:competitive with|compet(?:e|es|ing)\b|competitors?['’]? (?:products|goods)|"
        r"(?:same as or|same or|substantially|confusingly) similar (?:to|with)|similar (?:products?|services?|platform|business))",
        exclude=(
            r"competitive (?:price|pricing|rates?|terms|bid)|anti-?competitive|(?:not|nothing)[^.;]{0,60}(?:prevent|preclude|restrict|prohibit|limit)|"
            r"confidential|trade ?marks?|\bmarks\b|trade (?:name|dress)|logo|infring",
        ),
    ),
    # A time-bound bar on a line of business: "Throughout the Term and for a period of six (6) months
    # after ..., neither X nor its affiliates shall ... sell, offer for sale, market or promote any ...".
    R(
        C.non_compete,
        "during|throughout|period",
        r"(?:during|throughout|for) (?:the (?:Term|term)|the (?:\w+ )?(?:year|month) period|a period of)[^.;]{0,250}?"
        r"(?:shall not|will not|agrees? not to|may not|shall refrain from)(?:,? directly or indirectly,?| \w+ly)? "
        r"(?:sell|offer|market|promote|develop|manufacture|distribute|supply|carry|engage in|conduct any|commercially offer|produce|commerciali[sz]e)\b",
        require=(r"products?|services?|business|work|technolog",),
        exclude=(
            r"confidential|disclos|solicit|employ|hire|personnel|trade ?marks?|\bmarks\b|logo|infring|price|assign|transfer|"
            r"shares|securities|stock\b|(?:not|nothing)[^.;]{0,60}(?:prevent|preclude|restrict|prohibit|limit)",
        ),
    ),
    R(
        C.exclusivity,
        "exclusiv|sole|requirements|appoint|authoriz",
        r"(?<!non-)(?<!non)\bexclusive (?:right|rights|license|licen[cs]e|distributor|distribution|basis|supplier|provider|"
        r"reseller|agent|representative|partner|manufacturer|sponsor|marketing|dealer|territory|arrangement|relationship|sales)|"
        r"exclusively (?:to|from|with|through|by)|sole (?:and exclusive )?(?:source|supplier|provider|distributor)|"
        r"(?:purchase|procure|obtain|buy) (?:all|100%|one hundred percent) of (?:its|their|the)[^.]{0,60}requirements|"
        r"shall not[^.;]{0,80}(?:appoint|grant|license|authorize)[^.;]{0,60}(?:any other|any third|other) (?:distributor|person|party|reseller|agent|licensee|supplier)",
        exclude=(
            r"exclusive (?:right|rights) (?:and|or) (?:remed|sole)|exclusive remed|sole and exclusive remed|non-exclusive right",
            # exclusive control of prosecution/defence, ownership, forum or governing law is not exclusive dealing
            r"exclusive right,? (?:but not the obligation,? )?to (?:prepare|file|prosecute|defend|settle|control|enforce|maintain|bring)|"
            r"exclusive rights? of ownership|(?:sole and )?exclusive (?:right, )?title|(?:owned|vest\w*|belong\w*) (?:solely and )?exclusively|"
            r"exclusively (?:by|to) the (?:\w+ )?(?:laws|courts?)|(?:governed|construed|submitted|resolved|settled|limited) (?:only and )?exclusively|"
            r"nothing[^.;]{0,60}(?:creat|constru)\w*[^.;]{0,30}exclusive|(?:not|no) (?:be )?(?:an? )?exclusive (?:arrangement|relationship|basis)",
        ),
    ),
    # Other exclusive-dealing forms: "an exclusive, worldwide, royalty-free license", "shall be
    # exclusive", "the exclusive ... agent", "sole agent", "the only distributor", "solely from",
    # "shall not enter into any agreement with any other provider", "not grant ... to anyone other than".
    R(
        C.exclusivity,
        "exclusiv|sole|only|other than",
        r"(?<!non-)(?<!non)(?<!non-\\s)(?<!non\\s)\bexclusive, (?:(?:[\w-]+|\([^)]{0,60}\)),? ){1,5}(?:right|rights|license|licen[cs]e|agent|provider|distributor|supplier|partner|sponsor)s?\b|"
        r"(?<!non-)(?<!non)(?<!non-\\s)(?<!non\\s)\bexclusive (?:\w+ )?(?:\w+ )?(?:\w+ )?(?:provider|agent|distributor|supplier|reseller|sponsor) (?:of|for|in)\b|"
        r"(?:shall|will) be exclusive (?:within|in|as to|for)\b|(?:is|are) exclusive (?:within|in|as to|for)\b|\bExclusivity (?:is|shall be) granted|"
        r"\bsole (?:agent|distributor|supplier|provider|licensee|representative|reseller)\b|the only (?:distributor|supplier|provider|licensee|reseller|agent)\b|"
        r"(?:procure|purchase|buy|obtain|source)\w* (?:the |all |its )?(?:\w+ )?(?:\w+ )?(?:solely|exclusively) from|"
        r"(?:not|never) (?:\w+ ){0,3}(?:enter into|grant)[^.;]{0,150}(?:to|with) (?:any(?:one)?|any other)[^.;]{0,80}other than",
        exclude=(
            r"remed|sole (?:discretion|option|judgment|cost|expense|responsibility|benefit|purpose)|exclusive (?:benefit|of)\b|taxes|"
            r"(?:not|no) (?:be |create |have )?(?:an? )?exclusive|non-? ?exclusive|exclusively (?:by|to) the (?:\w+ )?(?:laws|courts?)|"
            r"exclusive (?:jurisdiction|venue|forum|property|owner)|confidential|arbitrat",
        ),
    ),
    R(
        C.no_solicit_of_customers,
        "solicit|entice|induce|divert",
        r"(?:\bnot\b|\bno\b|\bneither\b|\bnor\b|refrain|non-?solicit)[^.]{0,160}(?<!un)(?:solicit|entice|induce|divert)\w*[^.]{0,160}(?:customers?|clients?|accounts|subscribers|franchisees|suppliers|business)",
        exclude=(r"employ|personnel|staff|unsolicited|solicitation of (?:subscriptions|proxies|offers)|inducement",),
    ),
    # Other ways of taking the counterparty's customers: contacting, circumventing, persuading them away.
    R(
        C.no_solicit_of_customers,
        "contact|circumvent|persuade|call on|call upon|interfere",
        r"(?:\bnot\b|\bneither\b|\bnor\b|refrain)[^.]{0,160}\b(?:contact|circumvent|persuade|call (?:on|upon)|interfere with)\w*[^.]{0,120}"
        r"(?:customers?|clients?|accounts|subscribers|Members|vend[oe]rs|relationships? (?:with|among))",
        exclude=(
            r"employ|personnel|staff|unsolicited|solicitation of (?:subscriptions|Subscribers|proxies|offers)|not aware|regulat|authorit|press|media",
        ),
    ),
    R(
        C.no_solicit_of_employees,
        "solicit|hire|employ|recruit|entice|induce",
        r"solicit|\bhire\b|\bemploy\b|recruit|entice|induce",
        require=(
            r"employees?|personnel|staff|employed by|individuals? (?:who|employed)|contractors? of|consultants? of",
            r"\bnot\b|\bno\b|\bneither\b|\bnor\b|refrain|non-?solicit",
        ),
        exclude=(
            r"employee benefit|harass|discriminat|workers'? comp|"
            # retaining counsel, debarment warranties, anti-bribery and work-for-hire language
            r"(?:employ|retain) (?:separate |its own |independent )?counsel|convicted|debarred|felony|public officials?|"
            r"work[- ]made[- ]for[- ]hire|of its (?:own )?choosing|agrees? to (?:employ|hire)|new employees",
        ),
    ),
    R(
        C.non_disparagement,
        "disparag|derogatory|negative|adverse|unfavo|disrepute|reputation|goodwill|critic",
        r"disparag\w*|derogatory (?:statements?|comments?|remarks?)|(?:negative|adverse|unfavou?rable|critical) (?:statements?|comments?|remarks?|publicity)|"
        r"into (?:public )?disrepute|(?:harm|damage|injur|impair|tarnish|detriment|prejudic|jeopardi[sz]e|adversely affect)\w*[^.;]{0,80}(?:reputation|goodwill|good name|image)",
        require=(
            r"\bnot\b|\bno\b|\bnever\b|\bnor\b|\bneither\b|refrain|avoid",
            r"disparag|derogatory|negative|unfavou?rable|critical|disrepute|statements?|remarks?|comments?|publicity|publicly|"
            r"make|say|publish|communicat|portray|reflect (?:adversely|poorly|unfavou?rably)",
        ),
        # a restriction on how licensed marks are used is a quality-control term, not a non-disparagement covenant
        exclude=(
            r"infring|obscene|virus|credit history|\buse (?:of )?(?:the |any |its |such )?(?:[\w'’]+ ){0,3}(?:Marks?|logos?|trade ?marks?|trade names?)|"
            r"display\w* (?:of )?(?:the |any )?(?:[\w'’]+ ){0,3}(?:Marks?|logos?|trade ?marks?)|remove any references|"
            r"(?:logos?|Marks|trade ?marks|trade names) (?:are|is|will be|shall be) (?:used|displayed)",
        ),
    ),
    # A carve-out: an exception cue and, in the same sentence, a competition restriction (compete,
    # exclusivity in the dealing sense, solicitation, or "the restrictions/covenants" themselves).
    R(
        C.competitive_restriction_exception,
        "compet|exclusiv|solicit|restrict|covenant",
        r"(?:shall not|will not|does not|do not) (?:be deemed to |be construed to |in any way )?(?:prevent|restrict|prohibit|preclude|limit|apply to|include|bar)|"
        r"nothing (?:in|contained in|herein|set forth in)[^.;]{0,100}(?:prevent|restrict|prohibit|preclude|limit|bar)|"
        r"\bexcept\b|other than|notwithstanding|provided,? however|excluding|but not (?:including|as to)|"
        r"(?:shall|will) (?:be permitted|be entitled|be free|have the right) to|(?:is|are) (?:permitted|free) to|reserves? (?:to itself )?the right|"
        r"passive (?:investment|investor|ownership)",
        require=(
            r"\bcompet(?:e|es|ing|ition|itive|itors?)\b(?! (?:price|pricing|rates?|bid|terms|market conditions))|"
            r"(?<!non-)(?<!non)\bexclusiv(?:e|ity)\b(?! (?:of|remed|jurisdiction|venue|forum|owner|legal|holder|nature|property|control|warranty|responsibility|means|authority|obligation|licensee of the|right to (?:control|defend)))|"
            r"(?<!un)\bsolicit(?!ation of (?:subscriptions|proxies|orders|offers|an offer))|(?:these|such|foregoing|the) (?:restrictions|restrictive covenants)|restriction(?:s)? (?:set forth|contained|in (?:this )?Section)",
        ),
        exclude=(
            r"\bsole and exclusive\b|exclusively (?:through|by) (?:binding )?arbitration|\bnot (?:be )?(?:an? )?exclusive|\bno exclusive|"
            r"(?:not|nothing)[^.;]{0,40}(?:grant|creat|constru)\w*[^.;]{0,40}(?:any )?exclusive|"
            r"^\W*(?:\d+(?:\.\d+)*\.?\s+)?[\"“][^\"”]{1,60}[\"”] (?:means|shall mean)|competent|exclusive of (?:taxes|VAT|interest)|"
            r"warrant|indemnif|confidential information|non-? ?exclusive|\bgrants?\b|employ|personnel|\bhire\b|"
            r"words (?:of any gender|importing)|singular|(?:cumulative|alternative) (?:and|or) (?:not )?exclusive|offer to (?:buy|sell)|financing|"
            r"solicitation of (?:Subscribers|consents|proxies|votes)|proxies|not aware|competitive with (?:gross|market)|Competitive Change of Control",
        ),
    ),
    # Carve-outs that name the permitted business activity instead of the restriction: reserved
    # rights to sell or operate, "nothing herein shall preclude X from granting / supplying / selling".
    R(
        C.competitive_restriction_exception,
        "reserve|prevent|preclude|restrict|prohibit|permitted",
        r"reserves? (?:to itself )?(?:all |the )?rights? (?:\w+ ){0,6}to (?:\w+ )?(?:market|sell|offer|distribute|develop|operate|own|open|franchise|"
        r"appoint|promote|manufacture|supply|provide|advertise|solicit)|"
        r"(?:nothing|shall not|does not|will not|do not)[^.;]{0,80}(?:prevent|preclude|restrict|prohibit|limit|bar) (?:\w+ ){0,6}from (?:\w+ ){0,3}"
        r"(?:granting|supplying|selling|marketing|offering|distributing|developing|manufacturing|promoting|operating|licensing|owning|"
        r"acquiring|investing|engaging|competing|providing|entering|using|utili[sz]ing|commerciali[sz]ing|making|soliciting|hiring|doing business)|"
        r"(?:shall|will) be (?:permitted|free|entitled) to (?:\w+ ){0,2}(?:evaluate|sell|market|offer|distribute|develop|manufacture|compete|engage)",
        exclude=(
            r"disclos|injunct|equitable|relief|confidential|seeking|comply|complying|applicable laws?|assert|enforc|arbitrat|"
            r"terminat|audit|inspect|publicity|press release|right not to|purchase orders?|shipments?",
        ),
    ),
    # ---- termination -------------------------------------------------------------------------
    R(
        C.termination_for_convenience,
        "terminat",
        r"terminat\w+[^.;]{0,120}(?:for (?:its |their )?convenience|without cause|for any reason|for no reason|with or without cause|"
        r"at (?:any time|its (?:sole )?(?:discretion|option))[^.;]{0,80}(?:notice|days)|for any or no reason|in its sole discretion)|"
        r"(?:for (?:its )?convenience|without cause)[^.;]{0,80}terminat",
        exclude=(
            r"without cause (?:of|to)|shall not terminate",
            # "upon termination for any reason ..." / "survive termination for any reason": not a right to terminate
            r"^(?![\s\S]*(?:for (?:its |their )?convenience|without cause|for no reason|for any or no reason))"
            r"(?![\s\S]*(?:may|shall have the (?:absolute )?right to|has the right to|is entitled to|right to|can|option to) (?:\w+ )?terminat)",
            r"^(?![\s\S]*(?:for (?:its |their )?convenience|without cause))[\s\S]*(?:\bif\b|in the event|should|in case|upon the occurrence|breach|insolven|bankrupt|contingenc)",
        ),
    ),
    R(
        C.termination_for_convenience,
        "terminat",
        r"(?:may|can|shall have the (?:absolute |unilateral )?right to|has the (?:absolute |unilateral )?right to|is entitled to|right to) (?:at any time )?(?:terminate|cancel)[^.;]{0,80}?"
        r"(?:upon|by giving|on|with|by providing|by delivering|after|by|within) (?:at least |no less than |not less than |a )?[^.;]{0,40}?"
        r"(?:days|months|\[\*+\])['’]?s?\)?(?: prior)?(?: written)?(?: notice| notice period)|"
        r"(?:may|can) (?:at any time )?(?:terminate|cancel) (?:this|the) (?:Agreement|Contract)[^.;]{0,40}(?:at any time|for any reason)",
        exclude=(
            r"breach|default|insolven|bankrupt|fail(?:s|ure)? to|cure|violat|\bif\b|in the event|should|in case|"
            r"upon the occurrence|contingenc|force majeure|\bunless\b|\bwhere\b",
        ),
    ),
    # Passive or open-ended forms: "may be terminated by either party upon ninety (90) days written
    # notice", "terminable ... upon sixty (60) days' notice", "until terminated by either Party upon
    # thirty (30) days' notice", "the right to terminate at any time upon no less than ... notice".
    R(
        C.termination_for_convenience,
        "terminat|cancel",
        r"(?:(?:may|can|shall) (?:also )?be (?:terminated|cancell?ed)|terminable|until (?:terminated|cancell?ed)) (?:at any time )?(?:by (?:either|any|each|one|a) (?:party|of the parties)|by \w+)?"
        r"[^.;]{0,30}?(?:upon|on|by giving|with|by providing|after) (?:at least |no less than |not less than |a )?[^.;]{0,30}?"
        r"(?:days|months|\[\*+\])['’]?s?\)?(?: prior| advance)?(?: written)? notice|"
        r"(?:right|entitled|may|can) (?:to )?(?:terminate|cancel)[^.;]{0,40}at any time[^.;]{0,20}(?:upon|on|by giving|with|within)[^.;]{0,40}(?:notice|days)",
        exclude=(
            r"breach|default|insolven|bankrupt|fail(?:s|ure)? to|cure|violat|\bif\b|in the event|should|in case|"
            r"upon the occurrence|contingenc|force majeure|prior to the (?:end|expiration|expiry)|mutual",
        ),
    ),
    R(
        C.rofr_rofo_rofn,
        "first|last|rof|exclusive",
        r"(?:right|option) of first (?:refusal|offer|negotiation|look)|first (?:right|option) (?:to|of) (?:negotiate|refus|offer|purchase|acquire)|"
        r"right of last (?:refusal|offer)|\bROFR\b|\bROFO\b|\bROFN\b|first opportunity to (?:negotiate|purchase|acquire|bid|offer|license|distribute)|exclusive negotiation",
        exclude=(r"(?:not|never) (?:be deemed to )?(?:constitute|create|grant) (?:a|any) (?:right|option) of first",),
    ),
    # A first claim on a future deal without the "right of first refusal" label: "the first right of
    # negotiation", "the first option to commercialize", "shall first offer to ...", "an option to purchase".
    R(
        C.rofr_rofo_rofn,
        "first|option",
        r"first right(?:,? but not the obligation,?)? (?:of|to) (?:negotiat|refus|offer|purchase|acquire|act|submit)|"
        r"(?:have|has|given|granted|grant) (?:an? |the )?first option|(?:shall|will) first (?:offer|contact|negotiate|notify)|"
        r"option to become (?:the |its |an? )?(?:\w+ )?exclusive",
        exclude=(
            r"\bnot\b[^.;]{0,40}constitute|stock options?|share options?|purchase price of the option|"
            r"\bdefend|prosecut|enforce|infring",
        ),
    ),
    # ---- Group 3: assignment -------------------------------------------------------------------
    R(
        C.change_of_control,
        "control|ownership|merge|consolidat|amalgamat|substantially|majority|fifty|50%|management|acqui",
        r"change (?:of|in) (?:the )?control|change (?:of|in) ownership|controlling interest|"
        r"(?:merger|consolidation|reorganization|amalgamation)[^.]{0,200}(?:assign|terminat|consent|notice|transfer)|"
        r"(?:assign|transfer|terminat)[^.]{0,200}(?:merger|consolidation|acquisition of (?:all|substantially)|sale of (?:all|substantially))|"
        r"all or substantially all of (?:its|the|such party's) (?:assets|business|stock|equity)[^.]{0,100}(?:assign|terminat|consent)|"
        r"(?:majority|more than fifty percent|50%) of (?:the )?(?:outstanding |voting )?(?:voting )?(?:stock|shares|securities|equity|interests?|assets)|"
        r"change in (?:the )?(?:organization|ownership|management|control)|control of (?:either|a|the|such) party (?:shall |is )?(?:pass|transfer|change)",
        exclude=(
            r"bankrupt|insolven|benefit of creditors|receiver|Board of (?:Trustees|Directors)|voting securities of (?:a|the|any) Fund|"
            r"^\W*(?:\d+(?:\.\d+)*\.?\s+)?[\"“]Control(?:led|ling)?[\"”,]|"
            r"^(?![\s\S]*(?:notice|notify|terminat|consent of|approval))[\s\S]*(?:may|shall be entitled to|can|shall have the right to) (?:freely )?(?:assign|transfer)[^.;]{0,200}without (?:the )?(?:\w+ )?(?:[\w'’]+ )?(?:prior )?(?:written )?(?:consent|approval)",
            r"^(?![^.]*(?:notice|terminat|change (?:of|in) control))[^.]*without (?:the )?(?:other party's |the other party's )?(?:prior )?(?:written )?consent[^.]{0,200}(?:merger|acqui|substantially all|reorganiz)",
        ),
    ),
    R(
        C.anti_assignment,
        "assign|transfer",
        r"\bassign|\btransfer",
        require=(
            r"(?:without|prior|written) (?:the )?(?:prior )?(?:express )?(?:written )?consent|not (?:be )?(?:assign|transfer)|"
            r"(?:no|neither) party (?:may|shall|will)[^.]{0,40}(?:assign|transfer)|consent of the other|prior written approval|"
            r"(?:shall|may) not,? (?:directly or indirectly,? )?(?:sell, )?(?:assign|transfer|delegate)|null and void|non-?assignable",
        ),
        exclude=(
            r"assignment of (?:inventions|rights in)|hereby assigns|assigns? to \w+ all (?:right|its right)|work made for hire",
        ),
    ),
    # ---- money ---------------------------------------------------------------------------------
    R(
        C.revenue_profit_sharing,
        "royalt|revenue|profit|share|percent|%|commission|split",
        r"royalt(?:y|ies)|revenue[- ]shar|profit[- ]shar|share (?:of|in) (?:the )?(?:net |gross )?(?:revenues?|profits?|proceeds|income)|"
        r"(?:percent|%)\)?(?: \(\d+%\))? of (?:all |the |its )?(?:net |gross |adjusted )?(?:sales|revenues?|profits?|receipts|income|proceeds|margin|billings|fees)|"
        r"\bcommissions?\b|split (?:equally|evenly|\d+)|(?:net|gross) (?:revenues?|profits?) (?:shall|will) be (?:split|shared|divided|allocated)",
        exclude=(
            r"royalty[- ]free|royalty- free|free of (?:any )?royalt|(?:costs?|expenses?)[^.;]{0,40}(?:split|shared|divided)|Securities Commissions?|without (?:payment of )?(?:any )?royalt|Securities and Exchange Commission|Federal Trade Commission|\bCommission\b",
        ),
    ),
    R(
        C.price_restrictions,
        "price|pricing|fees|rates",
        r"(?:shall|will|may) not (?:be )?(?:increase|raise|change|adjust|exceed)\w*[^.;]{0,60}(?:price|prices|pricing|fees|rates)|"
        r"(?:price|prices|pricing|fees|rates) (?:shall|will) (?:remain|be) (?:fixed|firm|constant|unchanged)|"
        r"(?:price|prices|fee|fees) (?:increases?|adjustments?)[^.;]{0,80}(?:shall not|will not|may not|not to) exceed|"
        r"(?:no|any) (?:price )?increases? (?:in|to) (?:the )?(?:price|prices|fees)[^.;]{0,80}(?:shall|may|will) (?:not|only)|"
        r"(?:adjust|increase|change) (?:the )?(?:\w+ )?(?:price|prices|rates|fees)[^.;]{0,60}not (?:more often|more frequently|more than once)|"
        r"(?:increase|adjust)\w*[^.;]{0,40}(?:price|prices|fees|rates)[^.;]{0,60}(?:not to exceed|shall not exceed|by no more than|capped)|"
        r"(?:price|prices|pricing|fees|rates)[^.;]{0,60}(?:subject to (?:an? )?(?:increase|change|adjustment)|increase|change|adjust\w*)[^.;]{0,40}"
        r"(?:only )?(?:once|one time) (?:per|a|each|in any) (?:calendar |contract |twelve|12)?[- ]?(?:year|month|quarter|period)|"
        r"(?:increase|raise)\w*[^.;]{0,60}(?:price|prices|pricing|fees|rates)[^.;]{0,40}(?:by )?more than[^.;]{0,30}(?:%|percent)|"
        r"(?:price|prices|pricing|fees|rates)[^.;]{0,40}(?:may|shall|will) not (?:be )?(?:increase|raise|change|adjust|reduce|lower|decrease)d?\b|"
        r"(?:may|shall|will) not (?:reduce|lower|decrease|discount) (?:the |its |any )?(?:\w+ )?(?:price|prices|pricing|fees|rates)|"
        r"(?:at|for) (?:its )?cost,? (?:without|with no) (?:any )?(?:mark-?up|profit)",
        exclude=(r"liabilit|liable|damages|deduction",),
    ),
    R(
        C.minimum_commitment,
        "minimum|least|less than|take",
        r"minimum (?:annual |monthly |quarterly |aggregate |purchase |order |guaranteed )*(?:purchase|order|quantit|volume|commitment|amount|royalt|payment|fee|sales|revenue|guarantee|requirement|number)\w*|"
        r"(?:shall|will|agrees? to) (?:purchase|order|buy|procure|pay)[^.;]{0,40}(?:at least|not less than|a minimum of)|"
        r"(?:at least|not less than|no less than) [^.;]{0,40}(?:units|orders?|purchases?)|take[- ]or[- ]pay|"
        r"(?:commits?|agrees?|shall|will)[^.;]{0,60}\ba minimum of (?:\w+ )?(?:\(?\d[\d,]*\)?|\[?\*+\]?)|"
        r"minimum (?:performance|purchas\w*|total|sales|annual|monthly|quarterly) (?:goals?|requirements?|charges?|quotas?|targets?|commitments?)",
        exclude=(
            r"minimum (?:wage|age|insurance|coverage|limits?)|minimum (?:amount|limit)s? of (?:insurance|coverage)|"
            r"minimum amount of (?:\w+ )?(?:\w+ )?(?:information|Confidential)|\bno minimum|minimum number of meetings|"
            r"(?:insurance|insured|coverage|polic(?:y|ies))",
        ),
    ),
    # Committed quantities stated as a frequency or a guaranteed figure: "a minimum of four (4) times
    # per year", "Quarterly Volume Commitment", "annual sales targets", "guarantees that it will deliver".
    R(
        C.minimum_commitment,
        "minimum|commitment|target|guarantee|achieve",
        r"a minimum of (?:\w+ )?\(?\d[\d,]*\)? (?:[\w-]+ ){0,4}(?:per|each|every|a|in any) (?:calendar |contract )?(?:year|month|quarter|week)|"
        r"\bVolume Commitments?\b|(?:annual|quarterly|monthly|minimum) (?:and (?:annual|quarterly|monthly) )?(?:sales?|purchase) targets?|"
        r"guarantees? (?:that it will )?(?:deliver|purchase|sell|generate|order)|\bMinimum Threshold|"
        r"fails? to (?:achieve|meet|attain) (?:the )?(?:annual |minimum |quarterly )?(?:revenues?|sales|purchases?|targets?|volumes?)",
        exclude=(
            r"minimum (?:wage|age|insurance|coverage|limits?)|(?:insurance|insured|coverage|polic(?:y|ies))|meetings?",
        ),
    ),
    R(
        C.volume_restriction,
        "excess|exceed|above|greater|more than|over|maximum|cap on",
        r"(?:in excess of|exceeds?|exceeding|above|greater than|more than|over) (?:the |such |any |a )?(?:\w+ )?(?:maximum|limit|cap|threshold|forecast\w*|volume|quantit\w+|capacity|number of|units|amount)|"
        r"(?:maximum|cap on the) (?:number|quantity|volume|amount) of (?:units|products|users|licenses|copies|orders?|transactions|calls)|"
        r"overage|excess (?:usage|capacity|volume|units|quantit)",
        require=(
            r"units|volume|quantit|capacity|usage|users|forecast|orders?|transactions|purchase|products?|copies|seats",
        ),
        exclude=(r"liabilit|insurance|damages|interest rate|late|deductible",),
    ),
    # A cap on how much of a service or product a party gets or gives: "up to three (3) appearances",
    # "no more than eight (8) hours each", "a maximum of 100 units per run".
    R(
        C.volume_restriction,
        "up to|more than|not to exceed|shall not exceed|maximum|limited to",
        r"(?:up to|no more than|not more than|not to exceed|shall not exceed|will not exceed|a maximum of|maximum of|limited to) "
        r"(?:a total of |an aggregate of )?(?:\w+ )?(?:\(\s*(?:\d[\d,]*|\[?\*+\]?)\s*\) |\d[\d,.]* |\[?\*+\]? )?(?:additional |full[- ]time |consecutive |rotating |\w+ )?"
        r"(?:hours?|appearances?|sessions?|persons?|people|personnel|individuals|units|links|posts|inserts|onserts|impressions|copies|users|"
        r"seats|events|FTEs?|visits|trips|calls|pages|placements|spots|kilobytes|megabytes|gigabytes|MB|GB|TB|transactions|locations|stores|"
        r"products|samples|runs|batches|shipments|tons|gallons|barrels|liters|pounds|kilograms|doses|licenses|installations|days (?:per|each|in any))\b",
        exclude=(
            r"within|respon(?:d|se)|prior (?:written )?notice|liabilit|damages|interest|insurance|indemn|late|for a period",
        ),
    ),
    # ---- Group 4: IP and licences ----------------------------------------------------------------
    R(
        C.ip_ownership_assignment,
        "assign|transfer|convey|hire|vest|property|owner|own",
        r"hereby (?:irrevocably )?(?:assigns?|transfers?|conveys?)|(?:shall|agrees? to|will) (?:irrevocably )?(?:assign|transfer|convey) (?:and hereby assigns )?(?:to )?|"
        r"work(?:s)? made for hire|works? for hire|shall (?:vest|be vested) in|"
        r"shall (?:be|become) the (?:sole and )?(?:exclusive )?(?:property|owner)|shall (?:solely |exclusively )?own (?:all|any|the)",
        require=(
            r"intellectual property|\bIP\b|patent|copyright|invention|improvement|work product|deliverable|developments?|"
            r"trademark|know-how|technology|data|materials|results|right, title and interest",
        ),
        exclude=(
            r"\bnot\b[^.]{0,30}(?:assign|transfer)|without (?:the )?(?:prior )?(?:express )?(?:written )?consent|goodwill|"
            r"(?:arising|accru\w*) from (?:its|the) use of the (?:\w+ )?(?:Trademarks|Marks)|this Agreement (?:or|and) (?:any|its) (?:rights|obligations)|"
            r"(?:assign|transfer) (?:this Agreement|its rights|any of its rights|its obligations)",
        ),
    ),
    R(
        C.joint_ip_ownership,
        "joint|co-own|coown|undivided|equally|shared",
        r"joint(?:ly)?[- ]own\w*|co-?own\w*|owned jointly|jointly by (?:the )?(?:parties|both)|joint (?:inventions?|patents?|intellectual property|technology|developments?|works?|property|ip)\b|"
        r"undivided (?:one-half |equal )?interest|equally own|shared ownership|own (?:such )?[^.]{0,60}jointly",
        require=(r"\bown|title|belong|vest|property of|undivided|interest|assign",),
        exclude=(
            r"joint (?:development|steering|research|governance|operating|commercialization|executive|patent) (?:committee|team|agreement|program|plan)|"
            r"(?:drafted|prepared|negotiated) (?:jointly|by both)|\bno\b[^.;]{0,40}jointly owned|nor is it[^.;]{0,20}jointly",
        ),
    ),
    R(
        C.license_grant,
        "grant|licens|licenc",
        r"(?:hereby )?grants? (?:to )?[^.;]{0,80}(?:an? |the )?[^.;]{0,120}\b(?:licen[cs]e|sublicen[cs]e|right to use)|"
        r"hereby licen[cs]es|(?:is|are) (?:hereby )?(?:granted|licensed)[^.;]{0,80}(?:licen[cs]e|right to use)|license grant",
    ),
    R(
        C.non_transferable_license,
        "transfer|assign|licens",
        r"non-?transferr?able|non-?assignable|not (?:be )?(?:transferr?able|assignable)|non-?sub-?licensable|without the right to (?:sub-?license|transfer|assign)|"
        r"(?:may|shall) not (?:sub-?license|transfer|assign)[^.;]{0,60}licen[cs]e|right to sublicense",
        require=(_LIC,),
    ),
    # The same limits on a bare "right to use" (marks, content) or a personal licence, and a bar on
    # letting others use the licensed marks: "non-transferable right to use the Marks", "may not
    # permit any third party to use the Marks", "shall not sublicense ... the rights granted".
    R(
        C.non_transferable_license,
        "transfer|assign|personal|sublicens|permit|allow",
        r"(?:non-?\s?transferr?able|non-?\s?assignable)[^.;]{0,60}right to (?:use|distribute|display|market|sell|reproduce)|"
        r"\bpersonal,? (?:[\w-]+,? (?:and )?){0,4}(?:right|licen[cs]e)|"
        r"(?:not|no)[^.;]{0,40}(?:permit|allow|authori[sz]e) any (?:third part(?:y|ies)|other person|person|entity)[^.;]{0,20}to use|"
        r"(?:not|no)[^.;]{0,20}sub-?licen[cs]e[^.;]{0,60}(?:the )?rights? granted|no licen[cs]e[^.;]{0,60}includes? the right to (?:grant )?sub-?licen",
        exclude=(r"personal (?:data|information|property|injury|jurisdiction|guarant|liabilit|service)|confidential",),
    ),
    R(
        C.affiliate_license_licensor,
        "affiliat|subsidiar| group",
        r"(?:and|or) (?:its|their) (?:Affiliates|subsidiaries|affiliated companies)[^.;]{0,40}(?:hereby )?grants?|"
        r"(?:owned|controlled|licensable) by (?:\w+ )?(?:or|and) (?:any of )?(?:its|their) (?:Affiliates|subsidiaries)|"
        r"(?:cause|causes) (?:its|their) (?:Affiliates|subsidiaries) to grant|(?:Licensor|Company|it)['’]s? (?:or its )?Affiliates['’]? (?:patents|technology|intellectual property|trademarks|know-how)|"
        r"(?:cause|causes) (?:the |each )?(?:other )?(?:members?|each member) of (?:the )?\w+ Group to (?:hereby )?grant|"
        r"for itself and (?:as representative of )?(?:all )?(?:other )?members of the \w+ Group|"
        r"(?:owned|controlled|licensable|licensed) by \w+ (?:or|and) \w+ (?:or|and) (?:any of )?(?:its|their) (?:respective )?Affiliates|"
        r"obtain from (?:its|your|their) (?:affiliates|subsidiaries)|"
        r"(?:on behalf of|for) itself and (?:its|their) (?:Aff?iliates|subsidiaries)[^.;]{0,20}(?:hereby )?grants?",
        require=(_LIC + r"|right to (?:continue to )?use",),
        # a disclaimer of any licence, or a schedule or definition listing the affiliates' patents
        exclude=(
            r"(?:shall not|does not|will not) (?:acquire|obtain|receive|be granted) any licen|\bsets forth\b|\blist of\b|"
            r"^\W*(?:\w+\s+)?(?:\d+(?:\.\d+)*\.?\s+)?[\"“][^\"”]{1,60}[\"”] (?:means|shall mean)",
        ),
    ),
    R(
        C.affiliate_license_licensee,
        "affiliat|subsidiar",
        r"(?:to|upon|on) \w+ (?:\w+ )?(?:and|or) (?:its|their) (?:Affiliates|subsidiaries|affiliated companies)|"
        r"(?:to|for) (?:its|their) (?:Affiliates|subsidiaries) (?:and|or)|sub-?licen[cs]e[^.;]{0,60}(?:to|through) (?:its|their|any of its) (?:Affiliates|subsidiaries)|"
        r"(?:Affiliates|subsidiaries) (?:of \w+ )?(?:may|shall be entitled to|shall have the right to) (?:use|exercise|practice)|"
        r"sub-?licen[cs]\w*[^.;]{0,150}(?:to|through|with) (?:its |their |any of its |any of their |any |an? )?(?:Affiliates?|subsidiar\w+|Related Compan\w+)\b|"
        r"(?:transfer|extend) (?:its |the )?(?:right to use|licen[cs]e)[^.;]{0,60}to (?:its |an? |any )?(?:Affiliates?|subsidiar\w+)",
        require=(r"grant|licen[cs]e|right to use|sublicen",),
    ),
    R(
        C.unlimited_all_you_can_eat_license,
        "unlimited|enterprise|all-you|without",
        r"unlimited (?:number|use|right|license|licence|copies|users|access|quantit|distribution|reproduction)|enterprise[- ]wide|all[- ]you[- ]can[- ]eat|"
        r"(?:any|an) unlimited|without (?:limitation as to|limit on|regard to) (?:the )?(?:number|quantity)|royalty-free[^.]{0,80}unlimited",
        exclude=(
            r"authori[sz]ed capital|shares|unlimited access to (?:[\w'’]+ )?(?:offices|premises|books|records|facilities)|unlimited liabilit",
        ),
    ),
    R(
        C.irrevocable_or_perpetual_license,
        "irrevocabl|perpetu",
        r"irrevocabl[ey]|perpetual|in perpetuity",
        require=(_LIC + r"|right to use",),
        exclude=(
            r"irrevocably (?:submit|consent|waive|agree|appoint|authoriz)|irrevocable (?:letter of credit|proxy|consent|waiver|instructions)",
        ),
    ),
    R(
        C.source_code_escrow,
        "escrow",
        r"\bescrow\w*",
        require=(r"source code|source materials|software|technology|deposit|release condition",),
    ),
    R(
        C.source_code_escrow,
        "source code",
        r"deliver[^.]{0,40}source code|source code[^.]{0,60}(?:deposit|release|delivered)",
    ),
    # ---- post-termination ------------------------------------------------------------------------
    R(
        C.post_termination_services,
        "terminat|expir",
        r"(?:upon|after|following|on) (?:the )?(?:any )?(?:termination|expiration|expiry)(?: or (?:termination|expiration|expiry|non-renewal))?",
        require=(
            r"(?:shall|will|may|must) (?:continue|be entitled|have the right|provide|pay|sell|purchase|return|deliver|destroy|transfer|assist|cooperate|remain|retain|furnish|honor|fulfil)|"
            r"(?:sell|dispose of|distribute) (?:off |its |any )?(?:remaining )?(?:inventory|stock)|transition|wind[- ]down|sell-?off|run-?off|"
            r"(?:period of|for) (?:\w+ )?\(?\d+\)? (?:days|months)",
        ),
        exclude=(
            r"^[^.]{0,20}(?:notice of termination shall|this Agreement shall terminate)",
            # handing back or destroying confidential information, or a confidentiality period
            # running past the end, is wind-up of secrecy, not a post-termination service
            r"(?:return|destroy|delete|erase)\w*[^.;]{0,100}(?:Confidential|Proprietary) Information|"
            r"(?:Confidential|Proprietary) Information[^.;]{0,120}(?:return|destr|delet|erase)|confidentiality (?:and non-use )?obligations|"
            r"(?:solicit|hire|employ)\w* (?:or \w+ )?(?:any )?(?:employee|personnel)",
        ),
    ),
    R(
        C.post_termination_services,
        "transition|sell-off|selloff|sell off|wind|inventory|stock on hand",
        r"transition (?:services|period|assistance)|sell-?off period|wind[- ]down|(?:sell|dispose of|distribute)[^.;]{0,40}(?:inventory|stock on hand|remaining)",
        require=(r"terminat|expir",),
    ),
    R(
        C.audit_rights,
        "audit|inspect|examin",
        r"\baudit\w*|inspect\w*|examin\w*",
        require=(r"books|records|accounts|facilit|premises|audit|accounting|documentation|statements",),
        exclude=(
            r"^[^.]{0,60}inspect(?:ion)? (?:of|and acceptance of) (?:the )?(?:products|goods|shipment|deliver)",
            r"audited financial statements|independent auditors? (?:report|opinion)|audit committee",
        ),
    ),
    # ---- Group 5: liability ----------------------------------------------------------------------
    R(
        C.cap_on_liability,
        "liab|damages|action|claim",
        r"(?:total|aggregate|cumulative|maximum|entire|collective) (?:\w+ )?liabilit\w*|liabilit\w*[^.;]{0,150}(?:shall not exceed|not to exceed|exceed|limited to|in excess of|capped)|"
        r"in no (?:\w+ )?event (?:shall|will|may|is|are)[^.;]{0,150}(?:liab\w+|damages)|(?:neither party|no party|neither|nor)[^.;]{0,40}(?:shall|will|may) (?:\w+ )?be liable[^.;]{0,200}(?:indirect|consequential|incidental|special|punitive|lost profits|exemplary)|"
        r"(?:damages|claims|reimbursements?|recovery)[^.;]{0,80}(?:shall|will) not exceed|(?:shall|will) not be liable[^.;]{0,150}(?:indirect|consequential|incidental|special|punitive|lost profits|exemplary)|"
        r"(?:limitation|limitations) (?:of|on) liabilit|(?:no|any) (?:action|claim)[^.;]{0,120}(?:more than|after) (?:\w+ )?\(?\d+\)? (?:years?|months?)|"
        r"(?:not be liable|no liability)[^.;]{0,100}(?:consequential|indirect|special|incidental)",
    ),
    R(
        C.uncapped_liability,
        "liab|damages",
        r"(?:limitations?|exclusions?|cap|caps)[^.;]{0,120}(?:shall not apply|will not apply|do not apply|does not apply|shall not limit)|"
        r"(?:shall not apply|will not apply|do not apply|does not apply) to[^.;]{0,120}(?:indemnif|breach|confidential|gross negligence|willful|wilful|infringement|fraud)|"
        r"(?:except|excluding|other than)(?: for| with respect to)?[^.;]{0,120}(?:indemnif|breach of (?:section|its|confidential)|gross negligence|willful|wilful|fraud)",
        exclude=(
            r"^[^.]{0,40}(?:indemnify|defend)|unlimited liability compan|forces? beyond|force majeure|(?:hold|holds|held|save) harmless",
        ),
    ),
    # A cap or exclusion made subject to a carve-out elsewhere ("Except as provided in Section 9.3, in
    # no event shall ..."), or language keeping some liability whole ("nothing ... shall limit").
    R(
        C.uncapped_liability,
        "liab|damages|limit",
        r"(?:except|excluding|other than|subject to)(?: for| as (?:set forth|provided) in| with respect to)?[^.;]{0,100}(?:Section|Article|Paragraph|Clause)s? \(?[\dIVX]|"
        r"(?:shall not|will not|nothing[^.;]{0,80}(?:shall|will|is intended to)) (?:be deemed to )?(?:limit|restrict|exclude)[^.;]{0,80}(?:liabilit|damages|obligations? (?:of (?:either|any) party )?to indemnify)|"
        r"(?:excludes?|exclude) or limits? (?:any |its )?liabilit|(?:responsibility|liability),? without limit\b|unlimited liabilit|liability (?:shall|will) be unlimited",
        require=(
            r"liab|damages",
            r"in no event|not be liable|no liability|have any liability|shall not exceed|will not exceed|limit|cap\b|exclu|consequential|indirect",
        ),
        exclude=(
            r"^[^.]{0,40}(?:indemnify|defend)|insurance|warrant|unlimited liability compan|forces? beyond|force majeure|(?:hold|holds|held|save) harmless",
        ),
    ),
    R(
        C.liquidated_damages,
        "liquidated|termination|cancellation|penalty|break|kill fee",
        r"liquidated damages|termination (?:fee|payment|charge)|early termination (?:fee|charge|payment)|break(?:-up|up) fee|"
        r"cancellation (?:fee|charge)|as a penalty|kill fee",
    ),
    R(
        C.warranty_duration,
        "warrant|guarantee|defects",
        r"warrant\w*|guarantee\w*|free (?:from|of) defects",
        require=(
            r"(?:period of|for|within|after) (?:\w+ )?(?:\w+ )?\(?\d+\)? (?:\w+ )?(?:days|months|years)|(?:\w+)-(?:month|year|day) (?:warranty|period)|"
            r"(?:one|two|three|six|twelve|ninety|thirty|sixty|eighteen|twenty-four|thirty-six) (?:\(\d+\) )?(?:days|months|years)|warranty period|shelf life",
            r"defect|conform|free from|workmanship|specifications|warranty period|perform (?:substantially|in accordance)|remaining shelf life",
        ),
    ),
    # A warranty stated with its length: "a six-month limited warranty", "warranty for a period of 12 months".
    R(
        C.warranty_duration,
        "warrant",
        r"(?:\w+|\(\d+\))[- ](?:day|month|year) (?:limited |product |express )?warranty|"
        r"warrant(?:y|ies|s)? (?:shall )?(?:be )?(?:for|of|during) (?:a|the) (?:period|term) of (?:\w+ )?\(?\d+\)? ?(?:\w+ )?(?:days|months|years)|"
        r"warranty (?:period|term) (?:of|shall be|is) (?:\w+ )?\(?(?:\d+|\[\*+\])\)? ?(?:\w+ )?(?:days|months|years)",
    ),
    # A limited period after delivery to inspect and reject non-conforming goods, after which they
    # are deemed accepted: "within seven (7) days of receipt ... notify ... defects".
    R(
        C.warranty_duration,
        "within|days|deemed accept",
        r"(?:within|no later than|not later than|for a period of) (?:\w+ )?\(?(?:\d+|\[\*+\]|\[\s*\*\s*\])\)? ?(?:calendar |business |working )?(?:days|hours|weeks|months)"
        r"[^.;]{0,40}(?:after|of|following|from) (?:the )?(?:receipt|delivery|arrival|discovery|installation)",
        require=(
            r"defect|non-?conform|not (?:in )?conform|shortage|discrepanc|damaged|reject|does not meet|fails? to (?:meet|comply|conform)|deemed (?:to have )?accept",
            r"products?|goods|shipment|batch|deliver|units|materials?|software|equipment",
        ),
        exclude=(r"invoice|payment|pay\b|purchase orders?|forecast",),
    ),
    R(
        C.insurance,
        "insur",
        r"\binsurance\b|\binsured\b|\binsurer",
        require=(r"maintain|carry|obtain|procure|policy|policies|coverage|insured|certificate|\$|limits?",),
        exclude=(
            r"Federal Deposit Insurance|insurance (?:agency|agent|products?|company) (?:business|services)|health insurance portability",
            # employee-benefit, freight and premium mentions are not a duty to carry insurance
            r"(?:health|medical|unemployment|life|disability|dental) insurance|social security|insurance premium payments|"
            r"freight(?:,)? (?:and )?insurance|insurance,? (?:medical|hospital|dental)|insurance laws",
        ),
    ),
    R(
        C.covenant_not_to_sue,
        "contest|challenge|dispute|attack|oppose|impugn|sue|claim|action|suit|institute|covenant",
        r"(?:not|never)[^.;]{0,60}(?:contest|challenge|dispute|attack|oppose|impugn)\w*(?: or \w+)?(?:,? (?:directly or indirectly|at any time))?[^.;]{0,60}(?:validity|ownership|title|rights? (?:in|to)|enforceability|registration|intellectual property|trademarks?|patents?|marks)|"
        r"covenants? not to (?:sue|assert|bring)|(?:not|never)[^.;]{0,40}(?:sue|bring (?:any )?(?:action|claim|suit)|assert (?:any )?claim|institute)[^.;]{0,120}(?:against|infring)|"
        r"(?:validity|ownership)[^.;]{0,80}(?:not|never)[^.;]{0,40}(?:contest|challenge|dispute)",
        exclude=_CNS_NOT,
    ),
    # Not contesting or impairing the counterparty's marks/IP in other words: no claim of ownership,
    # no filing to register them, nothing that impairs them; an acknowledgement of their validity.
    R(
        C.covenant_not_to_sue,
        "contest|challenge|claim|register|registration|impair|validity|proceeding",
        r"(?:\bnot\b|never|\bnor\b|\bno\b|\bneither\b)[^.;]{0,80}(?:contest|challenge|oppose|attack|impugn|impair|adversely affect)\w*[^.;]{0,150}"
        r"(?:validity|ownership|title|rights? (?:in|to)|registration|intellectual property|trade ?marks?|patents?|marks\b|copyrights?)|"
        r"(?:not|never|nor)[^.;]{0,60}(?:make|assert) any claim[^.;]{0,40}(?:ownership|right|title|interest)|"
        r"(?:\bnot\b|never|\bnor\b)[^.;]{0,100}(?:assert|claim)\w*(?: or (?:assert|claim)\w*)? any (?:\w+ )?(?:interest|right|title|ownership)[^.;]{0,60}"
        r"(?:trade ?marks?|marks\b|patents?|intellectual property|proprietary rights|copyrights?)|"
        r"(?:not|never|nor)[^.;]{0,60}(?:file|apply for|seek to register|register|attempt to register)[^.;]{0,80}(?:trade ?marks?|marks\b|trade names?|domain names?|patents?|applications? (?:for|to register))|"
        r"acknowledges? (?:the )?validity of|(?:not|never)[^.;]{0,40}institute any (?:proceedings?|action)[^.;]{0,80}(?:trade ?marks?|marks\b|patents?|intellectual property)",
        exclude=_CNS_NOT,
    ),
    R(
        C.third_party_beneficiary,
        "beneficiar",
        r"third[- ]party beneficiar\w*|(?:express|intended) beneficiar\w*|beneficiar\w* of (?:this Agreement|the provisions|Section)",
        exclude=(
            r"(?:\bno\b|\bnot\b|\bnothing\b|\bnor\b|\bneither\b|\bnone\b)[^.;]{0,200}beneficiar|beneficiar[^.;]{0,80}(?:\bnot\b|\bno\b)",
        ),
    ),
    # A named non-party made a beneficiary ("X shall be a third party beneficiary ..., but shall not ...").
    R(
        C.third_party_beneficiary,
        "beneficiar",
        r"(?:shall|will|is|are) (?:be )?(?:deemed )?(?:to be )?(?:an? )?(?:direct |express |intended |(?:direct|express) and intended )?third[- ]part(?:y|ies)[- ]beneficiar",
        exclude=(
            r"(?:\bno\b|\bnot\b|\bnothing\b|\bnor\b|\bneither\b|\bnone\b)[^.;]{0,80}(?:shall|will|is|are) (?:be )?(?:deemed )?(?:to be )?(?:an? )?(?:\w+ )?third",
        ),
    ),
    # A "no third-party beneficiaries" clause with a carve-out for indemnitees, affiliates or a
    # named section: the carved-out persons are beneficiaries.
    R(
        C.third_party_beneficiary,
        "beneficiar|confer",
        r"(?:except|save)(?: as| for| to the extent)?[^.;]{0,60}(?:(?:provided|set forth) in (?:Section|Article|Paragraph|Clause)s? \(?[\dIVX]|"
        r"indemnif|Indemnitees?|Indemnified)|^\W*(?:other than|except(?: for)?) (?:the )?(?:Affiliates|Indemni)",
        require=(r"beneficiar|confer (?:up)?on",),
    ),
    # ---- Document-level (first chunk) --------------------------------------------------------
    R(
        C.agreement_date,
        "19|20",
        DATE_RE.pattern,
        require=(r"(?:dated|made|entered into|executed|signed|as of|effective|day of|Date:?|this)\b",),
        doc_level=True,
        head_chars=PREAMBLE_CHARS,
    ),
    R(C.agreement_date, "19|20", DATE_RE.pattern, doc_level=True, head_chars=1500),
)


# --------------------------------------------------------------------------------------------
# Summaries and risk
# --------------------------------------------------------------------------------------------

_TEMPLATES: dict[ClauseType, str] = {
    C.document_name: "The document is titled {name}.",
    C.parties: "The parties to the agreement are {party}.",
    C.agreement_date: "The agreement is dated {date}.",
    C.effective_date: "The agreement takes effect {date_on}.",
    C.expiration_date: "The initial term ends {until}.",
    C.renewal_term: "The agreement renews {for_duration}.",
    C.notice_period_to_terminate_renewal: "Renewal can be stopped by giving notice {duration_before}.",
    C.governing_law: "Governed by the laws of {jurisdiction}.",
    C.most_favored_nation: "A party is entitled to terms at least as favourable as those given to others (most favoured nation).",
    C.competitive_restriction_exception: "An exception or carve-out limits a non-compete, exclusivity or no-solicit restriction.",
    C.non_compete: "A party is restricted from competing with the counterparty or in a business or territory.",
    C.exclusivity: "The agreement creates an exclusive dealing commitment.",
    C.no_solicit_of_customers: "A party may not solicit the counterparty's customers or partners.",
    C.no_solicit_of_employees: "A party may not solicit or hire the counterparty's employees.",
    C.non_disparagement: "A party must not disparage the counterparty.",
    C.termination_for_convenience: "A party may terminate without cause{by_notice}.",
    C.rofr_rofo_rofn: "A party has a right of first refusal, offer or negotiation.",
    C.change_of_control: "A change of control triggers consent, notice or termination rights.",
    C.anti_assignment: "Assignment requires the other party's consent or notice, or is restricted.",
    C.revenue_profit_sharing: "A party shares revenue or profit (e.g. royalties or commissions){at_rate}.",
    C.price_restrictions: "There is a restriction on raising or lowering prices.",
    C.minimum_commitment: "A party must meet a minimum purchase or payment commitment{of_amount}.",
    C.volume_restriction: "Use above a stated threshold triggers fees, consent or other limits.",
    C.ip_ownership_assignment: "Intellectual property created under the agreement is owned by or assigned to a party.",
    C.joint_ip_ownership: "Some intellectual property is jointly owned by the parties.",
    C.license_grant: "One party grants the other a licence.",
    C.non_transferable_license: "The licence granted cannot be transferred, assigned or sublicensed freely.",
    C.affiliate_license_licensor: "The licence covers intellectual property of the licensor's affiliates or is granted by them.",
    C.affiliate_license_licensee: "The licence extends to the licensee's affiliates.",
    C.unlimited_all_you_can_eat_license: "The licence allows unlimited or enterprise-wide use.",
    C.irrevocable_or_perpetual_license: "The licence granted is irrevocable or perpetual.",
    C.source_code_escrow: "Source code is deposited in escrow for release on certain events.",
    C.post_termination_services: "Obligations continue after termination or expiration{for_duration}.",
    C.audit_rights: "A party may audit the other's books, records or premises.",
    C.uncapped_liability: "Some liability is excluded from the cap and may be unlimited.",
    C.cap_on_liability: "Liability is limited{to_amount}.",
    C.liquidated_damages: "Liquidated damages or a termination fee are payable{of_amount}.",
    C.warranty_duration: "A warranty applies for a limited period{of_duration}.",
    C.insurance: "A party must maintain insurance{of_amount}.",
    C.covenant_not_to_sue: "A party may not challenge the counterparty's IP or bring certain claims.",
    C.third_party_beneficiary: "A non-party is a beneficiary entitled to enforce terms of the agreement.",
}

_MEDIUM = frozenset(
    {
        C.renewal_term,
        C.notice_period_to_terminate_renewal,
        C.expiration_date,
        C.competitive_restriction_exception,
        C.no_solicit_of_customers,
        C.no_solicit_of_employees,
        C.non_disparagement,
        C.rofr_rofo_rofn,
        C.anti_assignment,
        C.revenue_profit_sharing,
        C.price_restrictions,
        C.minimum_commitment,
        C.volume_restriction,
        C.joint_ip_ownership,
        C.non_transferable_license,
        C.affiliate_license_licensor,
        C.affiliate_license_licensee,
        C.unlimited_all_you_can_eat_license,
        C.irrevocable_or_perpetual_license,
        C.source_code_escrow,
        C.post_termination_services,
        C.audit_rights,
        C.warranty_duration,
        C.insurance,
        C.third_party_beneficiary,
    }
)


def default_risk(category: ClauseType) -> Risk:
    """Default risk for ``category``: high for :data:`~schemas.taxonomy.HIGH_RISK`, medium for
    commercial restrictions and obligations, low for identifying facts (name, parties, dates, law)."""
    if category in HIGH_RISK:
        return Risk.high
    if category in _MEDIUM:
        return Risk.medium
    return Risk.low


def _possessive(period: str) -> str:
    """``period`` as a possessive: "thirty (30) days'", "one (1) month's"."""
    return f"{period}'" if period.rstrip().endswith("s") else f"{period}'s"


def summarize(category: ClauseType, values: list[FindingValue]) -> str:
    """One plain-English sentence for a finding of ``category`` with ``values`` filled in."""
    vd = {v.name: v.value for v in values}
    parties = [v.value for v in values if v.name == "party"]
    date, dur = vd.get("date"), vd.get("duration")
    amount = vd.get("amount") or vd.get("percentage")
    slots = {
        "name": vd.get("name", "as stated"),
        "party": " and ".join(parties) if parties else "named in the preamble",
        "date": date or "as stated in the preamble",
        "date_on": f"on {date}" if date else "on the stated effective date",
        "until": f"on {date}" if date else (f"after {dur}" if dur else "as stated"),
        "for_duration": f"for {dur}" if dur else "",
        "duration_before": f"{dur} before the term ends" if dur else "before the term ends",
        "jurisdiction": vd.get("jurisdiction", "the stated jurisdiction"),
        "by_notice": f" on {_possessive(dur)} notice" if dur else "",
        "at_rate": f" at {amount}" if amount else "",
        "of_amount": f" of {amount}" if amount else "",
        "to_amount": f" to {amount}" if amount else "",
        "of_duration": f" of {dur}" if dur else "",
    }
    if category is C.renewal_term and not dur:
        return "The agreement renews automatically or may be extended."
    whose = vd.get("liability_of")
    if category is C.cap_on_liability and whose:
        if MUTUAL_LIABILITY.fullmatch(whose):
            return f"Each party's liability is limited{slots['to_amount']}."
        return f"{whose}'s liability is limited{slots['to_amount']}; the clause limits no other party's."
    if category is C.post_termination_services and dur:
        slots["for_duration"] = f" for {dur}"
    text = _TEMPLATES.get(category, f"{label(category)} clause.").format(**slots)
    return re.sub(r"\s+", " ", text).replace(" .", ".")


# --------------------------------------------------------------------------------------------
# Backend
# --------------------------------------------------------------------------------------------

_TITLE_WORDS = re.compile(
    r"\b(?:AGREEMENT|CONTRACT|LICEN[CS]E|AMENDMENT|ADDENDUM|MEMORANDUM|LEASE|TERMS|ARRANGEMENT|"
    r"AGREEMENTS|UNDERTAKING|DEED|INDENTURE|PROTOCOL|STATEMENT OF WORK|ORDER)\b"
)
_THIS_AGREEMENT = re.compile(
    r"\b(?:This|THIS|The|THE)\s+(?P<n>(?:[A-Z][A-Za-z&\-/,]*\s+){0,8}?(?:Agreement|AGREEMENT|Contract|CONTRACT))\b"
)


_ENTITY_RE = re.compile(
    r"\b[A-Z][A-Za-z0-9&.\-]*(?:[ \t]+[A-Z][A-Za-z0-9&.\-]*){0,5},?[ \t]+"
    r"(?:Inc|INC|LLC|L\.L\.C|Ltd|LTD|Limited|LIMITED|Corp|CORP|Corporation|CORPORATION|Company|COMPANY|L\.P|LP|LLP|"
    r"N\.A|S\.A|plc|PLC|GmbH|AG|B\.V|N\.V)\b\.?"
)

# A cover page naming the parties on lines of their own: "between\n\nACME INC.\n\nand\n\nBETA LTD".
_COVER_PARTIES_RE = re.compile(
    r"\b(?:between|among|BETWEEN|AMONG|Between|Among)[ \t]*:?[ \t]*\n\s*(?P<a>[^\n]{2,160}?)[ \t]*\n\s*"
    r"(?:and|AND|And)[ \t]*:?[ \t]*\n\s*(?P<b>[^\n]{2,160}?)[ \t]*(?:\n|$)"
)

# A preamble whose parties follow in a block of lines: "BETWEEN:" (or "by and among") ending its line ...
_BLOCK_START = re.compile(r"(?im)[^\n]*\b(?:by\s+and\s+)?(?:between|among)\b[ \t]*:?[ \t]*$")
# ... up to the recitals, the operative words or the first numbered clause.
_BLOCK_END = re.compile(
    r"\b(?:WHEREAS|RECITALS|WITNESSETH|W\s?I\s?T\s?N\s?E\s?S\s?S\s?E\s?T\s?H|NOW,?\s+THEREFORE|BACKGROUND)\b"
    r"|^[ \t]*(?:ARTICLE\s+[IVX\d]+|1\.\d?\s)",
    re.M,
)

# A title-like run of capitalised words ending in a document type, inside a longer line:
# "Exhibit 10.1 EXECUTION COPY SUPPLY AGREEMENT by and between ..." → "EXECUTION COPY SUPPLY AGREEMENT".
_CAPS_TITLE_RE = re.compile(
    r"(?<![A-Za-z])(?:[A-Z][A-Z0-9&,'’\-/]*[ \t]+){0,7}?"
    r"(?:AGREEMENT|CONTRACT|LICEN[CS]E AGREEMENT|AMENDMENT|ADDENDUM|MEMORANDUM OF UNDERSTANDING|TERMS AND CONDITIONS|"
    r"POWER OF ATTORNEY|CERTIFICATE|ENDORSEMENT|UNDERTAKING|STATEMENT OF WORK)(?![A-Za-z])"
)
# A title-case line ("Distributorship Agreement", "License and Development Agreement").
_LINE_TITLE_RE = re.compile(
    r"(?m)^[ \t]*(?P<t>(?:[A-Z][\w&'’\-/.,#]*[ \t]+(?:(?:and|of|for|to|the|on|in)[ \t]+)?){0,8}"
    r"(?:Agreement|Contract|Amendment|Addendum|Terms and Conditions|Memorandum of Understanding))[ \t]*$"
)


@dataclass
class _Ctx:
    text: str
    spans: list[tuple[int, int]]
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.starts = [a for a, _ in self.spans]

    def sentence_at(self, pos: int) -> int | None:
        i = bisect.bisect_right(self.starts, pos) - 1
        if i >= 0 and self.spans[i][0] <= pos < self.spans[i][1]:
            return i
        return None


def _word_trim(text: str, a: int, b: int, anchor: int, anchor_end: int) -> tuple[int, int]:
    """Trim span [a, b) of ``text`` to ≤ MAX_EVIDENCE_CHARS around [anchor, anchor_end) at word boundaries."""
    if b - a <= MAX_EVIDENCE_CHARS:
        return a, b
    lead = 150
    start = max(a, min(anchor - lead, b - MAX_EVIDENCE_CHARS))
    end = min(b, start + MAX_EVIDENCE_CHARS)
    if start > a:
        sp = text.find(" ", start)
        nl = text.find("\n", start)
        cands = [x for x in (sp, nl) if x != -1 and x < min(anchor, end)]
        if cands:
            start = min(cands) + 1
    if end < b:
        cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
        if cut > max(start, anchor_end if anchor_end <= end else start):
            end = cut
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _find_sentences(low: str, key: str, ctx: _Ctx) -> list[int]:
    """Indices of the sentences of ``ctx`` containing literal ``key`` in lower-cased text ``low``."""
    out: list[int] = []
    pos = low.find(key)
    while pos != -1:
        i = ctx.sentence_at(pos)
        if i is not None:
            if not out or out[-1] != i:
                out.append(i)
            pos = low.find(key, max(pos + 1, ctx.spans[i][1]))
        else:
            pos = low.find(key, pos + 1)
    return out


_NO_HEADING = frozenset({C.third_party_beneficiary, C.competitive_restriction_exception, C.uncapped_liability})

_VERB_RE = re.compile(
    r"\b(?:shall|will|may|must|agrees?|is|are|be|been|has|have|hereby|not|grants?|means|can|would|should|\w+s (?:to|the|all|any))\b",
    _I,
)

ValueFn = Callable[[str], list[FindingValue]]


def _vals_date(ev: str) -> list[FindingValue]:
    return [FindingValue(name="date", value=d) for d in extract_dates(ev)[:1]]


_EFFECTIVE_CUE = re.compile(r"effective\s+(?:as\s+of|on|from|upon)\s+|(?:commence|begin)s?\s+on\s+", re.I)
_EFFECTIVE_DEF = re.compile(r"\(\s*(?:the\s+)?[\"“]?(?:Effective|Commencement)\s+Date", re.I)


def _vals_effective_date(ev: str) -> list[FindingValue]:
    """The effective date: the date right after "effective as of/on" or right before
    '(the "Effective Date")'; else the first date. A preamble often states the signing date
    first ("made on March 1 ... effective as of April 1"), so the first date is a last resort."""
    dates = [(m.start(), m.end(), m.group(0).strip()) for m in DATE_RE.finditer(ev)]
    if not dates:
        return []
    for cue in _EFFECTIVE_CUE.finditer(ev):
        after = [d for d in dates if 0 <= d[0] - cue.end() <= 5]
        if after:
            return [FindingValue(name="date", value=after[0][2])]
    for m in _EFFECTIVE_DEF.finditer(ev):
        before = [d for d in dates if 0 <= m.start() - d[1] <= 5]
        if before:
            return [FindingValue(name="date", value=before[-1][2])]
    return [FindingValue(name="date", value=dates[0][2])]


def _vals_duration(ev: str, n: int = 1) -> list[FindingValue]:
    return [FindingValue(name="duration", value=d) for d in extract_durations(ev)[:n]]


def _vals_money(ev: str) -> list[FindingValue]:
    out = [FindingValue(name="amount", value=a) for a in extract_amounts(ev)[:2]]
    out += [FindingValue(name="percentage", value=p) for p in extract_percentages(ev)[:2]]
    return out


def _vals_expiration(ev: str) -> list[FindingValue]:
    out = _vals_date(ev)
    if not out:
        out = _vals_duration(ev)
    m = re.search(r"\bperpetual\w*|in perpetuity|indefinite\w*", ev, _I)
    if m:
        out.append(FindingValue(name="duration", value=m.group(0)))
    return out


# Words just before a duration that make it a notice period ("at least ninety (90) days' notice").
_NOTICE_BEFORE = re.compile(
    r"(?:notice|at least|not less than|no less than|no later than|not later than|within|minimum of)\W*(?:\w+\W+){0,2}$",
    _I,
)
_NOTICE_AFTER = re.compile(
    r"^\W{0,3}(?:\w+\W+){0,1}(?:prior|before|in advance|notice|preceding|after (?:receipt|notice|the date))", _I
)
_RENEWAL_CUE = re.compile(
    r"(?:renew\w*|extend\w*|extension|successive|additional|consecutive|further|subsequent|thereafter)\b", _I
)


def _renewal_durations(ev: str) -> list[re.Match[str]]:
    """Durations in ``ev`` that are not notice periods (nothing like "notice"/"at least" just before,
    "prior"/"before"/"notice" just after)."""
    out = []
    for m in DURATION_RE.finditer(ev):
        if re.fullmatch(r"(?:an?|the)\s+\w+", m.group(0).strip(), _I):
            continue
        if _NOTICE_BEFORE.search(ev[max(0, m.start() - 40) : m.start()]) or _NOTICE_AFTER.search(
            ev[m.end() : m.end() + 30]
        ):
            continue
        out.append(m)
    return out


def _vals_renewal(ev: str) -> list[FindingValue]:
    """The renewal term: the first non-notice duration after a renewal cue ("renew for successive
    one (1) year terms"), else the first non-notice duration; never the notice period that often
    shares the sentence ("unless either party gives ninety (90) days' notice")."""
    durs = _renewal_durations(ev)
    cues = [c.end() for c in _RENEWAL_CUE.finditer(ev)]
    for d in durs:
        if any(0 <= d.start() - c <= 60 for c in cues):
            return [FindingValue(name="duration", value=d.group(0).strip())]
    if durs and cues:
        return [FindingValue(name="duration", value=durs[0].group(0).strip())]
    return []


def _vals_notice(ev: str) -> list[FindingValue]:
    """The notice period: the day/month/week duration nearest to "notice"/"not to renew" (else the
    first such duration); a renewal term ("successive two-year terms") is never taken."""
    m = re.search(r"notice|not to renew|non-?renewal", ev, _I)
    durs = [
        d
        for d in DURATION_RE.finditer(ev)
        if re.search(r"day|month|week", d.group(0), _I)
        and not re.match(r"(?:successive|additional|consecutive|further)\b", d.group(0), _I)
        and not re.fullmatch(r"(?:an?|the)\s+\w+", d.group(0).strip(), _I)
    ]
    if not durs:
        return []
    best = min(durs, key=lambda d: abs(d.start() - m.start())) if m else durs[0]
    return [FindingValue(name="duration", value=best.group(0).strip())]


#: Words saying a limit of liability binds every party: "either party's", "neither party", "the parties'".
MUTUAL_LIABILITY = re.compile(
    r"(?:either|each|neither|any|no|both)\s+part(?:y|ies)(?:['’]s?)?|the\s+parties['’]?|each\s+of\s+the\s+parties", _I
)
_WHO = r"(?P<who>(?:the\s+)?[A-Z][\w&.\-]*(?:\s+[A-Z][\w&.\-]*){0,3})"
#: A limit of one party's liability: "Supplier's total liability", "the liability of the Company", "in no event
#: shall Licensor be liable", "Distributor shall not be liable".
_ONE_SIDED = [
    re.compile(_WHO + r"['’]s?\s+(?:\w+\s+){0,3}?liabilit"),
    re.compile(r"\bliabilit(?:y|ies)\s+of\s+" + _WHO),
    re.compile(r"\b(?:shall|will|may)\s+" + _WHO + r"\s+be\s+liable"),
    re.compile(_WHO + r"\s+(?:shall|will|may)\s+not\s+be\s+liable"),
]
_NOT_A_PARTY = re.compile(
    r"(?:either|neither|each|no|any|in|the|party|parties|this|such|agreement|company['’]s|its|their|our|we|it|"
    r"section|article|notwithstanding|except|nothing|under|total|aggregate|maximum|licen[cs]e)$",
    _I,
)


def liability_of(ev: str) -> list[FindingValue]:
    """Whose liability a limitation-of-liability quote limits, as a ``liability_of`` value: the words saying
    it binds every party (``"either party"``, ``"neither party"``, :data:`MUTUAL_LIABILITY`), else the one party
    it names (``"Supplier"`` in "Supplier's total liability …", "in no event shall Supplier be liable …");
    nothing when the quote names neither. A cap that limits one party's liability leaves the other's uncapped:
    the summary and the report say whose."""
    mutual = MUTUAL_LIABILITY.search(ev)
    if mutual:
        return [FindingValue(name="liability_of", value=mutual.group(0))]
    for rx in _ONE_SIDED:
        for m in rx.finditer(ev):
            who = re.sub(r"^the\s+", "", m.group("who"), flags=_I)
            if not _NOT_A_PARTY.match(who.split()[-1]) and not _NOT_A_PARTY.match(who.split()[0]):
                return [FindingValue(name="liability_of", value=who)]
    return []


def _vals_governing(ev: str) -> list[FindingValue]:
    return [FindingValue(name="jurisdiction", value=j) for j in extract_jurisdictions(ev)[:2]]


_VALUE_FNS: dict[ClauseType, ValueFn] = {
    C.agreement_date: _vals_date,
    C.effective_date: _vals_effective_date,
    C.expiration_date: _vals_expiration,
    C.renewal_term: _vals_renewal,
    C.notice_period_to_terminate_renewal: _vals_notice,
    C.governing_law: _vals_governing,
    C.cap_on_liability: lambda ev: (
        [FindingValue(name="amount", value=a) for a in extract_amounts(ev)[:2]] + liability_of(ev)
    ),
    C.revenue_profit_sharing: _vals_money,
    C.minimum_commitment: _vals_money,
    C.liquidated_damages: _vals_money,
    C.insurance: lambda ev: [FindingValue(name="amount", value=a) for a in extract_amounts(ev)[:2]],
    C.warranty_duration: _vals_duration,
    C.termination_for_convenience: _vals_duration,
    C.post_termination_services: _vals_duration,
}


def _inside_run(text: str, start: int, end: int, anchor: int, seam: str) -> tuple[int, int]:
    """Clip ``[start, end)`` of ``text`` to the run between review-unit seams that holds ``anchor``
    (whitespace stripped); ``(start, start)`` (empty) when the anchor lies on a seam itself."""
    pos = start
    for piece in text[start:end].split(seam):
        a, b = pos, pos + len(piece)
        pos = b + len(seam)
        if a <= anchor < b:
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            return a, b
    return start, start


class RulesBackend:
    """Offline, deterministic :class:`~tasks.review.backends.base.ReviewBackend` built from regex rules.

    Attributes: ``name == "rules"``; ``model == RULES_VERSION`` (``"rules-v8"``), part of the
    review idempotency key. Thread-safe and stateless: all patterns are compiled at import.
    """

    name: str = "rules"
    model: str = RULES_VERSION
    RULES_VERSION: str = RULES_VERSION

    def warm_cache(self) -> list:
        """No prompt cache to warm (no model calls): ``[]``, so a run can call ``warm_cache()`` on
        any backend."""
        return []

    def review_chunk(self, chunk: Chunk, document_name: str) -> ChunkReview:
        """Review one chunk with the rule set.

        Returns a :class:`ChunkReview` with ``outcome == ok``, ``calls == []`` and at most one
        finding per (category, sentence). Document-level categories (document name, parties,
        agreement date) are only looked for in a document's first chunk (``chunk.index == 0`` or
        ``chunk.page_start == 1``). ``document_name`` is not used for matching. A chunk of a filing
        (``chunk.profile == "filing"``) is reviewed with :class:`~tasks.review.backends.filing_rules.FilingRules`. Never raises
        on odd text; an empty chunk yields no findings.
        """
        if chunk.profile == "filing":  # the filing profile's own rules
            return FilingRules().review_chunk(chunk)
        text = chunk.text
        findings: list[Finding] = []
        if not text.strip():
            return ChunkReview(chunk_index=chunk.index, findings=[], calls=[])
        seam = UNIT_SEPARATOR.strip()
        ctx = _Ctx(text, split_sentences(text))
        first = chunk.index == 0 or chunk.page_start == 1
        seen: set[tuple[ClauseType, int]] = set()

        def emit(
            cat: ClauseType, a: int, b: int, anchor: int, anchor_end: int, values: list[FindingValue] | None = None
        ) -> None:
            s, e = _word_trim(text, a, b, anchor, anchor_end)
            if seam in text[s:e]:  # a review unit's "passage omitted" seam is not document text
                s, e = _inside_run(text, s, e, anchor, seam)
            if s >= e:
                return
            ev = text[s:e]
            vals = values if values is not None else (_VALUE_FNS[cat](ev) if cat in _VALUE_FNS else [])
            vals = _clip(vals, ev)
            findings.append(
                Finding(
                    clause_type=cat,
                    summary=summarize(cat, vals),
                    risk=default_risk(cat),
                    evidence=ev,
                    page=chunk.page_at(s),
                    values=vals,
                )
            )

        if first:
            self._document_level(ctx, emit, seen)

        low = text.translate(_LOWER)
        hits: dict[str, list[int]] = {}
        verb_ok: dict[int, bool] = {}
        for rule in RULES:
            if rule.doc_level and not first:
                continue
            end = len(text) if rule.head_chars is None else min(len(text), rule.head_chars)
            cand: set[int] = set()
            for key in rule.keys:
                if key not in hits:
                    hits[key] = _find_sentences(low, key, ctx)
                cand.update(hits[key])
            for i in sorted(cand):
                a, b = ctx.spans[i]
                if a >= end:
                    break
                if (rule.category, i) in seen:
                    continue
                sent = text[a:b]
                if rule.pattern is not None:
                    pm = rule.pattern.search(sent)
                    if pm is None:
                        continue
                    anchor, anchor_end = a + pm.start(), a + pm.end()
                else:
                    k = min((p for p in (low.find(key, a, b) for key in rule.keys) if p >= 0), default=a)
                    anchor, anchor_end = k, k
                if rule.require and not all(p.search(sent) for p in rule.require):
                    continue
                if rule.exclude and any(p.search(sent) for p in rule.exclude):
                    continue
                if i not in verb_ok:
                    verb_ok[i] = b - a > 120 or bool(_VERB_RE.search(sent))
                if not verb_ok[i] and not rule.doc_level:
                    # A bare heading ("12. Non-Compete.") is not a clause: quote the sentence that
                    # opens the section instead. Some categories' headings are mostly negations.
                    if rule.category in _NO_HEADING or i + 1 >= len(ctx.spans) or (rule.category, i + 1) in seen:
                        continue
                    seen.add((rule.category, i))
                    i += 1
                    a, b = ctx.spans[i]
                    anchor = anchor_end = a
                seen.add((rule.category, i))
                emit(rule.category, a, b, anchor, anchor_end)
        return ChunkReview(chunk_index=chunk.index, findings=findings, calls=[])

    # -- document-level extractors --------------------------------------------------------------

    def _document_level(self, ctx: _Ctx, emit: Callable[..., None], seen: set[tuple[ClauseType, int]]) -> None:
        """Title (document_name) and preamble parties from the head of a first chunk."""
        text = ctx.text
        head_end = min(len(text), PREAMBLE_CHARS)
        # document name: an upper-case title line, else "This ... Agreement" in the preamble
        title_done = False
        m: re.Match[str] | None
        for m in re.finditer(r"[^\n]+", text[:head_end]):
            line = m.group(0)
            for seg in re.finditer(r"\S(?:[^ ]| (?! ))*", line):  # runs split on 2+ spaces
                s = seg.group(0).strip()
                if (
                    4 <= len(s) <= 120
                    and _TITLE_WORDS.search(s)
                    and sum(c.isupper() for c in s) >= 0.6 * sum(c.isalpha() for c in s)
                ):
                    if re.match(r"(?:EXHIBIT|CONFIDENTIAL|\*)", s) and not re.search(r"AGREEMENT|CONTRACT", s):
                        continue
                    a = m.start() + seg.start()
                    i = ctx.sentence_at(a)
                    if i is not None:
                        seen.add((C.document_name, i))
                    emit(C.document_name, a, a + len(seg.group(0).rstrip()), a, a, [FindingValue(name="name", value=s)])
                    title_done = True
                    break
            if title_done:
                break
        if not title_done:
            # an upper-case title run inside a longer line, then a title-case line of its own
            title_end = min(head_end, 1200)
            m = _CAPS_TITLE_RE.search(text, 0, title_end) or _LINE_TITLE_RE.search(text, 0, title_end)
            if m:
                name = m.group("t") if "t" in m.groupdict() else m.group(0)
                a = m.start("t") if "t" in m.groupdict() else m.start()
                name = name.strip(" ,")
                if len(name) >= 4:
                    i = ctx.sentence_at(a)
                    if i is not None:
                        seen.add((C.document_name, i))
                    emit(C.document_name, a, a + len(name), a, a, [FindingValue(name="name", value=name)])
                    title_done = True
        if not title_done:
            m = _THIS_AGREEMENT.search(text, 0, head_end)
            if m:
                i = ctx.sentence_at(m.start())
                if i is not None:
                    a, b = ctx.spans[i]
                    seen.add((C.document_name, i))
                    emit(C.document_name, a, b, m.start(), m.end(), [FindingValue(name="name", value=m.group("n"))])
        # parties: first preamble sentence with between/among, else "X and Y agree"
        for i, (a, b) in enumerate(ctx.spans):
            if a > head_end:
                break
            sent = text[a:b]
            if not re.search(r"agreement|contract|between|among|parties", sent, _I):
                continue
            names = extract_parties(sent)
            if len(names) >= 2 or (names and re.search(r"\bamong\b", sent, _I)):
                between = _PREAMBLE_RE.search(sent)
                assert between is not None, "extract_parties finds names only after it"
                start, _e = _word_trim(text, a, b, a + between.start(), a + between.end())
                seen.add((C.parties, i))
                emit(C.parties, a, b, start, start, [FindingValue(name="party", value=n) for n in names])
                return
        # cover page: "between" / name / "and" / name, each on lines of their own
        m = _COVER_PARTIES_RE.search(text, 0, head_end)
        if m:
            names = [m.group(g).strip(" ,;:") for g in ("a", "b")]
            names = [
                re.split(r"\s*[,(]\s*(?:an?\s|acting\s|\(|[\"“])", DATE_RE.split(n)[0])[0].strip(" ,") for n in names
            ]
            i = ctx.sentence_at(m.start("a"))
            if i is not None:
                seen.add((C.parties, i))
            emit(
                C.parties,
                m.start("a"),
                m.end("b"),
                m.start("a"),
                m.start("a"),
                [FindingValue(name="party", value=n) for n in names if len(n) >= 2],
            )
            return
        # a preamble block: "BETWEEN:" ending its line, then each party with its description, "- and -" between
        for m in _BLOCK_START.finditer(text, 0, head_end):
            end = _BLOCK_END.search(text, m.end(), min(len(text), m.end() + MAX_EVIDENCE_CHARS))
            b = end.start() if end else min(len(text), m.start() + MAX_EVIDENCE_CHARS)
            names = extract_parties(text[m.start() : b])
            if len(names) >= 2:
                i = ctx.sentence_at(m.start())
                if i is not None:
                    seen.add((C.parties, i))
                a = m.start() + len(m.group(0)) - len(m.group(0).lstrip())
                emit(C.parties, a, b, a, a, [FindingValue(name="party", value=n) for n in names])
                return
        # fallback: a sentence naming the parties by defined terms ("X ("Company") and Y ("Consultant")")
        for i, (a, b) in enumerate(ctx.spans):
            if a > head_end:
                break
            sent = text[a:b]
            defined = re.findall(r"\((?:the\s+)?[\"“][A-Z][^\"”]{1,40}[\"”]\)", sent)
            if len(defined) >= 2 and re.search(r"agree|enter|made|between", sent, _I):
                seen.add((C.parties, i))
                emit(C.parties, a, b, a, a, [])
                return
        # last resort: the first head sentence naming an entity ("Acme Corp.", "Foo Ltd")
        for i, (a, b) in enumerate(ctx.spans):
            if a > head_end:
                break
            m = _ENTITY_RE.search(text, a, b)
            if m:
                seen.add((C.parties, i))
                emit(C.parties, a, b, m.start(), m.end(), [FindingValue(name="party", value=m.group(0))])
                return
