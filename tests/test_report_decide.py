"""Deciding in the browser (``docreview report serve`` with a review database, cli/report_server.py).

One small run (rules backend, two generated sample contracts, the sample playbook) is shared by the
module, with three reviewer accounts (Alice Example, Bob, Carol); each test serves it on a free port.
The browser test uses the Debian ``chromium`` package through Playwright's Python client like
tests/test_report_browser.py (skips when Chromium is missing); the other tests speak HTTP and log in
through the login form.
"""

from __future__ import annotations

import contextlib
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
from cli.report_server import PASSWORD_SETTING, PROXIES_SETTING, IdentityPolicy, csrf_token
from schemas.tables import ReviewerDecision
from tasks.store.accounts import add_account
from tasks.store.persist import dispose_engines, get_engine

pytestmark = pytest.mark.usefixtures("prefect_harness")

ROOT = Path(__file__).resolve().parents[1]

#: The module's reviewer accounts and their passwords.
PASSWORDS = {
    "Alice Example": "alice's long passphrase",
    "Bob": "bob's long passphrase",
    "Carol": "carol's long passphrase",
}


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
    with Session(get_engine(db)) as session:
        for name, password in PASSWORDS.items():
            add_account(session, name, password)
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
    match = re.search(r'name=["\']csrf["\'] value=["\']([0-9a-f]{64})["\']', page)
    assert match, "the page carries a CSRF token in its forms"
    return match.group(1)


def login(client: httpx.Client, name: str, password: str | None = None) -> httpx.Response:
    """Log ``client`` in through the login form (``password``: the account's, from :data:`PASSWORDS`)."""
    form = client.get("/login")
    assert form.status_code == 200
    return client.post(
        "/login",
        data=dict(name=name, password=password if password is not None else PASSWORDS[name], csrf=token_of(form.text)),
    )


@contextlib.contextmanager
def logged_in(base: str, name: str) -> Iterator[httpx.Client]:
    """An HTTP client logged in as ``name``."""
    with httpx.Client(base_url=base, timeout=30) as client:
        answer = login(client, name)
        assert answer.status_code == 303, answer.text
        yield client


def findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for d in report["documents"] for f in d["findings"]]


def test_a_reviewer_approves_a_finding_in_the_browser_and_sees_it_after_reload(browser, run, served, tmp_path):
    finding = next(f for f in findings(run["report"]) if f["verdict"] != "verified")
    before = count(run["db"])
    page = browser.new_page(viewport={"width": 1300, "height": 1400})
    page.goto(f"{served}/report.html")
    assert "/login" in page.url  # accounts exist: a reviewer logs in first
    page.fill("#name", "alice example")  # the name in any case
    page.fill("#password", PASSWORDS["Alice Example"])
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url.endswith("/report.html")
    assert "Deciding as Alice Example" in page.locator(".dr-bar").inner_text()
    row = page.locator(f"#f-{finding['id']}")
    assert f"docreview decide {finding['id']} approve|reject" in row.inner_text()  # the static report's hint stays
    form = row.locator("form.dr-decide")
    assert form.locator("input[name=reviewer]").count() == 0  # who decides is the login, never typed
    form.locator("input[name=note]").fill("clause read in full")
    with page.expect_navigation():
        form.locator("button[value=approve]").click()
    assert page.url.endswith(f"/report.html#f-{finding['id']}")
    page.reload()
    row = page.locator(f"#f-{finding['id']}")
    text = row.inner_text()
    assert "Reviewer: approved by Alice Example (" in text and "UTC) — clause read in full" in text
    assert f"docreview decide {finding['id']}" not in text  # decided: the hint gave way to the decision
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
    assert rows[-1].reviewer == "Alice Example"  # the account's name as added
    assert rows[-1].decided_at is not None
    # The static report on disk is untouched: the server adds the controls to the page it serves.
    assert "dr-decide" not in (run["out"] / "report.html").read_text()


def test_the_page_runs_no_script_and_links_each_finding_to_its_source(run, served):
    with logged_in(served, "Bob") as client:
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
    form = dict(id=str(finding["id"]), decision="reject", back="/report.html")
    with logged_in(served, "Carol") as client:
        token = token_of(client.get("/report.html").text)  # the client holds its login session's cookie
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
    with logged_in(base, "Bob") as client:
        token = token_of(client.get("/report.html").text)
        session = client.cookies.get("docreview_session")
    first.close()
    before = count(run["db"])
    second = _serve(run["out"], run["db"])
    base = next(second)
    with httpx.Client(base_url=base, timeout=30, cookies={"docreview_session": session or ""}) as client:
        form = dict(id=str(finding["id"]), decision="approve", csrf=token)
        answer = client.post("/decide", data=form)
        assert answer.status_code == 403 and "restarted" in answer.text
    second.close()
    assert count(run["db"]) == before


def test_an_unknown_or_malformed_id_is_refused_and_nothing_is_written(run, served):
    before = count(run["db"])
    with logged_in(served, "Alice Example") as client:
        token = token_of(client.get("/report.html").text)
        base = dict(decision="approve", csrf=token)
        unknown = client.post("/decide", data={**base, "id": "999999"})
        assert unknown.status_code == 404 and "no finding 999999" in unknown.text
        absent = client.post("/decide", data={**base, "id": "A999999"})
        assert absent.status_code == 404 and "no absence A999999" in absent.text
        real = str(findings(run["report"])[0]["id"])
        mixed = client.post("/decide", data={**base, "id": f"{real},999999"})  # all or nothing
        assert mixed.status_code == 404
        for bad in ("", "12; DROP TABLE", "../3"):
            assert client.post("/decide", data={**base, "id": bad}).status_code == 400
        assert client.post("/decide", data={**base, "id": real, "decision": "maybe"}).status_code == 400
        nameless = client.post("/decide", data={**base, "id": real, "decision": "reclassify"})
        assert nameless.status_code == 400 and "name the category" in nameless.text
        unknown_category = client.post(
            "/decide", data={**base, "id": real, "decision": "reclassify", "category": "Foo"}
        )
        assert unknown_category.status_code == 400 and "not a category" in unknown_category.text
    assert count(run["db"]) == before
    with logged_in(served, "Alice Example") as client:  # a reviewer name in the form is ignored: the login decides
        token = token_of(client.get("/report.html").text)
        typed = client.post("/decide", data=dict(id=real, decision="reject", csrf=token, reviewer="Mallory"))
        assert typed.status_code == 303
    assert decisions(run["db"])[-1].reviewer == "Alice Example"
    before += 1
    assert count(run["db"]) == before


def test_two_reviewers_deciding_one_finding_at_once_are_both_kept_and_the_last_wins(run, served):
    from cli.queue import gold_set

    finding = findings(run["report"])[-1]
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def decide(reviewer: str, decision: str) -> None:
        with logged_in(served, reviewer) as client:
            token = token_of(client.get("/report.html").text)
            barrier.wait()
            form = dict(id=str(finding["id"]), decision=decision, csrf=token)
            statuses.append(client.post("/decide", data=form).status_code)

    threads = [threading.Thread(target=decide, args=a) for a in (("Alice Example", "approve"), ("Bob", "reject"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [303, 303]
    item = next(i for i in gold_set(run["db"]) if i["id"] == str(finding["id"]))
    names = [h["reviewer"] for h in item["history"]]
    assert sorted(names[-2:]) == ["Alice Example", "Bob"] and [h["seq"] for h in item["history"]][-2:] == [
        len(names) - 1,
        len(names),
    ]
    assert item["decision"]["reviewer"] == names[-1]  # the later one is the decision
    with logged_in(served, "Carol") as client:
        page = client.get("/report.html").text
    row = page[page.index(f'<tr id="f-{finding["id"]}"') :]
    shown = {"approve": "approved", "reject": "rejected"}[item["decision"]["decision"]]
    assert f"{shown}</b> by {names[-1]}" in row[: row.index("</tr>")]


def test_absences_and_playbook_results_are_decided_from_the_page(run, served):
    from cli.queue import gold_set

    docs = run["report"]["documents"]
    absence = next(a for d in docs for a in d["absences"])
    result = next(r for d in docs for r in d.get("playbook") or [] if r["finding_ids"])
    with logged_in(served, "Carol") as client:
        page = client.get("/report.html").text
        assert f'aria-label="decide absence {absence["id"]}"' in page
        assert f'aria-label="decide playbook rule {result["rule"]}"' in page
        token = token_of(page)
        base = dict(decision="reject", csrf=token, back="/report.html")
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
    with logged_in(served, "Bob") as client:
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
    with logged_in(base, "Bob") as client:
        page = client.get("/report.html")
        assert page.status_code == 200 and "dr-decide" not in page.text
    gen.close()


def _accounts_copy(run: dict[str, Any], tmp_path: Path) -> str:
    """The run's database copied for one test, with a fourth account, Dave, disabled."""
    path = tmp_path / "accounts.db"
    shutil.copyfile(run["db"].removeprefix("sqlite:///"), path)
    db = f"sqlite:///{path}"
    with Session(get_engine(db)) as session:
        add_account(session, "Dave", "dave's long passphrase")
    assert CliRunner().invoke(app, ["users", "disable", "Dave", "--db", db]).exit_code == 0
    return db


def _answer(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    """A response's status, headers (but its ``Date``) and body: what a browser or a script sees."""
    return response.status_code, {k: v for k, v in response.headers.items() if k.lower() != "date"}, response.content


def test_an_unknown_name_a_wrong_password_a_locked_and_a_disabled_account_get_one_answer_and_nothing_is_written(
    run, tmp_path, argon2_verifications, caplog
):
    """OWASP Authentication Cheat Sheet ("Authentication and Error Messages", "Account lockout"):
    the four refusals are the same bytes (status, headers, page) and cost one Argon2id verification
    each; only the server's log (for the operator) says which it was, never with the password."""
    import logging

    from schemas.tables import ReviewerAccount

    verified = argon2_verifications
    db = _accounts_copy(run, tmp_path)
    caplog.set_level(logging.INFO, logger="docreview.report")
    gen = _serve(run["out"], db, identity=IdentityPolicy(attempts=3, lockout_s=600))
    base = next(gen)
    before = count(db)
    answers: dict[str, tuple[int, dict[str, str], bytes]] = {}
    attempts = [
        ("unknown name", "Mallory", "a long guessed password"),
        ("wrong password 1", "Carol", "not carol's password 1"),
        ("wrong password 2", "Carol", "not carol's password 2"),
        ("wrong password 3 (locks)", "Carol", "not carol's password 3"),
        ("locked, right password", "Carol", PASSWORDS["Carol"]),
        ("locked, wrong password", "Carol", "not carol's password 4"),
        ("disabled, right password", "Dave", "dave's long passphrase"),
        ("disabled, wrong password", "Dave", "not dave's password"),
    ]
    with httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/report.html").status_code == 303  # no page without a login
        for what, name, password in attempts:
            token = token_of(client.get("/login?next=%2Freport.html").text)
            verified.clear()
            answer = client.post("/login", data=dict(name=name, password=password, csrf=token, next="/report.html"))
            assert len(verified) == 1, (what, verified)  # one Argon2id verification, whatever the case
            answers[what] = _answer(answer)
        assert "docreview_session" in client.cookies  # only the anonymous session of the login form
        assert client.get("/report.html").headers["location"].startswith("/login")
        token = token_of(client.get("/login").text)
        refused = client.post(
            "/decide", data=dict(id=str(findings(run["report"])[0]["id"]), decision="approve", csrf=token)
        )
        assert refused.status_code == 401 and "Log in to decide: nothing recorded" in refused.text
    gen.close()
    first = answers["unknown name"]
    assert first[0] == 401 and b"Name or password not recognised, or the account cannot sign in now" in first[2]
    for what, answer in answers.items():
        assert answer == first, what  # byte for byte: status, headers and page
    assert b"locked" not in first[2] and b"disabled" not in first[2]
    assert count(db) == before  # nothing written
    with Session(get_engine(db)) as session:
        assert session.exec(select(func.count()).select_from(ReviewerAccount)).one() == len(PASSWORDS) + 1
    # The operator's log names each reason, and the lock; never a password.
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "docreview.report"]
    text = "\n".join(m for _, m in lines)
    assert "login refused for 'Mallory': unknown name" in text
    assert "login refused for 'Carol': wrong password (1 of 3 failed logins)" in text
    assert "login refused for 'Carol': locked until" in text and "(the password was right)" in text
    assert "login refused for 'Dave': disabled (the password was right)" in text
    assert "login refused for 'Dave': disabled (the password was wrong)" in text
    locks = [m for level, m in lines if "account 'Carol' locked until" in m]
    assert len(locks) == 1 and "after 3 failed logins" in locks[0] and "docreview users unlock" in locks[0]
    assert ("WARNING", locks[0]) in lines
    assert all(level in ("INFO", "WARNING") for level, _ in lines)
    for _, _, password in attempts:
        assert password not in text
    # docreview users list shows the lock and the failures that caused it.
    listed = CliRunner().invoke(app, ["users", "list", "--db", db])
    carol = next(x for x in listed.output.splitlines() if "Carol" in x)
    assert "locked" in carol and "after 3 failed logins" in carol, listed.output
    dave = next(x for x in listed.output.splitlines() if "Dave" in x)
    assert "disabled" in dave
    dispose_engines()


def test_a_locked_account_signs_in_again_after_unlock_or_after_the_lockout_time(run, tmp_path):
    import time

    db = _accounts_copy(run, tmp_path)
    now = [time.time()]
    gen = _serve(run["out"], db, identity=IdentityPolicy(attempts=3, lockout_s=600), clock=lambda: now[0])
    base = next(gen)
    try:
        for ending in ("unlock", "time"):
            with httpx.Client(base_url=base, timeout=30) as client:
                for i in range(3):
                    assert login(client, "Carol", f"not carol's password {i}").status_code == 401
                assert login(client, "Carol").status_code == 401  # the right password, while locked
                now[0] += 300
                assert login(client, "Carol").status_code == 401  # still locked halfway
                if ending == "unlock":
                    assert CliRunner().invoke(app, ["users", "unlock", "Carol", "--db", db]).exit_code == 0
                else:
                    now[0] += 301  # past the lockout (the server's clock)
            with httpx.Client(base_url=base, timeout=30) as client:
                assert login(client, "Carol").status_code == 303, ending
                assert client.get("/report.html").status_code == 200
    finally:
        gen.close()
        dispose_engines()


def test_an_expired_session_is_refused_and_logout_ends_one(run):
    now = [1_000_000.0]
    gen = _serve(run["out"], run["db"], identity=IdentityPolicy(idle_s=60, max_s=3600), clock=lambda: now[0])
    base = next(gen)
    finding = str(findings(run["report"])[0]["id"])
    before = count(run["db"])
    with logged_in(base, "Bob") as client:
        token = token_of(client.get("/report.html").text)
        now[0] += 61  # a minute without a request
        late = client.post("/decide", data=dict(id=finding, decision="reject", csrf=token))
        assert late.status_code == 401 and "Your session ended" in late.text and "Nothing recorded" in late.text
        again = client.get("/report.html")
        assert again.status_code == 303 and again.headers["location"] == "/login?next=%2Freport.html"
        assert login(client, "Bob").status_code == 303
        for _ in range(70):  # in use, but past the absolute lifetime
            now[0] += 59
            client.get("/runs/")
        assert client.get("/report.html").status_code == 303
        assert login(client, "Bob").status_code == 303
        token = token_of(client.get("/report.html").text)
        assert client.post("/logout", data={"csrf": token}).status_code == 303
        assert client.get("/report.html").status_code == 303  # logged out
        assert client.post("/decide", data=dict(id=finding, decision="reject", csrf=token)).status_code == 401
    gen.close()
    assert count(run["db"]) == before


def test_a_trusted_proxy_names_the_reviewer_and_a_forged_header_is_refused(run):
    import ipaddress

    finding = str(findings(run["report"])[1]["id"])
    before = count(run["db"])
    elsewhere = IdentityPolicy(proxies=(ipaddress.ip_network("10.9.9.9/32"),))
    gen = _serve(run["out"], run["db"], identity=elsewhere)
    base = next(gen)
    with httpx.Client(base_url=base, timeout=30, headers={"X-Forwarded-User": "Eve"}) as client:
        page = client.get("/report.html")  # 127.0.0.1 is not the proxy: the header is a forgery
        assert page.status_code == 403 and "does not come from a trusted proxy" in page.text
        token = csrf_token(b"guess", "s" * 43)
        assert client.post("/decide", data=dict(id=finding, decision="approve", csrf=token)).status_code == 403
    with logged_in(base, "Bob") as client:  # a login with a forged header beside it is refused too
        token = token_of(client.get("/report.html").text)
        forged = client.post(
            "/decide", data=dict(id=finding, decision="approve", csrf=token), headers={"X-Forwarded-User": "Eve"}
        )
        assert forged.status_code == 403 and "nothing recorded" in forged.text
    gen.close()
    assert count(run["db"]) == before
    trusted = IdentityPolicy(proxies=(ipaddress.ip_network("127.0.0.1/32"),), header="X-Remote-User")
    gen = _serve(run["out"], run["db"], identity=trusted)
    base = next(gen)
    with httpx.Client(base_url=base, timeout=30, headers={"X-Remote-User": "dana.proxy"}) as client:
        page = client.get("/report.html")
        assert page.status_code == 200 and "Deciding as <b>dana.proxy</b>" in page.text and "Log out" not in page.text
        done = client.post("/decide", data=dict(id=finding, decision="approve", csrf=token_of(page.text)))
        assert done.status_code == 303
    gen.close()
    assert decisions(run["db"])[-1].reviewer == "dana.proxy"


def test_a_finding_is_reclassified_from_the_page(run, served):
    finding = next(f for f in findings(run["report"]) if f["clause_type"] == "expiration_date")
    with logged_in(served, "Alice Example") as client:
        page = client.get("/report.html").text
        assert 'list="dr-cuad"' in page and '<option value="Non-Compete">' in page
        done = client.post(
            "/decide",
            data=dict(id=str(finding["id"]), decision="reclassify", category="Renewal Term", csrf=token_of(page)),
        )
        assert done.status_code == 303
        page = client.get("/report.html").text
    row = page[page.index(f'<tr id="f-{finding["id"]}"') :]
    row = row[: row.index("</tr>")]
    assert "Renewal Term<br><small>claimed as Expiration Date</small>" in row
    assert "reclassified</b> as Renewal Term by Alice Example" in row
    last = decisions(run["db"])[-1]
    assert (last.decision, last.category, last.reviewer) == ("reclassify", "renewal_term", "Alice Example")


def test_without_accounts_the_loopback_server_is_read_only(run, tmp_path):
    """A database with no reviewer account (the run's copy without them): pages are shown, no forms,
    and a decision is refused."""
    import sqlite3

    path = tmp_path / "no-accounts.db"
    shutil.copyfile(run["db"].removeprefix("sqlite:///"), path)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM reviewer_accounts")
    gen = _serve(run["out"], f"sqlite:///{path}")
    base = next(gen)
    with httpx.Client(base_url=base, timeout=30) as client:
        page = client.get("/report.html")
        assert (
            page.status_code == 200 and 'class="dr-decide"' not in page.text and "docreview users add NAME" in page.text
        )
        token = token_of(client.get("/login").text)
        answer = client.post(
            "/decide", data=dict(id=str(findings(run["report"])[0]["id"]), decision="approve", csrf=token)
        )
        assert answer.status_code == 401
    gen.close()


def test_binding_beyond_loopback_needs_accounts_or_a_proxy_and_the_old_password_is_refused(run, tmp_path, monkeypatch):
    monkeypatch.delenv(PASSWORD_SETTING, raising=False)
    monkeypatch.delenv(PROXIES_SETTING, raising=False)
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    get_engine(empty)
    dispose_engines()
    result = CliRunner().invoke(app, ["report", "serve", str(run["out"]), "--host", "0.0.0.0", "--db", empty])
    assert result.exit_code == 2
    assert "docreview users add NAME" in result.output and PROXIES_SETTING in result.output
    assert "Traceback" not in result.output
    monkeypatch.setenv(PROXIES_SETTING, "10.0.0.5, not-an-address")
    result = CliRunner().invoke(app, ["report", "serve", str(run["out"]), "--db", run["db"]])
    assert result.exit_code == 2 and PROXIES_SETTING in result.output and "not-an-address" in result.output
    monkeypatch.delenv(PROXIES_SETTING)
    monkeypatch.setenv(PASSWORD_SETTING, "s3cret-value")
    result = CliRunner().invoke(app, ["report", "serve", str(run["out"]), "--db", run["db"]])
    assert result.exit_code == 2 and "no longer used" in result.output and "s3cret-value" not in result.output


def test_two_reviewers_in_two_browsers_decide_one_finding_the_later_wins_and_a_tampered_row_fails_the_audit(
    browser, run, tmp_path
):
    """Alice approves a finding in her browser, Bob rejects it in his; the page shows Bob's decision,
    `docreview audit show` lists both with who and when, and once someone hand-edits Alice's row in
    the database `docreview audit verify` fails naming it."""
    import sqlite3

    path = tmp_path / "audit.db"
    shutil.copyfile(run["db"].removeprefix("sqlite:///"), path)  # this test's own copy: it tampers with it
    db = f"sqlite:///{path}"
    finding = next(f for f in findings(run["report"]) if f["clause_type"] == "uncapped_liability")
    fid = str(finding["id"])
    gen = _serve(run["out"], db)
    base = next(gen)
    try:
        for name, button in (("Alice Example", "approve"), ("Bob", "reject")):
            context = browser.new_context(viewport={"width": 1300, "height": 1400})  # a browser of their own
            page = context.new_page()
            page.goto(f"{base}/report.html")
            page.fill("#name", name)
            page.fill("#password", PASSWORDS[name])
            with page.expect_navigation():
                page.click("button[type=submit]")
            form = page.locator(f"#f-{fid} form.dr-decide")
            form.locator("input[name=note]").fill(f"{name} read it")
            with page.expect_navigation():
                form.locator(f"button[value={button}]").click()
            page.reload()
            text = page.locator(f"#f-{fid}").inner_text()
            verb = "approved" if button == "approve" else "rejected"
            assert f"Reviewer: {verb} by {name} (" in text
            context.close()
    finally:
        gen.close()
    dispose_engines()
    runner = CliRunner()
    shown = runner.invoke(app, ["audit", "show", fid, "--db", db, "--json"])
    assert shown.exit_code == 0, shown.output
    record = json.loads(shown.output)
    assert [(h["reviewer"], h["decision"]) for h in record["history"]][-2:] == [
        ("Alice Example", "approve"),
        ("Bob", "reject"),
    ]
    assert record["decision"]["reviewer"] == "Bob" and record["decision"]["decision"] == "reject"  # the later wins
    assert runner.invoke(app, ["audit", "verify", "--db", db]).exit_code == 0
    alice = record["history"][-2]["id"]
    with sqlite3.connect(path) as conn:  # someone with the database file rewrites who approved
        conn.execute("DROP TRIGGER reviewer_decisions_no_update")
        conn.execute("UPDATE reviewer_decisions SET reviewer = 'Carol' WHERE id = ?", (alice,))
    dispose_engines()
    failed = runner.invoke(app, ["audit", "verify", "--db", db])
    assert failed.exit_code == 1 and f"Decision chain broken at decision #{alice}" in failed.output
    dispose_engines()


def _deviation_table(page: str) -> str:
    """The "Deviations from the playbook" table of Needs attention ('' when there is none)."""
    if '<table class="deviations">' not in page:
        return ""
    return page.split('<table class="deviations">', 1)[1].split("</table>", 1)[0]


def _undecided_table(page: str) -> str:
    if '<table class="undecided">' not in page:
        return ""
    return page.split('<table class="undecided">', 1)[1].split("</table>", 1)[0]


def test_two_reviewers_decisions_move_deviations_rules_and_exports_at_once_as_the_next_run_would(tmp_path):
    """Over HTTP Alice rejects the only finding a high-severity deviation rests on and Bob approves the finding a
    rule could not decide on: after a reload the deviation has left Needs attention, the rule is decided, the
    XLSX Deviations sheet agrees, and the statuses and reasons equal the next run's report."""
    from openpyxl import load_workbook

    from docreview_testing.samples import generate_samples
    from flows.review import review_documents
    from tasks.observe.report import build_report

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=4)
    db = f"sqlite:///{tmp_path / 'review.db'}"
    playbook = str(ROOT / "deployments" / "playbook.yaml")
    review_documents(
        source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db, backend="rules", playbook=playbook
    )
    with Session(get_engine(db)) as session:
        for name, password in PASSWORDS.items():
            add_account(session, name, password)
    dispose_engines()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    run_id = report["run"]["id"]
    results = [(d, r) for d in report["documents"] for r in d["playbook"]]
    doc, deviation = next(
        (d, r) for d, r in results if r["status"] == "deviation" and r["expect"] == "absent" and r["finding_ids"]
    )
    other, undecided = next((d, r) for d, r in results if r["status"] == "unknown" and r["finding_ids"])
    gen = _serve(tmp_path / "out", db)
    base = next(gen)
    try:
        with logged_in(base, "Alice Example") as alice, logged_in(base, "Bob") as bob:
            before = alice.get("/report.html").text
            assert deviation["rule"] in _deviation_table(before) and doc["file_name"] in _deviation_table(before)
            assert undecided["rule"] in _undecided_table(before)
            for client, ids, decision in (
                (alice, deviation["finding_ids"], "reject"),
                (bob, undecided["finding_ids"], "approve"),
            ):
                token = token_of(client.get("/report.html").text)
                form = dict(id=",".join(str(i) for i in ids), decision=decision, csrf=token, back="/report.html")
                assert client.post("/decide", data=form).status_code == 303
            after = bob.get("/report.html").text
    finally:
        gen.close()
    rows = [
        r
        for r in _deviation_table(after).split("<tr>")
        if doc["file_name"] in r and f"<td>{deviation['rule']}</td>" in r
    ]
    assert rows == []  # the rejected basis took the deviation out of Needs attention at once
    tile = re.compile(r'<div class="metric"><b>(\d+)</b><span>deviations</span>')
    assert int(tile.search(after)[1]) == int(tile.search(before)[1]) - 1  # the headline count too
    assert "did not confirm" in undecided["reason"]  # the review left it to a reviewer, and Bob confirmed it:
    assert not [
        r
        for r in _undecided_table(after).split("<tr>")
        if other["file_name"] in r and undecided["rule"] in r and "did not confirm" in r
    ]
    now = build_report(db, run_id, True)  # what the page, the exports and the portfolio read
    status = {(d["file_name"], r["rule"]): r["status"] for d in now["documents"] for r in d["playbook"]}
    assert status[(doc["file_name"], deviation["rule"])] != "deviation"
    moved = next(
        r
        for d in now["documents"]
        if d["file_name"] == other["file_name"]
        for r in d["playbook"]
        if r["rule"] == undecided["rule"]
    )
    assert "did not confirm" not in moved["reason"], moved  # judged on the approved finding now
    xlsx = tmp_path / "run.xlsx"
    res = CliRunner().invoke(app, ["export", run_id[:8], "--format", "xlsx", "--out", str(xlsx), "--db", db])
    assert res.exit_code == 0, res.output
    sheet = load_workbook(xlsx)["Deviations"]
    header = [c.value for c in sheet[1]]
    rows_of = [dict(zip(header, r)) for r in sheet.iter_rows(min_row=2, values_only=True)]
    listed = {(r["Document"], r["Rule"]) for r in rows_of if r["Status"] == "deviation"}
    assert (doc["file_name"], deviation["rule"]) not in listed
    assert listed == {k for k, v in status.items() if v == "deviation"}
    review_documents(
        source=str(inbox), out_dir=str(tmp_path / "next"), database_url=db, backend="rules", playbook=playbook
    )
    dispose_engines()
    following = json.loads((tmp_path / "next" / "report.json").read_text())
    assert {(d["file_name"], r["rule"]): r["status"] for d in following["documents"] for r in d["playbook"]} == status
    reasons = {(d["file_name"], r["rule"]): r["reason"] for d in now["documents"] for r in d["playbook"]}
    assert {(d["file_name"], r["rule"]): r["reason"] for d in following["documents"] for r in d["playbook"]} == reasons
