"""Shared fixtures: one Prefect test harness for the session, shared data paths, PDF makers."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
os.environ.pop("ANTHROPIC_API_KEY", None)  # tests choose their backend explicitly
# The model verifier (on by default for model backends) adds calls to the test double; tests that count
# or fault review calls run without it. tests/test_support.py unsets this to test the default.
os.environ.setdefault("DOCREVIEW_VERIFIER_ENABLED", "false")
# The support judge (make judge) is not built in CI: tests see the lexical support model unless they
# hand a judge in themselves (tests/test_judge.py), whatever a developer has built locally.
os.environ.setdefault("DOCREVIEW_SUPPORT_JUDGE", "false")
# A command without PREFECT_API_URL would start the local Prefect server on first use and leave it running
# (cli/prefect_server.py); the commands the tests run use a temporary server of their own instead, so a test
# run leaves no server behind and never reports to a developer's own. Tests of the local server set the mode.
os.environ["DOCREVIEW_PREFECT_SERVER"] = "temporary"
# Prefect keeps its database in PREFECT_HOME (~/.prefect unset), and the temporary server a command starts
# serves that database: the session's commands get a Prefect home of their own, removed at exit, so a test
# run writes no flow run (nor a killed command's run left "Running") into a developer's own Prefect UI.
TEST_PREFECT_HOME = tempfile.mkdtemp(prefix="docreview-tests-prefect-")
os.environ["PREFECT_HOME"] = TEST_PREFECT_HOME
atexit.register(shutil.rmtree, TEST_PREFECT_HOME, ignore_errors=True)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
if not SHARED.exists():  # CI lays shared/ beside the clone; a developer checkout may differ
    SHARED = Path(os.environ.get("DOCREVIEW_SHARED_DATA", "/work/shared/data"))


@pytest.fixture(autouse=True)
def no_misconfiguration_carried_over():
    """Each test starts with the process-wide refusal gate (:data:`tasks.review.resilience.misconfiguration`)
    reset, as each run does: a test that tripped it must not fail the next test's model calls."""
    from tasks.review.resilience import misconfiguration

    misconfiguration.reset()
    yield


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
    from docreview_testing.stub_llm import StubLLM, StubLLMServer

    with StubLLMServer(stub=StubLLM()) as srv:
        yield srv


@pytest.fixture
def stub_env(monkeypatch):
    """A fresh test double, with the environment pointing the anthropic backend at it and no
    breaker state carried over between tests."""
    from docreview_testing.stub_llm import StubLLM, StubLLMServer
    from tasks.review.resilience import reset_breakers

    with StubLLMServer(stub=StubLLM()) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
        monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-sonnet-4-6")
        reset_breakers()
        yield srv
        reset_breakers()


def free_port(first: int, last: int) -> int:
    """A TCP port in ``first..last`` that nothing listens on (127.0.0.1), or ``RuntimeError``."""
    import socket

    for port in range(first, last + 1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {first}-{last}")


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real ``prefect server start`` (SQLite, its own PREFECT_HOME, UI on) for the session, on a
    free port in 4250-4299: yields ``{"url": "http://127.0.0.1:P", "api_url": ".../api", "home": path}``.
    Subprocesses reach it through ``PREFECT_API_URL``; in-process code through
    ``prefect.settings.temporary_settings``."""
    import subprocess
    import sys
    import time
    import urllib.request

    home = tmp_path_factory.mktemp("prefect-home")
    port = free_port(4250, 4299)
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_UI_API_URL": f"{url}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    }
    env.pop("PREFECT_API_URL", None)
    log = (home / "server.log").open("wb")
    from docreview_testing.reaper import start_owned

    proc = start_owned(
        [str(Path(sys.executable).parent / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # ends with the run
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/health", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"prefect server did not start: {(home / 'server.log').read_text()[-2000:]}")
        time.sleep(0.5)
    try:
        yield {"url": url, "api_url": f"{url}/api", "home": home}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def pg_database():
    """``make(prefix="docreview_test")`` → URL of a fresh, uniquely named PostgreSQL database
    (127.0.0.1:5432, trust auth); every database made is dropped afterwards. Skips when the
    server cannot be reached."""
    import uuid

    from sqlalchemy import create_engine, text

    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    made: list[str] = []

    def make(prefix: str = "docreview_test", driver: str = "psycopg") -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        except Exception as exc:
            pytest.skip(f"PostgreSQL not reachable at 127.0.0.1:5432: {exc}")
        made.append(name)
        return f"postgresql+{driver}://postgres@127.0.0.1:5432/{name}"

    yield make
    from tasks.store.persist import dispose_engines

    dispose_engines()
    with admin.connect() as conn:
        for name in made:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


#: Debian's Chromium for the browser tests (Playwright downloads no browser here).
CHROMIUM = os.environ.get("DOCREVIEW_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright (skips with a reason when either is missing)."""
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium chromium-driver)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (dev extra) is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def s3_url():
    """A moto S3 server over real HTTP on a free port, for the test module that asks for it."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def aws_env(monkeypatch):
    """Dummy AWS credentials from the standard chain; no endpoint, profile or size limit from the
    developer's shell; the S3 client cache and database engines are reset around the test."""
    from tasks.ingest.s3 import reset_clients
    from tasks.store.persist import dispose_engines

    for name in (
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "DOCREVIEW_S3_ENDPOINT_URL",
        "AWS_SESSION_TOKEN",
        "DOCREVIEW_MAX_FILE_BYTES",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    reset_clients()
    yield
    reset_clients()
    dispose_engines()


@pytest.fixture
def argon2_verifications(monkeypatch) -> list[str]:
    """Every Argon2id verification made while the test runs: the hashes checked, in order (argon2-cffi's
    ``PasswordHasher.verify`` still does the work)."""
    from argon2 import PasswordHasher

    verified: list[str] = []
    real_verify = PasswordHasher.verify

    def counting(self: PasswordHasher, hash: str, password: str) -> bool:
        verified.append(hash)
        return real_verify(self, hash, password)

    monkeypatch.setattr(PasswordHasher, "verify", counting)
    return verified
