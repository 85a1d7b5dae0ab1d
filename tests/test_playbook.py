"""The team's playbook: loading with errors that name the rule, each expectation on documents,
and a run over the generated samples whose generator knows the true values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from schemas.taxonomy import ClauseType, label
from tasks.check.playbook import (
    PlaybookError,
    evaluate_document,
    governing_jurisdiction,
    load_playbook,
)
from tasks.check.support import read_as
from tasks.observe.events import PLAYBOOK_DEVIATION, document_events

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_PLAYBOOK = ROOT / "deployments" / "playbook.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "playbook.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "rules, expected",
    [
        (
            "  - {id: law, clause: governing_lawz, expect: present}",
            "rule 'law' (rules[1]), field clause: unknown clause 'governing_lawz'",
        ),
        ("  - {id: cap, clause: cap_on_liability, expect: required}", "rule 'cap' (rules[1]), field expect"),
        (
            "  - {id: notice, clause: notice_period_to_terminate_renewal, expect: max_duration, value: soon}",
            "rule 'notice' (rules[1]), field value: cannot read 'soon' as a duration",
        ),
        (
            "  - {id: notice, clause: notice_period_to_terminate_renewal, expect: max_duration}",
            "rule 'notice' (rules[1]): expect: max_duration needs a `value`",
        ),
        (
            "  - {id: law, clause: governing_law, expect: allowed_values}",
            "rule 'law' (rules[1]): expect: allowed_values needs",
        ),
        (
            "  - {id: a, clause: non_compete, expect: absent}\n  - {id: a, clause: exclusivity, expect: absent}",
            "rule id 'a' is used twice",
        ),
        (
            "  - id: cap\n    clause: cap_on_liability\n    expect: present\n    expect: absent",
            "not valid YAML: line 6, column 5: the key 'expect' is given twice",
        ),
        (
            "  - {id: nc, clause: non_compete, expect: absent, if_absent: deviation}",
            "rule 'nc' (rules[1]), field if_absent: an `absent` rule cannot require its clause",
        ),
        (
            "  - {id: notice, clause: notice_period_to_terminate_renewal, expect: max_duration, value: -5 days}",
            "cannot read '-5 days' as a duration",
        ),
        (
            "  - {id: law, clause: governing_law, expect: allowed_values, values: [NJ, ny law]}",
            "field values: 'ny law' name(s) no jurisdiction",
        ),
        (
            "  - {id: a, clause: nothing, expect: present}\n  - {id: b, clause: non_compete, expect: never}",
            "rule 'a' (rules[1]), field clause: unknown clause 'nothing'",
        ),
    ],
)
def test_an_invalid_playbook_is_rejected_naming_the_rule(tmp_path, rules, expected):
    path = write(tmp_path, f"playbook: p\nrules:\n{rules}\n")
    with pytest.raises(PlaybookError) as raised:
        load_playbook(path)
    assert expected in str(raised.value), str(raised.value)


def test_every_problem_is_listed_and_a_file_that_is_not_text_is_refused(tmp_path):
    path = write(
        tmp_path,
        "playbook: p\nrules:\n  - {id: a, clause: nothing, expect: present}\n"
        "  - {id: b, clause: non_compete, expect: never}\n",
    )
    with pytest.raises(PlaybookError) as raised:
        load_playbook(path)
    assert "rule 'a' (rules[1])" in str(raised.value) and "rule 'b' (rules[2]), field expect" in str(raised.value)
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(PlaybookError, match="not UTF-8 text"):
        load_playbook(path)


def test_the_sample_playbook_loads_with_its_limits_read():
    loaded = load_playbook(SAMPLE_PLAYBOOK)
    assert loaded.name == "standard-positions" and loaded.playbook.party == "Acme Corp"
    assert [r.id for r in loaded.playbook.rules] == [
        "governing-law",
        "liability-cap",
        "no-uncapped-liability",
        "renewal-notice",
        "no-non-compete",
    ]
    assert loaded.limits["renewal-notice"].days == 90


def test_an_invalid_playbook_is_exit_2_before_the_run(tmp_path):
    path = write(
        tmp_path,
        "playbook: p\nrules:\n  - {id: renewal-notice, clause: notice_period_to_terminate_renewal, "
        "expect: max_duration, value: 90 dayz}\n",
    )
    (tmp_path / "inbox").mkdir()
    cli = str(Path(sys.executable).parent / "docreview")
    for args, env in (([" --playbook", str(path)], {}), ([], {"DOCREVIEW_PLAYBOOK": str(path)})):
        done = subprocess.run(
            [
                cli,
                "review",
                str(tmp_path / "inbox"),
                "--out",
                str(tmp_path / "out"),
                "--db",
                f"sqlite:///{tmp_path}/x.db",
                *[a.strip() for a in args],
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env},
        )
        assert done.returncode == 2, done.stdout + done.stderr
        message = " ".join(done.stderr.split())
        assert "rule 'renewal-notice'" in message and "cannot read '90 dayz'" in message, message
        assert ("--playbook" if args else "DOCREVIEW_PLAYBOOK") in message
        assert "Traceback" not in done.stderr and not (tmp_path / "x.db").exists()


def finding(
    fid: int,
    clause: str,
    evidence: str,
    verdict: str = "verified",
    support: str = "verified",
    values: dict | None = None,
    page: int = 2,
    decision: str | None = None,
) -> dict:
    f = {
        "id": fid,
        "clause_type": clause,
        "verdict": verdict,
        "evidence": evidence,
        "page": page,
        "values": values or {},
        "checks": [{"name": "grounding", "verdict": "verified"}, {"name": "support", "verdict": support}],
    }
    if decision:
        f["decision"] = {"decision": decision}
    return f


def statuses(playbook, findings: list[dict], status: str = "reviewed") -> dict[str, tuple[str, list[int], str]]:
    doc = {"status": status, "findings": findings, "absences": []}
    return {r["rule"]: (r["status"], r["finding_ids"], r["reason"]) for r in evaluate_document(playbook, doc)}


@pytest.fixture(scope="module")
def sample_playbook():
    return load_playbook(SAMPLE_PLAYBOOK)


def test_each_expectation_on_a_document(sample_playbook):
    got = statuses(
        sample_playbook,
        [
            finding(
                1,
                "governing_law",
                "This Agreement is governed by the laws of the State of New York, without regard "
                "to its conflict of laws rules.",
                values={"jurisdiction": "State of New York"},
            ),
            finding(2, "cap_on_liability", "In no event shall either party's liability exceed $1,000,000."),
            finding(
                3,
                "notice_period_to_terminate_renewal",
                "renews for successive one (1) year terms unless either "
                "party gives notice of non-renewal at least one hundred twenty (120) days prior to the end of the term",
            ),
            finding(
                4, "non_compete", "shall not compete", verdict="unsupported"
            ),  # rejected by the fact-check: ignored
        ],
    )
    assert got["governing-law"][:2] == ("pass", [1])
    assert got["liability-cap"][:2] == ("pass", [2])
    assert got["no-uncapped-liability"][0] == "pass"  # nothing found: nothing to check
    assert got["renewal-notice"][:2] == ("deviation", [3])
    assert "one hundred twenty (120) days" in got["renewal-notice"][2] and "90 days" in got["renewal-notice"][2]
    assert got["no-non-compete"][0] == "pass"


def test_deviations_unknowns_and_decisions(sample_playbook):
    got = statuses(
        sample_playbook,
        [
            finding(1, "governing_law", "governed by and construed in accordance with California law", page=9),
            finding(
                3, "notice_period_to_terminate_renewal", "4.3 Survival.", verdict="needs_review", support="needs_review"
            ),
            finding(5, "uncapped_liability", "liability for fraud shall be unlimited"),
            finding(6, "non_compete", "shall not sell competing products", decision="rejected"),  # a reviewer said no
        ],
    )
    assert "finding(s) 6 rejected by a reviewer" in got["no-non-compete"][2]
    assert got["governing-law"][:2] == ("deviation", [1])
    assert got["governing-law"][2] == "California, not one of New York, Delaware (page 9)"
    assert got["liability-cap"][0] == "deviation" and "no Cap On Liability clause" in got["liability-cap"][2]
    assert got["no-uncapped-liability"][:2] == ("deviation", [5])
    assert got["renewal-notice"][:2] == ("unknown", [3])
    assert "did not confirm" in got["renewal-notice"][2]
    assert got["no-non-compete"][0] == "pass"
    assert statuses(sample_playbook, [], status="failed") == {}  # nothing reviewed, nothing judged
    filing = {"status": "reviewed", "profile": "filing", "findings": [], "absences": []}
    assert evaluate_document(sample_playbook, filing) == []  # a contract playbook does not judge an SEC filing


def test_a_quote_the_fact_check_dismissed_does_not_show_a_clause_the_playbook_forbids(sample_playbook):
    """A high-severity "Uncapped Liability" deviation resting on a quote the fact-check dismissed (the
    support model is confident it is no such clause) is no deviation: the clause counts as not found, and
    the reason names the dismissed finding. A reviewer's approval brings it back; a rule that reads its
    clause's value stays unknown on a dismissed heading (the clause it reads may be there, missed)."""
    reason = "dismissed by the fact-check: quote reads as Cap On Liability, not Uncapped Liability (support 0.01)"

    def dismissed(fid: int, clause: str, quote: str, decision: str | None = None) -> dict:
        f = finding(fid, clause, quote, verdict="needs_review", support="needs_review", decision=decision)
        f["checks"][1]["reason"] = reason
        return f

    carve_out = "IN NO EVENT SHALL EITHER PARTY BE LIABLE FOR CONSEQUENTIAL DAMAGES"
    got = statuses(sample_playbook, [dismissed(5, "uncapped_liability", carve_out)])
    assert got["no-uncapped-liability"][:2] == ("pass", [])
    assert "finding(s) 5 dismissed by the fact-check" in got["no-uncapped-liability"][2]
    approved = statuses(sample_playbook, [dismissed(5, "uncapped_liability", carve_out, decision="approve")])
    assert approved["no-uncapped-liability"][:2] == ("deviation", [5])
    heading = dismissed(3, "notice_period_to_terminate_renewal", "4.3 Survival.")
    heading["checks"][1]["reason"] = "dismissed by the fact-check: quote is a heading only: no clause text under it"
    assert statuses(sample_playbook, [heading])["renewal-notice"][:2] == ("unknown", [3])


def test_a_finding_a_reviewer_approved_counts_as_confirmed_evidence(sample_playbook):
    """The fact-check doubted the quote (support not verified), a reviewer approved it: the rule judges it
    (the 120 days break the 90-day limit) instead of waiting for a reviewer again."""
    notice = (
        "renews for successive one (1) year terms unless either party gives notice of non-renewal at least "
        "one hundred twenty (120) days prior to the end of the term"
    )
    doubted = statuses(
        sample_playbook,
        [finding(3, "notice_period_to_terminate_renewal", notice, verdict="needs_review", support="needs_review")],
    )
    approved = statuses(
        sample_playbook,
        [
            finding(
                3,
                "notice_period_to_terminate_renewal",
                notice,
                verdict="needs_review",
                support="needs_review",
                decision="approve",
            )
        ],
    )
    assert doubted["renewal-notice"][0] == "deviation" and "did not confirm" in doubted["renewal-notice"][2]
    assert (
        approved["renewal-notice"][:2] == ("deviation", [3]) and "did not confirm" not in approved["renewal-notice"][2]
    )
    short = notice.replace("one hundred twenty (120)", "sixty (60)")
    assert (
        statuses(
            sample_playbook,
            [finding(3, "notice_period_to_terminate_renewal", short, verdict="needs_review", support="needs_review")],
        )["renewal-notice"][0]
        == "unknown"
    )
    assert (
        statuses(
            sample_playbook,
            [
                finding(
                    3,
                    "notice_period_to_terminate_renewal",
                    short,
                    verdict="contradicted",
                    support="needs_review",
                    decision="approve",
                )
            ],
        )["renewal-notice"][0]
        == "pass"
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("governed by the laws of the State of Delaware and the federal laws of the United States", "Delaware"),
        ("This Agreement shall be governed by NY law.", "New York"),
        ("the laws of England and Wales shall govern", "England"),
        (
            "construed under the laws of the Province of Ontario and the federal laws of Canada applicable therein",
            "Ontario",
        ),
        (
            "The courts of California shall have jurisdiction; the laws of the Commonwealth of Massachusetts govern.",
            "Massachusetts",
        ),
        ("governed by the laws of the United States", "United States"),
        ("governed by the laws of the State of New\r\nYork, without regard to", "New York"),  # across a line
        ("the laws of the District of\nColumbia", "District of Columbia"),
        ("no jurisdiction here", None),
        ("This Agreement shall be governed by and construed in accordance with Swiss law.", "Switzerland"),
        ("is governed by the regulations of Colombian private law", "Colombia"),  # an adjective before "law"
        ("construed in accordance with the laws of Papua New Guinea", "Papua New Guinea"),
        ("English", "England"),  # a finding's value that is the adjective alone
        ("in the English language, which shall prevail", None),  # an adjective not before "law"
    ],
)
def test_governing_jurisdiction(text, expected):
    assert governing_jurisdiction(text) == expected


def test_a_redaction_mark_beside_a_stated_jurisdiction_hides_nothing_the_rule_reads(sample_playbook):
    quote = "Facsimile: +55-5572-045 E-Mail: [***] 15. Governing Law 15.1 the laws of the State of New York apply."
    got = statuses(sample_playbook, [finding(1, "governing_law", quote, values={"jurisdiction": "New York"})])
    assert got["governing-law"][:2] == ("pass", [1])
    hidden = "This Agreement shall be governed by the laws of [***]."
    got = statuses(sample_playbook, [finding(1, "governing_law", hidden, values={"jurisdiction": "[***]"})])
    assert got["governing-law"][0] == "unknown" and "redacted" in got["governing-law"][2]


def test_a_governing_law_value_the_reader_does_not_know_falls_back_to_the_quote(sample_playbook):
    quote = "This Agreement is governed by the laws of Papua New Guinea."
    got = statuses(sample_playbook, [finding(1, "governing_law", quote, values={"jurisdiction": "PNG"})])
    assert got["governing-law"][:2] == ("deviation", [1]) and "Papua New Guinea" in got["governing-law"][2]


def test_amount_limits_compare_within_one_currency(tmp_path):
    playbook = load_playbook(
        write(
            tmp_path,
            "playbook: p\nrules:\n"
            "  - {id: cap-floor, clause: cap_on_liability, expect: min_amount, value: 'USD 500,000', severity: high}\n",
        )
    )
    assert statuses(playbook, [finding(1, "cap_on_liability", "shall not exceed $1,000,000")])["cap-floor"][0] == "pass"
    low = statuses(playbook, [finding(1, "cap_on_liability", "shall not exceed $100,000")])["cap-floor"]
    assert low[0] == "deviation" and "$100,000" in low[2]
    euro = statuses(playbook, [finding(1, "cap_on_liability", "shall not exceed EUR 2,000,000")])["cap-floor"]
    assert euro[0] == "unknown" and "EUR" in euro[2]
    fees = statuses(playbook, [finding(1, "cap_on_liability", "shall not exceed the fees paid in the prior 12 months")])
    assert fees["cap-floor"][0] == "unknown" and "no amount could be read" in fees["cap-floor"][2]


def test_a_high_severity_deviation_is_a_prefect_event():
    report = {
        "run": {"id": "run-1", "flow_run_id": None, "playbook": {"name": "standard-positions"}},
        "documents": [
            {
                "source": "s3://bucket/a.pdf",
                "file_name": "a.pdf",
                "sha256": "ab" * 32,
                "status": "reviewed",
                "findings": [],
                "playbook": [
                    {
                        "rule": "liability-cap",
                        "clause": "cap_on_liability",
                        "expect": "present",
                        "status": "deviation",
                        "severity": "high",
                        "reason": "no cap",
                        "finding_ids": [],
                    },
                    {
                        "rule": "governing-law",
                        "clause": "governing_law",
                        "expect": "allowed_values",
                        "status": "deviation",
                        "severity": "medium",
                        "reason": "Texas",
                        "finding_ids": [4],
                    },
                ],
            }
        ],
    }
    events = [e for e in document_events(report) if e["event"] == PLAYBOOK_DEVIATION]
    assert len(events) == 1
    assert events[0]["payload"]["rule"] == "liability-cap" and events[0]["payload"]["playbook"] == "standard-positions"
    assert events[0]["resource"]["prefect.resource.id"] == "docreview.document.s3://bucket/a.pdf"


def _text(pdf: Path) -> str:
    doc = pdfium.PdfDocument(str(pdf))
    try:
        return " ".join(" ".join(doc[i].get_textpage().get_text_range().split()) for i in range(len(doc)))
    finally:
        doc.close()


def expected_statuses(truth, pdf: Path) -> dict[str, str]:
    """The sample playbook's statuses from what the generator put in the contract.

    The generator's "Exclusion of Damages" boilerplate ("EXCEPT FOR A PARTY'S BREACH OF ITS
    CONFIDENTIALITY OBLIGATIONS, NEITHER PARTY SHALL BE LIABLE … FOR ANY … CONSEQUENTIAL …
    DAMAGES") is an uncapped liability by CUAD's definition ("includes uncapped liability for a
    particular type of breach such as … breach of confidentiality obligation"), so it counts."""
    clauses = set(truth.clauses)
    carve_out = "EXCEPT FOR A PARTY'S BREACH OF ITS CONFIDENTIALITY OBLIGATIONS" in _text(pdf)
    days = int(truth.renewal_notice.split("(")[1].split(")")[0])
    return {
        "governing-law": "pass" if truth.governing_law in ("New York", "Delaware") else "deviation",
        "liability-cap": "pass" if "cap_on_liability" in clauses else "deviation",
        "no-uncapped-liability": "deviation" if "uncapped_liability" in clauses or carve_out else "pass",
        "renewal-notice": "pass" if days <= 90 else "deviation",
        "no-non-compete": "deviation" if "non_compete" in clauses else "pass",
    }


def review_with_the_sample_playbook(inbox: Path, out: Path, db_url: str) -> tuple[dict, dict]:
    """Review ``inbox`` with the rules backend and the sample playbook: ``(the flow's result, report.json)``."""
    from flows.review import review_documents
    from tasks.store.persist import dispose_engines

    try:
        result = review_documents(
            source=str(inbox), out_dir=str(out), database_url=db_url, backend="rules", playbook=str(SAMPLE_PLAYBOOK)
        )
    finally:
        dispose_engines()
    return result, json.loads((out / "report.json").read_text())


@pytest.mark.usefixtures("prefect_harness")
def test_a_run_over_the_samples_agrees_with_the_generator(tmp_path, db_url):
    from docreview_testing.samples import generate_samples

    inbox = tmp_path / "inbox"
    truth = {t.file_name: t for t in generate_samples(inbox, count=8)}
    result, report = review_with_the_sample_playbook(inbox, tmp_path / "out", db_url)
    assert report["run"]["playbook"] == {"name": "standard-positions", "source": str(SAMPLE_PLAYBOOK)}
    seen: dict[str, int] = {}
    agree = unknown = 0
    for doc in report["documents"]:
        expected = expected_statuses(truth[doc["file_name"]], inbox / doc["file_name"])
        got = {r["rule"]: r for r in doc["playbook"]}
        assert set(got) == set(expected)
        for rule, want in expected.items():
            r = got[rule]
            seen[r["status"]] = seen.get(r["status"], 0) + 1
            if r["status"] == "unknown":  # the review could not tell: it says why and names the findings
                unknown += 1
                assert r["finding_ids"] and "did not confirm" in r["reason"], r
                continue
            assert r["status"] == want, (doc["file_name"], r)
            agree += 1
            ids = {f["id"] for f in doc["findings"]}
            assert set(r["finding_ids"]) <= ids
            if r["status"] == "pass" and r["expect"] in ("present", "allowed_values", "max_duration"):
                assert r["finding_ids"], r  # a pass that rests on a clause names it
        statuses_in_order = [r["status"] for r in doc["playbook"]]
        assert statuses_in_order == sorted(statuses_in_order, key={"deviation": 0, "unknown": 1, "pass": 2}.get)
    assert seen.get("pass") and seen.get("deviation"), seen
    assert unknown <= 2, seen  # 40 (document, rule) pairs; unknowns only where a clause's quote was not confirmed
    m = result["metrics"]
    assert m["playbook_deviations"] == seen["deviation"] and m["playbook_pass"] == seen["pass"]
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Deviations from the playbook “standard-positions”" in html
    # A missing non-compete is what the no-non-compete rule wants: said so, not listed as missing.
    wanted = [(doc, a) for doc in report["documents"] for a in doc["absences"] if a.get("wanted_by")]
    assert any(a["wanted_by"] == "no-non-compete" for _, a in wanted), wanted
    for doc, a in wanted:
        assert any(
            r["rule"] == a["wanted_by"]
            and r["clause"] == a["clause_type"]
            and r["expect"] == "absent"
            and r["status"] == "pass"
            for r in doc["playbook"]
        ), a
    assert "Not found, as the playbook wants:</b>" in html and "(rule no-non-compete, <code>A" in html
    missing_table = (
        html.split("Missing high-risk clauses", 1)[1].split("</table>", 1)[0]
        if "Missing high-risk clauses" in html
        else ""
    )
    assert all(f"<code>{a['id']}</code>" not in missing_table for _, a in wanted)


def test_an_absence_a_passing_rule_wants_is_marked():
    from tasks.observe.report import wanted_absent

    doc = {
        "playbook": [
            {"rule": "no-non-compete", "clause": "non_compete", "expect": "absent", "status": "pass"},
            {"rule": "cap", "clause": "cap_on_liability", "expect": "present", "status": "deviation"},
        ],
        "absences": [{"clause_type": "non_compete"}, {"clause_type": "cap_on_liability"}],
    }
    wanted_absent(doc)
    assert doc["absences"] == [
        {"clause_type": "non_compete", "wanted_by": "no-non-compete"},
        {"clause_type": "cap_on_liability"},
    ]


@pytest.mark.usefixtures("prefect_harness")
def test_the_playbook_party_reaches_the_model_backend_and_keys_its_reviews(stub_env, tmp_path, db_url):
    """With a playbook naming a party, the anthropic backend's requests say whose side the review
    is for, and the reviews are stored under a prompt version of their own: a run without the
    party reviews the document again instead of reusing them."""
    from sqlmodel import Session, select

    from docreview_testing.samples import generate_samples
    from flows.review import review_documents
    from schemas.findings import PROMPT_VERSION
    from schemas.tables import FindingRow, RunRow
    from tasks.store.persist import dispose_engines, get_engine

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=1)
    try:
        first = review_documents(
            source=str(inbox),
            out_dir=str(tmp_path / "out"),
            database_url=db_url,
            backend="anthropic",
            playbook=str(SAMPLE_PLAYBOOK),
        )
        second = review_documents(
            source=str(inbox), out_dir=str(tmp_path / "out"), database_url=db_url, backend="anthropic"
        )
        with Session(get_engine(db_url)) as s:
            versions = {r.id: r.prompt_version for r in s.exec(select(RunRow)).all()}
            stored = {f.prompt_version for f in s.exec(select(FindingRow)).all()}
    finally:
        dispose_engines()
    systems = list(stub_env.stub.system_prompts)
    assert any("You review for Acme Corp." in s for s in systems) and any("You review for" not in s for s in systems)
    assert (
        versions[first["run_id"]].startswith(f"{PROMPT_VERSION}+party-")
        and versions[second["run_id"]] == PROMPT_VERSION
    )
    assert stored == {versions[first["run_id"]], PROMPT_VERSION}
    assert second["metrics"]["documents_skipped"] == 0  # not reused across parties
    # The calls went to the local test double, not the Anthropic API: the result and the report say so.
    assert first["endpoint"] == stub_env.url
    assert json.loads((tmp_path / "out" / "report.json").read_text())["run"]["endpoint"] == stub_env.url
    assert (
        f"Model calls went to <code>{stub_env.url}</code>, not the vendor"
        in (tmp_path / "out" / "report.html").read_text()
    )


def test_a_clause_the_support_model_doubts_still_counts_but_says_so(sample_playbook, tmp_path):
    """A grounded quote that is no heading and no negation carries the result even when the
    support model's category score doubted it; the reason says a reviewer confirms. A heading or
    a negation of the clause does not."""
    doubted = finding(
        7,
        "non_compete",
        "For two (2) years after termination you may not own, manage or engage in a "
        "competing business in the Territory.",
        verdict="needs_review",
        support="needs_review",
    )
    got = statuses(sample_playbook, [doubted])["no-non-compete"]
    assert got[:2] == ("deviation", [7]) and "did not confirm the quote" in got[2]
    heading = finding(8, "non_compete", "12.4 Covenant Not to Compete.", verdict="needs_review", support="needs_review")
    assert statuses(sample_playbook, [heading])["no-non-compete"][0] == "unknown"
    ungrounded = dict(
        doubted,
        checks=[{"name": "grounding", "verdict": "needs_review"}, {"name": "support", "verdict": "needs_review"}],
    )
    assert statuses(sample_playbook, [ungrounded])["no-non-compete"][0] == "unknown"
    insurance = load_playbook(
        write(tmp_path, "playbook: p\nrules:\n  - {id: insured, clause: insurance, expect: present}\n")
    )
    doubted_cover = finding(
        10,
        "insurance",
        "Supplier shall maintain general liability insurance of USD 2,000,000.",
        verdict="needs_review",
        support="needs_review",
    )
    unconfirmed = statuses(insurance, [doubted_cover])["insured"]  # never a pass on a quote nobody confirmed
    assert unconfirmed[:2] == ("unknown", [10]) and "did not confirm" in unconfirmed[2]
    negated = finding(
        9,
        "insurance",
        "Supplier shall not be required to maintain any insurance.",
        verdict="needs_review",
        support="needs_review",
    )
    assert statuses(insurance, [negated])["insured"][:2] == ("unknown", [9])


@pytest.mark.parametrize(
    "rule, answer, expected",
    [
        ("governing-law", "New York", "pass"),
        ("governing-law", "Ontario, Canada", "deviation"),
        ("governing-law", "", "deviation"),  # no governing-law clause: the required value is missing
        ("liability-cap", "Yes", "pass"),
        ("liability-cap", "No", "deviation"),
        ("no-uncapped-liability", "Yes", "deviation"),
        ("no-non-compete", "No", "pass"),
        ("renewal-notice", "90 days", "pass"),
        ("renewal-notice", "3 months", "pass"),
        ("renewal-notice", "180 days / 6 months", "deviation"),
        ("renewal-notice", "", "pass"),  # no notice period: nothing exceeds 90 days
        ("renewal-notice", "reasonable notice", None),  # unreadable: left out of the score
        ("liability-cap", "Maybe", None),
    ],
)
def test_statuses_derived_from_the_lawyers_answers(sample_playbook, rule, answer, expected):
    from tasks.observe.evaluate import lawyer_playbook_status

    r = next(x for x in sample_playbook.playbook.rules if x.id == rule)
    assert lawyer_playbook_status(r, sample_playbook.limits.get(rule), answer) == expected


def read_as_finding(fid: int, clause: str, evidence: str, reads_as: str, decision: str | None = None) -> dict:
    """A grounded finding claimed as ``clause`` whose support check reads it as ``reads_as`` (a label)."""
    f = finding(fid, clause, evidence, verdict="needs_review", support="needs_review", page=6, decision=decision)
    f["checks"][1]["reason"] = (
        f"dismissed by the fact-check: quote reads as {reads_as}, not {label(clause)} (support 0.02) — 0.0151 is "
        "below the dismissal bound 0.03"
    )
    return f


# Eton Pharmaceuticals' development agreement (CUAD), page 6: the lawyers' Non-Compete span, which the
# rules backend claimed as Expiration Date ("During the Term of this Agreement, and for a period of …").
ETON_NON_COMPETE = (
    "During the Term of this Agreement, and for a period of two (2) years thereafter, Aucta shall not research, "
    "develop, manufacture, file, sell, market, or distribute more than two products containing the active "
    "ingredient Lamotrigine; nor will Aucta directly or indirectly assist any other Person or entity in carrying "
    "or any such activities."
)


def test_a_clause_claimed_under_another_category_counts_for_its_rule(sample_playbook):
    assert read_as("quote reads as Non-Compete, not Expiration Date (support 0.02)") is ClauseType.non_compete
    assert read_as("quote reads as no CUAD clause, not Expiration Date (support 0.02)") is None
    assert read_as("quote reads as Non-Compete (support 0.92)") is None  # its own category: no other reading

    got = statuses(sample_playbook, [read_as_finding(7, "expiration_date", ETON_NON_COMPETE, "Non-Compete")])
    status, ids, reason = got["no-non-compete"]
    assert (status, ids) == ("deviation", [7])
    assert "no finding claims Non-Compete" in reason and "claimed as Expiration Date" in reason
    assert reason.endswith("a reviewer confirms")
    # The reading counts for its own clause only: no cap is found, none is read.
    assert got["liability-cap"][0] == "deviation" and got["liability-cap"][1] == []

    # A reviewer who rejects the finding takes the reading away with it.
    rejected = [read_as_finding(7, "expiration_date", ETON_NON_COMPETE, "Non-Compete", decision="reject")]
    assert statuses(sample_playbook, rejected)["no-non-compete"][:2] == ("pass", [])

    # A clause the playbook wants present is never passed on a reading: a reviewer decides.
    cap = "In no event shall either party's aggregate liability under this Agreement exceed $500,000."
    status, ids, reason = statuses(sample_playbook, [read_as_finding(3, "insurance", cap, "Cap On Liability")])[
        "liability-cap"
    ]
    assert (status, ids) == ("unknown", [3]) and "claimed as Insurance" in reason

    # A reviewer's approval confirms the reading: a rule that wants the clause present passes on it.
    approved = read_as_finding(3, "insurance", cap, "Cap On Liability", decision="approve")
    status, ids, reason = statuses(sample_playbook, [approved])["liability-cap"]
    assert (status, ids) == ("pass", [3]) and "a reviewer approved it" in reason

    # Each finding is named with the category it is claimed as; a rejected reading is named too.
    two = [
        read_as_finding(9, "license_grant", ETON_NON_COMPETE, "Non-Compete"),
        read_as_finding(5, "exclusivity", ETON_NON_COMPETE, "Non-Compete"),
    ]
    reason = statuses(sample_playbook, two)["no-non-compete"][2]
    assert "finding(s) 9 (claimed as License Grant), 5 (claimed as Exclusivity)" in reason
    reason = statuses(sample_playbook, rejected)["no-non-compete"][2]
    assert "(finding(s) 7, read as Non-Compete, rejected by a reviewer)" in reason

    # The stated values belong to the claimed category: a Renewal Term's "one (1) year" is not the notice.
    renewal = read_as_finding(
        4,
        "renewal_term",
        "This Agreement renews for successive one (1) year terms unless either party gives notice of "
        "non-renewal at least sixty (60) days prior to the end of the then-current term.",
        "Notice Period To Terminate Renewal",
    )
    renewal["values"] = {"duration": "one (1) year"}
    status, _, reason = statuses(sample_playbook, [renewal])["renewal-notice"]
    assert status == "unknown" and "claimed as Renewal Term" in reason  # sixty days would pass: unconfirmed

    # A finding the fact-check contradicted is no reading.
    contradicted = read_as_finding(7, "expiration_date", ETON_NON_COMPETE, "Non-Compete")
    contradicted["verdict"] = "contradicted"
    assert statuses(sample_playbook, [contradicted])["no-non-compete"][:2] == ("pass", [])

    # A finding claimed as the clause itself still decides; a reading elsewhere does not override it.
    own = finding(1, "non_compete", "Distributor shall not sell any competing product during the Term.")
    other = read_as_finding(7, "expiration_date", ETON_NON_COMPETE, "Non-Compete")
    assert statuses(sample_playbook, [own, other])["no-non-compete"][:2] == ("deviation", [1])


@pytest.mark.usefixtures("prefect_harness")
def test_documents_that_are_no_agreement_get_no_deviation_and_no_missing_clause(tmp_path, db_url, pdf_maker):
    """A mixed run: the sample agreements keep their playbook results, while a memo in Word and a partial
    copy of a scan (page 1 of the 6 its foot states) are read but judged neither by the playbook nor for
    missing clauses, and the report says why."""
    from xml.sax.saxutils import escape

    from docreview_testing.docx_maker import write_docx
    from docreview_testing.samples import generate_samples

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=2)
    memo = [
        "MEMORANDUM",
        "To: Legal team. From: Operations. Re: Office move.",
        "The office moves to the fourth floor on April 1. Liability for lost boxes is uncapped.",
    ]
    write_docx(inbox / "memo.docx", "".join(f"<w:p><w:r><w:t>{escape(t)}</w:t></w:r></w:p>" for t in memo))
    pdf_maker(
        inbox / "partial-scan.pdf",
        [
            "SUPPLY AGREEMENT\nThis Supply Agreement is made between Acme Inc. and Beta LLC.\n"
            "1. Supply. Beta supplies the goods of Schedule A.\nThis Agreement is governed by the laws of "
            "Texas.\nPage 1 of 6"
        ],
    )
    _, report = review_with_the_sample_playbook(inbox, tmp_path / "out", db_url)
    docs = {d["file_name"]: d for d in report["documents"]}
    assert {d["status"] for d in docs.values()} == {"reviewed"}, {n: d["reason"] for n, d in docs.items()}
    for name in ("memo.docx", "partial-scan.pdf"):
        doc = docs.pop(name)
        assert doc["playbook"] == [] and doc["key_terms"] == {} and "deadlines" not in doc, name
        assert not [a for a in doc["absences"] if a["alarm"]], name
        assert doc["not_judged"], name
    assert len(docs) == 2
    for doc in docs.values():  # the agreements are judged as before
        assert doc["not_judged"] is None and len(doc["playbook"]) == 5
        assert any(r["status"] == "deviation" for r in doc["playbook"]) or any(a["alarm"] for a in doc["absences"])
    html = (tmp_path / "out" / "report.html").read_text()
    assert html.count("Not judged as an agreement") == 2
    assert "not an agreement (no agreement heading, no preamble naming parties and no signature block)" in html
    assert "a partial copy: 1 of the 6 pages it states" in html
    from cli.queue import queue_items
    from tasks.observe.portfolio import portfolio

    listed = {d["file_name"] for d in portfolio(db_url, date(2026, 1, 1))["documents"]}
    assert listed == set(docs)  # the agreements, not the memo or the partial copy

    queued = {(i["file_name"], i["kind"]) for i in queue_items(db_url, pending_only=True)}
    assert not {q for q in queued if q[0] in ("memo.docx", "partial-scan.pdf") and q[1] == "absence"}
    assert any(kind == "absence" for _, kind in queued)  # the agreements' absences are still queued
