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
from dataclasses import dataclass

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import Chunk, ExtractedDocument
from schemas.filings import FilingSummary, KeyFigure, KeyFigureName
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

ITEM_LINE = re.compile(r"^\s*ITEM\s+(\d{1,2}(?:\.\d{2})?[A-C]?)(?![\d(])\s*[.:\-–—]?\s*(.{0,120})$", _I | re.M)
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
_NOT_STATEMENT = re.compile(
    r"notes\s+to\s+(?:the\s+)?(?:condensed\s+)?consolidated|index\s+to|"
    r"report\s+of\s+independent|table\s+of\s+contents\s*$",
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
OUTFLOWS = frozenset({K.capital_expenditure, K.dividends_paid})


@dataclass
class FigureLine:
    """A key figure's statement line in a page: ``start``/``end`` index the page text (the line,
    or the label line and the amounts' line when the amounts wrapped onto the next line);
    ``raw`` is the current-period amount as written (e.g. ``"(1,577)"``)."""

    name: KeyFigureName
    start: int
    end: int
    raw: str


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


def statement_unit(page_text: str) -> str:
    """The unit of a statement page's amounts from its heading (``"USD millions"``,
    ``"USD thousands"``, ``"USD billions"``); ``"USD"`` when no scale is stated."""
    m = _UNIT.search("\n".join(page_text.split("\n")[:8]))
    return f"USD {(m.group(1) or m.group(2)).lower()}s" if m else "USD"


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
    most one per figure (the first line of its most specific label)."""
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
    return sorted(found.values(), key=lambda f: f.start)


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
        return FigureLine(name=name, start=m.start(), end=end, raw=raw)
    return None


def key_figures(pages: list[tuple[int, str]]) -> list[KeyFigure]:
    """Every key figure of every statement page: ``pages`` is ``[(1-based number, text)]``."""
    out: list[KeyFigure] = []
    for number, text in pages:
        kind = statement_kind(text)
        if kind is None:
            continue
        unit, period = statement_unit(text), statement_period(text)
        for f in figure_lines(text, kind):
            value = amount_value(f.raw) or 0.0
            out.append(
                KeyFigure(
                    name=f.name,
                    value=abs(value) if f.name in OUTFLOWS else value,
                    raw=f.raw,
                    unit="USD per share" if f.name is K.eps_diluted else unit,
                    period=period,
                    statement=kind,
                    line=text[f.start : f.end],
                    page=number,
                )
            )
    return out


def item_sections(pages: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``[(first page, "Item 7. Management's Discussion and Analysis"), …]``: each Item heading at
    the start of a line, in page order, skipping table-of-contents pages (more than four Item
    headings on one page) and repeated headings."""
    out: list[tuple[int, str]] = []
    for number, text in pages:
        heads = list(ITEM_LINE.finditer(text))
        if len(heads) > 4:
            continue
        for m in heads:
            item = m.group(1).upper()
            title = ITEMS_10K.get(item) if "." not in item else None
            title = title or re.sub(r"\s+", " ", m.group(2)).strip(" .") or ""
            name = f"Item {item}. {title}".strip(" .")
            if not out or out[-1][1] != name:
                out.append((number, name))
    return out


_BULLET = re.compile(r"^[ \t]*[*•●▪][ \t]*(?=[A-Z“\"])", re.M)
_SENTENCE_END = re.compile(r"[a-z0-9)’”%][.?](?=\s*[A-Z0-9“\"]|\s*$)")


def risk_heading_spans(page_text: str) -> list[tuple[int, int]]:
    """``[(start, end)]`` of the risk-factor headings on a page of Item 1A (offsets into
    ``page_text``): the first sentence of each bulleted paragraph (``*``, ``•``), and single
    sentences of one to three lines (at least 20, at most 400 characters) that start after the end
    of a paragraph, end at a line end short of the page's width and are followed by a line starting
    with a capital: the plain-text form of Item 1A's bold or bulleted headings. Lower-case starts
    (list items) are not headings."""
    out: list[tuple[int, int]] = []
    for m in _BULLET.finditer(page_text):
        a = m.end()
        end = _SENTENCE_END.search(page_text, a, min(len(page_text), a + 400))
        stop = page_text.find("\n\n", a)
        if end is None or (0 <= stop < end.start()):
            continue
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
                out.append((a, a + len(block)))
            break
    return sorted(_after_group_title(page_text, a, b) for a, b in out)


def _after_group_title(text: str, a: int, b: int) -> tuple[int, int]:
    """``(a, b)`` without a leading group title run into the heading by the text layer
    ("Risks Related to Our Products * The Company's results …" → "The Company's results …")."""
    star = text.rfind("* ", a, b)
    return (star + 2, b) if star >= 0 and b - star > 20 else (a, b)


def risk_headings(pages: list[tuple[int, str]], sections: list[tuple[int, str]]) -> list[str]:
    """Risk-factor headings of Item 1A (:func:`risk_heading_spans` on its pages, from its Item
    heading to the next Item heading), whitespace normalised, at most 300 characters each, in
    order and without repeats."""
    span = _item_pages(sections, "Item 1A.")
    if span is None:
        return []
    first, last = span
    out: list[str] = []
    for number, text in pages:
        if first <= number <= last:
            items = list(ITEM_LINE.finditer(text))
            begin = max((m.end() for m in items if m.group(1).upper() == "1A"), default=0)
            end = min(
                (m.start() for m in items if m.group(1).upper() != "1A" and m.start() >= begin), default=len(text)
            )
            for a, b in risk_heading_spans(text[:end]):
                if a < begin:
                    continue
                head = re.sub(r"\s+", " ", text[a:b]).strip()[:300]
                if head not in out:
                    out.append(head)
    return out


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


def _sentence_start(text: str, pos: int) -> int:
    return max(text.rfind(". ", 0, pos) + 2, text.rfind("\n\n", 0, pos) + 2, 0)


def _sentence_around(text: str, pos: int) -> str:
    start = _sentence_start(text, pos)
    end = text.find(". ", pos)
    return text[start : end if end >= 0 else len(text)]


def summarize_pages(pages: list[tuple[int, str]]) -> FilingSummary:
    """The :class:`FilingSummary` of a filing's pages (``[(1-based number, text)]``): Item
    sections, risk-factor headings, flags and one key figure per name (the first statement page
    that has it, which is the primary statement in a 10-K's Item 8)."""
    sections = item_sections(pages)
    firsts: dict[KeyFigureName, KeyFigure] = {}
    figures = key_figures(pages)
    for fig in [f for f in figures if f.statement != "earnings table"] + [
        f for f in figures if f.statement == "earnings table"
    ]:
        firsts.setdefault(fig.name, fig)
    return FilingSummary(
        sections=sections,
        risk_headings=risk_headings(pages, sections),
        flags=filing_flags("\n\n".join(t for _, t in pages)),
        key_figures=list(firsts.values()),
    )


@task(name="summarize-filing", task_run_name=for_document("summarize-filing"), cache_policy=NO_CACHE)
def summarize_document(document: ExtractedDocument) -> FilingSummary:
    """Prefect task: :func:`summarize_pages` of an extracted filing."""
    return summarize_pages([(p.number, p.text) for p in document.pages])


def page_chunks(
    sha256: str,
    pages: list[tuple[int, str]],
    page_starts: list[int],
    budget: int,
    sections: list[tuple[int, str]] | None = None,
) -> list[Chunk]:
    """Page-aligned chunks of a filing: whole pages packed up to ``budget`` characters (a longer
    page is a chunk of its own), so a statement page's heading is always in the chunk with its
    lines. ``page_starts`` are the pages' offsets in the document text; ``heading`` is the Item
    section of the chunk's first page; every chunk has ``profile == "filing"``."""
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
    """Prefect task: :func:`page_chunks` of an extracted filing (``budget`` in characters)."""
    return page_chunks(
        document.sha256, [(p.number, p.text) for p in document.pages], document.page_starts(), budget, sections
    )
