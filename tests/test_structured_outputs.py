"""Structured outputs by model capability, through the real SDK / boto3 against the local test double.

Every model family in the capability table is reviewed through both backends, streaming and
not; the double enforces the API's documented request rules, so a request the service would
refuse fails here with a 400. The double answers from the rules backend: these tests check the
request shapes and reply handling, never Claude's quality.
"""

from __future__ import annotations

import json
import logging
import typing
import warnings

import httpx
import pytest

from docreview_testing.api_rules import schema_errors
from schemas.findings import ReviewToolInput
from schemas.review import ReviewOutcome
from tasks.review.backends.anthropic_backend import AnthropicBackend, LLMConfigError, is_context_overflow
from tasks.review.backends.bedrock_backend import BedrockBackend, BedrockMessagesBackend, bedrock_backend_for
from tasks.review.backends.models import (
    CAPABILITIES,
    DEFAULT_MODEL,
    LEGACY_DEFAULT_MODEL,
    UNKNOWN_MODEL,
    bedrock_model_id,
    bedrock_route,
    capability,
    lookup,
    output_mode,
    retired,
)
from tasks.review.backends.prompt import api_schema, output_format, review_tool
from tests.test_stub_llm import make_chunk

#: One concrete model id per capability-table family (dated ids where the family prefix alone is
#: not an id the API serves).
FAMILY_IDS = {
    prefix: {
        "claude-fable-5": "claude-fable-5-2",
        "claude-mythos-5": "claude-mythos-5-2",
    }.get(prefix, prefix)
    for prefix in CAPABILITIES
}

HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}


@pytest.fixture
def stub(server, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    server.stub.reset()
    server.stub.faults = []
    return server.stub


_opened: list = []


@pytest.fixture(autouse=True)
def _close_clients():
    """Close every SDK client a test opened."""
    yield
    while _opened:
        _opened.pop().close()


def anthropic_backend(server, model: str, **kw) -> AnthropicBackend:
    made = AnthropicBackend("test-key", model, base_url=server.url, timeout_s=20, **kw)
    _opened.append(made)
    return made


def bedrock_backend(server, model: str, **kw) -> BedrockBackend | BedrockMessagesBackend:
    """The Bedrock backend the product builds for ``model``: Claude in Amazon Bedrock's Messages API for Opus
    4.7 and later, Converse for the legacy integration's models."""
    made = bedrock_backend_for(bedrock_model_id(model), region="us-east-1", endpoint_url=server.url, timeout_s=20, **kw)
    _opened.append(made)
    return made


def _deprecated(model: str) -> bool:
    from anthropic._data.deprecated_models import DEPRECATED_MODELS

    return model in DEPRECATED_MODELS


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["anthropic", "bedrock"])
@pytest.mark.parametrize("model", sorted(FAMILY_IDS.values()))
def test_every_family_reviews_through_the_double_with_zero_400s(server, stub, model, api, stream):
    make = anthropic_backend if api == "anthropic" else bedrock_backend
    b = make(server, model, stream=stream)
    # Claude in Amazon Bedrock offers no structured outputs: the tool there (forced where the model takes it)
    on_bedrock_messages = api == "bedrock" and bedrock_route(model).api == "messages"
    assert b.mode == ("tool" if on_bedrock_messages else output_mode(model))
    if api == "anthropic" and _deprecated(model):
        with pytest.warns(DeprecationWarning, match="deprecated"):  # the SDK's own warning, asserted
            review = b.review_chunk(make_chunk(), "a.pdf")
    else:
        review = b.review_chunk(make_chunk(), "a.pdf")
    assert stub.errors == {}, f"the double refused a request for {model}: {stub.errors}"
    assert review.outcome == ReviewOutcome.ok and len(review.findings) >= 4
    assert all(f.evidence in make_chunk().text and f.page >= 1 for f in review.findings)
    (call,) = review.calls
    assert call.error_class is None
    assert call.stop_reason == ("end_turn" if b.mode == "json_schema" else "tool_use")


def test_same_findings_on_both_paths_and_both_apis(server, stub):
    """Structured outputs (Sonnet 5.5) and the forced tool (Sonnet 4.6) give the same findings."""
    dump = lambda r: [f.model_dump(mode="json") for f in r.findings]  # noqa: E731
    json_mode = anthropic_backend(server, DEFAULT_MODEL).review_chunk(make_chunk(), "a.pdf")
    tool_mode = anthropic_backend(server, LEGACY_DEFAULT_MODEL, output_mode="tool").review_chunk(make_chunk(), "a.pdf")
    converse = bedrock_backend(server, DEFAULT_MODEL).review_chunk(make_chunk(), "a.pdf")
    assert dump(json_mode) == dump(tool_mode) == dump(converse) and json_mode.findings
    assert stub.errors == {}


def test_request_shapes_by_capability(server, stub):
    so = anthropic_backend(server, "claude-sonnet-5-5").request(make_chunk(), "a.pdf")
    assert so["output_config"] == {"format": output_format()} and "tools" not in so and "tool_choice" not in so
    assert so["thinking"] == {"type": "between_tools"}  # up-front thinking off where the model allows it
    assert "stop_sequences" not in so and "JSON" in so["messages"][0]["content"]
    opus = anthropic_backend(server, "claude-opus-5-5").request(make_chunk(), "a.pdf")
    assert "thinking" not in opus  # thinking cannot be turned off on Opus 5.5: nothing is sent
    with pytest.raises(LLMConfigError, match="retired"):  # Sonnet 4.0 is retired: requests to it fail
        anthropic_backend(server, "claude-sonnet-4-20250514")
    legacy = anthropic_backend(server, LEGACY_DEFAULT_MODEL, output_mode="tool").request(make_chunk(), "a.pdf")
    assert legacy["tools"][0]["strict"] is True and "output_config" not in legacy
    conv = bedrock_backend(server, LEGACY_DEFAULT_MODEL).request(make_chunk(), "a.pdf")  # Converse
    fmt = conv["outputConfig"]["textFormat"]
    assert fmt["type"] == "json_schema" and json.loads(fmt["structure"]["jsonSchema"]["schema"]) == api_schema()
    assert "toolConfig" not in conv and conv["system"][-1] == {"cachePoint": {"type": "default"}}
    assert conv["modelId"] == "global.anthropic.claude-sonnet-4-6"
    # Claude in Amazon Bedrock: no structured outputs, and Sonnet 5.5 takes no forced tool: the tool, offered
    mantle = bedrock_backend(server, "claude-sonnet-5-5")
    assert isinstance(mantle, BedrockMessagesBackend) and mantle.model == "anthropic.claude-sonnet-5-5"
    offered = mantle.request(make_chunk(), "a.pdf")
    assert "output_config" not in offered and offered["tool_choice"]["type"] == "auto"
    assert "strict" not in offered["tools"][0] and offered["thinking"] == {"type": "between_tools"}
    forced = bedrock_backend(server, "claude-opus-4-8").request(make_chunk(), "a.pdf")
    assert forced["tool_choice"] == {"type": "tool", "name": "record_findings", "disable_parallel_tool_use": True}


# --- the schemas sent are ones the API accepts -------------------------------------------------


def _sent_schemas(req: dict) -> list[dict]:
    out = [t["input_schema"] for t in req.get("tools", []) if t.get("strict")]
    if "output_config" in req:
        out.append(req["output_config"]["format"]["schema"])
    for tool in (req.get("toolConfig") or {}).get("tools", []):
        if tool["toolSpec"].get("strict"):
            out.append(tool["toolSpec"]["inputSchema"]["json"])
    if "outputConfig" in req:
        out.append(json.loads(req["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"]))
    return out


def test_no_schema_sent_has_an_unsupported_keyword(server, stub):
    """Fails if any strict schema a backend sends holds a keyword strict schemas do not support."""
    sent = []
    for model in FAMILY_IDS.values():
        for mode in (None, "tool"):
            if mode == "tool" and not capability(model).forced_tool_choice:
                continue
            for make in (anthropic_backend, bedrock_backend):
                sent += _sent_schemas(make(server, model, output_mode=mode).request(make_chunk(), "a.pdf"))
    assert len(sent) >= len(FAMILY_IDS)
    for schema in sent:
        assert schema_errors(schema) == []
    assert schema_errors(review_tool()["input_schema"]) == [] and schema_errors(api_schema()) == []


def test_the_schema_check_catches_what_the_api_rejects():
    raw = ReviewToolInput.model_json_schema()  # page has ge=1: "minimum": 1
    assert any("minimum" in e for e in schema_errors(raw))
    assert any("maxLength" in e for e in schema_errors({"type": "string", "maxLength": 3}))
    assert any("minItems" in e for e in schema_errors({"type": "array", "items": {"type": "string"}, "minItems": 2}))
    assert schema_errors({"type": "array", "items": {"type": "string"}, "minItems": 1}) == []
    # structured-outputs, "JSON Schema limitations": simple patterns and defaults are supported (the double
    # refused both before); backreferences, lookaround and word boundaries are not
    assert schema_errors({"type": "string", "pattern": "^[A-Z]{2}-\\d+$", "default": "AB-1"}) == []
    for bad in ("(a)\\1", "^(?=a)", "(?<!x)y", "\\bword"):
        assert any("pattern" in e for e in schema_errors({"type": "string", "pattern": bad})), bad
    assert any("format" in e for e in schema_errors({"type": "string", "format": "regex"}))
    assert any("additionalProperties" in e for e in schema_errors({"type": "object", "properties": {}}))
    assert any(
        "additionalProperties" in e
        for e in schema_errors({"type": "object", "properties": {}, "additionalProperties": {"type": "string"}})
    )
    # the SDK's transform makes each of them acceptable, and pydantic still enforces page >= 1
    from anthropic import transform_schema

    assert schema_errors(transform_schema(raw)) == []
    with pytest.raises(ValueError):
        ReviewToolInput.model_validate(
            {"findings": [{"clause_type": "other", "summary": "s", "risk": "low", "evidence": "e", "page": 0}]}
        )


# --- the double's rules, as the API answers them -----------------------------------------------


def _post(server, body: dict) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        return client.post("/v1/messages", json=body, headers=HEADERS)


def _base(model: str, **extra) -> dict:
    return {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "x"}], **extra}


@pytest.mark.parametrize(
    "model,extra,message",
    [
        (
            "claude-sonnet-4-6",
            {"tools": [dict(review_tool(), input_schema=ReviewToolInput.model_json_schema())]},
            "properties minimum are not supported",
        ),
        (
            "claude-sonnet-4-6",
            {
                "output_config": {
                    "format": {
                        "type": "json_schema",
                        "schema": {
                            "type": "object",
                            "properties": {"n": {"type": "integer", "maximum": 3}},
                            "additionalProperties": False,
                        },
                    }
                }
            },
            "maximum",
        ),
        (
            "claude-sonnet-5-5",
            {"tools": [review_tool()], "tool_choice": {"type": "tool", "name": "record_findings"}},
            "are not supported for this model",
        ),
        (
            "claude-fable-5-2",
            {"tools": [review_tool()], "tool_choice": {"type": "any"}},
            "are not supported for this model",
        ),
        ("claude-opus-5-5", {"thinking": {"type": "disabled"}}, "thinking.type"),
        ("claude-sonnet-5", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, "thinking.type"),
        (
            "claude-sonnet-5",
            {"tools": [review_tool()], "tool_choice": {"type": "tool", "name": "record_findings"}},
            "Thinking may not be enabled",
        ),  # thinks by default: forced tool use needs thinking disabled
    ],
)
def test_double_refuses_what_the_api_refuses(server, stub, model, extra, message):
    resp = _post(server, _base(model, **extra))
    assert resp.status_code == 400 and resp.json()["error"]["type"] == "invalid_request_error"
    assert message in resp.json()["error"]["message"]


def test_double_accepts_the_documented_alternatives(server, stub):
    ok = [
        _base(
            "claude-sonnet-5",
            tools=[review_tool()],
            thinking={"type": "disabled"},
            tool_choice={"type": "tool", "name": "record_findings"},
        ),
        _base("claude-sonnet-5-5", output_config={"format": output_format()}, thinking={"type": "between_tools"}),
        _base("claude-opus-5-5", output_config={"format": output_format()}),
        _base("claude-sonnet-4-6", max_tokens=0),
    ]
    for body in ok:
        assert _post(server, body).status_code == 200, body["model"]


def test_structured_output_reply_is_json_text_and_streams_as_text_deltas(server, stub):
    from tasks.review.backends.prompt import render_chunk, system_blocks

    body = _base(
        "claude-opus-5-5",
        max_tokens=4096,
        output_config={"format": output_format()},
        system=system_blocks(mode="json_schema"),
        messages=[{"role": "user", "content": render_chunk(make_chunk(), "a.pdf", "json_schema")}],
    )
    plain = _post(server, body).json()
    kinds = [b["type"] for b in plain["content"]]
    assert kinds == ["thinking", "text"] and plain["stop_reason"] == "end_turn"  # Opus 5.5 always thinks
    findings = ReviewToolInput.model_validate_json(plain["content"][1]["text"]).findings
    streamed = _post(server, {**body, "stream": True}).text
    deltas = [
        json.loads(line[6:])["delta"]
        for line in streamed.splitlines()
        if line.startswith("data: ") and '"content_block_delta"' in line
    ]
    text = "".join(d["text"] for d in deltas if d["type"] == "text_delta")
    assert {d["type"] for d in deltas} == {"thinking_delta", "signature_delta", "text_delta"}
    assert ReviewToolInput.model_validate_json(text).findings == findings and findings


def test_converse_double_refuses_a_forced_tool_where_the_model_rejects_it(server, stub):
    import boto3
    from botocore.exceptions import ClientError

    client = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=server.url)
    tool = review_tool()
    spec = {
        "name": tool["name"],
        "description": tool["description"],
        "inputSchema": {"json": tool["input_schema"]},
        "strict": True,
    }
    with pytest.raises(ClientError) as info:
        client.converse(
            modelId="global.anthropic.claude-sonnet-5-5",
            messages=[{"role": "user", "content": [{"text": "x"}]}],
            toolConfig={"tools": [{"toolSpec": spec}], "toolChoice": {"tool": {"name": tool["name"]}}},
        )
    client.close()
    assert info.value.response["Error"]["Code"] == "ValidationException"
    assert "are not supported for this model" in info.value.response["Error"]["Message"]


# --- unknown models, defaults, ids -------------------------------------------------------------


def test_unknown_model_starts_with_a_warning_naming_the_assumptions(server, stub, caplog):
    with caplog.at_level(logging.WARNING, logger="docreview.llm"):
        b = anthropic_backend(server, "claude-nova-9-1")
        review = b.review_chunk(make_chunk(), "a.pdf")
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "not in the capability table" in text and "structured outputs" in text and "no thinking" in text
    assert b.mode == "json_schema" and capability("claude-nova-9-1") is UNKNOWN_MODEL
    assert review.outcome == ReviewOutcome.ok and review.findings and stub.errors == {}
    with pytest.raises(LLMConfigError, match="forced tool_choice"):  # forcing the tool is not assumed to work
        anthropic_backend(server, "claude-nova-9-1", output_mode="tool")


def test_every_model_the_sdk_lists_is_in_the_table():
    from anthropic.types.model_param import ModelParam

    literal = typing.get_args(ModelParam)[0]
    listed = typing.get_args(literal)
    assert len(listed) >= 15
    missing = [m for m in listed if lookup(m) is None and retired(m) is None]
    assert missing == []


def test_no_selectable_model_is_a_retired_one():
    """A model of the capability table is one a run may select: none of them may be retired, and every
    retired family is refused before a run starts."""
    from tasks.review.backends.anthropic_backend import validate_config

    assert [p for p in CAPABILITIES if retired(p)] == []
    assert retired("claude-3-haiku-20240307") == "Claude Haiku 3"
    assert retired("us.anthropic.claude-sonnet-4-20250514-v1:0") == "Claude Sonnet 4"
    assert retired("claude-sonnet-4-6") is None and retired(DEFAULT_MODEL) is None
    with pytest.raises(LLMConfigError, match="retired"):
        validate_config("claude-opus-4-1-20250805", 4096, 16384, 60)


def test_defaults_and_bedrock_ids(monkeypatch):
    from schemas.settings import Settings
    from tasks.review.reviewer import bedrock_model_for

    for key in (
        "DOCREVIEW_ANTHROPIC_MODEL",
        "DOCREVIEW_BEDROCK_MODEL_ID",
        "DOCREVIEW_BEDROCK_INFERENCE_PROFILE",
        "DOCREVIEW_BEDROCK_REGION",
        "AWS_REGION",
    ):
        monkeypatch.delenv(key, raising=False)
    settings = Settings()
    assert settings.anthropic_model == DEFAULT_MODEL == "claude-sonnet-5-5"
    # the default model is on Claude in Amazon Bedrock's Messages API: its id carries no profile (the
    # endpoint's region serves it); a Converse model's default profile is the region's geography, never global
    assert bedrock_model_for(settings) == "anthropic.claude-sonnet-5-5"
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", LEGACY_DEFAULT_MODEL)
    assert bedrock_model_for(Settings()) == "us.anthropic.claude-sonnet-4-6"
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-opus-4-6")
    assert bedrock_model_for(Settings()) == "us.anthropic.claude-opus-4-6-v1"  # the documented id, with -v1
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-haiku-4-5")
    assert bedrock_model_for(Settings()) == "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    monkeypatch.setenv("DOCREVIEW_BEDROCK_INFERENCE_PROFILE", "apac")  # the table has no apac column for it
    with pytest.raises(ValueError, match="global, us, eu"):
        bedrock_model_for(Settings())
    monkeypatch.setenv("DOCREVIEW_BEDROCK_INFERENCE_PROFILE", "eu")
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", LEGACY_DEFAULT_MODEL)
    assert bedrock_model_for(Settings()) == "eu.anthropic.claude-sonnet-4-6"
    monkeypatch.setenv("DOCREVIEW_BEDROCK_MODEL_ID", "anthropic.claude-haiku-4-5-20251001-v1:0")
    assert bedrock_model_for(Settings()) == "anthropic.claude-haiku-4-5-20251001-v1:0"
    assert bedrock_model_id("claude-opus-5-5", "") == "anthropic.claude-opus-5-5"
    assert capability("us.anthropic.claude-opus-5-5") is CAPABILITIES["claude-opus-5-5"]


# --- cache warm-up ------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["anthropic", "bedrock"])
def test_warm_cache_writes_the_prefix_the_first_reviews_read(server, stub, api):
    make = anthropic_backend if api == "anthropic" else bedrock_backend
    b = make(server, DEFAULT_MODEL)
    (warm,) = b.warm_cache()
    assert warm.cache_creation_input_tokens > 2000 and warm.cache_read_input_tokens == 0
    assert warm.error_class is None and warm.backend == api and warm.cost_usd > 0
    first = b.review_chunk(make_chunk(0), "a.pdf").calls[0]
    second = b.review_chunk(make_chunk(1), "a.pdf").calls[0]
    for call in (first, second):
        assert (
            call.cache_read_input_tokens == warm.cache_creation_input_tokens and call.cache_creation_input_tokens == 0
        )
    assert stub.errors == {} and stub.refusals == []
    if api == "anthropic":  # structured outputs refuse max_tokens 0: the review's prefix with one output token
        assert warm.output_tokens == 1 and warm.stop_reason == "max_tokens"


@pytest.mark.parametrize("mode", ["json_schema", "tool"])
def test_the_warm_up_is_a_request_the_prompt_caching_docs_accept(server, stub, mode):
    """prompt-caching, "Pre-warming the cache > Limitations": max_tokens 0 is refused with structured outputs
    or a forced tool_choice (and stream, enabled thinking). The warm-up sent before each run takes the form
    the docs accept for its mode, and the reviews read the prefix it wrote."""
    b = anthropic_backend(server, DEFAULT_MODEL if mode == "json_schema" else LEGACY_DEFAULT_MODEL, output_mode=mode)
    req = b.warm_up_request()
    review = b.request(make_chunk(), "a.pdf")
    if mode == "tool":
        assert req["max_tokens"] == 0 and "tool_choice" not in req and review["tool_choice"]["type"] == "tool"
        assert req["tools"] == review["tools"] and req["system"] == review["system"]
    else:
        assert req["max_tokens"] == 1 and req["output_config"] == review["output_config"]
    assert "stream" not in req and (req.get("thinking") or {}).get("type") != "enabled"
    (warm,) = b.warm_cache()
    first = b.review_chunk(make_chunk(0), "a.pdf").calls[0]
    assert stub.refusals == [] and warm.error_class is None
    assert warm.output_tokens == (0 if mode == "tool" else 1)
    assert first.cache_read_input_tokens == warm.cache_creation_input_tokens > 0


# --- context overflow -----------------------------------------------------------------------------


def test_the_three_context_overflow_messages_split_the_chunk(server, stub):
    assert is_context_overflow(Exception("prompt is too long: 210000 tokens > 200000 maximum"))
    assert is_context_overflow(Exception("Input is too long for requested model."))
    assert is_context_overflow(Exception("input length and `max_tokens` exceed context limit: 195000 + 16384 > 200000"))
    assert not is_context_overflow(Exception("Too many tokens, please wait before trying again."))
    stub.enqueue("context_limit")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        review = anthropic_backend(server, DEFAULT_MODEL).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and review.findings and "split in two" in review.detail
    assert review.calls[0].error_class == "BadRequestError" and len(review.calls) == 3


def test_invalid_json_reply_gets_one_corrective_retry(server, stub):
    stub.enqueue("no_tool")  # a text reply that is not JSON
    review = anthropic_backend(server, DEFAULT_MODEL).review_chunk(make_chunk(), "a.pdf")
    assert review.outcome == ReviewOutcome.ok and review.findings and len(review.calls) == 2
    stub.enqueue("truncate")
    cut = anthropic_backend(server, DEFAULT_MODEL).review_chunk(make_chunk(), "a.pdf")
    assert cut.outcome == ReviewOutcome.ok and [c.stop_reason for c in cut.calls] == ["max_tokens", "end_turn"]
    stub.enqueue("string_array")
    fixed = anthropic_backend(server, DEFAULT_MODEL).review_chunk(make_chunk(), "a.pdf")
    assert fixed.outcome == ReviewOutcome.ok and "repaired" in (fixed.detail or "")


def test_warm_up_calls_are_stored_and_measured(server, stub, db_url):
    """Stored under WARMUP_CHUNK_INDEX, the warm-up's cost is a run metric and no review call writes the cache."""
    from sqlmodel import Session, select

    from schemas.tables import LLMCallRow
    from tasks.observe.metrics import _llm_call_metrics
    from tasks.review.backends.anthropic_backend import WARMUP_CHUNK_INDEX
    from tasks.review.backends.rules import RulesBackend
    from tasks.review.pii import RedactingBackend
    from tasks.store.persist import dispose_engines, get_engine, save_llm_calls, unit_of_work

    assert RulesBackend().warm_cache() == []
    wrapped = RedactingBackend(anthropic_backend(server, DEFAULT_MODEL))
    warm = wrapped.warm_cache()
    try:
        with unit_of_work(db_url) as session:
            save_llm_calls.fn(session, "run-w", "", WARMUP_CHUNK_INDEX, warm)
        for i in range(3):
            review = wrapped.review_chunk(make_chunk(i), "a.pdf")
            with unit_of_work(db_url) as session:
                save_llm_calls.fn(session, "run-w", "ab" * 32, i, review.calls)
        with Session(get_engine(db_url)) as s:
            rows = s.exec(select(LLMCallRow).where(LLMCallRow.run_id == "run-w")).all()
        metrics = _llm_call_metrics(rows)
        assert metrics["cache_write_calls"] == 0 and metrics["cache_warmup_usd"] == pytest.approx(warm[0].cost_usd)
        assert metrics["cache_warmup_usd"] > 0 and metrics["cache_hit_ratio"] > 0.5
    finally:
        dispose_engines()


def test_count_tokens_preflight_measures_the_structured_output_prefix(server, stub):
    from tasks.review.backends.prompt import prefix_tokens_estimate

    b = anthropic_backend(server, DEFAULT_MODEL, count_tokens_preflight=True)
    b.review_chunk(make_chunk(), "a.pdf")
    assert stub.requests["/v1/messages/count_tokens"] == 1 and stub.errors == {}
    assert b.prefix_tokens >= prefix_tokens_estimate("json_schema") > 512


def test_concurrent_first_calls_each_write_the_cache_unless_it_was_warmed(server, stub):
    """The double makes a written prefix readable only once the writing response begins (after
    its first-token latency), as the API does: requests arriving before then each pay the write.
    After warm_cache has returned, every first call reads."""
    from docreview_testing.stub_llm import StubLLM, messages_segments

    body = anthropic_backend(server, DEFAULT_MODEL).request(make_chunk(), "a.pdf")
    double = StubLLM()
    first = double.cache_usage(DEFAULT_MODEL, messages_segments(body), visible_after_s=3600)
    second = double.cache_usage(DEFAULT_MODEL, messages_segments(body), visible_after_s=3600)  # before it is readable
    assert first["cache_creation_input_tokens"] == second["cache_creation_input_tokens"] > 0
    assert second["cache_read_input_tokens"] == 0

    stub.ttft_ms = 50.0
    try:
        warmed = anthropic_backend(server, DEFAULT_MODEL, stream=False)
        (warm,) = warmed.warm_cache()  # returns once its response has begun: the prefix is readable
        calls = [warmed.review_chunk(make_chunk(i), "a.pdf").calls[0] for i in range(3)]
    finally:
        stub.ttft_ms = 0.0
    assert warm.cache_creation_input_tokens == first["cache_creation_input_tokens"]
    assert all(c.cache_creation_input_tokens == 0 and c.cache_read_input_tokens > 0 for c in calls)


FILING_TEXT = (
    "Consolidated Statement of Cash Flows\n(Millions) 2018 2017 2016\n"
    "Net cash provided by (used in) operating activities 6,439 6,240 6,662\n"
    "Purchases of property, plant and equipment (PP&E) (1,577) (1,373) (1,420)\n"
    "Dividends paid to shareholders (3,193) (2,803) (2,678)\n"
    "Depreciation and amortization 1,488 1,544 1,474\nOther net 9 (6) (4)\n"
)


def filing_chunk():
    return make_chunk().model_copy(
        update={
            "text": FILING_TEXT,
            "char_end": len(FILING_TEXT),
            "page_offsets": [],
            "page_start": 60,
            "page_end": 60,
            "profile": "filing",
        }
    )


def test_filing_schema_uses_the_filing_topics_and_is_api_conformant():
    schema = api_schema("filing")
    topics = json.dumps(schema)
    assert '"going_concern"' in topics and '"key_figure"' in topics and '"governing_law"' not in topics
    assert '"governing_law"' in json.dumps(api_schema()) and '"going_concern"' not in json.dumps(api_schema())
    assert schema_errors(schema) == [] and schema_errors(review_tool(profile="filing")["input_schema"]) == []
    assert output_format("filing")["schema"] == schema


@pytest.mark.parametrize("api", ["anthropic", "bedrock"])
@pytest.mark.parametrize("mode", [None, "tool"])
def test_a_filing_chunk_is_reviewed_with_the_filing_prompt_and_schema(server, stub, api, mode):
    from schemas.filings import FilingFinding, FilingTopic

    make = anthropic_backend if api == "anthropic" else bedrock_backend
    b = make(server, LEGACY_DEFAULT_MODEL if mode == "tool" else DEFAULT_MODEL, output_mode=mode)
    request = b.request(filing_chunk(), "10k.pdf")
    sent = json.dumps(request)
    assert "SEC filing" in sent and "going_concern" in sent
    assert "SEC filing" not in json.dumps(b.request(make_chunk(), "a.pdf"))  # contracts keep the contract prompt
    review = b.review_chunk(filing_chunk(), "10k.pdf")
    assert stub.errors == {}
    assert review.outcome == ReviewOutcome.ok and review.findings
    assert all(isinstance(f, FilingFinding) and f.clause_type is FilingTopic.key_figure for f in review.findings)
    assert any(v.value == "(1,577)" for f in review.findings for v in f.values)
