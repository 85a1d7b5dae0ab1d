"""Citations and the one capability table, through the real ``anthropic`` SDK against the local test double.

The double enforces what platform.claude.com/docs/en/build-with-claude/citations says (document block
shapes, citations on all documents or none, never with ``output_config.format``) and answers a cited
request with ``char_location`` / ``content_block_location`` citations shaped as that page prints them. It answers from rules, never from a language model: these tests check
request shapes, offsets and the verifier's handling, not Claude's judgement.
"""

from __future__ import annotations

import json

import anthropic
import pytest

from docreview_testing.api_rules import CITATIONS_ALL_OR_NONE, CITATIONS_WITH_STRUCTURED_OUTPUTS
from schemas.documents import ExtractedDocument, PageQuality, PageText, SourceObject
from schemas.findings import Finding, Risk, Verdict
from schemas.taxonomy import ClauseType
from tasks.check.factcheck import DocumentIndex, fact_check
from tasks.check.verifier import (
    NOT_STATED,
    CitedDocument,
    VerifierAnswer,
    VerifierOutcome,
    build_cited_request,
    build_verdict_request,
    judge,
    read_citations,
    verify,
)
from tasks.review.backends.anthropic_backend import AnthropicBackend
from tasks.review.backends.models import CALL_SITES, CAPABILITIES, capability
from tasks.review.chunk import chunk_text
from tests.test_structured_outputs import FAMILY_IDS
from tests.test_stub_llm import make_chunk

PASSAGE = (
    "1. Term. This Agreement commences on the Effective Date. It continues for five (5) years. "
    "2. Governing Law. This Agreement shall be governed by the laws of the State of New York."
)
QUOTE = "governed by the laws of the State of New York"


def governing_law(evidence: str = QUOTE, page: int = 1) -> Finding:
    return Finding(
        clause_type=ClauseType.governing_law, summary="New York law", risk=Risk.high, evidence=evidence, page=page
    )


@pytest.fixture
def stub(server):
    server.stub.reset()
    server.stub.faults = []
    return server.stub


@pytest.fixture
def client(server):
    made = anthropic.Anthropic(api_key="test-key", base_url=server.url, max_retries=0, timeout=20)
    yield made
    made.close()


def _document(data: str = PASSAGE, **extra) -> dict:
    return {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": data},
        "title": "Passage",
        "citations": {"enabled": True},
        **extra,
    }


def _ask(client, content: list, model: str = "claude-haiku-4-5", **kw):
    return client.messages.create(model=model, max_tokens=256, messages=[{"role": "user", "content": content}], **kw)


#: The verifier's question (the double answers it from rules: the sentence holding the quoted evidence).
QUESTION = build_cited_request(governing_law(), PASSAGE, "claude-haiku-4-5")["messages"][0]["content"][1]
FORMAT = {
    "type": "json_schema",
    "schema": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    },
}


@pytest.mark.parametrize(
    ("content", "extra", "model", "message"),
    [
        # citations on a document + output_config.format: "the API returns a 400 error"
        (
            [_document(), QUESTION],
            {"output_config": {"format": FORMAT}},
            "claude-haiku-4-5",
            CITATIONS_WITH_STRUCTURED_OUTPUTS,
        ),
        # "citations must be enabled on all or none of the documents within a request"
        (
            [_document(), _document(citations={"enabled": False}), QUESTION],
            {},
            "claude-haiku-4-5",
            CITATIONS_ALL_OR_NONE,
        ),
        # document shapes: a text source is text/plain with string data; custom content is a non-empty list
        (
            [{**_document(), "source": {"type": "text", "media_type": "text/html", "data": "x"}}, QUESTION],
            {},
            "claude-haiku-4-5",
            "text/plain",
        ),
        (
            [{**_document(), "source": {"type": "content", "content": []}}, QUESTION],
            {},
            "claude-haiku-4-5",
            "non-empty list",
        ),
        (
            [{**_document(), "source": {"type": "docx", "data": "x"}}, QUESTION],
            {},
            "claude-haiku-4-5",
            "does not match",
        ),
        ([{**_document(), "pages": 3}, QUESTION], {}, "claude-haiku-4-5", "Extra inputs are not permitted"),
        ([{**_document(), "citations": {"enabled": "yes"}}, QUESTION], {}, "claude-haiku-4-5", "valid boolean"),
    ],
    ids=[
        "with-structured-outputs",
        "not-on-all-documents",
        "wrong-media-type",
        "empty-content",
        "unknown-source",
        "extra-key",
        "enabled-not-bool",
    ],
)
def test_the_double_refuses_what_the_citations_docs_refuse(stub, client, content, extra, model, message):
    with pytest.raises(anthropic.BadRequestError) as caught:
        _ask(client, content, model, **extra)
    assert message in caught.value.message
    assert stub.refusals and message in stub.refusals[-1]


def test_the_double_accepts_what_the_citations_docs_allow(stub, client):
    """Citations with prompt caching (cache_control on the document), with tools offered, in token
    counting and in Message Batches: documented as compatible."""
    cached = _ask(client, [_document(cache_control={"type": "ephemeral"}), QUESTION])
    assert any(getattr(b, "citations", None) for b in cached.content)
    tool = {"name": "note", "description": "d", "input_schema": {"type": "object", "properties": {}}}
    _ask(client, [_document(), QUESTION], tools=[tool])
    counted = client.messages.count_tokens(
        model="claude-haiku-4-5", messages=[{"role": "user", "content": [_document(), QUESTION]}]
    )
    assert counted.input_tokens > 0
    batch = client.messages.batches.create(
        requests=[
            {
                "custom_id": "c1",
                "params": {
                    "model": "claude-haiku-4-5",
                    "max_tokens": 64,
                    "messages": [{"role": "user", "content": [_document(), QUESTION]}],
                },
            }
        ]
    )
    (line,) = list(client.messages.batches.results(batch.id))
    assert line.result.type == "succeeded"
    assert stub.refusals == []


def test_plain_text_citations_point_at_the_text_sent(stub, client):
    message = _ask(client, [_document(), QUESTION])
    cited = [c for b in message.content for c in (getattr(b, "citations", None) or [])]
    assert cited, "the double cites the sentence that holds the quote"
    for c in cited:
        assert c.type == "char_location" and c.document_index == 0 and c.document_title == "Passage"
        assert PASSAGE[c.start_char_index : c.end_char_index].strip() == c.cited_text
        assert QUOTE in c.cited_text
    answer, citations = read_citations(message, PASSAGE)
    assert [x.problem for x in citations] == [None] and answer.startswith("According to the document")


#: The citations page's own example (build-with-claude/citations, read 2026-12-06): the document "The grass is
#: green. The sky is blue." and the answer's blocks, each claim citing one sentence; the first citation's
#: indices (0-20) hold the space after the sentence, its cited_text does not.
DOCS_DOCUMENT = "The grass is green. The sky is blue."
DOCS_ANSWER = {
    "id": "msg_docs_example",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 40, "output_tokens": 20},
    "content": [
        {"type": "text", "text": "According to the document, "},
        {
            "type": "text",
            "text": "the grass is green",
            "citations": [
                {
                    "type": "char_location",
                    "cited_text": "The grass is green.",
                    "document_index": 0,
                    "document_title": "Example Document",
                    "start_char_index": 0,
                    "end_char_index": 20,
                }
            ],
        },
        {"type": "text", "text": " and "},
        {
            "type": "text",
            "text": "the sky is blue",
            "citations": [
                {
                    "type": "char_location",
                    "cited_text": "The sky is blue.",
                    "document_index": 0,
                    "document_title": "Example Document",
                    "start_char_index": 20,
                    "end_char_index": 36,
                }
            ],
        },
    ],
}


def test_citations_shaped_as_the_docs_print_them_are_read_at_their_indices():
    """Before: cited_text had to equal passage[start:end] character for character, so the docs' own first
    citation ("The grass is green." at 0-20, the space inside the indices) was refused and voided both."""
    message = anthropic.types.Message.model_validate(DOCS_ANSWER)
    answer, citations = read_citations(message, DOCS_DOCUMENT)
    assert answer == "According to the document, the grass is green and the sky is blue"
    assert [(c.start, c.end, c.problem) for c in citations] == [(0, 20, None), (20, 36, None)]
    grass = Finding(
        clause_type=ClauseType.governing_law, summary="s", risk=Risk.low, evidence="The grass is green", page=1
    )
    verdict = VerifierAnswer(supported=True, supporting_span="", reason="stated")
    check, cited = judge(grass, DOCS_DOCUMENT, citations, verdict)
    assert check.verdict is Verdict.verified and cited is not None and cited.startswith("The grass is green.")


def test_one_unusable_citation_leaves_the_others_usable():
    data = json.loads(json.dumps(DOCS_ANSWER))
    data["content"][3]["citations"][0]["end_char_index"] = 99  # outside the document
    citations = read_citations(anthropic.types.Message.model_validate(data), DOCS_DOCUMENT)[1]
    assert citations[0].problem is None and "outside the sent text" in (citations[1].problem or "")
    grass = Finding(
        clause_type=ClauseType.governing_law, summary="s", risk=Risk.low, evidence="The grass is green", page=1
    )
    check, _ = judge(grass, DOCS_DOCUMENT, citations, VerifierAnswer(supported=True, supporting_span="", reason="r"))
    assert check.verdict is Verdict.verified and "1 citation(s) not used" in check.reason
    data["content"][1]["citations"][0]["cited_text"] = "The grass is blue."  # other text at those indices
    only_bad = read_citations(anthropic.types.Message.model_validate(data), DOCS_DOCUMENT)[1]
    check, cited = judge(grass, DOCS_DOCUMENT, only_bad, VerifierAnswer(supported=True, supporting_span="", reason="r"))
    assert check.verdict is Verdict.needs_review and cited is None and "not the sent text" in check.reason


def test_page_and_content_block_citations_are_placed_in_the_document_sent():
    doc = CitedDocument("Page one text. Page two text.", blocks=((0, 15), (15, 29)), pages=((0, 15), (15, 29)))
    blocks = [
        {"type": "content_block_location", "cited_text": "Page two text.", "document_index": 0,
         "document_title": None, "start_block_index": 1, "end_block_index": 2},
        {"type": "page_location", "cited_text": "Page one text.", "document_index": 0,
         "document_title": None, "start_page_number": 1, "end_page_number": 2},
        {"type": "page_location", "cited_text": "x", "document_index": 0,
         "document_title": None, "start_page_number": 3, "end_page_number": 4},
    ]  # fmt: skip
    data = {**DOCS_ANSWER, "content": [{"type": "text", "text": "claims", "citations": blocks}]}
    citations = read_citations(anthropic.types.Message.model_validate(data), doc)[1]
    assert [(c.start, c.end, c.problem) for c in citations[:2]] == [(15, 29, None), (0, 15, None)]
    assert "outside the sent pages" in (citations[2].problem or "")
    plain = read_citations(anthropic.types.Message.model_validate(data), doc.text)[1]
    assert all("no custom-content document" in (c.problem or "") or "no PDF" in (c.problem or "") for c in plain)


def test_custom_content_citations_name_the_blocks_sent(stub, client):
    units = [
        "1. Term. It continues for five (5) years. ",
        "2. Governing Law. This Agreement shall be governed by the laws ",
        "of the State of New York.",
    ]
    document = {**_document(), "source": {"type": "content", "content": [{"type": "text", "text": u} for u in units]}}
    message = _ask(client, [document, QUESTION])
    (c,) = [c for b in message.content for c in (getattr(b, "citations", None) or [])]
    assert c.type == "content_block_location"
    assert (c.start_block_index, c.end_block_index) == (1, 3)  # 0-based, end exclusive: blocks 1 and 2
    assert c.cited_text == "".join(units[1:3])


def test_streamed_citations_arrive_as_citations_deltas(stub, client):
    with client.messages.stream(
        model="claude-haiku-4-5", max_tokens=256, messages=[{"role": "user", "content": [_document(), QUESTION]}]
    ) as events:
        kinds = [getattr(getattr(e, "delta", None), "type", None) for e in events]
        final = events.get_final_message()
    assert "citations_delta" in kinds
    plain = _ask(client, [_document(), QUESTION])
    dump = lambda m: [c.model_dump() for b in m.content for c in (getattr(b, "citations", None) or [])]  # noqa: E731
    assert dump(final) == dump(plain) and dump(plain)


def test_verifier_requests_keep_citations_and_structured_outputs_apart():
    f = governing_law()
    cited = build_cited_request(f, PASSAGE, "claude-sonnet-5-5")
    doc = cited["messages"][0]["content"][0]
    assert doc["citations"] == {"enabled": True} and doc["source"]["data"] == PASSAGE
    assert "output_config" not in cited and "tools" not in cited and "tool_choice" not in cited
    assert cited["thinking"] == {"type": "between_tools"}  # the table's way to keep Sonnet 5.5 from thinking first
    verdict = build_verdict_request(f, "It says so.", [], "claude-sonnet-5-5")
    assert "output_config" in verdict and "tool_choice" not in verdict
    assert not any(b.get("type") == "document" for m in verdict["messages"] for b in m["content"])


def _document_with_sections() -> ExtractedDocument:
    pages = [
        "MASTER SERVICES AGREEMENT\n\n1. TERM\n\nThis Agreement commences on the Effective Date and continues for five (5) years.",
        "7. LIMITATION OF LIABILITY\n\nIn no event shall either party's aggregate liability exceed $1,500,000.",
        "12. GOVERNING LAW\n\nThis Agreement and any dispute under it shall be governed by the laws of the State of New York. "
        "The parties submit to the courts of New York County.",
    ]
    src = SourceObject(uri="msa.pdf", name="msa.pdf", local_path="/msa.pdf", size_bytes=1)
    return ExtractedDocument(
        sha256="c" * 64,
        source=src,
        pages=[PageText(number=i + 1, text=t, quality=PageQuality()) for i, t in enumerate(pages)],
    )


def _verifier(client, model="claude-haiku-4-5"):
    return lambda finding, passage: verify(finding, passage, client, model)


def test_a_cited_verification_gives_the_cited_range_as_evidence_with_its_page_and_section(stub, client):
    doc = _document_with_sections()
    chunks = chunk_text(doc.sha256, doc.text, doc.page_starts(), budget=4000, overlap=400)
    calls: list = []
    # stated on page 1 and quoted short: the citation brings the whole sentence, on page 3, § 12
    (cf,) = fact_check(
        [governing_law(page=1)],
        chunks[0],
        chunks[1:2],
        DocumentIndex.build(doc),
        verifier=_verifier(client),
        support_model=None,
        calls=calls,
    )
    check = {c.name: c for c in cf.checks}["verifier"]
    assert check.verdict is Verdict.verified and check.page == 3
    assert "GOVERNING LAW" in check.reason and "page 3" in check.reason
    sentence = "This Agreement and any dispute under it shall be governed by the laws of the State of New York."
    assert cf.finding.evidence == sentence and cf.finding.page == 3
    assert len(calls) == 2 and all(c.error_class is None for c in calls)  # cited answer, then the verdict
    assert stub.refusals == []


def test_a_citation_outside_the_sent_text_is_a_clear_reason_and_the_finding_is_kept(stub, client):
    doc = _document_with_sections()
    chunks = chunk_text(doc.sha256, doc.text, doc.page_starts(), budget=4000, overlap=400)
    stub.enqueue("bad_citation")
    found = [governing_law(), governing_law("aggregate liability exceed $1,500,000")]
    out = fact_check(found, chunks[0], [], DocumentIndex.build(doc), verifier=_verifier(client), support_model=None)
    assert len(out) == 2  # nothing lost: the next finding is checked as usual
    bad = {c.name: c for c in out[0].checks}["verifier"]
    assert bad.verdict is Verdict.needs_review and "points outside the sent text" in bad.reason
    assert out[0].finding.evidence == QUOTE  # the finding's own quote stays


def test_a_model_the_table_marks_without_citations_takes_the_uncited_path(stub, client, monkeypatch):
    # Every current model has Citations (Haiku 3, the one without, is retired); the uncited path stays for
    # a model the table marks so, and says so in its reason.
    import dataclasses

    cap = CAPABILITIES["claude-haiku-4-5"]
    monkeypatch.setitem(CAPABILITIES, "claude-haiku-4-5", dataclasses.replace(cap, citations=False))
    uncited = verify(governing_law(), PASSAGE, client, "claude-haiku-4-5")
    assert uncited.check.verdict is Verdict.verified and "uncited" in uncited.check.reason
    assert len(uncited.records) == 1 and uncited.records[0].error_class is None


def test_a_retired_model_is_refused_as_the_api_refuses_it_and_the_finding_is_kept(stub, client):
    refused = verify(governing_law(), PASSAGE, client, "claude-3-haiku-20240307")
    assert refused.check.verdict is Verdict.needs_review
    assert "NotFoundError" in refused.check.reason and refused.records[0].error_class == "NotFoundError"


def test_a_citation_elsewhere_than_the_quote_is_recorded_as_a_disagreement(stub, client):
    other = "This Agreement commences on the Effective Date"
    outcome: VerifierOutcome = verify(governing_law(evidence=other), PASSAGE, client, "claude-haiku-4-5")
    assert outcome.check.verdict is Verdict.needs_review and outcome.cited is None


def test_nothing_stated_is_not_supported(stub, client):
    heading = Finding(
        clause_type=ClauseType.governing_law, summary="s", risk=Risk.high, evidence="2. Governing Law.", page=1
    )
    outcome = verify(heading, PASSAGE, client, "claude-haiku-4-5")
    assert outcome.check.verdict is Verdict.needs_review and outcome.cited is None
    assert "not supported" in outcome.check.reason or "cites nothing" in outcome.check.reason
    assert NOT_STATED


@pytest.mark.parametrize("model", sorted(FAMILY_IDS.values()))
def test_every_model_at_every_call_site_gets_no_rule_400(stub, client, server, model, db_url, monkeypatch):
    """One capability table drives every call site: the chunk review, the verifier (cited answer and
    verdict), Message Batches, the cache warm-up and token counting. No request rule of the double refuses
    any of them, for any model in the table."""
    import warnings

    from tasks.review.batches import review_batch

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    assert CALL_SITES == ("review", "verifier", "batch", "warm_up", "count_tokens")
    backend = AnthropicBackend("test-key", model, base_url=server.url, timeout_s=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the SDK's warning for legacy ids (asserted elsewhere)
        try:
            reviewed = backend.review_chunk(make_chunk(), "a.pdf")
            outcome = verify(governing_law(), PASSAGE, client, model)
            batch = review_batch.fn(backend, [(make_chunk(), "a.pdf")], db_url, poll_interval_s=0.01)
            warmed = backend.warm_cache()
            counted = backend.count_prefix_tokens()
        finally:
            backend.close()
    assert stub.refusals == [], f"{model}: {stub.refusals}"
    assert reviewed.findings and batch[0][2].findings and warmed[0].error_class is None and counted > 0
    assert outcome.check.verdict is Verdict.verified
    assert ("uncited" in outcome.check.reason) is (not capability(model).citations)


def test_the_cited_path_benchmark_compares_both_request_shapes(shared_data):
    from benchmarks.verifier_cited import run

    line = run(contracts=1, per_contract=2, ttft_ms=0.0, token_ms=0.0)
    assert line["findings"] >= 1
    cited, single = line["cited"], line["single_call"]
    assert cited["all"]["input_tokens"] > 0 and single["all"]["input_tokens"] > 0
    assert cited["all"]["usd_per_1000"] > 0 and single["all"]["usd_per_1000"] > 0
    assert cited["verified_share"] == single["verified_share"]  # the double answers both from the same rules


def test_a_rate_limited_verifier_call_is_retried_and_a_refusal_is_not(stub, client, prefect_harness):
    """Before: the verifier's client had max_retries=0 and verify swallowed the first APIError, so one 429
    turned a supported finding into needs_review ("verifier call failed: RateLimitError")."""
    from prefect import flow

    from schemas.policy import ResiliencePolicy
    from tasks.review.resilience import model_caller

    policy = ResiliencePolicy(attempts=3, backoff_base_s=0.0, jitter_factor=0.0)
    send = model_caller(client.messages.create, policy)

    @flow
    def verify_in_a_run() -> VerifierOutcome:  # the fact-check's calls run inside the review's flow run
        return verify(governing_law(), PASSAGE, client, "claude-haiku-4-5", send=send)

    stub.enqueue("rate_limit:0", times=2)  # the cited answer's first two attempts
    outcome = verify_in_a_run()
    assert outcome.check.verdict is Verdict.verified and stub.requests["/v1/messages"] == 4  # 3 + the verdict
    before = stub.requests["/v1/messages"]
    stub.enqueue("unauthorized", times=3)
    refused = verify_in_a_run()
    assert refused.check.verdict is Verdict.needs_review and "AuthenticationError" in refused.check.reason
    assert stub.requests["/v1/messages"] == before + 1  # a 401 is not retried
