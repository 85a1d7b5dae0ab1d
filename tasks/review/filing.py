"""Read the structure of an SEC filing: Item sections, financial statements, key figures, risk
factor headings and the flags a reviewer compares from one filing to the next.

Sources of the structure: Regulation S-K and the forms' General Instructions (Form 10-K Parts
I-IV, Items 1-16; Form 10-Q Part I Items 1-4 and Part II Items 1-6; Form 8-K Items 1.01-9.01) and
Regulation S-X Article 3 (the primary statements in Item 8: balance sheet, statements of income
(operations, earnings) and of cash flows). Key figures are read from the current-period column
(the first amount) of a statement's line; amounts in parentheses are negative on the statement
and outflows (capital expenditure, dividends paid) are reported as positive amounts.

Everything here is a pure function of page texts (1-based page numbers), except the Prefect
tasks :func:`summarize_document` and :func:`chunk_filing`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import PAGE_SEPARATOR, Chunk, ExtractedDocument
from schemas.filings import OUTFLOWS as _OUTFLOWS
from schemas.filings import FilingSummary, KeyFigure, KeyFigureName, RedFlag
from tasks.runnames import for_document

_I = re.IGNORECASE
K = KeyFigureName

#: Form 10-K Item titles (General Instructions, Form 10-K), used as section names.
ITEMS_10K = {
    "1": "Business",
    "1A": "Risk Factors",
    "1B": "Unresolved Staff Comments",
    "1C": "Cybersecurity",
    "2": "Properties",
    "3": "Legal Proceedings",
    "4": "Mine Safety Disclosures",
    "5": "Market for Registrant's Common Equity",
    "6": "Selected Financial Data",
    "7": "Management's Discussion and Analysis",
    "7A": "Quantitative and Qualitative Disclosures About Market Risk",
    "8": "Financial Statements and Supplementary Data",
    "9": "Changes in and Disagreements With Accountants",
    "9A": "Controls and Procedures",
    "9B": "Other Information",
    "9C": "Disclosure Regarding Foreign Jurisdictions",
    "10": "Directors, Executive Officers and Corporate Governance",
    "11": "Executive Compensation",
    "12": "Security Ownership",
    "13": "Certain Relationships and Related Transactions",
    "14": "Principal Accounting Fees and Services",
    "15": "Exhibits and Financial Statement Schedules",
    "16": "Form 10-K Summary",
}

#: Form 10-Q Item titles by Part (General Instructions and Parts I-II of Form 10-Q): its Items are numbered
#: again from 1 in Part II, so the Part decides the title.
ITEMS_10Q = {
    "I": {
        "1": "Financial Statements",
        "2": "Management's Discussion and Analysis of Financial Condition and Results of Operations",
        "3": "Quantitative and Qualitative Disclosures About Market Risk",
        "4": "Controls and Procedures",
    },
    "II": {
        "1": "Legal Proceedings",
        "1A": "Risk Factors",
        "2": "Unregistered Sales of Equity Securities and Use of Proceeds",
        "3": "Defaults Upon Senior Securities",
        "4": "Mine Safety Disclosures",
        "5": "Other Information",
        "6": "Exhibits",
    },
}

#: Form 8-K Item titles (General Instructions B and Items 1.01-9.01 of Form 8-K; 6.01-6.05 apply to
#: asset-backed issuers).
ITEMS_8K = {
    "1.01": "Entry into a Material Definitive Agreement",
    "1.02": "Termination of a Material Definitive Agreement",
    "1.03": "Bankruptcy or Receivership",
    "1.04": "Mine Safety - Reporting of Shutdowns and Patterns of Violations",
    "1.05": "Material Cybersecurity Incidents",
    "2.01": "Completion of Acquisition or Disposition of Assets",
    "2.02": "Results of Operations and Financial Condition",
    "2.03": "Creation of a Direct Financial Obligation or an Obligation under an Off-Balance Sheet Arrangement",
    "2.04": "Triggering Events That Accelerate or Increase a Direct Financial Obligation",
    "2.05": "Costs Associated with Exit or Disposal Activities",
    "2.06": "Material Impairments",
    "3.01": "Notice of Delisting or Failure to Satisfy a Continued Listing Rule or Standard; Transfer of Listing",
    "3.02": "Unregistered Sales of Equity Securities",
    "3.03": "Material Modification to Rights of Security Holders",
    "4.01": "Changes in Registrant's Certifying Accountant",
    "4.02": "Non-Reliance on Previously Issued Financial Statements or a Related Audit Report",
    "5.01": "Changes in Control of Registrant",
    "5.02": "Departure of Directors or Certain Officers; Election of Directors; Appointment of Certain Officers",
    "5.03": "Amendments to Articles of Incorporation or Bylaws; Change in Fiscal Year",
    "5.04": "Temporary Suspension of Trading Under Registrant's Employee Benefit Plans",
    "5.05": "Amendments to the Registrant's Code of Ethics, or Waiver of a Provision of the Code of Ethics",
    "5.06": "Change in Shell Company Status",
    "5.07": "Submission of Matters to a Vote of Security Holders",
    "5.08": "Shareholder Director Nominations",
    "6.01": "ABS Informational and Computational Material",
    "6.02": "Change of Servicer or Trustee",
    "6.03": "Change in Credit Enhancement or Other External Support",
    "6.04": "Failure to Make a Required Distribution",
    "6.05": "Securities Act Updating Disclosure",
    "7.01": "Regulation FD Disclosure",
    "8.01": "Other Events",
    "9.01": "Financial Statements and Exhibits",
}


def item_title(item: str, form: str | None, part: str | None = None) -> str | None:
    """The title of Item ``item`` (``"1A"``, ``"5.02"``) in the list of ``form`` (``"10-K"``, ``"10-Q"``,
    ``"8-K"``; a 10-Q Item in ``part`` ``"I"`` or ``"II"``), or None when the form's list has no such Item (an
    "Item 9" in an 8-K, an "Item 7" in a 10-Q): the filer's own title is then used. An Item numbered ``x.yy``
    is an 8-K's whatever the form; another form (None, an earnings release) reads the 10-K's list."""
    if "." in item:
        return ITEMS_8K.get(item)
    if form == "10-Q":
        return ITEMS_10Q.get(part or "I", {}).get(item)
    if form == "8-K":
        return None
    return ITEMS_10K.get(item)


ITEM_LINE = re.compile(
    r"^\s*ITEM\s+(\d{1,2}(?:\.\d{2})?[A-C]?)(?:(?<=\.\d\d)\([a-z]\))?(?!\d|\(|\.\d)\s*[.:\-–—]?\s*(.{0,200})$",
    _I | re.M,
)
_PART_LINE = re.compile(r"^\s*PART\s+(IV|III|II|I)\b(?!\s+of\b)", re.M)
_STATEMENT_TITLE = [
    ("cash flow", re.compile(r"statements?\s+of\s+(?:consolidated\s+)?cash\s*flows?", _I)),
    (
        "balance sheet",
        re.compile(
            r"balance\s+shee\s?ts?|statements?\s+of\s+(?:consolidated\s+)?financial\s+"
            r"(?:position|condition)",
            _I,
        ),
    ),
    (
        "income",
        re.compile(
            r"statements?\s+of\s+(?:consolidated\s+)?(?:income|operations|earnings)\b|"
            r"income\s+statements?|statements?\s+of\s+(?:consolidated\s+)?comprehensive\s+income",
            _I,
        ),
    ),
]
#: A page headed like a statement that is not the filer's own: notes, indexes, the auditor's report, and the
#: statements of a part of the group (Amcor's "Deed of Cross Guarantee" entities, a parent company alone,
#: Schedule I's condensed financial information of the registrant), whose net sales of 377 are not the
#: group's 14,694.
_NOT_STATEMENT = re.compile(
    r"notes\s+to\s+(?:the\s+)?(?:condensed\s+)?consolidated|index\s+to|"
    r"report\s+of\s+independent|table\s+of\s+contents\s*$|"
    r"deed\s+of\s+cross\s+guarantee|parent\s+company\s+only|"
    r"condensed\s+financial\s+information\s+of\s+(?:the\s+)?registrant",
    _I,
)
_RELEASE_TABLE = re.compile(r"\(unaudited\)|reconciliation\s+of|supplemental\s+data|non-gaap", _I)
_AMOUNT = re.compile(r"\(?-?\$?\s?\d{1,3}(?:,\d{3})+(?:\.\d+)?\)?|\(?-?\$?\s?\d+\.\d+\)?|\(?-?\$?\s?\d+\)?(?=\s|$)")
_UNIT = re.compile(
    r"\b(?:in|amounts\s+in|dollars\s+in|\$\s+in|\$\s+and\s+shares\s+in)?\s*(thousand|million|billion)s?\b"
    r"|\((thousand|million|billion)s?\b",
    _I,
)
_YEAR = re.compile(r"\b(19[89]\d|20[0-4]\d)\b")

#: Statement line labels per key figure, most specific first; matched at the start of a line.
FIGURE_LINES: dict[KeyFigureName, tuple[str, tuple[str, ...]]] = {
    K.revenue: (
        "income",
        (
            r"total\s+net\s+revenues?",
            r"total\s+revenues?(?:\s+net\s+of\s+interest\s+expense)?",
            r"net\s+revenues?",
            r"revenues?,?\s+net",
            r"net\s+sales",
            r"sales,\s+net(?:\s+of\s+returns(?:\s+and\s+allowances)?)?",
            r"total\s+net\s+sales",
            r"revenues?",
            r"sales",
        ),
    ),
    K.cost_of_revenue: (
        "income",
        (
            r"total\s+cost\s+of\s+(?:revenues?|sales)",
            r"cost\s+of\s+(?:goods\s+)?sold",
            r"cost\s+of\s+(?:revenues?|sales)(?:\s*\(exclusive[^)]*\))?",
        ),
    ),
    K.operating_income: (
        "income",
        (
            r"operating\s+income(?:\s+\(loss\))?",
            r"income\s+from\s+operations",
            r"operating\s+(?:profit|earnings)",
            r"earnings\s+from\s+operations",
        ),
    ),
    K.net_income: (
        "income",
        (
            r"net\s+(?:income|earnings)(?:\s+\(loss\))?\s+attributable\s+to\s+(?!non)[\w&.,'’ ]+?",
            r"net\s+(?:income|earnings)(?:\s+\(loss\))?",
        ),
    ),
    K.eps_diluted: (
        "income",
        (
            r"diluted\s+(?:net\s+)?(?:income|earnings)\s+(?:\(loss\)\s+)?per\s+(?:common\s+)?share",
            r"(?:net\s+)?(?:income|earnings)\s+per\s+(?:common\s+)?share[\w ]{0,60}?[-—–:,]?\s*diluted",
            r"diluted(?:\s+earnings\s+per\s+share)?",
        ),
    ),
    K.operating_cash_flow: (
        "cash flow",
        (
            r"net\s+cash\s+(?:provided\s+by|from|generated\s+by)\s*(?:\(used\s+(?:in|for)\)\s*)?"
            r"operating\s+activities",
            r"cash\s+provided\s+by\s+(?:\(used\s+(?:in|for)\)\s+)?"
            r"operati(?:ons|ng\s+activities)",
            r"net\s+cash\s+provided\s+by\s+operations",
            r"net\s+cash\s+(?:used\s+in|provided\s+by)\s+\(?(?:provided\s+by|used\s+in)?\)?\s*"
            r"operating\s+activities",
        ),
    ),
    K.capital_expenditure: (
        "cash flow",
        (
            r"purchases?\s+of\s+property,?\s+plant\s+and\s+equipment",
            r"capital\s+expenditures?",
            r"additions\s+to\s+property(?:,\s+plant)?\s+and\s+equipment",
            r"payments?\s+for\s+(?:acquisition\s+of\s+)?property,?\s+(?:plant\s+)?and\s+equipment",
            r"purchases?\s+of\s+property\s+and\s+equipment",
            r"property\s+additions",
            r"capital\s+expenditures?\s+for\s+property",
        ),
    ),
    K.dividends_paid: (
        "cash flow",
        (
            r"(?:cash\s+)?dividends\s+paid(?:\s+to\s+(?:share|stock)holders)?",
            r"(?:common\s+stock\s+)?dividends(?:\s+paid)?",
            r"payments?\s+of\s+dividends",
        ),
    ),
    K.cash: ("balance sheet", (r"cash\s+and\s+(?:cash\s+)?equivalents", r"cash\s+and\s+due\s+from\s+banks")),
    K.inventories: (
        "balance sheet",
        (r"total\s+inventories", r"merchandise\s+inventories", r"inventories,?\s+net", r"inventories", r"inventory"),
    ),
    K.property_plant_equipment_net: (
        "balance sheet",
        (
            r"property,?\s+(?:plant\s+)?and\s+equipment,?\s*(?:[—–-]\s*)?net",
            r"net\s+property,?\s+(?:plant\s+)?and\s+equipment",
        ),
    ),
    K.total_current_assets: ("balance sheet", (r"total\s+current\s+assets",)),
    K.total_assets: ("balance sheet", (r"total\s+assets",)),
    K.accounts_payable: (
        "balance sheet",
        (r"accounts\s+payable(?:\s+and\s+accrued\s+liabilities)?", r"trade\s+accounts\s+payable"),
    ),
    K.total_current_liabilities: ("balance sheet", (r"total\s+current\s+liabilities",)),
    K.total_debt: ("balance sheet", (r"total\s+debt", r"total\s+borrowings")),
    K.long_term_debt: (
        "balance sheet",
        (
            r"long-term\s+debt(?:,\s+net)?(?:\s*,?\s+(?:less|excluding|net\s+of)\s+current\s+"
            r"(?:portion|maturities))?",
            r"long-term\s+borrowings",
        ),
    ),
}
_COMPILED = {
    name: (stmt, [re.compile(rf"^\s*(?:{p})\s*(?:\(note\s*\d+\))?\s*[:—–-]?\s*(?=[$(\d—–-]|\n)", _I) for p in pats])
    for name, (stmt, pats) in FIGURE_LINES.items()
}
#: Outflows shown in parentheses on the cash-flow statement, reported as positive amounts.
OUTFLOWS = _OUTFLOWS


@dataclass
class FigureLine:
    """A key figure's statement line in a page: ``start``/``end`` index the page text (the line,
    or the label line and the amounts' line when the amounts wrapped onto the next line);
    ``amounts`` are the line's amounts as written, in column order; ``raw`` is the filing period's
    amount among them (e.g. ``"(1,577)"``, :func:`current_column`) and ``period`` that column's year
    from the table's header (None when the header names no year)."""

    name: KeyFigureName
    start: int
    end: int
    raw: str
    amounts: list[str] = field(default_factory=list)
    period: str | None = None


def header_years(page_text: str, before: int, lines: int = 12) -> list[int]:
    """The years of a statement's column header, in column order: the years named in the last
    ``lines`` lines of ``page_text`` before offset ``before`` (its first figure line), e.g.
    ``[2018, 2017, 2016]`` or, oldest first, ``[2016, 2017, 2018]``; a 10-Q's "Three Months Ended …
    Six Months Ended" header gives ``[2024, 2023, 2024, 2023]``."""
    head = "\n".join(page_text[:before].split("\n")[-lines:])
    return [int(y) for y in _YEAR.findall(head)]


def current_column(years: list[int], count: int) -> tuple[int, str | None]:
    """``(index, period)`` of the filing period's amount among a line's ``count`` amounts, from its
    table's header ``years`` (:func:`header_years`): the first column of the latest year when the
    header names one year per amount (newest-first, oldest-first, or a 10-Q's three- and six-month
    columns: the current quarter); else the last column when the header's years rise (oldest first)
    and the first when they do not. ``(0, None)`` without a header year or with more than three
    distinct ones (a schedule by year, such as debt maturities, not a statement's periods): the first
    column, period unknown."""
    if not years or count <= 0 or len(set(years)) > 3:
        return 0, None  # no header year, or a schedule by year (debt maturities), not a statement's periods
    latest = max(years)
    if len(years) == count:
        return years.index(latest), str(latest)
    rising = years[0] < years[-1] and years == sorted(years)
    return (count - 1 if rising else 0), str(latest)


def statement_kind(page_text: str) -> str | None:
    """``"income"``, ``"balance sheet"`` or ``"cash flow"`` when the page is a primary financial
    statement (its title in the page's first 300 characters, not preceded on its line by lower-case
    words as in "amounts in the Consolidated Statement of …", at least 12 amounts, not a note);
    ``"earnings table"`` for an unaudited, supplemental or reconciliation table with a stated
    unit and at least 20 amounts (earnings releases; read with the income-statement labels);
    None otherwise."""
    head = re.sub(r"(?<=[a-z]) (?=[a-z]\b)", "", page_text[:400])  # "Incom e", "Shee t": split last letters
    head = re.sub(
        r"^(?:table\s+of\s+contents|index\s+to\s+(?:the\s+)?consolidated\s+financial\s+statements)\s*",
        "",
        head,
        flags=_I,
    )[:300]
    if _NOT_STATEMENT.search(head):
        return None
    for kind, rx in _STATEMENT_TITLE:
        m = rx.search(head)
        line_before = head[head.rfind("\n", 0, m.start()) + 1 : m.start()] if m else ""
        is_title = m and not re.search(r"\b[a-z]{3,}\b", line_before.replace("and", ""))  # not a reference to one
        if is_title and len(_AMOUNT.findall(page_text)) >= 12:
            return kind
    head = re.sub(r"\s+", " ", head)
    if _RELEASE_TABLE.search(head) and _UNIT.search(head) and len(_AMOUNT.findall(page_text)) >= 20:
        return "earnings table"
    return None


#: A grouped amount ("1,234"): the heading of a statement ends at the first line holding one.
_GROUPED = re.compile(r"\d{1,3},\d{3}")

#: A scale a filing states beside its tables ("(Dollars in millions)", "(in millions, except per share
#: data)", "($ in thousands)", "(Amounts in billions)"), wherever it stands.
_STATED_SCALE = re.compile(
    r"\((?:(?:dollars|amounts|\$)\s+)?in\s+(thousand|million|billion)s\b[^)\n]{0,60}\)?"
    r"|(?<![\w$])(?:dollars|amounts)\s+in\s+(thousand|million|billion)s\b",
    re.I,
)

#: The unit of a statement figure whose filing states no scale anywhere (never shown as plain dollars).
SCALE_NOT_STATED = "USD (scale not stated)"


def _heading(page_text: str) -> str:
    """A statement page's heading: its text before the first grouped amount (within its first 40 lines; the
    first 8 lines when none holds one). A title set one word a line ("CONSOLIDATED\nBALANCE\nSHEETS\n(In thousands)")
    keeps its scale line."""
    lines = page_text.split("\n")[:40]
    first = next((i for i, line in enumerate(lines) if _GROUPED.search(line)), None)
    if first is None:
        return "\n".join(lines[:8])
    amount = _GROUPED.search(lines[first])
    assert amount is not None
    return "\n".join([*lines[:first], lines[first][: amount.start()]])  # a line run on into the table too


def statement_unit(page_text: str) -> str:
    """The unit of a statement page's amounts from its heading (:func:`_heading`: ``"USD millions"``,
    ``"USD thousands"``, ``"USD billions"``); ``"USD"`` when the heading states no scale (the caller then
    takes the filing's stated scale, :func:`document_scale`)."""
    m = _UNIT.search(_heading(page_text))
    return f"USD {(m.group(1) or m.group(2)).lower()}s" if m else "USD"


def document_scale(pages: list[tuple[int, str]]) -> tuple[str, int, str] | None:
    """The scale the filing states for its figures when a statement page states none: ``(unit, page, phrase)``,
    e.g. ``("USD millions", 15, "'(Dollars in millions)'")`` (the phrase quoted) — the scale most statement headings state, else the
    one most often stated beside the filing's tables (:data:`_STATED_SCALE`), first page where it is said;
    None when the filing states none."""
    from collections import Counter

    stated: list[tuple[str, int, str]] = []
    for number, text in pages:  # statement headings first
        if statement_kind(text) is not None and (m := _STATED_SCALE.search(_heading(text))):
            stated.append((f"USD {(m.group(1) or m.group(2)).lower()}s", number, repr(m.group(0))))
    if not stated:
        for number, text in pages:
            for m in _STATED_SCALE.finditer(text):
                stated.append((f"USD {(m.group(1) or m.group(2)).lower()}s", number, repr(m.group(0))))
    if not stated:
        return None
    unit = Counter(u for u, _, _ in stated).most_common(1)[0][0]
    return next(s for s in stated if s[0] == unit)


def statement_period(page_text: str) -> str | None:
    """The current-period column heading of a statement page: the first year named in its first
    8 lines (e.g. ``"2018"``); None when none is."""
    m = _YEAR.search("\n".join(page_text.split("\n")[:8]))
    return m.group(1) if m else None


def amount_value(raw: str) -> float | None:
    """``"(1,577)"`` → ``-1577.0``, ``"$ 2.10"`` → ``2.1``; None for a dash or no number."""
    digits = re.sub(r"[^\d.]", "", raw)
    if not digits or digits == ".":
        return None
    try:
        value = float(digits)
    except ValueError:
        return None
    return -value if raw.strip().startswith("(") or raw.strip().startswith("-") else value


def figure_lines(page_text: str, kind: str) -> list[FigureLine]:
    """The key-figure lines of a statement page of ``kind`` (see :func:`statement_kind`), at
    most one per figure (the first line of its most specific label), each with the filing period's
    amount chosen by the table's header (:func:`header_years`, :func:`current_column`)."""
    found: dict[KeyFigureName, FigureLine] = {}
    lines = _line_spans(page_text)
    for name, (stmt, patterns) in _COMPILED.items():
        if stmt != (kind if kind != "earnings table" else "income"):
            continue
        for rx in patterns:
            hit = _first_line(lines, page_text, rx, name)
            if hit is not None:
                found[name] = hit
                break
    out = sorted(found.values(), key=lambda f: f.start)
    years = header_years(page_text, out[0].start) if out else []
    for f in out:
        column, period = current_column(years, len(f.amounts))
        raw = f.amounts[column] if column < len(f.amounts) else f.raw
        if f.name is K.eps_diluted and "." not in raw:
            continue  # the header's column holds no per-share amount: keep the first one's
        f.raw, f.period = raw, period
    return out


class _Span:
    """A line of a page: ``group(0)``, ``start()`` and ``end()`` like a regex match."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self._text, self._start, self._end = text, start, end

    def group(self, _: int = 0) -> str:
        return self._text[self._start : self._end]

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


#: A line longer than this (characters) is table rows run together by the PDF's text layer.
RUN_ON_LINE_CHARS = 300


def _line_spans(text: str) -> list[_Span]:
    """The page's lines; a line longer than :data:`RUN_ON_LINE_CHARS` (table rows run together
    into one line by some PDFs' text layer) is cut where a capitalised word follows an amount,
    a dash or a lower-case word, so each row's label starts a line."""
    out: list[_Span] = []
    for m in re.finditer(r"[^\n]+", text):
        if m.end() - m.start() <= RUN_ON_LINE_CHARS:
            out.append(_Span(text, m.start(), m.end()))
            continue
        start = m.start()
        for cut in re.finditer(r"(?<=[\da-z)—–-]) (?=[A-Z][a-z])", m.group(0)):
            out.append(_Span(text, start, m.start() + cut.start()))
            start = m.start() + cut.end()
        out.append(_Span(text, start, m.end()))
    return out


def _first_line(lines: list, text: str, rx: re.Pattern[str], name: KeyFigureName) -> FigureLine | None:
    for i, m in enumerate(lines):
        line = m.group(0)
        label = rx.match(line)
        if label is None:
            continue
        rest, end = line[label.end() :], m.end()
        if not _AMOUNT.search(rest) and i + 1 < len(lines) and re.fullmatch(r"[\s$()\d,.—–-]+", lines[i + 1].group(0)):
            rest, end = lines[i + 1].group(0), lines[i + 1].end()
        amounts = [a.group(0).strip() for a in _AMOUNT.finditer(rest)]
        amounts = [a for a in amounts if not _YEAR.fullmatch(a.strip("$() ")) and not re.fullmatch(r"\(\d\)", a)]
        if not amounts:
            continue
        raw = amounts[0]
        if name is K.eps_diluted and ("." not in raw or abs(amount_value(raw) or 0) >= 1000):
            continue
        if name is not K.eps_diluted and amount_value(raw) is None:
            continue
        return FigureLine(name=name, start=m.start(), end=end, raw=raw, amounts=amounts)
    return None


def amount_decimal(raw: str) -> Decimal | None:
    """A statement amount as written, exactly: ``"(1,577)"`` → ``Decimal("-1577")``, ``"$ 2.10"`` →
    ``Decimal("2.10")`` (parentheses or a leading minus: negative, the statements' convention); None for a
    dash or no number."""
    digits = re.sub(r"[^\d.]", "", raw)
    if not re.fullmatch(r"\d+(?:\.\d+)?|\.\d+", digits):
        return None
    value = Decimal(digits)
    return -value if raw.strip().startswith(("(", "-")) else value


_SPAN = re.compile(
    r"\b(?:(three|six|nine|twelve|3|6|9|12)[\s-]+months?|(thirteen|twenty-six|thirty-nine|fifty-two|fifty-three|"
    r"13|26|39|52|53)[\s-]+weeks?|(?:fiscal\s+)?years?|quarters?)\s+ended\b"
    r"(?:\s+([A-Z][a-z]{2,8}\.?\s+\d{1,2}))?",
    _I,
)
_MONTH_DAY = re.compile(
    r"\b((?:January|February|March|April|May|June|July|August|September|October|November|December)\s+\d{1,2})\b"
)


def header_period(page_text: str, before: int, kind: str, year: str | None, column: int, count: int) -> str | None:
    """The period of a statement column in words, from its table's header (the lines before offset
    ``before``): ``"nine months ended September 30, 2024"`` (the header's span for that column: the first
    of a 10-Q's "Three Months Ended … Nine Months Ended" for the first column, the last for the last),
    ``"year ended December 31, 2018"``, ``"thirteen weeks ended November 2, 2024"``, a balance sheet's ``"as of December 31, 2018"``; without a span
    or a date, ``"fiscal year 2018"``, ``"as of the balance sheet date, 2018"`` or just the year; None
    without a year."""
    if year is None:
        return None
    head = " ".join(page_text[:before].split("\n")[-12:])
    day = _MONTH_DAY.search(head)
    if kind == "balance sheet":
        return f"as of {day.group(1)}, {year}" if day else f"as of the balance sheet date, {year}"
    spans = list(_SPAN.finditer(head))
    span = None
    if len(spans) == 1 or (spans and column == 0):
        span = spans[0]
    elif spans and column == count - 1:
        span = spans[-1]
    if span is None:
        return f"fiscal year {year}" if not spans and re.search(r"\bfiscal\b|\byears?\b", head, _I) else year
    words = {"3": "three", "6": "six", "9": "nine", "12": "twelve", "13": "thirteen", "26": "twenty-six"}
    words |= {"39": "thirty-nine", "52": "fifty-two", "53": "fifty-three"}
    months, weeks = span.group(1), span.group(2)
    if months:
        length = f"{words.get(months, months).lower()} months"
    elif weeks:
        length = f"{words.get(weeks, weeks).lower()} weeks"
    else:
        length = "year"
    date_of = span.group(3) or (day.group(1) if day else None)
    return f"{length} ended {date_of}, {year}" if date_of else f"{length} ended in {year}"


def key_figures(pages: list[tuple[int, str]]) -> list[KeyFigure]:
    """Every key figure of every statement page: ``pages`` is ``[(1-based number, text)]``. ``value`` is the
    amount as written, exactly (:func:`amount_decimal`), in the unit the statement's heading states
    (``"USD millions"`` for "in millions": never rescaled); an outflow (capital expenditure, dividends paid)
    is the positive amount paid (``flow`` ``"outflow"``); ``period_label`` the column's period in words
    (:func:`header_period`). Every figure is ``current``: :func:`summarize_pages` keeps the first per name.
    A statement whose heading states no scale takes the filing's (:func:`document_scale`), its ``note`` saying
    where the filing states it; with none stated anywhere its unit is :data:`SCALE_NOT_STATED`."""
    out: list[KeyFigure] = []
    scale: tuple[str, int, str] | bool | None = False  # not looked for yet
    for number, text in pages:
        kind = statement_kind(text)
        if kind is None:
            continue
        unit, stated = statement_unit(text), statement_period(text)
        note = None
        if unit == "USD":
            if scale is False:
                scale = document_scale(pages)
            if isinstance(scale, tuple):
                unit, at, phrase = scale
                note = f"scale as the filing states it on page {at} ({phrase}): this statement's heading states none"
            else:
                unit, note = SCALE_NOT_STATED, "the filing states no scale for its statements: the amount as written"
        lines = figure_lines(text, kind)
        first = lines[0].start if lines else 0
        for f in lines:
            raw, period = f.raw, f.period or stated
            value = amount_decimal(raw)
            if value is None:
                value = Decimal(0)  # a dash: nothing in that column
            outflow = f.name in OUTFLOWS
            column = f.amounts.index(raw) if raw in f.amounts else 0
            out.append(
                KeyFigure(
                    name=f.name,
                    value=abs(value) if outflow else value,
                    raw=raw,
                    unit="USD per share" if f.name is K.eps_diluted else unit,
                    period=period,
                    period_label=header_period(text, first, kind, period, column, len(f.amounts)),
                    statement=kind,
                    line=text[f.start : f.end],
                    page=number,
                    flow="outflow" if outflow else None,
                    note=note,
                )
            )
    return out


def item_sections(pages: list[tuple[int, str]], form: str | None = None) -> list[tuple[int, str]]:
    """``[(first page, "Item 7. Management's Discussion and Analysis"), …]``: each Item heading at
    the start of a line, in page order, skipping table-of-contents pages (more than four Item
    headings on one page) and repeated headings. Items are named from the list of the filing's ``form``
    (:func:`item_title`: a 10-Q's "Item 1" is "Financial Statements" in Part I and "Legal Proceedings" in
    Part II; an 8-K's "Item 2.02" is "Results of Operations and Financial Condition"), else by the filer's
    own title. A 10-Q's Part is the last "PART II" line read, or Part II once an Item number goes back
    down (Item 1 after Item 4)."""
    out: list[tuple[int, str]] = []
    part: str | None = None
    last = 0.0
    for number, text in pages:
        heads = list(ITEM_LINE.finditer(text))
        if len(heads) > 4:
            continue
        parts = [(m.start(), m.group(1).upper()) for m in _PART_LINE.finditer(text)]
        for m in heads:
            item = m.group(1).upper()
            here = [p for at, p in parts if at < m.start()]
            rank = _item_rank(item)
            if here and here[-1] != part:
                part, last = here[-1], 0.0
            elif form == "10-Q" and part != "II" and rank < last:
                part = "II"
            last = rank
            title = item_title(item, form, part)
            title = title or re.sub(r"\s+", " ", m.group(2)).strip(" .") or ""
            sep = " " if "." in item else ". "
            name = f"Item {item}{sep}{title}".strip(" .")
            if not out or out[-1][1] != name:
                out.append((number, name))
    return out


def _item_rank(item: str) -> float:
    """An Item's place in its form's order: ``"1A"`` → 1.1, ``"5.02"`` → 5.02."""
    if "." in item:
        return float(item)
    m = re.fullmatch(r"(\d+)([A-C]?)", item)
    return int(m.group(1)) + (0.1 * (ord(m.group(2)) - 64) if m and m.group(2) else 0) if m else 0.0


_BULLET = re.compile(r"^[ \t]*[*•●▪][ \t]*(?=[A-Z“\"])", re.M)
_SENTENCE_END = re.compile(r"[a-z0-9)’”%][.?](?=\s*[A-Z0-9“\"*•●▪]|\s*$)")


#: An emphasised heading is at most this long (characters; the longest of the shared Nvidia 10-K's 24 is 310,
#: its bold introduction to Item 1A 677) and at most this many sentences.
EMPHASISED_HEADING_CHARS = 500
EMPHASISED_HEADING_SENTENCES = 3
_NOT_HEADING = re.compile(r"^(?:Item\s|Table\s+of|PART\s|Risk\s+Factors\b|Summary\b)", _I)


def is_heading_sentence(line: str) -> bool:
    """True when an emphasised (bold or italic) ``line`` reads as a risk factor's heading: 20 to
    :data:`EMPHASISED_HEADING_CHARS` characters, starting with a capital, a digit or a quote, ending
    with ``.``, ``?`` or ``!`` (a group title such as "Risks Related to Our Industry" has no end mark),
    at most :data:`EMPHASISED_HEADING_SENTENCES` sentences, and not an Item, Part, contents or
    "Risk Factors" title."""
    line = line.strip()
    return (
        20 <= len(line) <= EMPHASISED_HEADING_CHARS
        and (line[0].isupper() or line[0].isdigit() or line[0] in "“\"‘'")
        and line.endswith((".", "?", "!", ".”", '."'))
        and len(_SENTENCE_END.findall(line)) <= EMPHASISED_HEADING_SENTENCES
        and not _NOT_HEADING.match(line)
    )


def risk_heading_spans(page_text: str, emphasised: list[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """``[(start, end)]`` of the risk-factor headings on a page of Item 1A (offsets into
    ``page_text``), in order.

    ``emphasised``: the page's lines set in bold or italic (``(start, end)`` into ``page_text``, an
    HTML filing's :meth:`schemas.documents.PageText.emphasised_spans`), or None when the document
    does not mark them (a PDF). Given, the headings are exactly those lines that read as a heading
    (:func:`is_heading_sentence`): the filer's bold or italic heading sentence above each risk
    factor's paragraphs; a bulleted summary in plain type is no heading. Otherwise, from the text
    alone: the first sentence of each bulleted paragraph (``*``, ``•``) that more text follows (not
    an item of a list, such as a risk factors summary, whose next bullet follows its sentence), and single sentences of
    one to three lines (at least 20, at most 400 characters) that start after the end of a
    paragraph, end at a line end short of the page's width and are followed by a line starting
    with a capital: the plain-text form of Item 1A's bold or bulleted headings; a group title on the
    heading's first line ("Business and Operational Risks", no end mark) is left out. Lower-case starts
    (list items) are not headings."""
    if emphasised is not None:
        return [(a, b) for a, b in emphasised if is_heading_sentence(page_text[a:b])]
    out: list[tuple[int, int]] = []
    for m in _BULLET.finditer(page_text):
        a = m.end()
        end = _SENTENCE_END.search(page_text, a, min(len(page_text), a + 400))
        stop = page_text.find("\n\n", a)
        if end is None or (0 <= stop < end.start()):
            continue
        if _list_item(page_text, end.end()):
            continue  # an item of a list (a summary of the risk factors): no paragraph follows its sentence
        if end.end() - a >= 20:
            out.append((a, end.end()))
    lines = list(re.finditer(r"[^\n]+", page_text))
    width = max((len(x.group(0)) for x in lines), default=0)
    for i in range(1, len(lines) - 1):
        if not lines[i - 1].group(0).rstrip().endswith((".", ":")) or _BULLET.match(lines[i].group(0)):
            continue
        for k in range(3):  # a heading of one to three lines, one sentence
            j = i + k
            if j + 1 >= len(lines):
                break
            block = page_text[lines[i].start() : lines[j].end()].strip()
            last = lines[j].group(0).rstrip()
            if re.search(r"[.?]\s+\S", block) or len(block) > 400:
                break
            if not last.endswith((".", "?")):
                continue
            if (
                len(block) >= 20
                and block[0].isupper()
                and len(last) < 0.9 * width
                and lines[j + 1].group(0).lstrip()[:1].isupper()
                and not re.search(r"^(?:Item\s|Table\s+of|PART\s)", block, _I)
            ):
                a = lines[i].start() + (len(lines[i].group(0)) - len(lines[i].group(0).lstrip()))
                if j > i and _GROUP_TITLE.match(lines[i].group(0).strip()):  # "Business and Operational Risks"
                    a = lines[i + 1].start() + (len(lines[i + 1].group(0)) - len(lines[i + 1].group(0).lstrip()))
                    if len(page_text[a : lines[j].end()].strip()) < 20:
                        break
                out.append((a, a + len(page_text[a : lines[j].end()].strip())))
            break
    return sorted(_after_group_title(page_text, a, b) for a, b in out)


#: A group title of Item 1A on its own line, above the heading it runs into in the text layer: "Risks Related
#: to Our Industry", "Business and Operational Risks", "STRATEGIC AND COMPETITIVE RISKS" (no end mark).
_GROUP_TITLE = re.compile(r"^(?=[^.:;?!]{6,90}$)(?:(?:[\w,&’'-]+\s+){0,8}Risks?\b.*|[A-Z][A-Z ,&’'-]+)$")


def _list_item(text: str, end: int) -> bool:
    """Whether the bulleted sentence ending at ``end`` is an item of a list rather than a heading: what
    follows it on its line is another bullet, or its line ends and the next line is a bullet or a group
    title ("Risks Related to …")."""
    rest = text[end : text.find("\n", end) if "\n" in text[end:] else len(text)].strip()
    if rest:
        return rest[0] in "*•●▪"
    following = text[end:].lstrip().split("\n", 1)[0].strip()
    return bool(following) and (following[0] in "*•●▪" or bool(_GROUP_TITLE.match(following)))


def _after_group_title(text: str, a: int, b: int) -> tuple[int, int]:
    """``(a, b)`` without a leading group title run into the heading by the text layer
    ("Risks Related to Our Products * The Company's results …" → "The Company's results …")."""
    star = text.rfind("* ", a, b)
    return (star + 2, b) if star >= 0 and b - star > 20 else (a, b)


def risk_headings(
    pages: list[tuple[int, str]],
    sections: list[tuple[int, str]],
    emphasis: dict[int, list[tuple[int, int]]] | None = None,
) -> list[str]:
    """Risk-factor headings of Item 1A (:func:`risk_heading_spans` on its pages, from its Item
    heading to the next Item heading), whitespace normalised, at most 300 characters each, in
    order and without repeats. ``emphasis``: page number → its emphasised lines (see
    :func:`heading_emphasis`), or None to read the headings from the text alone."""
    return [head for _, head in risk_factor_headings(pages, sections, emphasis)]


def risk_factor_headings(
    pages: list[tuple[int, str]],
    sections: list[tuple[int, str]],
    emphasis: dict[int, list[tuple[int, int]]] | None = None,
) -> list[tuple[int, str]]:
    """``[(page number, heading)]``: :func:`risk_headings` with the page each heading is on."""
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    texts = dict(pages)
    for number, a, b, _ in _risk_spans(pages, sections, emphasis):
        head = re.sub(r"\s+", " ", texts[number][a:b]).strip()[:300]
        if head not in seen:
            seen.add(head)
            out.append((number, head))
    return out


def _risk_spans(
    pages: list[tuple[int, str]],
    sections: list[tuple[int, str]],
    emphasis: dict[int, list[tuple[int, int]]] | None,
) -> list[tuple[int, int, int, int | None]]:
    """``[(page number, start, end, where Item 1A ends on that page or None)]`` of the risk-factor headings
    (offsets into the page's text), in order; the last element of each tells where the next Item heading
    after Item 1A starts on the heading's page, if it does."""
    span = _item_pages(sections, "Item 1A.")
    if span is None:
        return []
    first, last = span
    out: list[tuple[int, int, int, int | None]] = []
    for number, text in pages:
        if first <= number <= last:
            items = list(ITEM_LINE.finditer(text))
            begin = max((m.end() for m in items if m.group(1).upper() == "1A"), default=0)
            end = min(
                (m.start() for m in items if m.group(1).upper() != "1A" and m.start() >= begin), default=len(text)
            )
            marked = None if emphasis is None else [(a, b) for a, b in emphasis.get(number, []) if b <= end]
            for a, b in risk_heading_spans(text[:end], marked):
                if a >= begin:
                    out.append((number, a, b, end if end < len(text) else None))
    return out


def risk_factor_blocks(
    text: str, page_starts: list[int], emphasis: dict[int, list[tuple[int, int]]] | None = None
) -> list[tuple[int, int]]:
    """``[(start, end)]`` in a filing's ``text`` (its pages joined, page ``k`` starting at
    ``page_starts[k]``, numbered ``k + 1``) of each risk factor of Item 1A: from its heading
    (:func:`risk_heading_spans`; ``emphasis``, page number → emphasised lines, used as
    :func:`heading_emphasis` decides) to the next heading, the last one to the next Item heading or
    the end of Item 1A's last page. ``[]`` without an Item 1A or headings."""
    pages = [
        (k + 1, text[s : (page_starts[k + 1] - len(PAGE_SEPARATOR)) if k + 1 < len(page_starts) else len(text)])
        for k, s in enumerate(page_starts)
    ]
    sections = item_sections(pages)
    spans = _risk_spans(pages, sections, heading_emphasis(pages, sections, emphasis or {}))
    if not spans:
        return []
    starts = [page_starts[number - 1] + a for number, a, _, _ in spans]
    number, _, _, stop = spans[-1]
    _, last = _item_pages(sections, "Item 1A.") or (number, number)
    if stop is not None:
        final = page_starts[number - 1] + stop
    else:
        final = page_starts[last] - len(PAGE_SEPARATOR) if last < len(page_starts) else len(text)
        for k in range(number, min(last, len(pages))):  # the next Item heading on a later page of the span
            m = next((m for m in ITEM_LINE.finditer(pages[k][1]) if m.group(1).upper() != "1A"), None)
            if m is not None:
                final = page_starts[k] + m.start()
                break
    return list(zip(starts, [*starts[1:], max(final, starts[-1])]))


def heading_emphasis(
    pages: list[tuple[int, str]], sections: list[tuple[int, str]], emphasis: dict[int, list[tuple[int, int]]]
) -> dict[int, list[tuple[int, int]]] | None:
    """``emphasis`` (page number → its emphasised lines, ``(start, end)`` into the page's text) when the
    filing sets its risk-factor headings in bold or italic — at least one emphasised line of Item 1A reads
    as a heading (:func:`is_heading_sentence`) — else None: the headings are then read from the text
    alone (a PDF, or an HTML filing that emphasises nothing in Item 1A)."""
    span = _item_pages(sections, "Item 1A.")
    if span is None or not emphasis:
        return None
    first, last = span
    for number, text in pages:
        if first <= number <= last and any(is_heading_sentence(text[a:b]) for a, b in emphasis.get(number, [])):
            return emphasis
    return None


#: A line longer than this (characters) is a paragraph of its own (an HTML filing's text has a line per
#: paragraph); a PDF's text layer wraps its paragraphs into shorter lines.
WRAPPED_LINE_CHARS = 250
#: A wrapped line shorter than this share of its page's width (the 90th percentile of its line lengths) that
#: ends a sentence ends its paragraph.
SHORT_LINE_SHARE = 0.85
_LINE = re.compile(r"[^\n]+")
_PARAGRAPH_END = (".", ":", "?", "!", ".”", '."', ";")
_NOTE_LINE = re.compile(r"^\s*NOTE\s+\d{1,2}\b", _I)


def paragraph_starts(text: str, page_starts: list[int]) -> list[int]:
    """Offsets in a filing's ``text`` (its pages joined, page ``k`` starting at ``page_starts[k]``) where a
    paragraph starts, in order, beginning with 0.

    A line starts one when the line before it ends a sentence (``.``, ``:``, ``?``, ``!``, ``;``) and is
    either longer than :data:`WRAPPED_LINE_CHARS` (a paragraph per line: HTML) or short of
    :data:`SHORT_LINE_SHARE` of its page's width (the last line of a paragraph wrapped by a PDF's text
    layer); a bulleted line and an Item or Note heading always do. A caption ("Respirator Mask/Asbestos
    Litigation": no end mark) stays with the paragraph it heads. A paragraph runs on across a page break
    unless the page's last line ends one."""
    starts = [0]
    bounds = [*page_starts[1:], len(text)] if page_starts else [len(text)]
    previous: tuple[str, int] | None = None  # the last line so far and its page's width
    for first, end in zip(page_starts or [0], bounds):
        lines = list(_LINE.finditer(text, first, end))
        if not lines:
            continue
        lengths = sorted(len(m.group(0)) for m in lines)
        width = lengths[int(0.9 * (len(lengths) - 1))]
        for m in lines:
            line = m.group(0)
            if previous is not None and m.start() > starts[-1]:
                before, before_width = previous
                ends = before.endswith(_PARAGRAPH_END) and (
                    len(before) > WRAPPED_LINE_CHARS or len(before) < SHORT_LINE_SHARE * before_width
                )
                if ends or _BULLET.match(line) or ITEM_LINE.match(line) or _NOTE_LINE.match(line):
                    starts.append(m.start())
            previous = (line.rstrip(), width)
    return starts


def _item_pages(sections: list[tuple[int, str]], prefix: str) -> tuple[int, int] | None:
    for i, (page, name) in enumerate(sections):
        if name.startswith(prefix):
            end = sections[i + 1][0] if i + 1 < len(sections) else page
            return page, max(page, end)
    return None


_GOING_CONCERN = re.compile(
    r"substantial\s+doubt\s+(?:about|as\s+to|regarding)\s+(?:the\s+|our\s+|its\s+)?"
    r"(?:company'?s?\s+|entity'?s?\s+)?ability\s+to\s+continue\s+as\s+a\s+going\s+concern",
    _I,
)
_WEAKNESS = re.compile(r"material\s+weakness(?:es)?", _I)
_NEGATED = re.compile(
    r"\b(?:no|not|did\s+not|does\s+not|without|absence\s+of|if|may|could|might|would|"
    r"whether|any|alleviat\w*|mitigat\w*|remediat\w*|evaluat\w*|assess\w*)\b",
    _I,
)
_WEAK_ASSERTED = re.compile(
    r"(?:identified|has|have|there\s+(?:is|was|were))\s+(?:a\s+)?material\s+weakness|"
    r"(?:was|were)\s+not\s+effective|ineffective",
    _I,
)
_AUDITOR = re.compile(
    r"/s/\s*((?:PricewaterhouseCoopers|Ernst\s*&\s*Young|KPMG|Deloitte\s*&\s*Touche|Grant\s+Thornton|"
    r"BDO\s+USA|RSM\s+US|Crowe|Moss\s+Adams|Mazars|Baker\s+Tilly)[\w&,. ]*?LLP)",
    _I,
)


def filing_flags(text: str) -> dict[str, bool | str | None]:
    """``{"going_concern": bool, "material_weakness": bool, "auditor": str | None}`` of a
    filing's text: a going-concern doubt stated (PCAOB AS 2415 wording "substantial doubt about
    … ability to continue as a going concern", not negated or conditional), a material weakness
    stated as identified or internal control stated not effective (S-K Item 308), and the
    auditor that signed the report ("/s/ … LLP")."""
    going = any(
        not _NEGATED.search(_sentence_around(text, m.start())[: m.start() - _sentence_start(text, m.start()) + 1])
        for m in _GOING_CONCERN.finditer(text)
    )
    weak = False
    for m in _WEAKNESS.finditer(text):
        sentence = _sentence_around(text, m.start())
        if _WEAK_ASSERTED.search(sentence) and not re.search(
            r"\b(?:no|not\s+identif|did\s+not|if|may|could)\b", sentence, _I
        ):
            weak = True
            break
    auditor = _AUDITOR.search(text)
    return {
        "going_concern": going,
        "material_weakness": weak,
        "auditor": re.sub(r"\s+", " ", auditor.group(1)).strip() if auditor else None,
    }


#: 8-K Items that are red flags by themselves (SEC Form 8-K General Instructions, Items 1.05, 4.01, 4.02).
_RED_ITEMS = {
    "1.05": ("cybersecurity_incident", "8-K Item 1.05: a material cybersecurity incident"),
    "4.01": ("auditor_change", "8-K Item 4.01: a change of the registrant's certifying accountant"),
    "4.02": (
        "non_reliance",
        "8-K Item 4.02: previously issued financial statements should no longer be relied upon",
    ),
}
_ITEM_LINE = re.compile(r"^[ \t]*Item\s+(\d\.\d{2})\.?[ \t]*([A-Z][^\n]{0,150})", _I | re.M)
_COVENANT = re.compile(
    r"(?:not\s+(?:be\s+)?in\s+compliance\s+with|breach(?:ed|es)?\s+(?:of\s+)?|violat(?:ed|ion\s+of)|"
    r"default\s+under|waiver\s+of)\s+(?:[\w,-]+\s+){0,8}?(?:financial\s+)?covenants?"
    r"|covenants?\s+(?:were|was)\s+(?:breached|waived|violated)",
    _I,
)
_DEBT_WORDS = re.compile(
    r"\b(?:credit|loan|indenture|facilit(?:y|ies)|lenders?|notes|debt|borrowings?|financial\s+maintenance)\b", _I
)
_COVENANT_NEGATED = re.compile(r"\b(?:no|not\s+aware|if|could|may|might|would|any\s+future|in\s+the\s+event)\b", _I)


def red_flags(pages: list[tuple[int, str]]) -> list[RedFlag]:
    """The red flags of a filing's pages (``[(1-based number, text)]``), each with its evidence and page:
    a going-concern doubt and a material weakness as :func:`filing_flags` reads them; an 8-K's Items 1.05,
    4.01 and 4.02 (their heading line); a debt covenant breach or waiver stated as fact, in a sentence about
    credit, loans, notes or lenders (not conditional: "if we fail to comply with our covenants" is a risk
    factor, not a breach; an employee's restrictive covenant is no debt covenant). At most one per flag,
    the first."""
    out: dict[str, RedFlag] = {}
    for number, text in pages:
        for m in _GOING_CONCERN.finditer(text):
            sentence = _sentence_around(text, m.start())
            lead = sentence[: m.start() - _sentence_start(text, m.start()) + 1]
            if "going_concern" not in out and not _NEGATED.search(lead):
                out["going_concern"] = RedFlag(
                    flag="going_concern",
                    reason="substantial doubt about the ability to continue as a going concern (PCAOB AS 2415)",
                    evidence=sentence.strip()[:500],
                    page=number,
                )
        for m in _WEAKNESS.finditer(text):
            sentence = _sentence_around(text, m.start())
            if (
                "material_weakness" not in out
                and _WEAK_ASSERTED.search(sentence)
                and not re.search(r"\b(?:no|not\s+identif|did\s+not|if|may|could)\b", sentence, _I)
            ):
                out["material_weakness"] = RedFlag(
                    flag="material_weakness",
                    reason="a material weakness in internal control over financial reporting (S-K Item 308)",
                    evidence=sentence.strip()[:500],
                    page=number,
                )
        for m in _ITEM_LINE.finditer(text):
            flag = _RED_ITEMS.get(m.group(1))
            if flag and flag[0] not in out:
                out[flag[0]] = RedFlag(flag=flag[0], reason=flag[1], evidence=m.group(0).strip(), page=number)
        for m in _COVENANT.finditer(text):
            sentence = _sentence_around(text, m.start())
            if "covenant_breach" not in out and _DEBT_WORDS.search(sentence) and not _COVENANT_NEGATED.search(sentence):
                out["covenant_breach"] = RedFlag(
                    flag="covenant_breach",
                    reason="a debt covenant breached, or waived by the lenders",
                    evidence=sentence.strip()[:500],
                    page=number,
                )
    return list(out.values())


def _sentence_start(text: str, pos: int) -> int:
    return max(text.rfind(". ", 0, pos) + 2, text.rfind("\n\n", 0, pos) + 2, 0)


def _sentence_around(text: str, pos: int) -> str:
    start = _sentence_start(text, pos)
    end = text.find(". ", pos)
    return text[start : end if end >= 0 else len(text)]


def summarize_pages(
    pages: list[tuple[int, str]], emphasis: dict[int, list[tuple[int, int]]] | None = None, form: str | None = None
) -> FilingSummary:
    """The :class:`FilingSummary` of a filing's pages (``[(1-based number, text)]``): Item
    sections, risk-factor headings, flags, red flags with their evidence and one key figure per name (the first statement page
    that has it, which is the primary statement in a 10-K's Item 8). ``emphasis``: page number → the
    page's lines set in bold or italic (an HTML filing), used for the risk-factor headings when the
    filing emphasises them (:func:`heading_emphasis`); ``form`` (``"10-K"``, ``"10-Q"``, ``"8-K"``) names the
    Items from its own list (:func:`item_sections`)."""
    sections = item_sections(pages, form)
    heads = risk_factor_headings(pages, sections, heading_emphasis(pages, sections, emphasis or {}))
    firsts: dict[KeyFigureName, KeyFigure] = {}
    figures = key_figures(pages)
    for fig in [f for f in figures if f.statement != "earnings table"] + [
        f for f in figures if f.statement == "earnings table"
    ]:
        firsts.setdefault(fig.name, fig)
    return FilingSummary(
        sections=sections,
        risk_headings=[h for _, h in heads],
        risk_heading_pages=[page for page, _ in heads],
        flags=filing_flags("\n\n".join(t for _, t in pages)),
        key_figures=list(firsts.values()),
        red_flags=red_flags(pages),
    )


@task(name="summarize-filing", task_run_name=for_document("summarize-filing"), cache_policy=NO_CACHE)
def summarize_document(document: ExtractedDocument, form: str | None = None) -> FilingSummary:
    """Prefect task: :func:`summarize_pages` of an extracted filing. An inline XBRL filing's key figures
    are its own facts for its own period (:func:`tasks.review.facts.key_figures_from_facts`); figures it
    does not tag are read from its statements as for a PDF, except a figure whose facts could not be used
    (:func:`tasks.review.facts.fact_problems`: no figure rather than one read around the filer's own
    tags; the reasons are kept in ``fact_problems``). ``form``: the filing's form as classified
    (:class:`schemas.filings.FilingForm` value), whose list of Items names the sections."""
    summary = summarize_pages([(p.number, p.text) for p in document.pages], document_emphasis(document), form)
    if not document.facts:
        return summary
    from tasks.review.facts import fact_problems, key_figures_from_facts

    tagged = key_figures_from_facts(document)
    names = {f.name for f in tagged}
    problems = fact_problems(document)
    # a figure whose facts are unusable is not read from the statement text either: never a guess
    blocked = {name for name, _ in problems if name is not None and name not in names}
    summary.key_figures = tagged + [f for f in summary.key_figures if f.name not in names | blocked]
    summary.fact_problems = [reason for _, reason in problems][:MAX_FACT_PROBLEMS]
    return summary


#: Most fact problems a filing's summary keeps (the report says how many it shows).
MAX_FACT_PROBLEMS = 20


def with_sections(document: ExtractedDocument, sections: list[tuple[int, str]]) -> ExtractedDocument:
    """``document`` with the Item each page falls under (``sections``, :func:`item_sections`) as the
    ``section`` of its pages' locators, so every surface says "page 41, Item 7. Management's Discussion …"
    from the one locator (:class:`schemas.documents.Locator`). Pages whose locator already names a section
    (an HTML filing's Part and Item path, read at ingest) and pages before the first Item keep theirs; the
    document is copied, not changed."""
    if not sections:
        return document
    summary = FilingSummary(sections=sections)
    pages = []
    for page in document.pages:
        where = page.where()
        section = summary.section_at(page.number)
        if where.section is None and section is not None:
            page = page.model_copy(update={"locator": where.model_copy(update={"section": section})})
        pages.append(page)
    return document.model_copy(update={"pages": pages})


def document_emphasis(document: ExtractedDocument) -> dict[int, list[tuple[int, int]]]:
    """Page number → the page's lines set in bold or italic (``(start, end)`` into its text); only pages that
    have any (none for a PDF)."""
    return {p.number: p.emphasised_spans() for p in document.pages if p.emphasis}


def figure_name(line: str) -> KeyFigureName | None:
    """The key figure a statement line states, from its label (:data:`FIGURE_LINES`), or None."""
    for name, (_, patterns) in _COMPILED.items():
        if any(rx.match(line) for rx in patterns):
            return name
    return None


def page_chunks(
    sha256: str,
    pages: list[tuple[int, str]],
    page_starts: list[int],
    budget: int,
    sections: list[tuple[int, str]] | None = None,
    emphasis: dict[int, list[tuple[int, int]]] | None = None,
) -> list[Chunk]:
    """Page-aligned chunks of a filing: whole pages packed up to ``budget`` characters (a longer
    page is a chunk of its own), so a statement page's heading is always in the chunk with its
    lines. ``page_starts`` are the pages' offsets in the document text; ``heading`` is the Item
    section of the chunk's first page; every chunk has ``profile == "filing"``. ``emphasis``: page
    number → the page's lines set in bold or italic, when the filing sets its risk-factor headings so
    (:func:`heading_emphasis`): each chunk's :attr:`Chunk.emphasis` holds its pages' lines (offsets
    into the chunk's text); None leaves every chunk's ``emphasis`` None (headings read from the text)."""
    summary = FilingSummary(sections=sections or [])
    chunks: list[Chunk] = []
    group: list[int] = []

    def flush() -> None:
        if not group:
            return
        first, last = group[0], group[-1]
        texts = [pages[i][1] for i in group]
        text = "\n\n".join(texts)
        offsets, pos = [], 0
        for t in texts[:-1]:
            pos += len(t) + 2
            offsets.append(pos)
        marked = None
        if emphasis is not None:
            marked = [
                (start + a, start + b)
                for i, start in zip(group, [0, *offsets])
                for a, b in emphasis.get(pages[i][0], [])
            ]
        chunks.append(
            Chunk(
                document_sha256=sha256,
                index=len(chunks),
                char_start=page_starts[first],
                char_end=page_starts[last] + len(pages[last][1]),
                page_start=pages[first][0],
                page_end=pages[last][0],
                text=text,
                heading=summary.section_at(pages[first][0]),
                page_offsets=offsets,
                profile="filing",
                emphasis=marked,
            )
        )
        group.clear()

    size = 0
    for i, (_, text) in enumerate(pages):
        if group and size + len(text) > budget:
            flush()
            size = 0
        group.append(i)
        size += len(text) + 2
    flush()
    return [c for c in chunks if c.text.strip()]


@task(name="chunk-filing", task_run_name=for_document("chunk"), cache_policy=NO_CACHE)
def chunk_filing(document: ExtractedDocument, budget: int, sections: list[tuple[int, str]]) -> list[Chunk]:
    """Prefect task: :func:`page_chunks` of an extracted filing (``budget`` in characters), with its
    emphasised lines when it sets its risk-factor headings in bold or italic (:func:`heading_emphasis`)."""
    pages = [(p.number, p.text) for p in document.pages]
    emphasis = heading_emphasis(pages, sections, document_emphasis(document))
    return page_chunks(document.sha256, pages, document.page_starts(), budget, sections, emphasis)
