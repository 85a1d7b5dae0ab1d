"""Reused results never outlive the code that made them: each version in a reuse key names its code.

The skip ledger reuses a document's stored findings when its sha256, prompt version, model (the rules
backend's ``RULES_VERSION``) and checks version (``FACT_CHECK_VERSION``) are unchanged. A change to the code
behind one of them must come with a new version, or an upgrade would keep serving what the old code found.
The fingerprint of a version is the SHA-256 of its modules' syntax trees (comments, formatting and
docstrings left out, so a documentation edit needs no new version). When this test fails: bump the version
named in the message and record the new fingerprint under it.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from schemas.findings import PROMPT_VERSION
from tasks.check.injection import DETECTOR_VERSION
from tasks.check.support import FACT_CHECK_VERSION
from tasks.review.backends.rules import RULES_VERSION
from tasks.review.chunk import CHUNKER_VERSION

ROOT = Path(__file__).resolve().parents[1]

#: Each reuse-key version, the modules whose code decides what is stored under it.
MODULES: dict[str, list[str]] = {
    "RULES_VERSION": ["tasks/review/backends/rules.py", "tasks/review/backends/filing_rules.py"],
    "PROMPT_VERSION": [
        "tasks/review/backends/prompt.py",
        "tasks/review/backends/filing_prompt.py",
        "schemas/findings.py",
    ],
    "FACT_CHECK_VERSION": [
        f"tasks/check/{name}.py"
        for name in (
            "factcheck",
            "support",
            "verifier",
            "values",
            "index",
            "zones",
            "merge",
            "consistency",
            "absences",
            "verdicts",
            "redactions",
            "xbrl",
            "judge",
        )
    ],
    "CHUNKER_VERSION": ["tasks/review/chunk.py"],
    "DETECTOR_VERSION": ["tasks/check/injection.py"],
}
VERSIONS = {
    "RULES_VERSION": RULES_VERSION,
    "PROMPT_VERSION": PROMPT_VERSION,
    "FACT_CHECK_VERSION": FACT_CHECK_VERSION,
    "CHUNKER_VERSION": CHUNKER_VERSION,
    "DETECTOR_VERSION": DETECTOR_VERSION,
}
#: The fingerprint each version was released with (first 16 hex digits).
FINGERPRINTS: dict[str, str] = {
    "rules-v8": "672f73846fba4354",
    "review-v5": "efef2cc4a5929975",
    "factcheck-v3": "de3b40bfa75e6ea7",
    "chunk-v1": "0c117ec886e5d70c",
    "injection-v1": "10857a981cf5d739",
}


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return tree


def fingerprint(paths: list[str], root: Path = ROOT) -> str:
    """SHA-256 (16 hex digits) of the modules' syntax trees under ``root``, docstrings left out."""
    digest = hashlib.sha256()
    for rel in paths:
        tree = _without_docstrings(ast.parse((root / rel).read_text(encoding="utf-8")))
        digest.update(rel.encode() + b"\0" + ast.dump(tree).encode() + b"\0")
    return digest.hexdigest()[:16]


def test_every_reuse_version_names_the_code_that_makes_its_results():
    stale = []
    for name, paths in MODULES.items():
        version, now = VERSIONS[name], fingerprint(paths)
        if FINGERPRINTS.get(version) != now:
            stale.append(f"{name} = {version!r}: its code changed (fingerprint {now}); bump {name} and record it")
    assert not stale, "\n".join(stale)


def test_a_code_change_without_a_new_version_is_caught(tmp_path):
    """The fingerprint moves with the code and not with a comment or a docstring."""
    rel = "tasks/review/chunk.py"
    text = (ROOT / rel).read_text(encoding="utf-8")
    edited = tmp_path / rel
    edited.parent.mkdir(parents=True)
    edited.write_text(text + '\n# a comment\n\n\ndef f():\n    """Doc."""\n', encoding="utf-8")
    commented = fingerprint([rel], tmp_path)
    edited.write_text(text + '\n\n\ndef f():\n    """Another doc."""\n', encoding="utf-8")
    assert fingerprint([rel], tmp_path) == commented
    edited.write_text(text + "\nEXTRA = 1\n", encoding="utf-8")
    assert fingerprint([rel], tmp_path) != fingerprint([rel])
