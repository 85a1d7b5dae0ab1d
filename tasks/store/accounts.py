"""Reviewer accounts: who may log in to ``docreview report serve`` and decide there.

Passwords are hashed with Argon2id (argon2-cffi's :class:`~argon2.PasswordHasher`, whose defaults
are RFC 9106's second recommended profile: 3 passes over 64 MiB, 4 lanes) and kept as PHC strings;
a hash made with older parameters is replaced at the next good login. A new password needs at least
:data:`MIN_PASSWORD_CHARS` characters and may not be the account's name (NIST SP 800-63B, 3.1.1.2,
asks for at least 8 and for checking obvious choices; docreview asks for more, a reviewer's password
guards signed-off decisions).

:func:`check_login` counts failed logins per account: at ``attempts`` wrong passwords in a row the
account is locked for ``lockout_s`` seconds (OWASP Authentication Cheat Sheet, "account lockout");
the count that caused the lock is kept (``docreview users list`` shows it), a good login or
:func:`unlock` resets it, and once a lockout has ended the next wrong password counts from 1 again.
Every attempt costs exactly one Argon2id verification: an unknown name is verified against a dummy
hash made once per process with the same parameters, and a locked or disabled account's password
is verified before it is refused, so the answer's timing does not tell which names exist or why a
login was refused (OWASP, "Authentication and Error Messages"). The caller answers every refusal
alike and logs :attr:`LoginOutcome.reason` for the operator.

Functions take an open SQLModel :class:`~sqlmodel.Session` and commit their own writes.
"""

from __future__ import annotations

import functools
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlmodel import Session, col, select

from schemas.decisions import MAX_REVIEWER_CHARS
from schemas.tables import ReviewerAccount, utcnow

#: Fewest characters of a new password.
MIN_PASSWORD_CHARS = 12


class AccountError(ValueError):
    """An account that cannot be added or changed: the message says why (an existing or unknown
    name, a name that is empty or too long, a password too short or equal to the name)."""


@functools.cache
def hasher() -> PasswordHasher:
    """The process's Argon2id hasher (argon2-cffi defaults)."""
    return PasswordHasher()


@functools.cache
def _decoy_hash() -> str:
    """A hash no password is known for, made once per process with :func:`hasher`'s parameters:
    verified against when a name is unknown, so that costs what a real account's check costs."""
    return hasher().hash("docreview: no such reviewer account " + secrets.token_hex(16))


def name_key(name: str) -> str:
    """The form an account name is matched in: spaces collapsed, case-folded (``Alice`` = ``alice``)."""
    return " ".join(name.split()).casefold()


def clean_name(raw: str) -> str:
    """An account name as kept: printable characters, spaces collapsed. Raises
    :class:`AccountError` for an empty name or one over :data:`schemas.decisions.MAX_REVIEWER_CHARS`."""
    name = " ".join("".join(ch if ch.isprintable() else " " for ch in raw).split())
    if not name:
        raise AccountError("the name is empty")
    if len(name) > MAX_REVIEWER_CHARS:
        raise AccountError(f"the name is longer than {MAX_REVIEWER_CHARS} characters")
    return name


def _check_password(name: str, password: str) -> None:
    if len(password) < MIN_PASSWORD_CHARS:
        raise AccountError(f"the password is shorter than {MIN_PASSWORD_CHARS} characters")
    if name_key(password) == name_key(name):
        raise AccountError("the password is the account's name")


def find_account(session: Session, name: str) -> ReviewerAccount | None:
    """The account named ``name`` (matched by :func:`name_key`), or None."""
    return session.exec(select(ReviewerAccount).where(ReviewerAccount.name_key == name_key(name))).first()


def list_accounts(session: Session) -> list[ReviewerAccount]:
    """Every account, by name."""
    return list(session.exec(select(ReviewerAccount).order_by(col(ReviewerAccount.name_key))).all())


def has_accounts(session: Session) -> bool:
    """Whether any account that may log in (not disabled) exists."""
    return session.exec(select(ReviewerAccount.id).where(col(ReviewerAccount.disabled).is_(False))).first() is not None


def add_account(session: Session, name: str, password: str) -> ReviewerAccount:
    """Create the account ``name`` with ``password`` (hashed) and commit; raises
    :class:`AccountError` for a name taken (in any case), empty or too long, or a weak password."""
    name = clean_name(name)
    _check_password(name, password)
    if find_account(session, name) is not None:
        raise AccountError(f"a reviewer named {name!r} exists already")
    row = ReviewerAccount(name=name, name_key=name_key(name), password_hash=hasher().hash(password))
    session.add(row)
    session.commit()
    session.refresh(row)
    return row


def _existing(session: Session, name: str) -> ReviewerAccount:
    row = find_account(session, name)
    if row is None:
        raise AccountError(f"no reviewer named {name!r} (docreview users list)")
    return row


def set_password(session: Session, name: str, password: str) -> ReviewerAccount:
    """Give ``name`` a new password (and unlock it); raises :class:`AccountError`."""
    row = _existing(session, name)
    _check_password(row.name, password)
    row.password_hash = hasher().hash(password)
    row.failed_logins, row.locked_until = 0, None
    session.add(row)
    session.commit()
    return row


def set_disabled(session: Session, name: str, disabled: bool) -> ReviewerAccount:
    """Disable (no login, decisions kept) or enable ``name``; raises :class:`AccountError`."""
    row = _existing(session, name)
    row.disabled = disabled
    session.add(row)
    session.commit()
    return row


def unlock(session: Session, name: str) -> ReviewerAccount:
    """End ``name``'s lockout and reset its failed logins; raises :class:`AccountError`."""
    row = _existing(session, name)
    row.failed_logins, row.locked_until = 0, None
    session.add(row)
    session.commit()
    return row


#: Why a login was refused (:attr:`LoginOutcome.reason`), in words for the operator's log.
REFUSAL_REASONS = {
    "unknown": "unknown name",
    "password": "wrong password",
    "locked": "locked",
    "disabled": "disabled",
}


@dataclass(frozen=True)
class LoginOutcome:
    """A login attempt, for the caller to answer (one answer for every refusal) and to log.

    ``name``: the account's name on success (None otherwise); ``reason``: ``ok``, ``unknown`` (no
    such name), ``password`` (a wrong password), ``locked`` (refused whatever the password while
    locked) or ``disabled`` (refused whatever the password); ``account``: the account's name when
    the name matched one (None for ``unknown``); ``password_ok``: whether the password was the
    account's; ``failed_logins``: the account's wrong passwords in a row after this attempt;
    ``locked_until``: the end of its lockout (UTC) when it is locked; ``locked_now``: this attempt
    locked it."""

    name: str | None
    reason: str
    locked_until: datetime | None = None
    account: str | None = None
    password_ok: bool = False
    failed_logins: int = 0
    locked_now: bool = False

    @property
    def ok(self) -> bool:
        """True when the login succeeded."""
        return self.name is not None


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def locked_until(row: ReviewerAccount, now: datetime | None = None) -> datetime | None:
    """The end of ``row``'s lockout (UTC) while it lasts at ``now`` (default: the current time), else None."""
    if row.locked_until is None:
        return None
    until = _aware(row.locked_until)
    return until if until > (now or utcnow()) else None


def _verify(password_hash: str, password: str) -> bool:
    """One Argon2id verification of ``password`` against ``password_hash`` (a malformed hash: False)."""
    try:
        return bool(hasher().verify(password_hash, password))
    except (VerificationError, InvalidHashError):
        return False


def check_login(
    session: Session, name: str, password: str, attempts: int, lockout_s: float, now: datetime | None = None
) -> LoginOutcome:
    """Check ``password`` for the account ``name`` and record the attempt (commits when it changes
    the account).

    Every path verifies exactly one Argon2id hash first: the account's, or for an unknown name the
    process's dummy hash (:func:`_decoy_hash`). Then a disabled account is refused, and a locked one
    (``locked_until`` after ``now``), whatever the password and without counting the attempt. A
    wrong password adds one failed login (after an ended lockout the count starts again); the
    ``attempts``-th in a row locks the account until ``now + lockout_s`` and the count is kept. A
    good one resets the count, notes the time and re-hashes a password hashed with older parameters."""
    now = now or utcnow()
    decoy = _decoy_hash()  # made before the first lookup, so its one-time cost shows on no name in particular
    row = find_account(session, name)
    good = _verify(row.password_hash if row is not None else decoy, password)
    if row is None:
        return LoginOutcome(None, "unknown")
    until = locked_until(row, now)
    if row.disabled or until is not None:
        return LoginOutcome(
            None,
            "disabled" if row.disabled else "locked",
            until,
            account=row.name,
            password_ok=good,
            failed_logins=row.failed_logins,
        )
    if not good:
        if row.locked_until is not None:  # a lockout that has ended: the count starts again
            row.locked_until, row.failed_logins = None, 0
        row.failed_logins += 1
        failed = row.failed_logins
        lock = now + timedelta(seconds=lockout_s) if failed >= attempts else None
        if lock is not None:
            row.locked_until = lock
        session.add(row)
        session.commit()
        return LoginOutcome(None, "password", lock, account=row.name, failed_logins=failed, locked_now=lock is not None)
    if hasher().check_needs_rehash(row.password_hash):
        row.password_hash = hasher().hash(password)
    row.failed_logins, row.locked_until, row.last_login_at = 0, None, now
    session.add(row)
    session.commit()
    return LoginOutcome(row.name, "ok", account=row.name, password_ok=True)
