"""Checks the CLI runs before it starts Prefect or touches a document: settings, database, credentials.

Each returns a problem as one line naming the environment variable or option to fix, so a
configuration error ends the command within seconds with exit status 2 (bad input), not after
Prefect's start-up with exit status 1. Nothing here imports Prefect.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_settings import SettingsError

from schemas.settings import Limits, Settings

#: Seconds a database server may take to accept a connection before the check gives up.
CONNECT_TIMEOUT_S = 5


def env_variable(field: str, model: type[BaseModel] = Settings) -> str:
    """The environment variable that sets ``field`` of ``model`` (its first alias, else
    ``DOCREVIEW_<FIELD>``); a name that is already a variable (an alias in an error) is returned."""
    info = model.model_fields.get(field)
    if info is None:
        return field if field.isupper() else f"DOCREVIEW_{field.upper()}"
    alias = info.validation_alias
    choices = getattr(alias, "choices", None) or ([alias] if isinstance(alias, str) else [])
    return str(choices[0]) if choices else f"DOCREVIEW_{field.upper()}"


def describe_validation_error(exc: ValidationError, options: dict[str, str] | None = None) -> str:
    """One line per problem: ``VARIABLE (or --option): message (got 'value')``; ``options`` maps
    field names given on the command line to their option names."""
    options = options or {}
    lines = []
    for error in exc.errors():
        loc = [str(part) for part in error.get("loc", ())]
        field = loc[-1] if loc else "?"
        model = Limits if len(loc) > 1 and loc[0] == "limits" else Settings
        message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        if not loc:  # a rule across several settings: its message names them
            lines.append(message)
            continue
        where = options.get(field) or env_variable(field, model)
        got = error.get("input")
        shown = "" if isinstance(got, dict) or got is None else f" (got {str(got)[:60]!r})"
        lines.append(f"{where}: {message}{shown}")
    return "; ".join(lines)


def load_settings(
    overrides: dict[str, Any], options: dict[str, str] | None = None
) -> tuple[Settings | None, str | None]:
    """``(settings, None)``, or ``(None, problem)`` when the environment or ``overrides`` are invalid."""
    try:
        return Settings(**overrides), None
    except ValidationError as exc:
        return None, describe_validation_error(exc, options)
    except SettingsError as exc:  # a value the settings source cannot even parse (malformed JSON)
        match = re.search(r'field "(\w+)"', str(exc))
        where = env_variable(match.group(1)) if match else "a DOCREVIEW_ setting"
        return None, f"{where}: cannot be parsed (JSON expected for a mapping or list)"


def _not_sqlite(file: Any) -> str | None:
    """None when ``file`` opens as a SQLite database (read-only), else why not ("is not a SQLite
    database", the driver's message for anything else)."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{file}?mode=ro", uri=True)) as conn:
            conn.execute("pragma schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        return "is not a SQLite database" if "not a database" in str(exc) else f"cannot be opened: {exc}"
    return None


def _not_writable(file: Any) -> str | None:
    """None when the run can write the SQLite file ``file`` (a resolved path whose folder exists):
    its folder takes a new file (SQLite creates the database and its journal there) and the file,
    when it exists, opens for writing (nothing is written to it). Else why not, naming the folder
    or the file.

    Tried, not inferred from permission bits: root ignores those, yet cannot write to a read-only
    mount, an immutable folder (``chattr +i``) or ``/proc``."""
    import os
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".docreview-write-check-", dir=file.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"the folder {file.parent} of the SQLite file is not writable ({exc.strerror or exc})"
    if file.is_file():
        try:
            with open(file, "r+b"):
                pass
        except OSError as exc:
            return f"the SQLite file {file} is not writable ({exc.strerror or exc})"
    return None


def missing_database(url: str, option: str = "--db") -> str | None:
    """For commands that only read or annotate stored runs: one line when ``url`` is a SQLite file
    that does not exist (a mistyped ``--db`` would otherwise create an empty database and report
    "nothing here"), else None."""
    from pathlib import Path

    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None  # the command's own error handling names a malformed URL
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" or database.startswith("file:"):
        return None
    file = Path(database).expanduser()
    if file.exists():
        return None
    return (
        f"{option} / DATABASE_URL: no database at {file.resolve()} (nothing has been reviewed into it; check the path)"
    )


def check_database(url: str, option: str = "--db") -> str | None:
    """None when ``url`` can be opened (a SQLite file's folder exists and is writable, and the file,
    when it exists, is a writable SQLite database; a server accepts a connection within
    :data:`CONNECT_TIMEOUT_S` seconds), else one line saying why."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return f"{option} / DATABASE_URL: {url!r} is not a database URL (e.g. sqlite:///docreview.db)"
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            from pathlib import Path

            file = Path(database).expanduser().resolve()
            if not file.parent.is_dir():
                return f"{option} / DATABASE_URL: the folder {file.parent} of the SQLite file does not exist"
            if file.is_dir():
                return f"{option} / DATABASE_URL: {file} is a folder, not a SQLite file"
            if file.is_file() and file.stat().st_size:
                problem = _not_sqlite(file)
                if problem:
                    return f"{option} / DATABASE_URL: {file} {problem}"
            problem = _not_writable(file)
            if problem:
                return f"{option} / DATABASE_URL: {problem}"
        return None
    args = {"connect_timeout": CONNECT_TIMEOUT_S} if parsed.get_backend_name() == "postgresql" else {}
    try:
        engine = create_engine(url, connect_args=args, pool_pre_ping=False)
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        return f"{option} / DATABASE_URL: cannot use {parsed.render_as_string(hide_password=True)}: {exc}"
    try:
        with engine.connect() as conn:
            conn.execute(text("select 1"))
    except DBAPIError as exc:
        first = str(exc.orig or exc).strip().splitlines()[0] if str(exc.orig or exc).strip() else type(exc).__name__
        return f"{option} / DATABASE_URL: cannot connect to {parsed.render_as_string(hide_password=True)}: {first}"
    finally:
        engine.dispose()
    return None


def check_backend(settings: Settings) -> str | None:
    """None when the chosen backend has what it needs to start, else one line saying what is
    missing: ``anthropic`` needs ``ANTHROPIC_API_KEY``; ``bedrock`` needs an inference profile it can
    derive (``DOCREVIEW_BEDROCK_INFERENCE_PROFILE=auto`` in a region with no geographic profile is refused:
    :meth:`Settings.bedrock_profile`) and AWS credentials from boto3's credential chain (environment,
    shared files, SSO, instance role)."""
    backend = settings.resolved_backend()
    problem = retired_model_setting(settings, backend) or output_mode_setting(settings, backend)
    if problem:
        return problem
    if backend == "anthropic" and (
        settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value()
    ):
        return "the anthropic backend needs ANTHROPIC_API_KEY (or use --backend rules)"
    if settings.redact_pii and settings.redact_pii_names and backend != "rules":
        import importlib.util

        if importlib.util.find_spec("spacy") is None or importlib.util.find_spec(settings.pii_ner_model) is None:
            return (
                f"DOCREVIEW_REDACT_PII_NAMES needs spaCy and its pipeline package {settings.pii_ner_model!r} "
                "(DOCREVIEW_PII_NER_MODEL): pip install -e '.[pii]'"
            )
    if backend == "bedrock":
        import boto3

        from tasks.review.reviewer import bedrock_model_for

        try:
            bedrock_model_for(settings)
        except ValueError as exc:
            return str(exc)

        if boto3.session.Session().get_credentials() is None:
            return (
                "the bedrock backend needs AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                "AWS_PROFILE, or an instance role), or use --backend rules"
            )
    return None


def retired_model_setting(settings: Settings, backend: str) -> str | None:
    """One line naming the setting when a model the run would call is a retired one (the API answers
    every request to it with 404; tasks/review/backends/models.py ``RETIRED``, with its source), else
    None. The review model counts for a model backend; the verifier model where the verifier runs."""
    from tasks.review.backends.models import DEFAULT_MODEL, retired

    named: list[tuple[str, str]] = []
    if backend in ("anthropic", "bedrock"):
        named.append(("DOCREVIEW_ANTHROPIC_MODEL", settings.anthropic_model))
    if backend == "bedrock" and settings.bedrock_model_id:
        named.append(("DOCREVIEW_BEDROCK_MODEL_ID", settings.bedrock_model_id))
    if settings.verifier_on(backend):
        named.append(("DOCREVIEW_VERIFIER_MODEL", settings.verifier_model))
    for setting, model in named:
        name = retired(model)
        if name is not None:
            return (
                f"{setting}: {model!r} is {name}, a retired model (requests to it fail); choose a current model "
                f"such as {DEFAULT_MODEL} (docs/models.md lists them)"
            )
    return None


def output_mode_setting(settings: Settings, backend: str) -> str | None:
    """One line naming the setting when the run's model cannot answer in the configured output mode, or
    the inference profile cannot apply to it, else None: the checks the backend makes when it is built
    (``tasks.review.backends.anthropic_backend.validate_config``), made before the run starts."""
    if backend not in ("anthropic", "bedrock"):
        return None
    from tasks.review.backends.anthropic_backend import LLMConfigError, validate_config
    from tasks.review.backends.models import bedrock_route

    mode = None if settings.llm_output_mode == "auto" else settings.llm_output_mode
    model, offered = settings.anthropic_model, True
    if backend == "bedrock":
        from tasks.review.reviewer import bedrock_model_for

        try:
            model = bedrock_model_for(settings)
        except ValueError as exc:
            return str(exc)
        route = bedrock_route(model)
        offered = route.api == "converse"
        profile = settings.bedrock_inference_profile.strip()
        if route.api == "messages" and not settings.bedrock_model_id and profile not in ("auto", ""):
            return (
                f"DOCREVIEW_BEDROCK_INFERENCE_PROFILE: {profile!r} does not apply to {settings.anthropic_model}, which "
                f"Claude in Amazon Bedrock serves at the regional endpoint of DOCREVIEW_BEDROCK_REGION "
                f"({settings.bedrock_region}): its requests are processed there. Choose a region in the geography "
                "you need, or unset the profile"
            )
    try:
        validate_config(
            model,
            settings.llm_max_tokens,
            settings.llm_max_tokens_ceiling,
            settings.llm_timeout_s,
            settings.llm_thinking_budget_tokens,
            mode,
            offered,
        )
    except LLMConfigError as exc:
        return f"DOCREVIEW_LLM_OUTPUT_MODE / DOCREVIEW_ANTHROPIC_MODEL: {exc}"
    return None


def check_playbook(path: str | None, option: str = "--playbook / DOCREVIEW_PLAYBOOK") -> str | None:
    """None when no playbook is given or the one given is valid, else one line naming the option,
    the rule and the field (see :func:`tasks.check.playbook.load_playbook`)."""
    if not path:
        return None
    from tasks.check.playbook import PlaybookError, load_playbook

    try:
        load_playbook(path)
    except PlaybookError as exc:
        return f"{option}: {exc}"
    return None


def check_support_model() -> str | None:
    """None when the fact-check's support model loads, else one line naming its file (missing: a
    broken installation; unreadable: a damaged file)."""
    from tasks.check.support import require_model

    try:
        require_model()
    except ValueError as exc:
        return str(exc)
    return None


def check_ocr(settings: Settings) -> str | None:
    """None when Tesseract is on ``PATH``, else a warning (not an error: a document with a text layer
    needs no OCR) saying what happens to scanned pages with the run's backend: read by the model
    (``anthropic`` or ``bedrock``, ``DOCREVIEW_PAGE_IMAGES=auto``) or failed with the reason and the fix."""
    from schemas.documents import TESSERACT_MISSING
    from tasks.ingest.ocr import tesseract_available

    if tesseract_available():
        return None
    backend = settings.resolved_backend()
    if backend in ("anthropic", "bedrock") and settings.page_images == "auto":
        then = "scanned pages will be sent to the model as page images (DOCREVIEW_PAGE_IMAGES=auto)"
    else:
        then = f"scanned pages will not be read and a scan-only document fails (backend {backend})"
    return f"OCR unavailable ({TESSERACT_MISSING}): {then}"
