"""Run metrics: computed from a run's stored rows when the run ends."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlmodel import Session, col, select

from schemas.documents import DocumentStatus
from schemas.tables import (
    ChunkRow,
    DocumentReviewRow,
    DocumentRow,
    FindingRow,
    LLMCallRow,
    RunDocumentRow,
)
from tasks.store.persist import get_engine


def compute_run_metrics(
    database_url: str,
    run_id: str,
    prompt_version: str,
    model: str,
    elapsed_s: float,
    chunker: str | None = None,
) -> dict[str, float]:
    """Per-run metrics from the stored rows.

    Returns ``documents_total``, ``documents_reviewed``, ``documents_deferred``,
    ``documents_failed``, ``documents_skipped`` (reviewed earlier, reused), ``documents_reviewed_again`` (reviewed
    in this run though the ledger holds a review by other code: an upgrade), ``docs_per_min``
    (documents reviewed in this run, not reused from an earlier one nor copies of another object,
    per minute of wall time), ``findings_total``,
    ``verification_rate`` (verified / findings, 0 when none), ``unsupported``, ``contradicted``,
    ``needs_review`` (findings with that verdict), ``pages_total`` (pages of the PDFs, images and
    HTML filings; a DOCX has paragraph units, not pages, and is left out), ``llm_calls``,
    ``input_tokens``, ``output_tokens``, ``cost_usd`` (USD) and ``wall_s`` (seconds); when the run
    made model calls, ``cache_hit_ratio``, ``latency_ms_p50``/``_p95`` and ``ttft_ms_p50``/``_p95``
    (ms, :func:`_llm_call_metrics`); drift
    (:func:`tasks.observe.monitoring.run_drift_metrics`): ``drift_documents`` and, when documents were
    compared with an earlier review, ``drift`` (mean, 0..1), ``drift_max``, ``drift_baseline_changed``.

    Routing (documents chunked in this run, i.e. not reused; chunks of ``chunker`` when given):
    ``chunks_total``, ``chunks_deep`` and ``routing_rate`` = characters of document text sent to
    review (the union of the chunks' ``route_ranges``; a deep chunk stored without them counts whole)
    / characters covered by all chunks, both as unions so chunk overlap is counted once
    (:func:`tasks.review.route.routing_rate`); 0 when no chunks. Playbook counts when the run applied
    one (:func:`_playbook_metrics`).
    """
    with Session(get_engine(database_url)) as session:
        docs = session.exec(select(RunDocumentRow).where(RunDocumentRow.run_id == run_id)).all()
        shas = sorted({d.sha256 for d in docs if d.sha256 and d.status == DocumentStatus.reviewed.value})
        verdicts: list[str] = []
        for i in range(0, len(shas), 500):
            verdicts += session.exec(
                select(FindingRow.verdict).where(
                    col(FindingRow.sha256).in_(shas[i : i + 500]),
                    FindingRow.prompt_version == prompt_version,
                    FindingRow.model == model,
                )
            ).all()
        calls = session.exec(select(LLMCallRow).where(LLMCallRow.run_id == run_id)).all()
        chunked = sorted(
            {
                d.sha256
                for d in docs
                if d.sha256
                and not d.reused
                and d.status in (DocumentStatus.reviewed.value, DocumentStatus.deferred.value)
            }
        )
        chunk_rows: list[Any] = []
        for i in range(0, len(chunked), 500):
            query = select(  # type: ignore[call-overload]  # sqlmodel types select() for at most 4 columns
                ChunkRow.sha256, ChunkRow.char_start, ChunkRow.char_end, ChunkRow.route, ChunkRow.route_ranges
            ).where(col(ChunkRow.sha256).in_(chunked[i : i + 500]))
            if chunker is not None:
                query = query.where(ChunkRow.chunker == chunker)
            chunk_rows += session.exec(query).all()
        word = _word_documents(session, [d.sha256 for d in docs if d.sha256])
        upgraded = _reviewed_before_by_other_code(session, chunked, prompt_version, model)
    status = [d.status for d in docs]
    findings = len(verdicts)
    return {
        "documents_total": len(docs),
        "documents_reviewed": status.count(DocumentStatus.reviewed.value),
        "documents_deferred": status.count(DocumentStatus.deferred.value),
        "documents_failed": status.count(DocumentStatus.failed.value),
        "documents_skipped": sum(1 for d in docs if d.reused),
        "documents_reviewed_again": upgraded,
        "docs_per_min": sum(
            1
            for d in docs
            if d.status == DocumentStatus.reviewed.value
            and not d.reused
            and not (d.reason or "").startswith("same content as")
        )
        / (elapsed_s / 60)
        if elapsed_s > 0
        else 0.0,
        "findings_total": findings,
        "verification_rate": verdicts.count("verified") / findings if findings else 0.0,
        "unsupported": verdicts.count("unsupported"),
        "contradicted": verdicts.count("contradicted"),
        "needs_review": verdicts.count("needs_review"),
        "pages_total": sum(d.pages for d in docs if d.sha256 not in word),
        "llm_calls": len(calls),
        "input_tokens": sum(c.input_tokens for c in calls),
        "output_tokens": sum(c.output_tokens for c in calls),
        "cost_usd": sum(c.cost_usd for c in calls),
        "wall_s": elapsed_s,
        **_llm_call_metrics(calls),
        **_drift_metrics(database_url, run_id),
        **_routing_metrics(chunk_rows),
        **_playbook_metrics(database_url, run_id),
    }


def _reviewed_before_by_other_code(session: Session, shas: Sequence[str], prompt_version: str, model: str) -> int:
    """How many of ``shas`` (reviewed in this run, not reused) the skip ledger holds a review of made by other
    code: another prompt version, model (the rules backend's ``RULES_VERSION``) or checks version. An upgrade's
    first run reviews these again instead of reusing what the old code found; the summary says how many."""
    from tasks.check.support import checks_version

    current = f"{prompt_version}; checks {checks_version()}"
    other: set[str] = set()
    for i in range(0, len(shas), 500):
        rows = session.exec(
            select(DocumentReviewRow.sha256, DocumentReviewRow.prompt_version, DocumentReviewRow.model).where(
                col(DocumentReviewRow.sha256).in_(shas[i : i + 500])
            )
        ).all()
        other |= {sha for sha, version, by in rows if version != current or by != model}
    return len(other)


def _word_documents(session: Session, shas: list[str]) -> set[str]:
    """The sha256s of ``shas`` whose document is a DOCX: its ``pages`` are paragraph units (a Word file
    has no pages until a printer lays it out), so a run's ``pages_total`` leaves them out."""
    out: set[str] = set()
    unique = sorted(set(shas))
    for i in range(0, len(unique), 500):
        out |= set(
            session.exec(
                select(DocumentRow.sha256).where(
                    col(DocumentRow.sha256).in_(unique[i : i + 500]), DocumentRow.kind == "docx"
                )
            ).all()
        )
    return out


def _playbook_metrics(database_url: str, run_id: str) -> dict[str, float]:
    """When the run applied a playbook (:mod:`tasks.observe.playbook`): ``playbook_deviations``,
    ``playbook_deviations_high`` (severity high), ``playbook_unknown`` and ``playbook_pass``, over
    (source object, rule) pairs as the report lists them (two objects with the same content count
    twice); ``{}`` otherwise."""
    from collections import Counter

    from schemas.tables import PlaybookResultRow

    with Session(get_engine(database_url)) as session:
        stored = session.exec(
            select(PlaybookResultRow.sha256, PlaybookResultRow.status, PlaybookResultRow.severity).where(
                PlaybookResultRow.run_id == run_id
            )
        ).all()
        objects = Counter(
            session.exec(
                select(RunDocumentRow.sha256).where(
                    RunDocumentRow.run_id == run_id, RunDocumentRow.status == DocumentStatus.reviewed.value
                )
            ).all()
        )
    if not stored:
        return {}
    rows = [(status, severity) for sha, status, severity in stored for _ in range(objects.get(sha, 1))]
    return {
        "playbook_deviations": sum(1 for st, _ in rows if st == "deviation"),
        "playbook_deviations_high": sum(1 for st, sev in rows if st == "deviation" and sev == "high"),
        "playbook_unknown": sum(1 for st, _ in rows if st == "unknown"),
        "playbook_pass": sum(1 for st, _ in rows if st == "pass"),
    }


def _routing_metrics(chunk_rows: Sequence[Any]) -> dict[str, float]:
    """``chunks_total``, ``chunks_deep`` and ``routing_rate`` from ``(sha256, char_start, char_end, route,
    route_ranges)`` rows; the rate is per-document union coverage summed over documents (see :mod:`tasks.review.route`)."""
    from tasks.review.route import covered_chars

    by_doc: dict[str, list[Any]] = {}
    for row in chunk_rows:
        by_doc.setdefault(row[0], []).append(row)
    total = deep = 0
    for rows in by_doc.values():
        total += covered_chars((r[1], r[2]) for r in rows)
        deep += covered_chars(
            tuple(x)
            for r in rows
            if r[3] == "deep"
            for x in (json.loads(r[4]) if len(r) > 4 and r[4] else [(r[1], r[2])])
        )
    return {
        "chunks_total": len(chunk_rows),
        "chunks_deep": sum(1 for r in chunk_rows if r[3] == "deep"),
        "routing_rate": deep / total if total else 0.0,
    }


def _llm_call_metrics(calls: Sequence[LLMCallRow]) -> dict[str, float]:
    """Prompt-cache and latency metrics of a run's model calls; empty when it made none.

    ``cache_hit_ratio`` = cache_read_input_tokens / (input_tokens + cache_creation_input_tokens
    + cache_read_input_tokens); ``latency_ms_p50``/``latency_ms_p95`` over calls that returned
    (no ``error_class``), ms; ``ttft_ms_p50``/``ttft_ms_p95`` over streamed calls (first-token
    latency, ms). Nearest-rank percentiles (:func:`tasks.observe.monitoring.percentile`).
    Prompt-cache warm-up (calls stored with ``chunk_index == WARMUP_CHUNK_INDEX``, see
    ``AnthropicBackend.warm_cache``): ``cache_warmup_usd`` (their cost, USD) and
    ``cache_write_calls`` (review calls that wrote the cache: with a warm cache only the calls whose
    prefix expired; without one, about one per concurrent call of the first wave — the writes the
    warm-up saves, each costing the prefix at the cache-write price instead of the read price).
    """
    from tasks.observe.monitoring import cache_hit_ratio, percentile
    from tasks.review.backends.anthropic_backend import WARMUP_CHUNK_INDEX

    if not calls:
        return {}
    out: dict[str, float] = {"cache_hit_ratio": cache_hit_ratio(calls) or 0.0}
    warm = [c for c in calls if c.chunk_index == WARMUP_CHUNK_INDEX]
    out["cache_write_calls"] = float(
        sum(1 for c in calls if c.chunk_index != WARMUP_CHUNK_INDEX and c.cache_creation_input_tokens > 0)
    )
    if warm:
        out["cache_warmup_usd"] = sum(c.cost_usd for c in warm)
    latency = [c.latency_ms for c in calls if c.error_class is None]
    ttft = [c.first_token_ms for c in calls if c.first_token_ms is not None]
    for name, values in (("latency_ms", latency), ("ttft_ms", ttft)):
        for q in (50, 95):
            value = percentile(values, q)
            if value is not None:
                out[f"{name}_p{q}"] = value
    return out


def _drift_metrics(database_url: str, run_id: str) -> dict[str, float]:
    """``drift_documents`` and, when above 0, ``drift``/``drift_max``/``drift_baseline_changed``."""
    from tasks.observe.monitoring import (
        run_drift_metrics,  # monitoring reads through this module
    )

    return run_drift_metrics(database_url, run_id)


def format_metric(value: float) -> str:
    """A metric for people: a whole number as such, else rounded to what reads (``91.5``, ``2.62``,
    ``0.645``, ``0.0123``); the stored value keeps its precision."""
    value = float(value)
    if value.is_integer():
        return str(int(value))
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def run_outcome_text(metrics: dict[str, Any]) -> str:
    """A finished run's metrics as a log line reads them: ``4 reviewed, 0 deferred, 0 failed (of 4);
    121 findings, 64.5% verified; 91.5 documents/min in 2.6 s`` (the throughput counts documents
    reviewed in this run only, like the CLI summary; left out when the run reviewed none anew)."""

    def count(name: str) -> int:
        return int(metrics.get(name, 0) or 0)

    parts = [
        f"{count('documents_reviewed')} reviewed, {count('documents_deferred')} deferred, "
        f"{count('documents_failed')} failed (of {count('documents_total')})"
    ]
    if count("documents_skipped"):
        parts[0] += f", {count('documents_skipped')} of them unchanged and reused"
    if count("documents_reviewed_again"):
        parts[0] += f", {count('documents_reviewed_again')} reviewed again (reviewed before by other code or model)"
    findings = count("findings_total")
    parts.append(
        f"{findings} finding(s), {float(metrics.get('verification_rate', 0)) * 100:.1f}% verified"
        if findings
        else "no findings"
    )
    fresh, wall = count("documents_reviewed") - count("documents_skipped"), float(metrics.get("wall_s", 0) or 0)
    if fresh > 0 and wall > 0:
        parts.append(f"{fresh * 60 / wall:.1f} documents/min in {wall:.1f} s")
    return "; ".join(parts)
