"""Small PDFs for the text-extraction cases: ligatures without Unicode, running footers across a
page break, glued words and decompression bombs.

Written byte by byte (:func:`raw_pdf`) where fpdf2 cannot produce the case (a font whose
``/ToUnicode`` maps ligature glyphs to private-use code points or NUL, marked content with
``/ActualText``, a Flate stream that expands far beyond its size), with fpdf2 otherwise. Output is
deterministic. Each function returns the path written.
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF

#: Sentence that runs from page 1 to page 2 of :func:`footer_seam_pdf` (a faithful quote of it
#: crosses the page break, with the page's footer between its two halves in the text layer).
SEAM_HEAD = "The Supplier shall indemnify and hold harmless the Customer from and against"
SEAM_TAIL = "all losses, damages and expenses arising out of any breach of this Agreement."

#: Text of :func:`ligature_pdf` as a reader sees it on paper.
LIGATURE_TEXT = (
    "The Federal Office shall keep all information in confidence. The Chauffeur shall drive the Officer to the office."
)


def raw_pdf(path: Path, contents: list[bytes | tuple[str, bytes]], tounicode: bytes | None = None) -> Path:
    """Write a PDF of one page per entry of ``contents`` (page content streams, Flate-compressed
    here; a ``("deflated", data)`` entry is written as already compressed) using Helvetica
    (WinAnsiEncoding) as ``/F1``, with ``tounicode`` as its ``/ToUnicode`` CMap when given."""
    objs: dict[int, bytes] = {}
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding"
    if tounicode is not None:
        font += b" /ToUnicode 4 0 R"
        objs[4] = b"<< /Length %d >>\nstream\n" % len(tounicode) + tounicode + b"\nendstream"
    objs[3] = font + b" >>"
    kids, nxt = [], 5
    for content in contents:
        page_id, content_id = nxt, nxt + 1
        nxt += 2
        kids.append(page_id)
        objs[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R >>" % content_id
        )
        data = content[1] if isinstance(content, tuple) else zlib.compress(content, 9)
        objs[content_id] = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"
    objs[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objs[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.7\n")
    offsets: dict[int, int] = {}
    for num in sorted(objs):
        offsets[num] = len(out)
        out += b"%d 0 obj\n" % num + objs[num] + b"\nendobj\n"
    size = max(objs) + 1
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for num in range(1, size):
        out += b"%010d 00000 n \n" % offsets[num] if num in offsets else b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    Path(path).write_bytes(bytes(out))
    return Path(path)


def _tounicode(targets: dict[int, str]) -> bytes:
    """A ToUnicode CMap: codes 0x20-0x7E to themselves, plus ``targets`` (code → UTF-16 hex)."""
    chars = "\n".join(f"<{code:02X}> <{dst}>" for code, dst in sorted(targets.items()))
    return (
        b"/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        b"/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 begincodespacerange\n<00> <FF>\nendcodespacerange\n"
        b"1 beginbfrange\n<20> <7E> <0020>\nendbfrange\n"
        + b"%d beginbfchar\n" % len(targets)
        + chars.encode()
        + b"\nendbfchar\n"
        b"endcmap\nCMapName currentdict /defineresource pop\nend\nend"
    )


def ligature_pdf(path: Path, marker: str = "private_use", actual_text: bool = True) -> Path:
    """One page reading :data:`LIGATURE_TEXT`, whose ffi, fi and ff glyphs (codes 1, 2, 3) the
    font maps to private-use code points (``marker="private_use"``: U+E001-U+E003) or all to NUL
    (``marker="nul"``). With ``actual_text``, each ligature is a marked-content span whose
    ``/ActualText`` holds its letters (as Word and InDesign write them)."""
    if marker not in ("private_use", "nul"):
        raise ValueError("marker must be 'private_use' or 'nul'")
    codes = {1: "ffi", 2: "fi", 3: "ff"}
    targets = {c: (f"E00{c}" if marker == "private_use" else "0000") for c in codes}

    def lig(code: int) -> bytes:
        glyph = b"<%02X> Tj" % code
        if actual_text:
            return b"/Span <</ActualText (%s)>> BDC " % codes[code].encode() + glyph + b" EMC"
        return glyph

    line1 = [b"(The Federal O) Tj", lig(1), b"(ce shall keep all information in con) Tj", lig(2), b"(dence.) Tj"]
    line2 = [b"(The Chau) Tj", lig(3), b"(eur shall drive the O) Tj", lig(1), b"(cer to the o) Tj", lig(1), b"(ce.) Tj"]
    content = (
        b"BT /F1 12 Tf 72 700 Td " + b" ".join(line1) + b" ET\nBT /F1 12 Tf 72 680 Td " + b" ".join(line2) + b" ET"
    )
    return raw_pdf(path, [content], tounicode=_tounicode(targets))


#: What :func:`split_ligature_pdf` says, read right (each "ff"/"ffi" is drawn as "f" and a gap).
SPLIT_LIGATURE_TEXT = (
    "The effects of the change have affected our offerings, and the Officer of the set shall report them."
)


def split_ligature_pdf(path: Path) -> Path:
    """One page reading :data:`SPLIT_LIGATURE_TEXT` as fonts that map an ff or ffi ligature glyph to a
    lone "f" draw it: the "f", then the rest of the glyph's width as empty space, where PDFium adds a
    space ("The ef ects of …", as in the 2015-2022 3M 10-Ks). "of the set" is set normally."""
    gap = b") -300 ("
    line = (
        b"(The ef"
        + gap
        + b"ects of the change have af"
        + gap
        + b"ected our of"
        + gap
        + b"erings, and the Of"
        + gap
        + b"icer of the set shall report them.)"
    )
    return raw_pdf(path, [b"BT /F1 11 Tf 72 700 Td [" + line + b"] TJ ET"])


class _FooterPDF(FPDF):
    def __init__(self, header_text: str) -> None:
        super().__init__(format="A4")
        self.header_text = header_text
        self.set_creation_date(datetime(2024, 1, 1, tzinfo=UTC))
        self.set_auto_page_break(auto=False)
        self.set_margins(20, 20, 20)

    def header(self) -> None:
        self.set_font("Helvetica", size=8)
        self.cell(0, 5, self.header_text, align="R")
        self.ln(10)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", size=8)
        self.cell(0, 5, f"Page {self.page_no()} of {{nb}}", align="C")


def footer_seam_pdf(path: Path, pages: int = 3, header: str = "Northwind Traders - Master Services Agreement") -> Path:
    """A contract of ``pages`` pages (at least 2) with a running header and a ``Page N of M``
    footer; the sentence :data:`SEAM_HEAD` + :data:`SEAM_TAIL` starts at the bottom of page 1
    and ends at the top of page 2."""
    if pages < 2:
        raise ValueError("the seam needs two pages")
    body = [
        [
            "1. SERVICES. Supplier shall provide the services described in each statement of work.",
            "2. FEES. Customer shall pay the fees within thirty (30) days after receipt of a correct invoice.",
            "3. INDEMNITY. " + SEAM_HEAD,
        ],
        [SEAM_TAIL, "4. TERM. This Agreement continues for three (3) years from the Effective Date."],
    ] + [[f"{k + 3}. NOTICES. Notices under this Agreement shall be in writing (copy {k})."] for k in range(2, pages)]
    pdf = _FooterPDF(header)
    for paragraphs in body:
        pdf.add_page()
        pdf.set_font("Helvetica", size=10)
        for para in paragraphs:
            pdf.multi_cell(0, 5, para)
            pdf.ln(2)
    pdf.output(str(path))
    return Path(path)


def glued_pdf(path: Path) -> Path:
    """One page of contract text written without spaces between words (both extractors read it
    glued), followed by nothing else."""
    words = [
        "This",
        "Agreement",
        "shall",
        "be",
        "governed",
        "by",
        "the",
        "laws",
        "of",
        "the",
        "State",
        "of",
        "New",
        "York",
        "and",
        "each",
        "party",
        "submits",
        "to",
        "the",
        "exclusive",
        "jurisdiction",
        "of",
        "its",
        "courts",
        "for",
        "every",
        "dispute",
        "arising",
        "out",
        "of",
        "this",
        "Agreement",
    ]
    lines = []
    for k in range(0, len(words), 6):
        lines.append("".join(words[k : k + 6]))
    content = b"BT /F1 11 Tf 72 720 Td 14 TL " + b" ".join(b"(%s) Tj T*" % line.encode() for line in lines * 3) + b" ET"
    return raw_pdf(path, [content])


def deflate_bomb(expanded_bytes: int, prefix: bytes = b"") -> bytes:
    """A zlib stream that inflates to ``prefix`` followed by ``expanded_bytes`` spaces, built from
    one compressed 16 MiB block repeated (a full flush makes each repeat identical), so writing a
    gigabyte bomb takes a fraction of a second and about a thousandth of its size."""
    block = b" " * (1 << 24)
    comp = zlib.compressobj(9)
    head = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH)
    body = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    repeats, rest = divmod(expanded_bytes, len(block))
    tail = comp.compress(b" " * rest) + comp.flush()
    checksum = zlib.adler32(prefix)
    for _ in range(repeats):
        checksum = zlib.adler32(block, checksum)
    checksum = zlib.adler32(b" " * rest, checksum)
    return head + body * repeats + tail[:-4] + checksum.to_bytes(4, "big")


def bomb_pdf(path: Path, expanded_bytes: int = 80_000_000, good_pages: int = 1) -> Path:
    """A PDF whose page ``good_pages + 1`` has a content stream that expands to ``expanded_bytes``
    bytes (default: just over pypdf's 75 MB ``ZLIB_MAX_OUTPUT_LENGTH``, so pypdf raises
    ``LimitReachedError``); ``good_pages`` ordinary pages come before and after it."""
    good = [
        b"BT /F1 12 Tf 72 700 Td (Page %d of this agreement has ordinary text on it.) Tj ET" % (k + 1)
        for k in range(2 * good_pages + 1)
    ]
    bomb = deflate_bomb(expanded_bytes, prefix=b"BT /F1 12 Tf 72 700 Td (Bomb page text.) Tj ET\n")
    pages: list[bytes | tuple[str, bytes]] = [*good[:good_pages], ("deflated", bomb), *good[good_pages + 1 :]]
    return raw_pdf(path, pages)
