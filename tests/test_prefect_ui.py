"""Operators in the Prefect UI: a real ``prefect server start`` (session fixture ``prefect_server``)
serves the UI; headless Chromium (the Debian ``chromium`` package driven by Playwright with
``executable_path``, as in ``tests/test_report_browser.py``) opens a docreview flow run, its
Artifacts tab and the run-summary artifact, and saves a screenshot in the test's tmp folder.
Skips, saying why, only when no Chromium binary is installed.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from docreview_testing.samples import generate_samples
from tasks.observe.report import ATTENTION_ARTIFACT_KEY, REPORT_LINK_ARTIFACT_KEY, SUMMARY_ARTIFACT_KEY

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_flow_run_page_shows_the_run_summary_artifact(browser, prefect_server, tmp_path):
    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=2)
    db = tmp_path / "results.db"
    env = {**os.environ, "PREFECT_API_URL": prefect_server["api_url"], "PREFECT_HOME": str(tmp_path / "prefect-client")}
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "docreview"),
            "review",
            str(inbox),
            "--backend",
            "rules",
            "--db",
            f"sqlite:///{db}",
            "--out",
            str(tmp_path / "out"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(db) as conn:
        ((flow_run_id, run_id),) = conn.execute("select flow_run_id, id from runs").fetchall()

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(f"{prefect_server['url']}/runs/flow-run/{flow_run_id}")
    page.get_by_text("review-inbox-", exact=False).first.wait_for()  # the run's name: source and date
    for tag in ("docreview", "backend:rules", "trigger:manual"):
        page.get_by_text(tag, exact=True).first.wait_for()
    page.get_by_text("Artifacts", exact=True).first.click()
    for key in (SUMMARY_ARTIFACT_KEY, ATTENTION_ARTIFACT_KEY, REPORT_LINK_ARTIFACT_KEY):
        page.get_by_text(key, exact=True).first.wait_for()
    page.get_by_text(SUMMARY_ARTIFACT_KEY, exact=True).first.click()
    page.get_by_text(f"docreview run {run_id[:8]}").first.wait_for()  # the rendered markdown heading
    page.get_by_text("documents_reviewed", exact=True).first.wait_for()
    assert "/artifacts/artifact/" in page.url or "tab=Artifacts" in page.url
    shot = tmp_path / "prefect-ui-run-summary.png"
    page.screenshot(path=str(shot), full_page=True)
    page.close()
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


def test_one_documents_task_runs_are_found_by_its_file_name(browser, prefect_server, tmp_path):
    """A 20-document run: in the flow run's Task Runs tab, searching a file name lists that
    document's steps (fingerprint, claim, extract, chunk, route, review of its chunks, fact-check,
    save, …) and nothing of the other documents."""
    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=20)
    db = tmp_path / "results.db"
    env = {**os.environ, "PREFECT_API_URL": prefect_server["api_url"], "PREFECT_HOME": str(tmp_path / "prefect-client")}
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "docreview"),
            "review",
            str(inbox),
            "--backend",
            "rules",
            "--db",
            f"sqlite:///{db}",
            "--out",
            str(tmp_path / "out"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(db) as conn:
        ((flow_run_id,),) = conn.execute("select flow_run_id from runs").fetchall()
    target = sorted(p.name for p in inbox.glob("*.pdf"))[6]

    expected = {
        "fingerprint",
        "claim",
        "extract",
        "chunk",
        "route",
        "review",
        "fact-check",
        "check-support-in-document",
        "check-consistency",
        "save-findings",
        "mark-reviewed",
        "save-outcome",
    }
    deadline = time.monotonic() + 180  # task runs reach the server through its event stream: a hang guard
    while True:
        body = {"flow_runs": {"id": {"any_": [flow_run_id]}}, "task_runs": {"name": {"like_": target}}, "limit": 200}
        names = [
            t["name"] for t in httpx.post(f"{prefect_server['api_url']}/task_runs/filter", json=body, timeout=30).json()
        ]
        stages = {n.split(" · ")[0] for n in names}
        if expected <= stages or time.monotonic() > deadline:  # the last steps' events arrive last
            break
        time.sleep(1)
    assert expected <= stages, sorted(names)
    assert all(target in n for n in names)

    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.set_default_timeout(60_000)
    page.goto(f"{prefect_server['url']}/runs/flow-run/{flow_run_id}")
    page.get_by_text("Task Runs", exact=True).first.click()
    search = page.get_by_placeholder("Search by run name").first
    search.wait_for()
    search.fill(target)
    page.get_by_text(f"extract · {target}", exact=True).first.wait_for()
    page.get_by_text(f"fingerprint · {target}", exact=True).first.wait_for()
    other = sorted(p.name for p in inbox.glob("*.pdf"))[7]
    assert page.get_by_text(f"extract · {other}", exact=True).count() == 0
    shot = tmp_path / "prefect-ui-one-document.png"
    page.screenshot(path=str(shot), full_page=True)
    page.close()
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


def test_runs_with_a_failed_document_say_so_in_the_prefect_ui(browser, prefect_server, tmp_path):
    """Two runs over a folder with a broken PDF: two distinct run names, two kept reports, and
    each flow-run page shows the state "Completed with failures", not a plain "Completed"."""
    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=1)
    (inbox / "broken.pdf").write_bytes(b"this is not a PDF")
    db = tmp_path / "results.db"
    env = {**os.environ, "PREFECT_API_URL": prefect_server["api_url"], "PREFECT_HOME": str(tmp_path / "prefect-client")}
    for _ in range(2):
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "docreview"),
                "review",
                str(inbox),
                "--backend",
                "rules",
                "--db",
                f"sqlite:///{db}",
                "--out",
                str(tmp_path / "out"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(db) as conn:
        runs = conn.execute("select id, flow_run_id from runs order by started_at").fetchall()
    assert len(runs) == 2
    assert all((tmp_path / "out" / "runs" / run_id / "report.html").is_file() for run_id, _ in runs)

    names = []
    for _, flow_run_id in runs:
        flow_run = httpx.get(f"{prefect_server['api_url']}/flow_runs/{flow_run_id}", timeout=30).json()
        assert flow_run["state"]["name"] == "Completed with failures", flow_run["state"]
        assert flow_run["state"]["message"] == "1 of 2 failed"
        names.append(flow_run["name"])
    assert len(set(names)) == 2 and all(n.startswith("review-inbox-") for n in names)

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(60_000)
    page.goto(f"{prefect_server['url']}/runs/flow-run/{runs[-1][1]}")
    page.get_by_text(names[-1], exact=False).first.wait_for()
    page.get_by_text("Completed with failures", exact=False).first.wait_for()
    shot = tmp_path / "prefect-ui-completed-with-failures.png"
    page.screenshot(path=str(shot), full_page=False)
    page.close()
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
