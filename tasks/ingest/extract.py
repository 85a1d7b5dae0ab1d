"""Text extraction per page in a child process with a wall-clock and memory limit."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import (
    Comment,
    DocumentKind,
    ExtractedDocument,
    FailureKind,
    IngestOutcome,
    Locator,
    PageQuality,
    PageText,
    TrackedChange,
    XbrlFact,
)
from schemas.settings import Limits
from tasks.runnames import for_document


def _limit_memory(max_bytes: int) -> Callable[[], None]:
    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))

    return apply


#: Runs of the worker per document: the first, then one more per PDFium crash (that page read
#: with pypdf); after that, pypdf alone.
MAX_ATTEMPTS = 4


def _progress_and_result(stdout: bytes) -> tuple[list[int], dict | None]:
    """The worker's ``pdfium_page`` markers (0-based pages started with PDFium) and its final JSON
    object (None when it did not write one)."""
    started: list[int] = []
    result = None
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(obj, dict) and "pdfium_page" in obj:
            started.append(int(obj["pdfium_page"]))
        elif isinstance(obj, dict):
            result = obj
    return started, result


#: What the dynamic loader prints when the address-space limit leaves no room for a shared library.
_LOADER_OUT_OF_MEMORY = ("failed to map segment", "cannot allocate memory", "Cannot allocate memory")


def run_extraction(path: str, limits: Limits, kind: DocumentKind = DocumentKind.pdf) -> dict:
    """Run :mod:`tasks.ingest.extract_worker` on ``path`` under ``limits``; return its JSON result.

    The wall-clock limit ``limits.extraction_timeout_s`` (seconds) covers every attempt together;
    each child has the address-space limit ``limits.extraction_memory_mb`` (MiB). When the child
    dies inside PDFium (native code: an abort on a decompression bomb cannot be caught in Python),
    the worker runs again with that page read by pypdf, up to :data:`MAX_ATTEMPTS` runs, then
    pypdf alone; a child that dies before its first page (not of a ``MemoryError``) is run again
    with pypdf alone. Timeouts, a killed child and unparseable output become ``{"ok": False, "kind",
    "reason"}``; the result also carries ``"attempts"`` (int).
    """
    project_root = str(Path(__file__).resolve().parent.parent.parent)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root, env.get("PYTHONPATH")]))
    deadline = time.monotonic() + limits.extraction_timeout_s
    pypdf_pages: list[int] = []
    pypdf_only = False
    crashes: list[str] = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        cmd = [sys.executable, "-m", "tasks.ingest.extract_worker", path, str(limits.max_pages)]
        if kind != DocumentKind.pdf:
            cmd += ["--kind", kind.value]
        elif pypdf_only:
            cmd.append("--pypdf-only")
        elif pypdf_pages:
            cmd += ["--pypdf-pages", ",".join(map(str, sorted(pypdf_pages)))]
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise subprocess.TimeoutExpired(cmd, limits.extraction_timeout_s)
            proc = subprocess.run(
                cmd,
                capture_output=True,
                timeout=left,
                preexec_fn=_limit_memory(limits.extraction_memory_mb * 1024 * 1024),
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {
                "ok": False,
                "kind": FailureKind.timeout.value,
                "reason": f"text extraction did not finish within {limits.extraction_timeout_s:g} s (process killed)"
                + (f" after {len(crashes)} restart(s): {'; '.join(crashes)}" if crashes else ""),
                "attempts": attempt,
            }
        started, result = _progress_and_result(proc.stdout)
        if proc.returncode == 0 and result is not None:
            if result.get("kind") == FailureKind.memory_limit.value:
                result["reason"] = f"text extraction exceeded the memory limit of {limits.extraction_memory_mb} MiB"
            if crashes and result.get("ok"):
                result["restarts"] = crashes
            result["attempts"] = attempt
            return result
        err = proc.stderr.decode("utf-8", "replace")
        if kind != DocumentKind.pdf:
            pass  # one reader, no restarts: classified below
        elif started and not pypdf_only and attempt < MAX_ATTEMPTS:
            crashed = started[-1]  # the child died inside PDFium on this page
            crashes.append(f"PDFium stopped on page {crashed + 1} (exit status {proc.returncode})")
            pypdf_pages.append(crashed)
            pypdf_only = attempt == MAX_ATTEMPTS - 1
            continue
        elif not started and not pypdf_only and attempt < MAX_ATTEMPTS and "MemoryError" not in err:
            # Died before the first page: possibly inside PDFium opening the file.
            crashes.append(f"the extractor stopped before the first page (exit status {proc.returncode})")
            pypdf_only = True
            continue
        if not started and any(m in err for m in _LOADER_OUT_OF_MEMORY):
            # The dynamic loader could not map Python's own libraries: the limit is a setting too small to
            # start any extraction, not a property of this document.
            return {
                "ok": False,
                "kind": FailureKind.memory_limit.value,
                "reason": f"the extraction process cannot start within DOCREVIEW_EXTRACTION_MEMORY_MB="
                f"{limits.extraction_memory_mb} MiB (raise it; default 1536)",
                "attempts": attempt,
            }
        if "MemoryError" in err or proc.returncode in (-9, -6):
            return {
                "ok": False,
                "kind": FailureKind.memory_limit.value,
                "reason": f"text extraction exceeded the memory limit of {limits.extraction_memory_mb} MiB",
                "attempts": attempt,
            }
        if proc.returncode == 0:
            return {
                "ok": False,
                "kind": FailureKind.corrupt.value,
                "reason": "text extraction returned unreadable output",
                "attempts": attempt,
            }
        last = err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}"
        return {
            "ok": False,
            "kind": FailureKind.corrupt.value,
            "reason": f"text extraction crashed: {last[:300]}",
            "attempts": attempt,
        }
    return {
        "ok": False,
        "kind": FailureKind.corrupt.value,  # pragma: no cover - the loop returns
        "reason": "text extraction crashed on every attempt",
        "attempts": MAX_ATTEMPTS,
    }


def _is_limit(not_read: str) -> bool:
    """True for a page left unread by a resource limit (pypdf's ``LimitReachedError``, or a page image
    over the OCR's pixel limit, whose note starts ``resource limit``)."""
    return "LimitReached" in not_read or not_read.startswith("resource limit")


@task(name="extract-document", task_run_name=for_document("extract"), cache_policy=NO_CACHE)
def extract_document(fingerprinted: IngestOutcome, limits: Limits, database_url: str | None = None) -> IngestOutcome:
    """Prefect task: extract per-page text of a fingerprinted object in a limited child process.

    Returns the outcome with ``document`` set, or with ``failure``/``reason`` (password
    required, corrupt, timeout, memory limit, resource limit, too many pages, no text layer).
    Never retried within a run: none of these failures can succeed on a second attempt.

    With ``database_url``, timeouts are remembered across runs (:mod:`tasks.ingest.backoff`): a
    document whose extraction timed out is not extracted again before its back-off ends or the
    extraction timeout is raised (it fails at once, ``timeout``, and the reason says when it will be
    tried again); a success
    forgets its timeouts. A backed-off outcome carries ``retry_after`` (UTC), so the caller may
    end it ``deferred`` rather than ``failed``.
    """
    obj = fingerprinted.source
    retry_after = None
    if database_url and fingerprinted.sha256:
        from tasks.ingest.backoff import backoff_reason, backoff_until

        waiting = backoff_reason(database_url, fingerprinted.sha256, limits=limits)
        if waiting:
            return fingerprinted.model_copy(
                update={
                    "failure": FailureKind.timeout,
                    "reason": waiting,
                    "retry_after": backoff_until(database_url, fingerprinted.sha256, limits=limits),
                }
            )
    kind = fingerprinted.kind or DocumentKind.pdf
    result = run_extraction(obj.local_path, limits, kind)
    if database_url and fingerprinted.sha256:
        from tasks.ingest.backoff import backoff_until, record_extraction

        note = record_extraction(database_url, fingerprinted.sha256, result, limits)
        if note:
            result["reason"] = f"{result.get('reason')}; {note}"
            retry_after = backoff_until(database_url, fingerprinted.sha256)
    if not result.get("ok"):
        failure = FailureKind(result.get("kind", FailureKind.corrupt.value))
        return fingerprinted.model_copy(
            update={"failure": failure, "reason": result.get("reason", failure.value), "retry_after": retry_after}
        )
    pages = [
        PageText(
            number=p["number"],
            text=p["text"],
            quality=PageQuality(**p["quality"]),
            running=p.get("running", []),
            locator=Locator(**p["locator"]) if p.get("locator") else None,
            uncertain_words=[(w, float(c)) for w, c in p.get("uncertain_words", [])],
            emphasis=[int(i) for i in p.get("emphasis", [])],
        )
        for p in result["pages"]
    ]
    if not any(p.text.strip() for p in pages):
        unread = [p for p in pages if p.quality.not_read]
        detail = (
            f"; page(s) {', '.join(str(p.number) for p in unread[:10])} could not be read: {unread[0].quality.not_read}"
            if unread
            else ""
        )
        ocred = sum(1 for p in pages if p.quality.ocr)
        what = (
            f"no recognisable text on any of {len(pages)} page(s) (OCR read {ocred} page(s) and found none)"
            if ocred
            else f"no text on any of {len(pages)} page(s)"
        )
        return fingerprinted.model_copy(
            update={
                "failure": FailureKind.resource_limit
                if any(_is_limit(p.quality.not_read or "") for p in unread)
                else FailureKind.no_text,
                "reason": what + detail,
                "pages": len(pages),
            }
        )
    doc = ExtractedDocument(
        sha256=fingerprinted.sha256 or "",
        source=obj,
        pages=pages,
        encrypted=bool(result.get("encrypted")),
        kind=kind,
        changes=[TrackedChange(**c) for c in result.get("changes", [])],
        comments=[Comment(**c) for c in result.get("comments", [])],
        facts=[XbrlFact(**f) for f in result.get("facts", [])],
        dei={str(k): str(v) for k, v in (result.get("dei") or {}).items() if v is not None},
        parts=[{str(k): str(v) for k, v in part.items() if v is not None} for part in result.get("parts") or []],
        edgar={str(k): str(v) for k, v in (result.get("edgar") or {}).items() if v is not None},
        exhibit_links=[str(name) for name in result.get("exhibit_links") or []],
    )
    return fingerprinted.model_copy(update={"document": doc, "pages": len(pages)})
