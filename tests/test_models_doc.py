"""docs/models.md shows the model file as it is: its tables are written from tasks/review/backends/models.py."""

from __future__ import annotations

from pathlib import Path

from tasks.review.backends.models import CAPABILITIES, RETIRED, reference_table

DOC = Path(__file__).resolve().parents[1] / "docs" / "models.md"


def test_the_models_page_holds_the_table_written_from_the_model_file():
    text = DOC.read_text()
    held = text.split("<!-- models:begin -->\n", 1)[1].split("<!-- models:end -->", 1)[0]
    assert held == reference_table(), (
        "docs/models.md is out of date: replace the text between its models markers with "
        "python -c \"from tasks.review.backends.models import reference_table; print(reference_table(), end='')\""
    )
    for prefix in [*CAPABILITIES, *RETIRED]:
        assert f"`{prefix}`" in held
