"""LLM-facing models: a finding, the tool input that carries findings, and fact-check verdicts.

These are *not* database tables (see :mod:`schemas.tables`). The tool schema sent to the model is
generated from :class:`ReviewToolInput` (an object at the root holding a list), so a strict tool
schema never has an array or a free-form map at its root.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.taxonomy import ClauseType

#: Bumped whenever the prompt, the tool schema or the rules extractors change meaning (v3: the
#: schema made API-conformant by the SDK's transform_schema; structured outputs wording; v4: each
#: document is classified, and SEC filings are reviewed under the filing profile; v5: each passage
#: names the section heading it starts under, and the title, recitals and signature block are not
#: where operative clauses are found).
#: It is part of every review idempotency key (document sha256, prompt version, model).
PROMPT_VERSION = "review-v5"

#: Name of the forced tool the model must call.
REVIEW_TOOL_NAME = "record_findings"


class Risk(str, Enum):
    """Risk level a reviewer assigns to a finding."""

    low = "low"
    medium = "medium"
    high = "high"


class Verdict(str, Enum):
    """Outcome of fact-checking one finding against the source text.

    - ``verified``: every check passed — the quote is in the document (``grounding``), it states
      the finding's clause category and is no bare heading or negation (``support``), every
      stated value equals a value of the quote (``values``), and no other finding states the
      same term differently (``consistency``).
    - ``unsupported``: the quote was not found in the document.
    - ``contradicted``: the quote was found, but a value in the finding disagrees with it (or
      with another finding of the document).
    - ``needs_review``: the checks could not settle it (e.g. the quote is in the document but
      does not support the finding, a value cannot be read, only found ignoring spaces on a
      page with glued words, or no quote given).
    """

    verified = "verified"
    unsupported = "unsupported"
    contradicted = "contradicted"
    needs_review = "needs_review"


class FindingValue(BaseModel):
    """One named value a finding states, as written in the contract.

    ``name`` is a short key such as ``jurisdiction``, ``amount``, ``date``, ``party``,
    ``duration``; ``value`` is the text as it appears in the evidence (e.g. ``"$1,000,000"``), its
    whitespace collapsed to single spaces.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Short key, e.g. 'jurisdiction', 'amount', 'date', 'party', 'duration'.")
    value: str = Field(description="The value exactly as written in the evidence quote.")

    @field_validator("value")
    @classmethod
    def _one_line(cls, value: str) -> str:
        """Line breaks and runs of spaces from the page layout become one space ("6th day\\nof April,
        1999" reads "6th day of April, 1999"); the words stay as written."""
        return " ".join(value.split())


class Finding(BaseModel):
    """A clause the reviewer found, tied to a verbatim quote and the page it is on.

    ``page`` is 1-based. ``evidence`` must be copied verbatim from the document text.
    """

    model_config = ConfigDict(extra="forbid")

    clause_type: ClauseType = Field(description="CUAD clause category of the passage.")
    summary: str = Field(description="One sentence: what the clause says, in plain English.")
    risk: Risk = Field(description="Risk for the reviewing party: low, medium or high.")
    evidence: str = Field(description="Verbatim quote from the document supporting the finding.")
    page: int = Field(ge=1, description="1-based page number where the quote appears.")
    values: list[FindingValue] = Field(
        default_factory=list,
        description="Key values stated by the clause (amounts, dates, durations, jurisdictions, parties).",
    )

    def values_dict(self) -> dict[str, str]:
        """Return ``values`` as ``{name: value}``; repeated names are joined with ``"; "``."""
        out: dict[str, str] = {}
        for item in self.values:
            out[item.name] = f"{out[item.name]}; {item.value}" if item.name in out else item.value
        return out


class ReviewToolInput(BaseModel):
    """Input of the forced ``record_findings`` tool: every finding in one chunk of a contract."""

    model_config = ConfigDict(extra="forbid")

    findings: list[Finding] = Field(
        default_factory=list,
        description="All findings in the passage; an empty list when the passage has none.",
    )


def review_tool_schema() -> dict[str, Any]:
    """JSON schema of :class:`ReviewToolInput` (object root) for the tool definition."""
    return ReviewToolInput.model_json_schema()


class CheckResult(BaseModel):
    """One fact-check of one finding: ``name`` (``grounding``, ``support``, ``values``,
    ``arithmetic``, ``consistency``, ``verifier``), verdict and reason; ``page`` (grounding: where
    the quote is) and ``score`` (support: probability of the claimed category, 0..1) when known.
    Only name, verdict and reason are stored (``checks`` table); the score is part of the reason."""

    name: str
    verdict: Verdict
    reason: str
    page: int | None = None
    score: float | None = None


@dataclass
class CheckedFinding:
    """A finding after the fact-check: ``page`` corrected, overall ``verdict`` and its checks."""

    finding: Finding
    chunk_index: int
    ordinal: int
    stated_page: int
    verdict: Verdict
    checks: list[CheckResult]
