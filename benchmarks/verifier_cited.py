"""``python -m benchmarks.verifier_cited``: cost and latency of the cited verifier (a cited answer over the
passage as a ``document`` block, then a structured verdict: two calls) against the single structured call it
replaced (the passage in a text block, ``supporting_span`` copied by the model), for the same findings.

Findings: the offline rules backend's, on the CUAD contracts' first passages (the verifier's passage: the
quote and 800 characters each side). Both run against the local test double with a latency model
(``--ttft-ms`` before the first token, ``--token-ms`` per output token), so tokens are the double's
estimates (about 4 characters a token; the API's citation system prompt and document chunking, which add
input tokens, are not simulated) and latencies are that model's, not Claude's: the figures compare the two
request shapes, nothing more.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks._harness import CUAD_PDF, emit


def findings_with_passages(contracts: int, per_contract: int) -> list[tuple[object, str]]:
    """``(finding, passage)`` pairs from the rules backend over each contract's first 12,000 characters."""
    from schemas.documents import Chunk
    from tasks.check.factcheck import VERIFIER_CONTEXT_CHARS
    from tasks.review.backends.rules import RulesBackend

    out = []
    for txt in sorted((CUAD_PDF.parent / "txt").glob("*.txt"))[:contracts]:
        text = txt.read_text(encoding="utf-8", errors="replace")[:12_000]
        chunk = Chunk(
            document_sha256="0" * 64, index=0, char_start=0, char_end=len(text), page_start=1, page_end=1, text=text
        )
        for f in RulesBackend().review_chunk(chunk, txt.name).findings[:per_contract]:
            at = text.find(f.evidence)
            if at >= 0:
                out.append(
                    (f, text[max(0, at - VERIFIER_CONTEXT_CHARS) : at + len(f.evidence) + VERIFIER_CONTEXT_CHARS])
                )
    return out


def run(
    contracts: int = 10,
    per_contract: int = 4,
    ttft_ms: float = 400.0,
    token_ms: float = 10.0,
    model: str = "claude-haiku-4-5",
) -> dict:
    import anthropic

    from docreview_testing.stub_llm import StubLLM, StubLLMServer
    from tasks.check.verifier import build_verifier_request, parse_verifier_response, verify
    from tasks.review.backends.anthropic_backend import cost_usd

    pairs = findings_with_passages(contracts, per_contract)
    results: dict[str, dict[str, list[float]]] = {"cited": {}, "single_call": {}}
    with StubLLMServer(stub=StubLLM(ttft_ms=ttft_ms, token_ms=token_ms)) as server:
        client = anthropic.Anthropic(api_key="bench", base_url=server.url, max_retries=0, timeout=120)
        for finding, passage in pairs:
            started = time.perf_counter()
            outcome = verify(finding, passage, client, model)  # type: ignore[arg-type]
            cited = results["cited"]
            cited.setdefault("seconds", []).append(time.perf_counter() - started)
            cited.setdefault("input_tokens", []).append(sum(r.input_tokens for r in outcome.records))
            cited.setdefault("output_tokens", []).append(sum(r.output_tokens for r in outcome.records))
            cited.setdefault("cost_usd", []).append(sum(r.cost_usd for r in outcome.records))
            cited.setdefault("verified", []).append(outcome.check.verdict.value == "verified")
            started = time.perf_counter()
            message = client.messages.create(**build_verifier_request(finding, passage, model))  # type: ignore[arg-type]
            single = results["single_call"]
            single.setdefault("seconds", []).append(time.perf_counter() - started)
            single.setdefault("input_tokens", []).append(message.usage.input_tokens)
            single.setdefault("output_tokens", []).append(message.usage.output_tokens)
            single.setdefault("cost_usd", []).append(cost_usd(model, message.usage))
            single.setdefault("verified", []).append(
                parse_verifier_response(message, passage).verdict.value == "verified"
            )
        client.close()

    def of(v: dict[str, list[float]], keep: list[bool]) -> dict[str, float] | None:
        rows = [i for i, k in enumerate(keep) if k]
        if not rows:
            return None
        return {
            "seconds_p50": round(statistics.median(v["seconds"][i] for i in rows), 3),
            "input_tokens": round(statistics.mean(v["input_tokens"][i] for i in rows), 1),
            "output_tokens": round(statistics.mean(v["output_tokens"][i] for i in rows), 1),
            "usd_per_1000": round(1000 * statistics.mean(v["cost_usd"][i] for i in rows), 3),
        }

    verified = [bool(x) for x in results["cited"].get("verified", [])]
    summary = {
        shape: {
            "all": of(v, [True] * len(verified)),
            "verified": of(v, verified),  # the cited path's two calls
            "not_verified": of(v, [not x for x in verified]),  # the cited path stops after its first call
            "verified_share": round(statistics.mean(v["verified"]), 3),
        }
        for shape, v in results.items()
        if v
    }
    return {
        "benchmark": "verifier_cited",
        "model": model,
        "findings": len(pairs),
        "latency_model": {"ttft_ms": ttft_ms, "token_ms": token_ms},
        **summary,
        "note": "test double: estimated tokens, simulated latency",
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contracts", type=int, default=10)
    parser.add_argument("--per-contract", type=int, default=4)
    args = parser.parse_args(argv)
    emit(run(args.contracts, args.per_contract))


if __name__ == "__main__":
    main()
