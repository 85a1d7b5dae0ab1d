"""Shared fixtures: one Prefect test harness for the session, shared data paths, PDF makers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
os.environ.pop("ANTHROPIC_API_KEY", None)  # tests choose their backend explicitly

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
if not SHARED.exists():  # CI lays shared/ beside the clone; a developer checkout may differ
    SHARED = Path(os.environ.get("DOCREVIEW_SHARED_DATA", "/work/shared/data"))


@pytest.fixture(scope="session")
def prefect_harness():
    """A temporary Prefect API and database for the whole test session (started on first use)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (real CUAD contracts and the PDF robustness corpus)."""
    if not (SHARED / "cuad" / "pdf").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (it is present in CI)")
    return SHARED


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite database file for one test."""
    return f"sqlite:///{tmp_path / 'test.db'}"


def make_pdf(path: Path, pages: list[str]) -> Path:
    """Write a simple PDF with one page per string (Helvetica, latin-1 text)."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=False)
    for text in pages:
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        pdf.set_xy(20, 20)
        if text:
            pdf.multi_cell(170, 6, text)
    pdf.output(str(path))
    return path


@pytest.fixture
def pdf_maker():
    """``make(path, [page_text, ...])`` → path of a generated PDF."""
    return make_pdf


@pytest.fixture(scope="module")
def server():
    """The local Messages-API / Converse test double on a free port, for one test module."""
    from tasks.stub_llm import StubLLM, StubLLMServer

    with StubLLMServer(stub=StubLLM()) as srv:
        yield srv


@pytest.fixture
def stub_env(monkeypatch):
    """A fresh test double, with the environment pointing the anthropic backend at it and no
    breaker state carried over between tests."""
    from tasks.resilience import reset_breakers
    from tasks.stub_llm import StubLLM, StubLLMServer

    with StubLLMServer(stub=StubLLM()) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
        monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-sonnet-4-6")
        reset_breakers()
        yield srv
        reset_breakers()
