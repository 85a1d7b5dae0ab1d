"""Value normalisation: dates, money, percentages and durations as comparable values.

The fact-check compares what a finding *states* with what its quote *says*. Both sides go
through :func:`extract_values`, which finds every typed value in a text and normalises it:

- **dates** → ``(year, month, day)`` (``day`` may be ``None`` for "March 2020"). Written forms:
  ``March 1, 2020``, ``1 March 2020``, ``the 1st day of March, 2020``, ``this 22nd day of June
  2021``, ``2020-03-01`` and numeric ``03/01/2020``. A numeric date whose day/month order is not
  known is kept *ambiguous* with both readings and its raw text; the order is decided once per
  document by :func:`decide_date_order` from its unambiguous numeric dates (a first part above
  12 means day-first, a second part above 12 means month-first) and never guessed otherwise
  (PITFALLS: "day/month order must be decided per document and never flipped silently").
- **money** → ``Decimal`` amount plus ISO 4217 currency (``USD 1.5 million``, ``US$0.5m``,
  ``EUR 1.250.000,00``, ``five hundred thousand dollars ($500,000)``). Words and figures of
  one amount are checked against each other; several amounts in one clause stay separate.
  The figure is read by ``price-parser`` (decimal and group separators); multipliers, currency
  codes and number words are rules here.
- **percentages** → ``Decimal`` (``10%``, ``ten percent (10%)``, ``2.5 per cent``).
- **durations** → ``Decimal`` count plus unit (``day``, ``business_day``, ``week``, ``month``,
  ``year``): ``thirty (30) days``, ``five (5) years``, ``12 months``, ``a 30-day period``.
  Words and figures are checked against each other.
- **redactions** → a value of their own kind, ``redacted``: a confidential-treatment mark
  (``[***]``, ``[*]``, ``*****``, ``[Redacted]``; :mod:`tasks.check.redactions`) hides a value, so
  it is neither a value nor a missing one. ``slot`` says which kind of value it hides when the words
  around it say so (``$[***]`` money, ``[*] years`` a duration, ``[***]%`` a percentage, ``[***],
  2020`` a date), else ``None`` ("shall not exceed [***]").

``dateparser`` was evaluated for dates and not used: it returns ``None`` for "this 22nd day of
June 2021", and its ``DATE_ORDER`` setting reads every numeric date in one order, which is the
silent flip the per-document rule above avoids.

Section references (``Section 1.5``, ``§ 4``, ``Article IV``, ``clause 12.3``) are found by
:func:`section_refs` and are never read as decimals ("USD 1.5 million" is no "Section 1.5").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from enum import Enum

from price_parser import Price

# --------------------------------------------------------------------------------------------
# Number words
# --------------------------------------------------------------------------------------------

_SMALL = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fourty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
#: Scale words. "lakh" (10**5) and "crore" (10**7) are the Indian numbering system's scale words
#: (Reserve Bank of India usage: "Rs. 2 crore" = Rs. 2,00,00,000 = 20,000,000).
_SCALES = {
    "thousand": 10**3,
    "lakh": 10**5,
    "lakhs": 10**5,
    "million": 10**6,
    "crore": 10**7,
    "crores": 10**7,
    "billion": 10**9,
}
_HALF = {"half": Decimal("0.5"), "one-half": Decimal("0.5"), "quarter": Decimal("0.25")}
_NUMBER_WORD = sorted([*_SMALL, *_TENS, *_SCALES, "hundred"], key=len, reverse=True)
_NW = "(?:" + "|".join(_NUMBER_WORD) + ")"
#: A run of English number words ("one hundred and twenty-five thousand"), case-insensitive.
NUMBER_WORDS = rf"\b{_NW}(?:(?:[\s-]+|\s+and\s+){_NW})*\b"


def words_to_number(text: str) -> Decimal | None:
    """Value of English cardinal number words: ``"five hundred thousand"`` → ``Decimal(500000)``.

    Accepts hyphens and ``and`` (``"one hundred and twenty-five"`` → 125) and a leading ``a``
    (``"a hundred"``). Returns ``None`` when ``text`` holds anything else.
    """
    tokens = [t for t in re.split(r"[\s-]+", text.strip().lower()) if t and t != "and"]
    if not tokens:
        return None
    if tokens[0] == "a" and len(tokens) > 1:
        tokens[0] = "one"
    total, current, seen = 0, 0, False
    for tok in tokens:
        if tok in _SMALL:
            current += _SMALL[tok]
        elif tok in _TENS:
            current += _TENS[tok]
        elif tok == "hundred":
            current = (current or 1) * 100
        elif tok in _SCALES:
            total += (current or 1) * _SCALES[tok]
            current = 0
        else:
            return None
        seen = True
    return Decimal(total + current) if seen else None


# --------------------------------------------------------------------------------------------
# Value model
# --------------------------------------------------------------------------------------------


class Kind(str, Enum):
    """Kind of a typed value. Values are only ever compared with values of the same kind."""

    date = "date"
    money = "money"
    percent = "percent"
    duration = "duration"
    redacted = "redacted"  #: a confidential-treatment redaction mark: the value is hidden in the filed copy


class DateOrder(str, Enum):
    """Day/month order of numeric dates in one document."""

    dmy = "DMY"
    mdy = "MDY"
    unknown = "unknown"  # no evidence either way: numeric dates with both parts ≤ 12 stay ambiguous
    conflicting = "conflicting"  # the document uses both orders: numeric dates stay ambiguous


YMD = tuple[int, int, int | None]


@dataclass(frozen=True)
class Value:
    """One typed value found in a text.

    ``raw`` is the text as written and ``start``/``end`` its character offsets in the scanned
    text. For money ``amount`` (``Decimal``) and ``unit`` (ISO 4217 code, or ``None`` when the
    text names no currency); for percentages ``amount`` (percent points); for durations
    ``amount`` and ``unit`` (``day``, ``business_day``, ``week``, ``month``, ``year``); for
    dates ``dates``: every reading as ``(year, month, day|None)`` — one reading, or two for an
    ambiguous numeric date. ``problem`` describes an internal disagreement (words vs figures).
    For a redaction (``Kind.redacted``) ``raw`` is the mark and ``slot`` the kind of value it hides
    (``None`` when the words around it do not say); it has no amount, unit or date.
    """

    kind: Kind
    raw: str
    start: int
    end: int
    amount: Decimal | None = None
    unit: str | None = None
    dates: tuple[YMD, ...] = ()
    problem: str | None = None
    slot: Kind | None = None

    @property
    def number(self) -> Decimal:
        """``amount``, for a kind that always has one (money, percent, duration)."""
        if self.amount is None:
            raise ValueError(f"{self.kind.value} value {self.raw!r} has no amount")
        return self.amount

    @property
    def ambiguous(self) -> bool:
        """True for a date with more than one reading (day/month order undecided)."""
        return len(self.dates) > 1

    def iso(self) -> str | None:
        """A date's ISO 8601 form (``2021-06-22``; ``2020-03`` for month precision); ``None`` for
        other kinds and for a date with no reading or with two (day/month order undecided)."""
        if self.kind is not Kind.date or len(self.dates) != 1:
            return None
        return _ymd(self.dates[0])

    def as_json(self) -> dict[str, str | None]:
        """JSON-safe form next to the raw text: ``{kind, raw, amount (Decimal as text), unit (ISO 4217
        code for money), iso (dates), problem}``."""
        return {
            "kind": self.kind.value,
            "raw": self.raw,
            "amount": None if self.amount is None else format(self.amount.normalize(), "f"),
            "unit": self.unit,
            "iso": self.iso(),
            "problem": self.problem,
        }

    def show(self) -> str:
        """Normalised form for reasons and reports, e.g. ``USD 1500000``, ``30 day``, ``2020-03-01``,
        ``redacted money [***]``."""
        if self.kind is Kind.redacted:
            return f"redacted {self.slot.value + ' ' if self.slot else ''}{self.raw}"
        if self.kind is Kind.date:
            return " or ".join(_ymd(d) for d in self.dates) + (" (day/month order undecided)" if self.ambiguous else "")
        if self.kind is Kind.money:
            return f"{self.unit or '(no currency)'} {_num(self.amount)}"
        if self.kind is Kind.percent:
            return f"{_num(self.amount)}%"
        return f"{_num(self.amount)} {self.unit}"


def _num(d: Decimal | None) -> str:
    if d is None:
        return "?"
    s = format(d.normalize(), "f")
    return s


def _ymd(d: YMD) -> str:
    return f"{d[0]:04d}-{d[1]:02d}" + (f"-{d[2]:02d}" if d[2] else "")


class Match(str, Enum):
    """Outcome of comparing a stated value with a value in the quote."""

    equal = "equal"
    ambiguous = "ambiguous"  # equal under one day/month reading only
    different = "different"


def compare(stated: Value, found: Value) -> Match:
    """Compare two values of the same kind (different kinds are ``different``).

    A redaction equals nothing, not even another redaction: the value it hides is unknown.
    Money: same amount and same currency; a side that names no currency matches any currency.
    Durations: same count and unit (``12 months`` is not ``1 year``: contracts state periods in
    the unit they mean). Dates: same reading, or the same set of readings (``1/12/2018`` on
    both sides claims no order); ``ambiguous`` when they agree only because one side has an
    undecided day/month order; a month-precision date equals a full date of that month
    only if both lack a day.
    """
    if stated.kind is not found.kind or stated.kind is Kind.redacted:
        return Match.different
    if stated.kind is Kind.date:
        common = set(stated.dates) & set(found.dates)
        if not common:
            return Match.different
        if set(stated.dates) == set(found.dates):
            return Match.equal  # same readings (e.g. the same numeric date): no order is claimed
        return Match.ambiguous if (stated.ambiguous or found.ambiguous) else Match.equal
    if stated.amount is None or found.amount is None or stated.amount != found.amount:
        return Match.different
    if stated.kind is Kind.money:
        if stated.unit and found.unit and stated.unit != found.unit:
            return Match.different
        return Match.equal
    if stated.kind is Kind.duration and stated.unit != found.unit:
        return Match.different
    return Match.equal


# --------------------------------------------------------------------------------------------
# Dates
# --------------------------------------------------------------------------------------------

_MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MON = (
    r"(?P<mon>january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_ORD = r"(?:st|nd|rd|th)?"
#: "A.D. 2020", "AD 2020", "in the year of our Lord 2020" before a year.
_ERA = (
    r"(?:(?:in\s+the\s+year\s+(?:of\s+our\s+lord\s+)?)?(?:A\.\s?D\.?|AD)\s*|in\s+the\s+year\s+(?:of\s+our\s+lord\s+)?)?"
)
_YR = _ERA + r"(?P<year>(?:1[89]|20|21)\d{2})"

_ORDINAL_UNITS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
}
#: Ordinal day words, "first" … "thirty-first" → 1 … 31.
ORDINAL_DAYS: dict[str, int] = {
    **_ORDINAL_UNITS,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
    "thirteenth": 13,
    "fourteenth": 14,
    "fifteenth": 15,
    "sixteenth": 16,
    "seventeenth": 17,
    "eighteenth": 18,
    "nineteenth": 19,
    "twentieth": 20,
    "thirtieth": 30,
}
ORDINAL_DAYS.update({f"twenty-{w}": 20 + n for w, n in _ORDINAL_UNITS.items()})
ORDINAL_DAYS["thirty-first"] = 31
_ORD_WORD = (
    "(?P<dayw>" + "|".join(sorted((w.replace("-", r"[\s-]") for w in ORDINAL_DAYS), key=len, reverse=True)) + ")"
)

_DATE_PATTERNS = [
    # the 1st day of March, 2020 / this 22nd day of June 2021 / 3rd day of April, A.D. 2020
    re.compile(
        rf"(?:\b(?:the|this)\s+)?(?<!\d)(?P<day>\d{{1,2}}){_ORD}\s+day\s+of\s+{_MON}\s*,?\s*(?:of\s+)?{_YR}\b", re.I
    ),
    # this twenty-second day of June, 2021 (ordinal words)
    re.compile(rf"(?:\b(?:the|this)\s+)?\b{_ORD_WORD}\s+day\s+of\s+{_MON}\s*,?\s*(?:of\s+)?{_YR}\b", re.I),
    # March 1, 2020 / Mar. 1st 2020
    re.compile(rf"\b{_MON}\s+(?P<day>\d{{1,2}}){_ORD}\s*,?\s*{_YR}\b", re.I),
    # 1 March 2020 / 1st of March, 2020
    re.compile(rf"(?<!\d)(?P<day>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MON}\s*,?\s*{_YR}\b", re.I),
    # 2020-03-01
    re.compile(r"\b(?P<year>\d{4})-(?P<m>\d{1,2})-(?P<day>\d{1,2})\b"),
    # 03/01/2020, 3.1.2020, 03-01-20
    re.compile(r"(?<![\d/.\-])(?P<a>\d{1,2})(?P<sep>[/.\-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})(?![\d/\-]|\.\d)"),
    # March 2020 / March, 2020 (month precision)
    re.compile(rf"\b{_MON}\s*,?\s+{_YR}\b", re.I),
]
_NUMERIC = 5


def _valid(y: int, m: int, d: int | None) -> bool:
    if not 1 <= m <= 12:
        return False
    if d is None:
        return True
    try:
        date(y, m, d)
    except ValueError:
        return False
    return True


def _year(raw: str) -> int:
    y = int(raw)
    if len(raw) == 2:  # two-digit year: 00-49 → 2000s, 50-99 → 1900s
        y += 2000 if y < 50 else 1900
    return y


def decide_date_order(text: str) -> DateOrder:
    """Day/month order of the numeric dates in a document's ``text``.

    ``DMY`` when some numeric date has a first part above 12 and none a second part above 12;
    ``MDY`` in the mirror case; ``conflicting`` when both occur; ``unknown`` without evidence.
    Month-name dates give no evidence (they are unambiguous in any order).
    """
    dmy = mdy = False
    for m in _DATE_PATTERNS[_NUMERIC].finditer(unicodedata.normalize("NFKC", text)):
        a, b = int(m.group("a")), int(m.group("b"))
        if a > 12 and 1 <= b <= 12:
            dmy = True
        elif b > 12 and 1 <= a <= 12:
            mdy = True
    if dmy and mdy:
        return DateOrder.conflicting
    if dmy:
        return DateOrder.dmy
    if mdy:
        return DateOrder.mdy
    return DateOrder.unknown


def find_dates(text: str, order: DateOrder = DateOrder.unknown) -> list[Value]:
    """Dates in ``text`` (see the module docstring), in order.

    A written date that is no calendar date ("June 31, 2015") is kept with no reading and the
    problem ``not a calendar date``; an impossible numeric date is skipped (it is no date).

    A numeric date is read with ``order``; with ``unknown``/``conflicting`` order and both parts
    ≤ 12 (and different) it keeps both readings. A numeric date that contradicts a decided order
    (``13/01/2020`` in an ``MDY`` document) keeps its only valid reading and says so in ``problem``.
    """
    out: list[Value] = []
    taken: list[tuple[int, int]] = []
    for k, pat in enumerate(_DATE_PATTERNS):
        for m in pat.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            problem = None
            if k == _NUMERIC:
                a, b, y = int(m.group("a")), int(m.group("b")), _year(m.group("y"))
                readings = []
                if order is DateOrder.mdy:
                    readings = [(y, a, b)] if _valid(y, a, b) else []
                elif order is DateOrder.dmy:
                    readings = [(y, b, a)] if _valid(y, b, a) else []
                if not readings:
                    cands = {(y, a, b), (y, b, a)}
                    readings = sorted(c for c in cands if _valid(*c))
                    if order in (DateOrder.mdy, DateOrder.dmy) and readings:
                        problem = f"does not fit the document's {order.value} date order"
                if not readings:
                    continue
                dates: tuple[YMD, ...] = tuple(readings)
            else:
                y = int(m.group("year"))
                mon = (
                    _MONTHS[m.group("mon").lower()] if "mon" in m.groupdict() and m.group("mon") else int(m.group("m"))
                )
                day = int(m.group("day")) if "day" in m.groupdict() and m.group("day") else None
                if m.groupdict().get("dayw"):
                    day = ORDINAL_DAYS[re.sub(r"\s+", "-", m.group("dayw").lower())]
                if not _valid(y, mon, day):
                    taken.append((m.start(), m.end()))
                    out.append(
                        Value(Kind.date, m.group(0), m.start(), m.end(), dates=(), problem="not a calendar date")
                    )
                    continue
                dates = ((y, mon, day),)
            taken.append((m.start(), m.end()))
            out.append(Value(Kind.date, m.group(0), m.start(), m.end(), dates=dates, problem=problem))
    return sorted(out, key=lambda v: v.start)


# --------------------------------------------------------------------------------------------
# Money
# --------------------------------------------------------------------------------------------

_CODES = {
    "USD",
    "EUR",
    "GBP",
    "CAD",
    "AUD",
    "NZD",
    "JPY",
    "CNY",
    "RMB",
    "CHF",
    "INR",
    "HKD",
    "SGD",
    "SEK",
    "NOK",
    "DKK",
    "KRW",
    "MXN",
    "BRL",
    "ZAR",
    "ILS",
    "TWD",
}
_SYMBOL_PREFIX = {  # written prefix → ISO 4217
    "US$": "USD",
    "U.S.$": "USD",
    "USD$": "USD",
    "US $": "USD",
    "C$": "CAD",
    "CA$": "CAD",
    "CAD$": "CAD",
    "A$": "AUD",
    "AU$": "AUD",
    "AUD$": "AUD",
    "NZ$": "NZD",
    "HK$": "HKD",
    "S$": "SGD",
    "SG$": "SGD",
    "$": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "₹": "INR",
    "Rs.": "INR",
    "Rs": "INR",
}
_WORD_CURRENCY = [  # currency words after an amount → ISO 4217 (longest first)
    (r"canadian\s+dollars?", "CAD"),
    (r"australian\s+dollars?", "AUD"),
    (r"hong\s+kong\s+dollars?", "HKD"),
    (r"singapore\s+dollars?", "SGD"),
    (r"new\s+zealand\s+dollars?", "NZD"),
    (r"(?:united\s+states|u\.\s?s\.|us)\s+dollars?", "USD"),
    (r"dollars?", "USD"),
    (r"euros?", "EUR"),
    (r"pounds?\s+sterling|(?:british\s+)?pounds?", "GBP"),
    (r"swiss\s+francs?", "CHF"),
    (r"(?:japanese\s+)?yen", "JPY"),
    (r"renminbi|yuan|rmb", "CNY"),
    (r"(?:indian\s+)?rupees?", "INR"),
]
_WORD_CUR_RE = "|".join(p for p, _ in _WORD_CURRENCY)
#: Scale words after a figure, several languages → multiplier. English "billion" is 10**9 (short
#: scale); the German/French/Spanish long-scale words for 10**9 are Mrd./Milliarde(n)/milliard(s)/mil
#: millones; Indian English "lakh"/"lac" is 10**5 and "crore" 10**7 ("Rs. 2 crore" = 20,000,000).
#: Own rules: no maintained parser reads scale words (price-parser and babel read figures only).
_MULT = {
    "thousand": 10**3,
    "k": 10**3,
    "tsd": 10**3,
    "mille": 10**3,
    "million": 10**6,
    "millions": 10**6,
    "mm": 10**6,
    "m": 10**6,
    "mn": 10**6,
    "mio": 10**6,
    "mill": 10**6,
    "millionen": 10**6,
    "millones": 10**6,
    "millon": 10**6,
    "millón": 10**6,
    "milioni": 10**6,
    "billion": 10**9,
    "bn": 10**9,
    "b": 10**9,
    "mrd": 10**9,
    "mia": 10**9,
    "milliarde": 10**9,
    "milliarden": 10**9,
    "milliard": 10**9,
    "milliards": 10**9,
    "mil millones": 10**9,
    "miliardi": 10**9,
    "lakh": 10**5,
    "lakhs": 10**5,
    "lac": 10**5,
    "lacs": 10**5,
    "crore": 10**7,
    "crores": 10**7,
}
_MULT_RE = (
    r"(?:\s*(?P<mult>thousand|millions?|millionen|billion|mil\s+millones|millones|mill[oó]n|milioni|"
    r"milliarden|milliarde|milliards?|miliardi|crores?|lakhs?|lacs?|mm|mn|bn|tsd|mio|mrd|mia|mill)(?:\.|\b)"
    r"|(?P<mults>[kKmMbB])\b(?!\.\w))"
)
#: A figure: apostrophe grouping (Swiss "1'250'000.00"), Indian lakh/crore grouping ("12,50,000",
#: "1,25,00,000.00"), Western/European grouping ("1,250,000.00", "1.250.000,00", "1 250 000") with one group
#: separator throughout (a statement's "$ 3,226,773 100.0%" is 3,226,773 and then a percentage column, not
#: 3,226,773,100) and a first group that is no zero ("0.705" is a decimal), or a plain number with one
#: decimal mark ("2,5", "3.75", "0.1225").
_FIGURE = (
    r"(?P<fig>\d{1,3}(?:['’]\d{3})+(?:\.\d{1,2})?"
    r"|\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d{1,2})?(?!\d)"
    r"|[1-9]\d{0,2}(?P<gs>[,.\s])\d{3}(?:(?P=gs)\d{3})*(?:[.,]\d{1,2})?(?![\d.,]\d)|\d+(?:[.,]\d+)?)"
)
_CODES_RE = "|".join(sorted(_CODES))
_PREFIX = (
    r"(?P<pre>(?:\b(?:US|U\.S\.|CA|AU|NZ|HK|SG|" + _CODES_RE + r")\s?)?\$|C\$|A\$|S\$|€|£|¥|₹|Rs\.?|"
    r"\b(?:" + _CODES_RE + r")\b\.?)"
)

_MONEY_FIG = re.compile(rf"{_PREFIX}\s?{_FIGURE}{_MULT_RE}?", re.I)
#: Scale words a figure may carry before a currency written after it ("1.45 milliards INR").
_MULT_AFTER = r"thousand|millions?|millones|billion|milliards?|milliarden|milliarde|crores?|lakhs?|lacs?|mio\.?|mrd\.?"
_MONEY_WORDCUR = re.compile(  # 5,000 dollars / 1.5 million euros / 100 U.S. dollars / 5 lakh rupees
    rf"(?<![\w$€£¥.,]){_FIGURE}(?:\s*(?P<mult>{_MULT_AFTER}))?"
    rf"\s+(?:de\s+)?(?P<cur>{_WORD_CUR_RE})\b",
    re.I,
)
#: A currency code or sign written after the figure: "1'250'000.00 CHF", "1.45 milliards INR", "1.250.000 €".
_MONEY_FIG_CODE = re.compile(
    rf"(?<![\w$€£¥₹.,']){_FIGURE}(?:\s*(?P<mult>{_MULT_AFTER}))?\s?(?P<code>(?-i:\b(?:{_CODES_RE})\b)|€|₹)",
    re.I,
)
_MONEY_WORDS = re.compile(  # five hundred thousand dollars ($500,000) / Ten Thousand U.S. Dollars (US$10,000)
    rf"(?P<words>{NUMBER_WORDS})\s+(?:(?P<cur>{_WORD_CUR_RE})\s*)?\(\s*(?P<inner>[^()]{{1,40}}?)\s*\)"
    rf"(?:\s+(?P<cur2>{_WORD_CUR_RE})\b)?",
    re.I,
)
_MONEY_WORDS_ONLY = re.compile(rf"(?P<words>{NUMBER_WORDS})\s+(?P<cur>{_WORD_CUR_RE})\b", re.I)


def _currency_of_prefix(pre: str) -> str:
    p = re.sub(r"\s+", "", pre).rstrip(".").upper().replace("U.S.", "US")
    if p in _CODES:
        return "CNY" if p == "RMB" else p
    for written, iso in _SYMBOL_PREFIX.items():
        if p == written.replace(" ", "").upper().replace("U.S.", "US"):
            return iso
    if p.endswith("$") and p[:-1] in _CODES:
        return "CNY" if p[:-1] == "RMB" else p[:-1]  # "USD $", "CAD $", and "EUR $" read as written
    if p.endswith("$"):
        return {
            "US": "USD",
            "USD": "USD",
            "CA": "CAD",
            "CAD": "CAD",
            "AU": "AUD",
            "AUD": "AUD",
            "NZ": "NZD",
            "HK": "HKD",
            "SG": "SGD",
        }.get(p[:-1], "USD")
    return "USD"


def _currency_of_word(word: str) -> str:
    for pat, iso in _WORD_CURRENCY:
        if re.fullmatch(pat, word.strip(), re.I):
            return iso
    return "USD"


def parse_figure(fig: str, multiplied: bool = False, dollar: bool = False) -> Decimal | None:
    """Amount written in figures: ``"1,250,000.00"`` → 1250000, ``"1.250.000,00"`` → 1250000.

    Separators are read by ``price-parser``; a figure followed by a multiplier (``1.500
    million``) reads ``.`` as the decimal mark, and so do a figure under one (``"0.705"``: no grouped number
    starts with a zero) and, after a dollar sign (``dollar``), one with a single ``.`` and no comma
    (``"$1.025"`` per share is a dollar and two and a half cents, not 1,025). Returns ``None`` when nothing
    parses.
    """
    fig = fig.strip().replace(" ", "").replace("'", "").replace("’", "")
    if re.fullmatch(r"0[.,]\d+", fig) or (dollar and re.fullmatch(r"\d+\.\d+", fig)):
        return Decimal(fig.replace(",", "."))
    if re.fullmatch(r"\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d{1,2})?", fig):  # Indian grouping
        return Decimal(fig.replace(",", ""))
    try:
        if multiplied and re.fullmatch(r"\d+[.,]\d+", fig):
            return Decimal(fig.replace(",", "."))
        amount = Price.fromstring(fig).amount
    except (InvalidOperation, ValueError):
        return None
    return Decimal(amount) if amount is not None else None


def _mult(m: re.Match) -> int:
    g = m.groupdict()
    word = re.sub(r"\s+", " ", (g.get("mult") or g.get("mults") or "").lower().rstrip("."))
    return _MULT.get(word, 1)


def find_money(text: str) -> list[Value]:
    """Money amounts in ``text``, in order, each as ``Decimal`` plus ISO 4217 currency.

    Words followed by figures in brackets (``five hundred thousand dollars ($500,000)``) are one
    amount; when words and figures disagree the value carries a ``problem``. ``$`` without a
    country mark reads as USD.
    """
    out: list[Value] = []
    taken: list[tuple[int, int]] = []

    def free(s: int, e: int) -> bool:
        return not any(s < te and ts < e for ts, te in taken)

    for m in _MONEY_WORDS.finditer(text):
        inner = _MONEY_FIG.fullmatch(m.group("inner").strip()) or re.fullmatch(_FIGURE, m.group("inner").strip())
        if not inner:
            continue
        words = words_to_number(m.group("words"))
        fig = parse_figure(
            inner.group("fig"), multiplied=bool(inner.groupdict().get("mult") or inner.groupdict().get("mults"))
        )
        if fig is None or words is None:
            continue
        fig *= _mult(inner) if "pre" in inner.groupdict() else 1
        cur = None
        if inner.groupdict().get("pre"):
            cur = _currency_of_prefix(inner.group("pre"))
        word_cur = m.group("cur") or m.group("cur2")
        if cur is None and word_cur:
            cur = _currency_of_word(word_cur)
        if cur is None:
            continue  # "five (5)" without a currency is not money
        problem = None
        if words != fig:
            problem = f"words say {_num(words)}, figures say {_num(fig)}"
        elif (
            word_cur
            and inner.groupdict().get("pre")
            and _currency_of_word(word_cur) != cur
            and inner.group("pre").strip() != "$"
        ):
            problem = f"words say {_currency_of_word(word_cur)}, figures say {cur}"
        taken.append((m.start(), m.end()))
        out.append(Value(Kind.money, m.group(0), m.start(), m.end(), amount=fig, unit=cur, problem=problem))
    for pat in (_MONEY_FIG, _MONEY_WORDCUR, _MONEY_FIG_CODE):
        for m in pat.finditer(text):
            raw = m.group(0).rstrip(" .,")
            lead = len(raw) - len(raw.lstrip())
            start, end, raw = m.start() + lead, m.start() + len(raw), raw.lstrip()
            if not free(start, end):
                continue
            mult = _mult(m)
            dollar = "$" in (m.groupdict().get("pre") or "")
            amount = parse_figure(m.group("fig"), multiplied=mult != 1, dollar=dollar)
            if amount is None:
                continue
            g = m.groupdict()
            if "pre" in g:
                cur = _currency_of_prefix(m.group("pre"))
            elif "code" in g:
                cur = _currency_of_prefix(m.group("code"))
            else:
                cur = _currency_of_word(m.group("cur"))
            taken.append((start, end))
            out.append(Value(Kind.money, raw, start, end, amount=amount * mult, unit=cur))
    for m in _MONEY_WORDS_ONLY.finditer(text):
        if not free(m.start(), m.end()):
            continue
        words = words_to_number(m.group("words"))
        if words is None:
            continue
        taken.append((m.start(), m.end()))
        out.append(
            Value(Kind.money, m.group(0), m.start(), m.end(), amount=words, unit=_currency_of_word(m.group("cur")))
        )
    return sorted(out, key=lambda v: v.start)


# --------------------------------------------------------------------------------------------
# Percentages and durations
# --------------------------------------------------------------------------------------------

_PCT_WORD = r"(?:%|percent\b|per\s*cent\b|pct\.?)"
_PCT_WORDS_FIG = re.compile(
    rf"(?P<words>{NUMBER_WORDS})(?:\s+and\s+(?P<frac>one[\s-]half|a\s+half))?\s+{_PCT_WORD}\s*\(\s*(?P<fig>\d+(?:\.\d+)?)\s*{_PCT_WORD}?\s*\)",
    re.I,
)
_PCT_FIG_WORDS = re.compile(  # 10 percent (ten percent) is rare; figures first then words
    rf"(?P<fig>\d+(?:\.\d+)?)\s*{_PCT_WORD}\s*\(\s*(?P<words>{NUMBER_WORDS})\s+{_PCT_WORD}\s*\)", re.I
)
_PCT_FIG = re.compile(rf"(?<![\w.,])(?P<fig>\d+(?:\.\d+)?)\s*{_PCT_WORD}", re.I)
_PCT_WORDS = re.compile(rf"(?P<words>{NUMBER_WORDS})(?:\s+and\s+(?P<frac>one[\s-]half|a\s+half))?\s+{_PCT_WORD}", re.I)


def find_percentages(text: str) -> list[Value]:
    """Percentages in ``text``: ``10%``, ``2.5 percent``, ``ten percent (10%)`` (words vs figures checked)."""
    out: list[Value] = []
    taken: list[tuple[int, int]] = []
    for pat in (_PCT_WORDS_FIG, _PCT_FIG_WORDS, _PCT_FIG, _PCT_WORDS):
        for m in pat.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            g = m.groupdict()
            words = words_to_number(g["words"]) if g.get("words") else None
            if words is not None and g.get("frac"):
                words += Decimal("0.5")
            fig = Decimal(g["fig"]) if g.get("fig") else None
            if g.get("words") and words is None:
                continue
            amount = fig if fig is not None else words
            problem = None
            if fig is not None and words is not None and fig != words:
                problem = f"words say {_num(words)}%, figures say {_num(fig)}%"
            taken.append((m.start(), m.end()))
            out.append(Value(Kind.percent, m.group(0), m.start(), m.end(), amount=amount, problem=problem))
    return sorted(out, key=lambda v: v.start)


_UNIT = r"(?P<qual>calendar\s+|business\s+|working\s+|banking\s+)?(?P<unit>days?|weeks?|months?|years?)\b"
_DUR_WORDS_FIG = re.compile(rf"(?P<words>{NUMBER_WORDS})\s*\(\s*(?P<fig>\d+)\s*\)\s*[-\s]?{_UNIT}", re.I)
_DUR_FIG_WORDS = re.compile(rf"(?<![\w.,])(?P<fig>\d+)\s*\(\s*(?P<words>{NUMBER_WORDS})\s*\)\s*[-\s]?{_UNIT}", re.I)
_DUR_FIG = re.compile(rf"(?<![\w.,$€£/])(?P<fig>\d+(?:\.\d+)?)\s*[-\s]?{_UNIT}", re.I)
_DUR_WORDS = re.compile(rf"(?P<words>{NUMBER_WORDS})\s*[-\s]\s*{_UNIT}", re.I)


def _unit(m: re.Match) -> str:
    unit = m.group("unit").lower().rstrip("s")
    qual = (m.group("qual") or "").strip().lower()
    if unit == "day" and qual in ("business", "working", "banking"):
        return "business_day"
    return unit


def find_durations(text: str) -> list[Value]:
    """Durations in ``text``: ``thirty (30) days``, ``five (5) years``, ``12 months``, ``30-day``.

    ``calendar days`` are days; ``business``/``working``/``banking days`` are ``business_day``.
    Words and figures are checked against each other (``thirty (60) days`` carries a problem).
    A day of the month ("the 1st day of March") is a date, not a duration; the caller removes
    durations inside dates (:func:`extract_values`).
    """
    out: list[Value] = []
    taken: list[tuple[int, int]] = []
    for pat in (_DUR_WORDS_FIG, _DUR_FIG_WORDS, _DUR_FIG, _DUR_WORDS):
        for m in pat.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            g = m.groupdict()
            words = words_to_number(g["words"]) if g.get("words") else None
            if g.get("words") and words is None:
                continue
            fig = Decimal(g["fig"]) if g.get("fig") else None
            amount = fig if fig is not None else words
            problem = None
            if fig is not None and words is not None and fig != words:
                problem = f"words say {_num(words)}, figures say {_num(fig)}"
            taken.append((m.start(), m.end()))
            out.append(
                Value(Kind.duration, m.group(0), m.start(), m.end(), amount=amount, unit=_unit(m), problem=problem)
            )
    return sorted(out, key=lambda v: v.start)


# --------------------------------------------------------------------------------------------
# Redactions
# --------------------------------------------------------------------------------------------

#: Words right after a redaction mark that say which kind of value it hides.
_SLOT_AFTER = [
    (Kind.percent, re.compile(rf"^\s*{_PCT_WORD}", re.I)),
    (Kind.duration, re.compile(rf"^\s*(?:\(\s*[^()]{{1,20}}\)\s*)?[-\s]?{_UNIT}", re.I)),
    (Kind.date, re.compile(r"^\s*,?\s*(?:1[89]|20)\d{2}\b")),
    (
        Kind.money,
        re.compile(
            rf"^\s*(?:\(\s*[^()]{{1,20}}\)\s*)?(?:thousand|million|billion|{_WORD_CUR_RE}|"
            rf"(?:{_CODES_RE})\b)",
            re.I,
        ),
    ),
]
#: Words right before a mark that say so: a currency sign or code (``$[***]``, ``USD [***]``), a month.
_SLOT_BEFORE = [
    (Kind.money, re.compile(rf"(?:[$€£¥₹]|\b(?:{_CODES_RE})\b\.?)\s*$", re.I)),
    (Kind.date, re.compile(rf"\b{_MON}\s*$", re.I)),
]


def find_redactions(text: str) -> list[Value]:
    """Redaction marks in ``text`` (:func:`tasks.check.redactions.find_redactions`) as values of kind
    ``redacted``, in order, each with the ``slot`` its neighbours name (see the module docstring)."""
    from tasks.check.redactions import find_redactions as marks

    out = []
    for mark in marks(text):
        before, after = text[max(0, mark.start - 12) : mark.start], text[mark.end : mark.end + 40]
        slot = next((k for k, rx in _SLOT_AFTER if rx.search(after)), None) or next(
            (k for k, rx in _SLOT_BEFORE if rx.search(before)), None
        )
        out.append(Value(Kind.redacted, mark.raw, mark.start, mark.end, slot=slot))
    return out


# --------------------------------------------------------------------------------------------
# Section references
# --------------------------------------------------------------------------------------------

_SECTION_RE = re.compile(
    r"(?:\b(?:sections?|sec\.|articles?|art\.|clauses?|paragraphs?|para\.|schedules?|exhibits?)|§§?)\s*"
    r"(?P<ref>(?:\d+(?:\.\d+)*|[IVXLC]+\b)(?:\s*\([a-z0-9]{1,4}\))*)",
    re.I,
)


def section_refs(text: str) -> list[str]:
    """Section references in ``text``, normalised: ``"Section 1.5(a)"`` → ``["1.5(a)"]``.

    Only numbers introduced by *Section/Article/Clause/Paragraph/Schedule/Exhibit/§* count; a
    dotted number elsewhere (``USD 1.5 million``) is never a reference.
    """
    return [re.sub(r"\s+", "", m.group("ref")).lower().rstrip(".") for m in _SECTION_RE.finditer(text)]


def heading_refs(headings: list[str]) -> set[str]:
    """Section numbers that open heading lines: ``"12.3 Term"`` → ``"12.3"``, ``"ARTICLE IV"`` → ``"iv"``."""
    out: set[str] = set()
    for h in headings:
        m = re.match(r"\s*(?:(?:article|section|clause|schedule|exhibit)\s+)?(\d+(?:\.\d+)*|[IVXLC]+)\b\.?", h, re.I)
        if m:
            out.add(m.group(1).lower().rstrip("."))
    return out


# --------------------------------------------------------------------------------------------
# All values
# --------------------------------------------------------------------------------------------


def extract_values(text: str, order: DateOrder = DateOrder.unknown) -> list[Value]:
    """Every typed value in ``text`` (redactions, dates, money, percentages, durations), non-overlapping,
    in order.

    Precedence where spans overlap: redaction marks, dates, then money, then percentages, then
    durations (so the "1st day" of a date is no duration and "$30" is no bare number). ``text`` is NFKC-
    normalised first, so offsets refer to the NFKC form (equal to the input for stored text).
    """
    text = unicodedata.normalize("NFKC", text)
    out: list[Value] = []
    for found in (
        find_redactions(text),
        find_dates(text, order),
        find_money(text),
        find_percentages(text),
        find_durations(text),
    ):
        for v in found:
            if not any(v.start < o.end and o.start < v.end for o in out):
                out.append(v)
    return sorted(out, key=lambda v: v.start)


@dataclass
class Covered:
    """Which characters of a text the typed values and section references account for."""

    spans: list[tuple[int, int]] = field(default_factory=list)

    def covers(self, start: int, end: int) -> bool:
        """True when ``[start, end)`` lies inside one covered span."""
        return any(s <= start and end <= e for s, e in self.spans)


def covered_spans(text: str, values: list[Value]) -> Covered:
    """Spans of ``text`` taken by ``values`` and by section references (for leftover numbers)."""
    spans = [(v.start, v.end) for v in values]
    spans += [(m.start(), m.end()) for m in _SECTION_RE.finditer(unicodedata.normalize("NFKC", text))]
    return Covered(spans)
