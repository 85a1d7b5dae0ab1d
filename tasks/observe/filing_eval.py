"""Scoring of the filing review against analysts' questions (FinanceBench layout).

The shared filings folder holds ``pdf/NAME.pdf``, ``documents.jsonl`` (one line per filing:
``doc_name``, ``company``, ``doc_type`` of ``10k``/``10q``/``8k``/``Earnings``, ``doc_period``) and
``questions.jsonl`` (``doc_name``, ``question_type``, ``answer``, ``evidence`` with 0-based
``evidence_page_num``). Source: Islam et al., "FinanceBench", 2023, arXiv:2311.11944.

Measures, each over the filings reviewed in the run:

- ``evidence_page_recall``: share of the analysts' evidence pages (distinct document and 1-based
  page) that carry at least one finding whose quote is in the document (verdict not
  ``unsupported``);
- ``key_figure_accuracy``: share of the metric questions whose gold answer is one amount
  (``"$1577.00"``) for which a key-figure finding on one of the question's evidence pages states
  that amount, within rounding (0.6 % relative, for gold answers rounded to the question's unit)
  and units (thousands, millions, billions: the finding's amount is compared at every scale);
- ``findings_per_page``: findings per page of the reviewed filings;
- ``form_accuracy``: share of filings classified with the form of ``documents.jsonl``;
- ``by_part``: ``evidence_page_recall`` and ``key_figure_accuracy`` on the companies of
  :data:`HELD_OUT_COMPANIES` (``held_out``) and on the others (``tuned``), so a figure on companies
  the rules were not fitted to stands beside the fitted one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: ``documents.jsonl`` ``doc_type`` → ``document_type`` of the report.
FORMS = {"10k": "10-K", "10q": "10-Q", "8k": "8-K", "earnings": "earnings release"}
#: Relative tolerance of a key figure against a gold amount (the gold is rounded to its unit).
TOLERANCE = 0.006
#: Scales tried between a statement's unit and a gold answer's unit.
SCALES = (1.0, 1e-3, 1e3, 1e-6, 1e6)

#: The fixed company split of the shared filings (``documents.jsonl`` ``company``): rules and thresholds
#: are tuned on the other companies' filings; these 9 of 21 (18 of 64 filings, every sector of the set
#: but Industrials) are reported apart as held out. Chosen once by sector, not by score. The rules were written
#: before this split was fixed, with every shared filing in view, so today's held-out figure is an upper
#: bound of what a new company gets; from here on, tune on ``tuned`` only.
HELD_OUT_COMPANIES = frozenset(
    {
        "Amcor",
        "American Express",
        "American Water Works",
        "Coca-Cola",
        "Costco",
        "Foot Locker",
        "Microsoft",
        "Netflix",
        "Pfizer",
    }
)


@dataclass
class FilingSet:
    """The filings of a folder: ``documents`` ``{doc_name: documents.jsonl row}``, ``questions``
    (rows of ``questions.jsonl``)."""

    root: Path
    documents: dict[str, dict[str, Any]]
    questions: list[dict[str, Any]] = field(default_factory=list)


def load_filings(root: str | Path) -> FilingSet:
    """Read a filings folder; raises ``FileNotFoundError`` when ``documents.jsonl`` or ``pdf/`` is missing."""
    root = Path(root)
    if not (root / "documents.jsonl").is_file() or not (root / "pdf").is_dir():
        raise FileNotFoundError(f"{root} is not a filings folder (documents.jsonl and pdf/ expected)")
    docs = {}
    for line in (root / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            docs[row["doc_name"]] = row
    questions = []
    qfile = root / "questions.jsonl"
    if qfile.is_file():
        questions = [json.loads(x) for x in qfile.read_text(encoding="utf-8").splitlines() if x.strip()]
    return FilingSet(root=root, documents=docs, questions=questions)


def gold_amount(answer: str) -> float | None:
    """The amount of a one-amount gold answer (``"$1577.00"`` → ``1577.0``, ``"$0.40"`` → ``0.4``);
    None for ratios, percentages and prose."""
    m = re.fullmatch(r"\s*\$\s?(-?[\d,]+(?:\.\d+)?)\s*", answer)
    return float(m.group(1).replace(",", "")) if m else None


def figure_amount(raw: str) -> float | None:
    """The magnitude of a stated figure (``"(1,577)"`` → ``1577.0``; ``"$ 2.10"`` → ``2.1``)."""
    digits = re.sub(r"[^\d.]", "", raw)
    try:
        return abs(float(digits)) if digits and digits != "." else None
    except ValueError:
        return None


def amount_matches(stated: float, gold: float) -> bool:
    """True when ``stated`` (in its statement's unit) equals ``gold`` at one of :data:`SCALES`
    within :data:`TOLERANCE` (relative) or a rounding step of 0.005."""
    return any(abs(stated * s - abs(gold)) <= max(TOLERANCE * abs(gold), 0.005) for s in SCALES)


def score_filings(filings: FilingSet, report: dict[str, Any]) -> dict[str, Any]:
    """Score a run's ``report.json`` against ``filings`` (see the module docstring).

    Returns ``{filings, reviewed, by_status, recognised_as_filing, form_accuracy, forms,
    evidence_pages, evidence_pages_hit, evidence_page_recall, key_figure_questions, key_figures_found,
    key_figure_accuracy, findings, pages, findings_per_page, by_part, missed_evidence_pages,
    key_figure_results}``.
    Only documents of ``report`` that are in ``filings`` count; questions on filings not reviewed
    in the run are left out.
    """
    by_name = {
        Path(d["file_name"]).stem: d for d in report["documents"] if Path(d["file_name"]).stem in filings.documents
    }
    reviewed = {n: d for n, d in by_name.items() if d["status"] == "reviewed"}
    by_status: dict[str, int] = {}
    for d in by_name.values():
        by_status[d["status"]] = by_status.get(d["status"], 0) + 1
    pages_with: set[tuple[str, int]] = set()
    figures: dict[tuple[str, int], list[float]] = {}
    findings = pages = 0
    for name, d in reviewed.items():
        pages += int(d.get("pages") or 0)
        for f in d["findings"]:
            findings += 1
            if f["verdict"] == "unsupported" or not f.get("page"):
                continue
            pages_with.add((name, int(f["page"])))
            if f["clause_type"] == "key_figure":
                for raw in f["values"].values():
                    amount = figure_amount(str(raw))
                    if amount is not None:
                        figures.setdefault((name, int(f["page"])), []).append(amount)
    evidence = sorted(
        {
            (e["doc_name"], int(e["evidence_page_num"]) + 1)
            for q in filings.questions
            for e in q.get("evidence", [])
            if e["doc_name"] in reviewed
        }
    )
    hit = [p for p in evidence if p in pages_with]
    results = []
    for q in filings.questions:
        gold = gold_amount(str(q.get("answer", "")))
        if q.get("question_type") != "metrics-generated" or gold is None or q["doc_name"] not in reviewed:
            continue
        pages_q = sorted({int(e["evidence_page_num"]) + 1 for e in q.get("evidence", [])})
        found = any(amount_matches(a, gold) for p in pages_q for a in figures.get((q["doc_name"], p), []))
        results.append({"doc_name": q["doc_name"], "gold": q["answer"], "pages": pages_q, "found": found})
    held = {n for n in by_name if str(filings.documents[n].get("company", "")) in HELD_OUT_COMPANIES}

    def part(names: set[str]) -> dict[str, Any]:
        ev = [p for p in evidence if p[0] in names]
        kf = [r for r in results if r["doc_name"] in names]
        return {
            "filings": len(names),
            "evidence_pages": len(ev),
            "evidence_page_recall": round(sum(p in pages_with for p in ev) / len(ev), 3) if ev else None,
            "key_figure_questions": len(kf),
            "key_figure_accuracy": round(sum(r["found"] for r in kf) / len(kf), 3) if kf else None,
        }

    forms = {n: d.get("document_type") for n, d in by_name.items()}
    expected = {n: FORMS.get(str(filings.documents[n].get("doc_type", "")).lower()) for n in by_name}
    return {
        "filings": len(by_name),
        "reviewed": len(reviewed),
        "by_status": by_status,
        "recognised_as_filing": sum(d.get("profile") == "filing" for d in by_name.values()),
        "form_accuracy": (sum(forms[n] == expected[n] for n in by_name) / len(by_name)) if by_name else 0.0,
        "forms": {n: {"found": forms[n], "expected": expected[n]} for n in sorted(by_name) if forms[n] != expected[n]},
        "evidence_pages": len(evidence),
        "evidence_pages_hit": len(hit),
        "evidence_page_recall": len(hit) / len(evidence) if evidence else 0.0,
        "key_figure_questions": len(results),
        "key_figures_found": sum(r["found"] for r in results),
        "key_figure_accuracy": sum(r["found"] for r in results) / len(results) if results else 0.0,
        "findings": findings,
        "pages": pages,
        "findings_per_page": findings / pages if pages else 0.0,
        "by_part": {"tuned": part(set(by_name) - held), "held_out": part(held)},
        "missed_evidence_pages": [list(p) for p in evidence if p not in pages_with],
        "key_figure_results": results,
    }


def score_xbrl_figures(report: dict[str, Any]) -> dict[str, Any]:
    """Key-figure accuracy of the run's inline XBRL filings against their own facts: every key-figure
    finding of an HTML filing carries the ``xbrl`` check (:mod:`tasks.check.xbrl`: verified when the stated
    figure is the filer's fact for the filing period, contradicted when the fact says otherwise).

    Returns ``{filings, key_figure_findings, checked, agree, accuracy, by_figure: {name: [agree, checked]},
    by_form: {form: [agree, checked]}, disagreements: [{file, evidence, reason}]}``; a finding whose
    figure no fact speaks to is counted in ``key_figure_findings`` but not ``checked``.
    """
    from tasks.review.filing import figure_name

    by_figure: dict[str, list[int]] = {}
    by_form: dict[str, list[int]] = {}
    disagreements: list[dict[str, str]] = []
    filings = findings = 0
    for doc in report["documents"]:
        if doc.get("kind") != "html" or doc.get("status") != "reviewed":
            continue
        filings += 1
        for f in doc["findings"]:
            if f["clause_type"] != "key_figure":
                continue
            findings += 1
            check = next((c for c in f["checks"] if c["name"] == "xbrl"), None)
            if check is None:
                continue
            agree = check["verdict"] == "verified"
            name = figure_name(str(f["evidence"]))
            for table, key in ((by_figure, name.value if name else "other"), (by_form, str(doc.get("document_type")))):
                row = table.setdefault(key, [0, 0])
                row[0] += agree
                row[1] += 1
            if not agree:
                disagreements.append({"file": doc["file_name"], "evidence": f["evidence"], "reason": check["reason"]})
    checked = sum(row[1] for row in by_form.values())
    agreeing = sum(row[0] for row in by_form.values())
    return {
        "filings": filings,
        "key_figure_findings": findings,
        "checked": checked,
        "agree": agreeing,
        "accuracy": round(agreeing / checked, 3) if checked else None,
        "by_figure": by_figure,
        "by_form": by_form,
        "disagreements": disagreements,
    }
