"""Local sources: list a folder (or one file), hash a file, pre-check a PDF before extraction."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from schemas.documents import (
    DocumentKind,
    FailureKind,
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
        SourceObject(uri=str(p), name=p.name, local_path=str(p.resolve()), size_bytes=_size_or_zero(p)) for p in files
    ]


def _size_or_zero(path: Path) -> int:
    """Size in bytes of a regular file (following links); 0 for anything else or a dangling link."""
    try:
        info = path.stat()
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def sha256_file(path: str) -> str:
    """Hex sha256 of the file at ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_READ_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def precheck(obj: SourceObject, limits: Limits) -> tuple[FailureKind, str] | None:
    """Cheap checks before extraction: zero bytes, over the size limit, a kind that is not read
    (:func:`tasks.ingest.kinds.detect_kind`).

    Returns ``(kind, reason)`` for a file that must fail, else None.
    """
    failed = precheck_kind(obj, limits)
    return failed if isinstance(failed, tuple) else None


def precheck_kind(obj: SourceObject, limits: Limits) -> tuple[FailureKind, str] | DocumentKind:
    """:func:`precheck`, returning the detected :class:`DocumentKind` when the file passes."""
    from tasks.ingest.kinds import UnsupportedKind, detect_kind

    if obj.size_bytes == 0:
        return FailureKind.empty_file, "empty file (0 bytes)"
    if obj.size_bytes > limits.max_file_bytes:
        return (
            FailureKind.too_large,
            f"file is {obj.size_bytes:,} bytes, over the limit of {limits.max_file_bytes:,} bytes",
        )
    try:
        return detect_kind(obj.local_path)
    except OSError as exc:
        return FailureKind.unreadable, f"cannot read file: {exc.strerror or exc}"
    except UnsupportedKind as exc:
        return FailureKind.unsupported_kind, str(exc)
