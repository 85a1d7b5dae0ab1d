"""One locator per finding: the page (a PDF's own page, an HTML filing's page by its page breaks, named
which), section and paragraph come from the document model once, and WHERE, the grounding reason,
``page`` in report.json and the "open the source" link all read it; a Word document never shows a page."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from schemas.documents import DocumentKind, ExtractedDocument, Locator, PageText, SourceObject
from schemas.findings import Finding, Risk
from schemas.taxonomy import ClauseType
from tasks.check.factcheck import DocumentIndex, check_grounding, ground_quote
from tasks.ingest.html import printed_number
from tasks.observe.report import locate, unit_locator
from tasks.review.chunk import chunk_text
from tasks.review.filing import with_sections

#: A page number as a reviewer reads one: "page 3", "page(s) 3", "pages 3".
PAGE_NUMBER = re.compile(r"\bpage(?:\(s\)|s)?\s+\d", re.I)


def _document(kind: DocumentKind, pages: list[PageText]) -> ExtractedDocument:
    source = SourceObject(uri="/x", name="x", local_path="/x", size_bytes=1)
    return ExtractedDocument(sha256="0" * 64, source=source, pages=pages, kind=kind)


def test_a_locator_names_its_page_and_what_the_page_counts() -> None:
    html = _document(
        DocumentKind.html,
        [
            PageText(number=1, text="Cover", locator=Locator(page=1)),
            PageText(
                number=2,
                text="Revenue",
                locator=Locator(page=6, printed_page="4", section="Part I > Item 1. Financial Statements"),
            ),
        ],
    )
    where = html.locator_of(2)
    assert (where.page, where.page_basis, where.printed_page) == (6, "page_break", "4")
    assert where.label() == "page 6 (printed 4), Part I > Item 1. Financial Statements"
    assert where.place() == "page 6 (printed 4)"
    pdf = _document(DocumentKind.pdf, [PageText(number=1, text="a"), PageText(number=2, text="b")])
    assert pdf.locator_of(2) == Locator(page=2, page_basis="pdf")
    assert pdf.unit_locators() == {}  # a plain PDF page is its own unit number: nothing to record
    docx = _document(DocumentKind.docx, [PageText(number=1, text="x", locator=Locator(section="7.2 Cap", paragraph=3))])
    assert docx.locator_of(1).page is None and docx.locator_of(1).label() == "§ 7.2 Cap, paragraph 3"
    assert docx.locator_of(9).page is None  # out of range: still no page in a Word document


def test_printed_page_numbers_come_from_the_page_foot() -> None:
    assert printed_number(["4"]) == "4"
    assert printed_number(["Page 12 of 40"]) == "12"
    assert printed_number(["Table of Contents"]) is None
    assert printed_number([]) is None


def test_oracle_pages_carry_the_number_printed_on_them(shared_data: Path) -> None:
    from tasks.ingest.html import read_html

    result = read_html(str(shared_data / "edgar-html" / "Oracle.10-Q.html"), 2000)
    locators = {p["number"]: p["locator"] for p in result["pages"]}
    assert "printed_page" not in locators[1]  # the cover is unnumbered
    assert locators[6]["page"] == 6 and locators[6]["printed_page"] == "4"  # statements of operations


def test_a_pdf_filing_pages_name_the_item_they_fall_under() -> None:
    doc = _document(DocumentKind.pdf, [PageText(number=n, text=f"page {n}") for n in (1, 2, 3)])
    located = with_sections(doc, [(2, "Item 7. Management's Discussion and Analysis")])
    assert located.locator_of(1).label() == "page 1"
    assert located.locator_of(3).label() == "page 3, Item 7. Management's Discussion and Analysis"
    assert doc.locator_of(3).label() == "page 3"  # the document itself is not changed


def test_the_grounding_reason_says_where_the_locator_does() -> None:
    texts = ["1. SUPPLY\nSeller shall supply the Products.", "2. LIABILITY\nIn no event shall liability exceed $5."]
    docx = _document(
        DocumentKind.docx,
        [
            PageText(number=1, text=texts[0], locator=Locator(section="1. SUPPLY", paragraph=1)),
            PageText(number=2, text=texts[1], locator=Locator(section="2. LIABILITY", paragraph=1)),
        ],
    )
    index = DocumentIndex.build(docx)
    chunks = chunk_text(docx.sha256, docx.text, docx.page_starts(), 10_000, 0)
    finding = Finding(
        clause_type=ClauseType.cap_on_liability,
        summary="cap",
        risk=Risk.high,
        evidence="In no event shall liability exceed $5.",
        page=1,
    )
    check = check_grounding(finding, ground_quote(finding.evidence, index, chunks[0], []), index)
    assert (
        check.reason == "found in the chunk at § 2. LIABILITY, paragraph 1 (stated § 1. SUPPLY, paragraph 1 corrected)"
    )
    assert not PAGE_NUMBER.search(check.reason)


def test_report_items_read_the_stored_unit_locators() -> None:
    html = _document(
        DocumentKind.html,
        [
            PageText(number=n, text="t", locator=Locator(page=n - 1 or 1, section="Part II > Item 8."))
            for n in (1, 2, 3)
        ],
    )
    structure = {"units": {str(k): v.model_dump(exclude_none=True) for k, v in html.unit_locators().items()}}
    where = unit_locator("html", structure)
    figure = {"name": "revenue", "page": 3}
    locate(figure, where)
    assert figure["unit_number"] == 3 and figure["page"] == 2
    assert figure["locator"] == "page 2, Part II > Item 8." and figure["where"]["page_basis"] == "page_break"
    assert unit_locator("docx", {})(4) == Locator(paragraph=4)  # a Word unit is never a page
    assert unit_locator("pdf", {})(4) == Locator(page=4, page_basis="pdf")


def test_the_source_link_says_where_without_a_page_in_a_word_document(tmp_path: Path) -> None:
    from cli.report_server import source_link

    source = tmp_path / "draft.docx"
    source.write_bytes(b"x")
    document = {"source": str(source), "sha256": "a" * 64}
    word = {"page": None, "where": {"section": "7.2 Cap", "paragraph": 3}}
    link = source_link("run", document, word)
    assert "open the source at § 7.2 Cap, paragraph 3" in link and "#page" not in link
    pdf = tmp_path / "c.pdf"
    pdf.write_bytes(b"%PDF")
    link = source_link(
        "run", {"source": str(pdf), "sha256": "b" * 64}, {"page": 4, "where": {"page": 4, "page_basis": "pdf"}}
    )
    assert "#page=4" in link and "open the source at page 4" in link
    filing = tmp_path / "f.htm"
    filing.write_text("<html></html>")
    located = {"page": 6, "where": {"page": 6, "printed_page": "4", "page_basis": "page_break"}}
    link = source_link("run", {"source": str(filing), "sha256": "c" * 64}, located)
    assert "open the source at page 6 (printed 4)" in link and "#page" not in link


# --------------------------------------------------------------------------- every surface, end to end


def check_report_agrees(report: dict, page: str) -> dict[str, int]:
    """Assert that every finding, key figure and red flag of ``report`` (report.json) is shown in ``page``
    (report.html) where and as report.json says, through its one locator; returns counts of what was compared.

    A finding: ``page`` is its locator's, the grounding check's reason names the locator's place, the HTML's
    WHERE cell is its locator label; a Word document's findings carry no page number anywhere (locator, checks,
    JSON ``page``/``stated_page``) and its section of the HTML shows none. A key figure: the HTML row's value is
    report.json's ``shown`` and its WHERE the locator."""
    from lxml import html as lhtml

    root = lhtml.fromstring(page)
    rows = {r.get("id"): r for r in root.iter("tr") if (r.get("id") or "").startswith("f-")}
    sections = {s.findtext("h2"): s for s in root.iter("section") if "doc" in (s.get("class") or "").split()}
    counts = {"findings": 0, "word_findings": 0, "key_figures": 0, "grounding_reasons": 0}
    for doc in report["documents"]:
        for f in doc["findings"]:
            where = Locator.model_validate(f["where"])
            assert f["page"] == where.page and f["locator"] == where.label(), f
            if doc.get("kind") == "docx":
                assert f["page"] is None and f["stated_page"] is None
                said = [f["locator"], *(c["reason"] for c in f["checks"]), str(f.get("secondary") or "")]
                assert not any(PAGE_NUMBER.search(s) for s in said), said
                counts["word_findings"] += 1
            grounding = next((c for c in f["checks"] if c["name"] == "grounding" and c["verdict"] == "verified"), None)
            if grounding is not None:
                assert re.search(rf"(?:on|at) {re.escape(where.place())}(?: \(|,|$)", grounding["reason"]), (
                    grounding["reason"],
                    where.place(),
                )
                counts["grounding_reasons"] += 1
            cells = rows[f"f-{f['id']}"].findall("td")
            assert " ".join(cells[2].text_content().split()) == " ".join(f["locator"].split())
            counts["findings"] += 1
        if doc.get("kind") == "docx" and doc["status"] == "reviewed":
            assert not PAGE_NUMBER.search(" ".join(sections[doc["file_name"]].text_content().split()))
        shown = [
            (
                " ".join((r.find("td[@class='value']").text or "").split()),
                " ".join(r.find("td[@class='where']").text_content().split()),
            )
            for r in sections[doc["file_name"]].iter("tr")
            if r.get("class") == "figure"
        ]
        expected = [
            (" ".join(k["shown"].split()), f"{k['locator']} ({k['statement']})") for k in doc.get("key_figures") or []
        ]
        assert shown == expected, (doc["file_name"], shown, expected)
        for k in doc.get("key_figures") or []:
            assert k["page"] == Locator.model_validate(k["where"]).page
        counts["key_figures"] += len(expected)
    return counts


@pytest.fixture(scope="module")
def reviewed_inbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    """The sample contracts (PDFs, a one-page scan, a Word draft) and three generated inline XBRL 10-Qs (stated
    in thousands; a successor's period; bad facts), reviewed offline."""
    from docreview_testing.filings import write_bad_facts_10q, write_quarterly_10q, write_successor_10q
    from docreview_testing.samples import generate_other_formats, generate_samples
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    root = tmp_path_factory.mktemp("agree")
    inbox = root / "inbox"
    made = generate_samples(inbox, count=2)
    generate_other_formats(inbox, made)
    write_quarterly_10q(inbox / "harbor-10q.htm", 3)
    write_successor_10q(inbox / "brightline-10q.htm")
    write_bad_facts_10q(inbox / "marlow-10q.htm")
    try:
        review_documents(
            source=str(inbox), out_dir=str(root / "out"), database_url=f"sqlite:///{root / 'r.db'}", backend="rules"
        )
    finally:
        dispose_engines()
    report = json.loads((root / "out" / "report.json").read_text())
    return report, (root / "out" / "report.html").read_text(), inbox


def test_every_surface_reads_one_locator_and_one_figure(reviewed_inbox) -> None:
    report, page, _ = reviewed_inbox
    assert all(d["status"] == "reviewed" for d in report["documents"]), [d["reason"] for d in report["documents"]]
    counts = check_report_agrees(report, page)
    assert counts["word_findings"] > 10 and counts["key_figures"] > 15 and counts["grounding_reasons"] > 50


def test_the_runs_page_total_counts_pages_not_a_word_files_paragraphs(reviewed_inbox) -> None:
    report, _, _ = reviewed_inbox
    docs = report["documents"]
    word = [d for d in docs if d["kind"] == "docx"]
    assert word and all(d["pages"] > 10 for d in word)  # paragraph units, not pages
    assert report["run"]["metrics"]["pages_total"] == sum(d["pages"] for d in docs if d["kind"] != "docx")


def test_report_json_values_are_the_xbrl_facts(reviewed_inbox) -> None:
    from tests.test_figures import ix_values

    report, _, inbox = reviewed_inbox
    checked = 0
    for doc in report["documents"]:
        if not doc["file_name"].endswith(".htm"):
            continue
        facts = ix_values(inbox / doc["file_name"])
        for k in doc["key_figures"]:
            if k["value"] is None:
                continue  # shown as displayed: no value to compare
            tagged = facts[(k["line"], k["period"])]
            assert Decimal(k["value"]) in [abs(v) if k.get("flow") else v for v in tagged], k
            checked += 1
    assert checked >= 15


def test_a_successor_10q_shows_its_net_loss_in_the_report(reviewed_inbox) -> None:
    report, page, _ = reviewed_inbox
    doc = next(d for d in report["documents"] if d["file_name"] == "brightline-10q.htm")
    assert doc["document_type"] == "10-Q"
    loss = next(k for k in doc["key_figures"] if k["title"] == "net loss" and k["current"])
    assert (loss["value"], loss["period_label"]) == ("-2645000", "successor period 2023-07-23 to 2023-09-30")
    assert "successor period 2023-07-23 to 2023-09-30" in page and "-2,645,000 USD (-2.65 million)" in page


#: A few shared PDF filings of each form: a 10-K, a 10-Q, an 8-K and an earnings release.
SHARED_PDFS = ("3M_2018_10K", "Pfizer_2023Q2_10Q", "AMCOR_2022_8K_dated-2022-07-01", "AMCOR_2023Q4_EARNINGS")


@pytest.mark.slow
def test_the_shared_filings_show_one_locator_and_their_own_facts(
    shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The shared EDGAR HTML filings and a few shared PDF filings: every finding and key figure of report.json is
    in report.html where and as it says; the HTML filings' key figures are their XBRL facts, read here with
    lxml."""
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines
    from tests.test_figures import ix_values

    root = tmp_path_factory.mktemp("shared")
    pdfs = root / "pdfs"
    pdfs.mkdir()
    for name in SHARED_PDFS:  # read in place: links, not copies
        (pdfs / f"{name}.pdf").symlink_to(shared_data / "filings" / "pdf" / f"{name}.pdf")
    totals: dict[str, int] = {}
    for source, out in ((shared_data / "edgar-html", "html"), (pdfs, "pdf")):
        try:
            review_documents(
                source=str(source), out_dir=str(root / out), database_url=f"sqlite:///{root / 'r.db'}", backend="rules"
            )
        finally:
            dispose_engines()
        report = json.loads((root / out / "report.json").read_text())
        counts = check_report_agrees(report, (root / out / "report.html").read_text())
        for key, n in counts.items():
            totals[key] = totals.get(key, 0) + n
        for doc in report["documents"]:
            if (
                out != "html"
                or not doc.get("key_figures")
                or not any(k["statement"] == "XBRL" for k in doc["key_figures"])
            ):
                continue
            facts = ix_values(shared_data / "edgar-html" / doc["file_name"])
            for k in doc["key_figures"]:
                if k["statement"] == "XBRL" and k["value"] is not None:
                    tagged = facts[(k["line"], k["period"])]
                    assert Decimal(k["value"]) in [abs(v) if k.get("flow") else v for v in tagged], k
                    totals["xbrl_values"] = totals.get("xbrl_values", 0) + 1
    assert totals["key_figures"] > 40 and totals["xbrl_values"] >= 25 and totals["findings"] > 200, totals


def test_a_partial_scan_raises_no_absence_alarm_and_says_why(reviewed_inbox) -> None:
    report, page, _ = reviewed_inbox
    scan = next(d for d in report["documents"] if d["file_name"].endswith("_scan_page1.png"))
    assert scan["absences"] and not any(a["alarm"] for a in scan["absences"])
    assert scan["absences_not_expected"] == "a partial copy: 1 of the 6 pages it states ('Page 1 of 6')"
    assert scan["not_judged"] == scan["absences_not_expected"] and not scan.get("playbook")
    assert "Not judged as an agreement</b>: a partial copy: 1 of the 6 pages it states" in page
    whole = [d for d in report["documents"] if d["file_name"].endswith(".pdf")]
    assert whole and all("absences_not_expected" not in d for d in whole)  # the contracts themselves are expected
    assert all(d["not_judged"] is None for d in whole)


def test_drift_listings_locate_their_findings_too() -> None:
    from tasks.observe.report import located_drift

    where = unit_locator("docx", {"units": {"7": {"section": "4. Fees", "paragraph": 2}}})
    record = {"score": 0.5, "added": [{"clause_type": "cap_on_liability", "page": 7}], "removed": [], "changed": []}
    (added,) = located_drift(record, where)["added"]
    assert added["page"] is None and added["unit_number"] == 7 and added["locator"] == "§ 4. Fees, paragraph 2"
    assert located_drift(None, where) is None


def test_a_pdfs_printed_page_numbers_come_from_its_footers(tmp_path: Path) -> None:
    """PDF filings print their own page numbers: "Apple Inc. | 2024 Form 10-K | 29" (a footer with other
    numbers before its page number), a plain "31" and "F-12" on the financial statements. Each is taken out of
    the page text and said in the locator when it differs from the page's place ("page 3 (printed 29)")."""
    from fpdf import FPDF

    from schemas.settings import Limits
    from tasks.ingest.extract import run_extraction

    pdf = FPDF(format="letter")
    pdf.set_auto_page_break(auto=False)
    feet = ["Apple Inc. | 2024 Form 10-K | 27", "Apple Inc. | 2024 Form 10-K | 28", "Apple Inc. | 2024 Form 10-K | 29"]
    feet += ["F-11", "F-12"]
    for n, foot in enumerate(feet, 1):
        pdf.add_page()
        pdf.set_font("Helvetica", size=10)
        pdf.set_xy(20, 20)
        for j in range(12):
            pdf.cell(
                0,
                6,
                f"Body line {j} of page {n}: net sales {n * 100 + j} and other text {'x' * n}",
                new_x="LMARGIN",
                new_y="NEXT",
            )
        pdf.set_xy(20, 260)
        pdf.cell(0, 6, foot)
    path = tmp_path / "10k.pdf"
    pdf.output(str(path))
    result = run_extraction(str(path), Limits(), DocumentKind.pdf)
    assert result["ok"], result
    pages = result["pages"]
    assert [(p.get("locator") or {}).get("printed_page") for p in pages] == ["27", "28", "29", "F-11", "F-12"]
    assert all("Form 10-K" not in p["text"] and "F-1" not in p["text"] for p in pages)  # the footer left the text
    document = ExtractedDocument(
        sha256="0" * 64,
        source=SourceObject(uri="/x", name="x", local_path="/x", size_bytes=1),
        pages=[PageText(number=p["number"], text=p["text"], locator=Locator(**p["locator"])) for p in pages],
        kind=DocumentKind.pdf,
    )
    assert document.locator_of(3).label() == "page 3 (printed 29)"
