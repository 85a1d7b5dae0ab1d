"""``docreview report serve``: the reports of a report folder over HTTP, and decisions on them.

``docreview review`` writes each run's report to ``OUT/runs/<run id>/report.{html,json}`` and the
latest run's to ``OUT/report.{html,json}``. This command serves that folder so that the link in a
run's Prefect artifact opens from another machine: start it with the folder, then set
``DOCREVIEW_REPORT_URL_BASE`` to the URL it prints (artifacts then link
``<base>/runs/<run id>/report.html``). ``/`` opens the latest report; ``/runs/`` lists the kept ones.
Only files inside the folder are served (the standard library's ``SimpleHTTPRequestHandler``
resolves paths below its ``directory``).

With a review database (``--db``, or the configured one when it exists) the reports are served
live from it with approve / reject / reclassify on each finding, absence and playbook result:
reviewers log in (``/login``, accounts of ``docreview users add``) or a trusted proxy names them,
POST ``/decide`` records a decision as ``docreview decide`` does with that reviewer, and
``/source/<run id>/<sha256>`` serves a run's own source file (a PDF opens at ``#page=N``);
``/portfolio`` lists every contract reviewed into the database, once, at its latest version, and
``/portfolio.ics`` is their calendar (:mod:`tasks.observe.portfolio`). The rules
— identity, sessions, CSRF token, what is served — are in :mod:`cli.report_server`. Without a
database the folder is served read-only: only GET and HEAD are answered.
"""

from __future__ import annotations

import functools
import hmac
import html
import http.server
import json
import os
import shutil
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape

from cli import report_server as rs
from cli.common import console, err, serve_until_interrupted

report_app = typer.Typer(no_args_is_help=True, help="The HTML/JSON reports: serve a report folder over HTTP.")


class ReportRequestHandler(http.server.SimpleHTTPRequestHandler):
    """Serves one report folder: ``/`` redirects (302) to ``/report.html``; ``/runs/`` is a table
        of the kept runs, newest first (:func:`runs_index`); ``/portfolio`` and ``/portfolio.ics`` the portfolio
    and its calendar (with a database); ``/login`` and ``/logout`` start and end a
        reviewer's session; a path that resolves outside the folder (``..``, or a symbolic link
        pointing out) is 404; no request logging on the console (an operator sees one line when the
        server starts)."""

    #: Shared by the server's threads; set by :func:`make_report_server` (read-only without a database).
    state: rs.DecideState | None = None

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _session_id(self) -> str:
        return rs.cookies(self.headers.get("Cookie")).get(rs.SESSION_COOKIE, "")

    def _who(self, head: bool = False) -> rs.Who | None:
        """Who sent this request (:func:`cli.report_server.identify`); None after refusing it (403: the
        identity header from an address that is no trusted proxy)."""
        state = self.state
        if state is None:
            return rs.Who()
        header = state.identity.header
        try:
            return rs.identify(state, self.client_address[0], self.headers.get(header), self._session_id())
        except rs.ForgedIdentity:
            body = rs.message_page(
                "Refused",
                f"This request names its reviewer in the {header} header but does not come from a trusted proxy "
                f"({rs.PROXIES_SETTING}): refused, nothing recorded.",
            )
            self._send(403, body, head=head)
            return None

    def _admit(self, head: bool = False) -> rs.Who | None:
        """Who sent a GET or HEAD; when the server needs an identity (:func:`cli.report_server.needs_identity`)
        and there is none, the browser is sent to ``/login`` (303) and None is returned."""
        who = self._who(head)
        state = self.state
        if who is None or who.user is not None or state is None or not rs.needs_identity(state):
            return who
        path = urllib.parse.urlsplit(self.path).path
        query = urllib.parse.urlencode({"next": rs.safe_back(path), **({"expired": "1"} if who.expired else {})})
        self.send_response(303)
        self.send_header("Location", f"/login?{query}")
        self.send_header("Content-Length", "0")
        self.end_headers()
        return None

    def _cookie(self, session: str) -> str:
        return f"{rs.SESSION_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict"

    def _live(self, who: rs.Who, head: bool = False) -> bool:
        """Serve a report page rendered from the database, with the decision forms when the request
        names a reviewer; False when this path is not a report page or the report cannot be rendered
        (the static file is served)."""
        state = self.state
        path = urllib.parse.urlsplit(self.path).path
        report_dir = rs.report_dir_of(Path(self.directory), path) if state is not None else None
        if state is None or report_dir is None:
            return False
        forms = who.user is not None
        try:
            page = rs.live_page(state, report_dir, path, forms=forms)
        except Exception as exc:  # a database that cannot be read: say so, no traceback
            body = rs.message_page("Review database unavailable", f"{type(exc).__name__}: {str(exc)[:300]}")
            self._send(503, body, head=head)
            return True
        if page is None:
            return False
        headers = {"Content-Security-Policy": rs.PAGE_CSP, "Referrer-Policy": "same-origin"}
        session = self._session_id()
        if who.via != "login":  # a proxy's reviewer, or a reader: the CSRF token binds to an anonymous session
            fresh = rs.anonymous_session(state, session)
            if fresh != session:
                session = fresh
                headers["Set-Cookie"] = self._cookie(session)
        token = rs.csrf_token(state.secret, session)
        body = rs.fill(page, state, token, who.user or "", logout=who.via == "login").encode("utf-8")
        self._send(200, body, headers, head=head)
        return True

    def _source(self) -> bool:
        """``/source/<run id>/<sha256>``: the run's own source file (:func:`cli.report_server.source_file`)."""
        match = rs.source_path_match(urllib.parse.urlsplit(self.path).path)
        if match is None or self.state is None:
            return False
        path = rs.source_file(self.state, *match)
        if path is None:
            body = rs.message_page(
                "Source not served",
                "Only a local source file of a run in this report folder is served, and only while it is unchanged "
                "since the run (same SHA-256).",
            )
            self._send(404, body)
            return True
        kind = rs.content_type(path)
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(rs.file_size(path)))
        quoted = urllib.parse.quote(path.name)
        if kind == "application/pdf":
            self.send_header("Content-Disposition", f"inline; filename*=UTF-8''{quoted}")
        else:  # a DOCX or an HTML filing: a download, never a page on this origin
            self.send_header("Content-Disposition", f"attachment; filename*=UTF-8''{quoted}")
            self.send_header("Content-Security-Policy", "sandbox")
        self.end_headers()
        with path.open("rb") as fh:
            shutil.copyfileobj(fh, self.wfile)
        return True

    def _portfolio(self, head: bool = False) -> bool:
        """``/portfolio`` (the page) and ``/portfolio.ics`` (its calendar): every contract reviewed into the
        review database, once, at its latest version (:func:`cli.report_server.portfolio_page`); False for
        any other path."""
        path = urllib.parse.urlsplit(self.path).path
        if path not in (*rs.PORTFOLIO_PATHS, rs.PORTFOLIO_CALENDAR_PATH):
            return False
        state = self.state
        if state is None or state.database_url is None:
            body = rs.message_page(
                "No portfolio here", "The portfolio is read from the review database: start the server with --db."
            )
            self._send(404, body, head=head)
            return True
        try:
            if path == rs.PORTFOLIO_CALENDAR_PATH:
                calendar = rs.portfolio_ics(state) or b""
                self.send_response(200)
                self.send_header("Content-Type", "text/calendar; charset=utf-8")
                self.send_header("Content-Length", str(len(calendar)))
                self.end_headers()
                if not head:
                    self.wfile.write(calendar)
                return True
            page = rs.portfolio_page(state) or ""
        except Exception as exc:  # a database that cannot be read: say so, no traceback
            body = rs.message_page("Review database unavailable", f"{type(exc).__name__}: {str(exc)[:300]}")
            self._send(503, body, head=head)
            return True
        headers = {"Content-Security-Policy": rs.PAGE_CSP, "Referrer-Policy": "same-origin"}
        self._send(200, page.encode("utf-8"), headers, head=head)
        return True

    def _login_form(self, message: str = "", status: int = 200, target: str | None = None) -> None:
        """``GET /login``: the login form, its CSRF token bound to the browser's anonymous session."""
        state = self.state
        if state is None or state.database_url is None:
            self._send(404, rs.message_page("No logins here", "This server shows a report folder read-only."))
            return
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        target = target or rs.safe_back((query.get("next") or [""])[0])
        if not message and (query.get("expired") or [""])[0] == "1":
            message = "Your session ended (too long without a request, or too long since you logged in): log in again."
        old = self._session_id()
        session = rs.anonymous_session(state, old)
        headers = {"Content-Security-Policy": rs.PAGE_CSP}
        if session != old:
            headers["Set-Cookie"] = self._cookie(session)
        self._send(status, rs.login_page(state, rs.csrf_token(state.secret, session), target, message), headers)

    def _login(self, form: dict[str, list[str]], session: str) -> None:
        """``POST /login``: check the name and password; a good login gets a new session (303 to the
        report it came from), a bad one the form again with one answer for every refusal (401: an
        unknown name, a wrong password, a locked or a disabled account are not told apart)."""
        assert self.state is not None

        def one(name: str) -> str:
            return (form.get(name) or [""])[0]

        target = rs.safe_back(one("next"))
        try:
            outcome = rs.login(self.state, one("name"), one("password"))
        except Exception as exc:  # the database failed: say so, no traceback
            self._send(503, rs.message_page("Not logged in", f"the review database failed ({type(exc).__name__})"))
            return
        if not outcome.ok:
            status, message = rs.login_refusal(outcome)
            self._login_form(message, status, target)
            return
        fresh = rs.start_login_session(self.state, session, outcome.name)
        self.send_response(303)
        self.send_header("Location", target)
        self.send_header("Set-Cookie", self._cookie(fresh))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        """``POST /decide`` (a decision from a report page's form), ``/login`` and ``/logout`` (see
        :mod:`cli.report_server`)."""
        state = self.state
        path = urllib.parse.urlsplit(self.path).path
        if state is None or state.database_url is None or path not in ("/decide", "/login", "/logout"):
            self.send_error(501, "Unsupported method ('POST')")
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > rs.MAX_FORM_BYTES:
            self._send(413, rs.message_page("Form too large", "The form is larger than a decision can be."))
            self.close_connection = True
            return
        form = urllib.parse.parse_qs(
            self.rfile.read(length).decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=20
        )

        def one(name: str) -> str:
            return (form.get(name) or [""])[0]

        back = rs.safe_back(one("back"))
        session = self._session_id()
        token = one("csrf")
        if not rs.same_origin(self.headers.get("Origin"), self.headers.get("Host")):
            self._send(403, rs.message_page("Refused", "This form was sent from another site: nothing recorded.", back))
            return
        if (
            not session
            or not token
            or not hmac.compare_digest(token.encode(), rs.csrf_token(state.secret, session).encode())
        ):
            self._send(
                403,
                rs.message_page(
                    "Form out of date",
                    "The form's security token is missing or stale (the report server restarted, you logged in or "
                    "out since, or the page belongs to another browser session): nothing recorded. Reload the "
                    "report and decide again.",
                    back,
                ),
            )
            return
        if path == "/login":
            self._login(form, session)
            return
        if path == "/logout":
            rs.end_session(state, session)
            self.send_response(303)
            self.send_header("Location", "/login")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        who = self._who()
        if who is None:
            return
        if who.user is None:
            message = (
                "Your session ended (too long without a request, or too long since you logged in): log in again. "
                "Nothing recorded."
                if who.expired
                else "Log in to decide: nothing recorded."
            )
            self._send(
                401,
                rs.message_page("Decision not recorded", message, "/login?" + urllib.parse.urlencode({"next": back})),
            )
            return
        try:
            ids = rs.parse_ids(one("id"))
            done = rs.record(state, ids, one("decision"), who.user, one("note"), one("category"))
        except rs.DecisionError as exc:
            self._send(exc.status, rs.message_page("Decision not recorded", exc.message, back))
            return
        except Exception as exc:  # the database failed: say so, no traceback
            message = f"the review database failed ({type(exc).__name__}: {str(exc)[:300]}); decide again"
            self._send(503, rs.message_page("Decision not recorded", message, back))
            return
        first = done[0][0]
        self.send_response(303)
        self.send_header("Location", back + (f"#f-{first}" if first.isdigit() else ""))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _redirected(self) -> bool:
        if self.path in ("/", "/index.html"):
            self.send_response(302)
            self.send_header("Location", "/report.html")
            self.end_headers()
            return True
        return False

    def do_GET(self) -> None:
        if urllib.parse.urlsplit(self.path).path == "/login":
            if self._who() is not None:
                self._login_form()
            return
        who = self._admit()
        if who is None or self._redirected() or self._live(who) or self._source() or self._portfolio():
            return
        if self.path.split("?", 1)[0] in ("/runs", "/runs/"):
            body = runs_index(Path(self.directory)).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def do_HEAD(self) -> None:
        who = self._admit(head=True)
        if (
            who is not None
            and not self._redirected()
            and not self._live(who, head=True)
            and not self._portfolio(head=True)
        ):
            super().do_HEAD()

    def translate_path(self, path: str) -> str:
        translated = super().translate_path(path)
        root = os.path.realpath(self.directory)
        real = os.path.realpath(translated)
        if real != root and not real.startswith(root + os.sep):
            return os.path.join(root, ".outside-the-report-folder")  # does not exist: 404
        return translated

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")  # the latest report changes with every run
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")  # the decision buttons never inside another site's frame
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


def runs_index(folder: Path, limit: int = 500) -> str:
    """An HTML table of the runs kept under ``folder/runs`` (newest first, at most ``limit``): run
    id (linking its report), start time (UTC), source, and documents reviewed/deferred/failed from
    its ``report.json``; a run whose JSON cannot be read is listed without them."""
    rows = []
    runs = sorted(
        (d for d in (folder / "runs").glob("*") if (d / "report.html").is_file()),
        key=lambda d: d.stat().st_mtime,
        reverse=True,
    )[:limit]
    for d in runs:
        try:
            run = json.loads((d / "report.json").read_text(encoding="utf-8"))["run"]
            m = run.get("metrics", {})
            cells = [
                str(run.get("started_at") or "")[:19].replace("T", " "),
                str(run.get("source") or ""),
                f"{m.get('documents_reviewed', 0)} / {m.get('documents_deferred', 0)} / {m.get('documents_failed', 0)}",
            ]
        except (OSError, ValueError, KeyError, TypeError):
            cells = ["", "", "(report.json unreadable)"]
        rows.append(
            f'<tr><td><a href="/runs/{html.escape(d.name)}/report.html"><code>{html.escape(d.name)}</code></a></td>'
            + "".join(f"<td>{html.escape(c)}</td>" for c in cells)
            + "</tr>"
        )
    return (
        "<!doctype html><meta charset='utf-8'><title>docreview runs</title>"
        "<style>body{font:14px system-ui,sans-serif;margin:24px}td,th{padding:4px 10px;text-align:left}</style>"
        f"<h1>docreview runs ({len(rows)})</h1><p><a href='/report.html'>latest report</a> · "
        "<a href='/portfolio'>portfolio</a></p>"
        "<table><tr><th>run</th><th>started (UTC)</th><th>source</th><th>reviewed / deferred / failed</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def make_report_server(
    folder: Path,
    host: str,
    port: int,
    database_url: str | None = None,
    identity: rs.IdentityPolicy | None = None,
    clock: Callable[[], float] | None = None,
) -> http.server.ThreadingHTTPServer:
    """An HTTP server (not yet serving) for the report folder ``folder`` on ``host:port``
    (port 0: any free port; read it from ``server.server_address``).

    ``database_url``: the review database; with it, report pages are rendered live with the
    decision forms for a reviewer who logged in or whom a trusted proxy names, and ``POST /decide``
    records decisions (:mod:`cli.report_server`); without it the folder is served read-only.
    ``identity``: the :class:`cli.report_server.IdentityPolicy` (default: logins only, the default
    session lifetimes and lockout, ``loopback`` from ``host``); ``clock``: seconds, for sessions
    and lockouts (default ``time.time``). This function does not check the bind address: :func:`serve` refuses a
    non-loopback one without accounts or a proxy. The server's ``state`` attribute is its
    :class:`cli.report_server.DecideState`.

    Raises ``OSError`` when the address cannot be bound (in use, not local)."""
    policy = identity or rs.IdentityPolicy(loopback=rs.is_loopback(host))
    state = rs.DecideState(folder=folder.resolve(), database_url=database_url, identity=policy)
    if clock is not None:
        state.clock = clock
    handler_class = type("BoundReportRequestHandler", (ReportRequestHandler,), {"state": state})
    handler = functools.partial(handler_class, directory=str(folder.resolve()))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.state = state  # type: ignore[attr-defined]
    return server


def review_database(db: str | None) -> tuple[str | None, str]:
    """The database ``report serve`` records decisions in, and a line saying so: ``--db`` (a
    missing SQLite file ends the command, exit 2: :func:`cli.common.stored_database`), else the
    configured one when it exists, else None (read-only, with the reason)."""
    from cli.checks import missing_database
    from cli.common import stored_database
    from schemas.settings import Settings

    if db:
        return stored_database(db), "Decisions: approve / reject / reclassify on each report page"
    url = Settings().database_url
    problem = missing_database(url)
    if problem:
        return None, f"Read-only (no decisions): {problem}; give --db"
    return url, "Decisions: approve / reject / reclassify on each report page"


@report_app.command("serve")
def serve(
    folder: Path = typer.Argument(Path("out"), help="The report folder (docreview review --out)."),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="Address to listen on (0.0.0.0: every interface; anything but loopback needs reviewer accounts "
        f"or {rs.PROXIES_SETTING}).",
    ),
    port: int = typer.Option(8088, "--port", min=0, max=65535, help="TCP port (0: any free port)."),
    db: str | None = typer.Option(
        None,
        "--db",
        help="Review database for decisions (default: DATABASE_URL or sqlite:///docreview.db if it exists).",
    ),
) -> None:
    """Serve FOLDER's reports with approve / reject / reclassify: / is the latest run's report, /runs/<run id>/report.html each kept one."""
    from cli.checks import load_settings

    if not (folder / "report.html").is_file():
        err.print(f"[red]error:[/] no report in {folder} (run `docreview review SOURCE --out {folder}` first)")
        raise typer.Exit(2)
    settings, problem = load_settings({})
    if settings is None:
        err.print(f"[red]error:[/] {escape(problem or 'the settings cannot be read')}")
        raise typer.Exit(2)
    if settings.report_password is not None:
        err.print(
            f"[red]error:[/] {rs.PASSWORD_SETTING} is no longer used: a shared password does not say who decided. "
            "Add each reviewer (docreview users add NAME) and unset it"
        )
        raise typer.Exit(2)
    database_url, decisions = review_database(db)
    policy = rs.IdentityPolicy.from_settings(settings, loopback=rs.is_loopback(host))
    state_probe = rs.DecideState(folder=folder, database_url=database_url, identity=policy)
    accounts = rs.accounts_exist(state_probe)
    if not policy.loopback and not (accounts or policy.proxies):
        err.print(
            f"[red]error:[/] listening on {escape(host)} lets other machines read the reports and decide: add reviewer "
            f"accounts (docreview users add NAME{'' if database_url else ', with --db'}) or set {rs.PROXIES_SETTING} to "
            "your authenticating proxy's address; or keep the default --host 127.0.0.1"
        )
        raise typer.Exit(2)
    try:
        server = make_report_server(folder, host, port, database_url, policy)
    except OSError as exc:
        err.print(f"[red]error:[/] cannot listen on {host}:{port}: {exc.strerror or exc}")
        raise typer.Exit(2) from None
    bound_host, bound_port = server.server_address[:2]  # the host as given (str; typeshed allows bytes too)
    host = bound_host.decode() if isinstance(bound_host, bytes | bytearray) else bound_host
    base = f"http://{host}:{bound_port}"
    console.print(f"Serving {folder.resolve()} at {base}/", highlight=False)
    console.print(f"Kept runs: {base}/runs/", highlight=False)
    if database_url is not None:
        console.print(f"Portfolio: {base}/portfolio (calendar: {base}/portfolio.ics)", highlight=False)
    console.print(decisions, highlight=False)
    if database_url is not None:
        who = []
        if accounts:
            who.append(f"reviewers log in at {base}/login (docreview users list)")
        if policy.proxies:
            who.append(f"a proxy at {', '.join(str(p) for p in policy.proxies)} names them in {policy.header}")
        console.print(
            "Who decides: "
            + (
                "; ".join(who) if who else "nobody yet: add a reviewer (docreview users add NAME); until then read-only"
            ),
            highlight=False,
        )
    console.print(f"Links in Prefect artifacts: DOCREVIEW_REPORT_URL_BASE={base}   (Ctrl-C stops)", highlight=False)
    if database_url is not None:  # open the database and render the latest report before the first reviewer asks
        warm = functools.partial(rs.warm_up, server.state, folder.resolve())  # type: ignore[attr-defined]
        threading.Thread(target=warm, name="report-warm-up", daemon=True).start()
    serve_until_interrupted(server)


def register(app: typer.Typer) -> None:
    """Add the ``report`` group to the ``docreview`` app."""
    app.add_typer(report_app, name="report")
