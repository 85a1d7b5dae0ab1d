"""OCR of scanned PDF pages and page images (tasks/ingest/ocr.py and its hook in the extraction worker).

Scans are made by docreview_testing.scans from real CUAD contracts (200 dpi greyscale, skewed,
speckled, seeded), so the text layer of the same page is the reference.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docreview_testing.scans import (
    degrade,
    mixed_pdf,
    redacted_page,
    scan_pages,
    write_scan_pdf,
    write_scan_png,
    write_scan_tiff,
)
from schemas.documents import DocumentKind, FailureKind
from schemas.settings import Limits
from tasks.ingest.extract import extract_document, run_extraction
from tasks.ingest.local import list_local_source
from tasks.ingest.ocr import LOW_CONFIDENCE, MAX_PIXELS, REDACTION_TOKEN, fit_dpi, parse_tsv
from tasks.ingest.sources import fingerprint_document

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="the tesseract program is not installed")

#: A 4-page CUAD consulting agreement (dense single-column text).
CONTRACT = "ADUROBIOTECH,INC_06_02_2020-EX-10.7-CONSULTING AGREEMENT.PDF"
#: Measured CER of its scanned first page (seed 7) against the text layer: 0.4 %; bound with margin.
CER_BOUND = 0.03


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def cer(hyp: str, ref: str) -> float:
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance(norm(hyp), norm(ref)) / max(1, len(norm(ref)))


def text_layer(path: Path, index: int) -> str:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        textpage = pdf[index].get_textpage()
        text = textpage.get_text_range()
        textpage.close()
        return text
    finally:
        pdf.close()


def ingest(path: Path, limits: Limits | None = None):
    limits = limits or Limits()
    fp = fingerprint_document.fn(list_local_source(str(path))[0], limits)
    if fp.failure:
        return fp
    return extract_document.fn(fp, limits)


@pytest.fixture(scope="module")
def contract(shared_data: Path) -> Path:
    return shared_data / "cuad" / "pdf" / CONTRACT


@pytest.fixture(scope="module")
def scans(contract: Path) -> list:
    """Pages 1 and 2 of the contract, scanned (seed 7)."""
    return scan_pages(contract, [0, 1], seed=7)


def test_tsv_layout_keeps_lines_and_paragraphs_and_flags_low_confidence_words():
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "1\t1\t0\t0\t0\t0\t0\t0\t100\t100\t-1\t",
        "5\t1\t1\t1\t1\t1\t0\t0\t1\t1\t96.5\tThe",
        "5\t1\t1\t1\t1\t2\t0\t0\t1\t1\t95\tSupplier",
        "5\t1\t1\t1\t2\t1\t0\t0\t1\t1\t40\tsha1l",
        "4\t1\t1\t2\t1\t0\t0\t0\t1\t1\t-1\t",
        "5\t1\t1\t2\t1\t1\t0\t0\t1\t1\t91\tTerm.",
        "5\t1\t2\t1\t1\t1\t0\t0\t1\t1\t90\t ",
        "5\t1\t2\t1\t1\t2\t0\t0\t1\t1\t99\tEnd",
    ]
    result = parse_tsv("\n".join([head, *rows]))
    assert result.text == "The Supplier\nsha1l\n\nTerm.\n\nEnd"
    assert result.uncertain == [("sha1l", 0.4)]
    assert result.confidence == pytest.approx((0.965 + 0.95 + 0.4 + 0.91 + 0.99) / 5, abs=0.001)
    assert 0 < LOW_CONFIDENCE < 1
    assert parse_tsv(head).text == "" and parse_tsv(head).confidence is None


def test_a_page_too_large_for_the_pixel_limit_is_rendered_lower_or_refused():
    assert fit_dpi(8.5, 11, 300) == 300
    lowered = fit_dpi(40, 30, 300)  # a 40 x 30 in drawing: 108 Mpx at 300 dpi
    assert lowered is not None and 100 <= lowered < 300 and 40 * 30 * lowered**2 <= MAX_PIXELS * 1.0001
    assert fit_dpi(116, 116, 300) is None  # hugemono.pdf's page


@needs_tesseract
def test_a_scanned_contract_page_is_read_within_the_measured_error_rate(tmp_path, contract, scans):
    scan = write_scan_pdf(scans[:1], tmp_path / "scan.pdf")
    result = run_extraction(str(scan), Limits())
    assert result["ok"] and result["engines"] == {"pdfium": 0, "pypdf": 0, "tesseract": 1}
    page = result["pages"][0]
    assert page["quality"]["extractor"] == "tesseract" and page["quality"]["ocr"] is True
    conf = page["quality"]["ocr_confidence"]
    assert 0.8 < conf <= 1 and page["locator"] == {"page": 1, "ocr_confidence": conf}
    assert all(c < LOW_CONFIDENCE for _, c in page["uncertain_words"])
    assert cer(page["text"], text_layer(contract, 0)) < CER_BOUND
    assert "\n\n" in page["text"]  # paragraphs kept
    assert REDACTION_TOKEN not in page["text"]


@needs_tesseract
def test_a_black_box_redaction_in_a_scan_becomes_a_redacted_token_in_place(tmp_path, contract):
    import random

    image = degrade(redacted_page(contract, 0, ["€500 per hour"]), random.Random(3))
    result = run_extraction(str(write_scan_png(image, tmp_path / "redacted.png")), Limits(), DocumentKind.image)
    assert result["ok"]
    text = norm(result["pages"][0]["text"])
    assert "500" not in text and "per hour" not in text
    assert re.search(r"at the rate of \[REDACTED\] \S+ a monthly basis", text), text


@needs_tesseract
def test_a_mixed_pdf_ocrs_only_its_scanned_page(tmp_path, contract, scans):
    path = mixed_pdf(contract, 0, scans[1], tmp_path / "mixed.pdf")
    result = run_extraction(str(path), Limits())
    assert result["ok"] and result["engines"] == {"pdfium": 1, "pypdf": 0, "tesseract": 1}
    first, second = result["pages"]
    assert first["quality"]["extractor"] == "pdfium" and not first["quality"].get("ocr") and "locator" not in first
    assert second["quality"]["extractor"] == "tesseract" and second["quality"]["ocr"]
    assert second["locator"]["page"] == 2
    assert cer(second["text"], text_layer(contract, 1)) < CER_BOUND


def test_a_text_layer_pdf_never_loads_the_ocr(contract):
    code = (
        "import sys, json; from tasks.ingest.extract_worker import extract; "
        f"r = extract({str(contract)!r}, 100); "
        "print(json.dumps([r['engines'], 'tasks.ingest.ocr' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    engines, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert engines == {"pdfium": 4, "pypdf": 0} and loaded is False


@needs_tesseract
def test_png_and_multipage_tiff_are_read_page_by_page(tmp_path, contract, scans):
    png = write_scan_png(scans[0], tmp_path / "page.png")
    result = run_extraction(str(png), Limits(), DocumentKind.image)
    assert result["ok"] and result["engines"] == {"tesseract": 1} and result["encrypted"] is False
    (page,) = result["pages"]
    assert page["quality"]["ocr"] and page["quality"]["extractor"] == "tesseract"
    assert cer(page["text"], text_layer(contract, 0)) < CER_BOUND

    tiff = write_scan_tiff(scans, tmp_path / "pages.tif")
    result = run_extraction(str(tiff), Limits(), DocumentKind.image)
    assert result["ok"] and [p["number"] for p in result["pages"]] == [1, 2]
    for i, page in enumerate(result["pages"]):
        assert page["locator"]["page"] == i + 1 and page["quality"]["ocr_confidence"] > 0.8
        assert cer(page["text"], text_layer(contract, i)) < CER_BOUND

    too_many = run_extraction(str(tiff), Limits(max_pages=1), DocumentKind.image)
    assert not too_many["ok"] and too_many["kind"] == "too_many_pages"


@needs_tesseract
def test_an_image_document_ends_reviewable_through_extract_document(tmp_path, scans):
    out = ingest(write_scan_png(scans[0], tmp_path / "page.png"))
    assert out.ok and out.document is not None and out.kind == DocumentKind.image
    page = out.document.pages[0]
    assert page.quality.ocr and page.where().label().startswith("page 1 (OCR, confidence 0.")


def test_empty_and_truncated_images_fail_as_corrupt(tmp_path, scans):
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    result = run_extraction(str(empty), Limits(), DocumentKind.image)
    assert not result["ok"] and result["kind"] == "corrupt" and "0 bytes" in result["reason"]

    whole = write_scan_png(scans[0], tmp_path / "whole.png").read_bytes()
    cut = tmp_path / "cut.png"
    cut.write_bytes(whole[: len(whole) // 3])
    result = run_extraction(str(cut), Limits(), DocumentKind.image)
    assert not result["ok"] and result["kind"] == "corrupt" and result["reason"].startswith("corrupt image")


def test_a_20000_pixel_square_tiff_fails_as_a_resource_limit(tmp_path):
    from PIL import Image

    path = tmp_path / "huge.tif"
    Image.new("1", (20_000, 20_000), 1).save(path, "TIFF", compression="group4")
    assert path.stat().st_size < 1_000_000
    result = run_extraction(str(path), Limits(), DocumentKind.image)
    assert not result["ok"] and result["kind"] == "resource_limit"
    assert "20000 × 20000" in result["reason"]


@needs_tesseract
def test_a_blank_scan_has_no_text(tmp_path):
    from PIL import Image

    path = tmp_path / "blank.png"
    Image.new("L", (1700, 2200), 255).save(path, dpi=(200, 200))
    out = ingest(path)
    assert out.failure == FailureKind.no_text
    assert "OCR read 1 page(s) and found none" in (out.reason or "")


#: Image-only files of the robustness corpus (OCRmyPDF's test resources, py-pdf's ImageMagick pages).
CORPUS = [
    "ocrmypdf-resources/linn.pdf",
    "ocrmypdf-resources/skew.pdf",
    "ocrmypdf-resources/cardinal.pdf",
    "ocrmypdf-resources/jbig2.pdf",
    "ocrmypdf-resources/2400dpi.pdf",
    "ocrmypdf-resources/c02-22.pdf",
    "ocrmypdf-resources/hugemono.pdf",
    "py-pdf-sample-files/007-imagemagick-images/imagemagick-CCITTFaxDecode.pdf",
    "py-pdf-sample-files/007-imagemagick-images/imagemagick-images.pdf",
]


@pytest.mark.slow
@needs_tesseract
def test_image_only_files_of_the_robustness_corpus_end_read_or_with_a_reason(shared_data):
    root = shared_data / "pdf-robustness"
    found = {str(p.relative_to(root)) for p in root.rglob("imagemagick-*.pdf")}
    assert found <= set(CORPUS)
    outcomes = {}
    for name in CORPUS:
        out = ingest(root / name)
        assert out.ok or (out.failure is not None and out.reason), name
        outcomes[name] = out
    linn = outcomes["ocrmypdf-resources/linn.pdf"]
    assert linn.ok and "LinnSequencer" in linn.document.text.replace(" ", "")
    for name in ("skew.pdf", "jbig2.pdf", "2400dpi.pdf"):
        out = outcomes[f"ocrmypdf-resources/{name}"]
        assert out.ok and all(p.quality.ocr for p in out.document.pages), name
    cardinal = outcomes["ocrmypdf-resources/cardinal.pdf"]  # pages turned 0, 90, 180 and 270 degrees
    assert cardinal.ok and all(p.quality.ocr_confidence > 0.85 for p in cardinal.document.pages)
    assert all("LinnSequencer" in p.text.replace(" ", "") for p in cardinal.document.pages)
    huge = outcomes["ocrmypdf-resources/hugemono.pdf"]
    assert huge.failure == FailureKind.resource_limit and "megapixels" in huge.reason
