"""A contract's zones (tasks.check.zones): operative findings do not come from the title, preamble,
recitals or signature block; the parties, name and dates may."""

from __future__ import annotations

from pathlib import Path

from schemas.taxonomy import ClauseType
from tasks.check.index import DocumentIndex
from tasks.check.zones import drop_findings_outside_operative_zones, find_zones
from tests.test_merge import checked, make_doc

NC = ClauseType.non_compete

AMENDMENT = (
    "AMENDMENT NO. 2 TO THE NON-COMPETITION AND SUPPLY AGREEMENT\n\n"
    "This Amendment No. 2 is entered into as of March 1, 2020 by and between Acme Corp. and Beta LLC.\n\n"
    "WHEREAS, the parties entered into a Non-Competition and Supply Agreement dated January 5, 2018, under\n"
    "which Beta agreed not to compete with Acme in the Territory;\n\n"
    "NOW, THEREFORE, in consideration of the mutual covenants herein, the parties agree as follows:\n\n"
    "1. Non-Competition. During the Term, Beta shall not engage in any business that competes with Acme in\n"
    "the Territory.\n\n"
    "2. Governing Law. This Amendment is governed by the laws of the State of New York.\n\n"
    "3. Counterparts. This Amendment may be executed in counterparts.\n\n"
    + "4. Other terms. All other terms of the Agreement remain in full force and effect.\n\n"
    * 6,
    "IN WITNESS WHEREOF, the parties have executed this Amendment No. 2 to the Non-Competition and Supply\n"
    "Agreement as of the date first written above.\n\n"
    "ACME CORP. By: /s/ J. Smith Title: CEO\n\nBETA LLC By: /s/ K. Jones Title: President\n\n"
    "EXHIBIT A\n\nTerritory: Beta shall not compete with Acme in the States of Ohio and Indiana.",
)


def test_zones_of_an_amendment():
    index = DocumentIndex.build(make_doc(AMENDMENT))
    zones = find_zones(index.text)
    assert zones.front is not None and zones.signature is not None
    text = index.text
    assert text[zones.front[1] - len("agree as follows") : zones.front[1]] == "agree as follows"
    assert text[zones.signature[0] :].startswith("IN WITNESS WHEREOF")
    assert text[zones.signature[1] :].startswith("EXHIBIT A")  # the exhibit is operative again


def test_operative_findings_from_title_recitals_and_signature_are_dropped():
    index = DocumentIndex.build(make_doc(AMENDMENT))
    title = checked("AMENDMENT NO. 2 TO THE NON-COMPETITION AND SUPPLY AGREEMENT", 1, clause=NC)
    recital = checked("Beta agreed not to compete with Acme in the Territory", 1, clause=NC, ordinal=1)
    operative = checked("Beta shall not engage in any business that competes with Acme", 1, clause=NC, ordinal=2)
    witness = checked("executed this Amendment No. 2 to the Non-Competition and Supply", 2, clause=NC, ordinal=3)
    exhibit = checked("Beta shall not compete with Acme in the States of Ohio and Indiana", 2, clause=NC, ordinal=4)
    name = checked(
        "AMENDMENT NO. 2 TO THE NON-COMPETITION AND SUPPLY AGREEMENT", 1, clause=ClauseType.document_name, ordinal=5
    )
    parties = checked("by and between Acme Corp. and Beta LLC", 1, clause=ClauseType.parties, ordinal=6)
    kept, dropped = drop_findings_outside_operative_zones(
        [title, recital, operative, witness, exhibit, name, parties], index
    )
    assert dropped == 3
    assert kept == [operative, exhibit, name, parties]


def test_a_contract_without_landmarks_loses_nothing():
    plain = ("The supplier shall not sell competing products to any customer in the region. " * 40,)
    index = DocumentIndex.build(make_doc(plain))
    assert find_zones(index.text).front is None and find_zones(index.text).signature is None
    finding = checked("The supplier shall not sell competing products", 1, clause=NC)
    assert drop_findings_outside_operative_zones([finding], index) == ([finding], 0)


def test_a_late_first_section_is_no_front_zone():
    """'agree as follows' after 35 % of the text (a long recital-less contract quoting it later) is not
    the end of a preamble: nothing is dropped from the body before it."""
    body = "The supplier shall not sell competing products to any customer in the region.\n\n" * 30
    late = (body + "The parties agree as follows: 1. Term. One year.",)
    index = DocumentIndex.build(make_doc(late))
    assert find_zones(index.text).front is None


def test_lawyers_spans_of_operative_categories_rarely_lie_in_a_zone(shared_data: Path):
    """On the first 60 CUAD contracts' text, at most 1 % of the lawyers' operative-category spans lie
    wholly in a title/preamble/recitals or signature zone (the drop costs little recall)."""
    from tasks.check.zones import FRONT_MATTER_CATEGORIES
    from tasks.observe.evaluate import load_cuad

    spans = in_zone = 0
    for doc in load_cuad(shared_data / "cuad", limit=60):
        text = (shared_data / "cuad" / doc.txt_file).read_text(encoding="utf-8", errors="replace")
        zones = find_zones(text)
        for category, pieces in doc.spans.items():
            if category in FRONT_MATTER_CATEGORIES:
                continue
            for piece in (p.strip() for s in pieces for p in s.split("<omitted>")):
                at = text.find(piece) if len(piece) >= 20 else -1
                if at >= 0:
                    spans += 1
                    in_zone += zones.zone_at(at, at + len(piece)) is not None
    assert spans > 500
    assert in_zone <= 0.01 * spans, (in_zone, spans)
