"""The bedrock backend through real boto3 (Converse and ConverseStream) against the local test double.

AWS credentials are fake environment variables; the double ignores the SigV4 signature. Its
answers come from the rules backend: these tests check protocol handling, not model quality.
"""

from __future__ import annotations

import pytest

from schemas.review import ReviewOutcome
from tasks.review.backends.bedrock_backend import BedrockBackend
from tasks.review.retry import is_retryable, retry_after_s
from tests.test_stub_llm import make_chunk

MODEL_ID = "anthropic.claude-sonnet-4-6"


@pytest.fixture
def stub(server, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    server.stub.reset()
    return server.stub


_opened: list = []


@pytest.fixture(autouse=True)
def _close_clients():
    """Close every SDK client a test opened (no socket is left to the garbage collector)."""
    yield
    while _opened:
        _opened.pop().close()


def backend(server, **kw) -> BedrockBackend:
    """The forced-tool path (``output_mode="tool"``, which Sonnet 4.6 takes); the structured-outputs
    path (``outputConfig.textFormat``) is covered in tests/test_structured_outputs.py."""
    kw.setdefault("timeout_s", 20)
    kw.setdefault("output_mode", "tool")
    made = BedrockBackend(MODEL_ID, region="us-east-1", endpoint_url=server.url, **kw)
    _opened.append(made)
    return made


def dumped(review) -> list[dict]:
    return [f.model_dump(mode="json") for f in review.findings]


def test_converse_stream_equals_converse(server, stub):
    streamed = backend(server, stream=True).review_chunk(make_chunk(), "a.pdf")
    plain = backend(server, stream=False).review_chunk(make_chunk(), "a.pdf")
    assert streamed.outcome == plain.outcome == ReviewOutcome.ok and len(streamed.findings) >= 4
    assert dumped(streamed) == dumped(plain)
    assert streamed.calls[0].first_token_ms is not None and plain.calls[0].first_token_ms is None
    assert stub.requests == {"converse-stream": 1, "converse": 1}
    assert all(f.evidence in make_chunk().text for f in streamed.findings)


def test_cache_point_makes_the_prefix_cached(server, stub):
    b = backend(server)
    first = b.review_chunk(make_chunk(0), "a.pdf").calls[0]
    second = b.review_chunk(make_chunk(1), "a.pdf").calls[0]
    assert first.cache_creation_input_tokens > 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.request_id and second.backend == "bedrock" and second.cost_usd > 0


def test_too_many_tokens_is_a_rate_limit_not_an_overflow(server, stub):
    stub.enqueue("rate_limit:4")
    with pytest.raises(Exception) as info:
        backend(server).review_chunk(make_chunk(), "a.pdf")
    exc = info.value
    assert exc.response["Error"]["Code"] == "ThrottlingException"
    assert "Too many tokens" in str(exc)
    assert is_retryable(exc) and retry_after_s(exc) == 4.0
    assert exc.llm_calls[0].error_class == "ThrottlingException"
    assert sum(stub.requests.values()) == 1  # boto3 made no retry of its own


def test_mid_stream_throttling_discards_the_partial_reply(server, stub):
    stub.enqueue("stream_error")
    with pytest.raises(Exception) as info:
        backend(server, stream=True).review_chunk(make_chunk(), "a.pdf")
    exc = info.value
    assert type(exc).__name__ == "EventStreamError" and exc.response["Error"]["Code"] == "throttlingException"
    assert is_retryable(exc)
    # the whole call is retried (by the task): a fresh call returns the complete review
    again = backend(server, stream=True).review_chunk(make_chunk(), "a.pdf")
    assert again.outcome == ReviewOutcome.ok and again.findings


@pytest.mark.parametrize("fault", ["overloaded", "server_error"])
def test_service_errors_are_retryable(server, stub, fault):
    stub.enqueue(fault)
    with pytest.raises(Exception) as info:
        backend(server).review_chunk(make_chunk(), "a.pdf")
    assert is_retryable(info.value)


def test_input_too_long_rechunks(server, stub):
    stub.enqueue("context_overflow")
    review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and review.findings
    assert review.calls[0].error_class == "ValidationException" and len(review.calls) == 3


def test_truncation_is_retried_and_refusal_recorded(server, stub):
    stub.enqueue("truncate")
    review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and review.findings
    assert [c.stop_reason for c in review.calls] == ["max_tokens", "tool_use"]
    stub.enqueue("refusal")
    refused = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert refused.outcome == ReviewOutcome.refusal and refused.calls[0].stop_reason == "refusal"


def test_multiple_tool_blocks_and_string_array(server, stub):
    clean = dumped(backend(server).review_chunk(make_chunk(), "a.pdf"))
    for fault in ("multi_tool", "string_array"):
        stub.enqueue(fault)
        review = backend(server).review_chunk(make_chunk(), "a.pdf")
        assert review.outcome == ReviewOutcome.ok and dumped(review) == clean, fault
