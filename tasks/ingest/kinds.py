"""Which format a file is, from its bytes (magic numbers), never from its name.

Signatures (first bytes of the file):

- PDF: ``%PDF-`` within the first 1024 bytes (ISO 32000-1 §7.5.2 allows leading junk; readers search
  that window);
- DOCX: a ZIP (``PK\\x03\\x04``, PKWARE APPNOTE §4.3.7) whose ``_rels/.rels`` names a main part (or that holds ``word/document.xml``)
  (ECMA-376 Part 2, Open Packaging Conventions);
- TIFF: ``II*\\0`` or ``MM\\0*`` (TIFF 6.0 §2); PNG: ``\\x89PNG\\r\\n\\x1a\\n`` (RFC 2083 §3.1); JPEG:
  ``\\xff\\xd8\\xff`` (ITU T.81 SOI marker followed by a marker);
- an OLE compound file (``\\xd0\\xcf\\x11\\xe0\\xa1\\xb1\\x1a\\xe1``, MS-CFB §2.2) is a legacy ``.doc`` or a
  password-protected Office file (Office encrypts a DOCX into an OLE container, MS-OFFCRYPTO §2.3.4.4);
- RTF: ``{\\rtf``;
- HTML: after an optional byte-order mark, XML declaration, comments and whitespace, ``<!DOCTYPE html`` or
  ``<html`` (WHATWG HTML §13.1; XHTML filings start with ``<?xml``), or EDGAR's complete submission text
  file (``<SEC-DOCUMENT>``, ``<SEC-HEADER>`` or ``<DOCUMENT>``, EDGAR Filer Manual Vol. II §5).

Only the first kinds are read; the others fail with a reason that says what to do. A file with none
of these signatures that is plain text (no control bytes but whitespace, and UTF-8 or named ``.txt``)
is told to be saved as PDF or DOCX.
"""

from __future__ import annotations

import re
import zipfile

from schemas.documents import DocumentKind

#: The formats docreview reads, as a reason names them.
SUPPORTED = "PDF, DOCX, HTML (EDGAR filings) and TIFF/PNG/JPEG page images"

#: File-name endings the S3 listing and the folder watcher take by default (a file is still read by its
#: bytes: a ``.pdf`` that is a DOCX is read as a DOCX).
SUPPORTED_SUFFIXES = (".pdf", ".docx", ".htm", ".html", ".tif", ".tiff", ".png", ".jpg", ".jpeg")

#: Bytes read to detect the kind.
HEAD_BYTES = 1024

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_IMAGE_SIGNATURES = (b"II*\x00", b"MM\x00*", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")


class UnsupportedKind(ValueError):
    """The file is not a kind docreview reads; the message is the reason a report shows."""


def detect_kind(path: str) -> DocumentKind:
    """The :class:`DocumentKind` of the file at ``path``, from its first bytes (and, for a ZIP, its
    central directory).

    Raises :class:`UnsupportedKind` (a reason naming what is read, and how to convert a legacy or
    encrypted Office file) and ``OSError`` when the file cannot be read.
    """
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _zip_kind(path)
    if any(head.startswith(sig) for sig in _IMAGE_SIGNATURES):
        return DocumentKind.image
    if b"%PDF-" in head:
        return DocumentKind.pdf
    if _is_html(head):
        return DocumentKind.html
    if head.startswith(_OLE):
        raise UnsupportedKind(
            "an OLE compound file: a legacy Word .doc or a password-protected Office file; save it as .docx "
            f"without a password (or convert it: libreoffice --headless --convert-to docx); docreview reads {SUPPORTED}"
        )
    if head.lstrip().startswith(b"{\\rtf"):
        raise UnsupportedKind(
            f"an RTF file; save it as .docx or PDF (libreoffice --headless --convert-to docx); docreview reads {SUPPORTED}"
        )
    hint = f"{PLAIN_TEXT_HINT}; " if _is_plain_text(head, path) else ""
    raise UnsupportedKind(
        f"not a supported document (no PDF, DOCX, HTML, TIFF, PNG or JPEG signature); {hint}docreview reads {SUPPORTED}"
    )


#: What a plain-text file's reason adds (:func:`_is_plain_text`).
PLAIN_TEXT_HINT = (
    "plain text: save it as PDF or DOCX (for example `pandoc contract.txt -o contract.docx`) and review that"
)
#: Bytes that plain text does not hold: C0 controls but tab, line feed, vertical tab, form feed and
#: carriage return; and DEL.
_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")


def _is_plain_text(head: bytes, path: str) -> bool:
    """True when ``head`` (the file's first bytes) holds no control byte but whitespace and is UTF-8
    (a character cut where ``head`` ends counts), or the file is named ``.txt`` (any 8-bit encoding)."""
    import codecs

    if not head or _BINARY.search(head):
        return False
    if path.lower().endswith(".txt"):
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


_XML_PROLOGUE = re.compile(rb"^(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*", re.S)
_HTML_START = re.compile(rb"<!doctype\s+html|<html[\s>]|<sec-document>|<sec-header>|<document>", re.I)


def _is_html(head: bytes) -> bool:
    """True when ``head`` starts (after a BOM, XML declaration, comments and whitespace) like HTML or an
    EDGAR complete submission text file."""
    m = _XML_PROLOGUE.match(head)
    rest = head[m.end() if m else 0 :]
    return bool(_HTML_START.match(rest))


def _zip_kind(path: str) -> DocumentKind:
    """A ZIP is a DOCX when its package names a WordprocessingML main part: the ``officeDocument``
    relationship of ``_rels/.rels`` (either namespace, :func:`tasks.ingest.docx.main_part`), or
    ``word/document.xml``, and it is not a spreadsheet or a presentation."""
    from tasks.ingest.docx import main_part

    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            main = main_part(zf)
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise UnsupportedKind(f"a corrupt ZIP archive ({exc}); docreview reads {SUPPORTED}") from exc
    if main is not None and not main.startswith(("xl/", "ppt/")):
        return DocumentKind.docx
    if any(n.startswith("xl/") for n in names) or any(n.startswith("ppt/") for n in names):
        raise UnsupportedKind(f"an Excel or PowerPoint file, not a Word document; docreview reads {SUPPORTED}")
    raise UnsupportedKind(f"a ZIP archive without word/document.xml (not a DOCX); docreview reads {SUPPORTED}")


#: The default of every ``suffix`` setting: the endings of :data:`SUPPORTED_SUFFIXES`, comma-separated.
DEFAULT_SUFFIXES = ",".join(SUPPORTED_SUFFIXES)


def name_wanted(name: str, suffixes: str) -> bool:
    """True when ``name`` ends in one of ``suffixes`` (comma-separated endings, case-insensitive, e.g.
    ``".pdf,.docx"``); an empty ``suffixes`` takes every name."""
    endings = tuple(s.strip().lower() for s in suffixes.split(",") if s.strip())
    return not endings or name.lower().endswith(endings)
