"""Text extraction of one PDF, run in a child process so it can be killed.

Invoked as ``python -m tasks.ingest.extract_worker PATH MAX_PAGES [--pypdf-only] [--pypdf-pages 3,7]``
(a PDF) or ``... PATH MAX_PAGES --kind docx|image`` (:func:`read_other_kind`).
Before extracting page *i* (0-based) with PDFium it writes ``{"pdfium_page": i}`` on a line of
its own (so the parent knows which page a crash of the native library happened on); the last
line is one JSON object: ``{"ok": true, "encrypted": bool, "pages": [{"number", "text",
"quality", "running"} (+ "locator", "uncertain_words" on an OCR'd page)...], "engines": {"pdfium": n,
"pypdf": m} (+ "tesseract": k when pages were OCR'd)}`` or ``{"ok": false, "kind":
FailureKind, "reason": str}``. The parent (:mod:`tasks.ingest.extract`) sets the wall-clock and
memory limits and re-runs the worker with ``--pypdf-pages`` after a crash; this process only
extracts.

Extractors (why two): PDFium (pypdfium2, Google's PDF engine with a maintained binding and
wheels) reads text about 20x faster than pypdf on filings (benchmarks/ingestion.py: the 160-page
3M 10-K in under 1 s against 14 s of pypdf) and is the primary extractor of every page. pypdf is
kept for what PDFium does not give here:

- opening: decryption (an empty user password opens permission-only files; a user password
  fails as ``password_required``), the page count and the encryption flag;
- a page PDFium cannot read, returns empty or glued (words run together), or whose fonts map
  glyphs to private-use code points or NUL (PDFium drops those glyphs silently; pypdf keeps a
  marker in place, and its content-stream walk yields the ``/ActualText`` of marked content, so
  the ligature can be restored — see :mod:`tasks.ingest.ligatures`). For a glued page the text
  with fewer glued words is kept; a page still glued starts with
  :data:`tasks.textnorm.GLUED_PAGE_NOTE`;
- pypdf's resource limits: a page that raises ``LimitReachedError`` (a decompression bomb) is
  *not read*: its quality carries the library's message, and when no page could be read
  the document fails as ``resource_limit``.

Both extractors' text goes through the same :func:`tasks.textnorm.clean_page_text`, then
running headers, footers and page numbers are removed (:mod:`tasks.ingest.furniture`); quotes
are matched against that text with :func:`tasks.textnorm.match_form` on both sides.

Scanned pages: a page PDFium opened and found no text on (image-only, or text drawn as outlines)
is OCR'd after every page was read (:mod:`tasks.ingest.ocr`: rendered at its scan's resolution,
read by Tesseract, two pages at once); only those pages, so in a mixed document the text pages
keep their text layer. Its quality then says ``extractor="tesseract"``, ``ocr`` and
``ocr_confidence``, and the page carries ``locator`` (``{"page", "ocr_confidence"}``) and
``uncertain_words`` (``[[word, confidence]]``). A page too large to render within the OCR's pixel
limit is *not read* (``resource limit: ...``). A PDF whose pages all have text neither imports
:mod:`tasks.ingest.ocr` nor starts Tesseract: the only cost is one test per page. Without the ``tesseract`` program, or with ``--pypdf-only`` (PDFium is not
trusted on the file), image-only pages stay empty.

Pages are extracted one after the other: PDFium does the 160-page 10-K in well under a second of
the child's time, so worker processes or threads (PDFium is not thread-safe) would cost more
in start-up than they save on 2 cores.

pypdf is opened with ``strict=False`` and *every* exception type is caught and classified
(PITFALLS: broken files raise far more than ``PdfReadError``).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import warnings
from typing import Any

#: A page whose tokens are mostly this long (characters) has words glued together.
GLUED_TOKEN_CHARS = 25
#: Below this share of spaces among non-newline characters, a long page counts as glued.
GLUED_SPACE_RATIO = 0.04

_TOUNICODE_SECTION = re.compile(rb"begin(bfchar|bfrange)(.*?)end\1", re.S)
_HEX = re.compile(rb"<([0-9A-Fa-f]+)>")
_BFCHAR = re.compile(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]*)>")
_BFRANGE = re.compile(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(?:<([0-9A-Fa-f]*)>|\[([^\]]*)\])")


def page_quality(raw: str, cleaned: str) -> dict:
    """Quality signals of a page: empty, glued words, private-use and NUL counts (see
    :class:`schemas.documents.PageQuality`)."""
    nul = raw.count("\x00")
    pua = sum(1 for ch in raw if "\ue000" <= ch <= "\uf8ff")
    return {"empty": not cleaned.strip(), "glued_words": is_glued(cleaned), "private_use_chars": pua, "nul_chars": nul}


def is_glued(cleaned: str) -> bool:
    """True when the words of a page (at least 200 non-newline characters) run together: over 30 %
    of its characters in tokens of :data:`GLUED_TOKEN_CHARS`+ characters, or under
    :data:`GLUED_SPACE_RATIO` spaces."""
    body = cleaned.replace("\n", "")
    if len(body) < 200:
        return False
    long_chars = sum(len(t) for t in cleaned.split() if len(t) >= GLUED_TOKEN_CHARS)
    return long_chars / len(body) > 0.3 or body.count(" ") / len(body) < GLUED_SPACE_RATIO


def _glue_score(cleaned: str) -> float:
    """Share of characters in over-long tokens (lower is better), to pick between two glued texts."""
    body = cleaned.replace("\n", "")
    if not body:
        return 1.0
    return sum(len(t) for t in cleaned.split() if len(t) >= GLUED_TOKEN_CHARS) / len(body) - body.count(" ") / len(body)


def _is_marker_unit(dst: bytes) -> bool:
    """True when a CMap destination (hex, UTF-16BE) starts with U+0000 or a private-use code point."""
    unit = int(dst[:4], 16) if len(dst) >= 4 else int(dst or b"0", 16)
    return unit == 0 or 0xE000 <= unit <= 0xF8FF


def _maps_to_markers(font: Any) -> bool:
    """True when a font's ``/ToUnicode`` CMap maps a code other than 0 (``.notdef``, which many
    producers map to U+0000 and never draw) to U+0000 or to a private-use code point."""
    try:
        tu = font.get("/ToUnicode")
        if tu is None:
            return False
        data = tu.get_object().get_data()
    except Exception:
        return False
    for kind, body in _TOUNICODE_SECTION.findall(data):
        if kind == b"bfchar":
            for src, dst in _BFCHAR.findall(body):
                if int(src, 16) and _is_marker_unit(dst):
                    return True
            continue
        for lo, _hi, dst, array in _BFRANGE.findall(body):
            first = int(lo, 16)
            targets = [(first, dst)] if dst else [(first + k, d) for k, d in enumerate(_HEX.findall(array))]
            if any(code and _is_marker_unit(d) for code, d in targets):
                return True
    return False


def marker_font_pages(reader: Any, count: int) -> set[int]:
    """0-based pages whose fonts (the page's own ``/Resources``) map glyphs to NUL or private use."""
    from pypdf.generic import IndirectObject

    cache: dict[Any, bool] = {}
    out: set[int] = set()
    for i in range(count):
        try:
            res = reader.pages[i].get("/Resources")
            res = res.get_object() if res is not None else None
            fonts = res.get("/Font") if res is not None else None
            fonts = fonts.get_object() if fonts is not None else None
            for ref in (fonts or {}).values():
                key = (ref.idnum, ref.generation) if isinstance(ref, IndirectObject) else id(ref)
                if key not in cache:
                    cache[key] = _maps_to_markers(ref.get_object())
                if cache[key]:
                    out.add(i)
                    break
        except Exception:
            continue
    return out


def _pdf_text_string(value: Any) -> str:
    """A PDF text string as ``str`` (ISO 32000-1 §7.9.2.2): UTF-16BE with a byte-order mark,
    UTF-8 with one, else PDFDocEncoding (read as Latin-1, identical for printable ASCII)."""
    if isinstance(value, str):
        return value
    raw = bytes(value)
    if raw.startswith(b"\xfe\xff"):
        return raw[2:].decode("utf-16-be", "replace")
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", "replace")
    return raw.decode("latin-1")


def tounicode_map(font: Any) -> tuple[int, dict[int, str]]:
    """``(code length in bytes, {code: text})`` of a font's ``/ToUnicode`` CMap (``(1, {})`` without one)."""
    try:
        tu = font.get("/ToUnicode")
        data = tu.get_object().get_data() if tu is not None else b""
    except Exception:
        return 1, {}
    out: dict[int, str] = {}
    width = 1

    def text(dst: bytes) -> str:
        return bytes.fromhex(dst.decode()).decode("utf-16-be", "replace") if dst else ""

    for kind, body in _TOUNICODE_SECTION.findall(data):
        if kind == b"bfchar":
            for src, dst in _BFCHAR.findall(body):
                width = max(width, len(src) // 2)
                out[int(src, 16)] = text(dst)
            continue
        for lo, hi, dst, array in _BFRANGE.findall(body):
            width = max(width, len(lo) // 2)
            first, last = int(lo, 16), int(hi, 16)
            if array:
                for k, d in enumerate(_HEX.findall(array)):
                    out[first + k] = text(d)
            elif dst and last - first < 65536:
                base = int(dst, 16)
                for k in range(last - first + 1):
                    unit = base + k
                    out[first + k] = chr(unit) if unit < 0x10000 and not 0xD800 <= unit < 0xE000 else ""
    return width, out


def pypdf_page(reader: Any, i: int) -> tuple[str, list[tuple[str, str]]]:
    """pypdf's text of 0-based page ``i`` and its ``/ActualText`` spans ``[(text, actual)]``: for
    every marked-content span with an ``/ActualText``, the span's glyphs decoded with their
    font's ``/ToUnicode`` CMap (markers included) and the ActualText, in content-stream order.

    Raises whatever pypdf raises (``LimitReachedError`` for a decompression bomb, ...).
    """
    page = reader.pages[i]
    stack: list[bool] = []
    spans: list[list[str]] = []
    fonts: dict[str, tuple[int, dict[int, str]]] = {}
    current: list[tuple[int, dict[int, str]]] = [(1, {})]

    def font_map(name: str) -> tuple[int, dict[int, str]]:
        if name not in fonts:
            try:
                fonts[name] = tounicode_map(page["/Resources"].get_object()["/Font"].get_object()[name].get_object())
            except Exception:
                fonts[name] = (1, {})
        return fonts[name]

    def decode(raw: bytes) -> str:
        width, table = current[0]
        return "".join(table.get(int.from_bytes(raw[k : k + width], "big"), "") for k in range(0, len(raw), width))

    def before(op: bytes, args: list, cm: Any, tm: Any) -> None:
        if op == b"Tf" and args:
            current[0] = font_map(str(args[0]))
        elif op == b"BDC":
            props: Any = args[1] if len(args) > 1 else None  # a PDF dictionary, or a name
            value = props.get("/ActualText") if hasattr(props, "get") else None
            stack.append(value is not None)
            if value is not None:
                spans.append(["", _pdf_text_string(value)])
        elif op == b"BMC":
            stack.append(False)
        elif op == b"EMC" and stack:
            stack.pop()
        elif op in (b"Tj", b"'", b'"', b"TJ") and spans and any(stack) and args:
            items = args[0] if op == b"TJ" else args[-1:]
            for item in items if isinstance(items, list) else [items]:
                if isinstance(item, (bytes, str)):
                    spans[-1][0] += decode(item if isinstance(item, bytes) else item.encode("latin-1"))

    text = page.extract_text(visitor_operand_before=before) or ""
    return text, [(t, a) for t, a in spans]


#: PDFium joins a word hyphenated at a line end and marks the join with U+FFFE (a
#: noncharacter): written back as the hyphen and line break pypdf gives, which
#: :func:`tasks.textnorm.match_form` joins on both sides of a quote.
PDFIUM_LINE_HYPHEN = "\ufffe"


#: Share of a page's height at its top and at its bottom that is its margin: where running headers and
#: footers are printed (a US Letter page's 1-inch margin is 9 % of its height).
MARGIN_SHARE = 0.09


def pdfium_page(pdf: Any, i: int, margins: list[str] | None = None) -> str:
    """PDFium's text of 0-based page ``i``, its hyphen joins written as ``-`` and a line break
    (:data:`PDFIUM_LINE_HYPHEN`). With ``margins`` (a list), the text PDFium finds in the page's top
    and bottom :data:`MARGIN_SHARE` is appended to it (two strings), for
    :func:`tasks.ingest.furniture.strip_running_lines`. Raises ``pypdfium2.PdfiumError`` on failure."""
    page = pdf[i]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range().replace(PDFIUM_LINE_HYPHEN, "-\n")
            if margins is not None:
                left, bottom, right, top = page.get_bbox()
                band = (top - bottom) * MARGIN_SHARE
                margins.append(textpage.get_text_bounded(left, top - band, right, top))
                margins.append(textpage.get_text_bounded(left, bottom, right, bottom + band))
            return text
        finally:
            textpage.close()
    finally:
        page.close()


def _open_pdfium(path: str, encrypted: bool) -> Any | None:
    """The PDFium document, or None when pypdfium2 is missing or cannot open the file."""
    try:
        import pypdfium2 as pdfium
    except Exception:
        return None
    try:
        return pdfium.PdfDocument(path, password="" if encrypted else None)
    except Exception:
        return None


def extract(path: str, max_pages: int, pypdf_only: bool = False, pypdf_pages: frozenset[int] = frozenset()) -> dict:
    """Extract per-page text from the PDF at ``path``; never raises (failures are returned).

    ``pypdf_only`` skips PDFium; ``pypdf_pages`` (0-based) are read with pypdf only (pages a
    PDFium crash was seen on). Shape of the result: see the module docstring.
    """
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    reader = None
    open_error = None
    try:
        reader = PdfReader(path, strict=False)
    except MemoryError:
        raise
    except FileNotDecryptedError as exc:
        return {"ok": False, "kind": "password_required", "reason": f"password required: {exc}"}
    except Exception as exc:
        open_error = f"corrupt PDF: {type(exc).__name__}: {exc}"

    encrypted = False
    count = 0
    if reader is not None:
        try:
            encrypted = bool(reader.is_encrypted)
            # Permission-only files open with an empty user password.
            if encrypted and not reader.decrypt(""):
                return {
                    "ok": False,
                    "kind": "password_required",
                    "reason": "password required: the PDF is encrypted with a user password",
                }
        except NotImplementedError as exc:
            return {"ok": False, "kind": "password_required", "reason": f"unsupported encryption: {exc}"}
        except Exception as exc:
            return {
                "ok": False,
                "kind": "corrupt",
                "reason": f"corrupt PDF (encryption dictionary): {type(exc).__name__}: {exc}",
            }
        try:
            count = len(reader.pages)
        except FileNotDecryptedError as exc:
            return {"ok": False, "kind": "password_required", "reason": f"password required: {exc}"}
        except Exception as exc:
            open_error = f"corrupt PDF (page tree): {type(exc).__name__}: {exc}"
            reader = None

    pdf = None if pypdf_only else _open_pdfium(path, encrypted)
    if reader is None:
        if pdf is None:
            return {"ok": False, "kind": "corrupt", "reason": open_error or "corrupt PDF"}
        count = len(pdf)
    elif pdf is not None and len(pdf) != count:
        pdf = None  # the two disagree on the page tree: pypdf's reading is kept (page numbers as before)
    if count == 0:
        return {"ok": False, "kind": "corrupt", "reason": "corrupt PDF: no pages"}
    if count > max_pages:
        return {"ok": False, "kind": "too_many_pages", "reason": f"{count} pages exceeds the limit of {max_pages}"}

    suspect = marker_font_pages(reader, count) if reader is not None and pdf is not None else set()
    pages = [_read_page(reader, pdf, i, force_pypdf=i in suspect, skip_pdfium=i in pypdf_pages) for i in range(count)]
    if pdf is not None:
        pdf.close()
        # Pages with no text that were read (image-only) are OCR'd; for a text-layer PDF the list is empty.
        scanned = [i for i, p in enumerate(pages) if not p["clean"] and not p["not_read"] and i not in pypdf_pages]
        if scanned:
            _ocr_pages(path, pages, scanned, encrypted)
    if all(p["not_read"] for p in pages):
        from schemas.documents import TESSERACT_MISSING

        if all(p["not_read"] == TESSERACT_MISSING for p in pages):  # a scan, and no OCR on this machine
            return {"ok": False, "kind": "no_text", "reason": f"no text on any of {count} page(s): {TESSERACT_MISSING}"}
        limit = next((p for p in pages if p["limit"]), None)
        if limit is not None:
            return {
                "ok": False,
                "kind": "resource_limit",
                "reason": f"a resource limit stopped text extraction on every page ({count}): "
                f"page {limit['number']}: {limit['not_read']}",
            }
        return {
            "ok": False,
            "kind": "corrupt",
            "reason": f"corrupt PDF: text extraction failed on all {count} pages ({pages[0]['not_read']})",
        }
    out = finish_pages(pages)
    engines = {
        "pdfium": sum(1 for p in pages if p["extractor"] == "pdfium"),
        "pypdf": sum(1 for p in pages if p["extractor"] == "pypdf"),
    }
    if any(p["extractor"] == "tesseract" for p in pages):
        engines["tesseract"] = sum(1 for p in pages if p["extractor"] == "tesseract")
    return {
        "ok": True,
        "encrypted": encrypted,
        "pages": out,
        "engines": engines,
        "page_errors": sum(1 for p in pages if p["not_read"]),
    }


def _ocr_pages(path: str, pages: list[dict], indices: list[int], encrypted: bool) -> None:
    """OCR the 0-based pages ``indices`` (read empty) in place (:func:`tasks.ingest.ocr.ocr_pdf_pages`):
    a page read gets the OCR text, ``extractor="tesseract"``, its ``ocr_confidence`` and
    ``uncertain_words``; a page too large to render is *not read* (a note starting ``resource limit``);
    other OCR failures leave the page empty. Without the ``tesseract`` program each page is *not read*
    with :data:`schemas.documents.TESSERACT_MISSING` (the cause and the fix; a model backend may read it,
    :mod:`tasks.review.pages`)."""
    from schemas.documents import TESSERACT_MISSING
    from tasks.ingest.ocr import ocr_pdf_pages, page_entry, tesseract_available
    from tasks.textnorm import clean_page_text

    if not tesseract_available():
        for i in indices:
            pages[i].update(not_read=TESSERACT_MISSING)
        return
    try:
        results = ocr_pdf_pages(path, indices, password="" if encrypted else None, progress=True)
    except MemoryError:
        raise
    except Exception:
        return
    for i, result in results.items():
        entry = page_entry(i + 1, result)
        page = pages[i]
        if entry["not_read"]:
            if entry["not_read"].startswith("resource limit"):
                page.update(not_read=entry["not_read"], limit=True)
            continue
        page.update(
            raw=entry["raw"],
            clean=clean_page_text(entry["raw"]),
            extractor="tesseract",
            ocr_confidence=entry["ocr_confidence"],
            uncertain_words=entry["uncertain_words"],
        )


def _read_page(reader: Any, pdf: Any, i: int, force_pypdf: bool = False, skip_pdfium: bool = False) -> dict:
    """One page's raw text, the extractor kept and why a page was not read (see :func:`extract`).

    PDFium first (unless ``skip_pdfium``: a crash was seen on the page); pypdf when PDFium failed,
    found nothing, glued the words or ``force_pypdf`` (the page's fonts map glyphs to markers).
    """
    from pypdf.errors import LimitReachedError

    from tasks.textnorm import clean_page_text

    page = {
        "number": i + 1,
        "raw": "",
        "clean": None,
        "actual": None,
        "extractor": None,
        "not_read": None,
        "limit": False,
        "margins": None,
    }
    first = None
    if pdf is not None and not skip_pdfium:
        sys.stdout.write(json.dumps({"pdfium_page": i}) + "\n")
        sys.stdout.flush()
        margins: list[str] = []
        try:
            first = pdfium_page(pdf, i, margins)
        except MemoryError:
            raise
        except Exception:
            first = None
        page["margins"] = tuple(margins) if len(margins) == 2 else None
    c1 = clean_page_text(first) if first is not None else ""
    if first is not None and (reader is None or (c1 and not is_glued(c1) and not force_pypdf)):
        page.update(raw=first, clean=c1, extractor="pdfium")
        return page
    if reader is None:
        page["not_read"] = "PDFium could not read the page"
        return page
    try:
        second, spans = pypdf_page(reader, i)
    except MemoryError:
        raise
    except LimitReachedError as exc:
        if not c1:
            page.update(not_read=f"LimitReachedError: {exc}", limit=True)
            return page
        second, spans = None, []
    except Exception as exc:
        if first is None:
            page["not_read"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            return page
        second, spans = None, []
    c2 = clean_page_text(second) if second is not None else ""
    keep_first = (
        second is None
        or (c1 and not c2)
        or (c1 and is_glued(c2) and (not is_glued(c1) or _glue_score(c1) <= _glue_score(c2)))
    )
    if keep_first:
        page.update(raw=first or "", clean=c1, extractor="pdfium")
    else:
        page.update(raw=second, clean=c2, extractor="pypdf", actual=spans)
    return page


def finish_pages(pages: list[dict]) -> list[dict]:
    """Restore ligatures (and rejoin PDFium's words split at one), clean, strip running lines and flag
    every page (pages of :func:`_read_page`).

    Returns ``[{"number", "text", "quality", "running"}]`` (``running``: the removed lines); an OCR'd
    page (``extractor == "tesseract"``) also has ``quality.ocr``/``ocr_confidence``, ``locator``
    (``{"page", "ocr_confidence"}``) and ``uncertain_words`` (``[[word, confidence]]``); a page whose
    running lines print another page number than its place (:func:`tasks.ingest.furniture.printed_numbers`:
    "29", "F-12", "Apple Inc. | 2024 Form 10-K | 29") has ``locator.printed_page``.
    """
    from tasks.ingest.furniture import printed_numbers, strip_running_lines
    from tasks.ingest.ligatures import (
        actual_text_replacements,
        free_words,
        rejoin_split_ligatures,
        restore_ligatures,
        vocabulary,
    )
    from tasks.textnorm import GLUED_PAGE_NOTE, clean_page_text

    vocab = vocabulary([p["raw"] for p in pages])
    free = free_words([p["raw"] for p in pages if p["extractor"] == "pdfium"])
    cleaned, restored = [], []
    for p in pages:
        actual = actual_text_replacements(p["actual"]) if p["actual"] else None
        text, n = restore_ligatures(p["raw"], actual, vocab)
        if p["extractor"] == "pdfium":  # PDFium splits words at ligatures some fonts map to a lone "f"
            text, rejoined = rejoin_split_ligatures(text, vocab, free)
            n += rejoined
        cleaned.append(p["clean"] if not n and p.get("clean") is not None else clean_page_text(text))
        restored.append(n)
    texts, removed = strip_running_lines(cleaned, [p.get("margins") for p in pages])
    printed = printed_numbers(removed)
    out = []
    for p, text, before, n, lines, folio in zip(pages, texts, cleaned, restored, removed, printed):
        quality = page_quality(p["raw"], before)
        quality["empty"] = not text.strip()
        quality.update(ligatures_restored=n, not_read=p["not_read"], running_lines=len(lines), extractor=p["extractor"])
        if quality["glued_words"]:
            text = f"{GLUED_PAGE_NOTE}\n{text}"
        entry = {"number": p["number"], "text": text, "quality": quality, "running": lines}
        if p["extractor"] == "tesseract":
            quality.update(ocr=True, ocr_confidence=p.get("ocr_confidence"))
            entry["locator"] = {"page": p["number"], "ocr_confidence": p.get("ocr_confidence")}
            entry["uncertain_words"] = p.get("uncertain_words", [])
        if folio is not None and folio != str(p["number"]):  # the page number the page prints, when another
            entry["locator"] = {**entry.get("locator", {"page": p["number"]}), "printed_page": folio}
        out.append(entry)
    return out


def read_other_kind(kind: str, path: str, max_pages: int) -> dict:
    """Read a file that is not a PDF: ``docx`` (:func:`tasks.ingest.docx.read_docx`) or ``image`` (a
    TIFF/PNG/JPEG page image, OCR'd: :func:`tasks.ingest.ocr.read_image`). Same result shape as
    :func:`extract`, plus ``changes``/``comments`` for a DOCX."""
    if kind == "docx":
        from tasks.ingest.docx import read_docx

        return read_docx(path, max_pages)
    if kind == "image":
        from tasks.ingest.ocr import read_image

        return read_image(path, max_pages, finish_pages)
    if kind == "html":
        from tasks.ingest.html import read_html

        return read_html(path, max_pages)
    return {"ok": False, "kind": "unsupported_kind", "reason": f"no reader for kind {kind!r}"}


def main(argv: list[str]) -> int:
    """Entry point: extract ``argv[1]`` with page limit ``argv[2]`` (options: see the module docstring)."""
    logging.disable(logging.CRITICAL)  # pypdf logs warnings for every recoverable defect
    warnings.simplefilter("ignore")
    rest = argv[3:]
    if "--kind" in rest:
        kind = rest[rest.index("--kind") + 1]
        try:
            result = read_other_kind(kind, argv[1], int(argv[2]))
        except MemoryError:
            result = {"ok": False, "kind": "memory_limit", "reason": "text extraction exceeded the memory limit"}
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        return 0
    pypdf_only = "--pypdf-only" in rest
    pypdf_pages: frozenset[int] = frozenset()
    if "--pypdf-pages" in rest:
        spec = rest[rest.index("--pypdf-pages") + 1]
        pypdf_pages = frozenset(int(x) for x in spec.split(",") if x)
    try:
        result = extract(argv[1], int(argv[2]), pypdf_only, pypdf_pages)
    except MemoryError:
        result = {"ok": False, "kind": "memory_limit", "reason": "text extraction exceeded the memory limit"}
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through tasks.ingest
    raise SystemExit(main(sys.argv))
