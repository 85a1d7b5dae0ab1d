"""Bucket and folder watcher: one ``docreview.document.received`` event per new object version,
nothing on repeated sweeps or from a second watcher, again after an overwrite; failed emits are
retried; the local folder watcher reacts to a created file (watchdog). Events are captured with
Prefect's asserting events client; the S3 endpoint is moto over real HTTP."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from sqlmodel import Session, select

from schemas.tables import WatchedObjectRow
from tasks.ingest.s3 import s3_client
from tasks.ingest.watch import EVENT_NAME, WatchTarget, event_id, file_uri, sweep, watch_folder
from tasks.store.persist import get_engine

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(autouse=True)
def _aws(aws_env):
    """Every test here runs with dummy AWS credentials (conftest ``aws_env``)."""


@pytest.fixture
def events():
    """``take()`` → the events emitted since the last call, captured by Prefect's
    AssertingEventsClient (the pattern of ``prefect.testing.fixtures.asserting_events_worker``)."""
    from prefect.events.clients import AssertingEventsClient
    from prefect.events.worker import EventsWorker

    patch = pytest.MonkeyPatch()
    state = {}

    def install():
        worker = EventsWorker.instance(AssertingEventsClient)
        patch.setattr(EventsWorker, "instance", lambda *_args, **_kw: worker)
        state["worker"] = worker

    def take():
        worker = state["worker"]
        worker.drain()
        got = list(worker._client.events) if worker._client is not None else []
        patch.undo()  # a fresh worker for the next emits
        install()
        return [e for e in got if e.event == EVENT_NAME]

    install()
    try:
        yield take
    finally:
        state["worker"].drain()
        patch.undo()


@pytest.fixture
def bucket(s3_url):
    name = f"watch-{uuid.uuid4().hex[:12]}"
    client = s3_client(s3_url)
    client.create_bucket(Bucket=name)
    return name, client


def test_sweeps_emit_once_per_object_version(bucket, s3_url, db_url, events):
    name, client = bucket
    etags = {}
    for key in ("in/a.pdf", "in/sub/b.PDF"):
        etags[key] = client.put_object(Bucket=name, Key=key, Body=b"%PDF-1.4 " + key.encode())["ETag"].strip('"')
    client.put_object(Bucket=name, Key="in/notes.txt", Body=b"not watched")
    target = WatchTarget(source=f"s3://{name}/in", database_url=db_url, endpoint_url=s3_url)

    assert sweep(target) == 2
    got = sorted(events(), key=lambda e: e.resource.id)
    assert [e.resource.id for e in got] == [f"s3://{name}/in/a.pdf", f"s3://{name}/in/sub/b.PDF"]
    first = got[0]
    assert first.resource["prefect.resource.name"] == "in/a.pdf" and first.resource["docreview.bucket"] == name
    assert first.payload == {
        "uri": f"s3://{name}/in/a.pdf",
        "bucket": name,
        "key": "in/a.pdf",
        "etag": etags["in/a.pdf"],
        "size_bytes": len(b"%PDF-1.4 in/a.pdf"),
    }
    assert first.id == event_id(f"s3://{name}/in/a.pdf", etags["in/a.pdf"])

    assert sweep(target) == 0 and events() == []  # a repeated sweep emits nothing

    new_etag = client.put_object(Bucket=name, Key="in/a.pdf", Body=b"%PDF-1.4 changed")["ETag"].strip('"')
    assert sweep(target) == 1
    (changed,) = events()
    assert changed.resource.id == f"s3://{name}/in/a.pdf" and changed.payload["etag"] == new_etag != etags["in/a.pdf"]
    with Session(get_engine(db_url)) as s:
        rows = s.exec(select(WatchedObjectRow)).all()
    assert len(rows) == 3 and all(r.emitted_at is not None for r in rows)


@pytest.fixture
def pg_url(pg_database):
    """A fresh PostgreSQL database (the server on 127.0.0.1:5432), dropped afterwards."""
    return pg_database("docreview_watch")


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_two_watchers_emit_each_object_once(bucket, s3_url, db_url, events, database, request):
    if database == "postgresql":
        db_url = request.getfixturevalue("pg_url")
    name, client = bucket
    for i in range(12):
        client.put_object(Bucket=name, Key=f"two/{i:02d}.pdf", Body=b"%%PDF-1.4 %d" % i)
    targets = [WatchTarget(source=f"s3://{name}/two", database_url=db_url, endpoint_url=s3_url) for _ in range(2)]
    start = threading.Barrier(2)
    counts = []

    def run(target):
        start.wait()
        counts.append(sweep(target))

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sum(counts) == 12
    got = events()
    assert len(got) == 12 and len({e.resource.id for e in got}) == 12


def test_failed_emit_stays_pending_and_is_retried(bucket, s3_url, db_url, events, monkeypatch):
    import prefect.events

    name, client = bucket
    client.put_object(Bucket=name, Key="retry/x.pdf", Body=b"%PDF-1.4 x")
    target = WatchTarget(source=f"s3://{name}/retry", database_url=db_url, endpoint_url=s3_url, retry_after_s=0)

    def broken(*_args, **_kwargs):
        raise ConnectionError("Prefect API unreachable")

    with monkeypatch.context() as m:
        m.setattr(prefect.events, "emit_event", broken)
        assert sweep(target) == 0
    assert target.stats["emit_failed"] == 1
    with Session(get_engine(db_url)) as s:
        (row,) = s.exec(select(WatchedObjectRow)).all()
    assert row.emitted_at is None  # recorded, not lost

    assert sweep(target) == 1  # the next sweep emits the pending object
    (event,) = events()
    assert event.resource.id == f"s3://{name}/retry/x.pdf"
    assert sweep(target) == 0 and events() == []


def test_without_prefect_api_events_wait(bucket, s3_url, db_url, events):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from tasks.ingest.watch import no_api_warning

    name, client = bucket
    client.put_object(Bucket=name, Key="noapi/x.pdf", Body=b"%PDF-1.4 x")
    target = WatchTarget(source=f"s3://{name}/noapi", database_url=db_url, endpoint_url=s3_url, retry_after_s=0)
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        assert "PREFECT_API_URL is not set" in no_api_warning()
        assert sweep(target) == 0
    assert events() == []
    assert no_api_warning() is None
    assert sweep(target) == 1 and len(events()) == 1


def test_local_folder_sweep_ids_are_review_sources(tmp_path, db_url, events):
    from tasks.ingest.sources import list_source_objects

    inbox = tmp_path / "in box"
    (inbox / "sub").mkdir(parents=True)
    (inbox / "a.pdf").write_bytes(b"%PDF-1.4 a")
    (inbox / "sub" / "b.pdf").write_bytes(b"%PDF-1.4 b")
    (inbox / ".hidden.pdf").write_bytes(b"%PDF-1.4 h")
    (inbox / "c.txt").write_bytes(b"text")
    target = WatchTarget(source=str(inbox), database_url=db_url, settle_s=0)
    assert sweep(target) == 2
    got = sorted(events(), key=lambda e: e.resource.id)
    assert [e.resource.id for e in got] == [
        file_uri((inbox / "a.pdf").resolve()),
        file_uri((inbox / "sub" / "b.pdf").resolve()),
    ]
    assert got[0].resource.id.startswith("file:///") and "%20" in got[0].resource.id
    assert got[0].payload["bucket"] is None and got[0].payload["key"] == str((inbox / "a.pdf").resolve())
    listed = list_source_objects.fn(got[0].resource.id)  # the resource id is a source `review` accepts
    assert [o.local_path for o in listed] == [str((inbox / "a.pdf").resolve())]
    assert sweep(target) == 0 and events() == []
    time.sleep(0.01)
    (inbox / "a.pdf").write_bytes(b"%PDF-1.4 a, edited")
    assert sweep(target) == 1


def test_local_folder_watcher_reacts_to_a_new_file(tmp_path, db_url, events):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    # The production settle time (2 s) against a 0.1 s pause between the two writes: the file must
    # be announced once, complete. A pause as long as the settle time would rightly give two events.
    target = WatchTarget(source=str(inbox), database_url=db_url, settle_s=2.0)
    stop, ready = threading.Event(), threading.Event()
    seen: list[str] = []
    thread = threading.Thread(
        target=watch_folder,
        args=(target, 3600.0, stop, lambda k, o: seen.append((k, o.uri))),
        kwargs={"ready": ready},
        daemon=True,
    )
    thread.start()
    try:
        assert ready.wait(20)
        time.sleep(0.5)  # the initial sweep of the empty folder
        path = inbox / "new.pdf"
        with path.open("wb") as fh:  # written in two steps: one event once it has settled
            fh.write(b"%PDF-1.4 first half ")
            fh.flush()
            time.sleep(0.1)
            fh.write(b"second half")
        deadline = time.monotonic() + 20
        while not seen and time.monotonic() < deadline:
            time.sleep(0.1)
        # A marker written after the first announcement settles later than any announcement the two writes
        # could still owe: once it is announced, a second event for new.pdf would be in `seen` before it.
        # (Before, a fixed one-second wait passed on a loaded machine whether or not a second event came.)
        marker = inbox / "marker.pdf"
        marker.write_bytes(b"%PDF-1.4 marker")
        while len(seen) < 2 and time.monotonic() < deadline + 20:
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(10)
    assert seen == [("emitted", file_uri(path.resolve())), ("emitted", file_uri(marker.resolve()))]
    event = next(e for e in events() if e.resource.id == file_uri(path.resolve()))
    assert event.payload["size_bytes"] == path.stat().st_size


def test_watch_cli_once(bucket, s3_url, tmp_path, events):
    from typer.testing import CliRunner

    from cli.app import app

    name, client = bucket
    client.put_object(Bucket=name, Key="cli/x.pdf", Body=b"%PDF-1.4 x")
    args = ["watch", f"s3://{name}/cli", "--endpoint-url", s3_url, "--db", f"sqlite:///{tmp_path / 'w.db'}", "--once"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert f"received  s3://{name}/cli/x.pdf" in first.output and "1 object(s) listed, 1" in first.output
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0 and "1 object(s) listed, 0" in second.output
    assert len(events()) == 1
    missing = CliRunner().invoke(
        app,
        [
            "watch",
            "s3://no-such-bucket-here/x",
            "--endpoint-url",
            s3_url,
            "--db",
            f"sqlite:///{tmp_path / 'w.db'}",
            "--once",
        ],
    )
    assert missing.exit_code == 2 and "the bucket does not exist" in missing.output
    assert "Traceback" not in missing.output


def test_parse_s3_notifications():
    import json

    from tasks.ingest.watch import parse_s3_notification

    record = {
        "eventName": "ObjectCreated:Put",
        "s3": {"bucket": {"name": "b"}, "object": {"key": "in%2Fa+b%2Bc.pdf", "size": 7, "eTag": "e1"}},
    }
    removed = {"eventName": "ObjectRemoved:Delete", "s3": {"bucket": {"name": "b"}, "object": {"key": "x.pdf"}}}
    direct = json.dumps({"Records": [record, removed]})
    assert parse_s3_notification(direct) == [("b", "in/a b+c.pdf", "e1", 7)]
    assert parse_s3_notification(json.dumps({"Type": "Notification", "Message": direct})) == [
        ("b", "in/a b+c.pdf", "e1", 7)
    ]
    bridge = {
        "detail-type": "Object Created",
        "detail": {"bucket": {"name": "b"}, "object": {"key": "in/a b.pdf", "size": 3, "etag": "e2"}},
    }
    assert parse_s3_notification(json.dumps(bridge)) == [("b", "in/a b.pdf", "e2", 3)]
    for junk in ('{"Service": "Amazon S3", "Event": "s3:TestEvent"}', "not json", "[1, 2]", '{"Records": [null]}'):
        assert parse_s3_notification(junk) == []


def test_sqs_notifications_emit_once(bucket, s3_url, db_url, events):
    import json

    from tasks.ingest.watch import receive_notifications, sqs_client

    name, client = bucket
    sqs = sqs_client(f"{s3_url}/123456789012/q")
    queue_url = sqs.create_queue(QueueName=f"uploads-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    client.put_bucket_notification_configuration(
        Bucket=name,
        NotificationConfiguration={"QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]},
    )
    etag = client.put_object(Bucket=name, Key="in/a b.pdf", Body=b"%PDF-1.4 a")["ETag"].strip('"')
    client.put_object(Bucket=name, Key="in/notes.txt", Body=b"text")
    client.put_object(Bucket=name, Key="elsewhere/c.pdf", Body=b"%PDF-1.4 c")
    target = WatchTarget(source=f"s3://{name}/in", database_url=db_url, endpoint_url=s3_url)

    handled = 0
    while got := receive_notifications(target, sqs, queue_url, wait_s=1):
        handled += got
    assert handled >= 3  # the test event and three notifications
    (event,) = events()
    assert event.resource.id == f"s3://{name}/in/a b.pdf" and event.payload["etag"] == etag
    # a duplicate notification, and a sweep of the same prefix, emit nothing more
    dup = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": name}, "object": {"key": "in/a+b.pdf", "size": 10, "eTag": etag}},
            }
        ]
    }
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(dup))
    assert receive_notifications(target, sqs, queue_url, wait_s=1) == 1
    assert sweep(target) == 0 and events() == []
    assert sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0).get("Messages") is None  # all deleted
