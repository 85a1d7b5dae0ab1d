"""Tests for the decision-point router (:mod:`tasks.route`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfReader

from schemas.documents import Chunk
from tasks.chunk import chunk_text
from tasks.route import (
    covered_chars,
    decision_signals,
    resolve_mode,
    route_all,
    route_chunk,
    routing_rate,
)
from tasks.samples import generate_samples
from tasks.textnorm import clean_page_text


def chunk(text: str, index: int = 3, page: int = 2, start: int = 0) -> Chunk:
    return Chunk(document_sha256="0" * 64, index=index, char_start=start, char_end=start + len(text),
                 page_start=page, page_end=page, text=text)


BOILERPLATE = (
    "Headings. The headings in this Agreement are for convenience of reference only and shall not affect its "
    "interpretation. Counterparts. This Agreement may be executed in counterparts, each of which shall be deemed "
    "an original, and all of which together shall constitute one and the same instrument. Severability. If any "
    "provision of this Agreement is held invalid, the remaining provisions shall continue in full force."
)


@pytest.mark.parametrize("text, signal", [
    ("12. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
     "State of Delaware, without regard to its conflict of laws principles.", "clause:governing_law"),
    ("In no event shall either party's aggregate liability under this Agreement exceed $1,000,000.",
     "clause:cap_on_liability"),
    ("Distributor shall not, during the Term, market or sell any product that competes with the Products in "
     "the Territory.", "clause:non_compete"),
    ("Licensee shall pay Licensor a royalty equal to five percent (5%) of Net Sales of all Licensed Products.",
     "term:royalty"),
    ("Company hereby appoints Distributor as its exclusive distributor of the Products in the Territory.",
     "term:exclusivity"),
])
def test_decision_point_chunks_go_deep_with_reason(text, signal):
    decision = route_chunk(chunk(text))
    assert decision.route == "deep"
    assert signal in decision.signals
    assert signal in decision.reason


def test_boilerplate_is_skipped_with_reason():
    decision = route_chunk(chunk(BOILERPLATE))
    assert decision.route == "skip"
    assert decision.signals == []
    assert decision.reason == "no decision-point signal"


def test_first_chunk_is_the_preamble():
    decision = route_chunk(chunk(BOILERPLATE, index=0, page=1))
    assert decision.route == "deep" and decision.signals[0] == "preamble"


def test_threshold_signals_need_several_occurrences():
    once = "Neither party may assign this Agreement, which binds successors and assigns."
    assert "term:assignment" not in decision_signals(chunk(once))
    thrice = once + " Any assignment or transfer in breach of this section is void."
    assert "term:assignment" in decision_signals(chunk(thrice))


def test_route_all_modes_and_resolution():
    chunks = [chunk(BOILERPLATE, index=i, page=i + 2, start=i * 1000) for i in range(1, 3)]
    assert [d.route for d in route_all(chunks, "all")] == ["deep", "deep"]
    assert all(d.reason == "routing=all" for d in route_all(chunks, "all"))
    assert [d.route for d in route_all(chunks, "decision-points")] == ["skip", "skip"]
    with pytest.raises(ValueError):
        route_all(chunks, "auto")
    assert resolve_mode("auto", "rules") == "all"
    assert resolve_mode("auto", "anthropic") == "decision-points"
    assert resolve_mode("all", "anthropic") == "all"
    with pytest.raises(ValueError):
        resolve_mode("some", "rules")


def test_routing_rate_counts_overlap_once():
    # Two chunks overlapping by 50 chars over 0..250: the union is 250 characters, not 300.
    ranges = [(0, 150), (100, 250)]
    assert covered_chars(ranges) == 250
    assert routing_rate(ranges, [(0, 150)]) == pytest.approx(150 / 250)
    # Overlap cannot inflate the rate: two deep chunks covering the same text still count once.
    assert routing_rate(ranges + [(100, 150)], [(0, 150), (100, 150)]) == pytest.approx(150 / 250)
    assert routing_rate([], []) == 0.0
    assert covered_chars([(5, 5), (10, 20), (12, 15)]) == 10


@pytest.fixture(scope="module")
def sample_chunks(tmp_path_factory) -> list[list[Chunk]]:
    folder = tmp_path_factory.mktemp("samples")
    made = generate_samples(folder, count=4)
    docs = []
    for sample in made:
        reader = PdfReader(str(Path(folder) / sample.file_name))
        text = clean_page_text("\n\n".join(page.extract_text() or "" for page in reader.pages))
        docs.append(chunk_text("0" * 64, text, [0], 1500, 200))
    return docs


@pytest.mark.parametrize("phrase, signal", [
    ("due and payable within", "payment"),
    ("Confidential Information of the disclosing party", "confidentiality"),
    ("Personal Data", "data_protection"),
])
def test_payment_confidentiality_and_data_protection_go_deep(sample_chunks, phrase, signal):
    holding = [c for doc in sample_chunks for c in doc
               if phrase.lower() in " ".join(c.text.split()).lower()]
    assert holding, f"the generated samples hold no {phrase!r}"
    for c in holding:
        decision = route_chunk(c)
        assert decision.route == "deep"
        assert signal in decision.signals


def test_sample_router_skips_some_boilerplate(sample_chunks):
    # Generated contracts carry miscellaneous boilerplate: the router must not send everything.
    decisions = [route_chunk(c) for doc in sample_chunks for c in doc]
    assert any(d.route == "skip" for d in decisions)
    assert any(d.route == "deep" for d in decisions)
