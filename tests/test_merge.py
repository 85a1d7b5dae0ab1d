"""One finding per clause (tasks.check.merge)."""

from __future__ import annotations

from schemas.documents import ExtractedDocument, PageText, SourceObject
from schemas.findings import CheckedFinding, CheckResult, Finding, Risk, Verdict
from schemas.taxonomy import ClauseType
from tasks.check.index import DocumentIndex
from tasks.check.merge import MERGE_CHECK, merge_clause_findings, support_score

CAP = ClauseType.cap_on_liability
LAW = ClauseType.governing_law

NUMBERED = (
    "1. Definitions. Words have meanings.\n\n"
    "12.3 Limitation of Liability. In no event shall either party's aggregate liability arising out of\n"
    "this Agreement",
    "exceed the fees paid in the twelve months before the claim.\n\n"
    "12.4 Governing Law. This Agreement is governed by the laws of the State of Delaware.\n\n"
    "12.5 Limitation of Liability. In no event shall either party's aggregate liability arising out of\n"
    "this Agreement exceed ten dollars.",
)

PLAIN = (
    "The parties agree as follows.\n\n"
    "Neither party's total liability shall exceed the fees paid.\nThis cap applies to all claims.\n\n"
    "Any liability for fraud is not limited.",
)


def make_doc(pages: tuple[str, ...]) -> ExtractedDocument:
    src = SourceObject(uri="x.pdf", name="x.pdf", local_path="/x.pdf", size_bytes=1)
    return ExtractedDocument(
        sha256="f" * 64, source=src, pages=[PageText(number=i + 1, text=t) for i, t in enumerate(pages)]
    )


def checked(
    evidence: str,
    page: int,
    verdict: Verdict = Verdict.verified,
    score: float | None = None,
    clause: ClauseType = CAP,
    ordinal: int = 0,
) -> CheckedFinding:
    finding = Finding(clause_type=clause, summary="s", risk=Risk.high, evidence=evidence, page=page)
    checks = [
        CheckResult(name="grounding", verdict=Verdict.verified, reason=f"found on page {page}", page=page),
        CheckResult(name="support", verdict=verdict, reason=f"quote reads as X (support {score or 0:.2f})"),
    ]
    return CheckedFinding(finding, 0, ordinal, page, verdict, checks)


def merges(cf: CheckedFinding) -> list[str]:
    return [c.reason for c in cf.checks if c.name == MERGE_CHECK]


def test_fragments_across_a_page_break_merge_into_the_strongest():
    index = DocumentIndex.build(make_doc(NUMBERED))
    head = checked("In no event shall either party's aggregate liability", 1, Verdict.needs_review, 0.4)
    tail = checked("exceed the fees paid in the twelve months", 2, Verdict.verified, 0.2, ordinal=1)
    law = checked("governed by the laws of the State of Delaware", 2, clause=LAW, ordinal=2)
    out = merge_clause_findings([head, tail, law], index)
    assert [cf.finding.evidence for cf in out] == [tail.finding.evidence, law.finding.evidence]
    assert merges(out[0]) == ["merged 2 findings of Cap On Liability in § 12.3; set aside: 1 needs_review"]
    assert out[0].verdict is Verdict.verified and out[0].checks[:2] == tail.checks
    assert merges(out[1]) == [] and out[1] is law


def test_strongest_by_score_then_longest_quote():
    index = DocumentIndex.build(make_doc(NUMBERED))
    short = checked("aggregate liability", 1, score=0.5)
    low = checked("In no event shall either party's aggregate liability arising out of", 1, score=0.3, ordinal=1)
    longer = checked("In no event shall either party's aggregate liability", 1, score=0.5, ordinal=2)
    out = merge_clause_findings([short, low, longer], index)
    assert len(out) == 1 and out[0].finding.evidence == longer.finding.evidence
    assert merges(out[0]) == ["merged 3 findings of Cap On Liability in § 12.3"]


def test_sections_and_categories_stay_apart():
    index = DocumentIndex.build(make_doc(NUMBERED))
    first = checked("exceed the fees paid", 2)
    other = checked("exceed ten dollars", 2, ordinal=1)
    law = checked("exceed the fees paid", 2, clause=LAW, ordinal=2)
    out = merge_clause_findings([first, other, law], index)
    assert out == [first, other, law]


def test_identical_passage_repeated_across_the_document_is_one_finding():
    index = DocumentIndex.build(make_doc(NUMBERED))
    quote = "In no event shall either party's aggregate liability arising out of this Agreement"
    first = checked(quote, 1, Verdict.needs_review)
    again = checked(quote.upper().replace(" ", "  "), 2, ordinal=1)  # same normalised quote, in § 12.5
    out = merge_clause_findings([first, again], index)
    assert len(out) == 1 and out[0].finding is first.finding
    assert merges(out[0]) == ["merged 2 findings of Cap On Liability; the same passage also on page 2"]


def test_the_same_quote_from_overlapping_chunks():
    index = DocumentIndex.build(make_doc(NUMBERED))
    a, b = checked("exceed ten dollars", 2), checked("exceed ten dollars", 2, ordinal=1)
    out = merge_clause_findings([a, b], index)
    assert merges(out[0]) == ["merged 2 findings of Cap On Liability: the same passage quoted more than once"]


def test_without_numbered_headings_the_paragraph_is_the_clause():
    index = DocumentIndex.build(make_doc(PLAIN))
    assert index.heading_offsets == []
    a = checked("total liability shall exceed the fees paid", 1, score=0.6)
    b = checked("This cap applies to all claims.", 1, score=0.2, ordinal=1)
    c = checked("Any liability for fraud is not limited.", 1, ordinal=2)
    out = merge_clause_findings([a, b, c], index)
    assert [cf.finding.evidence for cf in out] == [a.finding.evidence, c.finding.evidence]
    assert merges(out[0]) == ["merged 2 findings of Cap On Liability in the paragraph on page 1"]


def test_a_paragraph_runs_on_over_a_page_break():
    index = DocumentIndex.build(make_doc(("Neither party's total liability shall", "exceed the fees paid.")))
    out = merge_clause_findings([checked("total liability shall", 1), checked("exceed the fees", 2, ordinal=1)], index)
    assert len(out) == 1


def test_unfound_quotes_are_kept_and_input_is_not_modified():
    index = DocumentIndex.build(make_doc(NUMBERED))
    a, b = checked("words that are nowhere", 1), checked("other words that are nowhere", 1, ordinal=1)
    for cf in (a, b):
        cf.checks[0] = CheckResult(name="grounding", verdict=Verdict.unsupported, reason="quote not found")
    before = [list(cf.checks) for cf in (a, b)]
    assert merge_clause_findings([a, b], index) == [a, b]
    assert [cf.checks for cf in (a, b)] == before
    assert merge_clause_findings([], index) == []


def test_support_score_from_field_or_reason():
    cf = checked("x", 1, score=0.43)
    assert support_score(cf) == 0.43
    cf.checks[1] = cf.checks[1].model_copy(update={"score": 0.9})
    assert support_score(cf) == 0.9


def test_a_filings_key_figures_in_one_statement_stay_distinct():
    """Two key figures of one statement share a paragraph but are different figures: never merged."""
    from schemas.filings import FilingFinding, FilingTopic

    statement = (
        "CONSOLIDATED STATEMENT OF CASH FLOWS\nPurchases of PP&E (1,577) (1,373)\nDividends paid (3,193) (2,803)",
    )
    index = DocumentIndex.build(make_doc(statement))

    def figure(line: str, ordinal: int) -> CheckedFinding:
        finding = FilingFinding(clause_type=FilingTopic.key_figure, summary="s", risk=Risk.low, evidence=line, page=1)
        checks = [CheckResult(name="grounding", verdict=Verdict.verified, reason="found on page 1", page=1)]
        return CheckedFinding(finding, 0, ordinal, 1, Verdict.verified, checks)

    capex, dividends = figure("Purchases of PP&E (1,577) (1,373)", 0), figure("Dividends paid (3,193) (2,803)", 1)
    assert merge_clause_findings([capex, dividends], index) == [capex, dividends]
