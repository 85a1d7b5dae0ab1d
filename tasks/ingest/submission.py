"""EDGAR complete submission text files: their exhibits as documents of their own.

A complete submission file (EDGAR Filer Manual Vol. II §6.4: ``<SEC-DOCUMENT>``, an ``<SEC-HEADER>``,
then one ``<DOCUMENT>`` per file with ``<TYPE>``, ``<SEQUENCE>``, ``<FILENAME>``, ``<DESCRIPTION>`` and its
``<TEXT>``) holds the filing and its exhibits in one object. The filing (the first ``<DOCUMENT>``) is read
from the object itself (:mod:`tasks.ingest.html`); each exhibit (``<TYPE>`` ``EX-…``: an EX-99.1 press
release, an EX-10 material contract) becomes a :class:`schemas.documents.SourceObject` of its own, so it is
fingerprinted, claimed, reviewed and reported like any document and linked to its filing in the report
(:func:`tasks.observe.report.link_exhibits`). Its bytes are the ``<DOCUMENT>`` block itself, written to a
private per-run folder; its ``uri`` is ``<submission uri>#<file name>``.

Left in the submission: its XBRL files (``EX-101.*``), graphics, ZIP and PDF parts, and any uuencoded part
(``begin 644 …``), none of which is text a reviewer reads. Local files only: an S3 object is downloaded
when it is fingerprinted, after listing, and is read as its first document only.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.documents import SourceObject

#: The start of a submission file (a byte-order mark and an XML declaration allowed).
_START = re.compile(rb"^(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*\?>\s*)?<(?:SEC-DOCUMENT|SEC-HEADER|IMS-HEADER)>", re.I)
_DOCUMENT = re.compile(rb"<DOCUMENT>.*?(?:</DOCUMENT>|\Z)", re.S | re.I)
_UUENCODED = re.compile(rb"<TEXT>\s*begin\s+[0-7]{3}\s", re.I)
#: Exhibit types that are not text: XBRL instance, schema and linkbases (Regulation S-K Item 601(b)(101)).
_NOT_TEXT = re.compile(r"^EX-101\b|^EX-104\b", re.I)
#: Largest submission file split (bytes); a larger one is read as its first document only.
MAX_SUBMISSION_BYTES = 200 * 1024 * 1024


def _field(block: bytes, name: str) -> str:
    m = re.search(rb"<" + name.encode() + rb">[ \t]*([^\r\n<]*)", block[:4096], re.I)
    return m.group(1).decode("ascii", "replace").strip() if m else ""


def submission_exhibits(path: str) -> list[tuple[dict[str, str], bytes]]:
    """The exhibits of the complete submission file at ``path``: ``[({"type", "sequence", "filename",
    "description"}, the exhibit's whole <DOCUMENT> block as bytes)]`` in file order, the first
    ``<DOCUMENT>`` (the filing itself) excluded; ``[]`` for a file that is not a submission, is larger
    than :data:`MAX_SUBMISSION_BYTES`, or cannot be read. Never raises for a bad file."""
    try:
        with open(path, "rb") as fh:
            if not _START.match(fh.read(4096)):
                return []
            fh.seek(0, 2)
            if fh.tell() > MAX_SUBMISSION_BYTES or fh.tell() == 0:
                return []
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                blocks = [m.group(0) for m in _DOCUMENT.finditer(data)]
    except (OSError, ValueError):
        return []
    out = []
    for block in blocks[1:]:
        header = {name: _field(block, name.upper()) for name in ("type", "sequence", "filename", "description")}
        if is_text_exhibit(header["type"], header["filename"]) and not _UUENCODED.search(block[:8192]):
            out.append((header, block))
    return out


def is_text_exhibit(doc_type: str | None, filename: str | None) -> bool:
    """True for an exhibit a reviewer reads: ``<TYPE>`` ``EX-…`` other than XBRL (``EX-101.*``, ``EX-104``),
    in a file that is not a PDF, image, ZIP, XML or schema (by its ``<FILENAME>`` ending)."""
    kind = (doc_type or "").upper()
    if not kind.startswith("EX-") or _NOT_TEXT.match(kind):
        return False
    return not (filename or "").lower().endswith((".pdf", ".jpg", ".jpeg", ".gif", ".png", ".zip", ".xml", ".xsd"))


def _safe_name(name: str, sequence: str) -> str:
    """A file name for an exhibit's bytes: its ``<FILENAME>`` reduced to letters, digits, ``.-_``."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name).strip("._") or "exhibit"
    return f"{re.sub(r'[^0-9]', '', sequence) or '0'}-{cleaned[:100]}"


@task(name="split-submissions", cache_policy=NO_CACHE)
def split_submissions(objects: list[SourceObject]) -> list[SourceObject]:
    """Prefect task: ``objects`` with, after each local EDGAR complete submission file, one
    :class:`SourceObject` per exhibit it holds (see the module docstring): ``uri`` ``<uri>#<file name>``,
    ``name`` ``"<name> › EX-99.1 <file name>"``, ``part_of`` the submission's ``uri``, ``local_path`` a
    file in a private folder (:func:`tasks.ingest.s3.make_download_dir`, removed at the end of the run
    with the S3 downloads). Objects that are not submissions pass unchanged. Side effect: writes the
    exhibits' bytes."""
    out: list[SourceObject] = []
    folder: Path | None = None
    for obj in objects:
        out.append(obj)
        if obj.is_s3 or obj.part_of or not obj.name.lower().endswith((".txt", ".nc")):
            continue
        for header, block in submission_exhibits(obj.local_path):
            if folder is None:
                from tasks.ingest.s3 import make_download_dir

                folder = make_download_dir()
            target = folder / _safe_name(header["filename"] or f"part{header['sequence']}", header["sequence"])
            target.write_bytes(block)
            label = header["filename"] or f"document {header['sequence']}"
            out.append(
                SourceObject(
                    uri=f"{obj.uri}#{label}",
                    name=f"{obj.name} › {header['type']} {label}",
                    local_path=str(target),
                    size_bytes=len(block),
                    part_of=obj.uri,
                )
            )
    return out
