"""Deployments of the ``review-documents`` flow, ``docreview serve`` and the post-deploy check.

Two deployments (the same definitions as ``deployments/prefect.yaml``, which deploys them to a
process work pool):

- ``review-on-upload``: a deployment trigger on the ``docreview.document.received`` event that
  a watcher (``docreview watch``) emits once per new or changed object (key + ETag). **Batching**:
  the trigger is reactive with ``threshold: 1`` and ``within: W`` seconds, keyed per bucket or
  watched folder (``for_each: [docreview.bucket, docreview.folder]``, labels the watcher sets).
  Prefect fires a reactive trigger as soon as its threshold is met and then ignores matching
  events until the window ``W`` after the first event has passed
  (``prefect.server.events.triggers.evaluate``). The run is created ``schedule_after: W``
  seconds later and reviews the *folder* of the first object (``source`` templated as
  ``{{ event.resource.id.rsplit('/', 1)[0] }}/``), so every object of a burst that began in
  that window is already in the folder when the run lists it: one run per burst, however many
  objects it had. A later event opens a new window and a new run, which reuses every unchanged,
  already-reviewed document (sha256 ledger) and reviews only what is new, changed or deferred.
  Uploading the same object again (same key and ETag) starts nothing: the watcher emits no
  second event. Limit: objects that arrive in *another* folder of the same bucket within the
  window of a first event are not in that run; the next event for their folder or the nightly
  run reviews them (keep one folder per watched prefix, or watch each prefix separately).
- ``nightly-review``: a cron schedule (``DOCREVIEW_NIGHTLY_CRON``, default ``0 2 * * *``, in
  ``DOCREVIEW_NIGHTLY_TIMEZONE``, default ``UTC``) over ``DOCREVIEW_NIGHTLY_SOURCE``: the flow's
  default behaviour reviews new and changed documents, takes deferred ones first and reuses
  unchanged reviewed ones; ``DOCREVIEW_NIGHTLY_BATCH=true`` uses the Message Batches mode.

Each deployment carries its own resilience policy (``policy`` parameter,
:class:`schemas.policy.ResiliencePolicy`): the upload deployment fails fast and defers (a person
may be waiting; the nightly run retries), the nightly one retries longer.

:func:`check_deployments` reads the deployments and their automations back from the Prefect API
and reports what would make an event-triggered run start with an empty ``source`` (a known
failure: some Prefect releases dropped templated trigger parameters at deploy time, PrefectHQ/prefect
#19501, fixed by #19504), rendering each trigger's ``source`` against a sample event.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.policy import ResiliencePolicy
from schemas.settings import database_url_parameter

#: The watcher's event (:data:`tasks.observe.events.DOCUMENT_RECEIVED`; spelled out here so the CLI starts
#: without importing Prefect).
DOCUMENT_RECEIVED = "docreview.document.received"

FLOW_NAME = "review-documents"
UPLOAD_DEPLOYMENT = "review-on-upload"
NIGHTLY_DEPLOYMENT = "nightly-review"
WORK_POOL = "docreview-process"

#: The folder of the object the event is about, with a trailing ``/`` (a folder, never an exact key):
#: ``s3://bucket/inbox/a.pdf`` → ``s3://bucket/inbox/``, ``file:///srv/inbox/a.pdf`` → ``file:///srv/inbox/``.
SOURCE_TEMPLATE = "{{ event.resource.id.rsplit('/', 1)[0] }}/"

#: A sample event for rendering trigger templates in :func:`check_deployments`.
SAMPLE_EVENT = {
    "event": DOCUMENT_RECEIVED,
    "resource": {"prefect.resource.id": "s3://example-bucket/inbox/contract.pdf", "docreview.bucket": "example-bucket"},
    "payload": {
        "uri": "s3://example-bucket/inbox/contract.pdf",
        "bucket": "example-bucket",
        "key": "inbox/contract.pdf",
        "etag": "0" * 32,
        "size_bytes": 1,
    },
}

#: Resilience policy of event-triggered runs: few attempts, defer while the API is down.
UPLOAD_POLICY = ResiliencePolicy(attempts=3, backoff_cap_s=30.0, on_open="defer")
#: Resilience policy of the nightly run: more patience, reuse stored reviews while the breaker is open.
NIGHTLY_POLICY = ResiliencePolicy(attempts=6, backoff_cap_s=120.0, on_open="cached")


class DeploySettings(BaseSettings):
    """Deployment settings (environment, prefix ``DOCREVIEW_``). Times are seconds.

    - ``nightly_cron`` / ``nightly_timezone``: the nightly schedule (cron syntax, an IANA zone).
    - ``nightly_source``: folder or ``s3://`` URI the nightly run reviews.
    - ``nightly_batch``: nightly run in Message Batches mode (anthropic backend only).
    - ``batch_window_s``: the upload trigger's window ``W`` (see the module docstring).
    - ``out_dir``: the report folder of deployment runs.
    - ``backend``: the flow's ``backend`` parameter for both deployments.
    - ``playbook``: the flow's ``playbook`` parameter for both (a playbook file on the workers;
      unset: the runs read ``DOCREVIEW_PLAYBOOK`` from the worker's environment, if any).
    """

    model_config = SettingsConfigDict(env_prefix="DOCREVIEW_", extra="ignore")

    nightly_cron: str = "0 2 * * *"
    nightly_timezone: str = "UTC"
    nightly_source: str = "inbox"
    nightly_batch: bool = False
    batch_window_s: float = Field(30.0, ge=0, le=3600)
    out_dir: str = "out"
    backend: str = "auto"
    playbook: str | None = None

    @field_validator("nightly_timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (use an IANA name such as Europe/Berlin)") from None
        return value


def schedule_settings() -> dict[str, str]:
    """A ``prefect.yaml`` build step: ``{"cron", "timezone", "source", "out_dir"}`` from
    :class:`DeploySettings` (environment with defaults), used as ``{{ nightly.cron }}`` and so on,
    since ``prefect deploy`` has no default for an unset ``{{ $VAR }}``. Raises pydantic's
    ``ValidationError`` for an unknown time zone."""
    s = DeploySettings()
    return {"cron": s.nightly_cron, "timezone": s.nightly_timezone, "source": s.nightly_source, "out_dir": s.out_dir}


def upload_trigger(window_s: float = 30.0, enabled: bool = True) -> Any:
    """The ``review-on-upload`` trigger (see the module docstring for how it batches).

    Returns a :class:`prefect.events.DeploymentEventTrigger`; ``window_s`` is ``within`` and
    ``schedule_after``, seconds (0 = a run per event, no batching).
    """
    from prefect.events import DeploymentEventTrigger

    return DeploymentEventTrigger(
        name=f"{UPLOAD_DEPLOYMENT}-trigger",
        description="Review the folder of a newly received document, once per burst of uploads.",
        enabled=enabled,
        expect={DOCUMENT_RECEIVED},
        match={"prefect.resource.id": ["s3://*", "file://*"]},
        for_each={"docreview.bucket", "docreview.folder"},
        posture="Reactive",
        threshold=1,
        within=timedelta(seconds=window_s),
        schedule_after=timedelta(seconds=window_s),
        parameters={"source": SOURCE_TEMPLATE},
    )


def build_deployments(
    settings: DeploySettings | None = None, endpoint_url: str | None = None, database_url: str | None = None
) -> list[Any]:
    """The two deployments as :class:`prefect.deployments.runner.RunnerDeployment` (for
    :func:`serve` or ``.apply()``), with tags ``docreview`` and
    ``upload`` / ``nightly`` (each run adds ``trigger:<kind>``, :func:`tasks.observe.events.tag_flow_run`).

    ``endpoint_url`` (S3-compatible endpoint) and ``database_url`` become parameters when given; a
    ``database_url`` password is masked there (:func:`schemas.settings.database_url_parameter`), and the
    runs find the URL in ``DOCREVIEW_DATABASE_URL`` of the process that runs them.
    """
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.deployments.runner import EntrypointType

    from flows.review import review_documents

    s = settings or DeploySettings()
    common: dict[str, Any] = {"out_dir": s.out_dir, "backend": s.backend}
    if endpoint_url:
        common["endpoint_url"] = endpoint_url
    if database_url:  # a password stays out of the stored parameters: masked, completed from the environment
        common["database_url"] = database_url_parameter(database_url)
    if s.playbook:
        common["playbook"] = s.playbook
    upload = review_documents.to_deployment(
        name=UPLOAD_DEPLOYMENT,
        description="Review newly uploaded documents (triggered by docreview.document.received).",
        tags=["docreview", "upload"],
        parameters={**common, "policy": UPLOAD_POLICY.model_dump()},
        triggers=[upload_trigger(s.batch_window_s)],
        entrypoint_type=EntrypointType.MODULE_PATH,  # flows.review.review_documents: any working folder
    )
    nightly = review_documents.to_deployment(
        name=NIGHTLY_DEPLOYMENT,
        description="Nightly review: new, changed and deferred documents; unchanged reviewed ones are reused.",
        tags=["docreview", "nightly"],
        parameters={
            **common,
            "source": s.nightly_source,
            "batch": s.nightly_batch,
            "policy": NIGHTLY_POLICY.model_dump(),
        },
        schedules=[CronSchedule(cron=s.nightly_cron, timezone=s.nightly_timezone)],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    return [upload, nightly]


@dataclass
class CheckResult:
    """What :func:`check_deployments` found: ``problems`` (empty = all good) and, per
    deployment, a one-line description of what was read back (``details``)."""

    problems: list[str]
    details: dict[str, str]

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def render_source(template: Any, event: dict[str, Any] | None = None) -> str:
    """Render a trigger's ``source`` parameter the way the Prefect server does (Prefect's
    sandboxed Jinja environment, undefined names render empty) against ``event`` (default
    :data:`SAMPLE_EVENT`). Returns the rendered string."""
    from prefect.events.schemas.events import ReceivedEvent
    from prefect.server.utilities.user_templates import render_user_template_sync
    from prefect.types._datetime import now

    sample = ReceivedEvent.model_validate({"occurred": now("UTC"), "received": now("UTC"), **(event or SAMPLE_EVENT)})
    return str(render_user_template_sync(str(template), {"event": sample}))


def _describe_trigger(trigger: Any) -> str:
    return (
        f"expects {sorted(getattr(trigger, 'expect', []) or [])}, threshold {getattr(trigger, 'threshold', '?')} "
        f"within {getattr(trigger, 'within', '?')}, for_each {sorted(getattr(trigger, 'for_each', []) or [])}"
    )


def check_deployments(
    client: Any = None, flow_name: str = FLOW_NAME, upload: str = UPLOAD_DEPLOYMENT, nightly: str = NIGHTLY_DEPLOYMENT
) -> CheckResult:
    """Read both deployments and their automations back from the Prefect API (``PREFECT_API_URL``)
    and check them. ``client`` is a sync Prefect client (default: a new one). Problems found:

    - a deployment missing, or its required ``source`` neither a default nor a trigger parameter;
    - ``review-on-upload``: no enabled automation expecting ``docreview.document.received``; an
      automation whose run-deployment action has no ``source`` parameter, an empty one, one that
      is not templated from the event, or one that renders (against :data:`SAMPLE_EVENT`) to an
      empty string or to text still holding ``{{``;
    - ``nightly-review``: no active schedule.

    Never raises for a problem in the deployments (they are returned); raises Prefect's
    connection errors when the API cannot be reached.
    """
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    problems: list[str] = []
    details: dict[str, str] = {}
    owned = client is None
    client = client or get_client(sync_client=True)
    try:
        if owned:
            client.__enter__()
        deployments = {}
        for name in (upload, nightly):
            try:
                deployments[name] = client.read_deployment_by_name(f"{flow_name}/{name}")
            except ObjectNotFound:
                problems.append(f"deployment {flow_name}/{name} does not exist")
        if upload in deployments:
            dep = deployments[upload]
            automations = [
                a
                for a in client.read_resource_related_automations(f"prefect.deployment.{dep.id}")
                if DOCUMENT_RECEIVED in (getattr(a.trigger, "expect", None) or set())
            ]
            enabled = [a for a in automations if a.enabled]
            if not enabled:
                problems.append(f"{upload}: no enabled automation triggers it on {DOCUMENT_RECEIVED}")
            for automation in enabled:
                actions = [
                    a
                    for a in automation.actions
                    if getattr(a, "type", "") == "run-deployment"
                    and getattr(a, "deployment_id", None) in (None, dep.id)
                ]
                if not actions:
                    problems.append(f"{upload}: automation {automation.name!r} has no run-deployment action")
                for action in actions:
                    problems += _check_source_parameter(upload, automation.name, action.parameters, dep.parameters)
                details[upload] = (
                    f"automation {automation.name!r}: {_describe_trigger(automation.trigger)}; "
                    f"source {(actions[0].parameters or {}).get('source')!r}"
                    if actions
                    else ""
                )
        if nightly in deployments:
            dep = deployments[nightly]
            if not str((dep.parameters or {}).get("source") or "").strip():
                problems.append(f"{nightly}: parameter 'source' is empty")
            active = [s for s in (dep.schedules or []) if s.active]
            if not active:
                problems.append(f"{nightly}: no active schedule")
            details[nightly] = (
                "; ".join(
                    f"cron {getattr(s.schedule, 'cron', s.schedule)!s} ({getattr(s.schedule, 'timezone', None) or 'UTC'})"
                    for s in active
                )
                + f"; source {(dep.parameters or {}).get('source')!r}"
            )
    finally:
        if owned:
            client.__exit__(None, None, None)
    return CheckResult(problems=problems, details=details)


def _check_source_parameter(
    deployment: str, automation: str, parameters: dict[str, Any] | None, defaults: dict[str, Any] | None
) -> list[str]:
    """Problems with the ``source`` a trigger passes (see :func:`check_deployments`)."""
    where = f"{deployment}: automation {automation!r}"
    source = (parameters or {}).get("source")
    if source is None:
        default_source = (defaults or {}).get("source")
        if str(default_source or "").strip():
            return [
                f"{where} passes no 'source': every run would review the default "
                f"{default_source!r}, not the uploaded object's folder"
            ]
        return [f"{where} passes no parameters (no 'source'): triggered runs would fail for lack of a source"]
    if isinstance(source, dict):  # already in Prefect's {"__prefect_kind": "jinja", "template": ...} form
        source = source.get("template") or (source.get("value") or {}).get("template") or ""
    if not str(source).strip():
        return [f"{where} passes an empty 'source'"]
    if "event." not in str(source):
        return [f"{where} passes a fixed 'source' {source!r}: not templated from the event"]
    try:
        rendered = render_source(source)
    except Exception as exc:
        return [f"{where}: 'source' template {source!r} does not render: {exc}"]
    if not rendered.strip() or rendered.strip() == "/" or "{{" in rendered:
        return [f"{where}: 'source' template {source!r} renders to {rendered!r} for a sample event"]
    return []


def serve(
    deployments: list[Any], check: bool = True, limit: int | None = None, on_ready: Any = None
) -> CheckResult | None:
    """Register ``deployments`` with the Prefect API, check them (:func:`check_deployments`,
    when ``check``) and serve them in this process until Ctrl-C or SIGTERM (a Prefect
    :class:`~prefect.runner.Runner`: flow runs execute as subprocesses, at most ``limit`` at a
    time; schedules are paused on shutdown so no nightly run queues up with nobody serving it).
    ``limit=None`` passes no limit, so Prefect's own ``PREFECT_RUNNER_PROCESS_LIMIT`` applies
    (``Runner(limit=None)`` would mean "no limit at all").

    ``on_ready(result)`` is called once registered and checked (``None`` when not checked).
    Returns the check result when the check failed (nothing is served then), else ``None``
    after a clean stop.
    """
    from prefect.runner import Runner

    options: dict[str, Any] = {"limit": limit} if limit is not None else {}
    runner = Runner(name="docreview-serve", pause_on_shutdown=True, **options)
    for deployment in deployments:
        runner.add_deployment(deployment)
    result = check_deployments() if check else None
    if result is not None and not result.ok:
        return result
    if on_ready is not None:
        on_ready(result)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "a coroutine run by asyncio.run is a task"

        def stop(sig: signal.Signals) -> None:
            # Cancel the runner so it shuts down through its own exit path (pausing the schedules)
            # instead of a KeyboardInterrupt landing at an arbitrary await; a second Ctrl-C falls back
            # to Python's default handling.
            if sig == signal.SIGINT:
                loop.remove_signal_handler(signal.SIGINT)
            task.cancel()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop, sig)
        try:
            await runner.start()
        except asyncio.CancelledError:
            pass

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    return None


# --- command line: docreview serve, docreview deployments check -----------------------------
