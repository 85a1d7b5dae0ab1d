"""Retry classification, Retry-After, the circuit breaker (in-process and shared through Redis)."""

from __future__ import annotations

import time
import uuid

import anthropic
import httpx
import pybreaker
import pytest
from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError

from schemas.policy import ResiliencePolicy
from tasks.review.resilience import get_breaker, make_retry_condition, reset_breakers
from tasks.review.retry import is_retryable, retry_after_s

pytestmark = pytest.mark.usefixtures("prefect_harness")  # breaker state changes emit Prefect events


def api_error(status: int, body: dict | None = None, headers: dict | None = None):
    """A real anthropic SDK status error built from an httpx response."""
    import anthropic

    request = httpx.Request("POST", "https://api.example.invalid/v1/messages")
    response = httpx.Response(
        status,
        json=body or {"type": "error", "error": {"type": "x", "message": "m"}},
        headers=headers or {},
        request=request,
    )
    client = anthropic.Anthropic(api_key="k", base_url="https://api.example.invalid", max_retries=0)
    return client._make_status_error_from_response(response)


@pytest.mark.parametrize(
    ("status", "etype", "message", "retry"),
    [
        (408, "timeout_error", "timeout", True),
        (409, "conflict", "conflict", True),
        (429, "rate_limit_error", "rate limited", True),
        (500, "api_error", "internal", True),
        (502, "api_error", "bad gateway", True),
        (503, "api_error", "unavailable", True),
        (529, "overloaded_error", "Overloaded", True),
        (400, "invalid_request_error", "bad field", False),
        (401, "authentication_error", "invalid x-api-key", False),
        (403, "permission_error", "forbidden", False),
        (404, "not_found_error", "model not found", False),
        (400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum", False),
        (400, "invalid_request_error", "enforced_spend_limit_reached", False),
    ],
)
def test_retry_classification_by_status_and_type(status, etype, message, retry):
    exc = api_error(status, {"type": "error", "error": {"type": etype, "message": message}})
    assert is_retryable(exc) is retry


def test_api_error_saying_overloaded_is_retryable():
    # An api_error whose message says "Overloaded" (seen on streams), whatever the status.
    exc = api_error(400, {"type": "error", "error": {"type": "api_error", "message": "Overloaded"}})
    assert is_retryable(exc)


def test_connection_and_timeout_errors_are_retryable():
    import anthropic

    request = httpx.Request("POST", "https://api.example.invalid/v1/messages")
    assert is_retryable(anthropic.APIConnectionError(request=request))
    assert is_retryable(anthropic.APITimeoutError(request=request))
    assert not is_retryable(ValueError("schema mismatch"))


def test_bedrock_throttling_is_retryable_and_validation_is_not():
    from botocore.exceptions import ClientError

    throttled = ClientError(
        {
            "Error": {"Code": "ThrottlingException", "Message": "Too many tokens"},
            "ResponseMetadata": {"HTTPStatusCode": 429},
        },
        "Converse",
    )
    too_long = ClientError(
        {
            "Error": {"Code": "ValidationException", "Message": "Input is too long for requested model"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        "Converse",
    )
    assert is_retryable(throttled) and not is_retryable(too_long)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "120"}, 120.0),  # above 60 s: honoured, unlike the SDK's own retry
        ({"retry-after": "7"}, 7.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({}, None),
        ({"retry-after": "soon"}, None),
    ],
)
def test_retry_after_header(headers, seconds):
    assert retry_after_s(api_error(429, headers=headers)) == seconds


class _State:
    def __init__(self, exc):
        self.exc = exc

    def result(self):
        raise self.exc


class _Run:
    run_count = 1


def test_retry_condition_waits_for_retry_after_beyond_backoff(monkeypatch):
    slept = []
    monkeypatch.setattr("tasks.review.resilience.time.sleep", lambda s: slept.append(s))
    policy = ResiliencePolicy(backoff_base_s=2, retry_after_cap_s=90)
    condition = make_retry_condition(policy)
    assert condition(None, _Run(), _State(api_error(429, headers={"retry-after": "120"}))) is True
    assert slept == [88.0]  # capped at 90 s, minus the 2 s backoff Prefect waits anyway
    assert condition(None, _Run(), _State(api_error(401))) is False
    assert slept == [88.0]


def _failing():
    raise api_error(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


def test_breaker_opens_after_threshold_and_ignores_non_retryable():
    reset_breakers()
    policy = ResiliencePolicy(
        breaker_failure_threshold=3, breaker_reset_timeout_s=60, breaker_name=f"t-{uuid.uuid4().hex[:8]}"
    )
    breaker = get_breaker(policy)
    for _ in range(5):
        with pytest.raises(anthropic.APIStatusError):
            breaker.call(lambda: (_ for _ in ()).throw(api_error(400)))
    assert breaker.current_state == pybreaker.STATE_CLOSED  # 400s do not count
    for _ in range(2):
        with pytest.raises(anthropic.APIStatusError):
            breaker.call(_failing)
    with pytest.raises(pybreaker.CircuitBreakerError):
        breaker.call(_failing)  # the third retryable failure trips it
    assert breaker.current_state == pybreaker.STATE_OPEN
    with pytest.raises(pybreaker.CircuitBreakerError):
        breaker.call(lambda: "never called")  # fails fast while open
    assert not is_retryable(pybreaker.CircuitBreakerError("open"))


def test_breaker_half_opens_and_closes_after_reset_timeout():
    reset_breakers()
    policy = ResiliencePolicy(
        breaker_failure_threshold=1, breaker_reset_timeout_s=0.2, breaker_name=f"t-{uuid.uuid4().hex[:8]}"
    )
    breaker = get_breaker(policy)
    with pytest.raises(pybreaker.CircuitBreakerError):
        breaker.call(_failing)
    assert breaker.current_state == pybreaker.STATE_OPEN
    time.sleep(0.3)
    assert breaker.call(lambda: "ok") == "ok"
    assert breaker.current_state == pybreaker.STATE_CLOSED


@pytest.mark.integration
def test_two_workers_share_one_breaker_through_redis():
    redis = pytest.importorskip("redis")
    url = "redis://127.0.0.1:6379/0"
    try:
        redis.Redis.from_url(url).ping()
    except Exception as exc:
        pytest.skip(f"Redis not reachable at {url}: {exc}")
    name = f"docreview-test-{uuid.uuid4().hex[:8]}"
    policy = ResiliencePolicy(
        breaker_failure_threshold=2, breaker_reset_timeout_s=60, breaker_storage=url, breaker_name=name
    )
    reset_breakers()
    worker_a = get_breaker(policy)
    reset_breakers()  # a second process would build its own breaker object on the same storage
    worker_b = get_breaker(policy)
    assert worker_a is not worker_b
    with pytest.raises(anthropic.APIStatusError):
        worker_a.call(_failing)
    with pytest.raises(pybreaker.CircuitBreakerError):
        worker_a.call(_failing)
    assert worker_b.current_state == pybreaker.STATE_OPEN  # B sees A's opening
    with pytest.raises(pybreaker.CircuitBreakerError):
        worker_b.call(lambda: "never called")
    redis.Redis.from_url(url).delete(*redis.Redis.from_url(url).keys(f"{name}*") or ["none"])


_WORKER = """
import sys, pybreaker
from schemas.policy import ResiliencePolicy
from tasks.review.resilience import get_breaker
from tests.test_resilience import _failing
policy = ResiliencePolicy(breaker_failure_threshold=2, breaker_reset_timeout_s=60,
                          breaker_storage=sys.argv[1], breaker_name=sys.argv[2])
breaker = get_breaker(policy)
if sys.argv[3] == "fail":
    for _ in range(2):
        try:
            breaker.call(_failing)
        except Exception as exc:
            last = type(exc).__name__
    print(breaker.current_state, last)
else:
    try:
        breaker.call(lambda: "called")
        print(breaker.current_state, "called")
    except pybreaker.CircuitBreakerError:
        print(breaker.current_state, "failed fast")
"""


@pytest.mark.integration
def test_two_concurrent_runs_share_one_breaker_through_redis(tmp_path):
    """Two separate processes (two runs or workers): one trips the breaker, the other fails fast."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    redis = pytest.importorskip("redis")
    url = "redis://127.0.0.1:6379/0"
    try:
        redis.Redis.from_url(url).ping()
    except Exception as exc:
        pytest.skip(f"Redis not reachable at {url}: {exc}")
    name = f"docreview-test-{uuid.uuid4().hex[:8]}"
    root = str(Path(__file__).resolve().parents[1])

    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PYTHONPATH": root, "PREFECT_API_URL": PREFECT_API_URL.value()}  # the test API

    def worker(mode: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", _WORKER, url, name, mode],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip().splitlines()[-1]

    try:
        assert worker("probe") == "closed called"
        assert worker("fail") == "open CircuitBreakerError"
        assert worker("probe") == "open failed fast"  # another process sees the shared open state
    finally:
        client = redis.Redis.from_url(url)
        keys = client.keys(f"{name}*")
        if keys:
            client.delete(*keys)


def _max_concurrency(policy: ResiliencePolicy, workers: int = 6) -> int:
    """The most of ``workers`` threads inside ``llm_slot`` at once. A thread in a slot stays until
    ``policy.llm_concurrency`` threads are in (or 10 s pass, which only happens when the limit
    admits fewer): the cap is reached by construction, not by threads happening to overlap."""
    import threading

    from tasks.review.resilience import llm_slot

    cv, state = threading.Condition(), {"now": 0, "max": 0, "left": workers}

    def call() -> None:
        with llm_slot(policy):
            with cv:
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
                cv.notify_all()
                cv.wait_for(lambda: state["now"] >= min(policy.llm_concurrency, state["left"]), timeout=10)
            with cv:
                state["now"] -= 1
                state["left"] -= 1
                cv.notify_all()

    threads = [threading.Thread(target=call) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return state["max"]


def test_process_slots_bound_concurrent_calls_and_the_wait_is_bounded():
    import threading

    from tasks.review.resilience import SlotWaitTimeout, llm_slot

    policy = ResiliencePolicy(
        llm_concurrency=2, concurrency_scope="process", concurrency_limit_name=f"t-{uuid.uuid4().hex[:8]}"
    )
    assert _max_concurrency(policy) == 2
    one = ResiliencePolicy(
        llm_concurrency=1,
        concurrency_scope="process",
        slot_wait_s=0.3,
        concurrency_limit_name=f"t-{uuid.uuid4().hex[:8]}",
    )
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with llm_slot(one):
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(10)
    with pytest.raises(SlotWaitTimeout), llm_slot(one):
        pass
    release.set()
    t.join()
    assert is_retryable(SlotWaitTimeout("x"))


def test_prefect_global_limit_bounds_calls_and_releases_every_slot():
    from prefect.client.orchestration import get_client

    from tasks.review.resilience import ensure_concurrency_limit

    name = f"t-{uuid.uuid4().hex[:8]}"
    policy = ResiliencePolicy(
        llm_concurrency=2, concurrency_scope="prefect", concurrency_limit_name=name, slot_lease_s=60
    )
    assert ensure_concurrency_limit(policy)
    assert _max_concurrency(policy, workers=5) == 2
    with get_client(sync_client=True) as client:
        limit = client.read_global_concurrency_limit_by_name(name)
    assert limit.limit == 2 and limit.active_slots == 0  # nothing leaked


def test_a_limit_created_by_another_run_meanwhile_is_used(monkeypatch, caplog):
    """Two flow runs starting at once both find no limit and both create it: the second's 409
    is not a failure (it used to log 'could not set the LLM concurrency limit: ' and go non-strict)."""
    from prefect.client.orchestration import SyncPrefectClient

    from tasks.review import resilience

    name = f"t-{uuid.uuid4().hex[:8]}"
    policy = ResiliencePolicy(llm_concurrency=1, concurrency_scope="prefect", concurrency_limit_name=name)
    assert resilience.ensure_concurrency_limit(policy)  # the other run's
    resilience._limits_ready.discard(name)

    def not_seen_yet(self, name):
        raise LookupError(name)

    monkeypatch.setattr(SyncPrefectClient, "read_global_concurrency_limit_by_name", not_seen_yet)
    with caplog.at_level("WARNING", logger="docreview"):
        assert resilience.ensure_concurrency_limit(policy)
    assert name in resilience._limits_ready
    assert "could not set" not in caplog.text


def test_the_call_that_trips_the_breaker_keeps_its_llm_calls_record(server, db_url):
    """The failure that opens the breaker is raised as CircuitBreakerError; its call is still stored."""
    from sqlmodel import Session, select

    from schemas.tables import LLMCallRow
    from tasks.review.backends.anthropic_backend import AnthropicBackend
    from tasks.review.reviewer import review_chunk
    from tasks.store.persist import dispose_engines, get_engine
    from tests.test_stub_llm import make_chunk

    reset_breakers()
    server.stub.reset()
    policy = ResiliencePolicy(
        breaker_failure_threshold=1,
        breaker_reset_timeout_s=60,
        concurrency_scope="process",
        breaker_name=f"t-{uuid.uuid4().hex[:8]}",
    )
    backend = AnthropicBackend("k", "claude-sonnet-5-5", base_url=server.url, timeout_s=20)
    server.stub.enqueue("overloaded")
    try:
        with pytest.raises(pybreaker.CircuitBreakerError) as info:
            review_chunk.fn(backend, make_chunk(), "a.pdf", db_url, "run-trip", policy)
        assert type(info.value.__cause__).__name__ == "OverloadedError"
        assert [c.error_class for c in info.value.llm_calls] == ["OverloadedError"]
        with Session(get_engine(db_url)) as s:
            rows = s.exec(select(LLMCallRow).where(LLMCallRow.run_id == "run-trip")).all()
        assert [(r.attempt, r.error_class) for r in rows] == [(1, "OverloadedError")]
    finally:
        backend.close()
        dispose_engines()
        reset_breakers()


def test_a_deleted_global_limit_fails_the_slot_instead_of_not_limiting():
    from prefect.client.orchestration import get_client

    from tasks.review.resilience import ensure_concurrency_limit, llm_slot

    name = f"t-{uuid.uuid4().hex[:8]}"
    policy = ResiliencePolicy(
        llm_concurrency=2, concurrency_scope="prefect", concurrency_limit_name=name, slot_lease_s=60, slot_wait_s=5
    )
    assert ensure_concurrency_limit(policy)
    with llm_slot(policy):
        pass
    with get_client(sync_client=True) as client:
        client.delete_global_concurrency_limit_by_name(name)
    entered = []
    with (
        pytest.raises(ConcurrencySlotAcquisitionError),
        llm_slot(policy),
    ):  # strict=True once created: a missing limit is an error
        entered.append(1)
    assert entered == []


def test_a_policy_without_a_call_timeout_takes_the_llm_timeout_setting(monkeypatch):
    from flows.pipeline import policy_for
    from schemas.settings import Settings

    monkeypatch.setenv("DOCREVIEW_LLM_TIMEOUT_S", "900")
    settings = Settings()
    assert policy_for(None, settings).call_timeout_s == 900
    given = ResiliencePolicy.model_validate({"llm_concurrency": 1})  # as a deployment's parameter arrives
    assert policy_for(given, settings).call_timeout_s == 900
    assert policy_for(given, settings).llm_concurrency == 1
    explicit = ResiliencePolicy(call_timeout_s=5)
    assert policy_for(explicit, settings).call_timeout_s == 5
