"""A contract's deadlines: when its term ends, when it renews, and the last day to give notice of
non-renewal, from its key terms; in the report, as iCalendar files and as a Prefect event.

The rules (stated in docs/deadlines.md):

- **Start**: the Effective Date the key terms give, else the Agreement Date.
- **End of the initial term**: the Expiration Date the key terms give (for a contract, computed by
  :mod:`tasks.check.key_terms` with its basis: "Effective Date 2022-12-03 + 5 years"); else the start plus
  the term. A term of N years or months ends on the anniversary (5 years from 2022-12-03 ends 2027-12-03),
  the reading of CUAD's lawyers' Expiration Date answers ("four (4) years, commencing on the Effective Date"
  of 6/15/15 → 6/15/19); a contract that says "less one day" ends the day before.
  Months and years are calendar months and years (python-dateutil's ``relativedelta``: the 31st plus
  one month is the last day of the next month); weeks are 7 days.
- **Renewal**: with a Renewal Term the contract renews the day after a term ends, for that period
  (ending the day before the period's anniversary). The current term is the first whose end is on or
  after the as-of date (today, UTC, unless a fixed clock is given).
- **Notice deadline**: the end of the current term less the notice period ("at least ninety (90)
  days before the end of the then-current term"): calendar days, weeks, months or years are counted
  back on the calendar; business days are counted back over business days. A deadline that falls on
  a day that is not a business day moves to the business day before it (notice is never late).
- **Business days**: Monday to Friday, except the public holidays of ``DOCREVIEW_DEADLINE_HOLIDAYS``
  (the ``holidays`` package: ``US`` federal holidays by default; ``US-NY`` a country and subdivision;
  ``none`` weekends only).

A document without a start and a term, or an expiration date, has no deadlines: the report says so.
Dates come from :func:`tasks.check.values.extract_values` readings of the key terms (ISO dates,
durations with their unit).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from dateutil.relativedelta import relativedelta

from schemas.decisions import affirms, rejects

#: The report's key terms each deadline reads (:func:`tasks.observe.report.key_terms`).
_TERMS = {
    "effective": "Effective date",
    "agreement": "Agreement date",
    "expiration": "Expiration date",
    "term": "Term",
    "renewal": "Renewal",
    "notice": "Notice to terminate renewal",
}
#: Categories whose findings the deadlines rest on.
_CATEGORIES = {
    "effective_date",
    "agreement_date",
    "expiration_date",
    "renewal_term",
    "notice_period_to_terminate_renewal",
}
#: At most this many renewal periods are rolled forward looking for the current term (a monthly renewal
#: for two centuries); a term still in the past after them gives no deadline, and the report says why.
MAX_RENEWALS = 2400


class CalendarError(ValueError):
    """A ``DOCREVIEW_DEADLINE_HOLIDAYS`` value the holidays package does not know."""


@dataclass(frozen=True)
class BusinessCalendar:
    """Business days: Monday to Friday, not a holiday of ``country`` (ISO 3166 alpha-2) and
    ``subdivision`` (None: the country's national ones; ``country`` None: weekends only)."""

    country: str | None = "US"
    subdivision: str | None = None

    @classmethod
    def parse(cls, setting: str) -> BusinessCalendar:
        """``"US"``, ``"US-NY"``, ``"GB-ENG"`` or ``"none"``; raises :class:`CalendarError` for a
        country or subdivision the holidays package does not know."""
        import holidays

        text = setting.strip()
        if text.lower() in ("", "none"):
            return cls(None, None)
        country, _, subdivision = text.partition("-")
        supported = holidays.list_supported_countries()
        if country.upper() not in supported:
            raise CalendarError(f"DOCREVIEW_DEADLINE_HOLIDAYS: {text!r}: no holidays known for country {country!r}")
        if subdivision and subdivision.upper() not in supported[country.upper()]:
            raise CalendarError(
                f"DOCREVIEW_DEADLINE_HOLIDAYS: {text!r}: {country.upper()} has no subdivision {subdivision!r}"
            )
        return cls(country.upper(), subdivision.upper() or None)

    def describe(self) -> str:
        """``"Monday to Friday except US public holidays"`` (the rule, for the report and calendar)."""
        if self.country is None:
            return "Monday to Friday"
        where = f"{self.country}-{self.subdivision}" if self.subdivision else self.country
        return f"Monday to Friday except {where} public holidays"

    @functools.cache  # noqa: B019 - frozen dataclass: one cache entry per calendar and year
    def holidays_of(self, year: int) -> frozenset[date]:
        """The holidays of one year."""
        if self.country is None:
            return frozenset()
        import holidays

        return frozenset(holidays.country_holidays(self.country, subdiv=self.subdivision, years=year).keys())

    def is_business_day(self, day: date) -> bool:
        """Whether ``day`` is a business day."""
        return day.weekday() < 5 and day not in self.holidays_of(day.year)

    def on_or_before(self, day: date) -> date:
        """``day`` when it is a business day, else the business day before it."""
        while not self.is_business_day(day):
            day -= timedelta(days=1)
        return day

    def back(self, day: date, business_days: int) -> date:
        """The business day ``business_days`` business days before ``day``."""
        for _ in range(business_days):
            day -= timedelta(days=1)
            while not self.is_business_day(day):
                day -= timedelta(days=1)
        return day


@dataclass(frozen=True)
class Period:
    """A duration as a contract states it: ``amount`` of ``unit`` (day, business_day, week, month,
    year) and the text it was read from."""

    amount: int
    unit: str
    raw: str

    def delta(self) -> relativedelta:
        """This period as a calendar step (a business day counts as a day here)."""
        n = self.amount
        if self.unit == "year":
            return relativedelta(years=n)
        if self.unit == "month":
            return relativedelta(months=n)
        if self.unit == "week":
            return relativedelta(weeks=n)
        return relativedelta(days=n)

    def after(self, day: date) -> date:
        """``day`` plus this period in calendar terms (business days count as days here)."""
        return day + self.delta()

    def before(self, day: date, calendar: BusinessCalendar) -> date:
        """``day`` less this period: business days over ``calendar``'s business days."""
        if self.unit == "business_day":
            return calendar.back(day, self.amount)
        return day - self.delta()


def _first(values: list[str] | None, kind: str) -> tuple[Any, str] | None:
    """The first ISO date (``kind`` ``date``) or :class:`Period` (``duration``) read in ``values``,
    with the text it was read from."""
    from tasks.check.values import Kind, extract_values

    for raw in values or []:
        text = re.sub(r"\s*\([^)]*\)$", "", raw)  # "$1,000,000 (page 4)": a key term's locator
        for v in extract_values(text):
            iso = v.iso() if kind == "date" and v.kind is Kind.date else None
            if iso and len(iso) == 10:  # a day, not a month
                return date.fromisoformat(iso), raw
            if kind == "duration" and v.kind is Kind.duration and v.amount is not None and v.unit:
                amount = v.amount
                if amount == amount.to_integral_value() and amount > 0:
                    return Period(int(amount), v.unit, v.raw.strip()), raw
    return None


def _resting_on(findings: list[dict[str, Any]]) -> list[int]:
    """Ids of the findings the deadlines rest on: the date and term categories' findings that the
    fact-check supported or a reviewer approved, none a reviewer rejected."""
    from tasks.check.playbook import supported

    return [
        int(f["id"])
        for f in findings
        if f["clause_type"] in _CATEGORIES
        and not rejects(f.get("decision"))
        and (supported(f) or affirms(f.get("decision")))
    ]


def document_deadlines(
    document: dict[str, Any], as_of: date, calendar: BusinessCalendar
) -> tuple[list[dict[str, Any]], str | None]:
    """The deadlines of one reviewed contract of the report (its ``key_terms`` and ``findings``), and
    None; or ``[]`` and why there are none. Each deadline: ``{kind (notice|renewal|expiration), date
    (ISO), title, basis (the rule applied, in words), finding_ids, upcoming (on or after as_of),
    days_left}``, by date; the expiration's also ``initial_end`` (ISO: the initial term's end, before renewals). See the module docstring for the rules."""
    terms: dict[str, list[str]] = document.get("key_terms") or {}
    got = {k: terms.get(v) for k, v in _TERMS.items()}
    start = _first(got["effective"], "date") or _first(got["agreement"], "date")
    stated_end = _first(got["expiration"], "date")
    term = _first(got["term"], "duration")
    renewal = _first(got["renewal"], "duration")
    notice = _first(got["notice"], "duration")
    read = {
        b["value"]: b["basis"] for b in document.get("key_term_basis") or [] if b.get("term") == _TERMS["expiration"]
    }
    if any("perpetu" in v.lower() for v in got["expiration"] or []):
        return [], "no deadline: the term runs until the agreement is terminated (perpetual)"
    if stated_end is not None:
        end: date = stated_end[0]
        basis = read.get(stated_end[1])
        how = f"the expiration date {stated_end[1]}" + (f" ({basis})" if basis else "")
    elif start is not None and term is not None:
        end = term[0].after(start[0])
        how = f"{start[1]} + the term {term[0].raw}"
    else:
        gap = (document.get("key_term_gaps") or {}).get(_TERMS["expiration"])
        if gap:
            return [], f"no deadline: {gap}"
        missing = "no expiration date, and " + ("no term" if start is not None else "no effective or agreement date")
        return [], f"no deadline: {missing} in the key terms"
    renews = renewal[0] if renewal is not None else None
    initial_end = end
    rolled = 0
    while renews is not None and end < as_of and rolled < MAX_RENEWALS:
        end = renews.after(end)
        rolled += 1
    if renews is not None and end < as_of:
        return (
            [],
            f"no deadline: the term renews for {renews.raw}, more than {MAX_RENEWALS} times before {as_of.isoformat()}",
        )
    if rolled:
        how += f", renewed {rolled} time(s) for {renews.raw if renews else ''}"
    ids = _resting_on(document.get("findings") or [])
    out: list[dict[str, Any]] = []

    def add(kind: str, day: date, title: str, basis: str) -> None:
        out.append(
            dict(
                kind=kind,
                date=day.isoformat(),
                title=title,
                basis=basis,
                finding_ids=ids,
                upcoming=day >= as_of,
                days_left=(day - as_of).days,
            )
        )

    if renews is not None:
        add(
            "renewal",
            end + timedelta(days=1),
            f"renews for {renews.raw} unless notice is given",
            f"the term ends {end.isoformat()} ({how})",
        )
    add("expiration", end, "the current term ends", how)
    out[-1]["initial_end"] = initial_end.isoformat()  # the end of the initial term, before any renewal
    if notice is not None:
        counted = notice[0].before(end, calendar)
        due = calendar.on_or_before(counted)
        moved = "" if due == counted else f", moved from {counted.isoformat()} to the business day before"
        add(
            "notice",
            due,
            "last day to give notice of non-renewal"
            if renews is not None
            else "last day to give notice before the term ends",
            f"{notice[0].raw} before {end.isoformat()}{moved} (business days: {calendar.describe()})",
        )
    out.sort(key=lambda d: (d["date"], d["kind"]))
    return out, None


def today_utc() -> date:
    """Today's date in UTC: the as-of date of deadlines unless a fixed clock is given."""
    return datetime.now(UTC).date()


def add_deadlines(report: dict[str, Any], as_of: date, calendar: BusinessCalendar) -> None:
    """Give each reviewed contract of ``report`` (not one ``not_judged`` as an agreement) its ``deadlines``
    (:func:`document_deadlines`) and, when it has none, ``deadlines_note`` (why); the run gets ``deadlines_as_of`` and
    ``business_days`` (the rule, in words). In place."""
    report["run"]["deadlines_as_of"] = as_of.isoformat()
    report["run"]["business_days"] = calendar.describe()
    for doc in report["documents"]:
        if doc.get("status") != "reviewed" or doc.get("profile", "contract") != "contract" or doc.get("not_judged"):
            continue  # a filing, or a document not judged as an agreement: no contract deadlines
        found, why = document_deadlines(doc, as_of, calendar)
        doc["deadlines"] = found
        if why:
            doc["deadlines_note"] = why


def upcoming_rows(report: dict[str, Any], within_days: int | None = None) -> list[dict[str, Any]]:
    """The report's upcoming deadlines across documents, soonest first: ``[{document, sha256, kind,
    date, title, basis, days_left, finding_ids}]``; only those at most ``within_days`` days ahead when
    given."""
    rows = [
        dict(
            document=d["file_name"],
            sha256=d.get("sha256"),
            **{k: x[k] for k in ("kind", "date", "title", "basis", "days_left", "finding_ids")},
        )
        for d in report["documents"]
        for x in d.get("deadlines") or []
        if x["upcoming"] and (within_days is None or x["days_left"] <= within_days)
    ]
    rows.sort(key=lambda r: (r["date"], r["document"], r["kind"]))
    return rows


#: Prefect event of a deadline within ``DOCREVIEW_DEADLINE_ALERT_DAYS``.
DEADLINE_UPCOMING = "docreview.deadline.upcoming"


def deadline_events(report: dict[str, Any], within_days: int) -> list[dict[str, Any]]:
    """One ``docreview.deadline.upcoming`` event per deadline at most ``within_days`` days ahead
    (resource: the document, ``docreview.document.<uri>`` as for the other document events; payload:
    the deadline, the run and the file); pure."""
    import uuid

    from tasks.observe.events import document_resource_id, flow_run_related

    run = report["run"]
    sources = {d.get("sha256"): d.get("source") or d["file_name"] for d in report["documents"]}
    out = []
    for row in upcoming_rows(report, within_days):
        source = sources.get(row["sha256"]) or row["document"]
        resource = {  # named as the other document events name it (tasks.observe.events)
            "prefect.resource.id": document_resource_id(source),
            "prefect.resource.name": row["document"],
            "docreview.source": source,
            "docreview.sha256": row["sha256"] or "",
        }
        payload = {
            "run_id": run["id"],
            "file_name": row["document"],
            **{k: row[k] for k in ("kind", "date", "title", "basis", "days_left", "finding_ids")},
        }
        event_id = uuid.uuid5(
            uuid.NAMESPACE_URL, f"docreview|{run['id']}|{DEADLINE_UPCOMING}|{row['sha256']}|{row['kind']}|{row['date']}"
        )
        out.append(
            dict(
                event=DEADLINE_UPCOMING,
                resource=resource,
                related=flow_run_related(run.get("flow_run_id")),
                payload=payload,
                id=event_id,
            )
        )
    return out


def emit_deadline_events(report: dict[str, Any], within_days: int) -> int:
    """Emit :func:`deadline_events` to Prefect; returns how many were sent (0 without a Prefect API)."""
    from tasks.observe.events import send_events

    return send_events(deadline_events(report, within_days))


def calendar_ics(rows: list[tuple[dict[str, Any], dict[str, Any]]], name: str, link: str | None) -> bytes:
    """An iCalendar (RFC 5545) file of deadlines: ``rows`` are ``(document, deadline)`` pairs of the
    report; each deadline an all-day event (``DTSTART;VALUE=DATE``) with a stable UID (document,
    kind, date), its basis and the findings in the description, ``link`` (the report) as its URL, and
    a reminder 14 days before a notice deadline. ``name`` is the calendar's name."""
    from icalendar import Alarm, Calendar, Event

    cal = Calendar()
    cal.add("prodid", "-//docreview//deadlines//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("x-wr-calname", name)
    stamp = datetime.now(UTC).replace(microsecond=0)
    for doc, d in rows:
        day = date.fromisoformat(d["date"])
        event = Event()
        event.add("uid", f"{doc.get('sha256') or doc['file_name']}-{d['kind']}-{d['date']}@docreview")
        event.add("dtstamp", stamp)
        event.add("dtstart", day)
        event.add("dtend", day + timedelta(days=1))
        event.add("summary", f"{doc['file_name']}: {d['title']}")
        ids = ", ".join(str(i) for i in d.get("finding_ids") or [])
        event.add(
            "description",
            f"{d['basis']}." + (f" Findings {ids}." if ids else "") + (f" Report: {link}" if link else ""),
        )
        event.add("categories", [f"contract {d['kind']}"])
        if link:
            event.add("url", link)
        event.add("transp", "TRANSPARENT")
        if d["kind"] == "notice":
            alarm = Alarm()
            alarm.add("action", "DISPLAY")
            alarm.add("description", f"In 14 days: {doc['file_name']}: {d['title']}")
            alarm.add("trigger", timedelta(days=-14))
            event.add_component(alarm)
        cal.add_component(event)
    return cal.to_ical()


def slug(file_name: str) -> str:
    """A file-system-safe name for a document's calendar (``MSA v2 (draft).pdf`` → ``MSA-v2-draft``)."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", file_name)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-._")[:80] or "document"


def write_calendars(report: dict[str, Any], folder: Any, link: str | None) -> list[Any]:
    """Write ``deadlines.ics`` (every upcoming deadline of the run) and ``deadlines/<document>.ics``
    (each document's) into ``folder``; a document without upcoming deadlines gets no file. Returns
    the paths written."""
    from pathlib import Path

    folder = Path(folder)
    written = []
    upcoming = [(d, x) for d in report["documents"] for x in d.get("deadlines") or [] if x["upcoming"]]
    (folder / "deadlines.ics").write_bytes(calendar_ics(upcoming, f"docreview run {report['run']['id'][:8]}", link))
    written.append(folder / "deadlines.ics")
    for doc in report["documents"]:
        mine = [(doc, x) for x in doc.get("deadlines") or [] if x["upcoming"]]
        if not mine:
            continue
        (folder / "deadlines").mkdir(exist_ok=True)
        path = folder / "deadlines" / f"{slug(doc['file_name'])}-{str(doc.get('sha256') or '')[:8]}.ics"
        path.write_bytes(calendar_ics(mine, doc["file_name"], link))
        written.append(path)
    return written
