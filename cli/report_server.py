"""Deciding in the browser: ``docreview report serve`` with approve / reject / reclassify on the report.

The served report is rendered from the database on each request that follows a new decision
(:func:`tasks.observe.report.build_report` and :func:`~tasks.observe.report.render_html`, the same
functions ``docreview review`` writes ``report.html`` with), so a decision shows on reload in the
finding's row, and a decided finding or absence leaves "Needs attention", exactly as in the next
run's report. Rendering a 2-document run takes about 0.03 s; the page is cached until the
decision table or the run's ``report.json`` changes. The plots are the run's own: copied from the
static ``report.html`` (recomputing them takes matplotlib about 1.5 s and would show later runs in
the trend).

The server adds to the rendered page, never to the files on disk (``report.html`` stays the
run's static record):

* under each finding's ``docreview decide <id>`` hint (or its decision line), a form: an optional
  note, **Approve** / **Reject**, a category to **Reclassify** it as, and a link to the source at its
  locator;
* under each document's heading, a panel with its absences (``A<n>``) and playbook results, each
  with the same form. A playbook result's decision is recorded on the findings it lists — the
  decision store (``reviewer_decisions``) holds findings and absences only, a rule's status is
  recomputed from its findings by the next run, and ``docreview queue`` already says "a deviation
  rests on findings, which are decided by their ids". A result with no finding is decided on the
  document's absence of that clause when there is one.

Who decides is known, never typed: the reviewer is a logged-in account (``docreview users add
NAME``; :mod:`tasks.store.accounts`) or the identity a trusted reverse proxy puts in its header
(:class:`IdentityPolicy`). Every decision goes through :func:`cli.queue.record_decision` (the function
``docreview decide`` calls) with that name: same chain, same history, the latest decision wins,
repeating the latest is a no-op. Decisions through one server are serialised by a lock.

Identity and sessions (OWASP Session Management and Authentication Cheat Sheets):

* ``POST /login`` checks the name and password (Argon2id); a good login gets a new session id
  (256 random bits, cookie ``HttpOnly``, ``SameSite=Strict``), kept in the server's memory, which
  ends after ``report_session_idle_minutes`` without a request or ``report_session_max_hours`` after
  the login, at ``POST /logout``, when the account is disabled, or when the server stops;
  ``report_login_attempts`` wrong passwords in a row lock the account for ``report_lockout_minutes``
  (the server's clock; ``docreview users unlock NAME`` ends it sooner). An unknown name, a wrong
  password, a locked account and a disabled one — even with the right password — get one answer
  (401, the login form with :data:`LOGIN_REFUSED`, the same bytes) after one Argon2id verification
  each (OWASP Authentication Cheat Sheet, "Authentication and Error Messages" and "Account
  lockout"). Which it was goes to the operator only: a WARNING on the ``docreview.report`` logger
  for each refused login with its reason and when an account gets locked (never the password), and
  ``docreview users list`` shows a lock with the failed logins that caused it;
* a request carrying the identity header (``report_identity_header``) is accepted only from an
  address of ``report_trusted_proxies``; from any other address it is refused (403) and nothing is
  written;
* with a database, every page needs an identity once an account exists or a proxy is configured;
  on the loopback address with neither, the reports are shown read-only with how to add a reviewer.

Security (OWASP Cross-Site Request Forgery Prevention Cheat Sheet: synchronizer token bound to a
session; verifying the ``Origin`` header as defence in depth; ``SameSite=Strict`` cookies; OWASP
Clickjacking Defense Cheat Sheet: ``frame-ancestors 'none'``):

* a per-server secret (32 random bytes, new at every start); the page carries
  ``HMAC-SHA256(secret, session cookie)`` in each form (the login form too); a POST whose token is
  missing, or was made for another session or by an earlier server (stale), is 403 and nothing is
  written;
* a POST whose ``Origin`` is not this server is 403;
* the page is sent with a Content-Security-Policy allowing no script at all (the forms are plain
  HTML) and no framing;
* ``docreview report serve`` refuses to bind to a non-loopback address without reviewer accounts or
  a trusted proxy;
* a source file is served only when it is a local file that a document of the run came from and
  its SHA-256 is still the document's; a PDF inline (``#page=N`` opens it at the finding's page),
  anything else as a download in a sandbox. Sources in S3 (or moved since the run) are named,
  not linked: a ``file://`` link from an ``http://`` page is blocked by browsers.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import http.cookies
import ipaddress
import json
import logging
import os
import re
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli.queue import clean_reviewer
from schemas.documents import Locator

#: Cookie holding the browser's session id (random; the CSRF token is bound to it).
SESSION_COOKIE = "docreview_session"
#: Largest accepted form body, bytes.
MAX_FORM_BYTES = 64 * 1024
#: Longest note and password, characters.
MAX_NOTE_CHARS = 2000
MAX_PASSWORD_CHARS = 1024
#: The setting that no longer works (a shared password); ``report serve`` refuses to start with it.
PASSWORD_SETTING = "DOCREVIEW_REPORT_PASSWORD"
#: The setting naming trusted proxies.
PROXIES_SETTING = "DOCREVIEW_REPORT_TRUSTED_PROXIES"
#: The one answer to every refused login (unknown name, wrong password, locked or disabled account).
LOGIN_REFUSED = (
    "Name or password not recognised, or the account cannot sign in now: not logged in. "
    "An administrator can see why with docreview users list."
)

#: The server's log: refused logins and lockouts, for the operator (WARNING reaches the console).
logger = logging.getLogger("docreview.report")

#: Content-Security-Policy of a live report: no script, no plugin, no framing; the report's own
#: inline styles and data: plot images; forms post only to this server.
PAGE_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)

_ID = re.compile(r"^(?:[Aa]\d+|\d+)$")
_REPORT_PATH = re.compile(r"^/(?:runs/([A-Za-z0-9._-]+)/)?report\.html$")
_SOURCE_PATH = re.compile(r"^/source/([A-Za-z0-9._-]+)/([0-9a-f]{64})$")

_STYLE = """<style>
 form.dr-decide{display:flex;flex-wrap:wrap;gap:4px;align-items:center;margin:6px 0 2px;font-size:12.5px}
 form.dr-decide input{font:inherit;padding:2px 6px;border:1px solid #c9d1dc;border-radius:4px}
 form.dr-decide input[name=category]{width:13em} form.dr-decide input[name=note]{flex:1;min-width:10em}
 form.dr-decide button,form.dr-logout button{font:inherit;padding:2px 10px;border-radius:4px;border:1px solid #9aa5b4;cursor:pointer}
 form.dr-decide button[value=approve]{background:#dff3e4} form.dr-decide button[value=reject]{background:#fde2e1}
 form.dr-decide button[value=reclassify]{background:#e4e9f7} form.dr-logout{display:inline;margin-left:8px}
 .dr-source{font-size:12px} .dr-panel{background:#f6f7f9;border:1px solid #dde2e8;border-radius:6px;padding:6px 10px;margin:8px 0}
 .dr-panel h3{font-size:13px;margin:2px 0 4px} .dr-item{border-top:1px solid #e3e7ec;padding:4px 0} .dr-item:first-of-type{border-top:0}
 .dr-bar{background:#e4e9f7;border:1px solid #b9c5e6;padding:6px 12px;border-radius:6px;margin-bottom:14px;font-size:13px}
</style>"""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (as given to ``--host``) is a loopback address: ``localhost``,
    ``127.0.0.0/8`` or ``::1``. ``0.0.0.0``, ``::`` and every other name or address are not
    (they can be reached from other machines)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def csrf_token(secret: bytes, session: str) -> str:
    """The CSRF token of browser session ``session`` on the server holding ``secret``:
    ``HMAC-SHA256(secret, session)`` as 64 hex digits (OWASP CSRF Prevention Cheat Sheet,
    synchronizer token pattern; an HMAC so the server keeps no per-session state for it)."""
    return hmac.new(secret, session.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class IdentityPolicy:
    """How a report server knows who is deciding.

    ``proxies``: the networks whose requests may name the reviewer in ``header`` (a trusted reverse
    proxy that authenticated them); ``idle_s``/``max_s``: a login session's idle and absolute
    lifetime, seconds; ``attempts``/``lockout_s``: failed logins in a row that lock an account, and
    for how long, seconds; ``loopback``: the server listens on a loopback address only."""

    proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    header: str = "X-Forwarded-User"
    idle_s: float = 30 * 60.0
    max_s: float = 8 * 3600.0
    attempts: int = 5
    lockout_s: float = 15 * 60.0
    loopback: bool = True

    @classmethod
    def from_settings(cls, settings: Any, loopback: bool) -> IdentityPolicy:
        """The policy of :class:`schemas.settings.Settings` (``report_*`` settings)."""
        return cls(
            proxies=tuple(settings.trusted_proxies()),
            header=settings.report_identity_header,
            idle_s=settings.report_session_idle_minutes * 60.0,
            max_s=settings.report_session_max_hours * 3600.0,
            attempts=settings.report_login_attempts,
            lockout_s=settings.report_lockout_minutes * 60.0,
            loopback=loopback,
        )

    def trusts(self, address: str) -> bool:
        """Whether a request from ``address`` (the TCP peer) comes from a trusted proxy."""
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in net for net in self.proxies)


@dataclass
class LoginSession:
    """A browser session: ``user`` (the account's name once logged in, None before), ``created``
    and ``seen`` (the state's clock, seconds)."""

    user: str | None
    created: float
    seen: float


@dataclass
class DecideState:
    """What a deciding report server shares between its request threads.

    ``database_url``: where decisions are written (None: read-only, no forms); ``identity``: who may
    decide (:class:`IdentityPolicy`); ``secret``: the per-server CSRF secret (new at every start, so
    a page from an earlier server is stale); ``sessions``: the browser sessions by id; ``clock``:
    seconds (``time.time``; a test moves it to expire sessions); ``portfolio``: the last portfolio built
    (:func:`portfolio_data`) with what it was built from."""

    folder: Path
    database_url: str | None = None
    identity: IdentityPolicy = field(default_factory=IdentityPolicy)
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    placeholder: str = field(default_factory=lambda: "dr-" + secrets.token_hex(16))
    clock: Callable[[], float] = time.time
    sessions: dict[str, LoginSession] = field(default_factory=dict)
    sessions_lock: threading.Lock = field(default_factory=threading.Lock)
    decide_lock: threading.Lock = field(default_factory=threading.Lock)
    render_lock: threading.Lock = field(default_factory=threading.Lock)
    pages: dict[tuple[str, bool], tuple[tuple[Any, ...], str]] = field(default_factory=dict)
    hashes: dict[tuple[str, int, int], str] = field(default_factory=dict)
    portfolio: tuple[tuple[Any, ...], dict[str, Any]] | None = None

    # -- placeholders substituted per request (the rendered page is shared between sessions) --
    @property
    def csrf_slot(self) -> str:
        return self.placeholder + "-csrf"

    @property
    def reviewer_slot(self) -> str:
        return self.placeholder + "-reviewer"


class ForgedIdentity(Exception):
    """A request naming its reviewer in the identity header from an address that is no trusted proxy."""


@dataclass(frozen=True)
class Who:
    """Who sent a request: ``user`` (None: nobody known), ``via`` (``login``, ``proxy`` or None) and
    ``expired`` (the browser's login session ended: idle or too old)."""

    user: str | None = None
    via: str | None = None
    expired: bool = False


def _account_active(state: DecideState, name: str) -> bool:
    """Whether the account ``name`` still exists and is not disabled."""
    from sqlmodel import Session

    from tasks.store.accounts import find_account
    from tasks.store.persist import get_engine

    if state.database_url is None:
        return False
    with Session(get_engine(state.database_url)) as session:
        row = find_account(session, name)
        return row is not None and not row.disabled


def identify(state: DecideState, peer: str, header_value: str | None, session_id: str) -> Who:
    """Who sent a request from ``peer`` (its TCP address) with the identity header's value
    ``header_value`` and the session cookie ``session_id``.

    The header names the reviewer only from a trusted proxy (:meth:`IdentityPolicy.trusts`); from
    any other address it raises :class:`ForgedIdentity`. Else a logged-in session names them, while
    it is younger than ``max_s``, was used within ``idle_s`` and its account is active; an ended
    session is dropped (``expired``)."""
    named = clean_reviewer(header_value or "")
    if header_value is not None and not state.identity.trusts(peer):
        raise ForgedIdentity(peer)
    if named:
        return Who(named, "proxy")
    now = state.clock()
    with state.sessions_lock:
        current = state.sessions.get(session_id)
        if current is None or current.user is None:
            return Who()
        if now - current.seen > state.identity.idle_s or now - current.created > state.identity.max_s:
            del state.sessions[session_id]
            return Who(expired=True)
        current.seen = now
        user = current.user
    if not _account_active(state, user):
        with state.sessions_lock:
            state.sessions.pop(session_id, None)
        return Who(expired=True)
    return Who(user, "login")


def anonymous_session(state: DecideState, session_id: str) -> str:
    """``session_id`` when it names a session of this server, else a new anonymous one (its id):
    the login form's CSRF token binds to it."""
    now = state.clock()
    with state.sessions_lock:
        if session_id in state.sessions:
            return session_id
        _forget_old(state, now)
        sid = new_session()
        state.sessions[sid] = LoginSession(None, now, now)
        return sid


def _forget_old(state: DecideState, now: float) -> None:
    """Drop sessions past their lifetime (called under the lock, when a new one starts)."""
    for sid in [
        k
        for k, v in state.sessions.items()
        if now - v.seen > state.identity.idle_s or now - v.created > state.identity.max_s
    ]:
        del state.sessions[sid]


def start_login_session(state: DecideState, old_id: str, user: str) -> str:
    """A new session id for ``user`` after a good login; the old (anonymous) id is dropped (a new id
    at login: OWASP Session Management Cheat Sheet, "renew the session ID after any privilege
    level change")."""
    now = state.clock()
    with state.sessions_lock:
        state.sessions.pop(old_id, None)
        sid = new_session()
        state.sessions[sid] = LoginSession(user, now, now)
        return sid


def end_session(state: DecideState, session_id: str) -> None:
    """Log out: the session is forgotten."""
    with state.sessions_lock:
        state.sessions.pop(session_id, None)


def accounts_exist(state: DecideState) -> bool:
    """Whether the review database holds an account that may log in."""
    from sqlmodel import Session

    from tasks.store.accounts import has_accounts
    from tasks.store.persist import get_engine

    if state.database_url is None:
        return False
    with Session(get_engine(state.database_url)) as session:
        return has_accounts(session)


def needs_identity(state: DecideState) -> bool:
    """Whether every page asks who is there: a review database and an account, a trusted proxy or
    a non-loopback address. (A loopback server without accounts or proxy shows the reports
    read-only; a server without a database is a read-only folder on the loopback address.)"""
    if state.database_url is None:
        return False
    return bool(state.identity.proxies) or not state.identity.loopback or accounts_exist(state)


def login(state: DecideState, name: str, password: str) -> Any:
    """Check a login against the accounts (:func:`tasks.store.accounts.check_login`, which records
    the attempt, at the time of ``state.clock``): returns its
    :class:`~tasks.store.accounts.LoginOutcome`. A refused login is logged (WARNING) with its
    reason, and a lock it sets with the failed logins that caused it; the password never is."""
    from sqlmodel import Session

    from tasks.store.accounts import check_login
    from tasks.store.persist import get_engine

    assert state.database_url is not None
    now = datetime.fromtimestamp(state.clock(), UTC)
    with Session(get_engine(state.database_url)) as session:
        outcome = check_login(
            session, name, password[:MAX_PASSWORD_CHARS], state.identity.attempts, state.identity.lockout_s, now
        )
    _log_login(outcome, name, state.identity.attempts)
    return outcome


def _log_login(outcome: Any, typed: str, attempts: int) -> None:
    """The operator's lines for one login (:class:`~tasks.store.accounts.LoginOutcome`): who (the
    account, or the name as typed, quoted and cut at 80 characters), the reason, and for a locked or
    disabled account whether the password was right."""
    from tasks.store.accounts import REFUSAL_REASONS

    who = outcome.account if outcome.account is not None else " ".join(typed.split())[:80]
    if outcome.ok:
        logger.info("login: %r", who)
        return
    why = REFUSAL_REASONS.get(outcome.reason, outcome.reason)
    if outcome.reason == "password":
        why += f" ({outcome.failed_logins} of {attempts} failed logins)"
    elif outcome.reason in ("locked", "disabled"):
        if outcome.reason == "locked" and outcome.locked_until is not None:
            why += " until " + _utc(outcome.locked_until)
        why += f" (the password was {'right' if outcome.password_ok else 'wrong'})"
    logger.warning("login refused for %r: %s", who, why)
    if outcome.locked_now:
        logger.warning(
            "account %r locked until %s after %d failed logins (docreview users unlock %s ends it sooner)",
            who,
            _utc(outcome.locked_until),
            outcome.failed_logins,
            who,
        )


def _utc(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if at is not None else "later"


def login_page(state: DecideState, token: str, target: str, message: str = "") -> bytes:
    """The login form (name, password, CSRF token bound to the browser's anonymous session), with
    ``message`` above it and ``target`` (a report path of this server) to return to."""
    esc = html.escape
    body = (
        "<!doctype html><meta charset='utf-8'><title>docreview: log in</title>"
        "<style>body{font:15px system-ui,sans-serif;margin:32px;max-width:520px}label{display:block;margin:10px 0 2px}"
        "input{font:inherit;padding:4px 8px;width:100%;box-sizing:border-box}button{margin-top:14px;font:inherit;"
        "padding:4px 16px}.msg{background:#fff7e0;border:1px solid #f0d58a;padding:8px 12px;border-radius:6px}</style>"
        "<h1>Log in to decide</h1>"
        + (f"<p class='msg'>{esc(message)}</p>" if message else "")
        + "<form method='post' action='/login'>"
        f"<input type='hidden' name='csrf' value='{esc(token)}'><input type='hidden' name='next' value='{esc(target)}'>"
        "<label for='name'>Reviewer</label><input id='name' name='name' autocomplete='username' required>"
        "<label for='password'>Password</label>"
        "<input id='password' name='password' type='password' autocomplete='current-password' required>"
        "<button type='submit'>Log in</button></form>"
        + (
            ""
            if accounts_exist(state)
            else "<p>No reviewer account exists yet: an administrator adds one with "
            "<code>docreview users add NAME</code>.</p>"
        )
    )
    return body.encode("utf-8")


def login_refusal(outcome: Any) -> tuple[int, str]:
    """``(HTTP status, message)`` for a failed login (:class:`~tasks.store.accounts.LoginOutcome`):
    ``(401, LOGIN_REFUSED)`` whatever the reason — unknown name, wrong password, locked or disabled
    account — so the answer tells nobody which names exist (the reason is in the server's log)."""
    return 401, LOGIN_REFUSED


class DecisionError(Exception):
    """A decision that cannot be recorded: ``status`` (400, 403, 404, 503) and a message for the
    reviewer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def report_run(report_dir: Path) -> dict[str, Any] | None:
    """The ``run`` object of ``report_dir/report.json`` plus its documents' ``{sha256: source}``
    as ``run["sources"]``; None when the file is missing or unreadable."""
    try:
        data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
        run = dict(data["run"])
        run["sources"] = {d["sha256"]: d["source"] for d in data.get("documents", []) if d.get("sha256")}
        str(run["id"])
        return run
    except (OSError, ValueError, KeyError, TypeError):
        return None


def decisions_version(database_url: str) -> tuple[int, int]:
    """``(count, largest id)`` of ``reviewer_decisions``: changes with every decision written
    (by this server, ``docreview decide`` or another server), so it keys the page cache."""
    from sqlalchemy import func
    from sqlmodel import Session, select

    from schemas.tables import ReviewerDecision
    from tasks.store.persist import get_engine

    with Session(get_engine(database_url)) as session:
        count, top = session.exec(select(func.count(), func.max(ReviewerDecision.id))).one()
    return int(count or 0), int(top or 0)


def live_page(state: DecideState, report_dir: Path, back: str, forms: bool = True) -> str | None:
    """The report of ``report_dir`` rendered from the database, with the decision forms (``forms``)
    or read-only, its CSRF and reviewer fields as :class:`DecideState` placeholders; cached until a
    decision is written or ``report.json`` changes. None when there is no database, no readable
    ``report.json``, or the database does not hold the run (the caller then serves the static file)."""
    if state.database_url is None:
        return None
    run = report_run(report_dir)
    if run is None:
        return None
    try:
        stamp = (run["id"], (report_dir / "report.json").stat().st_mtime_ns, decisions_version(state.database_url))
    except OSError:
        return None
    key = (str(report_dir), forms)
    with state.render_lock:
        cached = state.pages.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        from tasks.observe.report import build_report, render_html

        try:
            report = build_report(
                state.database_url, run["id"], bool(run.get("offline")), run.get("playbook"), run.get("endpoint")
            )
        except KeyError:
            return None
        page = render_html(report)
        page = _with_static_plots(page, report_dir / "report.html")
        page = decorate(page, report, run["id"], back, state) if forms else read_only(page)
        state.pages[key] = (stamp, page)
        return page


#: Request paths of the portfolio: its page and its calendar.
PORTFOLIO_PATHS = ("/portfolio", "/portfolio.html")
PORTFOLIO_CALENDAR_PATH = "/portfolio.ics"


def portfolio_data(state: DecideState) -> dict[str, Any] | None:
    """The portfolio of the review database (:func:`tasks.observe.portfolio.portfolio`, deadlines as of
    today, UTC), built again only when a run, a version link or a decision was written since, or the day
    changed; None without a database."""
    from tasks.observe.deadlines import today_utc
    from tasks.observe.portfolio import portfolio, portfolio_stamp

    if state.database_url is None:
        return None
    today = today_utc()
    stamp = (today.isoformat(), *portfolio_stamp(state.database_url))
    with state.render_lock:
        if state.portfolio is not None and state.portfolio[0] == stamp:
            return state.portfolio[1]
        data = portfolio(state.database_url, today)
        state.portfolio = (stamp, data)
        return data


def portfolio_page(state: DecideState) -> str | None:
    """The portfolio page (:func:`tasks.observe.portfolio.render_portfolio_html`): each contract linked to
    its section in the report of the run that last reviewed it when that report is in the folder, and the
    portfolio's calendar at :data:`PORTFOLIO_CALENDAR_PATH`; None without a database."""
    from tasks.observe.portfolio import render_portfolio_html

    data = portfolio_data(state)
    if data is None:
        return None

    def link(entry: dict[str, Any]) -> str | None:
        run_id = str(entry["run_id"])
        if not (state.folder / "runs" / run_id / "report.html").is_file():
            return None
        return f"/runs/{urllib.parse.quote(run_id, safe='')}/report.html#{entry['report_anchor']}"

    return render_portfolio_html(data, link, PORTFOLIO_CALENDAR_PATH)


def portfolio_ics(state: DecideState) -> bytes | None:
    """The portfolio's calendar (:func:`tasks.observe.portfolio.portfolio_calendar`: every upcoming deadline of
    every listed contract); None without a database."""
    from tasks.observe.portfolio import portfolio_calendar

    data = portfolio_data(state)
    return None if data is None else portfolio_calendar(data["documents"])


def read_only(page: str) -> str:
    """``page`` with a bar saying decisions need a reviewer account (no forms)."""
    bar = (
        '<div class="dr-bar">Read-only: deciding here needs a reviewer account. An administrator adds one with '
        '<code>docreview users add NAME</code>; you then log in at <a href="/login">/login</a>.</div>'
    )
    page = page.replace("</head>", _STYLE + "</head>", 1)
    return re.sub(r"<main>", lambda m: m.group(0) + bar, page, count=1)


def warm_up(state: DecideState, report_dir: Path) -> None:
    """Render ``report_dir``'s report once (opens and migrates the database, loads the report
    code: about 2 s) so the first reviewer does not wait; a failure is left for that request."""
    try:
        live_page(state, report_dir, "/report.html")
    except Exception:  # the first request reports it
        return


def _with_static_plots(page: str, static: Path) -> str:
    """``page`` with the run's own plots section copied from its static ``report.html``."""
    try:
        text = static.read_text(encoding="utf-8")
    except OSError:
        return page
    plots = re.search(r'<section class="plots">.*?</section>', text, re.S)
    if plots is None or '<section class="plots">' in page:
        return page
    at = page.find('<section class="doc"')
    at = at if at >= 0 else page.find("</main>")
    return page if at < 0 else page[:at] + plots.group(0) + "\n" + page[at:]


def _form(state: DecideState, ids: list[str], back: str, label: str, taxonomy: str | None = None) -> str:
    """One decision form for the items ``ids`` (a finding, an absence, or a playbook result's
    findings): a note, Approve, Reject and, for a finding (``taxonomy``: the datalist of its
    categories, ``dr-cuad`` or ``dr-filing``), a category to reclassify it as."""
    esc = html.escape
    reclassify = (
        f'<input name="category" list="{taxonomy}" placeholder="reclassify as…" maxlength="80" '
        'aria-label="category to reclassify as" title="the category this passage is, e.g. Non-Compete">'
        '<button type="submit" name="decision" value="reclassify">Reclassify</button>'
        if taxonomy
        else ""
    )
    return (
        f'<form class="dr-decide" method="post" action="/decide" aria-label="{esc(label)}">'
        f'<input type="hidden" name="csrf" value="{state.csrf_slot}">'
        f'<input type="hidden" name="id" value="{esc(",".join(ids))}">'
        f'<input type="hidden" name="back" value="{esc(back)}">'
        f'<input name="note" placeholder="note (optional)" maxlength="{MAX_NOTE_CHARS}" aria-label="note">'
        '<button type="submit" name="decision" value="approve">Approve</button>'
        '<button type="submit" name="decision" value="reject">Reject</button>' + reclassify + "</form>"
    )


def _datalists() -> str:
    """The categories a finding can be reclassified as: CUAD's (``dr-cuad``) and the filing
    topics (``dr-filing``), each option its label."""
    from schemas.filings import FILING_LABELS
    from schemas.taxonomy import ClauseType, label

    cuad = "".join(f'<option value="{html.escape(label(c))}">' for c in ClauseType)
    filing = "".join(f'<option value="{html.escape(v)}">' for v in FILING_LABELS.values())
    return f'<datalist id="dr-cuad">{cuad}</datalist><datalist id="dr-filing">{filing}</datalist>'


def _taxonomy(clause_type: str) -> str:
    from schemas.filings import FilingTopic

    return "dr-filing" if clause_type in {t.value for t in FilingTopic} else "dr-cuad"


def source_link(run_id: str, document: dict[str, Any], finding: dict[str, Any]) -> str:
    """HTML for a link to ``document``'s source where ``finding`` is: ``/source/<run>/<sha256>#page=N`` for
    a local file (``#page`` for a PDF's own page only), else the source named without a link (S3, or gone).
    The link says where in the words of the finding's locator (its ``where``, report.json): "open the source
    at page 17", "at page 6 (printed 4)", "at § 7.2 Limitation of Liability, paragraph 3" (a DOCX has no page)."""
    source = str(document.get("source") or "")
    sha = document.get("sha256") or ""
    located = Locator.model_validate(finding.get("where") or {"page": finding.get("page")})
    place = located.place()
    where = f" at {place}" if place != "document" else ""
    if not source or not sha or "://" in source:
        return f'<div class="dr-source">source: <code>{html.escape(source)}</code>{html.escape(where)} (not served: not a local file)</div>'
    if not Path(source).is_file():
        return f'<div class="dr-source">source: <code>{html.escape(source)}</code> (not found on this machine)</div>'
    page = located.page if located.page_basis in (None, "pdf") else None
    anchor = f"#page={page}" if page and source.lower().endswith(".pdf") else ""
    href = f"/source/{urllib.parse.quote(run_id, safe='')}/{sha}{anchor}"
    return f'<div class="dr-source"><a href="{html.escape(href)}" target="_blank" rel="noopener">open the source{html.escape(where)}</a></div>'


def _decided(decision: dict[str, Any] | None) -> str:
    if not decision:
        return "undecided"
    done = {"approve": "approved", "reject": "rejected", "reclassify": "reclassified"}.get(
        decision["decision"], decision["decision"]
    )
    who = f" by {decision['reviewer']}" if decision.get("reviewer") else ""
    return done + who + (f" — {decision['note']}" if decision.get("note") else "")


def decorate(page: str, report: dict[str, Any], run_id: str, back: str, state: DecideState) -> str:
    """``page`` (the rendered report of ``report``) with the decision controls: a form and a source
    link in each finding's row, a panel of absences and playbook results under each document's
    heading, a bar saying how decisions are kept. Items the page does not show are left alone."""
    esc = html.escape
    for anchor, document in enumerate(report["documents"], 1):
        for f in document.get("findings") or []:
            fid = str(f["id"])
            taxonomy = _taxonomy(str(f.get("claimed_clause_type") or f["clause_type"]))
            extra = _form(state, [fid], back, f"decide finding {fid}", taxonomy) + source_link(run_id, document, f)
            page = _after_hint(page, fid, extra)
        items: list[str] = []
        absences = document.get("absences") or []
        for a in absences:
            items.append(
                f'<div class="dr-item">Missing {esc(a["clause_label"])} <code>{esc(a["id"])}</code>'
                + (f" (the playbook wants it absent: rule {esc(a['wanted_by'])})" if a.get("wanted_by") else "")
                + f" · {esc(_decided(a.get('decision')))}"
                + _form(state, [a["id"]], back, f"decide absence {a['id']}")
                + "</div>"
            )
        by_id = {str(f["id"]): f for f in document.get("findings") or []}
        for r in document.get("playbook") or []:
            ids = [str(i) for i in r.get("finding_ids") or [] if str(i) in by_id]
            target = ids
            what = "; ".join(f"finding {i}: {_decided(by_id[i].get('decision'))}" for i in ids)
            if not ids:
                absent = [a for a in absences if a["clause_type"] == r.get("clause")]
                target = [absent[0]["id"]] if absent else []
                what = f"absence {absent[0]['id']}: {_decided(absent[0].get('decision'))}" if absent else ""
            line = (
                f'<div class="dr-item">Playbook rule <b>{esc(str(r["rule"]))}</b>: {esc(str(r["status"]))}'
                f" ({esc(str(r['severity']))})"
            )
            if target:
                line += f" · decides {esc(what)}" + _form(state, target, back, f"decide playbook rule {r['rule']}")
            else:
                line += " · no finding or absence to decide"
            items.append(line + "</div>")
        if items:
            panel = (
                '<div class="dr-panel"><h3>Decide: missing clauses and playbook results</h3>'
                '<p class="sub">A playbook result is decided on the findings it rests on (or the absence); '
                "the next run applies the rule again.</p>" + "".join(items) + "</div>"
            )
            page = _after_doc_heading(page, anchor, panel)
    bar = (
        f'<div class="dr-bar">Deciding as <b>{state.reviewer_slot}</b>: approve, reject or reclassify each finding, '
        "and approve or reject each missing clause and playbook result. Decisions go to the review database with "
        "your name and the time (as <code>docreview decide</code>); the latest wins and the history is kept "
        f"(<code>docreview audit show ID</code>).{_logout_slot(state)}</div>"
    )
    page = page.replace("</head>", _STYLE + "</head>", 1)
    return re.sub(r"<main>", lambda m: m.group(0) + bar + _datalists(), page, count=1)


def _logout_slot(state: DecideState) -> str:
    """Where a request's logout form goes (empty for a reviewer named by a proxy)."""
    return state.placeholder + "-logout"


def logout_form(token: str) -> str:
    """The bar's log-out button (a POST with the CSRF token)."""
    return (
        '<form class="dr-logout" method="post" action="/logout">'
        f'<input type="hidden" name="csrf" value="{html.escape(token)}"><button type="submit">Log out</button></form>'
    )


def _after_hint(page: str, fid: str, extra: str) -> str:
    """Insert ``extra`` after finding ``fid``'s decide hint or decision line, inside its row
    (``<tr id="f-<id>">``); as a row of its own after it when neither is found."""
    start = page.find(f'<tr id="f-{fid}"')
    if start < 0:
        return page
    end = page.find("</tr>", start)
    if end < 0:
        return page
    row = page[start:end]
    hint = re.search(r'<div class="(?:cmd|decision)">.*?</div>', row, re.S)
    if hint is not None:
        at = start + hint.end()
        return page[:at] + extra + page[at:]
    at = end + len("</tr>")
    return page[:at] + f'<tr class="dr-row"><td colspan="9">{extra}</td></tr>' + page[at:]


def _after_doc_heading(page: str, anchor: int, panel: str) -> str:
    """Insert ``panel`` after the heading (and its summary line) of document section ``doc-<anchor>``."""
    start = page.find(f'<section class="doc" id="doc-{anchor}">')
    if start < 0:
        return page
    head = re.compile(r'</h2>\s*(?:<div class="sub">.*?</div>)?', re.S).search(page, start)
    nxt = page.find("<section", start + 1)
    if head is None or (nxt >= 0 and head.start() > nxt):
        return page
    return page[: head.end()] + panel + page[head.end() :]


def fill(page: str, state: DecideState, token: str, reviewer: str, logout: bool = True) -> str:
    """The cached page for one request: its CSRF token, the reviewer's name (escaped) and, for a
    logged-in reviewer (``logout``), the log-out button in place."""
    page = page.replace(_logout_slot(state), logout_form(token) if logout else "")
    return page.replace(state.csrf_slot, token).replace(state.reviewer_slot, html.escape(reviewer, quote=True))


def parse_ids(raw: str) -> list[str]:
    """The item ids of a form's ``id`` field (``"12"``, ``"A3"``, ``"12,15"``), normalised
    (``a3`` → ``A3``). Raises :class:`DecisionError` (400) for an empty or malformed list."""
    ids = [p.strip() for p in raw.split(",") if p.strip()]
    if not ids or len(ids) > 200 or not all(_ID.match(i) for i in ids):
        raise DecisionError(
            400, f"not a finding id: {raw[:60]!r} (a number from the report, or A<n> for an absence): nothing recorded"
        )
    return [i.upper() for i in ids]


def record(
    state: DecideState, ids: list[str], decision: str, reviewer: str, note: str, category: str = ""
) -> list[tuple[str, int, bool]]:
    """Record ``decision`` by ``reviewer`` (the request's identity) on every item of ``ids`` through
    :func:`cli.queue.record_decision`; all ids are checked first, so an unknown one writes
    nothing. ``category``: a ``reclassify``'s new category (name or value). Returns ``[(id, decision
    seq, created)]``.

    Raises :class:`DecisionError`: 503 without a database, 400 for a bad decision, a reclassify
    without a known category (or of an absence), a missing reviewer or a long note, 404 for an id
    the database does not hold."""
    from sqlmodel import Session, select

    from cli.queue import DECISIONS, _resolve, category_of, record_decision
    from schemas.tables import FindingRow
    from tasks.store.persist import get_engine

    if state.database_url is None:
        raise DecisionError(503, "this server has no review database (start it with --db): nothing recorded")
    if decision not in DECISIONS:
        raise DecisionError(400, "decision must be approve, reject or reclassify: nothing recorded")
    if not reviewer:
        raise DecisionError(400, "log in to decide: nothing recorded")
    if len(note) > MAX_NOTE_CHARS:
        raise DecisionError(400, f"the note is longer than {MAX_NOTE_CHARS} characters: nothing recorded")
    if decision == "reclassify" and not category.strip():
        raise DecisionError(400, "name the category to reclassify as: nothing recorded")
    with state.decide_lock:
        with Session(get_engine(state.database_url)) as session:
            for item in ids:
                try:
                    kind, key = _resolve(session, item)
                except KeyError as exc:
                    raise DecisionError(404, f"{exc.args[0]}: nothing recorded") from None
                if decision != "reclassify":
                    continue
                if kind != "finding":
                    raise DecisionError(400, "only a finding can be reclassified: nothing recorded")
                current = session.exec(select(FindingRow).where(FindingRow.finding_key == key)).one()
                try:
                    category_of(category, current.clause_type)
                except ValueError as exc:
                    raise DecisionError(400, f"{exc}: nothing recorded") from None
        out = []
        for item in ids:
            row, created = record_decision(
                state.database_url,
                item,
                decision,
                note,
                reviewer=reviewer,
                category=category if decision == "reclassify" else None,
            )
            out.append((item, row.seq, created))
    return out


def source_file(state: DecideState, run_id: str, sha: str) -> Path | None:
    """The local file document ``sha`` of run ``run_id`` was read from, when the run's report is in
    the folder, the file still exists and its SHA-256 is still ``sha``; else None."""
    if run_id in (".", ".."):
        return None
    candidates = [state.folder / "runs" / run_id, state.folder]
    for report_dir in candidates:
        run = report_run(report_dir)
        if run is None or run["id"] != run_id or sha not in run["sources"]:
            continue
        source = str(run["sources"][sha])
        if "://" in source:
            return None
        path = Path(source)
        try:
            st = path.stat()
        except OSError:
            return None
        if not path.is_file():
            return None
        key = (str(path), st.st_size, st.st_mtime_ns)
        digest = state.hashes.get(key)
        if digest is None:
            h = hashlib.sha256()
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            digest = state.hashes[key] = h.hexdigest()
        return path if hmac.compare_digest(digest, sha) else None
    return None


def cookies(header: str | None) -> dict[str, str]:
    """A ``Cookie`` header as ``{name: value}`` (values URL-decoded); a malformed header is empty."""
    jar = http.cookies.SimpleCookie()
    try:
        jar.load(header or "")
    except http.cookies.CookieError:
        return {}
    return {k: urllib.parse.unquote(m.value) for k, m in jar.items()}


def same_origin(origin: str | None, host: str | None) -> bool:
    """Whether a request's ``Origin`` header names this server (``Host``); a request without an
    ``Origin`` passes (older clients, curl) — the CSRF token still has to match."""
    if not origin:
        return True
    if origin == "null" or not host:
        return False
    return urllib.parse.urlsplit(origin).netloc.lower() == host.lower()


def message_page(title: str, message: str, back: str = "/report.html") -> bytes:
    """A small HTML page saying what happened, with a link back to the report."""
    return (
        "<!doctype html><meta charset='utf-8'><title>docreview: "
        + html.escape(title)
        + "</title><style>body{font:15px system-ui,sans-serif;margin:32px;max-width:760px}</style>"
        + f"<h1>{html.escape(title)}</h1><p>{html.escape(message)}</p>"
        + f"<p><a href='{html.escape(back)}'>Back to the report</a></p>"
    ).encode("utf-8")


def report_dir_of(folder: Path, path: str) -> Path | None:
    """The report folder a request path shows (``/report.html`` → ``folder``,
    ``/runs/<id>/report.html`` → ``folder/runs/<id>``), or None for any other path."""
    m = _REPORT_PATH.match(path)
    if m is None:
        return None
    if m.group(1) is None:
        return folder
    if m.group(1) in (".", ".."):
        return None
    return folder / "runs" / m.group(1)


def safe_back(raw: str) -> str:
    """Where to send the browser after a decision: ``raw`` when it is a report path of this server
    (never another site: no open redirect), else ``/report.html``."""
    return raw if _REPORT_PATH.match(raw or "") else "/report.html"


def source_path_match(path: str) -> tuple[str, str] | None:
    """``(run id, sha256)`` of a ``/source/<run id>/<sha256>`` request path, else None."""
    m = _SOURCE_PATH.match(path)
    return (m.group(1), m.group(2)) if m else None


def new_session() -> str:
    """A fresh random browser-session id (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def content_type(path: Path) -> str:
    """MIME type a source file is sent with: ``application/pdf`` for a PDF, else
    ``application/octet-stream`` (sent as a download)."""
    return "application/pdf" if path.suffix.lower() == ".pdf" else "application/octet-stream"


def file_size(path: Path) -> int:
    """Size of ``path`` in bytes."""
    return os.stat(path).st_size
