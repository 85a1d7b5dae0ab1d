"""The README's report screenshot, made from a report ``make run`` wrote: ``make screenshot`` runs ``make run``,
then ``python -m docreview_testing.screenshot out/report.html docs/images/report.png``.

The report is opened in headless Debian Chromium through Playwright (the dev extra; ``apt-get install chromium``),
at :data:`VIEWPORT`, and the first screen is saved as PNG: the run's counts, then "Needs attention". The caption
the README gives the image (:func:`caption`) states the documents and findings the report shows, so the picture
and the words around it come from the same run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

#: Width and height of the browser window, CSS pixels (the PNG is this size).
VIEWPORT = {"width": 1280, "height": 900}

#: Chromium's flags for a headless run without a sandbox or network side traffic.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def chromium() -> str:
    """The Chromium executable: ``DOCREVIEW_CHROMIUM``, else ``chromium`` on ``PATH``; ``FileNotFoundError``
    naming how to install it when there is none."""
    found = os.environ.get("DOCREVIEW_CHROMIUM") or shutil.which("chromium")
    if not found or not Path(found).is_file():
        raise FileNotFoundError("Chromium is not installed (apt-get install -y chromium), or set DOCREVIEW_CHROMIUM")
    return found


def caption(report_json: Path) -> str:
    """The README's words for the image: what the report shows (``"6 documents, 144 findings"``) from its
    ``report.json`` beside ``report.html``."""
    report = json.loads(report_json.read_text(encoding="utf-8"))
    documents = report["documents"]
    findings = sum(len(d.get("findings") or []) for d in documents)
    return f"{len(documents)} documents, {findings} findings"


def screenshot(report_html: Path, png: Path) -> Path:
    """Save the first screen of ``report_html`` as ``png`` (parent folders made); returns ``png``."""
    from playwright.sync_api import sync_playwright

    png.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            page.goto(report_html.resolve().as_uri())
            page.screenshot(path=str(png))
        finally:
            browser.close()
    return png


def main(argv: list[str]) -> int:
    """``REPORT_HTML PNG``: write the screenshot and print the README caption; exit 2 on a missing report."""
    if len(argv) != 2:
        print("usage: python -m docreview_testing.screenshot OUT/report.html docs/images/report.png", file=sys.stderr)
        return 2
    report_html, png = Path(argv[0]), Path(argv[1])
    if not report_html.is_file():
        print(f"error: {report_html}: no such report (run make run first)", file=sys.stderr)
        return 2
    screenshot(report_html, png)
    print(f"{png}: the report of {caption(report_html.with_name('report.json'))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
