"""List a source (folder, file or ``s3://`` URI) and fingerprint its objects (sha256)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import (
    FailureKind,
    IngestOutcome,
    SourceObject,
)
from schemas.settings import Limits
from tasks.ingest.local import list_local_source, precheck_kind, sha256_file


@task(name="list-source-objects", cache_policy=NO_CACHE)
def list_source_objects(
    source: str, endpoint_url: str | None = None, suffix: str | None = None, exclude: list[str] | None = None
) -> list[SourceObject]:
    """Prefect task: the objects of ``source``: a local folder or file path (a ``file://`` URI
    is accepted too), or ``s3://bucket[/prefix | /exact-key]`` (see :mod:`tasks.ingest.s3`;
    ``endpoint_url`` and ``suffix`` apply to S3 only, listed S3 objects are downloaded later, by
    :func:`fingerprint_document`). Local files inside any path of ``exclude`` (the run's own
    output folder, its SQLite database and that database's ``-wal``/``-shm`` files) are left out,
    so reviewing a folder that holds them does not review docreview's own outputs.

    Raises :class:`SourceError` when the source cannot be listed. Not retried here: botocore
    retries each S3 request itself (:class:`tasks.ingest.s3.S3Settings`).
    """
    if source.startswith("s3://"):
        from tasks.ingest.s3 import list_s3_source

        return list_s3_source(source, endpoint_url=endpoint_url, suffix=suffix)
    if source.startswith("file://"):
        from urllib.parse import unquote, urlparse

        source = unquote(urlparse(source).path)
    skip = [Path(p).expanduser().resolve() for p in exclude or []]
    skip += [q.with_name(q.name + tail) for q in list(skip) for tail in ("-wal", "-shm", "-journal")]
    return [
        o
        for o in list_local_source(source)
        if not any(Path(o.uri).resolve() == q or q in Path(o.uri).resolve().parents for q in skip)
    ]


@task(name="fingerprint-document", task_run_name="fingerprint · {obj.name}", cache_policy=NO_CACHE)
def fingerprint_document(obj: SourceObject, limits: Limits) -> IngestOutcome:
    """Prefect task: sha256 and pre-checks of one object (no parsing).

    Returns an outcome with ``sha256`` set (when readable) and ``failure`` set when a
    pre-check failed. An S3 object is downloaded here first (:func:`tasks.ingest.s3.fetch_s3_object`).
    """
    if obj.is_s3:
        from tasks.ingest.s3 import fetch_s3_object

        return fetch_s3_object(obj, limits)
    try:
        mode = os.stat(obj.local_path).st_mode
    except OSError as exc:  # a dangling link, or removed since it was listed
        return IngestOutcome(source=obj, failure=FailureKind.unreadable, reason=f"cannot read file: {exc}")
    if not stat.S_ISREG(mode):  # a FIFO would block a reader for ever
        return IngestOutcome(
            source=obj,
            failure=FailureKind.unreadable,
            reason="not a regular file (a pipe, socket or device); nothing was read",
        )
    try:
        digest = sha256_file(obj.local_path)
    except OSError as exc:
        return IngestOutcome(source=obj, failure=FailureKind.unreadable, reason=f"cannot read file: {exc}")
    checked = precheck_kind(obj, limits)
    if isinstance(checked, tuple):
        return IngestOutcome(source=obj, sha256=digest, failure=checked[0], reason=checked[1])
    return IngestOutcome(source=obj, sha256=digest, kind=checked)
