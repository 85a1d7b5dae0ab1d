"""Chunking: clause-aware cuts, page spans, offsets, overlap, page-crossing clauses kept whole."""

from __future__ import annotations

import re

import pytest

from schemas.documents import PAGE_SEPARATOR
from tasks.review.chunk import chunk_text


def build(pages: list[str]) -> tuple[str, list[int]]:
    starts, pos = [], 0
    for p in pages:
        starts.append(pos)
        pos += len(p) + len(PAGE_SEPARATOR)
    return PAGE_SEPARATOR.join(pages), starts


def sections(n: int, words: int = 60) -> str:
    body = " ".join(["The parties agree that the obligations continue."] * (words // 7))
    return "\n".join(f"{i}. SECTION {i} HEADING. {body}" for i in range(1, n + 1))


def test_offsets_page_spans_and_coverage():
    pages = [sections(6), sections(6), sections(6)]
    text, starts = build(pages)
    chunks = chunk_text("s", text, starts, budget=1200, overlap=200)
    assert len(chunks) > 3
    for c in chunks:
        assert c.text == text[c.char_start : c.char_end]
        assert len(c.text) <= 1200
        assert 1 <= c.page_start <= c.page_end <= 3
        for k, off in enumerate(c.page_offsets):
            assert c.char_start + off == starts[c.page_start + k]
    covered = set()
    for c in chunks:
        covered.update(range(c.char_start, c.char_end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
    # consecutive chunks overlap
    assert all(b.char_start < a.char_end for a, b in zip(chunks, chunks[1:]))


def test_cuts_prefer_section_headings():
    text, starts = build([sections(10)])
    chunks = chunk_text("s", text, starts, budget=1000, overlap=150)
    # every cut (but the last chunk's end) falls just before a numbered section heading
    for c in chunks[:-1]:
        assert re.match(r"\s*\d+\. SECTION", text[c.char_end :]), text[c.char_end : c.char_end + 30]
    assert chunks[1].heading and "SECTION" in chunks[1].heading


def test_clause_crossing_a_page_boundary_sits_whole_in_a_chunk():
    clause = (
        "7. LIMITATION OF LIABILITY. In no event shall either party's aggregate liability "
        "under this Agreement exceed the fees paid in the twelve (12) months before the claim, "
        "being no more than $1,500,000."
    )
    first, second = clause[:90], clause[90:]
    pages = [sections(8) + "\n" + first, second + "\n" + sections(8)]
    text, starts = build(pages)
    chunks = chunk_text("s", text, starts, budget=1500, overlap=400)
    joined = first + PAGE_SEPARATOR + second
    holders = [c for c in chunks if joined in c.text]
    assert holders, "the page-crossing clause must sit whole in some chunk"
    assert holders[0].page_start == 1 and holders[0].page_end == 2
    assert holders[0].page_at(holders[0].text.index(second)) == 2


def test_short_document_is_one_chunk():
    text, starts = build(["Short contract text."])
    [chunk] = chunk_text("s", text, starts)
    assert chunk.text == "Short contract text." and chunk.page_start == chunk.page_end == 1


def test_bad_budget_is_rejected():
    with pytest.raises(ValueError):
        chunk_text("s", "x", [0], budget=100, overlap=60)


def test_the_heading_path_of_an_offset_names_its_section_and_the_one_above():
    from tasks.review.chunk import heading_depth, heading_path, heading_title, section_headings

    text = (
        "MASTER SUPPLY AGREEMENT\n\n"
        "ARTICLE IX LIMITATION OF LIABILITY\n\n"
        "9.1 Exclusion of Damages. In no event shall either party be liable for consequential damages.\n\n"
        "9.2 Each party's total liability under this Agreement shall not exceed $1,000,000 in the aggregate.\n\n"
        "IN WITNESS WHEREOF\n\nThe parties have signed.\n"
    )
    heads = section_headings(text)
    assert [line[:12] for _, line in heads] == [
        "MASTER SUPPL",
        "ARTICLE IX L",
        "9.1 Exclusio",
        "9.2 Each par",
        "IN WITNESS W",
    ]
    assert heading_path(heads, text.index("In no event")) == "LIMITATION OF LIABILITY / Exclusion of Damages"
    # 9.2 has no title (its words run on as a sentence): the article's title alone
    assert heading_path(heads, text.index("Each party")) == "LIMITATION OF LIABILITY"
    assert heading_path(heads, 3) == "MASTER SUPPLY AGREEMENT" and heading_path(heads[1:], 3) == ""
    assert heading_title("IN WITNESS WHEREOF") == "IN WITNESS WHEREOF"  # no roman numeral "I"
    assert [heading_depth(h) for h in ("ARTICLE 9: INDEMNITY", "CONFIDENTIALITY", "12. Term", "Section 5.1 Foo")] == [
        0,
        0,
        1,
        2,
    ]
