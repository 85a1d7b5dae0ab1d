"""A run's report as spreadsheets: findings, key terms, key figures, deviations and deadlines, one sheet each.

:func:`export_sheets` turns a report (:func:`tasks.observe.report.build_report`) into five tables
(header and rows, every cell a plain value); :func:`write_xlsx` writes them as one workbook
(openpyxl) with a frozen, bold header row, an auto-filter over each sheet, sized columns, and each
row's link to the served report as a hyperlink; :func:`write_csv` writes one UTF-8 CSV file per
sheet (RFC 4180 quoting, with a byte-order mark so spreadsheet programs read the encoding). The
rows are the report's: a finding's category is the one decided (a reclassification's), its decision
and reviewer the latest. :func:`portfolio_sheets` makes the portfolio's two tables (every contract once,
at its latest version, and their deadlines: :mod:`tasks.observe.portfolio`) for the same writers.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

#: The sheets, in order.
SHEETS = ("Findings", "Key terms", "Key figures", "Deviations", "Deadlines")

_FINDINGS = [
    "ID",
    "Document",
    "Locator",
    "Category",
    "Claimed as",
    "Risk",
    "Verdict",
    "Triage",
    "Decision",
    "Reviewer",
    "Decided at (UTC)",
    "Note",
    "Summary",
    "Evidence",
    "Link",
]
_TERMS = ["Document", "Term", "Value", "Link"]
_FIGURES = [
    "Document",
    "Figure",
    "Value",
    "Unit",
    "Shown",
    "As displayed",
    "Period",
    "Period in words",
    "Current",
    "Locator",
    "Statement",
    "Line",
    "Note",
    "Link",
]
_DEVIATIONS = ["Document", "Rule", "Clause", "Status", "Severity", "Reason", "Findings", "Link"]
_DEADLINES = ["Document", "Date", "Kind", "What", "Days left", "How it was computed", "Findings", "Link"]

_DONE = {"approve": "approved", "reject": "rejected", "reclassify": "reclassified"}


def export_sheets(report: dict[str, Any], link: Callable[[str], str]) -> dict[str, list[list[Any]]]:
    """``{sheet: [header, *rows]}`` of :data:`SHEETS` for ``report``; ``link(anchor)`` is the URL of
    the served report at an anchor (``f-12`` a finding, ``doc-2`` a document, ``deadlines``).

    Findings in the report's order (by document, then a reviewer's order); key terms one value a
    row; key figures of the filings, each a row with its exact value as a number (a :class:`decimal.Decimal`,
    empty when the filing's amount cannot be read: then only as displayed) in its own unit, as every surface
    shows it, its period and whether it is the filing's own (``Current``); deviations: the playbook results that are ``deviation`` or ``unknown``, deviations first;
    deadlines: every computed deadline of a contract, by date."""
    findings: list[list[Any]] = [_FINDINGS]
    terms: list[list[Any]] = [_TERMS]
    figures: list[list[Any]] = [_FIGURES]
    deviations: list[list[Any]] = [_DEVIATIONS]
    deadlines: list[list[Any]] = [_DEADLINES]
    from tasks.observe.report import STATUS_ORDER

    for anchor, d in enumerate(report["documents"], 1):
        name = d["file_name"]
        for f in d.get("findings") or []:
            decision = f.get("decision") or {}
            findings.append(
                [
                    f["id"],
                    name,
                    f.get("locator") or f"page {f.get('page')}",
                    f["clause_label"],
                    f.get("claimed_clause_label") or "",
                    f["risk"],
                    f["verdict"].replace("_", " "),
                    str(f.get("triage") or "").replace("_", " "),
                    _DONE.get(str(decision.get("decision") or ""), str(decision.get("decision") or "")),
                    decision.get("reviewer") or "",
                    str(decision.get("decided_at") or "")[:19].replace("T", " "),
                    decision.get("note") or "",
                    f.get("summary") or "",
                    f.get("evidence") or "",
                    link(f"f-{f['id']}"),
                ]
            )
        for term, values in (d.get("key_terms") or {}).items():
            for value in values:
                terms.append([name, term, value, link(f"doc-{anchor}")])
        for k in d.get("key_figures") or []:
            figures.append(
                [
                    name,
                    k.get("title") or str(k["name"]).replace("_", " "),
                    Decimal(k["value"]) if k.get("value") is not None else None,
                    k.get("unit") or "",
                    k.get("shown") or "",
                    k.get("raw") or "",
                    k.get("period") or "",
                    k.get("period_label") or "",
                    "yes" if k.get("current") else "no",
                    k.get("locator") or (f"page {k['page']}" if k.get("page") else ""),
                    k.get("statement") or "",
                    k.get("line") or "",
                    k.get("note") or "",
                    link(f"doc-{anchor}"),
                ]
            )
        results = sorted(
            (r for r in d.get("playbook") or [] if r["status"] in ("deviation", "unknown")),
            key=lambda r: STATUS_ORDER.get(r["status"], 3),
        )
        for r in results:
            ids = ", ".join(str(i) for i in r.get("finding_ids") or [])
            first = (r.get("finding_ids") or [None])[0]
            deviations.append(
                [
                    name,
                    r["rule"],
                    r.get("clause_label") or r["clause"],
                    r["status"],
                    r["severity"],
                    r["reason"],
                    ids,
                    link(f"f-{first}" if first is not None else f"doc-{anchor}"),
                ]
            )
        for x in sorted(d.get("deadlines") or [], key=lambda x: x["date"]):
            ids = ", ".join(str(i) for i in x.get("finding_ids") or [])
            deadlines.append(
                [name, _date(x["date"]), x["kind"], x["title"], x["days_left"], x["basis"], ids, link("deadlines")]
            )
    return dict(zip(SHEETS, [findings, terms, figures, deviations, deadlines]))


#: The portfolio's sheets (:func:`portfolio_sheets`), in order.
PORTFOLIO_SHEETS = ("Contracts", "Deadlines")

_CONTRACTS = [
    "Document",
    "SHA-256",
    "Parties",
    "Governing law",
    "Term ends",
    "Next deadline",
    "Deadline date",
    "Days left",
    "How it was computed",
    "Open findings",
    "Decisions",
    "Last run",
    "Reviewed at (UTC)",
    "Link",
]


def portfolio_sheets(
    portfolio: dict[str, Any], link: Callable[[dict[str, Any], str], str]
) -> dict[str, list[list[Any]]]:
    """``{sheet: [header, *rows]}`` of :data:`PORTFOLIO_SHEETS` for a portfolio
    (:func:`tasks.observe.portfolio.portfolio`); ``link(entry, anchor)`` is the URL of the report of the
    run that last reviewed ``entry`` at an anchor (``doc-3`` its section, ``deadlines``).

    Contracts: one row per listed contract, in the portfolio's order (soonest next deadline first), parties
    and governing law ``"; "``-joined, dates as dates, days left and counts as numbers; deadlines: every
    computed deadline of those contracts (past ones too, with negative days left), by date."""
    contracts: list[list[Any]] = [_CONTRACTS]
    deadlines: list[list[Any]] = [_DEADLINES]
    rows: list[tuple[str, str, list[Any]]] = []
    for d in portfolio["documents"]:
        nxt = d.get("next_deadline") or {}
        contracts.append(
            [
                d["file_name"],
                d["sha256"],
                "; ".join(d.get("parties") or []),
                "; ".join(d.get("governing_law") or []),
                _date(d.get("term_ends") or "; ".join(d.get("expiration") or [])),
                nxt.get("kind") or "",
                _date(nxt.get("date") or ""),
                nxt.get("days_left", ""),
                nxt.get("basis") or d.get("deadlines_note") or "",
                d.get("open_findings", 0),
                d.get("decisions", 0),
                d["run_id"],
                str(d.get("reviewed_at") or "")[:19].replace("T", " "),
                link(d, d.get("report_anchor") or ""),
            ]
        )
        for x in d.get("deadlines") or []:
            ids = ", ".join(str(i) for i in x.get("finding_ids") or [])
            row = [d["file_name"], _date(x["date"]), x["kind"], x["title"], x["days_left"], x["basis"], ids]
            rows.append((x["date"], d["file_name"], [*row, link(d, "deadlines")]))
    deadlines.extend(r for _day, _name, r in sorted(rows, key=lambda t: (t[0], t[1], t[2][2])))
    return dict(zip(PORTFOLIO_SHEETS, [contracts, deadlines]))


#: Widest column of the workbook, characters (evidence and reasons wrap in the cell beyond it).
MAX_WIDTH = 80


def write_xlsx(sheets: dict[str, list[list[Any]]], path: Path) -> Path:
    """Write ``sheets`` as an XLSX workbook at ``path``: per sheet a bold header row frozen in place,
    an auto-filter over the used range, columns as wide as their longest value up to
    :data:`MAX_WIDTH` characters, and a ``Link`` column's URLs as hyperlinks. Text a spreadsheet would
    run as a formula (:func:`_formula_like`) is written as a text cell with Excel's quote-prefix style:
    shown and read back exactly as it is, never evaluated, with no apostrophe added to the value."""
    from openpyxl import Workbook
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    book = Workbook()
    book.remove(book.active)  # type: ignore[arg-type]
    for title, rows in sheets.items():
        ws = book.create_sheet(title)
        for row in rows:
            ws.append(row)
        for cells in ws.iter_rows():
            for cell in cells:
                if _formula_like(cell.value):  # kept as the text it is: a text cell, shown without a quote
                    cell.data_type = "s"
                    cell.quotePrefix = True
        for cell in ws[1]:
            cell.font = Font(bold=True)
        ws.freeze_panes = "A2"
        ws.auto_filter.ref = ws.dimensions
        header = rows[0]
        for i in range(1, len(header) + 1):
            width = max(len(str(r[i - 1])) if i - 1 < len(r) else 0 for r in rows)
            ws.column_dimensions[get_column_letter(i)].width = min(MAX_WIDTH, max(8, width + 2))
        if "Link" in header:
            col = header.index("Link") + 1
            for r in range(2, len(rows) + 1):
                cell = ws.cell(row=r, column=col)
                if cell.value:
                    cell.hyperlink = str(cell.value)
                    cell.style = "Hyperlink"
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)
    return path


def _date(value: Any) -> Any:
    """An ISO date string (``YYYY-MM-DD``) as a :class:`datetime.date`, so the workbook holds a date a
    spreadsheet sorts and filters as one (the CSV writes it back as the same ISO text); anything else as is."""
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return value
    return value


def _formula_like(value: Any) -> bool:
    """Whether ``value`` is text a spreadsheet would run as a formula: it starts with ``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return (OWASP, "CSV Injection")."""
    return isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A value as a CSV field: formula-like text (:func:`_formula_like`) gets a leading ``'`` (OWASP "CSV
    Injection": a CSV has no cell types, so the quote is the only way to keep it text); numbers stay
    numbers. The workbook needs no quote: :func:`write_xlsx` writes such text as a text cell."""
    if _formula_like(value):
        return "'" + value
    return value


def write_csv(sheets: dict[str, list[list[Any]]], folder: Path, stem: str) -> list[Path]:
    """Write each sheet as ``folder/<stem>-<sheet>.csv`` (``findings``, ``key-terms``, ``deviations``,
    ``deadlines``): UTF-8 with a byte-order mark, every field quoted when needed (RFC 4180), formula
    characters neutralised as in the workbook. Returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for title, rows in sheets.items():
        path = folder / f"{stem}-{title.lower().replace(' ', '-')}.csv"
        with path.open("w", encoding="utf-8-sig", newline="") as fh:
            writer = csv.writer(fh)
            for row in rows:
                writer.writerow([_cell(v) for v in row])
        out.append(path)
    return out
