"""Text of an SEC filing as filed on EDGAR (HTML or XHTML with inline XBRL, or EDGAR's complete submission
text file), split into pages and Item sections, with its inline XBRL facts — read in the extraction worker's
child process (:func:`tasks.ingest.extract_worker.read_other_kind`).

Parser: ``lxml.html`` (libxml2's HTML parser; no network, comments dropped, entities decoded). Measured on
the shared Nvidia 10-K (2.7 MB): ``lxml.html`` 0.05 s, lxml's XML parser 0.05 s, selectolax (lexbor) 0.02 s.
The XML parser is not an option on its own: that 10-K as stored is not well-formed XML (an
``ix:nonNumeric`` closes across a ``div``) and plain-HTML exhibits (``<br>``, ``&nbsp;``) are not XML;
selectolax would add a dependency to save 30 ms of a 1 s read. ``lxml.html`` reads both kinds and keeps the
inline XBRL elements (as ``ix:nonfraction`` …, see :mod:`tasks.ingest.ixbrl`). It never loads a DTD or an
external entity; a file whose prologue declares entities (``<!ENTITY``, the shape of an entity-expansion
bomb; HTML has no entity declarations) is refused as ``corrupt`` before parsing.

Text (one line per block):

- block elements (``p``, ``div``, ``li``, ``h1``-``h6``, ``tr``, ``br`` …) end a line; inline elements
  (``span``, ``font``, ``a``, ``ix:*``) join without adding space (a filer's ``<span>Reven</span><span>ue``
  stays one word); whitespace runs collapse;
- a table row is one line: its non-empty cells joined by one space, a cell of only ``)`` or ``%`` glued to
  the one before, so a statement line reads ``"Revenue $ 26,974 $ 26,914 $ 16,675"`` — the shape the filing
  reader (:mod:`tasks.review.filing`) reads amounts from (its labels must be followed by a space and the
  amount; a ``" | "`` between cells would hide them). Spacer cells disappear;
- ``display:none`` elements (the ``ix:header`` with its hidden facts sits in one), ``ix:header`` itself,
  ``script``, ``style``, ``head`` and ``template`` are not text;
- each line goes through :func:`tasks.textnorm.clean_page_text` (NFKC: ``&#160;`` becomes a space; control
  characters dropped); empty lines are dropped.
- a line outside a table whose text is all set in bold or italic (``b``, ``strong``, ``i``, ``em``, a
  ``font-weight`` of bold or 600-900, a ``font-style`` of italic; a nested ``font-weight:400`` unsets it) is
  an *emphasised* line: a unit lists its emphasised lines' 0-based indices in ``emphasis`` (a 10-K's risk
  factor headings are such lines; :func:`tasks.review.filing.risk_heading_spans`);

Units (:class:`schemas.documents.PageText`) and locators:

- pages: the filer's page breaks (``page-break-before:always``, ``page-break-after:always``,
  ``break-before:page``, ``break-after:page`` in an element's ``style``; EDGAR filings put them on an
  ``<hr>``) split the text into pages numbered from 1 (an empty page keeps its number and makes no unit);
  a document without page breaks has one page and its units have ``page`` None; the number the filer printed
  at a page's foot (its page-number line, removed as furniture) is the locator's ``printed_page`` when it is
  not the page's own number (a 10-Q's cover and contents are often unnumbered: its sixth page prints "4");
- running headers, footers and page numbers are removed per page by
  :func:`tasks.ingest.furniture.strip_running_lines` (the page-number line at a page's foot, a repeated
  "Table of Contents" link at its head) and kept in the first unit of the page's ``running``; lines repeated
  across pages count only in a document of :data:`FURNITURE_MIN_PAGES` pages or more (in a three-page 8-K
  the exhibit list at the foot of two pages is text), a shorter one loses only page-number lines;
- within a page a new unit starts at each Part or Item heading, so a unit's ``section`` is the path of
  headings it sits under (``"Part II > Item 7. Management's Discussion and Analysis …"``; 8-K:
  ``"Item 8.01 Other Events"``); text before the first heading has ``section`` None. A heading is a line
  that starts ``PART I``-``IV`` or ``ITEM n.`` (10-K/10-Q Items 1-16 with a letter A-C; 8-K Items 1.01-9.01)
  and whose title, if any, starts with a capital (so "Item 1A of this report …" is a reference, not a
  heading), at most :data:`HEADING_CHARS` characters. A line of the table of contents is not a heading: the
  rule is *a line from a table row whose last cell is a page number* (``4``, ``F-1``, ``ii``), which is how
  EDGAR filings lay out their contents. An "Item 7." line alone takes the next short line as its title. A
  unit holding only heading lines so far absorbs the next heading ("PART II" then "Item 5. …" is one unit
  under ``"Part II > Item 5. …"``).

EDGAR's complete submission text file (EDGAR Filer Manual Vol. II §5 and §6: ``<SEC-DOCUMENT>``, an
``<SEC-HEADER>``, then one ``<DOCUMENT>`` per file with ``<TYPE>``, ``<SEQUENCE>``, ``<FILENAME>``,
``<DESCRIPTION>`` and its ``<TEXT>``): the first document is the filing itself and is read; the others
(exhibits, XBRL files, graphics) are listed in the result's ``parts`` to be reviewed on their own. A
``<TEXT>`` that is not HTML is read as plain text, its ``<PAGE>`` markers as page breaks.

Result (:func:`read_html`): ``{"ok": True, "encrypted": False, "pages": [{"number", "text", "quality",
"running", "locator": {"page", "section", "printed_page"?}, "emphasis": [line index]}], "engines": {"html": n}, "facts": [XbrlFact dicts],
"dei": {...}, "form": str | None, "edgar": {"type", "sequence", "filename", "description"} (the document's own
EDGAR header, empty outside a submission file), "parts": [{"type", "sequence", "filename", "description"}],
"exhibit_links": [file name]}`` or ``{"ok": False,
"kind": FailureKind value, "reason": str}``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tasks.ingest.furniture import printed_numbers, strip_running_lines
from tasks.ingest.quality import clean_quality
from tasks.textnorm import clean_page_text

#: A Part or Item heading line is at most this long (characters); longer lines are body text.
HEADING_CHARS = 200
#: Running lines are found across pages only in a document of at least this many pages with text; a shorter
#: one (an 8-K of three pages) loses only page-number lines (its repeated lines are body text: an exhibit list).
FURNITURE_MIN_PAGES = 5
#: Over this share of control bytes (NUL and C0 controls other than tab, LF, FF, CR) a file is binary data, not
#: HTML (text files hold none; random bytes about 10 %).
MAX_CONTROL_SHARE = 0.01
_CONTROL_BYTES = bytes([*range(0, 9), 11, *range(14, 32)])
#: Bytes of the prologue (before ``<html``) searched for entity declarations.
PROLOGUE_BYTES = 1 << 20

_QUALITY = clean_quality("html")

_BLOCKS = frozenset(
    [
        "p",
        "div",
        "li",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "tbody",
        "thead",
        "tfoot",
        "caption",
        "tr",
        "blockquote",
        "pre",
        "hr",
        "center",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "aside",
        "address",
        "figure",
        "figcaption",
        "form",
        "fieldset",
        "main",
        "body",
        "html",
        "page",
    ]
)
_CELLS = frozenset({"td", "th"})
_NOT_TEXT = frozenset({"script", "style", "head", "title", "template", "noscript", "ix:header", "xml"})
_HIDDEN = re.compile(r"display\s*:\s*none", re.I)
_BREAK_BEFORE = re.compile(r"(?:page-break-before\s*:\s*always|break-before\s*:\s*page)", re.I)
_BREAK_AFTER = re.compile(r"(?:page-break-after\s*:\s*always|break-after\s*:\s*page)", re.I)
_GLUE_LEFT = re.compile(r"^[)%]+$|^\)%$")
_PAGE_NUMBER_CELL = re.compile(r"^(?:\d{1,3}|[ivxlc]{1,7}|[A-Z]{1,2}-\s?\d{1,3})$", re.I)
_PART = re.compile(r"^PART\s+(IV|III|II|I)\b\s*[.:\-–—]?\s*(.{0,150})$", re.I)
_ITEM = re.compile(r"^ITEM\s+(\d{1,2}(?:\.\d{2})?[A-C]?)(?:\([a-z]\))?(?![\d(])\s*[.:\-–—]?\s*(.{0,180})$", re.I)
_ENTITY_DECL = re.compile(rb"<!\s*ENTITY", re.I)
_HTML_START = re.compile(rb"<html[\s>]", re.I)
_SUBMISSION = re.compile(
    rb"^(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*\?>\s*)?<(?:SEC-DOCUMENT|SEC-HEADER|DOCUMENT|IMS-HEADER)>", re.I
)
_DOCUMENT = re.compile(rb"<DOCUMENT>(.*?)(?:</DOCUMENT>|\Z)", re.S | re.I)
_TEXT = re.compile(rb"<TEXT>(.*?)(?:</TEXT>|\Z)", re.S | re.I)
_LOOKS_HTML = re.compile(rb"<(?:html|body|div|p|table)[\s>]|<\?xml", re.I)
_SGML_PAGE = re.compile(r"^\s*<PAGE>\s*$", re.I | re.M)


class HtmlError(Exception):
    """A failure with its :class:`schemas.documents.FailureKind` value and reason."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def read_html(path: str, max_pages: int) -> dict:
    """Read the HTML filing (or complete submission text file) at ``path`` into units and inline XBRL facts;
    never raises. Shape of the result, the rules for text, pages, sections and the table of contents: see
    the module docstring; facts: :func:`tasks.ingest.ixbrl.read_facts` (Inline XBRL 1.1), ``dei`` the cover
    facts (:func:`tasks.ingest.ixbrl.dei`).

    Failures: an empty file (``empty_file``), entity declarations, binary data (over :data:`MAX_CONTROL_SHARE`
    control bytes) or an unparseable document (``corrupt``),
    no text (``no_text``), more than ``max_pages`` units (``too_many_pages``); ``MemoryError`` is left to the
    worker (``memory_limit``).
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        return _read(data, max_pages)
    except HtmlError as exc:
        return {"ok": False, "kind": exc.kind, "reason": exc.reason}
    except MemoryError:
        raise
    except RecursionError:
        return {"ok": False, "kind": "corrupt", "reason": "corrupt HTML: elements nested too deeply"}
    except OSError as exc:
        return {"ok": False, "kind": "corrupt", "reason": f"cannot read the file: {exc}"}
    except Exception as exc:
        return {"ok": False, "kind": "corrupt", "reason": f"corrupt HTML: {type(exc).__name__}: {exc}"}


def split_submission(data: bytes) -> tuple[bytes, dict, list[dict]]:
    """EDGAR's complete submission text file (EDGAR Filer Manual Vol. II §6.4): ``(the first document's
    <TEXT>, its header {"type", "sequence", "filename", "description"}, [the header of every other
    document])``; a header value is None when absent. A file holding one ``<DOCUMENT>`` (an exhibit as
    EDGAR serves it, e.g. ``bke20241122-8kexhibit.htm`` of type ``EX-99.1``) gives its own header and no
    others. Raises :class:`HtmlError` (``no_text``) when there is no ``<DOCUMENT>``."""
    docs = list(_DOCUMENT.finditer(data))
    if not docs:
        raise HtmlError("no_text", "an EDGAR submission file without any <DOCUMENT>")
    parts = []
    for m in docs:
        body = m.group(1)
        text = _TEXT.search(body)
        head = body[: text.start()] if text else body[:4096]
        entry: dict[str, Any] = {}
        for name in ("type", "sequence", "filename", "description"):
            f = re.search(rb"<" + name.upper().encode() + rb">[ \t]*([^\r\n<]*)", head, re.I)
            entry[name] = f.group(1).decode("ascii", "replace").strip() if f else None
        entry["text"] = text.group(1) if text else b""
        parts.append(entry)
    first = parts[0]
    others = [{k: v for k, v in p.items() if k != "text"} for p in parts[1:]]
    return first["text"], {k: v for k, v in first.items() if k != "text"}, others


def _read(data: bytes, max_pages: int) -> dict:
    if not data.strip():
        raise HtmlError("empty_file", "the file is empty" if not data else "the file holds only whitespace")
    controls = len(data) - len(data.translate(None, _CONTROL_BYTES))
    if controls > MAX_CONTROL_SHARE * len(data):
        raise HtmlError(
            "corrupt", f"corrupt HTML: {controls} control bytes in {len(data)} (binary data, not an HTML document)"
        )
    header: dict = {}
    parts: list[dict] = []
    if _SUBMISSION.match(data):
        data, header, parts = split_submission(data)
        if not _LOOKS_HTML.search(data[:PROLOGUE_BYTES]):
            units, _ = _units(_plain_pages(data.decode("utf-8", "replace")))
            return _result(units, {}, [], max_pages, header, parts, [])
    start = _HTML_START.search(data[:PROLOGUE_BYTES])
    prologue = data[: start.start()] if start else data[:PROLOGUE_BYTES]
    if _ENTITY_DECL.search(prologue):
        raise HtmlError("corrupt", "corrupt HTML: the document declares entities (<!ENTITY: entity expansion), refused")
    root = _parse(data)
    walker = _Walker()
    walker.walk(root)
    from tasks.ingest import ixbrl

    units, locate = _units(walker.pages)
    facts = ixbrl.read_facts(root, lambda el: locate(walker.where.get(el)))
    cover = ixbrl.dei(root, facts)
    for fact in facts:
        fact.pop("format", None)
    return _result(units, cover, facts, max_pages, header, parts, exhibit_links(root))


def _parse(data: bytes) -> Any:
    """The root element of ``data`` parsed by ``lxml.html`` (no network, comments dropped). Raises
    :class:`HtmlError` (``corrupt`` or ``no_text``)."""
    from lxml import etree  # type: ignore[import-untyped]
    from lxml import html as lhtml

    parser = lhtml.HTMLParser(no_network=True, remove_comments=True, remove_pis=True, huge_tree=True)
    try:
        root = lhtml.document_fromstring(data, parser=parser)
    except etree.ParserError as exc:
        raise HtmlError("no_text", f"no HTML content: {exc}") from exc
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise HtmlError("corrupt", f"corrupt HTML: {exc}") from exc
    if root is None:
        raise HtmlError("no_text", "no HTML content")
    return root


@dataclass
class _Line:
    text: str
    toc: bool = False  # a table row ending in a page number: a table-of-contents entry
    emphasis: bool = False  # every character set in bold or italic (a heading: a risk factor's)


@dataclass
class _Page:
    lines: list[_Line] = field(default_factory=list)


class _Walker:
    """One pass over the tree: lines per page (see the module docstring) and where each inline XBRL fact
    element sits (``where[element] = (page index, line index)``)."""

    def __init__(self) -> None:
        self.pages: list[_Page] = [_Page()]
        self.line: list[str] = []
        self.cells: list[list[str]] = []  # open table cells' text
        self.rows: list[list[str]] = []  # open table rows' cell texts
        self.tables: list[list[_Line]] = []  # open tables' row lines
        self.where: dict[Any, tuple[int, int]] = {}
        self.styles: list[bool] = [False]  # open elements: is their text set in bold or italic
        self.marks: list[bool] = []  # per fragment of ``line``: set in bold or italic

    def walk(self, root: Any) -> None:
        from lxml import etree

        events = etree.iterwalk(root, events=("start", "end"))
        skipped: Any = None
        for event, el in events:
            tag = el.tag if isinstance(el.tag, str) else ""
            if event == "start":
                if tag.lower() in _NOT_TEXT or _HIDDEN.search(el.get("style") or "") or el.get("hidden") is not None:
                    events.skip_subtree()
                    skipped = el
                    continue
                self.start(el, tag.lower())
            else:
                if el is skipped:
                    skipped = None
                else:
                    self.end(el, tag.lower())
                if el.tail:
                    self.emit(el.tail)
        self.boundary()

    def start(self, el: Any, tag: str) -> None:
        style = el.get("style") or ""
        self.styles.append(_emphasis(tag, style, self.styles[-1]))
        if _BREAK_BEFORE.search(style):
            self.new_page()
        if tag == "table" and not self.cells:
            self.tables.append([])
        if tag == "tr":
            self.boundary()
            self.rows.append([])
        elif tag in _CELLS:
            self.cells.append([])
        elif tag in _BLOCKS or tag == "br":
            self.boundary()
        elif tag in ("ix:nonfraction", "ix:nonnumeric"):
            self.where[el] = (len(self.pages) - 1, len(self.pages[-1].lines))
        if el.text:
            self.emit(el.text)

    def end(self, el: Any, tag: str) -> None:
        if tag in _CELLS and self.cells:
            text = " ".join("".join(self.cells.pop()).split())
            if self.rows:
                self.rows[-1].append(text)
            else:
                self.emit(text)
                self.boundary()
        elif tag == "tr" and self.rows:
            self.row(self.rows.pop())
        elif tag == "table" and not self.cells and self.tables:
            rows = self.tables.pop()
            if any(line.toc for line in rows):  # a table listing page numbers: every row is contents
                for line in rows:
                    line.toc = True
        elif tag in _BLOCKS:
            self.boundary()
        if _BREAK_AFTER.search(el.get("style") or ""):
            self.new_page()
        if len(self.styles) > 1:
            self.styles.pop()

    def emit(self, text: str) -> None:
        if self.cells:
            self.cells[-1].append(text)
        else:
            self.line.append(text)
            self.marks.append(self.styles[-1])

    def boundary(self) -> None:
        """End the current line (inside a table cell: a space)."""
        if self.cells:
            self.cells[-1].append(" ")
            return
        marked = [m for part, m in zip(self.line, self.marks) if part.strip()]
        self.flush("".join(self.line), emphasis=bool(marked) and all(marked))
        self.line, self.marks = [], []

    def flush(self, raw: str, toc: bool = False, row: bool = False, emphasis: bool = False) -> None:
        text = clean_page_text(" ".join(raw.split()))
        if text:
            line = _Line(text, toc, emphasis)
            self.pages[-1].lines.append(line)
            if row and self.tables:
                self.tables[-1].append(line)

    def row(self, cells: list[str]) -> None:
        filled = [c for c in cells if c]
        if not filled:
            return
        out = filled[0]
        for cell in filled[1:]:
            out += cell if _GLUE_LEFT.match(cell) else " " + cell
        if self.cells:  # a table inside a table cell: its rows are text of the outer cell
            self.cells[-1].append(" " + out + " ")
            return
        self.boundary()
        toc = len(filled) >= 2 and bool(_PAGE_NUMBER_CELL.match(filled[-1]))
        self.flush(out, toc, row=True)

    def new_page(self) -> None:
        self.boundary()
        self.pages.append(_Page())


_BOLD = re.compile(r"font-weight\s*:\s*(?:bold(?:er)?|[6-9]00)\b", re.I)
_NOT_BOLD = re.compile(r"font-weight\s*:\s*(?:normal|lighter|[1-5]00)\b", re.I)
_ITALIC = re.compile(r"font-style\s*:\s*(?:italic|oblique)\b", re.I)
_NOT_ITALIC = re.compile(r"font-style\s*:\s*normal\b", re.I)


def _emphasis(tag: str, style: str, inherited: bool) -> bool:
    """Whether the text of an element (``tag``, its ``style`` attribute) is set in bold or italic: ``b``,
    ``strong``, ``i``, ``em`` or a ``font-weight`` of bold or 600-900 or a ``font-style`` of italic set it;
    a ``font-weight`` of normal or 100-500 (with no italic) and a ``font-style`` of normal (with no bold) unset
    it; otherwise it is its parent's (``inherited``)."""
    if tag in ("b", "strong", "i", "em") or _BOLD.search(style) or _ITALIC.search(style):
        return True
    if _NOT_BOLD.search(style) or _NOT_ITALIC.search(style):
        return False
    return inherited


def _plain_pages(text: str) -> list[_Page]:
    """Pages of a plain-text ``<TEXT>`` (older EDGAR filings): ``<PAGE>`` markers split pages; one line per
    line of the text."""
    pages = []
    for chunk in _SGML_PAGE.split(text):
        page = _Page()
        for raw in chunk.splitlines():
            line = clean_page_text(raw)
            if line:
                page.lines.append(_Line(line))
        pages.append(page)
    return pages


def heading(line: _Line, following: _Line | None) -> tuple[str, str] | None:
    """``("part", "Part II")`` or ``("item", "Item 7. Management's Discussion …")`` when ``line`` is a Part or
    Item heading (rule: module docstring; ``following`` is the next line, a title for a bare "Item 7."), else
    None."""
    text = line.text
    if line.toc or len(text) > HEADING_CHARS:
        return None
    m = _PART.match(text)
    if m:
        title = m.group(2).strip()
        if title and not (title[0].isupper() or title[0] in "—–-"):
            return None
        return "part", f"Part {m.group(1).upper()}"
    m = _ITEM.match(text)
    if not m:
        return None
    number = m.group(1).upper()
    if "." in number:
        major, minor = number.split(".")
        if not (1 <= int(major) <= 9) or not 1 <= int(minor[:2]) <= 9:
            return None
    elif not 1 <= int(re.sub(r"[A-C]$", "", number)) <= 16:
        return None
    title = m.group(2).strip()
    if title and not (title[0].isupper() or title[0] in "\"“'‘([—–-"):
        return None
    if (
        not title
        and following is not None
        and len(following.text) <= 150
        and not following.toc
        and following.text[:1].isupper()
        and not _ITEM.match(following.text)
        and not _PART.match(following.text)
    ):
        title = following.text
    title = " ".join(title.split())
    sep = " " if "." in number else ". "
    return "item", f"Item {number}{sep}{title}".strip() if title else f"Item {number}{'' if '.' in number else '.'}"


def _units(pages: list[_Page]) -> tuple[list[dict], Callable[[tuple[int, int] | None], int | None]]:
    """Units of the pages (furniture stripped, split at headings) and ``locate((page index, line index))`` →
    1-based unit number (None for None)."""
    paged = len(pages) > 1
    texts = ["\n".join(line.text for line in p.lines) for p in pages]
    if sum(1 for t in texts if t) >= FURNITURE_MIN_PAGES:
        stripped, removed = strip_running_lines(texts)
    else:
        stripped, removed = [], []
        for text in texts:
            one, lines = strip_running_lines([text])
            stripped.append(one[0])
            removed.append(lines[0])
    units: list[dict] = []
    starts: list[list[tuple[int, int]]] = []  # per page: (first line index, unit number)
    path: list[str | None] = [None, None]  # the Part and the Item the text is under
    for index, page in enumerate(pages):
        top = _top_removed(page.lines, removed[index], stripped[index])
        kept = list(range(top, len(page.lines) - (len(removed[index]) - top)))
        printed = printed_number(removed[index][top:])
        page_starts: list[tuple[int, int]] = []
        for group, section in _split(page.lines, kept, path):
            units.append(
                {
                    "lines": [page.lines[i].text for i in group],
                    "page": index + 1 if paged else None,
                    "printed_page": printed if paged and printed != str(index + 1) else None,
                    "section": section,
                    "running": [] if page_starts else removed[index],
                    "emphasis": [k for k, i in enumerate(group) if page.lines[i].emphasis],
                }
            )
            page_starts.append((group[0], len(units)))
        if not page_starts and removed[index] and units:
            units[-1]["running"] = units[-1]["running"] + removed[index]
        starts.append(page_starts)

    def locate(where: tuple[int, int] | None) -> int | None:
        if where is None or not units:
            return None
        page, line = where
        for p in range(page, len(starts)):  # a fact on a page without units: the next unit
            if starts[p]:
                if p != page:
                    return starts[p][0][1]
                firsts = [s for s, _ in starts[p]]
                return starts[p][max(0, bisect.bisect_right(firsts, line) - 1)][1]
        return len(units)

    return units, locate


def printed_number(foot: list[str]) -> str | None:
    """The page number printed at a page's foot, from the running lines removed there (``["4"]``,
    ``["Page 4 of 40"]`` → ``"4"``, ``["F-12"]``), read by the rule PDF pages use
    (:func:`tasks.ingest.furniture.printed_numbers`); None when there is none."""
    return printed_numbers([foot])[0]


def _split(lines: list[_Line], kept: list[int], path: list[str | None]) -> list[tuple[list[int], str | None]]:
    """The ``kept`` lines of one page in groups that start at Part/Item headings, each with its section path;
    ``path`` (``[part, item]``) carries the headings from page to page and is updated in place. A group of
    heading lines only absorbs the next heading."""
    groups: list[tuple[list[int], str | None]] = []
    current: list[int] = []
    section = " > ".join(s for s in path if s) or None
    only_headings = False
    for k, i in enumerate(kept):
        found = heading(lines[i], lines[kept[k + 1]] if k + 1 < len(kept) else None)
        if found is None:
            current.append(i)
            only_headings = False
            continue
        if current and not only_headings:
            groups.append((current, section))
            current = []
        if found[0] == "part":
            path[0], path[1] = found[1], None
        else:
            path[1] = found[1]
        section = " > ".join(s for s in path if s) or None
        current.append(i)
        only_headings = True
    if current:
        groups.append((current, section))
    return groups


def _top_removed(lines: list[_Line], removed: list[str], text: str) -> int:
    """How many of a page's ``removed`` running lines came off its top (the rest came off its foot)."""
    for top in range(len(removed), -1, -1):
        bottom = len(removed) - top
        kept = lines[top : len(lines) - bottom]
        if "\n".join(line.text for line in kept).strip() == text:
            return top
    return 0


def exhibit_links(root: Any) -> list[str]:
    """The file names of the exhibits a filing links to, in document order without repeats: the
    targets of links EDGAR marks ``-sec-extract:exhibit`` in their style (the exhibit index of a
    filing made since 2019, Regulation S-K Item 601(a)(2) hyperlinks) and of relative links to a
    ``.htm``/``.html``/``.txt`` file (older exhibit indexes). Query strings and fragments are dropped;
    links to other sites (``http://``, ``https://``) and in-page anchors are not exhibits."""
    names: list[str] = []
    for a in root.iter("a"):
        href = (a.get("href") or "").strip()
        if not href or href.startswith("#"):
            continue
        marked = "-sec-extract:exhibit" in (a.get("style") or "").replace(" ", "").lower()
        if not marked and (
            re.match(r"[a-z][a-z0-9+.-]*:", href, re.I)
            or not re.search(r"\.(?:htm|html|txt)$", href.split("#")[0].split("?")[0], re.I)
        ):
            continue
        name = href.split("#")[0].split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        if name and name not in names:
            names.append(name)
    return names


def _result(
    units: list[dict],
    cover: dict,
    facts: list[dict],
    max_pages: int,
    header: dict,
    parts: list[dict],
    exhibits: list[str],
) -> dict:
    """The worker's result of the units (each has at least one non-empty line), or a failure.
    ``header``: the document's own EDGAR part header (empty outside a submission file)."""
    out: list[dict] = []
    for unit in units:
        text = "\n".join(unit["lines"])
        quality = dict(_QUALITY, running_lines=len(unit["running"]))
        out.append(
            {
                "number": len(out) + 1,
                "text": text,
                "quality": quality,
                "running": unit["running"],
                "locator": {
                    "page": unit["page"],
                    "section": unit["section"],
                    **({"printed_page": unit["printed_page"]} if unit["printed_page"] else {}),
                },
                "emphasis": unit["emphasis"],
            }
        )
    if not out:
        return {"ok": False, "kind": "no_text", "reason": "the HTML document has no text"}
    if len(out) > max_pages:
        return {
            "ok": False,
            "kind": "too_many_pages",
            "reason": f"{len(out)} pages and Item sections exceed the limit of {max_pages} units (max_pages)",
        }
    return {
        "ok": True,
        "encrypted": False,
        "pages": out,
        "engines": {"html": len(out)},
        "facts": facts,
        "dei": cover,
        "form": header.get("type") or cover.get("DocumentType"),
        "edgar": {k: v for k, v in header.items() if v},
        "parts": parts,
        "exhibit_links": exhibits,
    }
