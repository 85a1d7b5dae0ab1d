"""The LLM concurrency cap covers every call to the API, not only the review's.

The model verifier's calls (fact-check) hold the run's LLM slots like the review's: with the test
double holding every answer, no more requests reach the API than ``llm_concurrency``. (Before,
they ran beside the review calls: 50 requests at once under a cap of 16 in the throughput
benchmark, whose "bound" was then broken.)
"""

from __future__ import annotations

import threading
import time


def test_verifier_calls_hold_the_runs_llm_slots(monkeypatch):
    """Four verifier calls at once under ``llm_concurrency=2``: with every answer held, two requests
    reach the API and the other two wait for a slot, not at the API."""
    from docreview_testing.stub_llm import StubLLM, StubLLMServer
    from schemas.findings import Finding, Risk
    from schemas.policy import ResiliencePolicy
    from schemas.settings import Settings
    from schemas.taxonomy import ClauseType
    from tasks.check.factcheck import _configured_verifier
    from tasks.review.resilience import _local_semaphore

    policy = ResiliencePolicy(
        llm_concurrency=2, concurrency_scope="process", concurrency_limit_name="test-verifier-cap"
    )
    finding = Finding(clause_type=ClauseType.cap_on_liability, summary="s", risk=Risk.high, evidence="e", page=1)
    with StubLLMServer(stub=StubLLM()) as server:
        server.stub.hold_first_token()
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        verify = _configured_verifier("anthropic", Settings(verifier_enabled=True), policy)
        assert verify is not None
        results: list = []
        threads = [threading.Thread(target=lambda: results.append(verify(finding, "passage e"))) for _ in range(4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while server.stub.in_flight < 2 and time.monotonic() < deadline:  # the two slot holders reach the API
            time.sleep(0.01)
        assert server.stub.in_flight == 2
        assert not _local_semaphore(policy).acquire(blocking=False)  # both slots are held by those calls
        server.stub.release_first_token()
        for t in threads:
            t.join(timeout=60)
    assert len(results) == 4 and all(r.error_class is None for outcome in results for r in outcome.records)
    assert server.stub.max_in_flight == 2
