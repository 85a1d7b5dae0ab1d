"""Small generated SEC filings for tests of the filing profile.

:func:`write_ixbrl_10q` writes a Form 10-Q as filed on EDGAR (HTML with inline XBRL) from its contexts and
statement rows; :func:`write_quarterly_10q` (any ``scale``), :func:`write_successor_10q` (predecessor and
successor periods) and :func:`write_bad_facts_10q` (an unknown scale, a negative in parentheses, a unit that is
not USD, an outflow tagged negative) are the cases of filings held back for evaluation, rebuilt here.

:func:`write_10k` writes a four-page PDF: a Form 10-K cover page, Item 1A Risk Factors with the
given headings (each followed by a paragraph), Item 8 with a Consolidated Statements of
Operations and a Consolidated Balance Sheets page (amounts in millions, current year first),
and Item 9A. Two filings of one company that differ in a risk factor or a figure exercise the
comparison with the previous filing.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from fpdf import FPDF

#: Default statement lines: (label, current-year amount, prior-year amount), USD millions.
INCOME_LINES = [
    ("Net sales", "12,400", "11,900"),
    ("Cost of sales", "7,100", "6,800"),
    ("Operating income", "2,050", "1,980"),
    ("Net income", "1,510", "1,402"),
    ("Diluted", "3.02", "2.80"),
]
BALANCE_LINES = [
    ("Cash and cash equivalents", "1,250", "1,100"),
    ("Total current assets", "5,300", "5,050"),
    ("Total assets", "20,800", "19,950"),
    ("Accounts payable", "1,640", "1,590"),
    ("Total current liabilities", "3,900", "3,700"),
    ("Long-term debt", "4,200", "4,350"),
]


def write_10k(
    path: Path,
    company: str,
    year: int,
    risk_factors: list[str],
    income: list[tuple[str, str, str]] | None = None,
    balance: list[tuple[str, str, str]] | None = None,
    controls_effective: bool = True,
    amendment: int | None = None,
) -> Path:
    """Write a Form 10-K of ``company`` for the fiscal year ended December 31 ``year`` to ``path``.

    ``risk_factors``: the Item 1A headings (sentences ending in a full stop), each followed by a
    generated paragraph; ``income``/``balance``: statement lines ``(label, current, prior)`` (USD
    millions; defaults :data:`INCOME_LINES`, :data:`BALANCE_LINES`); ``controls_effective`` False
    writes an Item 9A that reports a material weakness; ``amendment`` N makes it a Form 10-K/A
    ("Amendment No. N") of that year's 10-K. Text is Latin-1 (core PDF fonts). Returns ``path``.
    """
    pdf = FPDF(format="letter")
    pdf.set_auto_page_break(auto=True, margin=18)
    pdf.set_font("Helvetica", size=10)

    def lines(*rows: str) -> None:
        for row in rows:
            pdf.multi_cell(0, 5, row, new_x="LMARGIN", new_y="NEXT")

    pdf.add_page()
    lines(
        "UNITED STATES",
        "SECURITIES AND EXCHANGE COMMISSION",
        "Washington, D.C. 20549",
        "FORM 10-K" if amendment is None else "FORM 10-K/A",
        *([] if amendment is None else [f"(Amendment No. {amendment})"]),
        "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
        f"For the fiscal year ended December 31, {year}",
        "Commission file number 1-0000",
        company.upper(),
        "(Exact name of registrant as specified in its charter)",
        "Delaware 00-0000000",
    )
    pdf.add_page()
    lines("PART I", "Item 1A. Risk Factors", "The following risks could affect our results.")
    for heading in risk_factors:
        lines(
            "",
            heading,
            f"This risk is described in detail for fiscal {year}. It relates to our operations and "
            "results, and our management monitors it each quarter with the board of directors.",
        )
    pdf.add_page()
    lines(
        "Item 8. Financial Statements and Supplementary Data",
        f"{company} and Subsidiaries",
        "Consolidated Statements of Operations",
        "(In millions, except per share amounts)",
        f"Years ended December 31, {year} {year - 1}",
    )
    for label, now, before in income or INCOME_LINES:
        lines(f"{label} $ {now} $ {before}")
    lines(
        "Weighted average shares outstanding 500 501", "Basic earnings per share 3.05 2.83", "See accompanying notes."
    )
    pdf.add_page()
    lines(
        f"{company} and Subsidiaries", "Consolidated Balance Sheets", "(In millions)", f"December 31, {year} {year - 1}"
    )
    for label, now, before in balance or BALANCE_LINES:
        lines(f"{label} $ {now} $ {before}")
    lines(
        "Total liabilities 9,100 8,900",
        "Total equity 11,700 11,050",
        "See accompanying notes.",
        "Item 9A. Controls and Procedures",
    )
    if controls_effective:
        lines(
            "Management concluded that our internal control over financial reporting was effective as of "
            f"December 31, {year}."
        )
    else:
        lines(
            "Management identified a material weakness in internal control over revenue recognition, and our "
            f"internal control over financial reporting was not effective as of December 31, {year}."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


# --------------------------------------------------------------------------------------------------------------------
# Inline XBRL filings (Form 10-Q as filed on EDGAR): the held-back cases, generated


@dataclass(frozen=True)
class IxContext:
    """An ``xbrli:context``: a duration (``start``..``end``) or an instant (``start`` None), ISO dates; ``member``
    an explicit member of ``dei:LegalEntityAxis`` (e.g. ``"ex:PredecessorMember"``), None for the entity as a
    whole."""

    id: str
    end: str
    start: str | None = None
    member: str | None = None


@dataclass(frozen=True)
class IxFact:
    """An ``ix:nonFraction`` as a filer writes it: ``shown`` is the displayed text inside the element, ``scale``
    and ``sign`` its attributes as written (None: left out), ``unit`` a unit id of :data:`IX_UNITS`; ``outside``
    the text the filer puts around the element in the table cell (``("(", ")")`` for an amount the statement
    shows in parentheses)."""

    concept: str
    context: str
    shown: str
    unit: str = "usd"
    scale: str | None = "0"
    sign: str | None = None
    decimals: str = "0"
    outside: tuple[str, str] = ("", "")


#: Units a generated filing declares: id → measure(s) (a ``divide`` for per-share amounts).
IX_UNITS = {"usd": "iso4217:USD", "eur": "iso4217:EUR", "usdPerShare": ("iso4217:USD", "xbrli:shares")}

_IX_HEAD = """<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL"
 xmlns:xbrli="http://www.xbrl.org/2003/instance" xmlns:xbrldi="http://xbrl.org/2006/xbrldi"
 xmlns:iso4217="http://www.xbrl.org/2003/iso4217" xmlns:ixt="http://www.xbrl.org/inlineXBRL/transformation/2020-02-12"
 xmlns:dei="http://xbrl.sec.gov/dei/2023" xmlns:us-gaap="http://fasb.org/us-gaap/2023"
 xmlns:ex="http://example.com/20240928"><head><title>{title}</title></head><body>
"""


def _ix_context(ctx: IxContext) -> str:
    period = (
        f"<xbrli:startDate>{ctx.start}</xbrli:startDate><xbrli:endDate>{ctx.end}</xbrli:endDate>"
        if ctx.start
        else f"<xbrli:instant>{ctx.end}</xbrli:instant>"
    )
    segment = (
        f'<xbrli:segment><xbrldi:explicitMember dimension="dei:LegalEntityAxis">{ctx.member}'
        "</xbrldi:explicitMember></xbrli:segment>"
        if ctx.member
        else ""
    )
    return (
        f'<xbrli:context id="{ctx.id}"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">'
        f"0000000042</xbrli:identifier>{segment}</xbrli:entity><xbrli:period>{period}</xbrli:period></xbrli:context>"
    )


def _ix_unit(uid: str, measure: str | tuple[str, str]) -> str:
    if isinstance(measure, tuple):
        return (
            f'<xbrli:unit id="{uid}"><xbrli:divide><xbrli:unitNumerator><xbrli:measure>{measure[0]}</xbrli:measure>'
            f"</xbrli:unitNumerator><xbrli:unitDenominator><xbrli:measure>{measure[1]}</xbrli:measure>"
            "</xbrli:unitDenominator></xbrli:divide></xbrli:unit>"
        )
    return f'<xbrli:unit id="{uid}"><xbrli:measure>{measure}</xbrli:measure></xbrli:unit>'


def ix_fact_html(fact: IxFact) -> str:
    """The table cell text of ``fact``: its ``ix:nonFraction`` element with the text around it."""
    attrs = f'name="{fact.concept}" contextRef="{fact.context}" unitRef="{fact.unit}" decimals="{fact.decimals}"'
    attrs += ' format="ixt:num-dot-decimal"'
    if fact.scale is not None:
        attrs += f' scale="{fact.scale}"'
    if fact.sign is not None:
        attrs += f' sign="{fact.sign}"'
    return f"{fact.outside[0]}<ix:nonFraction {attrs}>{fact.shown}</ix:nonFraction>{fact.outside[1]}"


def write_ixbrl_10q(
    path: Path,
    company: str,
    period_end: str,
    contexts: list[IxContext],
    pages: list[tuple[str, list[str], list[tuple[str, list[IxFact | str]]]]],
    focus: str = "Q3",
    form: str = "10-Q",
) -> Path:
    """Write an inline XBRL filing of ``form`` (Form 10-Q by default) as filed on EDGAR to ``path``: a cover page
    (unnumbered) with the dei facts (``DocumentType``, ``DocumentPeriodEndDate`` ``period_end`` written "Month day,
    year", ``DocumentFiscalPeriodFocus`` ``focus``, ``EntityRegistrantName``) in a hidden ``ix:header`` that also
    holds ``contexts`` (plus ``"dei"``, the period's own duration context) and :data:`IX_UNITS`; then one page per
    entry of ``pages`` — ``(title, header lines, rows)``, each row ``(label, cells)`` whose cells are plain text or
    :class:`IxFact` — split by ``page-break-before:always`` and numbered at their foot from 1, so the n-th page
    of statements is the filing's page n + 1 and prints "n". The first statement page opens ``PART I — FINANCIAL
    INFORMATION`` and ``Item 1. Financial Statements``. Returns ``path``."""
    from datetime import date

    end = date.fromisoformat(period_end)
    month = end.strftime("%B")
    resources = "".join(_ix_context(c) for c in contexts)
    resources += _ix_context(IxContext("dei", period_end, f"{end.year}-01-01"))
    resources += "".join(_ix_unit(uid, m) for uid, m in IX_UNITS.items())
    out = [_IX_HEAD.format(title=f"{company} {form}")]
    out.append(
        '<div style="display:none"><ix:header><ix:hidden>'
        f'<ix:nonNumeric name="dei:DocumentType" contextRef="dei">{form}</ix:nonNumeric>'
        f'<ix:nonNumeric name="dei:DocumentFiscalPeriodFocus" contextRef="dei">{focus}</ix:nonNumeric>'
        f'<ix:nonNumeric name="dei:DocumentFiscalYearFocus" contextRef="dei">{end.year}</ix:nonNumeric>'
        f"</ix:hidden><ix:resources>{resources}</ix:resources></ix:header></div>"
    )
    out.append(
        "<div><p>UNITED STATES</p><p>SECURITIES AND EXCHANGE COMMISSION</p><p>Washington, D.C. 20549</p>"
        f"<p>FORM {form}</p><p>QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF "
        "1934</p><p>For the quarterly period ended "
        '<ix:nonNumeric name="dei:DocumentPeriodEndDate" contextRef="dei" format="ixt:date-monthname-day-year-en">'
        f"{month} {end.day}, {end.year}</ix:nonNumeric></p><p>Commission File Number 001-99999</p>"
        f'<p><ix:nonNumeric name="dei:EntityRegistrantName" contextRef="dei">{company.upper()}</ix:nonNumeric></p>'
        "<p>(Exact name of registrant as specified in its charter)</p></div>"
    )
    for number, (title, header, rows) in enumerate(pages, 1):
        out.append('<hr style="page-break-after:always"/><div>')
        if number == 1:
            out.append("<p>PART I — FINANCIAL INFORMATION</p><p>Item 1. Financial Statements</p>")
        out.append(f"<p>{company.upper()}</p><p>{title}</p>")
        out.extend(f"<p>{line}</p>" for line in header)
        out.append("<table>")
        for label, cells in rows:
            tds = "".join(f"<td>{ix_fact_html(c) if isinstance(c, IxFact) else c}</td>" for c in cells)
            out.append(f"<tr><td>{label}</td>{tds}</tr>")
        out.append(f'</table><p style="text-align:center">{number}</p></div>')
    out.append("</body></html>\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(out), encoding="utf-8")
    return path


#: The contexts of a third-quarter 10-Q for the quarter ended 2024-09-28 (a 52/53-week year begun
#: 2023-12-31): the quarter (91 days), the nine months to date, the same two a year earlier, and the
#: balance-sheet instants.
Q3_CONTEXTS = [
    IxContext("q", "2024-09-28", "2024-06-30"),
    IxContext("ytd", "2024-09-28", "2023-12-31"),
    IxContext("q_prior", "2023-09-30", "2023-07-02"),
    IxContext("ytd_prior", "2023-09-30", "2023-01-01"),
    IxContext("i", "2024-09-28"),
    IxContext("i_prior", "2023-12-30"),
]


def write_quarterly_10q(path: Path, scale: int = 3, company: str = "Harbor Widgets, Inc.") -> Path:
    """A Form 10-Q for the quarter ended 2024-09-28 whose statements are stated in the unit of ``scale`` (0 dollars,
    3 thousands, 6 millions, 9 billions): revenue and net income for the quarter and the nine months (and a year
    earlier), a balance sheet (cash, total assets; long-term debt tagged ``scale="9"`` as Apple tags its debt,
    "98.3" meaning $98.3 billion) and a nine-month cash flow statement whose capital expenditure the statement
    shows in parentheses around a positive fact (an outflow). Each fact's value is its displayed number times
    10^scale; :data:`QUARTERLY_VALUES` lists them."""
    unit = {0: "", 3: " (in thousands)", 6: " (in millions)", 9: " (in billions)"}[scale]
    s, d = str(scale), str(-scale)

    def fact(concept: str, ctx: str, shown: str, **kw: Any) -> IxFact:
        return IxFact(concept, ctx, shown, scale=kw.pop("scale", s), decimals=kw.pop("decimals", d), **kw)

    income = [
        (
            "Revenue $",
            [
                fact("us-gaap:Revenues", "q", "16,177"),
                fact("us-gaap:Revenues", "q_prior", "15,020"),
                fact("us-gaap:Revenues", "ytd", "47,309"),
                fact("us-gaap:Revenues", "ytd_prior", "44,871"),
            ],
        ),
        (
            "Net income $",
            [
                fact("us-gaap:NetIncomeLoss", "q", "1,211"),
                fact("us-gaap:NetIncomeLoss", "q_prior", "1,090"),
                fact("us-gaap:NetIncomeLoss", "ytd", "3,402"),
                fact("us-gaap:NetIncomeLoss", "ytd_prior", "3,118"),
            ],
        ),
    ]
    balance = [
        ("Cash and cash equivalents $", [fact("us-gaap:CashAndCashEquivalentsAtCarryingValue", "i", "16,177")]),
        ("Total assets $", [fact("us-gaap:Assets", "i", "120,450")]),
        ("Total debt $", [fact("us-gaap:LongTermDebt", "i", "98.3", scale="9", decimals="-8")]),
    ]
    cash_flow = [
        (
            "Net cash provided by operating activities $",
            [fact("us-gaap:NetCashProvidedByUsedInOperatingActivities", "ytd", "5,140")],
        ),
        (
            "Purchases of property and equipment",
            [fact("us-gaap:PaymentsToAcquirePropertyPlantAndEquipment", "ytd", "1,234", outside=("(", ")"))],
        ),
    ]
    return write_ixbrl_10q(
        path,
        company,
        "2024-09-28",
        Q3_CONTEXTS,
        [
            (
                "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS" + unit,
                ["Three Months Ended Nine Months Ended", "September 28, 2024 September 30, 2023 " * 2],
                income,
            ),
            ("CONDENSED CONSOLIDATED BALANCE SHEETS" + unit, ["September 28, 2024"], balance),
            (
                "CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS" + unit,
                ["Nine Months Ended September 28, 2024"],
                cash_flow,
            ),
        ],
    )


def quarterly_values(scale: int) -> dict[str, dict[str, Decimal]]:
    """The exact values of :func:`write_quarterly_10q`'s facts for ``scale``: ``{concept: {context: value}}``,
    written out by hand (displayed number times 10^scale; the debt is "98.3" at scale 9 whatever ``scale``)."""
    k = Decimal(10) ** scale
    return {
        "us-gaap:Revenues": {
            "q": 16177 * k,
            "q_prior": 15020 * k,
            "ytd": 47309 * k,
            "ytd_prior": 44871 * k,
        },
        "us-gaap:NetIncomeLoss": {"q": 1211 * k, "q_prior": 1090 * k, "ytd": 3402 * k, "ytd_prior": 3118 * k},
        "us-gaap:CashAndCashEquivalentsAtCarryingValue": {"i": 16177 * k},
        "us-gaap:Assets": {"i": 120450 * k},
        "us-gaap:LongTermDebt": {"i": Decimal("98300000000")},
        "us-gaap:NetCashProvidedByUsedInOperatingActivities": {"ytd": 5140 * k},
        "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment": {"ytd": 1234 * k},
    }


def write_successor_10q(path: Path, company: str = "Brightline Acquisition Corp.") -> Path:
    """A small company's Form 10-Q for the quarter ended 2023-09-30 after a business combination closed on
    2023-07-23: its statements (in thousands) present the successor's period (2023-07-23 to 2023-09-30) beside
    the predecessor's quarter part (2023-07-01 to 2023-07-22) and year-to-date part (2023-01-01 to 2023-07-22).
    Revenue and a net loss (``sign="-"``, shown in parentheses) are tagged for each period; no fact is tagged for a
    standard quarter or nine months."""
    contexts = [
        IxContext("succ", "2023-09-30", "2023-07-23"),
        IxContext("pred_q", "2023-07-22", "2023-07-01"),
        IxContext("pred_ytd", "2023-07-22", "2023-01-01"),
        IxContext("i", "2023-09-30"),
    ]

    def fact(concept: str, ctx: str, shown: str, sign: str | None = None) -> IxFact:
        outside = ("(", ")") if sign == "-" else ("", "")
        return IxFact(concept, ctx, shown, scale="3", decimals="-3", sign=sign, outside=outside)

    rows = [
        (
            "Revenue $",
            [
                fact("us-gaap:Revenues", "succ", "4,310"),
                fact("us-gaap:Revenues", "pred_q", "1,175"),
                fact("us-gaap:Revenues", "pred_ytd", "11,902"),
            ],
        ),
        (
            "Net loss $",
            [
                fact("us-gaap:NetIncomeLoss", "succ", "2,645", sign="-"),
                fact("us-gaap:NetIncomeLoss", "pred_q", "388", sign="-"),
                fact("us-gaap:NetIncomeLoss", "pred_ytd", "1,907", sign="-"),
            ],
        ),
    ]
    balance = [
        ("Cash and cash equivalents $", [fact("us-gaap:CashAndCashEquivalentsAtCarryingValue", "i", "8,044")]),
        ("Total assets $", [fact("us-gaap:Assets", "i", "61,380")]),
    ]
    return write_ixbrl_10q(
        path,
        company,
        "2023-09-30",
        contexts,
        [
            (
                "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (in thousands)",
                [
                    "Successor Predecessor Predecessor",
                    "Period from July 23, 2023 through September 30, 2023 "
                    "Period from July 1, 2023 through July 22, 2023 Period from January 1, 2023 through July 22, 2023",
                ],
                rows,
            ),
            ("CONDENSED CONSOLIDATED BALANCE SHEETS (in thousands)", ["September 30, 2023"], balance),
        ],
    )


def write_bad_facts_10q(path: Path, company: str = "Marlow Instruments plc") -> Path:
    """A Form 10-Q for the quarter ended 2024-09-28 with the filer errors and choices a reader must show as
    stated: revenue tagged with ``scale="x"`` (no power of ten), net income displayed ``(1,250)`` inside its fact
    with no ``sign`` (a negative in parentheses the tag does not carry), cash and total assets in EUR (a unit
    that is not USD, never converted) and a capital expenditure the filer tagged ``sign="-"`` (an outflow
    signed negative)."""
    rows = [
        ("Revenue $", [IxFact("us-gaap:Revenues", "q", "52,118", scale="x", decimals="-3")]),
        ("Net income (loss) $", [IxFact("us-gaap:NetIncomeLoss", "q", "(1,250)", scale="3", decimals="-3")]),
    ]
    balance = [
        (
            "Cash and cash equivalents €",
            [
                IxFact(
                    "us-gaap:CashAndCashEquivalentsAtCarryingValue", "i", "7,412", unit="eur", scale="6", decimals="-6"
                )
            ],
        ),
        ("Total assets €", [IxFact("us-gaap:Assets", "i", "88,030", unit="eur", scale="6", decimals="-6")]),
    ]
    cash_flow = [
        (
            "Capital expenditure",
            [
                IxFact(
                    "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment",
                    "ytd",
                    "912",
                    scale="3",
                    decimals="-3",
                    sign="-",
                    outside=("(", ")"),
                )
            ],
        ),
    ]
    return write_ixbrl_10q(
        path,
        company,
        "2024-09-28",
        Q3_CONTEXTS,
        [
            ("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS", ["Three Months Ended September 28, 2024"], rows),
            ("CONDENSED CONSOLIDATED BALANCE SHEETS", ["September 28, 2024"], balance),
            ("CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS", ["Nine Months Ended September 28, 2024"], cash_flow),
        ],
    )
