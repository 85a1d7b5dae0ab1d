"""What changed since the previous filing of the same company and form.

Compares two :class:`schemas.filings.FilingSummary`: risk-factor headings added and removed
(Item 1A), key figures with their relative change, and the flags a reviewer watches (going
concern doubt, material weakness, the auditor). A going-concern doubt or a material weakness that
appeared, and a change of auditor, are high-risk changes: the run emits a
``docreview.filing.change`` event for each (:mod:`tasks.observe.events`).
"""

from __future__ import annotations

import re

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.filings import FilingChange, FilingSummary
from tasks.runnames import for_document

#: Smallest relative change of a key figure reported (0.001 = 0.1 %).
MIN_FIGURE_CHANGE = 0.001


def compare_summaries(before: FilingSummary, after: FilingSummary) -> list[FilingChange]:
    """The changes from ``before`` (the previous filing) to ``after``: risk-factor headings added
    and removed, key figures whose value moved by at least :data:`MIN_FIGURE_CHANGE` (same name
    and unit; ``change`` relative to the previous value), flags that appeared or disappeared and a
    change of auditor. Headings are the same up to case, punctuation and small rewording
    (:func:`_has_heading`); when only one filing's Item 1A headings could be read, one
    ``risk_factors_not_compared`` change says so instead of listing every heading. Order:
    high-risk changes first, then by kind."""
    out: list[FilingChange] = []
    if before.risk_headings and after.risk_headings:
        out += [
            FilingChange(kind="risk_factor_added", subject=h, after=h)
            for h in after.risk_headings
            if not _has_heading(before.risk_headings, h)
        ]
        out += [
            FilingChange(kind="risk_factor_removed", subject=h, before=h)
            for h in before.risk_headings
            if not _has_heading(after.risk_headings, h)
        ]
    elif before.risk_headings or after.risk_headings:  # one side's Item 1A could not be read: no add/remove list
        out.append(
            FilingChange(
                kind="risk_factors_not_compared",
                subject="Item 1A. Risk Factors",
                before=f"{len(before.risk_headings)} heading(s) read",
                after=f"{len(after.risk_headings)} heading(s) read",
            )
        )
    old_figs = {f.name: f for f in before.key_figures}
    for fig in after.key_figures:
        prev = old_figs.get(fig.name)
        if prev is None or prev.unit != fig.unit or prev.value == fig.value:
            continue
        change = (fig.value - prev.value) / abs(prev.value) if prev.value else None
        if change is not None and abs(change) < MIN_FIGURE_CHANGE:
            continue
        out.append(
            FilingChange(
                kind="figure_changed",
                subject=fig.name.value,
                before=f"{prev.raw} {prev.unit}",
                after=f"{fig.raw} {fig.unit}",
                change=round(change, 4) if change is not None else None,
            )
        )
    for flag in ("going_concern", "material_weakness"):
        was, now = bool(before.flags.get(flag)), bool(after.flags.get(flag))
        if now and not was:
            out.append(FilingChange(kind="flag_appeared", subject=flag, before="no", after="yes", high_risk=True))
        elif was and not now:
            out.append(FilingChange(kind="flag_disappeared", subject=flag, before="yes", after="no"))
    old_aud, new_aud = before.flags.get("auditor"), after.flags.get("auditor")
    if old_aud and new_aud and str(old_aud).lower() != str(new_aud).lower():
        out.append(
            FilingChange(
                kind="auditor_changed", subject="auditor", before=str(old_aud), after=str(new_aud), high_risk=True
            )
        )
    return sorted(out, key=lambda c: not c.high_risk)


#: Share of words two risk-factor headings must share to be the same heading reworded slightly.
SAME_HEADING = 0.85


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower().replace("ﬀ", "ff")))


def _has_heading(headings: list[str], heading: str) -> bool:
    """True when ``headings`` holds ``heading`` up to case, punctuation, spacing and small
    rewording (word-set Jaccard similarity at least :data:`SAME_HEADING`)."""
    words = _words(heading)
    for other in headings:
        theirs = _words(other)
        if words == theirs or (words and len(words & theirs) / len(words | theirs) >= SAME_HEADING):
            return True
    return False


@task(name="compare-with-previous-filing", task_run_name=for_document("compare-filing"), cache_policy=NO_CACHE)
def record_filing_changes(database_url: str, sha256: str) -> list[FilingChange]:
    """Prefect task: compare the filing ``sha256`` with the previous filing of the same company
    and form (:func:`tasks.store.profiles.previous_filing`) and store the changes; ``[]`` (stored)
    when there is no previous filing. A contract has none."""
    from tasks.store.profiles import load_profiles, previous_filing, save_filing_changes

    prev = previous_filing(database_url, sha256)
    if prev is None:
        save_filing_changes(database_url, sha256, None, [])
        return []
    current = load_profiles(database_url, [sha256])[sha256]
    changes = compare_summaries(
        FilingSummary.model_validate(prev.summary), FilingSummary.model_validate(current.summary)
    )
    save_filing_changes(database_url, sha256, prev.sha256, changes)
    return changes


@task(name="compare-filings", cache_policy=NO_CACHE)
def compare_filings(database_url: str, run_id: str) -> int:
    """Prefect task: :func:`record_filing_changes` for every filing reviewed in run ``run_id``,
    once every document of the run has ended (so filings of one run compare with each other);
    returns how many filings were compared."""
    from sqlmodel import Session, col, select

    from schemas.tables import DocumentProfileRow, RunDocumentRow
    from tasks.store.persist import get_engine

    with Session(get_engine(database_url)) as session:
        shas = session.exec(
            select(RunDocumentRow.sha256)
            .join(DocumentProfileRow, col(DocumentProfileRow.sha256) == RunDocumentRow.sha256)
            .where(
                RunDocumentRow.run_id == run_id,
                RunDocumentRow.status == "reviewed",
                DocumentProfileRow.profile == "filing",
            )
        ).all()
    filings = {sha for sha in shas if sha is not None}  # the inner join has no NULL sha256 anyway
    for sha in sorted(filings):
        record_filing_changes.fn(database_url, sha)
    return len(filings)


def changes_markdown(documents: list[dict]) -> str:
    """A markdown table of the report's filing changes (one row per change, high-risk first) for
    the Prefect artifact; ``""`` when no document has changes."""
    rows = []
    for d in documents:
        for c in d.get("changes") or []:
            pct = f"{c['change'] * 100:+.1f} %" if c.get("change") is not None else ""
            rows.append(
                f"| {d['file_name']} | {'**high**' if c.get('high_risk') else ''} | {c['kind']} | "
                f"{str(c['subject'])[:80]} | {c.get('before') or ''} | {c.get('after') or ''} | {pct} |"
            )
    if not rows:
        return ""
    head = "| filing | risk | change | subject | before | after | change |\n|---|---|---|---|---|---|---|\n"
    return "# Changes since the previous filing\n\n" + head + "\n".join(rows)
