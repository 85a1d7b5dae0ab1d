"""Message Batches mode over real HTTP: the installed anthropic SDK against the local test double."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from docreview_testing.samples import generate_samples
from schemas.documents import Chunk
from schemas.findings import PROMPT_VERSION
from schemas.tables import BatchRow, DocumentReviewRow, FindingRow, LLMCallRow
from tasks.review.batches import CUSTOM_ID_RE, batch_key, custom_id, fetch_results, poll_batch, submit_batch
from tasks.store.persist import dispose_engines, get_engine

pytestmark = pytest.mark.usefixtures("prefect_harness")

MODEL = "claude-sonnet-4-6"


@pytest.fixture(scope="module")
def inbox(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inbox")
    generate_samples(folder, count=2)
    return folder


def review(inbox: Path, out: Path, db_url: str, **kw) -> dict:
    from flows.review import review_documents

    try:
        review_documents(
            source=str(inbox), out_dir=str(out), database_url=db_url, backend="anthropic", routing="all", **kw
        )
    finally:
        dispose_engines()
    return json.loads((out / "report.json").read_text())


def count(db_url: str, model) -> int:
    with Session(get_engine(db_url)) as s:
        return s.exec(select(func.count()).select_from(model)).one()


def findings_set(db_url: str) -> set[tuple[str, str, str]]:
    with Session(get_engine(db_url)) as s:
        return {(r.sha256, r.clause_type, r.evidence) for r in s.exec(select(FindingRow))}


def chunk(sha: str, index: int, text: str = "The Supplier shall deliver the Goods.") -> Chunk:
    return Chunk(
        document_sha256=sha, index=index, char_start=0, char_end=len(text), page_start=1, page_end=1, text=text
    )


def test_custom_ids_stable_unique_and_valid():
    a, b = "a" * 64, "b" * 64
    ids = [custom_id(chunk(sha, i), PROMPT_VERSION, MODEL) for sha in (a, b) for i in range(3)]
    assert len(set(ids)) == 6
    assert all(CUSTOM_ID_RE.match(i) and len(i) <= 64 for i in ids)
    assert ids == [custom_id(chunk(sha, i), PROMPT_VERSION, MODEL) for sha in (a, b) for i in range(3)]
    assert custom_id(chunk(a, 0), PROMPT_VERSION, "claude-haiku-4-5") != ids[0]
    assert custom_id(chunk(a, 0), "review-v0", MODEL) != ids[0]
    requests = [{"custom_id": i, "params": {"model": MODEL, "max_tokens": 4096}} for i in ids]
    assert batch_key(requests) == batch_key(list(reversed(requests))) != batch_key(requests[:-1])
    # the key covers what each request sends, not only its custom_id (before: a changed max_tokens or schema
    # resumed the stored batch of the old requests)
    changed = [{**r, "params": {**r["params"], "max_tokens": 8192}} for r in requests]
    assert batch_key(changed) != batch_key(requests)


def test_batch_api_round_trip_with_the_sdk(stub_env):
    import anthropic

    from tasks.review.backends.anthropic_backend import AnthropicBackend, cost_usd

    backend = AnthropicBackend("test-key-not-secret", MODEL, base_url=stub_env.url, stream=False)
    text = (
        "12. Governing Law. This Agreement shall be governed by the laws of the State of Delaware. "
        "13. Termination. Either party may terminate this Agreement upon thirty (30) days written notice."
    )
    chunks = [chunk("c" * 64, 0, text), chunk("d" * 64, 0, text)]
    requests = [
        {"custom_id": custom_id(c, PROMPT_VERSION, MODEL), "params": backend.request(c, "x.pdf")} for c in chunks
    ]
    client = anthropic.Anthropic(api_key="test-key-not-secret", base_url=stub_env.url, max_retries=0, timeout=10)
    stub_env.stub.hold_batches()  # in_progress until released below, however long the calls take
    stub_env.stub.enqueue("overloaded", times=1)  # the first request of the batch errors
    batch_id = submit_batch(client, requests)
    held = client.messages.batches.retrieve(batch_id)
    assert held.processing_status == "in_progress" and held.results_url is None
    assert held.request_counts.processing == 2
    stub_env.stub.release_batches()
    ended = poll_batch(client, batch_id, interval_s=0.1, timeout_s=10)
    assert ended.processing_status == "ended" and ended.request_counts.succeeded == 1
    assert ended.request_counts.errored == 1
    results = fetch_results(client, batch_id, mode=backend.mode)
    first, second = (results[r["custom_id"]] for r in requests)
    assert first.outcome.value == "error" and "overloaded_error" in first.detail
    assert second.outcome.value == "ok" and {f.clause_type.value for f in second.findings} >= {"governing_law"}
    direct = backend.review_chunk(chunks[1], "x.pdf")  # same parse as a non-streaming call
    assert [f.evidence for f in second.findings] == [f.evidence for f in direct.findings]
    call = second.calls[0]
    usage = call.model_dump(
        include={"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
    )
    assert call.input_tokens + call.cache_creation_input_tokens > 0 and call.output_tokens > 0
    assert call.cost_usd == pytest.approx(cost_usd(MODEL, usage) / 2) and call.cost_usd > 0  # half price
    client.close()
    backend.close()


def test_batch_run_reviews_all_documents(stub_env, inbox, tmp_path):
    db = f"sqlite:///{tmp_path / 'batch.db'}"
    report = review(inbox, tmp_path / "out", db, batch=True)
    m = report["run"]["metrics"]
    assert m["documents_total"] == 2 and m["documents_reviewed"] == 2, report["documents"]
    assert stub_env.stub.batches_created == 1
    assert stub_env.stub.requests["/v1/messages"] == 0  # no per-chunk calls in batch mode
    assert count(db, DocumentReviewRow) == 2 and count(db, FindingRow) > 0
    with Session(get_engine(db)) as s:
        rows = s.exec(select(BatchRow)).all()
        calls = s.exec(select(LLMCallRow)).all()
    assert len(rows) == 1 and rows[0].status == "fetched"
    assert len(set(rows[0].custom_ids)) == len(rows[0].custom_ids) == len(calls)
    assert len({cid.split("-")[0] for cid in rows[0].custom_ids}) == 2  # both documents in one batch

    # the same documents reviewed call by call give the same findings
    single = f"sqlite:///{tmp_path / 'single.db'}"
    review(inbox, tmp_path / "out-single", single)
    assert findings_set(single) == findings_set(db)
    dispose_engines()


def test_restart_after_submit_resumes_the_same_batch(stub_env, inbox, tmp_path):
    db = f"sqlite:///{tmp_path / 'resume.db'}"
    stub_env.stub.hold_batches()  # still in progress when the first run gives up waiting
    first = review(inbox, tmp_path / "out1", db, batch=True, batch_poll_s=0.1, batch_timeout_s=0.3)
    assert first["run"]["metrics"]["documents_deferred"] == 2
    assert stub_env.stub.batches_created == 1
    with Session(get_engine(db)) as s:
        row = s.exec(select(BatchRow)).one()
    assert row.status == "in_progress"

    stub_env.stub.release_batches()  # the batch has ended by the time the run starts again
    second = review(inbox, tmp_path / "out2", db, batch=True, batch_poll_s=0.1)
    assert second["run"]["metrics"]["documents_reviewed"] == 2, second["documents"]
    assert stub_env.stub.batches_created == 1  # resumed, not submitted (paid for) twice
    with Session(get_engine(db)) as s:
        again = s.exec(select(BatchRow)).one()
    assert again.batch_id == row.batch_id and again.custom_ids == row.custom_ids and again.status == "fetched"
    assert count(db, FindingRow) > 0
    dispose_engines()


def test_batch_needs_the_anthropic_backend(tmp_path, inbox):
    from flows.review import review_documents

    with pytest.raises(ValueError, match="anthropic"):
        review_documents(
            source=str(inbox),
            out_dir=str(tmp_path),
            database_url=f"sqlite:///{tmp_path / 'x.db'}",
            backend="rules",
            batch=True,
        )
    dispose_engines()


def test_requests_are_split_under_the_count_and_byte_limits():
    from tasks.review.batches import MAX_BATCH_BYTES, MAX_BATCH_REQUESTS, split_requests

    assert (MAX_BATCH_REQUESTS, MAX_BATCH_BYTES) == (100_000, 256 * 1024 * 1024 - 1024 * 1024)
    reqs = [{"custom_id": f"r{i}", "params": {"x": "a" * 100}} for i in range(10)]
    size = len(json.dumps(reqs[0], separators=(",", ":")).encode()) + 1
    assert [len(g) for g in split_requests(reqs, max_requests=4)] == [4, 4, 2]
    assert [len(g) for g in split_requests(reqs, max_bytes=3 * size)] == [3, 3, 3, 1]
    by_both = split_requests(reqs, max_requests=2, max_bytes=3 * size)
    assert [r["custom_id"] for g in by_both for r in g] == [r["custom_id"] for r in reqs]  # order kept
    assert all(len(g) <= 2 for g in by_both)
    with pytest.raises(ValueError, match="over the"):
        split_requests(reqs, max_bytes=size - 1)


def test_batch_params_carry_the_one_hour_cache_ttl(stub_env):
    import httpx

    from tasks.review.backends.anthropic_backend import AnthropicBackend
    from tasks.review.batches import with_cache_ttl

    backend = AnthropicBackend("test-key-not-secret", MODEL, base_url=stub_env.url)
    params = with_cache_ttl(backend.request(chunk("e" * 64, 0), "x.pdf"))
    backend.close()
    marks = [b["cache_control"] for b in params["system"] if "cache_control" in b]
    assert marks == [{"type": "ephemeral", "ttl": "1h"}]
    with httpx.Client(base_url=stub_env.url, timeout=10) as client:  # the double (like the API) accepts it
        resp = client.post("/v1/messages", json=params, headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
    assert resp.status_code == 200 and resp.json()["usage"]["cache_creation_input_tokens"] > 0


def test_a_stored_batch_older_than_29_days_is_submitted_again(db_url):
    from datetime import datetime, timedelta

    from tasks.review.batches import find_batch, results_may_exist, save_batch

    now = datetime.now(UTC)
    assert results_may_exist(now - timedelta(days=28, hours=23))
    assert not results_may_exist(now - timedelta(days=29))
    assert results_may_exist((now - timedelta(days=1)).replace(tzinfo=None))  # naive = UTC (SQLite)
    save_batch(db_url, "k" * 64, "msgbatch_1", MODEL, ["a-0-x"], "in_progress")
    assert find_batch(db_url, "k" * 64).batch_id == "msgbatch_1"
    with Session(get_engine(db_url)) as s:
        row = s.exec(select(BatchRow)).one()
        row.created_at = now - timedelta(days=30)
        s.add(row)
        s.commit()
    assert find_batch(db_url, "k" * 64) is None  # its results are gone: the caller submits again
    dispose_engines()


def test_a_stored_batch_the_api_no_longer_knows_is_submitted_again(stub_env, inbox, tmp_path):
    """Before: a stored batch answered 404 (say, made under another workspace's key) failed every run for 29
    days (a 404 is not retried, and the next run resumed the same id)."""
    db = f"sqlite:///{tmp_path / 'gone.db'}"
    stub_env.stub.hold_batches()
    first = review(inbox, tmp_path / "out1", db, batch=True, batch_poll_s=0.1, batch_timeout_s=0.3)
    assert first["run"]["metrics"]["documents_deferred"] == 2 and stub_env.stub.batches_created == 1
    stub_env.stub.batches.clear()  # the API forgets it
    stub_env.stub.release_batches()
    second = review(inbox, tmp_path / "out2", db, batch=True, batch_poll_s=0.1)
    assert second["run"]["metrics"]["documents_reviewed"] == 2, second["documents"]
    assert stub_env.stub.batches_created == 2
    dispose_engines()


def test_expired_and_canceled_requests_end_as_their_result_type_and_are_not_reviewed(stub_env):
    """batch-processing, result types: a request the 24-hour expiry or a cancel reached before it was sent is
    an ``expired`` / ``canceled`` result with no message; each becomes the chunk's error outcome, named."""
    import anthropic

    client = anthropic.Anthropic(api_key="k", base_url=stub_env.url, max_retries=0)
    params = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
    try:
        for ending in ("expired", "canceled"):
            stub_env.stub.hold_batches()
            batch_id = submit_batch(client, [{"custom_id": f"{ending}-0-x", "params": params}])
            if ending == "expired":
                stub_env.stub.expire_batches()
            else:
                assert client.messages.batches.cancel(batch_id).cancel_initiated_at is not None
            ended = poll_batch(client, batch_id, interval_s=0.01, timeout_s=5)
            assert getattr(ended.request_counts, ending) == 1
            (review_,) = fetch_results(client, batch_id, {f"{ending}-0-x": 0}).values()
            assert review_.outcome.value == "error" and review_.detail == f"batch request {ending}"
            stub_env.stub.release_batches()
    finally:
        client.close()
