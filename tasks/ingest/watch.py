"""Bucket and folder watcher: one Prefect event per new or changed document.

``docreview watch s3://bucket/prefix`` polls the prefix (``ListObjectsV2``, see
:mod:`tasks.ingest.s3`); ``docreview watch ./inbox`` follows a local folder with watchdog
(inotify on Linux) plus a periodic sweep as a safety net. Every object version seen for the
first time (new key, or a new ETag after an overwrite) emits exactly one Prefect event::

    event    docreview.document.received
    resource {"prefect.resource.id": "s3://bucket/key",  # or file:///abs/path for a local file
              "prefect.resource.name": "key", "docreview.bucket": "bucket"}   # local: docreview.folder
    payload  {"uri", "bucket", "key", "etag", "size_bytes"}                 # local: bucket None, key = path

The resource id is exactly the URI ``docreview review`` accepts, so a deployment trigger can
pass ``{{ event.resource.id }}`` as the flow's ``source``.

Cursor and delivery guarantee
-----------------------------
The cursor is the ``watched_objects`` table (natural key ``(uri, etag)``). The watcher first
*inserts* the row (insert-or-ignore: the insert is the idempotency check, so two watchers on
the same bucket, duplicate notifications and repeated sweeps emit nothing twice), then emits
the event, then sets ``emitted_at`` (in batches of :data:`MARK_EVERY`). A row whose emit
failed, or whose watcher died between insert and emit, keeps ``emitted_at`` NULL and is emitted
again by a later sweep once it is older than ``retry_after_s`` (default 30 s). Delivery is
therefore **at least once** as far as the watcher goes: an event may repeat after a crash
between emit and mark; a failed emit is never forgotten. Repeats are harmless: the event id is
a UUID derived from ``(uri, etag)`` (consumers can drop repeats), and a review of an unchanged
document reuses its stored findings (sha256 ledger).

``emit_event`` hands the event to Prefect's events worker, which sends it to the API over a
websocket in the background; the watcher drains that worker before it exits (``--once``,
Ctrl+C, SIGTERM). An event still queued in that worker when the process is killed outright is
lost; the nightly run, which lists the whole prefix, reviews such an object. With no
``PREFECT_API_URL`` configured, Prefect would send events to a throwaway in-process server that
no deployment listens to: the watcher then warns once and leaves rows un-emitted, so they are
emitted as soon as it runs with an API.

These are plain functions, not Prefect tasks: a watcher sweeping every few seconds would
otherwise flood the API with task runs.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote as url_quote
from urllib.parse import unquote, urlparse

from sqlmodel import Session, col, select

from schemas.documents import SourceObject
from schemas.tables import WatchedObjectRow, utcnow
from tasks.ingest.kinds import DEFAULT_SUFFIXES, name_wanted
from tasks.ingest.local import SourceError
from tasks.store.persist import get_engine, upsert

#: Name of the event emitted for each new or changed document.
EVENT_NAME = "docreview.document.received"
#: Namespace of the deterministic event ids (uuid5 over ``uri \x1f etag``).
EVENT_ID_NAMESPACE = uuid.UUID("5d0c6a52-6f0e-4c57-9a3e-2f2f0b1e7d41")
_IN_CHUNK = 500  # uris per SELECT … IN (…) and rows per INSERT
#: Emitted rows are marked in batches of this many (a crash repeats at most this many events).
MARK_EVERY = 50

logger = logging.getLogger("docreview.watch")
_warned_no_api = False
_warn_lock = threading.Lock()

#: ``report(kind, obj_or_message)`` callback; kinds: ``emitted``, ``emit_failed``, ``error``.
Reporter = Callable[[str, Any], None]


# --- events ------------------------------------------------------------------------------


def event_destination() -> str | None:
    """The Prefect API URL events are delivered to, or None when ``PREFECT_API_URL`` is unset."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    return str(url) if url else None


def no_api_warning() -> str | None:
    """The one-time warning text when no Prefect API is configured, else None. Calling it
    counts as having warned (the watcher's terminal shows it instead of the log)."""
    global _warned_no_api
    if event_destination():
        return None
    with _warn_lock:
        _warned_no_api = True
    return (
        "PREFECT_API_URL is not set: events cannot reach a Prefect server, so no deployment would see "
        "them. Objects are recorded and their events are sent once the watcher runs with PREFECT_API_URL "
        "set (e.g. `prefect server start`, then PREFECT_API_URL=http://127.0.0.1:4200/api)."
    )


def event_id(uri: str, etag: str) -> uuid.UUID:
    """Deterministic event id of one object version (same uri and etag → same id)."""
    return uuid.uuid5(EVENT_ID_NAMESPACE, f"{uri}\x1f{etag}")


def event_parts(obj: SourceObject) -> tuple[dict[str, str], dict[str, Any]]:
    """``(resource, payload)`` of the ``docreview.document.received`` event for ``obj``."""
    if obj.is_s3:
        bucket, _, key = obj.uri[len("s3://") :].partition("/")
        resource = {"prefect.resource.id": obj.uri, "prefect.resource.name": key, "docreview.bucket": bucket}
    else:
        bucket, key = None, obj.local_path
        resource = {
            "prefect.resource.id": obj.uri,
            "prefect.resource.name": obj.name,
            "docreview.folder": str(Path(obj.local_path).parent),
        }
    payload = {"uri": obj.uri, "bucket": bucket, "key": key, "etag": obj.etag, "size_bytes": obj.size_bytes}
    return resource, payload


def emit_document_received(obj: SourceObject) -> bool:
    """Emit ``docreview.document.received`` for ``obj`` (see the module docstring for its shape).

    Returns True when Prefect accepted the event for delivery, False when it was not sent (no
    ``PREFECT_API_URL`` configured, warned once; or Prefect refused it). Never raises for a
    delivery problem; the caller keeps the object pending and tries again later.
    """
    global _warned_no_api
    from prefect.events import emit_event

    if not event_destination():
        with _warn_lock:
            first, _warned_no_api = not _warned_no_api, True
        if first:
            logger.warning("PREFECT_API_URL is not set: docreview.document.received events are not sent")
        return False
    resource, payload = event_parts(obj)
    try:
        sent = emit_event(EVENT_NAME, resource=resource, payload=payload, id=event_id(obj.uri, obj.etag or ""))
    except Exception as exc:
        logger.warning("event for %s not sent: %s", obj.uri, type(exc).__name__)
        return False
    return sent is not None


def flush_events(timeout_s: float = 10.0) -> None:
    """Wait (at most ``timeout_s`` seconds) until Prefect's events worker has sent what it holds."""
    from prefect.events.worker import EventsWorker

    done = threading.Event()

    def drain() -> None:
        try:
            EventsWorker.drain_all(timeout=timeout_s)
        except Exception:
            logger.debug("events worker drain failed", exc_info=True)
        finally:
            done.set()

    threading.Thread(target=drain, daemon=True).start()
    done.wait(timeout_s + 1)


# --- cursor -------------------------------------------------------------------------------


def claim(database_url: str, objects: list[SourceObject]) -> list[SourceObject]:
    """Record ``objects`` in the ``watched_objects`` cursor; return those not seen before.

    Insert-or-ignore on ``(uri, etag)``: an object version already recorded (by this or
    another watcher) is not returned, so its event is emitted by whoever inserted it.
    """
    if not objects:
        return []
    engine = get_engine(database_url)
    known: set[tuple[str, str]] = set()
    uris = sorted({o.uri for o in objects})
    with Session(engine) as session:
        for i in range(0, len(uris), _IN_CHUNK):
            rows = session.exec(
                select(WatchedObjectRow.uri, WatchedObjectRow.etag).where(
                    col(WatchedObjectRow.uri).in_(uris[i : i + _IN_CHUNK])
                )
            ).all()
            known.update((u, e) for u, e in rows)
    unseen: dict[tuple[str, str], SourceObject] = {}
    for obj in objects:
        unseen.setdefault((obj.uri, obj.etag or ""), obj)
    for k in known:
        unseen.pop(k, None)
    if not unseen:
        return []
    from sqlalchemy.dialects import postgresql, sqlite

    table = WatchedObjectRow.__table__  # type: ignore[attr-defined]
    inserted: set[tuple[str, str]] = set()
    items = list(unseen.items())
    with Session(engine) as session:
        dialect = sqlite if session.get_bind().dialect.name == "sqlite" else postgresql
        for i in range(0, len(items), _IN_CHUNK):
            now = utcnow()
            values = [
                dict(uri=uri, etag=etag, size_bytes=o.size_bytes, first_seen_at=now)
                for (uri, etag), o in items[i : i + _IN_CHUNK]
            ]
            # INSERT … ON CONFLICT DO NOTHING RETURNING: only the rows this call inserted come back
            stmt = dialect.insert(table).values(values).on_conflict_do_nothing(index_elements=["uri", "etag"])
            inserted.update((u, e) for u, e in session.execute(stmt.returning(table.c.uri, table.c.etag)).all())
            session.commit()
    fresh = [o for k, o in items if k in inserted]
    return fresh


def pending(database_url: str, root_uri: str, older_than_s: float) -> list[SourceObject]:
    """Recorded object versions under ``root_uri`` whose event was never handed to Prefect and
    that were first seen more than ``older_than_s`` seconds ago (a failed emit, a dead watcher)."""
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    with Session(get_engine(database_url)) as session:
        rows = session.exec(select(WatchedObjectRow).where(WatchedObjectRow.emitted_at.is_(None))).all()  # type: ignore[union-attr]
    out = []
    for row in rows:
        seen = row.first_seen_at if row.first_seen_at.tzinfo else row.first_seen_at.replace(tzinfo=UTC)
        if row.uri.startswith(root_uri) and seen <= cutoff:
            out.append(_object_from_uri(row.uri, row.etag, row.size_bytes))
    return out


def mark_emitted(database_url: str, objects: list[SourceObject]) -> None:
    """Set ``emitted_at`` of the cursor rows of ``objects`` (their events were handed to Prefect)."""
    if not objects:
        return
    now = utcnow()
    with Session(get_engine(database_url)) as session:
        upsert(
            session,
            WatchedObjectRow,
            [
                dict(uri=o.uri, etag=o.etag or "", size_bytes=o.size_bytes, first_seen_at=now, emitted_at=now)
                for o in objects
            ],
            keys=["uri", "etag"],
            update=["emitted_at"],
        )
        session.commit()


def _object_from_uri(uri: str, etag: str, size_bytes: int) -> SourceObject:
    if uri.startswith("s3://"):
        key = uri[len("s3://") :].partition("/")[2]
        from tasks.ingest.s3 import display_name

        return SourceObject(uri=uri, name=display_name(key), local_path="", size_bytes=size_bytes, etag=etag)
    path = file_uri_path(uri)
    return SourceObject(uri=uri, name=Path(path).name, local_path=path, size_bytes=size_bytes, etag=etag)


# --- listing ------------------------------------------------------------------------------


def file_uri(path: Path) -> str:
    """``file://`` URI of an absolute path (percent-encoded, RFC 8089)."""
    return "file://" + url_quote(str(path), safe="/")


def file_uri_path(uri: str) -> str:
    """The path of a ``file://`` URI."""
    return unquote(urlparse(uri).path)


def local_object(path: Path) -> SourceObject | None:
    """A :class:`SourceObject` for a local file (uri ``file:///abs/path``, "etag"
    ``<size>-<mtime ns>``), or None when it is gone or not a regular file."""
    try:
        st = path.stat()
    except OSError:
        return None
    if not path.is_file():
        return None
    resolved = path.resolve()
    return SourceObject(
        uri=file_uri(resolved),
        name=path.name,
        local_path=str(resolved),
        size_bytes=st.st_size,
        etag=f"{st.st_size}-{st.st_mtime_ns}",
    )


def _wanted(root: Path, path: Path, suffix: str) -> bool:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    if any(part.startswith(".") for part in rel.parts):
        return False
    return name_wanted(path.name, suffix)


def list_local_folder(root: Path, suffix: str, settle_s: float) -> list[SourceObject]:
    """Regular, non-hidden files under ``root`` ending in ``suffix``, unchanged for
    ``settle_s`` seconds (a file still being written is left for a later sweep)."""
    now = time.time()
    out = []
    for path in sorted(root.rglob("*")):
        if not _wanted(root, path, suffix):
            continue
        obj = local_object(path)
        if obj is not None and now - int(obj.etag.split("-")[1]) / 1e9 >= settle_s:  # type: ignore[union-attr]
            out.append(obj)
    return out


# --- sweeps and loops ---------------------------------------------------------------------


@dataclass
class WatchTarget:
    """What a watcher follows: ``s3://bucket/prefix`` or a local folder (path or ``file://``).

    ``suffix`` filters keys/names (comma-separated endings, case-insensitive, default every kind read; ``""`` = all);
    ``settle_s`` is how long a local file must be unchanged before it counts (seconds).
    """

    source: str
    database_url: str
    endpoint_url: str | None = None
    suffix: str = DEFAULT_SUFFIXES
    settle_s: float = 2.0
    retry_after_s: float = 30.0
    stats: dict[str, int] = field(default_factory=lambda: {"listed": 0, "emitted": 0, "emit_failed": 0})

    @property
    def is_s3(self) -> bool:
        """True for an ``s3://`` source."""
        return self.source.startswith("s3://")

    def root(self) -> Path:
        """The local folder (resolved). Raises :class:`SourceError` when it is not a folder."""
        raw = file_uri_path(self.source) if self.source.startswith("file://") else self.source
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            raise SourceError(f"not a folder: {self.source}")
        return path

    def root_uri(self) -> str:
        """URI prefix of every object under this target (for the pending-row scan)."""
        if self.is_s3:
            return self.source
        return file_uri(self.root()).rstrip("/") + "/"

    def list_objects(self) -> list[SourceObject]:
        """Current objects of the target. Raises :class:`SourceError` if it cannot be listed."""
        if self.is_s3:
            from tasks.ingest.s3 import display_name, list_s3_keys, resolve_endpoint, s3_uri

            endpoint = resolve_endpoint(self.endpoint_url)
            bucket, found = list_s3_keys(self.source, endpoint, self.suffix)
            return [
                SourceObject(
                    uri=s3_uri(bucket, k),
                    name=display_name(k),
                    local_path="",
                    size_bytes=size,
                    etag=etag,
                    endpoint_url=endpoint,
                )
                for k, size, etag in found
            ]
        return list_local_folder(self.root(), self.suffix, self.settle_s)


def announce(target: WatchTarget, objects: list[SourceObject], report: Reporter | None = None) -> int:
    """Claim ``objects`` in the cursor, emit one event per newly claimed one (plus retries of
    pending ones), mark them emitted (every :data:`MARK_EVERY` events and at the end). Returns
    the number of events emitted."""
    db = target.database_url
    fresh = claim(db, objects)
    seen = {(o.uri, o.etag) for o in fresh}
    retry = [o for o in pending(db, target.root_uri(), target.retry_after_s) if (o.uri, o.etag) not in seen]
    emitted, done = 0, []
    for obj in fresh + retry:
        if emit_document_received(obj):
            done.append(obj)
            emitted += 1
            target.stats["emitted"] += 1
            if report:
                report("emitted", obj)
        else:
            target.stats["emit_failed"] += 1
            if report:
                report("emit_failed", obj)
        if len(done) >= MARK_EVERY:
            mark_emitted(db, done)
            done = []
    mark_emitted(db, done)
    return emitted


def sweep(target: WatchTarget, report: Reporter | None = None) -> int:
    """List the target once and announce what is new. Returns the number of events emitted.
    Raises :class:`SourceError` when the target cannot be listed."""
    objects = target.list_objects()
    target.stats["listed"] = len(objects)
    return announce(target, objects, report)


def watch_s3(target: WatchTarget, interval_s: float, stop: threading.Event, report: Reporter | None = None) -> None:
    """Sweep ``target`` every ``interval_s`` seconds until ``stop`` is set. A listing error is
    reported (``error``) and retried at the next interval; it never ends the watcher."""
    while not stop.is_set():
        try:
            sweep(target, report)
        except SourceError as exc:
            if report:
                report("error", str(exc))
        stop.wait(interval_s)


def watch_folder(
    target: WatchTarget,
    interval_s: float,
    stop: threading.Event,
    report: Reporter | None = None,
    ready: threading.Event | None = None,
) -> None:
    """Follow a local folder with watchdog until ``stop`` is set.

    File-system events (created, modified, moved in) mark a path; once it has been quiet for
    ``target.settle_s`` seconds it is announced. A full sweep runs at start and every
    ``interval_s`` seconds (watchdog can drop events when the kernel queue overflows). ``ready``
    is set once the observer is running.
    """
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    root = target.root()
    touched: queue.Queue[str] = queue.Queue()

    class _Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.is_directory or event.event_type in ("deleted", "opened", "closed_no_write"):
                return
            dest = getattr(event, "dest_path", "") or event.src_path
            touched.put(os.fsdecode(dest))

    observer = Observer()
    observer.schedule(_Handler(), str(root), recursive=True)
    observer.start()
    try:
        if ready is not None:
            ready.set()
        quiet: dict[str, float] = {}  # path -> monotonic time of its last event
        next_sweep = 0.0
        while not stop.is_set():
            now = time.monotonic()
            if now >= next_sweep:
                try:
                    sweep(target, report)
                except SourceError as exc:
                    if report:
                        report("error", str(exc))
                next_sweep = now + interval_s
            while True:
                try:
                    quiet[touched.get_nowait()] = time.monotonic()
                except queue.Empty:
                    break
            due = [p for p, t in quiet.items() if time.monotonic() - t >= target.settle_s]
            ready_objs = []
            for p in due:
                del quiet[p]
                path = Path(p)
                if _wanted(root, path, target.suffix):
                    obj = local_object(path)
                    if obj is not None:
                        ready_objs.append(obj)
            if ready_objs:
                announce(target, ready_objs, report)
            stop.wait(min(0.2, max(0.05, target.settle_s / 4)))
    finally:
        observer.stop()
        observer.join(timeout=5)


# --- S3 event notifications through SQS --------------------------------------------------------


def parse_s3_notification(body: str) -> list[tuple[str, str, str, int]]:
    """Created objects in one SQS message body: ``[(bucket, key, etag, size in bytes), ...]``.

    Understands S3 event notifications (``{"Records": [...]}``, keys URL-encoded with ``+`` for
    spaces; https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html),
    the same wrapped in an SNS envelope (``{"Type": "Notification", "Message": "..."}``), and
    EventBridge "Object Created" events (``{"detail": {"bucket": ..., "object": ...}}``). Test
    events, removals and unreadable bodies give ``[]``.
    """
    import json
    from urllib.parse import unquote_plus

    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return []
    if isinstance(data, dict) and data.get("Type") == "Notification" and isinstance(data.get("Message"), str):
        return parse_s3_notification(data["Message"])
    out: list[tuple[str, str, str, int]] = []
    if not isinstance(data, dict):
        return out
    for rec in data.get("Records") or []:
        if not isinstance(rec, dict) or not str(rec.get("eventName", "")).startswith("ObjectCreated:"):
            continue
        s3 = rec.get("s3") or {}
        obj = s3.get("object") or {}
        bucket = (s3.get("bucket") or {}).get("name")
        if bucket and obj.get("key") is not None:
            out.append(
                (
                    bucket,
                    unquote_plus(obj["key"]),
                    str(obj.get("eTag") or obj.get("sequencer") or ""),
                    int(obj.get("size") or 0),
                )
            )
    detail = data.get("detail")
    if data.get("detail-type") == "Object Created" and isinstance(detail, dict):
        bucket = (detail.get("bucket") or {}).get("name")
        obj = detail.get("object") or {}
        if bucket and obj.get("key") is not None:
            out.append(
                (bucket, str(obj["key"]), str(obj.get("etag") or obj.get("sequencer") or ""), int(obj.get("size") or 0))
            )
    return out


def sqs_client(queue_url: str) -> Any:
    """A boto3 SQS client for ``queue_url``: endpoint and region taken from the URL (AWS
    ``https://sqs.<region>.amazonaws.com/...`` or any SQS-compatible host), timeouts and
    ``standard`` retries as for S3 (:class:`tasks.ingest.s3.S3Settings`); long polls get a read
    timeout above their wait."""
    import boto3
    from botocore.config import Config

    from tasks.ingest.s3 import S3Settings

    url = urlparse(queue_url)
    parts = url.netloc.split(".")
    region = parts[1] if len(parts) > 3 and parts[0] == "sqs" and url.netloc.endswith("amazonaws.com") else None
    cfg = S3Settings()
    config = Config(
        connect_timeout=cfg.connect_timeout_s,
        read_timeout=max(cfg.read_timeout_s, 30.0),
        retries={"max_attempts": cfg.max_attempts, "mode": "standard"},
        user_agent_extra="docreview",
    )
    return boto3.session.Session().client(
        "sqs", endpoint_url=f"{url.scheme}://{url.netloc}", region_name=region, config=config
    )


def _in_target(target: WatchTarget, bucket: str, key: str) -> bool:
    from tasks.ingest.s3 import parse_s3_uri

    want_bucket, path = parse_s3_uri(target.source)
    if bucket != want_bucket:
        return False
    if path and key != path and not key.startswith(path if path.endswith("/") else path + "/"):
        return False
    rel = key[len(path) :] if path else key
    if key.endswith("/") or any(p.startswith(".") and p not in (".", "..") for p in rel.split("/") if p):
        return False
    return key == path or name_wanted(key, target.suffix)


def receive_notifications(
    target: WatchTarget, client: Any, queue_url: str, wait_s: int = 20, report: Reporter | None = None
) -> int:
    """One long poll of the queue (up to 10 messages, ``wait_s`` seconds): announce the created
    objects under ``target`` and delete the messages. Returns the number of messages handled.

    A message is deleted only after its objects are recorded in the cursor (durable), so the
    cursor's pending retry, not SQS redelivery, guarantees the event; a message that fails
    before that is redelivered by SQS after its visibility timeout.
    """
    from tasks.ingest.s3 import display_name, resolve_endpoint, s3_uri

    resp = client.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_s)
    messages = resp.get("Messages", [])
    if not messages:
        announce(target, [], report)  # still retry pending rows
        return 0
    endpoint = resolve_endpoint(target.endpoint_url)
    objects = []
    for msg in messages:
        for bucket, key, etag, size in parse_s3_notification(msg.get("Body", "")):
            if _in_target(target, bucket, key):
                objects.append(
                    SourceObject(
                        uri=s3_uri(bucket, key),
                        name=display_name(key),
                        local_path="",
                        size_bytes=size,
                        etag=etag.strip('"'),
                        endpoint_url=endpoint,
                    )
                )
    announce(target, objects, report)
    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
    client.delete_message_batch(QueueUrl=queue_url, Entries=entries)
    return len(messages)


def watch_sqs(
    target: WatchTarget, queue_url: str, stop: threading.Event, report: Reporter | None = None, wait_s: int = 20
) -> None:
    """Consume S3 event notifications from ``queue_url`` until ``stop`` is set (long polls of
    ``wait_s`` seconds). Queue errors are reported (``error``) and retried after 5 s."""
    from botocore.exceptions import BotoCoreError, ClientError

    from tasks.ingest.s3 import describe_error

    client = sqs_client(queue_url)
    while not stop.is_set():
        try:
            receive_notifications(target, client, queue_url, wait_s, report)
        except (ClientError, BotoCoreError) as exc:
            if report:
                report("error", describe_error(exc, f"cannot read {queue_url}"))
            stop.wait(5)
