"""A request the API refuses for what it is (key, model id, schema) is a configuration error:
classified apart from transient and per-document errors, and a run stops calling after a few
identical refusals."""

from __future__ import annotations

import threading

import pytest
from botocore.exceptions import ClientError

from tasks.review.resilience import Misconfiguration, RunMisconfigured
from tasks.review.retry import is_permanent, refusal_cause
from tests.test_resilience import api_error


def aws_error(code: str, message: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "Converse")


@pytest.mark.parametrize(("exc", "permanent"), [
    (api_error(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                "message": "For 'integer' type, properties minimum are not supported"}}),
     True),
    (api_error(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
     True),
    (api_error(403, {"type": "error", "error": {"type": "permission_error", "message": "no access"}}), True),
    (api_error(404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}}), True),
    # the document's own problem: re-chunk, never stop the run
    (api_error(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
     False),
    (api_error(400, {"type": "error", "error": {"type": "invalid_request_error", "message":
                                                "input length and `max_tokens` exceed context limit: 1 + 2 > 3"}}),
     False),
    # transient: retried, never a configuration error
    (api_error(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}), False),
    (api_error(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), False),
    (aws_error("AccessDeniedException", "not authorized to invoke the model", 403), True),
    (aws_error("ValidationException", "The provided model identifier is invalid."), True),
    (aws_error("ResourceNotFoundException", "Model not found", 404), True),
    (aws_error("ValidationException", "Input is too long for requested model."), False),
    (aws_error("ThrottlingException", "Too many requests", 429), False),
])
def test_permanent_errors_are_classified_apart(exc, permanent):
    assert is_permanent(exc) is permanent


def test_the_cause_names_status_type_and_message():
    exc = api_error(404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}})
    assert refusal_cause(exc) == "404 not_found_error: model: claude-x"
    assert refusal_cause(aws_error("AccessDeniedException", "denied", 403)) == "403 AccessDeniedException: denied"


def _refused():
    return api_error(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})


def test_the_gate_trips_after_the_stated_number_of_identical_refusals():
    gate = Misconfiguration()
    calls = 0
    for _ in range(10):
        try:
            with gate.admit():
                calls += 1
                raise _refused()
        except RunMisconfigured:
            break
        except Exception:  # noqa: BLE001 - the refusal itself
            continue
    assert calls == Misconfiguration.limit and gate.tripped
    assert gate.cause == "401 authentication_error: invalid x-api-key"
    with pytest.raises(RunMisconfigured, match="the API refused the requests: 401"):
        gate.check()
    gate.reset()
    assert not gate.tripped


def test_different_refusals_and_transient_errors_do_not_trip_it():
    gate = Misconfiguration()
    for i in range(5):
        gate.record(api_error(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                               "message": f"odd document {i}"}}))
        gate.record(api_error(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    assert not gate.tripped


def test_calls_go_one_at_a_time_until_one_succeeds():
    gate = Misconfiguration()
    inside, most = 0, 0
    lock = threading.Lock()
    release = threading.Event()

    def call(fail: bool) -> None:
        nonlocal inside, most
        try:
            with gate.admit():
                with lock:
                    inside += 1
                    most = max(most, inside)
                release.wait(0.05)
                with lock:
                    inside -= 1
                if fail:
                    raise _refused()
        except Exception:  # noqa: BLE001
            pass

    threads = [threading.Thread(target=call, args=(i == 0,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1  # probing: nothing has succeeded before the first success
    release.set()
    inside, most = 0, 0
    barrier = threading.Barrier(4)

    def concurrent() -> None:
        nonlocal inside, most
        with gate.admit():
            with lock:
                inside += 1
                most = max(most, inside)
            barrier.wait(timeout=5)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=concurrent) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 4  # after a success: full concurrency
