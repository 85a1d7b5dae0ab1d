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
            assert check_login(session, "Alice", f"wrong {i}", 3, 900, NOW).reason == "unknown"
        third = check_login(session, "Alice", "wrong 3", 3, 900, NOW)
        assert third.reason == "locked" and third.locked_until == NOW + timedelta(seconds=900)
        # Locked: even the right password is refused until the lockout ends.
        assert (
            check_login(session, "Alice", "correct horse battery", 3, 900, NOW + timedelta(seconds=60)).reason
            == "locked"
        )
        assert check_login(session, "Alice", "correct horse battery", 3, 900, NOW + timedelta(seconds=901)).ok
    runner = CliRunner()
    with Session(get_engine(db_url)) as session:
        for i in range(3):
            check_login(session, "Alice", f"wrong {i}", 3, 900)
    assert runner.invoke(app, ["users", "unlock", "Alice", "--db", db_url]).exit_code == 0
    with Session(get_engine(db_url)) as session:
        assert check_login(session, "Alice", "correct horse battery", 3, 900).ok


def test_an_unknown_name_is_refused_like_a_wrong_password_and_writes_nothing(db_url):
    with Session(get_engine(db_url)) as session:
        outcome = check_login(session, "Mallory", "correct horse battery", 3, 900, NOW)
        assert not outcome.ok and outcome.reason == "unknown"
        assert session.exec(select(ReviewerAccount)).all() == []
        add_account(session, "Bob", "another long password")
        assert check_login(session, "Bob", "another long password", 3, 900, NOW).ok
    assert CliRunner().invoke(app, ["users", "disable", "Bob", "--db", db_url]).exit_code == 0
    with Session(get_engine(db_url)) as session:
        assert check_login(session, "Bob", "another long password", 3, 900, NOW).reason == "disabled"
        with pytest.raises(AccountError, match="shorter"):
            add_account(session, "Carol", "x")
