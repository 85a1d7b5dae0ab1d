"""Runtime settings (pydantic-settings), read from ``DOCREVIEW_*`` environment variables.

Build a :class:`Settings` when a flow or command starts (never at import), so tests and
deployments can change the environment first. Secrets are :class:`~pydantic.SecretStr`: their
value never appears in ``repr``, logs, reports or the database.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

BackendName = Literal["auto", "anthropic", "bedrock", "rules"]

#: Default SQLite database file, relative to the working directory.
DEFAULT_DATABASE_URL = "sqlite:///docreview.db"


class Limits(BaseSettings):
    """Resource limits applied to each document. Units are in the field names."""

    model_config = SettingsConfigDict(env_prefix="DOCREVIEW_", extra="ignore")

    max_file_bytes: int = Field(100 * 1024 * 1024, description="Largest accepted file, bytes.")
    max_pages: int = Field(2000, description="Most pages accepted in one document.")
    extraction_timeout_s: float = Field(300.0, description="Wall-clock limit for text extraction, seconds.")
    extraction_memory_mb: int = Field(1536, description="Address-space limit of the extraction process, MiB.")


class Settings(BaseSettings):
    """docreview settings.

    ``backend="auto"`` picks ``anthropic`` when ``ANTHROPIC_API_KEY`` is set and ``rules``
    (offline, deterministic) otherwise. ``chunk_chars``/``chunk_overlap_chars`` are in characters.
    """

    model_config = SettingsConfigDict(env_prefix="DOCREVIEW_", extra="ignore")

    database_url: str = Field(DEFAULT_DATABASE_URL, validation_alias=AliasChoices("DOCREVIEW_DATABASE_URL", "DATABASE_URL"))
    backend: BackendName = "auto"
    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "DOCREVIEW_ANTHROPIC_API_KEY")
    )
    anthropic_base_url: str | None = Field(None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL"))
    anthropic_model: str = "claude-sonnet-4-5"
    bedrock_model_id: str = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    bedrock_region: str = Field("us-east-1", validation_alias=AliasChoices("DOCREVIEW_BEDROCK_REGION", "AWS_REGION"))
    bedrock_endpoint_url: str | None = None
    llm_timeout_s: float = Field(120.0, description="Per-call timeout for LLM requests, seconds.")
    llm_max_tokens: int = Field(4096, description="max_tokens for one review call, tokens.")
    chunk_chars: int = Field(4000, description="Target chunk size, characters.")
    chunk_overlap_chars: int = Field(600, description="Overlap between consecutive chunks, characters.")
    max_workers: int = Field(default_factory=lambda: max(2, min(8, (os.cpu_count() or 2) * 2)))
    limits: Limits = Field(default_factory=Limits)

    def resolved_backend(self) -> Literal["anthropic", "bedrock", "rules"]:
        """The backend actually used: ``auto`` becomes ``anthropic`` with a key, else ``rules``."""
        if self.backend != "auto":
            return self.backend
        if self.anthropic_api_key is not None and self.anthropic_api_key.get_secret_value():
            return "anthropic"
        return "rules"

    def sqlite_path(self) -> Path | None:
        """Path of the SQLite file when :attr:`database_url` is a file SQLite URL, else None."""
        prefix = "sqlite:///"
        if self.database_url.startswith(prefix) and ":memory:" not in self.database_url:
            return Path(self.database_url[len(prefix):])
        return None
