"""MkDocs hook: the reference pages written from the code at build time, so they cannot drift.

- ``settings.md``: the marker ``<!-- reference:settings -->`` is replaced by one table per
  pydantic-settings model (``schemas/settings.py`` ``Settings`` with its nested ``Limits``,
  ``tasks/ingest/s3.py`` ``S3Settings``, ``flows/deploy.py`` ``DeploySettings``): environment
  variable, type, default, description. A ``SecretStr`` field never shows a default.
- ``cli-reference.md`` (a generated page, not a file in ``docs/``): every command of the typer
  app (``cli/app.py``, entry point ``cli.app:main``), walked through ``typer.main.get_command``:
  usage, help, arguments and options as ``docreview COMMAND --help`` prints them.

Registered in ``mkdocs.yml`` under ``hooks:``; the project must be importable (``make docs-build``
installs it with the ``docs`` extra).
"""

from __future__ import annotations

import ast
import html
import inspect
import re
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SETTINGS_MARKER = "<!-- reference:settings -->"
CLI_PAGE = "cli-reference.md"

# --- Markdown helpers ---------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"``?([^`]+?)``?")


def cell(text: str) -> str:
    """``text`` as the content of a Markdown table cell: backtick spans become ``<code>``, and
    everything that Markdown or HTML would read (``<``, ``|``, ``*``, ``_``, ``[``) is escaped."""
    out, pos = [], 0
    for match in _CODE_SPAN.finditer(text):
        out.append(_plain(text[pos : match.start()]))
        out.append(code(match.group(1)))
        pos = match.end()
    out.append(_plain(text[pos:]))
    return "".join(out).replace("\n", " ")


def _plain(text: str) -> str:
    text = html.escape(text, quote=False)
    for char, entity in (
        ("|", "&#124;"),
        ("*", "&#42;"),
        ("_", "&#95;"),
        ("[", "&#91;"),
        ("]", "&#93;"),
        ("\\", "&#92;"),
    ):
        text = text.replace(char, entity)
    return text


def code(text: str) -> str:
    return "<code>" + _plain(text) + "</code>"


# --- Settings ------------------------------------------------------------------------------------


def _type_name(annotation: Any) -> str:
    """A reader's name for a field's type: ``int``, ``str or unset``, ``auto, anthropic …``."""
    from pydantic import SecretStr

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "unset"
    if annotation is SecretStr:
        return "secret"
    if origin is typing.Literal:
        return " / ".join(str(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        names = [_type_name(a) for a in args if a is not type(None)]
        optional = any(a is type(None) for a in args)
        return " or ".join(names) + (" (optional)" if optional else "")
    if origin is dict:
        return "JSON object"
    if origin in (list, tuple):
        return "JSON list"
    return getattr(annotation, "__name__", str(annotation))


def _is_secret(annotation: Any) -> bool:
    from pydantic import SecretStr

    return annotation is SecretStr or SecretStr in typing.get_args(annotation)


def _constraints(field: Any) -> str:
    """``> 0``, ``0 – 1`` and the like from the field's annotated-types metadata."""
    bounds = {}
    for item in field.metadata:
        for name in ("gt", "ge", "lt", "le", "min_length", "max_length"):
            value = getattr(item, name, None)
            if value is not None:
                bounds[name] = value
    parts = []
    for name, symbol in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
        if name in bounds:
            parts.append(
                f"{symbol} {bounds[name]:g}" if isinstance(bounds[name], float) else f"{symbol} {bounds[name]}"
            )
    if bounds.get("min_length") == 1:
        parts.append("not empty")
    elif "min_length" in bounds:
        parts.append(f"at least {bounds['min_length']} characters")
    if "max_length" in bounds:
        parts.append(f"at most {bounds['max_length']} characters")
    return ", ".join(parts)


def _factory_source(factory: Any) -> str | None:
    """The expression of a ``default_factory=lambda: …``, read from its source."""
    try:
        source = textwrap.dedent(inspect.getsource(factory))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            return ast.unparse(node.body)
    return None


def _default(field: Any, secret: bool) -> str:
    from pydantic_core import PydanticUndefined

    if secret:
        return "unset (secret)"
    if field.default_factory is not None:
        factory = field.default_factory
        if factory in (dict, list):
            return code(repr(factory()))
        expression = _factory_source(factory)
        return ("computed: " + code(expression)) if expression else "computed when the settings load"
    if field.default is PydanticUndefined:
        return "required"
    if field.default is None:
        return "unset"
    value = field.default
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        return code(value) if value else "empty"
    return code(str(value))


def _env_names(model: type, name: str, field: Any) -> list[str]:
    from pydantic import AliasChoices

    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice).upper() for choice in alias.choices if isinstance(choice, str)]
    if isinstance(alias, str):
        return [alias.upper()]
    prefix = model.model_config.get("env_prefix", "")
    return [(prefix + name).upper()]


def _docstring_bullets(model: type) -> dict[str, str]:
    """``- ``name``: text`` bullets of a model's docstring (DeploySettings documents its fields so)."""
    found: dict[str, str] = {}
    doc = inspect.getdoc(model) or ""
    for match in re.finditer(r"^- (.+?): (.+?)(?=^- |^\S|\Z)", doc, flags=re.M | re.S):
        text = " ".join(match.group(2).split())
        for name in re.findall(r"``(\w+)``", match.group(1)):
            found[name] = text
    return found


def settings_rows(model: type) -> list[str]:
    """Table rows for every field of ``model``; a nested settings model's fields are listed in its place."""
    from pydantic_settings import BaseSettings

    bullets = _docstring_bullets(model)
    rows = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseSettings):
            rows.extend(settings_rows(annotation))
            continue
        secret = _is_secret(annotation)
        env = "<br>".join(code(n) for n in _env_names(model, name, field))
        kind = _type_name(annotation)
        limits = _constraints(field)
        if limits:
            kind = kind.replace(" (optional)", "") + (" (optional; " if "(optional)" in kind else " (") + limits + ")"
        kind = cell(kind)
        description = field.description or bullets.get(name, "")
        rows.append(f"| {env} | {kind} | {_default(field, secret)} | {cell(description) or '—'} |")
    return rows


def settings_reference() -> str:
    from flows.deploy import DeploySettings
    from schemas.settings import Settings
    from tasks.ingest.s3 import S3Settings

    models = [
        (Settings, "schemas/settings.py", "Settings (and its nested Limits)", "Read when a run or command starts."),
        (S3Settings, "tasks/ingest/s3.py", "S3Settings", "The S3 client of `s3://` sources and the watcher."),
        (
            DeploySettings,
            "flows/deploy.py",
            "DeploySettings",
            "Read by `docreview serve` and when deploying with `deployments/prefect.yaml`.",
        ),
    ]
    parts = []
    for model, path, title, note in models:
        parts += [
            f"### {title}",
            "",
            f"`{path}`: {note}",
            "",
            "| environment variable | type | default | description |",
            "|---|---|---|---|",
            *settings_rows(model),
            "",
        ]
    return "\n".join(parts)


# --- CLI -------------------------------------------------------------------------------------------


def _walk(command: Any, ctx: Any, path: list[str]) -> list[tuple[list[str], Any, Any]]:
    out = [(path, command, ctx)]
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            sub_ctx = type(ctx)(sub, info_name=name, parent=ctx)
            out += _walk(sub, sub_ctx, [*path, name])
    return out


def cli_reference() -> str:
    import typer

    from cli.app import app

    root = typer.main.get_command(app)
    context_class = getattr(root, "context_class", None) or __import__("typer")._click.Context
    root_ctx = context_class(root, info_name="docreview")
    lines = [
        "# Command reference",
        "",
        "_Generated from the typer app (`cli/app.py`, entry point `cli.app:main`) when the site is built "
        "(`docs/hooks/reference.py`); the same text as `docreview COMMAND --help`. The prose is in "
        "[Command line](cli.md)._",
        "",
    ]
    for path, command, ctx in _walk(root, root_ctx, ["docreview"]):
        group = hasattr(command, "list_commands")
        lines += [f"{'#' * min(len(path) + 1, 4)} `{' '.join(path)}`", ""]
        help_text = inspect.cleandoc(command.help or "")
        if help_text:
            lines += [help_text, ""]
        lines += ["```text", command.get_usage(ctx).strip(), "```", ""]
        if group:
            subs = [n for n in command.list_commands(ctx) if not getattr(command.get_command(ctx, n), "hidden", False)]
            lines += ["Commands: " + ", ".join(f"`{n}`" for n in subs) + ".", ""]
        rows = []
        for param in command.get_params(ctx):
            if getattr(param, "hidden", False) or param.name == "help":
                continue
            record = param.get_help_record(ctx)
            if record is None:
                continue
            declaration, help_line = record
            rows.append(f"| {code(declaration)} | {cell(help_line) or '—'} |")
        if rows:
            lines += ["| argument or option | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)


# --- MkDocs events -------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, CLI_PAGE, content=cli_reference()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri == "settings.md":
        if SETTINGS_MARKER not in markdown:
            raise ValueError(f"docs/settings.md lost its {SETTINGS_MARKER} marker")
        markdown = markdown.replace(SETTINGS_MARKER, settings_reference())
    return markdown
