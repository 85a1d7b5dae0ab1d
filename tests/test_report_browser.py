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
    from flows.review import review_documents
    from docreview_testing.hostile import IMG_MARKUP, MARKUP_FILE_NAME, SCRIPT_MARKUP, generate_hostile_corpus

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
    assert page.evaluate("() => document.querySelectorAll("
                         "'section.doc script, section.doc img, section.doc svg, section.doc iframe, "
                         "section.doc [onerror], section.doc [onload]').length") == 0
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
