"""The HTML report in a real browser: document text and file names carrying markup render as text.

Uses the Debian ``chromium`` package (``apt-get install -y chromium chromium-driver``; ``.ci/run``
installs it) driven by Playwright's Python client with ``executable_path``; Playwright's own
browser downloads are never used. Skips, saying why, only when no Chromium binary is installed.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tasks.store.persist import dispose_engines

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_markup_in_text_and_file_names_renders_as_text(browser, tmp_path, db_url):
    from docreview_testing.hostile import IMG_MARKUP, MARKUP_FILE_NAME, SCRIPT_MARKUP, generate_hostile_corpus
    from flows.review import review_documents

    corpus = tmp_path / "corpus"
    docs = generate_hostile_corpus(corpus)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    markup_docs = [d for d in docs if d.kind == "markup"]
    assert len(markup_docs) == 2
    for d in markup_docs + [next(d for d in docs if d.file_name == "inject-role-markers.pdf")]:
        shutil.copy(corpus / d.file_name, inbox / d.file_name)
    try:
        review_documents(source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules")
    finally:
        dispose_engines()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    evidence = " ".join(f["evidence"] for d in report["documents"] for f in d["findings"])
    assert "<script>" in evidence, "the markup must reach the report as document text for this test to mean anything"

    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto((tmp_path / "out" / "report.html").resolve().as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # give any onerror/onload handler time to fire

    assert page.evaluate("() => window.__pwned") is None
    assert dialogs == []
    assert page.evaluate("() => document.scripts.length") == 0
    # Per-document sections hold only text: no element built from document-derived markup.
    assert (
        page.evaluate(
            "() => document.querySelectorAll("
            "'section.doc script, section.doc img, section.doc svg, section.doc iframe, "
            "section.doc [onerror], section.doc [onload]').length"
        )
        == 0
    )
    text = page.inner_text("main")
    assert SCRIPT_MARKUP in text
    assert IMG_MARKUP in text
    assert MARKUP_FILE_NAME in text
    assert "markup-<svg onload=window.__pwned=3>.pdf" in text
    assert "<|im_start|>" in text  # flagged excerpt shown as text
    # Nothing fetched from document-derived URLs (an <img src=x> would request .../x).
    assert [u for u in requests if not u.startswith(("file://", "data:"))] == []
    assert not [u for u in requests if u.rstrip("/").endswith("/x")]
    page.close()


def test_the_probe_detects_markup_that_runs(browser):
    """Control: the same markup, unescaped, does run in this browser (so the test above can fail)."""
    from docreview_testing.hostile import IMG_MARKUP, SCRIPT_MARKUP

    page = browser.new_page()
    page.set_content(f"<main><p>{SCRIPT_MARKUP}</p></main>")
    assert page.evaluate("() => window.__pwned") == 1
    page.set_content(f"<main><p>{IMG_MARKUP}</p></main>")
    page.wait_for_function("() => window.__pwned === 2", timeout=5000)
    page.close()


def test_the_report_opens_on_what_needs_attention(browser, tmp_path, db_url):
    """A run with a failed document and a decided finding: the page starts with the triage section
    (the failed document and its reason, findings to look at with their ids, clauses not found),
    every finding shows its id and the decide command, and a decision shows on its finding."""
    from typer.testing import CliRunner

    from cli.app import app
    from docreview_testing.samples import generate_samples
    from flows.review import review_documents

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=2)
    (inbox / "broken.pdf").write_bytes(b"not a pdf at all")
    first = review_documents(source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    finding = next(f for d in report["documents"] for f in d["findings"] if f["risk"] == "high")
    decided = CliRunner().invoke(
        app, ["decide", str(finding["id"]), "approve", "--note", "checked by hand", "--db", db_url]
    )
    assert decided.exit_code == 0, decided.output
    second = review_documents(source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="rules")
    dispose_engines()
    assert (tmp_path / "out" / "runs" / first["run_id"] / "report.html").is_file()  # the first run's report is kept
    assert (tmp_path / "out" / "runs" / second["run_id"] / "report.html").is_file()

    page = browser.new_page(viewport={"width": 1300, "height": 1400})
    page.goto((tmp_path / "out" / "report.html").resolve().as_uri())
    triage = page.locator("section.triage")
    assert triage.locator("h2").inner_text() == "Needs attention"
    first_section = page.evaluate("() => document.querySelector('main > section').className")
    assert first_section == "triage"  # before the plots and the documents
    text = triage.inner_text()
    assert "broken.pdf" in text and "not a supported document" in text
    assert "Findings to look at" in text
    # the samples state a liability cap and a governing law: what is not found (exclusivity, a non-compete)
    # is listed for information, not as a missing high-risk clause (issue 33)
    assert "Missing high-risk clauses" not in text and "Not found, for information" in text
    assert str(finding["id"]) not in [c.strip() for c in triage.locator("td code").all_inner_texts()]  # decided
    row = page.locator(f"#f-{finding['id']}")
    assert "Reviewer: approved" in row.inner_text() and "checked by hand" in row.inner_text()
    other = next(f for d in report["documents"] for f in d["findings"] if f["id"] != finding["id"])
    assert f"docreview decide {other['id']} approve|reject" in page.locator(f"#f-{other['id']}").inner_text()
    shot = tmp_path / "report-triage.png"
    page.screenshot(path=str(shot), full_page=False)
    page.close()
    assert shot.stat().st_size > 10_000
