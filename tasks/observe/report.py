"""Report: ``report.json`` and ``report.html`` for a run, plus Prefect artifacts for the UI.

The report is built from the database (what was persisted is what is reported), so a run that
skips unchanged documents still shows their findings. The HTML page is rendered by Jinja2 with
autoescaping on: every document-derived string (file names, quotes, summaries, values) is text,
never markup.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, select_autoescape
from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from sqlmodel import Session, col, select

from schemas.filings import FilingSummary, topic_label
from schemas.tables import RunDocumentRow, RunMetricRow, RunRow
from schemas.taxonomy import ClauseType, label
from tasks.check.injection import report_flags
from tasks.check.playbook import supported
from tasks.check.support import WEAK_SUPPORT_REASON
from tasks.observe.metrics import format_metric
from tasks.observe.monitoring import document_drift, observed_keys
from tasks.store.persist import get_engine, load_checks, load_findings, load_playbook_results
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


def key_terms(findings: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Key terms of a document from its supported findings (:func:`supported`) whose ``values``
    check (when they have one) is ``verified``: a date the quote gives as a start is no expiration
    date to list. Returns ``{term: [distinct values]}``."""
    out: dict[str, list[str]] = {}
    for term, types, names in _KEY_TERMS:
        wanted = {t.value for t in types}
        seen: list[str] = []
        for f in findings:
            if f["clause_type"] not in wanted or not supported(f) or not _values_verified(f):
                continue
            for name in names:
                raw = f["values"].get(name)
                for value in raw.split("; ") if isinstance(raw, str) else []:
                    if value and value not in seen:
                        seen.append(value)
        if seen:
            out[term] = seen[:6]
    return out


def _values_verified(finding: dict[str, Any]) -> bool:
    return all(c["verdict"] == "verified" for c in finding.get("checks") or [] if c["name"] == "values")


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
    database_url: str, run_id: str, offline: bool, playbook: dict[str, Any] | None = None, endpoint: str | None = None
) -> dict[str, Any]:
    """The report of run ``run_id`` as a JSON-safe dict (shape documented in docs/report-json.md).

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
    rules = load_playbook_results(database_url, run_id) if playbook else {}
    profiles = load_profiles(database_url, [d.sha256 for d in docs if d.sha256])
    for d in docs:
        profile = profiles.get(d.sha256) if d.sha256 else None
        summary = FilingSummary.model_validate(profile.summary) if profile is not None and profile.summary else None
        findings: list[dict[str, Any]] = []
        if d.sha256 and d.status == "reviewed":
            rows = load_findings(database_url, d.sha256, run.prompt_version, run.model)
            seen = observed_keys(database_url, run_id, d.sha256)  # reviewed again: this run's findings only
            rows = rows if seen is None else [r for r in rows if r.finding_key in seen]
            checks = load_checks(database_url, [r.finding_key for r in rows])
            decisions = _decisions(database_url, [r.finding_key for r in rows])  # reviewer decisions, latest
            for r in sorted(rows, key=lambda r: (RISK_ORDER.get(r.risk, 3), r.page or 0, r.chunk_index)):
                findings.append(
                    dict(
                        id=r.id,
                        clause_type=r.clause_type,
                        clause_label=finding_label(r.clause_type),
                        summary=r.summary,
                        risk=r.risk,
                        evidence=r.evidence,
                        page=r.page,
                        stated_page=r.stated_page,
                        verdict=r.verdict,
                        values=dict(r.values),
                        read_values=read_values(dict(r.values)),
                        chunk_index=r.chunk_index,
                        checks=[
                            dict(name=c.name, verdict=c.verdict, reason=c.reason) for c in checks.get(r.finding_key, [])
                        ],
                        weak_support=any(
                            c.name == "support" and WEAK_SUPPORT_REASON in c.reason
                            for c in checks.get(r.finding_key, [])
                        ),
                        **({"decision": decisions[r.finding_key]} if r.finding_key in decisions else {}),
                        **({"section": summary.section_at(r.page or 1)} if summary is not None else {}),
                    )
                )
        flags, doc_checks = report_flags(
            database_url, d.sha256, findings
        )  # hostile-input flags (tasks.check.injection)
        absences = _absences(database_url, d.sha256, run.prompt_version, run.model) if d.status == "reviewed" else []
        pages_flagged = page_flags(stored.get(d.sha256 or ""), flags) if d.status == "reviewed" else []
        doc_checks += page_checks(pages_flagged)
        documents.append(
            dict(
                source=d.source,
                file_name=d.file_name,
                sha256=d.sha256,
                status=d.status,
                reason=d.reason,
                failure_kind=d.failure_kind,
                pages=d.pages,
                key_terms=key_terms(findings),
                findings=findings,
                counts=finding_counts(findings),
                absences=absences,
                flags=flags,
                checks=doc_checks,
                page_flags=pages_flagged,
                drift=drift.get(d.sha256) if d.sha256 and d.status == "reviewed" else None,
                **filing_fields(profile, summary, d.status),
                **({"playbook": playbook_results(rules.get(d.sha256 or "", []))} if playbook else {}),
            )
        )
        wanted_absent(documents[-1])
    return dict(
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
        ),
        documents=documents,
    )


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
    ``sections`` (``[[first page, Item]]``), ``flags``, ``changes`` since the previous filing
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
            changes=list(profile.changes or []),
            previous_sha256=profile.previous_sha256,
        )
    return out


#: Order of risks in the report: high first.
RISK_ORDER = {"high": 0, "medium": 1, "low": 2}

#: Order of playbook statuses in the report: deviations first, then what could not be judged.
STATUS_ORDER = {"deviation": 0, "unknown": 1, "pass": 2}


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


def finding_counts(findings: list[dict[str, Any]]) -> dict[str, int]:
    """Per document: findings by verdict and by risk, and ``attention`` (high risk, or a verdict
    other than ``verified``, not yet decided by a reviewer)."""
    counts = {
        "verified": 0,
        "needs_review": 0,
        "unsupported": 0,
        "contradicted": 0,
        "high": 0,
        "medium": 0,
        "low": 0,
        "attention": 0,
    }
    for f in findings:
        counts[f["verdict"]] = counts.get(f["verdict"], 0) + 1
        counts[f["risk"]] = counts.get(f["risk"], 0) + 1
        counts["attention"] += needs_attention(f)
    return counts


def needs_attention(finding: dict[str, Any]) -> bool:
    """True for a finding a reviewer should look at: high risk or not ``verified``, and no decision yet."""
    return (finding["risk"] == "high" or finding["verdict"] != "verified") and "decision" not in finding


def _absences(database_url: str, sha256: str | None, prompt_version: str, model: str) -> list[dict[str, Any]]:
    """A reviewed document's missing high-risk clauses: ``[{id: "A<n>", clause_type,
    clause_label, reason, chunks_examined, decision?}]`` (ids as ``docreview decide`` takes them)."""
    if not sha256:
        return []
    from tasks.store.persist import load_absences

    rows = load_absences(database_url, sha256, prompt_version, model)
    decided = _decisions(database_url, [a.absence_key for a in rows])
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
    """``documents.page_flags`` per sha256 (see :func:`tasks.store.persist.page_flags_of`)."""
    from schemas.tables import DocumentRow

    out: dict[str, dict[str, Any]] = {}
    with Session(engine) as session:
        for i in range(0, len(shas), 500):
            for row in session.exec(select(DocumentRow).where(col(DocumentRow.sha256).in_(shas[i : i + 500]))).all():
                out[row.sha256] = dict(row.page_flags or {})
    return out


def page_flags(stored: dict[str, Any] | None, flags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page flags of one document for the report: ``[{flag, pages, meaning, details}]``.

    ``stored`` is the document's ``page_flags`` JSON; ``flags`` its report flags (a
    ``page_truncated`` flag becomes the page flag of that name). ``details`` maps a page
    (str) to a note: the library's message for a page not read, the ligatures restored for
    private-use/NUL pages. Flags in :data:`PAGE_FLAG_TEXT` order.
    """
    stored = dict(stored or {})
    truncated = sorted({f["page"] for f in flags if f.get("kind") == "page_truncated"})
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


def _decisions(database_url: str, keys: list[str]) -> dict[str, dict[str, Any]]:
    """Latest reviewer decision per finding key: ``{key: {decision, note, decided_at}}``."""
    from tasks.store.persist import latest_decisions

    return {
        k: dict(decision=d.decision, note=d.note, decided_at=d.decided_at.isoformat() if d.decided_at else None)
        for k, d in latest_decisions(database_url, keys).items()
    }


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
 section.triage,section.contents{background:#fff;border:1px solid #dde2e8;border-radius:8px;margin:0 0 18px;padding:14px 18px}
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
{% if not (not_done or attention or missing or deviations or undecided) %}<p>Nothing: every document was reviewed, every finding is verified and none is high risk, no high-risk clause is missing{% if run.playbook %}, no deviation from the playbook{% endif %}.</p>{% endif %}
{% if deviations %}<h3>Deviations from the playbook “{{ run.playbook.name }}” ({{ deviations|length }})</h3>
<table class="deviations"><tr><th>Document</th><th>Rule</th><th>Severity</th><th>Why</th><th>Findings</th></tr>
{% for r in deviations %}<tr><td><a href="#doc-{{ r.anchor }}">{{ r.document }}</a></td><td>{{ r.rule }}</td><td class="risk-{{ r.severity }}">{{ r.severity }}</td><td>{{ r.reason }}</td><td>{% for i in r.finding_ids %}<a href="#f-{{ i }}"><code>{{ i }}</code></a> {% endfor %}</td></tr>{% endfor %}</table>{% endif %}
{% if undecided %}<h3>Playbook rules the review could not decide ({{ undecided|length }})</h3>
<p class="sub">Decide the findings they rest on with <code>docreview decide ID approve|reject</code>; the next run applies the rule again.</p>
<table class="undecided"><tr><th>Document</th><th>Rule</th><th>Severity</th><th>Why</th><th>Findings</th></tr>
{% for r in undecided %}<tr><td><a href="#doc-{{ r.anchor }}">{{ r.document }}</a></td><td>{{ r.rule }}</td><td class="risk-{{ r.severity }}">{{ r.severity }}</td><td>{{ r.reason }}</td><td>{% for i in r.finding_ids %}<a href="#f-{{ i }}"><code>{{ i }}</code></a> {% endfor %}</td></tr>{% endfor %}</table>{% endif %}
{% if not_done %}<h3>Documents not reviewed ({{ not_done|length }})</h3>
<table><tr><th>Document</th><th>Status</th><th>Reason</th></tr>
{% for d in not_done %}<tr><td><a href="#doc-{{ d.anchor }}">{{ d.file_name }}</a></td><td><span class="badge {{ d.status }}">{{ d.status }}</span></td><td>{{ d.reason }}</td></tr>{% endfor %}</table>{% endif %}
{% if attention %}<h3>Findings to look at ({{ attention|length }}{% if attention_more %} shown of {{ attention|length + attention_more }}{% endif %})</h3>
<p class="sub">High risk, or not verified against the source, and not yet decided. Decide with <code>docreview decide ID approve|reject</code>.</p>
<table><tr><th>Document</th><th>Clause</th><th>Risk</th><th>Verdict</th><th>Page</th><th>ID</th></tr>
{% for r in attention %}<tr><td><a href="#doc-{{ r.anchor }}">{{ r.document }}</a></td><td><a href="#f-{{ r.id }}">{{ r.clause }}</a></td><td class="risk-{{ r.risk }}">{{ r.risk }}</td><td><span class="badge {{ r.verdict }}">{{ r.verdict|replace("_", " ") }}</span></td><td>{{ r.page }}</td><td><code>{{ r.id }}</code></td></tr>{% endfor %}</table>{% endif %}
{% if missing %}<h3>Missing high-risk clauses ({{ missing|length }})</h3>
<table><tr><th>Document</th><th>Clause</th><th>Why</th><th>ID</th></tr>
{% for m in missing %}<tr><td><a href="#doc-{{ m.anchor }}">{{ m.document }}</a></td><td>{{ m.clause_label }}</td><td>{{ m.reason }}</td><td><code>{{ m.id }}</code></td></tr>{% endfor %}</table>{% endif %}
</section>
<section class="contents"><h2>Documents</h2>
<table><tr><th>Document</th><th>Status</th><th>Findings</th><th>High risk</th><th>To look at</th><th>Missing</th>{% if run.playbook %}<th>Deviations</th>{% endif %}</tr>
{% for doc in documents %}<tr><td><a href="#doc-{{ doc.anchor }}">{{ doc.file_name }}</a></td><td><span class="badge {{ doc.status }}">{{ doc.status }}</span></td>
<td>{{ doc.findings|length }}</td><td>{{ doc.counts.high }}</td><td>{{ doc.counts.attention }}</td><td>{{ doc.absences|rejectattr("wanted_by")|list|length }}</td>{% if run.playbook %}<td>{{ (doc.playbook or [])|selectattr("status", "equalto", "deviation")|list|length }}</td>{% endif %}</tr>{% endfor %}</table>
</section>
{% if plots %}<section class="plots">{% for p in plots %}<figure><figcaption><b>{{ p.title }}</b> · {{ p.caption }}</figcaption><img alt="{{ p.title }}" src="{{ p.src }}"></figure>{% endfor %}</section>{% endif %}
{% for doc in documents %}
<section class="doc" id="doc-{{ doc.anchor }}">
 <h2>{{ doc.file_name }}</h2>
 <div class="sub"><span class="badge {{ doc.status }}">{{ doc.status }}</span>
  {% if doc.pages %}· {{ doc.pages }} page(s){% endif %}
  {% if doc.findings %}· {{ doc.findings|length }} finding(s): {{ doc.counts.verified }} verified, {{ doc.counts.needs_review }} need review, {{ doc.counts.unsupported }} unsupported, {{ doc.counts.contradicted }} contradicted · risk {{ doc.counts.high }} high, {{ doc.counts.medium }} medium, {{ doc.counts.low }} low{% endif %}
  {% if doc.reason %}· {{ doc.reason }}{% endif %}
  {% if doc.drift and doc.drift.score is not none %}· <span class="drift{% if doc.drift.score > 0 %} moved{% endif %}">drift {{ "%.3f"|format(doc.drift.score) }}{% if doc.drift.score > 0 %} (+{{ doc.drift.added|length }} −{{ doc.drift.removed|length }} ~{{ doc.drift.changed|length }}){% endif %}{% if doc.drift.model_changed %} vs {{ doc.drift.baseline_model }} / {{ doc.drift.baseline_prompt_version }}{% endif %}</span>{% endif %}
  {% if doc.sha256 %}<br>sha256 {{ doc.sha256 }}{% endif %}
  {% if doc.profile %}<br>profile {{ doc.profile }} · {{ doc.document_type }}{% if doc.company %} · {{ doc.company }}{% endif %}{% if doc.period %} · period ended {{ doc.period }}{% endif %} — {{ doc.profile_reason }}{% endif %}</div>
 {% if doc.key_figures %}<table class="terms"><tr><th>Key figure</th><th>Value</th><th>Period</th><th>Page</th></tr>{% for k in doc.key_figures %}
  <tr><td>{{ k.name|replace("_", " ") }}</td><td>{{ k.raw }} {{ k.unit }}</td><td>{{ k.period or "" }}</td><td>{{ k.page }} ({{ k.statement }})</td></tr>{% endfor %}</table>{% endif %}
 {% if doc.changes %}<details open><summary>Changes since the previous filing ({{ doc.changes|length }})</summary><ul class="checks">{% for c in doc.changes %}
  <li>{% if c.high_risk %}<b class="risk-high">high risk</b> {% endif %}{{ c.kind|replace("_", " ") }}: {{ c.subject }}{% if c.before or c.after %} — {{ c.before or "" }} → {{ c.after or "" }}{% endif %}{% if c.change is not none %} ({{ "%+.1f"|format(c.change * 100) }} %){% endif %}</li>{% endfor %}</ul></details>{% endif %}
 {% if doc.checks %}<div class="notice"><b>Needs review.</b>{% for c in doc.checks %} {{ c.reason }}.{% endfor %}
 {% if doc.flags %}<ul class="checks">{% for fl in doc.flags %}<li>page {{ fl.page }}: {{ fl.reason }}{% if fl.excerpt %} — <code>{{ fl.excerpt }}</code>{% endif %}</li>{% endfor %}</ul>{% endif %}</div>{% endif %}
 {% set unwanted = doc.absences|rejectattr("wanted_by")|list %}{% set wanted = doc.absences|selectattr("wanted_by")|list %}
 {% if unwanted %}<div class="notice"><b>Missing:</b>{% for a in unwanted %} {{ a.clause_label }} (<code>{{ a.id }}</code>{% if a.decision %}, {{ a.decision.decision }}d{% endif %}){% if not loop.last %};{% endif %}{% endfor %} — no finding in {{ unwanted[0].chunks_examined }} reviewed chunk(s).</div>{% endif %}
 {% if wanted %}<p class="sub"><b>Not found, as the playbook wants:</b>{% for a in wanted %} {{ a.clause_label }} (rule {{ a.wanted_by }}, <code>{{ a.id }}</code>){% if not loop.last %};{% endif %}{% endfor %} — no finding in {{ wanted[0].chunks_examined }} reviewed chunk(s).</p>{% endif %}
 {% if doc.playbook %}<table class="playbook"><tr><th>Playbook rule</th><th>Status</th><th>Severity</th><th>Why</th><th>Findings</th></tr>
 {% for r in doc.playbook %}<tr><td>{{ r.rule }}<br><span class="sub">{{ r.clause_label }} · {{ r.expect|replace("_", " ") }}</span></td><td><span class="badge pb-{{ r.status }}">{{ r.status }}</span></td><td class="risk-{{ r.severity }}">{{ r.severity }}</td><td>{{ r.reason }}</td><td>{% for i in r.finding_ids %}<a href="#f-{{ i }}"><code>{{ i }}</code></a> {% endfor %}</td></tr>{% endfor %}</table>{% endif %}


 {% if doc.page_flags %}<ul class="checks pageflags">{% for pf in doc.page_flags %}<li><b>{{ pf.flag|replace("_", " ") }}</b> on page(s) {{ pf.pages|join(", ") }} — {{ pf.meaning }}{% for pg, note in pf.details.items() %}; page {{ pg }}: {{ note }}{% endfor %}</li>{% endfor %}</ul>{% endif %}
 {% if doc.key_terms %}
 <table class="terms">{% for term, values in doc.key_terms.items() %}
  <tr><td>{{ term }}</td><td>{{ values|join("; ") }}</td></tr>{% endfor %}
 </table>
 {% endif %}
 {% if doc.findings %}
 <details {% if documents|length <= 10 %}open{% endif %}><summary>Findings ({{ doc.findings|length }}, high risk first)</summary>
 <table><tr><th>Clause</th><th>Finding and evidence</th><th>Page</th><th>Verdict</th></tr>
 {% for f in doc.findings %}
  <tr id="f-{{ f.id }}"><td>{{ f.clause_label }}{% if f.section %}<br><small>{{ f.section }}</small>{% endif %}<br><span class="risk-{{ f.risk }}">{{ f.risk }} risk</span><br><code class="fid">{{ f.id }}</code></td>
   <td>{{ f.summary }}<blockquote>{{ f.evidence }}</blockquote>
    {% if f["values"] %}<div class="sub">{% for k, v in f["values"].items() %}{{ k }}: {{ v }}{% if not loop.last %} · {% endif %}{% endfor %}</div>{% endif %}
    {% if f.read_values %}<div class="sub">read as: {% for k, vs in f.read_values.items() %}{% for v in vs %}{{ v.raw }} = {{ v.iso or ((v.unit ~ " ") if v.unit and v.kind == "money" else "") ~ (v.amount or "") ~ ((" " ~ v.unit) if v.unit and v.kind == "duration" else "") ~ ("%" if v.kind == "percent" else "") }}{% if v.problem %} ({{ v.problem }}){% endif %}{% if not loop.last %}; {% endif %}{% endfor %}{% if not loop.last %} · {% endif %}{% endfor %}</div>{% endif %}
    {% if f.checks %}<ul class="checks">{% for c in f.checks %}<li><b>{{ c.name }}</b>: {{ c.verdict|replace("_", " ") }} — {{ c.reason }}</li>{% endfor %}</ul>{% endif %}
    {% if f.decision %}<div class="decision">Reviewer: <b>{{ f.decision.decision }}d</b>{% if f.decision.note %} — {{ f.decision.note }}{% endif %} ({{ f.decision.decided_at|when }})</div>
    {% else %}<div class="cmd"><code>docreview decide {{ f.id }} approve|reject</code></div>{% endif %}</td>
   <td>{{ f.page }}</td><td><span class="badge {{ f.verdict }}">{{ f.verdict|replace("_", " ") }}</span>{% if f.verdict == "verified" and f.weak_support %}<br><span class="weak" title="the support model barely recognises this clause here: confirm it">weak support</span>{% endif %}</td></tr>
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


_env.filters["when"] = _when
_template = _env.from_string(_HTML)


def headline_metrics(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """The metrics shown at the top of the HTML page and in the summary artifact."""
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
        rows.append(("deviations", metrics["playbook_deviations"]))
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
    missing = [
        dict(a, document=d["file_name"], anchor=d["anchor"])
        for d in documents
        for a in d.get("absences", [])
        if "decision" not in a and "wanted_by" not in a
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
    return _template.render(
        run=report["run"],
        documents=documents,
        attention=shown,
        attention_more=len(rows) - len(shown),
        missing=missing,
        deviations=deviations,
        undecided=undecided,
        headline=headline_metrics(report["run"]["metrics"]),
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
) -> dict[str, Any]:
    """Prefect task: write the run's ``report.json`` and ``report.html`` into
    ``out_dir/runs/<run id>/`` (kept: an older run's report is never overwritten) and copy them to
    ``out_dir/report.json`` / ``out_dir/report.html`` (the latest run's); returns the report."""
    import shutil

    report = build_report(database_url, run_id, offline, playbook, endpoint)
    out = Path(out_dir)
    kept = run_report_dir(out_dir, run_id)
    kept.mkdir(parents=True, exist_ok=True)
    (kept / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    from tasks.observe.plots import report_plots  # matplotlib loads only when a report is written

    (kept / "report.html").write_text(render_html(report, report_plots(database_url, run_id, report)), encoding="utf-8")
    for name in ("report.json", "report.html"):
        shutil.copyfile(kept / name, out / name)
    return report


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
    """Findings a reviewer should look at first (pure, see :func:`needs_attention`): what the
    fact-check rejected (contradicted, unsupported), then what it could not confirm (needs
    review), then verified high-risk findings; high risk first within each; rows ``{document, clause, risk, verdict,
    page, summary, id}``; at most ``limit`` (None: all)."""
    order = {"contradicted": 0, "unsupported": 1, "needs_review": 2, "verified": 3}
    rows = [
        {
            "document": d["file_name"],
            "clause": f["clause_label"],
            "risk": f["risk"],
            "verdict": f["verdict"],
            "page": f["page"],
            "summary": str(f["summary"])[:200],
            "id": f["id"],
        }
        for d in report["documents"]
        for f in d["findings"]
        if needs_attention(f)
    ]
    rows.sort(key=lambda r: (order.get(r["verdict"], 4), RISK_ORDER.get(r["risk"], 3), r["document"], r["page"] or 0))
    return rows if limit is None else rows[:limit]


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
    missing = sum(1 for d in report["documents"] for a in d.get("absences", []) if "wanted_by" not in a)
    not_done = sum(d["status"] != "reviewed" for d in report["documents"])
    lines[4:4] = [
        "## Needs attention",
        "",
        f"- {len(to_look_at)} finding(s) to look at (high risk or not verified), "
        f"{sum(r['risk'] == 'high' for r in to_look_at)} of them high risk",
        f"- {missing} missing high-risk clause(s)",
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
            description="High-risk findings no reviewer has decided yet (rejected by the fact-check first)",
        )
    publish_changes_artifact(report)
    create_link_artifact(
        key=REPORT_LINK_ARTIFACT_KEY,
        link=report_url,
        link_text=f"report.html of run {run['id'][:8]}",
        description="docreview HTML report",
    )
