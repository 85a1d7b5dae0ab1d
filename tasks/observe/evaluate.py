"""Evaluate: score review findings and routing decisions against CUAD lawyer labels.

Pure functions (no I/O except :func:`load_cuad`), used by :mod:`flows.eval`.

Label source: CUAD v1 ``master_clauses.csv`` (The Atticus Project, CC BY 4.0; category
definitions and answer formats in ``CUAD_v1_README.txt``). Each of the 41 categories has a
context column (a Python list literal of highlighted spans; ``<omitted>`` marks a cut) and an
``-Answer`` column: ``Yes``/``No`` for 33 categories, a normalised value for the 8 in
:data:`VALUE_CATEGORIES` (dates as ``m/d/yy`` with ``[]`` for a redacted digit group).

Measures:

- **presence** per category, document level: predicted = the review produced at least one
  finding of the category; gold = ``-Answer == "Yes"`` (value categories: answer not empty).
  Precision, recall, F1 and support (gold positives); macro-F1 over the 41 categories.
- **evidence overlap**: a finding's quote overlaps a labelled span of the same category in the
  same document when the two share at least :data:`OVERLAP_MIN` of the smaller one's distinct
  tokens (tokens of :func:`tasks.textnorm.match_form`). Rate = overlapping findings / findings.
- **value accuracy** (value categories): the document's first finding value of the category
  equals the gold answer after normalisation (dates compared day by day, ``[]`` matches any;
  durations as number + unit; jurisdictions and names by token containment; parties by the
  share of gold parties named).
- **router recall**: a labelled span (each ``<omitted>`` piece separately) counts as routed
  when one of its occurrences in the document text is covered by the union of ``deep`` chunk
  ranges; spans that cannot be located in the extracted text are counted apart
  (``spans_unlocated``) and left out of the ratio.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from schemas.playbook import Expectation, PlaybookRule
from schemas.taxonomy import CUAD_LABELS, ClauseType
from tasks.check.playbook import Limit, canonical_value, to_days
from tasks.check.values import find_durations
from tasks.textnorm import match_form

#: The 41 CUAD categories, in taxonomy order.
CATEGORIES: tuple[ClauseType, ...] = tuple(c for c in ClauseType if c is not ClauseType.other)

#: Categories whose ``-Answer`` is a value rather than Yes/No (CUAD_v1_README.txt).
VALUE_CATEGORIES: frozenset[ClauseType] = frozenset(
    {
        ClauseType.document_name,
        ClauseType.parties,
        ClauseType.agreement_date,
        ClauseType.effective_date,
        ClauseType.expiration_date,
        ClauseType.renewal_term,
        ClauseType.notice_period_to_terminate_renewal,
        ClauseType.governing_law,
    }
)

#: Smallest share of the smaller token set that two texts must share to "overlap".
OVERLAP_MIN = 0.5

#: Label pieces shorter than this (characters) are not located for router recall.
MIN_SPAN_CHARS = 3


@dataclass
class LabelledDoc:
    """One labelled contract: file names (relative to the data folder), answers and spans.

    ``answers`` maps each category to its ``-Answer`` cell (stripped); ``spans`` maps it to the
    highlighted texts (the parsed list literal, ``<omitted>`` kept).
    """

    filename: str
    pdf_file: str
    txt_file: str
    answers: dict[ClauseType, str] = field(default_factory=dict)
    spans: dict[ClauseType, list[str]] = field(default_factory=dict)

    def present(self, category: ClauseType) -> bool:
        """Gold presence: ``Yes`` for Yes/No categories, a non-empty answer for value categories."""
        answer = self.answers.get(category, "")
        if category in VALUE_CATEGORIES:
            return bool(answer)
        return answer.lower() == "yes"


def _answer_column(header: Sequence[str], label: str) -> str:
    for name in (f"{label}-Answer", f"{label}- Answer"):
        if name in header:
            return name
    raise ValueError(f"master_clauses.csv has no answer column for {label!r}")


def load_cuad(data_dir: str | Path, limit: int | None = None) -> list[LabelledDoc]:
    """Read ``manifest.csv`` and ``labels/master_clauses.csv`` of a CUAD-layout folder.

    Rows are paired by ``Filename`` through the manifest (file names on disk can differ from the
    labels' ``Filename``). Returns documents in label order, at most ``limit``. Raises
    ``FileNotFoundError`` when a file is missing and ``ValueError`` for a label row without a
    manifest row or a malformed list literal.
    """
    root = Path(data_dir)
    csv.field_size_limit(1 << 30)
    with open(root / "manifest.csv", newline="", encoding="utf-8") as fh:
        manifest = {r["Filename"]: r for r in csv.DictReader(fh)}
    docs: list[LabelledDoc] = []
    with open(root / "labels" / "master_clauses.csv", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        for row in reader:
            if limit is not None and len(docs) >= limit:
                break
            entry = manifest.get(row["Filename"])
            if entry is None:
                raise ValueError(f"no manifest row for {row['Filename']!r}")
            doc = LabelledDoc(row["Filename"], entry["pdf_file"], entry["txt_file"])
            for cat in CATEGORIES:
                label = CUAD_LABELS[cat]
                doc.answers[cat] = row[_answer_column(header, label)].strip()
                try:
                    spans = ast.literal_eval(row[label]) if row[label].strip() else []
                except (ValueError, SyntaxError) as exc:
                    raise ValueError(f"{row['Filename']}: bad list literal in {label!r}") from exc
                doc.spans[cat] = [str(s) for s in spans]
            docs.append(doc)
    return docs


# --- presence -----------------------------------------------------------------------------


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """``(precision, recall, f1)``; each is 0.0 when its denominator is 0."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def presence_scores(
    docs: Sequence[LabelledDoc], predicted: dict[str, set[ClauseType]]
) -> dict[ClauseType, dict[str, float]]:
    """Per category ``{precision, recall, f1, support, tp, fp, fn}`` over ``docs``.

    ``predicted`` maps ``LabelledDoc.filename`` to the categories found; a document missing
    from it counts as "nothing found".
    """
    out: dict[ClauseType, dict[str, float]] = {}
    for cat in CATEGORIES:
        tp = fp = fn = 0
        for doc in docs:
            p = cat in predicted.get(doc.filename, set())
            g = doc.present(cat)
            tp += p and g
            fp += p and not g
            fn += g and not p
        pr, rc, f1 = prf(tp, fp, fn)
        out[cat] = {"precision": pr, "recall": rc, "f1": f1, "support": tp + fn, "tp": tp, "fp": fp, "fn": fn}
    return out


def macro_f1(scores: dict[ClauseType, dict[str, float]]) -> float:
    """Mean F1 over the categories of ``scores`` where F1 is defined.

    A category with no gold positive and no prediction (``tp + fp + fn == 0``, possible on a
    small subset) has no F1 and is left out; 0.0 when no category is left.
    """
    defined = [s["f1"] for s in scores.values() if s["tp"] + s["fp"] + s["fn"] > 0]
    return sum(defined) / len(defined) if defined else 0.0


# --- evidence overlap -----------------------------------------------------------------------

_TOKEN = re.compile(r"[0-9a-z]+")


def tokens(text: str) -> set[str]:
    """Distinct tokens (lower-case letters/digits) of ``text`` in :func:`match_form`."""
    return set(_TOKEN.findall(match_form(text)[0]))


def token_overlap(a: str, b: str) -> float:
    """Shared distinct tokens over the smaller token set of ``a`` and ``b`` (0.0 if either is empty)."""
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / min(len(ta), len(tb))


def label_pieces(spans: Iterable[str]) -> list[str]:
    """Highlighted spans split at ``<omitted>``, stripped, pieces shorter than 3 characters dropped."""
    out = []
    for span in spans:
        for piece in span.split("<omitted>"):
            piece = piece.strip()
            if len(piece) >= MIN_SPAN_CHARS:
                out.append(piece)
    return out


def evidence_overlaps(evidence: str, spans: Iterable[str], minimum: float = OVERLAP_MIN) -> bool:
    """True when ``evidence`` shares ≥ ``minimum`` of tokens with some labelled piece."""
    return any(token_overlap(evidence, piece) >= minimum for piece in label_pieces(spans))


# --- values ---------------------------------------------------------------------------------

_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9

_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "forty-five": 45,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "one hundred": 100,
    "one hundred twenty": 120,
    "one hundred eighty": 180,
    "a": 1,
    "an": 1,
}

DateParts = tuple[int | None, int | None, int | None]  # (year, month, day); None = unknown


def _year(raw: str) -> int | None:
    if not raw.isdigit():
        return None
    y = int(raw)
    return y + (2000 if y < 50 else 1900) if len(raw) <= 2 else y


def parse_gold_date(answer: str) -> DateParts | None:
    """CUAD date answer ``m/d/yy`` (or 4-digit year; ``[]`` for a redacted group) → parts.

    Returns ``None`` for anything else (e.g. ``perpetual``).
    """
    m = re.fullmatch(r"\s*(\[\]|\d{1,2})/(\[\]|\d{1,2})/(\[\]|\d{2,4})\s*", answer)
    if not m:
        return None
    mo, d, y = (None if g == "[]" else g for g in m.groups())
    return _year(y) if y else None, int(mo) if mo else None, int(d) if d else None


def parse_text_date(text: str) -> DateParts | None:
    """A date as written in a contract → ``(year, month, day)``; ``None`` when none is found.

    Understands ``March 1, 2020``, ``1 March 2020``, ``the 1st day of March, 2020``,
    ``March 2020``, ``3/1/2020`` (month first, the US convention of CUAD's SEC filings) and
    ``2020-03-01``. Blanks (``____``) give ``None`` parts.
    """
    t = text.lower().replace(",", " ")
    t = re.sub(r"\s+", " ", t)
    mon = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
    m = re.search(rf"(\d{{1,2}})(?:st|nd|rd|th)? (?:day )?(?:of )?{mon} (?:in the year )?(\d{{4}})", t)
    if m:
        return int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1))
    m = re.search(rf"{mon} (\d{{1,2}})(?:st|nd|rd|th)? (\d{{4}})", t)
    if m:
        return int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2))
    m = re.search(rf"(?:day of )?{mon} (\d{{4}})", t)
    if m:
        return int(m.group(2)), _MONTHS[m.group(1)], None
    m = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", t)
    if m:
        return int(m.group(1)), int(m.group(2)), int(m.group(3))
    m = re.search(r"\b(\d{1,2})/(\d{1,2})/(\d{2,4})\b", t)
    if m:
        return _year(m.group(3)), int(m.group(1)), int(m.group(2))
    return None


def dates_match(gold: DateParts, predicted: DateParts) -> bool:
    """Same date, where an unknown (``None``) part on either side matches anything."""
    return all(g is None or p is None or g == p for g, p in zip(gold, predicted))


def parse_duration(text: str) -> tuple[int, str] | None:
    """``"ninety (90) days"`` → ``(90, "day")``; ``"successive 1 year"`` → ``(1, "year")``;
    hyphenated forms too: ``"five (5)-year"`` → ``(5, "year")``.

    Years, months, weeks and days; digits win over words when both are written.
    """
    t = text.lower()
    m = re.search(r"(\d+)\)?[\s-]*(?:\w+\s+)?(day|week|month|year)s?", t)
    if m:
        return int(m.group(1)), m.group(2)
    for word in sorted(_NUMBER_WORDS, key=len, reverse=True):
        m = re.search(rf"\b{re.escape(word)}[\s-]+(?:\w+\s+)?(day|week|month|year)s?\b", t)
        if m:
            return _NUMBER_WORDS[word], m.group(1)
    return None


def durations_match(gold: str, predicted: str) -> bool:
    """Same number of the same unit; 12 months equals 1 year."""
    g, p = parse_duration(gold), parse_duration(predicted)
    if g is None or p is None:
        return False

    def months(d: tuple[int, str]) -> float:
        n, unit = d
        return {"year": 12.0, "month": 1.0, "week": 7 / 30.4, "day": 1 / 30.4}[unit] * n

    return g == p or (g[1] in ("year", "month") and p[1] in ("year", "month") and months(g) == months(p))


_NAME_NOISE = re.compile(
    r"\b(?:the|state|of|commonwealth|province|laws?|inc|llc|ltd|corp|corporation|co|company|limited)\b"
)


def _name_tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(_NAME_NOISE.sub(" ", match_form(text)[0])))


def names_match(gold: str, predicted: str) -> bool:
    """Token containment after dropping ``the/State of/Inc/LLC…``: one side's tokens ⊆ the other's."""
    g, p = _name_tokens(gold), _name_tokens(predicted)
    return bool(g and p) and (g <= p or p <= g)


def value_correct(category: ClauseType, gold: str, predicted: list[str]) -> bool:
    """Whether the predicted values of a value category match CUAD's normalised answer.

    ``predicted`` are the finding values in document order; the first one is judged, except
    for parties (at least half of the gold parties must be named by some value) and
    expiration dates (``perpetual`` answers match a perpetual value). Raises ``ValueError``
    for a category outside :data:`VALUE_CATEGORIES`.
    """
    if category not in VALUE_CATEGORIES:
        raise ValueError(f"{category} is not a value category")
    if not gold or not predicted:
        return False
    if category is ClauseType.parties:
        golds = [g for g in (x.split("(")[0].strip() for x in gold.split(";")) if g]
        hit = sum(1 for g in golds if any(names_match(g, p) for p in predicted))
        return bool(golds) and hit * 2 >= len(golds)
    first = predicted[0]
    if category in (ClauseType.agreement_date, ClauseType.effective_date, ClauseType.expiration_date):
        if category is ClauseType.expiration_date and "perpetu" in gold.lower():
            return any("perpetu" in p.lower() for p in predicted)
        g, p = parse_gold_date(gold), parse_text_date(first)
        return g is not None and p is not None and dates_match(g, p)
    if category in (ClauseType.renewal_term, ClauseType.notice_period_to_terminate_renewal):
        return durations_match(gold, first)
    return names_match(gold, first)


# --- the frozen test split ---------------------------------------------------------------

#: Seed of the frozen test split (:func:`split_of`). Chosen once, before any figure was measured on
#: the split, and never to be changed: a new seed would turn contracts that thresholds, rules and
#: models were tuned on into test contracts.
TEST_SPLIT_SEED = "docreview-test-split"
#: Share of the contracts in the test split, percent (75 of the 340 shared CUAD contracts).
TEST_SPLIT_PERCENT = 20
#: The split names :func:`split_of` returns, and ``all`` for both.
SPLITS = ("test", "train", "all")


def split_of(filename: str) -> str:
    """``"test"`` or ``"train"``: the frozen split of a CUAD contract by its label ``Filename``.

    A contract is in the test split when the SHA-256 of ``"<TEST_SPLIT_SEED>:<Filename>"`` (hex, its
    first 16 digits as an integer) modulo 100 is below :data:`TEST_SPLIT_PERCENT`. No threshold, rule,
    bound or model choice is tuned on the test split and no shipped model is trained on it; the
    trainers (``benchmarks/train_support.py``, ``benchmarks/train_router.py``, the judge's) use the
    ``train`` contracts, with folds inside them for every threshold.
    """
    digest = hashlib.sha256(f"{TEST_SPLIT_SEED}:{filename}".encode()).hexdigest()
    return "test" if int(digest[:16], 16) % 100 < TEST_SPLIT_PERCENT else "train"


def in_split(filename: str, split: str) -> bool:
    """True when the contract ``filename`` belongs to ``split`` (``test``, ``train`` or ``all``).

    Raises ``ValueError`` for another split name.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: one of {', '.join(SPLITS)}")
    return split == "all" or split_of(filename) == split


# --- router recall --------------------------------------------------------------------------


def locate(text_norm: str, offsets: list[int], piece: str, max_hits: int = 50) -> list[tuple[int, int]]:
    """Occurrences of ``piece`` in a document, as ``(start, end)`` offsets of the original text.

    ``text_norm, offsets`` is :func:`match_form` of the document text; ``piece`` is normalised
    the same way. Returns at most ``max_hits`` occurrences, ``[]`` when not found.
    """
    q, _ = match_form(piece)
    hits: list[tuple[int, int]] = []
    if not q:
        return hits
    i = text_norm.find(q)
    while i >= 0 and len(hits) < max_hits:
        hits.append((offsets[i], offsets[i + len(q) - 1] + 1))
        i = text_norm.find(q, i + 1)
    return hits


def is_covered(start: int, end: int, ranges: Sequence[tuple[int, int]]) -> bool:
    """True when every character of ``[start, end)`` lies in the union of ``ranges``."""
    pos = start
    for a, b in sorted(ranges):
        if a > pos:
            break
        if b > pos:
            pos = b
        if pos >= end:
            return True
    return pos >= end


@dataclass
class RouterTally:
    """Counts for router recall: labelled pieces located, routed (covered by deep chunks), unlocated."""

    located: int = 0
    routed: int = 0
    unlocated: int = 0
    missed_by_category: dict[str, int] = field(default_factory=dict)

    @property
    def recall(self) -> float:
        """routed / located (0.0 when nothing was located)."""
        return self.routed / self.located if self.located else 0.0


def router_tally(
    text: str,
    spans: dict[ClauseType, list[str]],
    deep_ranges: Sequence[tuple[int, int]],
    tally: RouterTally | None = None,
) -> RouterTally:
    """Add one document's labelled pieces to ``tally`` (a new one when ``None``) and return it.

    ``text`` is the document text the chunks' offsets refer to; ``deep_ranges`` are the deep
    chunks' ``(char_start, char_end)``.
    """
    tally = tally or RouterTally()
    norm, offs = match_form(text)
    for cat, cat_spans in spans.items():
        for piece in label_pieces(cat_spans):
            hits = locate(norm, offs, piece)
            if not hits:
                tally.unlocated += 1
                continue
            tally.located += 1
            if any(is_covered(a, b, deep_ranges) for a, b in hits):
                tally.routed += 1
            else:
                tally.missed_by_category[cat.value] = tally.missed_by_category.get(cat.value, 0) + 1
    return tally


def text_from_chunks(chunks: Iterable[tuple[int, int, str]]) -> str:
    """Rebuild a document's text from ``(char_start, char_end, text)`` chunks.

    Characters no chunk covers (whitespace the chunker skipped) become spaces, so offsets
    match the chunks' offsets.
    """
    items = list(chunks)
    size = max((start + len(t) for start, _, t in items), default=0)
    buf = [" "] * size
    for start, _, t in items:
        buf[start : start + len(t)] = t
    return "".join(buf)


# --- playbook agreement ---------------------------------------------------------------------


def lawyer_playbook_status(rule: PlaybookRule, limit: Limit | None, answer: str) -> str | None:
    """The status a playbook rule (:class:`schemas.playbook.PlaybookRule`, its read ``limit``)
    should have on a CUAD contract, derived from the lawyers' ``-Answer`` cell of its clause:

    - ``present`` / ``absent`` (Yes/No categories): ``Yes`` → present, ``No`` → absent;
    - ``allowed_values`` (e.g. ``Governing Law-Answer`` "New York", "Ontario, Canada"): the
      jurisdiction the answer names, compared as :func:`tasks.check.playbook.canonical_value`
      compares the rule's values; an empty answer → the clause is absent;
    - ``max_duration`` / ``min_duration`` (e.g. ``Notice Period To Terminate Renewal- Answer`` "90
      days", "180 days / 6 months"): the longest (max) or shortest (min) period the answer states,
      in days (:data:`tasks.check.playbook.DAYS_PER_UNIT`); an empty answer → absent.

    An absent clause takes the rule's :meth:`~schemas.playbook.PlaybookRule.when_absent` status.
    Returns ``None`` when the answer cannot be read (the pair is left out of the score)."""
    answer = (answer or "").strip()
    expect = rule.expect
    if expect in (Expectation.present, Expectation.absent):
        if answer.lower() not in ("yes", "no"):
            return None
        there = answer.lower() == "yes"
        return "pass" if there == (expect is Expectation.present) else "deviation"
    if not answer:
        return rule.when_absent().value
    if expect is Expectation.allowed_values:
        allowed = {canonical_value(v) for v in rule.values or []}
        return "pass" if canonical_value(answer) in allowed else "deviation"
    if expect in (Expectation.max_duration, Expectation.min_duration) and limit is not None and limit.days is not None:
        periods = [to_days(v) for v in find_durations(answer) if v.amount is not None]
        if not periods:
            return None
        if expect is Expectation.max_duration:
            return "pass" if max(periods) <= limit.days else "deviation"
        return "pass" if min(periods) >= limit.days else "deviation"
    return None


# --- key terms --------------------------------------------------------------------------------

#: The key-term fields scored against CUAD's answer columns: field → category of its ``-Answer`` column.
#: ``expiration_deadline`` is the calendar's end-of-term deadline, scored against the Expiration Date answer.
KEY_TERM_FIELDS: dict[str, ClauseType] = {
    "parties": ClauseType.parties,
    "agreement_date": ClauseType.agreement_date,
    "effective_date": ClauseType.effective_date,
    "expiration_date": ClauseType.expiration_date,
    "expiration_deadline": ClauseType.expiration_date,
    "governing_law": ClauseType.governing_law,
    "renewal_term": ClauseType.renewal_term,
    "notice_period": ClauseType.notice_period_to_terminate_renewal,
}

#: A gold party entry that names the parties together ("SutroVax and Sutro (each a "Party" ...)").
_COLLECTIVE = re.compile(r"\b(?:part(?:y|ies)|collectively|together|each|individually)\b", re.I)


def gold_parties(answer: str) -> list[str]:
    """The party names of a ``Parties-Answer`` cell (``'X ("A"); Y ("B"); X and Y (each a "Party")'``): the
    names before each defined-name bracket, collective entries left out (those opening with "individually",
    "collectively", "each", and those naming only other entries' short names: "ChipMOS and Tsinghua Unigroup")."""
    out = []
    shorts: set[str] = set()
    for entry in answer.split(";"):
        shorts |= {w for q in re.findall(r"[\"“”]([^\"“”]{1,40})[\"“”]", entry) for w in _TOKEN.findall(q.lower())}
        shorts |= set(_TOKEN.findall(entry.partition("(")[0].lower())[:1])  # "SIGA" of "SIGA TECHNOLOGIES"
    for entry in answer.split(";"):
        head = entry.strip().strip("(").lower()
        if re.match(r"(?:individually|collectively|each|together|both|and\b|[\"“”])", head):
            continue
        words = set(_TOKEN.findall(entry.partition("(")[0].lower()))
        if " and " in f" {entry.partition('(')[0].lower()} " and words - {"and", "shall", "the"} <= shorts:
            continue
        entry = entry.strip()
        if not entry:
            continue
        name, _, rest = entry.partition("(")
        name = re.split(r"[\"“”]", name)[0]  # 'Excite, Inc."Excite"'
        # what follows the name is no part of it: "… and its affiliates", "… d/b/a Pro Football Hall of Fame"
        name = re.split(
            r"\s+(?:and\s+(?:all\s+of\s+)?its\b|together\s+with\b|d/b/a\b|dba\b|doing\s+business)|,\s+d/b/a\b", name
        )[0]
        name = name.strip(' ,"“”')
        if not name or (_COLLECTIVE.search(rest) and re.search(r"\band\b", name)) or _COLLECTIVE.fullmatch(name):
            continue
        out.append(name)
    return out


#: Smallest rapidfuzz ``token_set_ratio`` (0-100) at which two party names with a typo between them
#: ("Howmedica Ostenonics Corp." in an answer, "Howmedica Osteonics Corp" in the contract) are the same party.
PARTY_FUZZ = 88


#: Share of the longer name's tokens two names must share when one contains the other: "Bunker One" names
#: "Bunker One (USA) Inc." (2 of 3), "Technology Co., Ltd." does not name "Beijing Baidu Netcom Science and
#: Technology Co., Ltd." (1 of 5), nor does "PJI are" name "PJI Inc." (1 of 2).
PARTY_SHARE = 0.6


def _party_matches(gold: str, shown: str) -> bool:
    """Whether a shown party (``Name ("Short")``) names the gold party: one's name tokens contain the
    other's and share :data:`PARTY_SHARE` of the longer, or the two differ by a typo (rapidfuzz
    ``token_sort_ratio`` ≥ :data:`PARTY_FUZZ`)."""
    from rapidfuzz import fuzz

    def tokens_of(name: str) -> set[str]:
        return _name_tokens(name.replace(".", "").replace("&", " and ")) - {"and"}

    g, p = tokens_of(gold), tokens_of(shown.split(" (")[0])
    if not g or not p:
        return False
    if (g <= p or p <= g) and len(g & p) >= PARTY_SHARE * max(len(g), len(p)):
        return True
    return fuzz.token_sort_ratio(" ".join(sorted(g)), " ".join(sorted(p))) >= PARTY_FUZZ


def key_term_outcome(name: str, answer: str, shown: list[str]) -> str:
    """``right``, ``wrong`` or ``missing``: the values a report shows for one key-term field (a key of
    :data:`KEY_TERM_FIELDS`; ISO dates, periods ``"1 year"``, jurisdictions, parties ``Name ("Short")``)
    against the lawyers' ``-Answer`` cell.

    - nothing shown: ``right`` when the answer is empty or redacted (``[***]``, ``[]``) — or, for the calendar's
      expiration deadline, ``perpetual`` — else ``missing``;
    - something shown and the answer empty: ``wrong`` (a value the lawyers did not find);
    - parties: ``right`` when every gold party is named by a shown one and every shown one names a gold party;
    - dates: day by day (a redacted ``[]`` part matches any); ``perpetual`` only matches ``perpetual``;
    - renewal and notice periods: number and unit (12 months = 1 year), any of the answer's ``;``-parts;
    - governing law: token containment with any of the answer's ``;``-parts.

    Raises ``KeyError`` for another field name."""
    category = KEY_TERM_FIELDS[name]
    answer = (answer or "").strip()
    redacted = bool(re.fullmatch(r"[\[\]\s*]*|\[[^\]]*\]", answer)) if answer else False
    if not shown:
        if name == "expiration_deadline" and "perpetu" in answer.lower():
            return "right"  # a term with no end puts no end in the calendar
        return "right" if not answer or redacted else "missing"
    if not answer or redacted:
        return "wrong"
    if category is ClauseType.parties:
        golds = gold_parties(answer)
        if not golds:
            return "wrong"
        every_gold = all(any(_party_matches(g, s) for s in shown) for g in golds)
        every_shown = all(any(_party_matches(g, s) for g in golds) for s in shown)
        return "right" if every_gold and every_shown else "wrong"
    first = shown[0]
    if category in (ClauseType.agreement_date, ClauseType.effective_date, ClauseType.expiration_date):
        if "perpetu" in answer.lower() or "perpetu" in first.lower():
            return "right" if "perpetu" in answer.lower() and "perpetu" in first.lower() else "wrong"
        g = parse_gold_date(answer)
        year = re.fullmatch(r"(\d{4})(?:-(\d{2}))?", first.strip())  # a date shown with its day (and month) blank
        if year and g is not None and g[2] is not None:
            return "missing"  # the contract leaves the day blank where the lawyers give one: not a date to file
        p = (
            (int(year.group(1)), int(year.group(2)) if year.group(2) else None, None)
            if year
            else parse_text_date(first)
        )
        return "right" if g is not None and p is not None and dates_match(g, p) else "wrong"
    parts = [p.strip() for p in re.split(r"[;/]", answer) if p.strip()]
    if category in (ClauseType.renewal_term, ClauseType.notice_period_to_terminate_renewal):
        return "right" if any(durations_match(p, first) for p in parts) else "wrong"
    # "England and Wales" against "England, United Kingdom; Wales, United Kingdom": each named law is one of theirs
    named = [n for n in re.split(r"\s+and\s+|;\s*", first) if n.strip()]
    return "right" if all(any(names_match(p, n) for p in parts) for n in named) else "wrong"
