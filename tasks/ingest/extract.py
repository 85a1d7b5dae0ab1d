"""Text extraction per page in a child process with a wall-clock and memory limit."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import (
    ExtractedDocument,
    FailureKind,
    IngestOutcome,
    PageQuality,
    PageText,
)
from schemas.settings import Limits
from tasks.runnames import for_document


def _limit_memory(max_bytes: int):
    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))

    return apply


def run_extraction(path: str, limits: Limits) -> dict:
    """Run :mod:`tasks.ingest.extract_worker` on ``path`` under ``limits``; return its JSON result.

    Timeouts, a killed child and unparseable output become ``{"ok": False, "kind", "reason"}``.
    """
    cmd = [sys.executable, "-m", "tasks.ingest.extract_worker", path, str(limits.max_pages)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    project_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root, env.get("PYTHONPATH")]))
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            timeout=limits.extraction_timeout_s,
            preexec_fn=_limit_memory(limits.extraction_memory_mb * 1024 * 1024),
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {
            "ok": False,
            "kind": FailureKind.timeout.value,
            "reason": f"text extraction did not finish within {limits.extraction_timeout_s:g} s (process killed)",
        }
    if proc.returncode != 0 or not proc.stdout:
        err = proc.stderr.decode("utf-8", "replace")
        if "MemoryError" in err or proc.returncode in (-9, -6):
            return {
                "ok": False,
                "kind": FailureKind.memory_limit.value,
                "reason": f"text extraction exceeded the memory limit of {limits.extraction_memory_mb} MiB",
            }
        last = err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}"
        return {"ok": False, "kind": FailureKind.corrupt.value, "reason": f"text extraction crashed: {last[:300]}"}
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"ok": False, "kind": FailureKind.corrupt.value, "reason": "text extraction returned unreadable output"}
    if result.get("kind") == FailureKind.memory_limit.value:
        result["reason"] = f"text extraction exceeded the memory limit of {limits.extraction_memory_mb} MiB"
    return result


@task(name="extract-document", task_run_name=for_document("extract"), cache_policy=NO_CACHE)
def extract_document(fingerprinted: IngestOutcome, limits: Limits) -> IngestOutcome:
    """Prefect task: extract per-page text of a fingerprinted object in a limited child process.

    Returns the outcome with ``document`` set, or with ``failure``/``reason`` (password
    required, corrupt, timeout, memory limit, too many pages, no text layer). Never retried:
    none of these failures can succeed on a second attempt.
    """
    obj = fingerprinted.source
    result = run_extraction(obj.local_path, limits)
    if not result.get("ok"):
        kind = FailureKind(result.get("kind", FailureKind.corrupt.value))
        return fingerprinted.model_copy(update={"failure": kind, "reason": result.get("reason", kind.value)})
    pages = [
        PageText(number=p["number"], text=p["text"], quality=PageQuality(**p["quality"]))
        for p in result["pages"]
    ]
    if not any(p.text.strip() for p in pages):
        return fingerprinted.model_copy(
            update={
                "failure": FailureKind.no_text,
                "reason": f"no text layer on any of {len(pages)} page(s) (image-only or scanned; OCR is not performed)",
                "pages": len(pages),
            }
        )
    doc = ExtractedDocument(
        sha256=fingerprinted.sha256 or "",
        source=obj,
        pages=pages,
        encrypted=bool(result.get("encrypted")),
    )
    return fingerprinted.model_copy(update={"document": doc, "pages": len(pages)})

