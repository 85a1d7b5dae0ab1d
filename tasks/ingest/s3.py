"""S3 source: list a bucket prefix (or one object) and download objects for the review flow.

``docreview review s3://bucket/prefix`` lists every object under ``prefix/`` (paginated
``ListObjectsV2``), keeps keys ending in one of the suffixes (default: every kind read, :data:`tasks.ingest.kinds.SUPPORTED_SUFFIXES`; case-insensitive) and
hands the flow one :class:`~schemas.documents.SourceObject` per key, with ``uri`` =
``s3://bucket/key`` and the listed size and ETag. ``s3://bucket/exact-key`` names one object
(what the event-triggered deployment passes); an exact key is never filtered by suffix, like a
single local file.

Nothing is downloaded at listing time. The flow's fingerprint step calls
:func:`fetch_s3_object`, which checks the listed size against the limits first (an object over
``Limits.max_file_bytes`` fails "too large" without a byte being read), then streams the object
to a file in the run's download folder while computing its sha256, so memory stays flat
(1 MiB blocks) whatever the object size. The download is conditional on the listed ETag
(``If-Match``): an object overwritten between listing and download fails with a reason and the
next run reviews the new version.

Local file names are never derived from the key's characters: each object is stored as
``<sha256 of its URI>.obj`` inside a fresh per-run folder (``tempfile.mkdtemp``), so a key
such as ``../../etc/passwd``, one with control characters or odd Unicode, or a 1,024-byte key
cannot escape or overflow that folder. The flow removes each file when its document ends the
run and the folder at the end of the run (an ``atexit`` hook covers a crashed process).

Credentials come only from boto3's standard chain (environment, shared config and
credentials files, SSO, container and instance roles); none is ever logged. The endpoint is the
``endpoint_url`` argument, else ``DOCREVIEW_S3_ENDPOINT_URL``, else boto3's own
``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` handling, else AWS.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.documents import FailureKind, IngestOutcome, SourceObject
from schemas.settings import Limits
from tasks.ingest.kinds import DEFAULT_SUFFIXES, name_wanted
from tasks.ingest.local import SourceError, precheck_kind

#: Prefix of every per-run download folder (only folders with this prefix are ever removed).
DOWNLOAD_DIR_PREFIX = "docreview-s3-"
_BLOCK = 1 << 20  # download block, bytes
#: Bucket names: 3-63 lowercase letters, digits, dots and hyphens, starting and ending with a
#: letter or digit (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html);
#: legacy us-east-1 buckets may also hold capitals and underscores and be up to 255 long.
_BUCKET_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{1,253}[A-Za-z0-9]$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
#: Longest display name kept for an object (the URI keeps the full key), characters.
MAX_NAME_CHARS = 200


class S3Settings(BaseSettings):
    """S3 client settings, from ``DOCREVIEW_S3_*`` environment variables. Units in field names.

    ``max_attempts`` is botocore's total attempts per request in its ``standard`` retry mode
    (throttling, 5xx and connection errors, with exponential backoff and jitter; see
    https://boto3.amazonaws.com/v1/documentation/api/latest/guide/retries.html).
    """

    model_config = SettingsConfigDict(env_prefix="DOCREVIEW_S3_", extra="ignore")

    endpoint_url: str | None = Field(None, description="S3-compatible endpoint, e.g. http://127.0.0.1:9000.")
    suffix: str = Field(
        DEFAULT_SUFFIXES,
        description="Keys listed from a prefix must end with one of these comma-separated endings "
        "(case-insensitive; default: every kind read); '' = all.",
    )
    page_size: int = Field(1000, ge=1, le=1000, description="Keys per ListObjectsV2 page (S3 caps it at 1000).")
    connect_timeout_s: float = Field(10.0, gt=0, description="TCP connect timeout, seconds.")
    read_timeout_s: float = Field(60.0, gt=0, description="Socket read timeout, seconds.")
    max_attempts: int = Field(5, ge=1, le=20, description="Attempts per S3 request (botocore standard retries).")
    download_attempts: int = Field(
        3, ge=1, le=10, description="Attempts per object download when the body stream breaks."
    )


# --- URIs and names ------------------------------------------------------------------------


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``"s3://bucket/some/key"`` → ``("bucket", "some/key")``; the key may be empty.

    Raises :class:`SourceError` for a URI that is not ``s3://`` or names an invalid bucket.
    """
    if not uri.startswith("s3://"):
        raise SourceError(f"not an S3 URI: {uri!r} (expected s3://bucket/prefix)")
    bucket, _, key = uri[len("s3://") :].partition("/")
    if not _BUCKET_RE.match(bucket) or ".." in bucket:
        raise SourceError(f"invalid S3 bucket name {bucket!r} in {uri!r}")
    return bucket, key


def s3_uri(bucket: str, key: str) -> str:
    """The URI docreview uses for an object: ``s3://bucket/key`` (key as is, not escaped)."""
    return f"s3://{bucket}/{key}"


def display_name(key: str) -> str:
    """A safe display name for a key: its last segment, control and bidi characters replaced
    by ``?``, cut to :data:`MAX_NAME_CHARS` characters (the URI keeps the exact key)."""
    last = key.rstrip("/").rsplit("/", 1)[-1] or key
    clean = _CONTROL_RE.sub("?", last)
    return clean if len(clean) <= MAX_NAME_CHARS else clean[: MAX_NAME_CHARS - 1] + "…"


def download_name(uri: str) -> str:
    """File name of an object's download: sha256 of its URI + ``.obj`` (no key characters)."""
    return hashlib.sha256(uri.encode("utf-8", "surrogatepass")).hexdigest() + ".obj"


def _strip_etag(etag: str | None) -> str:
    return (etag or "").strip().strip('"')


# --- client ----------------------------------------------------------------------------------

_clients: dict[tuple[str | None, str], Any] = {}
_clients_lock = threading.Lock()


def resolve_endpoint(endpoint_url: str | None) -> str | None:
    """The endpoint to use: the argument, else ``DOCREVIEW_S3_ENDPOINT_URL``, else None (boto3
    then applies ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` itself, else AWS)."""
    return endpoint_url or S3Settings().endpoint_url or None


def s3_client(endpoint_url: str | None = None) -> Any:
    """A boto3 S3 client for ``endpoint_url`` (see :func:`resolve_endpoint`), one per endpoint
    and credential profile per process (boto3 clients are thread-safe; sessions are not).

    Explicit connect/read timeouts and botocore ``standard`` retries from :class:`S3Settings`.
    Credentials: boto3's default chain only.
    """
    import boto3
    from botocore.config import Config

    endpoint = resolve_endpoint(endpoint_url)
    key = (endpoint, os.environ.get("AWS_PROFILE", ""))
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            cfg = S3Settings()
            config = Config(
                connect_timeout=cfg.connect_timeout_s,
                read_timeout=cfg.read_timeout_s,
                retries={"max_attempts": cfg.max_attempts, "mode": "standard"},
                user_agent_extra="docreview",
                # Path-style addressing works with every S3-compatible store (no bucket DNS).
                s3={"addressing_style": "path"} if endpoint else None,
            )
            client = boto3.session.Session().client("s3", endpoint_url=endpoint, config=config)
            _clients[key] = client
        return client


def reset_clients() -> None:
    """Forget cached clients (after credentials or endpoints change, e.g. between tests)."""
    with _clients_lock:
        _clients.clear()


def describe_error(exc: BaseException, what: str) -> str:
    """A one-line, secret-free explanation of a boto3/botocore error during ``what``."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, PartialCredentialsError

    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        code = str(err.get("Code", "")) or str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        hints = {
            "NoSuchBucket": "the bucket does not exist",
            "NoSuchKey": "the object does not exist (deleted since it was listed?)",
            "404": "not found",
            "AccessDenied": "access denied (check the credentials and the bucket policy)",
            "403": "access denied (check the credentials and the bucket policy)",
            "InvalidAccessKeyId": "the AWS access key id is not valid for this endpoint",
            "SignatureDoesNotMatch": "the AWS secret key does not match the access key id",
            "ExpiredToken": "the AWS session token has expired",
            "PreconditionFailed": "the object changed since it was listed (ETag mismatch)",
            "412": "the object changed since it was listed (ETag mismatch)",
        }
        return f"{what}: {hints.get(code, code or 'error')}" + (
            f" ({err.get('Message')})" if err.get("Message") and code not in hints else ""
        )
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return f"{what}: no usable AWS credentials (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or a role)"
    if isinstance(exc, EndpointConnectionError):
        from urllib.parse import urlsplit

        url = urlsplit(str(exc.kwargs.get("endpoint_url", "")))
        return (
            f"{what}: cannot reach the S3 endpoint {url.scheme}://{url.netloc}"
            if url.netloc
            else f"{what}: cannot reach the S3 endpoint"
        )
    return f"{what}: {type(exc).__name__}: {str(exc)[:300]}"


# --- listing ----------------------------------------------------------------------------------

_download_dirs: set[str] = set()
_dirs_lock = threading.Lock()


def make_download_dir() -> Path:
    """A fresh private folder (mode 0700) for one run's downloads, removed at process exit
    at the latest."""
    path = Path(tempfile.mkdtemp(prefix=DOWNLOAD_DIR_PREFIX))
    with _dirs_lock:
        if not _download_dirs:
            atexit.register(_remove_all_download_dirs)
        _download_dirs.add(str(path))
    return path


def _remove_all_download_dirs() -> None:
    with _dirs_lock:
        dirs = list(_download_dirs)
    for d in dirs:
        remove_download_dir(d)


def list_s3_keys(
    source: str, endpoint_url: str | None = None, suffix: str | None = None, page_size: int | None = None
) -> tuple[str, list[tuple[str, int, str]]]:
    """``(bucket, [(key, size in bytes, ETag without quotes), ...])`` of ``source``, sorted by key.

    ``source`` is ``s3://bucket``, ``s3://bucket/prefix`` or ``s3://bucket/exact-key``. An exact
    key (an object whose key equals the path, not ending in ``/``) is one object, whatever its
    suffix. Any other path is a folder: ``prefix/`` is listed with the ``ListObjectsV2``
    paginator (``page_size`` keys per request, default ``S3Settings.page_size``), skipping
    folder markers (keys ending in ``/``), hidden keys (a segment such as ``.trash`` starting
    with ``.``, as the local source does; ``.`` and ``..`` segments are kept) and keys not
    ending in ``suffix`` (comma-separated; default ``S3Settings.suffix``, every kind read; case-insensitive; ``""``
    keeps all).

    Raises :class:`SourceError` (bad URI, missing bucket, access denied, no credentials,
    unreachable endpoint) with a one-line message.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, path = parse_s3_uri(source)
    cfg = S3Settings()
    suffix = cfg.suffix if suffix is None else suffix
    client = s3_client(endpoint_url)
    found: list[tuple[str, int, str]] = []
    try:
        if path and not path.endswith("/"):
            first = client.list_objects_v2(Bucket=bucket, Prefix=path, MaxKeys=1).get("Contents", [])
            if first and first[0]["Key"] == path:  # keys sort in UTF-8 byte order: an exact key comes first
                return bucket, [(path, int(first[0]["Size"]), _strip_etag(first[0].get("ETag")))]
        prefix = path if not path or path.endswith("/") else path + "/"
        paginator = client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": page_size or cfg.page_size}
        )
        for page in pages:
            for item in page.get("Contents", []):
                key = item["Key"]
                rel = key[len(prefix) :]
                if not rel or key.endswith("/"):
                    continue  # the prefix itself or a "folder" marker
                if any(part.startswith(".") and part not in (".", "..") for part in rel.split("/")):
                    continue  # hidden, like the local source; "." and ".." segments are just odd keys
                if not name_wanted(key, suffix):
                    continue
                found.append((key, int(item["Size"]), _strip_etag(item.get("ETag"))))
    except (ClientError, BotoCoreError) as exc:
        raise SourceError(describe_error(exc, f"cannot list {source}")) from None
    return bucket, sorted(found)


def list_s3_source(
    source: str,
    endpoint_url: str | None = None,
    suffix: str | None = None,
    page_size: int | None = None,
    download_dir: Path | None = None,
) -> list[SourceObject]:
    """The objects of ``source`` (see :func:`list_s3_keys` for what is listed) as
    :class:`SourceObject` items, sorted by key, for the review flow.

    Each object's ``local_path`` is a not-yet-existing file in ``download_dir`` (default: a new
    folder from :func:`make_download_dir`); :func:`fetch_s3_object` writes it. Raises
    :class:`SourceError` when the source cannot be listed.
    """
    endpoint = resolve_endpoint(endpoint_url)
    bucket, found = list_s3_keys(source, endpoint, suffix, page_size)
    folder = download_dir or make_download_dir()
    objects = []
    for key, size, etag in found:
        uri = s3_uri(bucket, key)
        objects.append(
            SourceObject(
                uri=uri,
                name=display_name(key),
                local_path=str(folder / download_name(uri)),
                size_bytes=size,
                etag=etag,
                endpoint_url=endpoint,
            )
        )
    return objects


# --- download ---------------------------------------------------------------------------------


class _TooLarge(Exception):
    """The body grew past the limit while streaming (the object changed after listing)."""


def download_object(obj: SourceObject, max_bytes: int) -> tuple[str, int, str | None]:
    """Stream ``obj`` to ``obj.local_path`` (created exclusively, mode 0600) in 1 MiB blocks.

    Returns ``(sha256 hex, bytes written, VersionId or None)``. The request carries
    ``If-Match: <listed ETag>``. A broken body stream is retried (``S3Settings.download_attempts``
    in all); request-level errors are already retried by botocore. Raises botocore's
    ``ClientError``/``BotoCoreError`` or ``OSError`` when the download fails, and ``_TooLarge``
    when more than ``max_bytes`` bytes arrive.
    """
    from botocore.exceptions import BotoCoreError

    bucket, key = parse_s3_uri(obj.uri)
    client = s3_client(obj.endpoint_url)
    target = Path(obj.local_path)
    attempts = S3Settings().download_attempts
    extra = {"IfMatch": f'"{obj.etag}"'} if obj.etag else {}
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a task worker on another host
    for attempt in range(1, attempts + 1):
        part = target.with_name(target.name + ".part")
        try:
            resp = client.get_object(Bucket=bucket, Key=key, **extra)
            body = resp["Body"]
            digest, written = hashlib.sha256(), 0
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                with os.fdopen(fd, "wb") as fh:
                    for block in body.iter_chunks(_BLOCK):
                        written += len(block)
                        if written > max_bytes:
                            raise _TooLarge(written)
                        digest.update(block)
                        fh.write(block)
            finally:
                body.close()
            os.replace(part, target)
            return digest.hexdigest(), written, resp.get("VersionId")
        except BotoCoreError:  # the body stream broke (read timeout, reset): retry the object
            part.unlink(missing_ok=True)
            if attempt == attempts:
                raise
        except BaseException:
            part.unlink(missing_ok=True)
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def fetch_s3_object(obj: SourceObject, limits: Limits) -> IngestOutcome:
    """Fingerprint an S3 object: size checks on the listing, download with sha256, header check.

    Returns an :class:`IngestOutcome` with ``sha256`` set when the bytes were read, and
    ``failure``/``reason`` when the object is empty or too large (decided from the listed
    size, nothing downloaded), the download failed (``unreadable``, with botocore's reason),
    or the bytes are not a PDF. Never raises for one object's problem: the batch goes on.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    if obj.size_bytes == 0:
        return IngestOutcome(source=obj, failure=FailureKind.empty_file, reason="empty object (0 bytes)")
    if obj.size_bytes > limits.max_file_bytes:
        return IngestOutcome(
            source=obj,
            failure=FailureKind.too_large,
            reason=f"too large: object is {obj.size_bytes:,} bytes, over the limit of {limits.max_file_bytes:,} bytes "
            "(not downloaded)",
        )
    try:
        digest, size, version = download_object(obj, limits.max_file_bytes)
    except _TooLarge:
        return IngestOutcome(
            source=obj,
            failure=FailureKind.too_large,
            reason=f"too large: object grew past the limit of {limits.max_file_bytes:,} bytes while "
            "downloading (changed since it was listed)",
        )
    except (ClientError, BotoCoreError, OSError) as exc:
        return IngestOutcome(source=obj, failure=FailureKind.unreadable, reason=describe_error(exc, "download failed"))
    fetched = obj.model_copy(update={"size_bytes": size, "version_id": version})
    checked = precheck_kind(fetched, limits)
    if isinstance(checked, tuple):
        return IngestOutcome(source=fetched, sha256=digest, failure=checked[0], reason=checked[1])
    return IngestOutcome(source=fetched, sha256=digest, kind=checked)


# --- clean-up ---------------------------------------------------------------------------------


def _is_download_dir(path: Path) -> bool:
    return path.name.startswith(DOWNLOAD_DIR_PREFIX) and path.parent.resolve() == Path(tempfile.gettempdir()).resolve()


def discard_download(obj: SourceObject) -> None:
    """Delete an S3 object's downloaded file (no-op for local objects or a missing file)."""
    if not obj.is_s3:
        return
    path = Path(obj.local_path)
    if _is_download_dir(path.parent):
        path.unlink(missing_ok=True)
        path.with_name(path.name + ".part").unlink(missing_ok=True)


def remove_download_dir(folder: str | Path) -> None:
    """Remove a per-run download folder (only folders made by :func:`make_download_dir`)."""
    path = Path(folder)
    if _is_download_dir(path):
        shutil.rmtree(path, ignore_errors=True)
    with _dirs_lock:
        _download_dirs.discard(str(path))


def remove_downloads(objects: list[SourceObject]) -> None:
    """Remove the download folders of ``objects`` (end of a run): S3 downloads and the exhibits split
    out of submission files (``part_of``). Other local objects are untouched."""
    for folder in {str(Path(o.local_path).parent) for o in objects if o.is_s3 or o.part_of}:
        remove_download_dir(folder)
