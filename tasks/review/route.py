"""Route: decide which parts of a document need the deep (LLM) review and which to skip.

Most of a contract is boilerplate; CUAD's authors report that the clauses a lawyer looks for
make up about 10 % of a contract's text (Hendrycks et al., "CUAD: An Expert-Annotated NLP
Dataset for Legal Contract Review", 2021, https://arxiv.org/abs/2103.06268).

Granularity. The router decides per *segment*, not per chunk: the document text (rebuilt from
its chunks) is tiled into segments at paragraph breaks, numbered/lettered items, headings and
sentence ends, and consecutive sentences of one paragraph are merged up to
:data:`SEGMENT_MAX_CHARS` characters (:func:`segment_text`). Measured on the 340 shared CUAD
contracts, a perfect router must send 0.13 of the text at sentence level, 0.27 at paragraph
level, 0.35 at 1,500-character chunks and 0.59 at 4,000-character chunks, so chunk-level
routing cannot be both cheap and complete.

Signals, in the order they are reported (``preamble``, the obligation signals and ``scorer``
decide; the ``term:`` vocabulary found in a deep segment explains it; without a scorer the
vocabulary decides too, which costs more text for less recall: on the held-out contracts 0.86 of
the labelled spans at a routing rate of 0.47):

- ``preamble``: it starts in the first :data:`PREAMBLE_CHARS` characters (title, parties, dates);
- ``term:<name>``: decision-point vocabulary written from the CUAD v1 category definitions
  (``labels/CUAD_v1_README.txt``) and common drafting (exclusivity, first rights, change of
  control, assignment, royalties and shares of revenue, minimum commitments, caps, ownership of
  IP, licence grants, audit, insurance, liability limits, renewal and term, governing law, …);
- ``payment`` / ``confidentiality`` / ``data_protection``: obligations that CUAD has no
  category for but a compliance review must see (payment terms, confidentiality obligations,
  personal-data processing);
- ``scorer``: a linear model (logistic regression) over four tf-idf blocks of the segment
  (:func:`segment_terms`: its word unigrams/bigrams, its character 3-5-grams, and the previous
  and next segments' words; :class:`ScorerModel`, stored in :data:`MODEL_FILE`) scores at or
  above its threshold. It is trained by ``python -m benchmarks.train_router`` on a fixed
  two-thirds of the shared CUAD contracts (split by a hash of the file name), its threshold is
  set from out-of-fold scores, and its figures are reported on the held-out third only (see
  docs/routing.md).

Review units. A chunk is ``deep`` when at least one segment assigned to it is; each deep
segment belongs to exactly one chunk (the one whose own part, before the next chunk starts,
holds the segment's start), so overlapping chunks never send the same text twice.
:func:`review_unit` builds what is sent to the reviewer: the chunk's deep segments, contiguous
runs joined by :data:`UNIT_SEPARATOR`, with ``page_offsets`` recomputed so page attribution
stays right, and the chunk's ``char_start``/``char_end`` kept so the fact-check grounds quotes
in the chunk's range of the document. A quote cannot cross a seam and still be in the
document, so a seam-crossing quote is caught as ``unsupported`` rather than passed.

Speed. :func:`route_text` costs about 0.4 s of CPU per MB of text (``python -m benchmarks.router``):
the scorer runs on numpy arrays over the document tokenised once (:func:`score_segments`, the same
scores to the last bit as :meth:`ScorerModel.score`), the signal patterns scan the lower-cased text
with rewritten, equivalent patterns whose alternatives are searched one by one for their literal
prefixes (:func:`_chain`), and with a scorer the ``term:`` vocabulary, which only explains deep
segments, is scanned only around them (:func:`_deep_windows`).

The routing rate is weighted by characters: characters covered by the union of the deep
ranges divided by characters covered by all chunks (:func:`routing_rate`).
"""

from __future__ import annotations

import bisect
import functools
import gzip
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, repeat
from pathlib import Path
from typing import Any, Literal

import numpy as np
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field, PrivateAttr

from schemas.documents import Chunk
from tasks.runnames import for_document

#: Bumped when the routing signals or the granularity change meaning.
ROUTER_VERSION = "route-v3"

#: Routing modes accepted by the flow (``auto`` is resolved per backend by :func:`resolve_mode`).
ROUTING_MODES = ("auto", "all", "decision-points")

#: Consecutive sentences of one paragraph are merged into one segment up to this many characters.
SEGMENT_MAX_CHARS = 300

#: Segments starting before this character offset are the preamble (title, parties, dates).
PREAMBLE_CHARS = 2000

#: Joins non-contiguous runs of deep segments in a review unit: a paragraph of its own, not document
#: text, with words in it so sentence splitters keep it apart instead of gluing it to the next run.
UNIT_SEPARATOR = "\n\n[… passage omitted …]\n\n"

#: The scorer's weights (JSON, written by ``python -m benchmarks.train_router``).
MODEL_FILE = Path(__file__).with_name("route_model.json.gz")

Route = Literal["deep", "skip"]

_I = re.IGNORECASE


def _rx(pattern: str) -> re.Pattern[str]:
    """Compile case-insensitively; a literal space in ``pattern`` matches any whitespace run."""
    return re.compile(pattern.replace(" ", r"\s+"), _I)


#: Decision-point vocabulary (one occurrence in a segment is enough): name -> pattern.
TERM_SIGNALS: dict[str, re.Pattern[str]] = {
    k: _rx(v)
    for k, v in {
        "exclusivity": r"exclusiv|sole (?:source|supplier|provider|distributor)",
        "non_compete": r"\bcompet(?:e|es|ing|itor|itors|itive|ition)\b",
        "non_solicit": r"solicit|\bhire\b|recruit",
        "disparagement": r"disparag|derogat",
        "most_favoured": r"most favou?red|most favou?rable|no less favou?rable|more favou?rable",
        "first_right": r"first (?:refusal|offer|negotiat)|last (?:refusal|offer|look)|right of first|\boption to|"
        r"right to (?:negotiate|match)",
        "change_of_control": r"change (?:of|in) control|substantially all|\bmerger|consolidat",
        "assignment": r"\bassign(?!ed to it)|\btransferab|\btransfer (?:this|its|any|the|all)",
        "share_of_revenue": r"royalt|%|percent|profit|net sales|commission",
        "minimum_commitment": r"\bminimum|shortfall|take or pay|purchase (?:requirement|commitment)",
        "volume_limit": r"\bmaximum|not (?:to )?exceed|no more than|not more than|\bcap\b",
        "ip_ownership": r"intellectual property|\bshall (?:own|be (?:the )?(?:sole |exclusive )?(?:owner|property))|"
        r"right,? title and interest|work (?:product|made for hire)|hereby assigns?",
        "joint_ownership": r"\bjoint(?:ly)?\b|co-own|undivided",
        "licence_grant": r"licen[cs]e (?:to|under)|hereby grants?|\bgrants? (?:to )?\w+ (?:a|an)\b|sub-?licens|"
        r"non-?transferable|non-?sublicens",
        "affiliate_licence": r"affiliates?[^.;]{0,80}licen|licen[^.;]{0,80}affiliates?",
        "unlimited": r"unlimited|enterprise[- ]wide|all you can",
        "perpetual": r"perpetu|irrevocabl",
        "escrow": r"escrow|source code",
        "post_termination": r"(?:after|upon|following) (?:the )?(?:termination|expiration|expiry)|wind[\s-]?down|"
        r"transition (?:period|services|assistance)|sell[\s-]off",
        "audit": r"audit|inspect|books and records|\brecords\b",
        "liability_limit": r"in no event|limitation of liabilit|aggregate liabilit|total liabilit|liable for|consequential|"
        r"punitive|shall not exceed|maximum liabilit",
        "liquidated_damages": r"liquidated|penalt",
        "warranty_period": r"warrant(?:y|ies) period|warrant[^.;]{0,80}(?:days|months|years)|"
        r"(?:days|months|years)[^.;]{0,80}warrant",
        "insurance": r"insur",
        "covenant_not_to_sue": r"contest|challenge|\bsue\b|impugn|covenant not",
        "beneficiary": r"beneficiar",
        "term": r"initial term|\bterm of (?:this|the)|shall (?:continue|remain) in (?:full )?(?:force|effect)|\bexpir|"
        r"\brenew|evergreen|automatically extend",
        "termination_for_convenience": r"terminat[^.;]{0,80}(?:convenience|without cause|for any reason|any time|"
        r"upon \w+ (?:days|months))|(?:convenience|without cause|for any reason)[^.;]{0,80}terminat",
        "notice_period": r"notice of non-?renewal|(?:days|months)'? (?:prior )?(?:written )?notice",
        "governing_law": r"governed by|governing law|laws of the|construed (?:in accordance|under)",
        "effective_date": r"effective date|dated as of|made and entered|entered into (?:as of|on|this)",
        "signature_block": r"in witness whereof",
    }.items()
}

#: Non-CUAD obligations routed deep: name -> pattern (one occurrence is enough).
OBLIGATION_SIGNALS: dict[str, re.Pattern[str]] = {
    "payment": _rx(
        r"(?:due|payable) (?:and payable )?(?:within|upon|on|net)|\bnet \d{1,3}\b|(?:shall|will|agrees? to) pay\b|"
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


def _top_level(pattern: str) -> tuple[list[str], int]:
    """``(alternatives, end)``: the alternatives of ``pattern`` split at ``|`` outside groups and character
    classes, up to ``end``, the offset of the ``)`` that closes an enclosing group (``len(pattern)`` if none)."""
    out: list[str] = []
    current: list[str] = []
    depth, in_class, escaped = 0, False, False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return out + ["".join(current)], i
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append("".join(current))
            current = []
            continue
        current.append(ch)
    return out + ["".join(current)], len(pattern)


def _prefix_friendly(pattern: str) -> str:
    r"""``pattern`` rewritten so that its top-level alternatives start with a literal character where they
    did not, which lets the regex engine skip to candidate positions (scans 2-3x faster). Both rewrites keep
    the matches and the order in which alternatives are tried: a leading non-capturing group without a
    quantifier is distributed (``(?:a|b)c`` -> ``ac|bc``), and a leading word boundary before a letter
    becomes a look-behind (``\bxy`` -> ``x(?<!\wx)y``: not preceded by a word character)."""
    alternatives: list[str] = []
    for alt in _top_level(pattern)[0]:
        if alt.startswith("(?:"):
            inner, end = _top_level(alt[3:])
            rest = alt[3 + end + 1 :]
            if end < len(alt) - 3 and rest[:1] not in ("?", "*", "+", "{"):
                alternatives += [a + rest for a in inner]
                continue
        alternatives.append(alt)
    return "|".join(re.sub(r"^\\b([a-z])(?![?*+{])", r"\1(?<!\\w\1)", alt) for alt in alternatives)


def _for_lower_case(pattern: re.Pattern[str]) -> re.Pattern[str]:
    r"""``pattern`` for text already in lower case: the same matches without ``IGNORECASE`` and with
    :func:`_prefix_friendly` alternatives, which makes the scan about 5x faster. Only valid for a pattern
    whose escapes are all lower case (an upper-case escape such as ``\S`` would change meaning when lowered)."""
    if re.search(r"\\[A-Z]", pattern.pattern):
        raise ValueError(f"signal pattern with an upper-case escape: {pattern.pattern!r}")
    return re.compile(_prefix_friendly(pattern.pattern.lower()))


_TERM_LOWER = {k: _for_lower_case(p) for k, p in TERM_SIGNALS.items()}
_OBLIGATION_LOWER = {k: _for_lower_case(p) for k, p in OBLIGATION_SIGNALS.items()}


def _alternatives(pattern: re.Pattern[str]) -> tuple[re.Pattern[str], ...] | None:
    r"""The top-level alternatives of a :func:`_for_lower_case` pattern compiled one by one, each rewritten to
    start with its whole leading run of letters (``t(?<!\wt)erm`` -> ``term(?<!\wterm)``, the same matches), so
    the regex engine searches each for a literal prefix: the alternatives' scans take about half the time of the
    pattern's own scan (see :func:`_scan_signals`). ``None`` when an alternative does not start with a literal
    character (it could match the empty string or at any position)."""
    out = []
    for alt in _top_level(pattern.pattern)[0]:
        m = re.match(r"([a-z])\(\?<!\\w\1\)([a-z]*)", alt)
        if m:
            run = m.group(2)
            while run and alt[m.start(2) + len(run) :][:1] in ("?", "*", "+", "{"):
                run = run[:-1]  # a quantified last letter is not part of the literal
            literal = m.group(1) + run
            alt = f"{literal}(?<!\\w{literal})" + alt[m.start(2) + len(run) :]
        if not re.match(r"[a-z0-9%$-](?![?*+{])", alt):
            return None
        out.append(re.compile(alt))
    return tuple(out)


#: :func:`_alternatives` of the lower-case patterns (absent: scanned as a whole).
_ALTERNATIVES = {
    p: alts for p in chain(_TERM_LOWER.values(), _OBLIGATION_LOWER.values()) if (alts := _alternatives(p)) is not None
}
_NON_ASCII = re.compile(r"[^\x00-\x7f]")

#: No signal pattern can match a ``.`` or ``;`` (they hold only words, whitespace, ``%``, ``\w``,
#: ``\d`` and ``[^.;]``; ``tests/test_route.py`` checks this), so a regex scan started just after
#: one of these characters finds exactly the matches a scan of the whole text finds after it.
SIGNAL_STOPS = ".;"


#: The non-ASCII characters a case-insensitive ASCII letter matches (``İ``, ``ı``, ``ſ``, the Kelvin sign),
#: mapped to that letter.
_FOLDS_TO_ASCII = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}


def _lowers_exactly(c: str) -> bool:
    """True when scanning ``c.lower()`` with the lower-case patterns matches what scanning ``c`` case-insensitively
    does: one character, not ASCII (no pattern literal matches either), same word/digit/space class."""
    lo = c.lower()
    return (
        len(lo) == 1
        and not lo.isascii()
        and lo.isalnum() == c.isalnum()
        and lo.isdecimal() == c.isdecimal()
        and lo.isspace() == c.isspace()
    )


def _signal_scan(text: str) -> tuple[str, dict[str, re.Pattern[str]], dict[str, re.Pattern[str]]]:
    """The text the signal patterns scan and the patterns to use: ``text.lower()`` (after mapping
    :data:`_FOLDS_TO_ASCII`) with the lower-case patterns when that is exactly equivalent to a case-insensitive
    scan of ``text`` (ASCII text; non-ASCII characters without case or that lower-case to one non-ASCII
    character of the same class), else ``text`` with :data:`TERM_SIGNALS` and :data:`OBLIGATION_SIGNALS`.
    Offsets are the same either way."""
    if text.isascii():
        return text.lower(), _TERM_LOWER, _OBLIGATION_LOWER
    chars = {ord(c) for c in _NON_ASCII.findall(text)}
    if all(c in _FOLDS_TO_ASCII or _lowers_exactly(chr(c)) for c in chars):
        if not chars.isdisjoint(_FOLDS_TO_ASCII):
            text = text.translate(_FOLDS_TO_ASCII)
        return text.lower(), _TERM_LOWER, _OBLIGATION_LOWER
    return text, TERM_SIGNALS, OBLIGATION_SIGNALS


_STOP = re.compile("[" + re.escape(SIGNAL_STOPS) + "]")


def _deep_windows(scan: str, spans: Sequence[tuple[int, int]], deep: Sequence[bool]) -> list[tuple[int, int, int]]:
    """Windows of ``scan`` that a signal scan must cover to find every match starting in a deep segment.

    Returns ``[(scan_from, attribute_before, scan_to), ...]`` in document order: each run of consecutive
    deep segments ``[a, b)`` is widened to just after the last :data:`SIGNAL_STOPS` character before ``a``
    (0 when none) and to just after the first one at or after ``b`` (the end when none); windows that
    overlap are merged. No match crosses a stop character, so a scan of a window finds exactly the
    matches that a scan of the whole text finds starting in it before ``attribute_before``.
    """
    stops = [m.start() for m in _STOP.finditer(scan)]
    windows: list[tuple[int, int, int]] = []
    i, n = 0, len(spans)
    while i < n:
        if not deep[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and deep[j + 1]:
            j += 1
        a, b = spans[i][0], spans[j][1]
        k = bisect.bisect_left(stops, a)
        lo = stops[k - 1] + 1 if k else 0
        k = bisect.bisect_left(stops, b)
        hi = stops[k] + 1 if k < len(stops) else len(scan)
        if windows and lo < windows[-1][2]:
            windows[-1] = (windows[-1][0], b, hi)
        else:
            windows.append((lo, b, hi))
        i = j + 1
    return windows


def _scan_signals(
    scan: str,
    patterns: dict[str, re.Pattern[str]],
    starts: Sequence[int],
    windows: Sequence[tuple[int, int, int]],
    into: Sequence[list[str] | None],
    prefix: str,
) -> None:
    """Append ``prefix + name`` to ``into[i]`` once for each pattern with a match starting in segment ``i``.

    ``windows`` are ``(scan_from, attribute_before, scan_to)`` offsets: matches are searched in
    ``scan[scan_from:scan_to]`` (``scan_from`` 0 or just after a stop character, ``scan_to`` just after one or
    the end) and those starting before ``attribute_before`` are attributed to the segment holding their
    start (``starts``: the segments' start offsets), except segments whose ``into`` entry is ``None``.
    """
    for name, pattern in patterns.items():
        signal = prefix + name
        alternatives = _ALTERNATIVES.get(pattern)
        for lo, before, hi in windows:
            last = -1
            matches = (
                (m.start() for m in pattern.finditer(scan, lo, hi))
                if alternatives is None
                else _chain(scan, pattern, alternatives, lo, before, hi)
            )
            for at in matches:
                if at >= before:
                    break
                i = bisect.bisect_right(starts, at) - 1
                if i != last and i >= 0:
                    last = i
                    found = into[i]
                    if found is not None:
                        found.append(signal)


def _chain(
    scan: str, pattern: re.Pattern[str], alternatives: Sequence[re.Pattern[str]], lo: int, before: int, hi: int
) -> Iterator[int]:
    """The start offsets of ``pattern.finditer(scan, lo, hi)``'s matches, up to the first at or after ``before``,
    found with the pattern's :func:`_alternatives`.

    ``pattern`` matches at an offset exactly when one of its alternatives does, so the next match after the
    previous one's end ``e`` starts at the least of the alternatives' first matches at or after ``e`` (each kept
    until ``e`` passes it), and ``pattern.match`` there gives the match ``finditer`` finds and so the next ``e``.
    No match is empty (every alternative starts with a literal character).
    """
    big = hi + 1
    nxt = []
    for alt in alternatives:
        m = alt.search(scan, lo, hi)
        nxt.append(m.start() if m else big)
    while True:
        at = min(nxt)
        if at >= before:
            return
        yield at
        match = pattern.match(scan, at, hi)
        assert match is not None, "an alternative matches at `at`, so the pattern does"
        end = match.end()
        for k, pos in enumerate(nxt):
            if pos < end:
                m = alternatives[k].search(scan, end, hi)
                nxt[k] = m.start() if m else big


# --- segmentation ---------------------------------------------------------------------------

_ABBREV = frozenset(
    [
        "inc",
        "co",
        "corp",
        "ltd",
        "llc",
        "l.l.c",
        "l.p",
        "lp",
        "n.a",
        "no",
        "nos",
        "sec",
        "secs",
        "sect",
        "art",
        "arts",
        "u.s",
        "u.s.a",
        "e.g",
        "i.e",
        "etc",
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "vs",
        "v",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "p.c",
        "s.a",
        "b.v",
        "n.v",
        "para",
        "paras",
        "cl",
        "ch",
        "fig",
        "approx",
        "dept",
        "est",
        "int'l",
        "govt",
        "jr",
        "sr",
        "ave",
        "blvd",
        "rd",
        "ste",
        "bros",
        "assoc",
        "pty",
        "plc",
        "gmbh",
        "ag",
        "viz",
        "cf",
        "ex",
        "exh",
    ]
)
# Paragraph cuts: a blank line; a line break before a numbered or lettered item or a heading word;
# a sentence end at the end of a line; a line break before an upper-case heading line.
_PARA_CUT = re.compile(
    r"\n[ \t]*\n\s*"
    r"|\n(?=[ \t]*(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?[ \t]+[A-Z(\"'“]|\(?[a-zA-Z]{1,2}\)[ \t]|\(?[ivxIVX]{1,5}\)[ \t]"
    r"|\(\d{1,2}\)[ \t]|(?:ARTICLE|Article|SECTION|Section|EXHIBIT|Exhibit|SCHEDULE|Schedule)[ \t]))"
    r"|(?<=[.:;!?])[\"'”’)\]]?[ \t]*\n"
    r"|\n(?=[ \t]*[A-Z][A-Z0-9 ,;&'()/-]{3,80}\n)"
)
_SENT_CUT = re.compile(r"(?<=[.!?])[\"'”’)\]]?[ \t]+(?=[\"“'(\[]?[A-Z0-9])")
_WORD_BEFORE_DOT = re.compile(r"([A-Za-z][A-Za-z.']*)\.[\"'”’)\]]?\s*$")
_TINY = 12  # segments with at most this many non-space characters ("1.", "(a)") join the next one


def segment_text(text: str, max_chars: int = SEGMENT_MAX_CHARS) -> list[tuple[int, int]]:
    """Tile ``text`` into segments: ``[(start, end), ...]`` character offsets, contiguous, covering it.

    Cuts at paragraph boundaries always and at sentence ends (not after abbreviations such as
    ``Inc.`` or single letters); sentences of one paragraph are merged while the merged segment
    stays within ``max_chars`` characters (``0``: one sentence per segment). Fragments of at
    most 12 non-space characters (item numbers) join the following segment. Never raises;
    ``[]`` for empty text.
    """
    n = len(text)
    if n == 0:
        return []
    para = {0, n}
    for m in _PARA_CUT.finditer(text):
        para.add(m.end())
    cuts = set(para)
    for m in _SENT_CUT.finditer(text):
        w = _WORD_BEFORE_DOT.search(text[max(0, m.start() - 30) : m.start() + 1])
        if w and (w.group(1).lower() in _ABBREV or len(w.group(1)) == 1):
            continue
        cuts.add(m.end())
    points = sorted(cuts)
    out: list[list[int]] = []
    carry: int | None = None
    for a, b in zip(points, points[1:]):
        if b <= a:
            continue
        starts_para = a in para
        if carry is not None:
            a, carry, starts_para = carry, None, True
        if len(text[a:b].strip()) <= _TINY and b < n:
            carry = a
            continue
        if out and not starts_para and max_chars and b - out[-1][0] <= max_chars:
            out[-1][1] = b
        else:
            out.append([a, b])
    if carry is not None:
        if out:
            out[-1][1] = n
        else:
            out.append([carry, n])
    return [(a, b) for a, b in out]


# --- the scorer -----------------------------------------------------------------------------

_WORD = re.compile(r"[a-z]+|\d+|[%$]")
_SPACE = re.compile(r"\s+")

#: Feature blocks of the scorer: word uni/bigrams, character 3-5-grams within words, and the
#: previous and next segments' words. Each block is a tf-idf vector normalised on its own.
BLOCKS = ("word", "char", "prev", "next")

#: Character n-grams are taken from at most this many characters of a segment: a segment only grows
#: past it when the text has no sentence or paragraph break (8 of 77,505 CUAD segments), and a
#: megabyte without one must not cost millions of n-grams.
CHAR_GRAM_CHARS = 4000


def _words(text: str) -> list[str]:
    return ["#" if w.isdigit() else w for w in _WORD.findall(text.lower())]


def _char_grams(text: str, low: int = 3, high: int = 5) -> list[str]:
    """Character n-grams of each whitespace-separated word padded with one space each side
    (``"pay"`` gives ``" pa"``, ``"pay"``, ``"ay "``, ``" pay"``, ...): a word shorter than n
    yields itself once."""
    out: list[str] = []
    for w in _SPACE.sub(" ", text.lower()).split():
        out.extend(_padded_grams(w, low, high))
    return out


def iter_segment_terms(text: str, segments: Sequence[tuple[int, int]]) -> Iterator[dict[str, dict[str, int]]]:
    """:func:`segment_terms`, one segment at a time (memory stays flat on long documents)."""
    prev: dict[str, int] = {}
    ws_next = _words(text[segments[0][0] : segments[0][1]]) if segments else []
    for i, (a, b) in enumerate(segments):
        w = ws_next
        ws_next = _words(text[segments[i + 1][0] : segments[i + 1][1]]) if i + 1 < len(segments) else []
        uni = dict(Counter(w))
        word = Counter(w)
        word.update(f"{x} {y}" for x, y in zip(w, w[1:]))
        yield {
            "word": dict(word),
            "char": dict(Counter(_char_grams(text[a : min(b, a + CHAR_GRAM_CHARS)]))),
            "prev": prev,
            "next": dict(Counter(ws_next)),
        }
        prev = uni


def segment_terms(text: str, segments: Sequence[tuple[int, int]]) -> list[dict[str, dict[str, int]]]:
    """Raw term counts of each segment, per block of :data:`BLOCKS`: ``[{block: {term: count}}]``.

    ``word``: the segment's word unigrams and bigrams (lower case, numbers as ``#``);
    ``char``: character 3-5-grams within its words (of its first :data:`CHAR_GRAM_CHARS`
    characters); ``prev``/``next``: the previous/next segment's word unigrams (empty at the
    document's ends).
    """
    return list(iter_segment_terms(text, segments))


class _BlockArrays:
    """A :class:`ScorerBlock`'s terms as arrays: ``index`` maps a term to its id ``0..T-1``, ``idf`` and
    ``weight`` are float64 arrays of shape ``(T,)``. For word bigrams (built on first use):
    ``pair_words`` maps a word of a known bigram to its id, ``pair_keys`` (sorted int64, shape ``(B,)``)
    holds ``first_word_id * len(pair_words) + second_word_id`` and ``pair_terms`` the bigram's term id."""

    def __init__(self, terms: dict[str, tuple[float, float]]) -> None:
        self.terms = terms
        self.index = {t: i for i, t in enumerate(terms)}
        iw = np.array(list(terms.values()), dtype=np.float64).reshape(-1, 2)
        self.idf = np.ascontiguousarray(iw[:, 0])
        self.weight = np.ascontiguousarray(iw[:, 1])
        self._pairs: tuple[dict[str, int], np.ndarray, np.ndarray] | None = None
        self._grams: tuple[np.ndarray, int, np.ndarray, np.ndarray] | None = None

    def grams(self) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """``(alphabet, bits, codes, ids)`` for character n-grams (built on first use): ``alphabet`` the sorted
        code points (int64) of the characters in 3-5-character terms, ``codes`` (sorted int64) each such
        term packed ``bits`` bits a character (character ``c`` as its rank in ``alphabet`` plus 1; see
        :func:`_gram_ids`), ``ids`` the term ids in the same order."""
        if self._grams is None:
            short = [(t, i) for t, i in self.index.items() if 3 <= len(t) <= 5]
            alphabet = sorted({ord(c) for t, _ in short for c in t})
            rank = {c: r + 1 for r, c in enumerate(alphabet)}
            bits = max(len(alphabet) + 1, 2).bit_length()
            if 5 * bits > 62:
                raise ValueError("character n-gram alphabet too large to pack")
            codes = []
            for t, _ in short:
                code = 0
                for c in t:
                    code = (code << bits) | rank[ord(c)]
                codes.append(code)
            keys = np.array(codes, dtype=np.int64)
            order = np.argsort(keys, kind="stable")
            self._grams = (
                np.array(alphabet, dtype=np.int64),
                bits,
                keys[order],
                np.array([i for _, i in short], dtype=np.int64)[order],
            )
        return self._grams

    def pairs(self) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
        """``(pair_words, pair_keys, pair_terms)`` (see the class docstring)."""
        if self._pairs is None:
            words: dict[str, int] = {}
            firsts, seconds, ids = [], [], []
            for t, i in self.index.items():
                parts = t.split(" ")
                if len(parts) == 2 and parts[0] and parts[1]:
                    firsts.append(words.setdefault(parts[0], len(words)))
                    seconds.append(words.setdefault(parts[1], len(words)))
                    ids.append(i)
            keys = np.array(firsts, dtype=np.int64) * max(len(words), 1) + np.array(seconds, dtype=np.int64)
            order = np.argsort(keys, kind="stable")
            self._pairs = (words, keys[order], np.array(ids, dtype=np.int64)[order])
        return self._pairs


class ScorerBlock(BaseModel):
    """One feature block of the scorer: ``terms`` maps a term to ``[idf, weight]``; ``scale`` multiplies
    the block's contribution. Terms not listed are ignored (they count in neither sum nor norm)."""

    scale: float = 1.0
    terms: dict[str, tuple[float, float]] = Field(default_factory=dict)
    _arrays: Any = PrivateAttr(default=None)

    def arrays(self) -> _BlockArrays:
        """The block as arrays for :func:`score_segments`, built once per ``terms`` mapping (replace
        ``terms``, do not edit it in place, once the block has been used)."""
        cached = self._arrays
        if cached is None or cached.terms is not self.terms:
            cached = self._arrays = _BlockArrays(self.terms)
        return cached

    def score(self, counts: dict[str, int]) -> float:
        """``scale * sum(v_t * weight_t) / ||v||`` with ``v_t = (1 + ln count_t) * idf_t`` over known terms."""
        num = sq = 0.0
        get, log = self.terms.get, math.log
        for t, n in counts.items():
            iw = get(t)
            if iw is None:
                continue
            idf, weight = iw
            v = idf if n == 1 else (1.0 + log(n)) * idf
            num += v * weight
            sq += v * v
        return self.scale * num / math.sqrt(sq) if sq else 0.0


class ScorerModel(BaseModel):
    """Linear segment scorer over tf-idf blocks: ``score = bias + sum(block.score(counts[block]))``;
    a segment is deep when ``score >= threshold`` (log-odds).

    ``blocks`` maps names of :data:`BLOCKS` to :class:`ScorerBlock`; ``trained_on`` and ``held_out``
    describe the training split and the figures on the frozen test split (``recall``, ``rate``, ``documents``).
    """

    threshold: float
    bias: float = 0.0
    blocks: dict[str, ScorerBlock] = Field(default_factory=dict)
    trained_on: str = ""
    held_out: dict[str, float] = Field(default_factory=dict)
    _word_rows: Any = PrivateAttr(default=None)  # cache of :func:`_word_table`

    def score(self, terms: dict[str, dict[str, int]]) -> float:
        """Log-odds score of one segment's :func:`segment_terms` entry."""
        return self.bias + sum(b.score(terms.get(name, {})) for name, b in self.blocks.items())


def _padded_grams(word: str, low: int = 3, high: int = 5) -> list[str]:
    """:func:`_char_grams` of one whitespace-free, lower-case word, in the same order."""
    w = f" {word} "
    out: list[str] = []
    for n in range(low, high + 1):
        if len(w) <= n:
            out.append(w)
            break
        out.extend(w[i : i + n] for i in range(len(w) - n + 1))
    return out


def _gram_ids(words: list[str], arrays: _BlockArrays) -> tuple[np.ndarray, np.ndarray]:
    """Known character n-grams of each distinct word, as :func:`_padded_grams` lists them: ``(lengths, ids)``,
    int64 arrays where word ``k``'s term ids are ``ids[sum(lengths[:k]):][:lengths[k]]`` (unknown n-grams left out).

    Vectorised: the padded words are laid end to end as code points, every 3-, 4- and 5-character window
    inside a word is packed into one int64 (a character outside the block's alphabet makes it unknown) and
    looked up in the block's sorted codes. A padded word of ``L`` characters gives, in order, its ``L-2``
    3-grams, ``L-3`` 4-grams and ``L-4`` 5-grams (fewer when ``L < 5``: the whole word is then its last n-gram).
    """
    alphabet, bits, codes, term_ids = arrays.grams()
    n_words = len(words)
    if not n_words or not len(codes):
        return np.zeros(n_words, dtype=np.int64), np.zeros(0, dtype=np.int64)
    padded = np.fromiter(map(len, words), dtype=np.int64, count=n_words) + 2
    cps = np.frombuffer(("".join(f" {w} " for w in words)).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    at = np.minimum(np.searchsorted(alphabet, cps), len(alphabet) - 1)
    char = np.where(alphabet[at] == cps, at + 1, 0)  # 0: not in any known n-gram
    zeros = np.concatenate(([0], np.cumsum(char == 0)))
    word_at = np.cumsum(padded) - padded  # where each padded word starts
    per_n = [np.maximum(padded - n + 1, 0) for n in (3, 4, 5)]
    out_at = np.cumsum(per_n[0] + per_n[1] + per_n[2]) - (per_n[0] + per_n[1] + per_n[2])
    total = int((per_n[0] + per_n[1] + per_n[2]).sum())
    packed = np.zeros(total, dtype=np.int64)
    owner = np.empty(total, dtype=np.int64)
    before = np.zeros(n_words, dtype=np.int64)  # n-grams of the shorter lengths, per word
    for n, count in zip((3, 4, 5), per_n):
        word = np.repeat(np.arange(n_words, dtype=np.int64), count)
        i = np.arange(len(word), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        start = word_at[word] + i
        code = np.zeros(len(word), dtype=np.int64)
        for k in range(n):
            code = (code << bits) | char[start + k]
        code[zeros[start + n] - zeros[start] > 0] = 0  # no term's code is 0
        dest = out_at[word] + before[word] + i
        packed[dest] = code
        owner[dest] = word
        before += count
    ids = _lookup(codes, term_ids, packed)
    known = ids >= 0
    return np.bincount(owner[known], minlength=n_words).astype(np.int64), ids[known]


def _lookup(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``values[j]`` where ``keys[j] == q`` for each of ``queries``, ``-1`` where no key equals it (int64 arrays;
    ``keys`` sorted and distinct, shape of ``values``). Queries are looked up in sorted order (much faster
    than a binary search per query in random order); non-negative queries are sorted with their index packed
    into the low bits of one int64 (a plain sort, about 3x faster than an argsort)."""
    n = len(queries)
    out = np.full(n, -1, dtype=np.int64)
    if not len(keys) or not n:
        return out
    ibits = n.bit_length()
    if int(queries.min()) >= 0 and int(queries.max()).bit_length() + ibits <= 62:
        packed = (queries << ibits) | np.arange(n, dtype=np.int64)
        packed.sort()
        order, ordered = packed & ((1 << ibits) - 1), packed >> ibits
    else:
        order = np.argsort(queries)
        ordered = queries[order]
    at = np.minimum(np.searchsorted(keys, ordered), len(keys) - 1)
    hit = keys[at] == ordered
    out[order[hit]] = values[at[hit]]
    return out


#: Separates the segments' texts when they are tokenised as one string: matched by :data:`_WORD_OR_SEP` as a
#: token of its own and split off by ``str.split`` when written with a space each side; not a word character.
_SEP = "\x00"
_WORD_OR_SEP = re.compile(_WORD.pattern + "|" + _SEP)


def _token_arrays(tokens: list[str], separator: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Tokens of all segments, segments separated by ``separator`` tokens: ``(vocab, ids, seg)`` where ``vocab``
    lists the distinct tokens other than the separator in order of first appearance and the int64 arrays (one
    entry per token other than the separator, in document order) hold the token's index in ``vocab`` and its
    segment."""
    vocab = list(dict.fromkeys(tokens))
    local = {t: i for i, t in enumerate(vocab)}
    ids = np.fromiter(map(local.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    sep = local.get(separator)
    if sep is None:
        return vocab, ids, np.zeros(len(ids), dtype=np.int64)
    is_sep = ids == sep
    seg = np.cumsum(is_sep)[~is_sep]
    ids = ids[~is_sep]
    vocab.pop(sep)
    ids -= ids > sep  # ids above the separator's move down by one
    return vocab, ids, seg


def _segment_tokens(
    text: str, segments: Sequence[tuple[int, int]]
) -> tuple[tuple[list[str], np.ndarray, np.ndarray], tuple[list[str], np.ndarray, np.ndarray]]:
    """The tokens of every segment for the scorer, as :func:`_token_arrays` ``(vocab, ids, seg)`` triples:
    ``words``, the :func:`_words` of each segment (numbers still as digits: :func:`score_segments` maps them to
    ``#``), and ``chars``, the whitespace-separated words of each segment's first :data:`CHAR_GRAM_CHARS`
    characters (lower case), whose n-grams make the ``char`` block.

    The segments' lower-cased texts are joined with :data:`_SEP` and split once (the same tokens as splitting
    each segment on its own); a word never spans whitespace, so when no segment is cut to
    :data:`CHAR_GRAM_CHARS` the words are found once per distinct whitespace-separated token and laid out per
    occurrence with numpy. A text that holds ``_SEP`` itself is tokenised one segment at a time (the lists then
    separated by ``" "``, which is never a token).
    """
    lows = [text[a:b].lower() for a, b in segments]
    long = any(b - a > CHAR_GRAM_CHARS for a, b in segments)
    shorts = (
        [
            text[a : a + CHAR_GRAM_CHARS].lower() if b - a > CHAR_GRAM_CHARS else low
            for low, (a, b) in zip(lows, segments)
        ]
        if long
        else lows
    )
    if _SEP in text:
        sep = [" "]
        words = list(chain.from_iterable(chain.from_iterable(zip((_WORD.findall(low) for low in lows), repeat(sep)))))
        grams = list(chain.from_iterable(chain.from_iterable(zip((short.split() for short in shorts), repeat(sep)))))
        return _token_arrays(words, " "), _token_arrays(grams, " ")
    chars = _token_arrays(f" {_SEP} ".join(shorts).split(), _SEP)
    if long:
        return _token_arrays(_WORD_OR_SEP.findall(f" {_SEP} ".join(lows)), _SEP), chars
    cvocab, cid, cseg = chars
    # the words of each distinct token: token k's are wid_of[starts[k]:][:counts[k]]
    vocab, wid_of, owner = _token_arrays(_WORD_OR_SEP.findall(_SEP.join(cvocab)), _SEP)
    counts = np.bincount(owner, minlength=len(cvocab))
    occ = counts[cid]  # words of each token occurrence
    ends = np.cumsum(occ)
    at = np.repeat(np.cumsum(counts)[cid] - ends, occ) + np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
    return (vocab, wid_of[at], np.repeat(cseg, occ)), chars


#: ``1 + ln(k)`` for term counts ``k`` (``math.log``, as :meth:`ScorerBlock.score`; index 0 unused).
_LOG_TF = np.array([0.0] + [1.0 + math.log(k) for k in range(1, 4097)])


def _log_tf(count: np.ndarray) -> np.ndarray:
    """``1 + ln(count)`` per entry of the int64 array ``count`` (all >= 1), computed as :meth:`ScorerBlock.score`
    computes it (``1.0`` for a count of 1, so ``v = idf`` exactly)."""
    top = int(count.max()) if len(count) else 0
    table = _LOG_TF if top < len(_LOG_TF) else np.array([0.0] + [1.0 + math.log(k) for k in range(1, top + 1)])
    return table[count]


def _block_scores(n_segments: int, seg: np.ndarray, term: np.ndarray, arrays: _BlockArrays, scale: float) -> np.ndarray:
    """One block's score of every segment, shape ``(n_segments,)``: :meth:`ScorerBlock.score` of the counts.

    Entries are the known term occurrences (term ids >= 0) of all segments as two int64 arrays of one length,
    segment index and term id, in term-stream order (by segment, and within a segment in the order
    :meth:`ScorerBlock.score` sees the terms). Occurrences are counted per (segment, term) and the terms summed
    in the order of their first occurrence, as :meth:`ScorerBlock.score` sums a :class:`~collections.Counter`'s
    terms, so the result is the same to the last bit.
    """
    out = np.zeros(n_segments)
    total = len(seg)
    if not total:
        return out
    size = max(len(arrays.idf), 1)
    rbits = total.bit_length()
    count = np.zeros(total, dtype=np.int64)  # at each (segment, term)'s first occurrence: its count
    if (n_segments * size) << rbits < 1 << 62:  # one packed int64 key: (segment, term, occurrence index)
        key = ((seg * size + term) << rbits) | np.arange(total, dtype=np.int64)
        key.sort()
        group = key >> rbits
        starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
        count[key[starts] & ((1 << rbits) - 1)] = np.diff(np.append(starts, total))
    else:  # a document too large to pack: a stable sort on the two keys
        by = np.lexsort((term, seg))
        s, t = seg[by], term[by]
        starts = np.flatnonzero(np.concatenate(([True], (s[1:] != s[:-1]) | (t[1:] != t[:-1]))))
        count[by[starts]] = np.diff(np.append(starts, total))
    first = np.flatnonzero(count)  # first occurrences in term-stream order, without a second sort
    s, t = seg[first], term[first]
    v = _log_tf(count[first]) * arrays.idf[t]
    num = np.bincount(s, weights=v * arrays.weight[t], minlength=n_segments)  # sums in array order
    sq = np.bincount(s, weights=v * v, minlength=n_segments)
    nz = sq != 0
    out[nz] = scale * num[nz] / np.sqrt(sq[nz])
    return out


#: The blocks over a segment's words (or a neighbour's), whose unigram ids :func:`_word_table` gathers.
_WORD_BLOCKS = ("word", "prev", "next")


def _word_table(model: ScorerModel) -> tuple[dict[str, int], np.ndarray]:
    """``(rows, ids)``: one dictionary lookup per distinct word for every word block. ``ids`` (int64, shape
    ``(R + 1, 4)``) holds, for the word of row ``rows[w]``, its term id in the ``word``, ``prev`` and ``next``
    blocks and its id among the words of the ``word`` block's bigrams (:meth:`_BlockArrays.pairs`), ``-1``
    where it has none (a block the model lacks: all ``-1``); row ``R`` is all ``-1``, for unknown words.
    Built once per set of block arrays (cached on the model)."""
    arrays = [model.blocks[b].arrays() if b in model.blocks else None for b in _WORD_BLOCKS]
    cached = model._word_rows
    if cached is not None and all(x is y for x, y in zip(cached[0], arrays)):
        return cached[1], cached[2]
    pair_words = arrays[0].pairs()[0] if arrays[0] is not None else {}
    maps = [a.index if a is not None else {} for a in arrays] + [pair_words]
    words = [w for w in dict.fromkeys(chain.from_iterable(maps)) if " " not in w]
    rows = {w: r for r, w in enumerate(words)}
    ids = np.full((len(words) + 1, 4), -1, dtype=np.int64)
    for j, index in enumerate(maps):
        for w, i in index.items():
            r = rows.get(w)
            if r is not None:
                ids[r, j] = i
    model._word_rows = (arrays, rows, ids)
    return rows, ids


def score_segments(model: ScorerModel, text: str, segments: Sequence[tuple[int, int]]) -> np.ndarray:
    """Log-odds scores of all ``segments`` of ``text`` at once: float64 array of shape ``(len(segments),)``,
    equal to ``[model.score(t) for t in segment_terms(text, segments)]`` to the last bit.

    The fast path of :func:`route_text`: the document is tokenised once (:func:`_segment_tokens`), each distinct
    word is looked up once for all word blocks (:func:`_word_table`) and its character n-grams generated once,
    and the tf-idf sums of every block are computed with numpy over flat (segment, term) arrays instead of
    per-segment dictionaries.
    """
    n = len(segments)
    if not n:
        return np.zeros(0)
    (vocab, wid, wseg), (cvocab, cid, cseg) = _segment_tokens(text, segments)
    rows, table = _word_table(model)
    miss = len(table) - 1
    # per token: its ids in the word, prev and next blocks and among the bigram words (numbers as "#")
    word_ids = table[
        np.fromiter(
            map(rows.get, ["#" if w.isdigit() else w for w in vocab], repeat(miss)), dtype=np.int64, count=len(vocab)
        )
    ][wid]
    total = np.zeros(n)
    for name, block in model.blocks.items():
        arrays = block.arrays()
        if name == "word":
            seg, term = _word_block(n, wseg, word_ids[:, 0], word_ids[:, 3], arrays)
        elif name == "prev":  # segment i + 1 counts segment i's words
            keep = (word_ids[:, 1] >= 0) & (wseg < n - 1)
            seg, term = wseg[keep] + 1, word_ids[keep, 1]
        elif name == "next":  # segment i - 1 counts segment i's words
            keep = (word_ids[:, 2] >= 0) & (wseg > 0)
            seg, term = wseg[keep] - 1, word_ids[keep, 2]
        elif name == "char":
            glen, gflat = _gram_ids(cvocab, arrays)
            occ = glen[cid]  # known n-grams of each token occurrence
            ends = np.cumsum(occ)
            seg = np.repeat(cseg, occ)
            term = gflat[np.repeat(np.cumsum(glen)[cid] - ends, occ) + np.arange(len(seg), dtype=np.int64)]
        else:  # a block route_text has no terms for scores 0, as in ScorerModel.score
            total = total + 0.0
            continue
        total = total + _block_scores(n, seg, term, arrays, block.scale)  # the additions of ScorerModel.score
    return model.bias + total


def _word_block(
    n: int, wseg: np.ndarray, unigram: np.ndarray, pair_word: np.ndarray, arrays: _BlockArrays
) -> tuple[np.ndarray, np.ndarray]:
    """The ``word`` block's known term occurrences in term-stream order, ``(seg, term)`` int64 arrays: each
    segment's unigrams, then its bigrams (the order of a segment's :class:`~collections.Counter`). ``wseg`` is
    each token's segment (document order), ``unigram`` its term id and ``pair_word`` its id among the words of
    known bigrams (``-1``: none)."""
    tokens = len(wseg)
    per_seg = np.bincount(wseg, minlength=n)
    entries = per_seg + np.maximum(per_seg - 1, 0)  # unigrams and bigrams of each segment
    base = np.cumsum(entries) - entries
    seg_start = np.cumsum(per_seg) - per_seg
    pos = np.arange(tokens, dtype=np.int64) - seg_start[wseg]
    stream = np.full(int(entries.sum()), -1, dtype=np.int64)
    stream[base[wseg] + pos] = unigram
    pair_words, keys, pair_terms = arrays.pairs()
    if tokens > 1 and len(keys):
        x, y = pair_word[:-1], pair_word[1:]
        ok = np.flatnonzero((wseg[1:] == wseg[:-1]) & (x >= 0) & (y >= 0))
        first = wseg[ok]
        stream[base[first] + per_seg[first] + pos[ok]] = _lookup(
            keys, pair_terms, x[ok] * max(len(pair_words), 1) + y[ok]
        )
    seg = np.repeat(np.arange(n, dtype=np.int64), entries)
    keep = stream >= 0
    return seg[keep], stream[keep]


@functools.lru_cache(maxsize=4)
def load_model(path: str | None = None) -> ScorerModel | None:
    """The scorer stored at ``path`` (default :data:`MODEL_FILE`, gzip-compressed JSON); ``None`` when the
    file is absent.

    Raises ``ValueError`` naming the file when it cannot be read, decompressed or parsed, or does not
    have the shape of a :class:`ScorerModel` (or its threshold is not finite).
    """
    file = Path(path) if path else MODEL_FILE
    if not file.is_file():
        return None
    try:
        with gzip.open(file, "rt", encoding="utf-8") as fh:
            model = ScorerModel.model_validate(json.load(fh))
    except (OSError, EOFError, ValueError) as exc:  # bad gzip, truncated file, bad JSON, wrong shape
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"router scorer file {file} is unreadable ({first}); restore it from the "
            f"package or retrain it with `python -m benchmarks.train_router`"
        ) from None
    if not math.isfinite(model.threshold):
        raise ValueError(f"router scorer file {file} has a non-finite threshold")
    return model


# --- routing --------------------------------------------------------------------------------


class Segment(BaseModel):
    """A routed piece of the document: ``[start, end)`` document offsets and the signals that fired."""

    start: int
    end: int
    signals: list[str] = Field(default_factory=list)

    @property
    def deep(self) -> bool:
        """True when any signal fired."""
        return bool(self.signals)


def route_text(
    text: str,
    model: ScorerModel | Literal["default"] | None = "default",
    max_chars: int = SEGMENT_MAX_CHARS,
    preamble_chars: int = PREAMBLE_CHARS,
) -> list[Segment]:
    """Segment ``text`` and decide each segment; returns every segment in order (see module docstring).

    With a scorer (``model="default"`` loads :data:`MODEL_FILE`) a segment is deep on
    ``preamble``, an obligation signal or ``scorer``, and the ``term:`` vocabulary that matches
    in a deep segment is added to its signals as the explanation; with ``model=None`` (or no
    model file) the ``term:`` vocabulary routes on its own. Pure and deterministic; raises only
    the ``ValueError`` of :func:`load_model` for a broken model file.
    """
    if model == "default":
        model = load_model()
    spans = segment_text(text, max_chars)
    segs = [Segment(start=a, end=b) for a, b in spans]
    if not segs:
        return segs
    starts = [a for a, _ in spans]
    for seg in segs:
        if seg.start >= preamble_chars:  # segments are in order: no later one starts in the preamble
            break
        body = text[seg.start : seg.end]
        if body.strip() and seg.start + len(body) - len(body.lstrip()) < preamble_chars:
            seg.signals.append("preamble")
    scan, term_patterns, obligation_patterns = _signal_scan(text)
    whole = [(0, len(text), len(text))]
    _scan_signals(scan, obligation_patterns, starts, whole, [seg.signals for seg in segs], "")
    if model is None:
        terms: list[list[str] | None] = [[] for _ in segs]
        _scan_signals(scan, term_patterns, starts, whole, terms, "term:")
        for seg, found in zip(segs, terms):
            seg.signals += found or []
        return segs
    for seg, score in zip(segs, score_segments(model, text, spans).tolist()):
        if score >= model.threshold:
            seg.signals.append("scorer")
    # the vocabulary explains a deep segment (the scorer decides): scan only around deep segments
    terms = [[] if seg.signals else None for seg in segs]
    _scan_signals(scan, term_patterns, starts, _deep_windows(scan, spans, [seg.deep for seg in segs]), terms, "term:")
    for seg, found in zip(segs, terms):
        if found:
            seg.signals += found
    return segs


def document_text(chunks: Sequence[Chunk]) -> str:
    """The document text the chunks were cut from, rebuilt from their texts and offsets.

    Characters no chunk covers (whitespace the chunker skipped, where chunks meet at a paragraph
    break) become line breaks, so offsets match the chunks' ``char_start``/``char_end`` and the
    segmenter still sees the break.
    """
    size = max((c.char_start + len(c.text) for c in chunks), default=0)
    buf = ["\n"] * size
    for c in chunks:
        buf[c.char_start : c.char_start + len(c.text)] = c.text
    return "".join(buf)


class RouteDecision(BaseModel):
    """The router's decision for one chunk.

    ``route`` is ``deep`` (send to the deep review) or ``skip``; ``reason`` is a short,
    human-readable list of the signals that fired in the chunk's deep segments
    (``"preamble; term:governing_law; 3 of 11 segments"``) or ``"no decision-point signal"``;
    ``signals`` holds the signal names; ``deep_ranges`` are the ``[start, end)`` document offsets
    of the text this chunk sends to review (its deep segments, adjacent ones merged and stripped
    of surrounding whitespace; the whole chunk with ``all``).
    """

    chunk_index: int
    route: Route
    reason: str
    signals: list[str] = Field(default_factory=list)
    deep_ranges: list[tuple[int, int]] = Field(default_factory=list)

    @property
    def deep_chars(self) -> int:
        """Characters sent to review by this chunk (union of ``deep_ranges``)."""
        return covered_chars(self.deep_ranges)


def _assign(chunks: Sequence[Chunk], segments: Sequence[Segment]) -> list[list[tuple[int, int, list[str]]]]:
    """Deep segments per chunk: each segment goes to the chunk whose own part (up to where the next
    chunk starts) holds its start, clipped to that chunk's end; any remainder goes to the next chunk."""
    out: list[list[tuple[int, int, list[str]]]] = [[] for _ in chunks]
    starts = [c.char_start for c in chunks]
    for seg in segments:
        if not seg.deep:
            continue
        a, b = seg.start, seg.end
        i = max(0, bisect.bisect_right(starts, a) - 1)
        while a < b and i < len(chunks):
            c = chunks[i]
            lo, hi = max(a, c.char_start), min(b, c.char_end)
            if hi > lo:
                out[i].append((lo, hi, seg.signals))
            a = max(a, hi)
            i += 1
    return out


def _strip(text: str, offset: int, a: int, b: int) -> tuple[int, int]:
    """Shrink document range ``[a, b)`` past leading/trailing whitespace (``text`` starts at ``offset``)."""
    while a < b and text[a - offset].isspace():
        a += 1
    while b > a and text[b - 1 - offset].isspace():
        b -= 1
    return a, b


def _reason(signals: list[str], segments: int, total: int) -> str:
    shown = signals[:6]
    more = f"; +{len(signals) - len(shown)} more" if len(signals) > len(shown) else ""
    return "; ".join(shown) + more + f"; {segments} of {total} segments"


def route_all(
    chunks: Sequence[Chunk], mode: str, model: ScorerModel | Literal["default"] | None = "default"
) -> list[RouteDecision]:
    """Decisions for every chunk of one document, in chunk order.

    ``mode == "all"`` sends every chunk whole (reason ``"routing=all"``) without evaluating
    signals; ``"decision-points"`` routes the document's segments (:func:`route_text`) and gives
    each chunk the deep segments assigned to it. Raises ``ValueError`` for any other mode
    (resolve ``auto`` first with :func:`resolve_mode`).
    """
    if mode == "all":
        return [
            RouteDecision(
                chunk_index=c.index, route="deep", reason="routing=all", deep_ranges=[(c.char_start, c.char_end)]
            )
            for c in chunks
        ]
    if mode != "decision-points":
        raise ValueError(f"unresolved routing mode {mode!r}")
    if not chunks:
        return []
    ordered = sorted(chunks, key=lambda c: c.char_start)
    segments = route_text(document_text(ordered), model)
    by_chunk = _assign(ordered, segments)
    decisions: dict[int, RouteDecision] = {}
    for c, parts in zip(ordered, by_chunk):
        total = sum(1 for s in segments if s.start < c.char_end and s.end > c.char_start)
        ranges: list[tuple[int, int]] = []
        for a, b in (_strip(c.text, c.char_start, a, b) for a, b, _ in parts):
            if b <= a:
                continue
            if ranges and not c.text[ranges[-1][1] - c.char_start : a - c.char_start].strip():
                ranges[-1] = (ranges[-1][0], b)  # only whitespace between: one range
            else:
                ranges.append((a, b))
        if not ranges:
            decisions[c.index] = RouteDecision(chunk_index=c.index, route="skip", reason="no decision-point signal")
            continue
        signals: list[str] = []
        for _, _, sig in parts:
            signals += [s for s in sig if s not in signals]
        decisions[c.index] = RouteDecision(
            chunk_index=c.index,
            route="deep",
            reason=_reason(signals, len(parts), total),
            signals=signals,
            deep_ranges=ranges,
        )
    return [decisions[c.index] for c in chunks]


def route_chunk(chunk: Chunk, model: ScorerModel | Literal["default"] | None = "default") -> RouteDecision:
    """Decide one chunk on its own (its text routed as if it were the whole document)."""
    [decision] = route_all([chunk], "decision-points", model)
    return decision


def decision_signals(chunk: Chunk, model: ScorerModel | Literal["default"] | None = "default") -> list[str]:
    """Names of the signals that fire in ``chunk`` routed on its own (``[]`` for boilerplate)."""
    return route_chunk(chunk, model).signals


def review_unit(chunk: Chunk, decision: RouteDecision) -> Chunk:
    """What the reviewer is sent for ``chunk``: the chunk itself when its whole text is deep (or it is
    skipped), else a chunk holding only its deep ranges, contiguous runs joined by :data:`UNIT_SEPARATOR`.

    The unit keeps ``index``, ``char_start``/``char_end`` (the fact-check grounds quotes in that
    range of the document) and ``heading``; ``page_start``/``page_end`` become the pages of its
    first and last character and ``page_offsets`` the unit offsets where later pages begin, so
    :meth:`Chunk.page_at` gives the right page for any offset of the unit's text. ``segments``
    lists the document ranges the unit's text is made of.
    """
    ranges = sorted(r for r in decision.deep_ranges if r[1] > r[0])
    if decision.route != "deep" or not ranges or ranges == [(chunk.char_start, chunk.char_end)]:
        return chunk
    cs = chunk.char_start
    runs: list[list[int]] = []
    for a, b in ranges:
        a, b = max(a, cs), min(b, chunk.char_end)
        if runs and not chunk.text[runs[-1][1] - cs : a - cs].strip():
            runs[-1][1] = max(runs[-1][1], b)  # only whitespace between: one run
        elif b > a:
            runs.append([a, b])
    parts: list[str] = []
    unit_at: list[int] = []  # unit offset of each run's first character
    pos = 0
    for a, b in runs:
        if parts:
            parts.append(UNIT_SEPARATOR)
            pos += len(UNIT_SEPARATOR)
        unit_at.append(pos)
        parts.append(chunk.text[a - cs : b - cs])
        pos += b - a
    first_page = chunk.page_at(runs[0][0] - cs)
    last_page = chunk.page_at(runs[-1][1] - 1 - cs)
    offsets: list[int] = []
    for k, off in enumerate(chunk.page_offsets):
        page, begins = chunk.page_start + k + 1, cs + off
        if not first_page < page <= last_page:
            continue
        for (a, b), at in zip(runs, unit_at):
            if b > begins:  # the first unit character at or after the page's start
                offsets.append(at + max(0, begins - a))
                break
    return chunk.model_copy(
        update={
            "text": "".join(parts),
            "page_start": first_page,
            "page_end": last_page,
            "page_offsets": offsets,
            "segments": [(a, b) for a, b in runs],
        }
    )


def resolve_mode(routing: str, backend_name: str) -> Literal["all", "decision-points"]:
    """Resolve a routing mode: ``auto`` is ``decision-points`` for LLM backends, ``all`` for ``rules``.

    Raises ``ValueError`` for a mode not in :data:`ROUTING_MODES`.
    """
    if routing not in ROUTING_MODES:
        raise ValueError(f"unknown routing mode {routing!r} (choose one of {', '.join(ROUTING_MODES)})")
    if routing == "auto":
        return "all" if backend_name == "rules" else "decision-points"
    return routing  # type: ignore[return-value]


@task(name="route-chunks", task_run_name=for_document("route"), cache_policy=NO_CACHE)
def route_chunks(chunks: list[Chunk], mode: str, threshold: float | None = None) -> list[RouteDecision]:
    """Prefect task: :func:`route_all` over one document's chunks.

    ``threshold`` (log-odds; ``DOCREVIEW_ROUTER_THRESHOLD``) replaces the stored scorer's
    threshold: lower sends more text deep for more recall (see the held-out table in docs/routing.md;
    about −3.4 gives recall 0.95 at a routing rate of 0.59). None keeps it.
    """
    if mode != "decision-points":  # ``all`` evaluates no signal: the scorer is not needed
        return route_all(chunks, mode, None)
    model = load_model()
    if threshold is not None and model is not None:
        model = model.model_copy(update={"threshold": threshold})
    return route_all(chunks, mode, model)


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
    """Share of document text coverage sent deep: ``covered_chars(deep) / covered_chars(all)``.

    ``ranges`` are every chunk's ``(char_start, char_end)``; ``deep_ranges`` the deep ranges
    (:attr:`RouteDecision.deep_ranges`). Returns 0.0 when there is no text.
    """
    total = covered_chars(ranges)
    return covered_chars(deep_ranges) / total if total else 0.0
