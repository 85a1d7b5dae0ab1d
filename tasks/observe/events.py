"""Prefect events and flow-run tags that let operators and automations react to a run.

Every event docreview emits, in one place (names are stable; automations match on them):

| event | resource id | emitted by |
|---|---|---|
| ``docreview.document.received`` | the object URI (``s3://bucket/key``, ``file:///…``) | the watcher (``docreview watch``) |
| ``docreview.finding.high-risk`` | ``docreview.document.<object URI>`` | :func:`emit_document_events`, one per document with high-risk findings |
| ``docreview.document.failed`` | ``docreview.document.<object URI>`` | :func:`emit_document_events`, one per failed document |
| ``docreview.playbook.deviation`` | ``docreview.document.<object URI>`` | :func:`emit_document_events`, one per high-severity playbook deviation |
| ``docreview.alert.<name>`` | ``docreview.run.<run id>`` | :func:`tasks.observe.monitoring.evaluate_alerts` |
| ``docreview.breaker.opened`` / ``half-open`` / ``closed`` | ``docreview.breaker.<name>`` | :mod:`tasks.review.resilience` |
| ``docreview.run.misconfigured`` | ``docreview.run.<run id>`` | :func:`emit_run_misconfigured`, when the API refused the run's requests |

Events about a run carry the flow run as a related resource (role ``flow-run``), so the Prefect
UI links them to the run. Event ids are deterministic (UUID v5 of run id, event name and
resource), so a retried task re-sends the same ids and Prefect's event store keeps one copy.
Emitting never fails a run: an event that cannot be sent is logged at debug level and dropped
(``emit_event`` itself returns ``None`` when no Prefect API is configured).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

logger = logging.getLogger("docreview.events")

#: Event a watcher emits for each new or changed object (see ``tasks/ingest/watch.py``).
DOCUMENT_RECEIVED = "docreview.document.received"
#: One event per document of a run that has at least one high-risk finding.
FINDING_HIGH_RISK = "docreview.finding.high-risk"
#: One event per document that ended a run ``failed``.
DOCUMENT_FAILED = "docreview.document.failed"
#: One event per high-severity playbook deviation of a reviewed document (see :mod:`tasks.check.playbook`).
PLAYBOOK_DEVIATION = "docreview.playbook.deviation"
#: A high-risk change since a company's previous filing of the same form (going-concern doubt or
#: material weakness appeared, auditor changed): :func:`filing_change_events`.
FILING_CHANGE = "docreview.filing.change"
#: Prefix of the alert events of :func:`tasks.observe.monitoring.evaluate_alerts`.
ALERT_PREFIX = "docreview.alert."
#: The API refused a run's requests for what they are (key, model id, schema): the run stopped.
RUN_MISCONFIGURED = "docreview.run.misconfigured"
#: Prefix of the circuit-breaker state events of :mod:`tasks.review.resilience`.
BREAKER_PREFIX = "docreview.breaker."

#: Namespace of the deterministic event ids (UUID v5).
_EVENT_NAMESPACE = uuid.UUID("4f6b1f8e-2d0c-5b7a-9a51-3c2e8d7f1a60")

#: At most this many findings are listed in one high-risk event's payload.
MAX_FINDINGS_PER_EVENT = 20


def document_resource_id(uri: str) -> str:
    """``docreview.document.<object URI>`` (``s3://bucket/key``, a path): the resource operators
    see in the Prefect UI's event feed, named after the file; the content's sha256 is a label."""
    return f"docreview.document.{uri}"


def flow_run_related(flow_run_id: str | None) -> list[dict[str, str]]:
    """The related-resource list naming a flow run (role ``flow-run``), or ``[]``."""
    if not flow_run_id:
        return []
    return [{"prefect.resource.id": f"prefect.flow-run.{flow_run_id}", "prefect.resource.role": "flow-run"}]


def document_events(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The events for a run's report (pure): ``[{event, resource, related, payload, id}]``.

    ``report`` is the dict of :func:`tasks.observe.report.build_report`. For each document:

    - ``failed`` → :data:`DOCUMENT_FAILED`, payload ``{run_id, uri, file_name, sha256, reason,
      failure_kind}``;
    - ``reviewed`` with findings of risk ``high`` → :data:`FINDING_HIGH_RISK`, payload
      ``{run_id, uri, file_name, sha256, count, verdicts: {verdict: n}, findings: [{id,
      clause_type, clause_label, verdict, page, summary}]}`` (at most
      :data:`MAX_FINDINGS_PER_EVENT` findings listed, summaries cut to 200 characters; evidence
      quotes stay out of events, they are document text).

    - each playbook result with status ``deviation`` and severity ``high`` → :data:`PLAYBOOK_DEVIATION`,
      payload ``{run_id, uri, file_name, sha256, playbook, rule, clause, expect, severity, reason,
      finding_ids}``.

    Deferred documents emit nothing here: the next run takes them first, and the
    ``docreview_deferred_backlog_documents`` gauge tracks them.
    """
    run = report["run"]
    related = flow_run_related(run.get("flow_run_id"))
    out: list[dict[str, Any]] = []
    for doc in report["documents"]:
        resource = {
            "prefect.resource.id": document_resource_id(doc["source"]),
            "prefect.resource.name": doc["file_name"],
            "docreview.source": doc["source"],
            "docreview.sha256": doc.get("sha256") or "",
        }
        base = {"run_id": run["id"], "uri": doc["source"], "file_name": doc["file_name"], "sha256": doc.get("sha256")}
        if doc["status"] == "failed":
            payload = {**base, "reason": doc.get("reason"), "failure_kind": doc.get("failure_kind")}
            out.append(_event(DOCUMENT_FAILED, resource, related, payload, run["id"], doc["source"]))
            continue
        for r in doc.get("playbook") or []:
            if r["status"] == "deviation" and r["severity"] == "high":
                payload = {
                    **base,
                    "playbook": (run.get("playbook") or {}).get("name"),
                    **{k: r[k] for k in ("rule", "clause", "expect", "severity", "reason", "finding_ids")},
                }
                out.append(
                    _event(PLAYBOOK_DEVIATION, resource, related, payload, run["id"], f"{doc['source']}|{r['rule']}")
                )
        high = [f for f in doc.get("findings", []) if f.get("risk") == "high"]
        if doc["status"] != "reviewed" or not high:
            continue
        verdicts: dict[str, int] = {}
        for f in high:
            verdicts[f["verdict"]] = verdicts.get(f["verdict"], 0) + 1
        listed = [
            {
                "id": f["id"],
                "clause_type": f["clause_type"],
                "clause_label": f["clause_label"],
                "verdict": f["verdict"],
                "page": f["page"],
                "locator": f.get("locator") or f"page {f['page']}",
                "summary": str(f["summary"])[:200],
            }
            for f in high[:MAX_FINDINGS_PER_EVENT]
        ]
        payload = {**base, "count": len(high), "verdicts": verdicts, "findings": listed}
        out.append(_event(FINDING_HIGH_RISK, resource, related, payload, run["id"], doc["source"]))
    return out


def _event(
    name: str, resource: dict[str, str], related: list[dict[str, str]], payload: dict[str, Any], run_id: str, uri: str
) -> dict[str, Any]:
    # The id is stable per run, event and source object: two objects with the same content share
    # a resource (their sha256) but are two events (the API rejects a repeated event id).
    event_id = uuid.uuid5(_EVENT_NAMESPACE, f"{run_id}|{name}|{resource['prefect.resource.id']}|{uri}")
    return {"event": name, "resource": resource, "related": related, "payload": payload, "id": event_id}


def send_events(events: list[dict[str, Any]]) -> int:
    """Emit ``events`` (``[{event, resource, related, payload, id}]``) to Prefect; returns how many
    were sent (0 without a Prefect API). An event that cannot be sent is logged at debug level and
    dropped: emitting never breaks a run."""
    from prefect.events import emit_event

    sent = 0
    for e in events:
        try:
            if (
                emit_event(
                    event=e["event"], resource=e["resource"], related=e["related"], payload=e["payload"], id=e["id"]
                )
                is not None
            ):
                sent += 1
        except Exception:
            logger.debug("could not emit %s", e["event"], exc_info=True)
    return sent


@task(name="emit-document-events", cache_policy=NO_CACHE)
def emit_document_events(report: dict[str, Any]) -> int:
    """Prefect task: emit :func:`document_events` for the run; returns how many were sent
    (0 when no Prefect API is configured, or an event could not be sent)."""
    return send_events(document_events(report))


@task(name="emit-run-misconfigured", cache_policy=NO_CACHE)
def emit_run_misconfigured(
    run_id: str, flow_run_id: str | None, backend: str, model: str, cause: str, deferred: int
) -> bool:
    """Prefect task: emit :data:`RUN_MISCONFIGURED` for run ``run_id`` (payload ``{run_id,
    backend, model, cause, documents_deferred}``); True when it was sent."""
    from prefect.events import emit_event

    try:
        return (
            emit_event(
                event=RUN_MISCONFIGURED,
                resource={
                    "prefect.resource.id": f"docreview.run.{run_id}",
                    "prefect.resource.name": f"docreview run {run_id[:8]}",
                },
                related=flow_run_related(flow_run_id),
                payload={
                    "run_id": run_id,
                    "backend": backend,
                    "model": model,
                    "cause": cause,
                    "documents_deferred": deferred,
                },
                id=uuid.uuid5(_EVENT_NAMESPACE, f"{run_id}|{RUN_MISCONFIGURED}"),
            )
            is not None
        )
    except Exception:
        logger.debug("could not emit %s", RUN_MISCONFIGURED, exc_info=True)
        return False


def trigger_kind(flow_run: Any) -> str:
    """How a flow run was started (pure): ``event`` (an automation, e.g. a deployment trigger),
    ``schedule`` (a deployment schedule), ``deployment`` (run on demand, e.g. ``run_deployment``
    or the UI) or ``manual`` (the flow called directly, e.g. ``docreview review``)."""
    created_by = getattr(flow_run, "created_by", None)
    if created_by is not None and str(getattr(created_by, "type", "")).upper() == "AUTOMATION":
        return "event"
    if getattr(flow_run, "auto_scheduled", False):
        return "schedule"
    if getattr(flow_run, "deployment_id", None):
        return "deployment"
    return "manual"


def run_tags(backend: str, kind: str) -> list[str]:
    """The tags docreview adds to its flow runs: ``docreview``, ``backend:<name>``, ``trigger:<kind>``."""
    return ["docreview", f"backend:{backend}", f"trigger:{kind}"]


@task(name="tag-flow-run", cache_policy=NO_CACHE)
def tag_flow_run(backend: str) -> list[str]:
    """Prefect task: add :func:`run_tags` to the current flow run (kept: its existing tags, e.g. the
    deployment's). Returns the run's tags afterwards; ``[]`` outside a flow run or when the API
    cannot be reached (tags are a convenience for filtering in the UI, never worth failing a run)."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run as runtime_flow_run

    run_id = runtime_flow_run.id
    if not run_id:
        return []
    try:
        with get_client(sync_client=True) as client:
            current = client.read_flow_run(uuid.UUID(str(run_id)))
            tags = list(dict.fromkeys([*(current.tags or []), *run_tags(backend, trigger_kind(current))]))
            if tags != list(current.tags or []):
                client.update_flow_run(current.id, tags=tags)
            return tags
    except Exception:
        logger.debug("could not tag flow run %s", run_id, exc_info=True)
        return []


def filing_change_events(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The :data:`FILING_CHANGE` events of a run's report (pure): one per high-risk change of a
    reviewed filing (``report["documents"][i]["changes"]``), payload ``{run_id, uri, file_name,
    sha256, document_type, company, kind, subject, before, after, previous_sha256}``."""
    run = report["run"]
    related = flow_run_related(run.get("flow_run_id"))
    out: list[dict[str, Any]] = []
    for doc in report["documents"]:
        for n, change in enumerate(c for c in doc.get("changes") or [] if c.get("high_risk")):
            resource = {
                "prefect.resource.id": document_resource_id(doc["source"]),
                "prefect.resource.name": doc["file_name"],
                "docreview.source": doc["source"],
                "docreview.sha256": doc.get("sha256") or "",
            }
            payload = {
                "run_id": run["id"],
                "uri": doc["source"],
                "file_name": doc["file_name"],
                "sha256": doc.get("sha256"),
                "document_type": doc.get("document_type"),
                "company": doc.get("company"),
                "kind": change["kind"],
                "subject": change["subject"],
                "before": change.get("before"),
                "after": change.get("after"),
                "previous_sha256": doc.get("previous_sha256"),
            }
            out.append(_event(FILING_CHANGE, resource, related, payload, run["id"], f"{doc['source']}#{n}"))
    return out


@task(name="emit-filing-change-events", cache_policy=NO_CACHE)
def emit_filing_change_events(report: dict[str, Any]) -> int:
    """Prefect task: emit :func:`filing_change_events`; returns how many were sent (0 without a
    Prefect API, or when an event could not be sent)."""
    return send_events(filing_change_events(report))
