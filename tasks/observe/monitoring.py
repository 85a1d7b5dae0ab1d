"""Monitoring: golden metrics, drift between runs, alerts as Prefect events, a Prometheus collector.

Everything here reads the database written by :mod:`tasks.store.persist`; nothing keeps state in the
process, so the Prometheus exporter, the ``docreview runs``/``metrics`` commands and the report
plots all show what was persisted.

**Golden metrics of a run** (:func:`golden_metrics`): the stored run metrics (``run_metrics``)
completed from the raw rows where a metric is not stored: ``cache_hit_ratio`` =
``cache_read_input_tokens / (input_tokens + cache_creation_input_tokens +
cache_read_input_tokens)`` over the run's calls (Anthropic ``usage``: ``input_tokens`` excludes
cached tokens), call and first-token latency p50/p95 (ms, nearest-rank percentiles), findings by
verdict and the ``unsupported_rate`` (unsupported / findings).

**Drift** (:func:`compute_drift`): for a document whose bytes (sha256) did not change, the
findings of this run against those of its previous complete review. Each finding is reduced to
an item ``(clause type, normalised values, verdict)``; the score is ``1 − |A ∩ B| / |A ∪ B|``
over the two multisets of items (a multiset Jaccard distance: 0 = identical, 1 = nothing in
common; 0 when both are empty). Evidence wording alone is not drift. Drift can only be measured
when a document is reviewed again: by default an unchanged document is skipped (its findings
are reused), so nightly runs use ``--rereview``.

**Alerts** (:func:`check_alerts`, task :func:`evaluate_alerts`): thresholds from
:class:`~schemas.settings.Settings`; each breach is a Prefect event
``docreview.alert.<name>`` about the resource ``docreview.run.<run id>``.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel
from sqlalchemy import case, func
from sqlmodel import Session, col, select

from schemas.tables import (
    DocumentDriftRow,
    FindingObservationRow,
    FindingRow,
    LLMCallRow,
    RunDocumentRow,
    RunMetricRow,
    RunRow,
)
from tasks.runnames import for_document
from tasks.store.persist import get_engine, upsert
from tasks.textnorm import match_form

#: Verdicts of the fact-check (see :mod:`tasks.check.factcheck`).
VERDICTS = ("verified", "unsupported", "contradicted", "needs_review")

#: Upper bounds (seconds) of the LLM latency histogram buckets; calls time out at 120 s by default.
LATENCY_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)

#: Longest evidence excerpt kept in a drift listing (characters).
DRIFT_EVIDENCE_CHARS = 240


# --- drift -----------------------------------------------------------------------------------


def normalise_value(value: Any) -> str:
    """A finding value in comparable form: the fact-check's text normalisation (NFKC, ligatures,
    quotes, whitespace), case-folded, with surrounding punctuation removed.

    ``"  Delaware. "`` and ``"delaware"`` compare equal; ``"$1,000"`` and ``"$1,500"`` do not.
    Multi-part values (``"a; b"``, as stored by :meth:`schemas.findings.Finding.values_dict`) are
    split, normalised and sorted, so their order does not matter.
    """
    parts = str(value).split("; ")
    out = []
    for part in parts:
        norm, _ = match_form(part)
        norm = " ".join(norm.casefold().split()).strip(" .,;:")
        if norm:
            out.append(norm)
    return "; ".join(sorted(out))


@dataclass(frozen=True)
class ObservedFinding:
    """A finding as one run produced it (from ``finding_observations`` joined with ``findings``).

    ``anchor`` is model-independent (document, clause type, normalised quote); ``values`` is
    ``{name: value}``; ``page`` is 1-based.
    """

    anchor: str
    clause_type: str
    values: dict[str, Any]
    verdict: str
    evidence: str = ""
    page: int = 0

    def item(self) -> tuple[str, tuple[tuple[str, str], ...], str]:
        """The drift item ``(clause type, sorted (name, normalised value) pairs, verdict)``."""
        vals = tuple(sorted((str(k), normalise_value(v)) for k, v in self.values.items()))
        return (self.clause_type, vals, self.verdict)

    def describe(self) -> dict[str, Any]:
        """JSON-safe description used in drift listings."""
        return dict(
            clause_type=self.clause_type,
            values=dict(self.values),
            verdict=self.verdict,
            evidence=self.evidence[:DRIFT_EVIDENCE_CHARS],
            page=self.page,
        )


@dataclass
class DriftResult:
    """Drift of one document: ``score`` in [0, 1] and the findings that differ.

    ``added``/``removed``: findings only in the current/previous review; ``changed``: pairs
    ``{clause_type, evidence, page, before: {values, verdict}, after: {values, verdict}}`` for
    the same clause (same quote, else same clause type) with other values or verdict. The lists
    are empty exactly when ``score == 0``.
    """

    score: float
    added: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)


def compute_drift(previous: Sequence[ObservedFinding], current: Sequence[ObservedFinding]) -> DriftResult:
    """Drift between two reviews of the same document (pure; see the module docstring).

    ``score = 1 − |A ∩ B| / |A ∪ B|`` over the multisets of :meth:`ObservedFinding.item`;
    0.0 when both reviews have no findings, 1.0 when exactly one has none. Findings that match
    exactly are set aside first (same quote preferred); the rest are paired by quote, then by
    clause type (in page order) as ``changed``, and whatever is left is ``added``/``removed``.
    """
    prev_items = Counter(f.item() for f in previous)
    cur_items = Counter(f.item() for f in current)
    common = prev_items & cur_items
    inter = sum(common.values())
    union = len(previous) + len(current) - inter
    score = 0.0 if union == 0 else 1.0 - inter / union

    budget = Counter(common)
    prev_left = sorted(previous, key=lambda f: (f.page, f.clause_type, f.anchor))
    cur_left: list[ObservedFinding] = []
    # exact matches: same quote first, then any finding with the same item
    for same_anchor in (True, False):
        remaining = []
        for f in sorted(current, key=lambda f: (f.page, f.clause_type, f.anchor)) if same_anchor else cur_left:
            it = f.item()
            match = None
            if budget[it] > 0:
                match = next(
                    (p for p in prev_left if p.item() == it and (p.anchor == f.anchor or not same_anchor)), None
                )
            if match is not None:
                budget[it] -= 1
                prev_left.remove(match)
            else:
                remaining.append(f)
        cur_left = remaining

    changed: list[dict[str, Any]] = []
    for pair_on in ("anchor", "clause_type"):
        remaining = []
        for f in cur_left:
            match = next((p for p in prev_left if getattr(p, pair_on) == getattr(f, pair_on)), None)
            if match is None:
                remaining.append(f)
                continue
            prev_left.remove(match)
            changed.append(
                dict(
                    clause_type=f.clause_type,
                    evidence=f.evidence[:DRIFT_EVIDENCE_CHARS],
                    page=f.page,
                    before=dict(
                        values=dict(match.values),
                        verdict=match.verdict,
                        evidence=match.evidence[:DRIFT_EVIDENCE_CHARS] if pair_on != "anchor" else None,
                    ),
                    after=dict(values=dict(f.values), verdict=f.verdict),
                )
            )
        cur_left = remaining
    return DriftResult(
        score=round(score, 6),
        added=[f.describe() for f in cur_left],
        removed=[f.describe() for f in prev_left],
        changed=changed,
    )


def load_observations(session: Session, run_id: str, sha256: str) -> list[ObservedFinding]:
    """The findings run ``run_id`` produced for document ``sha256`` (with evidence and page)."""
    rows = session.exec(
        select(FindingObservationRow, FindingRow.evidence, FindingRow.page)
        .join(FindingRow, col(FindingRow.finding_key) == FindingObservationRow.finding_key, isouter=True)
        .where(FindingObservationRow.run_id == run_id, FindingObservationRow.sha256 == sha256)
    ).all()
    return [
        ObservedFinding(
            anchor=o.anchor,
            clause_type=o.clause_type,
            values=dict(o.values),
            verdict=o.verdict,
            evidence=evidence or "",
            page=page or 0,
        )
        for o, evidence, page in rows
    ]


def previous_review(session: Session, run_id: str, sha256: str) -> DocumentDriftRow | None:
    """The latest complete review of ``sha256`` in a run that started before run ``run_id``."""
    run = session.get(RunRow, run_id)
    query = (
        select(DocumentDriftRow)
        .join(RunRow, col(RunRow.id) == DocumentDriftRow.run_id)
        .where(DocumentDriftRow.sha256 == sha256, DocumentDriftRow.run_id != run_id)
    )
    if run is not None:
        query = query.where(RunRow.started_at <= run.started_at)
    return session.exec(query.order_by(col(RunRow.started_at).desc())).first()


@task(name="record-drift", task_run_name=for_document("record-drift"), cache_policy=NO_CACHE)
def record_drift(session: Session, run_id: str, sha256: str, model: str, prompt_version: str) -> float | None:
    """Prefect task: store the drift of a completely reviewed document against its previous review.

    Call after the document's findings are saved (:func:`tasks.store.persist.save_findings`), in the
    same ``session`` when they are one unit of work (it reads them there, committed or not). Writes
    one ``document_drift`` row (idempotent on run and sha256) into ``session`` and returns its score,
    or None when the document has no earlier complete review.
    """
    current = load_observations(session, run_id, sha256)
    base = previous_review(session, run_id, sha256)
    row: dict[str, Any] = dict(
        run_id=run_id,
        sha256=sha256,
        model=model,
        prompt_version=prompt_version,
        findings=len(current),
        baseline_run_id=None,
        baseline_model=None,
        baseline_prompt_version=None,
        baseline_findings=None,
        score=None,
        added=[],
        removed=[],
        changed=[],
    )
    if base is not None:
        previous = load_observations(session, base.run_id, sha256)
        drift = compute_drift(previous, current)
        row.update(
            baseline_run_id=base.run_id,
            baseline_model=base.model,
            baseline_prompt_version=base.prompt_version,
            baseline_findings=len(previous),
            score=drift.score,
            added=drift.added,
            removed=drift.removed,
            changed=drift.changed,
        )
    upsert(
        session,
        DocumentDriftRow,
        [row],
        keys=["run_id", "sha256"],
        update=[k for k in row if k not in ("run_id", "sha256")],
    )
    return row["score"]


def run_drift_metrics(database_url: str, run_id: str) -> dict[str, float]:
    """Run-level drift metrics: ``drift_documents`` (documents compared with an earlier review)
    and, when it is above 0, ``drift`` (mean score), ``drift_max`` and ``drift_baseline_changed``
    (compared documents whose earlier review used another model or prompt version)."""
    with Session(get_engine(database_url)) as session:
        rows = session.exec(
            select(DocumentDriftRow).where(DocumentDriftRow.run_id == run_id, col(DocumentDriftRow.score).is_not(None))
        ).all()
    out: dict[str, float] = {"drift_documents": len(rows)}
    if rows:
        scores = [r.score or 0.0 for r in rows]
        out["drift"] = sum(scores) / len(scores)
        out["drift_max"] = max(scores)
        out["drift_baseline_changed"] = sum(
            1 for r in rows if r.baseline_model != r.model or r.baseline_prompt_version != r.prompt_version
        )
    return out


def document_drift(database_url: str, run_id: str) -> dict[str, dict[str, Any]]:
    """Drift records of a run for the report: ``{sha256: {score, added, removed, changed,
    baseline_run_id, baseline_model, baseline_prompt_version, model_changed}}``."""
    with Session(get_engine(database_url)) as session:
        rows = session.exec(select(DocumentDriftRow).where(DocumentDriftRow.run_id == run_id)).all()
    return {
        r.sha256: dict(
            score=r.score,
            added=list(r.added),
            removed=list(r.removed),
            changed=list(r.changed),
            baseline_run_id=r.baseline_run_id,
            baseline_model=r.baseline_model,
            baseline_prompt_version=r.baseline_prompt_version,
            model_changed=r.baseline_run_id is not None
            and (r.baseline_model != r.model or r.baseline_prompt_version != r.prompt_version),
        )
        for r in rows
    }


def observed_keys(database_url: str, run_id: str, sha256: str) -> set[str] | None:
    """``finding_key`` of the findings run ``run_id`` produced for ``sha256`` when the run reviewed
    it completely; None when it did not (reused from an earlier run, deferred, failed)."""
    with Session(get_engine(database_url)) as session:
        marked = session.exec(
            select(DocumentDriftRow.id).where(DocumentDriftRow.run_id == run_id, DocumentDriftRow.sha256 == sha256)
        ).first()
        if marked is None:
            return None
        return set(
            session.exec(
                select(FindingObservationRow.finding_key).where(
                    FindingObservationRow.run_id == run_id, FindingObservationRow.sha256 == sha256
                )
            ).all()
        )


# --- golden metrics --------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in (0, 100]) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def cache_hit_ratio(calls: Iterable[LLMCallRow]) -> float | None:
    """``cache_read / (input + cache_creation + cache_read)`` input tokens; None without input."""
    read = total = 0
    for c in calls:
        read += c.cache_read_input_tokens
        total += c.input_tokens + c.cache_creation_input_tokens + c.cache_read_input_tokens
    return read / total if total else None


def run_verdicts(session: Session, run: RunRow) -> Counter[str]:
    """Findings of a run by verdict: for each reviewed document, this run's observations when it
    reviewed the document completely, else the stored findings it reused (same prompt and model)."""
    docs = session.exec(
        select(RunDocumentRow).where(RunDocumentRow.run_id == run.id, RunDocumentRow.status == "reviewed")
    ).all()
    shas = sorted({d.sha256 for d in docs if d.sha256})
    observed = set(session.exec(select(DocumentDriftRow.sha256).where(DocumentDriftRow.run_id == run.id)).all())
    counts: Counter[str] = Counter()
    own = [s for s in shas if s in observed]
    reused = [s for s in shas if s not in observed]
    for i in range(0, len(own), 500):
        counts.update(
            session.exec(
                select(FindingObservationRow.verdict).where(
                    FindingObservationRow.run_id == run.id, col(FindingObservationRow.sha256).in_(own[i : i + 500])
                )
            ).all()
        )
    for i in range(0, len(reused), 500):
        counts.update(
            session.exec(
                select(FindingRow.verdict).where(
                    col(FindingRow.sha256).in_(reused[i : i + 500]),
                    FindingRow.prompt_version == run.prompt_version,
                    FindingRow.model == run.model,
                )
            ).all()
        )
    return counts


def golden_metrics(session: Session, run: RunRow) -> dict[str, float]:
    """Stored metrics of ``run`` completed with derived golden metrics (see the module docstring).

    Drops ``routing_rate`` when the run reviewed no chunk (``chunks_total == 0``: not measured).
    Adds, when not stored: ``cache_hit_ratio``, ``latency_ms_p50``/``latency_ms_p95`` and
    ``ttft_ms_p50``/``ttft_ms_p95`` (only when the run made model calls), ``findings_<verdict>``
    for every verdict and ``unsupported_rate`` (only when there are findings). Units: ms, USD,
    ratios in [0, 1].
    """
    metrics = {m.name: m.value for m in session.exec(select(RunMetricRow).where(RunMetricRow.run_id == run.id)).all()}
    if metrics.get("chunks_total", 1) == 0:
        metrics.pop("routing_rate", None)  # stored as 0 when no chunk was reviewed: not measured
    calls = session.exec(select(LLMCallRow).where(LLMCallRow.run_id == run.id)).all()
    if calls:
        ratio = cache_hit_ratio(calls)
        if ratio is not None:
            metrics.setdefault("cache_hit_ratio", ratio)
        lat = [c.latency_ms for c in calls]
        ttft = [c.first_token_ms for c in calls if c.first_token_ms is not None]
        for name, values in (("latency_ms", lat), ("ttft_ms", ttft)):
            for q in (50, 95):
                value = percentile(values, q)
                if value is not None:
                    metrics.setdefault(f"{name}_p{q}", value)
    verdicts = run_verdicts(session, run)
    total = sum(verdicts.values())
    for v in VERDICTS:
        metrics[f"findings_{v}"] = float(verdicts.get(v, 0))
    if total:
        metrics.setdefault("unsupported_rate", verdicts.get("unsupported", 0) / total)
    return metrics


@dataclass
class RunSummary:
    """One run with its golden metrics, for tables, trends and the exporter."""

    id: str
    source: str
    backend: str
    model: str
    prompt_version: str
    status: str
    started_at: datetime | None
    finished_at: datetime | None
    metrics: dict[str, float]


def recent_runs(database_url: str, limit: int = 20, finished_only: bool = False) -> list[RunSummary]:
    """The ``limit`` most recently started runs, newest first, with :func:`golden_metrics`."""
    with Session(get_engine(database_url)) as session:
        query = select(RunRow)
        if finished_only:
            query = query.where(col(RunRow.finished_at).is_not(None))
        runs = session.exec(query.order_by(col(RunRow.started_at).desc()).limit(limit)).all()
        return [
            RunSummary(
                id=r.id,
                source=r.source,
                backend=r.backend,
                model=r.model,
                prompt_version=r.prompt_version,
                status=r.status,
                started_at=r.started_at,
                finished_at=r.finished_at,
                metrics=golden_metrics(session, r),
            )
            for r in runs
        ]


def find_run(database_url: str, run_id: str) -> RunSummary:
    """The run whose id is ``run_id`` or starts with it (at least 4 characters).

    Raises ``KeyError`` when no run or more than one run matches.
    """
    with Session(get_engine(database_url)) as session:
        run = session.get(RunRow, run_id)
        if run is None and len(run_id) < 4:
            raise KeyError(f"no run {run_id!r} (a prefix needs at least 4 characters)")
        if run is None:  # "%" and "_" are characters of the prefix, not LIKE wildcards
            found = session.exec(
                select(RunRow).where(col(RunRow.id).startswith(run_id, autoescape=True)).limit(2)
            ).all()
            if len(found) > 1:
                raise KeyError(f"run id prefix {run_id!r} is ambiguous")
            run = found[0] if found else None
        if run is None:
            raise KeyError(f"no run {run_id!r}")
        return RunSummary(
            id=run.id,
            source=run.source,
            backend=run.backend,
            model=run.model,
            prompt_version=run.prompt_version,
            status=run.status,
            started_at=run.started_at,
            finished_at=run.finished_at,
            metrics=golden_metrics(session, run),
        )


# --- alerts ----------------------------------------------------------------------------------


class AlertThresholds(BaseModel):
    """Alert thresholds (see :class:`schemas.settings.Settings` ``alert_*`` for the defaults).

    Ratios are in [0, 1]; ``latency_p95_ms_max`` is milliseconds.
    """

    routing_rate_min: float = 0.08
    cache_hit_ratio_min: float = 0.5
    unsupported_rate_max: float = 0.10
    latency_p95_ms_max: float = 60_000.0
    drift_max: float = 0.2

    @classmethod
    def from_settings(cls, settings: Any) -> AlertThresholds:
        """Thresholds from a :class:`~schemas.settings.Settings` (its ``alert_*`` fields)."""
        return cls(
            **{
                name: getattr(settings, f"alert_{name}")
                for name in cls.model_fields
                if hasattr(settings, f"alert_{name}")
            }
        )


class Alert(BaseModel):
    """A threshold breach: Prefect event ``docreview.alert.<name>`` with this as its payload."""

    name: str
    metric: str
    value: float
    threshold: float
    comparison: str  # "below" or "above"
    message: str

    @property
    def event(self) -> str:
        """The Prefect event name."""
        return f"docreview.alert.{self.name}"


def check_alerts(metrics: dict[str, float], thresholds: AlertThresholds) -> list[Alert]:
    """Alerts for a run's golden metrics (pure). A metric that was not measured raises none:

    - ``routing-rate-low``: ``routing_rate`` < min, when the run had chunks (``chunks_total`` > 0
      or not recorded);
    - ``cache-hit-ratio-low``: ``cache_hit_ratio`` < min, when the run made model calls;
    - ``unsupported-findings-high``: ``unsupported_rate`` > max;
    - ``latency-p95-high``: ``latency_ms_p95`` > max (ms);
    - ``drift-high``: run ``drift`` (mean over compared documents) > max;
    - ``breaker-open``: ``breaker_open`` > 0 or ``breaker_openings`` > 0.
    """
    out: list[Alert] = []

    def low(name: str, metric: str, bound: float, what: str) -> None:
        value = metrics.get(metric)
        if value is not None and value < bound:
            out.append(
                Alert(
                    name=name,
                    metric=metric,
                    value=value,
                    threshold=bound,
                    comparison="below",
                    message=f"{what} {value:.3f} is below {bound:.3f}",
                )
            )

    def high(name: str, metric: str, bound: float, what: str) -> None:
        value = metrics.get(metric)
        if value is not None and value > bound:
            out.append(
                Alert(
                    name=name,
                    metric=metric,
                    value=value,
                    threshold=bound,
                    comparison="above",
                    message=f"{what} {value:.3f} is above {bound:.3f}",
                )
            )

    if metrics.get("chunks_total", 1) > 0:
        low("routing-rate-low", "routing_rate", thresholds.routing_rate_min, "routing rate")
    if metrics.get("llm_calls", 0) > 0:
        low("cache-hit-ratio-low", "cache_hit_ratio", thresholds.cache_hit_ratio_min, "prompt-cache hit ratio")
    high("unsupported-findings-high", "unsupported_rate", thresholds.unsupported_rate_max, "unsupported findings share")
    high("latency-p95-high", "latency_ms_p95", thresholds.latency_p95_ms_max, "call latency p95 (ms)")
    high("drift-high", "drift", thresholds.drift_max, "drift")
    opened = max(metrics.get("breaker_open", 0.0), metrics.get("breaker_openings", 0.0))
    if opened > 0:
        metric = "breaker_open" if metrics.get("breaker_open", 0.0) > 0 else "breaker_openings"
        out.append(
            Alert(
                name="breaker-open",
                metric=metric,
                value=metrics[metric],
                threshold=0.0,
                comparison="above",
                message=f"circuit breaker opened ({metric} = {metrics[metric]:g})",
            )
        )
    return out


@task(name="evaluate-alerts", cache_policy=NO_CACHE)
def evaluate_alerts(database_url: str, run_id: str, thresholds: AlertThresholds) -> list[Alert]:
    """Prefect task: check the run's golden metrics and emit one Prefect event per alert.

    Events are named ``docreview.alert.<name>`` (e.g. ``docreview.alert.routing-rate-low``),
    with resource ``{"prefect.resource.id": "docreview.run.<run id>"}``, the flow run as a
    related resource, and the :class:`Alert` fields plus ``run_id`` and ``drift_max`` in the
    payload. Returns the alerts. Call after :func:`tasks.store.persist.finish_run`.
    """
    from prefect.events import emit_event

    with Session(get_engine(database_url)) as session:
        run = session.get(RunRow, run_id)
        if run is None:
            raise KeyError(f"no run {run_id}")
        metrics = golden_metrics(session, run)
    alerts = check_alerts(metrics, thresholds)
    related = []
    if run.flow_run_id:
        related.append(
            {"prefect.resource.id": f"prefect.flow-run.{run.flow_run_id}", "prefect.resource.role": "flow-run"}
        )
    for alert in alerts:
        emit_event(
            event=alert.event,
            resource={
                "prefect.resource.id": f"docreview.run.{run_id}",
                "prefect.resource.name": f"docreview run {run_id[:8]}",
                "docreview.source": run.source,
                "docreview.model": run.model,
            },
            related=related,
            payload={**alert.model_dump(), "run_id": run_id, "drift_max": metrics.get("drift_max")},
        )
    return alerts


# --- Prometheus ------------------------------------------------------------------------------


def deferred_backlog(session: Session) -> int:
    """Source objects whose latest terminal state (by run start time) is ``deferred``."""
    rows = session.exec(
        select(RunDocumentRow.source, RunDocumentRow.status)
        .join(RunRow, col(RunRow.id) == RunDocumentRow.run_id)
        .order_by(col(RunRow.started_at), col(RunDocumentRow.id))
    ).all()
    latest: dict[str, str] = {}
    for source, status in rows:
        latest[source] = status
    return sum(1 for s in latest.values() if s == "deferred")


class DocreviewCollector:
    """prometheus-client custom collector: reads the database on every scrape.

    Metric names follow the Prometheus naming conventions (base units: seconds, ratios;
    counters end in ``_total``; https://prometheus.io/docs/practices/naming/). ``last_run``
    metrics describe the latest finished run; counters and histograms cover every run in the
    database. See docs/monitoring.md for the list. A database that cannot be read yields
    ``docreview_up 0`` and nothing else.
    """

    def __init__(self, database_url: str) -> None:
        """``database_url``: a SQLAlchemy URL (SQLite or PostgreSQL)."""
        self.database_url = database_url
        self._lock = threading.Lock()

    def describe(self) -> list:
        """No static description: the metrics depend on the database (avoids a scrape at register)."""
        return []

    def collect(self) -> Iterator[Any]:
        """Yield the metric families (called by prometheus-client on each scrape)."""
        from prometheus_client.core import GaugeMetricFamily

        with self._lock:
            try:
                families = list(self._collect())
            except Exception:
                families = None
        up = GaugeMetricFamily("docreview_up", "1 when the docreview database could be read on this scrape")
        up.add_metric([], 1.0 if families is not None else 0.0)
        yield up
        yield from families or []

    def _collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
            InfoMetricFamily,
        )

        with Session(get_engine(self.database_url)) as session:
            runs_done = session.exec(
                select(func.count()).select_from(RunRow).where(col(RunRow.finished_at).is_not(None))
            ).one()
            c = CounterMetricFamily("docreview_runs", "Finished review runs")
            c.add_metric([], runs_done)
            yield c

            by_status = session.exec(select(RunDocumentRow.status, func.count()).group_by(RunDocumentRow.status)).all()
            reused = session.exec(
                select(func.count()).select_from(RunDocumentRow).where(col(RunDocumentRow.reused).is_(True))
            ).one()
            c = CounterMetricFamily(
                "docreview_documents", "Documents reaching a terminal state, all runs", labels=["status"]
            )
            counts = dict(by_status)
            for status in ("reviewed", "deferred", "failed"):
                c.add_metric([status], counts.get(status, 0))
            c.add_metric(["skipped"], reused)
            yield c

            g = GaugeMetricFamily(
                "docreview_deferred_backlog_documents",
                "Source objects whose latest state is deferred (picked up by the next run)",
            )
            g.add_metric([], deferred_backlog(session))
            yield g

            run_metric_sum = dict(
                session.exec(
                    select(RunMetricRow.name, func.sum(RunMetricRow.value))
                    .where(col(RunMetricRow.name).in_(["retries", "breaker_openings"]))
                    .group_by(RunMetricRow.name)
                ).all()
            )
            c = CounterMetricFamily("docreview_retries", "Review task retries, all runs (0 until recorded)")
            c.add_metric([], run_metric_sum.get("retries") or 0.0)
            yield c
            c = CounterMetricFamily("docreview_breaker_openings", "Circuit breaker openings, all runs")
            c.add_metric([], run_metric_sum.get("breaker_openings") or 0.0)
            yield c

            yield from self._llm_families(session, CounterMetricFamily, HistogramMetricFamily)

            last = session.exec(
                select(RunRow).where(col(RunRow.finished_at).is_not(None)).order_by(col(RunRow.started_at).desc())
            ).first()
            if last is None:
                return
            m = golden_metrics(session, last)
            info = InfoMetricFamily("docreview_last_run", "The latest finished run")
            info.add_metric(
                [],
                {
                    "run_id": last.id,
                    "source": last.source,
                    "backend": last.backend,
                    "model": last.model,
                    "prompt_version": last.prompt_version,
                },
            )
            yield info

            def gauge(name: str, doc: str, value: float | None) -> Iterator[Any]:
                if value is not None:
                    fam = GaugeMetricFamily(name, doc)
                    fam.add_metric([], float(value))
                    yield fam

            yield from gauge(
                "docreview_last_run_timestamp_seconds",
                "Finish time of the latest run (Unix seconds)",
                last.finished_at.timestamp() if last.finished_at else None,
            )
            yield from gauge("docreview_last_run_duration_seconds", "Wall time of the latest run", m.get("wall_s"))
            g = GaugeMetricFamily(
                "docreview_last_run_documents", "Documents of the latest run by status", labels=["status"]
            )
            for status in ("total", "reviewed", "deferred", "failed", "skipped"):
                g.add_metric([status], m.get(f"documents_{status}", 0.0))
            yield g
            yield from gauge(
                "docreview_last_run_docs_per_minute",
                "Documents per minute of wall time, latest run",
                m.get("docs_per_min"),
            )
            yield from gauge(
                "docreview_last_run_routing_ratio",
                "Share of chunks sent to deep review, latest run",
                m.get("routing_rate"),
            )
            yield from gauge(
                "docreview_last_run_prompt_cache_hit_ratio",
                "cache_read_input_tokens / all input tokens, latest run",
                m.get("cache_hit_ratio"),
            )
            yield from gauge(
                "docreview_last_run_verification_ratio",
                "Verified findings / findings, latest run",
                m.get("verification_rate"),
            )
            g = GaugeMetricFamily(
                "docreview_last_run_findings", "Findings of the latest run by fact-check verdict", labels=["verdict"]
            )
            for v in VERDICTS:
                g.add_metric([v], m.get(f"findings_{v}", 0.0))
            yield g
            yield from gauge("docreview_last_run_cost_usd", "Model cost of the latest run, USD", m.get("cost_usd"))
            yield from gauge(
                "docreview_last_run_drift_score",
                "Mean drift (0 same findings, 1 nothing in common) over documents compared, latest run",
                m.get("drift"),
            )
            yield from gauge(
                "docreview_last_run_drift_max_score", "Largest document drift, latest run", m.get("drift_max")
            )
            yield from gauge(
                "docreview_last_run_drift_documents",
                "Documents compared with an earlier review, latest run",
                m.get("drift_documents", 0.0),
            )
            yield from gauge(
                "docreview_last_run_drift_baseline_changed_documents",
                "Compared documents whose earlier review used another model or prompt version",
                m.get("drift_baseline_changed"),
            )
            yield from gauge(
                "docreview_breaker_open",
                "1 when the circuit breaker was open at the end of the latest run",
                m.get("breaker_open", 0.0),
            )

    def _llm_families(self, session: Session, counter: Any, histogram: Any) -> Iterator[Any]:
        def sums(*cols: Any) -> list[Any]:
            return session.exec(
                select(LLMCallRow.model, *cols).group_by(LLMCallRow.model).order_by(LLMCallRow.model)
            ).all()

        rows = sums(
            func.count(),
            func.sum(LLMCallRow.input_tokens),
            func.sum(LLMCallRow.output_tokens),
            func.sum(LLMCallRow.cache_read_input_tokens),
            func.sum(LLMCallRow.cache_creation_input_tokens),
            func.sum(LLMCallRow.cost_usd),
        )
        calls = counter("docreview_llm_calls", "Model calls, all runs", labels=["model"])
        tokens = counter("docreview_llm_tokens", "Model tokens (API usage), all runs", labels=["model", "type"])
        cost = counter("docreview_llm_cost_usd", "Model cost in USD, all runs", labels=["model"])
        for model, n, inp, out, read, created, usd in rows:
            calls.add_metric([model], n)
            for kind, value in (("input", inp), ("output", out), ("cache_read", read), ("cache_creation", created)):
                tokens.add_metric([model, kind], value or 0)
            cost.add_metric([model], usd or 0.0)
        yield calls
        yield tokens
        yield cost

        for name, column, doc in (
            ("docreview_llm_call_duration_seconds", col(LLMCallRow.latency_ms), "Model call latency, all runs"),
            (
                "docreview_llm_first_token_seconds",
                col(LLMCallRow.first_token_ms),
                "Time to the first streamed token, all runs (streaming calls only)",
            ),
        ):
            bucket_cols = [func.sum(case((column <= b * 1000, 1), else_=0)) for b in LATENCY_BUCKETS_S]
            hist = histogram(name, doc, labels=["model"])
            cum: list[Any]  # the bucket counts
            for model, n, total_ms, *cum in session.exec(
                select(LLMCallRow.model, func.count(column), func.sum(column), *bucket_cols)
                .where(column.is_not(None))
                .group_by(LLMCallRow.model)
                .order_by(LLMCallRow.model)
            ).all():
                buckets = [(_le(b), int(k or 0)) for b, k in zip(LATENCY_BUCKETS_S, cum)] + [("+Inf", int(n))]
                hist.add_metric([model], buckets=buckets, sum_value=(total_ms or 0.0) / 1000)
            yield hist


def _le(bound: float) -> str:
    return repr(float(bound))


def start_exporter(database_url: str, port: int, addr: str = "127.0.0.1", token: str | None = None) -> tuple[Any, Any]:
    """Serve ``/metrics`` from the database on ``addr:port`` in a daemon thread.

    ``addr`` defaults to loopback: the metrics name documents, costs and failure reasons, so listening on
    another interface is the caller's explicit choice. With ``token`` every request must carry
    ``Authorization: Bearer <token>`` (compared in constant time; RFC 6750), else it is answered 401.
    The app is prometheus-client's ``make_wsgi_app`` served by the standard library's WSGI server, one
    thread per request. Returns ``(server, thread)``; ``server.server_port`` is the bound port (useful with
    ``port=0``); stop with ``server.shutdown(); server.server_close()``. Raises ``OSError`` when the
    port is taken."""
    import hmac
    import socketserver
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from prometheus_client import CollectorRegistry, make_wsgi_app

    registry = CollectorRegistry(auto_describe=False)
    registry.register(DocreviewCollector(database_url))
    metrics = make_wsgi_app(registry)

    def guarded(environ: dict[str, Any], start_response: Any) -> Any:
        sent = str(environ.get("HTTP_AUTHORIZATION", "")).encode()
        if not hmac.compare_digest(sent, f"Bearer {token}".encode()):
            start_response(
                "401 Unauthorized",
                [("WWW-Authenticate", 'Bearer realm="docreview metrics"'), ("Content-Type", "text/plain")],
            )
            return [b"a bearer token is required (DOCREVIEW_METRICS_TOKEN)\n"]
        return metrics(environ, start_response)

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # scrapes are not news
            pass

    server = make_server(addr, port, guarded if token else metrics, Server, handler_class=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="docreview-metrics", daemon=True)
    thread.start()
    return server, thread
