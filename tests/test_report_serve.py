"""``docreview report serve``: the kept reports over HTTP, nothing outside the report folder."""

from __future__ import annotations

import threading

import httpx
from typer.testing import CliRunner

from cli.app import app
from cli.report import make_report_server


def test_the_latest_and_the_kept_reports_are_served_and_nothing_else(tmp_path):
    out = tmp_path / "out"
    (out / "runs" / "run-1").mkdir(parents=True)
    (out / "report.html").write_text("<h1>latest</h1>")
    (out / "runs" / "run-1" / "report.html").write_text("<h1>run 1</h1>")
    (out / "runs" / "run-1" / "report.json").write_text(
        '{"run": {"started_at": "2026-12-01T10:00:00+00:00", "source": "s3://b/in/", '
        '"metrics": {"documents_reviewed": 3, "documents_deferred": 1, "documents_failed": 0}}}'
    )
    (tmp_path / "secret.txt").write_text("outside the report folder")
    (out / "leak.txt").symlink_to(tmp_path / "secret.txt")  # a link pointing out of the folder
    server = make_report_server(out, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with httpx.Client(base_url=base, timeout=10) as client:
            first = client.get("/")
            assert first.status_code == 302 and first.headers["location"] == "/report.html"
            assert client.get("/", follow_redirects=True).text == "<h1>latest</h1>"
            kept = client.get("/runs/run-1/report.html")
            assert kept.status_code == 200 and kept.text == "<h1>run 1</h1>"
            runs = client.get("/runs/").text  # the kept runs, with what each did
            assert 'href="/runs/run-1/report.html"' in runs and "2026-12-01 10:00:00" in runs and "3 / 1 / 0" in runs
            assert client.head("/").status_code == 302
            assert client.get("/leak.txt").status_code == 404
            assert client.get("/../secret.txt").status_code == 404
            assert client.get("/%2e%2e/secret.txt").status_code == 404
            assert client.post("/report.html").status_code == 501
    finally:
        server.shutdown()
        server.server_close()


def test_a_folder_without_a_report_is_exit_2():
    result = CliRunner().invoke(app, ["report", "serve", "/nonexistent-report-folder"])
    assert result.exit_code == 2
    assert "no report in" in result.output
