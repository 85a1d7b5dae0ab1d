"""Prefect automations: turn docreview events into notifications.

Five automations, each sending through one Prefect notification block:

- ``docreview-alerts``: every ``docreview.alert.*`` event (threshold breaches, below);
- ``docreview-high-risk``: ``docreview.finding.high-risk``, one event per document of a run with
  high-risk findings (:mod:`tasks.observe.events`; payload ``count``, ``verdicts``, ``findings``);
- ``docreview-failed-documents``: ``docreview.document.failed``, one event per failed document
  (payload ``reason``, ``failure_kind``, ``uri``);
- ``docreview-misconfigured``: ``docreview.run.misconfigured``, a run the API refused (bad key,
  unknown model id, rejected schema: payload ``cause``, ``model``, ``documents_deferred``); the
  run stopped and every nightly run will stop the same way until the configuration is fixed;
- ``docreview-playbook-deviations``: ``docreview.playbook.deviation``, one event per high-severity
  deviation from the team's playbook (payload ``rule``, ``clause``, ``reason``, ``finding_ids``).

Every run ends with the ``evaluate-alerts`` task (:func:`tasks.observe.monitoring.evaluate_alerts`),
which emits one Prefect event per breached threshold, named ``docreview.alert.<name>``
(``routing-rate-low``, ``cache-hit-ratio-low``, ``unsupported-findings-high``,
``latency-p95-high``, ``drift-high``, ``breaker-open``) about the resource
``docreview.run.<run id>``, with ``metric``, ``value``, ``threshold``, ``comparison`` and
``message`` in its payload. The automation below reacts to each such event (reactive trigger,
threshold 1) with Prefect's ``send-notification`` action through a notification block.

Usage (against the Prefect API in ``PREFECT_API_URL``)::

    # once: a notification block, e.g. a Slack incoming webhook
    python -c "from prefect.blocks.notifications import SlackWebhook; \\
               SlackWebhook(url='https://hooks.slack.com/services/…').save('docreview-alerts')"
    # create (or replace) the automations (all five, or --kind alerts|high-risk|failed|misconfigured|playbook-deviation)
    python deployments/automations.py --block slack-webhook/docreview-alerts

Only ``drift-high`` and ``breaker-open``, say: ``--events docreview.alert.drift-high
docreview.alert.breaker-open``. Check it afterwards with ``prefect automation ls``.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from uuid import UUID

from prefect.automations import Automation
from prefect.events.actions import SendNotification
from prefect.events.schemas.automations import EventTrigger, Posture

#: Name of the automation created by :func:`create_alert_automation`.
AUTOMATION_NAME = "docreview-alerts"
HIGH_RISK_AUTOMATION_NAME = "docreview-high-risk"
FAILED_AUTOMATION_NAME = "docreview-failed-documents"

#: Event names of :mod:`tasks.observe.events` (spelled out: this file runs without the project installed).
HIGH_RISK_EVENT = "docreview.finding.high-risk"
FAILED_EVENT = "docreview.document.failed"
MISCONFIGURED_EVENT = "docreview.run.misconfigured"
DEVIATION_EVENT = "docreview.playbook.deviation"
DEVIATION_AUTOMATION_NAME = "docreview-playbook-deviations"
DEVIATION_SUBJECT = "docreview: {{ event.payload.file_name }} deviates from rule {{ event.payload.rule }}"
DEVIATION_BODY = (
    "{{ event.payload.uri }}\nplaybook {{ event.payload.playbook }}, rule {{ event.payload.rule }} "
    "({{ event.payload.severity }}): {{ event.payload.reason }}\nfindings: {{ event.payload.finding_ids }}\n"
    "run {{ event.payload.run_id }}"
)
MISCONFIGURED_AUTOMATION_NAME = "docreview-misconfigured"
MISCONFIGURED_SUBJECT = "docreview: the API refused run {{ event.payload.run_id[:8] }}"
MISCONFIGURED_BODY = (
    "{{ event.payload.cause }}\nbackend {{ event.payload.backend }}, model {{ event.payload.model }}; "
    "{{ event.payload.documents_deferred }} document(s) deferred until the configuration is fixed "
    "(API key, model id, request schema)."
)

HIGH_RISK_SUBJECT = "docreview: {{ event.payload.count }} high-risk finding(s) in {{ event.payload.file_name }}"
HIGH_RISK_BODY = (
    "{{ event.payload.uri }}\n"
    "{% for f in event.payload.findings %}- {{ f.clause_label }} (page {{ f.page }}, {{ f.verdict }}): "
    "{{ f.summary }}\n{% endfor %}"
    "run {{ event.payload.run_id }}"
)
FAILED_SUBJECT = "docreview: {{ event.payload.file_name }} failed"
FAILED_BODY = (
    "{{ event.payload.uri }}\n{{ event.payload.failure_kind }}: {{ event.payload.reason }}\n"
    "run {{ event.payload.run_id }}"
)

#: Events the automation reacts to by default: every docreview alert.
ALERT_EVENTS = ("docreview.alert.*",)

SUBJECT = "docreview alert: {{ event.event }}"
BODY = (
    "{{ event.payload.message }}\n"
    "metric {{ event.payload.metric }} = {{ event.payload.value }} "
    "({{ event.payload.comparison }} threshold {{ event.payload.threshold }})\n"
    "run {{ event.payload.run_id }} ({{ event.resource.get('docreview.source', '') }}, "
    "model {{ event.resource.get('docreview.model', '') }})"
)


def alert_automation(
    block_document_id: UUID, events: tuple[str, ...] = ALERT_EVENTS, name: str = AUTOMATION_NAME
) -> Automation:
    """The automation (not yet created): notify through block ``block_document_id`` on each alert event.

    ``events`` are Prefect event-name patterns (``*`` wildcards allowed).
    """
    return Automation(
        name=name,
        description="Notify operators when a docreview run breaches an alert threshold.",
        trigger=EventTrigger(
            expect=set(events),
            match={"prefect.resource.id": "docreview.run.*"},
            posture=Posture.Reactive,
            threshold=1,
            within=timedelta(seconds=0),
        ),
        actions=[SendNotification(block_document_id=block_document_id, subject=SUBJECT, body=BODY)],
    )


def document_automation(block_document_id: UUID, kind: str) -> Automation:
    """The automation (not yet created) for ``kind`` ``high-risk``, ``failed``, ``misconfigured`` or
    ``playbook-deviation``: notify through
    block ``block_document_id`` on each such event (one per document and run). Raises
    ``ValueError`` for another ``kind``."""
    if kind == "high-risk":
        name, event, subject, body, what = (
            HIGH_RISK_AUTOMATION_NAME,
            HIGH_RISK_EVENT,
            HIGH_RISK_SUBJECT,
            HIGH_RISK_BODY,
            "has high-risk findings",
        )
    elif kind == "failed":
        name, event, subject, body, what = (
            FAILED_AUTOMATION_NAME,
            FAILED_EVENT,
            FAILED_SUBJECT,
            FAILED_BODY,
            "ends a run failed",
        )
    elif kind == "misconfigured":
        name, event, subject, body, what = (
            MISCONFIGURED_AUTOMATION_NAME,
            MISCONFIGURED_EVENT,
            MISCONFIGURED_SUBJECT,
            MISCONFIGURED_BODY,
            "run is stopped because the API refused its requests",
        )
    elif kind == "playbook-deviation":
        name, event, subject, body, what = (
            DEVIATION_AUTOMATION_NAME,
            DEVIATION_EVENT,
            DEVIATION_SUBJECT,
            DEVIATION_BODY,
            "deviates from a high-severity playbook rule",
        )
    else:
        raise ValueError(f"unknown kind {kind!r} (high-risk, failed, misconfigured or playbook-deviation)")
    return Automation(
        name=name,
        description=f"Notify {'operators when a' if kind == 'misconfigured' else 'reviewers when a document'} {what}.",
        trigger=EventTrigger(
            expect={event},
            match={"prefect.resource.id": "docreview.run.*" if kind == "misconfigured" else "docreview.document.*"},
            posture=Posture.Reactive,
            threshold=1,
            within=timedelta(seconds=0),
        ),
        actions=[SendNotification(block_document_id=block_document_id, subject=subject, body=body)],
    )


def _replace(automation: Automation) -> Automation:
    """Create ``automation``, replacing one of the same name."""
    try:
        Automation.read(name=automation.name).delete()
    except ValueError:
        pass  # none of that name yet
    return automation.create()


def create_automations(
    block: str, kinds: tuple[str, ...] = ("alerts", "high-risk", "failed", "misconfigured", "playbook-deviation")
) -> list[Automation]:
    """Create (or replace) the automations of ``kinds`` for the notification block ``block``
    (``block-type-slug/name``). Returns them. Raises ``ValueError`` when the block does not exist."""
    from prefect.blocks.core import Block

    block_id = Block.load(block)._block_document_id
    if block_id is None:  # pragma: no cover - a loaded block always has an id
        raise ValueError(f"block {block!r} has no id")
    return [
        _replace(alert_automation(block_id) if kind == "alerts" else document_automation(block_id, kind))
        for kind in kinds
    ]


def create_alert_automation(
    block: str, events: tuple[str, ...] = ALERT_EVENTS, name: str = AUTOMATION_NAME
) -> Automation:
    """Create the automation for the notification block ``block`` (``block-type-slug/name``),
    replacing an automation of the same name. Returns the created automation (with its id).

    Raises ``ValueError`` when the block does not exist (Prefect's ``Block.load``).
    """
    from prefect.blocks.core import Block

    notifier = Block.load(block)
    block_id = notifier._block_document_id
    if block_id is None:  # pragma: no cover - a loaded block always has an id
        raise ValueError(f"block {block!r} has no id")
    try:
        Automation.read(name=name).delete()
    except ValueError:
        pass  # no automation of that name yet
    return alert_automation(block_id, events, name).create()


def main() -> None:
    """Command line: ``python deployments/automations.py --block TYPE/NAME [--events …]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--block", required=True, help="notification block, e.g. slack-webhook/docreview-alerts")
    parser.add_argument("--events", nargs="+", default=list(ALERT_EVENTS), help="event name patterns")
    parser.add_argument("--name", default=AUTOMATION_NAME, help="name of the alerts automation")
    kinds = ["alerts", "high-risk", "failed", "misconfigured", "playbook-deviation"]
    parser.add_argument("--kind", nargs="+", choices=kinds, default=kinds, help="which automations to create")
    args = parser.parse_args()
    for kind in args.kind:
        if kind == "alerts":
            created = create_alert_automation(args.block, tuple(args.events), args.name)
        else:
            (created,) = create_automations(args.block, (kind,))
        expects = ", ".join(sorted(created.trigger.expect))
        print(f"Created automation {created.name!r} ({created.id}) for {expects}")


if __name__ == "__main__":
    main()
