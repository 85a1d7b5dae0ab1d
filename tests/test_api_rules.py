"""Every row of the double's documented rule table, from both sides: the request its sentence refuses is
refused with the documented status and error type, and the close request it allows is answered."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from docreview_testing.api_rules import RULES, RULES_BY_ID, DocumentedRule

HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}


@pytest.fixture
def stub(server):
    server.stub.reset()
    server.stub.faults = []
    return server.stub


def test_every_row_names_its_page_section_date_and_sentence():
    assert len(RULES_BY_ID) == len(RULES)  # ids are unique
    for rule in RULES:
        assert rule.page.startswith("https://platform.claude.com/docs/") and rule.section, rule.rule_id
        assert rule.read == "2026-12-06" and len(rule.sentence) > 20, rule.rule_id
        assert rule.refused and rule.accepted and rule.refused != rule.accepted, rule.rule_id


def _batch_result(server: object, body: dict) -> dict:
    url = f"{server.url}/v1/messages/batches"  # type: ignore[attr-defined]
    created = httpx.post(url, json={"requests": [{"custom_id": "r1", "params": body}]}, headers=HEADERS, timeout=20)
    assert created.status_code == 200, created.text  # params are validated when the batch is processed
    batch_id = created.json()["id"]
    for _ in range(200):
        got = httpx.get(f"{url}/{batch_id}", headers=HEADERS, timeout=20).json()
        if got["processing_status"] == "ended":
            break
        time.sleep(0.05)
    lines = httpx.get(f"{url}/{batch_id}/results", headers=HEADERS, timeout=20).text.splitlines()
    return json.loads(lines[0])["result"]


def _path(rule: DocumentedRule) -> str:
    return "/anthropic/v1/messages" if rule.where == "bedrock-messages" else "/v1/messages"


def test_a_bedrock_messages_row_holds_only_there(server, stub):
    (rule,) = [r for r in RULES if r.where == "bedrock-messages"]
    resp = httpx.post(f"{server.url}/v1/messages", json=rule.example("refused"), headers=HEADERS, timeout=20)
    assert resp.status_code == 200  # Anthropic's own API offers structured outputs


@pytest.mark.parametrize("rule", RULES, ids=[r.rule_id for r in RULES])
def test_the_double_refuses_what_the_sentence_refuses(server, stub, rule: DocumentedRule):
    body = rule.example("refused")
    if rule.where == "batch":
        result = _batch_result(server, body)
        assert result["type"] == "errored" and result["error"]["error"]["type"] == rule.error_type
        return
    resp = httpx.post(f"{server.url}{_path(rule)}", json=body, headers=HEADERS, timeout=20)
    assert resp.status_code == rule.status, resp.text
    error = resp.json()
    assert error["type"] == "error" and error["error"]["type"] == rule.error_type
    assert rule.broken(body) == error["error"]["message"]


@pytest.mark.parametrize("rule", RULES, ids=[r.rule_id for r in RULES])
def test_the_double_accepts_the_close_request_the_sentence_allows(server, stub, rule: DocumentedRule):
    body = rule.example("accepted")
    if rule.where == "batch":
        assert _batch_result(server, body)["type"] == "succeeded"
        return
    resp = httpx.post(f"{server.url}{_path(rule)}", json=body, headers=HEADERS, timeout=20)
    assert resp.status_code == 200, resp.text
    assert stub.refusals == []
