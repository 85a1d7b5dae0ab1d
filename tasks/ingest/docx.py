"""Text of a Word document (.docx, WordprocessingML) with every tracked change accepted, its tracked changes,
comments and automatic numbering — read with the stdlib ``zipfile`` and lxml, in the extraction worker's
child process (:func:`tasks.ingest.extract_worker.read_other_kind`).

Why not a DOCX library: python-docx's ``paragraph.text`` drops the text of insertions (``w:ins``);
mammoth and docx2python return the accepted text without saying what changed (and mammoth drops moved
text); none renders automatic numbering, which carries a contract's clause numbers ("7.2"). The
WordprocessingML needed here is small: ECMA-376 Part 1 §17 (5th edition, 2016).

Units (one :class:`schemas.documents.PageText` each, numbered from 1 in document order):

- a body paragraph with text (empty paragraphs make no unit), prefixed with the number its automatic
  numbering prints (§17.9: ``"7.2 Limitation of Liability"``); a bullet prints ``"•"`` (kept, so a list
  still reads as one);
- a table (§17.4): one unit, a line per row, cells joined by ``" | "`` (a cell's paragraphs by a space);
  rows and cells deleted as a tracked change (``w:trPr/w:del``, ``w:tcPr/w:cellDel``) are left out;
- then each footnote and endnote (§17.11) as a unit of section ``"Footnotes"`` / ``"Endnotes"`` (the
  separator notes are skipped); its text starts ``"[n] "`` and the body shows ``"[n]"`` where it is cited.

Text with every change accepted (§17.13.5): ``w:ins`` and ``w:moveTo`` text is kept, ``w:del``/``w:delText``
and ``w:moveFrom`` text is not; a paragraph mark deleted as a change does not merge the two paragraphs
here (the text is the same, split in two units). Field codes (``w:instrText``, and the instruction part
of a complex field between ``w:fldChar`` begin and separate) are not text, a field's result is
(``w:fldSimple`` runs too); ``w:tab`` is a tab (a space once cleaned), ``w:br``/``w:cr`` a line break,
``w:noBreakHyphen`` a hyphen; ``w:sym`` is dropped (a symbol-font glyph, no Unicode text); hyperlinks,
content controls (``w:sdtContent``), smart tags and text boxes (``w:txbxContent``, inline in their
paragraph) are text; of an ``mc:AlternateContent`` the first ``mc:Choice`` is read, else the
``mc:Fallback`` (never both). Headers and footers (``word/header*.xml``, ``word/footer*.xml``) are not part
of the text: their lines are the first unit's ``running`` list (screened for injected instructions like
a PDF's running headers). Each unit's text goes through :func:`tasks.textnorm.clean_page_text` (NFKC,
control characters dropped, space runs collapsed: a tab becomes a space).

Tracked changes (§17.13.5), one :class:`schemas.documents.TrackedChange` dict each, as Word's reviewing
pane lists them: a run-level ``w:ins``/``w:del``/``w:moveTo``/``w:moveFrom`` with its ``w:author`` and
``w:date``; neighbours of one kind and author with nothing accepted between them are one change (Word
splits a change at every formatting boundary), a deletion beside an insertion by the same author one
``replacement``, a moved-from and its moved-to text one ``move``. A table row deleted as a change
(``w:trPr/w:del``, Deleted Table Row) is ONE ``deletion`` whose ``before`` is the row's cells joined by
``" | "`` as they read before the deletion, with the author and date of that ``w:del`` (else of the first
``w:del`` with an author inside the row); the runs' own ``w:del`` in it are not counted again. A row
inserted as a change (``w:trPr/w:ins``, Inserted Table Row) is ONE ``insertion`` of its line; its
author's own run insertions are part of it (another author's changes inside it are their own). A cell
deleted or inserted as a change (``w:tcPr/w:cellDel``, ``w:cellIns``) is one change the same way. These
carry ``"scope": "row"`` / ``"cell"`` (a key the stored :class:`~schemas.documents.TrackedChange` does
not keep) and are never joined to a neighbour or paired into a replacement. No change is empty: one whose
``before`` and ``after`` are empty or whitespace once cleaned (a deleted space, tab or break alone, a row
without text) is dropped, and a replacement with a blank side is the insertion or deletion it is.
Changes inside text boxes, headers, footers and comments are not reported.

Sections: a heading is a paragraph whose style is a heading (style id ``Heading1``..``Heading9`` or name
``heading 1``..``heading 9``, through ``w:basedOn``) or that has an outline level (``w:outlineLvl`` 0-8 on
the paragraph or its style; level = outline level + 1). A document with no such paragraph (contracts
whose headings are plain numbered paragraphs) takes as headings its numbered, title-like paragraphs
(:func:`title_like`; level = list level + 1). A unit's locator is ``{"section": the heading path, e.g.
"7. Liability > 7.2 Limitation of Liability" (each heading with its number), "paragraph": n}``: ``n`` counts
the section's units after its heading (tables included) from 1; a heading's own unit has
``paragraph`` None (its label is the section). Before the first heading ``section`` is None.

The main part is the one Word opens: the target of the ``officeDocument`` relationship in
``_rels/.rels`` (ECMA-376 Part 2 §9.3; not always ``word/document.xml``), found by :func:`main_part`; its
parts (styles, numbering, notes, comments, headers) through its own relationships. Both the transitional
(``schemas.openxmlformats.org``) and the Strict (``purl.oclc.org/ooxml``, ECMA-376 Part 1 Strict) namespaces
of WordprocessingML and of the relationship types are read.

Bad input fails with a reason, never an exception: a file that is not a readable ZIP or names no main
part (``corrupt``); a ZIP bomb (``resource_limit``: declared sizes and compression
ratios are checked *before* anything is decompressed, :data:`MAX_XML_BYTES`, :data:`MAX_RATIO`, and members
are read with a bounded read); XML with a DTD (``<!DOCTYPE``: entity expansion, ``corrupt``; parsed with
entities unresolved, no network, no huge trees); more than ``max_pages`` units (``too_many_pages``, counted
in paragraphs); no text (``no_text``).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

from lxml import etree  # type: ignore[import-untyped]

from tasks.ingest.quality import clean_quality
from tasks.textnorm import clean_page_text

#: Total uncompressed size (bytes) of the XML parts read; over it the document fails as ``resource_limit``.
MAX_XML_BYTES = 200 * 1024 * 1024
#: Largest compression ratio (uncompressed / compressed) accepted for a member over :data:`RATIO_FLOOR` bytes.
MAX_RATIO = 100
#: Members smaller than this (bytes) are not held to :data:`MAX_RATIO` (small XML compresses well).
RATIO_FLOOR = 1024 * 1024
#: More members than this in the archive is not a Word document (a central-directory bomb).
MAX_MEMBERS = 10_000
#: Characters of a change's context on each side of it.
CONTEXT_CHARS = 100
#: A numbered paragraph is a title (a heading when the document has no heading styles) up to this many
#: characters and :data:`TITLE_WORDS` words.
TITLE_CHARS = 80
TITLE_WORDS = 10

W_TRANSITIONAL = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
W_STRICT = "http://purl.oclc.org/ooxml/wordprocessingml/main"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_REL = "http://schemas.openxmlformats.org/package/2006/relationships"

#: The package relationship naming the main part (ECMA-376 Part 2 §9.3; Part 1 §11.3.10): its ``Type`` in
#: the transitional and the Strict namespaces (Part 1 §A.1 / Strict: ``http://purl.oclc.org/ooxml/…``).
OFFICE_DOCUMENT_TYPES = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument",
    "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument",
)

#: Largest ``_rels/.rels`` read to find the main part, bytes (a few hundred in practice).
MAX_PACKAGE_RELS_BYTES = 1024 * 1024


def main_part(zf: zipfile.ZipFile) -> str | None:
    """The name of the package's main part: the target of the ``officeDocument`` relationship of
    ``_rels/.rels`` (either namespace, :data:`OFFICE_DOCUMENT_TYPES`), as Word finds it; failing that,
    ``word/document.xml`` when present; None for a ZIP that names no main part. Reads at most
    :data:`MAX_PACKAGE_RELS_BYTES` of ``_rels/.rels`` and never raises for a malformed one."""
    names = set(zf.namelist())
    try:
        info = zf.getinfo("_rels/.rels")
    except KeyError:
        info = None
    if info is not None and info.file_size <= MAX_PACKAGE_RELS_BYTES and not info.flag_bits & 0x1:
        try:
            with zf.open(info) as fh:
                root = parse_xml(fh.read(MAX_PACKAGE_RELS_BYTES + 1), "_rels/.rels")
        except Exception:
            root = None
        for rel in root.iter(f"{{{_REL}}}Relationship") if root is not None else []:
            target = (rel.get("Target") or "").strip()
            if rel.get("Type") in OFFICE_DOCUMENT_TYPES and target and rel.get("TargetMode") != "External":
                name = posixpath.normpath(target.lstrip("/"))
                if name in names:
                    return name
    return "word/document.xml" if "word/document.xml" in names else None


_ROMAN = [(1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc")]
_ROMAN += [(50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")]
_HEADING_STYLE = re.compile(r"^heading\s?([1-9])$", re.IGNORECASE)
_NUMBER_REF = re.compile(r"%([1-9])")

#: The quality of every unit (the DOCX's text is its own: nothing is OCR'd, glued or restored).
_QUALITY = clean_quality("docx")


class DocxError(Exception):
    """A DOCX that cannot be read: ``kind`` is a :class:`schemas.documents.FailureKind` value."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def read_docx(path: str, max_pages: int) -> dict:
    """Read the DOCX at ``path``: its units' text with every tracked change accepted, its changes and
    comments (the module docstring says what a unit is and what is read; ECMA-376 Part 1 §17).

    Returns ``{"ok": True, "encrypted": False, "pages": [{"number", "text", "quality", "running",
    "locator": {"section", "paragraph"}}], "engines": {"docx": n}, "changes": [TrackedChange dicts],
    "comments": [Comment dicts]}`` (:class:`schemas.documents.TrackedChange`, ``Comment``; ``unit`` is the
    1-based number of the page dict; the change of a table row or cell tracked as one also has
    ``"scope"``: ``"row"`` or ``"cell"``) or ``{"ok": False, "kind": FailureKind value, "reason": str}``
    for a corrupt file, a ZIP bomb (``resource_limit``), a DTD (``corrupt``), more than ``max_pages``
    units (``too_many_pages``, counted as paragraphs) or no text (``no_text``). Never raises
    (``MemoryError`` aside: the worker reports it as ``memory_limit``).
    """
    try:
        return _read(path, max_pages)
    except DocxError as exc:
        return {"ok": False, "kind": exc.kind, "reason": exc.reason}
    except MemoryError:
        raise
    except Exception as exc:  # a defect no check above foresaw: still a reason, not a crash
        return {"ok": False, "kind": "corrupt", "reason": f"corrupt DOCX: {type(exc).__name__}: {str(exc)[:300]}"}


# --------------------------------------------------------------------------- the package (ZIP, OPC)


class _Package:
    """The DOCX's ZIP with its members checked against bombs before any is decompressed."""

    def __init__(self, path: str) -> None:
        try:
            self.zf = zipfile.ZipFile(path)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise DocxError("corrupt", f"corrupt DOCX: not a readable ZIP archive ({exc})") from exc
        if len(infos) > MAX_MEMBERS:
            raise DocxError("resource_limit", f"the DOCX's ZIP has {len(infos)} members (limit {MAX_MEMBERS})")
        self.infos = {i.filename: i for i in infos}
        main = main_part(self.zf)
        if main is None:
            raise DocxError(
                "corrupt",
                "corrupt DOCX: the ZIP names no main document part (no officeDocument relationship in _rels/.rels "
                "and no word/document.xml): not a Word document",
            )
        self.main = main
        xml = [i for i in infos if i.filename.endswith((".xml", ".rels"))]
        total = sum(i.file_size for i in xml)
        if total > MAX_XML_BYTES:
            raise DocxError(
                "resource_limit",
                f"the DOCX's XML parts declare {total} bytes uncompressed (limit {MAX_XML_BYTES}): a ZIP bomb?",
            )
        for i in xml:
            ratio = i.file_size / max(i.compress_size, 1)
            if i.file_size > RATIO_FLOOR and ratio > MAX_RATIO:
                raise DocxError(
                    "resource_limit",
                    f"ZIP bomb: {i.filename} compresses {i.file_size} bytes into {i.compress_size} "
                    f"(ratio {ratio:.0f}:1, limit {MAX_RATIO}:1)",
                )
        self.budget = MAX_XML_BYTES

    def read(self, name: str) -> bytes | None:
        """The bytes of member ``name`` (None when absent), read no further than its declared size."""
        info = self.infos.get(name)
        if info is None:
            return None
        if info.flag_bits & 0x1:
            raise DocxError("password_required", f"the DOCX's ZIP member {name} is encrypted")
        limit = min(info.file_size, self.budget)
        try:
            with self.zf.open(info) as fh:
                data = fh.read(limit + 1)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise DocxError("corrupt", f"corrupt DOCX: {name} cannot be decompressed ({exc})") from exc
        except RuntimeError as exc:  # zipfile: "File ... is encrypted, password required"
            raise DocxError("password_required", f"the DOCX's ZIP member {name} is encrypted ({exc})") from exc
        if len(data) > limit:
            raise DocxError("resource_limit", f"{name} decompresses to more than {limit} bytes (a ZIP bomb?)")
        self.budget -= len(data)
        return data

    def xml(self, name: str) -> Any | None:
        """The parsed root element of XML member ``name`` (None when absent)."""
        data = self.read(name)
        return None if data is None else parse_xml(data, name)

    def rels(self, part: str) -> dict[str, tuple[str, str]]:
        """``{rId: (type, member name)}`` of the internal relationships of ``part`` (OPC, ECMA-376 Part 2 §9.3)."""
        folder, base = posixpath.split(part)
        root = self.xml(posixpath.join(folder, "_rels", base + ".rels"))
        out: dict[str, tuple[str, str]] = {}
        if root is None:
            return out
        for rel in root.iter(f"{{{_REL}}}Relationship"):
            target = rel.get("Target") or ""
            if rel.get("TargetMode") == "External" or not target:
                continue
            name = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
            out[rel.get("Id") or ""] = (rel.get("Type") or "", name)
        return out


def parse_xml(data: bytes, name: str) -> Any:
    """The root element of the XML ``data`` of member ``name``, parsed with entities unresolved, no network
    and no huge trees. Raises :class:`DocxError` (``corrupt``) for a DTD (``<!DOCTYPE``: no part of a DOCX
    has one, ECMA-376 Part 2 §8.1.4 forbids it; a DTD is how entity-expansion bombs are made) or
    malformed XML."""
    needles = [b"<!DOCTYPE", b"<!ENTITY"]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        codec = "utf-16-le" if data[:2] == b"\xff\xfe" else "utf-16-be"
        needles += [n.decode().encode(codec) for n in needles]
    if any(n in data for n in needles):
        raise DocxError("corrupt", f"corrupt DOCX: {name} declares a DTD (<!DOCTYPE), refused (entity expansion)")
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False, dtd_validation=False
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise DocxError("corrupt", f"corrupt DOCX: {name} is not well-formed XML ({exc})") from exc
    if root is None or root.getroottree().docinfo.doctype:
        raise DocxError("corrupt", f"corrupt DOCX: {name} declares a DTD, refused")
    return root


# --------------------------------------------------------------------------- styles and numbering


@dataclass
class _Style:
    style_id: str
    name: str = ""
    based_on: str | None = None
    num_id: str | None = None
    ilvl: int | None = None
    outline: int | None = None


@dataclass
class _Level:
    start: int = 1
    fmt: str = "decimal"
    text: str | None = None
    restart: int | None = None
    legal: bool = False
    suffix: str = "tab"


class Numbering:
    """Automatic numbering (ECMA-376 Part 1 §17.9): ``w:abstractNum`` levels (``w:start``, ``w:numFmt``,
    ``w:lvlText``, ``w:lvlRestart``, ``w:isLgl``, ``w:suff``) and the ``w:num`` instances that use them, with
    ``w:lvlOverride/w:startOverride`` (and a ``w:lvlOverride/w:lvl`` that replaces a level).

    Counters are kept per abstract numbering (instances of one abstract list continue each other); an
    instance with a start override restarts that level the first time it is used. Numbering a paragraph at
    level ``L`` restarts every deeper level whose ``w:lvlRestart`` is absent (the default: restart after
    any shallower level) or greater than ``L``; ``w:lvlRestart w:val="0"`` never restarts.
    """

    def __init__(self, root: Any | None, w: str) -> None:
        self.abstract: dict[str, dict[int, _Level]] = {}
        self.nums: dict[str, tuple[str, dict[int, _Level], dict[int, int]]] = {}
        self.counters: dict[str, dict[int, int]] = {}
        self.started: set[str] = set()
        if root is None:
            return
        q = _Q(w)
        for a in root.iter(q("abstractNum")):
            self.abstract[a.get(q("abstractNumId")) or ""] = {
                _int(lvl.get(q("ilvl")), 0): _level(lvl, q) for lvl in a.iter(q("lvl"))
            }
        for n in root.iter(q("num")):
            aid = _val(n.find(q("abstractNumId")), q) or ""
            replaced: dict[int, _Level] = {}
            starts: dict[int, int] = {}
            for o in n.iter(q("lvlOverride")):
                ilvl = _int(o.get(q("ilvl")), 0)
                so = o.find(q("startOverride"))
                if so is not None:
                    starts[ilvl] = _int(_val(so, q), 0)
                lvl = o.find(q("lvl"))
                if lvl is not None:
                    replaced[ilvl] = _level(lvl, q)
            self.nums[n.get(q("numId")) or ""] = (aid, replaced, starts)

    def level(self, num_id: str, ilvl: int) -> _Level | None:
        """The level definition ``ilvl`` of instance ``num_id`` (None when undefined)."""
        if num_id not in self.nums:
            return None
        aid, replaced, _ = self.nums[num_id]
        return replaced.get(ilvl) or self.abstract.get(aid, {}).get(ilvl)

    def render(self, num_id: str, ilvl: int) -> tuple[str, bool]:
        """Advance the counters for a paragraph numbered ``(num_id, ilvl)``; return the text it prints
        (``""`` for none) and whether it is a bullet (rendered as ``"•"``)."""
        lvl = self.level(num_id, ilvl)
        if lvl is None:
            return "", False
        aid, _, starts = self.nums[num_id]
        counts = self.counters.setdefault(aid, {})
        if num_id not in self.started:
            self.started.add(num_id)
            for k, v in starts.items():
                counts[k] = v - 1
        counts[ilvl] = counts[ilvl] + 1 if ilvl in counts else lvl.start
        for deeper in [k for k in counts if k > ilvl]:
            d = self.level(num_id, deeper)
            restart = d.restart if d is not None else None
            if restart is None or (restart != 0 and restart > ilvl):
                del counts[deeper]
        if lvl.fmt == "bullet":
            return "•", True
        if lvl.fmt == "none":
            return "", False
        pattern = lvl.text if lvl.text is not None else f"%{ilvl + 1}."

        def number(m: re.Match[str]) -> str:
            k = int(m.group(1)) - 1
            other = self.level(num_id, k)
            value = counts.get(k, other.start if other else 1)
            fmt = "decimal" if lvl.legal else (other.fmt if other else "decimal")
            return format_number(value, fmt)

        return _NUMBER_REF.sub(number, pattern), False


def format_number(value: int, fmt: str) -> str:
    """``value`` in the number format ``fmt`` (ECMA-376 Part 1 §17.18.59 ST_NumberFormat): ``decimal``,
    ``decimalZero`` (01), ``lowerLetter``/``upperLetter`` (a..z, then aa, bb: the letter repeated),
    ``lowerRoman``/``upperRoman``; any other format is written in decimal."""
    if fmt in ("lowerLetter", "upperLetter") and value > 0:
        letter = chr(ord("a") + (value - 1) % 26) * ((value - 1) // 26 + 1)
        return letter if fmt == "lowerLetter" else letter.upper()
    if fmt in ("lowerRoman", "upperRoman") and 0 < value < 4000:
        out, n = "", value
        for unit, numeral in _ROMAN:
            while n >= unit:
                out, n = out + numeral, n - unit
        return out if fmt == "lowerRoman" else out.upper()
    if fmt == "decimalZero" and 0 <= value < 10:
        return f"0{value}"
    return str(value)


class _Q:
    """Qualified names in one WordprocessingML namespace (transitional or strict)."""

    def __init__(self, w: str) -> None:
        self.w = w
        self.cache: dict[str, str] = {}

    def __call__(self, local: str) -> str:
        name = self.cache.get(local)
        if name is None:
            name = self.cache[local] = f"{{{self.w}}}{local}"
        return name


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _val(elem: Any | None, q: _Q) -> str | None:
    return None if elem is None else elem.get(q("val"))


def _level(lvl: Any, q: _Q) -> _Level:
    text = lvl.find(q("lvlText"))
    restart = lvl.find(q("lvlRestart"))
    return _Level(
        start=_int(_val(lvl.find(q("start")), q), 1 if lvl.find(q("start")) is None else 0),
        fmt=_val(lvl.find(q("numFmt")), q) or "decimal",
        text=None if text is None else (_val(text, q) or ""),
        restart=None if restart is None else _int(_val(restart, q), 0),
        legal=lvl.find(q("isLgl")) is not None and _val(lvl.find(q("isLgl")), q) not in ("0", "false"),
        suffix=_val(lvl.find(q("suff")), q) or "tab",
    )


def _styles(root: Any | None, q: _Q) -> tuple[dict[str, _Style], str | None]:
    """Paragraph styles by id (``word/styles.xml``, ECMA-376 Part 1 §17.7) and the default paragraph style."""
    out: dict[str, _Style] = {}
    default = None
    if root is None:
        return out, None
    for s in root.iter(q("style")):
        if s.get(q("type")) not in (None, "paragraph"):
            continue
        sid = s.get(q("styleId")) or ""
        style = _Style(sid, name=_val(s.find(q("name")), q) or "", based_on=_val(s.find(q("basedOn")), q))
        ppr = s.find(q("pPr"))
        if ppr is not None:
            _numpr_into(ppr, style, q)
        out[sid] = style
        if s.get(q("default")) in ("1", "true", "on"):
            default = sid
    return out, default


def _numpr_into(ppr: Any, style: _Style, q: _Q) -> None:
    numpr = ppr.find(q("numPr"))
    if numpr is not None:
        style.num_id = _val(numpr.find(q("numId")), q)
        ilvl = _val(numpr.find(q("ilvl")), q)
        style.ilvl = _int(ilvl, 0) if ilvl is not None else None
    outline = _val(ppr.find(q("outlineLvl")), q)
    if outline is not None:
        style.outline = _int(outline, 9)


def title_like(text: str) -> bool:
    """True when a numbered paragraph's text (without its number) reads as a title: it starts with a
    capital, has at most :data:`TITLE_CHARS` characters and :data:`TITLE_WORDS` words, and is either
    written in capitals ("PRICE AND PAYMENT; DELIVERY", "DEFINITIONS.") or has no sentence break inside
    (``.``, ``;`` or ``:`` followed by a space) and ends without ``.``, ``;``, ``:`` or ``,``
    ("Limitation of Liability")."""
    text = text.strip()
    if not text or not text[0].isupper() or len(text) > TITLE_CHARS or len(text.split()) > TITLE_WORDS:
        return False
    if not any(ch.islower() for ch in text):
        return True
    return not re.search(r"[.;:]\s", text) and text[-1] not in ".;:,"


# --------------------------------------------------------------------------- walking the body


@dataclass
class _Block:
    """One paragraph or table of the body (or a footnote): raw accepted text and what is known about it."""

    text: str = ""
    table: bool = False
    number: str = ""
    bullet: bool = False
    numbered: bool = False
    heading: int | None = None  # heading level from a style or outline level
    list_level: int = 0
    section: str | None = None  # fixed section (footnotes, endnotes)
    changes: list[dict] = field(default_factory=list)


@dataclass
class _Para:
    """A paragraph being read: its text pieces and the changes in it (positions in its text)."""

    parts: list[str] = field(default_factory=list)
    length: int = 0
    events: list[dict] = field(default_factory=list)


class _Reader:
    """Walks WordprocessingML content (body, table cells, notes) into :class:`_Block` s."""

    def __init__(self, w: str, styles: dict[str, _Style], default_style: str | None, numbering: Numbering) -> None:
        self.q = _Q(w)
        self.styles = styles
        self.default_style = default_style
        self.numbering = numbering
        self.blocks: list[_Block] = []
        self.anchors: dict[str, dict] = {}  # comment id -> {"parts": [...], "block": index, "open": bool}
        self.move_name: str | None = None
        self.notes: dict[str, dict[str, int]] = {"footnote": {}, "endnote": {}}
        self.field_depth: list[bool] = []  # per open complex field: in its instruction part
        self.para: _Para | None = None
        self.cell_changes: list[dict] | None = None
        #: Read deleted text as text (``w:del``/``w:moveFrom`` content, ``w:delText``) and tracked rows and cells
        #: as they were: the reader that renders what a deleted row or cell showed (:meth:`_shown`).
        self.keep_deleted = False
        q = self.q
        self.skip = {q("pPr"), q("rPr"), q("sdtPr"), q("sdtEndPr"), q("instrText"), q("delInstrText"), q("tblPr")}
        self.skip |= {q("tblGrid"), q("trPr"), q("tcPr"), q("sectPr"), q("sym"), q("fldData")}

    # ---- blocks

    def body(self, container: Any) -> None:
        """Read the block-level content of ``container`` (``w:body``, ``w:sdtContent``, ...)."""
        q = self.q
        for child in container:
            tag = child.tag
            if tag == q("p"):
                block = self.paragraph(child)
                self.blocks.append(block)
            elif tag == q("tbl"):
                self.blocks.append(self.table(child))
            elif tag in (q("sdt"),):
                content = child.find(q("sdtContent"))
                if content is not None:
                    self.body(content)
            elif tag in (q("customXml"), q("sdtContent"), q("ins"), q("moveTo")):
                self.body(child)
            elif tag == f"{{{_MC}}}AlternateContent":
                chosen = _alternate(child)
                if chosen is not None:
                    self.body(chosen)
            else:
                self.marker(child)

    def marker(self, elem: Any) -> bool:
        """Handle a range marker (comment range, move range); True when ``elem`` was one."""
        q = self.q
        tag = elem.tag
        if tag == q("commentRangeStart"):
            cid = elem.get(q("id")) or ""
            self.anchors[cid] = {"parts": [], "block": len(self.blocks), "open": True}
        elif tag == q("commentRangeEnd"):
            cid = elem.get(q("id")) or ""
            if cid in self.anchors:
                self.anchors[cid]["open"] = False
        elif tag == q("commentReference"):
            cid = elem.get(q("id")) or ""
            self.anchors.setdefault(cid, {"parts": [], "block": len(self.blocks), "open": False})
        elif tag in (q("moveFromRangeStart"), q("moveToRangeStart")):
            self.move_name = elem.get(q("name"))
        elif tag in (q("moveFromRangeEnd"), q("moveToRangeEnd")):
            self.move_name = None
        else:
            return False
        return True

    def paragraph(self, p: Any) -> _Block:
        """One ``w:p``: its accepted text with its number, heading level and changes."""
        q = self.q
        outer, self.para = self.para, _Para()
        para = self.para
        self.inline(p)
        self.para = outer
        for a in self.anchors.values():
            if a["open"]:
                a["parts"].append("\n")
        text = "".join(para.parts)
        block = _Block(text=text)
        ppr = p.find(q("pPr"))
        style = self._style(ppr)
        num_id, ilvl, outline = self._props(ppr, style)
        if num_id and num_id != "0":
            number, bullet = self.numbering.render(num_id, ilvl)
            lvl = self.numbering.level(num_id, ilvl)
            if number:
                sep = "" if lvl is not None and lvl.suffix == "nothing" else " "
                block.number = number + sep
                block.bullet = bullet
                block.numbered = True
                block.list_level = ilvl
        heading = _heading_level(style, self.styles)
        if outline is not None and 0 <= outline <= 8:
            heading = outline + 1
        block.heading = heading
        shift = len(block.number)
        block.text = block.number + text
        for e in para.events:
            e["pos"] += shift
        block.changes = para.events
        return block

    def _style(self, ppr: Any | None) -> str | None:
        q = self.q
        sid = _val(ppr.find(q("pStyle")), q) if ppr is not None else None
        return sid if sid is not None else self.default_style

    def _props(self, ppr: Any | None, style: str | None) -> tuple[str | None, int, int | None]:
        """``(numId, ilvl, outline level)`` of a paragraph: its own ``w:numPr``/``w:outlineLvl`` first, then
        its style's and the styles it is based on (ECMA-376 Part 1 §17.3.1.19, §17.7.2)."""
        num_id: str | None = None
        ilvl: int | None = None
        outline: int | None = None
        if ppr is not None:
            own = _Style("")
            _numpr_into(ppr, own, self.q)
            num_id, ilvl, outline = own.num_id, own.ilvl, own.outline
        seen: set[str] = set()
        sid = style
        while sid and sid not in seen and sid in self.styles:
            seen.add(sid)
            s = self.styles[sid]
            if num_id is None and s.num_id is not None:
                num_id = s.num_id
            if ilvl is None and s.ilvl is not None:
                ilvl = s.ilvl
            if outline is None and s.outline is not None:
                outline = s.outline
            sid = s.based_on
        return num_id, ilvl or 0, outline

    def table(self, tbl: Any) -> _Block:
        """One ``w:tbl`` (§17.4): a line per row, cells joined by ``" | "``. A row deleted as a tracked change
        (``w:trPr/w:del``, §17.13.5, Deleted Table Row) is left out of the text and recorded as one
        deletion of the row; a row inserted as one (``w:trPr/w:ins``, Inserted Table Row) is read and
        recorded as one insertion; cells likewise (``w:tcPr/w:cellDel``, ``w:cellIns``): see :meth:`_tracked`."""
        q = self.q
        rows: list[str] = []
        changes: list[dict] = []
        for tr in tbl.iter(q("tr")):
            if tr.getparent() is not None and _nearest_table(tr, q) is not tbl:
                continue  # a row of a nested table: read within its cell
            trpr = tr.find(q("trPr"))
            row_del = None if trpr is None or self.keep_deleted else trpr.find(q("del"))
            row_ins = None if trpr is None or self.keep_deleted else trpr.find(q("ins"))
            start = sum(len(r) + 1 for r in rows)  # where the row's line starts (or would) in the table's text
            if row_del is not None:
                self._tracked(changes, "deletion", row_del, tr, start, text=self._shown(tr), scope="row")
                continue
            first = len(changes)
            cells: list[str] = []
            self._row(tr, changes, rows, cells)
            line = " | ".join(c for c in cells)
            if row_ins is not None:
                self._tracked(changes, "insertion", row_ins, tr, start, text=line, scope="row", inside=first)
            if line.strip(" |"):
                rows.append(line)
        block = _Block(text="\n".join(rows), table=True)
        block.changes = changes
        return block

    def _row(self, tr: Any, changes: list[dict], rows: list[str], cells: list[str]) -> None:
        """Append the text of each cell of row ``tr`` to ``cells`` (a cell deleted as a change is left out)."""
        q = self.q
        for tc in tr:
            if tc.tag != q("tc") and tc.tag != q("sdt") and tc.tag != q("customXml"):
                continue
            for cell in [tc] if tc.tag == q("tc") else list(tc.iter(q("tc"))):
                tcpr = cell.find(q("tcPr"))
                cell_del = None if tcpr is None or self.keep_deleted else tcpr.find(q("cellDel"))
                cell_ins = None if tcpr is None or self.keep_deleted else tcpr.find(q("cellIns"))
                start = sum(len(r) + 1 for r in rows) + sum(len(c) + 3 for c in cells)
                if cell_del is not None:
                    self._tracked(changes, "deletion", cell_del, cell, start, text=self._shown(cell), scope="cell")
                    continue
                first = len(changes)
                cells.append(self._cell(cell, changes, rows, cells))
                if cell_ins is not None:
                    self._tracked(
                        changes, "insertion", cell_ins, cell, start, text=cells[-1], scope="cell", inside=first
                    )

    def _shown(self, elem: Any) -> str:
        """What a row (cells joined by ``" | "``) or cell deleted as a change showed: its text read with the
        deleted text kept, by a reader of its own (no numbering counters, comment anchors or note citations
        advanced: the row or cell is not in the accepted text)."""
        sub = _Reader(self.q.w, self.styles, self.default_style, Numbering(None, self.q.w))
        sub.keep_deleted = True
        if elem.tag == self.q("tc"):
            return sub._cell(elem, [], [], [])
        cells: list[str] = []
        sub._row(elem, [], [], cells)
        return " | ".join(cells)

    def _tracked(
        self,
        changes: list[dict],
        kind: str,
        mark: Any,
        container: Any,
        pos: int,
        *,
        text: str,
        scope: str,
        inside: int | None = None,
    ) -> None:
        """Record a table row or cell deleted or inserted as a tracked change (ECMA-376 Part 1 §17.13.5:
        ``w:trPr/w:del`` Deleted Table Row, ``w:trPr/w:ins`` Inserted Table Row, ``w:tcPr/w:cellDel``,
        ``w:tcPr/w:cellIns``) as ONE change of ``kind`` whose ``before`` (a deletion) or ``after`` (an
        insertion) is ``text`` and whose ``scope`` is ``"row"`` or ``"cell"``, at ``pos`` in the table's text.

        Author and date are the revision mark's (``mark``); a mark without an author takes those of the
        first ``w:del`` (``w:ins``) with one inside the row or cell, as Word's runs carry them. The runs'
        own revisions are part of it: a deleted row's are never read (the row is not in the text); an
        inserted row's (cell's) insertions by the same author, recorded in ``changes[inside:]``, are
        dropped. A row or cell without text (cells' separators aside) makes no change."""
        q = self.q
        tag = q("del") if kind == "deletion" else q("ins")
        author, date = mark.get(q("author")), mark.get(q("date"))
        runs = next((e for e in container.iter(tag) if e is not mark and e.get(q("author"))), None)
        if not author and runs is not None:
            author, date = runs.get(q("author")), runs.get(q("date"))
        elif not date and runs is not None and runs.get(q("author")) == author:
            date = runs.get(q("date"))
        at = len(changes) if inside is None else inside
        if inside is not None:
            changes[inside:] = [e for e in changes[inside:] if not (e["kind"] == "insertion" and e["author"] == author)]
        if not text.replace("|", " ").strip():
            return
        event = {
            "kind": kind,
            "before": text if kind == "deletion" else "",
            "after": text if kind == "insertion" else "",
            "author": author,
            "date": date,
            "pos": pos,
            "name": None,
            "block": len(self.blocks),
            "scope": scope,
        }
        changes.insert(at, event)

    def _cell(self, tc: Any, changes: list[dict], rows: list[str], cells: list[str]) -> str:
        """A cell's text (its paragraphs joined by a space; a nested table's rows by ``"; "``)."""
        q = self.q
        pieces: list[str] = []
        for child in tc:
            if child.tag == q("p"):
                para = self.paragraph(child)
                base = sum(len(r) + 1 for r in rows) + sum(len(c) + 3 for c in cells) + sum(len(x) + 1 for x in pieces)
                for e in para.changes:
                    e["pos"] += base
                    e["context_text"] = para.text
                    e["context_pos"] = e["pos"] - base
                changes.extend(para.changes)
                if para.text.strip():
                    pieces.append(para.text.replace("\n", " "))
            elif child.tag == q("tbl"):
                inner = self.table(child)
                for e in inner.changes:
                    e.setdefault("context_text", inner.text)
                    e.setdefault("context_pos", e["pos"])
                changes.extend(inner.changes)
                if inner.text:
                    pieces.append(inner.text.replace("\n", "; "))
            elif child.tag == q("sdt"):
                content = child.find(q("sdtContent"))
                if content is not None:
                    pieces.append(self._cell(content, changes, rows, cells))
            else:
                self.marker(child)
        return " ".join(p for p in pieces if p)

    # ---- runs

    def emit(self, text: str) -> None:
        """Append accepted text to the current paragraph and to every open comment anchor."""
        if not text or self.para is None:
            return
        self.para.parts.append(text)
        self.para.length += len(text)
        for a in self.anchors.values():
            if a["open"]:
                a["parts"].append(text)

    def inline(self, elem: Any) -> None:
        """Read the run-level content of ``elem`` (a paragraph, hyperlink, run, ...) into the paragraph."""
        q = self.q
        for child in elem:
            tag = child.tag
            if not isinstance(tag, str) or tag in self.skip:
                continue
            if tag == q("t"):
                if not (self.field_depth and self.field_depth[-1]):
                    self.emit(child.text or "")
            elif tag == q("tab") or tag == q("ptab"):
                self.emit("\t")
            elif tag in (q("br"), q("cr")):
                self.emit("\n")
            elif tag == q("noBreakHyphen"):
                self.emit("-")
            elif tag == q("fldChar"):
                kind = child.get(q("fldCharType"))
                if kind == "begin":
                    self.field_depth.append(True)
                elif kind == "separate" and self.field_depth:
                    self.field_depth[-1] = False
                elif kind == "end" and self.field_depth:
                    self.field_depth.pop()
            elif tag in (q("ins"), q("moveTo")):
                assert self.para is not None
                start = self.para.length
                name = self.move_name
                self.inline(child)
                added = "".join(self.para.parts)[start:] if self.para.length > start else ""
                kind = "insertion" if tag == q("ins") else "moveTo"
                self._event(kind, child, start, after=added, name=name)
            elif tag in (q("del"), q("moveFrom")) and self.keep_deleted:
                self.inline(child)  # what a deleted row or cell showed (:meth:`_shown`)
            elif tag == q("delText"):
                if self.keep_deleted and not (self.field_depth and self.field_depth[-1]):
                    self.emit(child.text or "")
            elif tag in (q("del"), q("moveFrom")):
                removed = "".join(_removed_text(child, q))
                kind = "deletion" if tag == q("del") else "moveFrom"
                assert self.para is not None
                self._event(kind, child, self.para.length, before=removed, name=self.move_name)
            elif tag == q("footnoteReference") or tag == q("endnoteReference"):
                which = "footnote" if tag == q("footnoteReference") else "endnote"
                refs = self.notes[which]
                nid = child.get(q("id")) or ""
                refs.setdefault(nid, len(refs) + 1)
                self.emit(f"[{refs[nid]}]")
            elif tag == q("txbxContent"):
                outer = self.para
                for p in child.iter(q("p")):
                    block = self.paragraph(p)
                    if block.text.strip():
                        self.emit("\n" + block.text)
                    self.para = outer
            elif tag == f"{{{_MC}}}AlternateContent":
                chosen = _alternate(child)
                if chosen is not None:
                    self.inline(chosen)
            elif tag == q("p"):  # a paragraph nested where runs are expected (malformed): its text
                self.inline(child)
            elif self.marker(child):
                continue
            else:  # r, hyperlink, fldSimple, sdt/sdtContent, smartTag, customXml, dir, bdo, drawing, pict...
                self.inline(child)

    def _event(self, kind: str, elem: Any, pos: int, *, before: str = "", after: str = "", name: str | None) -> None:
        q = self.q
        if not before and not after:
            return
        event = {
            "kind": kind,
            "before": before,
            "after": after,
            "author": elem.get(q("author")),
            "date": elem.get(q("date")),
            "pos": pos,
            "name": name,
            "block": len(self.blocks),
        }
        assert self.para is not None
        self.para.events.append(event)


def _removed_text(elem: Any, q: _Q) -> list[str]:
    """The text of a ``w:del``/``w:moveFrom`` (``w:delText`` and ``w:t``), in order; tabs and breaks as spaces."""
    out = []
    for node in elem.iter(q("delText"), q("t"), q("tab"), q("br"), q("cr")):
        out.append(node.text or "" if node.tag in (q("delText"), q("t")) else " ")
    return out


def _alternate(elem: Any) -> Any | None:
    """The branch of an ``mc:AlternateContent`` read (ECMA-376 Part 3 §10.2): the first ``mc:Choice``, else
    the ``mc:Fallback``."""
    choice = elem.find(f"{{{_MC}}}Choice")
    return choice if choice is not None else elem.find(f"{{{_MC}}}Fallback")


def _nearest_table(elem: Any, q: _Q) -> Any | None:
    parent = elem.getparent()
    while parent is not None and parent.tag != q("tbl"):
        parent = parent.getparent()
    return parent


def _heading_level(style: str | None, styles: dict[str, _Style]) -> int | None:
    """The heading level of paragraph style ``style`` (``Heading1``..``Heading9`` by id or ``heading 1``.. by
    name, through ``w:basedOn``; a style's outline level), None for a body style."""
    seen: set[str] = set()
    sid = style
    while sid and sid not in seen:
        seen.add(sid)
        m = _HEADING_STYLE.match(sid)
        s = styles.get(sid)
        if m is None and s is not None:
            m = _HEADING_STYLE.match(s.name)
        if m is not None:
            return int(m.group(1))
        if s is None:
            return None
        if s.outline is not None and 0 <= s.outline <= 8:
            return s.outline + 1
        sid = s.based_on
    return None


# --------------------------------------------------------------------------- changes


def _merge(events: list[dict]) -> list[dict]:
    """One paragraph's (or table's) change events with neighbours of one kind and author joined (Word splits
    a change at every formatting boundary), then a deletion next to an insertion by the same author (nothing
    accepted between them) made a replacement. A tracked row or cell (an event with a ``scope``) is one
    change of its own: never joined to a neighbour, never paired into a replacement."""
    out: list[dict] = []
    for e in events:
        last = out[-1] if out else None
        if (last is not None and "scope" in last) or "scope" in e:
            out.append(dict(e))
            continue
        if last is not None and last["kind"] == e["kind"] and last["author"] == e["author"]:
            if e["kind"] in ("insertion", "moveTo") and last["pos"] + len(last["after"]) == e["pos"]:
                last["after"] += e["after"]
                continue
            if e["kind"] in ("deletion", "moveFrom") and last["pos"] == e["pos"]:
                last["before"] += e["before"]
                continue
        out.append(dict(e))
    paired: list[dict] = []
    for e in out:
        last = paired[-1] if paired else None
        if (
            last is not None
            and "scope" not in last
            and "scope" not in e
            and last["author"] == e["author"]
            and {last["kind"], e["kind"]} == {"insertion", "deletion"}
        ):
            ins, dele = (last, e) if last["kind"] == "insertion" else (e, last)
            if ins["pos"] == dele["pos"] or ins["pos"] + len(ins["after"]) == dele["pos"]:
                last.update(kind="replacement", before=dele["before"], after=ins["after"], pos=ins["pos"])
                last["date"] = last["date"] or e["date"]
                continue
        paired.append(e)
    return paired


def _context(text: str, pos: int, length: int) -> str:
    """The text around ``[pos, pos + length)``: :data:`CONTEXT_CHARS` each side, cut at word boundaries, cleaned."""
    lo, hi = max(0, pos - CONTEXT_CHARS), min(len(text), pos + length + CONTEXT_CHARS)
    if lo > 0:
        space = text.find(" ", lo, pos)
        lo = space + 1 if space >= 0 else lo
    if hi < len(text):
        space = text.rfind(" ", pos + length, hi)
        hi = space if space >= 0 else hi
    out = clean_page_text(text[lo:hi]).replace("\n", " ")
    return ("…" if lo > 0 else "") + out + ("…" if hi < len(text) else "")


# --------------------------------------------------------------------------- the document


def _read(path: str, max_pages: int) -> dict:
    pkg = _Package(path)
    with pkg.zf:
        root = pkg.xml(pkg.main)
        assert root is not None
        w = etree.QName(root).namespace or W_TRANSITIONAL
        if w not in (W_TRANSITIONAL, W_STRICT):
            raise DocxError("corrupt", f"corrupt DOCX: {pkg.main} is not WordprocessingML ({w})")
        q = _Q(w)
        rels = pkg.rels(pkg.main)

        def part(kind: str, fallback: str) -> list[str]:
            found = sorted(name for t, name in rels.values() if t.rsplit("/", 1)[-1] == kind)
            return found or ([fallback] if fallback in pkg.infos else [])

        styles_root = next((pkg.xml(n) for n in part("styles", "word/styles.xml")), None)
        numbering_root = next((pkg.xml(n) for n in part("numbering", "word/numbering.xml")), None)
        styles, default_style = _styles(styles_root, q)
        reader = _Reader(w, styles, default_style, Numbering(numbering_root, w))
        body = root.find(q("body"))
        if body is None:
            raise DocxError("corrupt", f"corrupt DOCX: {pkg.main} has no w:body")
        reader.body(body)
        body_blocks = len(reader.blocks)
        for which, kind in (("footnote", "footnotes"), ("endnote", "endnotes")):
            for name in part(kind, f"word/{kind}.xml"):
                _notes(reader, pkg.xml(name), which, q)
        comments = _comments(reader, next((pkg.xml(n) for n in part("comments", "word/comments.xml")), None), q)
        running: list[str] = []
        names = part("header", "") + part("footer", "")
        if not names:
            names = sorted(n for n in pkg.infos if re.fullmatch(r"word/(header|footer)\d*\.xml", n))
        for name in names:
            running.extend(_running_lines(pkg.xml(name), w, styles, default_style))
    return _assemble(reader, body_blocks, comments, list(dict.fromkeys(running)), max_pages)


def _notes(reader: _Reader, root: Any | None, which: str, q: _Q) -> None:
    """Append the footnotes or endnotes of ``root`` as blocks (section ``Footnotes``/``Endnotes``), separators
    skipped, each ``"[n] text"`` with ``n`` its citation order (uncited notes after the cited ones)."""
    if root is None:
        return
    refs = reader.notes[which]
    notes = []
    for note in root.iter(q(which)):
        if note.get(q("type")) in ("separator", "continuationSeparator", "continuationNotice"):
            continue
        nid = note.get(q("id")) or ""
        refs.setdefault(nid, len(refs) + 1)
        notes.append((refs[nid], note))
    for n, note in sorted(notes, key=lambda x: x[0]):
        start = len(reader.blocks)
        reader.body(note)
        parts = reader.blocks[start:]
        del reader.blocks[start:]
        text = "\n".join(b.text for b in parts if b.text.strip())
        block = _Block(
            text=f"[{n}] {text}" if text.strip() else "", section="Footnotes" if which == "footnote" else "Endnotes"
        )
        offset = len(f"[{n}] ")
        for b in parts:
            for e in b.changes:
                e["pos"] += offset
                e["block"] = start
                e.setdefault("context_text", b.text)
                e.setdefault("context_pos", e["pos"] - offset)
                block.changes.append(e)
            offset += len(b.text) + 1 if b.text.strip() else 0
        for a in reader.anchors.values():
            if start <= a["block"] < start + len(parts):
                a["block"] = start
        reader.blocks.append(block)


def _comments(reader: _Reader, root: Any | None, q: _Q) -> list[dict]:
    """The comments of ``word/comments.xml`` (ECMA-376 Part 1 §17.13.4.2) with their anchors (block indexes
    for now: :func:`_assemble` makes them unit numbers)."""
    if root is None:
        return []
    out = []
    for c in root.iter(q("comment")):
        cid = c.get(q("id")) or ""
        sub = _Reader(q.w, reader.styles, reader.default_style, Numbering(None, q.w))
        sub.body(c)
        text = clean_page_text("\n".join(b.text for b in sub.blocks if b.text.strip()))
        anchor = reader.anchors.get(cid, {"parts": [], "block": 0})
        out.append(
            {
                "author": c.get(q("author")),
                "date": c.get(q("date")),
                "text": text,
                "anchor": clean_page_text("".join(anchor["parts"])),
                "unit": anchor["block"],
            }
        )
    return out


def _running_lines(root: Any | None, w: str, styles: dict[str, _Style], default_style: str | None) -> list[str]:
    """The text lines of a header or footer part (ECMA-376 Part 1 §17.10)."""
    if root is None:
        return []
    sub = _Reader(w, styles, default_style, Numbering(None, w))
    sub.body(root)
    lines = []
    for b in sub.blocks:
        for line in clean_page_text(b.text).splitlines():
            if line.strip():
                lines.append(line.strip())
    return lines


def _assemble(reader: _Reader, body_blocks: int, comments: list[dict], running: list[str], max_pages: int) -> dict:
    """Units, locators, changes and comments from the blocks read (see :func:`read_docx` for the shape)."""
    blocks = reader.blocks
    texts = [clean_page_text(b.text) for b in blocks]
    kept = [i for i, t in enumerate(texts) if t]
    if not kept:
        return {"ok": False, "kind": "no_text", "reason": "the DOCX has no text"}
    if len(kept) > max_pages:
        return {
            "ok": False,
            "kind": "too_many_pages",
            "reason": f"{len(kept)} paragraphs (and tables) exceed the limit of {max_pages} units (max_pages)",
        }
    # unit number of each block: its own, or the next kept one's (the last unit after the end)
    unit_of: list[int] = [0] * (len(blocks) + 1)
    positions = {b: n + 1 for n, b in enumerate(kept)}
    following = len(kept)
    for i in range(len(blocks), -1, -1):
        if i in positions:
            following = positions[i]
        unit_of[i] = following
    use_styles = any(blocks[i].heading is not None for i in kept if i < body_blocks and not blocks[i].table)

    pages: list[dict] = []
    path: list[tuple[int, str]] = []
    count = 0
    for i in kept:
        b, text = blocks[i], texts[i]
        level = None
        if i < body_blocks and not b.table:
            if use_styles:
                level = b.heading
            elif b.numbered and not b.bullet and title_like(text[len(b.number) :].strip()):
                level = b.list_level + 1
        if b.section is not None:
            if not path or path[-1][1] != b.section or len(path) != 1:
                path, count = [(1, b.section)], 0
            count += 1
            locator: dict[str, Any] = {"section": b.section, "paragraph": count}
        elif level is not None:
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, " ".join(text.split())[:120])]
            count = 0
            locator = {"section": " > ".join(t for _, t in path), "paragraph": None}
        else:
            count += 1
            locator = {"section": " > ".join(t for _, t in path) if path else None, "paragraph": count}
        quality = dict(_QUALITY)
        quality["private_use_chars"] = sum(1 for ch in b.text if "\ue000" <= ch <= "\uf8ff")
        quality["nul_chars"] = b.text.count("\x00")
        pages.append({"number": len(pages) + 1, "text": text, "quality": quality, "running": [], "locator": locator})
    if running:
        pages[0]["running"] = running
        pages[0]["quality"]["running_lines"] = len(running)

    changes = _changes(blocks, unit_of)
    for c in comments:
        c["unit"] = unit_of[min(c["unit"], len(blocks))]
    return {
        "ok": True,
        "encrypted": False,
        "pages": pages,
        "engines": {"docx": len(pages)},
        "changes": changes,
        "comments": comments,
    }


def _changes(blocks: list[_Block], unit_of: list[int]) -> list[dict]:
    """The tracked changes of every block as :class:`schemas.documents.TrackedChange` dicts; a ``w:moveFrom``
    and its ``w:moveTo`` (same move name, else the same text, else in order) make one ``move`` in the unit
    the text moved to."""
    out: list[dict] = []
    froms: list[dict] = []
    tos: list[dict] = []
    for i, b in enumerate(blocks):
        for e in _merge(b.changes):
            ctx_text = e.get("context_text", b.text)
            ctx_pos = e.get("context_pos", e["pos"])
            e["unit"] = unit_of[i]
            e["context"] = _context(ctx_text, ctx_pos, len(e["after"]))
            if e["kind"] == "moveFrom":
                froms.append(e)
            elif e["kind"] == "moveTo":
                tos.append(e)
            else:
                out.append(e)
    for to in tos:
        match = next((f for f in froms if to["name"] and f["name"] == to["name"]), None)
        match = match or next((f for f in froms if f["before"] == to["after"]), None)
        match = match or (froms[0] if froms else None)
        if match is not None:
            froms.remove(match)
        to.update(kind="move", before=match["before"] if match else "")
        out.append(to)
    for f in froms:
        f.update(kind="move", after="")
        out.append(f)
    out.sort(key=lambda e: (e["unit"], e["pos"]))
    keys = ("kind", "before", "after", "author", "date", "unit", "context")
    changes = []
    for e in out:
        change = {k: (clean_page_text(e[k]) if k in ("before", "after") else e[k]) for k in keys}
        if not change["before"].strip() and not change["after"].strip():
            continue  # a deleted space, tab or break alone: no visible change, never an empty one
        if change["kind"] == "replacement" and not change["before"].strip():
            change["kind"] = "insertion"  # a space deleted beside the insertion
        elif change["kind"] == "replacement" and not change["after"].strip():
            change["kind"] = "deletion"
        if "scope" in e:
            change["scope"] = e["scope"]
        changes.append(change)
    return changes
