"""Plots for the HTML report: matplotlib figures embedded as ``data:image/svg+xml`` images.

Four figures per run (:func:`report_plots`): model call latency distribution, findings by CUAD
clause category and verdict, model cost per document, and the trend of the golden metrics over
recent runs. Each is an SVG rendered without pyplot (no global figure state, no display) with
text drawn as paths, embedded as an ``<img>`` data URI: nothing is fetched over the network and
no document-derived text becomes markup. A figure with nothing to show (an offline run makes no
model calls) says so in words instead of drawing empty axes.
"""

from __future__ import annotations

import base64
import io
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from matplotlib.ticker import FuncFormatter, MaxNLocator
from sqlmodel import Session, select

from schemas.tables import LLMCallRow
from tasks.observe.monitoring import RunSummary, percentile, recent_runs
from tasks.store.persist import get_engine

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType  # matplotlib >= 3.9

#: Colours of the fact-check verdicts (the report's badge colours).
VERDICT_COLOURS = {
    "verified": "#3a9b5c",
    "needs_review": "#d9a520",
    "unsupported": "#c8423c",
    "contradicted": "#a8327f",
}

#: Runs shown in the trend figure.
TREND_RUNS = 20

#: Most categories / documents drawn in the bar charts (the rest are summed up in the caption).
MAX_BARS = 20

_RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "docreview",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
}


@dataclass
class Plot:
    """One figure: ``title``, a one-line ``caption`` and ``src`` (a ``data:image/svg+xml`` URI)."""

    title: str
    caption: str
    src: str


def _figure(width_in: float, height_in: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), layout="constrained")


def _svg_uri(fig: Any) -> str:
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "docreview", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _message(fig: Any, text: str) -> None:
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", color="#5b6675", wrap=True)


def latency_plot(latency_ms: list[float], first_token_ms: list[float]) -> Plot:
    """Histogram of call latency and first-token latency, seconds (log-spaced bins); p50/p95 marked."""
    import numpy as np

    with _rc():
        fig = _figure(6.4, 3.0 if latency_ms else 1.0)
        if not latency_ms:
            _message(fig, "No model calls in this run (offline rules backend or nothing reviewed): no latency to show.")
            caption = "no model calls"
        else:
            ax = fig.add_subplot()
            secs = np.asarray(latency_ms, dtype=float) / 1000
            ttft = np.asarray(first_token_ms, dtype=float) / 1000
            lo = max(min(secs.min(), ttft.min() if ttft.size else secs.min()), 1e-3)
            hi = max(secs.max(), lo * 10)
            bins = np.geomspace(lo, hi, 30)
            ax.hist(secs, bins=bins, color="#4a6fb5", alpha=0.75, label=f"call latency (n={secs.size})")
            if ttft.size:
                ax.hist(ttft, bins=bins, color="#e08a2c", alpha=0.6, label=f"first token (n={ttft.size})")
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(_plain))
            ax.xaxis.set_minor_formatter(FuncFormatter(_plain_minor))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("seconds (log scale)")
            ax.set_ylabel("calls")
            p50, p95 = percentile(list(secs), 50), percentile(list(secs), 95)  # nearest rank, as in the metrics
            for value, style in ((p50, "--"), (p95, ":")):
                ax.axvline(value, color="#1d2430", linestyle=style, linewidth=1)
            ax.legend(frameon=False, loc="upper right")
            caption = f"call latency p50 {p50:.2f} s, p95 {p95:.2f} s (dashed, dotted)"
            if ttft.size:
                caption += f"; first token p50 {percentile(list(ttft), 50):.2f} s"
        return Plot("Model call latency", caption, _svg_uri(fig))


def findings_plot(documents: list[dict[str, Any]]) -> Plot:
    """Stacked horizontal bars: findings per clause category (CUAD label), split by verdict."""
    counts: dict[str, Counter[str]] = {}
    for d in documents:
        for f in d.get("findings", []):
            counts.setdefault(f["clause_label"], Counter())[f["verdict"]] += 1
    with _rc():
        if not counts:
            fig = _figure(6.4, 1.0)
            _message(fig, "No findings in this run.")
            return Plot("Findings by clause category and verdict", "no findings", _svg_uri(fig))
        ordered = sorted(counts, key=lambda k: (-sum(counts[k].values()), k))
        shown = ordered[:MAX_BARS]
        fig = _figure(6.4, 0.6 + 0.24 * len(shown))
        ax = fig.add_subplot()
        left = [0] * len(shown)
        ys = list(range(len(shown)))[::-1]
        for verdict, colour in VERDICT_COLOURS.items():
            widths = [counts[k].get(verdict, 0) for k in shown]
            if any(widths):
                ax.barh(ys, widths, left=left, color=colour, label=verdict.replace("_", " "), height=0.7)
                left = [a + b for a, b in zip(left, widths)]
        ax.set_yticks(ys, shown)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("findings")
        ax.legend(frameon=False, loc="lower right", fontsize=8)
        total = sum(sum(c.values()) for c in counts.values())
        caption = f"{total} findings in {len(counts)} categories"
        if len(ordered) > len(shown):
            rest = sum(sum(counts[k].values()) for k in ordered[len(shown) :])
            caption += f"; {len(ordered) - len(shown)} smaller categories ({rest} findings) not drawn"
        return Plot("Findings by clause category and verdict", caption, _svg_uri(fig))


def cost_plot(cost_by_document: dict[str, float]) -> Plot:
    """Horizontal bars: model cost per document, USD (the most expensive :data:`MAX_BARS`)."""
    total = sum(cost_by_document.values())
    with _rc():
        if not cost_by_document or total <= 0:
            fig = _figure(6.4, 1.0)
            _message(fig, "No model cost in this run (offline rules backend, reused reviews or no calls).")
            return Plot("Model cost per document", "USD 0", _svg_uri(fig))
        ordered = sorted(cost_by_document.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ordered[:MAX_BARS]
        fig = _figure(6.4, 0.6 + 0.24 * len(shown))
        ax = fig.add_subplot()
        ys = list(range(len(shown)))[::-1]
        ax.barh(ys, [v for _, v in shown], color="#4a6fb5", height=0.7)
        ax.set_yticks(ys, [_short(k) for k, _ in shown])
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_xlabel("USD")
        n = len(cost_by_document)
        caption = f"USD {total:.4f} over {n} document(s), mean USD {total / n:.4f}"
        if n > len(shown):
            caption += f"; {n - len(shown)} cheaper documents not drawn"
        return Plot("Model cost per document", caption, _svg_uri(fig))


_TREND = [
    ("docs_per_min", "documents / min", 1.0),
    ("verification_rate", "verification rate", 1.0),
    ("routing_rate", "routing rate", 1.0),
    ("cache_hit_ratio", "prompt-cache hit ratio", 1.0),
    ("drift", "drift (mean)", 1.0),
    ("cost_per_document", "cost per document, USD", 1.0),
]


def trend_plot(runs: list[RunSummary], current_run_id: str) -> Plot:
    """Small multiples of the golden metrics over ``runs`` (oldest left); the current run is ringed."""
    runs = sorted(runs, key=lambda r: r.started_at.isoformat() if r.started_at else "")
    with _rc():
        fig = _figure(7.2, 3.8)
        axes = fig.subplots(2, 3)
        xs = list(range(len(runs)))
        labels = [r.started_at.strftime("%m-%d %H:%M") if r.started_at else r.id[:8] for r in runs]
        for ax, (name, title, _) in zip(axes.flat, _TREND):
            values = []
            for r in runs:
                if name == "cost_per_document":
                    n = r.metrics.get("documents_total", 0)
                    values.append(r.metrics.get("cost_usd", 0.0) / n if n and r.metrics.get("llm_calls") else None)
                else:
                    values.append(r.metrics.get(name))
            pts = [(x, v) for x, v in zip(xs, values) if v is not None]
            ax.set_title(title, loc="left")
            if not pts:
                ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes, color="#8a94a3")
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, color="#4a6fb5")
            for x, v in pts:
                if runs[x].id == current_run_id:
                    ax.plot([x], [v], marker="o", markersize=8, markerfacecolor="none", color="#c8423c")
            ticks = sorted({xs[0], xs[-1]}) if xs else []
            ax.set_xticks(ticks, [labels[t] for t in ticks], fontsize=7)
            ax.set_xlim(-0.5, max(len(runs) - 0.5, 0.5))
            ax.margins(y=0.2)
        caption = f"last {len(runs)} finished run(s), oldest left; this run ringed in red"
        return Plot("Golden metrics over recent runs", caption, _svg_uri(fig))


def warm() -> None:
    """Import what drawing and saving a figure needs (matplotlib's figure and SVG backend) and
    find its default font: about 0.3 s of CPU that the first figure of a process would otherwise
    spend. :func:`tasks.observe.report.warm_plots_in_background` does it while a run is still
    reviewing."""
    import matplotlib.backends.backend_svg  # noqa: F401 - savefig(format="svg") imports it
    from matplotlib import font_manager
    from matplotlib.figure import Figure  # noqa: F401 - _figure's import

    font_manager.findfont(font_manager.FontProperties())


def report_plots(database_url: str, run_id: str, report: dict[str, Any]) -> list[Plot]:
    """The four report figures for run ``run_id`` (``report`` is :func:`tasks.observe.report.build_report`'s dict)."""
    with Session(get_engine(database_url)) as session:
        calls = session.exec(select(LLMCallRow).where(LLMCallRow.run_id == run_id)).all()
    names = {d["sha256"]: d["file_name"] for d in report["documents"] if d.get("sha256")}
    cost: dict[str, float] = {}
    for c in calls:
        name = names.get(c.sha256, c.sha256[:12])
        cost[name] = cost.get(name, 0.0) + c.cost_usd
    runs = recent_runs(database_url, TREND_RUNS, finished_only=True)
    return [
        findings_plot(report["documents"]),
        latency_plot([c.latency_ms for c in calls], [c.first_token_ms for c in calls if c.first_token_ms is not None]),
        cost_plot(cost),
        trend_plot(runs, run_id),
    ]


def _plain(value: float, _pos: int) -> str:
    return f"{value:g}"


def _plain_minor(value: float, _pos: int) -> str:
    """Label the 2x and 5x minor ticks of a log axis only (``0.2``, ``0.5``, ``2``, ``5``)."""
    lead = f"{value:.0e}"[0]
    return f"{value:g}" if lead in "25" else ""


def _short(name: str, width: int = 42) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _rc() -> Any:
    import matplotlib

    return matplotlib.rc_context(_RC)
