"""The anthropic backend through the real anthropic SDK over HTTP against the local test double.

Every injected behaviour is driven through ``AnthropicBackend.review_chunk`` and the recorded
outcome is asserted. The double's answers come from the rules backend: these tests check the
protocol handling, never Claude's quality.
"""

from __future__ import annotations

import json
import logging

import anthropic
import pytest
from sqlmodel import Session, select

from schemas.review import ReviewOutcome
from schemas.tables import LLMCallRow
from tasks.review.backends.anthropic_backend import (
    AnthropicBackend,
    LLMConfigError,
    cache_prefix_check,
    cost_usd,
    price_for,
    repair_tool_input,
    split_chunk,
)
from tasks.review.backends.prompt import (
    parse_rendered_chunk,
    prefix_tokens_estimate,
    render_chunk,
    review_tool,
)
from tasks.review.retry import is_retryable, retry_after_s
from tests.test_stub_llm import make_chunk

#: Not the settings default: a model with a forced tool_choice (tool mode) as well as structured outputs.
MODEL = "claude-sonnet-4-6"


@pytest.fixture
def stub(server):
    server.stub.reset()
    server.stub.faults = []
    return server.stub


_opened: list = []


@pytest.fixture(autouse=True)
def _close_clients():
    """Close every SDK client a test opened (no socket is left to the garbage collector)."""
    yield
    while _opened:
        _opened.pop().close()


def backend(server, **kw) -> AnthropicBackend:
    """The forced-tool path (``output_mode="tool"``, which Sonnet 4.6 takes); the structured-outputs
    path is covered in tests/test_structured_outputs.py."""
    kw.setdefault("timeout_s", 20)
    kw.setdefault("output_mode", "tool")
    made = AnthropicBackend("test-key", MODEL, base_url=server.url, **kw)
    _opened.append(made)
    return made


def dumped(review) -> list[dict]:
    return [f.model_dump(mode="json") for f in review.findings]


@pytest.fixture
def clean(server, stub):
    """The double's findings for the test passage, with no fault injected."""
    review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and len(review.findings) >= 4
    stub.reset()
    return dumped(review)


def test_request_shape_is_forced_strict_and_cache_stable(server, stub):
    b = backend(server)
    one, two = b.request(make_chunk(0), "a.pdf"), b.request(make_chunk(3), "other.pdf")
    assert one["tool_choice"] == {"type": "tool", "name": "record_findings", "disable_parallel_tool_use": True}
    assert one["tools"][0]["strict"] is True and "stop_sequences" not in one
    assert one["tools"][0]["input_schema"]["type"] == "object"  # object root holding a list
    marks = [i for i, s in enumerate(one["system"]) if "cache_control" in s]
    assert marks == [len(one["system"]) - 1]
    prefix = lambda r: json.dumps([r["tools"], r["system"]], sort_keys=True)  # noqa: E731
    assert prefix(one) == prefix(two)  # byte-identical cached prefix
    assert "a.pdf" not in prefix(one) and "a.pdf" in one["messages"][0]["content"]


def test_prefix_reaches_minimum_cacheable_length():
    tokens = prefix_tokens_estimate()
    # prompt-caching, "Cache limitations" (read 2026-12-06): 1,024 for Sonnet 4.6, 2,048 for Opus 4.7,
    # 4,096 for Haiku 4.5, 512 for Sonnet 5.5
    assert cache_prefix_check("claude-sonnet-4-6", tokens) == (True, 1024)
    assert cache_prefix_check("claude-opus-4-7", tokens) == (True, 2048)
    assert cache_prefix_check("claude-haiku-4-5", tokens) == (True, 4096)
    assert cache_prefix_check("claude-sonnet-5-5", tokens) == (True, 512)
    assert cache_prefix_check("claude-sonnet-4-6", 900) == (False, 1024)


def test_streaming_result_equals_non_streaming(server, stub):
    streamed = backend(server, stream=True).review_chunk(make_chunk(), "a.pdf")
    plain = backend(server, stream=False).review_chunk(make_chunk(), "a.pdf")
    assert streamed.outcome == plain.outcome == ReviewOutcome.ok
    assert dumped(streamed) == dumped(plain)
    s, p = streamed.calls[0], plain.calls[0]
    assert s.stop_reason == p.stop_reason == "tool_use"
    assert (s.input_tokens, s.output_tokens) == (p.input_tokens, p.output_tokens)
    assert s.first_token_ms is not None and s.first_token_ms <= s.latency_ms and p.first_token_ms is None


def test_usage_cache_and_cost_recorded(server, stub):
    b = backend(server)
    first = b.review_chunk(make_chunk(0), "a.pdf").calls[0]
    second = b.review_chunk(make_chunk(1), "a.pdf").calls[0]
    assert first.cache_creation_input_tokens > 0 and first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens > 0
    ratio = second.cache_read_input_tokens / (
        second.input_tokens + second.cache_read_input_tokens + second.cache_creation_input_tokens
    )
    assert ratio >= 0.85
    assert first.request_id.startswith("req_") and first.backend == "anthropic" and first.model == MODEL
    expected = (second.input_tokens * 3 + second.output_tokens * 15 + second.cache_read_input_tokens * 0.3) / 1e6
    assert second.cost_usd == pytest.approx(expected)
    override = backend(server, prices={MODEL: (1.0, 1.0, 1.0, 1.0)}).review_chunk(make_chunk(2), "a.pdf").calls[0]
    assert override.cost_usd == pytest.approx(
        (override.input_tokens + override.output_tokens + override.cache_read_input_tokens) / 1e6
    )


def test_truncated_reply_is_retried_never_empty(server, stub, clean):
    stub.enqueue("truncate")
    review = backend(server, stream=True).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and dumped(review) == clean
    assert [c.stop_reason for c in review.calls] == ["max_tokens", "tool_use"]
    assert [c.attempt for c in review.calls] == [1, 2]


def test_small_max_tokens_grows_until_the_reply_fits(server, stub, clean):
    review = backend(server, max_tokens=64, max_tokens_ceiling=8192).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and dumped(review) == clean
    stops = [c.stop_reason for c in review.calls]
    assert stops[-1] == "tool_use" and set(stops[:-1]) == {"max_tokens"} and len(stops) >= 3


def test_truncation_at_the_ceiling_splits_then_reports_truncated(server, stub):
    review = backend(server, max_tokens=40, max_tokens_ceiling=40).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.truncated  # never "ok with no findings"
    assert len(review.calls) > 1 and all(c.stop_reason == "max_tokens" for c in review.calls)


def test_split_chunk_keeps_text_and_pages():
    chunk = make_chunk().model_copy(update={"char_start": 1000, "char_end": 1000 + len(make_chunk().text)})
    left, right = split_chunk(chunk)
    assert left.text + right.text == chunk.text
    assert (left.char_start, left.char_end, right.char_start, right.char_end) == (
        1000,
        1000 + len(left.text),
        1000 + len(left.text),
        chunk.char_end,
    )
    for i in range(len(chunk.text)):
        half, off = (left, i) if i < len(left.text) else (right, i - len(left.text))
        assert half.page_at(off) == chunk.page_at(i)
    assert right.text[:1].isupper() or right.text[:1].isdigit()  # cut at a sentence start
    # both halves render and parse back exactly (page markers included)
    for half in (left, right):
        back = parse_rendered_chunk(render_chunk(half, "a.pdf"))
        assert (back.text, back.page_start, back.page_end, back.page_offsets) == (
            half.text,
            half.page_start,
            half.page_end,
            half.page_offsets,
        )


def test_all_tool_use_blocks_are_merged(server, stub, clean):
    stub.enqueue("multi_tool")
    review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and dumped(review) == clean
    assert f"merged {len(clean)} record_findings blocks" in review.detail


def test_string_array_is_repaired_and_logged(server, stub, clean, caplog):
    stub.enqueue("string_array")
    with caplog.at_level(logging.WARNING, logger="docreview.llm"):
        review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and dumped(review) == clean
    assert len(review.calls) == 1 and "repaired JSON-string field(s): $.findings" in review.detail
    assert any("repaired tool input: $.findings" in r.getMessage() for r in caplog.records)


def test_repair_is_narrow():
    schema = review_tool()["input_schema"]
    assert repair_tool_input({"findings": "[]"}, schema) == ({"findings": []}, ["$.findings"])
    # not JSON, or JSON of the wrong type: left alone for validation to reject
    assert repair_tool_input({"findings": "none"}, schema) == ({"findings": "none"}, [])
    assert repair_tool_input({"findings": '{"a": 1}'}, schema) == ({"findings": '{"a": 1}'}, [])
    # a string where the schema wants a string stays a string
    item = {"clause_type": "other", "summary": "[1]", "risk": "low", "evidence": "x", "page": 1, "values": "[]"}
    fixed, notes = repair_tool_input({"findings": [item]}, schema)
    assert fixed["findings"][0]["summary"] == "[1]" and fixed["findings"][0]["values"] == []
    assert notes == ["$.findings[0].values"]


def test_refusal_is_recorded(server, stub):
    stub.enqueue("refusal")
    review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.refusal and not review.findings
    assert [c.stop_reason for c in review.calls] == ["refusal"]


def test_context_window_stop_reason_is_its_own_outcome(server, stub):
    stub.enqueue("window_exceeded")
    review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.context_overflow
    assert review.calls[0].stop_reason == "model_context_window_exceeded"


def test_prompt_too_long_splits_the_chunk(server, stub):
    stub.enqueue("context_overflow")
    review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and review.findings
    assert review.calls[0].error_class == "BadRequestError" and len(review.calls) == 3
    assert "split in two" in review.detail


def test_missing_tool_call_gets_one_corrective_retry(server, stub, clean):
    stub.enqueue("no_tool")
    review = backend(server).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and dumped(review) == clean and len(review.calls) == 2
    # always without the tool call: recorded as invalid output after exactly one corrective retry
    always = backend(server, default_headers={"x-stub-fault": "no_tool"}).review_chunk(make_chunk(), "a.pdf")
    assert always.outcome == ReviewOutcome.invalid_output and len(always.calls) == 2
    assert "no record_findings call" in always.detail


def test_corrective_request_feeds_the_error_back(server):
    from tasks.review.backends.anthropic_backend import Reply, ToolBlock

    bad = Reply(
        stop_reason="tool_use",
        usage={},
        blocks=[ToolBlock(type="tool_use", name="record_findings", id="toolu_1", input={"findings": 3})],
    )
    req = backend(server).request(make_chunk(), "a.pdf", feedback=(bad, "findings: Input should be a valid list"))
    roles = [m["role"] for m in req["messages"]]
    assert roles == ["user", "assistant", "user"]
    result = req["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] and result["tool_use_id"] == "toolu_1"
    assert "valid list" in result["content"]


@pytest.mark.parametrize(
    "fault,error_class,status",
    [
        ("rate_limit:7", "RateLimitError", 429),
        ("overloaded", "OverloadedError", 529),
        ("server_error", "InternalServerError", 500),
        ("api_overloaded", "InternalServerError", 500),
        ("stream_error", "APIStatusError", 200),
    ],
)
def test_transient_errors_raise_retryable_with_the_call_recorded(server, stub, fault, error_class, status):
    stub.enqueue(fault)
    with pytest.raises(Exception) as info:
        backend(server, stream=True).review_chunk(make_chunk(), "a.pdf")
    exc = info.value
    assert type(exc).__name__ == error_class and exc.status_code == status
    assert is_retryable(exc)
    (call,) = exc.llm_calls
    assert call.error_class == error_class and call.attempt == 1
    if fault.startswith("rate_limit"):
        assert retry_after_s(exc) == 7.0 and call.request_id.startswith("req_")
    # the SDK made exactly one request (max_retries=0): the Prefect task is the only retry layer
    assert sum(stub.requests.values()) == 1


def test_failed_attempts_are_persisted_by_the_task(server, stub, db_url):
    from tasks.review.reviewer import review_chunk
    from tasks.store.persist import dispose_engines, get_engine

    b = backend(server)
    stub.enqueue("overloaded")
    with pytest.raises(anthropic.InternalServerError):
        review_chunk.fn(b, make_chunk(), "a.pdf", db_url, "run-1")
    review = review_chunk.fn(b, make_chunk(), "a.pdf", db_url, "run-1")  # the retry succeeds
    try:
        with Session(get_engine(db_url)) as s:
            rows = s.exec(select(LLMCallRow).where(LLMCallRow.run_id == "run-1")).all()
        assert [(r.attempt, r.error_class) for r in rows] == [(1, "OverloadedError")]
        assert [c.attempt for c in review.calls] == [2]  # the flow stores these on success
    finally:
        dispose_engines()


def test_thinking_with_forced_tool_choice_is_rejected_before_any_call(server, stub):
    with pytest.raises(LLMConfigError, match="extended thinking"):
        backend(server, thinking_budget_tokens=2048)
    with pytest.raises(LLMConfigError, match="ceiling"):
        backend(server, max_tokens=8192, max_tokens_ceiling=4096)
    assert sum(stub.requests.values()) == 0


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-5-5",
        "claude-opus-5-5",
        "global.anthropic.claude-sonnet-5-5",
        "claude-fable-5-2",
        "claude-mythos-5-1",
    ],
)
def test_forced_tool_mode_is_refused_before_any_call_where_the_api_rejects_it(server, stub, model):
    with pytest.raises(LLMConfigError, match="forced tool_choice"):
        AnthropicBackend("test-key", model, base_url=server.url, timeout_s=20, output_mode="tool")
    # by capability the same model gets structured outputs, and no call is made either
    made = AnthropicBackend("test-key", model, base_url=server.url, timeout_s=20)
    _opened.append(made)
    assert made.mode == "json_schema" and "tool_choice" not in made.request(make_chunk(), "a.pdf")
    assert sum(stub.requests.values()) == 0


def test_double_rejects_forced_tool_choice_where_the_api_does(server, stub):
    """The wire rule the config check guards against, as the double answers it."""
    import httpx

    body = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "x"}],
        "tools": [review_tool()],
        "tool_choice": {"type": "tool", "name": review_tool()["name"]},
    }
    with httpx.Client(base_url=server.url, timeout=10) as client:
        refused = client.post("/v1/messages", json=body, headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
        body["model"] = MODEL
        accepted = client.post("/v1/messages", json=body, headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
    assert refused.status_code == 400 and "tool_choice" in refused.json()["error"]["message"]
    assert accepted.status_code == 200 and accepted.json()["stop_reason"] in ("tool_use", "max_tokens")


def test_bedrock_inference_profile_ids_are_priced_by_model_family():
    assert price_for("global.anthropic.claude-sonnet-4-6") == price_for("claude-sonnet-4-6") == (3.0, 15.0, 3.75, 0.30)
    assert price_for("anthropic.claude-haiku-4-5-20251001-v1:0") == price_for("claude-haiku-4-5")
    assert price_for("some-other-model") is None


def test_count_tokens_preflight_measures_the_prefix(server, stub):
    b = backend(server, count_tokens_preflight=True)
    b.review_chunk(make_chunk(), "a.pdf")
    assert stub.requests["/v1/messages/count_tokens"] == 1
    assert b.prefix_tokens >= prefix_tokens_estimate(b.mode)
    assert cache_prefix_check(MODEL, b.prefix_tokens)[0]


def test_a_playbook_party_is_in_the_system_prompt_and_the_prompt_version(server, stub):
    plain, for_acme = backend(server), backend(server, party="Acme Corp")
    request = for_acme.request(make_chunk(), "a.pdf")
    assert "You review for Acme Corp." in request["system"][0]["text"]
    assert "You review for" not in plain.request(make_chunk(), "a.pdf")["system"][0]["text"]
    from schemas.findings import PROMPT_VERSION

    assert plain.prompt_version == PROMPT_VERSION
    assert (
        for_acme.prompt_version.startswith(f"{PROMPT_VERSION}+party-")
        and for_acme.prompt_version != backend(server, party="Other Corp").prompt_version
    )  # a review for another party is not reused
    review = for_acme.review_chunk(make_chunk(), "a.pdf")  # the double accepts the request
    assert review.outcome == ReviewOutcome.ok and review.findings


def test_a_passage_names_the_section_it_starts_under_and_round_trips():
    from schemas.documents import Chunk
    from tasks.review.backends.prompt import fixed_instructions, parse_rendered_chunk, render_chunk

    chunk = Chunk(
        document_sha256="a" * 64,
        index=4,
        char_start=0,
        char_end=30,
        page_start=7,
        page_end=7,
        text="Neither party shall be liable for more than the fees paid.",
        heading="15.3   LIMITATION\nOF LIABILITY",
    )
    message = render_chunk(chunk, "msa.pdf")
    assert message.startswith("Section: '15.3 LIMITATION OF LIABILITY'\nDocument: 'msa.pdf', passage 5 (pages 7-7).")
    assert parse_rendered_chunk(message).text == chunk.text  # the test double still reads the passage
    assert "Section: '" not in render_chunk(chunk.model_copy(update={"heading": None}), "msa.pdf")
    instructions = fixed_instructions("tool")
    assert "introduced by 'Section:'" in instructions and "IN WITNESS WHEREOF" in instructions


def test_one_hour_cache_writes_are_priced_at_twice_the_input_price():
    """prompt-caching, "Pricing": 1-hour writes cost 2x input, 5-minute writes 1.25x (Sonnet 4.6: $3 input)."""
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 1_000_000}
    assert cost_usd(MODEL, usage) == pytest.approx(3.75)
    assert cost_usd(MODEL, usage, cache_ttl="1h") == pytest.approx(6.0)
    split = {**usage, "cache_creation": {"ephemeral_5m_input_tokens": 500_000, "ephemeral_1h_input_tokens": 500_000}}
    assert cost_usd(MODEL, split) == pytest.approx(3.75 / 2 + 6.0 / 2)


def test_a_run_that_would_call_a_retired_model_is_refused_naming_the_setting(monkeypatch):
    from cli.checks import check_backend
    from schemas.settings import Settings

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("DOCREVIEW_BACKEND", "anthropic")
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-sonnet-4-20250514")
    assert "DOCREVIEW_ANTHROPIC_MODEL" in (check_backend(Settings()) or "")
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-sonnet-5-5")
    monkeypatch.setenv("DOCREVIEW_VERIFIER_MODEL", "claude-3-haiku-20240307")
    monkeypatch.setenv("DOCREVIEW_VERIFIER_ENABLED", "true")
    assert "DOCREVIEW_VERIFIER_MODEL" in (check_backend(Settings()) or "")
    monkeypatch.setenv("DOCREVIEW_BACKEND", "rules")  # offline, verifier off: no model is called
    monkeypatch.setenv("DOCREVIEW_VERIFIER_ENABLED", "false")
    assert check_backend(Settings()) is None
