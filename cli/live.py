"""``docreview doctor --live``: one minimal request per call site a configured run will make, sent to the
real API with the user's own key (or AWS credentials), each reported with pass or fail, the API's own
error text, latency and cost.

The call sites are those of :data:`tasks.review.backends.models.CALL_SITES` as the configured run uses
them: the prompt-cache warm-up (:meth:`AnthropicBackend.warm_up_request`), one chunk review (the run's
model, output mode and prompt, on a short generated passage), token counting of the cached prefix, the
cited verifier and its verdict (where the verifier runs), one page read (a one-page PDF made here, where
the run reads pages with the model) and a Message Batch created and canceled at once (``anthropic``
backend; Claude in Amazon Bedrock has no batches). Nothing else is sent and no document is read. Most of
the cost is the one write of the cached prefix: about $0.03 with Sonnet 5.5, up to about $0.08 with an Opus
4.x model (past :data:`BUDGET_USD` the command warns; the review's ``max_tokens`` is capped for it).

Offline tests run it against the local test double (``ANTHROPIC_BASE_URL``); what it says of the double is
not a statement about Claude, and the command says whose endpoint answered.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.settings import Settings

#: What the live check may cost at most, USD (the sum of the calls' costs, from the price table).
BUDGET_USD = 0.05

#: ``max_tokens`` of the live check's review and verifier calls (tokens): enough for a few findings.
LIVE_MAX_TOKENS = 1024

#: The passage the live review and verifier read: clauses any contract review finds.
PASSAGE = (
    "12. Governing Law. This Agreement shall be governed by the laws of the State of New York.\n"
    "13. Term. This Agreement commences on the Effective Date and continues for three (3) years, and renews "
    "automatically for successive one (1) year terms unless either party gives ninety (90) days' written "
    "notice of non-renewal."
)


@dataclass
class LiveResult:
    """One call site's outcome: ``site`` (its name), ``ok``, ``latency_ms`` (wall time of its calls),
    ``cost_usd`` (from the price table; 0 for an unpriced model), ``detail`` (what came back, or the API's
    own error text); ``busy`` for an error a run retries (rate limit, overload, server error): not a
    configuration failure."""

    site: str
    ok: bool
    latency_ms: float
    cost_usd: float
    detail: str
    busy: bool = False  # a 429, 529 or 5xx: the key and request are fine, the API was busy (a run retries it)


def _error_text(exc: BaseException) -> str:
    """The API's own words for a failed call: status, error type and message when the SDK has them."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):  # an error event inside a stream came with the stream's 200: no status to show
        prefix = f"{status} " if status and status != 200 else ""
        return f"{prefix}{error.get('type')}: {error.get('message')}"
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:  # botocore
        err = response["Error"]
        return f"{err.get('Code')}: {err.get('Message')}"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def _timed(site: str, call: Callable[[], tuple[bool, float, str]]) -> LiveResult:
    started = time.perf_counter()
    try:
        ok, cost, detail = call()
    except Exception as exc:  # the check reports every failure as the API gave it
        from tasks.review.retry import is_retryable

        busy = is_retryable(exc)
        detail = _error_text(exc) + (" (the API is busy: a run retries this; try again)" if busy else "")
        return LiveResult(site, busy, (time.perf_counter() - started) * 1000, 0.0, detail, busy=busy)
    return LiveResult(site, ok, (time.perf_counter() - started) * 1000, cost, detail)


def _chunk() -> Any:
    import hashlib

    from schemas.documents import Chunk

    return Chunk(
        document_sha256=hashlib.sha256(PASSAGE.encode()).hexdigest(),
        index=0,
        char_start=0,
        char_end=len(PASSAGE),
        page_start=1,
        page_end=1,
        text=PASSAGE,
    )


def _one_page_pdf(folder: Path) -> Path:
    """A one-page PDF holding :data:`PASSAGE`, for the page-read call."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, PASSAGE)
    path = folder / "doctor-live-page.pdf"
    pdf.output(str(path))
    return path


def live_checks(settings: Settings) -> list[LiveResult]:
    """Every call site the run configured by ``settings`` would use, once each (see the module docstring),
    in order: ``warm-up``, ``review``, ``count tokens``, ``verifier``, ``page read``, ``batch``. A site the
    run does not use is left out. Raises nothing for an API failure (each is a failed :class:`LiveResult`);
    ``ValueError``/``LLMConfigError`` for a configuration no request can be built from."""
    from tasks.review.backends.anthropic_backend import AnthropicBackend
    from tasks.review.reviewer import make_backend

    capped = settings.model_copy(
        update={"llm_max_tokens": LIVE_MAX_TOKENS, "llm_max_tokens_ceiling": LIVE_MAX_TOKENS, "redact_pii": False}
    )
    backend: Any = make_backend(capped)
    results: list[LiveResult] = []
    try:

        def warm() -> tuple[bool, float, str]:
            (record,) = backend.warm_cache()
            return (
                record.stop_reason in ("max_tokens", "end_turn"),  # a refusal is no cache written
                record.cost_usd or 0.0,
                f"stop_reason {record.stop_reason}, cache write {record.cache_creation_input_tokens} tokens, "
                f"cache read {record.cache_read_input_tokens}",
            )

        def review() -> tuple[bool, float, str]:
            got = backend.review_chunk(_chunk(), "doctor-live.txt")
            cost = sum(c.cost_usd or 0.0 for c in got.calls)
            ok = got.outcome.value == "ok"
            kinds = ", ".join(sorted({f.clause_type.value for f in got.findings})) or "none"
            detail = f"; {got.detail}" if got.detail else ""
            return ok, cost, f"{got.outcome.value}: {len(got.findings)} finding(s) ({kinds}){detail}"

        results.append(_timed("warm-up", warm))
        results.append(_timed("review", review))
        if isinstance(backend, AnthropicBackend):
            results.append(_timed("count tokens", lambda: (True, 0.0, f"{backend.count_prefix_tokens()} tokens")))
        if settings.verifier_on(settings.resolved_backend()):
            results.append(_timed("verifier", lambda: _verify(settings)))
        if settings.page_images != "off":
            results.append(_timed("page read", lambda: _read_page(settings)))
        if settings.resolved_backend() == "anthropic":
            results.append(_timed("batch", lambda: _batch(settings, backend)))
    finally:
        close = getattr(backend, "close", None)
        if close is not None:
            close()
    return results


def _verify(settings: Settings) -> tuple[bool, float, str]:
    from schemas.findings import Finding, Risk, Verdict
    from schemas.taxonomy import ClauseType
    from tasks.check.verifier import make_verifier_client, verify

    finding = Finding(
        clause_type=ClauseType.governing_law,
        summary="New York law",
        risk=Risk.low,
        evidence="governed by the laws of the State of New York",
        page=1,
    )
    client = make_verifier_client(settings)
    try:
        outcome = verify(finding, PASSAGE, client, settings.verifier_model, LIVE_MAX_TOKENS)
    finally:
        client.close()
    failed = next((r.error_class for r in outcome.records if r.error_class), None)
    cost = sum(r.cost_usd or 0.0 for r in outcome.records)
    ok = failed is None and outcome.check.verdict is Verdict.verified
    return ok, cost, f"{outcome.check.verdict.value}: {outcome.check.reason}"


def _read_page(settings: Settings) -> tuple[bool, float, str]:
    from schemas.documents import DocumentKind, FailureKind, IngestOutcome, SourceObject
    from tasks.review.pages import PageReader

    reader = PageReader(settings)
    try:
        with tempfile.TemporaryDirectory(prefix="docreview-doctor-") as folder:
            path = _one_page_pdf(Path(folder))
            outcome = IngestOutcome(
                source=SourceObject(
                    uri=str(path), name=path.name, local_path=str(path), size_bytes=path.stat().st_size
                ),
                sha256="0" * 64,
                kind=DocumentKind.pdf,
                failure=FailureKind.unreadable,
                reason="doctor --live: a page read by the model",
                pages=1,
            )
            text, why, record = reader.read(outcome, 1)
    finally:
        reader.close()
    cost = record.cost_usd or 0.0 if record is not None else 0.0
    if text is None:
        return False, cost, why or "the page was not read"
    flat = " ".join(text.split())
    return "Governing Law" in flat, cost, f"read {len(flat)} characters: {flat[:80]!r}"


def _batch(settings: Settings, backend: Any) -> tuple[bool, float, str]:
    from tasks.review.batches import batch_client

    client = batch_client(settings)
    try:
        params = backend.request(_chunk(), "doctor-live.txt", max_tokens=LIVE_MAX_TOKENS)
        batch = client.messages.batches.create(requests=[{"custom_id": "doctor-live-0", "params": params}])
        canceled = client.messages.batches.cancel(batch.id)
    finally:
        client.close()
    return True, 0.0, f"created {batch.id} and canceled it ({canceled.processing_status})"
