"""Where data goes: Bedrock's default inference profile keeps processing in the region's geography,
the run summary names it, and docs/data-flow.md names every setting it describes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.checks import check_backend
from schemas.settings import Settings, geographic_profile
from tasks.review.reviewer import bedrock_model_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for key in (
        "DOCREVIEW_BEDROCK_MODEL_ID",
        "DOCREVIEW_BEDROCK_INFERENCE_PROFILE",
        "DOCREVIEW_BEDROCK_REGION",
        "AWS_REGION",
        "DOCREVIEW_ANTHROPIC_MODEL",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.mark.parametrize(
    ("region", "profile"),
    [
        ("us-east-1", "us"),
        ("us-west-2", "us"),
        ("eu-west-1", "eu"),
        ("eu-central-1", "eu"),
        ("ap-southeast-2", "apac"),
        ("ap-northeast-1", "jp"),
    ],
)
def test_a_converse_models_default_profile_is_the_regions_geography(region, profile, monkeypatch):
    """Claude Opus 4.6 is on Bedrock's Converse integration with the profiles global, us, eu, jp and apac
    (claude-on-amazon-bedrock-legacy's table)."""
    monkeypatch.setenv("DOCREVIEW_BEDROCK_REGION", region)
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-opus-4-6")
    settings = Settings(backend="bedrock")
    assert settings.bedrock_inference_profile == "auto" and settings.bedrock_profile() == profile
    model_id = bedrock_model_for(settings)
    assert model_id == f"{profile}.anthropic.claude-opus-4-6-v1"
    assert f"{profile} geography" in (settings.data_geography("bedrock", model_id) or "")
    assert check_backend(settings) is None


def test_the_default_model_is_served_by_claude_in_amazon_bedrock_in_the_region_itself(monkeypatch):
    """Sonnet 5.5 is on the Messages-API endpoint of the configured region: its id carries no profile, so its
    data stays in that region, whatever geography the region has (or lacks)."""
    for region in ("eu-west-1", "sa-east-1", "ca-central-1"):
        monkeypatch.setenv("DOCREVIEW_BEDROCK_REGION", region)
        settings = Settings(backend="bedrock")
        model_id = bedrock_model_for(settings)
        assert model_id == "anthropic.claude-sonnet-5-5" and check_backend(settings) is None
        assert settings.data_geography("bedrock", model_id) == f"{region} only (in-Region inference)"


def test_a_region_without_a_geographic_profile_refuses_to_start_until_one_is_chosen(monkeypatch):
    monkeypatch.setenv("DOCREVIEW_BEDROCK_REGION", "sa-east-1")
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-opus-4-6")
    settings = Settings(backend="bedrock")
    for region in ("sa-east-1", "ca-central-1", "us-gov-west-1"):  # no documented profile covers them
        assert geographic_profile(region) is None
    problem = check_backend(settings)
    assert problem and problem.startswith("DOCREVIEW_BEDROCK_INFERENCE_PROFILE") and "sa-east-1" in problem
    chosen = Settings(backend="bedrock", bedrock_inference_profile="global")
    assert check_backend(chosen) is None and bedrock_model_for(chosen).startswith("global.")
    assert chosen.data_geography("bedrock", bedrock_model_for(chosen)).startswith("any commercial AWS Region")
    in_region = Settings(backend="bedrock", bedrock_inference_profile="")
    assert bedrock_model_for(in_region) == "anthropic.claude-opus-4-6-v1"
    assert in_region.data_geography("bedrock", bedrock_model_for(in_region)) == "sa-east-1 only (in-Region inference)"


def test_an_explicit_model_id_names_its_own_geography():
    assert "eu geography" in Settings(bedrock_model_id="eu.anthropic.claude-opus-5-5").data_geography("bedrock")
    assert Settings(bedrock_model_id="global.anthropic.claude-opus-5-5").data_geography("bedrock").startswith("any")
    assert Settings().data_geography("rules") is None


def test_a_verifier_forced_on_under_bedrock_is_named_in_the_data_geography():
    """The verifier calls Anthropic's API: off by default under bedrock, and named when forced on."""
    settings = Settings(backend="bedrock")
    assert "Anthropic API" not in settings.data_geography("bedrock", bedrock_model_for(settings))
    forced = Settings(backend="bedrock", verifier_enabled=True)
    where = forced.data_geography("bedrock", bedrock_model_for(forced))
    assert where.startswith("us-east-1 only") and "verifier passages: Anthropic API" in where


def test_data_flow_page_names_only_real_settings():
    """docs/data-flow.md matches the settings: every DOCREVIEW_ variable it names is a setting."""
    page = (ROOT / "docs" / "data-flow.md").read_text()
    named = set(re.findall(r"DOCREVIEW_[A-Z0-9_]+", page))
    known = {f"DOCREVIEW_{name.upper()}" for name in Settings.model_fields}
    assert named and named <= known, sorted(named - known)
    for needed in ("DOCREVIEW_BEDROCK_INFERENCE_PROFILE", "DOCREVIEW_VERIFIER_ENABLED", "DOCREVIEW_PAGE_IMAGES"):
        assert needed in page
