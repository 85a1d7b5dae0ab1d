"""The DOCX reader (tasks/ingest/docx.py) on Word drafts made from CUAD contracts (docreview_testing/docx_maker.py)
and on hand-written WordprocessingML: accepted text, tracked changes, comments, automatic numbering, section
locators, tables, notes, headers/footers, and the bad inputs that must fail with a reason."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from lxml import etree

from docreview_testing.docx_maker import NUMBERING, _items, make_contract_docx, write_docx
from schemas.documents import DocumentKind, FailureKind, Locator
from schemas.settings import Limits
from tasks.ingest.docx import format_number, read_docx, title_like
from tasks.ingest.extract import extract_document, run_extraction
from tasks.ingest.kinds import UnsupportedKind, detect_kind
from tasks.ingest.local import list_local_source
from tasks.ingest.sources import fingerprint_document

CUAD_NAME = "ADIANUTRITION,INC_04_01_2005-EX-10.D2-RESELLER AGREEMENT.txt"


@pytest.fixture(scope="module")
def cuad_text(shared_data: Path) -> str:
    path = shared_data / "cuad" / "txt" / CUAD_NAME
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def draft(cuad_text, tmp_path_factory):
    """The contract as a Word draft, its ground truth and the reader's result."""
    path = tmp_path_factory.mktemp("docx") / "reseller.docx"
    truth = make_contract_docx(cuad_text, path)
    result = read_docx(str(path), 1000)
    assert result["ok"], result
    return path, truth, result


def unit_starting(result: dict, prefix: str) -> dict:
    return next(p for p in result["pages"] if p["text"].startswith(prefix))


def para(text: str, ppr: str = "") -> str:
    return f'<w:p>{ppr}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


# --------------------------------------------------------------------------- the draft contract


def test_draft_is_a_well_formed_package(draft):
    path, _, _ = draft
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        assert {"[Content_Types].xml", "_rels/.rels", "word/document.xml", "word/_rels/document.xml.rels"} <= names
        assert {
            "word/styles.xml",
            "word/numbering.xml",
            "word/comments.xml",
            "word/header1.xml",
            "word/footer1.xml",
        } <= names
        parts = {n: etree.fromstring(zf.read(n)) for n in names}  # every part is well-formed XML
    ct = "{http://schemas.openxmlformats.org/package/2006/content-types}"
    overrides = {o.get("PartName") for o in parts["[Content_Types].xml"].iter(f"{ct}Override")}
    assert {f"/{n}" for n in names if not n.endswith(".rels") and n != "[Content_Types].xml"} <= overrides
    rel = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
    targets = {r.get("Target") for r in parts["word/_rels/document.xml.rels"].iter(rel)}
    assert {f"word/{t}" for t in targets} <= names
    assert {r.get("Target") for r in parts["_rels/.rels"].iter(rel)} <= names
    # the clause numbers are not typed: numbering.xml prints them
    document = zipfile.ZipFile(path).read("word/document.xml").decode()
    assert "4.3 LIMITATION" not in document and ">WARRANTY AND LIABILITY<" in document


def test_text_is_the_draft_with_every_change_accepted(draft):
    _, truth, result = draft
    text = "\n".join(p["text"] for p in result["pages"])
    assert "$5,000,000" in text and "$1,000,000" not in text
    assert truth.cap_sentence in text
    assert truth.insertion.strip() in text
    assert result["engines"] == {"docx": len(result["pages"])}
    assert result["encrypted"] is False
    assert [p["number"] for p in result["pages"]] == list(range(1, len(result["pages"]) + 1))
    quality = result["pages"][5]["quality"]
    assert quality["extractor"] == "docx" and quality["ocr"] is False and quality["empty"] is False


def test_the_cap_replacement_and_the_insertion_are_recorded(draft):
    _, truth, result = draft
    cap = unit_starting(result, f"{truth.cap_number} LIMITATION OF LIABILITY")
    replacement = next(c for c in result["changes"] if c["kind"] == "replacement")
    assert replacement == {
        "kind": "replacement",
        "before": "$1,000,000",
        "after": "$5,000,000",
        "author": "J. Smith",
        "date": "2026-03-14T10:00:00Z",
        "unit": cap["number"],
        "context": replacement["context"],
    }
    assert "aggregate liability under this Agreement exceed $5,000,000." in replacement["context"]
    assert len(replacement["context"]) < 260
    insertion = next(c for c in result["changes"] if c["kind"] == "insertion")
    assert insertion["author"] == "M. Jones" and insertion["after"] == truth.insertion.strip()
    assert insertion["before"] == "" and truth.insertion.strip() in result["pages"][insertion["unit"] - 1]["text"]
    assert len(result["changes"]) == 2


def test_automatic_numbers_are_rendered_and_locators_carry_the_section(draft):
    _, truth, result = draft
    assert truth.headings[:4] == [
        "1. GRANT OF RIGHTS",
        "2. DETTO'S OBLIGATIONS",
        "3. PRICE AND PAYMENT; SHIPMENT AND DELIVERY",
        "4. WARRANTY AND LIABILITY",
    ]
    for heading in truth.headings:
        unit = unit_starting(result, heading)
        assert unit["locator"] == {"section": heading, "paragraph": None}
    assert truth.cap_number == "4.3"
    cap = unit_starting(result, "4.3 LIMITATION OF LIABILITY. EXCEPT FOR")
    assert cap["locator"] == {"section": "4. WARRANTY AND LIABILITY", "paragraph": 3}
    assert Locator(**cap["locator"]).label() == "§ 4. WARRANTY AND LIABILITY, paragraph 3"
    assert unit_starting(result, "1.1 LICENSE.")["locator"] == {"section": "1. GRANT OF RIGHTS", "paragraph": 1}
    assert unit_starting(result, "2.11 SALES FORECASTING")["locator"]["section"] == "2. DETTO'S OBLIGATIONS"
    first = result["pages"][0]
    assert first["text"] == "Exhibit 10d-2" and first["locator"] == {"section": None, "paragraph": 1}
    assert all("page" not in p["locator"] for p in result["pages"])


def test_sub_clause_headings_give_a_section_path(cuad_text, tmp_path):
    path = tmp_path / "headed.docx"
    truth = make_contract_docx(cuad_text, path, clause_headings=True)
    result = read_docx(str(path), 1000)
    heading = unit_starting(result, "4.3 LIMITATION OF LIABILITY")
    assert heading["text"] == "4.3 LIMITATION OF LIABILITY"
    assert heading["locator"] == {
        "section": "4. WARRANTY AND LIABILITY > 4.3 LIMITATION OF LIABILITY",
        "paragraph": None,
    }
    body = result["pages"][heading["number"]]  # the clause's text, the unit after its heading
    assert body["text"].startswith("EXCEPT FOR PIVX'S OBLIGATIONS") and truth.cap_sentence in body["text"]
    assert body["locator"] == {"section": "4. WARRANTY AND LIABILITY > 4.3 LIMITATION OF LIABILITY", "paragraph": 1}
    replacement = next(c for c in result["changes"] if c["kind"] == "replacement")
    assert replacement["unit"] == body["number"]


def test_plain_numbered_headings_are_found_without_heading_styles(cuad_text, tmp_path):
    path = tmp_path / "plain.docx"
    make_contract_docx(cuad_text, path, heading_styles=False)
    assert b"Heading1" not in zipfile.ZipFile(path).read("word/document.xml")
    result = read_docx(str(path), 1000)
    cap = unit_starting(result, "4.3 LIMITATION OF LIABILITY")
    assert cap["locator"] == {"section": "4. WARRANTY AND LIABILITY", "paragraph": 3}
    assert unit_starting(result, "3. PRICE AND PAYMENT")["locator"]["paragraph"] is None


def test_title_like_rule():
    assert title_like("Definitions") and title_like("PRICE AND PAYMENT; DELIVERY") and title_like("TERM.")
    assert title_like("Limitation of Liability")
    assert not title_like("The term is five years.")
    assert not title_like("Term. This Agreement has a term of five years")
    assert not title_like("definitions") and not title_like("A" * 81)


def test_the_table_is_one_unit_read_as_a_table(draft):
    _, truth, result = draft
    table = unit_starting(result, "Item | Fee | Due")
    assert table["text"] == truth.table_text
    assert table["text"].splitlines()[1] == "Licence fee | $250,000 | On signature"
    assert table["locator"] == {"section": "3. PRICE AND PAYMENT; SHIPMENT AND DELIVERY", "paragraph": 2}
    after = result["pages"][table["number"]]
    assert after["text"].startswith("3.2 PER COPY FEES") and after["locator"]["paragraph"] == 3


def test_the_comment_with_author_text_and_anchor(draft):
    _, truth, result = draft
    (comment,) = result["comments"]
    clause = unit_starting(result, f"{truth.comment_number} TERM OF AGREEMENT")
    assert comment == {
        "author": "A. Reviewer",
        "date": "2026-03-16T08:00:00Z",
        "text": "Client asks for a 60-day cure period here.",
        "anchor": truth.comment_anchor,
        "unit": clause["number"],
    }
    assert comment["anchor"].startswith("TERM OF AGREEMENT. The term of this Agreement")


def test_headers_and_footers_are_running_lines_not_text(draft):
    _, truth, result = draft
    text = "\n".join(p["text"] for p in result["pages"])
    assert truth.header not in text and "Reseller Agreement - Page" not in text
    assert result["pages"][0]["running"] == [truth.header, f"{truth.footer} 1"]  # the PAGE field's result
    assert result["pages"][0]["quality"]["running_lines"] == 2
    assert all(p["running"] == [] for p in result["pages"][1:])


# --------------------------------------------------------------------------- WordprocessingML details


def test_moved_text_is_read_once_where_it_landed(tmp_path):
    author = 'w:author="K. Lee" w:date="2026-03-20T12:00:00Z"'
    body = (
        para("Clause one.") + '<w:p><w:r><w:t xml:space="preserve">Clause two. </w:t></w:r>'
        f'<w:moveFromRangeStart w:id="1" w:name="move1" {author}/>'
        f'<w:moveFrom w:id="2" {author}><w:r><w:t>The fee is due in thirty days.</w:t></w:r></w:moveFrom>'
        '<w:moveFromRangeEnd w:id="1"/></w:p>'
        + para("Clause three.")
        + f'<w:p><w:r><w:t xml:space="preserve">Clause four. </w:t></w:r><w:moveToRangeStart w:id="3" w:name="move1" {author}/>'
        f'<w:moveTo w:id="4" {author}><w:r><w:t>The fee is due in thirty days.</w:t></w:r></w:moveTo>'
        '<w:moveToRangeEnd w:id="3"/></w:p>'
    )
    result = read_docx(str(write_docx(tmp_path / "move.docx", body)), 100)
    assert [p["text"] for p in result["pages"]] == [
        "Clause one.",
        "Clause two.",
        "Clause three.",
        "Clause four. The fee is due in thirty days.",
    ]
    (move,) = result["changes"]
    assert move["kind"] == "move" and move["unit"] == 4
    assert move["before"] == move["after"] == "The fee is due in thirty days."
    assert move["author"] == "K. Lee" and move["date"] == "2026-03-20T12:00:00Z"


def test_deletion_fields_tabs_breaks_links_controls_and_alternate_content(tmp_path):
    author = 'w:author="J. Smith" w:date="2026-03-14T10:00:00Z"'
    body = (
        # a deletion alone, and a deletion next to an insertion by someone else (not a replacement)
        f'<w:p><w:r><w:t xml:space="preserve">Payment within </w:t></w:r><w:del w:id="1" {author}><w:r>'
        '<w:delText xml:space="preserve">sixty (60) </w:delText></w:r></w:del><w:r><w:t>days.</w:t></w:r>'
        f'<w:del w:id="2" {author}><w:r><w:delText> Net.</w:delText></w:r></w:del>'
        '<w:ins w:id="3" w:author="M. Jones" w:date="2026-03-15T09:00:00Z"><w:r><w:t xml:space="preserve"> Gross.</w:t></w:r></w:ins></w:p>'
        # a cross reference (complex field: instruction not text, result is), a simple field, tab, break, symbol
        '<w:p><w:r><w:t xml:space="preserve">See </w:t></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText xml:space="preserve"> REF _Ref42 \\r \\h </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        '<w:r><w:t>Section 7.2</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>'
        '<w:r><w:t xml:space="preserve"> on </w:t></w:r><w:fldSimple w:instr=" PAGEREF _Ref42 "><w:r><w:t>page 3</w:t></w:r></w:fldSimple>'
        '<w:r><w:tab/><w:t>Fees</w:t><w:br/><w:t>Costs</w:t><w:sym w:font="Wingdings" w:char="F0FC"/></w:r></w:p>'
        # a hyperlink, a content control, an mc:AlternateContent text box read once
        '<w:p><w:hyperlink r:id="rId99"><w:r><w:t>www.example.com</w:t></w:r></w:hyperlink>'
        '<w:sdt><w:sdtPr><w:alias w:val="Party"/></w:sdtPr><w:sdtContent><w:r><w:t xml:space="preserve"> Acme Corp</w:t></w:r></w:sdtContent></w:sdt>'
        '<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><w:txbxContent>'
        + para("Boxed note.")
        + "</w:txbxContent></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent>"
        + para("Boxed note.")
        + "</w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"
        # a block-level content control holding a paragraph
        + '<w:sdt><w:sdtPr><w:tag w:val="x"/></w:sdtPr><w:sdtContent>'
        + para("Controlled paragraph.")
        + "</w:sdtContent></w:sdt>"
    )
    result = read_docx(str(write_docx(tmp_path / "inline.docx", body)), 100)
    texts = [p["text"] for p in result["pages"]]
    assert texts == [
        "Payment within days. Gross.",
        "See Section 7.2 on page 3 Fees\nCosts",
        "www.example.com Acme Corp\nBoxed note.",
        "Controlled paragraph.",
    ]
    kinds = [(c["kind"], c["before"], c["after"], c["author"]) for c in result["changes"]]
    assert kinds == [
        ("deletion", "sixty (60)", "", "J. Smith"),
        ("deletion", "Net.", "", "J. Smith"),
        ("insertion", "", "Gross.", "M. Jones"),
    ]
    assert all(c["unit"] == 1 and c["context"] == "Payment within days. Gross." for c in result["changes"])


def test_numbering_formats_overrides_restarts_and_style_inheritance(tmp_path):
    numbering = NUMBERING.replace(
        "</w:numbering>",
        # numId 3: the clause list restarted at 5; numId 4: upper letters/roman with a level that never restarts
        '<w:abstractNum w:abstractNumId="7"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperLetter"/>'
        '<w:lvlText w:val="Article %1"/><w:suff w:val="space"/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/>'
        '<w:numFmt w:val="upperRoman"/><w:lvlRestart w:val="0"/><w:lvlText w:val="%2)"/></w:lvl></w:abstractNum>'
        '<w:num w:numId="3"><w:abstractNumId w:val="0"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/></w:lvlOverride></w:num>'
        '<w:num w:numId="4"><w:abstractNumId w:val="7"/></w:num></w:numbering>',
    )

    def num(num_id: int, ilvl: int) -> str:
        return f'<w:pPr><w:numPr><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num_id}"/></w:numPr></w:pPr>'

    body = "".join(
        [
            para("Definitions", '<w:pPr><w:pStyle w:val="Heading1"/>' + num(1, 0)[7:]),
            para("Terms defined here.", '<w:pPr><w:pStyle w:val="Clause2"/></w:pPr>'),  # level 2 from the style
            para("Sub item.", num(1, 2)),
            para("Second sub item.", num(1, 2)),
            para("Deeper.", num(1, 3)),
            para("Next clause.", num(1, 1)),
            para("Sub item again.", num(1, 2)),  # restarted by the level above
            para("Bullet point.", '<w:pPr><w:pStyle w:val="ListBullet"/></w:pPr>'),
            para("Not numbered.", '<w:pPr><w:pStyle w:val="Clause2"/><w:numPr><w:numId w:val="0"/></w:numPr></w:pPr>'),
            para("Restarted list.", num(3, 0)),
            para("First.", num(4, 0)),
            para("One.", num(4, 1)),
            para("Second.", num(4, 0)),
            para("Two.", num(4, 1)),  # lvlRestart 0: continues
        ]
    )
    result = read_docx(str(write_docx(tmp_path / "numbers.docx", body, numbering=numbering)), 100)
    assert [p["text"] for p in result["pages"]] == [
        "1. Definitions",
        "1.1 Terms defined here.",
        "(a) Sub item.",
        "(b) Second sub item.",
        "(i) Deeper.",
        "1.2 Next clause.",
        "(a) Sub item again.",
        "• Bullet point.",
        "Not numbered.",
        "5. Restarted list.",
        "Article A First.",
        "I) One.",
        "Article B Second.",
        "II) Two.",
    ]
    assert result["pages"][1]["locator"] == {"section": "1. Definitions", "paragraph": 1}
    assert [
        format_number(n, f) for n, f in [(28, "lowerLetter"), (14, "upperRoman"), (3, "decimalZero"), (7, "ordinal")]
    ] == [
        "bb",
        "XIV",
        "03",
        "7",
    ]


def test_footnotes_and_endnotes_are_units_at_the_end(tmp_path):
    body = (
        '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Fees</w:t></w:r></w:p>'
        '<w:p><w:r><w:t xml:space="preserve">The fee is $10</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r>'
        '<w:r><w:t xml:space="preserve"> per seat</w:t></w:r><w:r><w:endnoteReference w:id="1"/></w:r><w:r><w:t>.</w:t></w:r></w:p>'
    )
    path = write_docx(
        tmp_path / "notes.docx",
        body,
        footnotes=[para("Excluding VAT.", '<w:pPr><w:pStyle w:val="FootnoteText"/></w:pPr>')],
        endnotes=[para("Seats as counted on the first of each month.")],
    )
    result = read_docx(str(path), 100)
    pages = result["pages"]
    assert [p["text"] for p in pages] == [
        "Fees",
        "The fee is $10[1] per seat[1].",
        "[1] Excluding VAT.",
        "[1] Seats as counted on the first of each month.",
    ]
    assert pages[2]["locator"] == {"section": "Footnotes", "paragraph": 1}
    assert pages[3]["locator"] == {"section": "Endnotes", "paragraph": 1}
    assert pages[1]["locator"] == {"section": "Fees", "paragraph": 1}


def test_a_comment_anchor_may_cross_paragraphs(tmp_path):
    body = (
        para("Preamble.")
        + '<w:p><w:r><w:t xml:space="preserve">Start </w:t></w:r><w:commentRangeStart w:id="5"/><w:r><w:t>of the anchor</w:t></w:r></w:p>'
        '<w:p><w:r><w:t>ends here</w:t></w:r><w:commentRangeEnd w:id="5"/><w:r><w:commentReference w:id="5"/></w:r>'
        '<w:r><w:t xml:space="preserve"> and more.</w:t></w:r></w:p>'
    )
    path = write_docx(
        tmp_path / "comment.docx", body, comments=[(5, "B. Counsel", "2026-04-01T00:00:00Z", para("Why?"))]
    )
    (comment,) = read_docx(str(path), 100)["comments"]
    assert comment == {
        "author": "B. Counsel",
        "date": "2026-04-01T00:00:00Z",
        "text": "Why?",
        "anchor": "of the anchor\nends here",
        "unit": 2,
    }


# --------------------------------------------------------------------------- bad input


def test_truncated_zip_is_corrupt(draft, tmp_path):
    data = draft[0].read_bytes()
    cut = tmp_path / "cut.docx"
    cut.write_bytes(data[: len(data) // 2])
    result = read_docx(str(cut), 100)
    assert result["ok"] is False and result["kind"] == FailureKind.corrupt.value
    assert "not a readable ZIP" in result["reason"]


def test_zip_without_document_xml(tmp_path):
    path = tmp_path / "other.docx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("content.xml", "<doc/>")
    result = read_docx(str(path), 100)
    assert result["kind"] == "corrupt" and "no word/document.xml" in result["reason"]
    with pytest.raises(UnsupportedKind, match=r"without word/document\.xml"):
        detect_kind(str(path))


def _zeros_member(path: Path, megabytes: int) -> Path:
    """A DOCX whose document.xml is ``megabytes`` MiB of zeros, deflated as it is written (a few hundred KiB)."""
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo("word/document.xml")
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=True) as fh:
            for _ in range(megabytes):
                fh.write(chunk)
    return path


def test_zip_bomb_is_refused_before_decompressing(tmp_path):
    path = _zeros_member(tmp_path / "bomb.docx", 300)
    assert path.stat().st_size < 2 * 1024 * 1024
    assert detect_kind(str(path)) == DocumentKind.docx
    result = read_docx(str(path), 100)
    assert result["kind"] == FailureKind.resource_limit.value
    assert "314572800 bytes" in result["reason"] and "ZIP bomb" in result["reason"]


def test_high_compression_ratio_is_refused(tmp_path):
    result = read_docx(str(_zeros_member(tmp_path / "ratio.docx", 8)), 100)
    assert result["kind"] == "resource_limit" and "ratio" in result["reason"] and "limit 100:1" in result["reason"]


def test_entity_expansion_is_refused(tmp_path):
    lol = '<!DOCTYPE w:document [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    path = tmp_path / "lol.docx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(
            "word/document.xml",
            f'<?xml version="1.0"?>{lol}<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            "<w:body><w:p><w:r><w:t>&b;</w:t></w:r></w:p></w:body></w:document>",
        )
    result = read_docx(str(path), 100)
    assert result["kind"] == "corrupt" and "DTD" in result["reason"]


def test_malformed_xml_is_corrupt(tmp_path):
    path = tmp_path / "bad.docx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("word/document.xml", "<w:document><w:body>")
    result = read_docx(str(path), 100)
    assert result["kind"] == "corrupt" and "not well-formed XML" in result["reason"]


def test_legacy_or_encrypted_office_file_is_unsupported_with_a_way_out(tmp_path):
    path = tmp_path / "old.doc"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1024))
    with pytest.raises(UnsupportedKind, match="convert") as err:
        detect_kind(str(path))
    assert "libreoffice --headless --convert-to docx" in str(err.value)


def test_too_many_paragraphs(tmp_path):
    path = write_docx(tmp_path / "long.docx", "".join(para(f"Clause {k}.") for k in range(12)))
    result = read_docx(str(path), 10)
    assert result["kind"] == "too_many_pages" and "12 paragraphs" in result["reason"] and "10" in result["reason"]


def test_a_docx_without_text_fails_as_no_text(tmp_path):
    path = write_docx(tmp_path / "blank.docx", "<w:p/><w:p><w:r><w:t>  </w:t></w:r></w:p>", header=para("Header only"))
    assert read_docx(str(path), 100) == {"ok": False, "kind": "no_text", "reason": "the DOCX has no text"}


# --------------------------------------------------------------------------- through the pipeline


def test_end_to_end_through_the_worker_and_the_extract_task(draft):
    path, truth, direct = draft
    result = run_extraction(str(path), Limits(), DocumentKind.docx)
    assert result["ok"], result
    assert [p["text"] for p in result["pages"]] == [p["text"] for p in direct["pages"]]

    limits = Limits()
    fingerprinted = fingerprint_document.fn(list_local_source(str(path))[0], limits)
    assert fingerprinted.failure is None and fingerprinted.kind == DocumentKind.docx
    outcome = extract_document.fn(fingerprinted, limits)
    assert outcome.ok, outcome.reason
    doc = outcome.document
    assert doc.kind == DocumentKind.docx and outcome.pages == len(direct["pages"])
    replacement = next(c for c in doc.changes if c.kind == "replacement")
    assert (replacement.before, replacement.after, replacement.author) == ("$1,000,000", "$5,000,000", "J. Smith")
    assert doc.locator_of(replacement.unit).label() == "§ 4. WARRANTY AND LIABILITY, paragraph 3"
    assert doc.comments[0].anchor == truth.comment_anchor
    assert "$5,000,000" in doc.text and "$1,000,000" not in doc.text
    assert doc.pages[0].running == [truth.header, f"{truth.footer} 1"]
    assert all(p.locator is not None and p.locator.page is None for p in doc.pages)


def test_headings_numbered_without_a_dot_start_their_own_section(shared_data, tmp_path):
    """BicycleTx's service agreement numbers its headings "5 BENEFITS", "21 JURISDICTION AND CHOICE OF
    LAW": each is a section of the draft, and its clauses are numbered under it (5.1, not 4.6)."""
    source = shared_data / "cuad" / "txt" / "BICYCLETHERAPEUTICSPLC_03_10_2020-EX-10.11-SERVICE AGREEMENT.txt"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    path = tmp_path / "service.docx"
    make_contract_docx(source.read_text(encoding="utf-8"), path)
    result = read_docx(str(path), 1000)
    assert unit_starting(result, "5. BENEFITS")["locator"] == {"section": "5. BENEFITS", "paragraph": None}
    assert unit_starting(result, "5.1 The Company currently operates a personal pension plan")["locator"] == {
        "section": "5. BENEFITS",
        "paragraph": 1,
    }
    law = unit_starting(result, "This Agreement shall be governed by and interpreted in accordance with the laws")
    assert law["locator"]["section"] == "21. JURISDICTION AND CHOICE OF LAW"
    # a paragraph that starts with a bare number but is no title stays body text
    items = _items(["1. TERM", "10 days after delivery, the Distributor pays the invoice.", "2 PAYMENT"], False)
    assert [(i.kind, i.text) for i in items] == [
        ("heading", "TERM"),
        ("body", "10 days after delivery, the Distributor pays the invoice."),
        ("heading", "PAYMENT"),
    ]
