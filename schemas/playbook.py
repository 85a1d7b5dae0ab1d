"""A team's playbook: its standard positions, checked against every reviewed document.

A playbook is a YAML file (``docreview review SOURCE --playbook FILE``, ``DOCREVIEW_PLAYBOOK`` or
the ``playbook`` deployment parameter)::

    playbook: standard-positions        # name shown in the report
    party: "Acme Corp"                  # optional: the party we review for (sent to model backends)
    rules:
      - id: governing-law
        clause: governing_law           # a CUAD category (schemas.taxonomy.ClauseType value)
        expect: allowed_values          # see Expectation
        values: ["New York", "Delaware"]
        severity: medium                # low | medium | high

These classes check the file's shape (known clause, known expectation, the fields each
expectation needs); :func:`tasks.check.playbook.load_playbook` also reads each rule's value
(a duration in days, an amount with its currency) and names the rule when it cannot.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.taxonomy import ClauseType


class Expectation(str, Enum):
    """What a rule expects of its clause in a reviewed document."""

    present = "present"  # the clause must be there
    absent = "absent"  # the clause must not be there
    allowed_values = "allowed_values"  # its value (e.g. the governing law's jurisdiction) is one of ``values``
    max_duration = "max_duration"  # its period is at most ``value`` (e.g. "90 days")
    min_duration = "min_duration"  # its period is at least ``value``
    max_amount = "max_amount"  # its amount is at most ``value`` (e.g. "USD 1,000,000")
    min_amount = "min_amount"  # its amount is at least ``value``


class Severity(str, Enum):
    """How much a deviation from the rule matters to the team."""

    low = "low"
    medium = "medium"
    high = "high"


class RuleStatus(str, Enum):
    """Outcome of one rule on one document.

    ``pass``: the document meets the expectation; ``deviation``: it does not (a required clause
    is absent, a forbidden one present, a value outside the limits); ``unknown``: the review
    cannot tell (the value could not be read, or the only findings were not confirmed by the
    fact-check); the reason says which.
    """

    passed = "pass"
    deviation = "deviation"
    unknown = "unknown"


#: When the clause is missing from a reviewed document, what each expectation concludes unless
#: the rule says otherwise (``if_absent``): a required clause or value is a deviation; a
#: maximum is met by a clause that sets none (no notice period → nothing exceeds 90 days).
DEFAULT_IF_ABSENT: dict[Expectation, RuleStatus] = {
    Expectation.present: RuleStatus.deviation,
    Expectation.absent: RuleStatus.passed,
    Expectation.allowed_values: RuleStatus.deviation,
    Expectation.max_duration: RuleStatus.passed,
    Expectation.min_duration: RuleStatus.deviation,
    Expectation.max_amount: RuleStatus.passed,
    Expectation.min_amount: RuleStatus.deviation,
}

_NEEDS_VALUE = {Expectation.max_duration, Expectation.min_duration, Expectation.max_amount, Expectation.min_amount}


class PlaybookRule(BaseModel):
    """One standard position: ``clause`` (a CUAD category), what is expected of it, and how much a
    deviation matters. ``values`` (for ``allowed_values``) lists the accepted values, e.g.
    jurisdictions; ``value`` (for the duration and amount expectations) is the limit as written,
    e.g. ``"90 days"`` or ``"USD 1,000,000"``; ``if_absent`` overrides :data:`DEFAULT_IF_ABSENT`."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    clause: ClauseType
    expect: Expectation
    severity: Severity = Severity.medium
    values: list[str] | None = None
    value: str | None = None
    if_absent: RuleStatus | None = None
    description: str | None = Field(default=None, max_length=500)

    @field_validator("clause", mode="before")
    @classmethod
    def _known_clause(cls, v: object) -> object:
        known = {c.value for c in ClauseType if c is not ClauseType.other}
        if isinstance(v, str) and v not in known:
            raise ValueError(f"unknown clause {v!r} (a CUAD category such as governing_law, cap_on_liability)")
        return v

    @model_validator(mode="after")
    def _fields_for_expectation(self) -> PlaybookRule:
        if self.expect is Expectation.allowed_values:
            if not self.values or not all(str(v).strip() for v in self.values):
                raise ValueError("expect: allowed_values needs a non-empty list `values`")
        elif self.values is not None:
            raise ValueError(f"`values` is only for expect: allowed_values (this rule expects {self.expect.value})")
        if self.expect in _NEEDS_VALUE:
            if not (self.value or "").strip():
                raise ValueError(
                    f"expect: {self.expect.value} needs a `value`, e.g. "
                    + ("'90 days'" if "duration" in self.expect.value else "'USD 1,000,000'")
                )
        elif self.value is not None:
            raise ValueError(
                f"`value` is only for the duration and amount expectations (this rule expects {self.expect.value})"
            )
        return self

    def when_absent(self) -> RuleStatus:
        """The status when the clause is missing from a reviewed document."""
        return self.if_absent or DEFAULT_IF_ABSENT[self.expect]


class Playbook(BaseModel):
    """A named set of rules (ids unique), optionally for one ``party`` of the contracts."""

    model_config = ConfigDict(extra="forbid")

    playbook: str = Field(min_length=1, max_length=120)
    party: str | None = Field(default=None, max_length=200)
    rules: list[PlaybookRule] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Playbook:
        seen: set[str] = set()
        for rule in self.rules:
            if rule.id in seen:
                raise ValueError(f"rule id {rule.id!r} is used twice")
            seen.add(rule.id)
        return self
