"""Support: does a grounded quote state what the finding claims (its clause category)?

Three parts, applied in this order by :func:`check_support`:

1. **Heading only** — a quote that is only a section heading ("12.1 Waiver of Jury Trial.",
   "ARTICLE IV TERM", "2.4 Personnel.") states no clause; ``needs_review``, reason
   "quote is a heading only". A document title or a party's name is what a Document Name or
   Parties finding claims, so those categories are exempt (:data:`NAME_CATEGORIES`).
2. **Negation** — for categories that assert a right or an obligation (minimum commitment,
   exclusivity, audit rights …, :data:`AFFIRMATIVE`), a quote that says the obligation does not
   apply ("shall not be subject to any … minimum purchase requirement", "no … shall",
   "there shall be no", "non-exclusive") negates the clause; ``needs_review``, reason
   "quote negates the clause". Categories that are negative by nature (anti-assignment,
   non-compete, caps: "in no event shall …") are not tested.
3. **Category model** — a multinomial logistic regression over the tf-idf of the quote's word
   unigrams and bigrams and, for ``support-v2``, those of the titles of the sections the quote sits
   in, in their own namespace (:func:`features`: "h:liability"), 41 CUAD categories plus ``none``
   (contract text no lawyer labelled), trained on the shared CUAD spans by ``python -m benchmarks.train_support``
   and stored in :data:`MODEL_FILE` (see :meth:`SupportModel.save` for the format). The
   *support score* is the probability of the claimed category. Below the model's ``threshold``
   the finding is ``needs_review``: "quote reads as <best category>, not <claimed>" (or
   "reads as no CUAD clause" when ``none`` wins). Below the model's dismissal bound for the category
   (:meth:`SupportModel.dismissal_bound`) the finding is *dismissed by the fact-check* (:func:`dismiss`):
   the report lists it last, not among the findings to look at.

Source of the labels: CUAD v1 ``master_clauses.csv`` (The Atticus Project, CC BY 4.0).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import lzma
import math
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field, PrivateAttr, model_validator

from schemas.findings import CheckedFinding, CheckResult, Finding, Verdict
from schemas.taxonomy import CUAD_LABELS, ClauseType
from tasks.check.verdicts import DISMISSED_REASON, overall_verdict
from tasks.runnames import for_document
from tasks.textnorm import match_form

MODEL_FILE = Path(__file__).with_name("support_model.npz.xz")

#: Weights are stored as integers in units of 1/WEIGHT_SCALE (the trainer rounds them to three
#: decimals), so the file is small and a stored weight reads back as exactly the same float.
WEIGHT_SCALE = 1000

#: Categories whose quote is a name (a title, a party): a line in title case is what they claim.
NAME_CATEGORIES: frozenset[ClauseType] = frozenset({ClauseType.document_name, ClauseType.parties})

#: Class name of "no CUAD category" in the model.
NONE_CLASS = "none"

C = ClauseType

#: Categories whose clause asserts that something exists or applies; a quote saying it does not
#: apply negates the finding. Negative-by-nature categories (anti-assignment, non-compete,
#: no-solicit, caps, covenant not to sue …) are left out on purpose.
AFFIRMATIVE: frozenset[ClauseType] = frozenset(
    {
        C.minimum_commitment,
        C.exclusivity,
        C.audit_rights,
        C.insurance,
        C.most_favored_nation,
        C.revenue_profit_sharing,
        C.liquidated_damages,
        C.warranty_duration,
        C.ip_ownership_assignment,
        C.joint_ip_ownership,
        C.license_grant,
        C.rofr_rofo_rofn,
        C.renewal_term,
        C.post_termination_services,
        C.source_code_escrow,
        C.price_restrictions,
        C.volume_restriction,
        C.irrevocable_or_perpetual_license,
        C.unlimited_all_you_can_eat_license,
        C.affiliate_license_licensor,
        C.affiliate_license_licensee,
    }
)

# Negation of an obligation: "shall not be subject to", "is not required to", "there shall be no",
# "no minimum ... shall apply", "nothing in this agreement shall ... require/obligate".
NEGATIONS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(p, re.I))
    for name, p in (
        (
            "shall not be subject to",
            r"\b(?:shall|will|is|are|be)\s+not\s+(?:be\s+)?(?:subject\s+to|required\s+to|obligated\s+to|"
            r"under\s+any\s+obligation|bound\s+to)",
        ),
        (
            "no obligation",
            r"\b(?:has|have|shall\s+have|will\s+have|is\s+under|be\s+under)\s+no\s+(?:obligation|duty|right|liability\s+for\s+minimum)",
        ),
        ("there shall be no", r"\bthere\s+(?:is|are|shall\s+be|will\s+be)\s+no\b"),
        (
            "no ... shall",
            r"(?:^|[.;:]\s+|\(\w{1,3}\)\s*)no\s+(?:\w+[\s-]+){0,5}?(?:shall|will)\s+(?:be\s+)?(?:apply|applies|"
            r"exist|be\s+(?:required|payable|due|owed|imposed|granted))",
        ),
        (
            "nothing ... shall require",
            r"\bnothing\s+(?:in|contained\s+in|herein)\b[^.;]{0,120}?\bshall\b[^.;]{0,60}?"
            r"(?:require|obligate|grant|create|confer|be\s+(?:deemed|construed))",
        ),
        ("not exclusive", r"\bnon[\s-]?exclusive\b|\bnot\s+(?:be\s+)?exclusive\b"),
    )
)

#: Which negation patterns apply to which category (default: all but ``not exclusive``).
_NEGATION_ONLY_FOR = {"not exclusive": frozenset({C.exclusivity})}

_HEADING_NUMBER = re.compile(
    r"^\s*(?:(?:article|section|clause|schedule|exhibit|annex|appendix|part)\s+[ivxlc\d]+[a-z]?(?:\.\d+)*\.?"
    r"|\(?[a-z0-9]{1,3}\)|\d{1,2}(?:\.\d{1,2}){0,3}\.?|[ivxlc]{1,5}\.)\s*",
    re.I,
)
_VERB = re.compile(
    r"\b(?:shall|will|may|must|agrees?|is|are|was|were|be|been|has|have|hereby|means|"
    r"includes?|provides?|constitutes?|grants|pays?|terminates?|expires?|can|cannot|should|would)\b",
    re.I,
)
_SMALL_WORDS = frozenset(
    [
        "of",
        "and",
        "or",
        "the",
        "a",
        "an",
        "to",
        "in",
        "on",
        "for",
        "by",
        "with",
        "from",
        "at",
        "as",
        "upon",
        "under",
        "its",
        "their",
        "this",
        "that",
    ]
)


def heading_only(quote: str) -> bool:
    """True when ``quote`` is only a heading: an optional number ("12.1", "Section 5", "ARTICLE IV",
    "(b)") and at most 12 title words with no verb ("Waiver of Jury Trial.", "Personnel", "TERM AND
    TERMINATION", "6.4 License Grant.", "3. GRANT OF COPYRIGHT LICENSE": "grant" is a verb only as
    "grants"), ending in at most a full stop or colon. Empty quotes are not headings."""
    text = re.sub(r"\s+", " ", quote).strip()
    if not text:
        return False
    rest = _HEADING_NUMBER.sub("", text, count=1).strip()
    rest = rest.rstrip(".:;-– ").strip()
    numbered = rest != text.rstrip(".:;-– ").strip()
    if not rest:
        return numbered
    words = re.findall(r"[A-Za-z][A-Za-z'’&/-]*", rest)
    if not words or len(words) > 12 or re.search(r"[,;]|\.\s+\S", rest) or _VERB.search(rest):
        return False
    if re.search(r"\d", rest) and not numbered:
        return False
    content = [w for w in words if w.lower() not in _SMALL_WORDS]
    titled = all(w[0].isupper() for w in content) if content else False
    return titled


def negation(quote: str, category: ClauseType) -> str | None:
    """Name of the negation pattern that makes ``quote`` deny ``category``; ``None`` when there
    is none or the category is not in :data:`AFFIRMATIVE`."""
    if category not in AFFIRMATIVE:
        return None
    text = re.sub(r"\s+", " ", quote)
    for name, rx in NEGATIONS:
        only = _NEGATION_ONLY_FOR.get(name)
        if only is not None and category not in only:
            continue
        if rx.search(text):
            return name
    return None


# --------------------------------------------------------------------------------------------
# category model
# --------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z][a-z0-9']*|\d+")


def terms(text: str) -> Counter[str]:
    """Word unigrams and bigrams of ``text`` in :func:`match_form` (digits collapsed to ``0``),
    as counts. The trainer and the scorer share this function."""
    words = [re.sub(r"\d+", "0", w) for w in _TOKEN.findall(match_form(text)[0])]
    out: Counter[str] = Counter(words)
    out.update(f"{a} {b}" for a, b in zip(words, words[1:]))
    return out


#: Prefix of the terms of a finding's section headings (:func:`features`): "h:liability" is the word
#: "liability" in a heading above the quote, not in the quote.
HEADING_PREFIX = "h:"


def features(quote: str, heading: str | None = None) -> Counter[str]:
    """The model's terms of a finding: :func:`terms` of its ``quote``, and with a ``heading`` (the titles
    of the sections the quote sits in, :func:`tasks.review.chunk.heading_path`) the :func:`terms` of the
    heading in their own namespace (:data:`HEADING_PREFIX`). The trainer and the scorer share this
    function."""
    out = terms(quote)
    if heading:
        out.update({HEADING_PREFIX + t: n for t, n in terms(heading).items()})
    return out


class SupportModel(BaseModel):
    """Multinomial linear classifier over tf-idf terms.

    ``classes`` are CUAD category values (:class:`ClauseType`) and ``none``; ``bias`` holds one
    intercept per class. ``threshold`` is the least support score (probability of the claimed
    class) that counts as supported for any finding; ``category_floor`` maps a category value to the
    least score that still supports a document's *strongest* finding of that category
    (:func:`relative_support`; categories not listed: no floor of their own, only ``threshold``);
    ``trained_on`` describes the training split and ``held_out`` the figures on the frozen test split
    (:func:`tasks.observe.evaluate.split_of`). ``version`` names the model's
    features (``support-v1``: the quote; ``support-v2``: the quote and its section headings, with
    ``reads_heading``); ``dismiss_below``: a finding the support check doubts whose score is below this
    is dismissed by the fact-check (:func:`relative_support`; 0: none is); ``category_dismiss_below``
    maps a category value to a higher bound of its own (:meth:`dismissal_bound`).

    The vocabulary and weights live in arrays (``vocabulary_size`` terms × ``len(classes)``
    classes; weights in units of 1/:data:`WEIGHT_SCALE`, as ``int16``). Build a model either with
    ``terms`` (``{term: (idf, [(class index, weight), ...])}``, weights with at most three decimals
    and below 32.768 in absolute value; the trainer's form, not kept after validation) or with
    :meth:`read` from a file written by :meth:`save`. Raises ``ValueError`` (pydantic's
    ``ValidationError``) for a weight that cannot be stored exactly or a class index out of range.
    """

    classes: list[str]
    bias: list[float]
    terms: dict[str, tuple[float, list[tuple[int, float]]]] = Field(default_factory=dict, exclude=True, repr=False)
    threshold: float = 0.1
    category_floor: dict[str, float] = Field(default_factory=dict)
    trained_on: str = ""
    held_out: dict[str, float] = Field(default_factory=dict)
    version: str = "support-v1"
    reads_heading: bool = False
    dismiss_below: float = 0.0
    category_dismiss_below: dict[str, float] = Field(default_factory=dict)

    _index: dict[str, int] = PrivateAttr(default_factory=dict)
    _idf: np.ndarray = PrivateAttr(default_factory=lambda: np.zeros(0))
    _weights: np.ndarray = PrivateAttr(default_factory=lambda: np.zeros((0, 0), dtype=np.int16))
    _judge: Any = PrivateAttr(default=None)  # a tasks.check.judge.Judge: see with_judge

    @model_validator(mode="after")
    def _build_arrays(self) -> SupportModel:
        if not self.terms:
            self._weights = np.zeros((0, len(self.classes)), dtype=np.int16)
            return self
        k = len(self.classes)
        weights = np.zeros((len(self.terms), k), dtype=np.int16)
        idf = np.zeros(len(self.terms))
        for row, (term, (term_idf, pairs)) in enumerate(self.terms.items()):
            idf[row] = term_idf
            for cls, w in pairs:
                scaled = round(w * WEIGHT_SCALE)
                if not 0 <= cls < k or abs(scaled) > 32767 or scaled / WEIGHT_SCALE != w:
                    raise ValueError(
                        f"term {term!r}: weight {w} of class {cls} cannot be stored "
                        f"(class index 0..{k - 1}, |weight| < 32.768, at most three decimals)"
                    )
                weights[row, cls] = scaled
        self._index = {t: i for i, t in enumerate(self.terms)}
        self._idf, self._weights = idf, weights
        self.terms = {}  # the arrays hold it now
        return self

    @property
    def judge(self) -> Any:
        """The support judge (:class:`tasks.check.judge.Judge`) this model takes its support score from,
        or None: the lexical model's own probability (:meth:`with_judge`)."""
        return self._judge

    def with_judge(self, judge: Any) -> SupportModel:
        """A copy whose support score is the judge's (:class:`tasks.check.judge.Judge`) for every category
        the judge knows, with the judge's threshold, per-category floors and dismissal bounds (chosen on its
        own scores); ``version`` becomes ``"<lexical version>+<judge version>"``. The lexical probabilities
        still name the category a doubted quote reads as, which the judge then confirms."""
        cfg = judge.config
        copy = self.model_copy(
            update={
                "threshold": cfg.threshold,
                "category_floor": dict(cfg.category_floor),
                "dismiss_below": cfg.dismiss_below,
                "category_dismiss_below": dict(cfg.category_dismiss_below),
                "version": f"{self.version}+{judge.version}",
            }
        )
        copy._judge = judge
        return copy

    def dismissal_bound(self, category: str) -> float:
        """The support score (probability 0..1) below which a doubted finding of ``category`` (a
        :class:`ClauseType` value) is dismissed: the larger of ``dismiss_below`` and the category's own
        bound in ``category_dismiss_below`` (both chosen out-of-fold by ``benchmarks.train_support``)."""
        return max(self.dismiss_below, self.category_dismiss_below.get(category, 0.0))

    @property
    def vocabulary_size(self) -> int:
        """Number of terms the model knows."""
        return len(self._index)

    def probabilities(self, text: str, heading: str | None = None) -> dict[str, float]:
        """Softmax over :attr:`classes` for the quote ``text`` under the section ``heading`` (values sum
        to 1; the heading counts only for a model that :attr:`reads_heading`).

        ``logit_k = bias_k + sum_t (v_t / ||v||) * w_tk`` with ``v_t = (1 + ln count_t) * idf_t`` over
        the known terms of :func:`features` (unknown terms count in neither sum nor norm)."""
        logits = np.array(self.bias, dtype=np.float64)
        index, idf, log = self._index, self._idf, math.log
        rows: list[tuple[float, int]] = []
        sq = 0.0
        for t, n in features(text, heading if self.reads_heading else None).items():
            row = index.get(t)
            if row is None:
                continue
            v = (1.0 + log(n)) * float(idf[row])
            sq += v * v
            rows.append((v, row))
        if sq:
            norm = math.sqrt(sq)
            weights = self._weights
            for v, row in rows:  # term by term, so every logit adds the same terms in the same order
                logits += (v / norm) * (weights[row] / WEIGHT_SCALE)
        values = logits.tolist()
        top = max(values)
        exps = [math.exp(z - top) for z in values]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps)}

    def save(self, path: str | Path) -> int:
        """Write the model to ``path``: an ``.npz`` archive (``meta``: UTF-8 JSON of the scalar fields;
        ``vocabulary``: UTF-8 terms joined by newlines; ``idf``: float64; ``weights``: int16, terms ×
        classes) compressed with xz. Deterministic; returns the file's size in bytes."""
        meta = json.dumps(self.model_dump(), sort_keys=True, separators=(",", ":")).encode("utf-8")
        vocab = "\n".join(self._index).encode("utf-8")
        buf = io.BytesIO()
        np.savez(
            buf,
            meta=np.frombuffer(meta, dtype=np.uint8),
            vocabulary=np.frombuffer(vocab, dtype=np.uint8),
            idf=self._idf,
            weights=self._weights,
        )
        data = _fixed_zip_times(buf.getvalue())
        Path(path).write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
        return Path(path).stat().st_size

    @classmethod
    def read(cls, path: str | Path) -> SupportModel:
        """The model written by :meth:`save` at ``path``. Raises ``OSError`` when the file cannot be read,
        ``lzma.LZMAError``/``ValueError``/``KeyError`` when it is not such a file."""
        with np.load(io.BytesIO(lzma.decompress(Path(path).read_bytes())), allow_pickle=False) as z:
            model = cls.model_validate(json.loads(z["meta"].tobytes().decode("utf-8")))
            vocab = z["vocabulary"].tobytes().decode("utf-8").split("\n") if z["vocabulary"].size else []
            idf, weights = z["idf"], z["weights"]
        if weights.dtype != np.int16 or weights.shape != (len(vocab), len(model.classes)) or idf.shape != (len(vocab),):
            raise ValueError(
                f"arrays of shape {weights.shape}/{idf.shape} do not match {len(vocab)} terms "
                f"and {len(model.classes)} classes"
            )
        model._index = {t: i for i, t in enumerate(vocab)}
        model._idf, model._weights = idf.astype(np.float64), weights
        return model


def _fixed_zip_times(data: bytes) -> bytes:
    """``data`` (a zip archive written by :func:`numpy.savez`) with every member's modification time set
    to 1980-01-01, so the same model gives the same file."""
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


_load_lock = threading.Lock()


def load_model(path: str | None = None) -> SupportModel | None:
    """The model at ``path`` (default :data:`MODEL_FILE`), read once per process however many
    fact-check tasks ask for it at the same moment; ``None`` when the file is absent. Without ``path``,
    the shipped model takes its support score from the support judge when one is installed
    (:meth:`SupportModel.with_judge`, :mod:`tasks.check.judge`) and ``DOCREVIEW_SUPPORT_JUDGE=true``;
    with a ``path``, the lexical model in that file alone.

    Raises ``ValueError`` naming the file when it cannot be read or parsed.
    """
    with _load_lock:
        model = _read_model(path)
        return _judged(model) if model is not None and path is None else model


def _judged(model: SupportModel) -> SupportModel:
    """``model`` with the installed support judge (:func:`tasks.check.judge.load_judge`) when there is one
    and ``DOCREVIEW_SUPPORT_JUDGE`` is ``true`` (off by default); else ``model``. Decided once per process."""
    judged = _JUDGED.get(id(model))
    if judged is None or judged[0] is not model:
        from schemas.settings import Settings
        from tasks.check.judge import load_judge

        judge = load_judge() if Settings().support_judge else None
        judged = (model, model.with_judge(judge) if judge is not None else model)
        _JUDGED[id(model)] = judged
    return judged[1]


_JUDGED: dict[int, tuple[SupportModel, SupportModel]] = {}


#: The fact-check's version: raise it when a change to the checks would change a stored finding's verdict.
#: With the support model's (and judge's) version it makes :func:`checks_version`, part of the key under
#: which a document's review is stored and reused.
FACT_CHECK_VERSION = "factcheck-v3"


def checks_version() -> str:
    """The version of the checks a run applies: ``"factcheck-v1+support-v2+judge-v1-…"`` (the judge's
    part only when it runs; ``+threshold=0.3`` when ``DOCREVIEW_SUPPORT_THRESHOLD`` replaces the stored
    threshold). A document stored under another checks version is checked again on its next run, from
    its stored review (``flows/document.py``), so an upgraded judge changes old verdicts too."""
    from schemas.settings import Settings

    model = load_model()
    version = f"{FACT_CHECK_VERSION}+{model.version if model is not None else 'no-support-model'}"
    threshold = Settings().support_threshold
    return version if threshold is None else f"{version}+threshold={threshold:g}"


def support_check_name() -> str:
    """What judges the support check in this process, for the run summary and the evaluation's JSON:
    ``"judge judge-v1-… (fine-tuned MiniLM cross-encoder) with the lexical support-v2"`` or ``"lexical
    support-v2 (no judge installed: make judge)"`` (``… (judge off: DOCREVIEW_SUPPORT_JUDGE=false)"``)."""
    model = load_model()
    if model is None:
        return "no support model (heading and negation rules only)"
    if model.judge is not None:
        return f"judge {model.judge.version} (fine-tuned MiniLM cross-encoder) with the lexical {model.version.split('+')[0]}"
    from schemas.settings import Settings

    why = (
        "judge off: DOCREVIEW_SUPPORT_JUDGE=false" if not Settings().support_judge else "no judge installed: make judge"
    )
    return f"lexical {model.version} ({why})"


def require_model() -> SupportModel:
    """The shipped model (:data:`MODEL_FILE`), for checking it before a run starts.

    Raises ``ValueError`` naming the file when it is missing (a broken installation: without it
    the support check could not judge any category) or unreadable."""
    model = load_model()
    if model is None:
        raise ValueError(
            f"the fact-check's support model {MODEL_FILE} is missing: reinstall docreview "
            "(pip install -e .) or retrain it with `python -m benchmarks.train_support`"
        )
    return model


@functools.lru_cache(maxsize=2)
def _read_model(path: str | None = None) -> SupportModel | None:
    file = Path(path) if path else MODEL_FILE
    if not file.is_file():
        return None
    try:
        return SupportModel.read(file)
    except (OSError, EOFError, ValueError, KeyError, lzma.LZMAError) as exc:
        raise ValueError(
            f"support model file {file} is unreadable ({type(exc).__name__}); retrain it with "
            "`python -m benchmarks.train_support`"
        ) from None


@dataclass
class Support:
    """Support of one finding: ``score`` = model probability of the claimed category (``None``
    without a model), ``best`` = the model's top class, ``problem`` = the reason it is not
    supported (``None`` when supported)."""

    score: float | None
    best: str | None
    problem: str | None
    note: str = ""  # the judge's note (a long quote judged on its start; why it did not judge)


def _label(value: str) -> str:
    try:
        return CUAD_LABELS[ClauseType(value)]
    except (ValueError, KeyError):
        return "no CUAD clause" if value == NONE_CLASS else value


def assess(finding: Finding, model: SupportModel | str | None = "default", heading: str | None = None) -> Support:
    """Heading, negation and model support of ``finding`` (see the module docstring).

    ``model``: a :class:`SupportModel`, ``"default"`` (the shipped file, when present), or
    anything else (e.g. ``None``, ``"rules"``) for the heading and negation rules alone; ``heading``:
    the titles of the sections the quote sits in (:meth:`tasks.check.index.DocumentIndex.heading_path`),
    which a model that reads headings scores with the quote."""
    if model == "default":
        model = load_model()
    quote = finding.evidence
    cat = finding.clause_type
    score = best = None
    note = ""
    if isinstance(model, SupportModel) and cat.value in model.classes:
        probs = model.probabilities(quote, heading)
        score = probs[cat.value]
        best = max(probs, key=probs.__getitem__)
        if model.judge is not None:
            score, best, note = _judge_reading(model, quote, heading, cat.value, score, best)
    if cat not in NAME_CATEGORIES and heading_only(quote):
        return Support(score, best, HEADING_ONLY, note)
    neg = negation(quote, cat)
    if neg:
        return Support(score, best, f"quote negates the clause ({neg!r})", note)
    if score is not None and isinstance(model, SupportModel) and score < model.threshold:
        if best == NONE_CLASS:
            return Support(
                score, best, f"quote reads as no CUAD clause, not {_label(cat.value)} (support {score:.2f})", note
            )
        if best == cat.value:  # the likeliest class, but not likely enough
            return Support(
                score,
                best,
                f"quote reads as {_label(cat.value)} only weakly (support {score:.2f}, below {model.threshold:g})",
                note,
            )
        return Support(
            score, best, f"quote reads as {_label(best or '')}, not {_label(cat.value)} (support {score:.2f})", note
        )
    return Support(score, best, None, note)


def _judge_reading(
    model: SupportModel, quote: str, heading: str | None, category: str, lexical: float, best: str
) -> tuple[float, str, str]:
    """(score, best class, note) with the judge: the judge's probability that the passage states
    ``category``; the lexical model's likeliest class names what a doubted quote reads as instead, and is
    kept only when the judge confirms it (its score for that class reaches the threshold), else the quote
    reads as no CUAD clause. A category the judge cannot judge, or a runtime failure, keeps the lexical
    score (``lexical``) and says so in the note."""
    judge = model.judge
    verdict = judge.score(quote, heading, category)
    if verdict.score is None:
        return lexical, best, f"{verdict.reason}: the lexical model's score"
    score = verdict.score
    if score >= model.threshold:
        return score, category, verdict.reason
    if best not in (category, NONE_CLASS):
        other = judge.score(quote, heading, best)
        if other.score is None or other.score < model.threshold:
            best = NONE_CLASS
    return score, best, verdict.reason


def check_support(
    finding: Finding, model: SupportModel | str | None = "default", heading: str | None = None
) -> CheckResult:
    """The ``support`` check: ``verified`` when the quote (under its section ``heading``, see
    :func:`assess`) states the claimed category, else ``needs_review`` with the reason (never
    ``contradicted``: a grounded quote that reads as another clause is for a person to judge). Without
    an evidence quote: ``needs_review``."""
    if not finding.evidence.strip():
        return CheckResult(name="support", verdict=Verdict.needs_review, reason="no evidence quote given")
    s = assess(finding, model, heading)
    note = f"; {s.note}" if s.note else ""
    if s.problem:
        return CheckResult(name="support", verdict=Verdict.needs_review, reason=s.problem + note, score=s.score)
    if s.score is not None:
        reason = f"quote reads as {_label(finding.clause_type.value)} (support {s.score:.2f}){note}"
    elif isinstance(model, SupportModel) or (model == "default" and load_model() is not None):
        reason = (
            f"not a heading, not negated; the support model covers CUAD clause categories, not "
            f"{_label(finding.clause_type.value)}: grounding and values decide"
        )
    else:
        reason = "not a heading, not negated (no support model installed)"
    return CheckResult(name="support", verdict=Verdict.verified, reason=reason, score=s.score)


#: Start of the reason of a support check that failed on the category model's score alone.
_READS_AS = "quote reads as "

#: The strongest passage of a category is not supported when the model gives another class (or no
#: CUAD clause) at least this probability: the model is sure the quote is something else. On the
#: held-out contracts this withholds 5 of 1,797 verified findings at a cost of 0.002 macro-F1.
CONFIDENT_OTHER = 0.9


#: A strongest passage supported with a score below this says so in its reason (and the report
#: marks it): the model barely recognises the category there — for the eight categories with few
#: labelled training contracts (Most Favored Nation, ROFR/ROFO/ROFN, Source Code Escrow, …) it
#: cannot judge them at all, and grounding, values and the clause's own wording carry the verdict.
WEAK_RELATIVE = 0.05

#: What the reason of such a passage says (the report marks these findings "weak support").
WEAK_SUPPORT_REASON = "the model barely recognises it"


#: The wording a clause of a category the support model cannot judge (floor 0: too few labelled training
#: contracts) uses, written from the CUAD v1 category definitions (The Atticus Project): a document's
#: strongest passage of such a category is supported only when its quote has this wording. A quote
#: claimed as Source Code Escrow that never mentions escrow or source code is not taken on trust.
_WORDING: dict[str, tuple[str, str]] = {
    C.most_favored_nation.value: (
        r"favou?r|most[\s-]+favou?red|\bequal(?:ly)?\s+to\b|\blowest\b|\bbest\b|\bno\s+(?:less|more|higher|greater|lower)\b|"
        r"\bmatch",
        "favourable, lowest, best, no less/more than, match",
    ),
    C.non_disparagement.value: (
        r"disparag|derogat|defam|\bnegative\b|reputation|goodwill|critici",
        "disparage, derogatory, reputation",
    ),
    C.no_solicit_of_customers.value: (
        r"solicit|entic|induc|divert|\bcontact|circumvent|persuad|interfer|call\s+(?:on|upon)",
        "solicit, entice, induce, divert",
    ),
    C.rofr_rofo_rofn.value: (
        r"\bfirst\b|\blast\b|\brof|\boption|\bmatch|right\s+to\s+(?:negotiate|purchase|acquire|buy)",
        "first refusal/offer/negotiation, option, match",
    ),
    C.price_restrictions.value: (
        r"pric|\bfees?\b|\brates?\b|\bcharges?\b|\bcosts?\b|tariff",
        "price, fees, rates, charges",
    ),
    C.unlimited_all_you_can_eat_license.value: (
        r"unlimited|enterprise|all[\s-]+you[\s-]+can|without\s+(?:limit|restriction|charge|additional)|"
        r"any\s+number|\bfree\s+of\s+charge",
        "unlimited, enterprise-wide, any number",
    ),
    C.source_code_escrow.value: (r"escrow|source\s+code", "escrow, source code"),
    C.affiliate_license_licensor.value: (r"affiliat|subsidiar|\bgroup\b|parent", "affiliates, subsidiaries, group"),
}
CATEGORY_WORDING: dict[str, re.Pattern[str]] = {c: re.compile(p, re.I) for c, (p, _) in _WORDING.items()}
WORDING_HINT: dict[str, str] = {c: hint for c, (_, hint) in _WORDING.items()}


#: A support check whose finding the fact-check dismissed has a reason that starts with
#: :data:`DISMISSED_REASON` ("dismissed by the fact-check: "): the model is confident the quote is not
#: the claimed category (support score below the category's dismissal bound), or the quote is a heading
#: only. The finding keeps its verdict (``needs_review``) and stays in the report, listed after the
#: findings to look at (:func:`tasks.observe.report.triage_tier`: tier ``dismissed``).
HEADING_ONLY = "quote is a heading only"


def dismissed(reason: str) -> bool:
    """Whether a ``support`` check's ``reason`` is a dismissal (:data:`DISMISSED_REASON`)."""
    return reason.startswith(DISMISSED_REASON)


#: The score a support reason states: ``"(support 0.43"`` (2 digits, 3 in a dismissal's reason).
_REASON_SCORE = re.compile(r"\(support (\d+(?:\.\d+)?)")


def reason_score(reason: str) -> float | None:
    """The support score (probability 0..1) a ``support`` check's ``reason`` states, else None (the
    score is stored only in the reason: the ``checks`` table keeps name, verdict and reason)."""
    m = _REASON_SCORE.search(reason)
    return float(m.group(1)) if m else None


#: The category a support reason says the model reads a quote as instead of the claimed one:
#: "quote reads as Expiration Date, not Effective Date (support 0.05)", also inside a dismissal's reason.
_READS_AS_OTHER = re.compile(r"\bquote reads as (.+?), not ")
_BY_LABEL = {text: category for category, text in CUAD_LABELS.items()}


def read_as(reason: str) -> ClauseType | None:
    """The CUAD category a ``support`` check's ``reason`` says the model reads the quote as, when that
    is another category than the claimed one (``"quote reads as Non-Compete, not License Grant
    (support 0.04)"`` → ``ClauseType.non_compete``); None for any other reason, and for "no CUAD
    clause"."""
    m = _READS_AS_OTHER.search(reason)
    return _BY_LABEL.get(m.group(1)) if m else None


def relative_support(
    checked: list[CheckedFinding],
    model: SupportModel | None,
    heading_of: Callable[[CheckedFinding], str | None] | None = None,
) -> list[CheckedFinding]:
    """:func:`_relative_support`, then :func:`dismiss` (see both)."""
    return dismiss(_relative_support(checked, model, heading_of), model)


def dismiss(checked: list[CheckedFinding], model: SupportModel | None) -> list[CheckedFinding]:
    """Findings the fact-check dismisses: their support reason starts with :data:`DISMISSED_REASON`
    (verdict unchanged, ``needs_review``; the report lists them last, not among the findings to look at).

    - A quote that is a heading only (:data:`HEADING_ONLY`: "12.1 Waiver of Jury Trial." claimed as
      Governing Law): no clause text states the category; with or without a model. On the 131 held-out
      CUAD contracts 45 of 57 such findings are no labelled clause of their category.
    - A finding the support check doubts on the model's score alone (a reason that starts "quote reads
      as …") with a score below its category's bound (:meth:`SupportModel.dismissal_bound`:
      ``model.dismiss_below``, or the category's own ``category_dismiss_below``). The bounds are chosen
      on out-of-fold scores of the training contracts so that at least 0.9 of the findings each
      dismisses are no labelled clause of their category (``python -m benchmarks.train_support``).

    Returns new objects for dismissed findings, the others as they were, in input order."""
    out = []
    for cf in checked:
        s = _support_result(cf)
        if s is None or s.verdict is not Verdict.needs_review:
            out.append(cf)
            continue
        if s.reason == HEADING_ONLY:
            reason = (
                f"{DISMISSED_REASON}{s.reason}: no clause text under it states {_label(cf.finding.clause_type.value)}"
            )
        elif (
            model is not None
            and s.score is not None
            and s.reason.startswith(_READS_AS)
            and s.score < (bound := model.dismissal_bound(cf.finding.clause_type.value))
        ):
            # the score to 3 significant digits: "(support 0.02)" in the reason may round up to the bound
            reason = f"{DISMISSED_REASON}{s.reason} — {s.score:.3g} is below the dismissal bound {bound:g}"
        else:
            out.append(cf)
            continue
        checks = [s.model_copy(update={"reason": reason}) if c.name == "support" else c for c in cf.checks]
        out.append(dataclasses.replace(cf, checks=checks))
    return checked if all(a is b for a, b in zip(out, checked)) else out


def _relative_support(
    checked: list[CheckedFinding],
    model: SupportModel | None,
    heading_of: Callable[[CheckedFinding], str | None] | None = None,
) -> list[CheckedFinding]:
    """The document-level part of the ``support`` check: a document's strongest passage of a category.

    For each category with a floor in ``model.category_floor``, the finding(s) with the highest
    support score among the document's findings whose quote was checked for support and is no
    heading or negation are supported when the score reaches the floor, even below
    ``model.threshold``: their ``support`` check becomes ``verified`` ("the passage of this document
    that reads most as <category>") and the finding's verdict is recomputed. Every other finding
    keeps its per-chunk result. The floors and threshold are chosen together on out-of-fold scores of
    the training contracts (``python -m benchmarks.train_support``): a document's clearest statement
    of a clause is good evidence even when the model is unsure, while a second, weaker passage of the
    same category needs ``threshold``. A passage the model gives another class at least
    :data:`CONFIDENT_OTHER` is never supported this way; in a category with floor 0 (the model
    cannot judge it) the quote must use the category's wording (:data:`CATEGORY_WORDING`), else
    its ``support`` check says so and stays ``needs_review``; one supported below :data:`WEAK_RELATIVE`
    says "the model barely recognises it". Returns new objects for changed findings, the others as
    they were, in input order; ``model=None`` or no floors: ``checked`` unchanged.
    """
    if model is None or not model.category_floor:
        return checked
    strongest: dict[str, float] = {}
    for cf in checked:
        s = _support_result(cf)
        if s is not None and s.score is not None and (s.verdict is Verdict.verified or s.reason.startswith(_READS_AS)):
            cat = cf.finding.clause_type.value
            strongest[cat] = max(strongest.get(cat, s.score), s.score)
    out = []
    for cf in checked:
        s = _support_result(cf)
        cat = cf.finding.clause_type.value
        floor = model.category_floor.get(cat)
        if (
            s is None
            or s.score is None
            or s.verdict is not Verdict.needs_review
            or not s.reason.startswith(_READS_AS)
            or floor is None
            or s.score < floor
            or s.score < strongest.get(cat, 1.0)
        ):
            out.append(cf)
            continue
        probs = model.probabilities(cf.finding.evidence, heading_of(cf) if heading_of is not None else None)
        other = max((c for c in probs if c != cat), key=probs.__getitem__)
        if probs[other] >= CONFIDENT_OTHER:  # the model is sure it is something else: no benefit of the doubt
            out.append(cf)
            continue
        if floor == 0.0 and cat in CATEGORY_WORDING and not CATEGORY_WORDING[cat].search(cf.finding.evidence):
            # the model cannot judge this category, and the quote does not use the clause's own wording
            result = CheckResult(
                name="support",
                verdict=Verdict.needs_review,
                score=s.score,
                reason=f"quote does not use the wording of {_label(cat)} ({WORDING_HINT[cat]}), "
                f"and the support model cannot judge that category (support {s.score:.2f})",
            )
            checks = [result if c.name == "support" else c for c in cf.checks]
            out.append(dataclasses.replace(cf, checks=checks, verdict=overall_verdict(checks)))
            continue
        weak = f" — {WEAK_SUPPORT_REASON}: confirm the clause" if s.score < WEAK_RELATIVE else ""
        result = CheckResult(
            name="support",
            verdict=Verdict.verified,
            score=s.score,
            reason=f"the passage of this document that reads most as {_label(cat)} "
            f"(support {s.score:.2f}; its strongest passage needs {floor:g}, "
            f"any other {model.threshold:g}){weak}",
        )
        checks = [result if c.name == "support" else c for c in cf.checks]
        out.append(dataclasses.replace(cf, checks=checks, verdict=overall_verdict(checks)))
    return out


def _support_result(cf: CheckedFinding) -> CheckResult | None:
    return next((c for c in cf.checks if c.name == "support"), None)


@task(name="check-support-in-document", task_run_name=for_document("check-support-in-document"), cache_policy=NO_CACHE)
def check_support_in_document(
    checked: list[CheckedFinding], heading_of: Callable[[CheckedFinding], str | None] | None = None
) -> list[CheckedFinding]:
    """Prefect task: :func:`relative_support` over all checked findings of one document with the
    shipped model (``DOCREVIEW_SUPPORT_THRESHOLD`` replaces its threshold, as in the fact-check); with
    ``heading_of`` (:func:`tasks.check.index.headings_in` of the document's index), each finding is
    scored under its section headings."""
    from schemas.settings import Settings

    return relative_support(checked, configured_model(Settings().support_threshold), heading_of)


def configured_model(threshold: float | None) -> SupportModel | None:
    """The shipped model with ``threshold`` (``DOCREVIEW_SUPPORT_THRESHOLD``; probability 0..1) in
    place of its stored one when given; ``None`` when the model file is absent."""
    model = load_model()
    if model is not None and threshold is not None:
        model = model.model_copy(update={"threshold": threshold})
    return model
