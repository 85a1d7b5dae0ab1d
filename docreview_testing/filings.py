"""Small generated SEC filings (Form 10-K layout) for tests of the filing profile.

:func:`write_10k` writes a four-page PDF: a Form 10-K cover page, Item 1A Risk Factors with the
given headings (each followed by a paragraph), Item 8 with a Consolidated Statements of
Operations and a Consolidated Balance Sheets page (amounts in millions, current year first),
and Item 9A. Two filings of one company that differ in a risk factor or a figure exercise the
comparison with the previous filing.
"""

from __future__ import annotations

from pathlib import Path

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
