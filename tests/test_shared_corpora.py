"""End to end on the shared data: the PDF robustness corpus and real CUAD contracts.

These read ``../shared/data`` in place and skip (with the reason) only where it is absent.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tasks.store.persist import dispose_engines
from tasks.textnorm import match_form

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

#: Total wall-clock bound for the robustness corpus (40 files), seconds. Generous: the bound is
#: there to prove nothing hangs, not to time the pipeline (benchmarks do that).
ROBUSTNESS_BOUND_S = 600
#: The robustness corpus's image-only files (scans, without a text layer).
IMAGE_ONLY = (
    "linn.pdf",
    "skew.pdf",
    "cardinal.pdf",
    "jbig2.pdf",
    "2400dpi.pdf",
    "c02-22.pdf",
    "imagemagick-CCITTFaxDecode.pdf",
    "imagemagick-images.pdf",
)
#: CUAD contracts reviewed in the regular test run (the full 340 run is documented in docs/evaluation.md).
CUAD_SAMPLE = int(os.environ.get("DOCREVIEW_TEST_CUAD_SAMPLE", "12"))


def review(source: Path, out: Path, db_url: str) -> dict:
    from flows.review import review_documents

    try:
        review_documents(source=str(source), out_dir=str(out), database_url=db_url, backend="rules")
    finally:
        dispose_engines()
    return json.loads((out / "report.json").read_text())


def test_every_robustness_file_ends_in_a_terminal_state(shared_data, tmp_path, db_url):
    corpus = shared_data / "pdf-robustness"
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    started = time.monotonic()
    report = review(corpus, tmp_path / "out", db_url)
    elapsed = time.monotonic() - started
    assert elapsed < ROBUSTNESS_BOUND_S
    docs = {Path(d["source"]).resolve(): d for d in report["documents"]}
    assert set(docs) == {p.resolve() for p in files}
    for path, doc in docs.items():
        assert doc["status"] in {"reviewed", "failed"}, path
        if doc["status"] == "failed":
            assert doc["reason"], path
    by_name = {p.name: d for p, d in docs.items()}
    assert by_name["invalid.pdf"]["failure_kind"] == "corrupt"
    assert by_name["libreoffice-writer-password.pdf"]["failure_kind"] == "password_required"
    assert by_name["r4-aes-user-password.pdf"]["failure_kind"] == "password_required"
    assert by_name["r6-owner-password.pdf"]["status"] == "reviewed"  # empty user password opens
    # Image-only files (scans) are OCR'd: each is reviewed, or fails with a stated reason (a page too big to
    # render, or an image with no recognisable text: imagemagick-CCITTFaxDecode.pdf is a picture)
    for name in IMAGE_ONLY:
        doc = by_name[name]
        assert doc["status"] == "reviewed" or (
            doc["failure_kind"] in {"resource_limit", "no_text"}
            and ("resource limit" in doc["reason"] or "OCR read" in doc["reason"])
        ), doc
    assert by_name["c02-22.pdf"]["status"] == "reviewed"  # it failed no_text before OCR
    assert by_name["linn.pdf"]["status"] == "reviewed" and by_name["linn.pdf"]["findings"]
    assert by_name["linn.txt"]["failure_kind"] == "unsupported_kind"
    assert by_name["hugemono.pdf"]["status"] in {"failed", "reviewed"}


def _cuad_sample(shared: Path, n: int) -> list[Path]:
    with open(shared / "cuad" / "manifest.csv", newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if int(r["pages"]) <= 40]
    rows.sort(key=lambda r: r["pdf_sha256"])  # a fixed, type-mixed sample
    return [shared / "cuad" / r["pdf_file"] for r in rows[:n]]


def test_real_contracts_are_reviewed_and_quotes_sit_on_their_page(shared_data, tmp_path, db_url):
    from pypdf import PdfReader

    inbox = tmp_path / "cuad"
    inbox.mkdir()
    sample = _cuad_sample(shared_data, CUAD_SAMPLE)
    for pdf in sample:
        (inbox / pdf.name).symlink_to(pdf)
    report = review(inbox, tmp_path / "out", db_url)
    docs = report["documents"]
    assert len(docs) == len(sample)
    assert all(d["status"] == "reviewed" for d in docs), [(d["file_name"], d["reason"]) for d in docs]
    assert sum(1 for d in docs if d["findings"]) >= 0.8 * len(docs)
    findings = [(d, f) for d in docs for f in d["findings"]]
    verified = [(d, f) for d, f in findings if f["verdict"] == "verified"]
    # Since the support check (issue 17) a quote that is only a heading, reads as another category or
    # negates the clause is needs_review: on CUAD about 45 % of the offline backend's findings stay
    # verified (docs/fact-check.md); quotes not found in the document stay rare.
    assert len(verified) >= 0.3 * len(findings)
    assert sum(f["verdict"] == "unsupported" for _, f in findings) <= 0.05 * len(findings)

    # Independent page check: the quote's opening words are on the page the report gives,
    # in pypdf's own text of that page (normalised), or the quote starts there and runs on.
    pages_cache: dict[str, list[str]] = {}
    on_page = 0
    for d, f in verified:
        if d["source"] not in pages_cache:
            reader = PdfReader(d["source"])
            pages_cache[d["source"]] = [match_form(p.extract_text() or "")[0] for p in reader.pages]
        head = match_form(f["evidence"])[0][:60]
        page_text = pages_cache[d["source"]][f["page"] - 1]
        if head in page_text or head.replace(" ", "") in page_text.replace(" ", ""):
            on_page += 1
    assert on_page >= 0.95 * len(verified)


def test_second_run_over_real_contracts_reviews_nothing(shared_data, tmp_path, db_url):
    inbox = tmp_path / "cuad"
    inbox.mkdir()
    for pdf in _cuad_sample(shared_data, 3):
        shutil.copy(pdf, inbox / pdf.name)
    review(inbox, tmp_path / "a", db_url)
    again = review(inbox, tmp_path / "b", db_url)
    m = again["run"]["metrics"]
    assert m["documents_skipped"] == m["documents_total"] == 3
