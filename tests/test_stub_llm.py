"""The local Messages-API / Converse test double: wire format, validation, cache, faults, latency.

The double answers from the rules backend; these tests check the protocol it speaks (what the
real SDKs parse), not any model quality.
"""

from __future__ import annotations

import json

import httpx
import pytest

from docreview_testing.stub_llm import eventstream_message, parse_faults
from schemas.documents import Chunk
from tasks.review.backends.prompt import render_chunk, review_tool, system_blocks

PAGE1 = (
    "MASTER SUPPLY AGREEMENT\n\nThis Agreement is made as of the 1st day of March, 2020 by and between "
    'Northwind Components, Inc., a Delaware corporation ("Supplier"), and Harbor Retail LLC ("Customer").\n\n'
    "1. Term. The initial term of this Agreement shall continue for a period of five (5) years from the "
    "Effective Date. Thereafter, this Agreement shall automatically renew for successive one (1) year terms "
    "unless either party gives written notice of non-renewal at least ninety (90) days prior to the end of "
    "the then-current term.\n\n"
)
PAGE2 = (
    "2. Limitation of Liability. In no event shall either party's aggregate liability under this Agreement "
    "exceed One Million Dollars ($1,000,000).\n\n3. Governing Law. This Agreement shall be governed by and "
    "construed in accordance with the laws of the State of New York.\n\n4. Assignment. Neither party may "
    "assign this Agreement without the prior written consent of the other party."
)


def make_chunk(index: int = 0) -> Chunk:
    """A two-page passage with clauses the rules extractor finds."""
    text = PAGE1 + PAGE2
    return Chunk(
        document_sha256="ab" * 32,
        index=index,
        char_start=0,
        char_end=len(text),
        page_start=1,
        page_end=2,
        text=text,
        page_offsets=[len(PAGE1)],
    )


@pytest.fixture
def stub(server):
    server.stub.reset()
    server.stub.ttft_ms = server.stub.token_ms = 0.0
    server.stub.faults = []
    return server.stub


def body(chunk: Chunk, stream: bool = False, **extra) -> dict:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "stream": stream,
        "system": system_blocks(),
        "tools": [review_tool()],
        "tool_choice": {"type": "tool", "name": "record_findings"},
        "messages": [{"role": "user", "content": render_chunk(chunk, "a.pdf")}],
        **extra,
    }


HEADERS = {"x-api-key": "test", "anthropic-version": "2023-06-01"}


def sse_events(text: str) -> list[tuple[str, dict]]:
    out = []
    for frame in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_sse_wire_format_and_tool_input_reassembles(server, stub):
    with httpx.Client() as client:
        resp = client.post(f"{server.url}/v1/messages", json=body(make_chunk(), stream=True), headers=HEADERS)
    assert resp.status_code == 200 and resp.headers["content-type"] == "text/event-stream"
    assert resp.headers["request-id"].startswith("req_")
    events = sse_events(resp.text)
    names = [e for e, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    start = events[0][1]["message"]
    assert start["stop_reason"] is None and {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    } <= set(start["usage"])
    raw = "".join(d["delta"]["partial_json"] for e, d in events if e == "content_block_delta")
    findings = json.loads(raw)["findings"]
    assert findings and all(f["evidence"] in make_chunk().text for f in findings)  # grounded in the passage
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    # the JSON answer carries the same tool input
    with httpx.Client() as client:
        plain = client.post(f"{server.url}/v1/messages", json=body(make_chunk()), headers=HEADERS).json()
    assert plain["content"][0]["input"]["findings"] == findings


def test_pages_are_mapped_from_the_page_markers(server, stub):
    with httpx.Client() as client:
        reply = client.post(f"{server.url}/v1/messages", json=body(make_chunk()), headers=HEADERS).json()
    by_type = {f["clause_type"]: f for f in reply["content"][0]["input"]["findings"]}
    assert by_type["governing_law"]["page"] == 2
    assert by_type["agreement_date"]["page"] == 1


@pytest.mark.parametrize(
    "change,status,kind",
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, 400, "invalid_request_error"),
        ({"tool_choice": {"type": "tool", "name": "missing_tool"}}, 400, "invalid_request_error"),
        ({"max_tokens": -1}, 400, "invalid_request_error"),
    ],
)
def test_requests_the_api_rejects_are_rejected(server, stub, change, status, kind):
    with httpx.Client() as client:
        resp = client.post(f"{server.url}/v1/messages", json=body(make_chunk(), **change), headers=HEADERS)
    assert resp.status_code == status and resp.json()["error"]["type"] == kind


def test_missing_api_key_is_401(server, stub):
    with httpx.Client() as client:
        resp = client.post(f"{server.url}/v1/messages", json=body(make_chunk()))
    assert resp.status_code == 401 and resp.json()["error"]["type"] == "authentication_error"


def test_cache_is_keyed_by_prefix_and_honours_the_minimum(server, stub):
    with httpx.Client() as client:
        post = lambda b: client.post(f"{server.url}/v1/messages", json=b, headers=HEADERS).json()["usage"]  # noqa: E731
        first = post(body(make_chunk(0)))
        second = post(body(make_chunk(1)))
        assert first["cache_creation_input_tokens"] > 1024 and first["cache_read_input_tokens"] == 0
        assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
        assert second["cache_creation_input_tokens"] == 0
        # a different prefix (system text changed) misses
        other = body(make_chunk(1))
        other["system"] = [{"type": "text", "text": "Changed. " + other["system"][0]["text"]}, other["system"][1]]
        assert post(other)["cache_read_input_tokens"] == 0
        # a prefix below the model's minimum cacheable length is never cached
        short = body(make_chunk(0))
        short["system"] = [{"type": "text", "text": "Review contracts.", "cache_control": {"type": "ephemeral"}}]
        short["tools"] = [dict(review_tool(), description="x")]
        short["tools"][0]["input_schema"] = {"type": "object", "properties": {}, "additionalProperties": False}
        for _ in range(2):
            usage = post(short)
            assert usage["cache_creation_input_tokens"] == 0 and usage["cache_read_input_tokens"] == 0


def test_count_tokens_matches_message_usage(server, stub):
    b = body(make_chunk())
    with httpx.Client() as client:
        counted = client.post(
            f"{server.url}/v1/messages/count_tokens",
            json={k: b[k] for k in ("model", "system", "tools", "messages")},
            headers=HEADERS,
        ).json()
        usage = client.post(f"{server.url}/v1/messages", json=b, headers=HEADERS).json()["usage"]
    assert counted["input_tokens"] == (
        usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    )


def test_queued_faults_apply_once_then_clear(server, stub):
    stub.enqueue("rate_limit:5", times=1)
    with httpx.Client() as client:
        first = client.post(f"{server.url}/v1/messages", json=body(make_chunk()), headers=HEADERS)
        second = client.post(f"{server.url}/v1/messages", json=body(make_chunk()), headers=HEADERS)
    assert first.status_code == 429 and first.headers["retry-after"] == "5"
    assert first.json()["error"]["type"] == "rate_limit_error"
    assert second.status_code == 200


def test_fault_control_endpoint_and_header(server, stub):
    with httpx.Client() as client:
        assert client.post(f"{server.url}/stub/faults", json={"faults": "overloaded", "times": 1}).status_code == 200
        assert client.post(f"{server.url}/v1/messages", json=body(make_chunk()), headers=HEADERS).status_code == 529
        resp = client.post(
            f"{server.url}/v1/messages", json=body(make_chunk()), headers={**HEADERS, "x-stub-fault": "api_overloaded"}
        )
    assert resp.status_code == 500 and resp.json()["error"] == {"type": "api_error", "message": "Overloaded"}


def test_fabricate_gives_quotes_not_in_the_passage(server, stub):
    with httpx.Client() as client:
        reply = client.post(
            f"{server.url}/v1/messages", json=body(make_chunk()), headers={**HEADERS, "x-stub-fault": "fabricate"}
        ).json()
    findings = reply["content"][0]["input"]["findings"]
    assert findings and not any(f["evidence"] in make_chunk().text for f in findings)


def test_parse_faults():
    assert [(f.name, f.arg, f.p) for f in parse_faults("rate_limit:3@0.5, truncate")] == [
        ("rate_limit", "3", 0.5),
        ("truncate", None, 1.0),
    ]
    with pytest.raises(ValueError, match="unknown fault"):
        parse_faults("explode")


def test_eventstream_framing_decodes_with_botocore():
    from botocore.eventstream import EventStreamBuffer

    buf = EventStreamBuffer()
    payload = json.dumps({"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"fi'}}}).encode()
    buf.add_data(
        eventstream_message(
            {":event-type": "contentBlockDelta", ":message-type": "event", ":content-type": "application/json"}, payload
        )
    )
    (message,) = list(buf)
    assert message.headers[":event-type"] == "contentBlockDelta" and message.payload == payload


def test_injected_first_token_latency_is_observed(server, stub):
    import time

    with httpx.Client() as client:
        started = time.perf_counter()
        with client.stream(
            "POST",
            f"{server.url}/v1/messages",
            json=body(make_chunk(), stream=True),
            headers={**HEADERS, "x-stub-ttft-ms": "300"},
        ) as resp:
            first_delta = None
            for line in resp.iter_lines():
                if line == "event: content_block_delta" and first_delta is None:
                    first_delta = (time.perf_counter() - started) * 1000
    assert first_delta is not None and first_delta >= 300


def test_stub_llm_and_samples_commands_refuse_bad_arguments_in_one_line(tmp_path):
    import socket

    from typer.testing import CliRunner

    from cli.app import app

    runner = CliRunner()
    for args, why in (
        (["stub-llm", "--fault", "overloaded@2"], "outside 0..1"),
        (["stub-llm", "--fault", "rate_limit@x"], "is not a number"),
        (["samples", str(tmp_path / "f.txt")], "is a file, not a folder"),
    ):
        (tmp_path / "f.txt").write_text("x")
        done = runner.invoke(app, args)
        assert done.exit_code == 2 and why in done.output and "Traceback" not in done.output, (args, done.output)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = runner.invoke(app, ["stub-llm", "--port", str(busy.getsockname()[1])])
    assert done.exit_code == 2 and "cannot listen on 127.0.0.1:" in done.output


def test_a_client_that_resets_its_connection_prints_no_traceback(server, capfd):
    """An SDK dropping a pooled keep-alive connection is no error of the double; other errors still
    print their traceback, as socketserver does."""
    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        server.handle_error(None, ("127.0.0.1", 1))
    assert capfd.readouterr().err == ""
    try:
        raise ValueError("a bug in the double")
    except ValueError:
        server.handle_error(None, ("127.0.0.1", 1))
    err = capfd.readouterr().err
    assert "Traceback" in err and "a bug in the double" in err
