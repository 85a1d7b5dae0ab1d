"""Inline XBRL facts of an HTML filing, read offline from the parsed document (no taxonomy, no network).

Sources: Inline XBRL 1.1 (Part 1, 2013) §4 (``ix:nonFraction`` §4.1.6, ``ix:nonNumeric`` §4.1.5,
``ix:continuation``, ``ix:exclude``, ``ix:header``/``ix:hidden``/``ix:resources``; the ``scale`` and ``sign``
attributes: the value is the displayed number transformed, times 10^scale, negated when ``sign="-"``);
XBRL 2.1 §4.7 (contexts: ``startDate``/``endDate``/``instant``, segment and scenario) and §4.8 (units:
``measure`` and ``divide``); XBRL Dimensions 1.0 (``xbrldi:explicitMember``/``typedMember``); the Inline XBRL
Transformation Registry 3/4 (``ixt:num-dot-decimal``, ``ixt:fixed-zero``, ``ixt:date-monthname-day-year-en``
and their TR1/TR2 spellings without hyphens) and the SEC's transformations (``ixt-sec:numwordsen``,
``ixt-sec:boolballotbox``, ``ixt-sec:duryear`` …; EDGAR Filer Manual Vol. II §5.2.5).

Why not ``ixbrlparse`` (PyPI 0.12.0, MIT, maintained): measured on the shared Nvidia 10-K it takes 3.9 s (a
second parse with BeautifulSoup's XML mode), returns ``float`` values (not exact decimals), leaves
``ixt:date-monthname-day-year-en``, ``ixt-sec:boolballotbox``, ``ixt-sec:durwordsen`` … untransformed with a
``UserWarning`` each (warnings are errors in this project), does not say where a fact sits in the text, and
pulls in beautifulsoup4, click, pluggy and word2number. This reader walks the lxml tree
:mod:`tasks.ingest.html` already built.

The tree is the one ``lxml.html`` builds: element and attribute names are lower case and keep their prefix
(``ix:nonfraction``, ``contextref``); prefixes are resolved to namespaces through the ``xmlns:`` attributes of
the ``html`` element (EDGAR's usual prefixes when they are not declared). Values of attributes (``name``,
``dimension``) and texts keep their case.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

IX = "http://www.xbrl.org/2013/inlineXBRL"
XBRLI = "http://www.xbrl.org/2003/instance"
XBRLDI = "http://xbrl.org/2006/xbrldi"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
_DEFAULT_PREFIXES = {"ix": IX, "xbrli": XBRLI, "xbrldi": XBRLDI, "xsi": XSI}

#: A non-numeric fact's ``text`` is cut at this many characters (:class:`schemas.documents.XbrlFact`).
MAX_TEXT_CHARS = 2000
#: ``ix:continuation`` links followed at most (a loop in ``continuedAt`` ends there).
MAX_CONTINUATIONS = 1000

#: The dei facts copied into a result's ``"dei"`` (EDGAR Filer Manual Vol. II §6.5.20, cover page tagging).
DEI_NAMES = (
    "DocumentType",
    "DocumentPeriodEndDate",
    "EntityRegistrantName",
    "EntityCentralIndexKey",
    "CurrentFiscalYearFocus",
    "DocumentFiscalYearFocus",
    "DocumentFiscalPeriodFocus",
    "CurrentFiscalYearEndDate",
)

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_WORD_NUMBERS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        ]
    )
}
_TENS = {
    w: 10 * (i + 2)
    for i, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"])
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "trillion": 10**12}


class TransformError(ValueError):
    """A displayed value the fact's ``format`` cannot read (the fact keeps its text, its value is None)."""


def _format_name(fmt: str | None) -> str:
    """``"ixt:num-dot-decimal"`` → ``"numdotdecimal"``: the local name without hyphens, so the TR3/TR4 names
    and the older TR1/TR2 ones (``ixt:numdotdecimal``) compare equal."""
    return (fmt or "").rsplit(":", 1)[-1].replace("-", "").lower()


def words_to_number(text: str) -> int:
    """English number words to an integer (``ixt-sec:numwordsen``, EDGAR Filer Manual Vol. II §5.2.5.14):
    ``"four"`` → 4, ``"twenty-five"`` → 25, ``"one hundred and two"`` → 102, ``"no"``/``"none"`` → 0.
    Raises :class:`TransformError` for any other word."""
    words = [w for w in re.split(r"[\s\-,]+", text.strip().lower()) if w and w != "and"]
    if words in (["no"], ["none"]):
        return 0
    if not words:
        raise TransformError(f"no number words in {text!r}")
    total = current = 0
    for w in words:
        if w in _WORD_NUMBERS:
            current += _WORD_NUMBERS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        elif w in _SCALES:
            total += max(current, 1) * _SCALES[w]
            current = 0
        else:
            raise TransformError(f"not an English number word: {w!r}")
    return total + current


def _month(name: str) -> int:
    m = _MONTHS.get(name.lower().rstrip("."))
    if m is None:
        raise TransformError(f"not a month name: {name!r}")
    return m


def _date(year: str, month: int, day: str) -> str:
    y = int(year)
    if len(year) == 2:
        y += 2000
    d = int(day)
    if not (1 <= month <= 12 and 1 <= d <= 31):
        raise TransformError(f"not a date: {year}-{month}-{day}")
    return f"{y:04d}-{month:02d}-{d:02d}"


def transform(fmt: str | None, displayed: str) -> str:
    """The XBRL lexical value of a displayed value under transformation ``fmt`` (Transformation Registry
    3/4 and SEC transformations; None = the displayed text is the value, whitespace trimmed).

    Numbers come back as decimal strings without grouping (``"26,974"`` → ``"26974"``), dates as ISO
    (``xs:date`` ``"2023-01-29"``, ``xs:gYearMonth`` ``"2026-06"``, ``xs:gMonthDay`` ``"--01-29"``), booleans as
    ``"true"``/``"false"``, durations (``ixt-sec:durwordsen``) as ``xs:duration`` (``"P6Y"``). Formats that name
    a value rather than transform one (``ixt-sec:stateprovnameen``, ``exchnameen``, ``entityfilercategoryen``)
    and unknown ones return the text as displayed. Raises :class:`TransformError` when the text does not fit
    the format.
    """
    text = " ".join(displayed.replace("\xa0", " ").split())
    name = _format_name(fmt)
    if name in ("fixedzero", "zerodash", "numdash"):
        return "0"
    if name in ("fixedtrue", "booleantrue"):
        return "true"
    if name in ("fixedfalse", "booleanfalse"):
        return "false"
    if name in ("fixedempty", "nocontent"):
        return ""
    if name == "boolballotbox":
        if text in ("☒", "☑", "⊠"):
            return "true"
        if text == "☐":
            return "false"
        raise TransformError(f"not a ballot box: {text!r}")
    if name in ("numdotdecimal", "numcommadot", "numspacedot", ""):
        if name == "" and not re.fullmatch(r"[+-]?[\d.,\s]+", text):
            return text  # a non-numeric fact without a format: its text is its value
        digits = re.sub(r"[,\s'’]", "", text)
        if not re.fullmatch(r"\d*\.?\d*", digits) or not re.search(r"\d", digits):
            if name == "" and digits in ("", "-", "—", "–"):
                return "0"
            raise TransformError(f"not a number with a decimal point: {text!r}")
        return digits
    if name in ("numcommadecimal", "numdotcomma", "numspacecomma", "numcomma"):
        digits = re.sub(r"[.\s'’]", "", text).replace(",", ".")
        if not re.fullmatch(r"\d*\.?\d*", digits) or not re.search(r"\d", digits):
            raise TransformError(f"not a number with a decimal comma: {text!r}")
        return digits
    if name in ("numwordsen", "numwordsen2"):
        return str(words_to_number(text))
    if name in ("datemonthnamedayyearen", "datemonthdayyearen", "datelongus", "dateshortus"):
        m = re.fullmatch(r"([A-Za-z]+)\.?\s*(\d{1,2})(?:st|nd|rd|th)?\s*,?\s*(\d{4}|\d{2})", text)
        if not m:
            raise TransformError(f"not a 'Month day, year' date: {text!r}")
        return _date(m.group(3), _month(m.group(1)), m.group(2))
    if name in ("datedaymonthnameyearen", "datedaymonthyearen", "datelonguk", "dateshortuk"):
        m = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?\s*([A-Za-z]+)\.?\s*,?\s*(\d{4}|\d{2})", text)
        if not m:
            raise TransformError(f"not a 'day Month year' date: {text!r}")
        return _date(m.group(3), _month(m.group(2)), m.group(1))
    if name in ("datemonthnameyearen", "datemonthyearen", "datelongyearmonth"):
        m = re.fullmatch(r"([A-Za-z]+)\.?\s*,?\s*(\d{4})", text)
        if not m:
            raise TransformError(f"not a 'Month year' date: {text!r}")
        return f"{int(m.group(2)):04d}-{_month(m.group(1)):02d}"
    if name in ("datemonthnamedayen", "datemonthdayen"):
        m = re.fullmatch(r"([A-Za-z]+)\.?\s*(\d{1,2})(?:st|nd|rd|th)?", text)
        if not m:
            raise TransformError(f"not a 'Month day' date: {text!r}")
        return f"--{_month(m.group(1)):02d}-{int(m.group(2)):02d}"
    if name in ("datemonthdayyear", "dateslashus", "datedotus"):
        m = re.fullmatch(r"(\d{1,2})[/.\-](\d{1,2})[/.\-](\d{4}|\d{2})", text)
        if not m:
            raise TransformError(f"not a month/day/year date: {text!r}")
        return _date(m.group(3), int(m.group(1)), m.group(2))
    if name in ("datedaymonthyear", "dateslasheu", "datedoteu"):
        m = re.fullmatch(r"(\d{1,2})[/.\-](\d{1,2})[/.\-](\d{4}|\d{2})", text)
        if not m:
            raise TransformError(f"not a day/month/year date: {text!r}")
        return _date(m.group(3), int(m.group(2)), m.group(1))
    if name in ("dateyearmonthday",):
        m = re.fullmatch(r"(\d{4})[/.\-](\d{1,2})[/.\-](\d{1,2})", text)
        if not m:
            raise TransformError(f"not a year-month-day date: {text!r}")
        return _date(m.group(1), int(m.group(2)), m.group(3))
    if name == "durwordsen":
        return _duration_words(text)
    if name in ("duryear", "durmonth", "durday"):
        digits = re.sub(r"[,\s]", "", text)
        if not re.fullmatch(r"\d*\.?\d+", digits):
            raise TransformError(f"not a number of {name[3:]}s: {text!r}")
        return digits
    return text


def _duration_words(text: str) -> str:
    """``"six years"`` → ``"P6Y"``, ``"2 years and 6 months"`` → ``"P2Y6M"`` (``ixt-sec:durwordsen``)."""
    out = {"Y": 0, "M": 0, "D": 0}
    found = False
    for m in re.finditer(r"([\w\-]+(?:\s+[\w\-]+)*?)\s+(years?|months?|days?)\b", text.lower()):
        amount = m.group(1).split(" and ")[-1].strip()
        value = int(amount) if amount.isdigit() else words_to_number(amount)
        out[m.group(2)[0].upper()] += value
        found = True
    if not found:
        raise TransformError(f"not a duration in words: {text!r}")
    return "P" + "".join(f"{v}{k}" for k, v in out.items() if v) if any(out.values()) else "P0D"


def numeric_value(displayed: str, fmt: str | None, scale: str | None, sign: str | None) -> str:
    """The exact value of an ``ix:nonFraction`` as a decimal string (Inline XBRL 1.1 §4.1.6): the displayed
    text transformed (:func:`transform`), shifted by ``scale`` (a power of ten, may be negative) and negated
    when ``sign`` is ``"-"``; computed with :class:`decimal.Decimal`, never a float. ``"26,974"`` with scale 6
    → ``"26974000000"``; ``"12.50"`` with scale -2 and sign ``-`` → ``"-0.125"``. Raises
    :class:`TransformError` when the text is not a number under ``fmt``."""
    lexical = transform(fmt, displayed)
    try:
        value = Decimal(lexical)
        shift = int(scale or 0)
    except (InvalidOperation, ValueError) as exc:
        raise TransformError(f"not a number: {displayed!r} (format {fmt}, scale {scale})") from exc
    if abs(shift) > 100:
        raise TransformError(f"scale {shift} out of range")
    value = value.scaleb(shift)
    if sign == "-":
        value = -value
    return _plain(value)


def _plain(value: Decimal) -> str:
    """A decimal without exponent or trailing fractional zeros: ``2.6974E+10`` → ``"26974000000"``."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


class _Names:
    """Resolves ``prefix:local`` tag names of the ``lxml.html`` tree to ``(namespace, local)``."""

    def __init__(self, root: Any) -> None:
        self.prefixes = dict(_DEFAULT_PREFIXES)
        for key, value in root.attrib.items():
            if key.lower().startswith("xmlns:"):
                self.prefixes[key.split(":", 1)[1].lower()] = value.strip()

    def split(self, tag: Any) -> tuple[str | None, str]:
        if not isinstance(tag, str):
            return None, ""
        if tag.startswith("{"):  # an XML tree (namespaces resolved by the parser)
            ns, _, local = tag[1:].partition("}")
            return ns, local.lower()
        prefix, sep, local = tag.partition(":")
        if not sep:
            return None, tag.lower()
        return self.prefixes.get(prefix.lower()), local.lower()

    def iter(self, root: Any, ns: str, *locals_: str) -> list[Any]:
        """Elements of ``root`` in namespace ``ns`` with one of the (lower-case) local names, in document
        order: lxml's own tag search for every prefix bound to ``ns`` (``ix:nonfraction``), and the
        resolved form of an XML tree (``{ns}nonFraction``, any case)."""
        prefixes = [p for p, n in self.prefixes.items() if n == ns]
        tags = [f"{p}:{local}" for p in prefixes for local in locals_]
        wanted = set(locals_)
        out = []
        for el in root.iter(*tags, f"{{{ns}}}*"):
            n, local = self.split(el.tag)
            if n == ns and local in wanted:
                out.append(el)
        return out


def _attr(el: Any, name: str) -> str | None:
    """Attribute ``name`` (lower case in the ``lxml.html`` tree, as written in an XML tree)."""
    value = el.get(name.lower())
    return value if value is not None else el.get(name)


def _text(el: Any, names: _Names) -> str:
    """The text of an element without its ``ix:exclude`` descendants (Inline XBRL 1.1 §4.1.3); iterative,
    so a deep tree does not reach Python's recursion limit."""
    parts: list[str] = [el.text or ""]
    stack: list[tuple[Any, bool]] = [(child, False) for child in reversed(list(el))]
    while stack:
        cur, closing = stack.pop()
        if closing:
            parts.append(cur.tail or "")
            continue
        ns, local = names.split(cur.tag)
        if ns == IX and local == "exclude":
            parts.append(cur.tail or "")
            continue
        if isinstance(cur.tag, str):
            parts.append(cur.text or "")
        stack.append((cur, True))
        stack.extend((child, False) for child in reversed(list(cur)))
    return "".join(parts)


def _contexts(root: Any, names: _Names) -> dict[str, dict]:
    """``{id: {"start", "end", "instant", "dimensions"}}`` of every ``xbrli:context`` (XBRL 2.1 §4.7)."""
    out: dict[str, dict] = {}
    for ctx in names.iter(root, XBRLI, "context"):
        cid = _attr(ctx, "id")
        if not cid:
            continue
        entry: dict[str, Any] = {"start": None, "end": None, "instant": False, "dimensions": {}}
        for el in ctx.iter():
            ns, local = names.split(el.tag)
            text = " ".join((el.text or "").split())
            if ns == XBRLI and local == "startdate":
                entry["start"] = text
            elif ns == XBRLI and local == "enddate":
                entry["end"] = text
            elif ns == XBRLI and local == "instant":
                entry["end"], entry["instant"] = text, True
            elif ns == XBRLDI and local in ("explicitmember", "typedmember"):
                axis = _attr(el, "dimension") or ""
                value = text if local == "explicitmember" else " ".join("".join(el.itertext()).split())
                entry["dimensions"][axis] = value
        out[cid] = entry
    return out


def _units(root: Any, names: _Names) -> dict[str, str]:
    """``{id: "USD" | "shares" | "USD/shares" | "USD*shares"}`` of every ``xbrli:unit`` (XBRL 2.1 §4.8:
    measures by their local name; a ``divide`` as numerator/denominator, several measures joined by ``*``)."""
    out: dict[str, str] = {}
    for unit in names.iter(root, XBRLI, "unit"):
        uid = _attr(unit, "id")
        if not uid:
            continue
        numerator: list[str] = []
        denominator: list[str] = []
        for el in unit.iter():
            ns, local = names.split(el.tag)
            if ns != XBRLI or local != "measure":
                continue
            measure = " ".join((el.text or "").split()).rsplit(":", 1)[-1]
            in_denominator = any(names.split(a.tag) == (XBRLI, "unitdenominator") for a in el.iterancestors())
            (denominator if in_denominator else numerator).append(measure)
        text = "*".join(numerator)
        out[uid] = f"{text}/{'*'.join(denominator)}" if denominator else text
    return out


def read_facts(root: Any, locate: Callable[[Any], int | None]) -> list[dict]:
    """Every ``ix:nonFraction`` and ``ix:nonNumeric`` fact of the parsed document ``root`` as
    :class:`schemas.documents.XbrlFact` dicts, in document order (hidden facts of ``ix:header`` included).

    ``locate(element)`` gives the 1-based text unit holding a fact's element (None when hidden). A fact whose
    displayed value its format cannot read keeps its ``text`` with ``value`` None; ``xsi:nil="true"`` facts
    have ``value`` None and empty text. A non-numeric fact's text follows its ``continuedAt`` chain of
    ``ix:continuation`` elements (Inline XBRL 1.1 §4.1.4) and leaves out ``ix:exclude`` content; it is cut
    at :data:`MAX_TEXT_CHARS`. Never raises on bad facts (they are skipped or kept without a value).
    """
    names = _Names(root)
    contexts = _contexts(root, names)
    units = _units(root, names)
    continuations = {_attr(el, "id"): el for el in names.iter(root, IX, "continuation") if _attr(el, "id")}
    facts: list[dict] = []
    for el in names.iter(root, IX, "nonfraction", "nonnumeric"):
        _, local = names.split(el.tag)
        concept = _attr(el, "name")
        if not concept:
            continue
        cid = _attr(el, "contextRef") or ""
        ctx = contexts.get(cid, {"start": None, "end": None, "instant": False, "dimensions": {}})
        problem = None if cid in contexts else f"contextRef {cid!r} names no context: its period is unknown"
        nil = (_attr(el, "xsi:nil") or "").strip().lower() in ("true", "1")
        fmt = _attr(el, "format")
        text = " ".join(_text(el, names).split())
        value: str | None = None
        unit = units.get(_attr(el, "unitRef") or "") if local == "nonfraction" else None
        if local == "nonfraction":
            if not nil:
                try:
                    value = numeric_value(text, fmt, _attr(el, "scale"), _attr(el, "sign"))
                except TransformError as exc:
                    value, problem = None, problem or unreadable(text, _attr(el, "scale"), exc)
            scale = (_attr(el, "scale") or "0").strip()
            if unit and "/shares" in unit and scale not in ("0", "") and problem is None:
                problem = f"scale {scale} on a per-share amount ({text} {unit}): not used"
        else:
            link, seen = _attr(el, "continuedAt"), 0
            while link and link in continuations and seen < MAX_CONTINUATIONS and len(text) < MAX_TEXT_CHARS:
                nxt = continuations[link]
                text = f"{text} {' '.join(_text(nxt, names).split())}".strip()
                link, seen = _attr(nxt, "continuedAt"), seen + 1
            text = text[:MAX_TEXT_CHARS]
        facts.append(
            {
                "concept": concept,
                "value": value,
                "text": "" if nil else text,
                "unit": unit,
                "decimals": _attr(el, "decimals"),
                "period_start": None if ctx["instant"] else ctx["start"],
                "period_end": ctx["end"],
                "instant": ctx["instant"],
                "dimensions": dict(ctx["dimensions"]),
                "context_id": cid,
                "unit_number": locate(el),
                "format": fmt,
                "problem": problem,
            }
        )
    mark_inconsistent_duplicates(facts)
    return facts


def unreadable(text: str, scale: str | None, error: TransformError) -> str:
    """Why a numeric fact's value cannot be known, for its ``problem``: a ``scale`` that is no integer power
    of ten (Inline XBRL 1.1 §4.1.6: an integer), a number in parentheses inside the fact (the displayed
    value of a ``ix:nonFraction`` carries no sign; a negative value is tagged ``sign="-"``), or what the
    format's transformation said. The figure is then shown as displayed, never converted."""
    if scale is not None and not re.fullmatch(r"\s*-?\d+\s*", scale):
        return f"scale {scale.strip()!r} is not a power of ten: {text!r} shown as displayed, not scaled"
    if text.strip().startswith("(") and text.strip().endswith(")"):
        return f'{text!r} is in parentheses inside the fact, its sign not tagged (sign="-"): shown as displayed'
    return f"{text!r} cannot be read: {error}"


def mark_inconsistent_duplicates(facts: list[dict]) -> None:
    """Mark, in place, numeric facts of one concept, context and unit whose values disagree (XBRL 2.1
    §4.10 duplicates; an inconsistent pair is an error of the filing, Inline XBRL 1.1 §4.1.5): each gets
    ``problem`` naming the values found, so none of them is taken as the figure. Values equal after
    rounding to the coarser ``decimals`` of the two agree (``26974000000`` at -6 and ``26974012000`` at
    -3)."""
    groups: dict[tuple, list[dict]] = {}
    for fact in facts:
        if fact.get("value") is not None and fact.get("unit"):
            groups.setdefault((fact["concept"], fact["context_id"], fact["unit"]), []).append(fact)
    for group in groups.values():
        if len(group) < 2:
            continue
        places = [_decimals(f.get("decimals")) for f in group]
        coarsest = min(places)
        rounded = {_round(Decimal(f["value"]), coarsest) for f in group}
        if len(rounded) > 1:
            shown = ", ".join(sorted({f["text"] for f in group}))
            for fact in group:
                fact["problem"] = fact.get("problem") or f"duplicate facts disagree ({shown}): not used"


def _decimals(value: str | None) -> int:
    """``decimals`` as an int (``INF`` and a missing or bad value as 10, finer than any amount)."""
    try:
        return int(value or "")
    except ValueError:
        return 10


def _round(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN) if places < 10 else value


def dei(root: Any, facts: list[dict]) -> dict[str, str]:
    """The cover-page dei facts of :data:`DEI_NAMES` that the filing tags, ``{local name: value}``
    (EDGAR Filer Manual Vol. II §6.5.20): each the first such fact without dimensions, transformed by its
    format (``DocumentPeriodEndDate`` ``"January 29, 2023"`` → ``"2023-01-29"``, Transformation Registry 4);
    its text as displayed when the format cannot read it."""
    out: dict[str, str] = {}
    for fact in facts:
        prefix, _, local = fact["concept"].partition(":")
        if prefix != "dei" or local not in DEI_NAMES or local in out or fact["dimensions"]:
            continue
        try:
            out[local] = transform(fact.get("format"), fact["text"])
        except TransformError:
            out[local] = fact["text"]
    return out
