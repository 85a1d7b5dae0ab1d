"""The filing profile: classification at ingest, the filing rules and key figures, the comparison
with the previous filing, and the filing schema sent to model backends."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from fpdf import FPDF

from docreview_testing.filings import INCOME_LINES, write_10k
from schemas.documents import Chunk
from schemas.filings import FilingSummary, FilingTopic, KeyFigure, KeyFigureName, Profile
from tasks.ingest.classify import classify_text, company_key, filing_company_key
from tasks.observe.changes import changes_markdown, compare_summaries
from tasks.observe.events import FILING_CHANGE, filing_change_events
from tasks.review.backends.filing_rules import _SENTENCE, FilingRules, _sentences
from tasks.review.filing import (
    current_column,
    item_sections,
    key_figures,
    page_chunks,
    statement_kind,
    summarize_pages,
)
from tasks.store.persist import dispose_engines

COVER_10K = (
    "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-K\n"
    "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
    "For the fiscal year ended December 31, 2018\nCommission file number 1-3285\n3M COMPANY\n"
)
COVER_10Q = (
    "SECURITIES AND EXCHANGE COMMISSION\nFORM 10-Q\nQUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE "
    "SECURITIES EXCHANGE ACT OF 1934\nFor the quarterly period ended July 29, 2023\nBEST BUY CO., INC.\n"
    "(Exact name of registrant as specified in its charter)\n"
)
COVER_8K = (
    "SECURITIES AND EXCHANGE COMMISSION\nFORM 8-K\nCURRENT REPORT\nPursuant to Section 13 or 15(d)\n"
    "Date of Report (Date of earliest event reported): August 19, 2022\nFoot Locker, Inc.\n"
    "(Exact name of registrant as specified in its charter)\n"
)
RELEASE = (
    "Amcor reports fiscal 2023 results\nGAAP diluted EPS of 12.3 cps; Adjusted EPS of 19.3 cps\n"
    "Net sales of $14,694 million\n"
)


def filing_pages(shared_data: Path, name: str, last: int | None = None) -> list[tuple[int, str]]:
    """``[(1-based page, cleaned PDFium text)]`` of a shared filing PDF (its first ``last`` pages)."""
    import pypdfium2 as pdfium

    from tasks.textnorm import clean_page_text

    pdf = pdfium.PdfDocument(str(shared_data / "filings" / "pdf" / f"{name}.pdf"))
    try:
        pages = []
        for i in range(min(len(pdf), last or len(pdf))):
            textpage = pdf[i].get_textpage()
            pages.append((i + 1, clean_page_text(textpage.get_text_range())))
            textpage.close()
        return pages
    finally:
        pdf.close()


@pytest.mark.parametrize(
    "text, form, company, period",
    [
        (COVER_10K, "10-K", "3M COMPANY", "2018-12-31"),
        (COVER_10Q, "10-Q", "BEST BUY CO., INC", "2023-07-29"),
        (COVER_8K, "8-K", "Foot Locker, Inc", "2022-08-19"),
        (RELEASE, "earnings release", "Amcor", None),
    ],
)
def test_cover_pages_are_classified_as_filings_with_their_form(text, form, company, period):
    kind = classify_text(text)
    assert kind.profile is Profile.filing
    assert kind.document_type == form
    assert kind.company == company
    assert kind.period == period
    assert kind.reason


def test_a_contract_and_unknown_sec_documents_are_contracts_with_a_stated_reason():
    contract = classify_text("MASTER SUPPLY AGREEMENT\nThis Agreement is made between Acme Inc. and Beta LLC.")
    assert (contract.profile, contract.document_type) == (Profile.contract, "contract")
    unknown = classify_text("SECURITIES AND EXCHANGE COMMISSION\nFORM S-8\nREGISTRATION STATEMENT\nAcme Inc.")
    assert unknown.profile is Profile.contract
    assert "no form the filing profile knows" in unknown.reason
    exhibit = classify_text("EXHIBIT 10.1\nCREDIT AGREEMENT dated as of May 1, 2022 among Acme Inc. and the Lenders")
    assert exhibit.profile is Profile.contract and "exhibit" in exhibit.reason


def test_the_run_profile_overrides_the_classification():
    forced = classify_text(COVER_10K, "contract")
    assert forced.profile is Profile.contract and "--profile contract" in forced.reason
    filing = classify_text("MASTER SUPPLY AGREEMENT between Acme and Beta", "filing")
    assert (filing.profile, filing.document_type) == (Profile.filing, "other")
    with pytest.raises(ValueError):
        classify_text(COVER_10K, "prospectus")


def test_one_registrants_filings_share_a_company_key():
    assert company_key("BEST BUY CO., INC.") == company_key("Best Buy Co Inc") == "BEST BUY"
    assert company_key("3M COMPANY") == "3M"
    ten_k = classify_text(COVER_10K)
    assert ten_k.file_number == "1-3285" and filing_company_key(ten_k) == "SEC file 1-3285"
    padded = classify_text(COVER_10K.replace("1-3285", "001-03285"))
    assert filing_company_key(padded) == filing_company_key(ten_k)
    assert filing_company_key(classify_text(RELEASE)) == "AMCOR"  # no file number: the name


STATEMENT = (
    "3M Company and Subsidiaries\nConsolidated Statement of Cash Flows\nYears ended December 31\n"
    "(Millions) 2018 2017 2016\nNet income including noncontrolling interest $ 5,363 $ 4,869 $ 5,058\n"
    "Depreciation and amortization 1,488 1,544 1,474\n"
    "Net cash provided by (used in) operating activities 6,439 6,240 6,662\n"
    "Purchases of property, plant and equipment (PP&E) (1,577) (1,373) (1,420)\n"
    "Dividends paid to shareholders (3,193) (2,803) (2,678)\n"
)


def test_key_figures_come_from_the_current_column_of_a_statement_page():
    assert statement_kind(STATEMENT) == "cash flow"
    figures = {f.name: f for f in key_figures([(60, STATEMENT)])}
    capex = figures[KeyFigureName.capital_expenditure]
    assert (capex.value, capex.raw, capex.unit, capex.period, capex.page) == (
        1577.0,
        "(1,577)",
        "USD millions",
        "2018",
        60,
    )
    assert figures[KeyFigureName.operating_cash_flow].value == 6439.0
    assert figures[KeyFigureName.dividends_paid].value == 3193.0  # an outflow, reported as a positive amount
    assert statement_kind("Management's discussion refers to the Consolidated Statement of Cash Flows.") is None


#: ``STATEMENT`` with its columns the other way round (oldest year first), as some filers print them.
OLDEST_FIRST = (
    "3M Company and Subsidiaries\nConsolidated Statement of Cash Flows\nYears ended December 31\n"
    "(Millions) 2016 2017 2018\nNet income including noncontrolling interest $ 5,058 $ 4,869 $ 5,363\n"
    "Depreciation and amortization 1,474 1,544 1,488\n"
    "Net cash provided by (used in) operating activities 6,662 6,240 6,439\n"
    "Purchases of property, plant and equipment (PP&E) (1,420) (1,373) (1,577)\n"
    "Dividends paid to shareholders (2,678) (2,803) (3,193)\n"
)


def test_key_figures_of_an_oldest_year_first_statement_are_the_latest_years():
    figures = {f.name: f for f in key_figures([(60, OLDEST_FIRST)])}
    capex = figures[KeyFigureName.capital_expenditure]
    assert (capex.raw, capex.value, capex.period) == ("(1,577)", 1577.0, "2018")
    assert figures[KeyFigureName.operating_cash_flow].value == 6439.0


@pytest.mark.parametrize(
    ("years", "count", "expected"),
    [
        ([2018, 2017, 2016], 3, (0, "2018")),
        ([2016, 2017, 2018], 3, (2, "2018")),
        ([2024, 2023, 2024, 2023], 4, (0, "2024")),  # 10-Q: three months, then six months
        ([2022, 2023, 2022, 2023], 4, (1, "2023")),  # oldest first within each group
        ([2022, 2023], 3, (2, "2023")),  # a note column: still the latest year's side
        ([], 3, (0, None)),
        ([2017, 2018, 2019, 2020, 2021, 2022], 6, (0, None)),  # debt maturities by year, not periods
    ],
)
def test_the_current_column_follows_the_header(years, count, expected):
    assert current_column(years, count) == expected


def test_an_oldest_first_earnings_table_gives_the_latest_quarter(shared_data):
    figures = key_figures(filing_pages(shared_data, "AMCOR_2023Q4_EARNINGS"))
    assert figures and {f.period for f in figures} == {"2023"}, [(f.name, f.period, f.raw) for f in figures]


def test_filing_rules_quote_statement_lines_and_8k_items_verbatim():
    text = (
        STATEMENT + "\n\nItem 5.02. Departure of Directors or Certain Officers.\nOn August 19, 2022, the Company "
        "announced that its Chief Financial Officer will retire. The Board appointed a successor."
    )
    chunk = Chunk(
        document_sha256="x",
        index=0,
        char_start=0,
        char_end=len(text),
        page_start=60,
        page_end=61,
        text=text,
        page_offsets=[len(STATEMENT) + 2],
        profile="filing",
    )
    review = FilingRules().review_chunk(chunk)
    by_topic = {}
    for f in review.findings:
        assert f.evidence in text
        for v in f.values:
            assert v.value in f.evidence
        by_topic.setdefault(f.clause_type, []).append(f)
    capex = next(f for f in by_topic[FilingTopic.key_figure] if "PP&E" in f.evidence)
    assert capex.page == 60 and capex.values[0].value == "(1,577)"
    item = by_topic[FilingTopic.executive_change][0]
    assert item.page == 61 and item.values[0].value == "5.02"


def _summary(
    heads: list[str], revenue: float, weakness: bool = False, auditor: str = "KPMG LLP", year: str = "2022"
) -> FilingSummary:
    fig = KeyFigure(
        name=KeyFigureName.revenue,
        value=revenue,
        raw=f"{revenue:,.0f}",
        unit="USD millions",
        period=year,
        statement="income",
        line=f"Net sales {revenue:,.0f}",
        page=40,
    )
    return FilingSummary(
        risk_headings=heads,
        key_figures=[fig],
        flags={"going_concern": False, "material_weakness": weakness, "auditor": auditor},
    )


def test_changes_between_two_summaries():
    before = _summary(["Competition may reduce our sales.", "Our debt may limit us."], 1000.0, year="2021")
    after = _summary(
        ["Competition may reduce our sales.", "A cyber attack could disrupt us."],
        1100.0,
        weakness=True,
        auditor="Ernst & Young LLP",
    )
    changes = compare_summaries(before, after)
    kinds = {(c.kind, c.subject) for c in changes}
    assert ("risk_factor_added", "A cyber attack could disrupt us.") in kinds
    assert ("risk_factor_removed", "Our debt may limit us.") in kinds
    revenue = next(c for c in changes if c.kind == "figure_changed")
    assert revenue.subject == "revenue" and revenue.change == pytest.approx(0.1)
    assert revenue.basis == "a period ended 2021 → a period ended 2022"
    high = [c for c in changes if c.high_risk]
    assert {c.kind for c in high} == {"flag_appeared", "auditor_changed"}
    assert changes[0].high_risk  # high-risk changes come first
    assert compare_summaries(before, before) == []


def test_page_chunks_keep_pages_whole_and_carry_the_item_section():
    pages = [(1, "FORM 10-K cover"), (2, "Item 1A. Risk Factors\nOur debt may limit us."), (3, STATEMENT)]
    starts, pos = [], 0
    for _, t in pages:
        starts.append(pos)
        pos += len(t) + 2
    chunks = page_chunks("x", pages, starts, budget=80, sections=item_sections(pages))
    assert [c.page_start for c in chunks] == [1, 3]
    assert chunks[0].page_end == 2 and chunks[0].page_offsets == [len(pages[0][1]) + 2]
    assert chunks[1].heading == "Item 1A. Risk Factors" and all(c.profile == "filing" for c in chunks)


@pytest.mark.usefixtures("prefect_harness")
def test_a_second_filing_reports_its_changes_since_the_first(tmp_path, db_url):
    from flows.review import review_documents

    src = tmp_path / "inbox"
    heads = ["Supply chain disruptions could delay our deliveries.", "Competition could reduce our margins."]
    write_10k(src / "northwind-2021.pdf", "Northwind Tools, Inc.", 2021, heads)
    revenue = [("Net sales", "13,650", "12,400")] + [r for r in INCOME_LINES if r[0] != "Net sales"]
    write_10k(
        src / "northwind-2022.pdf",
        "Northwind Tools, Inc.",
        2022,
        [heads[0], "A cyber attack could interrupt our operations."],
        income=revenue,
        controls_effective=False,
    )
    exhibit = FPDF(format="letter")
    exhibit.add_page()
    exhibit.set_font("Helvetica", size=10)
    exhibit.multi_cell(
        0,
        5,
        "EXHIBIT 10.1\nCREDIT AGREEMENT dated as of May 1, 2022 among Northwind Tools, Inc. and the "
        "Lenders party hereto. This Agreement shall be governed by the laws of the State of New York.",
    )
    exhibit.output(str(src / "exhibit-10-1.pdf"))
    try:
        review_documents(source=str(src), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules")
    finally:
        dispose_engines()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    docs = {d["file_name"]: d for d in report["documents"]}
    first, second = docs["northwind-2021.pdf"], docs["northwind-2022.pdf"]
    lone = docs["exhibit-10-1.pdf"]  # an exhibit filed alone: reviewed as a contract, the reason recorded
    assert (lone["status"], lone["profile"], lone["document_type"]) == ("reviewed", "contract", "contract")
    assert "exhibit" in lone["profile_reason"] and "changes" not in lone
    assert any(f["clause_type"] == "governing_law" for f in lone["findings"])
    assert (first["profile"], first["document_type"], second["document_type"]) == ("filing", "10-K", "10-K")
    assert first["changes"] == [] and second["previous_sha256"] == first["sha256"]
    kinds = {(c["kind"], c["subject"]): c for c in second["changes"]}
    assert ("risk_factor_added", "A cyber attack could interrupt our operations.") in kinds
    assert ("risk_factor_removed", "Competition could reduce our margins.") in kinds
    heading_pages = {
        f["evidence"]: f["page"] for d in (first, second) for f in d["findings"] if f["clause_type"] == "risk_factor"
    }
    added = kinds[("risk_factor_added", "A cyber attack could interrupt our operations.")]
    removed = kinds[("risk_factor_removed", "Competition could reduce our margins.")]
    assert added["page"] == heading_pages[added["subject"]]  # evidence: the heading's page in this filing
    assert removed["page"] == heading_pages[removed["subject"]]  # ... and in the previous one
    # the change names the heading's one locator: its page and the Item the page falls under
    assert added["locator"] == f"page {added['page']}, Item 1A. Risk Factors"
    assert f"{added['subject']} ({added['locator']})" in changes_markdown(report["documents"])
    revenue_change = kinds[("figure_changed", "revenue")]
    # shown by the one formatter: the exact amount in the unit the statement states
    assert revenue_change["before"] == "12,400 USD millions" and revenue_change["after"] == "13,650 USD millions"
    assert kinds[("flag_appeared", "material_weakness")]["high_risk"] is True
    figures = {f["name"]: f for f in second["key_figures"]}
    assert figures["revenue"]["page"] == 3 and figures["revenue"]["value"] == "13650"  # exact, a string in JSON
    sections = {f["section"] for f in second["findings"]}
    assert "Item 1A. Risk Factors" in sections
    events = filing_change_events(report)
    assert [e["payload"]["kind"] for e in events] == ["flag_appeared"] and events[0]["event"] == FILING_CHANGE
    assert "material_weakness" in changes_markdown(report["documents"])
    assert Path(tmp_path / "out" / "report.html").read_text().count("northwind-2022.pdf") >= 1


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_eval_filings_on_a_slice_of_the_shared_filings(shared_data):
    from flows.eval_filings import evaluate_filings

    filings = shared_data / "filings"
    if not (filings / "documents.jsonl").is_file():
        pytest.skip(f"{filings} not found")
    try:
        result = evaluate_filings(filings, names=["3M_2018_10K", "FOOTLOCKER_2022_8K_dated_2022-08-19"])
    finally:
        dispose_engines()
    assert result["reviewed"] == result["recognised_as_filing"] == 2 and result["form_accuracy"] == 1.0
    # 3M's two metric questions: capital expenditure 1,577 (cash flow, page 60) and net PP&E 8.70 bn (page 58)
    assert (result["key_figure_questions"], result["key_figures_found"]) == (2, 2)
    assert result["evidence_pages"] == 3 and result["evidence_page_recall"] == 1.0
    assert 0 < result["findings_per_page"] <= 1.5 and result["pages"] == 191


def test_the_cli_refuses_an_unknown_profile(tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    result = CliRunner().invoke(app, ["review", str(tmp_path), "--profile", "prospectus", "--backend", "rules"])
    assert result.exit_code == 2 and "unknown profile" in result.output


def test_eval_filings_refuses_a_filing_name_that_is_not_in_the_set(tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    (tmp_path / "pdf").mkdir()
    (tmp_path / "documents.jsonl").write_text('{"doc_name": "ACME_2022_10K"}\n')
    result = CliRunner().invoke(
        app, ["eval", "filings", str(tmp_path), "--only", "NOPE", "--out", str(tmp_path / "e.json")]
    )
    assert result.exit_code == 2 and "--only: no filing NOPE" in result.output
    assert not (tmp_path / "e.json").exists()


def test_sentence_spans_match_the_sentence_pattern_on_any_text():
    rnd = random.Random(7)
    texts = ["".join(rnd.choice("ab .!?\n1") for _ in range(rnd.randint(0, 80))) for _ in range(2000)]
    texts.append("x" * 3000 + ". y" + "\n" * 3 + "z" * 1300 + "!" + "q.5" * 500 + "?")  # runs past 1,200 characters
    texts.append("Revenue was $1.47 billion. Net income rose!\n\nItem 7.\nA table\n12.5 13.1\nno stop here")
    for text in texts:
        assert list(_sentences(text)) == [m.span() for m in _SENTENCE.finditer(text)], text[:80]


def test_needed_words_skip_only_the_sentences_no_rule_can_match(shared_data, monkeypatch):
    """A sentence is tried only against the rules whose needed words it holds
    (``SENTENCE_RULE_WORDS``): over the pages of real filings (PDFium text), the findings are
    exactly those of trying every rule on every sentence."""
    import pypdfium2

    from tasks.review.backends import filing_rules

    chunks = []
    for name in (
        "3M_2018_10K.pdf",
        "BESTBUY_2024Q2_10Q.pdf",
        "FOOTLOCKER_2022_8K_dated_2022-08-19.pdf",
        "AMCOR_2023Q4_EARNINGS.pdf",
    ):
        pdf = pypdfium2.PdfDocument(str(shared_data / "filings" / "pdf" / name))
        try:
            for i in range(len(pdf)):
                page = pdf[i]
                text = page.get_textpage().get_text_range().replace("\r\n", "\n")
                chunks.append(
                    Chunk(
                        document_sha256=name,
                        index=len(chunks),
                        char_start=0,
                        char_end=len(text),
                        page_start=i + 1,
                        page_end=i + 1,
                        text=text,
                        page_offsets=[],
                        profile="filing",
                    )
                )
        finally:
            pdf.close()
    assert len(chunks) > 200
    gated = [FilingRules().review_chunk(c).model_dump() for c in chunks]
    monkeypatch.setattr(filing_rules, "SENTENCE_RULE_WORDS", dict.fromkeys(filing_rules.SENTENCE_RULE_WORDS, ("",)))
    every = [FilingRules().review_chunk(c).model_dump() for c in chunks]
    assert gated == every
    topics = {f["clause_type"] for review in gated for f in review["findings"]}
    assert len(topics) >= 6, topics


def test_needed_words_are_found_as_the_patterns_fold_case():
    """``re.IGNORECASE`` matches ``İ`` and ``ı`` to ``i`` (text upper-cased under a Turkish
    locale, OCR): the needed-word filter folds them the same way, so these sentences still reach
    their rules."""
    text = (
        "İN OUR OPİNİON, THE CONSOLİDATED FİNANCİAL STATEMENTS PRESENT FAİRLY, in all material respects, the "
        "financial position of the Company.\n\nManagement concluded that our internal control over financial "
        "reporting was not effectıve as of December 31, 2024.\n\nWe received a subpoena and an İNQUİRY FROM "
        "THE SEC regarding our revenue recognition practices last year.\n"
    )
    chunk = Chunk(
        document_sha256="x",
        index=0,
        char_start=0,
        char_end=len(text),
        page_start=1,
        page_end=1,
        text=text,
        page_offsets=[],
        profile="filing",
    )
    topics = {f.clause_type for f in FilingRules().review_chunk(chunk).findings}
    assert {FilingTopic.auditor_opinion, FilingTopic.material_weakness, FilingTopic.regulatory_investigation} <= topics


@pytest.mark.slow
def test_every_key_figure_of_the_shared_filings_is_of_the_filings_own_period(shared_data):
    """All 64 shared PDF filings: each key figure's column is the filing period's (its year is the year the
    cover page's period ends in, or the year before for a fiscal year or release dated in January or
    February: J&J's fiscal 2022 ends on 2023-01-01, MGM's Q4 2022 release is dated 2023-02-08)."""
    from tasks.ingest.classify import classify_text

    lines = (shared_data / "filings" / "documents.jsonl").read_text().splitlines()
    names = [json.loads(line)["doc_name"] for line in lines if line.strip()]
    assert len(names) == 64
    wrong, figures = [], 0
    for name in names:
        pages = filing_pages(shared_data, name)
        period = classify_text("\n\n".join(text for _, text in pages[:3])).period
        assert period, name
        year, month = int(period[:4]), int(period[5:7])
        allowed = {str(year)} | ({str(year - 1)} if month <= 2 else set())
        for figure in summarize_pages(pages).key_figures:
            figures += 1
            if figure.period is not None and figure.period not in allowed:
                wrong.append((name, figure.name.value, figure.period, figure.raw, figure.page))
    assert figures > 700  # 770 when written
    assert not wrong, wrong


def test_red_flags_carry_their_evidence_and_page():
    from tasks.review.filing import red_flags

    pages = [
        (
            1,
            "FORM 8-K\nCURRENT REPORT\nItem 4.02 Non-Reliance on Previously Issued Financial Statements or a "
            "Related Audit Report\nOn March 3, 2025 the Audit Committee concluded that the statements should no "
            "longer be relied upon.",
        ),
        (
            2,
            "These conditions raise substantial doubt about the Company's ability to continue as a going concern. "
            "If we fail to comply with the financial covenants of our credit facility, the lenders could accelerate.",
        ),
        (
            3,
            "As of December 31, 2024 we were not in compliance with the leverage covenant under our credit "
            "agreement, and the lenders granted a waiver.",
        ),
    ]
    got = {f.flag: f for f in red_flags(pages)}
    assert set(got) == {"non_reliance", "going_concern", "covenant_breach"}
    assert got["non_reliance"].page == 1 and got["non_reliance"].evidence.startswith("Item 4.02 Non-Reliance")
    assert got["going_concern"].page == 2
    assert got["covenant_breach"].page == 3  # page 2's covenant sentence is conditional: a risk, not a breach
    assert "leverage covenant" in got["covenant_breach"].evidence
    hedged = [
        (
            1,
            "The Company has no doubt about its ability to continue. An employee's violation of the "
            "Restrictive Covenant Agreement is not our exclusive remedy.",
        )
    ]
    assert red_flags(hedged) == []


def test_a_real_covenant_waiver_is_a_red_flag(shared_data):
    from tasks.review.filing import red_flags

    pages = filing_pages(shared_data, "MGMRESORTS_2020_10K", last=60)
    (flag,) = [f for f in red_flags(pages) if f.flag == "covenant_breach"]
    assert "waiver of the financial maintenance covenants" in flag.evidence and flag.page == 54


def test_an_earnings_release_period_is_the_latest_it_reports_not_a_comparative_one() -> None:
    from tasks.ingest.classify import classify_text

    release = (
        "For Immediate Release: November 22, 2024\nTHE BUCKLE, INC. REPORTS THIRD QUARTER NET INCOME\n"
        "net income for the fiscal quarter ended November 2, 2024 was $44.2 million, or $0.89 earnings per share.\n"
        "Comparable store net sales for the prior year 13-week period ended November 4, 2023 ...\n"
    )
    assert classify_text(release).period == "2024-11-02"
    oldest_first = (  # a segment table with the older year's column first (Amcor's fiscal 2023 release)
        "Amcor reports fiscal 2023 results\nGAAP diluted EPS of 12.3 cps\nFor Immediate Release\n"
        "Segment Information\nTwelve Months Ended June 30, 2022 Twelve Months Ended June 30, 2023\n"
    )
    assert classify_text(oldest_first).period == "2023-06-30"
    eight_k = (
        "FORM 8-K\nCURRENT REPORT PURSUANT TO SECTION 13 OR 15(d)\nNovember 22, 2024\nDate of Report\n"
        "Item 2.02 Results of Operations. results for the fiscal quarter ended November 2, 2024.\n"
    )
    assert classify_text(eight_k).period == "2024-11-22"  # an 8-K's period is its date of report


def _figure(name: KeyFigureName, value: float, unit: str, period: str, statement: str) -> KeyFigure:
    return KeyFigure(
        name=name, value=value, raw=f"{value:,.0f}", unit=unit, period=period, statement=statement, line="", page=1
    )


def test_year_over_year_between_a_pdf_and_an_html_filing_uses_one_period_definition() -> None:
    """A 10-K printed as PDF (a statement in USD thousands, fiscal 2022 column) and the next one filed as
    HTML (XBRL facts in USD millions, a 12-month context): compared in one unit over one span."""
    R, C = KeyFigureName.revenue, KeyFigureName.capital_expenditure
    pdf = FilingSummary(
        key_figures=[
            _figure(R, 26_914_000.0, "USD thousands", "2022", "income"),
            _figure(KeyFigureName.total_assets, 44_187_000.0, "USD thousands", "2022", "balance sheet"),
        ]
    )
    html = FilingSummary(
        key_figures=[
            _figure(R, 26_974.0, "USD millions", "2022-01-31..2023-01-29", "XBRL"),
            _figure(KeyFigureName.total_assets, 41_182.0, "USD millions", "2023-01-29", "XBRL"),
        ]
    )
    changes = {c.subject: c for c in compare_summaries(pdf, html, "10-K")}
    assert changes["revenue"].kind == "figure_changed"
    assert changes["revenue"].change == pytest.approx((26_974 - 26_914) / 26_914, abs=1e-4)
    assert changes["revenue"].basis == "12 months ended 2022 → 12 months ended 2023-01-29"
    assert changes["total_assets"].change == pytest.approx((41_182 - 44_187) / 44_187, abs=1e-4)
    assert changes["total_assets"].basis == "at 2022 → at 2023-01-29"

    # a 10-Q: the PDF's cash flow statement is year to date (span not stated), the HTML's fact a quarter
    q_pdf = FilingSummary(key_figures=[_figure(C, 900.0, "USD millions", "2023", "cash flow")])
    q_html = FilingSummary(key_figures=[_figure(C, 400.0, "USD millions", "2024-06-01..2024-08-31", "XBRL")])
    (only,) = compare_summaries(q_pdf, q_html, "10-Q")
    assert only.kind == "figure_not_compared" and only.change is None
    assert only.basis == "a period ended 2023 against 3 months ended 2024-08-31: the span of one is not stated"
    # a quarter against a year, a balance against a flow, a previous figure that is not earlier
    year = FilingSummary(key_figures=[_figure(R, 50_000.0, "USD millions", "2023-06-01..2024-05-31", "XBRL")])
    quarter = FilingSummary(key_figures=[_figure(R, 13_307.0, "USD millions", "2024-06-01..2024-08-31", "XBRL")])
    assert "different spans" in compare_summaries(year, quarter)[0].basis
    flow = FilingSummary(key_figures=[_figure(R, 1.0, "USD millions", "2023", "income")])
    stock = FilingSummary(key_figures=[_figure(R, 2.0, "USD millions", "2024-05-31", "XBRL")])
    assert "a balance and a flow" in compare_summaries(flow, stock, "10-K")[0].basis
    same = FilingSummary(key_figures=[_figure(R, 3.0, "USD millions", "2023", "income")])
    assert "does not end earlier" in compare_summaries(flow, same, "10-K")[0].basis
