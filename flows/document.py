"""One document's way through the review: the steps the flow runs for each document.

``fingerprint → claim → extract → chunk → route → review chunks → fact-check → conclude``

A model backend's chunks are reviewed one task run each (retried, bounded by the run's LLM
concurrency) and each chunk's findings fact-checked as soon as its review returns; the offline
``rules`` backend reviews a document's chunks in one task run and fact-checks them in one more.

:func:`review_document` runs them in order for one source object (the flow runs many side by
side in a :class:`flows.pipeline.DocumentPool`); in batch mode the flow runs
:func:`prepare_document` for every document, reviews all their deep chunks in one Message Batch
(:func:`review_in_batch`), then :func:`check_and_conclude` for each. Every task run a document
starts is named after its file (:mod:`tasks.runnames`), so the Prefect UI shows one document's
path. Each step ends the document (``reviewed``, ``deferred`` or ``failed`` with a reason) as
soon as the outcome is known, through the run's :class:`flows.pipeline.RunBook`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prefect import get_run_logger
from prefect.futures import PrefectFuture, as_completed

from flows.pipeline import Document, Run, RunBook, result_or_error, warm_up
from flows.quoting import quote
from schemas.documents import (
    Chunk,
    DocumentStatus,
    ExtractedDocument,
    FailureKind,
    IngestOutcome,
    SourceObject,
)
from schemas.filings import DocumentKind, FilingSummary, Profile
from schemas.findings import CheckedFinding
from schemas.review import ChunkReview, ReviewOutcome
from tasks.check.absences import contract_expected, find_absences
from tasks.check.consistency import check_consistency
from tasks.check.factcheck import fact_check_document, fact_check_findings
from tasks.check.index import DocumentIndex, headings_in
from tasks.check.injection import admit_document, cap_page_chars, screen_document
from tasks.check.merge import merge_clause_findings_in_document
from tasks.check.support import check_support_in_document
from tasks.check.zones import drop_out_of_zone_findings_in_document
from tasks.ingest.classify import classify_document, filing_company_key
from tasks.ingest.extract import extract_document
from tasks.ingest.sources import fingerprint_document
from tasks.observe.monitoring import record_drift
from tasks.review.batches import review_batch
from tasks.review.chunk import chunk_document
from tasks.review.filing import chunk_filing, summarize_document, with_sections
from tasks.review.pages import pages_to_read, read_pages_with_model
from tasks.review.resilience import misconfiguration
from tasks.review.reviewer import cached_review, review_chunks_offline, store_review
from tasks.review.route import review_unit, route_chunks
from tasks.runnames import document_scope
from tasks.store.claims import ClaimState, claim_document
from tasks.store.persist import (
    deferred_sources,
    known_source_sha256,
    load_document,
    mark_document_reviewed,
    save_absences,
    save_chunks,
    save_findings,
    save_llm_calls,
    unit_labels,
    unit_of_work,
)
from tasks.store.profiles import save_document_profile

#: Review outcomes that another attempt cannot change: the document fails instead of deferring.
TERMINAL_OUTCOMES = {ReviewOutcome.refusal, ReviewOutcome.context_overflow}

REUSED = "unchanged since an earlier review (same sha256, prompt version, model and checks); findings reused"
REUSED_WITHOUT_DOWNLOAD = (
    "unchanged since an earlier review (same ETag and sha256, prompt version, model and checks); "
    "findings reused without downloading"
)
#: The detail of a chunk review taken from the store to check it again under new checks (no model call).
RECHECKED = "a stored review (same prompt version and model) checked again: the checks have changed"


@dataclass
class PreparedDocument:
    """A claimed, extracted and chunked document: its review units (a deep chunk reduced to its
    routed segments) and which of them go to review, plus what its checks collect; ``not_judged``: why no
    clause is expected of it (:func:`tasks.check.absences.contract_expected`), None for an agreement."""

    document: Document
    chunks: list[Chunk]
    deep: list[Chunk]
    index: DocumentIndex
    checked: list[CheckedFinding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    terminal_problem: bool = False
    not_judged: str | None = None


def deferred_first(run: Run, objects: list[SourceObject]) -> list[SourceObject]:
    """``objects`` with those the previous run left ``deferred`` first: they waited a run already."""
    with unit_of_work(run.db) as session:
        waited = deferred_sources(session)
    return sorted(objects, key=lambda o: o.uri not in waited)  # stable: listing order otherwise


def reuse_unchanged_objects(run: Run, book: RunBook, objects: list[SourceObject]) -> list[SourceObject]:
    """End the bucket objects whose ``(uri, ETag)`` an earlier run hashed and reviewed under this
    prompt version and model (``reviewed``, findings reused, nothing downloaded); returns the others."""
    if run.rereview:
        return objects
    with unit_of_work(run.db) as session:
        known = known_source_sha256(session, [(o.uri, o.etag) for o in objects if o.is_s3 and o.etag])
    rest = []
    for obj in objects:
        sha = known.get((obj.uri, obj.etag or ""))
        if sha is None or sha not in run.already_reviewed:
            rest.append(obj)
        elif book.first_of_content(outcome := IngestOutcome(source=obj, sha256=sha)):
            conclude_reused(book, outcome, REUSED_WITHOUT_DOWNLOAD)
    return rest


def conclude_reused(book: RunBook, outcome: IngestOutcome, reason: str) -> None:
    """End a document whose earlier review is reused: ``reviewed`` for ``reason``, with the page count
    stored for it (one unit of work)."""
    with book.concluding(outcome) as conclusion:
        stored = load_document(conclusion.session, outcome.sha256 or "")
        conclusion.outcome = outcome.model_copy(update={"pages": stored.pages if stored else 0})
        conclusion.ends(DocumentStatus.reviewed, reason, reused=True)


def review_document(run: Run, book: RunBook, obj: SourceObject) -> None:
    """Review one source object from fingerprint to conclusion (or end it earlier with a reason)."""
    with document_scope(obj.name):
        if refused(book, IngestOutcome(source=obj)):
            return
        document = fingerprint(run, book, obj) if not run.stopping.is_set() else None
        prepared = prepare_document(run, book, document) if document and not run.stopping.is_set() else None
        if prepared is None or run.stopping.is_set():
            return  # ended on the way, or the run was interrupted: the next run takes it
        review_chunks(run, prepared)
        if not run.stopping.is_set():
            conclude_document(run, book, prepared)


def refused(book: RunBook, outcome: IngestOutcome) -> bool:
    """True (and the document ended ``deferred``) once the API has refused the run's requests
    (:data:`tasks.review.resilience.misconfiguration`): nothing more is extracted or sent."""
    if not misconfiguration.tripped:
        return False
    book.conclude(outcome, DocumentStatus.deferred, not_reviewed_reason())
    return True


def not_reviewed_reason() -> str:
    """The reason of a document left unreviewed because the API refused the run's requests."""
    return f"not reviewed: the API refused the requests: {misconfiguration.cause}"


def fingerprint(run: Run, book: RunBook, obj: SourceObject) -> Document | None:
    """The object's sha256 and pre-checks; None when it ended here (failed, a copy of another
    object of this run, or unchanged since an earlier review)."""
    got = fingerprint_document.submit(obj, run.settings.limits).result()
    if got.failure:
        book.end(got, DocumentStatus.failed, got.reason)
        return None
    if not book.first_of_content(got):
        return None  # a copy: it ends with the first object of the same content
    if got.sha256 in run.already_reviewed:
        conclude_reused(book, got, REUSED)
        return None
    return Document(outcome=got)


def prepare_document(run: Run, book: RunBook, document: Document) -> PreparedDocument | None:
    """Claim, extract, chunk, route and admit a document; None when it ended on the way.

    The claim is taken only once an extraction slot is free, right before the extraction: a run
    never holds claims on documents it is not yet working on, so concurrent runs (workers) split a
    batch between them.
    """
    warm_up(run)  # once per run: the prompt cache, and the start-up check of key, model id and schema
    with run.extraction_slots:
        got = claim_and_extract(run, book, document.outcome)
    if got is None:
        return None
    got = read_unreadable_pages(run, got)
    if not got.ok:  # a timed-out extraction waits out its back-off (deferred); anything else failed
        book.conclude(got, DocumentStatus.deferred if got.retry_after else DocumentStatus.failed, got.reason)
        return None
    document.outcome = got
    return chunk_and_route(run, book, document)


def read_unreadable_pages(run: Run, got: IngestOutcome) -> IngestOutcome:
    """The extraction's outcome with the pages OCR could not read (or read poorly) transcribed by the
    run's model (:mod:`tasks.review.pages`, ``DOCREVIEW_PAGE_IMAGES``; anthropic or bedrock); unchanged
    offline or when no page needs it."""
    settings = run.settings
    if run.reviewer.name not in ("anthropic", "bedrock") or settings.page_images == "off":
        return got
    numbers = pages_to_read(got, settings.page_images_below_confidence)
    if not numbers:
        return got
    return read_pages_with_model.submit(quote(got), numbers, settings, run.db, run.id, run.policy).result()


def claim_and_extract(run: Run, book: RunBook, fp: IngestOutcome) -> IngestOutcome | None:
    """Claim the document for this run and extract its text (the extraction's outcome); None when
    it ended instead (held by another live run, reviewed meanwhile, or the API refused the run)."""
    assert fp.sha256 is not None, "a Document's outcome is fingerprinted (see fingerprint)"
    if refused(book, fp):
        return None
    with unit_of_work(run.db) as session:  # the claim commits at once: other runs see it
        claim = claim_document(
            session,
            fp.sha256,
            run.id,
            run.worker,
            run.settings.claim_lease_s,
            run.ledger_version,
            run.reviewer.model,
            run.reviewed_since,
        )
    if claim.state == ClaimState.held:  # another live run is reviewing it
        run.held_elsewhere.add(fp.source.uri)  # waiting on that run, not failing (see flows.review.final_state)
        book.conclude(fp, DocumentStatus.deferred, claim.reason)
        return None
    if claim.state == ClaimState.reviewed:  # another run finished it meanwhile
        conclude_reused(book, fp, claim.reason)
        return None
    book.claimed(fp.sha256)
    if claim.taken_over_from:
        get_run_logger().info("Took over %s from run %s (its claim expired)", fp.source.name, claim.taken_over_from)
    return extract_document.submit(quote(fp), run.settings.limits, run.db).result()


def chunk_and_route(run: Run, book: RunBook, document: Document) -> PreparedDocument | None:
    """Chunks, routing decisions and admission (chunk count, token budget) of an extracted
    document; chunks and decisions are stored and the text screened for injected instructions."""
    got, limits = document.outcome, run.settings.limits
    extracted = got.document
    assert extracted is not None, "called with an extracted document (got.ok)"
    text = cap_page_chars(extracted, limits.max_chars_per_page)
    profile, chunks, routing = profile_and_chunk(run, text)
    # a memo, an exhibit that is no agreement, a partial copy: read, but no clause is expected of it
    not_judged = contract_expected(text) if profile[0].profile is Profile.contract else None
    sections = profile[2].sections if profile[2] is not None else []
    if sections:  # a filing's pages name their Item: the one locator every surface reads
        extracted, text = with_sections(extracted, sections), with_sections(text, sections)
        got = document.outcome = got.model_copy(update={"document": extracted})
    decisions = route_chunks(quote(chunks), routing, run.settings.router_threshold)
    units = [review_unit(c, d) for c, d in zip(chunks, decisions)]
    deep = [u for u, d in zip(units, decisions) if d.route == "deep"]
    with run.budget_lock:  # too many chunks (failed) or over the run's token budget (deferred)
        admission = admit_document(chunks, limits, run.budget, billable=deep if run.uses_model else [])
    if admission.status is not None:
        with book.concluding(got.model_copy(update={"failure": admission.failure})) as conclusion:
            save_document_profile(conclusion.session, text.sha256, *profile, not_judged)
            conclusion.ends(admission.status, admission.reason)
        return None
    with unit_of_work(run.db) as session:  # what the review and the report read back
        save_document_profile(session, text.sha256, *profile, not_judged)
        save_chunks(session, quote(chunks), run.chunker, quote(decisions))
        screen_document(session, quote(extracted), quote(chunks), limits.max_chars_per_page)
    return PreparedDocument(
        document=document, chunks=units, deep=deep, index=DocumentIndex.build(text), not_judged=not_judged
    )


def profile_and_chunk(
    run: Run, text: ExtractedDocument
) -> tuple[tuple[DocumentKind, str, FilingSummary | None], list[Chunk], str]:
    """Classify the document (contract or filing, :mod:`tasks.ingest.classify`; the run's
    ``profile`` may force one) and chunk it: a filing page-aligned under its Item sections, every
    chunk reviewed (the router's scorer knows contracts only); a contract clause-aware with the
    run's routing. Returns ``((kind, company key, filing summary), chunks, routing mode)``, the
    first as :func:`tasks.store.profiles.save_document_profile` stores it."""
    kind = classify_document(quote(text), run.profile)
    if kind.profile is Profile.filing:
        summary = summarize_document(quote(text), kind.document_type)
        chunks = chunk_filing(quote(text), run.settings.chunk_chars, summary.sections)
        return (kind, filing_company_key(kind), summary), chunks, "all"
    chunks = chunk_document(quote(text), run.settings.chunk_chars, run.settings.chunk_overlap_chars)
    return (kind, "", None), chunks, run.routing_mode


def review_chunks(run: Run, prepared: PreparedDocument) -> None:
    """Review the deep chunks (at most the run's review slots at a time across documents) and
    fact-check each chunk's findings as soon as its review returns. The offline backend reviews
    a document's chunks in one task run instead (:func:`review_offline`)."""
    if not run.uses_model:
        review_offline(run, prepared)
        return
    name = prepared.document.name
    checks = []
    deep = prepared.deep
    if prepared.document.sha256 in run.recheck:  # reviewed before under other checks: check its stored review
        deep = []
        for chunk in prepared.deep:
            with unit_of_work(run.db) as session:
                stored = cached_review(session, quote(chunk), run.prompt_version, run.reviewer.model)
            if stored is None:
                deep.append(chunk)  # not stored (a review older than the store): reviewed again
                continue
            stored = stored.model_copy(update={"detail": RECHECKED})
            findings = record_review(run, prepared, chunk, stored, None)
            if findings:
                checks.append(fact_check_chunk(run, prepared, chunk, findings))
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((quote(run.reviewer), quote(chunk), name, run.db, run.id, quote(run.policy)), {}) for chunk in deep
    ]
    assert run.review_task is not None, "open_run sets it"
    reviews = dict(zip(run.review_slots.submit_in_turn(run.review_task, calls), deep))
    for future in as_completed(list(reviews)):
        chunk = reviews[future]
        value, error = result_or_error(future)
        findings = record_review(run, prepared, chunk, value, error)
        if findings:
            checks.append(fact_check_chunk(run, prepared, chunk, findings))
    collect_checks(prepared, checks)


def review_offline(run: Run, prepared: PreparedDocument) -> None:
    """The offline backend's review of the deep chunks in one task run, then one fact-check task
    run over all their findings (:func:`tasks.review.reviewer.review_chunks_offline`)."""
    if not prepared.deep:
        return
    future = run.review_slots.submit(
        review_chunks_offline, quote(run.reviewer), quote(prepared.deep), prepared.document.name
    )
    value, error = result_or_error(future)
    if error is not None:
        prepared.problems.append(f"offline review of {len(prepared.deep)} chunk(s): {error}")
        return
    reviewed = []
    for chunk, (review, chunk_error) in zip(prepared.deep, value):
        findings = record_review(run, prepared, chunk, review, chunk_error)
        if findings:
            reviewed.append((findings, chunk, neighbours(prepared, chunk)))
    if reviewed:
        collect_checks(
            prepared,
            [
                fact_check_document.submit(
                    quote(reviewed), quote(prepared.index), run.reviewer.name, run.db, run.id, quote(run.policy)
                )
            ],
        )


def fact_check_chunk(run: Run, prepared: PreparedDocument, chunk: Chunk, findings: list) -> PrefectFuture[Any]:
    """Start the fact-check of one reviewed chunk's findings; returns its future."""
    return fact_check_findings.submit(
        quote(findings),
        quote(chunk),
        quote(neighbours(prepared, chunk)),
        quote(prepared.index),
        run.reviewer.name,
        run.db,
        run.id,
        quote(run.policy),  # the verifier's calls hold the run's LLM slots, as the review's do
    )


def neighbours(prepared: PreparedDocument, chunk: Chunk) -> list[Chunk]:
    """The chunks right before and after ``chunk`` (a quote may run across a chunk's edge)."""
    return [c for c in prepared.chunks if abs(c.index - chunk.index) == 1]


def record_review(
    run: Run, prepared: PreparedDocument, chunk: Chunk, review: ChunkReview | None, error: str | None
) -> list | None:
    """Store one chunk's review (its calls, its reusable result); returns its findings for the
    fact-check, or None. A failed review becomes a problem of the document (``cached``: the
    stored result of the same chunk content is used instead, if any)."""
    if error is not None and run.uses_model and run.policy.on_open == "cached":
        with unit_of_work(run.db) as session:
            review = cached_review(session, quote(chunk), run.prompt_version, run.reviewer.model)
        error = None if review is not None else error  # same content, prompt version and model
    if error is not None:
        prepared.problems.append(f"chunk {chunk.index + 1}: {error}")
        return None
    assert review is not None, "a review without an error has its result"
    reusable = run.uses_model and review.outcome == ReviewOutcome.ok and not review.cached
    if reusable or review.calls:
        with unit_of_work(run.db) as session:  # the chunk's review: its reusable result and its calls
            if reusable:
                store_review(session, quote(chunk), run.prompt_version, run.reviewer.model, quote(review))
            if review.calls:
                save_llm_calls(session, run.id, chunk.document_sha256, chunk.index, review.calls)
    if review.outcome != ReviewOutcome.ok:
        prepared.problems.append(f"chunk {chunk.index + 1}: {review.outcome.value} ({review.detail})")
        prepared.terminal_problem |= review.outcome in TERMINAL_OUTCOMES
        return None
    return review.findings or None


def collect_checks(prepared: PreparedDocument, checks: list) -> None:
    """Wait for the document's fact-checks and keep their checked findings."""
    for future in checks:
        value, error = result_or_error(future)
        if error is not None:
            prepared.problems.append(f"fact-check failed: {error}")
        else:
            prepared.checked.extend(value)


def conclude_document(run: Run, book: RunBook, prepared: PreparedDocument) -> None:
    """Run the document passes over the document's checked findings (:func:`check_document`) and
    conclude the document in one transaction: its findings, and when every deep chunk was reviewed its
    absences, skip-ledger entry and drift, and its end in the run: ``reviewed`` when every deep chunk
    was reviewed, else ``failed`` (a problem no retry can fix) or ``deferred`` (the next run reviews it
    again). A process killed before the commit leaves none of it stored."""
    sha, model = prepared.document.sha256, run.reviewer.model
    outcome = prepared.document.outcome
    checked = check_document(run, prepared)
    labels = unit_labels(outcome.document) if outcome.document else None
    contract = all(c.profile == "contract" for c in prepared.chunks)  # CUAD absences mean nothing in a filing
    with book.concluding(outcome) as conclusion:
        session = conclusion.session
        stored = save_findings(
            session, run.id, sha, run.reviewer.name, model, run.prompt_version, quote(checked), labels
        )
        if not prepared.problems:
            # ... nor where no agreement is expected (prepare_document): information, not alarms
            chunk_indexes = [c.index for c in prepared.chunks]
            absent = find_absences(checked, chunk_indexes, prepared.not_judged) if contract else []
            save_absences(session, run.id, sha, run.prompt_version, model, quote(absent))
            mark_document_reviewed(
                session, sha, run.ledger_version, model, run.reviewer.name, run.id, len(prepared.chunks), stored
            )
            record_drift(session, run.id, sha, model, run.prompt_version)
            conclusion.ends(DocumentStatus.reviewed, None, stored)
        elif misconfiguration.tripped:  # not the document's fault: it waits for a fixed configuration
            conclusion.ends(DocumentStatus.deferred, not_reviewed_reason(), stored)
        elif prepared.terminal_problem:
            reason = f"review failed: {problems_text(prepared)}"
            conclusion.ends(DocumentStatus.failed, reason, stored, failure=FailureKind.review_error)
        else:
            reason = f"review incomplete, will be retried by the next run: {problems_text(prepared)}"
            conclusion.ends(DocumentStatus.deferred, reason, stored)


def check_document(run: Run, prepared: PreparedDocument) -> list[CheckedFinding]:
    """The document passes over its index (:mod:`tasks.check.index`), each findings → findings, in
    order: support weighed across the document (its strongest passage of a category, each quote under
    its section titles), the contract findings of operative categories quoted from the title, recitals
    or signature block dropped, the findings of one category within one clause (and identical passages)
    merged into one, and the consistency of key terms across the findings kept."""
    checked = sorted(prepared.checked, key=lambda c: (c.chunk_index, c.ordinal))
    checked = check_support_in_document(quote(checked), quote(headings_in(prepared.index)))
    checked = drop_out_of_zone_findings_in_document(quote(checked), quote(prepared.index))  # not from the recitals
    checked = merge_clause_findings_in_document(quote(checked), quote(prepared.index))  # consistency cites kept ones
    sha = prepared.document.sha256
    return check_consistency(quote(checked), quote(prepared.index), sha, run.prompt_version, run.reviewer.model)


def problems_text(prepared: PreparedDocument) -> str:
    """The document's first three problems, and how many more there are."""
    problems = prepared.problems
    return "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")


def prepare_for_batch(run: Run, book: RunBook, obj: SourceObject) -> PreparedDocument | None:
    """Batch mode, first half: a document up to its routed chunks (None when it ended)."""
    with document_scope(obj.name):
        document = fingerprint(run, book, obj)
        return prepare_document(run, book, document) if document else None


def review_in_batch(run: Run, prepared: list[PreparedDocument]) -> dict[tuple[str, int], tuple]:
    """Review the deep chunks of every prepared document in one Message Batch; returns
    ``{(sha256, chunk index): (ChunkReview | None, error | None)}``."""
    sent = [(chunk, p.document.name) for p in prepared for chunk in p.deep]
    if not sent:
        return {}
    future = review_batch.submit(quote(run.reviewer), quote(sent), run.db, run.batch_poll_s, run.batch_timeout_s)
    value, error = result_or_error(future)
    if error is not None:
        return {(c.document_sha256, c.index): (None, error) for c, _ in sent}
    return {(sha, index): (review, None) for sha, index, review in value}


def check_and_conclude(
    run: Run, book: RunBook, prepared: PreparedDocument, reviews: dict[tuple[str, int], tuple]
) -> None:
    """Batch mode, second half: record each chunk's batch result, fact-check, conclude."""
    with document_scope(prepared.document.name):
        checks = []
        for chunk in prepared.deep:
            review, error = reviews.get((chunk.document_sha256, chunk.index), (None, "no result in the batch"))
            findings = record_review(run, prepared, chunk, review, error)
            if findings:
                checks.append(fact_check_chunk(run, prepared, chunk, findings))
        collect_checks(prepared, checks)
        conclude_document(run, book, prepared)
