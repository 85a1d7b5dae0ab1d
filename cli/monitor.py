"""Monitoring commands of the ``docreview`` CLI: ``runs`` and the ``metrics`` group.

- ``docreview runs [--db URL] [--limit N]``: recent runs, newest first, with their golden
  metrics (documents by status, findings, verification rate, routing rate, prompt-cache hit
  ratio, drift and whether the drift baseline used another model or prompt version).
- ``docreview metrics show RUN_ID [--db URL]``: every metric of one run (RUN_ID may be a unique
  prefix of at least 4 characters, e.g. the 8 shown by ``runs``), then its drifted documents.
- ``docreview metrics serve [--port 9464] [--addr 127.0.0.1] [--db URL]``: a Prometheus exporter
  that reads the database on every scrape (:class:`tasks.observe.monitoring.DocreviewCollector`), on
  loopback unless ``--addr`` says otherwise, with a bearer token when ``DOCREVIEW_METRICS_TOKEN`` is set.

``metrics`` is a command group rather than a command taking RUN_ID so that ``serve`` and
``show`` cannot be confused with a run id. Everything reads the database only; the commands
import no Prefect flow and start no Prefect server.
"""

from __future__ import annotations

import time

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from cli.common import stored_database, table_console

console = table_console()
err = Console(stderr=True, soft_wrap=True)

metrics_app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Metrics of a run (show) and the Prometheus exporter (serve)."
)

_DB_HELP = "Database URL (default: sqlite:///docreview.db or DATABASE_URL)."


def _database_url(db: str | None, must_exist: bool = True) -> str:
    """``--db`` or the configured URL; with ``must_exist``, :func:`cli.common.stored_database`."""
    if must_exist:
        return stored_database(db)
    from schemas.settings import Settings

    return db or Settings().database_url


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _count(value: float | None, colour: str) -> str:
    return f"[{colour}]{int(value)}[/]" if value else "0"


def runs(
    db: str | None = typer.Option(None, "--db", help=_DB_HELP),
    limit: int = typer.Option(20, "--limit", min=1, max=1000, help="Number of runs to show."),
) -> None:
    """Recent runs with their golden metrics, newest first."""
    from tasks.observe.monitoring import recent_runs
    from tasks.store.persist import dispose_engines

    try:
        rows = recent_runs(_database_url(db), limit)
    finally:
        dispose_engines()
    if not rows:
        console.print("No runs in this database yet.")
        return
    table = Table(
        title=f"Recent runs ({len(rows)}), newest first", title_justify="left", pad_edge=False, box=box.SIMPLE_HEAD
    )
    table.add_column("run", no_wrap=True)
    table.add_column("UTC", no_wrap=True)
    wide = console.width >= 110  # narrow terminals drop source and backend/model
    if wide:
        table.add_column("source", max_width=24, overflow="ellipsis", no_wrap=True)
        table.add_column("backend/model", max_width=22, overflow="ellipsis", no_wrap=True)
    for name in ("docs r/d/f", "finds", "verif", "route", "cache", "drift"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        m = r.metrics
        if "drift" in m:
            drift = f"{m['drift']:.3f}" + ("*" if m.get("drift_baseline_changed") else "")
            drift = f"[red]{drift}[/]" if m["drift"] > 0 else drift
        else:
            drift = "—"
        docs = (
            f"{int(m.get('documents_total', 0))}: {int(m.get('documents_reviewed', 0))}/"
            f"{_count(m.get('documents_deferred'), 'blue')}/{_count(m.get('documents_failed'), 'red')}"
        )
        where = [r.source.rstrip("/").rsplit("/", 1)[-1] or r.source, f"{r.backend}/{r.model}"] if wide else []
        table.add_row(
            r.id[:8] + ("" if r.status == "completed" else f" [yellow]{r.status}[/]"),
            r.started_at.strftime("%m-%d %H:%M") if r.started_at else "—",
            *where,
            docs,
            str(int(m.get("findings_total", 0))),
            _pct(m.get("verification_rate")),
            _pct(m.get("routing_rate")),
            _pct(m.get("cache_hit_ratio")),
            drift,
        )
    console.print(table)
    console.print(
        "[dim]docs r/d/f = total: reviewed/deferred/failed; finds = findings; verif = verified share; "
        "route = routing rate; cache = prompt-cache hit ratio. — = not measured (offline runs make no model calls; drift needs a re-review: "
        "docreview review --rereview). * = drift against another model or prompt version.[/]"
    )


@metrics_app.command("show")
def show(
    run_id: str = typer.Argument(..., help="Run id, or a unique prefix of at least 4 characters."),
    db: str | None = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """Every metric of one run, then the documents whose findings drifted."""
    from tasks.observe.metrics import format_metric
    from tasks.observe.monitoring import document_drift, find_run
    from tasks.store.persist import dispose_engines

    url = _database_url(db)
    try:
        try:
            run = find_run(url, run_id)
        except KeyError as exc:
            err.print(f"[red]error:[/] {exc.args[0]}")
            raise typer.Exit(2) from None
        drift = document_drift(url, run.id)
    finally:
        dispose_engines()
    console.print(
        f"Run [bold]{run.id}[/] · {run.status} · source {run.source} · {run.backend} ({run.model}, "
        f"prompt {run.prompt_version})"
    )
    table = Table(show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name in sorted(run.metrics):
        value = run.metrics[name]
        table.add_row(name, format_metric(value))
    console.print(table)
    moved = {sha: d for sha, d in drift.items() if d["score"]}
    if moved:
        console.print(f"[bold]Drifted documents[/] ({len(moved)} of {len(drift)} reviewed this run):")
        for sha, d in sorted(moved.items(), key=lambda kv: -kv[1]["score"]):
            note = f" vs {d['baseline_model']} / {d['baseline_prompt_version']}" if d["model_changed"] else ""
            console.print(
                f"  {sha[:12]} drift {d['score']:.3f}{note}: +{len(d['added'])} −{len(d['removed'])} "
                f"~{len(d['changed'])}"
            )
            for c in d["changed"][:5]:
                console.print(
                    f"    ~ {c['clause_type']}: {c['before']['values']} {c['before']['verdict']} → "
                    f"{c['after']['values']} {c['after']['verdict']}",
                    markup=False,
                )


@metrics_app.command("serve")
def serve(
    port: int = typer.Option(9464, "--port", min=0, max=65535, help="TCP port for /metrics (0 = any free port)."),
    addr: str = typer.Option(
        "127.0.0.1",
        "--addr",
        help="Address to listen on (default: this machine only; 0.0.0.0 = every interface, said at start-up).",
    ),
    db: str | None = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """Serve Prometheus metrics read from the database on every scrape, until interrupted. Listens on
    127.0.0.1 unless ``--addr`` says otherwise; with ``DOCREVIEW_METRICS_TOKEN`` set every scrape must
    send ``Authorization: Bearer <token>``."""
    from schemas.settings import Settings
    from tasks.observe.monitoring import start_exporter

    secret = Settings().metrics_token
    token = secret.get_secret_value() if secret is not None and secret.get_secret_value() else None
    try:
        server, _thread = start_exporter(_database_url(db, must_exist=False), port, addr, token)
    except OSError as exc:
        err.print(f"[red]error:[/] cannot listen on {addr}:{port}: {exc}")
        raise typer.Exit(2) from None
    scope = "this machine only" if addr in ("127.0.0.1", "localhost", "::1") else f"every host that reaches {addr}"
    guard = "a bearer token is required (DOCREVIEW_METRICS_TOKEN)" if token else "no authentication"
    console.print(
        f"Serving Prometheus metrics on http://{addr}:{server.server_port}/metrics to {scope}, {guard} (Ctrl-C stops)"
    )
    if scope != "this machine only" and not token:
        err.print(
            "[yellow]warning:[/] the metrics name documents, costs and failure reasons; set DOCREVIEW_METRICS_TOKEN "
            "before listening beyond this machine"
        )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()


def register(app: typer.Typer) -> None:
    """Add ``runs`` and the ``metrics`` group to the ``docreview`` app."""
    app.command("runs")(runs)
    app.add_typer(metrics_app, name="metrics")
