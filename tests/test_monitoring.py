"""Monitoring: drift between runs, alerts as Prefect events, the Prometheus exporter, CLI and plots."""

from __future__ import annotations

import base64
import importlib.util
import json
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from docreview_testing.samples import generate_samples
from schemas.tables import DocumentDriftRow, FindingObservationRow, LLMCallRow, RunDocumentRow, RunMetricRow, RunRow
from tasks.observe.monitoring import (
    AlertThresholds,
    ObservedFinding,
    cache_hit_ratio,
    check_alerts,
    compute_drift,
    deferred_backlog,
    normalise_value,
    percentile,
)
from tasks.store.persist import dispose_engines, get_engine

ROOT = Path(__file__).resolve().parents[1]


def obs(
    clause: str, verdict: str = "verified", anchor: str | None = None, page: int = 1, **values: str
) -> ObservedFinding:
    return ObservedFinding(
        anchor=anchor or f"{clause}-{sorted(values.items())}",
        clause_type=clause,
        values=dict(values),
        verdict=verdict,
        evidence=f"quote for {clause}",
        page=page,
    )


# --- drift (pure) ------------------------------------------------------------------------------


def test_drift_of_identical_reviews_is_zero_whatever_the_order_and_layout():
    a = [
        obs("governing_law", jurisdiction="State of Delaware"),
        obs("parties", party="Acme Inc; Beta LLC"),
        obs("anti_assignment"),
    ]
    b = [
        obs("anti_assignment"),
        obs("parties", party="beta llc;  ACME INC."),
        obs("governing_law", jurisdiction=" state of  Delaware. "),
    ]
    d = compute_drift(a, b)
    assert d.score == 0.0 and d.added == [] and d.removed == [] and d.changed == []
    assert compute_drift([], []).score == 0.0


def test_drift_lists_a_changed_value_and_scores_one_minus_jaccard():
    before = [
        obs("governing_law", anchor="g", jurisdiction="Delaware"),
        obs("parties", anchor="p", party="Acme"),
        obs("cap_on_liability", anchor="c", amount="$1,000,000"),
    ]
    after = [
        obs("governing_law", anchor="g", jurisdiction="New York"),
        obs("parties", anchor="p", party="Acme"),
        obs("cap_on_liability", anchor="c", amount="$1,000,000"),
    ]
    d = compute_drift(before, after)
    # 2 items in common, 4 distinct items in the union: 1 - 2/4
    assert d.score == pytest.approx(0.5)
    assert d.added == [] and d.removed == []
    assert d.changed == [
        dict(
            clause_type="governing_law",
            evidence="quote for governing_law",
            page=1,
            before=dict(values={"jurisdiction": "Delaware"}, verdict="verified", evidence=None),
            after=dict(values={"jurisdiction": "New York"}, verdict="verified"),
        )
    ]


def test_drift_counts_verdicts_added_and_removed_findings():
    before = [obs("governing_law", anchor="g", jurisdiction="Delaware"), obs("non_compete", anchor="n")]
    after = [
        obs("governing_law", verdict="unsupported", anchor="g", jurisdiction="Delaware"),
        obs("audit_rights", anchor="a"),
    ]
    d = compute_drift(before, after)
    assert d.score == 1.0  # nothing in common: the verdict is part of the item
    assert [c["after"]["verdict"] for c in d.changed] == ["unsupported"]
    assert [f["clause_type"] for f in d.added] == ["audit_rights"]
    assert [f["clause_type"] for f in d.removed] == ["non_compete"]
    one_gone = compute_drift(before, before[:1])
    assert one_gone.score == pytest.approx(0.5) and [f["clause_type"] for f in one_gone.removed] == ["non_compete"]
    assert compute_drift([], before).score == 1.0


def test_drift_counts_repeated_findings_as_a_multiset():
    two = [obs("anti_assignment", anchor="x"), obs("anti_assignment", anchor="y")]
    d = compute_drift(two, two[:1])
    assert d.score == pytest.approx(0.5) and len(d.removed) == 1


def test_normalise_value():
    assert normalise_value("  The State of\u00a0Delaware. ") == "the state of delaware"
    assert normalise_value("B Corp; A Inc") == normalise_value("a inc; b corp")
    assert normalise_value("$1,000") != normalise_value("$1,500")


def test_percentile_and_cache_hit_ratio():
    assert percentile([], 95) is None
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile(list(range(1, 101)), 95) == 95
    calls = [
        LLMCallRow(
            run_id="r",
            sha256="s",
            chunk_index=0,
            backend="b",
            model="m",
            input_tokens=100,
            cache_creation_input_tokens=900,
            cache_read_input_tokens=0,
        ),
        LLMCallRow(
            run_id="r", sha256="s", chunk_index=1, backend="b", model="m", input_tokens=100, cache_read_input_tokens=900
        ),
    ]
    assert cache_hit_ratio(calls) == pytest.approx(900 / 2000)
    assert cache_hit_ratio([]) is None


# --- alerts (pure) -----------------------------------------------------------------------------


def test_alerts_fire_on_breaches_only_for_measured_metrics():
    t = AlertThresholds()
    healthy = dict(
        routing_rate=0.2,
        chunks_total=10,
        llm_calls=5,
        cache_hit_ratio=0.8,
        unsupported_rate=0.05,
        latency_ms_p95=2000.0,
        drift=0.0,
        breaker_openings=0.0,
    )
    assert check_alerts(healthy, t) == []
    at_bounds = dict(
        healthy,
        routing_rate=t.routing_rate_min,
        cache_hit_ratio=t.cache_hit_ratio_min,
        unsupported_rate=t.unsupported_rate_max,
        latency_ms_p95=t.latency_p95_ms_max,
        drift=t.drift_max,
    )
    assert check_alerts(at_bounds, t) == []
    bad = dict(
        routing_rate=0.05,
        chunks_total=10,
        llm_calls=5,
        cache_hit_ratio=0.3,
        unsupported_rate=0.25,
        latency_ms_p95=90_000.0,
        drift=0.4,
        breaker_openings=2.0,
    )
    alerts = {a.event: a for a in check_alerts(bad, t)}
    assert sorted(alerts) == sorted(
        f"docreview.alert.{n}"
        for n in (
            "routing-rate-low",
            "cache-hit-ratio-low",
            "unsupported-findings-high",
            "latency-p95-high",
            "drift-high",
            "breaker-open",
        )
    )
    assert alerts["docreview.alert.routing-rate-low"].value == 0.05
    assert alerts["docreview.alert.routing-rate-low"].threshold == 0.08
    assert alerts["docreview.alert.drift-high"].comparison == "above"
    # an offline run: no calls, no chunks routed, nothing compared: nothing to alert on
    assert check_alerts(dict(llm_calls=0, cache_hit_ratio=0.0, chunks_total=0, routing_rate=0.0), t) == []


def test_alert_thresholds_come_from_settings(monkeypatch):
    from schemas.settings import Settings

    monkeypatch.setenv("DOCREVIEW_ALERT_DRIFT_MAX", "0.05")
    monkeypatch.setenv("DOCREVIEW_ALERT_ROUTING_RATE_MIN", "0.1")
    t = AlertThresholds.from_settings(Settings())
    assert t.drift_max == 0.05 and t.routing_rate_min == 0.1 and t.cache_hit_ratio_min == 0.5


def test_deferred_backlog_follows_the_latest_state_of_each_source(db_url):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    with Session(get_engine(db_url)) as s:
        for i, run in enumerate(("r1", "r2")):
            s.add(
                RunRow(
                    id=run,
                    source="inbox",
                    backend="rules",
                    model="m",
                    prompt_version="p",
                    started_at=t0 + timedelta(hours=i),
                )
            )
        s.commit()
        for run, source, status in (
            ("r1", "a.pdf", "deferred"),
            ("r1", "b.pdf", "deferred"),
            ("r1", "c.pdf", "reviewed"),
            ("r2", "a.pdf", "reviewed"),
            ("r2", "c.pdf", "deferred"),
        ):
            s.add(RunDocumentRow(run_id=run, source=source, file_name=source, status=status))
        s.commit()
        assert deferred_backlog(s) == 2  # b (still deferred from r1) and c (deferred in r2)
    dispose_engines()


def test_automation_matches_alert_events():
    spec = importlib.util.spec_from_file_location("docreview_automations", ROOT / "deployments" / "automations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from uuid import uuid4

    from prefect.events.schemas.automations import AutomationCore

    block = uuid4()
    automation = module.alert_automation(block)
    AutomationCore.model_validate(automation.model_dump())  # what `prefect automation create` accepts
    assert automation.trigger.expect == {"docreview.alert.*"}
    from prefect.events.schemas.events import Resource

    assert automation.trigger.match.includes([Resource({"prefect.resource.id": "docreview.run.1234"})])
    assert not automation.trigger.match.includes([Resource({"prefect.resource.id": "prefect.flow-run.1234"})])
    assert automation.actions[0].type == "send-notification" and automation.actions[0].block_document_id == block


# --- end to end --------------------------------------------------------------------------------


def _run(source: Path, out: Path, db_url: str, backend: str = "rules", rereview: bool = False) -> dict:
    from flows.review import review_documents

    try:
        review_documents(source=str(source), out_dir=str(out), database_url=db_url, backend=backend, rereview=rereview)
    finally:
        dispose_engines()
    return json.loads((out / "report.json").read_text())


def _scrape(db_url: str) -> dict[tuple[str, tuple], float]:
    from prometheus_client.parser import text_string_to_metric_families

    from tasks.observe.monitoring import start_exporter

    server, _ = start_exporter(db_url, 0, "127.0.0.1")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/metrics", timeout=30) as resp:
            assert resp.status == 200
            text = resp.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        dispose_engines()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


@pytest.fixture(scope="module")
def inbox(tmp_path_factory):
    folder = tmp_path_factory.mktemp("monitoring-inbox")
    generate_samples(folder, count=2)
    return folder


@pytest.fixture
def stub_server(monkeypatch):
    from docreview_testing import stub_llm  # the project's own double: a broken import fails, never skips

    with stub_llm.StubLLMServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-monitoring")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        # not the settings default: a legacy model the table prices
        monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-sonnet-4-6")
        yield server


def _unique_finding(db_url: str, report: dict, clause: str | None = None) -> tuple[dict, dict]:
    """A (document, finding with values) whose evidence is found in that document's chunks only."""
    from schemas.tables import ChunkRow

    with Session(get_engine(db_url)) as s:
        chunks = s.exec(select(ChunkRow.sha256, ChunkRow.text)).all()
    dispose_engines()
    for doc in report["documents"]:
        for f in doc["findings"]:
            if not f["values"] or (clause and f["clause_type"] != clause):
                continue
            holders = {sha for sha, text in chunks if f["evidence"] in text}
            if holders == {doc["sha256"]}:
                return doc, f
    raise AssertionError("no finding with values is unique to one document")


def _change_one_answer(monkeypatch, evidence: str, clause: str, name: str, new_value: str) -> None:
    """Make the rules extractor (also behind the Messages-API test server) give another value for
    ``name`` in the ``clause`` finding quoting ``evidence``."""
    from schemas.findings import FindingValue
    from tasks.review.backends.rules import RulesBackend

    original = RulesBackend.review_chunk

    def review_chunk(self, chunk, document_name):
        result = original(self, chunk, document_name)
        for f in result.findings:
            if f.clause_type.value == clause and f.evidence == evidence:
                f.values = [FindingValue(name=name, value=new_value) if v.name == name else v for v in f.values]
        return result

    monkeypatch.setattr(RulesBackend, "review_chunk", review_chunk)


@pytest.mark.usefixtures("prefect_harness")
def test_prometheus_exporter_reports_the_golden_metrics_of_the_run(inbox, tmp_path, db_url, stub_server):
    first = _run(inbox, tmp_path / "a", db_url, backend="anthropic")
    second = _run(inbox, tmp_path / "b", db_url, backend="anthropic", rereview=True)
    m = second["run"]["metrics"]
    assert second["run"]["backend"] == "anthropic" and m["llm_calls"] > 0
    assert m["drift_documents"] == 2 and m["drift"] == 0.0
    got = _scrape(db_url)

    def val(name: str, **labels: str) -> float:
        return got[(name, tuple(sorted(labels.items())))]

    with Session(get_engine(db_url)) as s:
        calls = s.exec(select(LLMCallRow)).all()
        run_calls = [c for c in calls if c.run_id == second["run"]["id"]]
        stored = {
            r.name: r.value
            for r in s.exec(select(RunMetricRow).where(RunMetricRow.run_id == second["run"]["id"])).all()
        }
    dispose_engines()
    model = second["run"]["model"]
    assert val("docreview_up") == 1.0
    assert (
        val(
            "docreview_last_run_info",
            run_id=second["run"]["id"],
            source=str(inbox),
            backend="anthropic",
            model=model,
            prompt_version=second["run"]["prompt_version"],
        )
        == 1.0
    )
    for status in ("reviewed", "deferred", "failed"):
        assert val("docreview_last_run_documents", status=status) == m[f"documents_{status}"]
        assert val("docreview_documents_total", status=status) == (
            first["run"]["metrics"][f"documents_{status}"] + m[f"documents_{status}"]
        )
    assert val("docreview_last_run_documents", status="reviewed") == 2
    assert val("docreview_last_run_docs_per_minute") == pytest.approx(stored["docs_per_min"])
    # tokens, cost and calls by model cover both runs
    assert (
        val("docreview_llm_calls_total", model=model)
        == len(calls)
        == m["llm_calls"] + first["run"]["metrics"]["llm_calls"]
    )
    assert val("docreview_llm_tokens_total", model=model, type="input") == sum(c.input_tokens for c in calls)
    assert val("docreview_llm_tokens_total", model=model, type="output") == sum(c.output_tokens for c in calls)
    assert val("docreview_llm_tokens_total", model=model, type="cache_read") == sum(
        c.cache_read_input_tokens for c in calls
    )
    assert sum(c.cost_usd for c in calls) > 0
    assert val("docreview_llm_cost_usd_total", model=model) == pytest.approx(sum(c.cost_usd for c in calls))
    # latency histograms in seconds
    assert val("docreview_llm_call_duration_seconds_count", model=model) == len(calls)
    assert val("docreview_llm_call_duration_seconds_sum", model=model) == pytest.approx(
        sum(c.latency_ms for c in calls) / 1000
    )
    assert val("docreview_llm_call_duration_seconds_bucket", model=model, le="+Inf") == len(calls)
    assert val("docreview_llm_call_duration_seconds_bucket", model=model, le="1.0") == sum(
        1 for c in calls if c.latency_ms <= 1000
    )
    streamed = [c for c in calls if c.first_token_ms is not None]
    assert streamed, "the anthropic backend streams by default: first-token latency is measured"
    assert val("docreview_llm_first_token_seconds_count", model=model) == len(streamed)
    assert val("docreview_llm_first_token_seconds_sum", model=model) == pytest.approx(
        sum(c.first_token_ms for c in streamed) / 1000
    )
    # prompt cache of the run, recomputed here from the raw usage fields
    read = sum(c.cache_read_input_tokens for c in run_calls)
    total = sum(c.input_tokens + c.cache_read_input_tokens + c.cache_creation_input_tokens for c in run_calls)
    assert val("docreview_last_run_prompt_cache_hit_ratio") == pytest.approx(read / total)
    # verification outcomes of the run = the verdicts shown in its report
    verdicts = Counter(f["verdict"] for d in second["documents"] for f in d["findings"])
    assert sum(verdicts.values()) == m["findings_total"] > 0
    for v in ("verified", "unsupported", "contradicted", "needs_review"):
        assert val("docreview_last_run_findings", verdict=v) == verdicts.get(v, 0)
    assert val("docreview_last_run_verification_ratio") == pytest.approx(m["verification_rate"], abs=1e-4)
    # drift of the re-review, resilience counters (0 until recorded), backlog
    assert val("docreview_last_run_drift_score") == 0.0
    assert val("docreview_last_run_drift_documents") == 2
    assert val("docreview_retries_total") == m.get("retries", 0) + first["run"]["metrics"].get("retries", 0)
    assert val("docreview_breaker_openings_total") == 0
    assert val("docreview_breaker_open") == 0
    assert val("docreview_deferred_backlog_documents") == 0
    if "routing_rate" in m:
        assert val("docreview_last_run_routing_ratio") == pytest.approx(m["routing_rate"], abs=1e-4)
    else:
        assert ("docreview_last_run_routing_ratio", ()) not in got


@pytest.mark.slow  # three reviews of the samples through the Messages API test server: about 30 s
@pytest.mark.usefixtures("prefect_harness")
def test_rereview_measures_drift_and_a_changed_answer_is_listed_and_alerted(
    inbox, tmp_path, db_url, stub_server, monkeypatch
):
    from prefect.events.clients import AssertingEventsClient
    from prefect.events.worker import EventsWorker

    runs = [_run(inbox, tmp_path / f"r{i}", db_url, backend="anthropic", rereview=True) for i in (1, 2)]
    assert runs[0]["run"]["metrics"]["drift_documents"] == 0 and "drift" not in runs[0]["run"]["metrics"]
    assert runs[1]["run"]["metrics"]["drift"] == 0.0 and runs[1]["run"]["metrics"]["drift_documents"] == 2
    assert all(d["drift"]["score"] == 0.0 for d in runs[1]["documents"])

    target, law = _unique_finding(db_url, runs[1], "governing_law")
    _change_one_answer(monkeypatch, law["evidence"], "governing_law", "jurisdiction", "the Moon")
    monkeypatch.setenv("DOCREVIEW_ALERT_DRIFT_MAX", "0.0")

    worker = EventsWorker.instance(AssertingEventsClient)
    monkeypatch.setattr(EventsWorker, "instance", lambda *_: worker)
    third = _run(inbox, tmp_path / "r3", db_url, backend="anthropic", rereview=True)
    worker.drain()
    events = [e for e in worker._client.events if e.event.startswith("docreview.alert.")]

    by_name = {d["file_name"]: d for d in third["documents"]}
    moved = by_name[target["file_name"]]["drift"]
    assert moved["score"] > 0
    assert [
        (c["clause_type"], c["before"]["values"]["jurisdiction"], c["after"]["values"]["jurisdiction"])
        for c in moved["changed"]
    ] == [("governing_law", law["values"]["jurisdiction"], "the Moon")]
    assert moved["added"] == [] and moved["removed"] == [] and moved["model_changed"] is False
    others = [d for d in third["documents"] if d["file_name"] != target["file_name"]]
    assert others and all(d["drift"]["score"] == 0.0 for d in others)
    assert third["run"]["metrics"]["drift"] == pytest.approx(moved["score"] / 2, abs=1e-4)
    # the report shows this run's answer, not the stored one from earlier runs
    shown = [
        f
        for f in by_name[target["file_name"]]["findings"]
        if f["clause_type"] == "governing_law" and f["evidence"] == law["evidence"]
    ]
    assert [f["values"]["jurisdiction"] for f in shown] == ["the Moon"]

    drift_events = [e for e in events if e.event == "docreview.alert.drift-high"]
    assert len(drift_events) == 1
    event = drift_events[0]
    assert event.resource.id == f"docreview.run.{third['run']['id']}"
    assert event.payload["value"] == pytest.approx(third["run"]["metrics"]["drift"], abs=1e-4)
    assert event.payload["threshold"] == 0.0 and event.payload["metric"] == "drift"

    # the HTML report carries the four plots as inline SVG images
    html = (tmp_path / "r3" / "report.html").read_text()
    srcs = [part.split('"', 1)[0] for part in html.split('src="data:image/svg+xml;base64,')[1:]]
    assert len(srcs) == 4
    assert all(base64.b64decode(s).lstrip().startswith(b"<?xml") and b"<svg" in base64.b64decode(s) for s in srcs)
    for title in (
        "Model call latency",
        "Findings by clause category and verdict",
        "Model cost per document",
        "Golden metrics over recent runs",
    ):
        assert title in html

    # runs and metrics commands read the same database
    from cli.app import app

    cli = CliRunner()
    listed = cli.invoke(app, ["runs", "--db", db_url, "--limit", "5"], env={"COLUMNS": "160"})
    assert listed.exit_code == 0, listed.output
    assert all(r["run"]["id"][:8] in listed.output for r in runs + [third])
    drift = third["run"]["metrics"]["drift"]  # report.json rounds it to 4 places; runs prints the stored value
    assert any(f"{drift + d:.3f}" in listed.output for d in (-5e-5, 0.0, 5e-5)), listed.output
    shown = cli.invoke(app, ["metrics", "show", third["run"]["id"][:8], "--db", db_url], env={"COLUMNS": "160"})
    assert shown.exit_code == 0, shown.output
    assert "drift_documents" in shown.output and "the Moon" in shown.output
    missing = cli.invoke(app, ["metrics", "show", "ffffffff", "--db", db_url])
    assert missing.exit_code == 2
    dispose_engines()


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_two_rereviews_of_unchanged_cuad_contracts_have_no_drift(shared_data, tmp_path, db_url, monkeypatch):
    pdfs = sorted((shared_data / "cuad" / "pdf").glob("*"), key=lambda p: (p.stat().st_size, p.name))[:3]
    assert len(pdfs) == 3
    inbox = tmp_path / "cuad"
    inbox.mkdir()
    for p in pdfs:  # a folder of three contracts, linked (read in place)
        (inbox / p.name).symlink_to(p)
    first = _run(inbox, tmp_path / "a", db_url, rereview=True)
    second = _run(inbox, tmp_path / "b", db_url, rereview=True)
    assert second["run"]["metrics"]["documents_reviewed"] == 3
    assert second["run"]["metrics"]["drift_documents"] == 3 and second["run"]["metrics"]["drift"] == 0.0
    assert [len(d["findings"]) for d in second["documents"]] == [len(d["findings"]) for d in first["documents"]]
    with Session(get_engine(db_url)) as s:
        rows = s.exec(select(DocumentDriftRow).where(DocumentDriftRow.run_id == second["run"]["id"])).all()
        observed = s.exec(
            select(FindingObservationRow).where(FindingObservationRow.run_id == second["run"]["id"])
        ).all()
    dispose_engines()
    assert len(rows) == 3 and all(r.score == 0.0 and r.baseline_run_id == first["run"]["id"] for r in rows)
    assert len(observed) == second["run"]["metrics"]["findings_total"]

    # one answer changes: that contract drifts, with the changed finding listed
    target, finding = _unique_finding(db_url, second)
    name = sorted(finding["values"])[0]
    _change_one_answer(monkeypatch, finding["evidence"], finding["clause_type"], name, "changed value")
    third = _run(inbox, tmp_path / "c", db_url, rereview=True)
    moved = next(d for d in third["documents"] if d["file_name"] == target["file_name"])["drift"]
    assert moved["score"] > 0
    assert any(
        c["clause_type"] == finding["clause_type"] and c["after"]["values"][name] == "changed value"
        for c in moved["changed"]
    )
    assert third["run"]["metrics"]["drift_max"] == pytest.approx(moved["score"], abs=1e-4)  # report rounds to 4 places


def test_report_renders_without_plots_for_older_callers():
    from tasks.observe.report import render_html

    report = {
        "run": {
            "id": "x" * 36,
            "source": "s",
            "backend": "rules",
            "model": "m",
            "offline": True,
            "started_at": None,
            "finished_at": None,
            "metrics": {},
        },
        "documents": [],
    }
    assert "<figure>" not in render_html(report)


def test_plots_render_offline_and_with_calls():
    from tasks.observe.plots import cost_plot, findings_plot, latency_plot

    empty = latency_plot([], [])
    assert empty.caption == "no model calls" and empty.src.startswith("data:image/svg+xml;base64,")
    full = latency_plot([800.0, 1200.0, 2500.0, 9000.0], [300.0, 350.0, 500.0, 700.0])
    assert "p50 1.20 s" in full.caption and "p95 9.00 s" in full.caption
    cost = cost_plot({"a.pdf": 0.02, "b.pdf": 0.01})
    assert cost.caption.startswith("USD 0.0300 over 2 document(s)")
    docs = [
        {
            "findings": [
                {"clause_label": "Governing Law", "verdict": "verified"},
                {"clause_label": "Governing Law", "verdict": "unsupported"},
                {"clause_label": "Parties", "verdict": "verified"},
            ]
        }
    ]
    assert findings_plot(docs).caption == "3 findings in 2 categories"
    svg = base64.b64decode(findings_plot(docs).src.split(",", 1)[1])
    assert b"<svg" in svg and b"<script" not in svg


def test_plots_warmed_in_the_background_are_the_same():
    """The flow imports matplotlib in a thread while it reviews (warm_plots_in_background): the
    figures drawn after it are byte for byte those of a process that did not."""
    import subprocess
    import sys

    draw = (
        "from tasks.observe.plots import cost_plot, findings_plot, latency_plot; "
        "docs = [{'findings': [{'clause_label': 'Parties', 'verdict': 'verified'}]}]; "
        "print([p.src for p in (findings_plot(docs), latency_plot([], []), cost_plot({}))])"
    )
    warmed = "from tasks.observe.report import warm_plots_in_background; warm_plots_in_background().join(); " + draw
    root = Path(__file__).resolve().parents[1]
    outputs = [
        subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True).stdout
        for code in (draw, warmed)
    ]
    assert outputs[0] == outputs[1] and outputs[0].startswith("['data:image/svg+xml;base64,")


def test_find_run_takes_a_literal_prefix_of_at_least_four_characters(db_url):
    from sqlmodel import Session

    from schemas.tables import RunRow
    from tasks.observe.monitoring import find_run
    from tasks.store.persist import dispose_engines, get_engine

    with Session(get_engine(db_url)) as session:
        session.add(
            RunRow(
                id="0e2579fd-1111-4222-8333-444455556666",
                source="in",
                backend="rules",
                model="rules",
                prompt_version="p",
            )
        )
        session.commit()
    try:
        assert find_run(db_url, "0e25").id.startswith("0e2579fd")
        for wildcard in ("____", "0e25%", "%%%%"):  # LIKE wildcards are characters of the prefix
            with pytest.raises(KeyError, match="no run"):
                find_run(db_url, wildcard)
        with pytest.raises(KeyError, match="at least 4 characters"):
            find_run(db_url, "0e2")
    finally:
        dispose_engines()


def test_the_exporter_listens_on_loopback_by_default_and_a_token_guards_it(tmp_path):
    """Before: `metrics serve` listened on 0.0.0.0 with no authentication, so document names, costs and
    failure reasons were open to the whole network."""
    import inspect
    import urllib.error

    from cli.monitor import serve
    from tasks.observe.monitoring import start_exporter

    db_url = f"sqlite:///{tmp_path / 'm.db'}"
    assert inspect.signature(serve).parameters["addr"].default.default == "127.0.0.1"
    assert inspect.signature(start_exporter).parameters["addr"].default == "127.0.0.1"
    server, _ = start_exporter(db_url, 0)
    try:
        assert server.server_address[0] == "127.0.0.1"  # bound to loopback: no other interface answers
    finally:
        server.shutdown()
        server.server_close()
    guarded, _ = start_exporter(db_url, 0, "127.0.0.1", token="s3cret-token")
    url = f"http://127.0.0.1:{guarded.server_port}/metrics"
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30)
            assert refused.value.code == 401
            refused.value.close()
        ok = urllib.request.Request(url, headers={"Authorization": "Bearer s3cret-token"})
        with urllib.request.urlopen(ok, timeout=30) as resp:
            assert resp.status == 200 and b"docreview_runs_total" in resp.read()
    finally:
        guarded.shutdown()
        guarded.server_close()
        dispose_engines()
