"""The README's screenshot script (docreview_testing/screenshot.py): a report's first screen as a PNG of the
viewport's size, and a caption with the documents and findings its report.json holds."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from docreview_testing.screenshot import VIEWPORT, caption, chromium, main


def test_the_caption_counts_what_the_report_shows(tmp_path: Path) -> None:
    data = {"documents": [{"findings": [{}, {}]}, {"findings": []}, {"findings": [{}]}]}
    (tmp_path / "report.json").write_text(json.dumps(data))
    assert caption(tmp_path / "report.json") == "3 documents, 3 findings"


def test_a_missing_report_is_exit_2(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "none.html"), str(tmp_path / "x.png")]) == 2
    assert "no such report" in capsys.readouterr().err and not (tmp_path / "x.png").exists()


def test_the_first_screen_is_saved_at_the_viewport_size(tmp_path: Path, capsys) -> None:
    pytest.importorskip("playwright.sync_api", reason="playwright (dev extra) is not installed")
    try:
        chromium()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    (tmp_path / "report.html").write_text("<!doctype html><title>r</title><h1>Needs attention</h1>")
    (tmp_path / "report.json").write_text(json.dumps({"documents": [{"findings": [{}]}]}))
    png = tmp_path / "images" / "report.png"
    assert main([str(tmp_path / "report.html"), str(png)]) == 0
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (VIEWPORT["width"], VIEWPORT["height"])
    assert capsys.readouterr().out.strip() == f"{png}: the report of 1 documents, 1 findings"
