"""One locator per finding: the page (a PDF's own page, an HTML filing's page by its page breaks, named
which), section and paragraph come from the document model once, and WHERE, the grounding reason,
``page`` in report.json and the "open the source" link all read it; a Word document never shows a page."""

from __future__ import annotations

import re
from pathlib import Path

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
