"""What changed since the previous filing of the same company and form.

Compares two :class:`schemas.filings.FilingSummary`: risk-factor headings added and removed
(Item 1A), key figures with their relative change, and the flags a reviewer watches (going
concern doubt, material weakness, the auditor). A going-concern doubt or a material weakness that
appeared, and a change of auditor, are high-risk changes: the run emits a
``docreview.filing.change`` event for each (:mod:`tasks.observe.events`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlmodel import Session

from schemas.filings import FilingChange, FilingSummary, KeyFigure
from tasks.runnames import for_document

#: Smallest relative change of a key figure reported (0.001 = 0.1 %).
MIN_FIGURE_CHANGE = 0.001


@dataclass(frozen=True)
class FigureBasis:
    """What a key figure measures, for comparing it across filings: ``instant`` (a balance at a date)
    or a duration of ``months`` (None when the source does not say: a PDF 10-Q's cash flow statement is
    year-to-date, an earnings release's table may be either), ending at ``end`` (``"YYYY-MM-DD"`` from
    an XBRL context, ``"YYYY"`` from a PDF statement's column header, None when unknown); ``source``
    ``"XBRL"`` or ``"statement"``."""

    instant: bool
    months: int | None
    end: str | None
    source: str

    def label(self) -> str:
        """``"12 months ended 2023-01-29"``, ``"at 2023-01-29"``, ``"a period ended 2018"``."""
        end = self.end or "an unknown date"
        if self.instant:
            return f"at {end}"
        return f"{self.months} months ended {end}" if self.months else f"a period ended {end}"


def figure_basis(fig: KeyFigure, form: str | None) -> FigureBasis:
    """The :class:`FigureBasis` of ``fig`` in a filing of ``form`` (``"10-K"``, ``"10-Q"``, …).

    An XBRL figure's ``period`` is its context (``"2022-01-31..2023-01-29"``: a duration whose months are
    the days / 30.44, rounded; ``"2023-01-29"``: an instant). A statement figure's is the year of its
    column: a balance sheet line is an instant; an income statement line covers 12 months in a 10-K and 3
    in a 10-Q (the current quarter's column, :func:`tasks.review.filing.current_column`); a cash flow line
    12 months in a 10-K and an unknown span in a 10-Q (year to date); anything else an unknown span."""
    period = fig.period or ""
    if fig.statement == "XBRL":
        start, _, end = period.partition("..")
        if not end:
            return FigureBasis(True, None, start or None, "XBRL")
        try:
            days = (date.fromisoformat(end) - date.fromisoformat(start)).days
        except ValueError:
            return FigureBasis(False, None, end, "XBRL")
        return FigureBasis(False, max(1, round(days / 30.44)), end, "XBRL")
    year = period if re.fullmatch(r"\d{4}", period) else None
    if fig.statement == "balance sheet":
        return FigureBasis(True, None, year, "statement")
    months = None
    if form == "10-K" and fig.statement in ("income", "cash flow"):
        months = 12
    elif form == "10-Q" and fig.statement == "income":
        months = 3
    return FigureBasis(False, months, year, "statement")


def not_comparable(before: FigureBasis, after: FigureBasis, same_period: bool = False) -> str | None:
    """Why two figures of one name are not the same measure a period apart, or None when they are:
    a balance against a flow; two durations of different or unknown length when either comes from XBRL
    (two PDF statements of one company and form keep the same column layout, so an unknown span on both
    sides is the same span); a previous figure that does not end before the current one."""
    if before.instant != after.instant:
        return f"{before.label()} against {after.label()}: a balance and a flow"
    if not before.instant and before.months != after.months:
        if before.months is not None and after.months is not None:
            return f"{before.label()} against {after.label()}: different spans"
        if "XBRL" in (before.source, after.source):
            return f"{before.label()} against {after.label()}: the span of one is not stated"
    old_end, new_end = before.end or "", after.end or ""
    known = old_end[:4].isdigit() and new_end[:4].isdigit()
    if same_period:  # an amendment against the filing it amends: the same period, restated
        if known and old_end[: len(new_end)] != new_end[: len(old_end)]:
            return f"{before.label()} against {after.label()}: not the same period"
        return None
    if known and old_end[: len(new_end)] >= new_end[: len(old_end)]:
        return f"{before.label()} against {after.label()}: the previous figure does not end earlier"
    return None


#: Factors to USD millions of the units key figures carry (per-share amounts have none).
_TO_MILLIONS = {"USD": 1e-6, "USD thousands": 1e-3, "USD millions": 1.0, "USD billions": 1e3}


def in_millions(fig: KeyFigure) -> float | None:
    """``fig.value`` in USD millions (an HTML filing's facts are in USD, a PDF statement's in the unit its
    heading states); None for a unit without a factor (``"USD per share"``, another currency) or a figure
    whose value could not be read."""
    factor = _TO_MILLIONS.get(fig.unit)
    return float(fig.value) * factor if factor is not None and fig.value is not None else None


def compare_summaries(
    before: FilingSummary, after: FilingSummary, form: str | None = None, same_period: bool = False
) -> list[FilingChange]:
    """The changes from ``before`` (the previous filing) to ``after``, both of ``form``: risk-factor
    headings added and removed, key figures whose value moved by at least :data:`MIN_FIGURE_CHANGE`
    (same name, compared in USD millions whatever unit each statement used, over the same span of
    time (:func:`figure_basis`; a pair that is not one measure a period apart is listed as
    ``figure_not_compared`` with the reason, never as a change); ``change`` relative to the previous
    value), flags that appeared or disappeared and a change of auditor; an added or removed risk factor
    carries the page of its heading (in ``after`` or ``before``) as its evidence. Headings are the same up
    to case, punctuation and small rewording
    (:func:`_has_heading`); when only one filing's Item 1A headings could be read, one
    ``risk_factors_not_compared`` change says so instead of listing every heading. Order:
    high-risk changes first, then by kind. ``same_period``: ``after`` amends ``before`` (Form 10-K/A,
    10-Q/A), so figures of the same period are compared (a restatement) and others are not."""
    out: list[FilingChange] = []
    if before.risk_headings and after.risk_headings:
        out += [
            FilingChange(kind="risk_factor_added", subject=h, after=h, page=_page(after, i))
            for i, h in enumerate(after.risk_headings)
            if not _has_heading(before.risk_headings, h)
        ]
        out += [
            FilingChange(kind="risk_factor_removed", subject=h, before=h, page=_page(before, i))
            for i, h in enumerate(before.risk_headings)
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
    old_figs = {f.name: f for f in reversed(before.key_figures) if f.current}  # the first current one per name
    for fig in after.key_figures:
        prev = old_figs.get(fig.name)
        if not fig.current or prev is None or prev.value is None or fig.value is None:
            continue
        if (prev.value, prev.unit, prev.period) == (fig.value, fig.unit, fig.period):
            continue
        old_basis, new_basis = figure_basis(prev, form), figure_basis(fig, form)
        why = not_comparable(old_basis, new_basis, same_period)
        if why is not None:
            out.append(
                FilingChange(
                    kind="figure_not_compared",
                    subject=fig.name.value,
                    before=prev.shown,
                    after=fig.shown,
                    basis=why,
                )
            )
            continue
        old_value, new_value = in_millions(prev), in_millions(fig)
        if old_value is None or new_value is None:
            if prev.unit != fig.unit:
                continue  # two currencies: never converted
            old_value, new_value = float(prev.value), float(fig.value)
        if old_value == new_value:
            continue
        change = (new_value - old_value) / abs(old_value) if old_value else None
        if change is not None and abs(change) < MIN_FIGURE_CHANGE:
            continue
        out.append(
            FilingChange(
                kind="figure_changed",
                subject=fig.name.value,
                before=prev.shown,
                after=fig.shown,
                change=round(change, 4) if change is not None else None,
                basis=f"{old_basis.label()} → {new_basis.label()}",
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


def _page(summary: FilingSummary, i: int) -> int | None:
    """The page of ``summary``'s ``i``-th risk-factor heading, or None when it was not recorded."""
    return summary.risk_heading_pages[i] if i < len(summary.risk_heading_pages) else None


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
def record_filing_changes(session: Session, sha256: str) -> list[FilingChange]:
    """Prefect task: compare the filing ``sha256`` with the previous filing of the same company
    and form, or for an amendment with the filing it amends (:func:`tasks.store.profiles.previous_filing`),
    and store the changes in ``session`` (the caller commits); ``[]`` (stored) when there is no such
    filing. A contract has none."""
    from tasks.store.profiles import load_profiles, previous_filing, save_filing_changes

    prev = previous_filing(session, sha256)
    if prev is None:
        save_filing_changes(session, sha256, None, [])
        return []
    current = load_profiles(session, [sha256])[sha256]
    changes = compare_summaries(
        FilingSummary.model_validate(prev.summary),
        FilingSummary.model_validate(current.summary),
        current.document_type,
        same_period=bool(current.amendment),
    )
    save_filing_changes(session, sha256, prev.sha256, changes)
    return changes


@task(name="compare-filings", cache_policy=NO_CACHE)
def compare_filings(database_url: str, run_id: str) -> int:
    """Prefect task: :func:`record_filing_changes` for every filing reviewed in run ``run_id``,
    once every document of the run has ended (so filings of one run compare with each other);
    returns how many filings were compared."""
    from sqlmodel import col, select

    from schemas.tables import DocumentProfileRow, RunDocumentRow
    from tasks.store.persist import unit_of_work

    with unit_of_work(database_url) as session:
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
        with unit_of_work(database_url) as session:  # one filing's comparison at a time
            record_filing_changes.fn(session, sha)
    return len(filings)


def changes_markdown(documents: list[dict]) -> str:
    """A markdown table of the report's filing changes (one row per change, high-risk first) for
    the Prefect artifact; ``""`` when no document has changes."""
    rows = []
    for d in documents:
        for c in d.get("changes") or []:
            pct = f"{c['change'] * 100:+.1f} %" if c.get("change") is not None else ""
            where = f" ({c['locator']})" if c.get("locator") else (f" (page {c['page']})" if c.get("page") else "")
            rows.append(
                f"| {d['file_name']} | {'**high**' if c.get('high_risk') else ''} | {c['kind']} | "
                f"{str(c['subject'])[:80]}{where} | "
                f"{c.get('before') or ''} | {c.get('after') or ''} | {pct} | {c.get('basis') or ''} |"
            )
    if not rows:
        return ""
    head = (
        "| filing | risk | change | subject | before | after | change | periods |\n|---|---|---|---|---|---|---|---|\n"
    )
    return "# Changes since the previous filing\n\n" + head + "\n".join(rows)
