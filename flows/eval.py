"""CUAD evaluation harness: run the real review flow over labelled contracts and score it.

Control flow only; the scoring is in :mod:`tasks.observe.evaluate` and the router in :mod:`tasks.review.route`.
:func:`evaluate_cuad` links the labelled PDFs (through ``manifest.csv``) into a temporary folder,
runs :func:`flows.review.review_documents` on it with a temporary SQLite database and output
folder, then scores ``report.json`` and the stored chunks against ``labels/master_clauses.csv``.

The router is scored on its own, whatever ``routing`` the run used: its ``decision-points``
decisions are computed over the run's stored chunks (:func:`tasks.review.route.route_all`), and a
labelled span counts as routed when the deep segments cover it (:func:`tasks.observe.evaluate.router_tally`).
The router's scorer was trained on the training split of the shared contracts, so its figures are also
given for the frozen test split alone (``*_test``, :func:`tasks.observe.evaluate.split_of`).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from sqlmodel import Session, col, select

from schemas.documents import Chunk
from schemas.taxonomy import CUAD_LABELS, ClauseType
from tasks.check.playbook import load_playbook
from tasks.check.support import support_check_name
from tasks.observe.evaluate import (
    CATEGORIES,
    KEY_TERM_FIELDS,
    VALUE_CATEGORIES,
    RouterTally,
    evidence_overlaps,
    in_split,
    key_term_outcome,
    lawyer_playbook_status,
    load_cuad,
    macro_f1,
    presence_scores,
    router_tally,
    text_from_chunks,
    value_correct,
)
from tasks.review.route import ROUTER_VERSION, covered_chars, load_model, route_all

#: Finding value names read for each value category, in order of preference.
VALUE_NAMES: dict[ClauseType, tuple[str, ...]] = {
    ClauseType.document_name: ("name",),
    ClauseType.parties: ("party",),
    ClauseType.agreement_date: ("date",),
    ClauseType.effective_date: ("date",),
    ClauseType.expiration_date: ("date", "duration"),
    ClauseType.renewal_term: ("duration",),
    ClauseType.notice_period_to_terminate_renewal: ("duration",),
    ClauseType.governing_law: ("jurisdiction",),
}


@contextmanager
def _chunking(chunk_chars: int | None, overlap_chars: int | None) -> Iterator[None]:
    """Set the run's chunk budget/overlap (``DOCREVIEW_CHUNK_*``) for the duration of the block."""
    wanted = {"DOCREVIEW_CHUNK_CHARS": chunk_chars, "DOCREVIEW_CHUNK_OVERLAP_CHARS": overlap_chars}
    saved = {k: os.environ.get(k) for k in wanted}
    try:
        for key, value in wanted.items():
            if value is not None:
                os.environ[key] = str(value)
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _stored_chunks(db: str, sha256: str) -> list[Chunk]:
    from schemas.tables import ChunkRow
    from tasks.store.persist import get_engine

    with Session(get_engine(db)) as session:
        rows = session.exec(select(ChunkRow).where(ChunkRow.sha256 == sha256).order_by(col(ChunkRow.chunk_index))).all()
        return [
            Chunk(
                document_sha256=r.sha256,
                index=r.chunk_index,
                char_start=r.char_start,
                char_end=r.char_end,
                page_start=r.page_start,
                page_end=r.page_end,
                text=r.text,
                heading=r.heading,
            )
            for r in rows
        ]


#: The report's key-term label each scored field is shown under (``expiration_deadline``: the calendar's).
KEY_TERM_LABELS = {
    "parties": "Parties",
    "agreement_date": "Agreement date",
    "effective_date": "Effective date",
    "expiration_date": "Expiration date",
    "governing_law": "Governing law",
    "renewal_term": "Renewal",
    "notice_period": "Notice to terminate renewal",
}


def key_term_outcomes(entry: dict[str, Any], doc: Any) -> dict[str, str]:
    """``{field: right|wrong|missing}`` for one report document (``report.json``'s entry) against its CUAD
    answers (:func:`tasks.observe.evaluate.key_term_outcome`). A document the run did not review shows
    nothing. The calendar's expiration deadline is the initial term's end (before renewals)."""
    reviewed = entry.get("status") == "reviewed"
    terms = entry.get("key_terms") or {} if reviewed else {}
    out = {}
    for name, category in KEY_TERM_FIELDS.items():
        if name == "expiration_deadline":
            shown = [
                str(d.get("initial_end") or d["date"])
                for d in (entry.get("deadlines") or [] if reviewed else [])
                if d["kind"] == "expiration"
            ]
        else:
            shown = list(terms.get(KEY_TERM_LABELS[name]) or [])
        out[name] = key_term_outcome(name, doc.answers.get(category, ""), shown)
    return out


def key_term_scores(tally: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Shares ``{field: {right, wrong, missing, n}}`` and ``mean_right`` over the fields."""
    out: dict[str, Any] = {}
    for name, counts in tally.items():
        n = sum(counts.values())
        out[name] = {k: (v / n if n else None) for k, v in counts.items()} | {"n": n}
    rights = [v["right"] for v in out.values() if v["right"] is not None]
    out["mean_right"] = sum(rights) / len(rights) if rights else None
    return out


def evaluate_cuad(
    data_dir: str | Path,
    backend: str = "rules",
    out_file: str | Path | None = None,
    limit: int | None = None,
    routing: str = "all",
    chunk_chars: int | None = 1500,
    overlap_chars: int | None = 200,
    console: Console | None = None,
    split: str = "all",
    playbook: str | Path | None = None,
) -> dict[str, Any]:
    """Review the labelled contracts of ``data_dir`` with ``backend`` and score the result.

    ``playbook``: a playbook file applied in the run; the result then has ``playbook_agreement``
    (share of (contract, rule) pairs whose status equals the one derived from the lawyers'
    answers, :func:`tasks.observe.evaluate.lawyer_playbook_status`; ``unknown`` counts as a
    disagreement) and ``playbook_rules`` ``{rule: {agree, pairs, agreement, unknown, skipped,
    confusion {"expected->got": n}}}``; ``playbook_not_judged`` ``[{file_name, why}]`` lists the reviewed
    contracts the playbook does not judge (no agreement, an exhibit that is none, a partial copy:
    :func:`tasks.check.absences.contract_expected`), left out of the pairs.

    ``split`` reviews the contracts of one split of :func:`tasks.observe.evaluate.split_of`: ``test``
    (the frozen test split, 75 of the 340 shared contracts, which no shipped model was trained on and
    nothing was tuned on), ``train`` (the rest) or ``all``; ``ValueError`` for another name.
    ``limit`` takes the first N rows of ``master_clauses.csv``; ``routing`` is passed to the
    flow (``all`` or ``decision-points``); ``chunk_chars``/``overlap_chars`` (characters) set the
    run's chunking (``None`` keeps the settings'). Returns (and writes to ``out_file`` as JSON)::

        {documents, documents_reviewed, documents_by_status, not_reviewed [{file_name, status, reason}],
         backend, model, support_check, routing, router_version, router_threshold, chunk_chars, overlap_chars,
         presence_macro_f1, evidence_overlap_rate, findings, router_recall, routing_rate,
         split, router_recall_test, routing_rate_test, spans_located_test,
         spans_located, spans_unlocated, router_missed_by_category, value_accuracy {category: acc},
         key_terms {field: {right, wrong, missing, n}, mean_right} (:func:`key_term_outcomes`),
         per_category {name: {precision, recall, f1, support, tp, fp, fn, evidence_overlap}},
         verified_findings, verified_evidence_overlap_rate, presence_macro_f1_verified,
         verdicts {verdict: count}, wall_s, review_wall_s}

    ``*_verified`` figures count only findings whose overall verdict is ``verified``: the share of
    them whose quote overlaps a labelled span of their category, and presence macro-F1 when a
    category counts as found only through a verified finding.

    Raises ``FileNotFoundError``/``ValueError`` for a folder not in the CUAD layout and whatever
    the flow raises when the run itself breaks. The router figures use the scorer's stored
    threshold, or ``DOCREVIEW_ROUTER_THRESHOLD`` when set (as the review does); ``router_threshold``
    records which.
    """
    from flows.review import review_documents
    from schemas.settings import Settings

    threshold = Settings().router_threshold
    router = load_model()
    if router is not None and threshold is not None:
        router = router.model_copy(update={"threshold": threshold})
    root = Path(data_dir)
    started = time.monotonic()
    docs = load_cuad(root)
    docs = [d for d in docs if in_split(d.filename, split)]
    docs = docs[:limit] if limit is not None else docs
    by_file: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="docreview-eval-") as tmp:
        src = Path(tmp) / "contracts"
        src.mkdir()
        for labelled in docs:
            pdf = (root / labelled.pdf_file).resolve()
            if not pdf.is_file():
                raise FileNotFoundError(pdf)
            (src / pdf.name).symlink_to(pdf)
            by_file[pdf.name] = labelled
        db = f"sqlite:///{Path(tmp) / 'eval.db'}"
        out_dir = Path(tmp) / "out"
        if console:
            console.print(f"Reviewing {len(docs)} contract(s) with the {backend} backend (routing={routing}) …")
        with _chunking(chunk_chars, overlap_chars):
            review_started = time.monotonic()
            result = review_documents(
                source=str(src),
                out_dir=str(out_dir),
                database_url=db,
                backend=backend,
                routing=routing,
                playbook=str(playbook) if playbook else None,
            )
            review_wall = time.monotonic() - review_started
        report = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))

        predicted: dict[str, set[ClauseType]] = {}
        predicted_verified: dict[str, set[ClauseType]] = {}
        verified_hits = [0, 0]
        verdicts: dict[str, int] = {}
        overlap_hits: dict[ClauseType, list[int]] = {c: [0, 0] for c in CATEGORIES}
        values_ok: dict[ClauseType, list[int]] = {c: [0, 0] for c in VALUE_CATEGORIES}
        tally, held_tally = RouterTally(), RouterTally()
        held_chars = [0, 0]  # deep, all characters of the test split's contracts (the scorer never saw them)
        deep_chars = all_chars = 0
        triage_tally = TriageTally()
        reviewed = 0
        by_status: dict[str, int] = {}
        not_reviewed: list[dict[str, str]] = []
        rules = load_playbook(playbook) if playbook else None
        rule_tally: dict[str, dict[str, Any]] = {
            r.id: {"agree": 0, "pairs": 0, "unknown": 0, "skipped": 0, "confusion": {}}
            for r in (rules.playbook.rules if rules else [])
        }
        not_judged: list[dict[str, str]] = []  # reviewed, but no agreement the playbook judges
        key_tally: dict[str, dict[str, int]] = {n: {"right": 0, "wrong": 0, "missing": 0} for n in KEY_TERM_FIELDS}
        for entry in report["documents"]:
            doc = by_file.get(entry["file_name"])
            if doc is None:
                continue
            for name, outcome in key_term_outcomes(entry, doc).items():
                key_tally[name][outcome] += 1
            if rules is not None and entry["status"] == "reviewed" and entry.get("not_judged"):
                not_judged.append({"file_name": entry["file_name"], "why": str(entry["not_judged"])})
            elif rules is not None and entry["status"] == "reviewed":
                got = {r["rule"]: r["status"] for r in entry.get("playbook") or []}
                for rule in rules.playbook.rules:
                    want = lawyer_playbook_status(rule, rules.limits.get(rule.id), doc.answers.get(rule.clause, ""))
                    t = rule_tally[rule.id]
                    if want is None:
                        t["skipped"] += 1
                        continue
                    t["pairs"] += 1
                    t["agree"] += got.get(rule.id) == want
                    t["unknown"] += got.get(rule.id) == "unknown"
                    key = f"{want}->{got.get(rule.id)}"
                    t["confusion"][key] = t["confusion"].get(key, 0) + 1
            reviewed += entry["status"] == "reviewed"
            by_status[entry["status"]] = by_status.get(entry["status"], 0) + 1
            if entry["status"] != "reviewed":
                not_reviewed.append(
                    {
                        "file_name": entry["file_name"],
                        "status": entry["status"],
                        "reason": str(entry.get("reason") or "")[:300],
                    }
                )
            found: set[ClauseType] = set()
            values: dict[ClauseType, list[str]] = {}
            found_verified: set[ClauseType] = set()
            if entry["status"] == "reviewed":
                tally_triage(entry["findings"], doc.spans, triage_tally)
            for f in entry["findings"]:
                verdicts[f["verdict"]] = verdicts.get(f["verdict"], 0) + 1
                if f["verdict"] == "unsupported":
                    continue  # the quote is not in the document: not a finding of it
                cat = ClauseType(f["clause_type"])
                if cat is ClauseType.other:
                    continue
                found.add(cat)
                overlap_hits[cat][1] += 1
                overlaps = evidence_overlaps(f["evidence"], doc.spans.get(cat, []))
                overlap_hits[cat][0] += overlaps
                if f["verdict"] == "verified":
                    found_verified.add(cat)
                    verified_hits[1] += 1
                    verified_hits[0] += overlaps
                if cat in VALUE_NAMES:
                    for name in VALUE_NAMES[cat]:
                        if name in f["values"]:
                            values.setdefault(cat, []).extend(
                                v.strip() for v in str(f["values"][name]).split(";") if v.strip()
                            )
            predicted[doc.filename] = found
            predicted_verified[doc.filename] = found_verified
            for cat in VALUE_CATEGORIES:
                if doc.answers.get(cat):
                    values_ok[cat][1] += 1
                    values_ok[cat][0] += value_correct(cat, doc.answers[cat], values.get(cat, []))
            if entry.get("sha256"):
                chunks = _stored_chunks(db, entry["sha256"])
                if chunks:
                    decisions = route_all(chunks, "decision-points", router)
                    deep = [r for d in decisions for r in d.deep_ranges]
                    doc_chars, doc_deep = covered_chars((c.char_start, c.char_end) for c in chunks), covered_chars(deep)
                    text = text_from_chunks((c.char_start, c.char_end, c.text) for c in chunks)
                    router_tally(text, doc.spans, deep, tally)
                    all_chars += doc_chars
                    deep_chars += doc_deep
                    if in_split(doc.filename, "test"):
                        router_tally(text, doc.spans, deep, held_tally)
                        held_chars[0] += doc_deep
                        held_chars[1] += doc_chars

    scores = presence_scores(docs, predicted)
    findings = sum(v[1] for v in overlap_hits.values())
    per_category = {}
    for cat in CATEGORIES:
        s: dict[str, Any] = dict(scores[cat])
        hit, total = overlap_hits[cat]
        s["evidence_overlap"] = hit / total if total else None
        s["label"] = CUAD_LABELS[cat]
        per_category[cat.value] = s
    out = {
        "documents": len(docs),
        "documents_reviewed": reviewed,
        "documents_by_status": by_status,
        "not_reviewed": not_reviewed,
        "backend": result["backend"],
        "model": result["model"],
        "routing": routing,
        "router_version": ROUTER_VERSION,
        "router_threshold": router.threshold if router is not None else None,
        "chunk_chars": chunk_chars,
        "overlap_chars": overlap_chars,
        "presence_macro_f1": macro_f1(scores),
        "evidence_overlap_rate": sum(v[0] for v in overlap_hits.values()) / findings if findings else 0.0,
        "findings": findings,
        "verified_findings": verified_hits[1],
        "verified_evidence_overlap_rate": verified_hits[0] / verified_hits[1] if verified_hits[1] else 0.0,
        "presence_macro_f1_verified": macro_f1(presence_scores(docs, predicted_verified)),
        "verdicts": verdicts,
        "split": split,
        "router_recall": tally.recall,
        "routing_rate": deep_chars / all_chars if all_chars else 0.0,
        "router_recall_test": held_tally.recall,
        "routing_rate_test": held_chars[0] / held_chars[1] if held_chars[1] else 0.0,
        "spans_located_test": held_tally.located,
        "spans_located": tally.located,
        "spans_unlocated": tally.unlocated,
        "router_missed_by_category": dict(sorted(tally.missed_by_category.items(), key=lambda kv: -kv[1])),
        "value_accuracy": {c.value: (ok / n if n else None) for c, (ok, n) in values_ok.items()},
        "key_terms": key_term_scores(key_tally),
        **triage_tally.scores(),
        "per_category": per_category,
        "support_check": support_check_name(),
        "review_wall_s": round(review_wall, 1),
        "wall_s": round(time.monotonic() - started, 1),
    }
    if rules is not None:
        for t in rule_tally.values():
            t["agreement"] = t["agree"] / t["pairs"] if t["pairs"] else None
        pairs = sum(t["pairs"] for t in rule_tally.values())
        out["playbook"] = rules.name
        out["playbook_agreement"] = sum(t["agree"] for t in rule_tally.values()) / pairs if pairs else None
        out["playbook_rules"] = rule_tally
        out["playbook_not_judged"] = not_judged
    if out_file is not None:
        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        Path(out_file).write_text(json.dumps(out, indent=2, sort_keys=False), encoding="utf-8")
    return out


@dataclass
class TriageTally:
    """What a reviewer is asked to look at, against the lawyers' spans, over the reviewed contracts:
    ``contracts``; ``to_look_at`` (findings of CUAD categories the report asks a reviewer to look at,
    :func:`tasks.observe.report.needs_attention`) and ``to_look_at_real`` (of those, the ones whose quote
    is a labelled span of the category they claim, :func:`tasks.observe.evaluate.evidence_overlaps`);
    ``matched`` (findings that are a labelled span of their category) and ``clauses_found`` (distinct
    labelled spans some finding is); ``categories_found`` (labelled (contract, category) pairs some
    finding is a span of) and ``categories_shown`` (of those, the pairs where such a finding is
    verified or among the findings to look at: the first screen or the key findings assert or ask
    about the clause, rather than only the document's full list)."""

    contracts: int = 0
    to_look_at: int = 0
    to_look_at_real: int = 0
    matched: int = 0
    clauses_found: int = 0
    categories_found: int = 0
    categories_shown: int = 0

    def scores(self) -> dict[str, float | int | None]:
        """``to_look_at_precision`` (share real), ``to_look_at_per_contract`` and
        ``findings_per_labelled_clause`` (matched findings / labelled spans found; 1.0 = one finding per
        clause), each None when undefined, plus the counts."""
        return {
            "triage_contracts": self.contracts,
            "to_look_at": self.to_look_at,
            "to_look_at_precision": self.to_look_at_real / self.to_look_at if self.to_look_at else None,
            "to_look_at_per_contract": self.to_look_at / self.contracts if self.contracts else None,
            "findings_per_labelled_clause": self.matched / self.clauses_found if self.clauses_found else None,
            "labelled_categories_shown": (
                self.categories_shown / self.categories_found if self.categories_found else None
            ),
        }


def tally_triage(findings: list[dict[str, Any]], spans: dict[ClauseType, list[str]], tally: TriageTally) -> None:
    """Add one reviewed contract's report findings (``report.json`` entries, already in triage with
    ``triage``/``verdict``/``risk``) to ``tally``, against its labelled ``spans`` by category."""
    from tasks.observe.report import needs_attention

    tally.contracts += 1
    found: set[tuple[ClauseType, int]] = set()
    categories: set[ClauseType] = set()
    shown: set[ClauseType] = set()
    for f in findings:
        try:
            cat = ClauseType(f["clause_type"])
        except ValueError:
            continue
        if cat is ClauseType.other:
            continue
        pieces = spans.get(cat, [])
        hits = [i for i, span in enumerate(pieces) if evidence_overlaps(f["evidence"], [span])]
        if needs_attention(f):
            tally.to_look_at += 1
            tally.to_look_at_real += bool(hits)
        if hits:
            tally.matched += 1
            found.update((cat, i) for i in hits)
            categories.add(cat)
            if f["verdict"] == "verified" or needs_attention(f):
                shown.add(cat)
    tally.clauses_found += len(found)
    tally.categories_found += len(categories)
    tally.categories_shown += len(shown)


def print_table(result: dict[str, Any], console: Console) -> None:
    """Print the per-category scores (lowest F1 first) and the headline figures of ``result``.

    The table fits an 80-column terminal: ``P``/``R``/``F1`` presence scores, ``n`` the contracts
    labelled with the category, ``overlap`` the evidence-overlap share, ``value`` the value
    accuracy; ``n/a`` where a category has no labelled contract (recall and F1 are undefined).
    """
    table = Table(
        title=(
            f"CUAD presence by category ({result['documents']} contracts, "
            f"{result.get('split', 'all')} split, {result['backend']})"
        ),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("category", no_wrap=True, min_width=34)
    for column, width in (("P", 4), ("R", 4), ("F1", 5), ("n", 3), ("overlap", 7), ("value", 5)):
        table.add_column(column, justify="right", no_wrap=True, min_width=width)
    rows = sorted(result["per_category"].items(), key=lambda kv: kv[1]["f1"])
    for name, s in rows:
        ov = s.get("evidence_overlap")
        va = result["value_accuracy"].get(name)
        none = not s["support"]
        predicted = s.get("tp", 0) + s.get("fp", 0)
        table.add_row(
            name,
            "n/a" if none and not predicted else f"{s['precision']:.2f}",
            "n/a" if none else f"{s['recall']:.2f}",
            "n/a" if none else f"{s['f1']:.3f}",
            str(s["support"]),
            "-" if ov is None else f"{ov:.2f}",
            "" if va is None else f"{va:.2f}",
        )
    console.print(table)
    terms = result.get("key_terms") or {}
    if terms:
        kt = Table(title="Key terms against the lawyers' answers (share of contracts)", box=box.SIMPLE_HEAD)
        kt.add_column("field", no_wrap=True)
        for column in ("right", "wrong", "missing"):
            kt.add_column(column, justify="right")
        for name, v in terms.items():
            if name != "mean_right" and v.get("n"):
                kt.add_row(name.replace("_", " "), f"{v['right']:.2f}", f"{v['wrong']:.2f}", f"{v['missing']:.2f}")
        console.print(kt)
        if terms.get("mean_right") is not None:
            console.print(f"Key terms: mean share right {terms['mean_right']:.3f} over {len(terms) - 1} fields")
    if result.get("not_reviewed"):
        console.print(
            f"[yellow]Not reviewed:[/] {result['documents_by_status']} (unreviewed contracts count as "
            f"'nothing found'; reasons in the JSON)"
        )
    console.print(
        f"presence macro-F1 [bold]{result['presence_macro_f1']:.4f}[/]   evidence overlap "
        f"{result['evidence_overlap_rate']:.3f} of {result['findings']} findings   router recall "
        f"[bold]{result['router_recall']:.4f}[/] ({result['spans_located']} spans located, "
        f"{result['spans_unlocated']} not)   routing rate [bold]{result['routing_rate']:.4f}[/]   "
        f"wall {result['wall_s']:.0f} s"
    )
    if "verified_findings" in result:
        console.print(
            f"verified findings {result['verified_findings']}: evidence overlap "
            f"[bold]{result['verified_evidence_overlap_rate']:.3f}[/]   presence macro-F1 over verified "
            f"[bold]{result['presence_macro_f1_verified']:.4f}[/]"
        )
    if result.get("to_look_at_per_contract") is not None:
        precision, per_clause = result["to_look_at_precision"], result["findings_per_labelled_clause"]
        console.print(
            f"to look at: [bold]{result['to_look_at_per_contract']:.1f}[/] per contract, "
            f"[bold]{precision:.3f}[/] of them a labelled clause of their category   "
            if precision is not None
            else f"to look at: {result['to_look_at_per_contract']:.1f} per contract   ",
            f"findings per labelled clause found [bold]{per_clause:.2f}[/]" if per_clause is not None else "",
        )
    if result.get("labelled_categories_shown") is not None:
        console.print(
            f"labelled clauses a finding quotes that are verified or to look at: "
            f"[bold]{result['labelled_categories_shown']:.3f}[/] of (contract, category) pairs"
        )
    if result.get("playbook_rules"):
        table = Table(title=f"Playbook {result['playbook']!r} against the lawyers' answers", box=box.SIMPLE)
        short = {"pass": "P", "deviation": "D", "unknown": "U", "None": "-"}
        for column in ("rule", "pairs", "agreement", "unknown", "skipped", "lawyers→docreview"):
            table.add_column(
                column, justify="left" if column in ("rule", "lawyers→docreview") else "right", overflow="fold"
            )
        for rule, t in result["playbook_rules"].items():
            pairs = (tuple(k.split("->")) + (v,) for k, v in sorted(t["confusion"].items()))
            table.add_row(
                rule,
                str(t["pairs"]),
                f"{t['agreement']:.3f}" if t["agreement"] is not None else "—",
                str(t["unknown"]),
                str(t["skipped"]),
                " ".join(f"{short.get(a, a)}→{short.get(b, b)} {n}" for a, b, n in pairs),
            )
        console.print("P pass, D deviation, U unknown")
        console.print(table)
        if result["playbook_agreement"] is not None:
            console.print(
                f"playbook agreement [bold]{result['playbook_agreement']:.3f}[/] over all (contract, rule) pairs"
            )
        for skipped in result.get("playbook_not_judged") or []:
            console.print(f"not judged by the playbook: {skipped['file_name']} ({skipped['why']})", markup=False)
    if result.get("spans_located_test"):
        console.print(
            f"router on the {result['spans_located_test']} spans of the test split's contracts: "
            f"recall [bold]{result['router_recall_test']:.4f}[/]   routing rate "
            f"[bold]{result['routing_rate_test']:.4f}[/]"
        )
