"""Offline rules of the filing profile: sentence patterns per :class:`schemas.filings.FilingTopic`,
Form 8-K Item headings, risk-factor headings and key figures from the financial statements.

Written from the SEC forms and rules named in :mod:`schemas.filings` (Form 8-K Items 1.01,
4.01, 4.02, 5.02; Regulation S-K Items 103, 106 (Item 1C), 308 (Item 9A), 404; PCAOB AS 2415 and
AS 3101). Same guarantees as :mod:`tasks.review.backends.rules`: ``evidence`` is an exact
substring of ``chunk.text`` of at most :data:`MAX_EVIDENCE_CHARS` characters, every value is a
substring of its evidence, ``page`` is the page the evidence starts on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from schemas.documents import Chunk
from schemas.filings import HIGH_RISK_TOPICS, FilingFinding, FilingTopic, KeyFigureName
from schemas.findings import FindingValue, Risk
from schemas.review import ChunkReview
from tasks.review.filing import (
    ITEM_LINE,
    OUTFLOWS,
    figure_lines,
    risk_heading_spans,
    statement_kind,
    statement_period,
    statement_unit,
)

MAX_EVIDENCE_CHARS = 600
T = FilingTopic
_I = re.IGNORECASE

#: Sentence rules: (topic, pattern that must match the sentence, pattern that must not).
SENTENCE_RULES: list[tuple[FilingTopic, re.Pattern[str], re.Pattern[str] | None]] = [
    (T.going_concern, re.compile(r"substantial\s+doubt[^.]{0,80}going\s+concern", _I), None),
    (
        T.material_weakness,
        re.compile(
            r"material\s+weakness(?:es)?\b[^.]{0,120}\b(?:identified|exist|existed|"
            r"was\s+identified|were\s+identified)|(?:internal\s+control\s+over\s+financial\s+"
            r"reporting|disclosure\s+controls\s+and\s+procedures)\s+(?:was|were)\s+not\s+effective",
            _I,
        ),
        re.compile(r"\b(?:may|could|might|if\s+we|any\s+material\s+weakness|risk\s+that|assess\w*)\b", _I),
    ),
    (
        T.restatement,
        re.compile(
            r"\brestate(?:d|ment)\b[^.]{0,120}\b(?:previously\s+issued|financial\s+statements)|"
            r"should\s+no\s+longer\s+be\s+relied\s+upon|non-reliance",
            _I,
        ),
        re.compile(r"\b(?:may|could|might)\b", _I),
    ),
    (
        T.auditor_change,
        re.compile(
            r"(?:dismiss(?:ed)?|engage(?:d)?|appoint(?:ed)?|resign(?:ed)?|declin\w+\s+to\s+stand)"
            r"[^.]{0,120}independent\s+registered\s+public\s+accounting\s+firm[^.]{0,40}"
            r"(?:for\s+(?:the\s+)?(?:fiscal\s+)?year|effective|as\s+of)",
            _I,
        ),
        re.compile(r"\bratif", _I),
    ),
    (
        T.auditor_opinion,
        re.compile(
            r"(?:In\s+our\s+opinion,\s+the\s+(?:consolidated\s+)?financial\s+statements\s+present\s+"
            r"fairly|In\s+our\s+opinion,\s+the\s+Company\s+maintained)",
            _I,
        ),
        None,
    ),
    (
        T.legal_proceedings,
        re.compile(
            r"(?:class\s+action|lawsuits?|complaint|litigation|suit)\b[^.]{0,160}\b(?:filed|"
            r"alleg\w+|pending|seeking|seeks|settle\w*|verdict|damages)",
            _I,
        ),
        re.compile(
            r"\b(?:could|may|might|can)\s+(?:be\s+)?(?:subject|result|adversely|have|become|incur)|\bshall\b", _I
        ),
    ),
    (
        T.regulatory_investigation,
        re.compile(
            r"\b(?:subpoenas?|civil\s+investigative\s+demands?|"
            r"(?:investigation|inquiry|inquiries)\s+(?:by|from|of)\s+the\s+(?:SEC|"
            r"Securities\s+and\s+Exchange\s+Commission|U\.S\.\s+Department\s+of\s+Justice|"
            r"DOJ|Federal\s+Trade\s+Commission|FTC|attorneys?\s+general))",
            _I,
        ),
        re.compile(r"\b(?:could|may|might)\s+(?:be|become|result)|\bshall\b", _I),
    ),
    (
        T.cybersecurity,
        re.compile(
            r"(?:cybersecurity\s+incident|data\s+breach|ransomware|unauthorized\s+access\s+to)[^.]{0,160}"
            r"\b(?:experienced|occurred|detected|identified|discovered)\b|"
            r"(?:Chief\s+Information\s+Security\s+Officer|CISO)\b[^.]{0,200}",
            _I,
        ),
        None,
    ),
    (
        T.related_party_transactions,
        re.compile(r"related[- ]part(?:y|ies)\s+transactions?[^.]{0,200}\$\s?[\d,.]+", _I),
        None,
    ),
    (
        T.debt_covenants,
        re.compile(
            r"(?:\bcovenants?\b[^.]{0,160}\b(?:complian\w+|breach\w*|waiv\w+|amend\w*|default)|"
            r"\b(?:waiver|amendment)\b[^.]{0,80}\bcovenants?\b)",
            _I,
        ),
        re.compile(r"\b(?:could|might|if\s+we|shall)\b|this\s+Agreement|not\s+to\s+compete", _I),
    ),
    (
        T.impairment,
        re.compile(
            r"(?:recogni[sz]ed|recorded|incurred)\s+(?:a\s+|an\s+)?(?:non-cash\s+|pre-tax\s+)?"
            r"(?:goodwill\s+|intangible\s+asset\s+|asset\s+|long-lived\s+asset\s+)?impairment\s+"
            r"(?:charges?|loss(?:es)?)[^.]{0,120}\$\s?[\d,.]+|impairment\s+(?:charges?|loss(?:es)?)\s+of\s+"
            r"\$\s?[\d,.]+",
            _I,
        ),
        None,
    ),
    (
        T.subsequent_events,
        re.compile(
            r"\bsubsequent\s+(?:event|to\s+(?:the\s+)?(?:end\s+of\s+(?:the\s+)?|)(?:fiscal\s+)?"
            r"(?:year|quarter|period)(?:\s+end)?)\b[^.]{0,40},\s",
            _I,
        ),
        None,
    ),
    (
        T.executive_change,
        re.compile(
            r"(?:announced|notified|informed)[^.]{0,120}\b(?:resign\w*|retire\w*|step\s+down|"
            r"depart\w*)[^.]{0,80}\b(?:Chief|President|Officer|Director)|"
            r"(?:appointed|named|elected)[^.]{0,60}\b(?:Chief\s+\w+\s+Officer|President)\b",
            _I,
        ),
        re.compile(
            r"\b(?:may|could)\b|\b(?:was|were)\s+(?:appointed|named|elected)\b[^.]*\b(?:in|since)\s+(?:[A-Z][a-z]+\s+)?"
            r"(?:19|20)\d\d\b|\bfrom\s+[A-Z][a-z]+\s+(?:19|20)\d\d\s+(?:to|until)\b|\bhas\s+served\b"
        ),
    ),
    (
        T.acquisition_disposition,
        re.compile(
            r"\b(?:completed|closed|consummated)\s+(?:the|its|our)\s+(?:previously\s+"
            r"announced\s+)?(?:acquisition|sale|divestiture|disposition|spin-off|"
            r"separation|split-off)\s+of\b|\bIn\s+connection\s+with\s+(?:this|the)\s+"
            r"acquisition,\s+we\s+recorded",
            _I,
        ),
        re.compile(r"\b(?:may|could|might|if\s+we|shall)\b", _I),
    ),
    (
        T.dividends_and_repurchases,
        re.compile(
            r"\b(?:Board|Directors)\b[^.]{0,80}\b(?:authorized|approved|declared|"
            r"determined\s+to\s+suspend|suspended|increased|reduced)\b[^.]{0,80}\b"
            r"(?:dividends?|repurchase|buyback)|\b(?:reduced|suspended|increased|"
            r"eliminated|reinstated)\s+(?:our|the|its)\s+(?:annual\s+|quarterly\s+)?"
            r"(?:cash\s+)?dividend|share\s+repurchase\s+programs?\s+(?:have|has)\s+been\s+"
            r"authorized"
        ),
        re.compile(r"\b(?:may|could|might|if\s+we|shall)\b", _I),
    ),
    (
        T.material_agreement,
        re.compile(
            r"entered\s+into\s+(?:a|an|the)\s+[^.]{0,80}(?:Agreement|Credit\s+Facility|"
            r"Indenture|Merger)\b",
            re.S,
        ),
        None,
    ),
]

#: Words (casefolded) one of which every match of a topic's :data:`SENTENCE_RULES` pattern contains:
#: a sentence holding none of them is not searched with that pattern (a substring test is far
#: cheaper than a regular-expression scan; most sentences of a filing match no rule).
SENTENCE_RULE_WORDS: dict[FilingTopic, tuple[str, ...]] = {
    T.going_concern: ("doubt",),
    T.material_weakness: ("weakness", "effective"),
    T.restatement: ("restate", "relied", "non-reliance"),
    T.auditor_change: ("independent",),
    T.auditor_opinion: ("opinion",),
    T.legal_proceedings: ("action", "complaint", "litigation", "suit"),
    T.regulatory_investigation: ("subpoena", "investigative", "investigation", "inquir"),
    T.cybersecurity: ("security", "breach", "ransomware", "unauthorized", "ciso"),
    T.related_party_transactions: ("related",),
    T.debt_covenants: ("covenant",),
    T.impairment: ("impairment",),
    T.subsequent_events: ("subsequent",),
    T.executive_change: ("announced", "notified", "informed", "appointed", "named", "elected"),
    T.acquisition_disposition: ("completed", "closed", "consummated", "connection"),
    T.dividends_and_repurchases: ("board", "directors", "dividend", "repurchase"),
    T.material_agreement: ("entered",),
}


def _fold(text: str) -> str:
    """``text`` casefolded as far as ``re.IGNORECASE`` folds it for :data:`SENTENCE_RULE_WORDS`:
    ``casefold()``, then dotless ``ı`` to ``i`` and the combining dot that ``İ`` casefolds to
    dropped (the ``re`` module matches both ``ı`` and ``İ`` to ``i``; ``ſ`` and the Kelvin sign
    casefold to ``s`` and ``k`` already). Only a filter: dropping a character can only let more
    sentences through to the patterns."""
    return text.casefold().replace("\u0131", "i").replace("\u0307", "")


#: Form 8-K Items and the topic each one reports (Form 8-K, General Instructions B and Items).
ITEMS_8K: dict[str, FilingTopic] = {
    "1.01": T.material_agreement,
    "1.02": T.material_agreement,
    "2.01": T.acquisition_disposition,
    "2.03": T.debt_covenants,
    "2.04": T.debt_covenants,
    "2.06": T.impairment,
    "4.01": T.auditor_change,
    "4.02": T.restatement,
    "5.02": T.executive_change,
}
_8K_ITEM = re.compile(r"^[ \t]*Item\s+(\d\.\d{2})\.?\s*([^\n]{0,160})", _I | re.M)
#: A sentence: up to 1,200 characters ending in . ! or ?, across single line breaks; a decimal point
#: ("$1.47") does not end it. :func:`_sentences` finds the same spans as ``_SENTENCE.finditer``
#: without its cost on text with no full stop (tables): the lazy repeat tries up to 1,200
#: characters from every position there.
_SENTENCE = re.compile(r"(?:[^.!?\n]|\.(?=\d)|\n(?!\n)){1,1200}?[.!?](?!\d)")
_SENTENCE_MAX = 1200
#: Where a sentence must stop: its end mark (group 1), or a character no sentence runs across (a
#: blank line, a ! or ? before a digit).
_SENTENCE_STOP = re.compile(r"([.!?])(?!\d)|\n(?=\n)|[!?]")


def _sentences(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each match of :data:`_SENTENCE` in ``text``, in order, found in linear time.

    Between two stops every character may be in a sentence, so the earliest match before an end
    mark at ``q`` starts at ``max(pos, q - 1200)`` and needs at least one character before the mark."""
    pos = 0
    for m in _SENTENCE_STOP.finditer(text):
        q = m.start()
        if m.group(1) is not None:
            start = max(pos, q - _SENTENCE_MAX)
            if start < q:
                yield start, q + 1
        pos = q + 1


_FIGURE_LABEL = {
    KeyFigureName.revenue: "Revenue",
    KeyFigureName.cost_of_revenue: "Cost of revenue",
    KeyFigureName.operating_income: "Operating income",
    KeyFigureName.net_income: "Net income",
    KeyFigureName.eps_diluted: "Diluted EPS",
    KeyFigureName.operating_cash_flow: "Operating cash flow",
    KeyFigureName.capital_expenditure: "Capital expenditure",
    KeyFigureName.dividends_paid: "Dividends paid",
    KeyFigureName.cash: "Cash and cash equivalents",
    KeyFigureName.inventories: "Inventories",
    KeyFigureName.property_plant_equipment_net: "Property, plant and equipment, net",
    KeyFigureName.total_current_assets: "Total current assets",
    KeyFigureName.total_assets: "Total assets",
    KeyFigureName.accounts_payable: "Accounts payable",
    KeyFigureName.total_current_liabilities: "Total current liabilities",
    KeyFigureName.total_debt: "Total debt",
    KeyFigureName.long_term_debt: "Long-term debt",
}


def figure_label(name: KeyFigureName | str) -> str:
    """Display name of a key figure (``"capital_expenditure"`` → ``"Capital expenditure"``)."""
    return _FIGURE_LABEL[KeyFigureName(name)]


def _risk(topic: FilingTopic) -> Risk:
    if topic in HIGH_RISK_TOPICS:
        return Risk.high
    return Risk.low if topic in (T.key_figure, T.auditor_opinion) else Risk.medium


def _amounts(text: str) -> list[FindingValue]:
    return [
        FindingValue(name="amount", value=m.group(0).strip())
        for m in re.finditer(r"\$\s?\d[\d,]*(?:\.\d+)?(?:\s+(?:million|billion|thousand))?", text)
    ][:2]


class FilingRules:
    """Review one chunk of a filing with the filing profile's offline rules (see the module
    docstring). Stateless and thread-safe; makes no calls."""

    def review_chunk(self, chunk: Chunk) -> ChunkReview:
        """Findings of ``chunk``: key figures of its statement pages, Form 8-K Item headings, one
        ``risk_factor`` finding per risk-factor heading of Item 1A (its quote and summary the heading;
        :func:`tasks.review.filing.risk_heading_spans`, from the chunk's emphasised lines when it has
        them) and at most one finding per (topic, sentence) elsewhere — no ``legal_proceedings``
        sentence within Item 1A (a risk factor's words, reported by its heading); returns a
        :class:`ChunkReview` with ``outcome == ok`` and no calls. An empty chunk has no findings."""
        text = chunk.text
        findings: list[FilingFinding] = []
        if not text.strip():
            return ChunkReview(chunk_index=chunk.index, findings=[], calls=[])
        starts = [0] + list(chunk.page_offsets)
        ends = [o - 2 for o in chunk.page_offsets] + [len(text)]
        statement_pages = set()
        for i, (a, b) in enumerate(zip(starts, ends)):
            page_text = text[a:b]
            kind = statement_kind(page_text)
            if kind is None:
                continue
            statement_pages.add(i)
            unit, period = statement_unit(page_text), statement_period(page_text)
            for f in figure_lines(page_text, kind):
                s, e = a + f.start, a + f.end
                line = text[s:e].strip()
                s = text.index(line, s)
                label = figure_label(f.name)
                shown_unit = "USD per share" if f.name is KeyFigureName.eps_diluted else unit
                sign = " (outflow)" if f.name in OUTFLOWS else ""
                findings.append(
                    FilingFinding(
                        clause_type=T.key_figure,
                        risk=Risk.low,
                        evidence=line[:MAX_EVIDENCE_CHARS],
                        page=chunk.page_at(s),
                        summary=f"{label}{f' ({f.period or period})' if f.period or period else ''}: "
                        f"{f.raw.lstrip('$ ')} {shown_unit}{sign}, "
                        f"from the {kind} statement.",
                        values=[FindingValue(name="figure", value=f.raw)],
                    )
                )
        seen: set[tuple[FilingTopic, int]] = set()
        for m in _8K_ITEM.finditer(text):
            topic = ITEMS_8K.get(m.group(1), T.other)
            if m.group(1) == "9.01" or m.group(2).strip().startswith(("(", "of ")) or not m.group(2).strip():
                continue
            end = _sentence_end(text, m.end(), extra=1)
            findings.append(
                self._finding(
                    chunk,
                    topic,
                    m.start(),
                    end,
                    f"Form 8-K Item {m.group(1)}: {m.group(2).strip(' .')[:100]}.",
                    [FindingValue(name="item", value=m.group(1))],
                )
            )
            seen.add((topic, m.start()))
        section = chunk.heading or ""  # the section of the last Item heading on or before the first page
        first = list(ITEM_LINE.finditer(text[starts[0] : ends[0]]))
        # the top of the first page is in Item 1A when the chunk's section is, or when Item 1A ends on it
        top = first[0].group(1).upper() == "1B" if first else section.startswith("Item 1A")
        in_1a: list[tuple[int, bool]] = [(0, top)]  # (offset, whether Item 1A starts or ends there)
        for a, b in zip(starts, ends):
            page_text = text[a:b]
            items = list(ITEM_LINE.finditer(page_text))
            if len(items) <= 4:  # more is a table of contents
                in_1a += [(a + m.start(), m.group(1).upper() == "1A") for m in items]
            begin = 0
            if items:
                at = [m for m in items if m.group(1).upper() == "1A"]
                if at:  # Item 1A starts on this page
                    begin = at[-1].end()
                elif not (top or items[0].group(1).upper() == "1B"):  # neither in Item 1A nor where it ends
                    begin = len(page_text)
                after = [m for m in items if m.group(1).upper() != "1A" and m.start() >= begin]
                page_text = page_text[: after[0].start()] if after else page_text  # Item 1A ends here
            if items or top:
                marked = (
                    None
                    if chunk.emphasis is None
                    else [(x - a, y - a) for x, y in chunk.emphasis if a <= x and y <= a + len(page_text)]
                )
                for s, e in risk_heading_spans(page_text, marked):
                    if s >= begin:
                        findings.append(
                            self._finding(chunk, T.risk_factor, a + s, a + e, " ".join(text[a + s : a + e].split()), [])
                        )
                        seen.add((T.risk_factor, a + s))
            for m in items:
                section = f"Item {m.group(1).upper()}"
            top = section.startswith("Item 1A")  # the next page's top
        folded_chunk = _fold(text)
        rules = [
            (topic, rx, exclude, SENTENCE_RULE_WORDS[topic])
            for topic, rx, exclude in SENTENCE_RULES
            if any(w in folded_chunk for w in SENTENCE_RULE_WORDS[topic])
        ]
        for a, b in _sentences(text) if rules else ():
            while a < b and text[a].isspace():
                a += 1
            sentence = text[a:b]
            if len(sentence) < 40 or any(i in statement_pages for i in [_page_index(starts, a)]):
                continue
            folded = _fold(sentence)
            for topic, rx, exclude, words in rules:
                if not any(w in folded for w in words):
                    continue
                hit = rx.search(sentence)
                if hit is None or (exclude is not None and exclude.search(sentence)) or (topic, a) in seen:
                    continue
                if topic is T.legal_proceedings and _in_item_1a(in_1a, a):
                    continue  # a risk factor's words on litigation, not a proceeding: the risk factor's finding
                seen.add((topic, a))
                values = (
                    _amounts(sentence[:MAX_EVIDENCE_CHARS])
                    if topic
                    in (
                        T.impairment,
                        T.related_party_transactions,
                        T.acquisition_disposition,
                        T.dividends_and_repurchases,
                    )
                    else []
                )
                findings.append(
                    self._finding(chunk, topic, a, min(b, a + MAX_EVIDENCE_CHARS), _summary(topic, sentence), values)
                )
                break
        return ChunkReview(chunk_index=chunk.index, findings=findings, calls=[])

    @staticmethod
    def _finding(
        chunk: Chunk, topic: FilingTopic, a: int, b: int, summary: str, values: list[FindingValue]
    ) -> FilingFinding:
        text = chunk.text
        b = min(b, a + MAX_EVIDENCE_CHARS)
        if b - a >= MAX_EVIDENCE_CHARS:
            cut = text.rfind(" ", a, b)
            b = cut if cut > a else b
        evidence = text[a:b].rstrip()
        values = [v for v in values if v.value in evidence]
        return FilingFinding(
            clause_type=topic,
            summary=summary,
            risk=_risk(topic),
            evidence=evidence,
            page=chunk.page_at(a),
            values=values,
        )


def _in_item_1a(marks: list[tuple[int, bool]], offset: int) -> bool:
    """Whether chunk ``offset`` is under Item 1A (Risk Factors): ``marks`` are ``(offset, is Item 1A)`` of
    the chunk's start and of each Item heading in it, in order."""
    inside = False
    for at, is_1a in marks:
        if at > offset:
            break
        inside = is_1a
    return inside


def _page_index(starts: list[int], offset: int) -> int:
    i = 0
    while i + 1 < len(starts) and starts[i + 1] <= offset:
        i += 1
    return i


def _sentence_end(text: str, pos: int, extra: int = 0) -> int:
    end = pos
    for _ in range(extra + 1):
        m = re.search(r"[.!?](?=\s)", text[end + 1 : end + MAX_EVIDENCE_CHARS])
        if m is None:
            return min(len(text), end + MAX_EVIDENCE_CHARS)
        end = end + 1 + m.end()
    return end


_SUMMARIES = {
    T.going_concern: "The filing states substantial doubt about the ability to continue as a going concern.",
    T.material_weakness: "The filing reports a material weakness or ineffective controls (Item 9A).",
    T.restatement: "The filing reports a restatement or non-reliance on earlier financial statements.",
    T.auditor_change: "The filing reports a change of the independent registered public accounting firm.",
    T.auditor_opinion: "The auditor's opinion on the financial statements or internal control.",
    T.legal_proceedings: "A legal proceeding against or by the company.",
    T.regulatory_investigation: "A regulatory investigation, inquiry or subpoena.",
    T.cybersecurity: "A cybersecurity incident or the cybersecurity governance of Item 1C.",
    T.related_party_transactions: "A transaction with a related party.",
    T.debt_covenants: "Debt covenants: compliance, breach, waiver or amendment.",
    T.impairment: "An impairment charge was recognised.",
    T.subsequent_events: "An event after the balance-sheet date.",
    T.executive_change: "A change of an executive officer or director.",
    T.material_agreement: "The company entered into a material agreement.",
    T.acquisition_disposition: "The company completed an acquisition or a disposition.",
    T.dividends_and_repurchases: "The board decided on dividends or authorized share repurchases.",
}


def _summary(topic: FilingTopic, sentence: str) -> str:
    return _SUMMARIES.get(topic, "A passage a reviewer should read.")
