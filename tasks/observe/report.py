"""Report: ``report.json`` and ``report.html`` for a run, plus Prefect artifacts for the UI.

The report is built from the database (what was persisted is what is reported), so a run that
skips unchanged documents still shows their findings. The HTML page is rendered by Jinja2 with
autoescaping on: every document-derived string (file names, quotes, summaries, values) is text,
never markup.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from jinja2 import Environment, select_autoescape
from markupsafe import Markup, escape
from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import ValidationError
from sqlmodel import Session, col, select

from schemas.decisions import affirms, rejects
from schemas.documents import Locator
from schemas.filings import FilingSummary, topic_label
from schemas.playbook import Playbook
from schemas.tables import RunDocumentRow, RunMetricRow, RunRow
from schemas.taxonomy import ClauseType, label
from tasks.check.absences import NOT_EXPECTED, absence_policy
from tasks.check.injection import report_flags
from tasks.check.playbook import LoadedPlaybook, PlaybookError, evaluate_document, prepare_playbook, supported
from tasks.check.support import WEAK_RELATIVE, WEAK_SUPPORT_REASON, dismissed, read_as, reason_score
from tasks.ingest.submission import is_text_exhibit
from tasks.observe.metrics import format_metric
from tasks.observe.monitoring import document_drift, observed_keys
from tasks.observe.versions import compare_clauses, load_links, playbook_moves
from tasks.review.backends.rules import MUTUAL_LIABILITY
from tasks.store.persist import (
    get_engine,
    load_checks,
    load_document,
    load_findings,
    load_playbook_results,
    load_run_playbook,
    unit_of_work,
)
from tasks.store.profiles import load_profiles, profile_fields

#: Artifact keys (lowercase, digits and dashes, as Prefect requires) so they show on the
#: Artifacts page with a history across runs.
SUMMARY_ARTIFACT_KEY = "docreview-run-summary"
FINDINGS_ARTIFACT_KEY = "docreview-findings"
ATTENTION_ARTIFACT_KEY = "docreview-high-risk-findings"
REPORT_LINK_ARTIFACT_KEY = "docreview-report"

#: Most rows of the HTML report's "Findings to look at" table (the rest are counted).
MAX_ATTENTION_ROWS = 150

#: Verdicts whose findings may feed the key-terms summary.

_KEY_TERMS: list[tuple[str, list[ClauseType], list[str]]] = [
    ("Parties", [ClauseType.parties], ["party"]),
    ("Agreement date", [ClauseType.agreement_date], ["date"]),
    ("Effective date", [ClauseType.effective_date], ["date"]),
    ("Expiration date", [ClauseType.expiration_date], ["date"]),
    ("Term", [ClauseType.expiration_date], ["duration", "term"]),
    ("Renewal", [ClauseType.renewal_term], ["duration", "term"]),
    ("Notice to terminate renewal", [ClauseType.notice_period_to_terminate_renewal], ["duration"]),
    ("Governing law", [ClauseType.governing_law], ["jurisdiction"]),
    (
        "Payment amounts",
        [
            ClauseType.revenue_profit_sharing,
            ClauseType.minimum_commitment,
            ClauseType.price_restrictions,
            ClauseType.other,
        ],
        ["amount", "percentage"],
    ),
    ("Liability cap", [ClauseType.cap_on_liability], ["amount"]),
]

#: Value names a Cap On Liability finding states its cap under (the rules backend says ``amount``).
_CAP_NAMES = re.compile(r"amount|cap|limit|maximum", re.I)


def key_terms(findings: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Key terms of a document from its supported findings (:func:`supported`) whose ``values``
    check (when they have one) is ``verified``: a date the quote gives as a start is no expiration
    date to list. Returns ``{term: [distinct values]}`` (at most 6 per term).

    ``Liability cap`` is :func:`cap_terms`: each stated cap amount with its locator
    (``"$1,000,000 (page 4)"``), also from a cap finding the support check doubts."""
    out: dict[str, list[str]] = {}
    for term, types, names in _KEY_TERMS:
        if types == [ClauseType.cap_on_liability]:
            caps = cap_terms(findings)
            if caps:
                out[term] = caps[:6]
            continue
        wanted = {t.value for t in types}
        seen: list[str] = []
        for f in findings:
            if f["clause_type"] not in wanted or rejects(f.get("decision")):
                continue
            if reclassified(f):  # the reviewer's reading: its values are read from the quote
                stated = quote_values(f, names)
            elif supported(f) and _values_verified(f):
                stated = {name: f["values"].get(name) for name in names}
            else:
                continue
            for name in names:
                raw = stated.get(name)
                for value in raw.split("; ") if isinstance(raw, str) else []:
                    if value and value not in seen:
                        seen.append(value)
        if seen:
            out[term] = seen[:6]
    return out


#: The report's key-term label of each field the whole-text reader gives (:mod:`tasks.check.key_terms`).
READ_TERM_LABELS: dict[str, str] = {
    "parties": "Parties",
    "agreement_date": "Agreement date",
    "effective_date": "Effective date",
    "expiration_date": "Expiration date",
    "renewal_term": "Renewal",
    "notice_period": "Notice to terminate renewal",
    "governing_law": "Governing law",
}


def stored_text(store: Session, sha256: str) -> tuple[str, list[tuple[int, ...]]]:
    """A document's text rebuilt from its stored chunks (one chunker's, the latest stored), with
    ``[(char_start, char_end, page_start, page_end)]`` of each chunk; ``("", [])`` when none is stored.
    Characters no chunk covers become spaces, so offsets are the chunks' own."""
    from schemas.tables import ChunkRow

    rows = store.exec(select(ChunkRow).where(ChunkRow.sha256 == sha256).order_by(col(ChunkRow.id).desc())).all()
    if not rows:
        return "", []
    chunker = rows[0].chunker
    rows = sorted((r for r in rows if r.chunker == chunker), key=lambda r: r.chunk_index)
    size = max(r.char_start + len(r.text) for r in rows)
    buf = [" "] * size
    for r in rows:
        buf[r.char_start : r.char_start + len(r.text)] = r.text
    return "".join(buf), [(r.char_start, r.char_end, r.page_start, r.page_end) for r in rows]


def read_terms(
    text: str, spans: list[tuple[int, ...]], from_findings: dict[str, list[str]]
) -> tuple[dict[str, list[str]], list[dict[str, Any]], dict[str, str]]:
    """A contract's key terms with the whole-text reader's fields (:func:`tasks.check.key_terms.read_key_terms`)
    in place of the ones read from findings: ``(key_terms, basis, gaps)``.

    ``key_terms`` is :func:`key_terms`' dict with Parties, the dates, Renewal, Notice and Governing law as the
    reader gives them (a field the reader leaves empty is left out: no finding's guess stands in for it) and no
    ``Term`` (the reader turns the term into the expiration date, with its basis); ``basis`` lists
    ``{term, value, basis, quote, page}`` for each value (``page``: the text unit the value was read from, the
    latest ``page_start`` of the chunks holding it — ``spans`` are ``(char_start, char_end, page_start[,
    page_end])``; overlapping chunks narrow a chunk that spans pages down; :func:`locate` turns it into the
    document's locator); ``gaps`` ``{term: why no value}``."""
    from tasks.check.key_terms import read_key_terms

    read = read_key_terms(text)
    out: dict[str, list[str]] = {}
    for name, shown in READ_TERM_LABELS.items():
        values = read.values(name)
        if values:
            out[shown] = values[:6]
    for term, values in from_findings.items():
        if term not in READ_TERM_LABELS.values() and term != "Term":
            out[term] = values
    order = {t: i for i, (t, _types, _names) in enumerate(_KEY_TERMS)}
    out = dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))

    def page_at(offset: int) -> int | None:
        starts = [span[2] for span in spans if span[0] <= offset < span[1]]
        return max(starts) if starts else None

    basis = [
        dict(term=READ_TERM_LABELS[t.field], value=t.value, basis=t.basis, quote=t.quote[:300], page=page_at(t.start))
        for t in read.terms
    ]
    gaps = {READ_TERM_LABELS[k]: v for k, v in read.gaps.items()}
    return out, basis, gaps


def cap_terms(findings: list[dict[str, Any]]) -> list[str]:
    """The liability cap amounts a document's Cap On Liability findings state, each with where it is:
    ``["$1,000,000 (page 4)", "$250,000 (§ 7.2 Limitation of Liability, paragraph 3; finding 45 needs review)"]``.

    When the finding says whose liability the cap limits (its ``liability_of`` value, read by the rules backend
    from "either party's" or "Supplier's total liability"), the place says so: ``"$2,000,000 (page 4; Supplier's
    liability only)"``, ``"(page 4; each party's liability)"``.

    A stated value counts when its name reads as the cap (``amount``, ``cap``, ``limit``, ``maximum``),
    the quote was found in the document (``grounding`` verified), the ``values`` check verified it
    (the amount is the quote's), and no reviewer rejected the finding. A finding the support check did not
    confirm (:func:`supported`) and no reviewer approved still gives its amount — a cap is a term a reviewer
    must know — marked ``finding <id> needs review``; confirmed ones come first. Distinct values, in
    findings order."""
    stated: list[tuple[bool, str, str]] = []  # (confirmed, value, shown)
    for f in findings:
        if f["clause_type"] != ClauseType.cap_on_liability.value or f["verdict"] in ("unsupported", "contradicted"):
            continue
        checks = {c["name"]: c["verdict"] for c in f.get("checks") or []}
        if rejects(f.get("decision")) or checks.get("grounding", "verified") != "verified":
            continue
        if not reclassified(f) and not _values_verified(f):
            continue
        sure = supported(f) or affirms(f.get("decision"))
        where = str(f.get("locator") or f"page {f.get('page')}")  # a report finding always has its locator
        whose = str((f.get("values") or {}).get("liability_of") or "")
        if whose:  # a cap on one party's liability leaves the other's uncapped: say whose
            where += "; each party's liability" if MUTUAL_LIABILITY.fullmatch(whose) else f"; {whose}'s liability only"
        values = quote_values(f, ("amount",)) if reclassified(f) else (f.get("values") or {})
        for name, raw in values.items():
            if not _CAP_NAMES.search(str(name)):
                continue
            for value in str(raw).split("; "):
                if not value:
                    continue
                shown = f"{value} ({where})" if sure else f"{value} ({where}; finding {f['id']} needs review)"
                stated.append((sure, value, shown))
    out: list[str] = []
    seen: set[str] = set()
    for _sure, value, shown in sorted(stated, key=lambda t: not t[0]):  # stable: confirmed first
        if value not in seen:
            seen.add(value)
            out.append(shown)
    return out


def _values_verified(finding: dict[str, Any]) -> bool:
    return all(c["verdict"] == "verified" for c in finding.get("checks") or [] if c["name"] == "values")


def reclassified(finding: dict[str, Any]) -> bool:
    """Whether a reviewer's latest decision on the finding reclassified it (:func:`reclassify`)."""
    return bool(finding.get("claimed_clause_type"))


def reclassify(finding: dict[str, Any]) -> None:
    """Apply a reviewer's reclassification to a report finding, in place: when its latest decision is
    ``reclassify``, its ``clause_type`` and ``clause_label`` become the category the reviewer named,
    so key terms, counts, triage and the playbook read it as that clause; the review's claim is kept
    in ``claimed_clause_type``, ``claimed_clause_label`` and ``claimed_values``. Its ``values`` (and
    ``read_values``) are emptied: they were stated for the claimed category (an Expiration Date's
    "two (2) years" is no Non-Compete's term), so the quote is read instead (:func:`quote_values`,
    and the playbook reads quotes of findings without values)."""
    decision = finding.get("decision") or {}
    if decision.get("decision") != "reclassify" or not decision.get("category"):
        return
    finding["claimed_clause_type"] = finding["clause_type"]
    finding["claimed_clause_label"] = finding["clause_label"]
    finding["claimed_values"] = finding.get("values") or {}
    finding["clause_type"] = decision["category"]
    finding["clause_label"] = finding_label(decision["category"])
    finding["values"], finding["read_values"] = {}, {}


def quote_values(finding: dict[str, Any], names: Any) -> dict[str, str]:
    """The values of ``names`` read from a finding's quote (for a finding whose stated values are not
    its category's, :func:`reclassify`): ``date`` the quote's dates, ``duration``/``term`` its
    durations (those next to "notice" for a notice period, :func:`tasks.check.playbook.durations_of`),
    ``amount`` its money amounts, ``percentage`` its percentages, ``jurisdiction`` the governing law it
    names; each as ``"; "``-joined text as printed. Other names are not read."""
    from tasks.check.playbook import durations_of, governing_jurisdiction
    from tasks.check.values import Kind, extract_values

    quote = str(finding.get("evidence") or "")
    found = [v for v in extract_values(quote) if v.kind is not Kind.redacted]
    out: dict[str, str] = {}
    for name in names:
        if name == "date":
            picked = [v.raw.strip() for v in found if v.kind is Kind.date]
        elif name in ("duration", "term"):
            picked = [v.raw.strip() for v in durations_of(dict(finding, values={}))]
        elif name == "amount":
            picked = [v.raw.strip() for v in found if v.kind is Kind.money]
        elif name == "percentage":
            picked = [v.raw.strip() for v in found if v.kind is Kind.percent]
        elif name == "jurisdiction":
            picked = [j for j in [governing_jurisdiction(quote)] if j]
        else:
            picked = []
        if picked:
            out[name] = "; ".join(dict.fromkeys(picked))
    return out


def read_values(values: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Typed readings of a finding's values, next to their raw text (:mod:`tasks.check.values`):
    ``{name: [{kind, raw, amount, unit, iso, problem}]}``; amounts as decimal text with their ISO
    4217 code, dates as ISO 8601. Names whose value holds no date, amount, percentage or period
    are left out."""
    from tasks.check.values import extract_values

    out: dict[str, list[dict[str, Any]]] = {}
    for name, raw in values.items():
        read = [v.as_json() for v in extract_values(str(raw))]
        if read:
            out[name] = read
    return out


def build_report(
    database_url: str,
    run_id: str,
    offline: bool,
    playbook: dict[str, Any] | None = None,
    endpoint: str | None = None,
    as_of: date | None = None,
) -> dict[str, Any]:
    """The report of run ``run_id`` as a JSON-safe dict (see :func:`_report`), read in one session."""
    with unit_of_work(database_url) as store:
        return _report(store, database_url, run_id, offline, playbook, endpoint, as_of)


def _report(
    store: Session,
    database_url: str,
    run_id: str,
    offline: bool,
    playbook: dict[str, Any] | None = None,
    endpoint: str | None = None,
    as_of: date | None = None,
) -> dict[str, Any]:
    """The report of run ``run_id`` as a JSON-safe dict (shape documented in docs/report-json.md),
    its stored rows read through ``store``.

    ``as_of``: the date contract deadlines are computed for (:mod:`tasks.observe.deadlines`; default
    today, UTC), with the business days of ``DOCREVIEW_DEADLINE_HOLIDAYS``.

    ``endpoint``: where the model calls went when that is not the vendor's own API
    (:meth:`schemas.settings.Settings.model_endpoint`), reported as ``run.endpoint``.

    ``playbook`` (``{name, source}``) names the playbook the run applied; each reviewed document
    then carries its results (``playbook``: ``[{rule, clause, expect, status, severity, reason,
    finding_ids}]``, deviations first, high severity first; see :mod:`tasks.check.playbook`)."""
    engine = get_engine(database_url)
    with Session(engine) as session:
        run = session.get(RunRow, run_id)
        if run is None:
            raise KeyError(f"no run {run_id}")
        docs = session.exec(
            select(RunDocumentRow).where(RunDocumentRow.run_id == run_id).order_by(RunDocumentRow.source)
        ).all()
        metrics = {
            m.name: m.value for m in session.exec(select(RunMetricRow).where(RunMetricRow.run_id == run_id)).all()
        }
    documents = []
    stored = _page_flag_rows(engine, [d.sha256 for d in docs if d.sha256])
    drift = document_drift(database_url, run_id)  # {sha256: drift record} (tasks.observe.monitoring)
    applied = applied_playbook(store, run_id)  # evaluated on this read, with the decisions made since
    if applied is not None:
        playbook = playbook or {"name": applied.name, "source": applied.source}
    rules = load_playbook_results(store, run_id) if playbook and applied is None else {}
    profiles = load_profiles(store, [d.sha256 for d in docs if d.sha256])
    links = load_links(store, [d.sha256 for d in docs if d.sha256])  # previous versions
    for d in docs:
        profile = profiles.get(d.sha256) if d.sha256 else None
        summary = FilingSummary.model_validate(profile.summary) if profile is not None and profile.summary else None
        structure = stored.get(d.sha256 or "", {}).get("__structure__") or {}
        where = unit_locator(stored.get(d.sha256 or "", {}).get("__kind__"), structure)
        findings: list[dict[str, Any]] = []
        if d.sha256 and d.status == "reviewed":
            rows = load_findings(store, d.sha256, run.prompt_version, run.model)
            seen = observed_keys(database_url, run_id, d.sha256)  # reviewed again: this run's findings only
            rows = rows if seen is None else [r for r in rows if r.finding_key in seen]
            checks = load_checks(store, [r.finding_key for r in rows])
            decisions = _decisions(store, [r.finding_key for r in rows])  # reviewer decisions, latest
            ids = {r.finding_key[:12]: r.id for r in rows if r.id is not None}  # "finding <key>" → report id
            for r in sorted(rows, key=lambda r: (RISK_ORDER.get(r.risk, 3), r.page or 0, r.chunk_index)):
                located = where(r.page)
                findings.append(
                    dict(
                        id=r.id,
                        clause_type=r.clause_type,
                        clause_label=finding_label(r.clause_type),
                        summary=r.summary,
                        risk=r.risk,
                        evidence=r.evidence,
                        page=located.page,
                        stated_page=where(r.stated_page).page if r.stated_page else None,
                        unit_number=r.page,
                        where=located.model_dump(exclude_none=True),
                        verdict=r.verdict,
                        values=dict(r.values),
                        read_values=read_values(dict(r.values)),
                        chunk_index=r.chunk_index,
                        checks=[
                            dict(name=c.name, verdict=c.verdict, reason=cite_finding_ids(c.reason, ids))
                            for c in checks.get(r.finding_key, [])
                        ],
                        weak_support=any(
                            c.name == "support" and WEAK_SUPPORT_REASON in c.reason
                            for c in checks.get(r.finding_key, [])
                        ),
                        **({"decision": decisions[r.finding_key]} if r.finding_key in decisions else {}),
                        section=located.section,
                        locator=located.label(),
                    )
                )
        for f in findings:
            reclassify(f)  # a reviewer's "this is a Non-Compete, not a License Grant"
        redline, comments = list(structure.get("changes") or []), list(structure.get("comments") or [])
        for f in findings:
            f["redline"] = [{**c, "note": redline_note(c)} for c in redline_of(f, redline)]
            f["comments"] = [c for c in comments if c.get("unit") == f["unit_number"]]
        flags, doc_checks = report_flags(store, d.sha256, findings)  # hostile-input flags (tasks.check.injection)
        for flag in flags:  # where, as the document model says (a DOCX paragraph, an HTML filing's page)
            locate(flag, where)
        absences = _absences(store, d.sha256, run.prompt_version, run.model) if d.status == "reviewed" else []
        pages_flagged = (
            page_flags({k: v for k, v in stored.get(d.sha256 or "", {}).items() if not k.startswith("__")}, flags)
            if d.status == "reviewed"
            else []
        )
        doc_checks += page_checks(pages_flagged)
        results: list[dict[str, Any]] | None
        if applied is not None:
            judged = {"status": d.status, "findings": findings, "absences": absences, **profile_fields(profile)}
            results = judged_results(evaluate_document(applied, judged)) if d.sha256 else []
        else:  # a run made before runs recorded their playbook: what it stored
            results = playbook_results(rules.get(d.sha256 or "", [])) if playbook else None
        findings = triage(findings, results or [])
        terms = key_terms(findings)
        term_basis: list[dict[str, Any]] = []
        term_gaps: dict[str, str] = {}
        if profile is not None and profile.not_judged:  # no agreement: no parties, dates or term to file
            terms = {}  # the document's heading says why (not_judged)
        elif d.sha256 and d.status == "reviewed" and (profile is None or profile.profile != "filing"):
            text, spans = stored_text(store, d.sha256)
            if text.strip():
                terms, term_basis, term_gaps = read_terms(text, spans, terms)
                for item in term_basis:  # "page 4" in a PDF, "§ 12. Term, paragraph 1" in a Word document
                    locate(item, where)
        version = (
            version_fields(store, links[d.sha256], findings, results or [])
            if d.sha256 and d.status == "reviewed" and d.sha256 in links and links[d.sha256].previous_sha256
            else None
        )
        documents.append(
            dict(
                source=d.source,
                file_name=d.file_name,
                sha256=d.sha256,
                status=d.status,
                reason=d.reason,
                failure_kind=d.failure_kind,
                pages=d.pages,
                page_count=page_count(d.pages, structure),
                kind=stored.get(d.sha256 or "", {}).get("__kind__"),
                redline=[{**c, "note": redline_note(c)} for c in redline],
                comments=comments,
                key_terms=terms,
                key_term_basis=term_basis,
                key_term_gaps=term_gaps,
                findings=findings,
                counts=finding_counts(findings),
                categories=category_counts(findings),
                absences=absences,
                flags=flags,
                checks=doc_checks,
                page_flags=pages_flagged,
                drift=located_drift(drift.get(d.sha256), where) if d.sha256 and d.status == "reviewed" else None,
                **filing_fields(profile, summary, d.status),
                **({"playbook": results} if playbook else {}),
                **({"version": version} if version else {}),
                edgar=structure.get("edgar") or None,
                exhibit_links=list(structure.get("exhibit_links") or []),
                submission_parts=list(structure.get("parts") or []),
            )
        )
        if documents[-1].get("previous_sha256"):  # a filing's previous filing, or the one an amendment amends
            earlier = load_document(store, documents[-1]["previous_sha256"])
            documents[-1]["previous_file_name"] = earlier.file_name if earlier is not None else None
        wanted_absent(documents[-1])
        absence_alarms(documents[-1])
        for figure in [*(documents[-1].get("key_figures") or []), *(documents[-1].get("red_flags") or [])]:
            locate(figure, where)  # an HTML filing's unit 69 → page 54, "page 54, Part IV > Item 15. …"
        locate_changes(engine, documents[-1], where)
    link_exhibits(documents)
    report = dict(
        run=dict(
            id=run.id,
            source=run.source,
            backend=run.backend,
            model=run.model,
            prompt_version=run.prompt_version,
            offline=offline,
            endpoint=endpoint,
            flow_run_id=run.flow_run_id,
            playbook=playbook,
            started_at=run.started_at.isoformat() if run.started_at else None,
            finished_at=run.finished_at.isoformat() if run.finished_at else None,
            metrics=_metrics_out(metrics),
            decisions=_decisions_seen(engine),
        ),
        documents=documents,
    )
    _add_deadlines(report, as_of)
    return report


def _add_deadlines(report: dict[str, Any], as_of: date | None) -> None:
    """The contracts' deadlines (:func:`tasks.observe.deadlines.add_deadlines`), as of ``as_of``
    (default today, UTC), counting business days by ``DOCREVIEW_DEADLINE_HOLIDAYS``."""
    from schemas.settings import Settings
    from tasks.observe.deadlines import BusinessCalendar, add_deadlines, today_utc

    add_deadlines(report, as_of or today_utc(), BusinessCalendar.parse(Settings().deadline_holidays))


def _decisions_seen(engine: Any) -> dict[str, Any]:
    """The reviewer decisions' chain as this report saw it: ``{count, head, broken}``
    (:func:`tasks.store.decisions.chain_position`, for ``docreview audit verify --reports``; ``broken``:
    None when every link holds (:func:`tasks.store.decisions.verify_chain`), else the first broken
    link's problem, which the report shows above everything else)."""
    from tasks.store.decisions import chain_position, verify_chain

    with Session(engine) as session:
        count, head = chain_position(session)
        check = verify_chain(session)
    return {"count": count, "head": head, "broken": check.broken.problem if check.broken else None}


def _stands(finding: dict[str, Any]) -> bool:
    """A finding a version comparison reads: not rejected by a reviewer, not rejected or dismissed by
    the fact-check (unless a reviewer approved it)."""
    if rejects(finding.get("decision")) or finding["verdict"] not in ("verified", "needs_review"):
        return False
    return affirms(finding.get("decision")) or not fact_check_dismissed(finding)


def previous_findings(store: Session, sha256: str) -> list[dict[str, Any]]:
    """A document's findings from its latest review (the newest ``document_reviews`` row), as report
    findings (``{id, clause_type, clause_label, evidence, values, verdict, checks, decision?,
    locator, page}``) with reviewer decisions and reclassifications applied."""
    from schemas.tables import DocumentReviewRow

    latest = store.exec(
        select(DocumentReviewRow)
        .where(DocumentReviewRow.sha256 == sha256)
        .order_by(col(DocumentReviewRow.reviewed_at).desc())
    ).first()
    if latest is None:
        return []
    prompt_version = latest.prompt_version.split("; checks ", 1)[0]  # the ledger's key also names the checks
    rows = load_findings(store, sha256, prompt_version, latest.model)
    checks = load_checks(store, [r.finding_key for r in rows])
    decisions = _decisions(store, [r.finding_key for r in rows])
    out = []
    for r in rows:
        f = dict(
            id=r.id,
            clause_type=r.clause_type,
            clause_label=finding_label(r.clause_type),
            evidence=r.evidence,
            values=dict(r.values),
            verdict=r.verdict,
            checks=[dict(name=c.name, verdict=c.verdict, reason=c.reason) for c in checks.get(r.finding_key, [])],
            locator=r.locator or f"page {r.page}",
            page=r.page,
            **({"decision": decisions[r.finding_key]} if r.finding_key in decisions else {}),
        )
        reclassify(f)
        out.append(f)
    return out


def latest_playbook_results(store: Session, sha256: str) -> list[dict[str, Any]]:
    """A document's playbook results from the latest run that applied a playbook to it
    (:func:`playbook_results` shape), ``[]`` when none did."""
    from schemas.tables import PlaybookResultRow

    rows = store.exec(
        select(PlaybookResultRow)
        .where(PlaybookResultRow.sha256 == sha256)
        .order_by(col(PlaybookResultRow.created_at), col(PlaybookResultRow.id))
    ).all()
    last = rows[-1].run_id if rows else None
    return playbook_results([r for r in rows if r.run_id == last])


def version_fields(
    store: Session, link: Any, findings: list[dict[str, Any]], results: list[dict[str, Any]]
) -> dict[str, Any]:
    """What changed since a contract's previous version (``link``: its
    :class:`schemas.tables.DocumentVersionRow`): ``{previous: {sha256, file_name}, linked_by, changes
    (:func:`tasks.observe.versions.compare_clauses` of the findings that stand), playbook_moves
    (:func:`tasks.observe.versions.playbook_moves`, against the previous version's latest results)}``."""
    from tasks.store.persist import load_document

    prev = link.previous_sha256
    row = load_document(store, prev)
    before = [f for f in previous_findings(store, prev) if _stands(f)]
    after = [f for f in findings if _stands(f)]
    return dict(
        previous=dict(sha256=prev, file_name=row.file_name if row is not None else None),
        linked_by=link.linked_by,
        changes=compare_clauses(before, after),
        playbook_moves=playbook_moves(latest_playbook_results(store, prev), results),
    )


def unit_locator(kind: str | None, structure: dict[str, Any]) -> Callable[[int | None], Locator]:
    """``where(unit)``: the :class:`schemas.documents.Locator` of a document's 1-based text unit (PDF page, DOCX
    paragraph, HTML page part), as the document model gave it at ingest (``documents.structure`` ``units``,
    :meth:`schemas.documents.ExtractedDocument.unit_locators`); a unit not listed there is the PDF page of that
    number. ``kind`` is the document's format (``pdf``, ``docx``, ``image``, ``html``): a DOCX unit is never a
    page. A structure stored before ``units`` were recorded gives its ``locators`` labels' page numbers."""
    units = {str(k): Locator.model_validate(v) for k, v in (structure.get("units") or {}).items()}
    labels = {str(k): str(v) for k, v in (structure.get("locators") or {}).items()}

    def where(unit: int | None) -> Locator:
        if unit is None:
            return Locator()
        if str(unit) in units:
            return units[str(unit)]
        if kind == "docx":
            return Locator(paragraph=unit)
        m = re.match(r"page (\d+)(?:, (.+))?$", labels.get(str(unit), ""))
        if m:  # stored before units were recorded: an HTML unit's label
            return Locator(page=int(m.group(1)), section=m.group(2), page_basis="page_break")
        return Locator(page=unit, page_basis="image" if kind == "image" else "pdf")

    return where


def located_drift(record: dict[str, Any] | None, where: Callable[[int | None], Locator]) -> dict[str, Any] | None:
    """A document's drift record (:func:`tasks.observe.monitoring.document_drift`) with each finding it lists
    (added, removed, changed; ``page`` their text unit, as stored) located (:func:`locate`); None stays None."""
    if record is None:
        return None
    for key in ("added", "removed", "changed"):
        for entry in record.get(key) or []:
            if isinstance(entry, dict) and entry.get("page"):
                locate(entry, where)
    return record


def page_count(units: int | None, structure: dict[str, Any]) -> int | None:
    """How many pages a document has as its locators count them: an HTML filing's last page by its page
    breaks (its ``units`` — text units — are more: an Item heading starts one mid-page), else ``units``
    (a PDF's pages; a DOCX's paragraph units, which the report never calls pages)."""
    pages = [int(v["page"]) for v in (structure.get("units") or {}).values() if v.get("page_basis") == "page_break"]
    return max(pages) if pages else units


def locate(item: dict[str, Any], where: Callable[[int | None], Locator]) -> None:
    """Give a report item that names its text unit in ``page`` (a key figure, a red flag: the unit they were
    read from) its locator, in place: ``unit_number`` the unit, ``page`` the locator's page (None for a DOCX),
    ``where`` the locator, ``locator`` its label (:meth:`schemas.documents.Locator.label`)."""
    unit = item.get("unit_number", item.get("page"))
    located = where(unit)
    item.update(unit_number=unit, page=located.page, where=located.model_dump(exclude_none=True))
    item["locator"] = located.label()


def locate_changes(engine: Any, document: dict[str, Any], where: Callable[[int | None], Locator]) -> None:
    """Give each of a filing's changes since its previous filing that names a page (an added risk factor's
    heading in this filing, a removed one's in the previous filing: their text unit) its locator, in place
    (:func:`locate`); the previous filing's units are located by its own stored structure."""
    changes = [c for c in document.get("changes") or [] if c.get("page")]
    if not changes:
        return
    before = where
    previous = document.get("previous_sha256")
    if previous and any(c.get("kind") == "risk_factor_removed" for c in changes):
        row = _page_flag_rows(engine, [previous]).get(previous, {})
        before = unit_locator(row.get("__kind__"), row.get("__structure__") or {})
    for change in changes:
        locate(change, before if change.get("kind") == "risk_factor_removed" else where)


def link_exhibits(documents: list[dict[str, Any]]) -> None:
    """Link each EDGAR exhibit of the run to its filing, in place.

    An exhibit is a document whose EDGAR header (``edgar``, from its ``<DOCUMENT>`` header) names a
    file that a filing of the same run links to from its exhibit index (``exhibit_links``) or lists
    among its submission's other documents (``submission_parts``). The exhibit gets ``exhibit_of``:
    ``{"file_name", "sha256", "document_type", "company", "period"}`` of the filing (None when no
    filing of the run names it); the filing gets ``exhibits``: ``[{"type", "filename", "file_name",
    "sha256", "status"}]``, one per exhibit it names, ``file_name``/``sha256``/``status`` of the document
    that reviewed it in this run or None, and ``exhibits_elsewhere``: how many linked files are not in
    this run (exhibits incorporated by reference from earlier filings, or not uploaded). The
    ``exhibit_links`` and ``submission_parts`` working lists are removed."""
    by_file: dict[str, list[dict[str, Any]]] = {}
    for doc in documents:
        name = ((doc.get("edgar") or {}).get("filename") or "").lower()
        if name:
            by_file.setdefault(name, []).append(doc)

    def pick(key: str, filing: dict[str, Any], in_submission: bool) -> dict[str, Any] | None:
        """The run's document of exhibit file ``key`` for ``filing``: a submission's own part (its
        source is ``<the submission's source>#<file name>``) for a part it lists; else a document not
        split out of a submission, not yet linked; else any."""
        candidates = [d for d in by_file.get(key, []) if d is not filing]
        own = [d for d in candidates if str(d.get("source") or "").startswith(f"{filing.get('source')}#")]
        if in_submission:
            return own[0] if own else None
        loose = [d for d in candidates if "#" not in str(d.get("source") or "") and d["exhibit_of"] is None]
        ranked = loose or [d for d in candidates if d["exhibit_of"] is None] or candidates
        return ranked[0] if ranked else None

    for doc in documents:
        doc.setdefault("exhibit_of", None)
    for doc in documents:
        parts = doc.pop("submission_parts", [])
        named: list[tuple[str, str | None]] = [  # a submission's own parts first, then the links
            (p.get("filename") or "", p.get("type")) for p in parts if is_text_exhibit(p.get("type"), p.get("filename"))
        ]
        named += [(n, None) for n in doc.pop("exhibit_links", [])]
        exhibits, elsewhere, seen = [], 0, set()
        for name, part_type in named:
            key = name.lower()
            if not key or key in seen:
                continue
            seen.add(key)
            found = pick(key, doc, part_type is not None)
            if found is None:
                elsewhere += 1 if part_type is None else 0
                if part_type is not None:  # in the submission file, not reviewed on its own
                    exhibits.append(dict(type=part_type, filename=name, file_name=None, sha256=None, status=None))
                continue
            found["exhibit_of"] = dict(
                file_name=doc.get("file_name"),
                sha256=doc.get("sha256"),
                document_type=doc.get("document_type"),
                company=doc.get("company"),
                period=doc.get("period"),
            )
            exhibits.append(
                dict(
                    type=(found.get("edgar") or {}).get("type") or part_type,
                    filename=name,
                    file_name=found.get("file_name"),
                    sha256=found.get("sha256"),
                    status=found.get("status"),
                )
            )
        if exhibits or elsewhere:
            doc["exhibits"] = exhibits
            doc["exhibits_elsewhere"] = elsewhere


def finding_label(clause_type: str) -> str:
    """Display label of a finding's category: the CUAD label of a contract clause, else the
    filing topic's label (:data:`schemas.filings.FILING_LABELS`), else the value itself."""
    try:
        return label(clause_type)
    except (ValueError, KeyError):
        try:
            return topic_label(clause_type)
        except (ValueError, KeyError):
            return clause_type


def filing_fields(profile: Any, summary: FilingSummary | None, status: str) -> dict[str, Any]:
    """A document's profile fields (:func:`tasks.store.profiles.profile_fields`) and, for a
    reviewed filing, ``key_figures`` (``[{name, value, unit, period, page, statement, line}]``),
    ``sections`` (``[[first page, Item]]``), ``flags``, ``red_flags`` (``[{flag, reason, evidence, page}]``),
    ``changes`` since the previous filing
    (:class:`schemas.filings.FilingChange` dicts) and ``previous_sha256``. A document that was never
    classified (it failed before its text was read) has no profile: those fields are ``None``."""
    if profile is None and status != "reviewed":
        return {"profile": None, "document_type": None, "profile_reason": None, "company": None, "period": None}
    out = profile_fields(profile)
    if summary is not None and status == "reviewed":
        out.update(
            key_figures=[f.model_dump(mode="json") for f in summary.key_figures],
            sections=[list(s) for s in summary.sections],
            flags_filing=summary.flags,
            red_flags=[f.model_dump(mode="json") for f in summary.red_flags],
            fact_problems=list(summary.fact_problems),
            changes=list(profile.changes or []),
            previous_sha256=profile.previous_sha256,
        )
    return out


#: Order of risks in the report: high first.
RISK_ORDER = {"high": 0, "medium": 1, "low": 2}

#: Order of playbook statuses in the report: deviations first, then what could not be judged.
STATUS_ORDER = {"deviation": 0, "unknown": 1, "pass": 2}


def judged_results(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A document's playbook results as evaluated on this read (:func:`tasks.check.playbook.evaluate_document`)
    in the report's shape and order (:func:`playbook_results`): each with its ``clause_label``."""
    out = [{**r, "clause_label": label(r["clause"])} for r in results]
    out.sort(key=lambda r: (STATUS_ORDER.get(r["status"], 3), RISK_ORDER.get(r["severity"], 3), r["rule"]))
    return out


def applied_playbook(store: Session, run_id: str) -> LoadedPlaybook | None:
    """The playbook run ``run_id`` applied (:func:`tasks.store.persist.load_run_playbook`), ready to evaluate;
    None when the run applied none or was made before runs recorded theirs, or when the stored definition no
    longer validates (the report then shows the run's stored results)."""
    row = load_run_playbook(store, run_id)
    if row is None:
        return None
    try:
        return prepare_playbook(Playbook.model_validate(row.definition), row.source or row.name)
    except (ValidationError, PlaybookError):
        return None


def playbook_results(rows: list[Any]) -> list[dict[str, Any]]:
    """A document's stored playbook results (:class:`schemas.tables.PlaybookResultRow`) for the
    report: deviations first, then unknown, then pass; high severity first within each."""
    out = [
        dict(
            rule=r.rule_id,
            clause=r.clause_type,
            clause_label=label(r.clause_type),
            expect=r.expect,
            status=r.status,
            severity=r.severity,
            reason=r.reason,
            finding_ids=list(r.finding_ids),
        )
        for r in rows
    ]
    out.sort(key=lambda r: (STATUS_ORDER.get(r["status"], 3), RISK_ORDER.get(r["severity"], 3), r["rule"]))
    return out


def wanted_absent(document: dict[str, Any]) -> None:
    """Mark each of ``document``'s absences that a playbook rule wants (``expect: absent``, status
    ``pass``): ``absence["wanted_by"] = rule id``. The report then says the clause is not there as
    the playbook wants, and leaves it out of "Needs attention"."""
    passing = {
        r["clause"]: r["rule"]
        for r in document.get("playbook") or []
        if r["expect"] == "absent" and r["status"] == "pass"
    }
    for absence in document.get("absences", []):
        if absence["clause_type"] in passing:
            absence["wanted_by"] = passing[absence["clause_type"]]


def absence_alarms(document: dict[str, Any]) -> None:
    """Say of each of ``document``'s absences whether it is an alarm, and why: sets ``alarm`` (bool),
    ``why`` (a sentence) and, when a playbook rule expects the clause, ``expected_by`` (the rule id).

    An absence alarms when a playbook rule on its clause expects it (``expect`` other than ``absent``)
    and did not pass without it, or when its category's absence is itself a risk
    (:data:`tasks.check.absences.ABSENCE_POLICY`: no Cap On Liability → liability uncapped, no
    Governing Law → law and forum uncertain) — unless a passing rule wants it absent, or the document is no
    contract whose clauses are expected (its reason starts :data:`tasks.check.absences.NOT_EXPECTED`: an exhibit
    that is no agreement, an SEC form, a partial scan; ``why`` then says which)
    (``wanted_by``, :func:`wanted_absent`). An absence whose clause a playbook rule reads in findings
    claimed as other categories (the rule's ``finding_ids``, :func:`tasks.check.playbook.evaluate_rule`)
    is no alarm and its ``why`` says where the rule reads it. Every other absence is information
    (``alarm`` false): the report lists it, but not under "Needs attention". Call after
    :func:`wanted_absent`."""
    expecting: dict[str, dict[str, Any]] = {}
    reading: dict[str, dict[str, Any]] = {}
    for r in document.get("playbook") or []:
        if r["expect"] != "absent" and r["status"] != "pass" and not r.get("finding_ids"):
            expecting.setdefault(r["clause"], r)
        if r.get("finding_ids"):  # the clause no finding claims, read in findings of other categories
            reading.setdefault(r["clause"], r)
    for absence in document.get("absences", []):
        policy = absence_policy(absence["clause_type"])
        rule = expecting.get(absence["clause_type"])
        read = reading.get(absence["clause_type"])
        if str(absence.get("reason") or "").startswith(NOT_EXPECTED):  # no contract whose clauses are expected
            absence["alarm"] = False
            absence["why"] = str(absence["reason"]).split("; no ", 1)[0]
            document["absences_not_expected"] = absence["why"][len(NOT_EXPECTED) :]
        elif read is not None:
            absence["alarm"] = False
            ids = ", ".join(str(i) for i in read["finding_ids"])
            absence["why"] = (
                f"no finding claims it, but the playbook rule {read['rule']} reads it in finding(s) {ids} "
                f"({read['status']})"
            )
        elif absence.get("wanted_by"):
            absence["alarm"] = False
            absence["why"] = f"not found, as the playbook rule {absence['wanted_by']} wants"
        elif rule is not None:
            absence["alarm"] = True
            absence["expected_by"] = rule["rule"]
            absence["why"] = f"the playbook rule {rule['rule']} ({rule['severity']}) expects it; {policy.why}"
        else:
            absence["alarm"] = policy.alarm
            absence["why"] = policy.why


#: Triage tiers of a finding, in the order a reviewer reads them (``triage`` in report.json):
#: ``deviation`` (a playbook deviation rests on it), ``must_know`` (verified high-risk term),
#: ``decide`` (the fact-check could not confirm it: needs_review, unsupported, contradicted; for
#: ``needs_review``, the one passage that puts its category's question, :func:`mark_secondary`),
#: ``other`` (verified, not high risk), ``secondary`` (a ``needs_review`` passage of a category another
#: finding already shows or asks about, or the strongest passage of a category but one the support
#: model barely recognises; its reason in ``secondary``), ``dismissed`` (the fact-check dismissed it: the support model is confident its quote
#: is not the clause it claims, or the quote is a heading only, :func:`fact_check_dismissed`).
#: Only the first three are among the findings to look at (:func:`needs_attention`).
TRIAGE_ORDER = {"deviation": 0, "must_know": 1, "decide": 2, "other": 3, "secondary": 4, "dismissed": 5}

#: The least support score (probability 0..1 of the claimed category) of the strongest doubted passage
#: of a category for it to put that category's question on the first screen (:func:`mark_secondary`):
#: the support check's :data:`tasks.check.support.WEAK_RELATIVE`, below which the model "barely
#: recognises" the category in a passage. Out-of-fold on the 209 training contracts of CUAD
#: (``python -m benchmarks.train_support --oof-records``: the rules backend's findings, the split of
#: :func:`tasks.observe.evaluate.held_out`), the strongest doubted passage of a category no supported
#: finding shows is a labelled clause of it 0.21 of the time below 0.05 (417 passages), about even
#: above (0.52 of 84 to 0.1, 0.48 of 25 to 0.2; the trainer prints these as ``out_of_fold_first_screen``,
#: :func:`benchmarks.train_support.first_screen_rows`). On the 131 held-out contracts, through the
#: pipeline: 0.32 (56 of 175) below it, 0.52 from 0.05 to 0.1.
FIRST_SCREEN_SUPPORT = WEAK_RELATIVE

#: Verdicts a reviewer decides, the worst first (within one risk of the ``decide`` tier).
DECIDE_ORDER = {"contradicted": 0, "unsupported": 1, "needs_review": 2}


def triage_tier(finding: dict[str, Any]) -> str:
    """The :data:`TRIAGE_ORDER` tier of a report finding (``{risk, verdict, deviations?, secondary?,
    decision?}``); a dismissed finding a reviewer approved is no longer ``dismissed``."""
    if finding.get("deviations"):
        return "deviation"
    if finding["verdict"] == "verified":
        return "must_know" if finding["risk"] == "high" else "other"
    if fact_check_dismissed(finding) and not _decided(finding, "approve"):
        return "dismissed"
    if finding.get("secondary"):
        return "secondary"
    return "decide"


def _decided(finding: dict[str, Any], decision: str) -> bool:
    """Whether a reviewer's latest decision on ``finding`` is ``decision`` (``approve``/``reject``); a
    reclassification counts as an approval of the finding in the category it now has."""
    if decision == "approve":
        return affirms(finding.get("decision"))
    return str((finding.get("decision") or {}).get("decision", "")).startswith(decision)


def fact_check_dismissed(finding: dict[str, Any]) -> bool:
    """A ``needs_review`` report finding the fact-check dismissed: its ``support`` check is a dismissal
    (:func:`tasks.check.support.dismissed`: the model is confident the quote is not the claimed clause,
    or the quote is a heading only). Other checks may doubt it too (a value, a redaction mark on the
    page, an OCR'd word): a passage that is not the clause needs no decision on its values. One that
    a check contradicts or did not find is no ``needs_review`` finding, so never dismissed."""
    checks = finding.get("checks") or []
    return finding["verdict"] == "needs_review" and any(
        c["name"] == "support" and dismissed(str(c.get("reason") or "")) for c in checks
    )


def triage_key(finding: dict[str, Any]) -> tuple[int, int, int]:
    """Sort key of a finding in a reviewer's order: tier (:data:`TRIAGE_ORDER`), then the worst
    deviation's severity (deviation tier) or the finding's risk (high first), then the verdict
    (:data:`DECIDE_ORDER`, contradicted first)."""
    tier = triage_tier(finding)
    level = (
        min(RISK_ORDER.get(d["severity"], 3) for d in finding["deviations"])
        if tier == "deviation"
        else RISK_ORDER.get(finding["risk"], 3)
    )
    return TRIAGE_ORDER[tier], level, DECIDE_ORDER.get(finding["verdict"], 3)


def triage(findings: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A document's findings in a reviewer's order, each with ``deviations`` (``[{rule, severity, clause}]``:
    the playbook deviations resting on it, high severity first; ``clause``, the rule's, differs from the
    finding's when the rule reads the finding as its clause) and ``triage`` (its tier).

    Order (:func:`triage_key`): findings a playbook deviation rests on, by the deviation's severity;
    then verified high-risk findings (terms a reviewer must know); then the findings that need a
    decision, high risk first and contradicted before unsupported before needs_review; then the rest;
    by page within each. ``results`` are the document's :func:`playbook_results` (empty without a playbook).
    Returns a new list (the dicts are updated in place)."""
    resting: dict[int, list[dict[str, str]]] = {}
    for r in results:
        if r["status"] == "deviation":
            for i in r.get("finding_ids") or []:
                resting.setdefault(int(i), []).append(
                    {"rule": r["rule"], "severity": r["severity"], "clause": r["clause"]}
                )
    for f in findings:
        f["deviations"] = sorted(resting.get(int(f["id"]), []), key=lambda d: RISK_ORDER.get(d["severity"], 3))
    mark_secondary(findings)
    for f in findings:
        f["triage"] = triage_tier(f)
    return sorted(findings, key=lambda f: (*triage_key(f), _unit(f), f.get("chunk_index") or 0))


def _unit(finding: dict[str, Any]) -> int:
    """A report finding's text unit, for ordering findings in document order (0 when unknown)."""
    return int(finding.get("unit_number") or finding.get("page") or 0)


def _support_reason(finding: dict[str, Any]) -> str:
    return next((str(c.get("reason") or "") for c in finding.get("checks") or [] if c["name"] == "support"), "")


def _or_one(score: float | None) -> float:
    return 1.0 if score is None else score


def mark_secondary(findings: list[dict[str, Any]]) -> None:
    """Put one question per category on a reviewer's first screen: set ``secondary`` (the reason, in
    words) on each undecided ``needs_review`` finding of the ``decide`` tier (:func:`triage_tier`) that
    needs no decision of its own, and remove it from the others. Such a finding is:

    - another passage of a category a verified finding (or one a reviewer approved) already shows
      present: ``"another passage of Insurance, which finding 12 shows"``;
    - else a weaker passage of a category whose strongest doubted passage (highest support score,
      :func:`tasks.check.support.reason_score`; a finding whose category the model cannot judge
      counts as strongest) is on the first screen: ``"finding 14 is the stronger passage of Insurance
      (support 0.31 against 0.07)"``;
    - else the strongest passage itself when its support is below :data:`FIRST_SCREEN_SUPPORT`: the
      model barely recognises the clause there, and such a passage is most often no clause of it.

    One such finding per other category comes back, though, when the support model reads its quote as
    that category and nothing else in the document shows or asks about it (``reads_as``, the
    category's label: a clause claimed under the wrong category). Contradicted and unsupported
    findings, findings a playbook deviation rests on and decided findings stay as they are.
    ``findings``: one document's report findings; updated in place."""
    for f in findings:
        f.pop("secondary", None)
        f.pop("reads_as", None)
    shown: dict[str, dict[str, Any]] = {}
    for f in sorted(findings, key=lambda f: (_unit(f), f["id"])):
        if (f["verdict"] == "verified" and not _decided(f, "reject")) or _decided(f, "approve"):
            shown.setdefault(f["clause_type"], f)
    doubted: dict[str, list[dict[str, Any]]] = {}
    for f in findings:
        if f["verdict"] == "needs_review" and "decision" not in f and triage_tier(f) == "decide":
            doubted.setdefault(f["clause_type"], []).append(f)
    for category, group in doubted.items():
        label = group[0]["clause_label"]
        if category in shown:
            for f in group:
                f["secondary"] = f"another passage of {label}, which finding {shown[category]['id']} shows"
            continue
        scores = {id(f): reason_score(_support_reason(f)) for f in group}
        group.sort(key=lambda f: (-_or_one(scores[id(f)]), _unit(f), f["id"]))
        best, best_score = group[0], scores[id(group[0])]
        for f in group[1:]:
            against = "" if best_score is None else f" (support {best_score:.2f} against {scores[id(f)]:.2f})"
            f["secondary"] = f"finding {best['id']} is the stronger passage of {label}{against}"
        if best_score is not None and best_score < FIRST_SCREEN_SUPPORT:
            best["secondary"] = (
                f"the strongest passage of {label} here, and the support model barely recognises the clause "
                f"in it (support {best_score:.2f}, below {FIRST_SCREEN_SUPPORT:g})"
            )
    _ask_other_readings(findings, shown)


def _ask_other_readings(findings: list[dict[str, Any]], shown: dict[str, dict[str, Any]]) -> None:
    """Bring back to the first screen one ``secondary`` finding per category the support model reads
    it as (``reads_as``: that category's label) when nothing else in the document shows or asks about
    that category: a real clause claimed under the wrong category (an Expiration Date claimed as
    Effective Date) is then still put to the reviewer. ``shown``: category → the finding showing it."""
    asked = {f["clause_type"] for f in findings if triage_tier(f) in ("deviation", "must_know", "decide")}
    for f in sorted(findings, key=lambda f: (_unit(f), f["id"])):
        reason = _support_reason(f)
        other = read_as(reason) if f.get("secondary") and not dismissed(reason) else None
        if other is None or other.value in shown or other.value in asked:
            continue
        del f["secondary"]
        f["reads_as"] = label(other)
        asked.add(other.value)


#: A consistency reason's pointer at another finding: ``finding <first 12 hex digits of its finding_key>``
#: (:func:`tasks.check.consistency.check_consistency`), written before the finding has its report id.
_FINDING_KEY_REF = re.compile(r"\bfinding ([0-9a-f]{12})\b")


def cite_finding_ids(reason: str, ids: dict[str, int]) -> str:
    """``reason`` with each ``finding <key prefix>`` replaced by the id the report shows and
    ``docreview decide`` takes: ``"finding d5c85053c137 (…)"`` → ``"finding 42 (…)"``. ``ids`` maps
    the first 12 hex digits of a ``finding_key`` to its ``findings.id``; a key not among them (the
    finding is not in this report) becomes ``"a finding not in this report"``."""

    def cite(m: re.Match[str]) -> str:
        found = ids.get(m.group(1))
        return f"finding {found}" if found is not None else "a finding not in this report"

    return _FINDING_KEY_REF.sub(cite, reason)


def finding_counts(findings: list[dict[str, Any]]) -> dict[str, int]:
    """Per document: findings by verdict and by risk, ``attention`` (:func:`needs_attention`: a
    playbook deviation rests on it, high risk, or a verdict other than ``verified``; not yet decided),
    ``secondary`` (further passages, :func:`mark_secondary`) and ``dismissed`` (findings the fact-check
    dismissed, :func:`fact_check_dismissed`)."""
    counts = {
        "verified": 0,
        "needs_review": 0,
        "unsupported": 0,
        "contradicted": 0,
        "high": 0,
        "medium": 0,
        "low": 0,
        "attention": 0,
        "secondary": 0,
        "dismissed": 0,
    }
    for f in findings:
        counts[f["verdict"]] = counts.get(f["verdict"], 0) + 1
        counts[f["risk"]] = counts.get(f["risk"], 0) + 1
        counts["attention"] += needs_attention(f)
        counts["secondary"] += triage_tier(f) == "secondary"
        counts["dismissed"] += triage_tier(f) == "dismissed"
    return counts


def category_counts(findings: list[dict[str, Any]]) -> dict[str, int]:
    """Per document: how many findings each category has, as decided (a reclassified finding counts
    in the category a reviewer gave it), leaving out findings a reviewer rejected; ``{clause_type: n}``
    by category value."""
    out: dict[str, int] = {}
    for f in findings:
        if not rejects(f.get("decision")):
            out[f["clause_type"]] = out.get(f["clause_type"], 0) + 1
    return dict(sorted(out.items()))


def needs_attention(finding: dict[str, Any]) -> bool:
    """True for a finding a reviewer should look at: a playbook deviation rests on it, or it is high
    risk and verified, or the fact-check could not confirm it and it puts its category's question
    (tier ``decide``, :func:`mark_secondary`) — and no reviewer decided it yet."""
    return triage_tier(finding) in ("deviation", "must_know", "decide") and "decision" not in finding


def _absences(store: Session, sha256: str | None, prompt_version: str, model: str) -> list[dict[str, Any]]:
    """A reviewed document's missing high-risk clauses: ``[{id: "A<n>", clause_type,
    clause_label, reason, chunks_examined, decision?}]`` (ids as ``docreview decide`` takes them)."""
    if not sha256:
        return []
    from tasks.store.persist import load_absences

    rows = load_absences(store, sha256, prompt_version, model)
    decided = _decisions(store, [a.absence_key for a in rows])
    return [
        dict(
            id=f"A{a.id}",
            clause_type=a.clause_type,
            clause_label=label(a.clause_type),
            reason=a.reason,
            chunks_examined=a.chunk_count or len(a.chunks),
            **({"decision": decided[a.absence_key]} if a.absence_key in decided else {}),
        )
        for a in rows
    ]


#: Page flags as the report names them, with what each means for the review (report order).
PAGE_FLAG_TEXT = {
    "not_read": "not read: the page's text is not in this review",
    "empty": "no text (image-only or blank)",
    "glued_words": "words run together in the text layer (quotes matched ignoring spaces)",
    "private_use_chars": "characters the font maps to no text (private use), e.g. ligatures",
    "nul_chars": "characters the font maps to NUL, e.g. ligatures",
    "page_truncated": "truncated at the per-page character limit",
}


def _page_flag_rows(engine: Any, shas: list[str]) -> dict[str, dict[str, Any]]:
    """``documents.page_flags`` per sha256 (see :func:`tasks.store.persist.page_flags_of`), with the
    row's ``kind`` and ``structure`` (:func:`tasks.store.persist.structure_of`) under the keys
    ``"__kind__"`` and ``"__structure__"``."""
    from schemas.tables import DocumentRow

    out: dict[str, dict[str, Any]] = {}
    with Session(engine) as session:
        for i in range(0, len(shas), 500):
            for row in session.exec(select(DocumentRow).where(col(DocumentRow.sha256).in_(shas[i : i + 500]))).all():
                out[row.sha256] = {
                    **dict(row.page_flags or {}),
                    "__kind__": row.kind,
                    "__structure__": dict(row.structure or {}),
                }
    return out


def redline_of(finding: dict[str, Any], changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tracked changes (``documents.structure`` ``changes``) a finding's evidence rests on: those in
    the unit (DOCX paragraph) it was grounded on whose inserted text is in the evidence, or, when none
    is, every change of that unit."""
    here = [c for c in changes if c.get("unit") == finding.get("unit_number", finding.get("page"))]
    evidence = " ".join(str(finding.get("evidence") or "").split())
    inside = [c for c in here if c.get("after") and " ".join(str(c["after"]).split()) in evidence]
    return inside or here


def redline_note(change: dict[str, Any]) -> str:
    """A tracked change as a reviewer reads it: ``"the redline replaces '$1,000,000' with '$5,000,000'
    (J. Smith, 2026-03-14)"``; a table row or cell changed as a whole says so ("the redline deletes the table
    row '100 | 200 | 300'")."""
    who = ", ".join(x for x in (change.get("author"), (change.get("date") or "")[:10]) if x)
    before, after = change.get("before") or "", change.get("after") or ""
    scope = {"row": "the table row ", "cell": "the table cell "}.get(str(change.get("scope") or ""), "")
    if change.get("kind") == "insertion" or (after and not before):
        what = f"the redline inserts {scope}'{after}'"
    elif change.get("kind") == "deletion" or (before and not after):
        what = f"the redline deletes {scope}'{before}'"
    elif change.get("kind") == "move":
        what = f"the redline moves '{after or before}'"
    else:
        what = f"the redline replaces '{before}' with '{after}'"
    return f"{what} ({who})" if who else what


def page_flags(stored: dict[str, Any] | None, flags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page flags of one document for the report: ``[{flag, pages, meaning, details}]``.

    ``stored`` is the document's ``page_flags`` JSON; ``flags`` its report flags (a
    ``page_truncated`` flag becomes the page flag of that name). ``details`` maps a page
    (str) to a note: the library's message for a page not read, the ligatures restored for
    private-use/NUL pages. Flags in :data:`PAGE_FLAG_TEXT` order.
    """
    stored = dict(stored or {})
    truncated = sorted({f.get("unit_number", f["page"]) for f in flags if f.get("kind") == "page_truncated"})
    if truncated:
        stored["page_truncated"] = truncated
    out = []
    for name, meaning in PAGE_FLAG_TEXT.items():
        pages = stored.get(name)
        if not pages:
            continue
        details: dict[str, str] = {}
        if name == "not_read":
            details = {str(k): str(v) for k, v in (stored.get("not_read_reasons") or {}).items()}
        elif name in ("private_use_chars", "nul_chars"):
            details = {
                str(k): f"{v} restored" for k, v in (stored.get("ligatures_restored") or {}).items() if int(k) in pages
            }
        out.append(dict(flag=name, pages=list(pages), meaning=meaning, details=details))
    return out


def page_checks(pages_flagged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Document checks from page flags: a ``page_not_read`` check (``needs_review``) naming every
    page that could not be read and why, so a review is never taken as covering it."""
    out = []
    for entry in pages_flagged:
        if entry["flag"] != "not_read":
            continue
        why = "; ".join(f"page {p}: {entry['details'].get(str(p), 'unreadable')}" for p in entry["pages"][:5])
        out.append(
            dict(
                name="page_not_read",
                verdict="needs_review",
                reason=f"{len(entry['pages'])} page(s) could not be read and were not reviewed ({why})",
            )
        )
    return out


def _decisions(store: Session, keys: list[str]) -> dict[str, dict[str, Any]]:
    """Latest reviewer decision per finding or absence key: ``{key: {decision, category, reviewer,
    note, seq, decided_at, hash}}`` (:func:`tasks.store.decisions.decision_fields`)."""
    from tasks.store.decisions import decision_fields
    from tasks.store.persist import latest_decisions

    return {k: decision_fields(d) for k, d in latest_decisions(store, keys).items()}


_INT_METRICS = {
    "playbook_deviations",
    "playbook_deviations_high",
    "playbook_unknown",
    "playbook_pass",
    "documents_total",
    "documents_reviewed",
    "documents_deferred",
    "documents_failed",
    "documents_skipped",
    "documents_reviewed_again",
    "findings_total",
    "chunks_total",
    "pages_total",
    "unsupported",
    "contradicted",
    "needs_review",
    "retries",
    "breaker_openings",
    "breaker_closings",
    "llm_calls",
    "input_tokens",
    "output_tokens",
}


def _metrics_out(metrics: dict[str, float]) -> dict[str, float | int]:
    return {k: int(v) if k in _INT_METRICS else round(v, 4) for k, v in sorted(metrics.items())}


_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>docreview report {{ run.id[:8] }}</title>
<style>
 body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
 header{background:#1d2430;color:#fff;padding:18px 28px} header h1{margin:0;font-size:20px}
 header p{margin:4px 0 0;color:#c9d1dc;font-size:13px}
 main{max-width:1100px;margin:0 auto;padding:20px 28px}
 .metrics{display:flex;flex-wrap:wrap;gap:10px;margin-bottom:18px}
 .metric{background:#fff;border:1px solid #dde2e8;border-radius:8px;padding:8px 14px;min-width:110px}
 .metric b{display:block;font-size:20px} .metric span{font-size:12px;color:#5b6675}
 .notice{background:#fff7e0;border:1px solid #f0d58a;padding:8px 12px;border-radius:6px;margin-bottom:16px}
 .notice.broken{background:#fde2e1;border-color:#e8a3a0;color:#9b1c1c}
 section.doc{background:#fff;border:1px solid #dde2e8;border-radius:8px;margin:0 0 18px;padding:14px 18px}
 section.doc h2{font-size:17px;margin:0 0 4px;word-break:break-all}
 .sub{color:#5b6675;font-size:13px;margin-bottom:10px}
 table{border-collapse:collapse;width:100%;font-size:14px} th,td{text-align:left;vertical-align:top;padding:6px 8px;border-top:1px solid #edf0f3}
 th{font-size:12px;text-transform:uppercase;color:#5b6675;border-top:0}
 table.terms td:first-child{width:210px;color:#5b6675}
 blockquote{margin:4px 0;padding:4px 10px;border-left:3px solid #c9d1dc;color:#333;font-size:13.5px}
 .badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600}
 .weak{display:inline-block;margin-top:3px;font-size:11px;font-weight:600;color:#8a5a00}
 .verified{background:#dff3e4;color:#1e6b34}.unsupported{background:#fde2e1;color:#9b1c1c}
 .contradicted{background:#fbd5f0;color:#8a1467}.needs_review{background:#fff0c2;color:#7a5a00}
 .reviewed{background:#dff3e4;color:#1e6b34}.failed{background:#fde2e1;color:#9b1c1c}.deferred{background:#e4e9f7;color:#2b3f80}
 .risk-high{color:#9b1c1c;font-weight:600}.risk-medium{color:#7a5a00}.risk-low{color:#5b6675}
 details summary{cursor:pointer;color:#5b6675;font-size:12px}
 .plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:12px;margin-bottom:18px;align-items:start}
 .plots figure{margin:0;background:#fff;border:1px solid #dde2e8;border-radius:8px;padding:10px 12px}
 .plots figcaption{font-size:12.5px;color:#5b6675;margin-bottom:6px} .plots img{width:100%;height:auto}
 .drift.moved{color:#9b1c1c;font-weight:600}
 .checks{font-size:12px;color:#5b6675;margin:2px 0 0;padding-left:16px}
 section.triage,section.contents,section.deadlines{background:#fff;border:1px solid #dde2e8;border-radius:8px;margin:0 0 18px;padding:14px 18px}
 section.deadlines h2{font-size:17px;margin:0 0 6px} .soon{color:#9b1c1c;font-weight:600}
 section.triage{border-left:4px solid #c2410c} section.triage h2,section.contents h2{font-size:17px;margin:0 0 6px}
 section.triage h3{font-size:14px;margin:14px 0 4px} a{color:#1f4fa3}
 .pb-pass{background:#dff3e4;color:#1e6b34}.pb-deviation{background:#fde2e1;color:#9b1c1c}.pb-unknown{background:#fff0c2;color:#7a5a00}
 table.playbook{margin:6px 0 10px}
 .cmd code,.fid{font-size:11.5px;color:#5b6675} .decision{font-size:12.5px;color:#1e6b34;margin-top:3px}
</style></head>
<body>
<header><h1>docreview — document review report</h1>
<p>Run {{ run.id }} · source {{ run.source }} · backend {{ run.backend }} ({{ run.model }}) · {{ run.started_at|when }} → {{ run.finished_at|when }}</p></header>
<main>
{% if run.decisions and run.decisions.broken %}<div class="notice broken" id="chain-broken"><b>The reviewer decisions' audit
trail is broken</b>: {{ run.decisions.broken }}. Who decided what cannot be trusted until it is explained
(<code>docreview audit verify</code>).</div>{% endif %}
{% if run.offline %}<div class="notice">Reviewed with the offline <b>rules</b> backend (deterministic clause patterns, no language model).
Set <code>ANTHROPIC_API_KEY</code> to review with Claude.</div>{% endif %}
{% if run.endpoint %}<div class="notice">Model calls went to <code>{{ run.endpoint }}</code>, not the vendor's own API:
the findings, calls, tokens and cost below are what that server returned (a proxy, or a test double such as
<code>docreview stub-llm</code>, which answers from the rules backend).</div>{% endif %}
<div class="metrics">
{% for name, value in headline %}<div class="metric"><b>{{ value }}</b><span>{{ name }}</span></div>{% endfor %}
</div>
<section class="triage" id="attention"><h2>Needs attention</h2>
{% set not_done = documents|rejectattr("status", "equalto", "reviewed")|list %}
{% if not (not_done or attention or missing or deviations or undecided) %}<p>Nothing: every document was reviewed, every finding is verified and none is high risk, no clause whose absence is a risk is missing{% if run.playbook %}, no deviation from the playbook{% endif %}.</p>{% endif %}
{% if deviations %}<h3>Deviations from the playbook “{{ run.playbook.name }}” ({{ deviations|length }})</h3>
<table class="deviations"><tr><th>Document</th><th>Rule</th><th>Severity</th><th>Why</th><th>Findings</th></tr>
{% for r in deviations %}<tr><td><a href="#doc-{{ r.anchor }}">{{ r.document }}</a></td><td>{{ r.rule }}</td><td class="risk-{{ r.severity }}">{{ r.severity }}</td><td>{{ r.reason }}</td><td>{% for i in r.finding_ids %}<a href="#f-{{ i }}"><code>{{ i }}</code></a> {% endfor %}</td></tr>{% endfor %}</table>{% endif %}
{% if undecided %}<h3>Playbook rules the review could not decide ({{ undecided|length }})</h3>
<p class="sub">Decide the findings they rest on with <code>docreview decide ID approve|reject</code>; the rule is applied again at once (a reload shows it).</p>
<table class="undecided"><tr><th>Document</th><th>Rule</th><th>Severity</th><th>Why</th><th>Findings</th></tr>
{% for r in undecided %}<tr><td><a href="#doc-{{ r.anchor }}">{{ r.document }}</a></td><td>{{ r.rule }}</td><td class="risk-{{ r.severity }}">{{ r.severity }}</td><td>{{ r.reason }}</td><td>{% for i in r.finding_ids %}<a href="#f-{{ i }}"><code>{{ i }}</code></a> {% endfor %}</td></tr>{% endfor %}</table>{% endif %}
{% if not_done %}<h3>Documents not reviewed ({{ not_done|length }})</h3>
<table><tr><th>Document</th><th>Status</th><th>Reason</th></tr>
{% for d in not_done %}<tr><td><a href="#doc-{{ d.anchor }}">{{ d.file_name }}</a></td><td><span class="badge {{ d.status }}">{{ d.status }}</span></td><td>{{ d.reason }}</td></tr>{% endfor %}</table>{% endif %}
{% if attention %}<h3>Findings to look at ({{ attention|length }}{% if attention_more %} shown of {{ attention|length + attention_more }}{% endif %}: {{ attention|selectattr("triage", "equalto", "deviation")|list|length }} on playbook deviations, {{ attention|selectattr("triage", "equalto", "must_know")|list|length }} high-risk terms to know, {{ attention|selectattr("triage", "equalto", "decide")|list|length }} to decide)</h3>
<p class="sub">Not yet decided, in this order: findings a playbook deviation rests on (high severity first), verified high-risk terms to know, then what the fact-check could not confirm (high risk first). Decide with <code>docreview decide ID approve|reject</code>.</p>
<table class="attention"><tr><th>Document</th><th>Clause</th><th>Risk</th><th>Verdict</th><th>Why here</th><th>Where</th><th>ID</th></tr>
{% for r in attention %}<tr class="tier-{{ r.triage }}"><td><a href="#doc-{{ r.anchor }}">{{ r.document }}</a></td><td><a href="#f-{{ r.id }}">{{ r.clause }}</a></td><td class="risk-{{ r.risk }}">{{ r.risk }}</td><td><span class="badge {{ r.verdict }}">{{ r.verdict|replace("_", " ") }}</span></td><td>{{ r.why }}</td><td>{{ r.locator or r.page }}</td><td><code>{{ r.id }}</code></td></tr>{% endfor %}</table>{% endif %}
{% if secondary_count %}<p class="sub secondary">{{ secondary_count }} more passage(s) the fact-check could not confirm are listed under their documents, not here: each is of a category another finding already shows or asks about, or the strongest passage of its category but one the support model barely recognises as it (support below {{ first_screen_support }}; on contracts it was not trained on, such a passage is a clause of that category about a third of the time): {% for d, n in secondary_by_doc %}<a href="#doc-{{ d.anchor }}">{{ d.file_name }}</a> ({{ n }}){{ ", " if not loop.last }}{% endfor %}.</p>{% endif %}
{% if missing %}<h3>Missing high-risk clauses ({{ missing|length }})</h3>
<p class="sub">Clauses whose absence is itself a risk, or that the playbook expects.</p>
<table class="missing"><tr><th>Document</th><th>Clause</th><th>Why it matters</th><th>ID</th></tr>
{% for m in missing %}<tr><td><a href="#doc-{{ m.anchor }}">{{ m.document }}</a></td><td>{{ m.clause_label }}</td><td>{{ m.why or m.reason }} ({{ m.reason }})</td><td><code>{{ m.id }}</code></td></tr>{% endfor %}</table>{% endif %}
{% if dismissed_rows %}<details class="dismissed"><summary>Dismissed by the fact-check ({{ dismissed_rows|length }}): the quote is a heading only, or the support model is confident it is not the clause claimed; listed last in each document's findings</summary>
<table><tr><th>Document</th><th>Clause claimed</th><th>Why dismissed</th><th>Where</th><th>ID</th></tr>
{% for r in dismissed_rows %}<tr><td><a href="#doc-{{ r.anchor }}">{{ r.document }}</a></td><td><a href="#f-{{ r.id }}">{{ r.clause }}</a></td><td>{{ r.why }}</td><td>{{ r.locator }}</td><td><code>{{ r.id }}</code></td></tr>{% endfor %}</table></details>{% endif %}
{% if not_found %}<details class="not-found"><summary>Not found, for information ({{ not_found|length }}): usually the favourable or neutral position</summary>
<table><tr><th>Document</th><th>Clause</th><th>Meaning</th><th>ID</th></tr>
{% for m in not_found %}<tr><td><a href="#doc-{{ m.anchor }}">{{ m.document }}</a></td><td>{{ m.clause_label }}</td><td>{{ m.why }}</td><td><code>{{ m.id }}</code></td></tr>{% endfor %}</table></details>{% endif %}
</section>
{% if deadlines or undated %}<section class="deadlines" id="deadlines"><h2>Upcoming deadlines</h2>
<p class="sub">Contract dates from the key terms, as of {{ run.deadlines_as_of }}; a notice deadline is moved to the business day before when it falls on another day (business days: {{ run.business_days }}). Calendar: <a href="deadlines.ics">deadlines.ics</a>.</p>
{% if deadlines %}<table class="deadlines"><tr><th>Date</th><th>In</th><th>Document</th><th>What</th><th>How it was computed</th><th>Findings</th></tr>
{% for r in deadlines %}<tr><td>{{ r.date }}</td><td{% if r.days_left <= 30 %} class="soon"{% endif %}>{{ r.days_left }} day(s)</td><td><a href="#doc-{{ r.anchor }}">{{ r.document }}</a></td><td>{{ r.title }}</td><td>{{ r.basis }}</td><td>{% for i in r.finding_ids %}<a href="#f-{{ i }}"><code>{{ i }}</code></a> {% endfor %}</td></tr>{% endfor %}</table>{% endif %}
{% if undated %}<p class="sub">No deadline computed for {{ undated|length }} contract(s): {% for d in undated %}<a href="#doc-{{ d.anchor }}">{{ d.file_name }}</a> ({{ d.deadlines_note }}){{ "; " if not loop.last }}{% endfor %}.</p>{% endif %}
</section>{% endif %}
<section class="contents"><h2>Documents</h2>
<table><tr><th>Document</th><th>Status</th><th>Findings</th><th>High risk</th><th>To look at</th><th>Missing</th>{% if run.playbook %}<th>Deviations</th>{% endif %}</tr>
{% for doc in documents %}<tr><td><a href="#doc-{{ doc.anchor }}">{{ doc.file_name }}</a></td><td><span class="badge {{ doc.status }}">{{ doc.status }}</span></td>
<td>{{ doc.findings|length }}</td><td>{{ doc.counts.high }}</td><td>{{ doc.counts.attention }}</td><td>{{ doc.absences|selectattr("alarm")|list|length }}</td>{% if run.playbook %}<td>{{ (doc.playbook or [])|selectattr("status", "equalto", "deviation")|list|length }}</td>{% endif %}</tr>{% endfor %}</table>
</section>
{% if plots %}<section class="plots">{% for p in plots %}<figure><figcaption><b>{{ p.title }}</b> · {{ p.caption }}</figcaption><img alt="{{ p.title }}" src="{{ p.src }}"></figure>{% endfor %}</section>{% endif %}
{% for doc in documents %}
<section class="doc" id="doc-{{ doc.anchor }}">
 <h2>{{ doc.file_name }}</h2>
 <div class="sub"><span class="badge {{ doc.status }}">{{ doc.status }}</span>
  {% if doc.kind == "docx" %}· Word document, {{ doc.pages }} paragraph(s) (no pages){% elif doc.kind == "html" and doc.page_count %}· {{ doc.page_count }} page(s) by its page breaks{% elif doc.pages %}· {{ doc.pages }} page(s){% if doc.kind == "image" %} (page images, OCR){% endif %}{% endif %}
  {% if doc.findings %}· {{ doc.findings|length }} finding(s): {{ doc.counts.verified }} verified, {{ doc.counts.needs_review }} need review, {{ doc.counts.unsupported }} unsupported, {{ doc.counts.contradicted }} contradicted · risk {{ doc.counts.high }} high, {{ doc.counts.medium }} medium, {{ doc.counts.low }} low{% endif %}
  {% if doc.reason %}· {{ doc.reason }}{% endif %}
  {% if doc.drift and doc.drift.score is not none %}· <span class="drift{% if doc.drift.score > 0 %} moved{% endif %}">drift {{ "%.3f"|format(doc.drift.score) }}{% if doc.drift.score > 0 %} (+{{ doc.drift.added|length }} −{{ doc.drift.removed|length }} ~{{ doc.drift.changed|length }}){% endif %}{% if doc.drift.model_changed %} vs {{ doc.drift.baseline_model }} / {{ doc.drift.baseline_prompt_version }}{% endif %}</span>{% endif %}
  {% if doc.sha256 %}<br>sha256 {{ doc.sha256 }}{% endif %}
  {% if doc.profile %}<br>profile {{ doc.profile }} · {{ doc.document_type }}{% if doc.company %} · {{ doc.company }}{% endif %}{% if doc.period %} · period ended {{ doc.period }}{% endif %} — {{ doc.profile_reason }}{% endif %}
  {% if doc.edgar and doc.edgar.type %}<br>EDGAR document {{ doc.edgar.type }}{% if doc.edgar.filename %} ({{ doc.edgar.filename }}){% endif %}{% if doc.exhibit_of %} — exhibit to the {{ doc.exhibit_of.document_type or "filing" }} <a href="#doc-{{ anchors.get(doc.exhibit_of.sha256, "") }}">{{ doc.exhibit_of.file_name }}</a>{% if doc.exhibit_of.period %} (period ended {{ doc.exhibit_of.period }}){% endif %}{% elif doc.edgar.type.upper().startswith("EX-") %} — its filing is not in this run{% endif %}{% endif %}
  {% if doc.exhibits %}<br>Exhibits: {% for x in doc.exhibits %}{{ x.type or "exhibit" }} {{ x.filename }} → {% if x.file_name %}<a href="#doc-{{ anchors.get(x.sha256, "") }}">{{ x.file_name }}</a> ({{ x.status }}){% else %}in the submission file, not reviewed on its own{% endif %}{% if not loop.last %}; {% endif %}{% endfor %}{% if doc.exhibits_elsewhere %}; {{ doc.exhibits_elsewhere }} other linked exhibit file(s) not in this run{% endif %}{% elif doc.exhibits_elsewhere %}<br>{{ doc.exhibits_elsewhere }} linked exhibit file(s), none in this run{% endif %}</div>
 {% if doc.not_judged %}<p class="sub not-judged"><b>Not judged as an agreement</b>: {{ doc.not_judged }}. No missing-clause alarm and no playbook rule applies to it; its findings are shown as read.</p>{% endif %}
 {% if doc.red_flags %}<div class="notice"><b>Red flags ({{ doc.red_flags|length }}).</b><ul class="checks">{% for r in doc.red_flags %}<li><b>{{ r.flag|replace("_", " ") }}</b> ({{ r.locator or ("page " ~ r.page) }}): {{ r.reason }} — <q>{{ r.evidence }}</q></li>{% endfor %}</ul></div>{% endif %}
 {% if doc.key_figures %}<table class="terms figures"><tr><th>Key figure</th><th>Value (exact, in its own unit)</th><th>Period</th><th>Where</th></tr>{% for k in doc.key_figures %}
  <tr class="figure"><td>{{ k.title or k.name|replace("_", " ") }}</td><td class="value">{{ k.shown }}{% if k.note %}<br><span class="sub">{{ k.note }}</span>{% endif %}</td><td>{{ k.period_label or k.period or "" }}</td><td class="where">{{ k.locator or k.page }} ({{ k.statement }})</td></tr>{% endfor %}</table>{% endif %}
 {% if doc.fact_problems %}<details open><summary>XBRL facts not used ({{ doc.fact_problems|length }}): no key figure is taken from them or read around them</summary><ul class="checks">{% for p in doc.fact_problems %}<li>{{ p }}</li>{% endfor %}</ul></details>{% endif %}
 {% if doc.amendment %}<p class="sub amendment">An amendment (Form {{ doc.document_type }}/A){% if doc.previous_file_name %} of <b>{{ doc.previous_file_name }}</b>, the filing of the same company, form and period: the changes below are against it{% if not doc.changes %}; none found{% endif %}{% else %}: the filing it amends (same company, form and period) is not in the database{% endif %}.</p>{% endif %}
 {% if doc.changes %}<details open><summary>{% if doc.amendment %}Changes from the filing it amends{% else %}Changes since the previous filing{% endif %} ({{ doc.changes|length }})</summary><ul class="checks">{% for c in doc.changes %}
  <li>{% if c.high_risk %}<b class="risk-high">high risk</b> {% endif %}{{ c.kind|replace("_", " ") }}: {{ c.subject }}{% if c.locator %} ({{ c.locator }}){% endif %}{% if c.before or c.after %} — {{ c.before or "" }} → {{ c.after or "" }}{% endif %}{% if c.change is not none %} ({{ "%+.1f"|format(c.change * 100) }} %){% endif %}{% if c.basis %} · {{ c.basis }}{% endif %}</li>{% endfor %}</ul></details>{% endif %}
 {% if doc.version %}<details open class="version"><summary>Changes since the previous version, {{ doc.version.previous.file_name or doc.version.previous.sha256[:12] }} (linked by {{ doc.version.linked_by }}): {{ doc.version.changes|length }} clause change(s){% if doc.version.playbook_moves %}, {{ doc.version.playbook_moves|length }} playbook result(s) moved{% endif %}</summary><ul class="checks">
  {% for m in doc.version.playbook_moves %}<li><b>playbook {{ m.rule }}</b> ({{ m.severity }}): {{ m.before or "not applied" }} → <b>{{ m.after or "not applied" }}</b>{% if m.reason %} — {{ m.reason }}{% endif %}</li>{% endfor %}
  {% for c in doc.version.changes %}<li><b>{{ c.clause_label }}</b> {{ c.kind }}{% if c.locator %} ({{ c.locator }}){% endif %}{% for v in c["values"] %}; {{ v.kind }} {{ v.before or "none" }} → <b>{{ v.after or "none" }}</b>{% endfor %}{% if c.after_id %} <a href="#f-{{ c.after_id }}"><code>{{ c.after_id }}</code></a>{% endif %}{% if c.before %}<br><small>before: {{ c.before }}</small>{% endif %}{% if c.after %}<br><small>now: {{ c.after }}</small>{% endif %}</li>{% endfor %}
  {% if not doc.version.changes and not doc.version.playbook_moves %}<li>no clause and no playbook result changed</li>{% endif %}</ul></details>{% endif %}
 {% if doc.checks %}<div class="notice"><b>Needs review.</b>{% for c in doc.checks %} {{ c.reason }}.{% endfor %}
 {% if doc.flags %}<ul class="checks">{% for fl in doc.flags %}<li>{{ fl.locator or ("page " ~ fl.page) }}: {{ fl.reason }}{% if fl.excerpt %} — <code>{{ fl.excerpt }}</code>{% endif %}</li>{% endfor %}</ul>{% endif %}</div>{% endif %}
 {% set unwanted = doc.absences|selectattr("alarm")|list %}{% set wanted = doc.absences|selectattr("wanted_by")|list %}{% set info = doc.absences|rejectattr("alarm")|rejectattr("wanted_by")|list %}
 {% if unwanted %}<div class="notice"><b>Missing:</b>{% for a in unwanted %} {{ a.clause_label }} (<code>{{ a.id }}</code>{% if a.decision %}, {{ a.decision.decision|decided }} by {{ a.decision.reviewer or "a reviewer not recorded" }}{% endif %}) — {{ a.why }}{% if not loop.last %};{% endif %}{% endfor %} — no finding in {{ unwanted[0].chunks_examined }} reviewed chunk(s).</div>{% endif %}
 {% if info and doc.absences_not_expected and doc.not_judged %}<p class="sub absent-info">Not found, for information:{% for a in info %} {{ a.clause_label }} (<code>{{ a.id }}</code>{% if a.decision %}, {{ a.decision.decision|decided }} by {{ a.decision.reviewer or "a reviewer not recorded" }}{% endif %}){% if not loop.last %};{% endif %}{% endfor %}.</p>
 {% elif info and doc.absences_not_expected %}<p class="sub absent-info"><b>No missing-clause alarm</b>: {{ doc.absences_not_expected }}. Not found, for information:{% for a in info %} {{ a.clause_label }} (<code>{{ a.id }}</code>{% if a.decision %}, {{ a.decision.decision|decided }} by {{ a.decision.reviewer or "a reviewer not recorded" }}{% endif %}){% if not loop.last %};{% endif %}{% endfor %}.</p>
 {% elif info %}<p class="sub absent-info"><b>Not found (information):</b>{% for a in info %} {{ a.clause_label }} (<code>{{ a.id }}</code>{% if a.decision %}, {{ a.decision.decision|decided }} by {{ a.decision.reviewer or "a reviewer not recorded" }}{% endif %}) — {{ a.why }}{% if not loop.last %};{% endif %}{% endfor %}.</p>{% endif %}
 {% if wanted %}<p class="sub"><b>Not found, as the playbook wants:</b>{% for a in wanted %} {{ a.clause_label }} (rule {{ a.wanted_by }}, <code>{{ a.id }}</code>){% if not loop.last %};{% endif %}{% endfor %} — no finding in {{ wanted[0].chunks_examined }} reviewed chunk(s).</p>{% endif %}
 {% if doc.playbook %}<table class="playbook"><tr><th>Playbook rule</th><th>Status</th><th>Severity</th><th>Why</th><th>Findings</th></tr>
 {% for r in doc.playbook %}<tr><td>{{ r.rule }}<br><span class="sub">{{ r.clause_label }} · {{ r.expect|replace("_", " ") }}</span></td><td><span class="badge pb-{{ r.status }}">{{ r.status }}</span></td><td class="risk-{{ r.severity }}">{{ r.severity }}</td><td>{{ r.reason }}</td><td>{% for i in r.finding_ids %}<a href="#f-{{ i }}"><code>{{ i }}</code></a> {% endfor %}</td></tr>{% endfor %}</table>{% endif %}


 {% if doc.redline or doc.comments %}<details open><summary>Redline: {{ doc.redline|length }} tracked change(s), {{ doc.comments|length }} comment(s)</summary><ul class="checks">{% for c in doc.redline %}
  <li>{{ c.locator }}: {{ c.note }}</li>{% endfor %}{% for c in doc.comments %}
  <li>{{ c.locator }}: comment by {{ c.author or "unknown" }}{% if c.date %} ({{ c.date[:10] }}){% endif %}: {{ c.text }}{% if c.anchor %} — on <q>{{ c.anchor }}</q>{% endif %}</li>{% endfor %}</ul></details>{% endif %}
 {% if doc.page_flags %}<ul class="checks pageflags">{% for pf in doc.page_flags %}<li><b>{{ pf.flag|replace("_", " ") }}</b> on page(s) {{ pf.pages|join(", ") }} — {{ pf.meaning }}{% for pg, note in pf.details.items() %}; page {{ pg }}: {{ note }}{% endfor %}</li>{% endfor %}</ul>{% endif %}
 {% if doc.key_terms %}
 <table class="terms">{% for term, values in doc.key_terms.items() %}
  <tr><td>{{ term }}</td><td>{{ values|join("; ") }}{% for b in doc.key_term_basis if b.term == term %}<div class="sub">{{ b.value }}: {{ b.basis }}{% if b.locator %} ({{ b.locator }}){% endif %}</div>{% endfor %}</td></tr>{% endfor %}
  {% for term, why in (doc.key_term_gaps or {}).items() %}<tr><td>{{ term }}</td><td class="sub">not shown: {{ why }}</td></tr>{% endfor %}
 </table>
 {% endif %}
 {% if doc.findings %}
 <details {% if documents|length <= 10 %}open{% endif %}><summary>Findings ({{ doc.findings|length }}, in a reviewer's order: deviations, high-risk terms, to decide, the rest, further passages, those the fact-check dismissed)</summary>
 <table><tr><th>Clause</th><th>Finding and evidence</th><th>Where</th><th>Verdict</th></tr>
 {% for f in doc.findings %}
  <tr id="f-{{ f.id }}"><td>{{ f.clause_label }}{% if f.claimed_clause_label %}<br><small>claimed as {{ f.claimed_clause_label }}</small>{% endif %}<br><span class="risk-{{ f.risk }}">{{ f.risk }} risk</span><br><code class="fid">{{ f.id }}</code></td>
   <td>{{ f.summary }}<blockquote>{{ f.evidence }}</blockquote>
    {% if f["values"] %}<div class="sub">{% for k, v in f["values"].items() %}{{ k }}: {{ v }}{% if not loop.last %} · {% endif %}{% endfor %}</div>{% endif %}
    {% if f.read_values %}<div class="sub">read as: {% for k, vs in f.read_values.items() %}{% for v in vs %}{{ v.raw }} = {{ v.iso or ((v.unit ~ " ") if v.unit and v.kind == "money" else "") ~ (v.amount or "") ~ ((" " ~ v.unit) if v.unit and v.kind == "duration" else "") ~ ("%" if v.kind == "percent" else "") }}{% if v.problem %} ({{ v.problem }}){% endif %}{% if not loop.last %}; {% endif %}{% endfor %}{% if not loop.last %} · {% endif %}{% endfor %}</div>{% endif %}
    {% if f.checks %}<ul class="checks">{% for c in f.checks %}<li><b>{{ c.name }}</b>: {{ c.verdict|replace("_", " ") }} — {{ c.reason|cite }}</li>{% endfor %}</ul>{% endif %}
    {% if f.redline %}<ul class="checks redline">{% for c in f.redline %}<li><b>tracked change</b>: {{ c.note }}</li>{% endfor %}</ul>{% endif %}
    {% if f.comments %}<ul class="checks comments">{% for c in f.comments %}<li><b>comment</b> ({{ c.author or "unknown" }}{% if c.date %}, {{ c.date[:10] }}{% endif %}): {{ c.text }}{% if c.anchor %} — on <q>{{ c.anchor }}</q>{% endif %}</li>{% endfor %}</ul>{% endif %}
    {% if f.secondary %}<div class="sub">Not on the first screen: {{ f.secondary|cite }}.</div>{% endif %}
    {% if f.decision %}<div class="decision">Reviewer: <b>{{ f.decision.decision|decided }}</b>{% if f.decision.category %} as {{ f.clause_label }}{% endif %} by {{ f.decision.reviewer or "a reviewer not recorded" }} ({{ f.decision.decided_at|when }}){% if f.decision.note %} — {{ f.decision.note }}{% endif %}</div>
    {% else %}<div class="cmd"><code>docreview decide {{ f.id }} approve|reject</code></div>{% endif %}</td>
   <td>{{ f.locator or f.page }}</td><td><span class="badge {{ f.verdict }}">{{ f.verdict|replace("_", " ") }}</span>{% if f.verdict == "verified" and f.weak_support %}<br><span class="weak" title="the support model barely recognises this clause here: confirm it">weak support</span>{% endif %}{% if f.triage == "dismissed" %}<br><span class="weak" title="a heading only, or the support model is confident the quote is not this clause">dismissed by the fact-check</span>{% endif %}{% if f.triage == "secondary" %}<br><span class="weak" title="{{ f.secondary }}">not on the first screen</span>{% endif %}</td></tr>
 {% endfor %}</table></details>
 {% endif %}
</section>
{% endfor %}
</main></body></html>
"""

_env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))


def _when(iso: str | None) -> str:
    """``2026-11-29T16:30:54.679+00:00`` → ``2026-11-29 16:30:54 UTC`` (stored times are UTC)."""
    return f"{iso[:10]} {iso[11:19]} UTC" if iso else "—"


_FINDING_ID_REF = re.compile(r"\bfinding (\d+)\b")


def _cite(reason: str) -> Markup:
    """A check reason as HTML: escaped, each ``finding <id>`` (:func:`cite_finding_ids`) a link to that
    finding's row (``#f-<id>``)."""
    return Markup(
        _FINDING_ID_REF.sub(lambda m: f'<a href="#f-{m.group(1)}">finding {m.group(1)}</a>', str(escape(reason)))
    )


_env.filters["when"] = _when
_env.filters["decided"] = lambda d: {"approve": "approved", "reject": "rejected", "reclassify": "reclassified"}.get(
    str(d), str(d)
)
_env.filters["cite"] = _cite
_template = _env.from_string(_HTML)


def headline_metrics(metrics: dict[str, Any], deviations: int | None = None) -> list[tuple[str, str]]:
    """The metrics shown at the top of the HTML page: the run's, except ``deviations``, the playbook deviations
    the report shows now (the rules are evaluated again with the decisions made since the run; ``None``: the
    run's ``playbook_deviations``)."""
    rows = [
        ("documents", metrics.get("documents_total", 0)),
        ("reviewed", metrics.get("documents_reviewed", 0)),
        ("deferred", metrics.get("documents_deferred", 0)),
        ("failed", metrics.get("documents_failed", 0)),
        ("findings", metrics.get("findings_total", 0)),
        ("verified", f"{metrics.get('verification_rate', 0) * 100:.1f}%"),
        ("docs/min", _fresh_docs_per_min(metrics)),
    ]
    if "playbook_deviations" in metrics:  # only when the run applied a playbook
        rows.append(("deviations", metrics["playbook_deviations"] if deviations is None else deviations))
    if "drift" in metrics:  # only when documents were compared with an earlier review
        rows.append(("drift", f"{metrics['drift']:.3f}"))
    return [(k, str(v)) for k, v in rows]


def _fresh_docs_per_min(metrics: dict[str, Any]) -> str:
    """Documents reviewed in this run (not reused from an earlier one) per minute of the run, or
    ``—`` when the run reviewed none anew."""
    fresh = metrics.get("documents_reviewed", 0) - metrics.get("documents_skipped", 0)
    wall = metrics.get("wall_s", 0)
    return f"{fresh * 60 / wall:.1f}" if fresh > 0 and wall else "—"


def render_html(report: dict[str, Any], plots: list[Any] | None = None) -> str:
    """Render the report dict to an HTML page (all document-derived text escaped); ``plots`` are
    :class:`tasks.observe.plots.Plot` figures shown under the headline metrics."""
    documents = [dict(d, anchor=i) for i, d in enumerate(report["documents"], 1)]
    rows = [
        dict(
            r,
            anchor=next(
                d["anchor"]
                for d in documents
                if d["file_name"] == r["document"] and any(f["id"] == r["id"] for f in d["findings"])
            ),
        )
        for r in attention_rows(report, limit=None)
    ]
    shown = rows[:MAX_ATTENTION_ROWS]
    dismissed_rows = [
        {
            "document": d["file_name"],
            "anchor": d["anchor"],
            "clause": f["clause_label"],
            "why": next((c["reason"] for c in f.get("checks") or [] if c["name"] == "support"), ""),
            "locator": f.get("locator") or "",
            "id": f["id"],
        }
        for d in documents
        for f in d["findings"]
        if triage_tier(f) == "dismissed" and "decision" not in f
    ]
    missing = [
        dict(a, document=d["file_name"], anchor=d["anchor"])
        for d in documents
        for a in d.get("absences", [])
        if "decision" not in a and a.get("alarm", "wanted_by" not in a)
    ]
    not_found = [
        dict(a, document=d["file_name"], anchor=d["anchor"])
        for d in documents
        for a in d.get("absences", [])
        if "decision" not in a and not a.get("alarm", "wanted_by" not in a) and "wanted_by" not in a
    ]
    deviations = [
        dict(r, document=d["file_name"], anchor=d["anchor"])
        for d in documents
        for r in d.get("playbook") or []
        if r["status"] == "deviation"
    ]
    deviations.sort(key=lambda r: (RISK_ORDER.get(r["severity"], 3), r["document"], r["rule"]))
    undecided = [
        dict(r, document=d["file_name"], anchor=d["anchor"])
        for d in documents
        for r in d.get("playbook") or []
        if r["status"] == "unknown"
    ]
    undecided.sort(key=lambda r: (RISK_ORDER.get(r["severity"], 3), r["document"], r["rule"]))
    secondary_by_doc = [
        (d, n)
        for d in documents
        if (n := sum(triage_tier(f) == "secondary" and "decision" not in f for f in d["findings"]))
    ]
    from tasks.observe.deadlines import upcoming_rows

    anchor_of = {d.get("sha256"): d["anchor"] for d in documents}
    return _template.render(
        deadlines=[dict(r, anchor=anchor_of.get(r["sha256"], "")) for r in upcoming_rows(report)],
        undated=[d for d in documents if d.get("deadlines_note")],
        run=report["run"],
        documents=documents,
        anchors={d["sha256"]: d["anchor"] for d in documents if d.get("sha256")},
        attention=shown,
        attention_more=len(rows) - len(shown),
        dismissed_rows=dismissed_rows,
        secondary_count=sum(n for _, n in secondary_by_doc),
        secondary_by_doc=secondary_by_doc,
        first_screen_support=f"{FIRST_SCREEN_SUPPORT:g}",
        missing=missing,
        not_found=not_found,
        deviations=deviations,
        undecided=undecided,
        headline=headline_metrics(report["run"]["metrics"], len(deviations)),
        plots=plots or [],
    )


@task(name="write-report", cache_policy=NO_CACHE)
def write_report(
    database_url: str,
    run_id: str,
    out_dir: str,
    offline: bool,
    playbook: dict[str, Any] | None = None,
    endpoint: str | None = None,
    calendar_link: str | None = None,
) -> dict[str, Any]:
    """Prefect task: write the run's ``report.json``, ``report.html`` and ``deadlines.ics`` (with one
    ``deadlines/<document>.ics`` per contract that has upcoming deadlines,
    :func:`tasks.observe.deadlines.write_calendars`; events link the report at ``calendar_link``, the
    published base URL, else the file) into ``out_dir/runs/<run id>/`` (kept: an older run's report is
    never overwritten) and, when the run reviewed a document (:func:`publishes`) or ``out_dir`` has no report
    yet, replace the first three in ``out_dir/`` with them, each atomically; returns the report,
    ``run.published`` saying which."""
    import shutil

    report = build_report(database_url, run_id, offline, playbook, endpoint)
    out = Path(out_dir)
    kept = run_report_dir(out_dir, run_id)
    kept.mkdir(parents=True, exist_ok=True)
    (kept / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    from tasks.observe.plots import report_plots  # matplotlib loads only when a report is written

    (kept / "report.html").write_text(render_html(report, report_plots(database_url, run_id, report)), encoding="utf-8")
    from tasks.observe.deadlines import write_calendars

    write_calendars(report, kept, report_link(out_dir, run_id, calendar_link))
    report["run"]["published"] = publishes(report) or not (out / "report.json").exists()  # nothing to keep yet
    if report["run"]["published"]:
        for name in ("report.json", "report.html", "deadlines.ics"):  # each replaced whole: a reader never
            staged = out / f".{name}.{run_id}.tmp"  # meets half a file (a subscribed calendar, a served page)
            shutil.copyfile(kept / name, staged)
            os.replace(staged, out / name)
    return report


def publishes(report: dict[str, Any]) -> bool:
    """Whether a run's report becomes ``OUT/report.*`` and ``OUT/deadlines.ics``: only when it reviewed at least
    one document (reused unchanged ones count). An empty run (a mistyped folder, a quiet night with
    ``--allow-empty``) or one whose every document failed or was deferred keeps the last good report and
    calendar where a team reads and subscribes to them; its own stays in ``OUT/runs/<run id>/``."""
    return int(report["run"]["metrics"].get("documents_reviewed", 0)) > 0


def warm_plots_in_background() -> threading.Thread:
    """Import matplotlib for the report's figures in a daemon thread started now
    (:func:`tasks.observe.plots.warm`, about 0.3 s of CPU): the report is written after the
    run's documents end, and a process reviewing them waits on its extraction children and on the
    Prefect API often enough for the import to cost the run nothing. An error is left for the
    report to meet."""

    def run() -> None:
        with contextlib.suppress(Exception):
            from tasks.observe.plots import warm

            warm()

    thread = threading.Thread(target=run, name="docreview-warm-report-plots", daemon=True)
    thread.start()
    return thread


def run_report_dir(out_dir: str, run_id: str) -> Path:
    """``out_dir/runs/<run id>``: where a run's own report is kept."""
    return Path(out_dir) / "runs" / run_id


def report_link(out_dir: str, run_id: str, url_base: str | None) -> str:
    """The link to a run's kept HTML report: ``<url_base>/runs/<run id>/report.html`` when a base
    URL is configured (the bucket or static server that publishes ``out_dir``; works from any
    machine), else the ``file://`` URI of the file (opens on the machine that ran the flow)."""
    if url_base:
        return f"{url_base.rstrip('/')}/runs/{run_id}/report.html"
    return (run_report_dir(out_dir, run_id) / "report.html").resolve().as_uri()


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def attention_rows(report: dict[str, Any], limit: int | None = 1000) -> list[dict[str, Any]]:
    """Findings a reviewer should look at (pure, see :func:`needs_attention`), in a reviewer's order
    across documents (:func:`triage_key`): those a playbook deviation rests on (high severity first),
    then verified high-risk terms, then those that need a decision (high risk first; contradicted,
    unsupported, needs review), then by document and page. Rows ``{document, clause, risk, verdict,
    page, locator, summary, id, triage, why}`` (``why``: :func:`triage_why`); at most ``limit`` (None: all)."""
    keyed = [
        (
            (*triage_key(f), d["file_name"], _unit(f)),
            {
                "document": d["file_name"],
                "clause": f["clause_label"],
                "risk": f["risk"],
                "verdict": f["verdict"],
                "page": f["page"],
                "locator": f.get("locator") or f"page {f['page']}",
                "summary": str(f["summary"])[:200],
                "id": f["id"],
                "triage": triage_tier(f),
                "why": triage_why(f),
            },
        )
        for d in report["documents"]
        for f in d["findings"]
        if needs_attention(f)
    ]
    keyed.sort(key=lambda kr: kr[0])
    rows = [r for _, r in keyed]
    return rows if limit is None else rows[:limit]


def triage_why(finding: dict[str, Any]) -> str:
    """Why a finding is on the reviewer's list, in words: ``"deviation: no-uncapped-liability (high)"``,
    ``"high risk, verified: a term to know"``, ``"needs review (medium risk): decide"``."""
    tier = triage_tier(finding)
    if tier == "deviation":
        return "deviation: " + ", ".join(
            f"{d['rule']} ({d['severity']})"
            + (
                f", reading it as {label(d['clause'])}"
                if d.get("clause", finding["clause_type"]) != finding["clause_type"]
                else ""
            )
            for d in finding["deviations"]
        )
    if tier == "must_know":
        return "high risk, verified: a term to know"
    if tier == "decide" and finding.get("reads_as"):
        return (
            f"needs review ({finding['risk']} risk): reads as {finding['reads_as']}, which nothing else here "
            "shows: decide"
        )
    if tier == "decide":
        return f"{finding['verdict'].replace('_', ' ')} ({finding['risk']} risk): decide"
    return f"{finding['risk']} risk, verified"


def publish_changes_artifact(report: dict[str, Any]) -> None:
    """The markdown artifact of the run's filing changes (:data:`CHANGES_ARTIFACT_KEY`,
    :func:`tasks.observe.changes.changes_markdown`); nothing when no filing changed."""
    from prefect.artifacts import create_markdown_artifact

    from tasks.observe.changes import changes_markdown

    text = changes_markdown(report["documents"])
    if text:
        create_markdown_artifact(
            key=CHANGES_ARTIFACT_KEY,
            markdown=text,
            description="Changes since each filing's previous filing of the same company and form",
        )


#: Artifact key of the filing changes table.
CHANGES_ARTIFACT_KEY = "docreview-filing-changes"


@task(name="publish-artifacts", cache_policy=NO_CACHE)
def publish_artifacts(report: dict[str, Any], report_url: str) -> None:
    """Prefect task: the run's artifacts in the Prefect UI, each under a stable key (a history
    across runs on the Artifacts page): a markdown run summary with every metric
    (:data:`SUMMARY_ARTIFACT_KEY`), a table of every finding (:data:`FINDINGS_ARTIFACT_KEY`, first
    1,000), a table of the high-risk findings no reviewer has decided yet
    (:data:`ATTENTION_ARTIFACT_KEY`: :func:`attention_rows` of high risk only, first 1,000) and a
    link to the HTML report (:data:`REPORT_LINK_ARTIFACT_KEY`; ``report_url`` from
    :func:`report_link`). The summary starts
    with what needs a reviewer (findings to look at, missing clauses, documents not reviewed)."""
    run, m = report["run"], report["run"]["metrics"]
    lines = [
        f"# docreview run `{run['id'][:8]}`"
        + (  # the run id is the flow run's, unless the flow run was started again (flows.pipeline.new_run_id)
            f" (flow run `{run['flow_run_id'][:8]}`)"
            if run.get("flow_run_id") and run["flow_run_id"] != run["id"]
            else ""
        ),
        "",
        f"Source `{_md_cell(run['source'])}` · backend **{run['backend']}** (`{run['model']}`)"
        + (" · offline rules backend, no language model" if run["offline"] else ""),
        "",
        "| metric | value |",
        "|---|---|",
        *[f"| {k} | {format_metric(v)} |" for k, v in m.items()],
        "",
        f"Report: {report_url}",
    ]
    to_look_at = attention_rows(report, limit=None)
    missing = sum(1 for d in report["documents"] for a in d.get("absences", []) if a.get("alarm", "wanted_by" not in a))
    not_done = sum(d["status"] != "reviewed" for d in report["documents"])
    lines[4:4] = [
        "## Needs attention",
        "",
        f"- {len(to_look_at)} finding(s) to look at (a playbook deviation rests on it, high risk, or not verified), "
        f"{sum(r['risk'] == 'high' for r in to_look_at)} of them high risk",
        f"- {missing} missing clause(s) whose absence is a risk",
        f"- {not_done} document(s) not reviewed",
        *(
            [
                f"- {m.get('playbook_deviations', 0)} deviation(s) from the playbook "
                f"`{_md_cell(run['playbook']['name'])}`, {m.get('playbook_deviations_high', 0)} of high severity"
            ]
            if run.get("playbook")
            else []
        ),
        "",
    ]
    failed = [d for d in report["documents"] if d["status"] != "reviewed"]
    if failed:
        lines += ["", "## Not reviewed", "", "| document | status | reason |", "|---|---|---|"]
        lines += [
            f"| {_md_cell(d['file_name'])} | {d['status']} | {_md_cell(d['reason'] or '')} |" for d in failed[:200]
        ]
    create_markdown_artifact(key=SUMMARY_ARTIFACT_KEY, markdown="\n".join(lines), description="docreview run summary")
    table = [
        {
            "document": d["file_name"],
            "clause": f["clause_label"],
            "risk": f["risk"],
            "verdict": f["verdict"],
            "page": f["page"],
            "locator": f.get("locator") or f"page {f['page']}",
            "evidence": f["evidence"][:200],
        }
        for d in report["documents"]
        for f in d["findings"]
    ][:1000]
    if table:
        create_table_artifact(key=FINDINGS_ARTIFACT_KEY, table=table, description="docreview findings (first 1,000)")
    high_risk = [r for r in attention_rows(report, limit=None) if r["risk"] == "high"][:1000]
    if high_risk:  # its key says high risk: the unverified medium and low ones are in the summary and report
        create_table_artifact(
            key=ATTENTION_ARTIFACT_KEY,
            table=high_risk,
            description="High-risk findings no reviewer has decided yet (deviations first, then verified terms)",
        )
    publish_changes_artifact(report)
    create_link_artifact(
        key=REPORT_LINK_ARTIFACT_KEY,
        link=report_url,
        link_text=f"report.html of run {run['id'][:8]}",
        description="docreview HTML report",
    )
