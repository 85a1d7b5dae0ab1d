"""An interrupt that surfaces as another error still ends ``docreview review`` as interrupted.

Prefect's engine, stopped by SIGTERM while it creates a task run, raises ``ValueError("Task run is not
set")`` from its crash handling instead of the interrupt; the command must still say "Interrupted" and exit
130 (what a service manager expects of a stopped job), not report a failed run."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from docreview_testing.samples import generate_samples


@pytest.mark.parametrize(("interrupted", "code", "said"), [(True, 130, "Interrupted"), (False, 1, "Run failed")])
def test_an_error_after_an_interrupt_is_an_interrupted_run(tmp_path, monkeypatch, interrupted, code, said):
    import cli.app
    import flows.review

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=1)

    def flow(**kwargs: object) -> dict:  # stands in for the flow that Prefect's engine broke off
        if interrupted:
            cli.app.INTERRUPT_SEEN.set()  # what the SIGTERM handler does before it raises KeyboardInterrupt
        raise ValueError("Task run is not set")

    monkeypatch.setattr(flows.review, "review_documents", flow)
    try:
        result = CliRunner().invoke(
            cli.app.app,
            [
                "review",
                str(inbox),
                "--out",
                str(tmp_path / "out"),
                "--db",
                f"sqlite:///{tmp_path}/x.db",
                "--backend",
                "rules",
            ],
        )
    finally:
        cli.app.INTERRUPT_SEEN.clear()
    assert result.exit_code == code, result.output
    assert said in result.output and "Traceback" not in result.output
