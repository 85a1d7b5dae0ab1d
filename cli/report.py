"""``docreview report serve``: the reports of a report folder over HTTP, read-only.

``docreview review`` writes each run's report to ``OUT/runs/<run id>/report.{html,json}`` and the
latest run's to ``OUT/report.{html,json}``. This command serves that folder so that the link in a
run's Prefect artifact opens from another machine: start it with the folder, then set
``DOCREVIEW_REPORT_URL_BASE`` to the URL it prints (artifacts then link
``<base>/runs/<run id>/report.html``). ``/`` opens the latest report; ``/runs/`` lists the kept ones.
Only files inside the folder are served (the standard library's ``SimpleHTTPRequestHandler``
resolves paths below its ``directory``); only GET and HEAD are answered.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
from pathlib import Path

import typer

from cli.common import console, err, serve_until_interrupted

report_app = typer.Typer(no_args_is_help=True, help="The HTML/JSON reports: serve a report folder over HTTP.")


class ReportRequestHandler(http.server.SimpleHTTPRequestHandler):
    """Serves one report folder: ``/`` redirects (302) to ``/report.html``; ``/runs/`` is a table
    of the kept runs, newest first (:func:`runs_index`); a path that resolves outside the folder
    (``..``, or a symbolic link pointing out) is 404; no request logging on the console (an
    operator sees one line when the server starts)."""

    def _redirected(self) -> bool:
        if self.path in ("/", "/index.html"):
            self.send_response(302)
            self.send_header("Location", "/report.html")
            self.end_headers()
            return True
        return False

    def do_GET(self) -> None:
        if self._redirected():
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
        if not self._redirected():
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
        f"<h1>docreview runs ({len(rows)})</h1><p><a href='/report.html'>latest report</a></p>"
        "<table><tr><th>run</th><th>started (UTC)</th><th>source</th><th>reviewed / deferred / failed</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def make_report_server(folder: Path, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """An HTTP server (not yet serving) for the report folder ``folder`` on ``host:port``
    (port 0: any free port; read it from ``server.server_address``).

    Raises ``OSError`` when the address cannot be bound (in use, not local)."""
    handler = functools.partial(ReportRequestHandler, directory=str(folder.resolve()))
    return http.server.ThreadingHTTPServer((host, port), handler)


@report_app.command("serve")
def serve(
    folder: Path = typer.Argument(Path("out"), help="The report folder (docreview review --out)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(8088, "--port", min=0, max=65535, help="TCP port (0: any free port)."),
) -> None:
    """Serve FOLDER's reports: / is the latest run's report, /runs/<run id>/report.html each kept one."""
    if not (folder / "report.html").is_file():
        err.print(f"[red]error:[/] no report in {folder} (run `docreview review SOURCE --out {folder}` first)")
        raise typer.Exit(2)
    try:
        server = make_report_server(folder, host, port)
    except OSError as exc:
        err.print(f"[red]error:[/] cannot listen on {host}:{port}: {exc.strerror or exc}")
        raise typer.Exit(2) from None
    bound_host, bound_port = server.server_address[:2]  # the host as given (str; typeshed allows bytes too)
    host = bound_host.decode() if isinstance(bound_host, bytes | bytearray) else bound_host
    base = f"http://{host}:{bound_port}"
    console.print(f"Serving {folder.resolve()} at {base}/", highlight=False)
    console.print(f"Kept runs: {base}/runs/", highlight=False)
    console.print(f"Links in Prefect artifacts: DOCREVIEW_REPORT_URL_BASE={base}   (Ctrl-C stops)", highlight=False)
    serve_until_interrupted(server)


def register(app: typer.Typer) -> None:
    """Add the ``report`` group to the ``docreview`` app."""
    app.add_typer(report_app, name="report")
