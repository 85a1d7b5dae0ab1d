"""A contract's key terms read from its whole text, each with the words it rests on and how it was computed.

The terms a compliance team files and calendars: the parties (with their defined names), the agreement
date, the effective date, the expiration date (stated, or computed from the effective date and the term),
the renewal term, the notice period to stop a renewal, and the governing law. They are the fields of CUAD's
``*-Answer`` columns (``CUAD_v1_README.txt``, "CATEGORY LIST": Parties, Agreement Date, Effective Date,
Expiration Date, Renewal Term, Notice Period To Terminate Renewal, Governing Law).

:func:`read_key_terms` takes a document's text (as extracted; line and page breaks anywhere) and returns a
:class:`KeyTerms`. Every :class:`KeyTerm` carries ``quote`` (the document's words, whitespace collapsed),
``start``/``end`` (their offsets in the text given) and ``basis`` (how the value follows from them:
``"stated: 'dated as of April 29, 2010'"``, ``"Effective Date 2010-04-29 + 4 years"``).

Where the contract does not give what a value needs, the value is left out and :attr:`KeyTerms.gaps` says
why ("term runs until the last patent expires: no date to compute"): a wrong date in a compliance calendar
is worse than a missing one.

Rules for computed dates (``docs/deadlines.md``):

- a term of N years/months "from", "after" or "commencing on" the Effective Date ends on the anniversary
  (the day of the event is not counted: the convention of CUAD's lawyers' answers, "two (2) years from and
  after the Effective Date" of 5/22/00 → 5/22/02); months and years are calendar ones (python-dateutil's
  ``relativedelta``); a term stated "less one day" ends the day before;
- a term that ends on a named date ("shall terminate on December 31, 2034") ends then;
- "until terminated", "in perpetuity" and "indefinitely" make the term ``perpetual``;
- a term tied to an event ("until the last patent expires", "co-terminous with the MSA") has no date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from dateutil.relativedelta import relativedelta

from tasks.check.values import DateOrder, Kind, Value, decide_date_order, find_dates, find_durations

#: Field names, in report order, with their labels.
FIELDS: dict[str, str] = {
    "parties": "Parties",
    "agreement_date": "Agreement date",
    "effective_date": "Effective date",
    "expiration_date": "Expiration date",
    "renewal_term": "Renewal term",
    "notice_period": "Notice to stop renewal",
    "governing_law": "Governing law",
}

#: Characters from the start of the text searched for the title, parties and dates of the preamble.
PREAMBLE_CHARS = 4000

_I = re.IGNORECASE


@dataclass(frozen=True)
class KeyTerm:
    """One key-term value: ``field`` (a key of :data:`FIELDS`), ``value`` (a party ``Name ("Short")``, an
    ISO date, a period ``"1 year"``, ``"perpetual"`` or a jurisdiction), ``basis`` (how it follows from the
    words), ``quote`` (the words, whitespace collapsed) and ``start``/``end`` (their offsets in the text)."""

    field: str
    value: str
    basis: str
    quote: str
    start: int
    end: int

    def as_json(self) -> dict[str, str | int]:
        """JSON-safe form."""
        return {
            "field": self.field,
            "value": self.value,
            "basis": self.basis,
            "quote": self.quote,
            "start": self.start,
            "end": self.end,
        }


@dataclass
class KeyTerms:
    """A document's key terms: ``terms`` in :data:`FIELDS` order (parties may repeat) and ``gaps``
    ``{field: why no value is shown}`` for fields the contract speaks of without giving what they need."""

    terms: list[KeyTerm] = field(default_factory=list)
    gaps: dict[str, str] = field(default_factory=dict)

    def values(self, name: str) -> list[str]:
        """The values of one field, in order."""
        return [t.value for t in self.terms if t.field == name]

    def first(self, name: str) -> KeyTerm | None:
        """The first term of one field, or None."""
        return next((t for t in self.terms if t.field == name), None)

    def as_json(self) -> dict[str, object]:
        """``{"terms": [KeyTerm.as_json()], "gaps": {field: why}}``."""
        return {"terms": [t.as_json() for t in self.terms], "gaps": dict(self.gaps)}


# --------------------------------------------------------------------------------------------
# Text with whitespace collapsed, mapped back to the original offsets
# --------------------------------------------------------------------------------------------


#: A rule drawn with dashes or equals signs ("--------"): layout, read as a space.
_RULE_LINE = re.compile(r"[-=]{3,}")


#: An ordinal split by the text layer ("26t h day", "1s t"): the space inside it is dropped.
_SPLIT_ORDINAL = re.compile(r"(?<=\d[snrt])[ \t](?=[tdh]\b)")


class Flat:
    """``text`` with every whitespace run made one space; :meth:`span` maps offsets back."""

    def __init__(self, text: str) -> None:
        out: list[str] = []
        offs: list[int] = []
        space = False
        rules = {i for m in _RULE_LINE.finditer(text) for i in range(m.start(), m.end())}
        rules |= {m.start() for m in _SPLIT_ORDINAL.finditer(text)}  # "26t h day of May" → "26th day of May"
        for i, ch in enumerate(text):
            if ch.isspace() or i in rules:
                if i in rules and ch == " " and i > 0 and text[i - 1].isalpha() and text[i - 2 : i - 1].isdigit():
                    continue
                if not space and out:
                    out.append(" ")
                    offs.append(i)
                space = True
                continue
            space = False
            out.append(ch)
            offs.append(i)
        self.text = "".join(out)
        self.offs = offs
        self.size = len(text)

    def span(self, a: int, b: int) -> tuple[int, int]:
        """Original ``(start, end)`` of flat ``[a, b)``."""
        if not self.offs:
            return 0, 0
        a = min(max(a, 0), len(self.offs) - 1)
        b = min(max(b, a + 1), len(self.offs))
        return self.offs[a], self.offs[b - 1] + 1


def _sentence(flat: str, pos: int, limit: int = 700) -> tuple[int, int]:
    """The sentence of ``flat`` around ``pos``: from after the previous ". " (or line start) to the next."""
    a = max(0, pos - limit)
    # the lookahead of a sentence end that ends right at pos reads the character at pos: search one further
    prev = [m.end() for m in _SENT_END.finditer(flat, a, min(len(flat), pos + 1)) if m.end() <= pos]
    start = prev[-1] if prev else a
    m = _SENT_END.search(flat, pos, min(len(flat), pos + limit))
    end = m.start() + 1 if m else min(len(flat), pos + limit)
    return start, end


#: The end of a sentence: a full stop (not of an abbreviation or initial) followed by a space and a capital.
_SENT_END = re.compile(
    r"(?<!\b[A-Z])(?<!\bInc)(?<!\bCo)(?<!\bCorp)(?<!\bLtd)(?<!\bNo)(?<!\bSec)(?<!\bU\.S)(?<!\bL\.P)(?<!\bS\.A)"
    r"[.;:]\s+(?=[A-Z(\d\"“])"
)


# --------------------------------------------------------------------------------------------
# Dates
# --------------------------------------------------------------------------------------------


def _day(v: Value) -> date | None:
    if v.kind is not Kind.date or len(v.dates) != 1:
        return None
    y, m, d = v.dates[0]
    if d is None:
        return None
    try:
        return date(y, m, d)
    except ValueError:
        return None


_DAY_BEFORE = re.compile(
    r"(?:\b(?P<n>\d{1,2})(?:st|nd|rd|th)?|\(\s*(?P<m>\d{1,2})(?:st|nd|rd|th)?\s*\))\s+day\s+of\s*$", _I
)


def _dates(text: str, a: int, b: int, order: DateOrder = DateOrder.mdy) -> list[tuple[int, int, Value]]:
    """Full calendar dates (day known, one reading) in ``text[a:b]``: ``(start, end, value)``."""
    out = []
    for v in find_dates(text[a:b], order):
        if v.kind is Kind.date and len(v.dates) == 1 and v.dates[0][2] is None:
            # "the first (1st) day of January, 1996": the day stands before the month the value starts at
            day = _DAY_BEFORE.search(text[max(0, a + v.start - 40) : a + v.start])
            if day:
                n = int(day.group("n") or day.group("m"))
                y, mo, _d = v.dates[0]
                v = Value(
                    v.kind,
                    text[a + v.start - len(day.group(0)) : a + v.end],
                    v.start - len(day.group(0)),
                    v.end,
                    dates=((y, mo, n),),
                )
        if v.kind is Kind.date and len(v.dates) == 1 and v.dates[0][2] is not None and _day(v) is not None:
            out.append((a + v.start, a + v.end, v))
    return out


#: A date whose day and month are left blank in the filed copy: "[ ] day of [ ], 2020", "[·], 2019", "____, 2020".
_BLANK_DATE = re.compile(
    r"(?:\[\s*[^\]\da-zA-Z]{0,6}\s*\]|_{2,})\s*(?:(?:st|nd|rd|th)\s+)?(?:day\s+of\s+(?:\[\s*[^\]\da-zA-Z]{0,6}\s*\]|_{2,}))?"
    r"\s*,?\s+(?P<y>(?:19|20)\d{2})\b"
    r"|(?<=\bof)\s+,\s*(?P<y2>(?:19|20)\d{2})\b",  # "effective as of , 2020": the blank is gone
    _I,
)


def _candidates(text: str, a: int, b: int, order: DateOrder = DateOrder.mdy) -> list[tuple[int, int, str]]:
    """Dates in ``text[a:b]`` a key term can show, in order: ``(start, end, iso)``; ``iso`` is a full date
    (``2020-03-01``) or, for a date whose day and month are left blank, its year (``2020``)."""
    out = [(s, e, d.isoformat()) for s, e, v in _dates(text, a, b, order) if (d := _day(v)) is not None]
    out += [(a + m.start(), a + m.end(), m.group("y") or m.group("y2")) for m in _BLANK_DATE.finditer(text[a:b])]
    return sorted(out)


_AGREEMENT_CUE = re.compile(
    r"(?:dated|made|entered\s+into|executed|signed|concluded|effective)\s*(?:and\s+(?:entered\s+into|effective)\s*)?"
    r"(?:as\s+of|on|this|at|effective|,)?\s*(?:the\s+date\s+of\s*)?"
    r"|\bas\s+of\s+|\bDate[d]?\s*:\s*|\bthis\s+(?=\d|\w+\s+\(\d)",
    _I,
)
_EFFECTIVE_NAME = r"(?:Effective|Commencement|Start)\s+Date"
_EFFECTIVE_DEF_AFTER = re.compile(
    rf"^\W{{0,4}}\(?\s*(?:the|such\s+date,?\s+the|hereinafter(?:\s+referred\s+to\s+as)?(?:\s+the)?)?\s*[\"“']?{_EFFECTIVE_NAME}",
    _I,
)
_EFFECTIVE_BEFORE = re.compile(
    rf"{_EFFECTIVE_NAME}\W{{0,3}}(?:\s*(?:means|shall\s+mean|shall\s+be|is|of\s+this\s+Agreement\s+(?:is|shall\s+be)|:))\s*$"
    r"|effective\s+date\s+of\s+(?:this|the)\s+\w+\s+(?:will|shall)\s+be\s*$",
    _I,
)
#: "effective as of", "commences on": an effective date only where the agreement (or its term) is the subject.
_EFFECTIVE_CUE = re.compile(
    r"(?:\beffective\s+(?:as\s+of|on|from|upon|this|the)?\s*|(?:commenc(?:e|es|ing)|begin(?:s|ning)?|start(?:s|ing)?)\s+(?:on|as\s+of)\s*)$",
    _I,
)
_AGREEMENT_SUBJECT = re.compile(
    r"\b(?:this|the)\s+(?:[\w-]+\s+){0,5}(?:Agreement|AGREEMENT|Contract|Amendment|License)\b[^.;]{0,160}$|\bthe\s+(?:initial\s+)?(?i:term)\b[^.;]{0,60}$",
)
_DATE_OF_AGREEMENT_EFFECTIVE = re.compile(
    rf"[\"“]?{_EFFECTIVE_NAME}[\"”]?\s*(?:means|shall\s+mean|shall\s+be|is)\s+(?:the\s+date\s+(?:of\s+this\s+Agreement|"
    r"first\s+(?:above\s+)?(?:written|set\s+forth)|hereof|set\s+forth\s+above|of\s+execution)|the\s+date\s+first)"
    r"|effective\s+as\s+of\s+the\s+date\s+(?:first\s+)?(?:above\s+)?(?:written|set\s+forth|hereof)"
    r"|(?:as\s+of\s+)?the\s+date\s+(?:first\s+)?(?:above\s+)?(?:written|set\s+forth)[^.]{0,40}\(\s*(?:the\s+)?[\"“]Effective\s+Date",
    _I,
)


#: "This Agreement shall become effective on the date of its execution": the Effective Date is the date it is dated.
_EFFECTIVE_ON_SIGNING = re.compile(
    r"(?:(?:become|be|is)\s+effective|commence[sd]?|begin|begins|start|starts)\s+(?:as\s+of\s+|on\s+|upon\s+)(?:the\s+)?"
    r"(?:date\s+(?:of\s+)?(?:its\s+)?(?:execution|signature|signing|hereof|of\s+this\s+(?:Agreement|document))|"
    r"execution|signature|signing|(?:the\s+)?(?:first\s+)?date\s+(?:first\s+)?(?:above\s+)?(?:written|set\s+forth))",
    _I,
)


def _iso(d: date) -> str:
    return d.isoformat()


# --------------------------------------------------------------------------------------------
# Parties
# --------------------------------------------------------------------------------------------

_ENTITY = (
    r"(?:Inc|Incorporated|LLC|L\.L\.C|Ltd|Limited|Corp|Corporation|Co|Company|L\.P|LP|LLP|N\.A|S\.A|plc|PLC|"
    r"GmbH|AG|B\.V|N\.V|S\.A\.S|S\.p\.A|Pty|SE|P\.C|S\.R\.L|S\.r\.l|SpA|AB|AS|A/S|Oy|KK|K\.K|Trust|Bank|"
    r"Partners|Holdings|Group|Association|University|Institute|Foundation|Authority|GIE|G\.I\.E)\b\.?"
)
#: Suffixes only a company's name ends with (not "Bank", "Trust", "Group", which also end descriptions).
_STRONG_ENTITY = (
    r"(?:Inc|Incorporated|LLC|L\.L\.C|Ltd|Limited|Corp|Corporation|Company|L\.P|LP|LLP|plc|GmbH|AG|S\.A|N\.V|B\.V)\b\.?"
)
_BETWEEN = re.compile(
    r"\b(?:by\s+and\s+(?:between|among(?:st)?)|between|among(?:st)?|(?<=entered\s)into\s+by(?!\s+and\s))\b\s*:?\s*", _I
)
#: Where a preamble's sentence ends: a full stop before the words that open the next one.
_PREAMBLE_END = re.compile(
    r"\.\s+(?=(?:The|This|Each|In|Both|Whereas|WHEREAS|NOW|Now|Article|ARTICLE|Section|SECTION|Background|BACKGROUND|"
    r"Recitals|RECITALS|It\s+is|All|Capitalized|For|As|Unless|Definitions|DEFINITIONS|\d{1,2}(?:\.\d+)*\.?\s+[A-Z]|[A-Z]\.\s|"
    r"(?:[A-Z][\w'’.-]*\s+){1,4}(?:and|is|are|has|have|shall|will|desires?|wish(?:es)?|owns?|agrees?|hereby|may)\b))"
    r"|\s(?:Dated|Date|Address|Effective\s+Date)\s*:"
)
_DEFINED = re.compile(
    r"\(\s*(?:(?:hereinafter|herein|hereafter)\s*(?:referred\s+to\s+)?(?:as\s+)?|individually\s+and\s+collectively,?\s*)?"
    r"(?:the\s+|each\s+a\s+|a\s+|an\s+)?[\"“”']+\s*(?P<d>[^\"“”'()]{1,60}?)\s*[\"“”']+"
    r"[^()]{0,80}\)",
    _I,
)
_PARTY_STOP = re.compile(
    r"\b(?:WITNESSETH|RECITALS|W\s?I\s?T\s?N\s?E\s?S\s?S|WHEREAS|NOW,?\s+THEREFORE|BACKGROUND|PREAMBLE|"
    r"The\s+parties\s+(?:hereto\s+)?agree|IN\s+CONSIDERATION)\b",
)
#: Words a party's name never is: roles, pronouns and collective names.
_NOT_A_NAME = re.compile(
    r"^(?:the\s+)?(?:party|parties|company|licensor|licensee|supplier|customer|client|developer|distributor|"
    r"consultant|contractor|seller|buyer|purchaser|vendor|manufacturer|franchisor|franchisee|reseller|agent|"
    r"sponsor|owner|operator|lender|borrower|employee|employer|executive|each|both|either|you|we|us|it|"
    r"its|their|this|such|said|certain|all|any|other|following|undersigned|one|two|three)\b",
    _I,
)


def _clean_name(raw: str) -> str:
    """A party's name from its piece of the party list: descriptions, addresses, dates and brackets after it cut
    off, an entity suffix's full stop kept ("Alpha Inc.")."""
    name = raw.strip(" ,;:-–—\"“”'")
    name = re.sub(r"^(?:(?:and|AND|And|between|BETWEEN|Between|by)\s+)+", "", name)
    name = re.sub(r"^the\s+(?=[A-Z])", "", name)  # "the TOWN OF VINTON, VIRGINIA"
    name = re.sub(r"^(?:(?:1|2|3|4|\(?[a-d]\)|\(?[ivx]+\))[.)]?\s+)", "", name)
    # descriptions after the name: ", a Delaware corporation", "having its office", "with offices"
    name = re.split(
        r",?\s+(?:an?|the)\s+(?:[\w-]+\s+){0,6}?(?:corporation|company|partnership|entity|limited|organi[sz]ation|"
        r"individual|bank|association|trust|society|state|national|agency|body|enterprise|firm|business|"
        r"institution|university|subsidiary|division|citizen|resident|person)\b"
        r"|,?\s+(?:having|with|whose|located|organi[sz]ed|incorporated|existing|duly|registered|acting|residing|"
        r"domiciled|an?\s+individual|of\s+\d|at\s+\d|address|doing\s+business|d/b/a|dba|on\s+behalf|its\s+principal|"
        r"which|who|through|by\s+its)\b"
        r"|,\s*(?:a|an)\s+(?=[A-Z])|\s*\((?!\s*[A-Z][\w.& -]{0,30}\))|\s*[\"“]",
        name,
        maxsplit=1,
    )[0]
    name = re.split(
        r"\s+(?=\d{1,6}\s+[A-Z])|\s*\[|\s+(?:January|February|March|April|May|June|July|August|September|"
        r"October|November|December)\b|\s+(?:With|WITH)\s",
        name,
        maxsplit=1,
    )[0]  # address, date, mark
    tail = list(re.finditer(r"[\s,]" + _ENTITY, name, _I))
    if tail and (
        re.search(r"\d", name[tail[-1].end() :])
        or re.match(r"\s+(?:Dated|DATED|Effective|EFFECTIVE|Service|SERVICE|Date|DATE|[a-z])", name[tail[-1].end() :])
    ):
        name = name[: tail[-1].end()]  # "GARRETT MOTION INC. Dated as of", "VITALIBIS INC a Nevada C"
    bare = name.strip(" ,;:.-–—\"“”'")
    dotted = re.search(r"\b(?:Inc|Co|Corp|Ltd|L\.P|S\.A|N\.V|B\.V|L\.L\.C)\.$", name.strip(" ,;:-–—\"“”'"), _I)
    return bare + ("." if dotted else "")


#: Lower-case words a party's name may hold ("Centre for Probe Development and Commercialization").
_NAME_LOWER = frozenset(
    ["of", "and", "the", "for", "de", "du", "la", "le", "des", "von", "van", "der", "den", "y", "et", "e", "da", "di"]
    + ["do", "dos", "del", "in", "on", "at", "to", "with", "&", "a", "inc", "llc", "ltd", "corp", "co"]
)


def _good_name(name: str, defined: bool = False) -> bool:
    """Whether ``name`` reads as a party's name: capitalised (or lower-case like "ebix.com, Inc." or, with a
    defined name after it, "i-on interactive"), no role word alone, no verb, no heading or page furniture."""
    words = name.split()
    if not (2 <= len(name) <= 120) or not words or len(words) > 14:
        return False
    if _NOT_A_NAME.match(name) and not (len(words) > 1 and re.search(_ENTITY + r"\s*$", name, _I)):
        return False
    if not (
        re.match(r"[A-Z0-9]", name)
        or re.match(r"[a-z][\w-]*(?:\.com|[A-Z])", name)
        or re.search(_ENTITY + r"\s*$", name)
        or (defined and re.match(r"[a-z][\w]*[-\d.]", name) and len(words) <= 4)  # "i-on interactive", "i3 ICS"
    ):
        return False
    if re.match(r"\d[\d:.,]*\s", name) or re.search(r"\b[ap]\.m\b", name):
        return False
    if re.search(
        r"\b(?:ARTICLE|Article|SECTION|Section|TABLE|Table|CONTENTS|Contents|Source|Page|PAGE|EXHIBIT|Exhibit|"
        r"Schedule|SCHEDULE|AGREEMENT|Agreement|CONFIDENTIAL|Confidential)\b",
        name,
    ):
        return False
    if re.search(r"\b(?:is|are|was|were|shall|will|agree[sd]?|hereby|on\s+the|dated|made)\b", name):
        return False
    if re.match(r"(?:Whereas|WHEREAS|As\s+of|AS\s+OF|Dated|DATED|Name|NAME|Address)\b", name):
        return False
    # words of a sentence, not of a name: a lower-case word other than "of", "and", "the", "for" ...
    lower = [
        w
        for w in words[1:]
        if re.fullmatch(r"[a-z][a-z-]*", w.strip(",.;:()")) and w.strip(",.;:()") not in _NAME_LOWER
    ]
    return not lower or (defined and len(words) <= 3)


#: A table of contents' entry: section numbers and page numbers ("Payment Terms 3 3.8 Delay in Payment").
_TOC = re.compile(
    r"\b\d+\.\d+\s+[A-Z]|\s\d{1,3}\s+\d+(?:\.\d+)*\s+[A-Z]|\s\d{1,3}\s+(?:ARTICLE|Article|SECTION|Section)\b"
)


@dataclass
class _Party:
    name: str
    defined: str | None
    start: int
    end: int


def _split_parties(region: str) -> list[tuple[int, int]]:
    """Pieces of a preamble's party list: spans of ``region`` cut at "and", ";" and the ", " after a
    defined name's closing bracket."""
    cuts = [0]
    for m in re.finditer(
        r"(?:(?<=[)”\"])\s*,?\s*|,\s+|;\s*|\s+)(?:[-–—]+\s*)?(?:and|AND|And)(?:\s*[-–—]+)?\s*[,:]?\s+(?=[\"“(]?[A-Za-z0-9])"
        r"|,\s+as\s+(?:[A-Z][\w-]*\s*){1,3}(?:,\s*(?=[A-Z])|\s+(?=and\b))"
        r"|(?<=[)”\"])\s*[,;]\s*(?=[\"“]?[A-Z0-9])"
        r"|(?<=[)”\"])\s+(?=[A-Z][A-Za-z]+\s)",
        region,
    ):
        piece = region[cuts[-1] : m.start()]
        if re.fullmatch(r"\s+(?:and|AND|And)\s+", m.group(0)) and _inside_a_name(piece, region[m.end() : m.end() + 80]):
            continue
        cuts.append(m.start())
        cuts.append(m.end())
    cuts.append(len(region))
    return [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts), 2)]


def _inside_a_name(before: str, after: str) -> bool:
    """Whether a bare "and" (no comma, bracket or quote before it) joins words of one name or place rather
    than two parties: "a company incorporated in England and Wales", "NEW YORK LIFE INSURANCE and ANNUITY
    CORPORATION" (the words before it name nothing yet; the words after it end in an entity suffix)."""
    if re.search(r"\b(?:in|of|under)\s+(?:the\s+)?[A-Z][\w.'’-]*$", before):
        return True
    if re.search(r"[,(\"“”)]|" + _ENTITY, before, _I) or len(before.split()) > 6:
        return False
    head = re.split(r"[,(]", after, maxsplit=1)[0]
    return bool(re.search(r"\s" + _STRONG_ENTITY + r"\s*$", head.strip(), _I)) and len(head.split()) <= 4


#: "Party A (Shipper): ZTO Express Co., Ltd. Address: …" — the labelled parties of a contract drafted in China.
_LABELLED_PARTY = re.compile(
    r"\b(?P<d>Party\s+[A-D]|Licensor|Licensee|Seller|Buyer|Lessor|Lessee|Supplier|Purchaser)\s*(?:\([^)]{1,40}\))?\s*[:：]\s*"
    r"(?P<n>[A-Z][^:：]{1,120}?)(?=\s+(?:Address|Legal\s+Representative|Registered|Domicile|Tel|Contact|Party\s+[A-D]|"
    r"Licensee|Buyer|Lessee|Purchaser)\b|\s*[:：])"
)
#: "X, with a place of business at … ("X") and Y … ("Y") agree to all terms …": a preamble without "between".
_AND_AGREE = re.compile(r"^(?P<r>.{10,900}?)\s+(?:hereby\s+)?(?:agree(?:s)?|enter\s+into)\b", re.S)


def _credible(p: _Party) -> bool:
    """A party read well enough to show: it has a defined name, or its name ends in an entity suffix, or it is
    a person's name (two to four capitalised words)."""
    return bool(
        p.defined
        or re.search(r"[\s,]" + _ENTITY + r"\s*$", p.name, _I)
        or re.fullmatch(r"(?:Dr\.\s+|Mr\.\s+|Ms\.\s+)?[A-Z][a-z]+(?:\s+[A-Z]\.?)?(?:\s+[A-Z][a-z'-]+){1,2}", p.name)
    )


def _read_parties(flat: str) -> tuple[list[_Party], tuple[int, int] | None]:
    """Parties of the preamble's "between/among" clause with their defined names; ``(parties, span)``."""
    head = flat[:PREAMBLE_CHARS]
    labelled = list(_LABELLED_PARTY.finditer(head))
    if len(labelled) >= 2 and labelled[0].start() < 1500:
        got = []
        for m in labelled[:4]:
            name = _clean_name(m.group("n"))
            if _good_name(name):
                got.append(_Party(name, m.group("d"), m.start("n"), m.start("n") + len(name)))
        if len(got) >= 2:
            return got, (labelled[0].start(), labelled[-1].end())
    found = _between_parties(flat, head)
    if found[0]:
        return found
    # "X (…) and Y (…) agree": the opening sentence after the title
    for m in re.finditer(r"(?:AGREEMENT|Agreement|CONTRACT)\s+(?=[A-Z])", head[:1500]):
        am = _AND_AGREE.match(flat, m.end())
        if am and re.search(r"\band\b", am.group("r")) and _DEFINED.search(am.group("r")):
            region = am.group("r")
            parties = _parties_in(region, m.end())
            if len(parties) >= 2:
                return parties, (m.end(), am.end())
    return [], None


def _between_parties(flat: str, head: str) -> tuple[list[_Party], tuple[int, int] | None]:
    for bm in _BETWEEN.finditer(head):
        if not re.search(
            r"agreement|contract|made|entered|dated|executed|memorandum|lease|license|amendment|deed|undertaking",
            flat[max(0, bm.start() - 300) : bm.start()],
            _I,
        ):
            continue
        # the clause runs to the end of its sentence or the recitals, at most 1,500 characters
        end = min(len(flat), bm.end() + 1500)
        stop = _PARTY_STOP.search(flat, bm.end(), end)
        if stop:
            end = stop.start()
        sent_end = _PREAMBLE_END.search(flat, bm.end(), end)
        if sent_end:
            end = sent_end.start() + 1
        parties = _parties_in(flat[bm.end() : end], bm.end())
        if len(parties) >= 2 or (parties and re.search(r"among", bm.group(0), _I)):
            return parties, (bm.start(), end)
    return [], None


def _name_words(name: str) -> set[str]:
    return set(re.findall(r"[0-9a-z]+", name.lower())) - {"inc", "llc", "ltd", "corp", "co", "the", "and", "of"}


def _same_party(a: str, b: str) -> bool:
    """Two mentions of one party ("FIBROGEN, INC." on the cover, "FibroGen, Inc." in the preamble)."""
    wa, wb = _name_words(a), _name_words(b)
    return bool(wa and wb) and (wa <= wb or wb <= wa)


def _parties_in(region: str, offset: int) -> list[_Party]:
    """The parties of a preamble's party list ``region`` (at ``offset`` of the flat text)."""
    parties: list[_Party] = []
    for a, b in _split_parties(region):
        piece = region[a:b]
        toc = _TOC.search(piece) or re.search(r"\bTABLE\s+OF\s+CONTENTS\b|\bTable\s+of\s+Contents\b", piece)
        if toc:  # a table of contents follows the cover page's names: the list ends here
            piece = piece[: toc.start()]
        if not piece.strip():
            if toc:
                break
            continue
        name = _clean_name(piece)
        defined = _DEFINED.search(piece)
        short = defined.group("d").strip() if defined else None
        if short and (
            short.lower() in ("party", "parties", "we,", "we")
            or re.search(r"\b(?:Agreement|Date|Order|Note|Plan|Merger|Term|Stock|Effective)\b", short)
        ):
            short = None
        if not _good_name(name, defined=short is not None):
            if short and parties and parties[-1].defined is None:  # "… organized and existing … ("Short")"
                parties[-1].defined = short
            if toc:
                break
            continue
        off = offset + a + max(0, piece.find(name[:10]))
        parties.append(_Party(name, short, off, offset + b))
        if len(parties) >= 6 or toc:
            break
    unique: list[_Party] = []
    for p in parties:  # a cover page and its preamble name the same party twice: keep one, with its defined name
        twin = next((u for u in unique if _same_party(u.name, p.name)), None)
        if twin is None:
            unique.append(p)
        elif twin.defined is None:
            twin.defined = p.defined
    return unique


# --------------------------------------------------------------------------------------------
# Term, renewal, notice
# --------------------------------------------------------------------------------------------

_TERM_CUE = re.compile(
    r"\b(?:(?:initial\s+)?term\s+of\s+(?:this|the)\s+(?:Agreement|Contract|License)|this\s+(?:Agreement|Contract)\s+"
    r"(?:shall|will)\s+(?:commence|begin|become\s+effective|be\s+effective|remain|continue|have\s+(?:an\s+)?(?:initial\s+)?term|"
    r"be\s+in\s+(?:full\s+)?force|expire|terminate|run)|(?:the\s+)?(?:initial\s+)?term\s+(?:hereof|of\s+this)|"
    r"Initial\s+Term|(?:the\s+)?Term\s+(?:shall|will)\s+(?:commence|begin|be|continue|expire|run)|"
    r"this\s+(?:Agreement|Contract)\s+(?:is|shall\s+be)\s+(?:valid|effective)\s+for)",
    _I,
)
_PERPETUAL = re.compile(
    r"\b(?:in\s+perpetuity|perpetual(?:ly)?|indefinite(?:ly)?|(?:continue|remain)\s+(?:in\s+(?:full\s+)?(?:force|effect)(?:\s+and\s+effect)?\s+)?"
    r"until\s+(?:terminated|it\s+is\s+terminated|such\s+time\s+as\s+(?:it\s+is\s+)?terminated|either\s+party\s+terminates|"
    r"termination)(?!\s+of\s+the))",
    _I,
)
_EVENT_TERM = re.compile(
    r"\buntil\s+(?:the\s+)?(?:expiration|expiry|last\s+to\s+expire|later\s+of|earlier\s+of|completion|acceptance|"
    r"the\s+date\s+(?:of|on\s+which|that)\s+(?!first)|termination\s+of\s+the|such\s+time|all\s+obligations)"
    r"|co-?terminous|coterminous|for\s+so\s+long\s+as|the\s+longer\s+of|the\s+later\s+of|the\s+earlier\s+of"
    r"|on\s+a\s+(?:country|product)-by-(?:country|product)|Royalty\s+Term",
    _I,
)
_FROM_START = re.compile(
    r"(?:from|after|following|commencing\s+(?:on|with|as\s+of)|beginning\s+(?:on|with|as\s+of)|starting\s+(?:on|from)|"
    r"of|as\s+of|thereafter|hereafter|hereof)\b",
    _I,
)
_RENEW = re.compile(
    r"\b(?:automatic(?:ally)?\s+)?(?:renew\w*|extend\w*|extension)\b|\bcontinue\s+automatically\b|\bautomatically\s+continue",
    _I,
)
_AUTO = re.compile(
    r"\bautomatic(?:ally)?\b|\bshall\s+(?:be\s+)?(?:renew|extend)|\bwill\s+(?:be\s+)?(?:renew|extend)|"
    r"\bthereafter\s+(?:continue|renew)|\bunless\s+(?:either|one|a|any)\s+party",
    _I,
)
#: A renewal one party may choose alone: "has the option to renew", "at its sole option", "may extend … by giving
#: notice" (CUAD's Renewal Term counts these; a renewal by mutual agreement it does not).
_UNILATERAL = re.compile(
    r"(?:option|right)\b[^.]{0,80}?\bto\s+(?:renew|extend)|at\s+(?:its|their|[A-Z]\w+['’]s)\s+(?:sole\s+)?(?:option|discretion|election)|"
    r"at\s+the\s+(?:sole\s+)?option\s+of|"
    r"(?:may|shall\s+have\s+the\s+right\s+to)\s+(?:elect\s+to\s+)?(?:renew|extend)[^.]{0,200}(?:by\s+(?:giving|providing|delivering)|upon)"
    r"[^.]{0,40}notice|may,?\s+by\s+(?:written\s+)?notice[^.]{0,120}(?:extend|renew)",
    _I,
)
#: A renewal period in words: "renewing annually", "for successive annual periods", "month to month".
_PERIOD_WORD = re.compile(
    r"\b(?:annually|each\s+year|(?:successive\s+)?annual\s+periods?|monthly\s+periods?|month[- ]to[- ]month)\b", _I
)
_NOTICE_WORDS = re.compile(
    r"notice|notif\w+|not\s+to\s+renew|non-?renewal|intent(?:ion)?\s+to\s+terminate|desire\s+to\s+terminate", _I
)


def _period(v: Value) -> tuple[int, str] | None:
    if v.kind is not Kind.duration or v.amount is None or v.problem or v.unit is None:
        return None
    if v.amount != v.amount.to_integral_value() and not (v.unit == "year" and v.amount == Decimal("0.5")):
        return None
    if v.amount == Decimal("0.5"):
        return 6, "month"
    return int(v.amount), v.unit


def _show_period(n: int, unit: str) -> str:
    word = unit.replace("_", " ")
    return f"{n} {word}" + ("s" if n != 1 else "")


def _add(start: date, n: int, unit: str) -> date:
    if unit == "year":
        return start + relativedelta(years=n)
    if unit == "month":
        return start + relativedelta(months=n)
    if unit == "week":
        return start + relativedelta(weeks=n)
    return start + relativedelta(days=n)


# --------------------------------------------------------------------------------------------
# Governing law
# --------------------------------------------------------------------------------------------

_LAW_CUE = re.compile(
    r"\b(?:govern\w*|constru\w+|interpret\w*|enforced|subject\s+to|in\s+accordance\s+with)\b[^.]{0,160}?"
    r"\b[Ll]aws?\s+(?:and\s+(?:judicial\s+)?decisions\s+|(?:as\s+)?(?:in\s+force|prevailing|applicable)\s+in\s+)?"
    r"(?:of\s+|in\s+)(?:the\s+)?"
    r"(?:(?i:State|Commonwealth|Province|Republic|Kingdom|Government|Federal\s+Republic|Hong\s+Kong\s+Special\s+"
    r"Administrative\s+Region)\s+of\s+(?:the\s+)?)?"
    r"(?P<j>People['’]s\s+Republic\s+of\s+China|P\.\s?R\.\s?C\.?|PRC|Hong\s+Kong|"
    r"[A-Z][\w.'’-]+(?:\s+(?:of\s+|and\s+)?[A-Z][\w.'’-]+){0,3})",
)
_LAW_PLAIN = re.compile(
    r"\b(?:governed\s+by|construed\s+(?:and\s+\w+\s+)?(?:in\s+accordance\s+with|under))\s+(?:the\s+)?"
    r"(?P<j>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s+law\b"
)
_LAW_STOP = re.compile(
    r"^(?:This|Such|Any|All|Agreement|Applicable|Law|Laws|Party|Parties|Licensor|Licensee|Company|Section|Article|"
    r"Exhibit|Schedule|Intellectual|Each|Which|Its|Their|The|United\s*$|Conflict|Conflicts|Contracts?)\b"
)
_LAW_TAIL = re.compile(r"(?:\s+(?:and|of|without|excluding|applicable|as|in|to|that|which|for))+$|[.,'’;:]+$")


_STATE_OF = re.compile(r"\b(?i:State|Commonwealth)\s+of\s+(?P<j>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)")
#: A law named by its adjective ("English law") → the jurisdiction.
_ADJECTIVE_LAW = {
    "English": "England",
    "Swiss": "Switzerland",
    "German": "Germany",
    "French": "France",
    "Dutch": "Netherlands",
    "Irish": "Ireland",
    "Scottish": "Scotland",
    "Israeli": "Israel",
    "Chinese": "People's Republic of China",
    "Japanese": "Japan",
    "Canadian": "Canada",
}


def _jurisdiction(raw: str) -> str | None:
    j = re.split(r"\s+(?:without|excluding|applicable|and\s+the\s+|as\s+|including|except|in\s+effect|with\s+)", raw)[0]
    j = _LAW_TAIL.sub("", j).strip()
    j = _LAW_TAIL.sub("", j).strip()
    if not j or _LAW_STOP.match(j):
        return None
    if re.fullmatch(r"P\.?\s?R\.?\s?C\.?|PRC", j):
        return "People's Republic of China"
    return _ADJECTIVE_LAW.get(j, j)


# --------------------------------------------------------------------------------------------
# The reader
# --------------------------------------------------------------------------------------------


def read_key_terms(text: str) -> KeyTerms:
    """The key terms of a contract's ``text`` (see the module docstring). Never raises on odd text; an empty
    or unreadable text gives empty :class:`KeyTerms`."""
    out = KeyTerms()
    flat = Flat(text)
    f = flat.text

    def add(name: str, value: str, basis: str, a: int, b: int) -> None:
        s, e = flat.span(a, b)
        out.terms.append(KeyTerm(name, value, basis, f[a:b], s, e))

    # --- parties
    parties, span = _read_parties(f)
    if not all(_credible(p) for p in parties):
        out.gaps["parties"] = "the preamble's party list could not be read with confidence: " + "; ".join(
            p.name for p in parties if not _credible(p)
        )
        parties = []
    for p in parties:
        shown = f'{p.name} ("{p.defined}")' if p.defined and p.defined.lower() != p.name.lower() else p.name
        add("parties", shown, "named in the preamble", p.start, min(p.end, p.start + 300))

    # --- agreement and effective dates
    head_end = min(len(f), PREAMBLE_CHARS)
    order = _date_order(f)
    agreement = _agreement_date(f, span, head_end, order)
    effective = _effective_date(f, head_end, order)
    if agreement is not None:
        a, b, iso, how = agreement
        add("agreement_date", iso, how, a, b)
    if effective is not None:
        a, b, iso, how = effective
        add("effective_date", iso, how, a, b)
    elif agreement is not None and (m := _DATE_OF_AGREEMENT_EFFECTIVE.search(f) or _EFFECTIVE_ON_SIGNING.search(f)):
        add(
            "effective_date",
            agreement[2],
            f"the Effective Date is the date of the agreement ({agreement[2]})",
            m.start(),
            m.end(),
        )

    # --- term and expiration
    start_term = out.first("effective_date") or out.first("agreement_date")
    start_day: date | int | None = None
    if start_term is not None:
        start_day = date.fromisoformat(start_term.value) if len(start_term.value) == 10 else int(start_term.value)
    _term(f, start_day, start_term.field if start_term else None, add, out)

    # --- renewal and notice
    _renewal(f, add, out)

    # --- governing law
    law = _governing_law(f)
    if law:
        a, b, j = law
        add("governing_law", j, "the law the agreement names as governing", a, b)
    return out


#: Words before the date a preamble's party clause dates the agreement by ("made and entered into this", "dated").
_PARTY_CLAUSE_CUE = re.compile(
    r"(?:dated|made|entered\s+into|executed|as\s+of|this|on|(?<!Effective\s)Date[d]?\s*:)\W*(?:the\s+)?(?:\w+\W+){0,2}$",
    _I,
)
#: The same on a cover page, where a bare "on" dates anything: only "dated", "made", "as of", "Date:".
_COVER_CUE = re.compile(
    r"(?:dated|made|entered\s+into|executed|as\s+of|(?<!Effective\s)Date[d]?\s*:)\W*(?:the\s+)?(?:\w+\W+){0,2}$"
    r"|\b(?:inc|llc|corporation|company|ltd|limited|corp|l\.p|ag|gmbh|s\.a|plc|n\.v|b\.v)\.?,?\s*$",  # a cover: "… PFIZER INC. August 21, 2018"
    _I,
)
_FULL_STOP = re.compile(r"(?<![A-Z])(?<!\bInc)(?<!\bCo)(?<!\bNo)\.\s+(?=[A-Z])")


def _stated(f: str, a: int, b: int, iso: str) -> str:
    """The basis of a stated date: its words, and that day and month are blank when they are."""
    blank = " (day and month left blank)" if len(iso) == 4 else ""
    return f"stated{blank}: '{f[a:b].strip()}'"


def _date_order(f: str) -> DateOrder:
    """The document's day/month order for numeric dates (:func:`tasks.check.values.decide_date_order`); month
    first (the US convention of CUAD's SEC filings) when the document does not decide it."""
    order = decide_date_order(f)
    return order if order in (DateOrder.dmy, DateOrder.mdy) else DateOrder.mdy


def _agreement_date(
    f: str, span: tuple[int, int] | None, head_end: int, order: DateOrder = DateOrder.mdy
) -> tuple[int, int, str, str] | None:
    """The date the agreement is dated, read where a preamble states it: in the sentence that names the
    parties (before "between" or after the party list: "made as of", "dated", "this 8th day of"), else on a
    "Dated:" line of the cover page. A date the preamble gives another document ("the Plan, dated as of …")
    is not the agreement's."""
    regions = []
    if span is not None:
        prev = [m.end() for m in _FULL_STOP.finditer(f, max(0, span[0] - 600), span[0])]
        regions.append((prev[-1] if prev else max(0, span[0] - 600), span[1]))
    regions.append((0, min(head_end, 1500)))
    # a date the preamble says the agreement is made on wins over the one it takes effect on
    passes = [(a0, b0, signed) for signed in (True, False) for a0, b0 in regions]
    for a0, b0, signed in passes:
        for s, e, iso in _candidates(f, a0, b0, order):
            before = f[max(a0, s - 80) : s]
            if signed and re.search(r"effective\s+(?:as\s+of|on|from|this)?\s*(?:the\s+)?$", before, _I):
                continue
            cue = _PARTY_CLAUSE_CUE if span is not None and (a0, b0) == regions[0] else _COVER_CUE
            if not cue.search(before):
                continue
            if re.search(r"terminat|expir|until|through|before|begin|commenc|scheduled|Source\s*:", before[-50:], _I):
                continue
            if re.search(r"(?:Effective|Commencement)\s+Date\s*:?\s*$", before, _I):
                continue
            if re.search(
                r"(?:Agreement|Plan|Lease|Note|Indenture|Contract)[\"”)]*,?\s+(?:dated|entered\s+into|made)", before
            ) and not re.search(r"\b(?:This|this|THIS)\s+(?:[\w-]+\s+){0,6}(?:Agreement|AGREEMENT|Contract)", before):
                continue  # a date of another agreement the preamble names
            return s, e, iso, _stated(f, max(a0, s - 30), e, iso)
    return None


def _effective_date(f: str, head_end: int, order: DateOrder = DateOrder.mdy) -> tuple[int, int, str, str] | None:
    """A date the contract names as its Effective (or Commencement) Date: '... 2020 (the "Effective Date")',
    '"Effective Date" means March 1, 2020', "effective as of March 1, 2020"."""
    for s, e, iso in _candidates(f, 0, min(len(f), 60000), order):
        after = f[e : e + 60]
        before = f[max(0, s - 80) : s]
        if _EFFECTIVE_DEF_AFTER.search(after) or _EFFECTIVE_BEFORE.search(before):
            return s, e, iso, _stated(f, max(0, s - 40), min(len(f), e + 30), iso)
        cue = _EFFECTIVE_CUE.search(before)
        if cue and s < head_end:
            lead = f[max(0, s - 200) : s - len(before) + cue.start()]
            if (s < 1500 or _AGREEMENT_SUBJECT.search(lead)) and not re.search(
                r"terminat|that\s+certain|fiscal|Contract\s+Year", lead[-120:], _I
            ):
                return s, e, iso, _stated(f, max(0, s - 40), min(len(f), e + 30), iso)
    return None


#: Ordinal anniversaries: "the fifth (5th) anniversary of the Effective Date" → 5 years.
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
    "fifteenth": 15,
    "twentieth": 20,
}
_ANNIVERSARY = re.compile(
    r"\b(?P<o>" + "|".join(_ORDINALS) + r"|\d{1,2}(?:st|nd|rd|th))\s*(?:\(\s*\d{1,2}(?:st|nd|rd|th)?\s*\)\s*)?"
    r"anniversary\s+of\s+(?:the\s+)?(?P<of>Effective\s+Date|Commencement\s+Date|date\s+(?:of\s+this\s+Agreement|hereof)|"
    r"execution|signing|[A-Z][\w ]{0,30}?Date)",
    _I,
)
#: A term that starts at an event the key terms do not date: launch, delivery, first sale, an in-service date.
_EVENT_START = re.compile(
    r"(?:from|after|following|commencing\s+(?:on|upon|with))\s+(?:the\s+)?(?:[\w'’-]+\s+){0,3}?"
    r"(?:Launch|launch|delivery|Delivery|first\s+(?:commercial\s+)?sale|First\s+Commercial\s+Sale|in-service|"
    r"acceptance|Acceptance|approval|Approval|opening|Opening|Supply\s+Commencement|expiration\s+of\s+the\s+initial|"
    r"completion|Completion|installation|Installation|receipt)",
)
#: Words of a sentence that sets the term (its start and how long it runs).
_TERM_SHAPE = re.compile(
    r"\b(?:continue|remain|until|through|expire|terminate|end|for\s+(?:a|an)\s+(?:initial\s+)?(?:period|term)|"
    r"anniversary|initial\s+term|term\s+of|period\s+of)\b",
    _I,
)


def _term(f: str, start: date | int | None, start_field: str | None, add, out: KeyTerms) -> None:  # type: ignore[no-untyped-def]
    """The expiration date from the term clause: stated, computed from the start and the term, or perpetual.

    The term clause is the first sentence that names the agreement's term and how long it runs (a duration, an
    end date, an anniversary, "until terminated"); a sentence about renewal terms is not it. ``start`` is a day,
    or a year when the contract leaves the day and month blank (a term in years then gives a year; one in months
    or days gives none)."""
    start_name = "Effective Date" if start_field == "effective_date" else "Agreement Date"
    seen: set[int] = set()
    for m in _TERM_CUE.finditer(f):
        a, b = _sentence(f, m.start())
        if a in seen:
            continue
        seen.add(a)
        sent = f[a:b]
        if re.search(r"\b(?:Renewal\s+Term|renew)", sent[: max(0, m.start() - a)], _I) or not _TERM_SHAPE.search(sent):
            continue
        # the term clause is about the term: its subject opens the sentence ("2. Term. The term of this Agreement
        # shall ..."), not a survival or a during-the-term clause ("during the term of this Agreement and for ...")
        lead = f[a : m.start()]
        if len(lead) > 90 or re.search(
            r"\b(?:during|after|following|throughout|within|beyond|upon|for|prior\s+to|before)\s*(?:the\s+)?$", lead, _I
        ):
            continue
        if _PERPETUAL.search(sent) and not find_durations(sent) and not _ANNIVERSARY.search(sent):
            add("expiration_date", "perpetual", "the term runs until the agreement is terminated", a, b)
            return
        event = _EVENT_TERM.search(sent)
        ends = [
            (s, e, v)
            for s, e, v in _dates(f, a, b)
            if re.search(
                r"(?:until|through|expire\w*|terminat\w*|end\w*|end\s+of|to\s+and\s+including|ends?\s+at|to)\s*(?:on\s+)?"
                r"\W*(?:the\s+)?(?:\w+\W+){0,1}$",
                f[max(a, s - 40) : s],
                _I,
            )
        ]
        if ends and not event:
            s, e, v = ends[0]
            d = _day(v)
            assert d is not None
            add("expiration_date", _iso(d), f"stated: '{f[max(a, s - 40) : e].strip()}'", a, b)
            return
        if event:
            out.gaps["expiration_date"] = f"the term ends on an event, not a date: '{event.group(0)}'"
            return
        anniversary = _ANNIVERSARY.search(sent)
        durs = [
            (v, p)
            for v in find_durations(sent)
            if (p := _period(v)) is not None
            and p[1] in ("year", "month")
            and not _NOTICE_WORDS.search(sent[v.end : v.end + 40])
            and not re.search(
                r"(?:notice|within|prior|renew\w*|successive|additional)\W*(?:\w+\W+){0,2}$",
                sent[max(0, v.start - 40) : v.start],
                _I,
            )
        ]
        if anniversary is not None:
            word = anniversary.group("o").lower()
            n, unit = _ORDINALS.get(word) or int(re.match(r"\d+", word).group(0)), "year"  # type: ignore[union-attr]
            if not re.match(
                r"Effective|Commencement|date\s+(?:of\s+this|hereof)|execution|signing", anniversary.group("of"), _I
            ):
                out.gaps["expiration_date"] = (
                    f"the term ends on the {word} anniversary of an event the key terms do not date"
                )
                return
        elif durs:
            n, unit = durs[0][1]
        else:
            continue
        if start is None:
            out.gaps["expiration_date"] = (
                f"term of {_show_period(n, unit)} but no effective or agreement date to count from"
            )
            return
        if _EVENT_START.search(sent):
            out.gaps["expiration_date"] = f"term of {_show_period(n, unit)} from an event the key terms do not date"
            return
        if isinstance(start, int):
            if unit != "year":
                out.gaps["expiration_date"] = (
                    f"term of {_show_period(n, unit)} from {'an' if start_name[:1].lower() in 'aeiou' else 'a'} {start_name} whose day and month are left blank"
                )
                return
            how = f"{start_name} {start} (day and month left blank) + {_show_period(n, unit)}"
            add("expiration_date", str(start + n), how, a, b)
            return
        end = _add(start, n, unit)
        how = f"{start_name} {_iso(start)} + {_show_period(n, unit)}"
        if re.search(
            r"less\s+one\s+day|minus\s+one\s+day|day\s+(?:immediately\s+)?(?:before|preceding)\s+the\s+\w+\s+anniversary",
            sent,
            _I,
        ):
            end -= relativedelta(days=1)
            how += " less one day"
        add("expiration_date", _iso(end), how, a, b)
        return


def _renewal(f: str, add, out: KeyTerms) -> None:  # type: ignore[no-untyped-def]
    """The renewal term (automatic or by option) and the notice to stop it."""
    for m in _RENEW.finditer(f):
        a, b = _sentence(f, m.start())
        sent = f[a:b]
        if not re.search(r"\bterm|\bagreement|\bperiod", sent, _I) or not re.search(
            r"(?:successive|additional|consecutive|further|renewal|extension|renewed|extended|renew|extend)", sent, _I
        ):
            continue
        if re.search(
            r"\b(?:may|can)\s+(?:only\s+)?be\s+(?:renewed|extended)\s+(?:only\s+)?(?:by|upon|with|if)\s+(?:mutual|written|the\s+mutual)",
            sent,
            _I,
        ):
            continue
        if re.search(r"\bno\s+(?:automatic\s+)?renewal|shall\s+not\s+(?:be\s+)?(?:automatically\s+)?renew", sent, _I):
            continue
        periods = []
        for v in find_durations(sent):
            p = _period(v)
            if p is None:
                continue
            before = sent[max(0, v.start - 60) : v.start]
            after = sent[v.end : v.end + 40]
            notice = bool(
                re.search(
                    r"(?:notice|at\s+least|not\s+less\s+than|no\s+less\s+than|no\s+later\s+than|not\s+later\s+than|within|minimum\s+of|prior)\W*(?:\w+\W+){0,3}$",
                    before,
                    _I,
                )
                or re.search(
                    r"^\W{0,3}(?:\w+\W+){0,2}(?:prior|before|in\s+advance|notice|preceding|written\s+notice)", after, _I
                )
            )
            periods.append((v, p, notice))
        renew_periods = [
            (v, p)
            for v, p, notice in periods
            if not notice
            and p[1] in ("year", "month")
            and re.search(
                r"(?:renew\w*|extend\w*|extension|successive|additional|consecutive|further|subsequent)\W*(?:\w+\W+){0,6}$",
                sent[max(0, v.start - 80) : v.start],
                _I,
            )
        ]
        if not renew_periods:
            renew_periods = [
                (v, p)
                for v, p, notice in periods
                if not notice
                and p[1] in ("year", "month")
                and re.search(
                    r"(?:successive|additional|consecutive|renewal)", sent[max(0, v.start - 30) : v.end + 30], _I
                )
            ]
        if not renew_periods and (word := _PERIOD_WORD.search(sent)):  # "renewing annually", "monthly periods"
            unit = "month" if word.group(0).lower().startswith("month") else "year"
            renew_periods = [
                (Value(Kind.duration, word.group(0), word.start(), word.end(), amount=Decimal(1), unit=unit), (1, unit))
            ]
        if not renew_periods:
            continue
        v, (n, unit) = renew_periods[0]
        if _AUTO.search(sent):
            kind = "automatic"
        elif _UNILATERAL.search(sent):
            kind = "at one party's option"
        else:
            continue  # a renewal the parties may agree on later is no renewal term (CUAD: "automatic extensions
            # and unilateral extensions with prior notice")
        add("renewal_term", _show_period(n, unit), f"{kind} renewal: '{v.raw}'", a + v.start, a + v.end)
        notices = [(w, p) for w, p, notice in periods if notice and p[1] in ("day", "business_day", "week", "month")]
        if notices and _NOTICE_WORDS.search(sent):
            w, (k, u) = notices[0]
            add("notice_period", _show_period(k, u), f"notice before the term ends: '{w.raw}'", a + w.start, a + w.end)
        else:
            # the notice may stand in the next sentence ("Either party may elect not to renew by giving ...")
            na, nb = _sentence(f, b + 1)
            nxt = f[na:nb] if nb > b else ""
            if _NOTICE_WORDS.search(nxt) and re.search(r"renew|terminat|expir", nxt, _I):
                for w in find_durations(nxt):
                    p = _period(w)
                    if (
                        p
                        and p[1] in ("day", "business_day", "week", "month")
                        and re.search(
                            r"^\W{0,3}(?:\w+\W+){0,3}(?:prior|before|in\s+advance|notice|preceding)",
                            nxt[w.end : w.end + 40],
                            _I,
                        )
                    ):
                        add(
                            "notice_period",
                            _show_period(*p),
                            f"notice before the term ends: '{w.raw}'",
                            na + w.start,
                            na + w.end,
                        )
                        break
        return


def _governing_law(f: str) -> tuple[int, int, str] | None:
    """The jurisdiction whose law governs: "governed by the laws of the State of New York", "English law",
    "the laws thereof" after "in the State of Nevada"; a federal law named before a state's gives the state's."""
    for rx in (_LAW_CUE, _LAW_PLAIN):
        for m in rx.finditer(f):
            if not re.search(r"govern|constru|interpret", f[max(0, m.start() - 200) : m.end()], _I):
                continue
            j = _jurisdiction(m.group("j"))
            if not j:
                continue
            if j.startswith("United States"):
                state = _STATE_OF.search(f, m.end("j"), min(len(f), m.end("j") + 120))
                if state:
                    return state.start("j"), state.end("j"), state.group("j")
            end = m.start("j") + len(j) if m.group("j").startswith(j) else m.end("j")
            return m.start("j"), end, j
    for m in re.finditer(
        r"governed\s+by\s+(?:and\s+\w+\s+(?:in\s+accordance\s+with|under)\s+)?the\s+laws\s+thereof", f, _I
    ):
        states = list(_STATE_OF.finditer(f, max(0, m.start() - 250), m.start()))
        if states:
            state = states[-1]
            return state.start("j"), state.end("j"), state.group("j")
    return None
