"""Prefect automation: turn docreview alert events into a notification.

Every run ends with the ``evaluate-alerts`` task (:func:`tasks.monitoring.evaluate_alerts`),
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
    # create (or replace) the automation
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


def alert_automation(block_document_id: UUID, events: tuple[str, ...] = ALERT_EVENTS,
                     name: str = AUTOMATION_NAME) -> Automation:
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


def create_alert_automation(block: str, events: tuple[str, ...] = ALERT_EVENTS,
                            name: str = AUTOMATION_NAME) -> Automation:
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
    parser.add_argument("--name", default=AUTOMATION_NAME)
    args = parser.parse_args()
    created = create_alert_automation(args.block, tuple(args.events), args.name)
    print(f"Created automation {created.name!r} ({created.id}) for {', '.join(args.events)}")


if __name__ == "__main__":
    main()
