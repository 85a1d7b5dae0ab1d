"""Text extraction of one PDF, run in a child process so it can be killed.

Invoked as ``python -m tasks.ingest.extract_worker PATH MAX_PAGES``; writes one JSON object to stdout:
``{"ok": true, "encrypted": bool, "pages": [{"number", "text", "quality"}...]}`` or
``{"ok": false, "kind": FailureKind, "reason": str}``. The parent (:mod:`tasks.ingest`) sets
the wall-clock and memory limits; this process only extracts.

pypdf is opened with ``strict=False`` and *every* exception type is caught and classified
(PITFALLS: broken files raise far more than ``PdfReadError``).
"""

from __future__ import annotations

import json
import logging
import sys
import warnings

#: A page whose tokens are mostly this long (characters) has words glued together.
GLUED_TOKEN_CHARS = 25
#: Below this share of spaces among non-newline characters, a long page counts as glued.
GLUED_SPACE_RATIO = 0.04


def page_quality(raw: str, cleaned: str) -> dict:
    """Quality signals of a page: empty, glued words, private-use and NUL counts (see
    :class:`schemas.documents.PageQuality`)."""
    nul = raw.count("\x00")
    pua = sum(1 for ch in raw if "\ue000" <= ch <= "\uf8ff")
    empty = not cleaned.strip()
    glued = False
    body = cleaned.replace("\n", "")
    if len(body) >= 200:
        tokens = cleaned.split()
        long_chars = sum(len(t) for t in tokens if len(t) >= GLUED_TOKEN_CHARS)
        space_ratio = body.count(" ") / len(body)
        glued = long_chars / max(1, len(body)) > 0.3 or space_ratio < GLUED_SPACE_RATIO
    return {"empty": empty, "glued_words": glued, "private_use_chars": pua, "nul_chars": nul}


def extract(path: str, max_pages: int) -> dict:
    """Extract per-page text from the PDF at ``path``; never raises (failures are returned)."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    from tasks.textnorm import clean_page_text

    try:
        reader = PdfReader(path, strict=False)
    except MemoryError:
        raise
    except FileNotDecryptedError as exc:
        return {"ok": False, "kind": "password_required", "reason": f"password required: {exc}"}
    except Exception as exc:  # noqa: BLE001 - every reader error means a corrupt file
        return {"ok": False, "kind": "corrupt", "reason": f"corrupt PDF: {type(exc).__name__}: {exc}"}

    encrypted = False
    try:
        encrypted = bool(reader.is_encrypted)
        if encrypted:
            # Permission-only files open with an empty user password.
            if not reader.decrypt(""):
                return {"ok": False, "kind": "password_required",
                        "reason": "password required: the PDF is encrypted with a user password"}
    except NotImplementedError as exc:
        return {"ok": False, "kind": "password_required", "reason": f"unsupported encryption: {exc}"}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "kind": "corrupt", "reason": f"corrupt PDF (encryption dictionary): {type(exc).__name__}: {exc}"}

    try:
        count = len(reader.pages)
    except FileNotDecryptedError as exc:
        return {"ok": False, "kind": "password_required", "reason": f"password required: {exc}"}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "kind": "corrupt", "reason": f"corrupt PDF (page tree): {type(exc).__name__}: {exc}"}
    if count == 0:
        return {"ok": False, "kind": "corrupt", "reason": "corrupt PDF: no pages"}
    if count > max_pages:
        return {"ok": False, "kind": "too_many_pages", "reason": f"{count} pages exceeds the limit of {max_pages}"}

    pages = []
    page_errors = 0
    for i in range(count):
        try:
            raw = reader.pages[i].extract_text() or ""
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - one bad page must not lose the document
            raw = ""
            page_errors += 1
        cleaned = clean_page_text(raw)
        pages.append({"number": i + 1, "text": cleaned, "quality": page_quality(raw, cleaned)})
    if page_errors == count:
        return {"ok": False, "kind": "corrupt", "reason": f"corrupt PDF: text extraction failed on all {count} pages"}
    return {"ok": True, "encrypted": encrypted, "pages": pages, "page_errors": page_errors}


def main(argv: list[str]) -> int:
    """Entry point: extract ``argv[1]`` with page limit ``argv[2]`` and print JSON."""
    logging.disable(logging.CRITICAL)  # pypdf logs warnings for every recoverable defect
    warnings.simplefilter("ignore")
    try:
        result = extract(argv[1], int(argv[2]))
    except MemoryError:
        result = {"ok": False, "kind": "memory_limit", "reason": "text extraction exceeded the memory limit"}
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through tasks.ingest
    raise SystemExit(main(sys.argv))

