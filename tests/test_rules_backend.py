"""Tests for the offline regex review backend (:mod:`tasks.backends.rules`)."""

from __future__ import annotations

import pytest

from schemas.documents import Chunk
from schemas.findings import Risk
from schemas.taxonomy import ClauseType
from tasks.backends.base import ChunkReview, ReviewBackend, ReviewOutcome
from tasks.backends.rules import RULES_VERSION, RulesBackend, extract_durations, split_sentences

PREAMBLE = (
    "MASTER SERVICES AGREEMENT\n\n"
    'This Master Services Agreement (the "Agreement") is entered into as of March 1, 2020 by and between '
    'Acme Widgets, Inc., a Delaware corporation ("Acme"), and Beta Services LLC, a New York limited '
    'liability company ("Beta").\n\n'
)

BODY = (
    "12. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of "
    "the State of Delaware, without regard to its conflict of laws principles.\n\n"
    "13. Limitation of Liability. In no event shall either party's aggregate liability under this Agreement "
    "exceed $1,000,000.\n\n"
    "14. Termination. Either party may terminate this Agreement for convenience upon ninety (90) days' "
    "prior written notice to the other party.\n\n"
)

BOILERPLATE = (
    "The headings in this Agreement are for convenience of reference only. This Agreement may be executed "
    "in counterparts, each of which shall be deemed an original."
)


def make_chunk(text: str, index: int = 0, page_start: int = 1, page_offsets: list[int] | None = None) -> Chunk:
    offsets = page_offsets or []
    return Chunk(
        document_sha256="0" * 64,
        index=index,
        char_start=0,
        char_end=len(text),
        page_start=page_start,
        page_end=page_start + len(offsets),
        text=text,
        page_offsets=offsets,
    )


def review(text: str, **kw) -> ChunkReview:
    return RulesBackend().review_chunk(make_chunk(text, **kw), "contract.pdf")


def by_type(rv: ChunkReview, ct: ClauseType):
    return [f for f in rv.findings if f.clause_type == ct]


def test_backend_identity_and_protocol():
    be = RulesBackend()
    assert isinstance(be, ReviewBackend)
    assert be.name == "rules"
    assert be.model == RULES_VERSION == "rules-v4"
    rv = be.review_chunk(make_chunk(BODY, index=3, page_start=4), "x.pdf")
    assert rv.calls == [] and rv.outcome == ReviewOutcome.ok and rv.chunk_index == 3


def test_governing_law_with_jurisdiction():
    rv = review(BODY, index=2, page_start=5)
    [gl] = by_type(rv, ClauseType.governing_law)
    assert gl.values_dict()["jurisdiction"] == "Delaware"
    assert gl.evidence.startswith("This Agreement shall be governed")
    assert "Delaware" in gl.summary
    assert gl.risk == Risk.low


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("This Agreement shall be governed by the laws of England and Wales.", "England and Wales"),
        ("This Agreement will be governed in all respects by the laws of the State of New York.", "New York"),
        ("This Agreement shall be construed in accordance with California law.", "California"),
    ],
)
def test_governing_law_variants(sentence: str, expected: str):
    [gl] = by_type(review(sentence, index=5, page_start=9), ClauseType.governing_law)
    assert gl.values_dict()["jurisdiction"] == expected


def test_cap_on_liability_amount():
    [cap] = by_type(review(BODY, index=2, page_start=5), ClauseType.cap_on_liability)
    assert cap.values_dict()["amount"] == "$1,000,000"
    assert cap.risk == Risk.high
    assert "$1,000,000" in cap.summary


def test_termination_for_convenience():
    [tfc] = by_type(review(BODY, index=2, page_start=5), ClauseType.termination_for_convenience)
    assert "for convenience" in tfc.evidence
    assert tfc.values_dict()["duration"] == "ninety (90) days"


def test_termination_for_breach_is_not_convenience():
    text = "Either party may terminate this Agreement upon thirty (30) days' written notice if the other party materially breaches this Agreement and fails to cure such breach."
    assert by_type(review(text, index=4, page_start=6), ClauseType.termination_for_convenience) == []


def test_parties_from_preamble():
    rv = review(PREAMBLE + BODY)
    [parties] = by_type(rv, ClauseType.parties)
    names = [v.value for v in parties.values if v.name == "party"]
    assert names == ["Acme Widgets, Inc.", "Beta Services LLC"]
    [title] = by_type(rv, ClauseType.document_name)
    assert title.values_dict()["name"] == "MASTER SERVICES AGREEMENT"


def test_document_level_only_in_first_chunk():
    rv = review(PREAMBLE, index=7, page_start=12)
    assert by_type(rv, ClauseType.parties) == []
    assert by_type(rv, ClauseType.document_name) == []


def test_agreement_date():
    [d] = by_type(review(PREAMBLE), ClauseType.agreement_date)
    assert d.values_dict()["date"] == "March 1, 2020"


def test_effective_date_ordinal_form():
    text = 'This Agreement shall be effective as of the 1st day of March, 2020 (the "Effective Date").'
    [d] = by_type(review(text, index=3, page_start=2), ClauseType.effective_date)
    assert d.values_dict()["date"] == "the 1st day of March, 2020"


def test_renewal_and_notice_durations():
    text = (
        "This Agreement shall automatically renew for successive one (1) year periods unless either party "
        "gives written notice of non-renewal at least sixty (60) days prior to the end of the then-current term."
    )
    rv = review(text, index=3, page_start=3)
    [ren] = by_type(rv, ClauseType.renewal_term)
    assert ren.values_dict()["duration"] == "successive one (1) year"
    [notice] = by_type(rv, ClauseType.notice_period_to_terminate_renewal)
    assert notice.values_dict()["duration"] == "sixty (60) days"


def test_evidence_and_values_are_verbatim_substrings():
    # odd spacing, a mid-sentence line break and a glued PDF artefact
    text = PREAMBLE + BODY.replace("laws of\nthe", "laws of\n the") + "Licensee may\nnot assign this Agreement without the prior written consent of Licensor.The parties agree."
    rv = review(text)
    assert rv.findings
    for f in rv.findings:
        assert f.evidence in text
        assert len(f.evidence) <= 600
        for v in f.values:
            assert v.value in f.evidence
    assert by_type(rv, ClauseType.anti_assignment)


def test_page_computed_across_page_boundary():
    page1 = "1. Services. Supplier shall provide the services described in Exhibit A to Customer.\n\n"
    page2 = "2. Law. This Agreement shall be governed by the laws of the State of New York."
    text = page1 + page2
    rv = review(text, index=1, page_start=3, page_offsets=[len(page1)])
    [gl] = by_type(rv, ClauseType.governing_law)
    assert gl.page == 4
    assert text.index(gl.evidence) >= len(page1)


def test_long_sentence_evidence_trimmed_at_word_boundaries():
    filler = "the Supplier shall deliver the goods described in the applicable purchase order " * 12
    text = f"Subject to the terms hereof, {filler}and this Agreement shall be governed by the laws of the State of Texas, {filler}."
    [gl] = by_type(review(text, index=2, page_start=2), ClauseType.governing_law)
    assert len(gl.evidence) <= 600
    assert gl.evidence in text
    assert "governed by the laws of the State of Texas" in gl.evidence
    assert not gl.evidence.startswith(" ") and not gl.evidence.endswith(" ")
    assert gl.values_dict()["jurisdiction"] == "Texas"


def test_boilerplate_yields_no_findings():
    rv = review(BOILERPLATE, index=6, page_start=8)
    assert rv.findings == []


def test_no_third_party_beneficiaries_is_not_a_finding():
    text = "Nothing in this Agreement is intended to confer any rights on any third party, and there are no third party beneficiaries of this Agreement."
    assert by_type(review(text, index=6, page_start=8), ClauseType.third_party_beneficiary) == []


def test_one_finding_per_category_and_sentence():
    text = "Licensee shall not assign or transfer this Agreement, and shall not assign any rights hereunder, without the prior written consent of Licensor."
    assert len(by_type(review(text, index=2, page_start=2), ClauseType.anti_assignment)) == 1


def test_split_sentences_handles_numbering_abbreviations_and_glue():
    text = "1. Term. Acme Inc. shall pay $5.00 per unit.The buyer agrees; and\n(b) it shall   comply.\n\n2.1 Notices. All notices shall be in writing."
    spans = split_sentences(text)
    parts = [text[a:b] for a, b in spans]
    assert "Acme Inc. shall pay $5.00 per unit." in parts
    assert any(p.startswith("The buyer agrees") for p in parts)
    assert all(text[a:b] == text[a:b].strip() and b > a for a, b in spans)


def test_extract_durations():
    assert extract_durations("for a term of five (5) years and 12 months") == ["five (5) years", "12 months"]


def test_empty_chunk():
    assert review("   \n  ").findings == []


def test_effective_date_is_the_one_the_preamble_defines_not_the_signing_date():
    from tasks.backends.rules import RulesBackend

    text = ('This Master Services Agreement (the "Agreement") is made on November 3, 2022 and is effective as of '
            'December 3, 2022 (the "Effective Date") by and between Lakeshore Foods LLC ("Provider") and '
            'Evergreen Biologics Co. ("Customer").')
    chunk = Chunk(document_sha256="s", index=0, char_start=0, char_end=len(text), page_start=1, page_end=1, text=text)
    found = RulesBackend().review_chunk(chunk, "a.pdf").findings
    eff = [f for f in found if f.clause_type.value == "effective_date"]
    agr = [f for f in found if f.clause_type.value == "agreement_date"]
    assert eff and eff[0].values_dict()["date"] == "December 3, 2022"
    assert agr and agr[0].values_dict()["date"] == "November 3, 2022"


def test_amount_keeps_a_capitalised_multiplier():
    from tasks.backends.rules import extract_amounts

    assert extract_amounts("a cap of $175 Million in aggregate") == ["$175 Million"]
    assert extract_amounts("USD 1.5 million and $2,000") == ["USD 1.5 million", "$2,000"]
