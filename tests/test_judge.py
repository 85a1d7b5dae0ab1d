"""The support judge's inference path (tasks/check/judge.py) and its use by the support check.

The judge ``make judge`` builds is not in git and not built in CI; these tests build a small judge of
the same shape in a temporary folder (a WordPiece tokenizer, an ONNX graph with the model's three inputs
and its ``logits`` output, a ``judge.json``), whose score is known: ``sigmoid(0.25 * tokens - 6)`` where
``tokens`` counts the pair's tokens, so the tests check the tokenisation, truncation, batching and the
support check's use of the score against figures computed here. ``test_built_judge_*`` run on the real
judge when it is built (``make judge``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from schemas.findings import Finding, Risk
from schemas.taxonomy import ClauseType
from tasks.check import judge as judge_module
from tasks.check.judge import MAX_QUOTE_CHARS, JudgeConfig, load_judge, passage, write_config
from tasks.check.support import SupportModel, assess, check_support, load_model, read_as

C = ClauseType
WORDS = "the liability of either party shall not exceed fees paid cap on damages governing law state new york"


def build_judge(folder: Path, max_len: int = 32, threshold: float = 0.5, definitions: dict | None = None) -> Path:
    """A small judge in ``folder`` whose score is sigmoid(0.25 * tokens - 6)."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *sorted(set(WORDS.split())), ":", "|"])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "length"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["mask_f", "axes"], ["count"], keepdims=1),
        helper.make_node("Mul", ["count", "scale"], ["scaled"]),
        helper.make_node("Add", ["scaled", "shift"], ["logits"]),
    ]
    inits = [
        helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
        helper.make_tensor("scale", TensorProto.FLOAT, [], [0.25]),
        helper.make_tensor("shift", TensorProto.FLOAT, [], [-6.0]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-judge",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "judge.onnx"))
    write_config(
        folder,
        JudgeConfig(
            version="judge-v1-test",
            max_len=max_len,
            definitions=definitions or {"cap_on_liability": "cap on damages", "governing_law": "governing law state"},
            threshold=threshold,
            category_floor={"cap_on_liability": 0.3},
            dismiss_below=0.01,
        ),
    )
    return folder


def expected(tokens: int) -> float:
    return 1 / (1 + math.exp(-(0.25 * tokens - 6)))


def test_scores_follow_the_model_and_the_pair_tokenisation(tmp_path):
    judge = load_judge(build_judge(tmp_path / "j"))
    assert judge is not None and judge.version == "judge-v1-test"
    # "Cap On Liability: cap on damages" = 7 tokens (with ":"), "the liability shall not exceed fees paid" = 7,
    # plus [CLS] and two [SEP]: 17 tokens
    v = judge.score("the liability shall not exceed fees paid", None, "cap_on_liability")
    assert v.score == pytest.approx(expected(17), abs=1e-6) and v.reason == ""
    # the heading path is read before the quote, behind a "|"
    with_heading = judge.score("the liability shall not exceed fees paid", "cap on damages", "cap_on_liability")
    assert with_heading.score == pytest.approx(expected(17 + 4), abs=1e-6)
    # an empty heading path is no heading; batches give the same scores as single pairs, in input order
    items = [("fees paid", "", "governing_law"), ("the liability of either party", None, "cap_on_liability")] * 20
    batch = judge.score_many(items)
    assert [b.score for b in batch] == [judge.score(*i).score for i in items]
    assert batch[0].score == pytest.approx(expected(6 + 2 + 3), abs=1e-6)


def test_bad_input_gets_a_verdict_with_a_reason_never_an_exception(tmp_path):
    judge = load_judge(build_judge(tmp_path / "j", max_len=32))
    assert judge is not None
    long = judge.score("the liability of either party " * 700, None, "cap_on_liability")  # 21,000 characters
    assert long.score == pytest.approx(expected(32), abs=1e-6)  # truncated to max_len tokens
    assert f"first {MAX_QUOTE_CHARS:,} of 21,000 characters" in long.reason
    foreign = judge.score("La responsabilité de chaque partie est limitée à 1 000 000 €.", "", "cap_on_liability")
    assert foreign.score is not None and 0 < foreign.score < 1
    unknown = judge.score("the liability of either party", None, "source_code_escrow")
    assert unknown.score is None and "no definition of 'source_code_escrow'" in unknown.reason
    assert judge.score("", None, "cap_on_liability").score is None
    assert judge.score("   ", "cap", "cap_on_liability").reason == "no quote to judge"


def test_a_runtime_failure_is_a_verdict_too(tmp_path):
    judge = load_judge(build_judge(tmp_path / "j"))
    assert judge is not None

    class Broken:
        def run(self, *_a, **_k):
            raise RuntimeError("session gone")

    judge._session = Broken()
    out = judge.score_many([("the liability", None, "cap_on_liability"), ("fees", None, "nope")])
    assert out[0].score is None and out[0].reason == "the judge failed (RuntimeError)"
    assert out[1].score is None and "no definition" in out[1].reason


def test_absent_or_damaged_judge(tmp_path):
    assert load_judge(tmp_path / "nothing-here") is None
    folder = build_judge(tmp_path / "j")
    (folder / "judge.onnx").write_bytes(b"not an onnx file")
    with pytest.raises(ValueError, match=r"unreadable.*make judge"):
        load_judge(folder)


def test_passage_cuts_long_quotes_and_headings():
    assert passage("a  b\n c", None) == "a b c"
    assert passage("q", "") == "q"
    assert passage("q", "5. LIABILITY > 5.2 Cap") == "5. LIABILITY > 5.2 Cap | q"
    assert len(passage("x" * 30_000, "h" * 1000)) == 300 + 3 + MAX_QUOTE_CHARS


def _finding(evidence: str, clause: ClauseType) -> Finding:
    return Finding(clause_type=clause, summary="s", evidence=evidence, page=1, risk=Risk.low)


def test_support_check_takes_the_judges_score_and_bounds(tmp_path):
    lexical = load_model()
    assert lexical is not None and lexical.judge is None  # conftest: DOCREVIEW_SUPPORT_JUDGE=false
    judge = load_judge(build_judge(tmp_path / "j", threshold=0.5))
    model = lexical.with_judge(judge)
    assert model.threshold == 0.5 and model.category_floor == {"cap_on_liability": 0.3}
    assert model.dismiss_below == 0.01 and model.version == f"{lexical.version}+judge-v1-test"
    # 17 tokens: sigmoid(-1.75) = 0.15 < 0.5 -> doubted, whatever the lexical model says
    quote = "the liability shall not exceed fees paid"
    s = assess(_finding(quote, C.cap_on_liability), model)
    assert s.score == pytest.approx(expected(17), abs=1e-6) and s.problem is not None
    assert f"(support {expected(17):.2f}" in s.problem
    # a longer quote: 17 words + 7 + 3 = 27 tokens: sigmoid(0.75) = 0.68 -> supported
    long_quote = "the liability of either party shall not exceed the fees paid cap on damages governing law state"
    r = check_support(_finding(long_quote, C.cap_on_liability), model)
    assert r.verdict.value == "verified" and r.score == pytest.approx(expected(27), abs=1e-6)
    # a category the judge has no definition of keeps the lexical score and says so
    other = check_support(_finding(quote, C.insurance), model)
    assert "the judge has no definition of 'insurance': the lexical model's score" in other.reason
    assert other.score == pytest.approx(lexical.probabilities(quote)["insurance"], abs=1e-9)


def test_reading_as_another_category_needs_the_judges_confirmation(tmp_path):
    lexical = load_model()
    assert lexical is not None
    # the lexical model reads a governing-law sentence as Governing Law; claimed as Cap On Liability, the
    # quote is doubted; whether it reads as Governing Law depends on the judge's score for that category
    quote = "This Agreement shall be governed by the laws of the State of New York."
    assert max((p, c) for c, p in lexical.probabilities(quote).items())[1] == "governing_law"
    definitions = {"cap_on_liability": "cap on damages", "governing_law": "governing law state law state"}
    confirming = lexical.with_judge(load_judge(build_judge(tmp_path / "a", threshold=0.6, definitions=definitions)))
    s = assess(_finding(quote, C.cap_on_liability), confirming)
    # the quote's 14 words and its full stop ([UNK] for words the small vocabulary lacks) are 15 tokens:
    # "Cap On Liability: cap on damages" (7) + 15 + 3 = 25 tokens, sigmoid(0.25) = 0.56, below 0.6: doubted;
    # "Governing Law: governing law state law state" (8) + 15 + 3 = 26, sigmoid(0.5) = 0.62: confirmed
    assert s.score == pytest.approx(expected(25), abs=1e-6)
    assert confirming.judge.score(quote, None, "governing_law").score == pytest.approx(expected(26), abs=1e-6)
    assert s.best == "governing_law" and read_as(s.problem or "") is C.governing_law
    strict = lexical.with_judge(load_judge(build_judge(tmp_path / "b", threshold=0.999, definitions=definitions)))
    s2 = assess(_finding(quote, C.cap_on_liability), strict)
    assert s2.best == "none" and read_as(s2.problem or "") is None
    assert (s2.problem or "").startswith("quote reads as no CUAD clause, not Cap On Liability")


def test_support_check_name_says_which_judge_runs(tmp_path, monkeypatch):
    from tasks.check import support

    assert support.support_check_name().startswith("lexical support-v2 (judge off: DOCREVIEW_SUPPORT_JUDGE=false)")
    monkeypatch.setenv("DOCREVIEW_SUPPORT_JUDGE", "true")
    monkeypatch.setattr(judge_module, "JUDGE_DIR", build_judge(tmp_path / "j"))
    monkeypatch.setattr(support, "_JUDGED", {})
    judge_module._load.cache_clear()
    try:
        assert support.support_check_name() == (
            "judge judge-v1-test (fine-tuned MiniLM cross-encoder) with the lexical support-v2"
        )
        assert load_model().judge is not None
    finally:
        judge_module._load.cache_clear()
    monkeypatch.setattr(support, "_JUDGED", {})
    monkeypatch.setattr(judge_module, "JUDGE_DIR", tmp_path / "absent")
    assert support.support_check_name() == "lexical support-v2 (no judge installed: make judge)"


BUILT = judge_module.JUDGE_DIR


@pytest.mark.skipif(not (BUILT / "judge.onnx").is_file(), reason="the support judge is not built (make judge)")
def test_built_judge_scores_every_kind_of_input_and_never_raises():
    """The judge `make judge` built, on the inputs the issue names; how well it judges is measured by its
    trainer on the calibration contracts and the test split (docs/fact-check.md), not here."""
    judge = load_judge(BUILT)
    assert judge is not None and judge.version.startswith("judge-v1-")
    cap = (
        "In no event shall either party's aggregate liability arising out of this Agreement exceed the "
        "total fees paid by Customer in the twelve (12) months preceding the claim."
    )
    got = judge.score_many(
        [
            (cap, "LIMITATION OF LIABILITY", "cap_on_liability"),
            (cap * 120, "", "cap_on_liability"),  # about 20,000 characters, no heading path
            ("Die Haftung ist auf den Auftragswert begrenzt.", None, "cap_on_liability"),
            (cap, "LIMITATION OF LIABILITY", "not_a_category"),
            ("", None, "cap_on_liability"),
        ]
    )
    assert all(0.0 < v.score < 1.0 for v in got[:3])
    assert "judged on the first 2,000 of" in got[1].reason
    assert got[3].score is None and "no definition" in got[3].reason
    assert got[4].score is None and got[4].reason == "no quote to judge"
    assert set(judge.config.definitions) == {c.value for c in ClauseType} - {"other"}


def test_support_model_without_judge_is_unchanged():
    m = SupportModel(classes=["cap_on_liability", "none"], bias=[0.0, 0.0])
    assert m.judge is None
    s = assess(_finding("anything at all", C.cap_on_liability), m)
    assert s.score == pytest.approx(0.5) and s.note == ""


def test_trainer_pairs_label_findings_by_the_lawyers_spans_and_add_hard_negatives():
    from benchmarks.train_judge import CONFUSABLE, build_pairs, calibration_contract
    from tasks.observe.evaluate import LabelledDoc

    cap = "In no event shall either party's liability exceed the fees paid under this Agreement."
    law = "This Agreement is governed by the laws of the State of New York."
    doc = LabelledDoc("A.pdf", "pdf/A.pdf", "txt/A.txt", spans={C.cap_on_liability: [cap]})
    contract = {
        "filename": "A.pdf",
        "doc": doc,
        "examples": [(cap, "LIABILITY", "cap_on_liability"), ("The parties met on Monday.", None, "none")],
        "findings": [_finding(cap, C.cap_on_liability), _finding(law, C.cap_on_liability)],
        "headings": ["LIABILITY", "MISCELLANEOUS"],
    }
    definitions = {c: f"definition of {c}" for group in CONFUSABLE for c in group}
    pairs = build_pairs([contract], definitions, seed=13)
    assert pairs == build_pairs([contract], definitions, seed=13)  # seeded: the same pairs in the same order
    # the lawyer's span with its category, and the rules finding that quotes it: 1
    assert (cap, "LIABILITY", "cap_on_liability", 1) in pairs and pairs.count(
        (cap, "LIABILITY", "cap_on_liability", 1)
    ) == 2
    # the rules backend's false finding: 0
    assert (law, "MISCELLANEOUS", "cap_on_liability", 0) in pairs
    # the span with a category it is easily taken for (liability group) and one drawn at random: 0
    negatives = {c for q, _h, c, y in pairs if q == cap and y == 0}
    assert negatives and "cap_on_liability" not in negatives
    assert negatives & set(CONFUSABLE[0])
    # the unlabelled sentence with a random category: 0
    assert any(q == "The parties met on Monday." and y == 0 for q, _h, _c, y in pairs)
    # with max_pairs every finding's pair stays
    small = build_pairs([contract], definitions, seed=13, max_pairs=2)
    assert sorted(small) == sorted(
        [(cap, "LIABILITY", "cap_on_liability", 1), (law, "MISCELLANEOUS", "cap_on_liability", 0)]
    )
    assert calibration_contract("A.pdf", 13) == calibration_contract("A.pdf", 13)
