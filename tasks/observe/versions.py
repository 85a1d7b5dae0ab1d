"""What changed since the last version of a contract.

A contract is linked to its previous version (``document_versions``, :class:`schemas.tables.DocumentVersionRow`):
the one named with ``docreview review NEW --previous OLD``, else the latest contract seen earlier with
the same title and the same parties (:func:`identity`). :func:`compare_clauses` then says clause by
clause what changed between the two versions' findings — a category's passage ``added``, ``removed``
or ``reworded`` (its quote differs; the values in it before → after) — and :func:`playbook_moves`
how the playbook results moved (``pass`` → ``deviation``). The report shows both for each contract
with a previous version (:func:`tasks.observe.report.build_report`).

Amended filings (Form 10-K/A, 10-Q/A) are linked to the filing they amend the same way
(``linked_by`` ``amends``) and compared with the filing machinery (:mod:`tasks.observe.changes`).
"""

from __future__ import annotations

import re
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from rapidfuzz import fuzz
from sqlmodel import Session, col, select

from schemas.tables import ChunkRow, DocumentRow, DocumentVersionRow, FindingRow, RunDocumentRow, utcnow
from tasks.textnorm import match_form

#: Least similarity (rapidfuzz ``ratio`` of the normalised quotes, 0-100) for two passages of one
#: category to be the same clause reworded rather than one removed and another added.
REWORDED_AT = 60.0

_LEGAL = {
    "INC",
    "CO",
    "CORP",
    "CORPORATION",
    "COMPANY",
    "PLC",
    "THE",
    "LTD",
    "LLC",
    "LP",
    "LLP",
    "NV",
    "SA",
    "AG",
    "GMBH",
}


def title_key(title: str | None) -> str:
    """A title as matched: its words, upper case (``"Master Services Agreement"`` → ``"MASTER SERVICES AGREEMENT"``)."""
    return " ".join(re.findall(r"[A-Z0-9]+", (title or "").upper()))[:200]


def party_key(name: str) -> str:
    """A party's name as matched: upper case, punctuation and legal suffixes (Inc., LLC, Co., …) dropped."""
    return " ".join(w for w in re.findall(r"[A-Z0-9&]+", name.upper()) if w not in _LEGAL)


def parties_key(parties: list[str]) -> str:
    """The parties as matched: each :func:`party_key`, distinct, sorted, joined by ``|``."""
    return "|".join(sorted({k for k in (party_key(p) for p in parties) if k}))[:500]


def _standing(row: FindingRow) -> bool:
    return row.verdict in ("verified", "needs_review")


def identity(session: Session, sha256: str, prompt_version: str, model: str) -> tuple[str | None, list[str]]:
    """``(title, parties)`` of a reviewed contract: the title its Document Name finding states (else the
    first line of its text with a letter in it), the parties its Parties findings state (``party``
    values, ``;``-separated), from the review with ``prompt_version`` and ``model``."""
    rows = session.exec(
        select(FindingRow).where(
            FindingRow.sha256 == sha256, FindingRow.prompt_version == prompt_version, FindingRow.model == model
        )
    ).all()
    title = next(
        (
            str(r.values.get("name"))
            for r in rows
            if r.clause_type == "document_name" and _standing(r) and r.values.get("name")
        ),
        None,
    )
    if title is None:
        first = session.exec(
            select(ChunkRow.text).where(ChunkRow.sha256 == sha256).order_by(col(ChunkRow.chunk_index)).limit(1)
        ).first()
        title = next(
            (" ".join(line.split()) for line in (first or "").splitlines() if re.search(r"[A-Za-z]", line)), None
        )
    parties: list[str] = []
    for r in rows:
        if r.clause_type == "parties" and _standing(r):
            for p in str(r.values.get("party") or "").split(";"):
                if p.strip() and p.strip() not in parties:
                    parties.append(p.strip())
    return (title[:300] if title else None), parties


def previous_by_identity(session: Session, sha256: str, tkey: str, pkey: str) -> str | None:
    """The latest other document first seen before ``sha256`` with the same title and parties keys
    (both non-empty), or None."""
    if not tkey or not pkey:
        return None
    mine = session.exec(select(DocumentRow.first_seen_at).where(DocumentRow.sha256 == sha256)).first()
    rows = session.exec(
        select(DocumentVersionRow.sha256, DocumentRow.first_seen_at)
        .join(DocumentRow, col(DocumentRow.sha256) == DocumentVersionRow.sha256)
        .where(
            DocumentVersionRow.title_key == tkey,
            DocumentVersionRow.parties_key == pkey,
            DocumentVersionRow.sha256 != sha256,
        )
    ).all()
    earlier = [(seen, sha) for sha, seen in rows if mine is None or seen <= mine]
    return max(earlier)[1] if earlier else None


@task(name="link-versions", cache_policy=NO_CACHE)
def link_versions(
    database_url: str, run_id: str, prompt_version: str, model: str, named_previous: str | None = None
) -> dict[str, str | None]:
    """Prefect task: record the title and parties of every contract the run reviewed and link each to
    its previous version (``document_versions``): ``named_previous`` (a sha256, ``docreview review
    --previous``) for the run's contract, else the latest earlier contract with the same title and
    parties. A contract's own row is kept when it is named by a later run. Returns ``{sha256:
    previous sha256 or None}``."""
    from schemas.tables import DocumentProfileRow
    from tasks.store.persist import get_engine

    out: dict[str, str | None] = {}
    with Session(get_engine(database_url)) as session:
        shas = session.exec(
            select(RunDocumentRow.sha256)
            .outerjoin(DocumentProfileRow, col(DocumentProfileRow.sha256) == RunDocumentRow.sha256)
            .where(RunDocumentRow.run_id == run_id, RunDocumentRow.status == "reviewed")
            .where((col(DocumentProfileRow.profile).is_(None)) | (DocumentProfileRow.profile == "contract"))
        ).all()
        for sha in sorted({s for s in shas if s}):
            title, parties = identity(session, sha, prompt_version, model)
            row = session.get(DocumentVersionRow, sha) or DocumentVersionRow(sha256=sha)
            row.title, row.title_key = title, title_key(title)
            row.parties, row.parties_key = parties, parties_key(parties)
            if named_previous and named_previous != sha:
                row.previous_sha256, row.linked_by = named_previous, "named"
            elif row.linked_by != "named":
                found = previous_by_identity(session, sha, row.title_key, row.parties_key)
                row.previous_sha256, row.linked_by = found, ("title and parties" if found else None)
            row.updated_at = utcnow()
            session.add(row)
            out[sha] = row.previous_sha256
        session.commit()
    return out


def load_links(session: Session, shas: list[str]) -> dict[str, DocumentVersionRow]:
    """``{sha256: row}`` of the given documents that have a ``document_versions`` row."""
    if not shas:
        return {}
    return {
        r.sha256: r
        for r in session.exec(select(DocumentVersionRow).where(col(DocumentVersionRow.sha256).in_(shas))).all()
    }


def _quote(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def value_changes(before: str, after: str) -> list[dict[str, str]]:
    """The typed values (:func:`tasks.check.values.extract_values`: money, durations, dates,
    percentages) that differ between two quotes: ``[{kind, before, after}]`` (``;``-joined as printed,
    ``""`` when a side has none of that kind)."""
    from tasks.check.values import Kind, extract_values

    def by_kind(text: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for v in extract_values(text):
            if v.kind is not Kind.redacted:
                out.setdefault(v.kind.value, []).append(" ".join(v.raw.split()))
        return out

    old, new = by_kind(before), by_kind(after)
    changes = []
    for kind in sorted(set(old) | set(new)):
        if old.get(kind, []) != new.get(kind, []):
            changes.append(
                {"kind": kind, "before": "; ".join(old.get(kind, [])), "after": "; ".join(new.get(kind, []))}
            )
    return changes


def compare_clauses(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Clause by clause, what changed from the previous version's findings (``before``) to this
    version's (``after``); both lists of report findings that stand (not rejected, not dismissed).

    Per category: a passage whose normalised quote is in both versions is unchanged (not listed);
    the others are paired, most similar first, when their similarity is at least
    :data:`REWORDED_AT` — ``reworded``, with ``values`` the typed values that changed
    (:func:`value_changes`) — and the rest are ``added`` (only in this version) or ``removed``.
    Each change: ``{kind, category, clause_label, before, after, values, before_id, after_id,
    locator, similarity}``; ordered by category label, then kind."""
    cats = sorted({f["clause_type"] for f in before} | {f["clause_type"] for f in after})
    out: list[dict[str, Any]] = []
    for cat in cats:
        old = [f for f in before if f["clause_type"] == cat]
        new = [f for f in after if f["clause_type"] == cat]
        label = (new or old)[0]["clause_label"]
        norm = {id(f): match_form(str(f.get("evidence") or ""))[0] for f in old + new}
        same_old = {norm[id(f)] for f in old}
        same_new = {norm[id(f)] for f in new}
        old = [f for f in old if norm[id(f)] not in same_new]
        new = [f for f in new if norm[id(f)] not in same_old]
        pairs = sorted(
            ((fuzz.ratio(norm[id(a)], norm[id(b)]), i, j) for i, a in enumerate(old) for j, b in enumerate(new)),
            reverse=True,
        )
        used_old: set[int] = set()
        used_new: set[int] = set()
        for score, i, j in pairs:
            if score < REWORDED_AT or i in used_old or j in used_new:
                continue
            used_old.add(i)
            used_new.add(j)
            a, b = old[i], new[j]
            out.append(
                dict(
                    kind="reworded",
                    category=cat,
                    clause_label=label,
                    before=_quote(a["evidence"]),
                    after=_quote(b["evidence"]),
                    values=value_changes(str(a["evidence"]), str(b["evidence"])),
                    before_id=a["id"],
                    after_id=b["id"],
                    locator=b.get("locator"),
                    similarity=round(score / 100, 3),
                )
            )
        for j, b in enumerate(new):
            if j not in used_new:
                out.append(
                    dict(
                        kind="added",
                        category=cat,
                        clause_label=label,
                        before=None,
                        after=_quote(b["evidence"]),
                        values=[],
                        before_id=None,
                        after_id=b["id"],
                        locator=b.get("locator"),
                        similarity=None,
                    )
                )
        for i, a in enumerate(old):
            if i not in used_old:
                out.append(
                    dict(
                        kind="removed",
                        category=cat,
                        clause_label=label,
                        before=_quote(a["evidence"]),
                        after=None,
                        values=[],
                        before_id=a["id"],
                        after_id=None,
                        locator=a.get("locator"),
                        similarity=None,
                    )
                )
    order = {"reworded": 0, "added": 1, "removed": 2}
    return sorted(out, key=lambda c: (c["clause_label"], order[c["kind"]]))


def playbook_moves(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """How each playbook rule's status moved from the previous version to this one: ``[{rule, clause,
    severity, before, after, reason}]`` (``reason``: this version's), rules whose status changed
    only, those that now deviate first; a rule missing on one side has the status ``None`` there."""
    old = {r["rule"]: r for r in before}
    new = {r["rule"]: r for r in after}
    moves = []
    for rule in sorted(set(old) | set(new)):
        a, b = old.get(rule), new.get(rule)
        was, now = (a or {}).get("status"), (b or {}).get("status")
        if was == now:
            continue
        ref = b or a or {}
        moves.append(
            dict(
                rule=rule,
                clause=ref.get("clause"),
                severity=ref.get("severity"),
                before=was,
                after=now,
                reason=(b or {}).get("reason"),
            )
        )
    return sorted(moves, key=lambda m: (m["after"] != "deviation", m["rule"]))
