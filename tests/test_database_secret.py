"""A database password never becomes a flow run parameter: a review, a deployment and its event-triggered
runs take the URL with the password masked (``***``) and complete it from ``DOCREVIEW_DATABASE_URL`` where
the flow runs. The real PostgreSQL on 127.0.0.1:5432 uses trust auth, so any password connects: the test
plants one and reads back, through Prefect's API, everything a run leaves behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from docreview_testing.samples import generate_samples
from schemas.settings import database_url_parameter, masked_database_url, resolve_database_url

PASSWORD = "pw-planted-9f3c1a"

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def with_password(url: str) -> str:
    return url.replace("postgres@", f"postgres:{PASSWORD}@", 1)


def test_the_parameter_form_masks_the_password_and_the_flow_completes_it(monkeypatch):
    url = "postgresql+psycopg://app:hunter2@db.internal:5432/reviews"
    masked = database_url_parameter(url)
    assert masked == "postgresql+psycopg://app:***@db.internal:5432/reviews" == masked_database_url(url)
    assert database_url_parameter("sqlite:///docreview.db") == "sqlite:///docreview.db"
    monkeypatch.setenv("DOCREVIEW_DATABASE_URL", url)
    assert resolve_database_url(masked) == url
    with pytest.raises(ValueError, match="never holds a password"):
        resolve_database_url(url)
    monkeypatch.setenv("DOCREVIEW_DATABASE_URL", "postgresql+psycopg://app:other@elsewhere/reviews")
    with pytest.raises(ValueError, match="DOCREVIEW_DATABASE_URL"):
        resolve_database_url(masked)


def test_a_review_with_a_password_leaves_it_in_no_parameter_log_artifact_or_file(tmp_path, pg_database, monkeypatch):
    """Before: the flow run's database_url parameter held the whole URL, password included, in Prefect's
    database and UI. Now the CLI's way (the URL in the environment, the masked form as the parameter): the
    events the run emits, its flow run, task runs, logs and artifacts read back through Prefect's API, and
    every file it wrote, hold no password."""
    import anyio
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, LogFilter, LogFilterFlowRunId
    from prefect.events.clients import AssertingEventsClient
    from prefect.events.worker import EventsWorker

    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    url = with_password(pg_database("docreview_secret"))
    inbox, out = tmp_path / "inbox", tmp_path / "out"
    generate_samples(inbox, count=1)
    monkeypatch.setenv("DOCREVIEW_DATABASE_URL", url)
    worker = EventsWorker.instance(AssertingEventsClient)  # every event the run emits, as it is sent
    monkeypatch.setattr(EventsWorker, "instance", lambda *_args, **_kw: worker)
    try:
        result = review_documents(
            source=str(inbox), out_dir=str(out), database_url=database_url_parameter(url), backend="rules"
        )
    finally:
        dispose_engines()
    worker.drain()
    emitted = [e.model_dump_json() for e in (worker._client.events if worker._client is not None else [])]
    assert any('"docreview.' in e for e in emitted) and not [e for e in emitted if PASSWORD in e]
    assert result["metrics"]["documents_reviewed"] >= 1 and PASSWORD not in result["database"]
    flow_run_id = result["flow_run_id"]

    async def read_back() -> list[str]:
        async with get_client() as client:
            run = await client.read_flow_run(flow_run_id)
            logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
            artifacts = await client.read_artifacts()
            tasks = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
            return [
                run.model_dump_json(),
                *(entry.message for entry in logs),
                *(a.model_dump_json() for a in artifacts),
                *(t.model_dump_json() for t in tasks),
            ]

    seen = anyio.run(read_back)
    assert any("***" in text for text in seen)  # the masked URL is the parameter: operators see which database
    assert not [text for text in seen if PASSWORD in text]
    for path in Path(out).rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_deployments_and_their_triggered_runs_take_the_masked_url():
    """Registered with `docreview serve --db URL`: the deployments, a run of one and the trigger's
    automation (what an event-triggered run is made from) read back through Prefect's API hold no password."""
    from prefect.automations import Automation
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    from flows.deploy import NIGHTLY_DEPLOYMENT, UPLOAD_DEPLOYMENT, DeploySettings, build_deployments

    url = with_password("postgresql+psycopg://postgres@127.0.0.1:5432/reviews")
    masked = "postgresql+psycopg://postgres:***@127.0.0.1:5432/reviews"
    for deployment in build_deployments(DeploySettings(nightly_source="inbox"), database_url=url):
        assert deployment.parameters["database_url"] == masked
        deployment.apply()
    run = run_deployment(f"review-documents/{NIGHTLY_DEPLOYMENT}", timeout=0)  # created, not run: no worker
    with get_client(sync_client=True) as client:
        stored = [client.read_flow_run(run.id).model_dump_json()]
        for name in (UPLOAD_DEPLOYMENT, NIGHTLY_DEPLOYMENT):
            dep = client.read_deployment_by_name(f"review-documents/{name}")
            stored.append(dep.model_dump_json())
            stored += [
                Automation.read(id=a.id).model_dump_json()
                for a in client.read_resource_related_automations(f"prefect.deployment.{dep.id}")
            ]
        client.delete_flow_run(run.id)
    assert masked in stored[0] and not [text for text in stored if PASSWORD in text]


def test_the_review_command_passes_the_masked_url_and_keeps_the_password_in_its_environment(
    tmp_path, pg_database, monkeypatch
):
    import os

    from typer.testing import CliRunner

    import flows.review
    from cli.app import app

    url = with_password(pg_database("docreview_cli"))
    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=1)
    seen: dict = {}

    def flow(**kwargs: object) -> dict:  # stands in for the flow: what would Prefect store?
        seen.update(kwargs, environment=os.environ.get("DOCREVIEW_DATABASE_URL"))
        raise KeyboardInterrupt  # end the command here: the parameters are what this test reads

    monkeypatch.setattr(flows.review, "review_documents", flow)
    monkeypatch.setenv("DOCREVIEW_DATABASE_URL", "unset-after-the-test")  # the command sets it: undone at teardown
    monkeypatch.delenv("DOCREVIEW_DATABASE_URL")
    CliRunner().invoke(app, ["review", str(inbox), "--out", str(tmp_path / "out"), "--db", url, "--backend", "rules"])
    assert seen["database_url"] == masked_database_url(url) and PASSWORD not in seen["database_url"]
    assert seen["environment"] == url
