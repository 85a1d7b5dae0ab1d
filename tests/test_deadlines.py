"""Contract deadlines (tasks/observe/deadlines.py): expiration, renewal and the notice deadline with
the business-day rules, in report.json, as .ics calendars, and as a Prefect event."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest
from icalendar import Calendar

from tasks.observe.deadlines import (
    DEADLINE_UPCOMING,
    BusinessCalendar,
    CalendarError,
    Period,
    calendar_ics,
    deadline_events,
    document_deadlines,
    upcoming_rows,
)

US = BusinessCalendar.parse("US")


def doc(**terms: list[str]) -> dict:
    names = {
        "effective": "Effective date",
        "agreement": "Agreement date",
        "expiration": "Expiration date",
        "term": "Term",
        "renewal": "Renewal",
        "notice": "Notice to terminate renewal",
    }
    return dict(
        file_name="msa.pdf",
        source="/inbox/msa.pdf",
        sha256="a" * 64,
        key_terms={names[k]: v for k, v in terms.items()},
        findings=[],
    )


def test_the_notice_deadline_counts_back_from_the_end_of_the_current_term_and_skips_holidays():
    d = doc(
        effective=["December 6, 2024"],
        term=["twenty-four (24) months"],
        renewal=["successive two (2) year"],
        notice=["ninety (90) days"],
    )
    found, why = document_deadlines(d, date(2026, 6, 1), US)
    assert why is None
    by_kind = {x["kind"]: x for x in found}
    assert by_kind["expiration"]["date"] == "2026-12-06"  # the second anniversary
    assert by_kind["renewal"]["date"] == "2026-12-07"
    # 90 days before 2026-12-06 is Monday 2026-09-07, Labor Day: the business day before it
    assert by_kind["notice"]["date"] == "2026-09-04"
    assert "moved from 2026-09-07" in by_kind["notice"]["basis"]
    # A year later the contract has renewed for two years: the next notice deadline follows that term.
    later = {x["kind"]: x for x in document_deadlines(d, date(2026, 12, 8), US)[0]}
    assert later["expiration"]["date"] == "2028-12-06" and later["notice"]["date"] == "2028-09-07"


def test_month_ends_business_days_weekends_only_and_a_stated_expiration():
    assert Period(1, "month", "one month").after(date(2027, 1, 31)) == date(2027, 2, 28)
    assert US.back(date(2027, 1, 19), 3) == date(2027, 1, 13)  # over a weekend and MLK day (Jan 18)
    plain = BusinessCalendar.parse("none")
    assert plain.is_business_day(date(2027, 1, 18)) and not US.is_business_day(date(2027, 1, 18))
    d = doc(expiration=["December 31, 2027"], notice=["ten (10) business days"])
    found = {x["kind"]: x for x in document_deadlines(d, date(2027, 1, 1), US)[0]}
    assert "renewal" not in found and found["expiration"]["date"] == "2027-12-31"
    assert found["notice"]["date"] == "2027-12-16"  # Dec 24 (observed Christmas) is no business day
    with pytest.raises(CalendarError, match="no holidays known"):
        BusinessCalendar.parse("XX")


def test_a_document_with_no_dates_has_no_deadline_and_says_why():
    found, why = document_deadlines(doc(notice=["thirty (30) days"]), date(2027, 1, 1), US)
    assert found == [] and why == "no deadline: no expiration date, and no effective or agreement date in the key terms"
    found, why = document_deadlines(doc(effective=["May 1, 2025"]), date(2027, 1, 1), US)
    assert found == [] and "no term" in why


def test_events_only_within_the_alert_window_and_the_calendar_holds_all_day_events():
    d = doc(
        effective=["December 6, 2024"],
        term=["twenty-four (24) months"],
        renewal=["successive two (2) year"],
        notice=["ninety (90) days"],
    )
    d["deadlines"] = document_deadlines(d, date(2026, 8, 20), US)[0]
    report = {"run": {"id": "r" * 36, "flow_run_id": None}, "documents": [d]}
    assert [r["kind"] for r in upcoming_rows(report, 30)] == ["notice"]  # 2026-09-04 is 15 days ahead
    events = deadline_events(report, 30)
    assert [e["event"] for e in events] == [DEADLINE_UPCOMING]
    assert events[0]["payload"]["date"] == "2026-09-04" and events[0]["resource"]["prefect.resource.name"] == "msa.pdf"
    assert events[0]["resource"]["docreview.source"] == "/inbox/msa.pdf"
    assert deadline_events(report, 10) == []
    cal = Calendar.from_ical(calendar_ics([(d, x) for x in d["deadlines"]], "msa.pdf", "http://reports/r.html"))
    starts = {str(e.get("summary")): e.decoded("dtstart") for e in cal.walk("VEVENT")}
    assert starts["msa.pdf: last day to give notice of non-renewal"] == date(2026, 9, 4)
    assert len(starts) == 3 and all(isinstance(v, date) for v in starts.values())


@pytest.mark.usefixtures("prefect_harness")
def test_a_sample_contracts_ics_holds_its_90_day_notice_deadline_with_a_fixed_clock(tmp_path, db_url):
    """The fifth sample contract (effective December 7, 2024; 24 months; renews for two years unless
    notice is given "at least ninety (90) days" before the end of the term), reviewed, reported as of
    2026-06-01: the initial term ends on the second anniversary, 2026-12-07 (the reading of CUAD's lawyers:
    "four (4) years, commencing on the Effective Date" of 6/15/15 ends 6/15/19), so its calendar's notice event
    is on 2026-09-08 (90 days before; 2026-09-07 is Labor Day, the event is on a business day either way)."""
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents
    from tasks.observe.deadlines import write_calendars
    from tasks.observe.report import build_report
    from tasks.store.persist import dispose_engines

    made = generate_samples(tmp_path / "all", count=5)
    sample = made[4]
    assert (sample.effective_date, sample.renewal_notice) == ("December 7, 2024", "ninety (90) days")
    (tmp_path / "inbox").mkdir()
    shutil.copy(tmp_path / "all" / sample.file_name, tmp_path / "inbox" / sample.file_name)
    try:
        result = review_documents(
            source=str(tmp_path / "inbox"), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules"
        )
        report = build_report(db_url, result["run_id"], offline=True, as_of=date(2026, 6, 1))
    finally:
        dispose_engines()
    assert report["run"]["deadlines_as_of"] == "2026-06-01"
    (tmp_path / "cal").mkdir()
    written = write_calendars(report, tmp_path / "cal", None)
    per_doc = [p for p in written if p.parent.name == "deadlines"]
    assert len(per_doc) == 1 and per_doc[0].name.startswith("sample_05_master_services_agreement-")
    for path in (tmp_path / "cal" / "deadlines.ics", per_doc[0]):
        cal = Calendar.from_ical(path.read_bytes())
        notice = [e for e in cal.walk("VEVENT") if "notice of non-renewal" in str(e.get("summary"))]
        assert [e.decoded("dtstart") for e in notice] == [date(2026, 9, 8)]
        assert "90 days before 2026-12-07" in str(notice[0].get("description"))
    # The run itself wrote today's calendar beside its report, and the report lists the deadlines.
    assert (tmp_path / "out" / "deadlines.ics").is_file()
    kept = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {x["kind"] for x in kept["documents"][0]["deadlines"]} == {"notice", "expiration", "renewal"}
    assert "Upcoming deadlines" in (tmp_path / "out" / "report.html").read_text()


@pytest.mark.usefixtures("prefect_harness")
def test_a_quiet_night_keeps_the_published_report_and_calendar(tmp_path, db_url):
    """Before: a run of an empty folder (or one whose documents all failed) replaced OUT/report.* and
    OUT/deadlines.ics with an empty run: a team subscribed to the calendar lost every deadline. Now they move
    only when a run reviewed a document; the empty run's own report stays under OUT/runs/<run id>/."""
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    generate_samples(tmp_path / "inbox", count=2)
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "not-a-pdf.pdf").write_bytes(b"this is no PDF")
    out = tmp_path / "out"
    try:
        good = review_documents(source=str(tmp_path / "inbox"), out_dir=str(out), database_url=db_url, backend="rules")
        calendar = (out / "deadlines.ics").read_bytes()
        assert good["published"] and Calendar.from_ical(calendar).walk("VEVENT")
        quiet = review_documents(source=str(tmp_path / "empty"), out_dir=str(out), database_url=db_url, backend="rules")
        from flows.pipeline import NothingReviewed

        with pytest.raises(NothingReviewed) as failed:
            review_documents(source=str(tmp_path / "broken"), out_dir=str(out), database_url=db_url, backend="rules")
    finally:
        dispose_engines()
    for result in (quiet, failed.value.result):
        assert result["published"] is False
        assert Path(result["report_json"]).parent == out / "runs" / result["run_id"]
        assert json.loads(Path(result["report_json"]).read_text())["run"]["id"] == result["run_id"]
    assert (out / "deadlines.ics").read_bytes() == calendar  # the subscribed calendar is the last good run's
    assert json.loads((out / "report.json").read_text())["run"]["id"] == good["run_id"]


def test_a_monthly_renewal_since_1999_is_rolled_to_the_current_term():
    """A month-to-month contract of 1999 has renewed over 300 times by 2026: the current term is this month's,
    never one that ended years ago."""
    d = doc(effective=["April 6, 1999"], term=["six (6) months"], renewal=["1 month"], notice=["15 days"])
    found = {x["kind"]: x for x in document_deadlines(d, date(2026, 12, 6), US)[0]}
    assert found["expiration"]["date"] == "2026-12-06" and found["expiration"]["upcoming"]  # ends today: current
    assert "renewed 326 time(s)" in found["expiration"]["basis"]  # 1999-10-06 + 326 months
