"""Reviewer accounts (``docreview users``, tasks/store/accounts.py): Argon2id hashes, lockout."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from cli.app import app
from schemas.tables import ReviewerAccount
from tasks.store.accounts import AccountError, add_account, check_login
from tasks.store.persist import dispose_engines, get_engine

NOW = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _dispose():
    yield
    dispose_engines()


def test_users_add_hashes_the_password_and_refuses_a_second_account_of_one_name(db_url):
    runner = CliRunner()
    done = runner.invoke(
        app, ["users", "add", "Alice Example", "--password-stdin", "--db", db_url], input="correct horse battery\n"
    )
    assert done.exit_code == 0 and "Added reviewer Alice Example" in done.output, done.output
    with Session(get_engine(db_url)) as session:
        row = session.exec(select(ReviewerAccount)).one()
    assert row.password_hash.startswith("$argon2id$") and "correct horse" not in row.password_hash
    for args, stdin, why in (
        (["alice example"], "another long password\n", "exists already"),  # one account whatever the case
        (["Bob"], "short\n", "shorter than 12 characters"),
        (["Bob Builder Jr"], "bob builder jr\n", "is the account's name"),
        (["  "], "long enough password\n", "the name is empty"),
    ):
        res = runner.invoke(app, ["users", "add", *args, "--password-stdin", "--db", db_url], input=stdin)
        assert res.exit_code == 2 and why in res.output and "nothing changed" in res.output, res.output
    listed = runner.invoke(app, ["users", "list", "--db", db_url])
    assert listed.exit_code == 0 and "Alice Example" in listed.output and "active" in listed.output
    with Session(get_engine(db_url)) as session:
        assert len(session.exec(select(ReviewerAccount)).all()) == 1
    unknown = runner.invoke(app, ["users", "unlock", "Nobody", "--db", db_url])
    assert unknown.exit_code == 2 and "no reviewer named 'Nobody'" in unknown.output


def test_a_wrong_password_locks_the_account_after_n_failures_and_unlock_ends_it(db_url):
    with Session(get_engine(db_url)) as session:
        add_account(session, "Alice", "correct horse battery")
        assert check_login(session, "alice", "correct horse battery", 3, 900, NOW).name == "Alice"
        for i in range(2):
            wrong = check_login(session, "Alice", f"wrong {i}", 3, 900, NOW)
            assert (wrong.reason, wrong.failed_logins, wrong.locked_now) == ("password", i + 1, False)
        third = check_login(session, "Alice", "wrong 3", 3, 900, NOW)
        assert third.reason == "password" and third.locked_now and third.failed_logins == 3
        assert third.locked_until == NOW + timedelta(seconds=900)
        row = session.exec(select(ReviewerAccount)).one()
        assert row.failed_logins == 3  # the failures that caused the lock are kept, not reset to 0
        # Locked: even the right password is refused until the lockout ends, and it is not counted.
        locked = check_login(session, "Alice", "correct horse battery", 3, 900, NOW + timedelta(seconds=60))
        assert (locked.reason, locked.password_ok, locked.failed_logins) == ("locked", True, 3)
        assert check_login(session, "Alice", "correct horse battery", 3, 900, NOW + timedelta(seconds=901)).ok
        assert session.exec(select(ReviewerAccount)).one().failed_logins == 0
        # After a lockout ended, the count starts again: one more wrong password does not lock at once.
        for i in range(3):
            check_login(session, "Alice", f"wrong {i}", 3, 900, NOW + timedelta(seconds=1000))
        again = check_login(session, "Alice", "wrong 4", 3, 900, NOW + timedelta(seconds=1901))
        assert (again.reason, again.failed_logins, again.locked_now) == ("password", 1, False)
    runner = CliRunner()
    with Session(get_engine(db_url)) as session:
        for i in range(3):
            check_login(session, "Alice", f"wrong {i}", 3, 900)
    listed = runner.invoke(app, ["users", "list", "--db", db_url])
    assert listed.exit_code == 0, listed.output
    line = next(x for x in listed.output.splitlines() if "Alice" in x)
    assert " 3 " in line and "after 3 failed logins" in line and "locked" in line, listed.output
    assert runner.invoke(app, ["users", "unlock", "Alice", "--db", db_url]).exit_code == 0
    listed = runner.invoke(app, ["users", "list", "--db", db_url])
    line = next(x for x in listed.output.splitlines() if "Alice" in x)
    assert "after" not in line and " 0 " in line and "active" in line, listed.output
    with Session(get_engine(db_url)) as session:
        assert check_login(session, "Alice", "correct horse battery", 3, 900).ok


def test_an_unknown_name_is_refused_like_a_wrong_password_and_writes_nothing(db_url):
    with Session(get_engine(db_url)) as session:
        outcome = check_login(session, "Mallory", "correct horse battery", 3, 900, NOW)
        assert not outcome.ok and outcome.reason == "unknown" and outcome.account is None
        assert session.exec(select(ReviewerAccount)).all() == []
        add_account(session, "Bob", "another long password")
        assert check_login(session, "Bob", "another long password", 3, 900, NOW).ok
    assert CliRunner().invoke(app, ["users", "disable", "Bob", "--db", db_url]).exit_code == 0
    with Session(get_engine(db_url)) as session:
        right = check_login(session, "Bob", "another long password", 3, 900, NOW)
        assert (right.ok, right.reason, right.password_ok, right.account) == (False, "disabled", True, "Bob")
        for i in range(4):  # a disabled account is refused before counting: it is never locked on top
            wrong = check_login(session, "Bob", f"wrong {i}", 3, 900, NOW)
            assert (wrong.reason, wrong.password_ok, wrong.locked_now) == ("disabled", False, False)
        assert session.exec(select(ReviewerAccount)).one().locked_until is None
        with pytest.raises(AccountError, match="shorter"):
            add_account(session, "Carol", "x")


def test_every_refusal_costs_exactly_one_argon2_verification(db_url, argon2_verifications):
    """Unknown name, wrong password, locked and disabled account: one Argon2id verify each (an
    unknown name against a dummy hash of the same parameters), so the time does not tell them apart."""
    from tasks.store import accounts

    verified = argon2_verifications

    with Session(get_engine(db_url)) as session:
        add_account(session, "Alice", "correct horse battery")
        add_account(session, "Dave", "dave's long password")
        accounts.set_disabled(session, "Dave", True)
        cases = [
            ("Mallory", "correct horse battery", "unknown"),
            ("Alice", "wrong 1", "password"),
            ("Alice", "wrong 2", "password"),
            ("Alice", "wrong 3", "password"),  # this one locks the account
            ("Alice", "correct horse battery", "locked"),
            ("Alice", "wrong 4", "locked"),
            ("Dave", "dave's long password", "disabled"),
            ("Dave", "wrong 5", "disabled"),
        ]
        hashes = set()
        for name, password, reason in cases:
            verified.clear()
            outcome = check_login(session, name, password, 3, 900, NOW)
            assert outcome.reason == reason and not outcome.ok
            assert len(verified) == 1, (name, password, reason, verified)
            hashes.add(verified[0].rsplit("$", 2)[0])  # algorithm, version and parameters
        assert len(hashes) == 1  # the dummy hash has the accounts' parameters
        verified.clear()
        assert check_login(session, "Alice", "correct horse battery", 3, 900, NOW + timedelta(seconds=901)).ok
        assert len(verified) == 1


def test_without_a_terminal_the_password_is_asked_for_on_stdin_only(db_url):
    """A script that pipes a password without --password-stdin gets exit 2 and how to do it, not a prompt that
    warns and echoes nothing (CliRunner's input is no terminal)."""
    res = CliRunner().invoke(app, ["users", "add", "Alice Example", "--db", db_url], input="correct horse battery\n")
    assert res.exit_code == 2 and "--password-stdin" in res.output, res.output
    assert "Alice" not in CliRunner().invoke(app, ["users", "list", "--db", db_url]).output
