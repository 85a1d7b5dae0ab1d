"""Ingest: every failure kind ends as a failure with a reason; good files extract per page."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from schemas.documents import FailureKind, SourceObject
from schemas.settings import Limits
from tasks.ingest.extract import extract_document, run_extraction
from tasks.ingest.local import list_local_source, precheck
from tasks.ingest.sources import fingerprint_document

CONTRACT = "1. TERM. This Agreement has a term of five (5) years.\n2. GOVERNING LAW. Delaware law governs."


def obj(path: Path) -> SourceObject:
    return list_local_source(str(path))[0]


def ingest(path: Path, limits: Limits | None = None):
    limits = limits or Limits()
    fp = fingerprint_document.fn(obj(path), limits)
    if fp.failure:
        return fp
    return extract_document.fn(fp, limits)


def encrypt(src: Path, dst: Path, user: str, owner: str, algorithm: str = "AES-256") -> Path:
    writer = PdfWriter(clone_from=PdfReader(src))
    writer.encrypt(user_password=user, owner_password=owner, algorithm=algorithm)
    with open(dst, "wb") as fh:
        writer.write(fh)
    return dst


def test_good_pdf_extracts_per_page(tmp_path, pdf_maker):
    out = ingest(pdf_maker(tmp_path / "c.pdf", [CONTRACT, "Second page text.", ""]))
    assert out.ok and out.pages == 3
    pages = out.document.pages
    assert "five (5) years" in pages[0].text
    assert pages[2].quality.empty and not pages[0].quality.empty
    assert len(out.sha256) == 64


def test_empty_file(tmp_path):
    (tmp_path / "zero.pdf").write_bytes(b"")
    out = ingest(tmp_path / "zero.pdf")
    assert out.failure == FailureKind.empty_file and "0 bytes" in out.reason


def test_not_a_pdf(tmp_path):
    (tmp_path / "notes.pdf").write_text("just some text, not a PDF")
    out = ingest(tmp_path / "notes.pdf")
    assert out.failure == FailureKind.unsupported_kind
    assert "docreview reads PDF, DOCX, HTML (EDGAR filings) and TIFF/PNG/JPEG page images" in out.reason


def test_too_large(tmp_path, pdf_maker):
    path = pdf_maker(tmp_path / "c.pdf", [CONTRACT])
    out = ingest(path, Limits(max_file_bytes=100))
    assert out.failure == FailureKind.too_large and "limit" in out.reason


def test_too_many_pages(tmp_path, pdf_maker):
    path = pdf_maker(tmp_path / "c.pdf", [CONTRACT, CONTRACT, CONTRACT])
    out = ingest(path, Limits(max_pages=2))
    assert out.failure == FailureKind.too_many_pages


def test_corrupt_truncated_pdf(tmp_path, pdf_maker):
    good = pdf_maker(tmp_path / "good.pdf", [CONTRACT])
    data = good.read_bytes()
    (tmp_path / "broken.pdf").write_bytes(data[:40])
    out = ingest(tmp_path / "broken.pdf")
    assert out.failure == FailureKind.corrupt and out.reason.startswith("corrupt PDF")


def test_password_required(tmp_path, pdf_maker):
    good = pdf_maker(tmp_path / "good.pdf", [CONTRACT])
    locked = encrypt(good, tmp_path / "locked.pdf", user="s3cret", owner="owner-pw")
    out = ingest(locked)
    assert out.failure == FailureKind.password_required and "password" in out.reason


def test_permission_only_encryption_opens(tmp_path, pdf_maker):
    good = pdf_maker(tmp_path / "good.pdf", [CONTRACT])
    restricted = encrypt(good, tmp_path / "restricted.pdf", user="", owner="owner-pw")
    out = ingest(restricted)
    assert out.ok and out.document.encrypted
    assert "five (5) years" in out.document.pages[0].text


def test_image_only_document_has_no_text(tmp_path, pdf_maker):
    out = ingest(pdf_maker(tmp_path / "blank.pdf", ["", ""]))
    assert out.failure == FailureKind.no_text and "text on any of 2 page(s)" in out.reason


def _slow_pdf(path: Path, rows: int = 400) -> Path:
    """A valid PDF whose one page holds 1,000 x ``rows`` single-letter text operators set edge to
    edge: PDFium reads it quickly but its words are glued, so pypdf reads it again, slowly."""
    from docreview_testing.extraction import raw_pdf

    row = b"(a) Tj 0.556 0 Td " * 1000 + b"-556 -1.2 Td "
    return raw_pdf(path, [b"BT /F1 1 Tf 20 780 Td " + row * rows + b"ET"])


def test_hung_extraction_is_killed_at_the_wall_clock_limit(tmp_path):
    import time

    # 2,000 rows: read to the end, this file takes about a minute (400 rows took 11 s on a busy
    # 2-core machine); killed at the 1.5 s limit the call returns in a few seconds even when both
    # cores are saturated. The 30 s bound tells "killed" from "waited for" with a wide margin.
    path = _slow_pdf(tmp_path / "slow.pdf", rows=2000)
    started = time.monotonic()
    result = run_extraction(str(path), Limits(extraction_timeout_s=1.5))
    elapsed = time.monotonic() - started
    assert result["ok"] is False and result["kind"] == FailureKind.timeout.value
    assert elapsed < 30, "the child process must be killed, not waited for"


def test_memory_limit_is_enforced(tmp_path, pdf_maker):
    path = pdf_maker(tmp_path / "c.pdf", [CONTRACT])
    result = run_extraction(str(path), Limits(extraction_memory_mb=32))
    assert result["ok"] is False and result["kind"] == FailureKind.memory_limit.value


def test_a_limit_too_small_to_start_names_the_setting_not_the_document(tmp_path, pdf_maker):
    """At 1 MiB the loader cannot map Python's libraries: a memory-limit failure naming the
    setting, not a corrupt PDF."""
    path = pdf_maker(tmp_path / "d.pdf", [CONTRACT])
    result = run_extraction(str(path), Limits(extraction_memory_mb=1))
    assert result["ok"] is False and result["kind"] == FailureKind.memory_limit.value
    assert "DOCREVIEW_EXTRACTION_MEMORY_MB=1 MiB" in result["reason"]


def test_listing_keeps_non_pdfs_and_skips_hidden(tmp_path, pdf_maker):
    pdf_maker(tmp_path / "a.pdf", [CONTRACT])
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / ".hidden.pdf").write_text("x")
    (tmp_path / "sub").mkdir()
    pdf_maker(tmp_path / "sub" / "b.PDF", [CONTRACT])
    names = [o.name for o in list_local_source(str(tmp_path))]
    assert names == ["a.pdf", "notes.txt", "b.PDF"]


def test_dangling_links_and_fifos_are_listed_and_fail_with_a_reason(tmp_path, pdf_maker):
    import os

    pdf_maker(tmp_path / "a.pdf", [CONTRACT])
    (tmp_path / "dangling.pdf").symlink_to(tmp_path / "nowhere.pdf")
    os.mkfifo(tmp_path / "pipe.pdf")  # reading it would block for ever
    listed = {o.name: o for o in list_local_source(str(tmp_path))}
    assert sorted(listed) == ["a.pdf", "dangling.pdf", "pipe.pdf"]
    assert listed["dangling.pdf"].size_bytes == listed["pipe.pdf"].size_bytes == 0
    dangling = fingerprint_document.fn(listed["dangling.pdf"], Limits())
    assert dangling.failure == FailureKind.unreadable and "cannot read file" in dangling.reason
    pipe = fingerprint_document.fn(listed["pipe.pdf"], Limits())
    assert pipe.failure == FailureKind.unreadable and "not a regular file" in pipe.reason
    assert fingerprint_document.fn(listed["a.pdf"], Limits()).failure is None


def test_precheck_passes_a_pdf_with_leading_junk(tmp_path, pdf_maker):
    path = pdf_maker(tmp_path / "c.pdf", [CONTRACT])
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"\x00" * 100 + path.read_bytes())
    assert precheck(obj(junk), Limits()) is None


@pytest.mark.parametrize("missing", ["does-not-exist", "also/missing"])
def test_missing_source_raises(tmp_path, missing):
    from tasks.ingest.local import SourceError

    with pytest.raises(SourceError):
        list_local_source(str(tmp_path / missing))


def test_the_runs_own_outputs_are_not_listed(tmp_path, pdf_maker):
    from tasks.ingest.sources import list_source_objects

    pdf_maker(tmp_path / "a.pdf", [CONTRACT])
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text("{}")
    for name in ("docreview.db", "docreview.db-wal", "other.db"):
        (tmp_path / name).write_text("x")
    listed = list_source_objects.fn(str(tmp_path), exclude=[str(tmp_path / "out"), str(tmp_path / "docreview.db")])
    assert sorted(o.name for o in listed) == ["a.pdf", "other.db"]  # a stranger's file still fails visibly
    assert len(list_source_objects.fn(str(tmp_path))) == 5


def test_a_body_sentence_ending_every_page_is_not_a_running_footer(tmp_path):
    """The last body line of every page is the same governing-law sentence, printed in the body, not in
    the margin: repetition alone would strip it as a footer; its position keeps it. The running header
    (top margin) and the page numbers (bottom margin) still go."""
    from fpdf import FPDF

    sentence = "This Agreement shall be governed by the laws of the State of New York."
    pdf = FPDF(format="letter")
    pdf.set_auto_page_break(False)
    pdf.set_font("Helvetica", size=11)
    for n in range(1, 7):
        pdf.add_page()
        pdf.set_xy(25, 8)
        pdf.cell(0, 6, "ACME SUPPLY AGREEMENT - CONFIDENTIAL")
        pdf.set_xy(25, 40)
        pdf.multi_cell(160, 6, f"{n}. Section {n}. The Supplier shall deliver lot {n} of the Products on time.")
        pdf.set_xy(25, 60)
        pdf.multi_cell(160, 6, sentence)
        pdf.set_xy(100, 265)
        pdf.cell(0, 6, f"Page {n} of 6")
    path = tmp_path / "repeated.pdf"
    pdf.output(str(path))
    out = ingest(path)
    assert out.ok, out.reason
    for page in out.document.pages:
        assert sentence in page.text, page.text
        assert "CONFIDENTIAL" not in page.text and "of 6" not in page.text
        assert page.running == ["ACME SUPPLY AGREEMENT - CONFIDENTIAL", f"Page {page.number} of 6"]
