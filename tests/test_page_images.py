"""Pages that the text layer and OCR cannot read: without Tesseract (hidden from ``PATH``, never
uninstalled), a scanned contract fails offline with a reason naming Tesseract and its apt command, and
with the anthropic backend its pages go to the model as one-page PDFs and are reviewed with page
locators, tokens and cost recorded per page. The test double reads no image: the test tells it what each
page shows (``StubLLM.transcripts``), so these tests check the path and its records, not Claude's reading."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

from docreview_testing.scans import scan_pages, write_scan_pdf, write_scan_png
from schemas.documents import TESSERACT_MISSING, DocumentKind, FailureKind, IngestOutcome, SourceObject
from schemas.settings import Limits
from tasks.review.pages import (
    MAX_IMAGE_BYTES,
    MAX_PDF_BYTES,
    MAX_REQUEST_BYTES,
    PageTooLarge,
    image_page_block,
    pages_to_read,
    pdf_page_block,
    with_pages_read,
)

CONTRACT = "ADUROBIOTECH,INC_06_02_2020-EX-10.7-CONSULTING AGREEMENT.PDF"


@pytest.fixture
def no_tesseract(monkeypatch, tmp_path):
    """``tesseract`` off ``PATH`` for this test (the program stays installed)."""
    empty = tmp_path / "bin-without-tesseract"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}{os.pathsep}{Path(sys.executable).parent}")
    from tasks.ingest.ocr import tesseract_available

    assert not tesseract_available()


def text_layer(path: Path, index: int) -> str:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        textpage = pdf[index].get_textpage()
        return textpage.get_text_range()
    finally:
        pdf.close()


@pytest.fixture(scope="module")
def scanned(shared_data: Path, tmp_path_factory) -> tuple[Path, list[str]]:
    """Pages 1-2 of a CUAD contract as an image-only PDF, and the text each page shows."""
    contract = shared_data / "cuad" / "pdf" / CONTRACT
    folder = tmp_path_factory.mktemp("scan")
    path = write_scan_pdf(scan_pages(contract, [0, 1], seed=7), folder / "consulting-scan.pdf")
    return path, [text_layer(contract, 0), text_layer(contract, 1)]


def ingest(path: Path) -> IngestOutcome:
    from tasks.ingest.extract import extract_document
    from tasks.ingest.local import list_local_source
    from tasks.ingest.sources import fingerprint_document

    fp = fingerprint_document.fn(list_local_source(str(path))[0], Limits())
    return extract_document.fn(fp, Limits())


def test_without_tesseract_a_scan_fails_naming_tesseract_and_the_fix(no_tesseract, scanned):
    got = ingest(scanned[0])
    assert not got.ok and got.failure is FailureKind.no_text
    assert TESSERACT_MISSING in got.reason and "apt-get install tesseract-ocr tesseract-ocr-eng" in got.reason
    assert pages_to_read(got) == [1, 2]


def test_without_tesseract_a_page_image_fails_naming_tesseract(no_tesseract, tmp_path, scanned):
    image = scan_pages(scanned[0], [0])[0]
    got = ingest(write_scan_png(image, tmp_path / "page.png"))
    assert not got.ok and TESSERACT_MISSING in got.reason
    assert pages_to_read(got) == [1]


def test_page_blocks_respect_the_documented_limits(tmp_path, scanned):
    block = pdf_page_block(str(scanned[0]), 2)
    assert block["type"] == "document" and block["source"]["media_type"] == "application/pdf"
    import base64

    from docreview_testing.stub_llm import pdf_pages

    assert pdf_pages(base64.b64decode(block["source"]["data"])) == 1  # that page alone
    with pytest.raises(PageTooLarge, match=r"over the 0\.001 MB that fits"):
        pdf_page_block(str(scanned[0]), 1, max_bytes=1000)
    # the 32 MB request limit is on the whole payload, where a PDF travels in base64 (4 bytes for 3): the
    # largest page sent fits with its encoding (before: 31 MiB raw, 41 MiB once encoded)
    assert MAX_PDF_BYTES * 4 // 3 + 1_000_000 <= MAX_REQUEST_BYTES == 32_000_000
    from PIL import Image

    rng = random.Random(3)
    noise = Image.frombytes("RGB", (2400, 2400), bytes(rng.randrange(256) for _ in range(2400 * 2400 * 3)))
    noise.save(tmp_path / "noise.png")
    with pytest.raises(PageTooLarge, match="over the 5 MB per-image limit") as caught:
        image_page_block(str(tmp_path / "noise.png"), 1)
    assert "1568x1568 px" in str(caught.value)  # scaled to the long edge the API keeps before the size check
    assert MAX_IMAGE_BYTES == 5 * 1024 * 1024


def test_a_page_over_the_limit_keeps_the_document_failing_with_its_reason(tmp_path):
    src = SourceObject(uri="x.png", name="x.png", local_path=str(tmp_path / "x.png"), size_bytes=1)
    failed = IngestOutcome(
        source=src,
        sha256="a" * 64,
        kind=DocumentKind.image,
        failure=FailureKind.unreadable,
        reason=TESSERACT_MISSING,
        pages=1,
    )
    out = with_pages_read(
        failed, [1], {1: (None, "page 1 is 7.4 MB as a PNG of 1568x1568 px, over the 5 MB per-image limit")}
    )
    assert not out.ok and "over the 5 MB per-image limit" in out.reason and TESSERACT_MISSING in out.reason


def test_the_double_refuses_images_over_the_documented_limits(stub_env):
    import base64
    import io

    import anthropic
    from PIL import Image

    def png(w: int, h: int) -> str:
        buffer = io.BytesIO()
        Image.new("L", (w, h), 255).save(buffer, format="PNG")
        return base64.b64encode(buffer.getvalue()).decode()

    client = anthropic.Anthropic(api_key="k", base_url=stub_env.url, max_retries=0)
    block = lambda w, h: {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png(w, h)}}  # noqa: E731

    def ask(blocks: list) -> None:
        content = [*blocks, {"type": "text", "text": "?"}]
        client.messages.create(model="claude-haiku-4-5", max_tokens=16, messages=[{"role": "user", "content": content}])

    with pytest.raises(anthropic.BadRequestError, match="8000 pixels"):
        ask([block(8001, 10)])
    with pytest.raises(anthropic.BadRequestError, match="2000 pixels"):
        ask([block(10, 10)] * 20 + [block(2001, 10)])
    ask([block(2001, 10)])  # one image of 2001 px is within the limit
    client.close()


def _review(root: Path, backend: str) -> dict:
    from flows.pipeline import NothingReviewed
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    try:
        review_documents(
            source=str(root / "inbox"),
            out_dir=str(root / "out"),
            database_url=f"sqlite:///{root / 'r.db'}",
            backend=backend,
        )
    except NothingReviewed:  # the run ends Failed when its one document failed; its report is written
        pass
    finally:
        dispose_engines()
    return json.loads((root / "out" / "report.json").read_text())


def test_a_scanned_contract_is_reviewed_through_page_images_without_tesseract(
    no_tesseract, stub_env, scanned, tmp_path, prefect_harness
):
    import sqlite3

    path, texts = scanned
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / path.name).write_bytes(path.read_bytes())
    for n, text in enumerate(texts, start=1):
        stub_env.stub.transcripts[(path.name, n)] = text
    report = _review(tmp_path, "anthropic")
    (doc,) = report["documents"]
    assert doc["status"] == "reviewed", doc.get("reason")
    assert doc["findings"] and all(f["locator"].startswith("page ") for f in doc["findings"])
    assert {f["page"] for f in doc["findings"]} <= {1, 2}
    with sqlite3.connect(tmp_path / "r.db") as conn:
        per_page = conn.execute(
            "select chunk_index, input_tokens, cost_usd from llm_calls where chunk_index < -1 or (chunk_index = -1 and sha256 != '') order by chunk_index"
        ).fetchall()
    assert [row[0] for row in per_page] == [-2, -1]  # one call per page, stored under -page
    assert all(tokens > 0 and cost > 0 for _, tokens, cost in per_page)


def test_offline_without_tesseract_the_scan_fails_with_the_reason(no_tesseract, scanned, tmp_path, prefect_harness):
    path, _ = scanned
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / path.name).write_bytes(path.read_bytes())
    report = _review(tmp_path, "rules")
    (doc,) = report["documents"]
    assert doc["status"] == "failed" and TESSERACT_MISSING in doc["reason"]


def test_doctor_and_the_start_up_check_warn_that_ocr_is_unavailable(no_tesseract, monkeypatch):
    from typer.testing import CliRunner

    from cli.app import app

    result = CliRunner().invoke(app, ["doctor", "--backend", "rules"])
    assert result.exit_code == 0
    output = " ".join(result.output.split())
    assert "OCR unavailable" in output and "apt-get install tesseract-ocr tesseract-ocr-eng" in output
    from cli.checks import check_ocr
    from schemas.settings import Settings

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert "sent to the model as page images" in check_ocr(Settings(backend="anthropic"))
    assert "fails" in check_ocr(Settings(backend="rules"))


@pytest.mark.parametrize(
    ("model", "model_id"),
    [
        ("claude-opus-4-6", "eu.anthropic.claude-opus-4-6-v1"),  # Converse, the region's geographic profile
        ("claude-sonnet-5-5", "anthropic.claude-sonnet-5-5"),  # Claude in Amazon Bedrock's Messages API
    ],
)
def test_with_bedrock_the_pages_go_where_the_model_is_served(
    no_tesseract, server, scanned, monkeypatch, tmp_path, model, model_id
):
    """The same pages read on Bedrock by the run's model id, each call recorded with its tokens and cost:
    through Converse with citations on (before: off, so a scanned page read as its empty text layer), or
    through the Messages-API endpoint for a model served there."""
    import sqlite3

    from schemas.settings import Settings
    from tasks.review.pages import read_pages_with_model
    from tasks.store.persist import dispose_engines, get_engine

    path, shown = scanned
    failed = ingest(path)
    assert not failed.ok
    server.stub.reset()
    for n, page_text in enumerate(shown, start=1):
        server.stub.transcripts[(path.name, n)] = page_text
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("DOCREVIEW_BEDROCK_ENDPOINT_URL", server.url)
    monkeypatch.setenv("DOCREVIEW_BEDROCK_REGION", "eu-west-1")
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", model)
    db = f"sqlite:///{tmp_path / 'b.db'}"
    get_engine(db)  # creates the tables
    try:
        got = read_pages_with_model.fn(failed, [1, 2], Settings(backend="bedrock"), db, "run-b")
        converse = server.stub.requests["converse"]
        assert converse == (2 if model_id.startswith("eu.") else 0)
    finally:
        dispose_engines()
    query = "select chunk_index, backend, model, input_tokens, cost_usd from llm_calls order by chunk_index"
    with sqlite3.connect(tmp_path / "b.db") as conn:
        rows = conn.execute(query).fetchall()
    assert got.ok and [p.quality.extractor for p in got.document.pages] == ["claude", "claude"]
    assert "CONSULTING AGREEMENT" in got.document.pages[0].text
    assert [r[0] for r in rows] == [-2, -1] and {r[1] for r in rows} == {"bedrock"}
    assert {r[2] for r in rows} == {model_id}
    assert all(r[3] > 0 and r[4] > 0 for r in rows)
    assert server.stub.refusals == []


def test_a_page_read_that_meets_a_429_is_retried(stub_env, scanned, prefect_harness):
    """Before: read_pages_with_model sent each page once (max_retries=0, nothing retried), so a rate-limit
    burst left scanned pages unread."""
    from schemas.policy import ResiliencePolicy
    from schemas.settings import Settings
    from tasks.review.pages import read_pages_with_model

    path, texts = scanned
    outcome = ingest(path).model_copy(update={"failure": FailureKind.unreadable, "reason": TESSERACT_MISSING})
    stub_env.stub.transcripts[(path.name, 1)] = texts[0]
    stub_env.stub.enqueue("overloaded", times=2)
    from prefect import flow

    policy = ResiliencePolicy(attempts=3, backoff_base_s=0.0, jitter_factor=0.0)
    read = flow(read_pages_with_model.fn)(outcome, [1], Settings(backend="anthropic"), policy=policy)
    assert read.document is not None and read.document.pages[0].text.strip()
    assert stub_env.stub.requests["/v1/messages"] == 3
