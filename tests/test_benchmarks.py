"""Smoke test of the benchmarks: each runs at a tiny size and prints a sane JSON line.

Checks keys and relations between figures (never timings): documents are reviewed, the bound
and ratio follow from the measured calls, every stage is present, routing sends no more text
than reviewing every chunk, RSS checkpoints are recorded. The flow runs go to one Prefect
server for the module (``prefect_server``) instead of a temporary server per run.
"""

from __future__ import annotations

import json
import shutil

import pytest

pytestmark = [pytest.mark.integration]
#: Each flow run is a child process (imports, a review of a few PDFs): tens of seconds apiece.
flow_runs = pytest.mark.slow


@pytest.fixture(scope="module")
def bench_env(prefect_server, tmp_path_factory):
    """Children use the session's Prefect server; results go to a temporary results file."""
    from benchmarks import _harness

    mp = pytest.MonkeyPatch()
    mp.setenv("DOCREVIEW_BENCH_PREFECT_API_URL", prefect_server["api_url"])
    results = tmp_path_factory.mktemp("bench-results")
    mp.setattr(_harness, "RESULTS", results)
    mp.setattr(_harness, "RESULTS_FILE", results / "results.jsonl")
    yield results
    mp.undo()


def _last_line(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@flow_runs
def test_throughput_and_overhead_lines(bench_env, capsys):
    from benchmarks import overhead, throughput

    line = throughput.measure(3, concurrency=4, ttft_ms=20, token_ms=0.05, long_share=0.0, cache=False)
    assert line["reviewed"] == 3 and line["failed"] == 0
    assert line["llm_calls"] >= 3 and line["calls_per_doc"] == pytest.approx(line["llm_calls"] / 3, abs=1e-3)
    bound = 4 * 60 / line["mean_call_s"] / line["calls_per_doc"]
    assert line["bound_docs_per_min"] == pytest.approx(bound, rel=0.01)
    assert 0 < line["ratio"] <= 1.0  # nothing beats the concurrency bound
    # ... because the API side never had more than llm_concurrency requests at once (the test
    # double's count), and every call counted in llm_calls reached it
    assert 1 <= line["api_max_in_flight"] <= 4
    assert line["api_requests"] == line["llm_calls"]
    assert line["overhead_share"] == pytest.approx(1 - line["ratio"], abs=0.02)
    assert {"ingest", "chunk", "route", "review", "fact_check", "persist"} <= set(line["busy_s"])

    over = overhead.split(line)  # the same run's figures, split by stage
    assert over["reviewed"] == 3 and over["pages"] >= 3
    assert {"ingest", "chunk", "route", "review_client", "fact_check", "persist", "orchestration"} <= set(
        over["stages"]
    )
    per_page = sum(s["ms_per_page"] for s in over["stages"].values())
    assert per_page == pytest.approx(over["non_llm_ms_per_page"], rel=0.02, abs=0.1)
    overhead.emit(over)
    assert _last_line(capsys)["benchmark"] == "overhead"
    assert (bench_env / "results.jsonl").read_text().count('"benchmark": "overhead"') == 1


@flow_runs
def test_cost_line(bench_env):
    from benchmarks import cost

    line = cost.measure(2, long_share=0.0, cache=False)
    routed, everything = line["routed_cached"], line["all_uncached"]
    assert everything["calls"] >= routed["calls"] >= 1
    assert 0 < routed["chars_per_doc"] <= everything["chars_per_doc"]
    assert routed["cache_read_tokens_per_doc"] > 0  # the stable prefix is read from the cache
    assert 0 < line["cost_ratio"] < 1.0  # cache reads cost less than base input tokens


@flow_runs
def test_memory_line(bench_env):
    from benchmarks import memory

    line = memory.measure(4, every=2, base_docs=2, cache=False)
    assert line["reviewed"] == 4
    assert set(line["rss_mb"]) == {"2", "4"}
    assert all(v["peak_rss_mb"] >= v["rss_mb"] > 0 for v in line["rss_mb"].values())
    assert line["growth"] >= 1.0 and line["children_peak_rss_mb"] > 0


def test_ingestion_line(shared_data):
    from benchmarks import ingestion

    line = ingestion.measure(2, workers=2, timeout_s=120, folder=shared_data / "cuad" / "pdf")
    assert line["documents"] == 2 and line["pages"] > 0
    for name in ("pypdf", "pypdf_pool", "pipeline"):
        assert line["pages_per_s"][name] > 0
        assert line["engines"][name]["chars"] > 0
    assert (line["engines"]["pdftotext"] is None) == (shutil.which("pdftotext") is None)


def test_extraction_line(shared_data):
    from benchmarks import extraction
    from benchmarks.ingestion import pick_files

    line = extraction.measure_corpus(pick_files(shared_data / "cuad" / "pdf", 2), timeout_s=120)
    assert line["documents"] == 2 and line["pages"] > 0 and line["skipped"] == []
    assert all(line["pages_per_s"][name] > 0 for name in ("pdfium", "pypdf", "docreview_stage"))
    assert sum(line["stage_pages_by_extractor"].values()) == line["pages"]


def test_router_line(shared_data):
    from benchmarks import router

    line = router.router(3, ["BOEING_2018_10K"])
    assert line["benchmark"] == "router" and line["model_setup_cpu_s"] >= 0
    for corpus in ("cuad", "filings"):
        got = line[corpus]
        assert got["documents"] == (3 if corpus == "cuad" else 1) and got["mb"] > 0
        assert got["s_per_mb"] == pytest.approx(got["cpu_s"] / got["mb"], rel=0.05, abs=0.01)
        assert 0 < got["deep_share"] < 1


@flow_runs
def test_the_benchmark_prefect_server_serves_a_review_and_is_gone_after(tmp_path):
    """``PrefectServer`` starts a fresh server (its own home), a review reports to it, its CPU
    time is readable, and leaving the block stops it."""
    import os

    import httpx

    from benchmarks._harness import PrefectServer, run_review
    from docreview_testing.samples import generate_samples

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=1)
    with PrefectServer(tmp_path / "home") as server:
        before = server.cpu_s()
        result = run_review(inbox, tmp_path / "run", backend="rules", prefect_api_url=server.api_url)
        assert result["metrics"]["documents_reviewed"] == 1
        assert server.cpu_s() > before > 0
        runs = httpx.post(f"{server.api_url}/flow_runs/filter", json={"limit": 5}, timeout=10).json()
        assert [r["id"] for r in runs] and (tmp_path / "home" / "prefect.db").exists()
        pid = server._proc.pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_support_trainers_cache_is_json_and_reads_back_what_it_wrote(shared_data, tmp_path, monkeypatch):
    """Before: the cache was a pickle, which runs code when loaded. Now JSON, read back equal; a file that is
    not this JSON (an old pickle) is refused, never loaded."""
    import json
    import pickle

    import benchmarks.train_support as ts
    import tasks.observe.evaluate as evaluate

    real = evaluate.load_cuad
    monkeypatch.setattr(evaluate, "load_cuad", lambda d: list(real(d))[:2])
    cache = tmp_path / "examples.json"
    written = ts.load_examples(shared_data / "cuad", cache)
    assert isinstance(json.loads(cache.read_text()), list)
    read = ts.load_examples(shared_data / "cuad", cache)
    assert [(d["doc"], d["examples"], d["findings"], d["headings"]) for d in read] == [
        (d["doc"], d["examples"], d["findings"], d["headings"]) for d in written
    ]
    old = tmp_path / "old.pickle"
    old.write_bytes(pickle.dumps(written[:1]))
    with pytest.raises(ValueError, match="not a JSON cache"):
        ts.load_examples(shared_data / "cuad", old)
