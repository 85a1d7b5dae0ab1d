"""Deciding in the browser (``docreview report serve`` with a review database, cli/report_server.py).

One small run (rules backend, two generated sample contracts, the sample playbook) is shared by the
module; each test serves it on a free port. The browser test uses the Debian ``chromium`` package
through Playwright's Python client like tests/test_report_browser.py (skips when Chromium is
missing); the other tests speak HTTP.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func
from sqlmodel import Session, select
from typer.testing import CliRunner

from cli.app import app
from cli.report import make_report_server
from cli.report_server import PASSWORD_SETTING, csrf_token
from schemas.tables import ReviewerDecision
from tasks.store.persist import dispose_engines, get_engine

pytestmark = pytest.mark.usefixtures("prefect_harness")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Any]:
    """A finished run: ``{out, db, report}`` (``report``: its report.json)."""
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents

    base = tmp_path_factory.mktemp("decide")
    inbox = base / "inbox"
    generate_samples(inbox, count=2)
    db = f"sqlite:///{base / 'review.db'}"
    review_documents(
        source=str(inbox),
        out_dir=str(base / "out"),
        database_url=db,
        backend="rules",
        playbook=str(ROOT / "deployments" / "playbook.yaml"),
    )
    dispose_engines()
    return dict(out=base / "out", db=db, report=json.loads((base / "out" / "report.json").read_text()))


@pytest.fixture
def served(run) -> Iterator[str]:
    """The run's report folder served with decisions on 127.0.0.1: yields the base URL."""
    yield from _serve(run["out"], run["db"])


def _serve(out: Path, db: str | None, **kwargs: Any) -> Iterator[str]:
    server = make_report_server(out, "127.0.0.1", 0, db, **kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def decisions(db: str) -> list[ReviewerDecision]:
    with Session(get_engine(db)) as session:
        return list(session.exec(select(ReviewerDecision).order_by(ReviewerDecision.id)).all())


def count(db: str) -> int:
    with Session(get_engine(db)) as session:
        return int(session.exec(select(func.count()).select_from(ReviewerDecision)).one())


def token_of(page: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert match, "the page carries a CSRF token in its forms"
    return match.group(1)


def findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for d in report["documents"] for f in d["findings"]]


def test_a_reviewer_approves_a_finding_in_the_browser_and_sees_it_after_reload(browser, run, served, tmp_path):
    finding = next(f for f in findings(run["report"]) if f["verdict"] != "verified")
    before = count(run["db"])
    page = browser.new_page(viewport={"width": 1300, "height": 1400})
    page.goto(f"{served}/report.html")
    row = page.locator(f"#f-{finding['id']}")
    assert f"docreview decide {finding['id']} approve|reject" in row.inner_text()  # the static report's hint stays
    form = row.locator("form.dr-decide")
    form.locator("input[name=reviewer]").fill("Alice Example")
    form.locator("input[name=note]").fill("clause read in full")
    with page.expect_navigation():
        form.locator("button[value=approve]").click()
    assert page.url.endswith(f"/report.html#f-{finding['id']}")
    page.reload()
    row = page.locator(f"#f-{finding['id']}")
    text = row.inner_text()
    assert "Reviewer: approved by Alice Example (" in text and "UTC) — clause read in full" in text
    assert f"docreview decide {finding['id']}" not in text  # decided: the hint gave way to the decision
    # The name is remembered (cookie) in every form of the page.
    assert page.locator("form.dr-decide input[name=reviewer]").first.input_value() == "Alice Example"
    # The decided finding left the triage's "Findings to look at", as in the next run's report.
    assert str(finding["id"]) not in [c.strip() for c in page.locator("section.triage td code").all_inner_texts()]
    # Its source opens at its page.
    link = row.locator("a", has_text="open the source").get_attribute("href")
    assert link is not None and link.endswith(f"#page={finding['page']}")
    shot = tmp_path / "report-decide.png"
    row.scroll_into_view_if_needed()
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    page.close()
    rows = decisions(run["db"])
    assert len(rows) == before + 1
    assert rows[-1].decision == "approve" and rows[-1].note == "clause read in full"
    assert rows[-1].reviewer == "Alice Example"
    assert rows[-1].decided_at is not None
    # The static report on disk is untouched: the server adds the controls to the page it serves.
    assert "dr-decide" not in (run["out"] / "report.html").read_text()


def test_the_page_runs_no_script_and_links_each_finding_to_its_source(run, served):
    with httpx.Client(base_url=served, timeout=30) as client:
        page = client.get("/report.html")
        assert page.status_code == 200
        assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none': no script
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert "<script" not in page.text
        assert 'class="plots"' in page.text  # the run's own figures, copied from its report.html
        for f in findings(run["report"]):
            assert f'aria-label="decide finding {f["id"]}"' in page.text
        doc = run["report"]["documents"][0]
        link = f"/source/{run['report']['run']['id']}/{doc['sha256']}"
        pdf = client.get(link)
        assert pdf.status_code == 200 and pdf.headers["content-type"] == "application/pdf"
        assert pdf.content == Path(doc["source"]).read_bytes()
        # Nothing but a run's own sources: an unknown hash, another run, a path.
        assert client.get(f"/source/{run['report']['run']['id']}/{'0' * 64}").status_code == 404
        assert client.get(f"/source/other-run/{doc['sha256']}").status_code == 404
        assert client.get("/source/../../etc/passwd").status_code == 404
        assert client.get(f"/source/..%2f..%2fetc/{doc['sha256']}").status_code == 404


def test_a_missing_or_stale_csrf_token_is_403_and_nothing_is_written(run, served):
    finding = findings(run["report"])[0]
    before = count(run["db"])
    form = dict(id=str(finding["id"]), decision="reject", reviewer="Mallory", back="/report.html")
    with httpx.Client(base_url=served, timeout=30) as client:
        token = token_of(client.get("/report.html").text)  # the client now holds a session cookie
        missing = client.post("/decide", data=form)
        assert missing.status_code == 403 and "missing or stale" in missing.text and "nothing recorded" in missing.text
        stale = client.post("/decide", data={**form, "csrf": csrf_token(b"an earlier server's secret", "s" * 43)})
        assert stale.status_code == 403 and "Reload the report" in stale.text
        # The right token from another browser (no session cookie, or another one) is refused too.
        with httpx.Client(base_url=served, timeout=30) as other:
            assert other.post("/decide", data={**form, "csrf": token}).status_code == 403
        # A form posted from another site is refused whatever it carries.
        foreign = client.post("/decide", data={**form, "csrf": token}, headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403
        assert count(run["db"]) == before
        ok = client.post("/decide", data={**form, "csrf": token})  # control: the same form with its token
        assert ok.status_code == 303
    assert count(run["db"]) == before + 1


def test_a_page_from_a_restarted_server_is_stale(run):
    finding = findings(run["report"])[0]
    first = _serve(run["out"], run["db"])
    base = next(first)
    with httpx.Client(base_url=base, timeout=30) as client:
        token = token_of(client.get("/report.html").text)
        session = client.cookies.get("docreview_session")
    first.close()
    before = count(run["db"])
    second = _serve(run["out"], run["db"])
    base = next(second)
    with httpx.Client(base_url=base, timeout=30, cookies={"docreview_session": session or ""}) as client:
        form = dict(id=str(finding["id"]), decision="approve", reviewer="Bob", csrf=token)
        answer = client.post("/decide", data=form)
        assert answer.status_code == 403 and "restarted" in answer.text
    second.close()
    assert count(run["db"]) == before


def test_an_unknown_or_malformed_id_is_refused_and_nothing_is_written(run, served):
    before = count(run["db"])
    with httpx.Client(base_url=served, timeout=30) as client:
        token = token_of(client.get("/report.html").text)
        base = dict(decision="approve", reviewer="Alice", csrf=token)
        unknown = client.post("/decide", data={**base, "id": "999999"})
        assert unknown.status_code == 404 and "no finding 999999" in unknown.text
        absent = client.post("/decide", data={**base, "id": "A999999"})
        assert absent.status_code == 404 and "no absence A999999" in absent.text
        real = str(findings(run["report"])[0]["id"])
        mixed = client.post("/decide", data={**base, "id": f"{real},999999"})  # all or nothing
        assert mixed.status_code == 404
        for bad in ("", "12; DROP TABLE", "../3"):
            assert client.post("/decide", data={**base, "id": bad}).status_code == 400
        nameless = client.post("/decide", data={**base, "id": real, "reviewer": "  "})
        assert nameless.status_code == 400 and "your name" in nameless.text
        assert client.post("/decide", data={**base, "id": real, "decision": "maybe"}).status_code == 400
    assert count(run["db"]) == before


def test_two_reviewers_deciding_one_finding_at_once_are_both_kept_and_the_last_wins(run, served):
    from cli.queue import gold_set

    finding = findings(run["report"])[-1]
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def decide(reviewer: str, decision: str) -> None:
        with httpx.Client(base_url=served, timeout=30) as client:
            token = token_of(client.get("/report.html").text)
            barrier.wait()
            form = dict(id=str(finding["id"]), decision=decision, reviewer=reviewer, csrf=token)
            statuses.append(client.post("/decide", data=form).status_code)

    threads = [threading.Thread(target=decide, args=a) for a in (("Alice", "approve"), ("Bob", "reject"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [303, 303]
    item = next(i for i in gold_set(run["db"]) if i["id"] == str(finding["id"]))
    names = [h["reviewer"] for h in item["history"]]
    assert sorted(names[-2:]) == ["Alice", "Bob"] and [h["seq"] for h in item["history"]][-2:] == [
        len(names) - 1,
        len(names),
    ]
    assert item["decision"]["reviewer"] == names[-1]  # the later one is the decision
    with httpx.Client(base_url=served, timeout=30) as client:
        page = client.get("/report.html").text
    row = page[page.index(f'<tr id="f-{finding["id"]}"') :]
    shown = {"approve": "approved", "reject": "rejected"}[item["decision"]["decision"]]
    assert f"{shown}</b> by {names[-1]}" in row[: row.index("</tr>")]


def test_absences_and_playbook_results_are_decided_from_the_page(run, served):
    from cli.queue import gold_set

    docs = run["report"]["documents"]
    absence = next(a for d in docs for a in d["absences"])
    result = next(r for d in docs for r in d.get("playbook") or [] if r["finding_ids"])
    with httpx.Client(base_url=served, timeout=30) as client:
        page = client.get("/report.html").text
        assert f'aria-label="decide absence {absence["id"]}"' in page
        assert f'aria-label="decide playbook rule {result["rule"]}"' in page
        token = token_of(page)
        base = dict(decision="reject", reviewer="Carol", csrf=token, back="/report.html")
        assert client.post("/decide", data={**base, "id": absence["id"]}).status_code == 303
        ids = ",".join(str(i) for i in result["finding_ids"])  # the playbook result's form posts its findings
        assert client.post("/decide", data={**base, "id": ids, "note": "not our position"}).status_code == 303
        page = client.get("/report.html").text
    assert f"<code>{absence['id']}</code> · rejected by Carol" in page  # shown in the document's panel
    latest = {i["id"]: i for i in gold_set(run["db"])}
    assert latest[absence["id"]]["decision"]["decision"] == "reject"
    for i in result["finding_ids"]:
        assert latest[str(i)]["decision"]["note"] == "not our position"
        assert latest[str(i)]["decision"]["reviewer"] == "Carol"


def test_a_kept_run_is_served_live_too_and_a_report_without_its_run_is_static(run, served, tmp_path):
    run_id = run["report"]["run"]["id"]
    with httpx.Client(base_url=served, timeout=30) as client:
        kept = client.get(f"/runs/{run_id}/report.html")
        assert kept.status_code == 200 and f'name="back" value="/runs/{run_id}/report.html"' in kept.text
    # A folder whose run is not in the database: the static report, read-only.
    other = tmp_path / "other"
    shutil.copytree(run["out"], other, ignore=shutil.ignore_patterns("runs"))
    data = json.loads((other / "report.json").read_text())
    data["run"]["id"] = "not-in-this-database"
    (other / "report.json").write_text(json.dumps(data))
    gen = _serve(other, run["db"])
    base = next(gen)
    with httpx.Client(base_url=base, timeout=30) as client:
        page = client.get("/report.html")
        assert page.status_code == 200 and "dr-decide" not in page.text
    gen.close()


def test_a_password_is_asked_when_set(run):
    from pydantic import SecretStr

    gen = _serve(run["out"], run["db"], password=SecretStr("correct horse"))
    base = next(gen)
    with httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/report.html").status_code == 401
        assert client.get("/report.html", auth=("anyone", "wrong")).status_code == 401
        assert client.post("/decide", data={"id": "1"}).status_code == 401
        page = client.get("/report.html", auth=("anyone", "correct horse"))
        assert page.status_code == 200 and "dr-decide" in page.text
    gen.close()


def test_binding_beyond_loopback_without_a_password_is_exit_2_naming_the_setting(run, monkeypatch):
    monkeypatch.delenv(PASSWORD_SETTING, raising=False)
    result = CliRunner().invoke(app, ["report", "serve", str(run["out"]), "--host", "0.0.0.0", "--db", run["db"]])
    assert result.exit_code == 2
    assert PASSWORD_SETTING in result.output and "Traceback" not in result.output
    monkeypatch.setenv(PASSWORD_SETTING, "s3cret-value")
    # With the password set the command would serve; its refusal message never shows the value.
    result = CliRunner().invoke(app, ["report", "serve", "/nonexistent-report-folder", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "s3cret-value" not in result.output
