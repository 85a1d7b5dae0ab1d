"""Tests for the decision-point router (:mod:`tasks.review.route`): segments, signals, review units."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from pypdf import PdfReader

from docreview_testing.samples import generate_samples
from schemas.documents import PAGE_SEPARATOR, Chunk
from tasks.review.chunk import chunk_text
from tasks.review.route import (
    MODEL_FILE,
    OBLIGATION_SIGNALS,
    PREAMBLE_CHARS,
    TERM_SIGNALS,
    UNIT_SEPARATOR,
    ScorerBlock,
    ScorerModel,
    covered_chars,
    decision_signals,
    document_text,
    load_model,
    resolve_mode,
    review_unit,
    route_all,
    route_chunk,
    route_text,
    routing_rate,
    score_segments,
    segment_terms,
    segment_text,
)
from tasks.textnorm import clean_page_text

FAR = PREAMBLE_CHARS + 5000  # an offset past the preamble


def chunk(text: str, index: int = 3, page: int = 2, start: int = FAR) -> Chunk:
    return Chunk(
        document_sha256="0" * 64,
        index=index,
        char_start=start,
        char_end=start + len(text),
        page_start=page,
        page_end=page,
        text=text,
    )


BOILERPLATE = (
    "Headings. The headings in this Agreement are for convenience of reference only and shall not affect its "
    "interpretation. Counterparts. This Agreement may be executed in counterparts, each of which shall be deemed "
    "an original, and all of which together shall constitute one and the same instrument. Severability. If any "
    "provision of this Agreement is held invalid, the remaining provisions shall continue to apply."
)
GOVERNING_LAW = (
    "This Agreement shall be governed by and construed in accordance with the laws of the State of "
    "Delaware, without regard to its conflict of laws principles."
)


def test_segments_tile_the_text_and_cut_at_items_and_sentences():
    text = (
        "1. Definitions. Words have meanings.\n(a) First item of the list here.\n(b) Second item.\n\n"
        "2. Term. The term is one year. It renews once. " + "Filler sentence number one is here. " * 12
    )
    segs = segment_text(text, max_chars=0)
    assert segs[0][0] == 0 and segs[-1][1] == len(text)
    assert all(a < b for a, b in segs) and all(b == c for (_, b), (c, _) in zip(segs, segs[1:]))
    starts = [text[a:b].strip()[:4] for a, b in segs]
    assert "(a) " in starts and "(b) " in starts and "2. T" in starts  # items and headings start segments
    assert any(text[a:b].strip() == "It renews once." for a, b in segs)  # sentence level at max_chars=0
    merged = segment_text(text, max_chars=300)
    assert len(merged) < len(segs) and all(
        b - a <= 300 or text[a:b].count(". ") == 0 for a, b in merged if not text[a:b].startswith(("1.", "("))
    )
    assert segment_text("") == []
    assert segment_text("Inc. Co. v. Smith.") == [(0, 18)]  # abbreviations do not cut


@pytest.mark.parametrize(
    "sentence, signal",
    [
        (GOVERNING_LAW, "term:governing_law"),
        (
            "In no event shall either party's aggregate liability under this Agreement exceed $1,000,000.",
            "term:liability_limit",
        ),
        (
            "Distributor shall not, during the Term, market or sell any product that competes with the Products.",
            "term:non_compete",
        ),
        (
            "Licensee shall pay Licensor a royalty equal to five percent (5%) of Net Sales of Licensed Products.",
            "term:share_of_revenue",
        ),
        (
            "Company hereby appoints Distributor as its exclusive distributor of the Products in the Territory.",
            "term:exclusivity",
        ),
        ("Licensee may not assign this Agreement without the prior written consent of Licensor.", "term:assignment"),
        ("All invoices are due and payable within thirty (30) days of receipt.", "payment"),
        ("The Recipient shall hold the Discloser's Confidential Information in strict confidence.", "confidentiality"),
        ("The Processor shall process Personal Data only on documented instructions.", "data_protection"),
    ],
)
def test_a_decision_point_sentence_goes_deep_and_its_boilerplate_neighbours_do_not(sentence, signal):
    text = BOILERPLATE + "\n\n" + sentence + "\n\n" + BOILERPLATE
    c = chunk(text)
    [decision] = route_all([c], "decision-points", model=None)
    assert decision.route == "deep" and signal in decision.signals and signal in decision.reason
    [(a, b)] = decision.deep_ranges
    assert c.text[a - c.char_start : b - c.char_start] == sentence  # only the clause, not the chunk
    assert decision.deep_chars == len(sentence)


def test_boilerplate_is_skipped_with_reason():
    decision = route_chunk(chunk(BOILERPLATE), model=None)
    assert decision.route == "skip" and decision.signals == [] and decision.deep_ranges == []
    assert decision.reason == "no decision-point signal"
    assert decision_signals(chunk(BOILERPLATE), model=None) == []


def test_the_preamble_goes_deep():
    decision = route_chunk(chunk(BOILERPLATE, index=0, page=1, start=0), model=None)
    assert decision.route == "deep" and decision.signals[0] == "preamble"
    assert decision.deep_chars == len(BOILERPLATE)


def test_overlapping_chunks_send_each_deep_segment_once():
    sentences = [BOILERPLATE, GOVERNING_LAW, BOILERPLATE, "Neither party may assign this Agreement.", BOILERPLATE]
    text = " " * FAR + "\n\n".join(sentences)
    chunks = [
        c.model_copy(update={"index": c.index, "char_start": c.char_start})
        for c in chunk_text("0" * 64, text, [0], budget=900, overlap=400)
    ]
    assert any(a.char_end > b.char_start for a, b in zip(chunks, chunks[1:]))  # they do overlap
    decisions = route_all(chunks, "decision-points", model=None)
    deep = [r for d in decisions for r in d.deep_ranges]
    assert sum(b - a for a, b in deep) == covered_chars(deep)  # no character sent twice
    sent = sorted(text[a:b] for a, b in deep)
    assert sent == sorted([GOVERNING_LAW, "Neither party may assign this Agreement."])
    assert [d.route for d in decisions].count("deep") >= 1
    for d in decisions:
        assert (d.route == "deep") == bool(d.deep_ranges)


def test_review_unit_joins_runs_and_keeps_quotes_and_pages_right():
    page1 = BOILERPLATE + "\n\n" + GOVERNING_LAW + "\n\n" + BOILERPLATE
    page2 = "The Supplier shall maintain insurance of $2,000,000 per occurrence.\n\n" + BOILERPLATE
    text = " " * FAR + page1 + PAGE_SEPARATOR + page2
    p2 = FAR + len(page1) + len(PAGE_SEPARATOR)
    c = Chunk(
        document_sha256="0" * 64,
        index=4,
        char_start=FAR,
        char_end=len(text),
        page_start=1,
        page_end=2,
        text=text[FAR:],
        page_offsets=[p2 - FAR],
    )
    [decision] = route_all([c], "decision-points", model=None)
    unit = review_unit(c, decision)
    assert unit.index == c.index and (unit.char_start, unit.char_end) == (c.char_start, c.char_end)
    assert unit.text.split(UNIT_SEPARATOR) == [GOVERNING_LAW, page2.split("\n\n")[0]]
    assert unit.segments and all(text[a:b] in unit.text for a, b in unit.segments)
    # every piece between seams is verbatim document text; a quote across a seam is not
    for piece in unit.text.split(UNIT_SEPARATOR):
        assert piece in text
    assert (GOVERNING_LAW[-20:] + UNIT_SEPARATOR + "The Supplier") not in text
    # pages: the governing-law run is on page 1, the insurance run on page 2
    assert unit.page_start == 1 and unit.page_end == 2
    assert unit.page_at(unit.text.index("Delaware")) == 1
    assert unit.page_at(unit.text.index("insurance")) == 2
    # a skipped chunk, or a chunk routed whole, is its own unit
    assert review_unit(c, route_all([c], "all")[0]) is c
    skip = route_chunk(chunk(BOILERPLATE), model=None)
    assert review_unit(chunk(BOILERPLATE), skip).text == BOILERPLATE


def test_route_all_modes_and_resolution():
    chunks = [chunk(BOILERPLATE, index=i, page=i + 2, start=FAR + i * 1000) for i in range(1, 3)]
    everything = route_all(chunks, "all")
    assert [d.route for d in everything] == ["deep", "deep"]
    assert all(d.reason == "routing=all" for d in everything)
    assert everything[0].deep_ranges == [(chunks[0].char_start, chunks[0].char_end)]
    assert [d.route for d in route_all(chunks, "decision-points", model=None)] == ["skip", "skip"]
    assert route_all([], "decision-points") == []
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
    assert routing_rate(ranges + [(100, 150)], [(0, 150), (100, 150)]) == pytest.approx(150 / 250)
    assert routing_rate([], []) == 0.0
    assert covered_chars([(5, 5), (10, 20), (12, 15)]) == 10


def test_scorer_signal_uses_the_model_threshold():
    text = " " * FAR + BOILERPLATE
    block = ScorerBlock(terms={"counterparts": (1.0, 2.0), "executed": (1.0, 0.0)})
    # The segment holding "counterparts" (twice) and "executed" scores 2 * 1.69 / |(1.69, 1)| = 1.72;
    # with a weight of 2 on a unit-length vector no segment can reach 2.
    eager = ScorerModel(threshold=1.0, blocks={"word": block})
    strict = ScorerModel(threshold=2.0, blocks={"word": block})
    assert any("scorer" in s.signals for s in route_text(text, eager))
    assert not any(s.deep for s in route_text(text, strict))


def test_scorer_block_is_a_normalised_tfidf_dot_product():
    block = ScorerBlock(scale=0.5, terms={"pay": (2.0, 1.5), "fee": (1.0, -1.0)})
    # v = [(1 + ln 2) * 2, 1 * 1]; score = 0.5 * (v0 * 1.5 - v1) / |v|; unknown terms are ignored.
    v0, v1 = (1 + math.log(2)) * 2.0, 1.0
    expected = 0.5 * (v0 * 1.5 - v1) / math.hypot(v0, v1)
    assert block.score({"pay": 2, "fee": 1, "unknown": 7}) == pytest.approx(expected)
    assert block.score({"unknown": 3}) == 0.0


def test_segment_terms_blocks():
    text = "Licensee shall pay 5% royalties. Notices go by mail."
    segs = [(0, 33), (33, len(text))]
    first, second = segment_terms(text, segs)
    assert first["word"]["pay"] == 1 and first["word"]["shall pay"] == 1 and first["word"]["#"] == 1
    assert {" pa", "pay", "ay ", " pay", "pay ", " pay "} <= set(first["char"])
    assert first["prev"] == {} and set(first["next"]) == {"notices", "go", "by", "mail"}
    assert second["prev"]["royalties"] == 1 and second["next"] == {}


def test_fast_scorer_equals_the_per_segment_scores_to_the_last_bit():
    # score_segments (route_text's path) against ScorerModel.score over segment_terms, on a real contract,
    # odd text (digits, symbols, non-ASCII, long words, a segment past CHAR_GRAM_CHARS) and a tiny model.
    text = generate_samples_text() + " Ünïcode ſtraße İstanbul ÉTÉ 12% $5 " + "x" * 40 + " word" * 1500 + ". End."
    segments = segment_text(text)
    model = load_model()
    tiny = ScorerModel(
        threshold=0.0,
        bias=-0.25,
        blocks={
            "next": ScorerBlock(scale=0.5, terms={"pay": (2.0, 1.5), "the": (0.1, -1.0)}),
            "word": ScorerBlock(terms={"shall pay": (3.0, 1.0), "pay": (1.0, 0.5), "#": (0.5, 0.2)}),
            "other": ScorerBlock(terms={"x": (1.0, 1.0)}),
        },
    )
    for m in (model, tiny):
        expected = [m.score(t) for t in segment_terms(text, segments)]
        assert score_segments(m, text, segments).tolist() == expected
    assert score_segments(model, text, []).tolist() == []
    # a text holding the separator the fast tokeniser joins segments with is tokenised segment by segment
    odd = generate_samples_text() + " a\x00b \x00 pay\x00. Net 30 days."
    segments = segment_text(odd)
    assert score_segments(model, odd, segments).tolist() == [model.score(t) for t in segment_terms(odd, segments)]


def generate_samples_text() -> str:
    return BOILERPLATE + "\n\n" + GOVERNING_LAW + "\n\nLicensee shall pay a royalty of 5% of Net Sales within 30 days."


def test_signal_patterns_cannot_match_a_stop_character():
    # route_text scans the term vocabulary only around deep segments, starting just after a "." or ";":
    # exact only while no pattern can match one (the only constructs that could are removed here first).
    import re

    for pattern in [*TERM_SIGNALS.values(), *OBLIGATION_SIGNALS.values()]:
        rest = pattern.pattern.replace("[^.;]", "")
        assert not re.search(r"[.;$^]|\\[WSDB]|\[\^", rest), pattern.pattern


def test_fast_signal_scan_matches_a_case_insensitive_scan():
    from tasks.review.route import _TERM_LOWER, _signal_scan

    text = (
        "IN NO EVENT shall Licensee's AGGREGATE LIABILITY exceed; the Licensor MAY terminate for convenience. "
        "Subject to the GDPR, İnvoices are DUE WITHIN thirty days; ſole ſupplier, Kelvin \u212a. "
        "The assignee; assigned to it; renewal, netting, net 30, hired hire"
    )
    scan, terms, obligations = _signal_scan(text)
    assert terms is _TERM_LOWER and len(scan) == len(text)
    for fast, slow in ((terms, TERM_SIGNALS), (obligations, OBLIGATION_SIGNALS)):
        for name in slow:
            assert [m.span() for m in fast[name].finditer(scan)] == [m.span() for m in slow[name].finditer(text)], name


def test_scan_by_alternatives_finds_the_matches_of_the_whole_pattern():
    # _chain (the patterns' alternatives searched one by one) yields the starts finditer yields, including
    # where matches overlap and where one alternative's match hides another's start.
    from tasks.review.route import _ALTERNATIVES, _OBLIGATION_LOWER, _TERM_LOWER, _chain

    text = (
        generate_samples_text() + " terminate for convenience terminate without cause; days written notice "
        "warranty of 90 days warranty period 12 months; %% 5% percent royalty; net 30 net 3000 shall pay "
        "shall not disclose shall keep secret; co-own, jointly joint; assigned to it assign; the term of this "
        "term; hire hired; records recordsx; license to affiliates affiliate license"
    ).lower()
    patterns = [*_TERM_LOWER.values(), *_OBLIGATION_LOWER.values()]
    assert all(p in _ALTERNATIVES for p in patterns)
    for lo, before, hi in [(0, len(text), len(text)), (5, 200, 300), (0, 0, 10)]:
        for p in patterns:
            expected = [m.start() for m in p.finditer(text, lo, hi) if m.start() < before]
            assert list(_chain(text, p, _ALTERNATIVES[p], lo, before, hi)) == expected, p.pattern


def test_shipped_scorer_is_small_and_states_its_test_split_figures():
    assert MODEL_FILE.is_file()
    assert MODEL_FILE.stat().st_size < 800_000
    model = load_model()
    assert model is not None and set(model.blocks) == {"word", "char", "prev", "next"}
    assert all(block.terms for block in model.blocks.values())
    assert model.held_out["documents"] > 50 and 0 < model.held_out["rate"] < 1 and 0 < model.held_out["recall"] <= 1
    assert "training split" in model.trained_on  # trained without the frozen test split's contracts
    with gzip.open(MODEL_FILE, "rt") as fh:
        assert json.load(fh)["threshold"] == model.threshold


@pytest.fixture(scope="module")
def sample_docs(tmp_path_factory) -> list[tuple[str, list[Chunk]]]:
    folder = tmp_path_factory.mktemp("samples")
    made = generate_samples(folder, count=4)
    docs = []
    for sample in made:
        reader = PdfReader(str(Path(folder) / sample.file_name))
        text = clean_page_text("\n\n".join(page.extract_text() or "" for page in reader.pages))
        docs.append((text, chunk_text("0" * 64, text, [0], 1500, 200)))
    return docs


@pytest.mark.parametrize(
    "phrase, signal",
    [
        ("due and payable within", "payment"),
        ("Confidential Information of the disclosing party", "confidentiality"),
        ("shall process such Personal Data", "data_protection"),
        ("security incident affecting Personal Data", "data_protection"),
    ],
)
def test_payment_confidentiality_and_data_protection_go_deep(sample_docs, phrase, signal):
    found = 0
    for text, chunks in sample_docs:
        decisions = route_all(chunks, "decision-points")
        deep = [r for d in decisions for r in d.deep_ranges]
        flat = " ".join(text.split()).lower()
        if phrase.lower() not in flat:
            continue
        for c, d in zip(chunks, decisions):
            if phrase.lower() in " ".join(c.text.split()).lower():
                assert d.route == "deep" and signal in d.signals
        # the phrase's words themselves are in deep text
        words = phrase.split()
        pos = text.find(words[0])
        while pos >= 0:
            if " ".join(text[pos : pos + 3 * len(phrase)].split()).lower().startswith(phrase.lower()):
                found += 1
                assert any(a <= pos < b for a, b in deep), text[pos : pos + 80]
            pos = text.find(words[0], pos + 1)
    assert found, f"the generated samples hold no {phrase!r}"


def test_sample_router_skips_some_boilerplate(sample_docs):
    # Generated contracts carry miscellaneous boilerplate: the router must not send everything.
    for _text, chunks in sample_docs:
        decisions = route_all(chunks, "decision-points")
        deep = covered_chars(r for d in decisions for r in d.deep_ranges)
        total = covered_chars((c.char_start, c.char_end) for c in chunks)
        assert 0 < deep < total


def test_a_lower_router_threshold_sends_more_text_deep(sample_docs):
    from tasks.review.route import route_chunks

    for _text, chunks in sample_docs:
        rate = {
            t: covered_chars(r for d in route_chunks.fn(chunks, "decision-points", t) for r in d.deep_ranges)
            for t in (-8.0, None, 8.0)
        }
        assert rate[-8.0] >= rate[None] >= rate[8.0]
        assert covered_chars(r for d in route_chunks.fn(chunks, "decision-points") for r in d.deep_ranges) == rate[None]
    assert any(
        covered_chars(r for d in route_chunks.fn(c, "decision-points", -8.0) for r in d.deep_ranges)
        > covered_chars(r for d in route_chunks.fn(c, "decision-points", 8.0) for r in d.deep_ranges)
        for _, c in sample_docs
    )


@pytest.mark.integration
def test_flow_reviews_only_routed_segments_and_grounds_every_quote(tmp_path, db_url, prefect_harness):
    from sqlmodel import Session, select

    from flows.review import review_documents
    from schemas.tables import ChunkRow
    from tasks.store.persist import dispose_engines, get_engine

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    generate_samples(inbox, count=1)
    try:
        result = review_documents(
            source=str(inbox),
            out_dir=str(tmp_path / "out"),
            database_url=db_url,
            backend="rules",
            routing="decision-points",
        )
        with Session(get_engine(db_url)) as s:
            rows = s.exec(select(ChunkRow)).all()
    finally:
        dispose_engines()
    report = json.loads(Path(result["report_json"]).read_text())
    [doc] = report["documents"]
    assert doc["status"] == "reviewed" and doc["findings"]
    metrics = result["metrics"]
    assert metrics["chunks_total"] == len(rows) and 0 < metrics["chunks_deep"] <= len(rows)
    sent = [tuple(r) for row in rows if row.route == "deep" for r in json.loads(row.route_ranges)]
    total = covered_chars((r.char_start, r.char_end) for r in rows)
    assert metrics["routing_rate"] == pytest.approx(covered_chars(sent) / total, abs=1e-4)  # reported to 4 places
    assert 0 < metrics["routing_rate"] < 1
    assert all(json.loads(r.route_ranges) == [] for r in rows if r.route == "skip")
    # quotes come from the review units, yet every one is document text on its true page
    assert all(f["verdict"] != "unsupported" for f in doc["findings"])


def test_broken_scorer_file_is_a_clear_error_naming_it(tmp_path):
    truncated = tmp_path / "truncated.json.gz"
    truncated.write_bytes(MODEL_FILE.read_bytes()[:5000])
    not_gzip = tmp_path / "plain.json.gz"
    not_gzip.write_text('{"threshold": 1}')
    wrong_shape = tmp_path / "shape.json.gz"
    with gzip.open(wrong_shape, "wt") as fh:
        json.dump({"threshold": "high"}, fh)
    not_finite = tmp_path / "nan.json.gz"
    with gzip.open(not_finite, "wt") as fh:
        fh.write('{"threshold": NaN}')
    for file in (truncated, not_gzip, wrong_shape, not_finite):
        with pytest.raises(ValueError, match=str(file)):
            load_model(str(file))
    assert load_model(str(tmp_path / "absent.json.gz")) is None


def test_rebuilt_document_text_keeps_paragraph_breaks_between_chunks():
    # Two chunks that meet at a paragraph break the chunker skipped: the gap is rebuilt as line breaks,
    # so the segmenter cuts there as it does on the original text.
    first, second = "1. Term. This Agreement lasts two years.", "2. Payment. Invoices are due in 30 days."
    original = first + "\n\n" + second
    chunks = [chunk(first, index=0, start=0), chunk(second, index=1, start=len(first) + 2)]
    rebuilt = document_text(chunks)
    assert rebuilt == original
    assert segment_text(rebuilt) == segment_text(original)


def test_router_threshold_setting_must_be_finite(monkeypatch):
    from pydantic import ValidationError

    from schemas.settings import Settings

    for junk in ("nan", "inf", "-inf"):
        monkeypatch.setenv("DOCREVIEW_ROUTER_THRESHOLD", junk)
        with pytest.raises(ValidationError):
            Settings()
    monkeypatch.setenv("DOCREVIEW_ROUTER_THRESHOLD", "-3.4")
    assert Settings().router_threshold == -3.4


def test_trainer_category_recall_keeps_a_category_with_one_covered_span():
    """The trainer's per-document-category recall: a contract keeps a category when at least one of its
    labelled spans is wholly inside deep segments (the per-span notion of covered)."""
    from benchmarks.train_router import router_figures

    segs = {"a": [(0, 10), (10, 20), (20, 30), (30, 40)], "b": [(0, 20), (20, 40)]}
    docs = [
        {
            "filename": "a",
            "text": "x" * 40,
            "pieces": [
                ("audit_rights", [(2, 8)]),  # covered: segment 0 is deep
                ("audit_rights", [(22, 28)]),  # not covered: the category is still kept
                ("governing_law", [(8, 12)]),  # half in a skipped segment: not covered
                ("insurance", [(25, 28), (32, 38)]),  # second occurrence covered
            ],
        },
        {"filename": "b", "text": "y" * 40, "pieces": [("governing_law", [(5, 15)])]},
    ]
    flags = {"a": [True, False, False, True], "b": [False, True]}
    recall, rate, category_recall = router_figures(docs, flags, segs)
    assert recall == pytest.approx(2 / 5)
    assert rate == pytest.approx((10 + 10 + 20) / 80)
    assert category_recall == pytest.approx(2 / 4)  # a: audit, insurance kept, governing_law not; b: not kept
    assert router_figures(docs, flags, segs, rate_only=True) == (0.0, pytest.approx(0.5), 0.0)
