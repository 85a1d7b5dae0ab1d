"""Ingest: list source objects, fingerprint them (sha256) and extract text per page.

Extraction runs in a child process (:mod:`tasks.extract_worker`) with a hard wall-clock limit
(the child is killed) and an address-space limit (``RLIMIT_AS``), because a Prefect timeout on
a thread cannot interrupt a blocking pypdf call (PITFALLS: hangs and bombs). Every failure
ends as an :class:`~schemas.documents.IngestOutcome` with a :class:`FailureKind` and a reason;
nothing here raises for a bad document.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import stat
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
    SourceObject,
)
from schemas.settings import Limits

#: Bytes read when looking for the ``%PDF-`` header (PDF 32000-1:2008 §7.5.2 allows leading junk
#: before it; readers conventionally search the first 1024 bytes).
PDF_HEADER_WINDOW = 1024
_READ_BLOCK = 1 << 20


class SourceError(ValueError):
    """The source cannot be listed (missing folder, unsupported scheme)."""


def list_local_source(source: str) -> list[SourceObject]:
    """List regular files under a local folder (recursively, sorted by path), or one file.

    Hidden files and folders (names starting with ``.``) are skipped. Every other file is
    listed, PDF or not, so that a stray non-PDF ends the run as ``failed`` with a reason
    instead of vanishing. Raises :class:`SourceError` if ``source`` does not exist.
    """
    root = Path(source).expanduser()
    if root.is_file():
        files = [root]
    elif root.is_dir():
        # Anything that is not a folder is listed: a dangling link, a FIFO or a device fails
        # later with a reason (see fingerprint_document) instead of vanishing from the run.
        files = sorted(
            p
            for p in root.rglob("*")
            if not p.is_dir() and not any(part.startswith(".") for part in p.relative_to(root).parts)
        )
    else:
        raise SourceError(f"source not found: {source}")
    return [
        SourceObject(uri=str(p), name=p.name, local_path=str(p.resolve()), size_bytes=_size_or_zero(p))
        for p in files
    ]


def _size_or_zero(path: Path) -> int:
    """Size in bytes of a regular file (following links); 0 for anything else or a dangling link."""
    try:
        info = path.stat()
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


@task(name="list-source-objects", cache_policy=NO_CACHE)
def list_source_objects(source: str, endpoint_url: str | None = None, suffix: str | None = None,
                        exclude: list[str] | None = None) -> list[SourceObject]:
    """Prefect task: the objects of ``source``: a local folder or file path (a ``file://`` URI
    is accepted too), or ``s3://bucket[/prefix | /exact-key]`` (see :mod:`tasks.s3source`;
    ``endpoint_url`` and ``suffix`` apply to S3 only, listed S3 objects are downloaded later, by
    :func:`fingerprint_document`). Local files inside any path of ``exclude`` (the run's own
    output folder, its SQLite database and that database's ``-wal``/``-shm`` files) are left out,
    so reviewing a folder that holds them does not review docreview's own outputs.

    Raises :class:`SourceError` when the source cannot be listed. Not retried here: botocore
    retries each S3 request itself (:class:`tasks.s3source.S3Settings`).
    """
    if source.startswith("s3://"):
        from tasks.s3source import list_s3_source

        return list_s3_source(source, endpoint_url=endpoint_url, suffix=suffix)
    if source.startswith("file://"):
        from urllib.parse import unquote, urlparse

        source = unquote(urlparse(source).path)
    skip = [Path(p).expanduser().resolve() for p in exclude or []]
    skip += [q.with_name(q.name + tail) for q in list(skip) for tail in ("-wal", "-shm", "-journal")]
    return [o for o in list_local_source(source)
            if not any(Path(o.uri).resolve() == q or q in Path(o.uri).resolve().parents for q in skip)]


def sha256_file(path: str) -> str:
    """Hex sha256 of the file at ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_READ_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def precheck(obj: SourceObject, limits: Limits) -> tuple[FailureKind, str] | None:
    """Cheap checks before extraction: zero bytes, over the size limit, no PDF header.

    Returns ``(kind, reason)`` for a file that must fail, else None.
    """
    if obj.size_bytes == 0:
        return FailureKind.empty_file, "empty file (0 bytes)"
    if obj.size_bytes > limits.max_file_bytes:
        return (
            FailureKind.too_large,
            f"file is {obj.size_bytes:,} bytes, over the limit of {limits.max_file_bytes:,} bytes",
        )
    try:
        with open(obj.local_path, "rb") as fh:
            head = fh.read(PDF_HEADER_WINDOW)
    except OSError as exc:
        return FailureKind.unreadable, f"cannot read file: {exc.strerror or exc}"
    if b"%PDF-" not in head:
        return FailureKind.not_pdf, "not a PDF (no %PDF- header in the first 1024 bytes)"
    return None


@task(name="fingerprint-document", cache_policy=NO_CACHE)
def fingerprint_document(obj: SourceObject, limits: Limits) -> IngestOutcome:
    """Prefect task: sha256 and pre-checks of one object (no parsing).

    Returns an outcome with ``sha256`` set (when readable) and ``failure`` set when a
    pre-check failed. An S3 object is downloaded here first (:func:`tasks.s3source.fetch_s3_object`).
    """
    if obj.is_s3:
        from tasks.s3source import fetch_s3_object

        return fetch_s3_object(obj, limits)
    try:
        mode = os.stat(obj.local_path).st_mode
    except OSError as exc:  # a dangling link, or removed since it was listed
        return IngestOutcome(source=obj, failure=FailureKind.unreadable, reason=f"cannot read file: {exc}")
    if not stat.S_ISREG(mode):  # a FIFO would block a reader for ever
        return IngestOutcome(source=obj, failure=FailureKind.unreadable,
                             reason="not a regular file (a pipe, socket or device); nothing was read")
    try:
        digest = sha256_file(obj.local_path)
    except OSError as exc:
        return IngestOutcome(source=obj, failure=FailureKind.unreadable, reason=f"cannot read file: {exc}")
    failed = precheck(obj, limits)
    if failed:
        return IngestOutcome(source=obj, sha256=digest, failure=failed[0], reason=failed[1])
    return IngestOutcome(source=obj, sha256=digest)


def _limit_memory(max_bytes: int):
    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))

    return apply


def run_extraction(path: str, limits: Limits) -> dict:
    """Run :mod:`tasks.extract_worker` on ``path`` under ``limits``; return its JSON result.

    Timeouts, a killed child and unparseable output become ``{"ok": False, "kind", "reason"}``.
    """
    cmd = [sys.executable, "-m", "tasks.extract_worker", path, str(limits.max_pages)]
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


@task(name="extract-document", cache_policy=NO_CACHE)
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
