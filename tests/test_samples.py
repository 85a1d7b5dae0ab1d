"""Tests of docreview_testing.samples: deterministic sample contracts whose ground truth matches the PDFs."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from docreview_testing.samples import (
    MAX_PAGES,
    MIN_PAGES,
    SAMPLE_SEED,
    SampleContract,
    generate_samples,
    load_ground_truth,
    write_ground_truth,
)
from schemas.taxonomy import ClauseType

COUNT = 4


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[SampleContract]]:
    out = tmp_path_factory.mktemp("samples")
    return out, generate_samples(out, count=COUNT)


@pytest.fixture(scope="module")
def page_texts(generated) -> dict[str, list[str]]:
    out, samples = generated
    return {s.file_name: [_norm(p.extract_text()) for p in PdfReader(out / s.file_name).pages] for s in samples}


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.glob("*.pdf"))}


def test_deterministic_ground_truth_and_bytes(generated, tmp_path: Path) -> None:
    out, samples = generated
    again = generate_samples(tmp_path / "again", count=COUNT, seed=SAMPLE_SEED)
    assert [s.model_dump() for s in again] == [s.model_dump() for s in samples]
    assert _digests(tmp_path / "again") == _digests(out)


def test_other_seed_differs(generated, tmp_path: Path) -> None:
    _, samples = generated
    other = generate_samples(tmp_path, count=2, seed=SAMPLE_SEED + 1)
    assert [s.model_dump() for s in other] != [s.model_dump() for s in samples[:2]]


def test_files_and_page_counts(generated) -> None:
    out, samples = generated
    assert len(samples) == COUNT
    assert sorted(p.name for p in out.glob("*.pdf")) == sorted(s.file_name for s in samples)
    assert len({s.file_name for s in samples}) == COUNT
    for s in samples:
        reader = PdfReader(out / s.file_name)
        assert len(reader.pages) == s.pages
        assert MIN_PAGES <= s.pages <= MAX_PAGES


def test_variety(generated) -> None:
    _, samples = generated
    assert len({s.title for s in samples}) == 4
    assert len({tuple(s.parties) for s in samples}) == COUNT
    assert len({s.liability_cap for s in samples} | {s.governing_law for s in samples}) > 2


def test_footer_page_numbers(generated, page_texts) -> None:
    _, samples = generated
    for s in samples:
        for i, text in enumerate(page_texts[s.file_name], start=1):
            assert f"Page {i} of {s.pages}" in text


def test_text_is_latin1(generated) -> None:
    _, samples = generated
    for s in samples:
        for quote in s.clause_quotes.values():
            quote.encode("latin-1")
            assert "\u2014" not in quote and "\u201c" not in quote


def test_clause_ids_are_taxonomy_values(generated) -> None:
    _, samples = generated
    valid = {c.value for c in ClauseType}
    for s in samples:
        assert set(s.clauses) <= valid
        assert set(s.clauses) == set(s.clause_end_pages) == set(s.clause_quotes)
        for required in (
            "document_name",
            "parties",
            "agreement_date",
            "effective_date",
            "governing_law",
            "cap_on_liability",
            "renewal_term",
            "termination_for_convenience",
            "anti_assignment",
            "change_of_control",
            "audit_rights",
            "insurance",
            "third_party_beneficiary",
            "expiration_date",
        ):
            assert required in s.clauses, (s.file_name, required)


def _body(texts: list[str], s: SampleContract, page: int) -> str:
    """Text of 1-based ``page`` without its running header and "Page N of M" footer."""
    text = texts[page - 1]
    footer = f"Page {page} of {s.pages}"
    assert text.endswith(footer)
    text = text[: -len(footer)].strip()
    if page > 1:
        assert text.startswith(s.running_header)
        text = text[len(s.running_header) :].strip()
    return text


def _span(texts: list[str], s: SampleContract, clause: str) -> str:
    """Body text of the pages the clause's key sentence spans, joined across page breaks."""
    pages = range(s.clauses[clause], s.clause_end_pages[clause] + 1)
    return " ".join(_body(texts, s, p) for p in pages)


def test_values_appear_on_their_clause_pages(generated, page_texts) -> None:
    _, samples = generated
    for s in samples:
        texts = page_texts[s.file_name]
        checks = {
            "document_name": [s.title],
            "parties": s.parties,
            "agreement_date": [s.agreement_date],
            "effective_date": [s.effective_date],
            "governing_law": [f"laws of the State of {s.governing_law}"],
            "cap_on_liability": [s.liability_cap],
            "expiration_date": [s.term],
            "renewal_term": [s.renewal_term],
            "notice_period_to_terminate_renewal": [s.renewal_notice],
            "termination_for_convenience": [s.termination_notice],
        }
        for clause, values in checks.items():
            span = _span(texts, s, clause)
            for value in values:
                assert _norm(value) in span, (s.file_name, clause, value)
        assert s.payment_terms in " ".join(texts)
        assert len(s.payment_amounts) == len(s.payment_pages) >= 2
        for amount, page in zip(s.payment_amounts, s.payment_pages):
            assert amount in texts[page - 1], (s.file_name, amount, page)


def test_clause_sentences_start_and_end_on_recorded_pages(generated, page_texts) -> None:
    _, samples = generated
    for s in samples:
        texts = page_texts[s.file_name]
        for clause, start in s.clauses.items():
            quote = _norm(s.clause_quotes[clause])
            end = s.clause_end_pages[clause]
            words = quote.split()
            head, tail = " ".join(words[:6]), words[-1]
            assert start <= end <= start + 1
            assert head in texts[start - 1], (s.file_name, clause, start, head)
            assert tail in texts[end - 1], (s.file_name, clause, end, tail)
            # Without the page furniture the sentence reads through the page break.
            assert quote in _span(texts, s, clause), (s.file_name, clause)
            if start != end:
                assert quote not in texts[start - 1] and quote not in texts[end - 1]


def test_page_crossing_clause(generated, page_texts) -> None:
    _, samples = generated
    crossing = [s for s in samples if s.page_crossing_clause]
    assert any(s.page_crossing_clause == "cap_on_liability" for s in crossing)
    assert samples[0].page_crossing_clause == "cap_on_liability"
    for s in crossing:
        clause = s.page_crossing_clause
        start, end = s.clauses[clause], s.clause_end_pages[clause]
        assert end == start + 1
        words = _norm(s.clause_quotes[clause]).split()
        texts = page_texts[s.file_name]
        assert " ".join(words[:5]) in texts[start - 1]
        assert " ".join(words[:5]) not in texts[end - 1]
        assert words[-1] in texts[end - 1]
        assert _norm(s.clause_quotes[clause]) not in texts[start - 1]
    # The deliberate crossing puts the cap sentence's opening on the page's last body line,
    # so the cap amount itself is printed on the next page.
    s = samples[0]
    first, second = page_texts[s.file_name][s.clauses["cap_on_liability"] - 1 :][:2]
    opening = " ".join(_norm(s.clause_quotes["cap_on_liability"]).split()[:5])
    assert first.index(opening) > len(first) * 0.8
    assert s.liability_cap not in first and s.liability_cap in second


def test_ground_truth_json_roundtrip(generated, tmp_path: Path) -> None:
    _, samples = generated
    path = write_ground_truth(samples, tmp_path / "gt" / "ground_truth.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, list) and data[0]["file_name"] == samples[0].file_name
    assert load_ground_truth(path) == samples


def test_zero_count(tmp_path: Path) -> None:
    assert generate_samples(tmp_path / "none", count=0) == []
    assert (tmp_path / "none").is_dir()


def test_other_formats_are_a_scanned_page_and_a_word_draft_read_by_their_kind(generated, tmp_path):
    from docreview_testing.samples import generate_other_formats
    from schemas.documents import DocumentKind
    from schemas.settings import Limits
    from tasks.ingest.extract import run_extraction
    from tasks.ingest.kinds import detect_kind

    out, samples = generated
    folder = tmp_path / "inbox"
    folder.mkdir()
    for s in samples:
        (folder / s.file_name).write_bytes((out / s.file_name).read_bytes())
    scan, draft = generate_other_formats(folder, samples)
    assert (detect_kind(str(scan)), detect_kind(str(draft))) == (DocumentKind.image, DocumentKind.docx)
    again = tmp_path / "again"
    again.mkdir()
    for s in samples:
        (again / s.file_name).write_bytes((out / s.file_name).read_bytes())
    assert [p.read_bytes() for p in generate_other_formats(again, samples)] == [scan.read_bytes(), draft.read_bytes()]

    read = run_extraction(str(draft), Limits(), DocumentKind.docx)
    assert read["ok"], read
    text = "\n".join(p["text"] for p in read["pages"])
    assert "$5,000,000" in text and "$1,000,000." not in text.split("aggregate liability under this Agreement")[-1]
    cap = [c for c in read["changes"] if c["kind"] == "replacement"]
    assert cap and (cap[0]["before"], cap[0]["after"], cap[0]["author"]) == ("$1,000,000", "$5,000,000", "J. Smith")
    assert read["comments"] and read["comments"][0]["author"] == "A. Reviewer"
    sections = {p["locator"]["section"] for p in read["pages"]}
    assert any(s and s.startswith("1. DEFINITIONS") for s in sections)  # the sample's numbered headings
