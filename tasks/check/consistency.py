"""Consistency: key terms (dates, parties, law, amounts) must agree across a document's findings."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.findings import CheckedFinding, CheckResult, Verdict
from schemas.taxonomy import ClauseType
from tasks.check.index import DocumentIndex
from tasks.check.values import (
    DateOrder,
    Kind,
    Match,
    Value,
    compare,
    extract_values,
)
from tasks.check.verdicts import DISMISSED_REASON, VERDICT_SEVERITY, overall_verdict
from tasks.runnames import for_document
from tasks.textnorm import match_form

C = ClauseType


@dataclass(frozen=True)
class Term:
    """A contract term that one document should state one way: which findings state it and how.

    ``clause_types`` (empty = any) and ``value_names`` (regex over value names, ``None`` = any)
    select the values; ``kind`` is the value kind compared (``None`` = jurisdiction text).
    """

    name: str
    clause_types: frozenset[ClauseType]
    kind: Kind | None
    value_names: str | None = None
    cue: str | None = None


TERMS: tuple[Term, ...] = (
    Term(
        "term length",
        frozenset({C.expiration_date}),
        Kind.duration,
        cue=r"\b(?:initial )?term\b[^.;]{0,60}(?:shall|will|is|of)|(?:continue|remain) in (?:full )?(?:force|effect)",
    ),
    Term("renewal term", frozenset({C.renewal_term}), Kind.duration, cue=r"renew|extend|extension"),
    Term("notice period", frozenset({C.notice_period_to_terminate_renewal}), Kind.duration, cue=r"notice"),
    Term(
        "governing law",
        frozenset({C.governing_law}),
        None,
        r"jurisdiction|governing|law|state|country",
        cue=r"govern|constru|interpret",
    ),
    Term("liability cap", frozenset({C.cap_on_liability}), Kind.money, cue=r"liabilit|liable"),
    Term("payment amount", frozenset(), Kind.money, r"^(?:payment|payment_amount|fee|fees|price|purchase_price)$"),
    # An agreement-date finding claims the date of this agreement: a title line ("LICENSE AGREEMENT
    # dated April 2, 2020"), "Dated:", "as of" or "made/entered into/executed" all state it.
    Term(
        "agreement date",
        frozenset({C.agreement_date}),
        Kind.date,
        cue=r"\b(?:this|the) [^.;]{0,80}?(?:agreement|contract|amendment)\b[^.;]{0,80}?\b(?:dated|made|entered into|executed)\b"
        r"|\b(?:dated|as of|made|entered into|executed|signed)\b",
    ),
    Term(
        "effective date",
        frozenset({C.effective_date}),
        Kind.date,
        cue=r"\b(?:this|the) [^.;]{0,80}?(?:agreement|contract|amendment)\b[^.;]{0,80}?\beffective\b",
    ),
    Term(
        "expiration date",
        frozenset({C.expiration_date}),
        Kind.date,
        cue=r"\b(?:this|the) (?:agreement|contract|initial term|term)\b[^.;]{0,80}?(?:expire|terminate|end|continue)",
    ),
)


#: Characters before a value searched for its term's cue.
CUE_WINDOW = 200


_RECITAL = re.compile(r"^\W*(?:recitals?\W+)?(?:\(?[a-z0-9]{1,3}[.)]\s*)?whereas\b|\bthat certain\b", re.I)


_JUR_NOISE = re.compile(
    r"\b(?:the|laws?|of|state|commonwealth|province|republic|kingdom|government|federal|substantive|internal)\b|[.,']"
)


_JUR_ANY = {"united states", "united states of america", "usa", "us", "u s a", "u s"}


def _jurisdiction(value: str) -> str | None:
    j = re.sub(r"\s+", " ", _JUR_NOISE.sub(" ", match_form(value)[0])).strip()
    if not j or j in _JUR_ANY:
        return None  # federal law sits beside any state's law
    return j


def _term_values(cf: CheckedFinding, term: Term, order: DateOrder) -> list[tuple[str, Any]]:
    """``[(raw, comparable)]`` for the values of ``cf`` that state ``term``."""
    f = cf.finding
    if term.clause_types and f.clause_type not in term.clause_types:
        return []
    if term.cue and _RECITAL.search(f.evidence):
        return []
    out: list[tuple[str, Any]] = []
    for item in f.values:
        if term.value_names and not re.search(term.value_names, item.name, re.I):
            continue
        if term.cue:
            at = f.evidence.find(item.value)
            before = f.evidence[max(0, at - CUE_WINDOW) : at] if at >= 0 else f.evidence
            before = re.split(r"[.;]\s", before)[-1]  # the value's own sentence
            if not re.search(term.cue, re.sub(r"\s+", " ", before), re.I):
                continue
        if term.kind is None:
            j = _jurisdiction(item.value)
            if j:
                out.append((item.value, j))
            continue
        for v in extract_values(item.value, order):
            if v.kind is term.kind:
                out.append((v.raw, v))
    return out


def _agree(a: Any, b: Any) -> bool:
    if isinstance(a, Value) and isinstance(b, Value):
        return compare(a, b) is not Match.different
    return a == b or (isinstance(a, str) and isinstance(b, str) and (a in b or b in a))


def consistency(
    checked: list[CheckedFinding],
    date_order: DateOrder = DateOrder.unknown,
    pointer: Callable[[CheckedFinding], str] | None = None,
) -> list[CheckedFinding]:
    """Add a ``consistency`` check to every finding that states a :data:`TERMS` term.

    Two findings conflict when both state the term and no value of one agrees with any value of
    the other; both become ``contradicted`` and each reason points at the other finding — unless the
    support check confirms one and doubts the other: then only the doubted one is contradicted (a
    jury-waiver sentence's "New York" claimed as Governing Law does not unseat "the laws of Japan")
    (``pointer(cf)``, default: clause type, page and the start of the quote). Findings whose
    quote was not found (``unsupported``) and findings the fact-check dismissed (a ``support`` reason
    starting with :data:`~tasks.check.verdicts.DISMISSED_REASON`: a heading only, or a quote that is
    not the clause it claims) are not evidence and are skipped. Returns new
    :class:`CheckedFinding` objects in input order; findings stating no term are unchanged.
    """
    pointer = pointer or _default_pointer
    by_term: list[tuple[Term, list[tuple[int, list[tuple[str, Any]]]]]] = []
    for term in TERMS:
        stated = []
        for i, cf in enumerate(checked):
            if cf.verdict is Verdict.unsupported or _dismissed(cf):
                continue
            vals = _term_values(cf, term, date_order)
            if vals:
                stated.append((i, vals))
        if stated:
            by_term.append((term, stated))
    extra: dict[int, list[CheckResult]] = {}
    for term, stated in by_term:
        for i, vals in stated:
            conflicts = []
            agreeing = 0
            for j, other in stated:
                if j == i:
                    continue
                if _doubted(checked[j]) and not _doubted(checked[i]):
                    continue  # the weaker evidence yields: a quote the support check doubts contradicts none it confirms
                if any(_agree(a, b) for _, a in vals for _, b in other):
                    agreeing += 1
                else:
                    conflicts.append((j, other))
            if conflicts:
                shown = "; ".join(
                    f"{', '.join(repr(r) for r, _ in other[:2])} in {pointer(checked[j])}" for j, other in conflicts[:3]
                )
                extra.setdefault(i, []).append(
                    CheckResult(
                        name="consistency",
                        verdict=Verdict.contradicted,
                        reason=f"{term.name} {', '.join(repr(r) for r, _ in vals[:2])} conflicts with {shown}",
                    )
                )
            else:
                extra.setdefault(i, []).append(
                    CheckResult(
                        name="consistency",
                        verdict=Verdict.verified,
                        reason=(
                            f"{term.name} agrees with {agreeing} other finding(s)"
                            if agreeing
                            else f"the only finding stating the {term.name}"
                        ),
                    )
                )
    out = []
    for i, cf in enumerate(checked):
        if i not in extra:
            out.append(cf)
            continue
        merged = _merge_consistency(extra[i])
        checks = [c for c in cf.checks if c.name != "consistency"] + [merged]
        out.append(
            CheckedFinding(
                finding=cf.finding,
                chunk_index=cf.chunk_index,
                ordinal=cf.ordinal,
                stated_page=cf.stated_page,
                verdict=overall_verdict(checks),
                checks=checks,
            )
        )
    return out


def _doubted(cf: CheckedFinding) -> bool:
    """The support check doubts the finding's quote is its clause (its ``support`` check is not
    ``verified``); a finding without a support check is not doubted."""
    return any(c.name == "support" and c.verdict is not Verdict.verified for c in cf.checks)


def _dismissed(cf: CheckedFinding) -> bool:
    return any(c.name == "support" and c.reason.startswith(DISMISSED_REASON) for c in cf.checks)


def _merge_consistency(results: list[CheckResult]) -> CheckResult:
    """One ``consistency`` check per finding (the check name is unique per finding when stored)."""
    if len(results) == 1:
        return results[0]
    verdict = max((r.verdict for r in results), key=VERDICT_SEVERITY.__getitem__)
    return CheckResult(name="consistency", verdict=verdict, reason="; ".join(r.reason for r in results))


def _default_pointer(cf: CheckedFinding, index: DocumentIndex | None = None) -> str:
    """``the cap_on_liability finding on page 4 ("…")``: the finding's category, where it is (``index``: a DOCX
    paragraph, an HTML filing's page, :meth:`DocumentIndex.on`) and the start of its quote."""
    quote = cf.finding.evidence.strip().replace("\n", " ")
    where = index.on(cf.finding.page) if index is not None else f"on page {cf.finding.page}"
    return f'the {cf.finding.clause_type.value} finding {where} ("{quote[:60]}…")'


@task(name="check-consistency", task_run_name=for_document("check-consistency"), cache_policy=NO_CACHE)
def check_consistency(
    checked: list[CheckedFinding],
    index: DocumentIndex | None = None,
    sha256: str | None = None,
    prompt_version: str | None = None,
    model: str | None = None,
) -> list[CheckedFinding]:
    """Prefect task: :func:`consistency` over all checked findings of one document.

    With ``sha256``/``prompt_version``/``model`` given, each pointer names the other finding's
    ``finding_key`` (first 12 hex digits), the natural key it is stored under.
    """

    def pointer(cf: CheckedFinding) -> str:
        if not (sha256 and prompt_version and model):
            return _default_pointer(cf, index)
        from tasks.store.persist import finding_key  # persist imports this module

        key = finding_key(sha256, prompt_version, model, cf.finding.clause_type.value, cf.finding.evidence)
        return f"finding {key[:12]} ({_default_pointer(cf, index)[4:]})"

    return consistency(checked, index.date_order if index else DateOrder.unknown, pointer)
