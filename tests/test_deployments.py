"""Deployments: ``deployments/prefect.yaml`` as ``prefect deploy`` reads it, the deployments
``docreview serve`` registers, the post-deploy check, flow input validation, run events and tags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from docreview_testing.samples import generate_samples
from flows.deploy import (
    DOCUMENT_RECEIVED,
    NIGHTLY_DEPLOYMENT,
    NIGHTLY_POLICY,
    SOURCE_TEMPLATE,
    UPLOAD_DEPLOYMENT,
    UPLOAD_POLICY,
    WORK_POOL,
    DeploySettings,
    build_deployments,
    check_deployments,
    render_source,
    schedule_settings,
)
from schemas.policy import ResiliencePolicy
from tasks.store.persist import dispose_engines

ROOT = Path(__file__).resolve().parents[1]
PREFECT_YAML = ROOT / "deployments" / "prefect.yaml"


def event_for(resource_id: str) -> dict:
    return {"event": DOCUMENT_RECEIVED, "resource": {"prefect.resource.id": resource_id}}


@pytest.fixture(scope="module")
def spec() -> dict:
    return yaml.safe_load(PREFECT_YAML.read_text())


def deployment(spec: dict, name: str) -> dict:
    return next(d for d in spec["deployments"] if d["name"] == name)


# --- prefect.yaml --------------------------------------------------------------------------


def test_yaml_deployments_point_at_the_review_flow_on_the_process_pool(spec):
    from prefect.flows import load_flow_from_entrypoint

    assert {d["name"] for d in spec["deployments"]} == {UPLOAD_DEPLOYMENT, NIGHTLY_DEPLOYMENT}
    for d in spec["deployments"]:
        assert d["work_pool"]["name"] == WORK_POOL
        assert "docreview" in d["tags"]
        path, _, func = d["entrypoint"].partition(":")
        assert (ROOT / path).is_file()
        flow = load_flow_from_entrypoint(str(ROOT / path) + ":" + func)
        assert flow.name == "review-documents"
        # every parameter is one the flow accepts, and the policy is a valid ResiliencePolicy
        assert set(d["parameters"]) <= set(flow.parameters.properties)
    assert ResiliencePolicy(**deployment(spec, UPLOAD_DEPLOYMENT)["parameters"]["policy"]) == UPLOAD_POLICY
    assert ResiliencePolicy(**deployment(spec, NIGHTLY_DEPLOYMENT)["parameters"]["policy"]) == NIGHTLY_POLICY


def test_yaml_trigger_batches_and_templates_the_source_from_the_event(spec):
    from prefect.cli.deploy._triggers import _initialize_deployment_triggers

    raw = deployment(spec, UPLOAD_DEPLOYMENT)["triggers"]
    (trigger,) = _initialize_deployment_triggers(UPLOAD_DEPLOYMENT, [dict(t) for t in raw])  # as `prefect deploy` does
    assert trigger.expect == {DOCUMENT_RECEIVED}
    assert trigger.posture == "Reactive" and trigger.threshold == 1
    assert trigger.within == trigger.schedule_after > timedelta(0)  # the run starts after the window closes
    assert trigger.for_each == {"docreview.bucket", "docreview.folder"}
    assert trigger.parameters == {"source": SOURCE_TEMPLATE}
    # the server renders it to the folder of the object (a folder URI, never empty)
    assert render_source(SOURCE_TEMPLATE, event_for("s3://bucket/inbox/a.pdf")) == "s3://bucket/inbox/"
    assert render_source(SOURCE_TEMPLATE, event_for("s3://bucket/top.pdf")) == "s3://bucket/"
    assert render_source(SOURCE_TEMPLATE, event_for("file:///srv/in%20box/a.pdf")) == "file:///srv/in%20box/"


def test_deploy_time_templating_keeps_the_event_template(spec, monkeypatch):
    """`prefect deploy` applies environment values to the whole config before deploying; the
    runtime template must survive it (PrefectHQ/prefect#19501 lost such parameters)."""
    from prefect.utilities.templating import apply_values

    monkeypatch.setenv("DOCREVIEW_NIGHTLY_TIMEZONE", "Europe/Berlin")
    templated = apply_values(deployment(spec, UPLOAD_DEPLOYMENT), dict(os.environ), remove_notset=False)
    assert templated["triggers"][0]["parameters"]["source"] == SOURCE_TEMPLATE
    # the nightly schedule comes from the build step's outputs
    (step,) = spec["build"]
    name, options = next(iter(step.items()))
    assert name == "flows.deploy.schedule_settings" and options["id"] == "nightly"
    outputs = {"nightly": schedule_settings()}
    nightly = apply_values(deployment(spec, NIGHTLY_DEPLOYMENT), outputs)
    assert nightly["schedules"][0]["cron"] == "0 2 * * *"
    assert nightly["schedules"][0]["timezone"] == "Europe/Berlin"
    assert nightly["parameters"]["source"] == "inbox"


def test_schedule_settings_reject_an_unknown_time_zone(monkeypatch):
    monkeypatch.setenv("DOCREVIEW_NIGHTLY_TIMEZONE", "Mars/Olympus_Mons")
    with pytest.raises(ValueError, match="unknown time zone"):
        schedule_settings()


# --- deployments built for `docreview serve` ------------------------------------------------


def test_served_deployments_have_the_trigger_and_the_cron():
    settings = DeploySettings(
        nightly_cron="30 1 * * *",
        nightly_timezone="America/New_York",
        nightly_source="s3://bucket/inbox/",
        batch_window_s=12,
    )
    upload, nightly = build_deployments(settings, endpoint_url="http://127.0.0.1:5299")
    assert (upload.name, nightly.name) == (UPLOAD_DEPLOYMENT, NIGHTLY_DEPLOYMENT)
    assert upload.entrypoint == nightly.entrypoint == "flows.review.review_documents"
    (trigger,) = upload.triggers
    assert trigger.expect == {DOCUMENT_RECEIVED} and trigger.within == timedelta(seconds=12)
    source = trigger.parameters["source"]
    assert source.strip() and "event.resource.id" in source
    assert render_source(source, event_for("s3://bucket/inbox/x.pdf")) == "s3://bucket/inbox/"
    assert upload.parameters["endpoint_url"] == "http://127.0.0.1:5299"
    assert ResiliencePolicy(**upload.parameters["policy"]) == UPLOAD_POLICY
    (schedule,) = nightly.schedules
    assert (schedule.schedule.cron, schedule.schedule.timezone) == ("30 1 * * *", "America/New_York")
    assert nightly.parameters["source"] == "s3://bucket/inbox/" and nightly.parameters["batch"] is False
    assert "upload" in upload.tags and "nightly" in nightly.tags


@pytest.mark.integration
def test_post_deploy_check_passes_then_catches_an_empty_parameter(prefect_harness):
    from prefect.automations import Automation
    from prefect.client.orchestration import get_client

    upload, nightly = build_deployments(DeploySettings(nightly_source="inbox"))
    upload.apply()
    nightly.apply()
    good = check_deployments()
    assert good.ok, good.problems
    assert "rsplit" in good.details[UPLOAD_DEPLOYMENT]

    with get_client(sync_client=True) as client:
        dep = client.read_deployment_by_name(f"review-documents/{UPLOAD_DEPLOYMENT}")
        (automation,) = client.read_resource_related_automations(f"prefect.deployment.{dep.id}")
    broken = Automation.read(id=automation.id)
    for bad, expected in [
        ({"source": ""}, "empty 'source'"),
        ({}, "no parameters"),
        ({"source": "s3://fixed/"}, "not templated"),
        ({"source": "{{ event.resource.idd }}"}, "renders to ''"),
    ]:
        broken.actions[0].parameters = bad
        broken.update()
        result = check_deployments()
        assert not result.ok and any(expected in p for p in result.problems), (bad, result.problems)
    broken.enabled = False
    broken.actions[0].parameters = {"source": SOURCE_TEMPLATE}
    broken.update()
    assert any("no enabled automation" in p for p in check_deployments().problems)
    upload.apply()  # re-registering recreates the trigger
    assert check_deployments().ok


@pytest.mark.slow
@pytest.mark.integration
def test_prefect_deploy_with_the_yaml_then_check(prefect_server, tmp_path):
    """The real `prefect deploy --prefect-file deployments/prefect.yaml --all` against a real server."""
    prefect = str(Path(sys.executable).parent / "prefect")
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_server["api_url"],
        "PREFECT_HOME": str(tmp_path),
        "DOCREVIEW_NIGHTLY_TIMEZONE": "Asia/Tokyo",
        "DOCREVIEW_NIGHTLY_SOURCE": str(tmp_path / "inbox"),
    }
    subprocess.run(
        [prefect, "work-pool", "create", WORK_POOL, "--type", "process", "--overwrite"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    done = subprocess.run(
        [prefect, "--no-prompt", "deploy", "--prefect-file", str(PREFECT_YAML), "--all"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    check = subprocess.run(
        [str(Path(sys.executable).parent / "docreview"), "deployments", "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "Asia/Tokyo" in check.stdout and "rsplit" in check.stdout
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: prefect_server["api_url"]}), get_client(sync_client=True) as client:
        dep = client.read_deployment_by_name(f"review-documents/{NIGHTLY_DEPLOYMENT}")
        assert dep.work_pool_name == WORK_POOL and dep.parameters["source"] == str(tmp_path / "inbox")
        assert dep.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}]


# --- flow input validation ---------------------------------------------------------------------


@pytest.mark.parametrize("source", ["", "   ", "{{ event.resource.id }}", "{{ event.resource.id.rsplit('/', 1)[0] }}/"])
def test_flow_fails_fast_on_an_empty_or_unrendered_source(prefect_harness, source, tmp_path):
    from prefect.client.orchestration import get_client

    from flows.review import review_documents

    with pytest.raises(ValueError, match=r"source is empty|unrendered template"):
        review_documents(
            source=source, out_dir=str(tmp_path / "out"), database_url=f"sqlite:///{tmp_path}/x.db", backend="rules"
        )
    assert not (tmp_path / "x.db").exists()  # nothing was started
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:  # the run is Failed with that message, visible in the UI
        newest = client.read_flow_runs(limit=20, sort=FlowRunSort.EXPECTED_START_TIME_DESC)
        (run,) = [
            r
            for r in newest
            if r.state and "source" in (r.state.message or "") and str(tmp_path) in json.dumps(r.parameters)
        ]
        assert run.state.is_failed()


# --- run events and tags ----------------------------------------------------------------------


def test_run_events_follow_the_report(prefect_harness, tmp_path, pdf_maker):
    from flows.review import review_documents
    from tasks.observe.events import DOCUMENT_FAILED, FINDING_HIGH_RISK, document_events

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=2)
    (inbox / "notes.txt").write_text("not a contract")
    try:
        result = review_documents(
            source=str(inbox), out_dir=str(tmp_path / "out"), database_url=f"sqlite:///{tmp_path}/r.db", backend="rules"
        )
    finally:
        dispose_engines()
    report = json.loads(Path(tmp_path / "out" / "report.json").read_text())
    events = document_events(report)
    failed = [e for e in events if e["event"] == DOCUMENT_FAILED]
    assert [e["payload"]["file_name"] for e in failed] == ["notes.txt"]
    assert failed[0]["payload"]["reason"] and failed[0]["resource"]["prefect.resource.id"].startswith(
        "docreview.document."
    )
    high = {e["payload"]["file_name"]: e for e in events if e["event"] == FINDING_HIGH_RISK}
    for doc in report["documents"]:
        n = sum(f["risk"] == "high" for f in doc["findings"])
        assert (doc["file_name"] in high) == (n > 0)
        if n:
            e = high[doc["file_name"]]
            assert e["payload"]["count"] == n and sum(e["payload"]["verdicts"].values()) == n
            assert e["related"][0]["prefect.resource.id"] == f"prefect.flow-run.{report['run']['flow_run_id']}"
            assert all("evidence" not in f for f in e["payload"]["findings"])
    assert high, "the sample contracts carry high-risk clauses (liability cap, termination)"
    assert document_events(report) == events  # deterministic ids: a retried task re-sends the same events
    assert result["metrics"]["documents_failed"] == 1

    from tasks.observe.report import attention_rows

    rows = attention_rows(report)
    from tasks.check.support import dismissed

    def dismissed_by_fact_check(f: dict) -> bool:
        return f["verdict"] == "needs_review" and any(
            c["name"] == "support" and dismissed(c["reason"]) for c in f["checks"]
        )

    findings = [f for d in report["documents"] for f in d["findings"]]
    further = [f for f in findings if f["triage"] == "secondary"]  # one needs_review passage per category
    wanted = [
        f
        for f in findings
        if (f["risk"] == "high" or f["verdict"] != "verified") and not dismissed_by_fact_check(f) and f not in further
    ]  # none decided yet; no playbook, so no deviation keeps a dismissed finding on the first screen
    assert sorted(r["id"] for r in rows) == sorted(f["id"] for f in wanted)
    assert any(dismissed_by_fact_check(f) for f in findings), "the samples carry headings the fact-check dismisses"
    assert further and all(f["verdict"] == "needs_review" and f["secondary"] for f in further)
    for d in report["documents"]:
        asked = [
            f
            for f in d["findings"]
            if f["id"] in {r["id"] for r in rows} and f["verdict"] == "needs_review" and not f.get("reads_as")
        ]  # (a passage read as another category nothing else shows is asked besides)
        verified = {f["clause_type"] for f in d["findings"] if f["verdict"] == "verified"}
        assert len({f["clause_type"] for f in asked}) == len(asked)  # one question per category
        assert not verified & {f["clause_type"] for f in asked}  # none of a category a verified finding shows
    order = {"contradicted": 0, "unsupported": 1, "needs_review": 2, "verified": 3}
    risk = {"high": 0, "medium": 1, "low": 2}
    keys = [(r["verdict"] != "verified", risk[r["risk"]], order[r["verdict"]]) for r in rows]
    # verified high-risk terms first (no playbook: no deviations), then what needs a decision by risk,
    # the fact-check's rejections before what it could not confirm
    assert keys == sorted(keys)


def test_trigger_kind_from_the_flow_run():
    from tasks.observe.events import run_tags, trigger_kind

    automation = SimpleNamespace(type="AUTOMATION")
    assert trigger_kind(SimpleNamespace(created_by=automation, auto_scheduled=False, deployment_id="d")) == "event"
    assert trigger_kind(SimpleNamespace(created_by=None, auto_scheduled=True, deployment_id="d")) == "schedule"
    assert trigger_kind(SimpleNamespace(created_by=None, auto_scheduled=False, deployment_id="d")) == "deployment"
    assert trigger_kind(SimpleNamespace(created_by=None, auto_scheduled=False, deployment_id=None)) == "manual"
    assert run_tags("rules", "manual") == ["docreview", "backend:rules", "trigger:manual"]


def test_document_automations_match_and_render_the_run_events(prefect_harness, tmp_path):
    """The example automations for high-risk findings and failed documents: created through the API,
    matching the events a run emits, with subject and body rendering those events' payloads."""
    import importlib.util

    from prefect.blocks.notifications import SlackWebhook
    from prefect.events.schemas.events import ReceivedEvent, Resource
    from prefect.server.utilities.user_templates import render_user_template_sync
    from prefect.types._datetime import now

    from tasks.observe.events import DOCUMENT_FAILED, FINDING_HIGH_RISK, PLAYBOOK_DEVIATION, document_events

    spec = importlib.util.spec_from_file_location("docreview_automations", ROOT / "deployments" / "automations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (module.HIGH_RISK_EVENT, module.FAILED_EVENT) == (FINDING_HIGH_RISK, DOCUMENT_FAILED)
    SlackWebhook(url="https://hooks.slack.com/services/T000/B000/XXXX").save("docreview-test", overwrite=True)
    created = module.create_automations("slack-webhook/docreview-test")
    assert [a.name for a in created] == [
        "docreview-alerts",
        "docreview-high-risk",
        "docreview-failed-documents",
        "docreview-misconfigured",
        "docreview-playbook-deviations",
    ]
    again = module.create_automations("slack-webhook/docreview-test", ("high-risk",))  # replaces, no duplicate
    from prefect.automations import Automation

    assert Automation.read(name="docreview-high-risk").id == again[0].id

    report = {
        "run": {"id": "r" * 36, "flow_run_id": None, "playbook": {"name": "standard-positions"}},
        "documents": [
            {
                "source": "s3://b/in/a.pdf",
                "file_name": "a.pdf",
                "sha256": "a" * 64,
                "status": "reviewed",
                "findings": [
                    {
                        "id": 7,
                        "clause_type": "uncapped_liability",
                        "clause_label": "Uncapped Liability",
                        "risk": "high",
                        "verdict": "verified",
                        "page": 3,
                        "summary": "Liability is not capped.",
                    }
                ],
                "playbook": [
                    {
                        "rule": "no-uncapped-liability",
                        "clause": "uncapped_liability",
                        "expect": "absent",
                        "status": "deviation",
                        "severity": "high",
                        "finding_ids": [7],
                        "reason": "Uncapped Liability is present (page 3); the playbook expects it absent",
                    }
                ],
            },
            {
                "source": "s3://b/in/b.pdf",
                "file_name": "b.pdf",
                "sha256": None,
                "status": "failed",
                "reason": "not a PDF",
                "failure_kind": "not_pdf",
                "findings": [],
            },
        ],
    }
    by_name = {a.name: a for a in created}
    automation_for = {
        FINDING_HIGH_RISK: "docreview-high-risk",
        DOCUMENT_FAILED: "docreview-failed-documents",
        PLAYBOOK_DEVIATION: "docreview-playbook-deviations",
    }
    events = document_events(report)
    assert sorted(e["event"] for e in events) == sorted(automation_for)
    for e in events:
        automation = by_name[automation_for[e["event"]]]
        assert automation.trigger.expect == {e["event"]}
        assert automation.trigger.match.includes([Resource(e["resource"])])
        event = ReceivedEvent(
            occurred=now("UTC"),
            received=now("UTC"),
            event=e["event"],
            resource=e["resource"],
            payload=json.loads(json.dumps(e["payload"])),
            id=e["id"],
        )
        subject = render_user_template_sync(automation.actions[0].subject, {"event": event})
        body = render_user_template_sync(automation.actions[0].body, {"event": event})
        if e["event"] == FINDING_HIGH_RISK:
            assert subject == "docreview: 1 high-risk finding(s) in a.pdf"
            assert "Uncapped Liability (page 3, verified): Liability is not capped." in body
        elif e["event"] == PLAYBOOK_DEVIATION:
            assert subject == "docreview: a.pdf deviates from rule no-uncapped-liability"
            assert (
                "playbook standard-positions, rule no-uncapped-liability (high): Uncapped Liability is present" in body
                and "findings: [7]" in body
            )
        else:
            assert subject == "docreview: b.pdf failed" and "not_pdf: not a PDF" in body


def test_one_name_for_the_received_event():
    import flows.deploy
    import tasks.ingest.watch
    import tasks.observe.events

    assert flows.deploy.DOCUMENT_RECEIVED == tasks.observe.events.DOCUMENT_RECEIVED == tasks.ingest.watch.EVENT_NAME


@pytest.mark.parametrize("limit,expected", [(None, 7), (3, 3)])
def test_serve_passes_a_process_limit_only_when_given(monkeypatch, limit, expected):
    """Without --limit the runner takes PREFECT_RUNNER_PROCESS_LIMIT (Runner(limit=None) would mean no limit)."""
    import prefect.runner
    from prefect.settings import PREFECT_RUNNER_PROCESS_LIMIT, temporary_settings

    from flows.deploy import serve

    built = []

    class Stop(Exception):
        pass

    class RecordingRunner(prefect.runner.Runner):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self)
            raise Stop

    monkeypatch.setattr(prefect.runner, "Runner", RecordingRunner)
    with temporary_settings({PREFECT_RUNNER_PROCESS_LIMIT: 7}), pytest.raises(Stop):
        serve([], check=False, limit=limit)
    assert built[0].limit == expected


def test_an_unreachable_prefect_api_is_exit_2_naming_the_setting():
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port(47000, 47999)}/api"  # nothing listens there
    env = {**os.environ, "PREFECT_API_URL": url, "PREFECT_CLIENT_MAX_RETRIES": "0"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "docreview"), "deployments", "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"PREFECT_API_URL: cannot reach the Prefect API at {url}" in done.stderr and "Traceback" not in done.stderr
