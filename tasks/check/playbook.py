"""The team's playbook, applied to a reviewed document: pass, deviation or unknown per rule.

:func:`load_playbook` reads and validates a playbook file (:mod:`schemas.playbook`) and reads
each rule's limit with the same readers the fact-check uses (:mod:`tasks.check.values`):
durations in days, amounts as ``Decimal`` with an ISO 4217 code. :func:`evaluate_document`
applies it to one document of the report (its findings and absences) — deterministic, and every
result names the findings it rests on.

Evidence: a rule looks only at the findings of its clause that the fact-check did not reject
(verdict ``verified`` or ``needs_review``) and that no reviewer rejected. Of those, the
*supported* ones (:func:`supported`: the quote states what the finding claims) decide the
status; when only unsupported-but-not-rejected ones exist, the status is ``unknown`` and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from schemas.decisions import affirms, rejects
from schemas.playbook import Expectation, Playbook, PlaybookRule, RuleStatus
from schemas.taxonomy import ClauseType, label
from tasks.check.redactions import REDACTED_REASON, is_redacted
from tasks.check.support import dismissed, heading_only, negation, read_as
from tasks.check.values import Kind, Value, extract_values, find_durations, find_money, find_redactions

#: Verdicts whose findings can be evidence (the fact-check did not reject them).
_TRUSTED = {"verified", "needs_review"}

#: Days per duration unit. Months and years are calendar approximations (30 and 365 days); a
#: business day counts 7/5 calendar days. A limit and a clause in the same unit compare exactly.
DAYS_PER_UNIT: dict[str, Decimal] = {
    "day": Decimal(1),
    "business_day": Decimal(7) / Decimal(5),
    "week": Decimal(7),
    "month": Decimal(30),
    "year": Decimal(365),
}


class PlaybookError(ValueError):
    """A playbook file that cannot be used; the message names the file, the rule and the field."""


@dataclass(frozen=True)
class Limit:
    """A rule's limit, read: ``days`` for a duration, ``amount`` + ``currency`` (ISO 4217) for money."""

    raw: str
    days: Decimal | None = None
    amount: Decimal | None = None
    currency: str | None = None


@dataclass
class LoadedPlaybook:
    """A validated playbook with each rule's limit read (``limits[rule id]``, duration and amount
    rules only) and the file's ``source`` path."""

    playbook: Playbook
    source: str
    limits: dict[str, Limit] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The playbook's name (shown in the report)."""
        return self.playbook.playbook


def _where(data: Any, loc: tuple[Any, ...]) -> str:
    """``rule 'renewal-notice' (rules[4]), field expect`` for a pydantic error location."""
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int):
        rules = data.get("rules") if isinstance(data, dict) else None
        rule = rules[loc[1]] if isinstance(rules, list) and loc[1] < len(rules) else None
        rid = rule.get("id") if isinstance(rule, dict) else None
        name = f"rule {rid!r} (rules[{loc[1] + 1}])" if rid else f"rules[{loc[1] + 1}]"
        rest = ".".join(str(p) for p in loc[2:])
        return f"{name}" + (f", field {rest}" if rest else "")
    return "field " + ".".join(str(p) for p in loc) if loc else "the file"


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key repeated in one mapping (PyYAML keeps the last one,
    which would silently invert a rule written ``expect: present`` … ``expect: absent``)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``line L, column C: problem`` for a YAML error (1-based, as editors count)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else str(problem)


def load_playbook(path: str | Path) -> LoadedPlaybook:
    """Read, validate and prepare the playbook at ``path`` (YAML, UTF-8).

    Raises :class:`PlaybookError` naming the rule and field for a file that is missing, not
    UTF-8 or not YAML (with the line and column), a key given twice, an unknown clause or
    expectation, a missing ``values``/``value``, a duplicate rule id, a contradictory
    ``if_absent`` (an ``absent`` rule cannot require its clause), a limit that cannot be read
    (``"90 dayz"``; a duration rule needs days, weeks, months or years; an amount rule needs a
    figure, with its currency when the rule should not assume USD) or is not positive, and a
    ``governing_law`` value that names no jurisdiction this module knows (:func:`jurisdictions_in`).
    Every problem of the validation is listed, not only the first.
    """
    p = Path(path)
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except OSError as exc:
        raise PlaybookError(f"playbook {p}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise PlaybookError(f"playbook {p}: cannot read it: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise PlaybookError(f"playbook {p}: not valid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(data, dict):
        raise PlaybookError(f"playbook {p}: expected a mapping with `playbook` and `rules`")
    try:
        playbook = Playbook.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{_where(data, tuple(e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}" for e in exc.errors()
        ]
        raise PlaybookError(f"playbook {p}: " + "; ".join(problems)) from None
    return prepare_playbook(playbook, str(p))


def prepare_playbook(playbook: Playbook, source: str) -> LoadedPlaybook:
    """A validated :class:`schemas.playbook.Playbook` with its rules checked together and each limit read
    (what :func:`load_playbook` does after validating the file; also how a run's stored playbook,
    ``run_playbooks.definition``, is made usable again). Raises :class:`PlaybookError` naming ``source``, the
    rule and the field."""
    p = source
    loaded = LoadedPlaybook(playbook=playbook, source=source)
    problems = []
    for i, rule in enumerate(playbook.rules, start=1):
        where = f"rule {rule.id!r} (rules[{i}])"
        if rule.expect is Expectation.absent and rule.if_absent is RuleStatus.deviation:
            problems.append(f"{where}, field if_absent: an `absent` rule cannot require its clause")
        if rule.clause.value == "governing_law" and rule.expect is Expectation.allowed_values:
            unread = [v for v in rule.values or [] if value_jurisdiction(v) is None]
            if unread:
                problems.append(
                    f"{where}, field values: {', '.join(repr(v) for v in unread)} name(s) no jurisdiction "
                    "docreview knows (write the state or country, e.g. 'New York', 'England')"
                )
        if rule.value is None:
            continue
        limit = read_limit(rule)
        if limit is None:
            kind = (
                "a duration such as '90 days'"
                if "duration" in rule.expect.value
                else "an amount such as 'USD 1,000,000'"
            )
            problems.append(f"{where}, field value: cannot read {rule.value!r} as {kind}")
        elif (limit.days if limit.days is not None else limit.amount or 0) <= 0:
            problems.append(f"{where}, field value: {rule.value!r} is not a positive limit")
        else:
            loaded.limits[rule.id] = limit
    if problems:
        raise PlaybookError(f"playbook {p}: " + "; ".join(problems))
    return loaded


def read_limit(rule: PlaybookRule) -> Limit | None:
    """The limit of a duration or amount rule, or ``None`` when ``rule.value`` holds none (or
    more than one)."""
    raw = (rule.value or "").strip()
    if re.search(r"(?<![\w])[-−–]\s*[$€£¥₹]?\s*\d", raw):  # a negative limit is no limit
        return None
    if rule.expect in (Expectation.max_duration, Expectation.min_duration):
        found = find_durations(raw)
        if len(found) != 1 or found[0].amount is None:
            return None
        return Limit(raw, days=to_days(found[0]))
    text = raw if re.search(r"[A-Za-z$€£¥₹]", raw) else f"USD {raw}"  # a bare figure is USD
    money = find_money(text)
    if len(money) != 1 or money[0].amount is None:
        return None
    return Limit(raw, amount=money[0].amount, currency=money[0].unit or "USD")


def to_days(duration: Value) -> Decimal:
    """A duration value in days (:data:`DAYS_PER_UNIT`)."""
    return (duration.amount or Decimal(0)) * DAYS_PER_UNIT.get(duration.unit or "day", Decimal(1))


# --- jurisdictions ------------------------------------------------------------------------

_US_STATES = [
    "Alabama",
    "Alaska",
    "Arizona",
    "Arkansas",
    "California",
    "Colorado",
    "Connecticut",
    "Delaware",
    "Florida",
    "Georgia",
    "Hawaii",
    "Idaho",
    "Illinois",
    "Indiana",
    "Iowa",
    "Kansas",
    "Kentucky",
    "Louisiana",
    "Maine",
    "Maryland",
    "Massachusetts",
    "Michigan",
    "Minnesota",
    "Mississippi",
    "Missouri",
    "Montana",
    "Nebraska",
    "Nevada",
    "Ohio",
    "Oklahoma",
    "Oregon",
    "Pennsylvania",
    "Tennessee",
    "Texas",
    "Utah",
    "Vermont",
    "Virginia",
    "Washington",
    "Wisconsin",
    "Wyoming",
] + [
    "New Hampshire",
    "New Jersey",
    "New Mexico",
    "New York",
    "North Carolina",
    "North Dakota",
    "Rhode Island",
    "South Carolina",
    "South Dakota",
    "West Virginia",
    "District of Columbia",
    "Puerto Rico",
]
_OTHER = [
    "England",
    "Wales",
    "Scotland",
    "Northern Ireland",
    "United Kingdom",
    "Ireland",
    "Ontario",
    "Quebec",
    "British Columbia",
    "Alberta",
    "Manitoba",
    "Nova Scotia",
    "Canada",
    "Israel",
    "Germany",
    "France",
    "Netherlands",
    "Switzerland",
    "Singapore",
    "Hong Kong",
    "China",
    "Japan",
    "India",
    "Australia",
    "New South Wales",
    "Victoria",
    "Sweden",
    "Korea",
    "Taiwan",
    "Cayman Islands",
    "Bermuda",
    "Luxembourg",
    "Italy",
    "Spain",
    "Belgium",
    "Denmark",
    "Norway",
    "Finland",
    "Mexico",
    "Brazil",
    "Austria",
    "British Virgin Islands",
    "Malaysia",
    "Thailand",
    "Philippines",
    "South Africa",
    "New Zealand",
    "Papua New Guinea",
    "Colombia",
    "Argentina",
    "Chile",
    "Peru",
    "Russia",
    "Indonesia",
    "Vietnam",
    "Turkey",
    "Greece",
    "Portugal",
    "Poland",
    "Cyprus",
    "Malta",
    "United Arab Emirates",
    "Bahamas",
    "Barbados",
    "Panama",
    "Isle of Man",
    "Guernsey",
    "Liechtenstein",
    "Macau",
    "United States",
]
#: A jurisdiction's adjective, read as the jurisdiction when it is a finding's whole value ("English")
#: or stands before "law(s)" in a quote ("Swiss law", "Colombian private law", "the laws of" aside).
_DEMONYMS = {
    "English": "England",
    "Scottish": "Scotland",
    "Irish": "Ireland",
    "British": "United Kingdom",
    "Canadian": "Canada",
    "Israeli": "Israel",
    "German": "Germany",
    "French": "France",
    "Dutch": "Netherlands",
    "Swiss": "Switzerland",
    "Singaporean": "Singapore",
    "Chinese": "China",
    "Japanese": "Japan",
    "Indian": "India",
    "Australian": "Australia",
    "Swedish": "Sweden",
    "Korean": "Korea",
    "Taiwanese": "Taiwan",
    "Italian": "Italy",
    "Spanish": "Spain",
    "Belgian": "Belgium",
    "Danish": "Denmark",
    "Norwegian": "Norway",
    "Finnish": "Finland",
    "Mexican": "Mexico",
    "Brazilian": "Brazil",
    "Austrian": "Austria",
    "Colombian": "Colombia",
    "Argentine": "Argentina",
    "Argentinian": "Argentina",
    "Chilean": "Chile",
    "Peruvian": "Peru",
    "Russian": "Russia",
    "Indonesian": "Indonesia",
    "Vietnamese": "Vietnam",
    "Turkish": "Turkey",
    "Greek": "Greece",
    "Portuguese": "Portugal",
    "Polish": "Poland",
    "Cypriot": "Cyprus",
    "Maltese": "Malta",
    "Malaysian": "Malaysia",
    "Thai": "Thailand",
    "Philippine": "Philippines",
    "South African": "South Africa",
}
#: Other ways contracts write a jurisdiction → its name (``NY law``, ``the laws of England and Wales``).
_ALIASES = {
    "N.Y.": "New York",
    "NY": "New York",
    "Del.": "Delaware",
    "Cal.": "California",
    "Calif.": "California",
    "D.C.": "District of Columbia",
    "Washington, D.C.": "District of Columbia",
    "U.K.": "United Kingdom",
    "UK": "United Kingdom",
    "Great Britain": "United Kingdom",
    "England and Wales": "England",
    "People's Republic of China": "China",
    "PRC": "China",
    "P.R.C.": "China",
    "Republic of Korea": "Korea",
    "South Korea": "Korea",
    "U.S.A.": "United States",
    "USA": "United States",
    "U.S.": "United States",
    "United States of America": "United States",
    "Hong Kong SAR": "Hong Kong",
    "English law": "England",
    "Scottish law": "Scotland",
    "Irish law": "Ireland",
    "German law": "Germany",
    "French law": "France",
    "Swiss law": "Switzerland",
    "Dutch law": "Netherlands",
    "Israeli law": "Israel",
    "Canadian law": "Canada",
    "Japanese law": "Japan",
    "Singapore law": "Singapore",
}
#: US postal codes, read only in a rule's own values ("NJ"), never in document text ("IN NO EVENT").
_POSTAL = dict(
    zip(
        [
            "AL",
            "AK",
            "AZ",
            "AR",
            "CA",
            "CO",
            "CT",
            "DE",
            "FL",
            "GA",
            "HI",
            "ID",
            "IL",
            "IN",
            "IA",
            "KS",
            "KY",
            "LA",
            "ME",
            "MD",
            "MA",
            "MI",
            "MN",
            "MS",
            "MO",
            "MT",
            "NE",
            "NV",
            "NH",
            "NJ",
            "NM",
            "NY",
            "NC",
            "ND",
            "OH",
            "OK",
            "OR",
            "PA",
            "RI",
            "SC",
            "SD",
            "TN",
            "TX",
            "UT",
            "VT",
            "VA",
            "WA",
            "WV",
            "WI",
            "WY",
            "DC",
            "PR",
        ],
        [
            "Alabama",
            "Alaska",
            "Arizona",
            "Arkansas",
            "California",
            "Colorado",
            "Connecticut",
            "Delaware",
            "Florida",
            "Georgia",
            "Hawaii",
            "Idaho",
            "Illinois",
            "Indiana",
            "Iowa",
            "Kansas",
            "Kentucky",
            "Louisiana",
            "Maine",
            "Maryland",
            "Massachusetts",
            "Michigan",
            "Minnesota",
            "Mississippi",
            "Missouri",
            "Montana",
            "Nebraska",
            "Nevada",
        ]
        + [
            "New Hampshire",
            "New Jersey",
            "New Mexico",
            "New York",
            "North Carolina",
            "North Dakota",
            "Ohio",
            "Oklahoma",
            "Oregon",
            "Pennsylvania",
            "Rhode Island",
            "South Carolina",
            "South Dakota",
            "Tennessee",
            "Texas",
            "Utah",
            "Vermont",
            "Virginia",
            "Washington",
            "West Virginia",
            "Wisconsin",
            "Wyoming",
            "District of Columbia",
            "Puerto Rico",
        ],
    )
)
_NAMES = {n: n for n in _US_STATES + _OTHER} | _ALIASES


def _name_pattern(name: str) -> str:
    """``name`` as a pattern whose words may be split by any whitespace ("New\nYork" across a line)."""
    return r"\s+".join(re.escape(w) for w in name.split())


def _one_space(text: str) -> str:
    return " ".join(text.split())


_JURISDICTION_RE = re.compile(
    r"(?<![\w.])(?:" + "|".join(_name_pattern(n) for n in sorted(_NAMES, key=len, reverse=True)) + r")(?![\w])"
)
_CASELESS = re.compile(
    r"\b(?:" + "|".join(_name_pattern(n) for n in sorted(_US_STATES + _OTHER, key=len, reverse=True)) + r")\b", re.I
)
_DEMONYM_LAW = re.compile(
    r"\b(" + "|".join(_name_pattern(n) for n in sorted(_DEMONYMS, key=len, reverse=True)) + r")\s+(?:[a-z]+\s+)?laws?\b"
)
#: Named only as the country around a state's law ("the laws of Delaware and of the United States").
_NEUTRAL = {"United States"}


def jurisdictions_in(text: str) -> list[tuple[int, str]]:
    """Jurisdictions named in ``text`` as ``(offset, name)``, in order; abbreviations (``N.Y.``,
    ``UK``) only in their written case, full names in any case, their words split by any whitespace
    (a name broken across a line); an adjective (:data:`_DEMONYMS`) before "law(s)" ("Swiss law",
    "Colombian private law") or as the whole ``text`` ("English", a finding's value)."""
    found = {(m.start(), _NAMES[_one_space(m.group(0))]) for m in _JURISDICTION_RE.finditer(text)}
    found |= {(m.start(), _DEMONYMS[_one_space(m.group(1))]) for m in _DEMONYM_LAW.finditer(text)}
    whole = _DEMONYMS.get(_one_space(text).strip(" ."))
    if whole is not None:
        found.add((0, whole))
    for m in _CASELESS.finditer(text):
        if not any(s <= m.start() < s + len(n) + 3 for s, n in found):
            canonical = next(n for n in _US_STATES + _OTHER if n.lower() == _one_space(m.group(0)).lower())
            found.add((m.start(), canonical))
    return sorted(found)


def governing_jurisdiction(text: str) -> str | None:
    """The jurisdiction whose law a clause names: the first one after "law(s) of" when written so,
    else the first one named (the United States only when nothing narrower is); ``None`` if none."""
    found = jurisdictions_in(text)
    if not found:
        return None
    specific = [j for j in found if j[1] not in _NEUTRAL] or found
    m = re.search(r"\blaws?\s+(?:in\s+force\s+in\s+|applicable\s+in\s+)?of\b|\bgoverned\s+by\b", text, re.I)
    if m:
        after = [j for j in specific if j[0] >= m.start()]
        if after:
            return after[0][1]
    return specific[0][1]


def value_jurisdiction(value: str) -> str | None:
    """The jurisdiction a rule's value names: as in a document (:func:`governing_jurisdiction`), or
    a US postal code ("NJ", "NJ law"); ``None`` when it names none."""
    m = re.fullmatch(r"\s*([A-Z]{2})(?:\s+law)?\s*", value)
    if m and m.group(1) in _POSTAL:
        return _POSTAL[m.group(1)]
    return governing_jurisdiction(value)


def canonical_value(text: str) -> str:
    """An allowed value as compared: the jurisdiction it names (:func:`value_jurisdiction`), else its
    words, lower case."""
    return value_jurisdiction(text) or " ".join(re.findall(r"[a-z0-9]+", text.lower()))


# --- evaluation ---------------------------------------------------------------------------


def supported(finding: dict[str, Any]) -> bool:
    """A report finding (``{verdict, checks: [{name, verdict}]}``) whose quote states what it claims:
    verdict ``verified`` or ``needs_review``, and its ``support`` check (when it has one)
    ``verified`` — or a ``verifier`` check that is ``verified``. A grounded quote that is only a
    heading, reads as another category or negates the clause is not supported."""
    if finding["verdict"] not in _TRUSTED:
        return False
    checks = {c["name"]: c["verdict"] for c in finding.get("checks") or []}
    if checks.get("verifier") == "verified":
        return True
    return checks.get("support", "verified") == "verified"


def _rejected_by_reviewer(finding: dict[str, Any]) -> bool:
    return rejects(finding.get("decision"))


def _dismissed_by_fact_check(finding: dict[str, Any]) -> bool:
    """A finding the fact-check dismissed (:func:`tasks.check.support.dismissed`: a heading only, or a
    quote the support model is confident is not its clause) that no reviewer approved."""
    return not _approved_by_reviewer(finding) and any(
        c["name"] == "support" and dismissed(str(c.get("reason") or "")) for c in finding.get("checks") or []
    )


def _approved_by_reviewer(finding: dict[str, Any]) -> bool:
    """A reviewer approved the finding, or reclassified it into the category it now has (the
    reviewer's reading: :func:`tasks.observe.report.reclassify`)."""
    return affirms(finding.get("decision"))


def _text_of(finding: dict[str, Any], names: tuple[str, ...]) -> str:
    """The finding's named values when it has them (the reviewer's reading), else its quote."""
    values = finding.get("values") or {}
    picked = [str(values[n]) for n in names if values.get(n)]
    return " ; ".join(picked) if picked else str(finding.get("evidence") or "")


_NOTICE_AFTER = re.compile(r"^[^.;]{0,12}?\b(?:prior|before|in\s+advance|preceding|notice)\b", re.I)
_NOTICE_BEFORE = re.compile(r"\b(?:notice|at\s+least|(?:less|fewer)\s+than)\b[^.;]{0,14}$", re.I)


def durations_of(finding: dict[str, Any]) -> list[Value]:
    """The durations a rule reads in a finding (:func:`_durations`): its ``duration`` value, else the
    quote's durations next to "notice"/"prior", else all of the quote's."""
    return _durations(finding)


def _durations(finding: dict[str, Any]) -> list[Value]:
    """Durations of a finding: its ``duration`` value, else the quote's durations that sit next to
    "notice"/"prior" (a renewal clause also states the renewal term), else all of them."""
    values = finding.get("values") or {}
    if values.get("duration"):
        found = find_durations(str(values["duration"]))
        if found:
            return found
    text = str(finding.get("evidence") or "")
    found = [v for v in extract_values(text) if v.kind is Kind.duration and v.amount is not None]
    near = [
        v
        for v in found
        if _NOTICE_AFTER.search(text[v.end : v.end + 30]) or _NOTICE_BEFORE.search(text[max(0, v.start - 40) : v.start])
    ]
    return near or found


def _amounts(finding: dict[str, Any]) -> list[Value]:
    return [v for v in find_money(_text_of(finding, ("amount",))) if v.amount is not None]


def _ids(findings: list[dict[str, Any]]) -> list[int]:
    return [f["id"] for f in findings]


def _result(rule: PlaybookRule, status: RuleStatus, reason: str, findings: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "rule": rule.id,
        "clause": rule.clause.value,
        "expect": rule.expect.value,
        "status": status.value,
        "severity": rule.severity.value,
        "reason": reason,
        "finding_ids": _ids(findings),
    }


def _stands(finding: dict[str, Any]) -> bool:
    """A finding that can carry a playbook result although the support check did not confirm it:
    its quote is in the document (grounding verified), is not a bare heading, does not negate
    its clause (:func:`tasks.check.support.heading_only`, :func:`tasks.check.support.negation`), and
    no model verifier rejected it. Only the support model's category score doubted it."""
    checks = {c["name"]: c["verdict"] for c in finding.get("checks") or []}
    if checks.get("grounding") != "verified" or checks.get("verifier", "verified") != "verified":
        return False
    quote = str(finding.get("evidence") or "")
    return not heading_only(quote) and negation(quote, ClauseType(finding["clause_type"])) is None


def evaluate_rule(rule: PlaybookRule, limit: Limit | None, document: dict[str, Any]) -> dict[str, Any]:
    """One rule on one reviewed document of the report (``{findings: [{id, clause_type, verdict,
    checks, values, evidence, page, decision?}], absences: [...]}``).

    Evidence: the findings of the rule's clause that neither the fact-check nor a reviewer
    rejected and that are :func:`supported` or a reviewer approved (whatever the fact-check said);
    when there are none, those that :func:`_stands`.
    Such unconfirmed evidence may show a ``deviation`` (the reason says the support check did not
    confirm the quote, and a reviewer looks at it anyway) but never a ``pass``: that becomes
    ``unknown``, so no rule passes on a quote nobody confirmed. Findings that are only headings
    or negations of the clause make the result ``unknown``. For a rule that expects its clause
    absent, findings the fact-check dismissed (:func:`_dismissed_by_fact_check`: the quote is a heading
    only, or the support model is confident it is not the clause) are no evidence unless a reviewer
    approved them: with nothing else, the clause counts as not found. (For other rules such a finding
    still makes the result ``unknown``: the clause the rule reads may be there, missed.) A reason names
    the findings a reviewer rejected or the fact-check dismissed.

    Returns ``{rule, clause, expect, status: pass|deviation|unknown, severity, reason,
    finding_ids}``. ``limit`` is the rule's read limit (:func:`read_limit`), for duration and
    amount rules."""
    clause, name = rule.clause.value, label(rule.clause)
    rejected = [
        f["id"] for f in document.get("findings") or [] if f["clause_type"] == clause and _rejected_by_reviewer(f)
    ]
    # A clause the playbook expects absent is not shown present by a quote the fact-check dismissed.
    set_aside = [
        f["id"]
        for f in document.get("findings") or []
        if rule.expect is Expectation.absent
        and f["clause_type"] == clause
        and not _rejected_by_reviewer(f)
        and _dismissed_by_fact_check(f)
    ]
    mine = [
        f
        for f in document.get("findings") or []
        if f["clause_type"] == clause
        and not _rejected_by_reviewer(f)
        and f["id"] not in set_aside
        and (f["verdict"] in _TRUSTED or _approved_by_reviewer(f))
    ]
    evidence = [f for f in mine if supported(f) or _approved_by_reviewer(f)]
    caveat = ""
    if not evidence:
        evidence = [f for f in mine if _stands(f)]
        caveat = " (the support check did not confirm the quote: a reviewer confirms)" if evidence else ""
    doubtful = [f for f in mine if f not in evidence]
    if not evidence:
        if doubtful:
            return _result(
                rule,
                RuleStatus.unknown,
                f"{name} found only in findings the fact-check did not "
                f"confirm (a heading, a negation or a quote not found); a reviewer decides",
                doubtful,
            )
        notes = ""
        if rejected:
            notes += f" (finding(s) {', '.join(str(i) for i in rejected)} rejected by a reviewer)"
        if set_aside:
            notes += f" (finding(s) {', '.join(str(i) for i in set_aside)} dismissed by the fact-check)"
        read = _read_as_clause(rule, document)
        if any(not _rejected_by_reviewer(f) for f in read):
            return _read_elsewhere(rule, limit, [f for f in read if not _rejected_by_reviewer(f)], name, notes)
        if read:
            notes += f" (finding(s) {', '.join(str(f['id']) for f in read)}, read as {name}, rejected by a reviewer)"
        examined = next(
            (a.get("chunks_examined") for a in document.get("absences") or [] if a.get("clause_type") == clause), None
        )
        where = (f" in the {examined} examined chunk(s)" if examined else " in the reviewed document") + notes
        status = rule.when_absent()
        meaning = {
            RuleStatus.passed: "nothing to check",
            RuleStatus.deviation: "the playbook forbids its absence",
            RuleStatus.unknown: "the playbook cannot judge its absence",
        }[status]
        return _result(rule, status, f"no {name} clause found{where}: {meaning}", [])
    result = _judge(rule, limit, evidence, name)
    if caveat and result["status"] == RuleStatus.passed.value:  # no pass on a quote nobody confirmed
        result["status"] = RuleStatus.unknown.value
        result["reason"] += " — but only on quotes the support check did not confirm: a reviewer confirms"
    else:
        result["reason"] += caveat
    return result


def _read_as_clause(rule: PlaybookRule, document: dict[str, Any]) -> list[dict[str, Any]]:
    """Findings claimed as another category whose quote the support model reads as the rule's clause
    (:func:`tasks.check.support.read_as`: "quote reads as Non-Compete, not License Grant"): a clause
    claimed under the wrong category. Only findings the fact-check did not reject (verdict ``verified``
    or ``needs_review``, the quote in the document, no model verifier against it); a reviewer's
    decision on them is read by the caller."""
    found = []
    for f in document.get("findings") or []:
        checks = {c["name"]: c for c in f.get("checks") or []}
        if (
            f["clause_type"] != rule.clause.value
            and f["verdict"] in _TRUSTED
            and (checks.get("grounding") or {}).get("verdict") == "verified"
            and (checks.get("verifier") or {}).get("verdict", "verified") == "verified"
            and read_as(str((checks.get("support") or {}).get("reason") or "")) is rule.clause
        ):
            found.append(f)
    return found


def _read_elsewhere(
    rule: PlaybookRule, limit: Limit | None, read: list[dict[str, Any]], name: str, notes: str = ""
) -> dict[str, Any]:
    """The result of a rule whose clause no finding claims but :func:`_read_as_clause` findings (none a
    reviewer rejected) read as. A reviewer's approval of such a finding confirms the reading: the rule
    is judged on the approved ones like on any confirmed evidence. Otherwise it is judged on all of
    them, a ``deviation`` stands for a reviewer to confirm, and a ``pass`` becomes ``unknown``: no rule
    passes on a reading nobody confirmed. Their stated values are not read (they are values of the
    category they are claimed as, a renewal term's "one (1) year"): durations and amounts come from
    the quotes. The reason names each finding with the category it is claimed as; ``notes`` are the
    caller's remarks on the rule's own findings ("(finding(s) 3 rejected by a reviewer)")."""
    approved = [f for f in read if _approved_by_reviewer(f)]
    judged = [dict(f, values={}) for f in (approved or read)]
    result = _judge(rule, limit, judged, name)
    each = ", ".join(f"{f['id']} (claimed as {label(f['clause_type'])})" for f in judged)
    claims = f"no finding claims {name}{notes}, but the support check reads finding(s) {each} as {name}"
    if approved:
        result["reason"] = f"{claims}, and a reviewer approved it: {result['reason']}"
    elif result["status"] == RuleStatus.passed.value:
        result["status"] = RuleStatus.unknown.value
        result["reason"] = f"{claims}: a reviewer decides"
    else:
        result["reason"] = f"{claims}: {result['reason']} — a reviewer confirms"
    return result


def _where_found(evidence: list[dict[str, Any]]) -> str:
    """Where the evidence is: ``"page 3, 5"`` for pages, else the locators (``"§ 7.2 …, paragraph 3"``)."""
    located = [f for f in evidence if f.get("locator") and not str(f["locator"]).startswith("page ")]
    if located:
        return "; ".join(dict.fromkeys(str(f["locator"]) for f in located))
    return "page " + ", ".join(str(p) for p in sorted({f["page"] for f in evidence}))


#: Per value rule: what it reads, the finding values it reads first, and the kinds of value slot a
#: redaction mark must hide to hide it (``None``: the words around the mark do not say which).
_REDACTABLE: dict[Expectation, tuple[str, tuple[str, ...], frozenset[Kind | None]]] = {
    Expectation.max_amount: ("amount", ("amount",), frozenset({Kind.money, None})),
    Expectation.min_amount: ("amount", ("amount",), frozenset({Kind.money, None})),
    Expectation.max_duration: ("duration", ("duration",), frozenset({Kind.duration, None})),
    Expectation.min_duration: ("duration", ("duration",), frozenset({Kind.duration, None})),
    Expectation.allowed_values: ("", ("jurisdiction",), frozenset({None})),
}


def _redacted(rule: PlaybookRule, evidence: list[dict[str, Any]]) -> dict[str, Any] | None:
    """An ``unknown`` result when the value an amount, duration or allowed-values rule reads is
    redacted in the filed copy (Regulation S-K Item 601(b)(10)(iv), Exchange Act Rule 24b-2;
    :mod:`tasks.check.redactions`), else ``None``.

    Redacted: a finding's stated value the rule reads (``amount``, ``duration``, ``jurisdiction``)
    or its quote holds a redaction mark of a slot the rule reads (:data:`_REDACTABLE`: ``$[***]``
    or a bare ``[***]`` for an amount, ``[*] years`` or a bare mark for a duration, a bare mark for
    an allowed value), or a stated value only says "redacted". The hidden value may lie on either
    side of the limit, so such a rule is never a pass or a deviation. A finding whose stated value
    names a jurisdiction (an allowed-values rule) is not redacted by a mark elsewhere in its quote
    ("E-Mail: [***]" beside "the laws of the State of New York")."""
    spec = _REDACTABLE.get(rule.expect)
    if spec is None:
        return None
    what, names, slots = spec
    for f in evidence:
        values = f.get("values") or {}
        stated = [str(values[n]) for n in names if values.get(n)]
        if rule.expect is Expectation.allowed_values and any(
            governing_jurisdiction(v) and not find_redactions(v) for v in stated
        ):
            continue  # the jurisdiction is read from the stated value: a mark elsewhere in the quote hides another thing
        for text in [*stated, str(f.get("evidence") or "")]:
            marks = [v.raw for v in find_redactions(text) if v.slot in slots]
            if marks or (text in stated and is_redacted(text)):
                return _result(
                    rule,
                    RuleStatus.unknown,
                    f"the {what or label(rule.clause)} {REDACTED_REASON} ({(marks[0] if marks else text)!r}, "
                    f"{_where_found([f])}): a reviewer reads the unredacted contract",
                    [f],
                )
    return None


def _judge(rule: PlaybookRule, limit: Limit | None, evidence: list[dict[str, Any]], name: str) -> dict[str, Any]:
    where = _where_found(evidence)
    redacted = _redacted(rule, evidence)
    if redacted is not None:
        return redacted
    if rule.expect is Expectation.present:
        return _result(rule, RuleStatus.passed, f"{name} is present ({where})", evidence)
    if rule.expect is Expectation.absent:
        return _result(
            rule, RuleStatus.deviation, f"{name} is present ({where}); the playbook expects it absent", evidence
        )
    if rule.expect is Expectation.allowed_values:
        return _allowed(rule, evidence)
    if rule.expect in (Expectation.max_duration, Expectation.min_duration):
        return _compare(rule, limit, evidence, _durations, "duration")
    return _compare(rule, limit, evidence, _amounts, "amount")


def _allowed(rule: PlaybookRule, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    allowed = {canonical_value(v): v for v in rule.values or []}
    governing = [f for f in evidence if re.search(r"\bgovern", str(f.get("evidence") or ""), re.I)] or evidence
    readings: list[tuple[dict[str, Any], str]] = []
    for f in governing:
        text = _text_of(f, ("jurisdiction",))
        if rule.clause.value == "governing_law":
            # the finding's value, else its quote (a value the reader does not know: "Papua New Guinea")
            reading = governing_jurisdiction(text) or governing_jurisdiction(str(f.get("evidence") or ""))
        else:
            reading = canonical_value(text)
        if reading:
            readings.append((f, reading))
    if not readings:
        return _result(
            rule, RuleStatus.unknown, f"could not read the {label(rule.clause)} value in the findings", evidence
        )
    first_finding, first = readings[0]
    ok = [f for f, r in readings if r in allowed]
    if first in allowed:
        return _result(rule, RuleStatus.passed, f"{first} (allowed: {', '.join(rule.values or [])})", ok)
    return _result(
        rule,
        RuleStatus.deviation,
        f"{first}, not one of {', '.join(rule.values or [])} ({_where_found([first_finding])})",
        [f for f, r in readings if r == first],
    )


def _compare(
    rule: PlaybookRule, limit: Limit | None, evidence: list[dict[str, Any]], read: Any, what: str
) -> dict[str, Any]:
    if limit is None:
        return _result(rule, RuleStatus.unknown, f"the rule's value {rule.value!r} could not be read", evidence)
    is_max = rule.expect.value.startswith("max")
    read_from: list[tuple[dict[str, Any], Value]] = [(f, v) for f in evidence for v in read(f)]
    if what == "amount":
        other = [(f, v) for f, v in read_from if (v.unit or "USD") != limit.currency]
        read_from = [(f, v) for f, v in read_from if (v.unit or "USD") == limit.currency]
        if not read_from and other:
            return _result(
                rule,
                RuleStatus.unknown,
                f"the amount is in {other[0][1].unit or 'an unnamed currency'}, the rule in {limit.currency}",
                [f for f, _ in other],
            )
    if not read_from:
        return _result(
            rule,
            RuleStatus.unknown,
            f"no {what} could be read in the {label(rule.clause)} findings (e.g. a limit not stated as a fixed {what})",
            evidence,
        )

    def size(v: Value) -> Decimal:
        return to_days(v) if what == "duration" else (v.amount or Decimal(0))

    bound = limit.days if what == "duration" else limit.amount
    assert bound is not None
    worst_f, worst = (max if is_max else min)(read_from, key=lambda fv: size(fv[1]))
    fails = size(worst) > bound if is_max else size(worst) < bound
    word = "at most" if is_max else "at least"
    if fails:
        return _result(
            rule,
            RuleStatus.deviation,
            f"{worst.raw.strip()} ({_where_found([worst_f])}); the playbook allows {word} {limit.raw}",
            [worst_f],
        )
    return _result(
        rule,
        RuleStatus.passed,
        f"{worst.raw.strip()} is {word} {limit.raw}",
        list({id(f): f for f, _ in read_from}.values()),
    )


def evaluate_document(playbook: LoadedPlaybook, document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rule of ``playbook`` on one document of the report; ``[]`` unless the document was
    reviewed (a failed or deferred document has nothing to judge) under the contract profile (a
    playbook's rules are CUAD contract categories: an SEC filing is not judged by them) as an agreement
    whose clauses are expected (its ``not_judged`` is None: a memo, an exhibit that is no agreement, an SEC
    form or a partial copy is not judged, :func:`tasks.check.absences.contract_expected`)."""
    if document.get("status") != "reviewed" or document.get("profile", "contract") != "contract":
        return []
    if document.get("not_judged"):
        return []
    return [
        with_redline(evaluate_rule(rule, playbook.limits.get(rule.id), document), document)
        for rule in playbook.playbook.rules
    ]


def with_redline(result: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """``result`` with its reason saying which tracked changes of a DOCX introduced its evidence
    ("…; the redline replaces '$1,000,000' with '$5,000,000' (J. Smith, 2026-03-14)"), from the
    findings' ``redline`` (:func:`tasks.observe.report.redline_of`); ``redline`` lists them."""
    ids = set(result.get("finding_ids") or [])
    notes: list[str] = []
    changes: list[dict[str, Any]] = []
    for f in document.get("findings") or []:
        if f.get("id") in ids:
            for change in f.get("redline") or []:
                if change.get("note") and change["note"] not in notes:
                    notes.append(change["note"])
                    changes.append(change)
    if not notes:
        return result
    return {**result, "reason": f"{result['reason']}; {'; '.join(notes)}", "redline": changes}
