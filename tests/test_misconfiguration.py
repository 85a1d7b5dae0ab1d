"""A request the API refuses for what it is (key, model id, schema) is a configuration error:
classified apart from transient and per-document errors, and a run stops calling after a few
identical refusals."""

from __future__ import annotations

import threading

import pytest
from botocore.exceptions import ClientError

from schemas.policy import ResiliencePolicy
from tasks.review.resilience import Misconfiguration, RunMisconfigured
from tasks.review.retry import is_permanent, refusal_cause
from tests.test_resilience import api_error


def aws_error(code: str, message: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Converse"
    )


@pytest.mark.parametrize(
    ("exc", "permanent"),
    [
        (
            api_error(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "For 'integer' type, properties minimum are not supported",
                    },
                },
            ),
            True,
        ),
        (
            api_error(
                401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            ),
            True,
        ),
        (api_error(403, {"type": "error", "error": {"type": "permission_error", "message": "no access"}}), True),
        (api_error(404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}}), True),
        # the document's own problem: re-chunk, never stop the run
        (
            api_error(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "prompt is too long: 210000 tokens > 200000 maximum",
                    },
                },
            ),
            False,
        ),
        (
            api_error(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "input length and `max_tokens` exceed context limit: 1 + 2 > 3",
                    },
                },
            ),
            False,
        ),
        # transient: retried, never a configuration error
        (api_error(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}), False),
        (api_error(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), False),
        (aws_error("AccessDeniedException", "not authorized to invoke the model", 403), True),
        (aws_error("ValidationException", "The provided model identifier is invalid."), True),
        (aws_error("ResourceNotFoundException", "Model not found", 404), True),
        (aws_error("ValidationException", "Input is too long for requested model."), False),
        (aws_error("ThrottlingException", "Too many requests", 429), False),
    ],
)
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
        except Exception:
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
        gate.record(
            api_error(
                400, {"type": "error", "error": {"type": "invalid_request_error", "message": f"odd document {i}"}}
            )
        )
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
        except Exception:
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
            barrier.wait(timeout=60)  # a hang guard: the four threads meet inside the gate
            with lock:
                inside -= 1

    threads = [threading.Thread(target=concurrent) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 4  # after a success: full concurrency


# --- through the real SDK and boto3 against the local test double --------------------------------


@pytest.fixture
def inbox(tmp_path_factory):
    from docreview_testing.samples import generate_samples

    folder = tmp_path_factory.mktemp("inbox")
    generate_samples(folder, count=3)
    return folder


def _statuses(db_url: str) -> list[tuple[str, str]]:
    from sqlmodel import Session, select

    from schemas.tables import RunDocumentRow, RunRow
    from tasks.store.persist import get_engine

    with Session(get_engine(db_url)) as s:
        last = s.exec(select(RunRow.id).order_by(RunRow.started_at.desc())).first()
        return [
            (d.status, d.reason or "")
            for d in s.exec(select(RunDocumentRow).where(RunDocumentRow.run_id == last)).all()
        ]


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        ("bad_request", "400 invalid_request_error: output_config.format.schema"),
        ("unauthorized", "401 authentication_error: invalid x-api-key"),
        ("unknown_model", "404 not_found_error: model:"),
    ],
)
def test_a_refused_configuration_stops_the_run_and_a_fixed_one_reviews_everything(
    prefect_harness, stub_env, inbox, tmp_path, db_url, fault, cause
):
    from docreview_testing.stub_llm import parse_faults
    from flows.review import review_documents

    stub = stub_env.stub
    stub.faults = parse_faults(fault)
    state = review_documents(
        source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="anthropic", return_state=True
    )
    assert state.is_failed() and cause in state.message, state.message
    assert sum(stub.requests.values()) <= Misconfiguration.limit  # the start-up check: one call here
    statuses = _statuses(db_url)
    assert len(statuses) == 3
    assert all(
        s == "deferred" and r.startswith(f"not reviewed: the API refused the requests: {cause}") for s, r in statuses
    ), statuses
    report = (tmp_path / "out" / "report.json").read_text()
    assert "not reviewed: the API refused the requests" in report  # the report is written all the same

    stub.faults = []  # the configuration is fixed
    fixed = review_documents(
        source=str(inbox), out_dir=str(tmp_path / "out2"), database_url=db_url, backend="anthropic"
    )
    assert fixed["metrics"]["documents_reviewed"] == 3
    assert [s for s, _ in _statuses(db_url)] == ["reviewed"] * 3


def test_refusals_after_the_start_up_check_stop_after_the_stated_number_of_calls(
    prefect_harness, stub_env, inbox, tmp_path, db_url
):
    """The warm-up call goes through; every review call after it is refused (a key revoked
    mid-run): the run stops after three identical refusals, not one per chunk."""
    from flows.review import review_documents

    stub = stub_env.stub
    stub.enqueue("", times=1)  # the warm-up call: no fault
    stub.enqueue("unauthorized", times=100)
    state = review_documents(
        source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="anthropic", return_state=True
    )
    assert state.is_failed() and "401 authentication_error" in state.message
    # the limit, plus the calls already in flight when the first refusal came back (then one at a time)
    in_flight = ResiliencePolicy().llm_concurrency
    assert Misconfiguration.limit <= stub.errors[401] <= Misconfiguration.limit + in_flight, stub.errors
    assert all(s == "deferred" for s, _ in _statuses(db_url))


def test_bedrock_access_denied_stops_the_run(prefect_harness, stub_env, inbox, tmp_path, db_url, monkeypatch):
    from docreview_testing.stub_llm import parse_faults
    from flows.review import review_documents

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("DOCREVIEW_BEDROCK_ENDPOINT_URL", stub_env.url)
    stub_env.stub.faults = parse_faults("unauthorized")
    state = review_documents(
        source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="bedrock", return_state=True
    )
    assert state.is_failed() and "UnrecognizedClientException" in state.message, state.message
    assert sum(stub_env.stub.requests.values()) <= Misconfiguration.limit
    assert all(s == "deferred" for s, _ in _statuses(db_url))


def test_the_cli_exits_1_with_one_line_naming_the_cause(stub_env, inbox, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from docreview_testing.stub_llm import parse_faults

    stub_env.stub.faults = parse_faults("unknown_model")
    env = {**os.environ}
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "docreview"),
            "review",
            str(inbox),
            "--backend",
            "anthropic",
            "--out",
            str(tmp_path / "out"),
            "--db",
            f"sqlite:///{tmp_path}/x.db",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "Stopped: the API refused the requests: 404 not_found_error" in said
    assert "check the API key, the model id" in said and "Traceback" not in done.stderr
