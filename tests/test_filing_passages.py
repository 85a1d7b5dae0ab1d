"""A filing's risk factors and legal proceedings come back one finding each, not one per sentence: a
risk factor is its heading (Item 1A; HTML: the filer's bold or italic heading sentence, PDF: read from
the text), a legal proceeding its paragraph (tasks/review/filing.py, tasks/review/backends/filing_rules.py,
tasks/check/merge.py)."""

from __future__ import annotations

import bisect
import re
from functools import cache
from pathlib import Path

import pytest

from schemas.documents import Chunk, DocumentKind, ExtractedDocument, IngestOutcome, SourceObject
from schemas.filings import FilingFinding, FilingTopic
from schemas.findings import CheckedFinding, CheckResult, Finding, Risk, Verdict
from schemas.settings import Limits, Settings
from tasks.check.index import DocumentIndex
from tasks.check.merge import merge_clause_findings
from tasks.ingest.extract import extract_document
from tasks.review.backends.filing_rules import FilingRules
from tasks.review.filing import (
    chunk_filing,
    is_heading_sentence,
    paragraph_starts,
    risk_factor_blocks,
    risk_heading_spans,
    summarize_document,
)

T = FilingTopic


@cache
def _nvidia(path: str) -> ExtractedDocument:
    source = SourceObject(uri=path, name=Path(path).name, local_path=path, size_bytes=Path(path).stat().st_size)
    outcome = extract_document.fn(IngestOutcome(source=source, sha256="0" * 64, kind=DocumentKind.html), Limits())
    assert outcome.ok and outcome.document is not None
    return outcome.document


def nvidia(shared: Path) -> ExtractedDocument:
    return _nvidia(str(shared / "edgar-html" / "Nvidia.10-K.html"))


def bold_headings(doc: ExtractedDocument) -> list[tuple[int, str]]:
    """``[(document offset, line)]`` of the Item 1A lines the filer set in bold or italic that end a sentence:
    the headings as the markup gives them, independent of the reader's rules."""
    starts = doc.page_starts()
    return [
        (starts[k] + a, page.text[a:b])
        for k, page in enumerate(doc.pages)
        if ((page.locator and page.locator.section) or "").endswith("Item 1A. RISK FACTORS")
        for a, b in page.emphasised_spans()
        if page.text[a:b].endswith(".") and not page.text[a:b].startswith("In evaluating NVIDIA")
    ]


def review_rules(doc: ExtractedDocument) -> list[tuple[Chunk, Finding]]:
    summary = summarize_document.fn(doc)
    chunks = chunk_filing.fn(doc, Settings().chunk_chars, summary.sections)
    return [(c, f) for c in chunks for f in FilingRules().review_chunk(c).findings]


# --------------------------------------------------------------------------- risk factors


def test_nvidia_10k_has_one_risk_factor_finding_per_heading_quoting_it(shared_data: Path) -> None:
    doc = nvidia(shared_data)
    headings = bold_headings(doc)
    assert 20 <= len(headings) <= 30  # 24 in the filing; the bulleted summary before them repeats them in plain type
    found = [(c, f) for c, f in review_rules(doc) if f.clause_type is T.risk_factor]
    assert [f.evidence for _, f in found] == [h for _, h in headings]  # each heading once, in order
    assert all(f.summary == " ".join(f.evidence.split()) for _, f in found)
    offsets = [c.char_start + c.text.index(f.evidence) for c, f in found]
    heading_offsets = [o for o, _ in headings]
    blocks = [bisect.bisect_right(heading_offsets, o) - 1 for o in offsets]  # the risk factor each one is in
    assert len(set(blocks)) == len(blocks) == len(headings)  # no two findings in one risk factor
    assert all(f.page == c.page_at(c.text.index(f.evidence)) for c, f in found)
    assert summarize_document.fn(doc).risk_headings == [h[:300] for _, h in headings]  # compared across filings


def _risk(evidence: str, page: int) -> CheckedFinding:
    finding = FilingFinding(clause_type=T.risk_factor, summary="s", risk=Risk.medium, evidence=evidence, page=page)
    return CheckedFinding(
        finding,
        0,
        0,
        page,
        Verdict.verified,
        [CheckResult(name="grounding", verdict=Verdict.verified, reason="found", page=page)],
    )


def test_risk_factor_findings_merge_into_one_per_risk_factor_keeping_the_heading(shared_data: Path) -> None:
    """A model may quote a risk factor's paragraph as well as its heading: one finding per risk factor stays,
    the heading's."""
    doc = nvidia(shared_data)
    index = DocumentIndex.build(doc)
    blocks = risk_factor_blocks(doc.text, doc.page_starts(), index.emphasis)
    assert [doc.text[a:b].split("\n")[0] for a, b in blocks] == [h for _, h in bold_headings(doc)]
    assert "ITEM 1B" in doc.text[blocks[-1][1] : blocks[-1][1] + 40]  # the last one ends at the next Item
    rules = [(c, f) for c, f in review_rules(doc) if f.clause_type is T.risk_factor]
    as_checked = [_risk(f.evidence, c.page_at(c.text.index(f.evidence))) for c, f in rules]
    assert merge_clause_findings(as_checked, index) == as_checked  # the rules' headings: each its own
    competition = "Competition in our current and target markets could cause us to lose market share and revenue."
    body = "Our target markets remain competitive, and competition may intensify"
    other = "Climate change may have a long-term impact on our business."
    page = next(p.number for p in doc.pages if competition in p.text and body in p.text)
    kept = merge_clause_findings([_risk(body, page), _risk(competition, page), _risk(other, page + 6)], index)
    assert [k.finding.evidence for k in kept] == [competition, other]
    assert "merged 2 findings of Risk Factor" in next(c for c in kept[0].checks if c.name == "merge").reason


def test_nvidia_10k_litigation_inside_a_risk_factor_is_no_legal_proceeding(shared_data: Path) -> None:
    doc = nvidia(shared_data)
    legal = [(c, f) for c, f in review_rules(doc) if f.clause_type is T.legal_proceedings]
    assert legal  # the litigation note still has its proceedings
    assert not [f.evidence for c, f in legal if (c.heading or "").startswith("Item 1A")]
    assert any("putative securities class action" in f.evidence for _, f in legal)


def test_emphasised_lines_are_headings_only_when_they_read_as_one() -> None:
    assert is_heading_sentence("Climate change may have a long-term impact on our business.")
    assert not is_heading_sentence("Risks Related to Our Industry and Markets")  # a group title
    assert not is_heading_sentence("ITEM 1A. RISK FACTORS")
    assert not is_heading_sentence("Risk Factors Summary.")
    assert not is_heading_sentence("x" * 480 + " the end. " + "Another sentence.")  # too long
    assert not is_heading_sentence("one. Two. Three. Four. Five sentences are a paragraph.")
    page = "Risk Factors\nDemand for our products may fall.\nOur sales depend on demand.\nOur supply may fail us."
    spans = [(m.start(), m.end()) for m in re.finditer(r"[^\n]+", page)]
    marked = [spans[0], spans[1], spans[3]]
    assert [page[a:b] for a, b in risk_heading_spans(page, marked)] == [
        "Demand for our products may fall.",
        "Our supply may fail us.",
    ]  # the plain one-sentence paragraph is no heading, nor the bold title
    assert [page[a:b] for a, b in risk_heading_spans(page, [])] == []  # marked, and nothing set in bold


def test_a_pdf_group_title_is_not_part_of_the_heading_under_it() -> None:
    page = (
        "adverse effect on our business and results of operations in any particular period of time ahead.\n"
        "Business and Operational Risks\n"
        "Failure to maintain our reputation and brand could negatively impact our business.\n"
        "Our brands have worldwide recognition, and our success depends on our ability to maintain them and\n"
        "to enhance them over time, which we do through marketing and product design across our markets.\n"
        "STRATEGIC AND COMPETITIVE RISKS\n"
        "We face intense competition across all markets for our products.\n"
        "Our competitors range in size from diversified global companies with significant research resources.\n"
    )
    assert [page[a:b] for a, b in risk_heading_spans(page)] == [
        "Failure to maintain our reputation and brand could negatively impact our business.",
        "We face intense competition across all markets for our products.",
    ]


def test_a_pdf_list_of_one_sentence_bullets_is_no_list_of_headings() -> None:
    """A summary of the risk factors (one sentence per bullet, bullets running on in the text layer) is not
    read as headings; a bulleted heading followed by its paragraph (3M's layout) is."""
    summary = (
        "Risks Related to Our Operations\n"
        "• Product liability, product recall or personal injury issues could damage our reputation. • We face significant\n"
        "competition in attracting and retaining talented employees.\n"
        "• We are exposed to risks relating to the solvency of other insurers.\n"
        "Risks Associated with Mergers\n"
    )
    assert risk_heading_spans(summary) == []
    page = (
        "* Change in the Company's credit ratings could increase cost of funding.The Company's credit ratings are\n"
        "important to its cost of capital. The major rating agencies routinely evaluate the Company's profile.\n"
    )
    assert [page[a:b] for a, b in risk_heading_spans(page)] == [
        "Change in the Company's credit ratings could increase cost of funding."
    ]


def _chunk(pages: list[str], heading: str) -> Chunk:
    text = "\n\n".join(pages)
    offsets = [sum(len(p) + 2 for p in pages[:k]) for k in range(1, len(pages))]
    return Chunk(
        document_sha256="x",
        index=0,
        char_start=0,
        char_end=len(text),
        page_start=8,
        page_end=8 + len(pages) - 1,
        text=text,
        heading=heading,
        page_offsets=offsets,
        profile="filing",
    )


def test_the_rules_read_item_1a_where_it_starts_and_ends_mid_page() -> None:
    """A chunk's section is that of the last Item heading on its first page: Item 1A starting below other
    text, or ending above Item 1B, bounds the headings read on that page."""
    body = "Our business is subject to many risks, and any of them could harm our results of operations in the\n"
    starts = (
        "the forward-looking statements in this report speak only as of the date they are made by the Company.\n"
        "Any forward-looking statement speaks only as of the date on which it is made.\n"
        "Item 1A. Risk Factors\n"
        "An investment in our securities involves the risks described below, any of which may harm us.\n"
        "We depend heavily on commercial airlines, subjecting us to unique risks.\n" + body + "future.\n"
    )
    ends = (
        body + "the future, as the Company discusses in this report and in its other reports filed.\n"
        "Our insurance coverage may be inadequate to cover all significant risk exposures.\n" + body + "future.\n"
        "Item 1B. Unresolved Staff Comments\n"
        "Not applicable to the Company in the period covered by this report and the prior periods.\n"
        "Other text that is not a risk factor at all and that the reader never takes for one.\n"
    )
    for page, heading, expected in [
        (starts, "Item 1A. Risk Factors", "We depend heavily on commercial airlines, subjecting us to unique risks."),
        (
            ends,
            "Item 1B. Unresolved Staff Comments",
            "Our insurance coverage may be inadequate to cover all significant risk exposures.",
        ),
    ]:
        found = FilingRules().review_chunk(_chunk([page], heading)).findings
        assert [f.evidence for f in found if f.clause_type is T.risk_factor] == [expected]


# --------------------------------------------------------------------------- legal proceedings

PDF_NOTE = (
    "NOTE 16. Commitments and Contingencies\n"
    "Respirator Mask/Asbestos Litigation\n"
    "As of December 31, 2018, the Company is a named defendant in numerous lawsuits alleging injury from\n"
    "respirator masks. The lawsuits seek damages. Many of the lawsuits were settled in 2018 and the verdict\n"
    "in the largest lawsuit was in the Company's favor.\n"
    "In November 2017, a putative class action was filed against the Company in the District of Alabama,\n"
    "alleging contamination of water. The complaint seeks damages for the residents of the county.\n"
)


def test_paragraphs_of_wrapped_and_of_paragraph_per_line_text() -> None:
    starts = paragraph_starts(PDF_NOTE, [0])
    texts = [PDF_NOTE[a:b] for a, b in zip(starts, [*starts[1:], len(PDF_NOTE)])]
    assert [t.split("\n")[0] for t in texts] == [
        "NOTE 16. Commitments and Contingencies",
        "In November 2017, a putative class action was filed against the Company in the District of Alabama,",
    ]  # headings and captions stay with the paragraph under them; a short line ending a sentence ends one
    html = (
        "Litigation\nSecurities Class Action\nThe first lawsuit was filed in 2018. " + "It is pending. " * 20 + "\n"
        "The second lawsuit was filed in 2019. " + "It was dismissed. " * 20 + "\nShort one.\nAnother short one.\n"
    )  # an HTML filing's text: a line per paragraph
    starts = paragraph_starts(html, [0])
    assert [html[s:].split("\n")[0][:20] for s in starts] == [
        "Litigation",
        "The second lawsuit w",
        "Short one.",
        "Another short one.",
    ]


def _checked(evidence: str, page: int, verdict: Verdict = Verdict.verified) -> CheckedFinding:
    finding = FilingFinding(
        clause_type=T.legal_proceedings, summary="A legal proceeding.", risk=Risk.medium, evidence=evidence, page=page
    )
    grounding = CheckResult(name="grounding", verdict=verdict, reason="found", page=page)
    return CheckedFinding(finding, 0, 0, page, verdict, [grounding])


def test_legal_proceedings_merge_into_one_finding_per_paragraph() -> None:
    page2 = "Item 3. Legal Proceedings\nWe are party to the lawsuit captioned Smith v. Company filed in 2019."
    text = PDF_NOTE + "\n\n" + page2
    doc = ExtractedDocument.model_validate(
        {
            "sha256": "0" * 64,
            "source": {"uri": "x", "name": "x.pdf", "local_path": "x", "size_bytes": 1},
            "pages": [{"number": 1, "text": PDF_NOTE}, {"number": 2, "text": page2}],
        }
    )
    assert doc.text == text
    index = DocumentIndex.build(doc)
    sentences = [
        "As of December 31, 2018, the Company is a named defendant in numerous lawsuits",
        "The lawsuits seek damages.",
        "Many of the lawsuits were settled in 2018",
        "In November 2017, a putative class action was filed against the Company",
        "The complaint seeks damages for the residents of the county.",
        "We are party to the lawsuit captioned Smith v. Company filed in 2019.",
    ]
    checked = [_checked(s, 2 if "Smith" in s else 1) for s in sentences]
    kept = merge_clause_findings(checked, index)
    assert [k.finding.evidence for k in kept] == [sentences[0], sentences[3], sentences[5]]
    note = next(c for c in kept[0].checks if c.name == "merge")
    assert note.reason.startswith("merged 3 findings of Legal Proceedings") and "paragraph on page 1" in note.reason


@pytest.mark.parametrize("verdict", [Verdict.needs_review, Verdict.unsupported])
def test_a_verified_sentence_of_a_proceeding_is_kept_over_an_earlier_unverified_one(verdict: Verdict) -> None:
    doc = ExtractedDocument.model_validate(
        {
            "sha256": "0" * 64,
            "source": {"uri": "x", "name": "x.pdf", "local_path": "x", "size_bytes": 1},
            "pages": [{"number": 1, "text": PDF_NOTE}],
        }
    )
    index = DocumentIndex.build(doc)
    first = _checked("The lawsuits seek damages.", 1, Verdict.needs_review)
    second = _checked("Many of the lawsuits were settled in 2018", 1)
    if verdict is Verdict.unsupported:  # a quote not found is a finding of its own
        first = _checked("The lawsuits seek no damages at all.", 1, verdict)
    kept = merge_clause_findings([first, second], index)
    assert [k.finding.evidence for k in kept] == (
        ["Many of the lawsuits were settled in 2018"]
        if verdict is Verdict.needs_review
        else ["The lawsuits seek no damages at all.", "Many of the lawsuits were settled in 2018"]
    )
