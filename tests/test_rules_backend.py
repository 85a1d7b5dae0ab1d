"""Tests for the offline regex review backend (:mod:`tasks.review.backends.rules`)."""

from __future__ import annotations

import pytest

from schemas.documents import Chunk
from schemas.findings import Risk
from schemas.review import ChunkReview, ReviewOutcome
from schemas.taxonomy import ClauseType
from tasks.review.backends.base import ReviewBackend
from tasks.review.backends.rules import RULES_VERSION, RulesBackend, extract_durations, split_sentences

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
    assert be.model == RULES_VERSION == "rules-v8"
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
    text = (
        PREAMBLE
        + BODY.replace("laws of\nthe", "laws of\n the")
        + "Licensee may\nnot assign this Agreement without the prior written consent of Licensor.The parties agree."
    )
    rv = review(text)
    assert rv.findings
    for f in rv.findings:
        assert f.evidence in text
        assert len(f.evidence) <= 600
        for v in f.values:  # a party's name may run over a line break, which FindingValue reads as a space
            assert v.value in f.evidence or (v.name == "party" and v.value in " ".join(f.evidence.split()))
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


def test_a_period_after_a_month_before_its_day_and_year_ends_no_sentence():
    """An OCR speck read as a period ("December. 31, 1998", from a scanned CUAD contract) or an abbreviated
    month keeps the date in its sentence, so an expiration quote holds its date."""
    text = "This Agreement expires on December. 31, 1998. Thereafter it renews. Signed Dec. 5, 2001 by Acme. May 3 items follow."
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "This Agreement expires on December. 31, 1998.",
        "Thereafter it renews.",
        "Signed Dec. 5, 2001 by Acme.",
        "May 3 items follow.",
    ]
    quoted = review("The term of this Agreement shall expire on December. 31, 1998. Thereafter it renews.")
    (finding,) = by_type(quoted, ClauseType.expiration_date)
    assert finding.evidence == "The term of this Agreement shall expire on December. 31, 1998."


def test_extract_durations():
    assert extract_durations("for a term of five (5) years and 12 months") == ["five (5) years", "12 months"]


def test_empty_chunk():
    assert review("   \n  ").findings == []


def test_effective_date_is_the_one_the_preamble_defines_not_the_signing_date():
    from tasks.review.backends.rules import RulesBackend

    text = (
        'This Master Services Agreement (the "Agreement") is made on November 3, 2022 and is effective as of '
        'December 3, 2022 (the "Effective Date") by and between Lakeshore Foods LLC ("Provider") and '
        'Evergreen Biologics Co. ("Customer").'
    )
    chunk = Chunk(document_sha256="s", index=0, char_start=0, char_end=len(text), page_start=1, page_end=1, text=text)
    found = RulesBackend().review_chunk(chunk, "a.pdf").findings
    eff = [f for f in found if f.clause_type.value == "effective_date"]
    agr = [f for f in found if f.clause_type.value == "agreement_date"]
    assert eff and eff[0].values_dict()["date"] == "December 3, 2022"
    assert agr and agr[0].values_dict()["date"] == "November 3, 2022"


def test_amount_keeps_a_capitalised_multiplier():
    from tasks.review.backends.rules import extract_amounts

    assert extract_amounts("a cap of $175 Million in aggregate") == ["$175 Million"]
    assert extract_amounts("USD 1.5 million and $2,000") == ["USD 1.5 million", "$2,000"]


# --- patterns added with rules-v5: hand-written positives and near-miss negatives ---------------

#: (category, clause that should be found, near miss that should not). Sentences are written for
#: these tests from the CUAD category definitions, not taken from the CUAD contracts.
PATTERN_CASES = [
    (
        ClauseType.competitive_restriction_exception,
        "Nothing in this Section shall prevent Seller from holding, as a passive investment, shares of a publicly "
        "traded company that competes with Buyer.",
        "Except as set forth in Section 4, all payments are exclusive of sales and use taxes.",
    ),
    (
        ClauseType.covenant_not_to_sue,
        "Reseller shall never file any application to register the Supplier marks in any country.",
        "Any dispute regarding the validity or termination of this Agreement shall not be decided by a court "
        "and shall be settled by arbitration.",
    ),
    (
        ClauseType.covenant_not_to_sue,
        "The Licensee shall not, during the term or afterwards, attack or oppose in any manner the title of "
        "Licensor to the licensed trademarks.",
        "The Licensee shall notify Licensor of any challenge by a third party to the licensed trademarks.",
    ),
    (
        ClauseType.volume_restriction,
        "The Artist will make up to four (4) promotional appearances in each contract year.",
        "Supplier will remedy any defect within a period not to exceed thirty (30) days.",
    ),
    (
        ClauseType.price_restrictions,
        "Vendor's list prices are subject to increase only once per calendar year, on sixty days' notice.",
        "Vendor will publish its list prices on its website each calendar year.",
    ),
    (
        ClauseType.price_restrictions,
        "Distributor may not increase the rates charged to the Company by more than five percent (5%) in any year.",
        "Distributor will invoice the rates set out in Schedule B within five days of shipment.",
    ),
    (
        ClauseType.affiliate_license_licensor,
        "Parent hereby grants, and shall cause the other members of the Parent Group to grant, to Buyer a "
        "non-exclusive license under the Retained Patents.",
        "Parent hereby grants to Buyer a non-exclusive license under the Retained Patents.",
    ),
    (
        ClauseType.non_compete,
        "During the Term the Agent shall not sell or promote in the Territory any product that is competitive "
        "with the Products.",
        "The Agent shall promote the Products against competitive products in the Territory.",
    ),
    (
        ClauseType.termination_for_convenience,
        "The Customer may terminate this Agreement for any reason upon sixty (60) days' written notice to the Supplier.",
        "Sections 7 and 9 shall survive termination of this Agreement for any reason.",
    ),
    (
        ClauseType.termination_for_convenience,
        "Either party may at any time terminate this Agreement by giving not less than three (3) months' written "
        "notice to the other party.",
        "Either party may terminate this Agreement by giving thirty (30) days' written notice if a force majeure "
        "event continues for more than ninety days.",
    ),
    (
        ClauseType.joint_ip_ownership,
        "Inventions made jointly by employees of both parties shall be jointly owned by the parties.",
        "This Agreement has been drafted jointly by the parties and shall not be construed against either of them.",
    ),
    (
        ClauseType.non_disparagement,
        "Neither party shall make any public statement that disparages the other party or its products.",
        "The Licensee shall not use the licensed marks in any manner that disparages the Licensor.",
    ),
    (
        ClauseType.uncapped_liability,
        "Except for liability arising under Section 11 (Indemnity), in no event shall either party's liability "
        "exceed the fees paid in the prior twelve months.",
        "In no event shall either party's liability exceed the fees paid in the prior twelve months.",
    ),
    (
        ClauseType.minimum_commitment,
        "Buyer commits to purchase a minimum of 5,000 units in each contract year.",
        "The receiving party shall disclose only the minimum amount of Confidential Information required by law.",
    ),
    (
        ClauseType.expiration_date,
        "The term of this Agreement shall be three (3) years from the Effective Date.",
        "The obligations of confidentiality shall survive for three (3) years after the term of this Agreement.",
    ),
    (
        ClauseType.no_solicit_of_customers,
        "The Consultant shall not contact any customer of the Company for the purpose of offering competing services.",
        "The Consultant shall contact each customer of the Company listed in Exhibit B to schedule training.",
    ),
    (
        ClauseType.third_party_beneficiary,
        "The Indemnified Persons are intended third-party beneficiaries of Section 9.",
        "This Agreement is for the sole benefit of the parties and there are no third-party beneficiaries.",
    ),
    (
        ClauseType.renewal_term,
        "This Agreement will renew automatically for successive one-year terms.",
        "This Agreement may be extended upon the mutual written agreement of the parties.",
    ),
    (
        ClauseType.change_of_control,
        "Either party may terminate this Agreement upon notice if the other party undergoes a change of control.",
        "Either party may assign this Agreement to an acquirer of all or substantially all of its assets without "
        "the other party's consent.",
    ),
    (
        ClauseType.exclusivity,
        "The Company appoints the Distributor as its exclusive distributor of the Products in the Territory.",
        "This Agreement shall be governed exclusively by the laws of the State of Ohio.",
    ),
    (
        ClauseType.unlimited_all_you_can_eat_license,
        "Licensee may install the Software on an unlimited number of devices.",
        "The authorized capital of the Company consists of an unlimited number of common shares.",
    ),
    (
        ClauseType.effective_date,
        "This Amendment shall become effective on the date it is signed by both parties.",
        "Any notice shall be deemed effective upon receipt by the addressee.",
    ),
]


def test_renewal_term_is_not_the_notice_period_in_the_same_sentence():
    text = (
        "Thereafter this Agreement shall renew for successive two (2)-year terms unless either party gives "
        "written notice of non-renewal not less than ninety (90) days before the end of the then-current term."
    )
    rv = review(text, index=3, page_start=3)
    [ren] = by_type(rv, ClauseType.renewal_term)
    assert ren.values_dict()["duration"] == "successive two (2)-year"
    [notice] = by_type(rv, ClauseType.notice_period_to_terminate_renewal)
    assert notice.values_dict()["duration"] == "ninety (90) days"
    # the notice period comes first here; the renewal term must still be the renewal term
    text2 = (
        "Unless either party gives at least sixty (60) days' notice of non-renewal, this Agreement renews "
        "for additional one (1) year periods."
    )
    [ren2] = by_type(review(text2, index=3, page_start=3), ClauseType.renewal_term)
    assert ren2.values_dict()["duration"] == "additional one (1) year"


def test_a_rate_change_notice_gives_no_renewal_value():
    text = "Supplier will give at least thirty (30) days' prior notice of any rate change during any Renewal Term."
    found = by_type(review(text, index=3, page_start=3), ClauseType.renewal_term)
    assert found, "the sentence names a Renewal Term: the loop below must have a finding to check"
    for f in found:
        assert "duration" not in f.values_dict()  # thirty days is the rate-change notice, not a renewal length


def test_hyphenated_durations():
    assert extract_durations("for successive five (5)-year terms or a two-year term") == [
        "successive five (5)-year",
        "two-year",
    ]


def test_cover_page_parties_and_inline_title():
    text = (
        "Exhibit 10.4 EXECUTION COPY SUPPLY AGREEMENT\n\nbetween\n\nNORTHWIND TRADERS, INC.\n\nand\n\n"
        "CONTOSO LABS LTD\n\nDated as of June 2, 2021\n\nTABLE OF CONTENTS"
    )
    rv = review(text)
    [parties] = by_type(rv, ClauseType.parties)
    assert [v.value for v in parties.values] == ["NORTHWIND TRADERS, INC.", "CONTOSO LABS LTD"]
    assert parties.evidence in text
    [title] = by_type(rv, ClauseType.document_name)
    assert "SUPPLY AGREEMENT" in title.values_dict()["name"]
    inline = "Exhibit 99.1 JOINT MARKETING AGREEMENT The undersigned agree to market the products jointly."
    [t2] = by_type(review(inline), ClauseType.document_name)
    assert t2.values_dict()["name"] == "JOINT MARKETING AGREEMENT"


# --- patterns added with rules-v6: hand-written positives and near-miss negatives ---------------

#: (category, clause that should be found, near miss that should not). Invented for these tests
#: from the CUAD category definitions and common drafting; not taken from the CUAD contracts.
PATTERN_CASES_V6 = [
    (
        ClauseType.third_party_beneficiary,
        "The Parent shall be a third party beneficiary of Section 7, but shall not have any obligations hereunder.",
        "No person other than the parties shall be a third party beneficiary of this Agreement.",
    ),
    (
        ClauseType.third_party_beneficiary,
        "There are no third party beneficiaries of this Agreement, except as provided in Section 9 with respect "
        "to Indemnified Persons.",
        "There are no third party beneficiaries of this Agreement.",
    ),
    (
        ClauseType.rofr_rofo_rofn,
        "If Owner decides to license any new title, Owner shall give Distributor the first right of negotiation "
        "for such title.",
        "Each party shall have the first right to defend any claim brought against it.",
    ),
    (
        ClauseType.post_termination_services,
        "Upon termination of this Agreement, Supplier shall continue to provide transition services for a period "
        "of ninety (90) days.",
        "Upon termination of this Agreement, each party shall return or destroy the Confidential Information "
        "of the other party.",
    ),
    (
        ClauseType.termination_for_convenience,
        "This Agreement may be terminated by either party upon sixty (60) days' prior written notice.",
        "This Agreement may be terminated by either party upon thirty (30) days' written notice if the other "
        "party commits a material breach.",
    ),
    (
        ClauseType.warranty_duration,
        "Vendor shall provide a twelve-month limited warranty on all hardware supplied hereunder.",
        "Vendor makes no warranty as to the accuracy of any third party data.",
    ),
    (
        ClauseType.warranty_duration,
        "Buyer shall notify Seller of any defects or non-conformance within ten (10) days after receipt of the "
        "Products, failing which the Products shall be deemed accepted.",
        "Buyer shall pay each invoice within thirty (30) days after receipt of the Products.",
    ),
    (
        ClauseType.exclusivity,
        "Licensor hereby grants to Licensee an exclusive, worldwide, royalty-free license to the Software.",
        "Licensor hereby grants to Licensee a non- exclusive, worldwide, royalty-free license to the Software.",
    ),
    (
        ClauseType.exclusivity,
        "The Company hereby appoints Agent as its sole agent for the sale of the Products in the Territory.",
        "The Company may act in its sole discretion in approving any marketing materials.",
    ),
    (
        ClauseType.competitive_restriction_exception,
        "Licensor reserves the right to sell the Products directly to national accounts within the Territory.",
        "Licensor reserves the right not to sell on credit to any customer.",
    ),
    (
        ClauseType.renewal_term,
        "This Agreement shall automatically renew for a period of one (1) year at the end of the Initial Term.",
        "This Agreement may be renewed only by the mutual written agreement of the parties.",
    ),
    (
        ClauseType.notice_period_to_terminate_renewal,
        "Either party may terminate this Agreement at the expiration of the Initial Term or any renewal term "
        "upon sixty (60) days written notice.",
        "Either party may terminate this Agreement upon sixty (60) days written notice if the other party "
        "becomes insolvent.",
    ),
    (
        ClauseType.insurance,
        "Contractor shall maintain general liability insurance with limits of not less than $1,000,000 per occurrence.",
        "The Consultant shall obtain his own health insurance coverage and shall not be entitled to other employee "
        "benefits.",
    ),
    (
        ClauseType.uncapped_liability,
        "The limitations of liability in this Section 9 shall not apply to a party's indemnification "
        "obligations or its breach of confidentiality.",
        "Neither party shall be liable for any failure caused by forces beyond its reasonable control, and the "
        "limitations in this Section shall not apply to such delay.",
    ),
    (
        ClauseType.revenue_profit_sharing,
        "Distributor shall pay the Company ten percent (10%) of the net revenues from sales of the Products.",
        "The costs of shipping returned goods shall be split evenly between the parties.",
    ),
    (
        ClauseType.minimum_commitment,
        "The Sponsor shall feature the Company in its newsletter a minimum of four (4) times per year.",
        "Contractor shall maintain insurance coverage of a minimum of $1,000,000 per year.",
    ),
    (
        ClauseType.non_transferable_license,
        "Owner grants to Reseller a non-exclusive, non-transferable right to use the Marks in the Territory.",
        "Owner grants to Reseller the right to use the Marks in the Territory.",
    ),
    (
        ClauseType.effective_date,
        "This Agreement shall take effect on the date of signature by both parties.",
        "Any termination shall take effect on the date stated in the notice.",
    ),
    (
        ClauseType.non_compete,
        "Throughout the Term, Distributor shall not sell, offer for sale or promote any water filtration products "
        "other than the Products.",
        "Throughout the Term, Distributor shall not disclose the pricing of the Products to any third party.",
    ),
    (
        ClauseType.no_solicit_of_employees,
        "During the Term, neither party shall solicit for employment any employee of the other party.",
        "The indemnified party may employ separate counsel at its own expense, and no employee shall be "
        "required to testify.",
    ),
    (
        ClauseType.ip_ownership_assignment,
        "All inventions conceived by Consultant in performing the Services shall be the exclusive property of "
        "the Company.",
        "The Company shall remain the owner of all intellectual property it owned before the Effective Date.",
    ),
    (
        ClauseType.affiliate_license_licensee,
        "Licensee shall have the right to grant sublicenses under the license granted in Section 2 to any of "
        "its Affiliates.",
        "Licensee shall have the right to grant sublicenses under the license granted in Section 2 to distributors.",
    ),
    (
        ClauseType.affiliate_license_licensor,
        "Licensor, on behalf of itself and its Affiliates, hereby grants to Licensee a license to use the "
        "Licensed Mark.",
        "Licensee shall not acquire any license to any technology owned or controlled by Licensor or any of its "
        "Affiliates.",
    ),
    (
        ClauseType.non_disparagement,
        "Neither party shall make any public statement that disparages the other party or its products.",
        "Reseller shall not use the other party's Marks in any manner that is disparaging.",
    ),
    (
        ClauseType.unlimited_all_you_can_eat_license,
        "Customer may make an unlimited number of copies of the Documentation for internal use.",
        "Franchisee shall give the Company's auditors unlimited access to Franchisee's offices and records.",
    ),
    (
        ClauseType.covenant_not_to_sue,
        "Neither party shall directly or indirectly attack, challenge or impair the title of the other party "
        "in its trademarks.",
        "If any provision of this Agreement is held invalid or unenforceable, it shall not impair the validity "
        "of the remaining provisions or any registration of trademarks.",
    ),
]


@pytest.mark.parametrize(
    "category, positive, negative",
    PATTERN_CASES + PATTERN_CASES_V6,
    ids=[f"{c.value}-{i}" for i, (c, _, _) in enumerate(PATTERN_CASES + PATTERN_CASES_V6)],
)
def test_patterns_find_the_clause_and_skip_the_near_miss(category, positive, negative):
    """Hand-written clauses (rules-v5 and rules-v6 patterns): each is found, and its near miss is not."""
    found = by_type(review(positive, index=4, page_start=3), category)
    assert found, f"{category.value} not found in: {positive}"
    assert all(f.evidence in positive for f in found)
    assert by_type(review(negative, index=4, page_start=3), category) == []


def test_review_unit_seam_is_never_evidence():
    """A heading right before a review unit's "passage omitted" seam used to hand the seam itself to
    the finding as its quote; every quote must be text from one side of a seam."""
    from tasks.review.route import UNIT_SEPARATOR

    parts = [
        "7.5 Audits.",
        "Licensor may, upon thirty (30) days notice, audit such books and records once per year.",
        "Either party may terminate this Agreement for convenience upon ninety (90) days written notice.",
    ]
    text = UNIT_SEPARATOR.join(parts)
    unit = Chunk(
        document_sha256="0" * 64,
        index=3,
        char_start=5000,
        char_end=5000 + len(text),
        page_start=2,
        page_end=2,
        text=text,
    )
    findings = RulesBackend().review_chunk(unit, "x").findings
    assert {f.clause_type for f in findings} >= {ClauseType.audit_rights, ClauseType.termination_for_convenience}
    for f in findings:
        assert "omitted" not in f.evidence
        assert any(f.evidence in part for part in parts), f.evidence


def test_a_notice_period_reads_as_english_in_the_summary():
    from schemas.findings import FindingValue
    from schemas.taxonomy import ClauseType
    from tasks.review.backends.rules import summarize

    def said(period: str) -> str:
        return summarize(ClauseType.termination_for_convenience, [FindingValue(name="duration", value=period)])

    assert said("thirty (30) days") == "A party may terminate without cause on thirty (30) days' notice."
    assert said("one (1) month") == "A party may terminate without cause on one (1) month's notice."


def test_every_party_of_a_preamble_block_and_of_a_list() -> None:
    """A Canadian-style preamble block ("BETWEEN:" / a party with its description / "OF THE FIRST PART" /
    "- and -" / the other) names both parties, not the first one only; "by and among" lists every party."""
    block = (
        "COURIER SERVICES AGREEMENT\n\nTHIS AGREEMENT made as of the 1st day of January, 1999.\n\nBETWEEN:\n\n"
        "PUROLATOR COURIER LTD.,\na corporation incorporated under the laws of Canada\n"
        '(hereinafter called "Purolator")\n\nOF THE FIRST PART\n\n- and -\n\nNORTHERN FREIGHT SYSTEMS INC.,\n'
        'a corporation incorporated under the laws of Ontario\n(hereinafter called the "Customer")\n\n'
        "OF THE SECOND PART\n\nWHEREAS Purolator provides courier services.\n\n1. SERVICES\n"
    )
    [parties] = by_type(review(block), ClauseType.parties)
    assert [v.value for v in parties.values] == ["PUROLATOR COURIER LTD", "NORTHERN FREIGHT SYSTEMS INC"]
    assert all(v.value in parties.evidence for v in parties.values) and parties.evidence in block
    among = (
        "This Stockholders Agreement is entered into as of March 3, 2020 by and among Acme Holdings, Inc., a "
        'Delaware corporation (the "Company"), Blue River Capital LP ("Blue River") and Green Field Partners LLC '
        '("Green Field").\n1. Definitions.'
    )
    [parties] = by_type(review(among), ClauseType.parties)
    assert [v.value for v in parties.values] == [
        "Acme Holdings, Inc.",
        "Blue River Capital LP",
        "Green Field Partners LLC",
    ]
    wrapped = (  # a name broken before its entity suffix: its words as written, on one line
        "This Distribution Agreement is entered into as of May 13, 2024 by and between Vantage Media, Inc., a New "
        'York corporation ("Supplier"), and Orchard Retail Group\nLLC, an Ohio limited liability company '
        '("Distributor").'
    )
    [parties] = by_type(review(wrapped), ClauseType.parties)
    assert [v.value for v in parties.values] == ["Vantage Media, Inc.", "Orchard Retail Group LLC"]


@pytest.mark.parametrize(
    ("sentence", "whose", "summary"),
    [
        (
            "In no event shall either party's aggregate liability under this Agreement exceed $2,000,000.",
            "either party's",
            "Each party's liability is limited to $2,000,000.",
        ),
        (
            "Supplier's total liability under this Agreement shall not exceed $500,000.",
            "Supplier",
            "Supplier's liability is limited to $500,000; the clause limits no other party's.",
        ),
        (
            "In no event shall Licensor be liable for any amount in excess of $250,000.",
            "Licensor",
            "Licensor's liability is limited to $250,000; the clause limits no other party's.",
        ),
    ],
)
def test_a_cap_says_whose_liability_it_limits(sentence: str, whose: str, summary: str) -> None:
    [cap] = by_type(review("9. LIMITATION OF LIABILITY\n9.1 " + sentence), ClauseType.cap_on_liability)
    assert cap.values_dict()["liability_of"] == whose and cap.summary == summary


def test_the_key_terms_say_whose_liability_a_cap_limits() -> None:
    from tasks.observe.report import cap_terms

    def cap(fid: int, amount: str, whose: str) -> dict:
        checks = [{"name": n, "verdict": "verified", "reason": ""} for n in ("grounding", "support", "values")]
        values = {"amount": amount, "liability_of": whose}
        return {"id": fid, "clause_type": "cap_on_liability", "verdict": "verified", "values": values,
                "checks": checks, "locator": "page 4"}  # fmt: skip

    terms = cap_terms([cap(1, "$500,000", "Supplier"), cap(2, "$2,000,000", "either party's")])
    assert terms == ["$500,000 (page 4; Supplier's liability only)", "$2,000,000 (page 4; each party's liability)"]
