"""flows/parameters.py: the review flow's parameters are recorded as Prefect records them, plain
ones without importing FastAPI."""

from __future__ import annotations

import enum
import subprocess
import sys
from pathlib import Path

import pytest
from prefect import Flow

from flows.parameters import PlainParametersFlow
from flows.review import review_documents
from schemas.policy import ResiliencePolicy

ROOT = Path(__file__).resolve().parents[1]


class Mode(str, enum.Enum):
    fast = "fast"


CLI_PARAMETERS = {
    "source": "inbox",
    "out_dir": "out",
    "database_url": None,
    "backend": "rules",
    "rereview": True,
    "policy": None,
    "routing": "auto",
    "batch": False,
    "endpoint_url": None,
    "suffix": None,
    "profile": "auto",
    "playbook": None,
    "batch_poll_s": 60.0,
}


def test_the_review_flow_is_a_prefect_flow_of_that_class():
    assert isinstance(review_documents, PlainParametersFlow)
    assert isinstance(review_documents, Flow)
    assert review_documents.name == "review-documents"


@pytest.mark.parametrize(
    "parameters",
    [
        CLI_PARAMETERS,
        {**CLI_PARAMETERS, "policy": ResiliencePolicy(attempts=2, on_open="defer")},
        {"source": "inbox", "count": 3, "ratio": float("inf"), "mode": Mode.fast},
        {"source": Path("inbox"), "suffix": [".pdf", ".docx"]},
        {},
    ],
)
def test_recorded_as_prefect_records_them(parameters):
    assert review_documents.serialize_parameters(parameters) == Flow.serialize_parameters(review_documents, parameters)


def test_plain_parameters_need_no_fastapi():
    code = (
        "import sys; from flows.review import review_documents as f; "
        f"assert f.serialize_parameters({CLI_PARAMETERS!r}) == {CLI_PARAMETERS!r}; "
        "print('fastapi' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
