"""The quality record of a text unit that needed no repair, as the extraction worker writes it.

A plain ``dict`` (the worker's JSON, read back as :class:`schemas.documents.PageQuality`): the readers
run in the extraction child, which does not import pydantic for a DOCX or HTML file.
"""

from __future__ import annotations


def clean_quality(extractor: str) -> dict[str, object]:
    """The :class:`schemas.documents.PageQuality` fields of a unit read whole by ``extractor`` (``"docx"``,
    ``"html"``): nothing empty, glued, restored, unread or OCR'd."""
    return {
        "empty": False,
        "glued_words": False,
        "private_use_chars": 0,
        "nul_chars": 0,
        "ligatures_restored": 0,
        "not_read": None,
        "running_lines": 0,
        "extractor": extractor,
        "ocr": False,
        "ocr_confidence": None,
    }
