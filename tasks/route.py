"""Route: decide which chunks need the deep (LLM) review and which are boilerplate to skip.

Most of a contract is boilerplate; CUAD's authors report that the clauses a lawyer looks for
make up about 10 % of a contract's text (Hendrycks et al., "CUAD: An Expert-Annotated NLP
Dataset for Legal Contract Review", 2021, https://arxiv.org/abs/2103.06268). The router looks
for *decision-point signals* in each chunk and sends a chunk ``deep`` when any fires, recording
which ones as the reason; otherwise the chunk is ``skip`` with reason ``"no decision-point signal"``.

Signals, in the order they are reported:

- ``preamble``: the first chunk of a document (title, parties, dates, recitals);
- ``clause:<category>``: a clause pattern of the offline rules backend
  (:mod:`tasks.backends.rules`, written from the CUAD v1 category definitions) matched;
- ``term:<name>``: decision-point vocabulary of the CUAD taxonomy (exclusivity, renewal, options
  and first rights, consent to assignment, grants, minimum commitments, percentages of
  revenue, audit, insurance, covenants not to challenge, beneficiaries, signature blocks),
  each with the number of occurrences a chunk must hold before it counts;
- ``payment`` / ``confidentiality`` / ``data_protection``: obligations that CUAD has no
  category for but a compliance review must see (payment terms and amounts, confidentiality
  obligations, personal-data processing).

The routing rate of a set of chunks is measured over the *document text coverage*: the
characters covered by the union of the ``deep`` chunks' ``[char_start, char_end)`` ranges
divided by the characters covered by the union of all chunks' ranges (:func:`routing_rate`).
Chunks overlap, so summing chunk lengths would count overlap twice; the union cannot be gamed
by overlap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from schemas.documents import Chunk

#: Bumped when the routing signals change meaning.
ROUTER_VERSION = "route-v1"

#: Routing modes accepted by the flow (``auto`` is resolved per backend by :func:`resolve_mode`).
ROUTING_MODES = ("auto", "all", "decision-points")

Route = Literal["deep", "skip"]

_I = re.IGNORECASE


def _rx(pattern: str) -> re.Pattern[str]:
    """Compile case-insensitively; a literal space in ``pattern`` matches any whitespace run."""
    return re.compile(pattern.replace(" ", r"\s+"), _I)


#: Decision-point vocabulary: name -> (pattern, occurrences needed in one chunk).
#: Thresholds above 1 are for words that also occur in boilerplate (one "assign" is usually the
#: successors-and-assigns clause; three in a chunk is an assignment clause).
TERM_SIGNALS: dict[str, tuple[re.Pattern[str], int]] = {
    "exclusivity": (_rx(r"(?<!non-)(?<!non)exclusiv(?!e (?:remed|jurisdiction))"), 1),
    "beneficiary": (_rx(r"beneficiar"), 1),
    "minimum_commitment": (_rx(r"minimum (?:\w+ )?(?:purchase|order|quantit|volume|commitment|royalt|payment|fee|sales|"
                               r"revenue|guarantee|amount|number|annual)"), 1),
    "share_of_revenue": (_rx(r"(?:%|percent)\)? of (?:the |all |its |such )?(?:net|gross|total|aggregate|revenue|sales|"
                             r"profit|price|amount|fees)"), 1),
    "royalty": (_rx(r"royalt"), 1),
    "first_right": (_rx(r"first (?:refusal|offer|negotiat)|last (?:refusal|offer|look)|right of first|"
                        r"option to (?:purchase|acquire|license|negotiat|extend|renew)|right to (?:negotiate|match)"), 1),
    "non_compete": (_rx(r"\bcompet(?!en)"), 1),
    "non_solicit": (_rx(r"(?<!un)solicit|\bhire\b|recruit"), 2),
    "disparagement": (_rx(r"disparag|derogat"), 1),
    "change_of_control": (_rx(r"change (?:of|in) control|substantially all|merger|consolidation"), 1),
    "renewal": (_rx(r"renew|evergreen"), 2),
    "term": (_rx(r"\bterm of\b|initial term|shall (?:continue|remain) in (?:full )?(?:force|effect)|expir"), 3),
    "governing_law": (_rx(r"governed by|governing law|laws of"), 2),
    "covenant_not_to_sue": (_rx(r"contest|challenge|\bsue\b|impugn|covenant not"), 2),
    "consent_to_assign": (_rx(r"prior written consent|without (?:the )?(?:prior )?(?:written )?consent"), 2),
    "assignment": (_rx(r"\bassign|transfer"), 3),
    "grant": (_rx(r"\bgrant"), 2),
    "perpetual": (_rx(r"perpetu|irrevocabl"), 1),
    "option": (_rx(r"\boption\b"), 2),
    "termination": (_rx(r"terminat"), 3),
    "audit": (_rx(r"audit|inspect|books and records"), 3),
    "minimum": (_rx(r"\bminimum\b|\bat least\b|not less than|no less than"), 3),
    "insurance": (_rx(r"insur"), 2),
    "damages": (_rx(r"damages|consequential|punitive"), 2),
    "escrow": (_rx(r"escrow|source code"), 1),
    "joint_ownership": (_rx(r"\bjoint(?:ly)? own|co-own|undivided"), 1),
    "unlimited": (_rx(r"unlimited|enterprise[- ]wide"), 1),
    "signature_block": (_rx(r"in witness whereof|\bby: |\bname: |\btitle: "), 3),
}

#: Non-CUAD obligations routed deep: name -> pattern (one occurrence is enough).
OBLIGATION_SIGNALS: dict[str, re.Pattern[str]] = {
    "payment": _rx(
        r"(?:due|payable) (?:and payable )?(?:within|upon|on|net)|\bnet \d{1,3}\b|(?:shall|will|agrees? to) pay|"
        r"\binvoice[sd]?\b[^.;]{0,80}(?:within|days)|late (?:payment|charge)|interest (?:at|on) (?:the )?(?:rate|overdue|late)"
    ),
    "confidentiality": _rx(
        r"confidential information|(?:shall|will|agrees? to) (?:hold|keep|maintain|treat)[^.;]{0,60}(?:confiden|secret)|"
        r"non-?disclosure|(?:shall|will) not disclose|trade secrets?"
    ),
    "data_protection": _rx(
        r"personal (?:data|information)|data protection|data privacy|\bprivacy\b|\bGDPR\b|\bHIPAA\b|data breach|"
        r"security (?:incident|breach)|sub-?processor|data subject|process(?:es|ing)? (?:such )?personal"
    ),
}


class RouteDecision(BaseModel):
    """The router's decision for one chunk.

    ``route`` is ``deep`` (send to the deep review) or ``skip``; ``reason`` is a short,
    human-readable list of the signals that fired (``"preamble; clause:governing_law"``) or
    ``"no decision-point signal"``; ``signals`` holds the same signal names as a list.
    """

    chunk_index: int
    route: Route
    reason: str
    signals: list[str] = Field(default_factory=list)


def _clause_signals(chunk: Chunk) -> list[str]:
    """CUAD categories the offline clause patterns find in ``chunk`` (``clause:<category>``)."""
    from tasks.backends.rules import RulesBackend

    review = RulesBackend().review_chunk(chunk, "")
    seen: list[str] = []
    for finding in review.findings:
        name = f"clause:{finding.clause_type.value}"
        if name not in seen:
            seen.append(name)
    return seen


def decision_signals(chunk: Chunk) -> list[str]:
    """Names of the decision-point signals that fire on ``chunk`` (see module docstring).

    Pure and deterministic; returns ``[]`` for a boilerplate chunk. Never raises on odd text.
    """
    signals: list[str] = []
    if chunk.index == 0:
        signals.append("preamble")
    text = chunk.text
    if not text.strip():
        return signals
    signals += _clause_signals(chunk)
    for name, (pattern, needed) in TERM_SIGNALS.items():
        count = 0
        for _ in pattern.finditer(text):
            count += 1
            if count >= needed:
                signals.append(f"term:{name}")
                break
    for name, pattern in OBLIGATION_SIGNALS.items():
        if pattern.search(text):
            signals.append(name)
    return signals


def route_chunk(chunk: Chunk) -> RouteDecision:
    """Decide ``deep`` or ``skip`` for one chunk from its decision-point signals."""
    signals = decision_signals(chunk)
    if not signals:
        return RouteDecision(chunk_index=chunk.index, route="skip", reason="no decision-point signal")
    shown = signals[:6]
    reason = "; ".join(shown) + (f"; +{len(signals) - len(shown)} more" if len(signals) > len(shown) else "")
    return RouteDecision(chunk_index=chunk.index, route="deep", reason=reason, signals=signals)


def resolve_mode(routing: str, backend_name: str) -> Literal["all", "decision-points"]:
    """Resolve a routing mode: ``auto`` is ``decision-points`` for LLM backends, ``all`` for ``rules``.

    Raises ``ValueError`` for a mode not in :data:`ROUTING_MODES`.
    """
    if routing not in ROUTING_MODES:
        raise ValueError(f"unknown routing mode {routing!r} (choose one of {', '.join(ROUTING_MODES)})")
    if routing == "auto":
        return "all" if backend_name == "rules" else "decision-points"
    return routing  # type: ignore[return-value]


def route_all(chunks: Sequence[Chunk], mode: str) -> list[RouteDecision]:
    """Decisions for every chunk of a document, in chunk order.

    ``mode == "all"`` sends every chunk deep (reason ``"routing=all"``) without evaluating
    signals; ``"decision-points"`` applies :func:`route_chunk`. Raises ``ValueError`` for any
    other mode (resolve ``auto`` first with :func:`resolve_mode`).
    """
    if mode == "all":
        return [RouteDecision(chunk_index=c.index, route="deep", reason="routing=all") for c in chunks]
    if mode != "decision-points":
        raise ValueError(f"unresolved routing mode {mode!r}")
    return [route_chunk(c) for c in chunks]


@task(name="route-chunks", cache_policy=NO_CACHE)
def route_chunks(chunks: list[Chunk], mode: str) -> list[RouteDecision]:
    """Prefect task: :func:`route_all` over one document's chunks."""
    return route_all(chunks, mode)


def covered_chars(ranges: Iterable[tuple[int, int]]) -> int:
    """Characters covered by the union of half-open ``[start, end)`` ranges (overlap counted once)."""
    total, reach = 0, None
    for start, end in sorted(ranges):
        if end <= start:
            continue
        if reach is None or start >= reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def routing_rate(ranges: Iterable[tuple[int, int]], deep_ranges: Iterable[tuple[int, int]]) -> float:
    """Share of document text coverage in deep chunks: ``covered_chars(deep) / covered_chars(all)``.

    ``ranges`` are every chunk's ``(char_start, char_end)``; ``deep_ranges`` the deep chunks'.
    Returns 0.0 when there is no text.
    """
    total = covered_chars(ranges)
    return covered_chars(deep_ranges) / total if total else 0.0
