"""EDGAR exhibits as documents of their own, linked to their filing: the real Buckle 8-K and its
EX-99.1 press release (as EDGAR serves them, each file a ``<DOCUMENT>`` with its header), the real
Nordstrom 8-K whose exhibit index links two EX-10 exhibits, and one of those exhibits made in code from
a real CUAD contract (an EX-10 is reviewed as a contract)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from tasks.ingest.html import exhibit_links, read_html

CONTRACT = "ADIANUTRITION,INC_04_01_2005-EX-10.D2-RESELLER AGREEMENT.txt"


def _exhibit_html(text: str, doc_type: str, filename: str) -> str:
    """A contract's text as one EDGAR ``<DOCUMENT>`` of ``doc_type`` (an HTML exhibit, a paragraph a line)."""
    paragraphs = "\n".join(f"<p>{html.escape(line)}</p>" for line in text.splitlines() if line.strip())
    return (
        f"<DOCUMENT>\n<TYPE>{doc_type}\n<SEQUENCE>2\n<FILENAME>{filename}\n<DESCRIPTION>{doc_type}\n<TEXT>\n"
        f"<html><body>{paragraphs}</body></html>\n</TEXT>\n</DOCUMENT>\n"
    )


def test_exhibit_links_are_the_exhibit_index_files() -> None:
    from lxml import html as lhtml

    root = lhtml.fromstring(
        """<html><body><table>
        <tr><td>10.1</td><td><a style="-sec-extract:exhibit" href="ex101.htm">Credit Agreement</a></td></tr>
        <tr><td>99.1</td><td><a href="https://www.sec.gov/Archives/edgar/data/1/0001-20-1/d1dex991.htm#x">Press</a></td></tr>
        <tr><td>31.1</td><td><a href="./ex311.htm?v=2">Certification</a></td></tr>
        <tr><td></td><td><a href="#item1">Item 1</a> <a href="https://www.example.com/">site</a> <a href="ex101.htm">again</a></td></tr>
        </table></body></html>"""
    )
    # the marked link, then the relative one; a link to another site is an exhibit only when EDGAR marks it
    assert exhibit_links(root) == ["ex101.htm", "ex311.htm"]


def test_an_exhibit_file_carries_its_edgar_header_and_a_filing_its_links(shared_data: Path) -> None:
    exhibit = read_html(str(shared_data / "edgar-html" / "BuckleInc.8-K.EX99.1.html"), 5000)
    assert exhibit["edgar"] == {
        "type": "EX-99.1",
        "sequence": "2",
        "filename": "bke20241122-8kexhibit.htm",
        "description": "EX-99.1",
    }
    filing = read_html(str(shared_data / "edgar-html" / "BuckleInc.8-K.html"), 5000)
    assert filing["edgar"] == {} and filing["exhibit_links"] == ["bke20241122-8kexhibit.htm"]
    nordstrom = read_html(str(shared_data / "edgar-html" / "form8k.Nordstrom.html"), 5000)
    assert nordstrom["exhibit_links"] == ["jwn-03062023xex101.htm", "jwn-03062023xex102.htm"]


@pytest.fixture(scope="module")
def reviewed(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    root = tmp_path_factory.mktemp("exhibits")
    inbox = root / "inbox"
    inbox.mkdir()
    for name in ("BuckleInc.8-K.html", "BuckleInc.8-K.EX99.1.html", "form8k.Nordstrom.html"):
        (inbox / name).symlink_to(shared_data / "edgar-html" / name)
    text = (shared_data / "cuad" / "txt" / CONTRACT).read_text(encoding="utf-8", errors="replace")
    (inbox / "jwn-ex101.html").write_text(_exhibit_html(text, "EX-10.1", "jwn-03062023xex101.htm"))
    try:
        review_documents(
            source=str(inbox),
            out_dir=str(root / "out"),
            database_url=f"sqlite:///{root / 'r.db'}",
            backend="rules",
        )
    finally:
        dispose_engines()
    report = json.loads((root / "out" / "report.json").read_text())
    return {d["file_name"]: d for d in report["documents"]}, (root / "out" / "report.html").read_text()


def test_a_press_release_exhibit_is_linked_to_its_8k(reviewed) -> None:
    docs, page = reviewed
    release, filing = docs["BuckleInc.8-K.EX99.1.html"], docs["BuckleInc.8-K.html"]
    assert release["status"] == filing["status"] == "reviewed"
    assert release["document_type"] == "earnings release" and release["edgar"]["type"] == "EX-99.1"
    # its own quarter, not the prior-year quarter it compares with ("... period ended November 4, 2023")
    assert release["period"] == "2024-11-02"
    assert release["exhibit_of"]["file_name"] == "BuckleInc.8-K.html"
    assert release["exhibit_of"]["sha256"] == filing["sha256"]
    assert filing["exhibit_of"] is None and filing["period"] == "2024-11-22"  # an 8-K's date of report
    assert filing["exhibits"] == [
        {
            "type": "EX-99.1",
            "filename": "bke20241122-8kexhibit.htm",
            "file_name": "BuckleInc.8-K.EX99.1.html",
            "sha256": release["sha256"],
            "status": "reviewed",
        }
    ]
    assert filing["exhibits_elsewhere"] == 0
    assert "EDGAR document EX-99.1 (bke20241122-8kexhibit.htm) — exhibit to the 8-K" in page


def test_an_ex10_exhibit_is_reviewed_as_a_contract(reviewed) -> None:
    docs, page = reviewed
    contract, filing = docs["jwn-ex101.html"], docs["form8k.Nordstrom.html"]
    assert contract["status"] == "reviewed" and contract["profile"] == "contract"
    assert "EX-10.1" in contract["profile_reason"]
    assert contract["findings"] and all(f["clause_type"] != "other" for f in contract["findings"])
    assert contract["exhibit_of"]["file_name"] == "form8k.Nordstrom.html"
    linked = {x["filename"]: x for x in filing["exhibits"]}
    assert linked["jwn-03062023xex101.htm"]["file_name"] == "jwn-ex101.html"
    assert filing["exhibits_elsewhere"] == 1  # jwn-03062023xex102.htm was not uploaded
    assert "1 other linked exhibit file(s) not in this run" in page


# --------------------------------------------------------------------------- a complete submission file


def _submission(shared_data: Path) -> bytes:
    """A complete submission file of the Buckle 8-K: the 8-K, its EX-99.1, an EX-10.1 made from a CUAD
    contract, a uuencoded graphic and an XBRL instance (EX-101.INS), as EDGAR assembles them."""
    form = (shared_data / "edgar-html" / "BuckleInc.8-K.html").read_bytes()
    release = (shared_data / "edgar-html" / "BuckleInc.8-K.EX99.1.html").read_bytes()  # already a <DOCUMENT>
    text = (shared_data / "cuad" / "txt" / CONTRACT).read_text(encoding="utf-8", errors="replace")
    contract = _exhibit_html(text, "EX-10.1", "bke-ex101.htm").replace("<SEQUENCE>2", "<SEQUENCE>3").encode()
    return (
        b"<SEC-DOCUMENT>0000885245-24-000050.txt : 20241122\n<SEC-HEADER>0000885245-24-000050.hdr.sgml : 20241122\n"
        b"ACCESSION NUMBER:\t\t0000885245-24-000050\nCONFORMED SUBMISSION TYPE:\t8-K\n</SEC-HEADER>\n"
        b"<DOCUMENT>\n<TYPE>8-K\n<SEQUENCE>1\n<FILENAME>bke-20241122.htm\n<DESCRIPTION>8-K\n<TEXT>\n"
        + form
        + b"\n</TEXT>\n</DOCUMENT>\n"
        + release
        + contract
        + b"<DOCUMENT>\n<TYPE>GRAPHIC\n<SEQUENCE>4\n<FILENAME>logo.jpg\n<TEXT>\nbegin 644 logo.jpg\nM_]C_X``0\nend\n"
        b"</TEXT>\n</DOCUMENT>\n"
        b"<DOCUMENT>\n<TYPE>EX-101.INS\n<SEQUENCE>5\n<FILENAME>bke-20241122_htm.xml\n<TEXT>\n<XBRL><xbrli:xbrl/></XBRL>\n"
        b"</TEXT>\n</DOCUMENT>\n</SEC-DOCUMENT>\n"
    )


def test_a_submission_file_yields_its_text_exhibits(shared_data: Path, tmp_path: Path) -> None:
    from tasks.ingest.submission import submission_exhibits

    path = tmp_path / "0000885245-24-000050.txt"
    path.write_bytes(_submission(shared_data))
    found = submission_exhibits(str(path))
    assert [h for h, _ in found] == [
        {"type": "EX-99.1", "sequence": "2", "filename": "bke20241122-8kexhibit.htm", "description": "EX-99.1"},
        {"type": "EX-10.1", "sequence": "3", "filename": "bke-ex101.htm", "description": "EX-10.1"},
    ]  # not the graphic, not the XBRL instance
    assert all(block.startswith(b"<DOCUMENT>") and block.endswith(b"</DOCUMENT>") for _, block in found)
    (tmp_path / "plain.txt").write_text("<DOCUMENT> is mentioned in a note, but this is not a submission")
    assert submission_exhibits(str(tmp_path / "plain.txt")) == []
    assert submission_exhibits(str(tmp_path / "missing.txt")) == []


def test_a_submission_file_is_reviewed_as_its_filing_and_its_exhibits(shared_data: Path, tmp_path: Path) -> None:
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "0000885245-24-000050.txt").write_bytes(_submission(shared_data))
    db = f"sqlite:///{tmp_path / 'r.db'}"
    try:
        for out in ("out1", "out2"):  # the second run reuses all three
            review_documents(source=str(inbox), out_dir=str(tmp_path / out), database_url=db, backend="rules")
    finally:
        dispose_engines()
    first = json.loads((tmp_path / "out1" / "report.json").read_text())
    docs = {d["file_name"]: d for d in first["documents"]}
    filing = docs["0000885245-24-000050.txt"]
    release = docs["0000885245-24-000050.txt › EX-99.1 bke20241122-8kexhibit.htm"]
    contract = docs["0000885245-24-000050.txt › EX-10.1 bke-ex101.htm"]
    assert len(docs) == 3 and {d["status"] for d in docs.values()} == {"reviewed"}
    assert release["source"].endswith("0000885245-24-000050.txt#bke20241122-8kexhibit.htm")
    assert filing["document_type"] == "8-K" and release["document_type"] == "earnings release"
    assert contract["profile"] == "contract" and contract["findings"]
    assert release["exhibit_of"]["file_name"] == contract["exhibit_of"]["file_name"] == filing["file_name"]
    assert [(x["type"], x["file_name"]) for x in filing["exhibits"]] == [
        ("EX-99.1", release["file_name"]),
        ("EX-10.1", contract["file_name"]),
    ]
    second = json.loads((tmp_path / "out2" / "report.json").read_text())
    assert second["run"]["metrics"]["documents_skipped"] == 3  # unchanged: reused, not reviewed again
    assert not list(Path(__import__("tempfile").gettempdir()).glob("docreview-s3-*/2-bke20241122-8kexhibit.htm"))


def test_an_exhibit_uploaded_alone_and_inside_a_submission_links_to_its_own_filing() -> None:
    """The same EX-99.1 twice in one run: split out of a submission file, and as the file beside the 8-K."""
    from tasks.observe.report import link_exhibits

    edgar = {"type": "EX-99.1", "filename": "bke20241122-8kexhibit.htm"}
    docs = [
        {
            "source": "/in/sub.txt",
            "file_name": "sub.txt",
            "sha256": "1",
            "edgar": None,
            "exhibit_links": [],
            "submission_parts": [{"type": "EX-99.1", "filename": "bke20241122-8kexhibit.htm"}],
        },
        {
            "source": "/in/sub.txt#bke20241122-8kexhibit.htm",
            "file_name": "sub part",
            "sha256": "2",
            "edgar": edgar,
            "status": "reviewed",
        },
        {
            "source": "/in/8-K.html",
            "file_name": "8-K.html",
            "sha256": "3",
            "edgar": None,
            "exhibit_links": ["bke20241122-8kexhibit.htm"],
        },
        {"source": "/in/ex99.html", "file_name": "ex99.html", "sha256": "4", "edgar": edgar, "status": "reviewed"},
    ]
    link_exhibits(docs)
    by = {d["file_name"]: d for d in docs}
    assert by["sub part"]["exhibit_of"]["file_name"] == "sub.txt"
    assert by["ex99.html"]["exhibit_of"]["file_name"] == "8-K.html"
    assert [x["file_name"] for x in by["sub.txt"]["exhibits"]] == ["sub part"]
    assert [x["file_name"] for x in by["8-K.html"]["exhibits"]] == ["ex99.html"]
