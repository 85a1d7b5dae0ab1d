"""Hostile inputs and secrets: resource limits, no secret in any output, PII redaction, and every
hostile or broken file ending in a terminal state with a reason within a time bound."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from sqlalchemy import text
from sqlmodel import SQLModel

from tasks.store.persist import dispose_engines, get_engine

DOCREVIEW = Path(sys.executable).with_name("docreview")


def _run(source: Path, out: Path, db_url: str, backend: str = "rules", **kw) -> dict:
    from flows.review import review_documents

    try:
        review_documents(source=str(source), out_dir=str(out), database_url=db_url, backend=backend, **kw)
    finally:
        dispose_engines()
    return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    from docreview_testing.hostile import generate_hostile_corpus

    folder = tmp_path_factory.mktemp("hostile")
    return folder, generate_hostile_corpus(folder, oversized=True)


def _pick(hostile, names: list[str], dest: Path) -> Path:
    folder, _ = hostile
    dest.mkdir()
    for name in names:
        shutil.copy(folder / name, dest / name)
    return dest


# --- resource limits -----------------------------------------------------------------------------


@pytest.mark.usefixtures("prefect_harness")
def test_chunk_and_page_limits(hostile, tmp_path, db_url, monkeypatch):
    monkeypatch.setenv("DOCREVIEW_MAX_CHUNKS_PER_DOCUMENT", "10")
    monkeypatch.setenv("DOCREVIEW_MAX_CHARS_PER_PAGE", "20000")
    inbox = _pick(hostile, ["many-pages.pdf", "oversized-page.pdf", "clean-contract.pdf"], tmp_path / "in")
    report = _run(inbox, tmp_path / "out", db_url)
    docs = {d["file_name"]: d for d in report["documents"]}
    many = docs["many-pages.pdf"]
    assert many["status"] == "failed" and many["failure_kind"] == "too_large"
    assert many["reason"].startswith("too many chunks") and "limit of 10" in many["reason"]
    big = docs["oversized-page.pdf"]
    assert big["status"] == "reviewed"
    (flag,) = big["flags"]
    assert flag["kind"] == "page_truncated" and flag["page"] == 1
    assert "60,000 characters" in flag["reason"] and "20,000" in flag["reason"]
    assert [c["name"] for c in big["checks"]] == ["page_truncated"]
    assert big["findings"] and all(f["page"] == 1 for f in big["findings"])
    clean = docs["clean-contract.pdf"]
    assert clean["status"] == "reviewed" and clean["flags"] == [] and clean["findings"]
    with get_engine(db_url).connect() as conn:  # nothing beyond the cap was stored as a chunk
        longest = conn.execute(text("select max(char_end) from chunks")).scalar()
    dispose_engines()
    assert longest <= 20000


@pytest.mark.usefixtures("prefect_harness")
def test_token_budget_defers_the_rest_and_the_next_run_picks_them_up(hostile, tmp_path, db_url, monkeypatch):
    from schemas.documents import PAGE_SEPARATOR
    from schemas.settings import Limits
    from tasks.check.injection import estimate_tokens
    from tasks.ingest.extract import run_extraction
    from tasks.review.chunk import chunk_text

    names = ["clean-contract.pdf", "inject-body-plain.pdf", "inject-last-line.pdf"]
    inbox = _pick(hostile, names, tmp_path / "in")
    estimates = []
    for name in names:
        pages = [p["text"] for p in run_extraction(str(inbox / name), Limits())["pages"]]
        text_ = PAGE_SEPARATOR.join(pages)
        estimates.append(estimate_tokens(chunk_text("x", text_, [0], 4000, 600)))
    assert min(estimates) > 0.75 * max(estimates)  # so exactly one fits in 1.5x the largest
    monkeypatch.setenv("DOCREVIEW_MAX_RUN_TOKENS", str(int(1.5 * max(estimates))))
    # Only model calls spend tokens: the budget applies to a model backend (the local test double).
    from docreview_testing.stub_llm import StubLLM, StubLLMServer

    server = StubLLMServer(stub=StubLLM()).start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
    monkeypatch.setenv("DOCREVIEW_ANTHROPIC_MODEL", "claude-sonnet-4-6")
    try:
        first = _run(inbox, tmp_path / "a", db_url, backend="anthropic", routing="all")
        status = sorted(d["status"] for d in first["documents"])
        assert status == ["deferred", "deferred", "reviewed"]
        for d in first["documents"]:
            if d["status"] == "deferred":
                assert d["reason"].startswith("run token budget reached") and "deferred to the next run" in d["reason"]
        monkeypatch.setenv("DOCREVIEW_MAX_RUN_TOKENS", "0")  # unlimited
        second = _run(inbox, tmp_path / "b", db_url, backend="anthropic", routing="all")
    finally:
        server.stop()
    assert all(d["status"] == "reviewed" for d in second["documents"])
    assert second["run"]["metrics"]["documents_skipped"] == 1  # the one reviewed before is reused


# --- secrets -------------------------------------------------------------------------------------

SECRET_TAG = uuid.uuid4().hex
SECRETS = {
    "ANTHROPIC_API_KEY": f"sk-ant-test-SECRET-{SECRET_TAG}",
    "AWS_ACCESS_KEY_ID": f"AKIATEST{SECRET_TAG[:12].upper()}",
    "AWS_SECRET_ACCESS_KEY": f"wJalrXUtnFEMI/SECRET/{SECRET_TAG}",
    "AWS_SESSION_TOKEN": f"FwoGZXIvYXdzEJr//SECRET-session-{SECRET_TAG[::-1]}",
}


class _ErrorAPI(BaseHTTPRequestHandler):
    """Answers every Messages API and Bedrock call with a non-retryable error; records headers."""

    seen: ClassVar[list[dict[str, str]]] = []

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        if self.path.startswith("/v1/messages"):
            body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            status, extra = 401, {}
        else:
            body = {"message": "The security token included in the request is invalid."}
            status, extra = 403, {"x-amzn-ErrorType": "UnrecognizedClientException"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("request-id", "req_test")
        for k, v in extra.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(DOCREVIEW), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(Path(args[1]).parent),
        check=False,
    )


def _db_dump(db_url: str) -> str:
    """Every value of every column of every table, as text."""
    import schemas.tables  # noqa: F401 - registers every table

    parts = []
    engine = get_engine(db_url)
    with engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            for row in conn.execute(table.select()):
                parts.extend(json.dumps(v, default=str) if isinstance(v, (dict, list)) else str(v) for v in row)
    dispose_engines()
    return "\n".join(parts)


def _prefect_dump(started: float) -> str:
    """Artifacts, logs, flow-run parameters and task-run names from the Prefect API since ``started``."""
    from prefect.client.orchestration import get_client

    parts = []
    with get_client(sync_client=True) as client:
        for art in client.read_artifacts(limit=200):
            parts.append(json.dumps(art.data, default=str))
            parts.append(str(art.description))
        for run in client.read_flow_runs(limit=200):
            parts.append(json.dumps(run.parameters, default=str))
            parts.append(str(run.name))
        for log in client.read_logs(limit=200):
            parts.append(log.message)
        for log in client.read_logs(limit=200, offset=200):
            parts.append(log.message)
    return "\n".join(parts)


def _leaks(haystack: str) -> list[str]:
    needles = list(SECRETS.values()) + [SECRET_TAG, SECRET_TAG[::-1], SECRET_TAG[:12].upper()]
    return [n for n in needles if n in haystack]


@pytest.mark.slow  # four reviews in child processes (rules, two refusing APIs, the test server): about 40 s
@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_no_secret_reaches_logs_artifacts_reports_or_the_database(hostile, tmp_path):
    from prefect.settings import PREFECT_API_URL

    inbox = _pick(hostile, ["clean-contract.pdf", "inject-tool-call.pdf"], tmp_path / "in")
    db_url = f"sqlite:///{tmp_path / 'secrets.db'}"
    _ErrorAPI.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ErrorAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AWS_", "DOCREVIEW_"))}
    env.update(
        SECRETS,
        PREFECT_API_URL=str(PREFECT_API_URL.value()),
        AWS_REGION="us-east-1",
        DOCREVIEW_ANTHROPIC_MODEL="claude-haiku-4-5",
        DOCREVIEW_BEDROCK_ENDPOINT_URL=base,
        ANTHROPIC_BASE_URL=base,
        PYTHONWARNINGS="ignore",
    )
    started = time.time()
    runs: dict[str, subprocess.CompletedProcess] = {}
    try:
        for backend in ("rules", "anthropic", "bedrock"):
            out = tmp_path / f"out-{backend}"
            runs[backend] = _cli(
                ["review", str(inbox), "--out", str(out), "--db", db_url, "--backend", backend, "-v"], env
            )
        stub_llm = None
        try:
            from docreview_testing import stub_llm
        except ImportError:
            pass
        if stub_llm is not None:  # a full, successful review through the SDK with the key
            with stub_llm.StubLLMServer() as stub:
                out = tmp_path / "out-stub"
                runs["stub"] = _cli(
                    ["review", str(inbox), "--out", str(out), "--db", db_url, "--backend", "anthropic", "-v"],
                    {**env, "ANTHROPIC_BASE_URL": stub.url},
                )
    finally:
        server.shutdown()
        server.server_close()

    for name, proc in runs.items():  # the refusing API stops those runs as misconfigured (exit 1)
        refused = name in ("anthropic", "bedrock")
        assert proc.returncode == (1 if refused else 0), (name, proc.stdout[-2000:], proc.stderr[-2000:])
        assert not refused or "Stopped: the API refused the requests" in " ".join(proc.stderr.split())
    # The SDK really used the key (so a leak would have had something to leak).
    assert any(
        SECRETS["ANTHROPIC_API_KEY"] in (h.get("x-api-key", "") + h.get("authorization", "")) for h in _ErrorAPI.seen
    )
    assert any(SECRETS["AWS_ACCESS_KEY_ID"] in h.get("authorization", "") for h in _ErrorAPI.seen)
    anthropic_report = json.loads((tmp_path / "out-anthropic" / "report.json").read_text())
    assert {d["status"] for d in anthropic_report["documents"]} == {"deferred"}
    if "stub" in runs:
        stub_report = json.loads((tmp_path / "out-stub" / "report.json").read_text())
        assert all(d["status"] == "reviewed" for d in stub_report["documents"])

    sources = {f"{name} stdout": p.stdout for name, p in runs.items()}
    sources.update({f"{name} stderr": p.stderr for name, p in runs.items()})
    for path in tmp_path.glob("out-*/**/*"):
        if path.is_file():
            sources[str(path.relative_to(tmp_path))] = path.read_bytes().decode("utf-8", "replace")
    assert any(k.endswith("docreview.log") for k in sources), sorted(sources)
    sources["database"] = _db_dump(db_url)
    sources["prefect api"] = _prefect_dump(started)
    assert "review-documents" in sources["prefect api"] or "review-" in sources["prefect api"]
    leaks = {where: found for where, text_ in sources.items() if (found := _leaks(text_))}
    assert leaks == {}


def test_settings_keep_credentials_secret(monkeypatch):
    from schemas.settings import Settings

    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    settings = Settings()
    assert settings.anthropic_api_key.get_secret_value() == SECRETS["ANTHROPIC_API_KEY"]
    assert settings.aws_secret_access_key.get_secret_value() == SECRETS["AWS_SECRET_ACCESS_KEY"]
    dumped = repr(settings) + str(settings) + settings.model_dump_json()
    assert _leaks(dumped) == []


# --- PII -----------------------------------------------------------------------------------------


def test_pii_redaction_round_trip():
    from tasks.review.pii import redact, restore

    text = (
        "Notices to jane.doe@example.com or (212) 555-0100, +44 20 7946 0958. Employee SSN 123-45-6789. "
        "Pay to IBAN GB82 WEST 1234 5698 7654 32 or DE89370400440532013000."
    )
    red = redact(text)
    for original in (
        "jane.doe@example.com",
        "(212) 555-0100",
        "+44 20 7946 0958",
        "123-45-6789",
        "GB82 WEST 1234 5698 7654 32",
        "DE89370400440532013000",
    ):
        assert original not in red.text and original in red.mapping.values()
    assert red.kinds == {"email": 1, "phone": 2, "ssn": 1, "iban": 2}
    assert restore(red.text, red.mapping) == text
    assert restore("[EMAIL_9] unknown", red.mapping) == "[EMAIL_9] unknown"
    again = redact("Copy to jane.doe@example.com and bob@example.org", mapping=red.mapping)
    assert again.text == "Copy to [EMAIL_1] and [EMAIL_2]"


def test_pii_redaction_leaves_contract_numbers_alone():
    from tasks.review.pii import redact

    text = (
        "Section 12.3: fees of $1,500,000 payable within 30 days of March 1, 2024; 10,000 units; "
        "account 123456789; invoice 2024-001-0042; SSN-like 000-12-3456 and 666-12-3456; "
        "IBAN-like GB00 WEST 1234 5698 7654 32 (bad check digits)."
    )
    red = redact(text)
    assert red.text == text and red.mapping == {}


def test_restored_quotes_ground_against_the_original():
    from schemas.findings import Finding, FindingValue
    from tasks.review.pii import redact, restore_finding_fields

    text = "Notices shall be sent to legal@contoso.com with a copy to +1 212 555 0100."
    red = redact(text)
    model_quote = red.text[len("Notices shall be sent to ") :].rstrip(".")
    finding = Finding(
        clause_type="other",
        summary="Notices go to [EMAIL_1].",
        risk="low",
        evidence=model_quote,
        page=1,
        values=[FindingValue(name="party", value="[EMAIL_1]")],
    )
    restored = restore_finding_fields(finding, red.mapping)
    assert restored.evidence in text and restored.values[0].value == "legal@contoso.com"
    assert finding.evidence == model_quote  # the input is unchanged


# --- every hostile or broken file ends in a terminal state, within a bound -----------------------

#: Wall-clock bound for the robustness corpus plus the hostile corpus in one run, seconds.
TERMINAL_BOUND_S = 600


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_every_robustness_and_hostile_file_ends_in_a_terminal_state(
    shared_data, hostile, tmp_path, db_url, monkeypatch
):
    folder, docs = hostile
    inbox = tmp_path / "inbox"  # folder listing does not follow symlinked folders: copy (8 MB)
    shutil.copytree(shared_data / "pdf-robustness", inbox / "robustness")
    shutil.copytree(folder, inbox / "hostile")
    monkeypatch.setenv("DOCREVIEW_EXTRACTION_TIMEOUT_S", "60")
    monkeypatch.setenv("DOCREVIEW_EXTRACTION_MEMORY_MB", "1024")
    monkeypatch.setenv("DOCREVIEW_MAX_CHUNKS_PER_DOCUMENT", "40")
    files = sorted(p for p in inbox.rglob("*") if p.is_file())
    started = time.monotonic()
    report = _run(inbox, tmp_path / "out", db_url)
    elapsed = time.monotonic() - started
    print(f"{len(files)} files reached a terminal state in {elapsed:.1f} s")
    assert elapsed < TERMINAL_BOUND_S
    assert len(report["documents"]) == len(files)
    for d in report["documents"]:
        assert d["status"] in {"reviewed", "failed", "deferred"}, d["file_name"]
        if d["status"] != "reviewed":
            assert d["reason"], d["file_name"]
    by_name = {d["file_name"]: d for d in report["documents"]}
    assert by_name["many-pages.pdf"]["reason"].startswith("too many chunks")
    assert by_name["oversized-page.pdf"]["status"] == "reviewed"
    assert [f["kind"] for f in by_name["oversized-page.pdf"]["flags"]] == ["page_truncated"]
    for doc in docs:
        if doc.planted:
            assert by_name[doc.file_name]["status"] == "reviewed"
            assert any(f["kind"] == "prompt_injection" for f in by_name[doc.file_name]["flags"]), doc.file_name


def test_redacting_backend_sends_no_pii_and_restores_findings():
    from schemas.documents import Chunk
    from schemas.findings import Finding, FindingValue
    from schemas.review import ChunkReview
    from tasks.review.pii import RedactingBackend

    page1 = "Notices to Acme go to legal@acme.example or +1 212-555-0187.\n\n"
    page2 = "Payment to IBAN GB82 WEST 1234 5698 7654 32 within thirty (30) days."
    chunk = Chunk(
        document_sha256="s",
        index=0,
        char_start=0,
        char_end=len(page1 + page2),
        page_start=1,
        page_end=2,
        text=page1 + page2,
        page_offsets=[len(page1)],
    )
    seen: list[Chunk] = []

    class Inner:
        name, model = "anthropic", "m"

        def review_chunk(self, c: Chunk, document_name: str) -> ChunkReview:
            seen.append(c)
            quote = c.text[c.page_offsets[0] :].split(" within")[0]  # quotes the redacted page 2
            return ChunkReview(
                chunk_index=0,
                findings=[
                    Finding(
                        clause_type="other",
                        summary="Payment account.",
                        risk="low",
                        evidence=quote,
                        page=2,
                        values=[FindingValue(name="account", value=quote.split("IBAN ")[1])],
                    )
                ],
            )

    review = RedactingBackend(Inner()).review_chunk(chunk, "a.pdf")
    sent = seen[0].text
    assert "legal@acme.example" not in sent and "212-555-0187" not in sent and "GB82" not in sent
    assert "[EMAIL_1]" in sent and "[IBAN_1]" in sent
    assert seen[0].page_at(sent.index("Payment")) == 2  # page offsets follow the redaction
    f = review.findings[0]
    assert f.evidence == "Payment to IBAN GB82 WEST 1234 5698 7654 32"
    assert f.values[0].value == "GB82 WEST 1234 5698 7654 32"
