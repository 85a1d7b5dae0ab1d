"""Key terms read from a contract's whole text, each with its basis, and scored against lawyers' answers."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from tasks.check.key_terms import read_key_terms
from tasks.observe.deadlines import BusinessCalendar, document_deadlines
from tasks.observe.evaluate import gold_parties, in_split, key_term_outcome, load_cuad
from tasks.observe.report import read_terms

PREAMBLE = (
    'CO-BRANDING AGREEMENT\n\nThis Agreement (the "Agreement"), dated this 19th day of January, 2001 (the '
    '"Effective Date"), is by and between About.com, Inc. ("About"), a Delaware corporation, located at 1440 '
    'Broadway, New York, NY 10018 and ebix.com, Inc. ("ebix"), a Delaware corporation.\n\nWHEREAS, About owns '
    "a web site.\n\n"
)


def test_parties_keep_their_defined_names_and_lower_case_names():
    kt = read_key_terms(PREAMBLE)
    assert kt.values("parties") == ['About.com, Inc. ("About")', 'ebix.com, Inc. ("ebix")']
    assert kt.values("agreement_date") == ["2001-01-19"]
    assert kt.values("effective_date") == ["2001-01-19"]
    quote = kt.first("agreement_date")
    assert quote is not None and "19th day of January, 2001" in PREAMBLE[quote.start : quote.end]


def test_a_party_name_across_a_line_break_is_read_whole():
    text = (
        "This Supply Agreement is made as of March 3, 2020 by and between Orchard Retail Group\nLLC, a Texas "
        'limited liability company ("Orchard"), and Blue River\nHoldings, Inc., a Nevada corporation ("Blue").'
    )
    assert read_key_terms(text).values("parties") == [
        'Orchard Retail Group LLC ("Orchard")',
        'Blue River Holdings, Inc. ("Blue")',
    ]


def test_dates_the_text_layer_split_or_spelt_out_are_read_to_the_day():
    split = (
        'This Agreement is entered into as of the 26t h day of May, 2017 by and between A Corp. ("A") and B LLC ("B").'
    )
    assert read_key_terms(split).values("agreement_date") == ["2017-05-26"]
    spelt = (
        "This License Agreement is made on the first (1st) day of January, 1996, by and between Alpha Inc. "
        '("Alpha") and Beta Ltd. ("Beta").'
    )
    assert read_key_terms(spelt).values("agreement_date") == ["1996-01-01"]


def test_a_date_of_another_agreement_in_the_preamble_is_not_the_agreement_date():
    text = (
        "This Amendment is made pursuant to the Master Services Agreement, dated as of June 21, 2006, by and "
        'between Alpha Inc. ("Alpha") and Beta Ltd. ("Beta").'
    )
    assert read_key_terms(text).values("agreement_date") == []


def test_the_expiration_is_computed_from_the_effective_date_with_its_basis():
    text = PREAMBLE + (
        "1. Term. The term of this Agreement shall commence on the Effective Date and continue for four (4) "
        "years from the Effective Date, unless terminated earlier.\n"
    )
    kt = read_key_terms(text)
    term = kt.first("expiration_date")
    assert term is not None
    assert term.value == "2005-01-19"  # the anniversary: the lawyers' reading of "N years from"
    assert term.basis == "Effective Date 2001-01-19 + 4 years"
    assert "four (4)" in term.quote


def test_less_one_day_is_taken_when_the_contract_says_so():
    text = PREAMBLE + (
        "The term of this Agreement shall be one (1) year from the Effective Date, less one day, unless renewed.\n"
    )
    term = read_key_terms(text).first("expiration_date")
    assert term is not None and term.value == "2002-01-18" and term.basis.endswith("less one day")


def test_a_term_until_terminated_is_perpetual_and_an_event_term_has_no_date():
    until = (
        PREAMBLE + "The term of this Agreement shall commence on the Effective Date and continue until terminated.\n"
    )
    assert read_key_terms(until).values("expiration_date") == ["perpetual"]
    event = PREAMBLE + (
        "The term of this Agreement shall commence on the Effective Date and shall continue until the "
        "expiration of the last to expire patent within the Patent Rights.\n"
    )
    kt = read_key_terms(event)
    assert kt.values("expiration_date") == []
    assert "event" in kt.gaps["expiration_date"]


def test_renewal_and_the_notice_to_stop_it():
    text = PREAMBLE + (
        "The term of this Agreement shall be two (2) years from the Effective Date. This Agreement shall "
        "automatically renew for successive one (1) year periods unless either party gives written notice of "
        "non-renewal at least ninety (90) days prior to the end of the then-current term.\n"
        "This Agreement shall be governed by the laws of the State of New York, without regard to its conflicts "
        "of law rules.\n"
    )
    kt = read_key_terms(text)
    assert kt.values("expiration_date") == ["2003-01-19"]
    assert kt.values("renewal_term") == ["1 year"]
    assert kt.first("renewal_term").basis.startswith("automatic renewal")  # type: ignore[union-attr]
    assert kt.values("notice_period") == ["90 days"]
    assert kt.values("governing_law") == ["New York"]


def test_no_renewal_clause_gives_no_renewal_and_prc_law_is_named_in_full():
    text = PREAMBLE + "This Agreement shall be governed by and construed in accordance with the laws of the PRC.\n"
    kt = read_key_terms(text)
    assert kt.values("renewal_term") == [] and kt.values("notice_period") == []
    assert kt.values("governing_law") == ["People's Republic of China"]


def test_the_deadline_carries_the_readers_basis_and_no_deadline_rests_on_a_missing_date():
    text = PREAMBLE + (
        "The term of this Agreement shall be four (4) years from the Effective Date.\n"
        "This Agreement shall be governed by the laws of the State of Delaware.\n"
    )
    terms, basis, gaps = read_terms(text, [(0, len(text), 1)], {"Term": ["4 years"], "Payment amounts": ["$5"]})
    assert terms["Expiration date"] == ["2005-01-19"] and "Term" not in terms
    assert terms["Payment amounts"] == ["$5"]  # the finding-derived terms the reader does not give stay
    assert any(b["term"] == "Expiration date" and b["page"] == 1 for b in basis)  # the unit, located by the report
    doc = {"key_terms": terms, "key_term_basis": basis, "key_term_gaps": gaps, "findings": []}
    found, why = document_deadlines(doc, date(2003, 1, 1), BusinessCalendar(None))
    assert why is None
    expiration = next(d for d in found if d["kind"] == "expiration")
    assert expiration["date"] == "2005-01-19"
    assert "Effective Date 2001-01-19 + 4 years" in expiration["basis"]

    event = PREAMBLE + "The term of this Agreement shall continue for so long as any Product is sold.\n"
    terms, basis, gaps = read_terms(event, [(0, len(event), 1)], {"Term": ["5 years"]})
    found, why = document_deadlines(
        {"key_terms": terms, "key_term_basis": basis, "key_term_gaps": gaps, "findings": []},
        date(2003, 1, 1),
        BusinessCalendar(None),
    )
    assert found == [] and why is not None and "event" in why


@pytest.mark.parametrize(
    ("field", "answer", "shown", "outcome"),
    [
        ("agreement_date", "4/29/10", ["2010-04-29"], "right"),
        ("agreement_date", "[]/[]/2020", ["2020-03-01"], "right"),
        ("agreement_date", "4/29/10", ["2010-08-01"], "wrong"),
        ("agreement_date", "", ["2010-08-01"], "wrong"),
        ("agreement_date", "", [], "right"),
        ("agreement_date", "4/29/10", [], "missing"),
        ("expiration_date", "perpetual", ["perpetual"], "right"),
        ("expiration_date", "perpetual", ["2014-08-01"], "wrong"),
        ("renewal_term", "successive 1 year", ["12 months"], "right"),
        ("notice_period", "180 days / 6 months", ["6 months"], "right"),
        ("governing_law", "[* * *]", [], "right"),
        ("governing_law", "England, United Kingdom; Wales, United Kingdom", ["England"], "right"),
        (
            "parties",
            'Howmedica Ostenonics Corp. ("Stryker"); Conformis, Inc. ("Conformis"); Stryker and Conformis ("Parties")',
            ["Howmedica Osteonics Corp", 'Conformis, Inc. ("Conformis")'],
            "right",
        ),
        (
            "parties",
            'Beijing Baidu Netcom Science and Technology Co., Ltd. ("Baidu"); Acme Inc.',
            ["Technology Co., Ltd."],
            "wrong",
        ),
        ("parties", 'PJI Inc. ("PJI"); Client Corp. ("Client")', ["PJI are", "Client Corp."], "wrong"),
    ],
)
def test_key_term_outcome_against_a_lawyers_answer(field: str, answer: str, shown: list[str], outcome: str):
    assert key_term_outcome(field, answer, shown) == outcome


def test_collective_party_entries_are_not_parties():
    assert gold_parties(
        'SutroVax, Inc. ("SutroVax"); Sutro Biopharma, Inc. ("Sutro"); SutroVax and Sutro (each a "Party")'
    ) == [
        "SutroVax, Inc.",
        "Sutro Biopharma, Inc.",
    ]


def test_real_contracts_of_the_development_split_read_as_the_lawyers_answered(shared_data: Path):
    """Two train-split CUAD contracts, fields the reader gets right (a regression guard; the figures for the
    whole split are in docs/evaluation.md)."""
    from tasks.observe.evaluate import KEY_TERM_FIELDS

    root = shared_data / "cuad"
    wanted = {
        "IdeanomicsInc_20160330": ["parties", "agreement_date", "effective_date", "governing_law", "renewal_term"],
        "CENTRACK": ["parties", "agreement_date", "renewal_term", "notice_period"],
    }
    seen = 0
    for doc in load_cuad(root):
        fields = next((v for k, v in wanted.items() if doc.filename.startswith(k)), None)
        if fields is None:
            continue
        assert in_split(doc.filename, "train")
        seen += 1
        kt = read_key_terms((root / doc.txt_file).read_text(encoding="utf-8"))
        for field in fields:
            got = key_term_outcome(field, doc.answers[KEY_TERM_FIELDS[field]], kt.values(field))
            assert got == "right", (doc.filename, field, kt.values(field))
    assert seen == 2


def test_an_anniversary_term_and_a_survival_clause_that_is_not_the_term():
    text = PREAMBLE + (
        "5. Confidentiality. During the term of this Agreement and for three (3) years thereafter, each party "
        "shall keep the other's information confidential.\n"
        "6. Term. The term of this Agreement shall commence on the Effective Date and end on the fifth (5th) "
        "anniversary of the Effective Date.\n"
    )
    term = read_key_terms(text).first("expiration_date")
    assert term is not None and term.value == "2006-01-19" and term.basis == "Effective Date 2001-01-19 + 5 years"


def test_a_renewal_by_mutual_agreement_is_no_renewal_term_and_one_party_s_option_is():
    mutual = PREAMBLE + (
        "The term of this Agreement shall be two (2) years from the Effective Date. The term may be extended for "
        "an additional two year period with the written consent of both parties.\n"
    )
    assert read_key_terms(mutual).values("renewal_term") == []
    option = PREAMBLE + (
        "The term of this Agreement shall be two (2) years from the Effective Date. The Agreement may be renewed "
        "for an additional period of seven (7) years at the option of the Licensor.\n"
    )
    kt = read_key_terms(option)
    assert kt.values("renewal_term") == ["7 years"] and "option" in kt.first("renewal_term").basis  # type: ignore[union-attr]
    annual = PREAMBLE + (
        "The term of this Agreement shall be for one (1) year commencing on the Effective Date and automatically "
        "renewing annually thereafter, unless either party gives written notice of non-renewal thirty (30) days "
        "prior to the end of the term.\n"
    )
    kt = read_key_terms(annual)
    assert kt.values("renewal_term") == ["1 year"] and kt.values("notice_period") == ["30 days"]


def test_a_date_left_blank_gives_its_year_and_the_term_a_year_not_a_calendar_day():
    text = (
        'This License Agreement (the "Agreement") is made and entered into as of the [ ] day of [ ], 2020 (the '
        '"Effective Date"), by and between Alpha Inc. ("Alpha") and Beta LLC ("Beta").\n'
        "The term of this Agreement shall be five (5) years from the Effective Date.\n"
    )
    terms, basis, gaps = read_terms(text, [(0, len(text), 1)], {})
    assert terms["Effective date"] == ["2020"] and terms["Expiration date"] == ["2025"]
    assert any("left blank" in b["basis"] for b in basis if b["term"] == "Expiration date")
    doc = {"key_terms": terms, "key_term_basis": basis, "key_term_gaps": gaps, "findings": []}
    assert document_deadlines(doc, date(2021, 1, 1), BusinessCalendar(None))[0] == []  # no day to put in a calendar


def test_a_cover_page_before_a_table_of_contents_names_the_parties_and_the_date():
    text = (
        "INTELLECTUAL PROPERTY AGREEMENT BETWEEN EQUIFAX INC. AND CERTEGY INC. JUNE 30, 2001 TABLE OF CONTENTS "
        "ARTICLE I DEFINITIONS ........ 3 Section 1.1. Definitions ........ 3\n"
    )
    kt = read_key_terms(text)
    assert kt.values("parties") == ["EQUIFAX INC.", "CERTEGY INC."]
    assert kt.values("agreement_date") == ["2001-06-30"]


def test_a_values_page_is_the_latest_page_of_the_chunks_holding_it():
    """A chunk from page 4 to page 5 and the next one, overlapping it, from page 5: a value in the overlap is on
    page 5, not page 4 (a reseller agreement's governing law showed "page 4" for a clause on page 5)."""
    text = (
        'This Reseller Agreement is made by and between Alpha Inc. ("Alpha") and Beta LLC ("Beta").\n' * 3
        + "This Agreement shall be governed by the laws of the State of California.\n"
    )
    law = text.index("This Agreement shall be governed")
    spans = [(0, law + 40, 4, 5), (law - 20, len(text), 5, 5)]
    _, basis, _ = read_terms(text, spans, {})
    assert [b["page"] for b in basis if b["term"] == "Governing law"] == [5]
