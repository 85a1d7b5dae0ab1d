"""Word documents as Word opens them: the main part found through ``_rels/.rels`` (the officeDocument
relationship, not a fixed name), and OOXML Strict namespaces. Both test documents are made in code from a
real CUAD contract (``docreview_testing.docx_maker``)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from docreview_testing.docx_maker import make_contract_docx, to_strict, with_main_part, write_docx
from schemas.documents import DocumentKind
from tasks.ingest.docx import main_part, read_docx
from tasks.ingest.kinds import UnsupportedKind, detect_kind

CONTRACT = "ADIANUTRITION,INC_04_01_2005-EX-10.D2-RESELLER AGREEMENT.txt"


@pytest.fixture(scope="module")
def drafts(shared_data: Path, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("docx")
    text = (shared_data / "cuad" / "txt" / CONTRACT).read_text(encoding="utf-8", errors="replace")
    plain = folder / "transitional.docx"
    make_contract_docx(text, plain, clause_headings=True)
    strict = to_strict(plain, folder / "strict.docx")
    renamed = with_main_part(plain, folder / "renamed.docx", "word/document2.xml")
    both = with_main_part(strict, folder / "strict-renamed.docx", "word/main.xml")
    return {"transitional": plain, "strict": strict, "renamed": renamed, "strict-renamed": both}


def test_the_generated_documents_are_what_they_claim(drafts):
    with zipfile.ZipFile(drafts["strict"]) as zf:
        document = zf.read("word/document.xml").decode()
        package = zf.read("_rels/.rels").decode()
    assert 'w:conformance="strict"' in document and "http://purl.oclc.org/ooxml/wordprocessingml/main" in document
    assert "schemas.openxmlformats.org/wordprocessingml" not in document
    assert "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument" in package
    with zipfile.ZipFile(drafts["renamed"]) as zf:
        names = set(zf.namelist())
        assert "word/document.xml" not in names and {"word/document2.xml", "word/_rels/document2.xml.rels"} <= names
        assert main_part(zf) == "word/document2.xml"


@pytest.mark.parametrize("name", ["strict", "renamed", "strict-renamed"])
def test_strict_and_renamed_main_parts_read_as_the_transitional_draft(drafts, name):
    assert detect_kind(str(drafts[name])) is DocumentKind.docx
    expected = read_docx(str(drafts["transitional"]), 5000)
    got = read_docx(str(drafts[name]), 5000)
    assert got["ok"], got.get("reason")
    assert [p["text"] for p in got["pages"]] == [p["text"] for p in expected["pages"]]
    assert [p["locator"] for p in got["pages"]] == [p["locator"] for p in expected["pages"]]
    assert got["changes"] == expected["changes"] and got["comments"] == expected["comments"]
    assert len(got["pages"]) > 20 and len(got["changes"]) == 2  # numbering, the redline and comment came through


def test_a_zip_naming_no_main_part_is_refused_with_a_reason(tmp_path):
    empty_rels = tmp_path / "norels.docx"
    with zipfile.ZipFile(empty_rels, "w") as zf:
        zf.writestr(
            "_rels/.rels", '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>'
        )
        zf.writestr("word/other.xml", "<x/>")
    with pytest.raises(UnsupportedKind, match="not a DOCX"):
        detect_kind(str(empty_rels))
    got = read_docx(str(empty_rels), 100)
    assert not got["ok"] and got["kind"] == "corrupt" and "names no main document part" in got["reason"]
    # an officeDocument target that is not in the ZIP falls back to word/document.xml when that exists
    plain = write_docx(tmp_path / "plain.docx", "<w:p><w:r><w:t>Hello.</w:t></w:r></w:p>")
    broken = tmp_path / "dangling.docx"
    with zipfile.ZipFile(plain) as zin, zipfile.ZipFile(broken, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "_rels/.rels":
                data = data.replace(b"word/document.xml", b"word/missing.xml")
            zout.writestr(info, data)
    with zipfile.ZipFile(broken) as zf:
        assert main_part(zf) == "word/document.xml"
    assert read_docx(str(broken), 100)["ok"]


def test_strict_and_renamed_drafts_are_reviewed(drafts, tmp_path, prefect_harness):
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name in ("strict", "renamed"):
        (inbox / f"{name}.docx").write_bytes(drafts[name].read_bytes())
    try:
        review_documents(
            source=str(inbox),
            out_dir=str(tmp_path / "out"),
            database_url=f"sqlite:///{tmp_path / 'r.db'}",
            backend="rules",
        )
    finally:
        dispose_engines()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    by_name = {d["file_name"]: d for d in report["documents"]}
    assert set(by_name) == {"strict.docx", "renamed.docx"}
    for doc in by_name.values():
        assert doc["status"] == "reviewed" and doc["kind"] == "docx", doc.get("reason")
        assert doc["findings"] and len(doc["redline"]) == 2
