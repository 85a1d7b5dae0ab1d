"""Word drafts (.docx) made the way Word saves a contract under negotiation, for the DOCX reader's tests.

:func:`make_contract_docx` turns a contract's plain text (a CUAD ``.txt``) into a real WordprocessingML
package (ECMA-376 Part 1 §17, packaged per Part 2, the Open Packaging Conventions), written with
``zipfile`` and hand-written XML:

- clause headings (``"4. WARRANTY AND LIABILITY"``) become ``Heading1`` paragraphs numbered by
  ``word/numbering.xml`` (the number is *not* typed: the text is ``"WARRANTY AND LIABILITY"``, and the
  paragraph carries ``w:numPr``); sub-clauses (``"4.3 LIMITATION OF LIABILITY. ..."``) are paragraphs of
  style ``Clause2``, which inherits its numbering (``%1.%2``, level 2) from the style; with
  ``clause_headings`` a sub-clause's run-in title (``"LIMITATION OF LIABILITY."``) becomes its own
  ``Heading2`` paragraph and the text follows unnumbered; with ``heading_styles=False`` the headings are
  plain numbered paragraphs (style ``Clause1``, no heading style, no outline level);
- a fee table (``table_rows``) after the first paragraph of the payment section;
- two tracked changes: a replacement in the liability cap sentence (``w:del`` ``cap_before`` next to
  ``w:ins`` ``cap_after`` by ``change_author`` on ``change_date``) and an insertion (``insertion``) by a
  second author in the last clause;
- one comment (``word/comments.xml``) anchored on a whole clause (the first whose text matches
  ``comment_on``);
- a header and a footer part (the footer prints the page number with a ``PAGE`` field).

The numbers Word would print are computed here too (sequential: a source that skips a number, as some
CUAD texts do, is renumbered) and returned in :class:`ContractDocx`, the ground truth of the tests.
:func:`write_docx` writes any body given as WordprocessingML, for documents made in a test.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOC_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_CT_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml"

#: The default fee schedule (first row: header cells).
FEE_TABLE = [
    ["Item", "Fee", "Due"],
    ["Licence fee", "$250,000", "On signature"],
    ["Support and maintenance (annual)", "$40,000", "Each anniversary of the Effective Date"],
]

_HEADING = re.compile(r"^(\d{1,2})\.\s+(.+)$")
#: A heading whose number has no dot ("5 BENEFITS", as in BicycleTx's service agreement): a heading only
#: when the rest is a title, never a numbered clause ("10 days after delivery …" is body text).
_BARE_HEADING = re.compile(r"^(\d{1,2})\s+([A-Z].+)$")
_SUBCLAUSE = re.compile(r"^(\d{1,2})\.(\d{1,2})\.?\s+(.+)$")
_RUN_IN_TITLE = re.compile(r"^([A-Z][A-Z0-9 ,;&'/()\-]{2,80}?)\.\s+(.+)$")
_PAYMENT = re.compile(r"PRIC|PAYMENT|FEE|COMPENSATION|ROYALT", re.IGNORECASE)
_CAP_TITLE = re.compile(r"LIMITATION (?:OF|ON) LIABILITY", re.IGNORECASE)
_LIABILITY = re.compile(r"\bliability\b", re.IGNORECASE)


@dataclass
class ContractDocx:
    """What :func:`make_contract_docx` wrote: ``headings`` as printed (``"4. WARRANTY AND LIABILITY"``),
    ``cap_number`` (``"4.3"``, the clause holding the cap sentence, or ``""`` when it is a plain
    paragraph), ``cap_heading`` (the printed level-1 heading of its section), ``cap_sentence`` (with the
    change accepted), ``comment_anchor`` (the commented clause's text, without its number), ``comment_number``
    (its printed number), ``insertion``, ``table_text`` (as the reader renders a table) and ``header``/``footer``."""

    path: Path
    headings: list[str] = field(default_factory=list)
    cap_number: str = ""
    cap_heading: str = ""
    cap_sentence: str = ""
    comment_anchor: str = ""
    comment_number: str = ""
    insertion: str = ""
    table_text: str = ""
    header: str = ""
    footer: str = ""


@dataclass
class _Item:
    kind: str  # "title", "heading", "clause", "subheading", "body", "table"
    text: str
    number: str = ""
    runs: str = ""  # the paragraph's runs (XML), when not plain text


def paragraphs_of(text: str) -> list[str]:
    """The paragraphs of a plain-text contract: blocks between blank lines, each on one line (whitespace
    runs as one space); blocks that are only a page number are dropped."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        line = " ".join(block.split())
        if line and not re.fullmatch(r"(?:page\s*)?[-\d\s]+|[ivx]+", line, re.IGNORECASE):
            out.append(line)
    return out


def _title(rest: str) -> bool:
    rest = rest.strip()
    if len(rest) > 80 or len(rest.split()) > 10:
        return False
    if not any(ch.islower() for ch in rest):
        return True
    return not re.search(r"[.;:]\s", rest) and rest[-1] not in ".;:,"


def _run(text: str, rpr: str = "") -> str:
    return f'<w:r>{rpr}<w:t xml:space="preserve">{escape(text)}</w:t></w:r>'


def _para(runs: str, style: str | None = None, num: tuple[int, int] | None = None) -> str:
    ppr = ""
    if style or num:
        inner = f'<w:pStyle w:val="{style}"/>' if style else ""
        if num:
            inner += f'<w:numPr><w:ilvl w:val="{num[1]}"/><w:numId w:val="{num[0]}"/></w:numPr>'
        ppr = f"<w:pPr>{inner}</w:pPr>"
    return f"<w:p>{ppr}{runs}</w:p>"


def table_xml(rows: list[list[str]]) -> str:
    """A ``w:tbl`` with one paragraph per cell (style ``TableGrid``, the first row repeated as a header)."""
    cols = max(len(r) for r in rows)
    grid = "".join('<w:gridCol w:w="3000"/>' for _ in range(cols))
    out = [
        f'<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/><w:tblW w:w="0" w:type="auto"/></w:tblPr><w:tblGrid>{grid}</w:tblGrid>'
    ]
    for k, row in enumerate(rows):
        trpr = "<w:trPr><w:tblHeader/></w:trPr>" if k == 0 else ""
        cells = "".join(f'<w:tc><w:tcPr><w:tcW w:w="3000" w:type="dxa"/></w:tcPr>{_para(_run(c))}</w:tc>' for c in row)
        out.append(f"<w:tr>{trpr}{cells}</w:tr>")
    out.append("</w:tbl>")
    return "".join(out)


def make_contract_docx(
    text: str,
    path: str | Path,
    *,
    cap_before: str = "$1,000,000",
    cap_after: str = "$5,000,000",
    change_author: str = "J. Smith",
    change_date: str = "2026-03-14T10:00:00Z",
    insertion: str = " Notices may also be given by email to the addresses the parties designate.",
    insertion_author: str = "M. Jones",
    insertion_date: str = "2026-03-15T09:30:00Z",
    comment_on: str = r"TERMINAT|TERM\b",
    comment_text: str = "Client asks for a 60-day cure period here.",
    comment_author: str = "A. Reviewer",
    comment_date: str = "2026-03-16T08:00:00Z",
    table_rows: list[list[str]] | None = None,
    clause_headings: bool = False,
    heading_styles: bool = True,
    header: str = "DRAFT 3 - PRIVILEGED AND CONFIDENTIAL",
    footer: str = "Reseller Agreement - Page",
) -> ContractDocx:
    """Write ``text`` (a contract's plain text) to ``path`` as a DOCX draft with automatic numbering, a fee
    table, a tracked replacement of the liability cap (``cap_before`` → ``cap_after``), a tracked insertion,
    a comment, a header and a footer (what is written where: see the module docstring).

    The cap sentence "In no event shall either party's aggregate liability under this Agreement exceed
    <cap>." is appended to the first clause about liability (a new ``LIMITATION OF LIABILITY`` clause at the
    end when there is none). Returns the :class:`ContractDocx` ground truth.
    """
    path = Path(path)
    rows = table_rows if table_rows is not None else FEE_TABLE
    items = _items(paragraphs_of(text), clause_headings)
    truth = ContractDocx(path=path, insertion=insertion, header=header, footer=footer)
    truth.table_text = "\n".join(" | ".join(r) for r in rows)

    clauses = [k for k, it in enumerate(items) if it.kind in ("clause", "clause1", "body") and it.number]

    def about(k: int) -> str:  # a clause's text with the sub-heading it sits under
        return (items[k - 1].text + " " if k and items[k - 1].kind == "subheading" else "") + items[k].text

    cap_at = next((k for k in clauses if _CAP_TITLE.search(about(k))), None)
    if cap_at is None:
        cap_at = next((k for k in clauses if _LIABILITY.search(about(k))), None)
    if cap_at is None:
        items.append(_Item("clause", "LIMITATION OF LIABILITY. Each party's liability is limited as follows.", "x"))
        cap_at = len(items) - 1
    sentence = " In no event shall either party's aggregate liability under this Agreement exceed "
    cap = items[cap_at]
    change = (
        f'<w:del w:id="101" w:author={quoteattr(change_author)} w:date={quoteattr(change_date)}>'
        f'<w:r><w:delText xml:space="preserve">{escape(cap_before)}</w:delText></w:r></w:del>'
        f'<w:ins w:id="102" w:author={quoteattr(change_author)} w:date={quoteattr(change_date)}>'
        f"{_run(cap_after)}</w:ins>"
    )
    cap.runs = _run(cap.text + sentence) + change + _run(".")
    truth.cap_sentence = sentence.lstrip() + cap_after + "."

    last = clauses[-1] if clauses else len(items) - 1
    if last == cap_at:
        last = next((k for k in reversed(range(len(items))) if items[k].kind == "body" and k != cap_at), last)
    if last != cap_at:
        target = items[last]
        target.runs = (
            _run(target.text)
            + f'<w:ins w:id="103" w:author={quoteattr(insertion_author)} w:date={quoteattr(insertion_date)}>'
            + _run(insertion)
            + "</w:ins>"
        )

    comment_at = next((k for k in clauses if re.search(comment_on, about(k)) and k not in (cap_at, last)), None)
    if comment_at is None:
        comment_at = next(k for k in clauses if k != cap_at) if len(clauses) > 1 else cap_at
    commented = items[comment_at]
    inner = commented.runs or _run(commented.text)
    commented.runs = (
        '<w:commentRangeStart w:id="0"/>'
        + inner
        + '<w:commentRangeEnd w:id="0"/><w:r><w:rPr><w:rStyle w:val="CommentReference"/></w:rPr>'
        + '<w:commentReference w:id="0"/></w:r>'
    )

    pay = next(
        (k for k, it in enumerate(items) if it.kind in ("heading", "subheading") and _PAYMENT.search(it.text)), None
    )
    at = next((k for k, it in enumerate(items) if it.kind == "heading"), 0) if pay is None else pay
    while at + 1 < len(items) and items[at].kind in ("heading", "subheading"):
        at += 1  # after the section's first paragraph
    items.insert(at + 1, _Item("table", ""))
    if comment_at >= at + 1:
        comment_at += 1
    if cap_at >= at + 1:
        cap_at += 1

    body, numbers = _render(items, rows, heading_styles)
    truth.headings = [f"{numbers[k]} {it.text}" for k, it in enumerate(items) if it.kind == "heading"]
    truth.cap_number = numbers.get(cap_at, "").rstrip(".")
    truth.cap_heading = next(
        (f"{numbers[k]} {items[k].text}" for k in reversed(range(cap_at)) if items[k].kind == "heading"), ""
    )
    truth.comment_anchor = commented.text
    truth.comment_number = numbers.get(comment_at, "").rstrip(".")
    comment = _para(_run(comment_text), "CommentText")
    write_docx(
        path,
        body,
        comments=[(0, comment_author, comment_date, comment)],
        header=_para(_run(header), "Header"),
        footer=_para(
            _run(footer + " ") + '<w:fldSimple w:instr=" PAGE \\* MERGEFORMAT "><w:r><w:t>1</w:t></w:r></w:fldSimple>',
            "Footer",
        ),
    )
    return truth


def _items(paragraphs: list[str], clause_headings: bool) -> list[_Item]:
    items: list[_Item] = []
    for line in paragraphs:
        sub = _SUBCLAUSE.match(line)
        head = _HEADING.match(line)
        bare = _BARE_HEADING.match(line) if not head else None
        if bare and _title(bare.group(2)):
            head = bare
        if sub:
            rest = sub.group(3)
            title = _RUN_IN_TITLE.match(rest) if clause_headings else None
            if title:
                items.append(_Item("subheading", title.group(1).strip()))
                items.append(_Item("body", title.group(2).strip()))
            else:
                items.append(_Item("clause", rest, number="2"))
        elif head and _title(head.group(2)):
            items.append(_Item("heading", head.group(2).strip().rstrip(".")))
        elif head:
            items.append(_Item("clause1", head.group(2), number="1"))
        else:
            items.append(_Item("title" if not items else "body", line))
    for k, it in enumerate(items):  # a body paragraph right after a sub-heading is that clause's text
        if it.kind == "body" and k and items[k - 1].kind == "subheading":
            it.number = "under-subheading"
    return items


def _render(items: list[_Item], rows: list[list[str]], heading_styles: bool) -> tuple[str, dict[int, str]]:
    """The body XML of ``items`` and the number each numbered item prints (``{index: "4.3"}``)."""
    out: list[str] = []
    numbers: dict[int, str] = {}
    top, second = 0, 0
    for k, it in enumerate(items):
        runs = it.runs or _run(it.text)
        if it.kind == "heading":
            top, second = top + 1, 0
            numbers[k] = f"{top}."
            style = "Heading1" if heading_styles else "Clause1"
            out.append(_para(runs, style, (1, 0) if heading_styles else None))
        elif it.kind == "clause1":
            top, second = top + 1, 0
            numbers[k] = f"{top}."
            out.append(_para(runs, "Clause1"))
        elif it.kind in ("clause", "subheading"):
            second += 1
            numbers[k] = f"{top or 1}.{second}"
            out.append(_para(runs, "Heading2" if it.kind == "subheading" else "Clause2"))
        elif it.kind == "table":
            out.append(table_xml(rows))
        elif it.kind == "title":
            out.append(_para(runs, "Title"))
        else:
            if it.number == "under-subheading" and k and items[k - 1].kind == "subheading":
                numbers[k] = numbers[k - 1]
            out.append(_para(runs, "BodyText" if it.number else None))
    return "".join(out), numbers


STYLES = """<w:styles xmlns:w="{W}">
<w:docDefaults><w:rPrDefault><w:rPr><w:rFonts w:ascii="Calibri" w:hAnsi="Calibri"/><w:sz w:val="22"/></w:rPr></w:rPrDefault>
<w:pPrDefault><w:pPr><w:spacing w:after="160" w:line="259" w:lineRule="auto"/></w:pPr></w:pPrDefault></w:docDefaults>
<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:qFormat/><w:pPr><w:jc w:val="center"/></w:pPr><w:rPr><w:b/><w:sz w:val="32"/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:qFormat/><w:pPr><w:keepNext/><w:spacing w:before="240"/><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/><w:sz w:val="26"/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/><w:next w:val="BodyText"/><w:qFormat/><w:pPr><w:keepNext/><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr><w:outlineLvl w:val="1"/></w:pPr><w:rPr><w:b/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="Clause1"><w:name w:val="Clause Level 1"/><w:basedOn w:val="Normal"/><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Clause2"><w:name w:val="Clause Level 2"/><w:basedOn w:val="Normal"/><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr><w:jc w:val="both"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="BodyText"><w:name w:val="Body Text"/><w:basedOn w:val="Normal"/><w:pPr><w:ind w:left="720"/><w:jc w:val="both"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:basedOn w:val="Normal"/><w:pPr><w:numPr><w:numId w:val="2"/></w:numPr></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="CommentText"><w:name w:val="annotation text"/><w:basedOn w:val="Normal"/><w:rPr><w:sz w:val="20"/></w:rPr></w:style>
<w:style w:type="character" w:styleId="CommentReference"><w:name w:val="annotation reference"/><w:rPr><w:sz w:val="16"/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="Header"><w:name w:val="header"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Footer"><w:name w:val="footer"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="FootnoteText"><w:name w:val="footnote text"/><w:basedOn w:val="Normal"/><w:rPr><w:sz w:val="20"/></w:rPr></w:style>
<w:style w:type="table" w:styleId="TableGrid"><w:name w:val="Table Grid"/><w:tblPr><w:tblBorders><w:top w:val="single" w:sz="4" w:space="0" w:color="auto"/><w:left w:val="single" w:sz="4" w:space="0" w:color="auto"/><w:bottom w:val="single" w:sz="4" w:space="0" w:color="auto"/><w:right w:val="single" w:sz="4" w:space="0" w:color="auto"/><w:insideH w:val="single" w:sz="4" w:space="0" w:color="auto"/><w:insideV w:val="single" w:sz="4" w:space="0" w:color="auto"/></w:tblBorders></w:tblPr></w:style>
</w:styles>""".replace("{W}", W)


def _lvl(ilvl: int, fmt: str, text: str, indent: int, style: str | None = None) -> str:
    pstyle = f'<w:pStyle w:val="{style}"/>' if style else ""
    return (
        f'<w:lvl w:ilvl="{ilvl}"><w:start w:val="1"/><w:numFmt w:val="{fmt}"/>{pstyle}'
        f'<w:lvlText w:val="{escape(text)}"/><w:lvlJc w:val="left"/>'
        f'<w:pPr><w:ind w:left="{indent}" w:hanging="360"/></w:pPr></w:lvl>'
    )


#: The clause list (``numId`` 1: ``1.``, ``1.1``, ``(a)``, ``(i)``) and a bullet list (``numId`` 2).
NUMBERING = (
    f'<w:numbering xmlns:w="{W}">'
    '<w:abstractNum w:abstractNumId="0"><w:multiLevelType w:val="multilevel"/>'
    + _lvl(0, "decimal", "%1.", 360, "Heading1")
    + _lvl(1, "decimal", "%1.%2", 720)
    + _lvl(2, "lowerLetter", "(%3)", 1080)
    + _lvl(3, "lowerRoman", "(%4)", 1440)
    + "</w:abstractNum>"
    '<w:abstractNum w:abstractNumId="1"><w:multiLevelType w:val="hybridMultilevel"/>'
    '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="\uf0b7"/>'
    '<w:lvlJc w:val="left"/><w:pPr><w:ind w:left="720" w:hanging="360"/></w:pPr>'
    '<w:rPr><w:rFonts w:ascii="Symbol" w:hAnsi="Symbol" w:hint="default"/></w:rPr></w:lvl></w:abstractNum>'
    '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>'
    '<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>'
    "</w:numbering>"
)


def write_docx(
    path: str | Path,
    body: str,
    *,
    styles: str = STYLES,
    numbering: str | None = NUMBERING,
    comments: list[tuple[int, str, str, str]] | None = None,
    footnotes: list[str] | None = None,
    endnotes: list[str] | None = None,
    header: str | None = None,
    footer: str | None = None,
    extra_ns: str = "",
) -> Path:
    """Write a DOCX at ``path`` whose ``w:body`` holds ``body`` (WordprocessingML with the ``w:`` prefix;
    ``r:``, ``mc:`` and ``extra_ns`` declarations are available), with the parts given: ``comments`` as
    ``(id, author, date, paragraphs XML)``, ``footnotes``/``endnotes`` as each note's paragraphs XML (ids 1..,
    after the two separator notes), ``header``/``footer`` as paragraphs XML. Content types, package and part
    relationships are written to match (ECMA-376 Part 2 §10.1.2, §9.3), so Word and LibreOffice open it."""
    path = Path(path)
    ns = (
        f'xmlns:w="{W}" xmlns:r="{R}" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" {extra_ns}'
    )
    parts: dict[str, tuple[str, str, str]] = {}  # name -> (content type, relationship type, xml)
    if styles:
        parts["styles.xml"] = (f"{_CT_MAIN}.styles+xml", "styles", styles)
    if numbering:
        parts["numbering.xml"] = (f"{_CT_MAIN}.numbering+xml", "numbering", numbering)
    if comments is not None:
        xml = "".join(
            f'<w:comment w:id="{cid}" w:author={quoteattr(author)} w:date={quoteattr(date)} w:initials="{author[:1]}">'
            f"{paras}</w:comment>"
            for cid, author, date, paras in comments
        )
        parts["comments.xml"] = (f"{_CT_MAIN}.comments+xml", "comments", f"<w:comments {ns}>{xml}</w:comments>")
    for kind, notes in (("footnote", footnotes), ("endnote", endnotes)):
        if notes is None:
            continue
        xml = (
            f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
            f'<w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:{kind}>'
        )
        xml += "".join(f'<w:{kind} w:id="{k + 1}">{paras}</w:{kind}>' for k, paras in enumerate(notes))
        parts[f"{kind}s.xml"] = (f"{_CT_MAIN}.{kind}s+xml", f"{kind}s", f"<w:{kind}s {ns}>{xml}</w:{kind}s>")
    sect_refs = ""
    if header is not None:
        parts["header1.xml"] = (f"{_CT_MAIN}.header+xml", "header", f"<w:hdr {ns}>{header}</w:hdr>")
    if footer is not None:
        parts["footer1.xml"] = (f"{_CT_MAIN}.footer+xml", "footer", f"<w:ftr {ns}>{footer}</w:ftr>")
    rels = []
    for k, (name, (_, rel, _)) in enumerate(parts.items(), start=1):
        rels.append(f'<Relationship Id="rId{k}" Type="{_DOC_REL}/{rel}" Target="{name}"/>')
        if rel in ("header", "footer"):
            sect_refs += f'<w:{rel}Reference w:type="default" r:id="rId{k}"/>'
    sect = (
        f'<w:sectPr>{sect_refs}<w:pgSz w:w="12240" w:h="15840"/>'
        '<w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="720" w:footer="720" w:gutter="0"/>'
        "</w:sectPr>"
    )
    document = f"<w:document {ns}><w:body>{body}{sect}</w:body></w:document>"
    overrides = "".join(f'<Override PartName="/word/{name}" ContentType="{ct}"/>' for name, (ct, _, _) in parts.items())
    content_types = (
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/word/document.xml" ContentType="{_CT_MAIN}.document.main+xml"/>'
        '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>'
        f"{overrides}</Types>"
    )
    package_rels = (
        f'<Relationships xmlns="{_PKG_REL}">'
        f'<Relationship Id="rId1" Type="{_DOC_REL}/officeDocument" Target="word/document.xml"/>'
        '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>'
        "</Relationships>"
    )
    core = (
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        "<dc:title>Contract draft</dc:title><dc:creator>docreview tests</dc:creator>"
        '<dcterms:created xsi:type="dcterms:W3CDTF">2026-03-14T10:00:00Z</dcterms:created>'
        "</cp:coreProperties>"
    )
    decl = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    members = [
        ("[Content_Types].xml", content_types),
        ("_rels/.rels", package_rels),
        ("docProps/core.xml", core),
        ("word/document.xml", document),
        ("word/_rels/document.xml.rels", f'<Relationships xmlns="{_PKG_REL}">{"".join(rels)}</Relationships>'),
    ] + [(f"word/{name}", xml) for name, (_, _, xml) in parts.items()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, xml in members:
            # A fixed member date: the same contract gives the same bytes whenever it is written.
            info = zipfile.ZipInfo(name, date_time=(2026, 3, 14, 10, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, decl + xml)
    return path


#: Transitional namespace -> ECMA-376 Strict namespace, for the parts this module writes (Part 1 Strict
#: schemas: WordprocessingML main, relationships of the r: attributes and of relationship types).
STRICT_NAMESPACES = {
    W: "http://purl.oclc.org/ooxml/wordprocessingml/main",
    R: "http://purl.oclc.org/ooxml/officeDocument/relationships",
}


def _rewrite(src: str | Path, dst: str | Path, change: Callable[[str, str], tuple[str, str] | None]) -> Path:
    """Copy the DOCX ``src`` to ``dst`` member by member; ``change(name, xml)`` returns ``(new name, new
    xml)`` for a member to replace, or None to copy it as it is. Member dates stay fixed."""
    dst = Path(dst)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            got = change(info.filename, data.decode("utf-8"))
            name, payload = (info.filename, data) if got is None else (got[0], got[1].encode("utf-8"))
            out = zipfile.ZipInfo(name, date_time=info.date_time)
            out.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(out, payload)
    return dst


def to_strict(src: str | Path, dst: str | Path) -> Path:
    """``src`` (a DOCX this module wrote) as an OOXML **Strict** document at ``dst``: every transitional
    namespace of :data:`STRICT_NAMESPACES` replaced by its Strict one (elements, ``r:`` attributes and
    relationship ``Type``s, package ones included) and ``w:conformance="strict"`` on ``w:document`` — what
    Word writes when saving as "Strict Open XML Document"."""

    def change(name: str, xml: str) -> tuple[str, str] | None:
        if not name.endswith((".xml", ".rels")) or name == "[Content_Types].xml":
            return None
        for old, new in STRICT_NAMESPACES.items():
            xml = xml.replace(old, new)
        if name == "word/document.xml":
            xml = xml.replace("<w:document ", '<w:document w:conformance="strict" ', 1)
        return name, xml

    return _rewrite(src, dst, change)


def with_main_part(src: str | Path, dst: str | Path, main: str = "word/document2.xml") -> Path:
    """``src`` (a DOCX this module wrote) at ``dst`` with its main part renamed to ``main`` (same folder):
    the part, its relationships part, the ``_rels/.rels`` target and the content-type override follow, so
    Word opens it (it finds the main part through ``_rels/.rels``, never by name)."""
    base = posixpath.basename(main)

    def change(name: str, xml: str) -> tuple[str, str] | None:
        if name == "word/document.xml":
            return main, xml
        if name == "word/_rels/document.xml.rels":
            return f"word/_rels/{base}.rels", xml
        if name in ("_rels/.rels", "[Content_Types].xml"):
            return name, xml.replace("word/document.xml", main)
        return None

    return _rewrite(src, dst, change)
