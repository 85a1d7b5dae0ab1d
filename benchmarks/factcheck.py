"""Fact-check benchmark: planted errors in findings from real CUAD contracts.

``python -m benchmarks.factcheck [--docs N] [--seed S] [--per-kind K]`` prints one JSON line:
``catch_rate`` and ``false_alarm_rate`` per error kind and overall, with counts.

Data: the shared CUAD contracts (``../shared/data/cuad/txt``, read in place). Each text is cut
into pseudo-pages of about :data:`PAGE_CHARS` characters at line breaks (the TXT files carry no
page breaks), cleaned like extracted text (:func:`tasks.textnorm.clean_page_text`) and chunked
with :func:`tasks.review.chunk.chunk_text` (4,000/600 characters, the defaults). Findings come from the
offline :class:`tasks.review.backends.rules.RulesBackend`, which quotes verbatim: these are the
*faithful* findings. Every planted error is one change to one faithful finding:

==================  =======================================================  =========================
kind                change                                                   caught when
==================  =======================================================  =========================
``number``          one digit of a numeric value (not a date) changed        verdict is not verified
``date``            a date value moved by a day, a month or a year           verdict is not verified
``party``           a party value replaced by a party of another contract    verdict is not verified
``currency``        a money value's currency changed (``$`` → ``€`` …)        verdict is not verified
``duration``        a duration's count (words and figures) or unit changed   verdict is not verified
``foreign_quote``   the quote (and values) of another contract's finding     verdict is not verified
``wrong_page``      the page changed to another page of the document         page corrected to the
                                                                             true page
``fabricated``      a made-up clause (templates with this contract's values)  verdict is not verified
``reversal``        the quote's meaning reversed (``shall`` ↔ ``shall not``)  verdict is not verified
``other_category``  the clause category changed to one the lawyers did not   verdict is not verified
                    label the quote with ("quote supports another category")
``negated``         the clause negated in the document *and* the quote        verdict is not verified
                    ("shall not be required to", "there shall be no",
                    "nothing in this Agreement shall require", "non-exclusive")
==================  =======================================================  =========================

Only the finding changes; the document stays as it is — except for ``negated``, where the same
negated sentence replaces the original in a copy of the document, so the quote is grounded and
only the support check can catch it. A planted text that occurs in the document anyway (a foreign
boilerplate sentence this contract also has) is not an error and is skipped.

Each finding is checked as the flow checks it: in its chunk, then with the support check's
document-level part (:func:`tasks.check.support.relative_support`) over all the contract's
findings (the faithful ones and the backend's others, deduplicated by category and quote); a
plant takes its original's place among them.

*Faithful* findings are the offline backend's findings whose quote overlaps a lawyer-labelled
span of their own category (:func:`tasks.observe.evaluate.evidence_overlaps`): the findings a
fact-check must let through. Findings the labels do not confirm are neither planted on nor
counted. A *false alarm* is a faithful finding that is not verified (or, for ``wrong_page``,
whose page moves); per kind it is counted over the faithful originals of that kind's plants,
overall over every faithful finding. The summary is never changed: a summary that misstates a
faithful quote is only for the optional verifier model to catch, and is not measured here.

Contracts: spread evenly over the frozen test split of the shared contracts
(:func:`tasks.observe.evaluate.split_of`, 75 of 340), which no shipped model was trained on and nothing
was tuned on; ``--split train`` takes the training contracts instead (for development).
``--before`` runs the fact-check without the support check, for comparison.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from schemas.documents import ExtractedDocument, PageText, SourceObject
from schemas.findings import Finding, FindingValue, Verdict
from schemas.taxonomy import ClauseType
from tasks.check.factcheck import fact_check
from tasks.check.index import DocumentIndex
from tasks.check.values import Kind, extract_values
from tasks.review.backends.rules import RulesBackend
from tasks.review.chunk import chunk_text
from tasks.textnorm import clean_page_text, match_form

#: Pseudo-page size for the TXT contracts, characters.
PAGE_CHARS = 3000
KINDS = (
    "number",
    "date",
    "party",
    "currency",
    "duration",
    "foreign_quote",
    "wrong_page",
    "fabricated",
    "reversal",
    "other_category",
    "negated",
)
CUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "cuad"
if not CUAD.is_dir():
    CUAD = Path("/work/shared/data/cuad")


@dataclass
class Doc:
    """A contract ready for the fact-check: document, chunks, index, faithful findings."""

    name: str
    document: ExtractedDocument
    chunks: list
    index: DocumentIndex
    findings: list[tuple[Finding, int]]  # (finding, chunk index)
    spans: dict | None = None  # labelled spans per category (ClauseType → [text])
    others: list[tuple[Finding, int]] | None = None  # the backend's other findings (labels do not confirm them)


def load_document(name: str, text: str) -> ExtractedDocument:
    """A TXT contract as an :class:`ExtractedDocument` of ~:data:`PAGE_CHARS`-character pages."""
    pages, buf = [], []
    size = 0
    for line in text.splitlines(keepends=True):
        buf.append(line)
        size += len(line)
        if size >= PAGE_CHARS:
            pages.append("".join(buf))
            buf, size = [], 0
    if buf:
        pages.append("".join(buf))
    cleaned = [clean_page_text(p) for p in pages]
    cleaned = [p for p in cleaned if p] or [""]
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    src = SourceObject(uri=name, name=name, local_path=name, size_bytes=len(text))
    return ExtractedDocument(
        sha256=sha, source=src, pages=[PageText(number=i + 1, text=t) for i, t in enumerate(cleaned)]
    )


def _labels_by_txt() -> dict[str, dict[ClauseType, list[str]]]:
    """Labelled spans per category, keyed by TXT file name."""
    from tasks.observe.evaluate import load_cuad

    return {Path(d.txt_file).name: d.spans for d in load_cuad(CUAD)}


def prepare(names: list[str]) -> list[Doc]:
    """Chunk, index and review (rules backend) each contract; findings deduplicated by quote and
    kept only when their quote overlaps a labelled span of their category (faithful)."""
    from tasks.observe.evaluate import evidence_overlaps

    backend = RulesBackend()
    labels = _labels_by_txt()
    docs = []
    for name in names:
        text = (CUAD / "txt" / name).read_text(encoding="utf-8", errors="replace")
        document = load_document(name, text)
        chunks = chunk_text(document.sha256, document.text, document.page_starts())
        index = DocumentIndex.build(document)
        spans = labels.get(name, {})
        seen, findings, others = set(), [], []
        for chunk in chunks:
            for f in backend.review_chunk(chunk, name).findings:
                key = (f.clause_type, match_form(f.evidence)[0])
                if key in seen:
                    continue
                seen.add(key)
                faithful = evidence_overlaps(f.evidence, spans.get(f.clause_type, []))
                (findings if faithful else others).append((f, chunk.index))
        docs.append(Doc(name, document, chunks, index, findings, spans, others))
    return docs


#: ``support_model`` passed to :func:`fact_check` (``None`` with ``--before``: no support check).
SUPPORT_MODEL: str | None = "default"


def check(doc: Doc, finding: Finding, chunk_index: int):
    """Fact-check one finding in its chunk (neighbours as in the flow)."""
    chunk = doc.chunks[chunk_index]
    neighbours = [c for c in doc.chunks if abs(c.index - chunk.index) == 1]
    return fact_check([finding], chunk, neighbours, doc.index, support_model=_support_model())[0]


def in_document(checked: list, at: int, index=None):
    """``checked[at]`` after the support check's document-level part over all of ``checked`` (the
    document's findings as the flow has them: :func:`tasks.check.support.relative_support`), each
    scored under its section headings in the document ``index`` when given."""
    if SUPPORT_MODEL is None:
        return checked[at]
    from tasks.check.index import headings_in
    from tasks.check.support import load_model, relative_support

    model = _support_model()
    heading_of = headings_in(index) if index is not None else None
    return relative_support(checked, model if not isinstance(model, str) else load_model(), heading_of)[at]


#: Support threshold replacing the model's stored one (``--support-threshold``), or None.
SUPPORT_THRESHOLD: float | None = None


def _support_model():
    if SUPPORT_MODEL is None or SUPPORT_THRESHOLD is None:
        return SUPPORT_MODEL
    from tasks.check.support import load_model

    model = load_model()
    return model.model_copy(update={"threshold": SUPPORT_THRESHOLD}) if model is not None else SUPPORT_MODEL


def _support_check_name() -> str:
    from tasks.check.support import support_check_name

    return support_check_name()


# --------------------------------------------------------------------------------------------
# planted errors
# --------------------------------------------------------------------------------------------

_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_WORDS = {
    1: "one",
    2: "two",
    3: "three",
    5: "five",
    7: "seven",
    10: "ten",
    15: "fifteen",
    30: "thirty",
    45: "forty-five",
    60: "sixty",
    90: "ninety",
    120: "one hundred twenty",
    180: "one hundred eighty",
}


def _replace_value(f: Finding, i: int, new: str) -> Finding:
    values = list(f.values)
    values[i] = FindingValue(name=values[i].name, value=new)
    return f.model_copy(update={"values": values})


def plant_number(f: Finding, rng: random.Random) -> Finding | None:
    """Change one digit of a numeric value that is not a date."""
    for i, v in enumerate(f.values):
        if any(x.kind is Kind.date for x in extract_values(v.value)):
            continue
        m = re.search(r"\d", v.value)
        if not m:
            continue
        d = int(m.group(0))
        new_d = (d + rng.randint(1, 8)) % 10 or 1
        if new_d == d:
            new_d = 9 if d != 9 else 8
        return _replace_value(f, i, v.value[: m.start()] + str(new_d) + v.value[m.end() :])
    return None


def plant_date(f: Finding, rng: random.Random) -> Finding | None:
    """Move a date value by a day, a month or a year, keeping its written form."""
    for i, v in enumerate(f.values):
        dates = [x for x in extract_values(v.value) if x.kind is Kind.date]
        if not dates:
            continue
        raw = v.value
        choice = rng.choice(("day", "month", "year"))
        months = re.search("|".join(_MONTH_NAMES), raw)
        day = re.search(r"(?<!\d)(\d{1,2})(?:st|nd|rd|th)?(?!\d)", raw)
        year = re.search(r"(?:19|20)\d{2}", raw)
        if choice == "month" and months:
            k = _MONTH_NAMES.index(months.group(0))
            return _replace_value(f, i, raw[: months.start()] + _MONTH_NAMES[(k + 1) % 12] + raw[months.end() :])
        if choice == "day" and day and 1 <= int(day.group(1)) <= 27:
            return _replace_value(f, i, raw[: day.start(1)] + str(int(day.group(1)) + 1) + raw[day.end(1) :])
        if year:
            return _replace_value(f, i, raw[: year.start()] + str(int(year.group(0)) + 1) + raw[year.end() :])
    return None


def plant_party(f: Finding, rng: random.Random, pool: list[str]) -> Finding | None:
    """Replace a party value with a party of another contract not named in the quote."""
    q = match_form(f.evidence)[0]
    for i, v in enumerate(f.values):
        if v.name != "party":
            continue
        for _ in range(20):
            other = rng.choice(pool)
            words = [
                w
                for w in re.findall(r"[a-z]{4,}", match_form(other)[0])
                if w not in ("corporation", "company", "limited", "incorporated", "holdings")
            ]
            if words and not any(w in q for w in words):
                return _replace_value(f, i, other)
    return None


_CURRENCY_SWAP = [
    ("US$", "EUR "),
    ("USD", "EUR"),
    ("$", "€"),
    ("€", "$"),
    ("EUR", "USD"),
    ("£", "$"),
    ("GBP", "USD"),
    ("U.S. dollars", "euros"),
    ("dollars", "euros"),
    ("Dollars", "Euros"),
]


def plant_currency(f: Finding, rng: random.Random) -> Finding | None:
    """Change the currency of a money value (``$`` → ``€``, ``USD`` → ``EUR``, dollars → euros …)."""
    for i, v in enumerate(f.values):
        if not any(x.kind is Kind.money for x in extract_values(v.value)):
            continue
        for old, new in _CURRENCY_SWAP:
            if old in v.value:
                return _replace_value(f, i, v.value.replace(old, new, 1))
    return None


def plant_duration(f: Finding, rng: random.Random) -> Finding | None:
    """Change a duration's count (words and figures together) or its unit."""
    units = {
        "day": "month",
        "days": "months",
        "month": "year",
        "months": "years",
        "year": "month",
        "years": "months",
        "week": "month",
        "weeks": "months",
    }
    for i, v in enumerate(f.values):
        durs = [x for x in extract_values(v.value) if x.kind is Kind.duration]
        if not durs:
            continue
        raw = v.value
        if rng.random() < 0.5:
            m = re.search(r"\b(days?|months?|years?|weeks?)\b", raw, re.I)
            if m:
                new_unit = units[m.group(1).lower()]
                if m.group(1)[0].isupper():
                    new_unit = new_unit.capitalize()
                return _replace_value(f, i, raw[: m.start()] + new_unit + raw[m.end() :])
        n = int(durs[0].amount) if durs[0].amount is not None else 1
        choices = [k for k in _WORDS if k != n]
        new = rng.choice(choices)
        m = re.search(r"\((\d+)\)", raw)
        out = raw
        if m:
            out = out[: m.start(1)] + str(new) + out[m.end(1) :]
            w = re.match(r"\s*([A-Za-z][A-Za-z\s-]*?)\s*\(", out)
            if w:
                out = out[: w.start(1)] + _WORDS[new] + out[w.end(1) :]
        else:
            d = re.search(r"\d+", out)
            if d:
                out = out[: d.start()] + str(new) + out[d.end() :]
            else:
                w = re.search(
                    r"\b(one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty|"
                    r"forty|forty-five|fifty|sixty|ninety|a|an)\b",
                    out,
                    re.I,
                )
                if not w:
                    continue
                out = out[: w.start()] + _WORDS[new] + out[w.end() :]
        if out != raw:
            return _replace_value(f, i, out)
    return None


def plant_foreign(
    f: Finding, doc: Doc, rng: random.Random, pool: dict[ClauseType, list[tuple[str, Finding]]]
) -> Finding | None:
    """Quote (and values) of another contract's finding of the same clause type, absent here."""
    cands = [g for name, g in pool.get(f.clause_type, []) if name != doc.name]
    rng.shuffle(cands)
    for g in cands[:10]:
        if match_form(g.evidence)[0] not in doc.index.norm:
            return f.model_copy(update={"evidence": g.evidence, "values": list(g.values), "summary": g.summary})
    return None


def plant_page(f: Finding, doc: Doc, rng: random.Random) -> Finding | None:
    """Another page of the document (only for documents with more than one page)."""
    pages = len(doc.document.pages)
    if pages < 2:
        return None
    wrong = rng.choice([p for p in range(1, pages + 1) if p != f.page])
    return f.model_copy(update={"page": wrong})


_FABRICATED = [
    "Either party may terminate this Agreement for convenience upon {n} days' prior written notice to {p}.",
    "In no event shall the aggregate liability of {p} exceed ${amt} in any calendar year.",
    "{p} shall pay a one-time fee of ${amt} within {n} days after the Effective Date.",
    "This Agreement shall be governed by the laws of the State of {state}, without regard to conflicts of law.",
    "{p} shall not, for a period of {n} months after termination, engage in any business competing with the other party.",
    "Upon a change of control of {p}, the other party may terminate this Agreement on {n} days' notice.",
]
_STATES = ["Oregon", "Vermont", "Wyoming", "Nebraska", "Kansas", "Idaho"]


def plant_fabricated(f: Finding, doc: Doc, rng: random.Random) -> Finding | None:
    """A made-up clause, written with this contract's party names and plausible values."""
    parties = [v.value for g, _ in doc.findings for v in g.values if v.name == "party"] or ["the Company"]
    text = rng.choice(_FABRICATED).format(
        p=rng.choice(parties),
        n=rng.choice([10, 30, 45, 60, 90]),
        amt=f"{rng.randint(1, 99) * 10_000:,}",
        state=rng.choice(_STATES),
    )
    if match_form(text)[0] in doc.index.norm:
        return None
    return f.model_copy(update={"evidence": text, "values": []})


_FLIPS = [
    (r"\bshall not\b", "shall"),
    (r"\bwill not\b", "will"),
    (r"\bmay not\b", "may"),
    (r"\bcannot\b", "can"),
    (r"\bshall\b", "shall not"),
    (r"\bwill\b", "will not"),
    (r"\bmay\b", "may not"),
    (r"\bis not\b", "is"),
    (r"\bis\b", "is not"),
]


def plant_reversal(f: Finding, doc: Doc, rng: random.Random) -> Finding | None:
    """Reverse the quote's meaning: the first ``shall``/``may``/``will``/``is`` gains or loses ``not``."""
    for pat, rep in _FLIPS:
        m = re.search(pat, f.evidence)
        if m:
            text = f.evidence[: m.start()] + rep + f.evidence[m.end() :]
            if match_form(text)[0] in doc.index.norm:
                return None
            return f.model_copy(update={"evidence": text})
    return None


def plant_other_category(f: Finding, doc: Doc, rng: random.Random) -> Finding | None:
    """The same quote claimed as another category, one the lawyers did not label it with."""
    from tasks.observe.evaluate import CATEGORIES, evidence_overlaps

    if f.clause_type in (ClauseType.document_name, ClauseType.parties):
        return None
    others = [
        c
        for c in CATEGORIES
        if c is not f.clause_type
        and c not in (ClauseType.document_name, ClauseType.parties)
        and not evidence_overlaps(f.evidence, (doc.spans or {}).get(c, []))
    ]
    if not others:
        return None
    return f.model_copy(update={"clause_type": rng.choice(others), "values": []})


_NEGATE = [
    (r"\b(shall|will)\b(?!\s+not)", lambda m: f"{m.group(1)} not be required to"),
    (r"^", lambda m: "Nothing in this Agreement shall require that "),
    (r"^", lambda m: "There shall be no obligation whereby "),
]


def plant_negated(f: Finding, doc: Doc, rng: random.Random) -> tuple[Finding, Doc] | None:
    """The clause negated in a copy of the document and in the quote (``shall`` → ``shall not be
    required to``, a ``Nothing in this Agreement shall require that``/``There shall be no
    obligation whereby`` lead, ``exclusive`` → ``non-exclusive`` for Exclusivity); only for
    categories that assert a right or obligation (:data:`tasks.check.support.AFFIRMATIVE`)."""
    from tasks.check.support import AFFIRMATIVE

    if f.clause_type not in AFFIRMATIVE:
        return None
    quote = f.evidence
    if f.clause_type is ClauseType.exclusivity and re.search(r"\bexclusive", quote, re.I):
        new = re.sub(r"\bexclusive", "non-exclusive", quote, count=1, flags=re.I)
    else:
        pat, rep_ = rng.choice(_NEGATE)
        new = re.sub(pat, rep_, quote, count=1)
        if pat == "^":
            new = new[: len(new) - len(quote)] + quote[:1].lower() + quote[1:]
    if new == quote:
        return None
    pages = []
    replaced = False
    for p in doc.document.pages:
        if not replaced and quote in p.text:
            pages.append(p.model_copy(update={"text": p.text.replace(quote, new, 1)}))
            replaced = True
        else:
            pages.append(p)
    if not replaced:
        return None
    document = doc.document.model_copy(update={"pages": pages})
    chunks = chunk_text(document.sha256, document.text, document.page_starts())
    copy = Doc(doc.name, document, chunks, DocumentIndex.build(document), doc.findings, doc.spans)
    return f.model_copy(update={"evidence": new}), copy


# --------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------


def pick_contracts(n: int, split: str = "test") -> list[str]:
    """``n`` contracts of ``split`` (:func:`tasks.observe.evaluate.in_split`) spread evenly over the
    manifest (sorted by TXT name), deterministic."""
    from tasks.observe.evaluate import in_split

    with open(CUAD / "manifest.csv", newline="", encoding="utf-8") as fh:
        names = sorted(Path(r["txt_file"]).name for r in csv.DictReader(fh) if in_split(r["Filename"], split))
    if n >= len(names):
        return names
    step = len(names) / n
    return [names[int(i * step)] for i in range(n)]


def run(n_docs: int = 80, seed: int = 7, per_kind: int = 3, split: str = "test") -> dict:
    """Run the benchmark over ``n_docs`` contracts of ``split``, at most ``per_kind`` plants per kind per contract."""
    started = time.perf_counter()
    rng = random.Random(seed)
    docs = prepare(pick_contracts(n_docs, split))
    prepared_s = time.perf_counter() - started
    party_pool = sorted({v.value for d in docs for f, _ in d.findings for v in f.values if v.name == "party"})
    quote_pool: dict[ClauseType, list[tuple[str, Finding]]] = defaultdict(list)
    for d in docs:
        for f, _ in d.findings:
            if f.clause_type not in (ClauseType.document_name, ClauseType.parties):
                quote_pool[f.clause_type].append((d.name, f))

    faithful_total = faithful_alarms = 0
    faithful_reasons: Counter = Counter()
    planted: dict[str, list[int]] = {k: [0, 0] for k in KINDS}  # [plants, caught]
    kind_alarms: dict[str, list[int]] = {k: [0, 0] for k in KINDS}  # [faithful originals, alarms]
    verdicts: dict[str, Counter] = {k: Counter() for k in KINDS}
    misses: dict[str, list[str]] = defaultdict(list)
    for doc in docs:
        counts: Counter = Counter()
        # Every finding of the document, checked chunk by chunk, faithful ones first: a plant takes
        # its original's place, and the document-level part of the support check sees them all.
        context = [check(doc, f, ci) for f, ci in doc.findings + (doc.others or [])]
        for n, (f, ci) in enumerate(doc.findings):
            base = in_document(context, n, doc.index)
            alarm = base.verdict is not Verdict.verified or base.finding.page != f.page
            faithful_total += 1
            faithful_alarms += alarm
            if alarm:
                bad = [c for c in base.checks if c.verdict is not Verdict.verified]
                faithful_reasons[(bad[0].name if bad else "page")] += 1
                if len(misses["_false_alarms"]) < 12:
                    misses["_false_alarms"].append(
                        f"{doc.name[:40]} | {f.clause_type.value} | {bad[0].reason[:200] if bad else 'page moved'}"
                    )
            for kind in KINDS:
                if counts[kind] >= per_kind:
                    continue
                if kind == "number":
                    p = plant_number(f, rng)
                elif kind == "date":
                    p = plant_date(f, rng)
                elif kind == "party":
                    p = plant_party(f, rng, party_pool)
                elif kind == "currency":
                    p = plant_currency(f, rng)
                elif kind == "duration":
                    p = plant_duration(f, rng)
                elif kind == "foreign_quote":
                    p = plant_foreign(f, doc, rng, quote_pool)
                elif kind == "wrong_page":
                    p = plant_page(f, doc, rng)
                elif kind == "fabricated":
                    p = plant_fabricated(f, doc, rng) if rng.random() < 0.3 else None
                elif kind == "reversal":
                    p = plant_reversal(f, doc, rng)
                elif kind == "other_category":
                    p = plant_other_category(f, doc, rng)
                else:
                    p = plant_negated(f, doc, rng)
                if p is None:
                    continue
                counts[kind] += 1
                where_index = doc.index
                if isinstance(p, tuple):
                    p, copy = p
                    q = match_form(p.evidence)[0]
                    where = next((c.index for c in copy.chunks if q in match_form(c.text)[0]), ci)
                    got = check(copy, p, where)
                    where_index = copy.index
                else:
                    got = check(doc, p, ci)
                got = in_document(context[:n] + [got] + context[n + 1 :], n, where_index)
                if kind == "wrong_page":
                    caught = got.finding.page == base.finding.page and got.finding.page != p.page
                else:
                    caught = got.verdict is not Verdict.verified
                planted[kind][0] += 1
                planted[kind][1] += caught
                kind_alarms[kind][0] += 1
                kind_alarms[kind][1] += alarm
                verdicts[kind][got.verdict.value] += 1
                if not caught and len(misses[kind]) < 5:
                    changed = [f"{a.value!r}->{b.value!r}" for a, b in zip(f.values, p.values) if a.value != b.value]
                    claim = f.clause_type.value + (f"->{p.clause_type.value}" if p.clause_type != f.clause_type else "")
                    misses[kind].append(
                        f"{doc.name[:40]} | {claim} | {'; '.join(changed)[:160]} | {p.evidence[:120]!r}"
                    )
    total_plants = sum(v[0] for v in planted.values())
    total_caught = sum(v[1] for v in planted.values())
    per_kind_out = {
        k: {
            "planted": planted[k][0],
            "caught": planted[k][1],
            "catch_rate": round(planted[k][1] / planted[k][0], 4) if planted[k][0] else None,
            "false_alarm_rate": round(kind_alarms[k][1] / kind_alarms[k][0], 4) if kind_alarms[k][0] else None,
            "verdicts": dict(verdicts[k]),
        }
        for k in KINDS
    }
    return {
        "benchmark": "factcheck",
        "support_check": SUPPORT_MODEL is not None,
        "support_model": _support_check_name() if SUPPORT_MODEL is not None else None,
        "support_threshold": SUPPORT_THRESHOLD,
        "split": split,
        "contracts": len(docs),
        "faithful_findings": faithful_total,
        "planted": total_plants,
        "catch_rate": round(total_caught / total_plants, 4) if total_plants else None,
        "false_alarm_rate": round(faithful_alarms / faithful_total, 4) if faithful_total else None,
        "false_alarms_by_check": dict(faithful_reasons),
        "per_kind": per_kind_out,
        "prepare_s": round(prepared_s, 2),
        "wall_s": round(time.perf_counter() - started, 2),
        "misses": dict(misses),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: print the result as one JSON line (``--misses`` keeps missed examples)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=80, help="number of CUAD contracts (spread over the manifest)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--split", choices=("test", "train", "all"), default="test", help="which contracts")
    ap.add_argument("--per-kind", type=int, default=3, help="most plants per kind per contract")
    ap.add_argument("--misses", action="store_true", help="include examples of misses and false alarms")
    ap.add_argument("--before", action="store_true", help="fact-check without the support check")
    ap.add_argument(
        "--support-threshold",
        type=float,
        default=None,
        help="replace the support model's stored threshold (probability of the claimed category)",
    )
    args = ap.parse_args(argv)
    global SUPPORT_MODEL, SUPPORT_THRESHOLD
    SUPPORT_MODEL = None if args.before else "default"
    SUPPORT_THRESHOLD = args.support_threshold
    if not (CUAD / "txt").is_dir():
        print(json.dumps({"benchmark": "factcheck", "skipped": f"{CUAD / 'txt'} not found"}))
        return 0
    result = run(args.docs, args.seed, args.per_kind, args.split)
    if not args.misses:
        result.pop("misses")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
