"""Tracked changes of a Word redline as Word shows them (tasks/ingest/docx.py, ECMA-376 Part 1 §17.13.5):
a table row deleted or inserted as a tracked change (``w:trPr/w:del``, ``w:trPr/w:ins``) is one change, a
cell deleted or inserted (``w:tcPr/w:cellDel``, ``w:cellIns``) too, the runs inside them are not counted
again, and no change is ever empty. Every document is written in code (``write_docx``); the per-author counts
of the reader are checked against an independent count made from the XML."""

from __future__ import annotations

import itertools
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from docreview_testing.docx_maker import make_contract_docx, write_docx
from schemas.documents import DocumentKind, TrackedChange
from schemas.settings import Limits
from tasks.ingest.docx import main_part, read_docx
from tasks.ingest.extract import run_extraction
from tasks.observe.report import redline_note

CUAD_NAME = "ADIANUTRITION,INC_04_01_2005-EX-10.D2-RESELLER AGREEMENT.txt"
DIAZ = 'w:author="R. Diaz" w:date="2026-04-02T09:00:00Z"'
KIM = 'w:author="S. Kim" w:date="2026-04-03T15:30:00Z"'
_ids = itertools.count(1)


def run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{text}</w:t></w:r>'


def deleted(text: str, who: str = DIAZ) -> str:
    return f'<w:del w:id="{next(_ids)}" {who}><w:r><w:delText xml:space="preserve">{text}</w:delText></w:r></w:del>'


def inserted(text: str, who: str = DIAZ) -> str:
    return f'<w:ins w:id="{next(_ids)}" {who}>{run(text)}</w:ins>'


def cell(runs: str, tcpr: str = "", mark: str = "") -> str:
    """A cell holding one paragraph of ``runs``; ``mark`` is a revision of its paragraph mark (as Word writes
    it in a deleted or inserted row: ``w:pPr/w:rPr/w:del``)."""
    ppr = f"<w:pPr><w:rPr>{mark}</w:rPr></w:pPr>" if mark else ""
    return f'<w:tc><w:tcPr><w:tcW w:w="2000" w:type="dxa"/>{tcpr}</w:tcPr><w:p>{ppr}{runs}</w:p></w:tc>'


def row(*cells: str, trpr: str = "") -> str:
    return f"<w:tr>{f'<w:trPr>{trpr}</w:trPr>' if trpr else ''}{''.join(cells)}</w:tr>"


def plain_row(*texts: str) -> str:
    return row(*(cell(run(t)) for t in texts))


def deleted_row(*texts: str, who: str = DIAZ, row_who: str | None = None) -> str:
    """A row deleted as Word writes it: ``w:trPr/w:del`` and every run and paragraph mark ``w:del`` too."""
    mark = f'<w:del w:id="{next(_ids)}" {row_who if row_who is not None else who}/>'
    return row(*(cell(deleted(t, who), mark=f'<w:del w:id="{next(_ids)}" {who}/>') for t in texts), trpr=mark)


def inserted_row(*texts: str, who: str = DIAZ) -> str:
    return row(
        *(cell(inserted(t, who), mark=f'<w:ins w:id="{next(_ids)}" {who}/>') for t in texts),
        trpr=f'<w:ins w:id="{next(_ids)}" {who}/>',
    )


def table(*rows: str) -> str:
    grid = "".join('<w:gridCol w:w="2000"/>' for _ in range(3))
    return (
        f'<w:tbl><w:tblPr><w:tblW w:w="0" w:type="auto"/></w:tblPr><w:tblGrid>{grid}</w:tblGrid>{"".join(rows)}</w:tbl>'
    )


def para(runs: str) -> str:
    return f"<w:p>{runs}</w:p>"


def read(tmp_path: Path, body: str, name: str = "redline.docx") -> dict:
    result = read_docx(str(write_docx(tmp_path / name, body)), 100)
    assert result["ok"], result
    for change in result["changes"]:  # every change is a valid TrackedChange and never empty
        TrackedChange(**change)
        assert change["before"].strip() or change["after"].strip(), change
    return result


def summary(result: dict) -> list[tuple[str, str, str, str | None]]:
    return [(c["kind"], c["before"], c["after"], c["author"]) for c in result["changes"]]


# --------------------------------------------------------------------------- rows


def test_a_deleted_table_row_is_one_deletion_and_not_in_the_text(tmp_path):
    body = para(run("Fees by quarter.")) + table(
        plain_row("Q1", "Q2", "Q3"), deleted_row("100", "200", "300"), plain_row("400", "500", "600")
    )
    result = read(tmp_path, body)
    assert [p["text"] for p in result["pages"]] == ["Fees by quarter.", "Q1 | Q2 | Q3\n400 | 500 | 600"]
    (change,) = result["changes"]
    assert change == {
        "kind": "deletion",
        "before": "100 | 200 | 300",
        "after": "",
        "author": "R. Diaz",
        "date": "2026-04-02T09:00:00Z",
        "unit": 2,
        "context": change["context"],
        "scope": "row",
    }
    assert "Q1 | Q2 | Q3" in change["context"] and "100" not in change["context"]
    assert redline_note(change) == "the redline deletes the table row '100 | 200 | 300' (R. Diaz, 2026-04-02)"


def test_a_deleted_row_takes_the_author_of_its_row_mark_else_of_its_runs(tmp_path):
    body = table(
        plain_row("Item", "Fee", "Due"),
        deleted_row("Setup", "$5,000", "Day 1", who=KIM, row_who=DIAZ),  # the row's own w:del wins
        deleted_row("Support", "$1,000", "Monthly", who=KIM, row_who=""),  # no author on the row: the runs'
    )
    result = read(tmp_path, body)
    assert result["pages"][0]["text"] == "Item | Fee | Due"
    assert summary(result) == [
        ("deletion", "Setup | $5,000 | Day 1", "", "R. Diaz"),
        ("deletion", "Support | $1,000 | Monthly", "", "S. Kim"),
    ]
    assert [c["date"] for c in result["changes"]] == ["2026-04-02T09:00:00Z", "2026-04-03T15:30:00Z"]


def test_an_inserted_row_is_one_insertion_kept_in_the_text(tmp_path):
    body = table(plain_row("Q1", "Q2", "Q3"), inserted_row("700", "800", "900"), plain_row("400", "500", "600"))
    result = read(tmp_path, body)
    assert result["pages"][0]["text"] == "Q1 | Q2 | Q3\n700 | 800 | 900\n400 | 500 | 600"
    (change,) = result["changes"]
    assert (change["kind"], change["before"], change["after"]) == ("insertion", "", "700 | 800 | 900")
    assert (change["author"], change["date"], change["scope"]) == ("R. Diaz", "2026-04-02T09:00:00Z", "row")


def test_a_row_with_three_deleted_runs_is_one_change_not_three_nor_an_empty_one(tmp_path):
    # Word splits a deletion at every formatting change: one cell holds three w:del, another only a deleted
    # tab (no text), the third is empty
    mark = f'<w:del w:id="{next(_ids)}" {DIAZ}/>'
    tab = f'<w:del w:id="{next(_ids)}" {DIAZ}><w:r><w:tab/></w:r></w:del>'
    gone = row(
        cell(deleted("Late ") + deleted("payment ") + deleted("fee"), mark=mark),
        cell(tab, mark=mark),
        cell("", mark=mark),
        trpr=f'<w:del w:id="{next(_ids)}" {DIAZ}/>',
    )
    body = table(plain_row("Charge", "Rate", "Cap"), gone, plain_row("Interest", "1%", "5%"))
    result = read(tmp_path, body)
    assert result["pages"][0]["text"] == "Charge | Rate | Cap\nInterest | 1% | 5%"
    assert summary(result) == [("deletion", "Late payment fee | |", "", "R. Diaz")]


def test_adjacent_tracked_rows_stay_separate_changes(tmp_path):
    body = table(
        plain_row("Q1", "Q2", "Q3"),
        deleted_row("100", "200", "300"),
        deleted_row("110", "210", "310"),
        inserted_row("150", "250", "350"),
        inserted_row("160", "260", "360"),
    )
    result = read(tmp_path, body)
    assert result["pages"][0]["text"] == "Q1 | Q2 | Q3\n150 | 250 | 350\n160 | 260 | 360"
    assert sorted(summary(result)) == [  # never merged into one, never paired into a "replacement"
        ("deletion", "100 | 200 | 300", "", "R. Diaz"),
        ("deletion", "110 | 210 | 310", "", "R. Diaz"),
        ("insertion", "", "150 | 250 | 350", "R. Diaz"),
        ("insertion", "", "160 | 260 | 360", "R. Diaz"),
    ]


def test_changes_inside_an_inserted_row_by_someone_else_are_their_own(tmp_path):
    grown = row(
        cell(inserted("Escrow")),
        cell(inserted("$2,000") + deleted("$1,500", KIM) + inserted(" net", KIM)),
        cell(inserted("Q4")),
        trpr=f'<w:ins w:id="{next(_ids)}" {DIAZ}/>',
    )
    result = read(tmp_path, table(plain_row("Item", "Fee", "Due"), grown))
    assert result["pages"][0]["text"] == "Item | Fee | Due\nEscrow | $2,000 net | Q4"
    assert sorted(summary(result)) == [
        ("insertion", "", "Escrow | $2,000 net | Q4", "R. Diaz"),
        ("replacement", "$1,500", "net", "S. Kim"),
    ]


# --------------------------------------------------------------------------- cells and empty changes


def test_a_deleted_cell_and_an_inserted_cell_are_one_change_each(tmp_path):
    body = table(
        row(
            cell(run("Fee")),
            cell(deleted("Old rate"), tcpr=f'<w:cellDel w:id="{next(_ids)}" {KIM}/>'),
            cell(inserted("New ") + inserted("rate"), tcpr=f'<w:cellIns w:id="{next(_ids)}" {DIAZ}/>'),
        ),
        plain_row("Cap", "x", "y"),
    )
    result = read(tmp_path, body)
    assert result["pages"][0]["text"] == "Fee | New rate\nCap | x | y"
    assert [(c["kind"], c["before"], c["after"], c["author"], c["scope"]) for c in result["changes"]] == [
        ("deletion", "Old rate", "", "S. Kim", "cell"),
        ("insertion", "", "New rate", "R. Diaz", "cell"),
    ]


def test_no_change_is_empty(tmp_path):
    body = (
        para(run("Payment is due") + deleted(" ") + run(" in thirty days."))  # a deleted space alone
        + para(run("Net") + f'<w:del w:id="{next(_ids)}" {DIAZ}><w:r><w:tab/><w:br/></w:r></w:del>' + run(" 30."))
        + para(run("Fee") + deleted("\u00a0") + inserted(" ", KIM) + run("."))
        + para(run("Cap: ") + deleted(" ") + inserted("$5,000,000") + run("."))
        + table(plain_row("A", "B", "C"), row(cell(deleted(" ")), cell(run("x")), cell(run("y"))))
    )
    result = read(tmp_path, body)
    assert summary(result) == [("insertion", "", "$5,000,000", "R. Diaz")]


# --------------------------------------------------------------------------- as Word counts them


W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_TOKENS = {f"{{{W}}}{k}": k for k in ("ins", "del", "moveTo", "moveFrom")}


def _w(tag: str) -> str:
    return f"{{{W}}}{tag}"


def _author(mark: Any, container: Any, tag: str) -> str | None:
    """The author of a row or cell revision mark, else of the first ``tag`` revision inside it."""
    if mark.get(_w("author")):
        return mark.get(_w("author"))
    inner = next((e for e in container.iter(_w(tag)) if e is not mark and e.get(_w("author"))), None)
    return None if inner is None else inner.get(_w("author"))


def _deleted_below(node: Any, top: Any) -> bool:
    """True when ``node`` sits in a ``w:del``/``w:moveFrom`` below ``top``."""
    parent = node.getparent()
    while parent is not None and parent is not top:
        if parent.tag in (_w("del"), _w("moveFrom")):
            return True
        parent = parent.getparent()
    return False


def _text(elem: Any, removed: bool) -> str:
    """The text of a run-level revision: ``w:t``/``w:delText`` for a deletion, else the ``w:t`` not deleted
    inside it."""
    out = []
    for node in elem.iter(_w("t"), _w("delText"), _w("tab"), _w("br"), _w("cr")):
        if not removed and (node.tag == _w("delText") or _deleted_below(node, elem)):
            continue
        out.append(node.text or "" if node.tag in (_w("t"), _w("delText")) else " ")
    return "".join(out)


def _tokens(elem: Any, owners: list[str | None], out: list[tuple[str, str | None, str]]) -> None:
    """The revisions and accepted text of a paragraph's content in document order: ``(kind, author, text)``,
    kind ``""`` for accepted text. Paragraph and run properties, field instructions, text boxes (whose
    paragraphs are not the body's) and the ``mc:Fallback`` of an ``mc:AlternateContent`` are left out."""
    skip = {_w("pPr"), _w("rPr"), _w("p"), _w("txbxContent"), _w("instrText"), _w("delInstrText"), f"{{{_MC}}}Fallback"}
    for child in elem:
        tag = child.tag
        if not isinstance(tag, str) or tag in skip:
            continue
        if tag in _TOKENS:
            kind, who = _TOKENS[tag], child.get(_w("author"))
            if kind in ("del", "moveFrom"):
                text = _text(child, removed=True)
            else:  # an insertion: the deletions made inside it later, then its own text
                for inner in child.iter(_w("del"), _w("moveFrom")):
                    if inner.getparent().tag not in (_w("rPr"), _w("pPr")):
                        out.append((_TOKENS[inner.tag], inner.get(_w("author")), _text(inner, removed=True)))
                text = _text(child, removed=False)
                if kind == "ins" and who in owners:
                    kind, who = "", None  # part of the row or cell inserted as one change
            if text:
                out.append((kind, who, text))
        elif tag == _w("t"):
            if child.text:
                out.append(("", None, child.text))
        elif tag in (_w("tab"), _w("br"), _w("cr"), _w("footnoteReference"), _w("endnoteReference")):
            out.append(("", None, " "))
        else:
            _tokens(child, owners, out)


def word_counts(path: Path) -> Counter:
    """Changes per author counted from the XML alone, as Word's reviewing pane lists them: a row or cell
    deleted or inserted as a change is one (its runs are part of it); else every top-level run revision
    (``w:ins``, ``w:del``, ``w:moveTo``, ``w:moveFrom``; not those in ``w:rPr``, which mark a paragraph mark),
    revisions of one kind and author with no accepted text between them taken together, a deletion beside an
    insertion by the same author one replacement, a moved-from/moved-to pair one move; revisions without
    visible text are none."""
    counts: Counter = Counter()
    moves: list[tuple[str, str | None, str]] = []
    with zipfile.ZipFile(path) as zf:
        names = [main_part(zf)] + [n for n in ("word/footnotes.xml", "word/endnotes.xml") if n in zf.namelist()]
        roots = [etree.fromstring(zf.read(n)) for n in names if n]
    for root in roots:
        gone: set[Any] = set()  # rows and cells deleted as changes: nothing inside counts again
        own: dict[Any, str | None] = {}  # rows and cells inserted as changes, and their author
        for unit in root.iter(_w("tr"), _w("tc")):
            is_row = unit.tag == _w("tr")
            props = unit.find(_w("trPr") if is_row else _w("tcPr"))
            if props is None or any(a in gone for a in unit.iterancestors()):
                continue
            d = props.find(_w("del") if is_row else _w("cellDel"))
            i = props.find(_w("ins") if is_row else _w("cellIns"))
            if d is not None:
                gone.add(unit)
                if _text(unit, removed=True).strip():
                    counts[_author(d, unit, "del")] += 1
            elif i is not None:
                own[unit] = _author(i, unit, "ins")
                if _text(unit, removed=False).strip():
                    counts[own[unit]] += 1
        for p in root.iter(_w("p")):
            ancestors = list(p.iterancestors())
            if any(a in gone or a.tag in (_w("txbxContent"), f"{{{_MC}}}Fallback") for a in ancestors):
                continue
            tokens: list[tuple[str, str | None, str]] = []
            _tokens(p, [own[a] for a in ancestors if a in own], tokens)
            groups: list[list[Any]] = []
            for kind, who, text in tokens:
                if kind and groups and groups[-1][0] == kind and groups[-1][1] == who:
                    groups[-1][2] += text
                else:
                    groups.append([kind, who, text])
            k = 0
            while k < len(groups):
                kind, who, text = groups[k]
                nxt = groups[k + 1] if k + 1 < len(groups) else None
                if kind in ("ins", "del") and nxt is not None and {kind, nxt[0]} == {"ins", "del"} and nxt[1] == who:
                    counts[who] += bool(text.strip() or nxt[2].strip())  # a replacement
                    k += 2
                    continue
                if kind in ("moveTo", "moveFrom"):
                    moves.append((kind, who, text))
                elif kind:
                    counts[who] += bool(text.strip())
                k += 1
    froms = [m for m in moves if m[0] == "moveFrom"]
    for _, who, text in (m for m in moves if m[0] == "moveTo"):
        match = next((f for f in froms if f[2] == text), froms[0] if froms else None)
        if match is not None:
            froms.remove(match)
        counts[who] += 1
    for _, who, text in froms:
        counts[who] += bool(text.strip())
    return +counts


def the_users_redline() -> str:
    """A redline like the one reported: 33 deleted runs, 27 of them in deleted rows (Word marks every run and
    paragraph mark of a deleted row), the others in paragraphs and in a kept row; a replacement; a deleted
    tab alone."""
    rows = [plain_row("Milestone", "Amount", "Date")]
    rows += [deleted_row(f"M{k}", f"${k},000", f"2026-0{k}-01") for k in range(1, 7)]  # 18 runs
    rows += [
        row(
            cell(deleted("Dep") + deleted("osit")),
            cell(deleted("$9") + deleted(",000")),
            cell(deleted("TBD") + deleted(" (est.)")),  # 6 runs by R. Diaz in a row S. Kim deleted
            trpr=f'<w:del w:id="{next(_ids)}" {KIM}/>',
        ),
        plain_row("Final", "$10,000", "2026-12-01"),
        deleted_row("Holdback", "$500", "2027-01-01", who=KIM),  # 3 runs
    ]
    kept = row(cell(run("Bonus")), cell(deleted("$700", KIM)), cell(run("2027") + deleted("-06", KIM)))  # 2 runs
    return (
        para(run("Payment schedule") + deleted(" (draft)") + deleted(" v2"))  # 2 runs, one deletion
        + para(run("The fee is ") + deleted("$1,000,000") + inserted("$5,000,000") + run("."))  # 1 run
        + para(run("Net") + f'<w:del w:id="{next(_ids)}" {DIAZ}><w:r><w:tab/></w:r></w:del>' + run(" 30."))
        + table(*rows, kept)
        + para(run("Signed") + deleted(" by both parties", KIM))  # 1 run
    )


def test_the_users_redline_reads_as_word_shows_it(tmp_path):
    body = the_users_redline()
    assert body.count("<w:delText") == 33
    result = read(tmp_path, body)
    kinds = Counter((c["kind"], c.get("scope"), c["author"]) for c in result["changes"])
    assert kinds == {
        ("deletion", None, "R. Diaz"): 1,  # " (draft) v2"
        ("replacement", None, "R. Diaz"): 1,
        ("deletion", "row", "R. Diaz"): 6,
        ("deletion", "row", "S. Kim"): 2,
        ("deletion", None, "S. Kim"): 3,  # "$700", "-06", "by both parties"
    }
    table_text = result["pages"][3]["text"]
    assert table_text == "Milestone | Amount | Date\nFinal | $10,000 | 2026-12-01\nBonus | | 2027"
    assert ("deletion", "Deposit | $9,000 | TBD (est.)", "", "S. Kim") in summary(result)  # the row's author


def _hand_built() -> dict[str, str]:
    return {
        "deleted-row": table(plain_row("Q1", "Q2", "Q3"), deleted_row("100", "200", "300"), plain_row("4", "5", "6")),
        "inserted-row": table(plain_row("Q1", "Q2", "Q3"), inserted_row("700", "800", "900")),
        "users-redline": the_users_redline(),
        "runs": para(run("A ") + deleted("b", KIM) + inserted("c", KIM) + deleted("d") + run(" e") + inserted("f")),
    }


@pytest.mark.parametrize("name", sorted(_hand_built()))
def test_changes_per_author_match_the_xml_of_hand_built_redlines(name, tmp_path):
    path = write_docx(tmp_path / f"{name}.docx", _hand_built()[name])
    result = read_docx(str(path), 100)
    assert Counter(c["author"] for c in result["changes"]) == word_counts(path)


def test_changes_per_author_match_the_xml_of_the_generated_drafts_and_real_redlines(shared_data, tmp_path):
    paths = sorted(shared_data.rglob("*.docx"))  # real redlines, when the shared data has any
    cuad = shared_data / "cuad" / "txt" / CUAD_NAME
    if cuad.is_file():  # the project's generated Word drafts (docreview_testing.docx_maker)
        text = cuad.read_text(encoding="utf-8")
        make_contract_docx(text, tmp_path / "draft.docx")
        make_contract_docx(text, tmp_path / "headed.docx", clause_headings=True)
        paths += [tmp_path / "draft.docx", tmp_path / "headed.docx"]
    if not paths:
        pytest.skip("no CUAD contract to draft and no real .docx in the shared data")
    for path in paths:
        result = read_docx(str(path), 100_000)
        if result["ok"]:
            assert Counter(c["author"] for c in result["changes"]) == word_counts(path), path


def test_row_changes_reach_the_extraction_result(tmp_path):
    path = write_docx(tmp_path / "rows.docx", table(plain_row("Q1", "Q2", "Q3"), deleted_row("100", "200", "300")))
    result = run_extraction(str(path), Limits(), DocumentKind.docx)
    assert result["ok"], result
    assert [(c["kind"], c["before"], c["author"]) for c in result["changes"]] == [
        ("deletion", "100 | 200 | 300", "R. Diaz")
    ]
    from schemas.documents import TrackedChange

    (stored,) = [TrackedChange(**c) for c in result["changes"]]  # as extraction keeps it
    assert stored.scope == "row"
