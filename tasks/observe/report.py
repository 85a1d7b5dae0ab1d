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
from sqlmodel import Session, select

from schemas.tables import RunDocumentRow, RunMetricRow, RunRow
from schemas.taxonomy import ClauseType, label
from tasks.check.injection import report_flags
from tasks.observe.monitoring import document_drift, observed_keys
from tasks.store.persist import get_engine, load_checks, load_findings

#: Artifact keys (lowercase, digits and dashes, as Prefect requires) so they show on the
#: Artifacts page with a history across runs.
SUMMARY_ARTIFACT_KEY = "docreview-run-summary"
FINDINGS_ARTIFACT_KEY = "docreview-findings"
ATTENTION_ARTIFACT_KEY = "docreview-high-risk-findings"
REPORT_LINK_ARTIFACT_KEY = "docreview-report"

#: Verdicts that make a finding need a reviewer's attention in the attention table.
_DOUBTFUL = {"unsupported", "contradicted"}

#: Verdicts whose findings may feed the key-terms summary.
_TRUSTED = {"verified", "needs_review"}

_KEY_TERMS: list[tuple[str, list[ClauseType], list[str]]] = [
    ("Parties", [ClauseType.parties], ["party"]),
    ("Agreement date", [ClauseType.agreement_date], ["date"]),
    ("Effective date", [ClauseType.effective_date], ["date"]),
    ("Expiration date", [ClauseType.expiration_date], ["date"]),
    ("Term", [ClauseType.expiration_date], ["duration", "term"]),
    ("Renewal", [ClauseType.renewal_term], ["duration", "term"]),
    ("Notice to terminate renewal", [ClauseType.notice_period_to_terminate_renewal], ["duration"]),
    ("Governing law", [ClauseType.governing_law], ["jurisdiction"]),
    ("Payment amounts", [ClauseType.revenue_profit_sharing, ClauseType.minimum_commitment,
                         ClauseType.price_restrictions, ClauseType.other], ["amount", "percentage"]),
    ("Liability cap", [ClauseType.cap_on_liability], ["amount"]),
]


def supported(finding: dict[str, Any]) -> bool:
    """A report finding (``{verdict, checks: [{name, verdict, reason}]}``) whose quote states what it
    claims: verdict ``verified`` or ``needs_review``, and its ``support`` check (when it has one)
    ``verified`` — or a ``verifier`` check that is ``verified``. A grounded quote that is only a
    heading, reads as another category or negates the clause is not supported."""
    if finding["verdict"] not in _TRUSTED:
        return False
    checks = {c["name"]: c["verdict"] for c in finding.get("checks") or []}
    if checks.get("verifier") == "verified":
        return True
    return checks.get("support", "verified") == "verified"


def key_terms(findings: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Key terms of a document from its supported findings (:func:`supported`): ``{term: [distinct values]}``."""
    out: dict[str, list[str]] = {}
    for term, types, names in _KEY_TERMS:
        wanted = {t.value for t in types}
        seen: list[str] = []
        for f in findings:
            if f["clause_type"] not in wanted or not supported(f):
                continue
            for name in names:
                raw = f["values"].get(name)
                for value in (raw.split("; ") if isinstance(raw, str) else []):
                    if value and value not in seen:
                        seen.append(value)
        if seen:
            out[term] = seen[:6]
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


def build_report(database_url: str, run_id: str, offline: bool) -> dict[str, Any]:
    """The report of run ``run_id`` as a JSON-safe dict (shape documented in the README)."""
    engine = get_engine(database_url)
    with Session(engine) as session:
        run = session.get(RunRow, run_id)
        if run is None:
            raise KeyError(f"no run {run_id}")
        docs = session.exec(select(RunDocumentRow).where(RunDocumentRow.run_id == run_id)
                            .order_by(RunDocumentRow.source)).all()
        metrics = {m.name: m.value for m in session.exec(select(RunMetricRow).where(RunMetricRow.run_id == run_id)).all()}
    documents = []
    drift = document_drift(database_url, run_id)  # {sha256: drift record} (tasks.observe.monitoring)
    for d in docs:
        findings: list[dict[str, Any]] = []
        if d.sha256 and d.status == "reviewed":
            rows = load_findings(database_url, d.sha256, run.prompt_version, run.model)
            seen = observed_keys(database_url, run_id, d.sha256)  # reviewed again: this run's findings only
            rows = rows if seen is None else [r for r in rows if r.finding_key in seen]
            checks = load_checks(database_url, [r.finding_key for r in rows])
            decisions = _decisions(database_url, [r.finding_key for r in rows])  # reviewer decisions, latest
            for r in rows:
                findings.append(dict(
                    id=r.id, clause_type=r.clause_type, clause_label=label(r.clause_type), summary=r.summary,
                    risk=r.risk, evidence=r.evidence, page=r.page, stated_page=r.stated_page, verdict=r.verdict,
                    values=dict(r.values), read_values=read_values(dict(r.values)), chunk_index=r.chunk_index,
                    checks=[dict(name=c.name, verdict=c.verdict, reason=c.reason) for c in checks.get(r.finding_key, [])],
                    **({"decision": decisions[r.finding_key]} if r.finding_key in decisions else {}),
                ))
        flags, doc_checks = report_flags(database_url, d.sha256, findings)  # hostile-input flags (tasks.check.injection)
        documents.append(dict(
            source=d.source, file_name=d.file_name, sha256=d.sha256, status=d.status, reason=d.reason,
            failure_kind=d.failure_kind, pages=d.pages, key_terms=key_terms(findings), findings=findings,
            flags=flags, checks=doc_checks,
            drift=drift.get(d.sha256) if d.sha256 and d.status == "reviewed" else None,
        ))
    return dict(
        run=dict(
            id=run.id, source=run.source, backend=run.backend, model=run.model, prompt_version=run.prompt_version,
            offline=offline, flow_run_id=run.flow_run_id,
            started_at=run.started_at.isoformat() if run.started_at else None,
            finished_at=run.finished_at.isoformat() if run.finished_at else None,
            metrics=_metrics_out(metrics),
        ),
        documents=documents,
    )


def _decisions(database_url: str, keys: list[str]) -> dict[str, dict[str, Any]]:
    """Latest reviewer decision per finding key: ``{key: {decision, note, decided_at}}``."""
    from tasks.store.persist import latest_decisions

    return {k: dict(decision=d.decision, note=d.note, decided_at=d.decided_at.isoformat() if d.decided_at else None)
            for k, d in latest_decisions(database_url, keys).items()}


_INT_METRICS = {"documents_total", "documents_reviewed", "documents_deferred", "documents_failed",
                "documents_skipped", "findings_total", "chunks_total", "pages_total",
                "unsupported", "contradicted", "needs_review", "retries", "breaker_openings", "breaker_closings",
                "llm_calls", "input_tokens", "output_tokens"}


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
</style></head>
<body>
<header><h1>docreview — contract review report</h1>
<p>Run {{ run.id }} · source {{ run.source }} · backend {{ run.backend }} ({{ run.model }}) · {{ run.started_at|when }} → {{ run.finished_at|when }}</p></header>
<main>
{% if run.offline %}<div class="notice">Reviewed with the offline <b>rules</b> backend (deterministic clause patterns, no language model).
Set <code>ANTHROPIC_API_KEY</code> to review with Claude.</div>{% endif %}
<div class="metrics">
{% for name, value in headline %}<div class="metric"><b>{{ value }}</b><span>{{ name }}</span></div>{% endfor %}
</div>
{% if plots %}<section class="plots">{% for p in plots %}<figure><figcaption><b>{{ p.title }}</b> · {{ p.caption }}</figcaption><img alt="{{ p.title }}" src="{{ p.src }}"></figure>{% endfor %}</section>{% endif %}
{% for doc in documents %}
<section class="doc" id="doc-{{ loop.index }}">
 <h2>{{ doc.file_name }}</h2>
 <div class="sub"><span class="badge {{ doc.status }}">{{ doc.status }}</span>
  {% if doc.pages %}· {{ doc.pages }} page(s){% endif %}
  {% if doc.findings %}· {{ doc.findings|length }} finding(s){% endif %}
  {% if doc.reason %}· {{ doc.reason }}{% endif %}
  {% if doc.drift and doc.drift.score is not none %}· <span class="drift{% if doc.drift.score > 0 %} moved{% endif %}">drift {{ "%.3f"|format(doc.drift.score) }}{% if doc.drift.score > 0 %} (+{{ doc.drift.added|length }} −{{ doc.drift.removed|length }} ~{{ doc.drift.changed|length }}){% endif %}{% if doc.drift.model_changed %} vs {{ doc.drift.baseline_model }} / {{ doc.drift.baseline_prompt_version }}{% endif %}</span>{% endif %}
  {% if doc.sha256 %}<br>sha256 {{ doc.sha256 }}{% endif %}</div>
 {% if doc.checks %}<div class="notice"><b>Needs review.</b>{% for c in doc.checks %} {{ c.reason }}.{% endfor %}
 {% if doc.flags %}<ul class="checks">{% for fl in doc.flags %}<li>page {{ fl.page }}: {{ fl.reason }}{% if fl.excerpt %} — <code>{{ fl.excerpt }}</code>{% endif %}</li>{% endfor %}</ul>{% endif %}</div>{% endif %}
 {% if doc.key_terms %}
 <table class="terms">{% for term, values in doc.key_terms.items() %}
  <tr><td>{{ term }}</td><td>{{ values|join("; ") }}</td></tr>{% endfor %}
 </table>
 {% endif %}
 {% if doc.findings %}
 <details {% if documents|length <= 10 %}open{% endif %}><summary>Findings</summary>
 <table><tr><th>Clause</th><th>Finding and evidence</th><th>Page</th><th>Verdict</th></tr>
 {% for f in doc.findings %}
  <tr><td>{{ f.clause_label }}<br><span class="risk-{{ f.risk }}">{{ f.risk }} risk</span></td>
   <td>{{ f.summary }}<blockquote>{{ f.evidence }}</blockquote>
    {% if f["values"] %}<div class="sub">{% for k, v in f["values"].items() %}{{ k }}: {{ v }}{% if not loop.last %} · {% endif %}{% endfor %}</div>{% endif %}
    {% if f.read_values %}<div class="sub">read as: {% for k, vs in f.read_values.items() %}{% for v in vs %}{{ v.raw }} = {{ v.iso or ((v.unit ~ " ") if v.unit and v.kind == "money" else "") ~ (v.amount or "") ~ ((" " ~ v.unit) if v.unit and v.kind == "duration" else "") ~ ("%" if v.kind == "percent" else "") }}{% if v.problem %} ({{ v.problem }}){% endif %}{% if not loop.last %}; {% endif %}{% endfor %}{% if not loop.last %} · {% endif %}{% endfor %}</div>{% endif %}
    {% if f.checks %}<ul class="checks">{% for c in f.checks %}<li><b>{{ c.name }}</b>: {{ c.verdict|replace("_", " ") }} — {{ c.reason }}</li>{% endfor %}</ul>{% endif %}</td>
   <td>{{ f.page }}</td><td><span class="badge {{ f.verdict }}">{{ f.verdict|replace("_", " ") }}</span></td></tr>
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
        ("docs/min", f"{metrics.get('docs_per_min', 0):.1f}"),
    ]
    if "drift" in metrics:  # only when documents were compared with an earlier review
        rows.append(("drift", f"{metrics['drift']:.3f}"))
    return [(k, str(v)) for k, v in rows]


def render_html(report: dict[str, Any], plots: list[Any] | None = None) -> str:
    """Render the report dict to an HTML page (all document-derived text escaped); ``plots`` are
    :class:`tasks.observe.plots.Plot` figures shown under the headline metrics."""
    return _template.render(run=report["run"], documents=report["documents"],
                            headline=headline_metrics(report["run"]["metrics"]), plots=plots or [])


@task(name="write-report", cache_policy=NO_CACHE)
def write_report(database_url: str, run_id: str, out_dir: str, offline: bool) -> dict[str, Any]:
    """Prefect task: write ``report.json`` and ``report.html`` into ``out_dir``; returns the report."""
    report = build_report(database_url, run_id, offline)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    from tasks.observe.plots import report_plots  # matplotlib loads only when a report is written

    (out / "report.html").write_text(render_html(report, report_plots(database_url, run_id, report)), encoding="utf-8")
    return report


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def attention_rows(report: dict[str, Any], limit: int = 1000) -> list[dict[str, Any]]:
    """Findings a reviewer should look at first (pure): risk ``high`` or verdict ``unsupported``/
    ``contradicted``, high risk first; rows ``{document, clause, risk, verdict, page, summary, id}``."""
    rows = [
        {"document": d["file_name"], "clause": f["clause_label"], "risk": f["risk"], "verdict": f["verdict"],
         "page": f["page"], "summary": str(f["summary"])[:200], "id": f["id"]}
        for d in report["documents"] for f in d["findings"]
        if f["risk"] == "high" or f["verdict"] in _DOUBTFUL
    ]
    rows.sort(key=lambda r: (r["risk"] != "high", r["verdict"] not in _DOUBTFUL, r["document"], r["page"] or 0))
    return rows[:limit]


@task(name="publish-artifacts", cache_policy=NO_CACHE)
def publish_artifacts(report: dict[str, Any], report_path: str) -> None:
    """Prefect task: the run's artifacts in the Prefect UI, each under a stable key (a history
    across runs on the Artifacts page): a markdown run summary with every metric
    (:data:`SUMMARY_ARTIFACT_KEY`), a table of every finding (:data:`FINDINGS_ARTIFACT_KEY`, first
    1,000), a table of high-risk and unsupported/contradicted findings
    (:data:`ATTENTION_ARTIFACT_KEY`, :func:`attention_rows`) and a link to the HTML report
    (:data:`REPORT_LINK_ARTIFACT_KEY`; ``report_path`` is an absolute local path, linked as a
    ``file://`` URI, so it opens on the machine that ran the flow)."""
    run, m = report["run"], report["run"]["metrics"]
    lines = [
        f"# docreview run `{run['id'][:8]}`",
        "",
        f"Source `{_md_cell(run['source'])}` · backend **{run['backend']}** (`{run['model']}`)"
        + (" · offline rules backend, no language model" if run["offline"] else ""),
        "",
        "| metric | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in m.items()],
        "",
        f"Report: `{_md_cell(report_path)}`",
    ]
    failed = [d for d in report["documents"] if d["status"] != "reviewed"]
    if failed:
        lines += ["", "## Not reviewed", "", "| document | status | reason |", "|---|---|---|"]
        lines += [f"| {_md_cell(d['file_name'])} | {d['status']} | {_md_cell(d['reason'] or '')} |" for d in failed[:200]]
    create_markdown_artifact(key=SUMMARY_ARTIFACT_KEY, markdown="\n".join(lines), description="docreview run summary")
    table = [
        {"document": d["file_name"], "clause": f["clause_label"], "risk": f["risk"], "verdict": f["verdict"],
         "page": f["page"], "evidence": f["evidence"][:200]}
        for d in report["documents"] for f in d["findings"]
    ][:1000]
    if table:
        create_table_artifact(key=FINDINGS_ARTIFACT_KEY, table=table, description="docreview findings (first 1,000)")
    attention = attention_rows(report)
    if attention:
        create_table_artifact(key=ATTENTION_ARTIFACT_KEY, table=attention,
                              description="High-risk, unsupported and contradicted findings: review these first")
    create_link_artifact(key=REPORT_LINK_ARTIFACT_KEY, link=Path(report_path).resolve().as_uri(),
                         link_text=f"report.html of run {run['id'][:8]}", description="docreview HTML report")
