"""Scanned pages, made the way an office scanner makes them, for the OCR tests and benchmark.

An office scanner (or a copier's scan-to-PDF) sees a printed page at 200 dpi in greyscale, a little
rotated because the sheet sat askew in the feeder, with dust and toner speckle, and writes an
image-only PDF (no text layer) or a multi-page TIFF. :func:`scan_pages` does the same to pages of a
text PDF (a CUAD contract): render with pypdfium2 at ``dpi`` in greyscale, rotate by a seeded angle
within ``±max_angle`` degrees (white fill, bicubic), add seeded salt-and-pepper speckle, and
:func:`write_scan_pdf` / :func:`write_scan_tiff` / :func:`write_scan_png` write the result;
:func:`mixed_pdf` puts a text page and a scanned page in one PDF; :func:`redacted_page` paints black
redaction bars over phrases before the page is scanned.

Output is deterministic for a given source, page list and seed (``random.Random(seed)``; Pillow's
PDF and TIFF writers are deterministic once the creation date is fixed). Each writer returns the
path written.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pypdfium2 as pdfium
from PIL import Image

#: An office scanner's common resolution for documents (dots per inch).
SCAN_DPI = 200
#: The largest skew of a fed sheet, in degrees either way.
MAX_ANGLE = 1.2
#: Share of pixels turned to speckle (half dark, half light).
SPECKLE = 0.002
#: Fixed creation date of the written PDFs, so the bytes do not depend on the day.
_FIXED_DATE = time.gmtime(1704067200)  # 2024-01-01T00:00:00Z; Pillow takes a struct_time


def render_page(pdf_path: Path, index: int, dpi: int = SCAN_DPI) -> Image.Image:
    """Page ``index`` (0-based) of ``pdf_path`` rendered at ``dpi`` as a greyscale (``L``) image."""
    pdf = pdfium.PdfDocument(str(pdf_path))
    try:
        page = pdf[index]
        try:
            bitmap = page.render(scale=dpi / 72, grayscale=True)
            image = bitmap.to_pil().convert("L")
        finally:
            page.close()
    finally:
        pdf.close()
    return image


def redacted_page(pdf_path: Path, index: int, phrases: list[str], dpi: int = SCAN_DPI) -> Image.Image:
    """Page ``index`` (0-based) rendered at ``dpi`` in greyscale with a solid black box over the first
    occurrence of each of ``phrases`` (PDFium's text search; boxes of the matched characters, padded
    by 1 pt), as a redacted paper copy is scanned. Raises ``ValueError`` for a phrase not on the page."""
    from PIL import ImageDraw

    image = render_page(pdf_path, index, dpi)
    pdf = pdfium.PdfDocument(str(pdf_path))
    try:
        page = pdf[index]
        textpage = page.get_textpage()
        _, height = page.get_size()
        draw = ImageDraw.Draw(image)
        scale = dpi / 72
        for phrase in phrases:
            searcher = textpage.search(phrase, match_case=True)
            hit = searcher.get_next()
            searcher.close()
            if hit is None:
                raise ValueError(f"{phrase!r} is not on page {index + 1}")
            start, count = hit
            boxes = [textpage.get_charbox(start + k) for k in range(count)]
            left, right = min(b[0] for b in boxes) - 1, max(b[2] for b in boxes) + 1
            bottom, top = min(b[1] for b in boxes) - 1, max(b[3] for b in boxes) + 1
            draw.rectangle([left * scale, (height - top) * scale, right * scale, (height - bottom) * scale], fill=0)
        textpage.close()
        page.close()
    finally:
        pdf.close()
    return image


def degrade(
    image: Image.Image, rng: random.Random, max_angle: float = MAX_ANGLE, speckle: float = SPECKLE
) -> Image.Image:
    """The image as a scanner gives it: rotated by a uniform angle in ``[-max_angle, max_angle]``
    degrees (same size, white fill) and speckled (``speckle`` of the pixels set to a dark or light
    grey at random)."""
    angle = rng.uniform(-max_angle, max_angle)
    out = image.convert("L").rotate(angle, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=255)
    width, height = out.size
    pixels = out.load()
    assert pixels is not None
    for _ in range(int(width * height * speckle)):
        x, y = rng.randrange(width), rng.randrange(height)
        pixels[x, y] = rng.randrange(0, 70) if rng.random() < 0.5 else rng.randrange(200, 256)
    return out


def scan_pages(
    pdf_path: Path,
    pages: list[int] | None = None,
    seed: int = 0,
    dpi: int = SCAN_DPI,
    max_angle: float = MAX_ANGLE,
    speckle: float = SPECKLE,
) -> list[Image.Image]:
    """Scanned images of ``pages`` (0-based; all when None) of ``pdf_path``: rendered at ``dpi``,
    greyscale, skewed and speckled (see :func:`degrade`), one seeded generator for the whole set."""
    if pages is None:
        pdf = pdfium.PdfDocument(str(pdf_path))
        pages = list(range(len(pdf)))
        pdf.close()
    rng = random.Random(seed)
    return [degrade(render_page(pdf_path, i, dpi), rng, max_angle, speckle) for i in pages]


def _fresh(images: list[Image.Image]) -> list[Image.Image]:
    """Copies to save: Pillow keeps a JPEG save's encoder settings on the image (``encoderconfig``), and
    a later TIFF save of the same image object passes them to the TIFF encoder (a ``TypeError``)."""
    return [image.copy() for image in images]


def write_scan_pdf(images: list[Image.Image], out: Path, dpi: int = SCAN_DPI) -> Path:
    """An image-only PDF of ``images`` (one page each, its size set by ``dpi``; Pillow's PDF writer
    stores a greyscale page JPEG-compressed, as most scan-to-PDF scanners do), no text layer."""
    out.parent.mkdir(parents=True, exist_ok=True)
    first, *rest = _fresh(images)
    first.save(
        out,
        "PDF",
        resolution=float(dpi),
        save_all=True,
        append_images=rest,
        creationDate=_FIXED_DATE,
        modDate=_FIXED_DATE,
    )
    return out


def write_scan_tiff(images: list[Image.Image], out: Path, dpi: int = SCAN_DPI) -> Path:
    """A multi-page TIFF of ``images`` (one frame per page, LZW-compressed, ``dpi`` recorded)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    first, *rest = _fresh(images)
    first.save(out, "TIFF", save_all=True, append_images=rest, compression="tiff_lzw", dpi=(dpi, dpi))
    return out


def write_scan_png(image: Image.Image, out: Path, dpi: int = SCAN_DPI) -> Path:
    """One page image as a PNG (``dpi`` recorded in its pHYs chunk)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _fresh([image])[0].save(out, "PNG", dpi=(dpi, dpi))
    return out


def mixed_pdf(text_pdf: Path, text_page: int, scan: Image.Image, out: Path, dpi: int = SCAN_DPI) -> Path:
    """A two-page PDF: page ``text_page`` (0-based) of ``text_pdf`` with its text layer, then ``scan``
    as an image-only page (a document with one page scanned in, as offices assemble them)."""
    scanned = out.with_suffix(".scan.pdf")
    write_scan_pdf([scan], scanned, dpi)
    doc = pdfium.PdfDocument.new()
    try:
        src = pdfium.PdfDocument(str(text_pdf))
        img = pdfium.PdfDocument(str(scanned))
        try:
            doc.import_pages(src, [text_page])
            doc.import_pages(img, [0])
            out.parent.mkdir(parents=True, exist_ok=True)
            doc.save(str(out))
        finally:
            src.close()
            img.close()
    finally:
        doc.close()
    scanned.unlink()
    return out
