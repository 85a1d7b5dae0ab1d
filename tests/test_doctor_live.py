"""``docreview doctor --live`` offline, against the local test double: every call site the configured run
makes is tried once, passes, and is priced; a refusal is reported in the API's own words with exit 2. The
double answers from rules: these tests check the requests and the report, not Claude."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli.app import app
from cli.live import BUDGET_USD, PASSAGE, live_checks
from schemas.settings import Settings


@pytest.fixture
def live_env(stub_env, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCREVIEW_VERIFIER_ENABLED", "true")
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-sonnet-5-5")
    monkeypatch.setenv("DOCREVIEW_DATABASE_URL", f"sqlite:///{tmp_path / 'live.db'}")
    stub_env.stub.transcripts[("doctor-live-page.pdf", 1)] = PASSAGE  # the double reads no image
    return stub_env


def test_every_call_site_of_the_run_is_tried_once_and_priced(live_env):
    results = live_checks(Settings(backend="anthropic"))
    assert [r.site for r in results] == ["warm-up", "review", "count tokens", "verifier", "page read", "batch"]
    assert all(r.ok for r in results), [(r.site, r.detail) for r in results]
    assert live_env.stub.refusals == [] and live_env.stub.batches_created == 1
    assert 0 < sum(r.cost_usd for r in results) <= BUDGET_USD
    assert "finding" in results[1].detail and results[3].detail.startswith("verified")


def test_the_command_prints_a_line_per_site_and_says_whose_endpoint_answered(live_env):
    out = CliRunner().invoke(app, ["doctor", "--live", "--backend", "anthropic"])
    assert out.exit_code == 0, out.output
    assert "not the vendor's own API" in out.output and "6 of 6 passed" in out.output
    for site in ("warm-up", "review", "count tokens", "verifier", "page read", "batch"):
        assert f"pass     {site}" in out.output


def test_a_refused_key_fails_in_the_apis_own_words_with_exit_2(live_env):
    live_env.stub.faults = [__import__("docreview_testing.stub_llm", fromlist=["Fault"]).Fault("unauthorized")]
    out = CliRunner().invoke(app, ["doctor", "--live", "--backend", "anthropic"])
    assert out.exit_code == 2
    assert "fail     warm-up" in out.output and "401 authentication_error: invalid x-api-key" in out.output
    # a refused key is refused everywhere: token counting and batches too (before, the double let them pass)
    assert "fail     count tokens" in out.output and "fail     batch" in out.output


def test_live_needs_a_model_backend(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCREVIEW_DATABASE_URL", f"sqlite:///{tmp_path / 'r.db'}")
    out = CliRunner().invoke(app, ["doctor", "--live", "--backend", "rules"])
    assert out.exit_code == 2 and "makes no model calls" in out.output


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"DOCREVIEW_LLM_OUTPUT_MODE": "tool", "DOCREVIEW_ANTHROPIC_MODEL": "claude-sonnet-5-5"}, "forced tool_choice"),
        (
            {"DOCREVIEW_BACKEND": "bedrock", "DOCREVIEW_LLM_OUTPUT_MODE": "json_schema"},
            "structured outputs are not offered",
        ),
        ({"DOCREVIEW_BACKEND": "bedrock", "DOCREVIEW_BEDROCK_INFERENCE_PROFILE": "eu"}, "does not apply"),
    ],
)
def test_a_setting_the_model_cannot_take_is_refused_before_the_run(env, words, monkeypatch, tmp_path):
    """Before: doctor said ok and `review` failed mid-run (exit 1) with the backend's LLMConfigError; an
    inference profile for a model on Claude in Amazon Bedrock's regional endpoint was silently ignored."""
    from cli.checks import check_backend

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    monkeypatch.setenv("DOCREVIEW_BACKEND", "anthropic")
    monkeypatch.setenv("DOCREVIEW_DATABASE_URL", f"sqlite:///{tmp_path / 'r.db'}")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert words in (check_backend(Settings()) or "")
    out = CliRunner().invoke(app, ["doctor"])
    assert out.exit_code == 2 and words in out.output and "data sent to" not in out.output


def test_a_busy_api_is_not_a_configuration_failure(live_env):
    """A 429 is what a run retries: the live check says the API was busy, in its own words, and exits 0."""
    live_env.stub.enqueue("rate_limit:0", times=1)  # the warm-up meets it
    out = CliRunner().invoke(app, ["doctor", "--live", "--backend", "anthropic"])
    assert out.exit_code == 0, out.output
    assert "busy     warm-up" in out.output and "429 rate_limit_error" in out.output
    assert "5 of 6 passed, 1 met a busy API" in out.output


def test_a_text_pdf_page_reads_as_its_text_layer_against_the_double(stub_env, monkeypatch, tmp_path):
    """The double reads no image, but a PDF's text layer is what the API extracts beside the page image: the
    live check's page read passes against it without a registered transcript."""
    monkeypatch.setenv("DOCREVIEW_DATABASE_URL", f"sqlite:///{tmp_path / 'live.db'}")
    (read,) = [r for r in live_checks(Settings(backend="anthropic")) if r.site == "page read"]
    assert read.ok and "Governing Law" in read.detail
