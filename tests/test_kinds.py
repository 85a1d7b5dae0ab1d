"""The kind of a document comes from its bytes, not its name; the listing defaults take every kind read."""

from __future__ import annotations

import zipfile

import pytest

from schemas.documents import DocumentKind, FailureKind, SourceObject
from schemas.settings import Limits
from tasks.ingest.kinds import DEFAULT_SUFFIXES, UnsupportedKind, detect_kind, name_wanted
from tasks.ingest.local import precheck_kind


def _zip(path, names):
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, "<x/>")
    return path


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"%PDF-1.7\n", DocumentKind.pdf),
        (b"garbage before the header %PDF-1.4\n", DocumentKind.pdf),
        (b"II*\x00\x08\x00\x00\x00", DocumentKind.image),
        (b"MM\x00*\x00\x00\x00\x08", DocumentKind.image),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", DocumentKind.image),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", DocumentKind.image),
        (b"<?xml version='1.0' encoding='ASCII'?>\n<!--XBRL Document-->\n<html xmlns:ix=", DocumentKind.html),
        (b"\xef\xbb\xbf<!DOCTYPE html>\n<html>", DocumentKind.html),
        (b"  <HTML><BODY>", DocumentKind.html),
        (b"<SEC-DOCUMENT>0000320193-24-000123.txt : 20241101\n<SEC-HEADER>", DocumentKind.html),
    ],
)
def test_signatures_name_the_kind_whatever_the_file_is_called(tmp_path, head, kind):
    path = tmp_path / "misnamed.docx"
    path.write_bytes(head + b"\x00" * 64)
    assert detect_kind(str(path)) is kind


def test_a_zip_is_a_docx_only_with_word_document_xml(tmp_path):
    assert detect_kind(str(_zip(tmp_path / "a.pdf", ["[Content_Types].xml", "word/document.xml"]))) is DocumentKind.docx
    with pytest.raises(UnsupportedKind, match=r"without word/document\.xml"):
        detect_kind(str(_zip(tmp_path / "b.docx", ["[Content_Types].xml", "other.xml"])))
    with pytest.raises(UnsupportedKind, match="Excel or PowerPoint"):
        detect_kind(str(_zip(tmp_path / "c.docx", ["xl/workbook.xml"])))
    broken = tmp_path / "d.docx"
    broken.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(UnsupportedKind, match="corrupt ZIP"):
        detect_kind(str(broken))


def test_real_edgar_filings_are_html(shared_data):
    files = sorted((shared_data / "edgar-html").glob("*.html"))
    assert len(files) >= 6
    assert {detect_kind(str(f)) for f in files} == {DocumentKind.html}


def test_legacy_and_encrypted_office_files_say_how_to_convert(tmp_path):
    ole = tmp_path / "draft.docx"  # a password-protected DOCX is an OLE container (MS-OFFCRYPTO)
    ole.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504)
    with pytest.raises(UnsupportedKind, match=r"legacy Word \.doc or a password-protected") as info:
        detect_kind(str(ole))
    assert "--convert-to docx" in str(info.value)
    rtf = tmp_path / "memo.rtf"
    rtf.write_bytes(b"{\\rtf1\\ansi hello}")
    with pytest.raises(UnsupportedKind, match="RTF"):
        detect_kind(str(rtf))


def test_the_precheck_fails_an_unknown_kind_naming_the_kinds_read(tmp_path):
    path = tmp_path / "notes.pdf"
    path.write_text("plain text")
    obj = SourceObject(uri=str(path), name=path.name, local_path=str(path), size_bytes=path.stat().st_size)
    failure = precheck_kind(obj, Limits())
    assert isinstance(failure, tuple)
    assert failure[0] is FailureKind.unsupported_kind
    assert "docreview reads PDF, DOCX, HTML (EDGAR filings) and TIFF/PNG/JPEG page images" in failure[1]


def test_listing_defaults_take_every_kind_read():
    for name in ("a.pdf", "B.DOCX", "f.htm", "f.HTML", "scan.tif", "scan.TIFF", "p.png", "p.jpg", "p.jpeg"):
        assert name_wanted(name, DEFAULT_SUFFIXES), name
    assert not name_wanted("notes.txt", DEFAULT_SUFFIXES)
    assert name_wanted("notes.txt", "")
    assert name_wanted("x.PDF", ".pdf") and not name_wanted("x.docx", ".pdf")
    assert name_wanted("x.docx", " .pdf , .docx ")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("contract.txt", b"MASTER SERVICES AGREEMENT\n\n1. Term. This Agreement runs for two years.\r\n"),
        ("contract", "Cl\u00e1usula 7 \u2014 L\u00edmite de responsabilidad: \u20ac500.000\n".encode()),  # UTF-8
        ("memo.txt", b"Liability capped at \xa35,000 (Latin-1, named .txt)\n"),
        ("long", ("a" + "\u00e9" * 600).encode()),  # UTF-8 with a character cut where the bytes read end
    ],
)
def test_a_plain_text_file_is_told_how_to_make_it_a_document(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UnsupportedKind) as info:
        detect_kind(str(path))
    reason = str(info.value)
    assert reason.startswith("not a supported document (no PDF, DOCX, HTML, TIFF, PNG or JPEG signature); plain text:")
    assert "save it as PDF or DOCX (for example `pandoc contract.txt -o contract.docx`) and review that" in reason
    assert reason.endswith("docreview reads PDF, DOCX, HTML (EDGAR filings) and TIFF/PNG/JPEG page images")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("blob.bin", b"\x00\x01\x02binary\x00"),
        ("blob.txt", b"text then a NUL \x00 byte"),  # binary bytes: whatever its name
        ("latin1.dat", b"Liability capped at \xa35,000"),  # not UTF-8 and not named .txt
        ("gzip.txt", b"\x1f\x8b\x08\x00"),
    ],
)
def test_a_binary_file_gets_no_plain_text_hint(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UnsupportedKind, match=r"^not a supported document \(no PDF") as info:
        detect_kind(str(path))
    assert "plain text" not in str(info.value)
