"""``docreview users``: the reviewer accounts that log in to ``docreview report serve``.

``users add NAME`` asks for a password twice (or reads one line from standard input with
``--password-stdin``, for scripts) and stores its Argon2id hash (:mod:`tasks.store.accounts`);
``users list`` shows each account with its last login, its wrong passwords in a row and a lockout
with the failed logins that caused it (the report server answers every refused login alike and
logs why; this list is where an administrator sees an account's state); ``users passwd``,
``disable``, ``enable`` and ``unlock`` change one. A reviewer's decisions name the account, so an account is
disabled, never deleted.
"""

from __future__ import annotations

import sys
from datetime import UTC

import typer
from rich.markup import escape
from rich.table import Table
from sqlmodel import Session

from cli.common import console, err, table_console

users_app = typer.Typer(no_args_is_help=True, help="Reviewer accounts for docreview report serve.")

_DB_HELP = "Database URL (default: sqlite:///docreview.db or DATABASE_URL)."


def _url(db: str | None) -> str:
    """``--db`` or the configured database; created (and migrated) when it does not exist yet:
    accounts may be added before the first review."""
    from schemas.settings import Settings

    return db or Settings().database_url


def _password(stdin: bool) -> str:
    """The new password: one line of standard input with ``--password-stdin``, else asked twice at the
    terminal; without a terminal to ask at (a pipe, a script) the command ends with exit 2 saying to use
    ``--password-stdin`` (the prompt would echo nothing and warn)."""
    if stdin:
        line = sys.stdin.readline()
        return line[:-1] if line.endswith("\n") else line
    if not sys.stdin.isatty():
        err.print("[red]error:[/] no terminal to ask for the password: pipe it with --password-stdin; nothing changed")
        raise typer.Exit(2)
    return str(typer.prompt("Password", hide_input=True, confirmation_prompt=True))


def _run(db: str | None, action: str, name: str, stdin: bool = False) -> None:
    from tasks.store import accounts
    from tasks.store.persist import get_engine

    password = _password(stdin) if action in ("add", "passwd") else ""
    try:
        with Session(get_engine(_url(db))) as session:
            if action == "add":
                row = accounts.add_account(session, name, password)
                done = f"Added reviewer {row.name}: they log in to docreview report serve with this name"
            elif action == "passwd":
                row = accounts.set_password(session, name, password)
                done = f"New password for {row.name} (and unlocked)"
            elif action == "unlock":
                row = accounts.unlock(session, name)
                done = f"Unlocked {row.name}"
            else:
                row = accounts.set_disabled(session, name, action == "disable")
                done = f"{'Disabled' if row.disabled else 'Enabled'} {row.name}" + (
                    " (their decisions are kept; sessions end at their next request)" if row.disabled else ""
                )
    except accounts.AccountError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}: nothing changed")
        raise typer.Exit(2) from None
    console.print(escape(done), highlight=False)


@users_app.command("add")
def add(
    name: str = typer.Argument(..., help="The reviewer's name, as decisions will show it."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from standard input."),
    db: str | None = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """Add a reviewer account (the password is asked twice, at least 12 characters)."""
    _run(db, "add", name, password_stdin)


@users_app.command("passwd")
def passwd(
    name: str = typer.Argument(..., help="The account."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from standard input."),
    db: str | None = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """Set a new password for an account (it also ends a lockout)."""
    _run(db, "passwd", name, password_stdin)


@users_app.command("unlock")
def unlock(
    name: str = typer.Argument(..., help="The account."),
    db: str | None = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """End an account's lockout after too many failed logins."""
    _run(db, "unlock", name)


@users_app.command("disable")
def disable(
    name: str = typer.Argument(..., help="The account."),
    db: str | None = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """Stop an account from logging in (its decisions are kept)."""
    _run(db, "disable", name)


@users_app.command("enable")
def enable(
    name: str = typer.Argument(..., help="The account."),
    db: str | None = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """Let a disabled account log in again."""
    _run(db, "enable", name)


@users_app.command("list")
def list_users(db: str | None = typer.Option(None, "--db", help=_DB_HELP)) -> None:
    """List the reviewer accounts: last login, failed logins, lockout (with the failed logins that caused it), disabled."""
    from cli.common import stored_database
    from tasks.store.accounts import list_accounts, locked_until
    from tasks.store.persist import get_engine

    with Session(get_engine(stored_database(db))) as session:
        rows = list_accounts(session)
    if not rows:
        console.print("No reviewer accounts: add one with docreview users add NAME")
        return
    table = Table(show_lines=False)
    for column in ("name", "added (UTC)", "last login (UTC)", "failed logins", "locked until (UTC)", "state"):
        table.add_column(column)
    for r in rows:
        until = locked_until(r)
        if until is not None:
            lock = f"{until.astimezone(UTC):%Y-%m-%d %H:%M} after {r.failed_logins} failed logins"
        elif r.locked_until is not None:
            lock = f"ended {str(r.locked_until)[:16]}"
        else:
            lock = ""
        table.add_row(
            r.name,
            str(r.created_at)[:16],
            str(r.last_login_at or "")[:16],
            str(r.failed_logins),
            lock,
            "disabled" if r.disabled else "locked" if until is not None else "active",
        )
    table_console().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``users`` group to the ``docreview`` app."""
    app.add_typer(users_app, name="users")
