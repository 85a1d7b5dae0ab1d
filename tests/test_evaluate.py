"""Tests for the CUAD scoring helpers (:mod:`tasks.observe.evaluate`) and the harness (:mod:`flows.eval`)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from schemas.taxonomy import CUAD_LABELS, ClauseType
from tasks.observe.evaluate import (
    LabelledDoc,
    dates_match,
    durations_match,
    evidence_overlaps,
    in_split,
    is_covered,
    label_pieces,
    load_cuad,
    locate,
    macro_f1,
    parse_duration,
    parse_gold_date,
    parse_text_date,
    presence_scores,
    prf,
    router_tally,
    split_of,
    value_correct,
)
from tasks.textnorm import match_form

C = ClauseType


def test_prf():
    assert prf(3, 1, 2) == pytest.approx((0.75, 0.6, 2 * 0.75 * 0.6 / 1.35))
    assert prf(0, 0, 0) == (0.0, 0.0, 0.0)


def test_presence_and_macro_f1():
    a = LabelledDoc("a", "pdf/a.pdf", "txt/a.txt", answers={C.governing_law: "Delaware", C.insurance: "Yes"})
    b = LabelledDoc("b", "pdf/b.pdf", "txt/b.txt", answers={C.governing_law: "", C.insurance: "No"})
    scores = presence_scores([a, b], {"a": {C.governing_law}, "b": {C.insurance}})
    assert scores[C.governing_law] == pytest.approx(
        {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1, "tp": 1, "fp": 0, "fn": 0}
    )
    assert scores[C.insurance]["tp"] == 0 and scores[C.insurance]["fp"] == 1 and scores[C.insurance]["fn"] == 1
    assert scores[C.insurance]["f1"] == 0.0
    # Categories with no gold and no prediction have no F1 and are left out of the mean.
    assert macro_f1(scores) == pytest.approx(0.5)


def test_label_pieces_and_overlap():
    spans = ["Licensee may not assign this Agreement <omitted> without the prior written consent of Licensor."]
    assert label_pieces(spans) == [
        "Licensee may not assign this Agreement",
        "without the prior written consent of Licensor.",
    ]
    assert evidence_overlaps("Licensee may not assign this\nAgreement to any person.", spans)
    assert not evidence_overlaps("This Agreement is governed by the laws of Delaware.", spans)


@pytest.mark.parametrize(
    "gold, text, ok",
    [
        ("5/8/14", "entered into on the 8th day of May 2014", True),
        ("5/8/14", "May 8, 2014", True),
        ("5/8/2014", "May 9, 2014", False),
        ("[]/[]/2020", "June 1, 2020", True),
        ("3/1/20", "3/1/2020", True),
    ],
)
def test_dates(gold, text, ok):
    g, p = parse_gold_date(gold), parse_text_date(text)
    assert g is not None and p is not None
    assert dates_match(g, p) is ok


@pytest.mark.parametrize(
    "category, gold, predicted, ok",
    [
        (C.renewal_term, "successive 1 year", ["one (1) year"], True),
        (C.renewal_term, "1 year", ["twelve (12) months"], True),
        (C.notice_period_to_terminate_renewal, "60 days", ["ninety (90) days"], False),
        (C.governing_law, "Nevada", ["the State of Nevada"], True),
        (C.governing_law, "Nevada", ["New York"], False),
        (
            C.parties,
            'Birch First Global Investments Inc. ("Company"); Mount Knowledge Holdings Inc. ("MA")',
            ["Birch First Global Investments Inc.", "Mount Knowledge Holdings Inc."],
            True,
        ),
        (C.parties, "Acme Corp; Beta LLC; Gamma Ltd", ["Delta Inc."], False),
        (C.expiration_date, "perpetual", ["in perpetuity"], True),
        (C.agreement_date, "5/8/14", [], False),
    ],
)
def test_value_correct(category, gold, predicted, ok):
    assert value_correct(category, gold, predicted) is ok


def test_value_correct_rejects_yes_no_category():
    with pytest.raises(ValueError):
        value_correct(C.insurance, "Yes", ["x"])


def test_locate_and_router_tally():
    text = "Intro.\n\nThe Licensee may not  assign this Agreement. Later text. Governed by the laws of Ohio."
    norm, offs = match_form(text)
    [(a, b)] = locate(norm, offs, "may not assign this agreement")
    assert text[a:b] == "may not  assign this Agreement"
    assert is_covered(a, b, [(0, a + 3), (a + 2, b)])
    assert not is_covered(a, b, [(0, a + 3), (a + 5, b)])
    spans = {
        C.anti_assignment: ["may not assign this Agreement"],
        C.governing_law: ["laws of Ohio"],
        C.insurance: ["text that is not in the document"],
    }
    tally = router_tally(text, spans, [(0, text.index("Later"))])
    assert (tally.located, tally.routed, tally.unlocated) == (2, 1, 1)
    assert tally.recall == 0.5 and tally.missed_by_category == {"governing_law": 1}


# --- the harness end to end on a tiny hand-made labelled set ------------------------------------

CONTRACT_A = [
    "SUPPLY AGREEMENT\n\nThis Supply Agreement is entered into as of March 1, 2020 by and between Acme Widgets, "
    'Inc. ("Acme") and Beta Stores LLC ("Beta").\n\n'
    "1. Assignment. Neither party may assign this Agreement without the prior written consent of the other party.",
    "2. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
    "State of Delaware.\n\n3. Notices. Notices shall be in writing and delivered to the addresses above.",
]
CONTRACT_B = [
    "SERVICES AGREEMENT\n\nThe headings in this document are for convenience of reference only. This document "
    "may be executed in counterparts, each of which shall be deemed an original.",
]


def _write_set(root: Path, pdf_maker) -> None:
    (root / "pdf").mkdir()
    (root / "txt").mkdir()
    (root / "labels").mkdir()
    pdf_maker(root / "pdf" / "a_supply.pdf", CONTRACT_A)
    pdf_maker(root / "pdf" / "b services.pdf", CONTRACT_B)
    (root / "txt" / "a_supply.txt").write_text("\n".join(CONTRACT_A), encoding="utf-8")
    (root / "txt" / "b services.txt").write_text("\n".join(CONTRACT_B), encoding="utf-8")
    with open(root / "manifest.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["split", "Filename", "pdf_file", "txt_file"])
        # The label Filename differs from the file name on disk (as in CUAD): the manifest pairs them.
        w.writerow(["shared", "A&Supply.pdf", "pdf/a_supply.pdf", "txt/a_supply.txt"])
        w.writerow(["shared", "B Services.PDF", "pdf/b services.pdf", "txt/b services.txt"])
    cats = [c for c in ClauseType if c is not C.other]
    header = ["Filename"]
    for c in cats:
        label = CUAD_LABELS[c]
        header += [label, f"{label}- Answer" if c is C.notice_period_to_terminate_renewal else f"{label}-Answer"]
    a = {
        C.anti_assignment: (
            ["Neither party may assign this Agreement without the prior written consent of the other party."],
            "Yes",
        ),
        C.governing_law: (
            ["This Agreement shall be governed by and construed in accordance with the laws of the State of Delaware."],
            "Delaware",
        ),
        C.insurance: (["Beta shall <omitted> maintain insurance"], "Yes"),
    }  # labelled, not in the text
    b = {C.anti_assignment: ([], "No"), C.governing_law: ([], "")}
    with open(root / "labels" / "master_clauses.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for name, labels in (("A&Supply.pdf", a), ("B Services.PDF", b)):
            row = [name]
            for c in cats:
                spans, answer = labels.get(c, ([], "" if c in (C.document_name, C.parties) else "No"))
                row += [repr(spans), answer]
            w.writerow(row)


def test_load_cuad_pairs_labels_through_the_manifest(tmp_path, pdf_maker):
    _write_set(tmp_path, pdf_maker)
    docs = load_cuad(tmp_path)
    assert [d.pdf_file for d in docs] == ["pdf/a_supply.pdf", "pdf/b services.pdf"]
    assert docs[0].present(C.governing_law) and not docs[1].present(C.governing_law)
    assert docs[0].answers[C.notice_period_to_terminate_renewal] == "No"
    assert load_cuad(tmp_path, limit=1)[0].filename == "A&Supply.pdf"


@pytest.mark.usefixtures("prefect_harness")
def test_harness_scores_a_known_set(tmp_path, pdf_maker, monkeypatch):
    from flows.eval import evaluate_cuad
    from tasks.review.route import ROUTER_VERSION

    monkeypatch.setenv("DOCREVIEW_ROUTER_THRESHOLD", "-1.5")  # the router figures use the operator's threshold

    data = tmp_path / "cuad"
    data.mkdir()
    _write_set(data, pdf_maker)
    out = tmp_path / "scores.json"
    result = evaluate_cuad(data, backend="rules", out_file=out, routing="all", chunk_chars=1500, overlap_chars=200)
    assert json.loads(out.read_text()) == result
    assert result["documents"] == 2 and result["documents_reviewed"] == 2
    assert (result["router_version"], result["router_threshold"]) == (ROUTER_VERSION, -1.5)
    per = result["per_category"]
    # Governing law and anti-assignment: found in A, absent from B, as labelled.
    for name in ("governing_law", "anti_assignment"):
        assert (per[name]["tp"], per[name]["fp"], per[name]["fn"], per[name]["support"]) == (1, 0, 0, 1)
        assert per[name]["f1"] == 1.0
        assert per[name]["evidence_overlap"] == 1.0
    # Insurance is labelled in A but not written in it: a miss.
    assert (per["insurance"]["tp"], per["insurance"]["fn"], per["insurance"]["recall"]) == (0, 1, 0.0)
    assert result["value_accuracy"]["governing_law"] == 1.0
    # Router: the two labelled clauses are located and routed; the insurance pieces are not in the text.
    assert result["spans_located"] == 2 and result["spans_unlocated"] == 2
    assert result["router_recall"] == 1.0
    assert 0.0 < result["routing_rate"] <= 1.0
    for key in ("presence_macro_f1", "evidence_overlap_rate"):
        assert 0.0 <= result[key] <= 1.0


def test_test_split_is_the_documented_seeded_hash_of_the_file_name():
    """The rule docs/evaluation.md states, recomputed here: SHA-256 of "docreview-test-split:<Filename>",
    first 16 hex digits as an integer, modulo 100, below 20 is the test split."""
    import hashlib

    names = [f"CONTRACT_{i}.pdf" for i in range(400)] + ["A&Supply.pdf", "b services.pdf"]
    for name in names:
        digest = hashlib.sha256(f"docreview-test-split:{name}".encode()).hexdigest()
        want = "test" if int(digest[:16], 16) % 100 < 20 else "train"
        assert split_of(name) == want
        assert in_split(name, want) and not in_split(name, {"test": "train", "train": "test"}[want])
        assert in_split(name, "all")
    share = sum(split_of(n) == "test" for n in names) / len(names)
    assert 0.12 < share < 0.28  # about a fifth
    with pytest.raises(ValueError, match="unknown split"):
        in_split("A&Supply.pdf", "held-out")


def test_shared_cuad_test_split_has_75_contracts(shared_data):
    """The frozen test split of the 340 shared CUAD contracts: 75 contracts (at least 60 are wanted)."""
    with open(shared_data / "cuad" / "labels" / "master_clauses.csv", newline="", encoding="utf-8") as fh:
        names = [row["Filename"] for row in csv.DictReader(fh)]
    assert len(names) == 340
    assert sum(split_of(n) == "test" for n in names) == 75


def test_eval_cuad_retires_held_out_and_refuses_an_unknown_split(tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    data = tmp_path / "cuad"
    (data / "labels").mkdir(parents=True)
    (data / "manifest.csv").write_text("Filename,pdf_file,txt_file\n", encoding="utf-8")
    (data / "labels" / "master_clauses.csv").write_text("Filename\n", encoding="utf-8")
    held = CliRunner().invoke(app, ["eval", "cuad", str(data), "--held-out"])
    assert held.exit_code == 2 and "--split test" in held.output and "retired" in held.output
    bad = CliRunner().invoke(app, ["eval", "cuad", str(data), "--split", "heldout"])
    assert bad.exit_code == 2 and "--split must be test, train or all" in bad.output


@pytest.mark.parametrize(
    "text, expected",
    [
        ("ninety (90) days", (90, "day")),
        ("a 5-year term", (5, "year")),
        ("five (5)-year renewal periods", (5, "year")),
        ("twelve-month periods", (12, "month")),
        ("no duration here", None),
    ],
)
def test_parse_duration_reads_spelled_digit_and_hyphenated_forms(text, expected):
    assert parse_duration(text) == expected


def test_hyphenated_renewal_term_matches_gold_in_other_units():
    assert durations_match("1 year", "successive twelve (12)-month periods")
    assert not durations_match("2 years", "a 5-year term")


def test_eval_table_fits_80_columns_and_marks_categories_without_labels():
    from rich.console import Console

    from flows.eval import print_table

    per_category = {
        c.value: {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "support": 4, "evidence_overlap": 0.5}
        for c in ClauseType
    }
    per_category["price_restrictions"] = {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "support": 0,
        "evidence_overlap": None,
        "tp": 0,
        "fp": 0,
        "fn": 0,
    }
    per_category["source_code_escrow"] = {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "support": 0,
        "evidence_overlap": 0.0,
        "tp": 0,
        "fp": 2,
        "fn": 0,
    }
    result = {
        "documents": 4,
        "backend": "rules",
        "per_category": per_category,
        "value_accuracy": {"governing_law": 0.75},
        "presence_macro_f1": 0.3333,
        "evidence_overlap_rate": 0.5,
        "findings": 9,
        "router_recall": 0.9,
        "spans_located": 10,
        "spans_unlocated": 1,
        "routing_rate": 0.4,
        "wall_s": 3.0,
    }
    console = Console(width=80, record=True)
    print_table(result, console)
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= 80
    row = next(line for line in lines if line.startswith("non_transferable_license "))
    assert row.split() == ["non_transferable_license", "0.50", "0.25", "0.333", "4", "0.50"]
    # nothing labelled and nothing found: no precision either; found where nothing is labelled: precision 0
    assert next(line for line in lines if line.startswith("price_restrictions ")).split()[1:4] == ["n/a", "n/a", "n/a"]
    assert next(line for line in lines if line.startswith("source_code_escrow ")).split()[1:4] == ["0.00", "n/a", "n/a"]
    assert next(line for line in lines if line.startswith("governing_law ")).split()[-1] == "0.75"
    assert {line.split()[0] for line in lines[3 : 3 + len(ClauseType)]} == {c.value for c in ClauseType}


@pytest.mark.slow
def test_eval_cuad_command_on_real_contracts(shared_data, tmp_path):
    """`docreview eval cuad --split test --limit 20` on the shared CUAD set: the command a user runs, end to end.

    The floors sit below the figures measured on these 20 contracts of the frozen test split (2026-12-06:
    presence macro-F1 0.795, 562 spans located, router recall 0.897 at routing rate 0.476), the split no
    model is trained on. Before, the command ran on `--split all` (its default), so the floors were checked
    on contracts the router and the support model had been trained on. The full run is part of `make bench`.
    """
    import subprocess
    import sys

    out = tmp_path / "eval.json"
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "docreview"),
            "eval",
            "cuad",
            str(shared_data / "cuad"),
            "--split",
            "test",
            "--limit",
            "20",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(line.startswith("presence macro-F1 ") for line in lines)
    result = json.loads(out.read_text())
    assert result["documents"] == result["documents_reviewed"] == 20
    assert set(result["per_category"]) == {c.value for c in ClauseType} - {"other"}
    for scores in result["per_category"].values():
        assert {"precision", "recall", "f1", "support"} <= set(scores)
    assert result["presence_macro_f1"] >= 0.65
    assert result["spans_located"] > 300
    assert result["router_recall"] >= 0.85 and 0 < result["routing_rate"] <= 0.6  # measured: 0.897 at 0.476
    assert result["split"] == "test"
    assert 0 < result["evidence_overlap_rate"] <= 1
