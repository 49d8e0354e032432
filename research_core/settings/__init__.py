"""The one settings object. Only `Settings.from_env` reads the environment.

Every tier is one setting away from a real model:
  RED_<TIER>_MODEL     "bundled" (default), a path ending in .gguf, or a model name
  RED_<TIER>_BASE_URL  an OpenAI-compatible base URL; when set, the tier uses it
  RED_<TIER>_API_KEY   the key for that endpoint (never logged)
  RED_<TIER>_GPU_LAYERS  a local GGUF model's layers on a GPU: 0 (default), a count, -1 all
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from research_core.errors import SettingsError
from research_core.policy import Policy, load_policy
from research_core.redaction import (
    argv_secrets,
    credential_parts,
    mapping_secrets,
    redacted_repr,
    url_secrets,
)
from research_core.settings.mcp import McpSettings, mcp_from_env
from research_core.settings.service import (
    WEB_BACKENDS,
    SlackSettings,
    WebSettings,
    WorkerSettings,
    slack_from_env,
    web_from_env,
    worker_from_env,
)
from research_core.settings.values import (
    Secret,
    bounded,
    check_fields,
    checked_url,
    database_url,
    parse_calls,
    parse_field,
    parse_gpu_layers,
    path_or_none,
)

TIERS = ("planner", "executor", "reporter")
BUNDLED = "bundled"
NO_MODEL = "none"  # RED_<TIER>_MODEL=none: every call of the tier takes the code path
DAY_S = 86_400
YEAR_S = 365 * DAY_S
MAX_DAYS = 36_500  # a century: dates stay within what datetime can represent
MAX_COUNT = 100_000
MAX_CONTEXT = 1_048_576
# The least that can work, for the caps whose small values would silently break every run:
MIN_CONTEXT = 1024  # a generating model's window: a prompt and a short answer (tokens)
MIN_EMBED_CONTEXT = 256  # an embedding model's window: one passage (tokens)
MIN_COMPLETION_TOKENS = 64  # one small JSON object, or a few sentences of report
MIN_SNIPPET_CHARS = 50  # a sentence of a hit, enough to judge it by
MIN_QUESTION_CHARS = 100  # the longest accepted question may not be shorter than a question
MAX_THREADS = 1024
MAX_GPU_LAYERS = 10_000  # llama.cpp offloads at most the model's layers; -1 asks for all
LOG_FORMATS = ("text", "json")
MIN_SECRET_CHARS = 4  # a shorter "secret" would mask ordinary words in every line


@dataclass(frozen=True)
class TierSettings:
    model: str = BUNDLED
    base_url: str | None = None
    api_key: Secret = field(default_factory=lambda: Secret(""))
    price_in_per_mtok: float = bounded(0.0, 0, 1e6)
    price_out_per_mtok: float = bounded(0.0, 0, 1e6)
    timeout_s: float = bounded(120.0, above=0, hi=DAY_S)
    max_retries: int = bounded(3, 0, 20)
    gpu_layers: int = bounded(0, -1, MAX_GPU_LAYERS)  # a GGUF model's layers on a GPU; -1: all

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    @property
    def kind(self) -> str:
        if self.base_url:
            return "openai"
        return "none" if self.model == NO_MODEL else "gguf"

    @property
    def gguf_path(self) -> str | None:
        return None if self.base_url or self.model in (BUNDLED, NO_MODEL) else self.model


@dataclass(frozen=True)
class EngineSettings:
    """The research loop's knobs and their defaults (docs/design.md §1)."""

    query_variants: int = bounded(3, 1, 10)
    search_concurrency: int = bounded(3, 1, 64)
    snippet_chars: int = bounded(200, MIN_SNIPPET_CHARS, 10_000)
    hits_per_query: int = bounded(5, 1, 100)
    cache_ttl_s: int = bounded(86_400, 0, 10 * YEAR_S)
    weight_relevance: float = bounded(0.6, 0, 1)
    weight_credibility: float = bounded(0.2, 0, 1)
    weight_recency: float = bounded(0.2, 0, 1)
    evidence_threshold: float = bounded(0.65, 0, 1)
    working_memory_cap: int = bounded(30, 1, 10_000)
    # Standard: notes shorter than this are kept as the sub-question's summary, in code (a
    # summary's answer, 320 tokens, holds about as much: nothing to compress); 0: always ask
    summary_model_min_chars: int = bounded(1280, 0, 1_000_000)
    reflect_every_steps: int = bounded(3, 1, 10_000)
    max_children: int = bounded(4, 1, 20)
    max_depth: int = bounded(2, 0, 10)
    evidence_per_done_node: int = bounded(2, 1, 100)  # kept items before coverage is judged
    coverage_relevance: float = bounded(0.7, 0, 1)  # embedder relevance that covers a facet
    standard_coverage_share: float = bounded(0.5, 0, 1)  # of a node's facets, in standard
    rounds_per_node: int = bounded(2, 1, 100)
    recency_full_days: int = bounded(90, 0, MAX_DAYS)
    recency_zero_days: int = bounded(1095, 1, MAX_DAYS)
    lookback_days: int | None = bounded(None, 1, MAX_DAYS)
    max_question_chars: int = bounded(4000, MIN_QUESTION_CHARS, 1_000_000)
    json_max_tokens: int = bounded(384, MIN_COMPLETION_TOKENS, 131_072)
    report_max_tokens: int = bounded(900, MIN_COMPLETION_TOKENS, 131_072)
    # The evidence list the reporter reads (research_core/loop/report/report_evidence.py): its
    # findings and sources together, whatever the run's length (characters).
    report_evidence_chars: int = bounded(20_000, 1000, 1_000_000)
    # What a Slack reader reads of an answer (lead, parts and report together): about two
    # screens of a Slack thread, a minute or two of reading (docs/evaluation.md).
    reading_budget_chars: int = bounded(2400, 400, 100_000)
    dedup_similarity: float = bounded(0.85, hi=1, above=0)
    deep_read_relevance: float = bounded(0.8, 0, 1)
    deep_reads_per_node: int = bounded(3, 0, 1000)
    deep_read_paragraphs: int = bounded(2, 1, 100)
    revise_similarity: float = bounded(0.45, 0, 1)
    followup_steps: int = bounded(6, 0, 10_000)
    relevance_margin: float = bounded(0.5, 0, 1)
    relevance_full_similarity: float = bounded(0.5, hi=1, above=0)
    off_goal_similarity: float = bounded(0.25, 0, 1)
    related_similarity: float = bounded(0.3, 0, 1)

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    def __post_init__(self) -> None:
        if self.recency_zero_days <= self.recency_full_days:
            raise SettingsError("RED_ENGINE_RECENCY_ZERO_DAYS must be above "
                                "RED_ENGINE_RECENCY_FULL_DAYS")


@dataclass(frozen=True)
class EmbeddingSettings:
    model: str = BUNDLED
    base_url: str | None = None
    api_key: Secret = field(default_factory=lambda: Secret(""))
    timeout_s: float = bounded(60.0, above=0, hi=DAY_S)
    max_retries: int = bounded(3, 0, 20)
    gguf_context: int = bounded(8192, MIN_EMBED_CONTEXT, MAX_CONTEXT)
    gguf_threads: int | None = bounded(None, 1, MAX_THREADS)
    gpu_layers: int = bounded(0, -1, MAX_GPU_LAYERS)  # a GGUF model's layers on a GPU; -1: all

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    @property
    def kind(self) -> Literal["bundled", "gguf", "openai"]:
        return "openai" if self.base_url else "bundled" if self.model == BUNDLED else "gguf"


@dataclass(frozen=True)
class BudgetSettings:
    """The standard budget of a run (docs/design.md §3), one total per axis (RED_BUDGET_<NAME>).

    Deep totals are each standard total + floor(total / 2). Revision limits left unset
    (None) are 2 per part / 8 per run in standard and 6 / 24 in applied deep; a configured
    value, 0 included, holds in both modes. `final_reserve_*` units are kept back from the
    totals for the final report (used only in finalisation). `deep_allowed` is the
    requester allow-list (RED_DEEP_ALLOWED: "*" = everyone, "none", or comma-separated ids).
    """

    steps: int = bounded(36, 1, MAX_COUNT)
    model_calls: int = bounded(57, 1, MAX_COUNT)
    reads: int = bounded(72, 1, MAX_COUNT)
    discoveries: int = bounded(6, 1, MAX_COUNT)
    publications: int = bounded(48, 1, MAX_COUNT)
    active_time_s: int = bounded(3600, 1, 30 * DAY_S)
    revisions_per_part: int | None = bounded(None, 0, MAX_COUNT)
    revisions_per_run: int | None = bounded(None, 0, MAX_COUNT)
    reminder_fraction: float = bounded(0.5, hi=1, above=0)
    upgrade_refusal_fraction: float = bounded(0.8, hi=1, above=0)
    final_reserve_model_calls: int = bounded(5, 0, MAX_COUNT)
    final_reserve_publications: int = bounded(1, 0, MAX_COUNT)
    deep_allowed: tuple[str, ...] = ("*",)

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    def __post_init__(self) -> None:
        check_fields(self, lambda name: "RED_BUDGET_" + name.upper())
        if self.final_reserve_model_calls >= self.model_calls:
            raise SettingsError("RED_BUDGET_FINAL_RESERVE_MODEL_CALLS must be below "
                                "RED_BUDGET_MODEL_CALLS")
        if self.final_reserve_publications >= self.publications:
            raise SettingsError("RED_BUDGET_FINAL_RESERVE_PUBLICATIONS must be below "
                                "RED_BUDGET_PUBLICATIONS")


@dataclass(frozen=True)
class Settings:
    tiers: dict[str, TierSettings] = field(
        default_factory=lambda: {t: TierSettings() for t in TIERS}
    )
    engine: EngineSettings = field(default_factory=EngineSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    data_dir: Path = Path.home() / ".local" / "share" / "redsearch"
    database_url: str | None = None
    corpus_dir: Path | None = None
    gguf_threads: int | None = bounded(None, 1, MAX_THREADS)
    gguf_context: int = bounded(4096, MIN_CONTEXT, MAX_CONTEXT)
    embedded_calls: frozenset[str] | None = None  # RED_EMBEDDED_CALLS; None: measured profile
    as_of: dt.date | None = None
    slack: SlackSettings = field(default_factory=SlackSettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    web: WebSettings = field(default_factory=WebSettings)
    policy: Policy = field(default_factory=Policy)  # RED_POLICY_FILE (research_core/policy.py)
    mcp: McpSettings = field(default_factory=McpSettings)  # RED_MCP_SERVERS (settings/mcp.py)
    log_format: str = "text"  # RED_LOG_FORMAT: text (readable lines) or json (one object a line)
    # RED_METRICS_TOKEN: set, every /metrics (the bot's, a worker's) asks for it as a bearer token
    metrics_token: Secret = field(default_factory=lambda: Secret(""))

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    def __post_init__(self) -> None:
        if "mcp" in self.web.backends and not self.mcp.servers:
            raise SettingsError("RED_SEARCH_BACKENDS names mcp: list the servers in "
                                "RED_MCP_SERVERS")
        if self.mcp.servers and "mcp" not in self.web.backends:
            raise SettingsError("RED_MCP_SERVERS is set but RED_SEARCH_BACKENDS leaves out mcp; "
                                "add it (e.g. RED_SEARCH_BACKENDS=corpus,mcp)")

    def secret_values(self) -> list[str]:
        """Every secret the settings hold (tokens, keys, passwords and secret query values in
        URLs, secret options of an MCP server's command and arguments), longest first: what
        must never be shown, whatever text it turns up in."""
        web, slack = self.web, self.slack
        urls = [self.worker.redis_url, self.database_url or "", web.searxng_url, web.brave_url,
                web.tavily_url, slack.api_url, self.embedding.base_url or "",
                *(t.base_url or "" for t in self.tiers.values()),
                *(server.url for server in self.mcp.servers)]
        found = [slack.bot_token, slack.signing_secret, slack.app_token, slack.client_secret,
                 self.metrics_token, self.embedding.api_key, web.brave_api_key,
                 web.tavily_api_key, *(t.api_key for t in self.tiers.values()),
                 *(secret for url in urls for secret in url_secrets(url)),
                 *(v for server in self.mcp.servers
                   for v in (*server.env.values(),
                             *(p for h in server.headers.values() for p in credential_parts(h)),
                             *argv_secrets(server.command),
                             *mapping_secrets(server.arguments)))]
        return sorted({str(s) for s in found if s and len(s) >= MIN_SECRET_CHARS},
                      key=len, reverse=True)

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir / 'redsearch.db'}"

    @property
    def db_origin(self) -> str:
        """The setting that placed the database, for error lines (`SqlStore.open`)."""
        return "DATABASE_URL" if self.database_url else "RED_DATA_DIR"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        base = cls()
        mcp = mcp_from_env(env)
        return replace(
            base,
            tiers={t: _tier_from_env(env, t) for t in TIERS},
            engine=_engine_from_env(env),
            embedding=_embedding_from_env(env),
            budget=_budget_from_env(env),
            data_dir=Path(env.get("RED_DATA_DIR", str(base.data_dir))).expanduser(),
            database_url=database_url(env.get("DATABASE_URL") or None),
            corpus_dir=path_or_none(env.get("RED_CORPUS_DIR")),
            gguf_threads=parse_field(env, "RED_GGUF_THREADS", cls, "gguf_threads"),
            gguf_context=parse_field(env, "RED_GGUF_CONTEXT", cls, "gguf_context"),
            embedded_calls=parse_calls(env.get("RED_EMBEDDED_CALLS", "")),
            slack=slack_from_env(env),
            worker=worker_from_env(env),
            web=web_from_env(env, ("mcp",) if mcp.servers else WebSettings().backends),
            policy=load_policy(path_or_none(env.get("RED_POLICY_FILE"))),
            mcp=mcp,
            log_format=_log_format(env.get("RED_LOG_FORMAT", "")),
            metrics_token=Secret(env.get("RED_METRICS_TOKEN", "")),
        )


def _log_format(raw: str) -> str:
    value = raw.strip().lower() or "text"
    if value not in LOG_FORMATS:
        raise SettingsError(f"RED_LOG_FORMAT={raw!r}: use {' or '.join(LOG_FORMATS)}")
    return value


def _tier_from_env(env: Mapping[str, str], tier: str) -> TierSettings:
    p = f"RED_{tier.upper()}_"
    d = TierSettings()
    if env.get(p + "BASE_URL") and env.get(p + "MODEL", BUNDLED) in ("", BUNDLED):
        raise SettingsError(f"{p}BASE_URL is set: name the endpoint's model in {p}MODEL")
    base_url = env.get(p + "BASE_URL") or None
    return TierSettings(
        model=env.get(p + "MODEL", d.model) or d.model,
        base_url=checked_url(p + "BASE_URL", base_url) if base_url else None,
        api_key=Secret(env.get(p + "API_KEY", "")),
        price_in_per_mtok=parse_field(env, p + "PRICE_IN_PER_MTOK", TierSettings,
                                      "price_in_per_mtok"),
        price_out_per_mtok=parse_field(env, p + "PRICE_OUT_PER_MTOK", TierSettings,
                                       "price_out_per_mtok"),
        timeout_s=parse_field(env, p + "TIMEOUT_S", TierSettings, "timeout_s"),
        max_retries=parse_field(env, p + "MAX_RETRIES", TierSettings, "max_retries"),
        gpu_layers=parse_gpu_layers(env, p + "GPU_LAYERS", TierSettings),
    )


def _embedding_from_env(env: Mapping[str, str]) -> EmbeddingSettings:
    """RED_EMBED_MODEL ("bundled" | a .gguf path | a model name), _BASE_URL, _API_KEY."""
    model = env.get("RED_EMBED_MODEL", "") or BUNDLED
    base_url = env.get("RED_EMBED_BASE_URL") or None
    if base_url and model == BUNDLED:
        raise SettingsError("RED_EMBED_BASE_URL is set: name the endpoint's model in "
                            "RED_EMBED_MODEL")
    if not base_url and model != BUNDLED and not model.lower().endswith(".gguf"):
        raise SettingsError(f"RED_EMBED_MODEL={model!r} is neither 'bundled' nor a .gguf "
                            "path (an endpoint's model also needs RED_EMBED_BASE_URL)")
    if base_url:
        checked_url("RED_EMBED_BASE_URL", base_url)
    return EmbeddingSettings(model=model, base_url=base_url,
                             api_key=Secret(env.get("RED_EMBED_API_KEY", "")),
                             gpu_layers=parse_gpu_layers(env, "RED_EMBED_GPU_LAYERS",
                                                         EmbeddingSettings))


def _budget_from_env(env: Mapping[str, str]) -> BudgetSettings:
    """Every budget knob is RED_BUDGET_<NAME>; the deep allow-list is RED_DEEP_ALLOWED."""
    values: dict[str, Any] = {}
    for f in fields(BudgetSettings):
        key = "RED_BUDGET_" + f.name.upper()
        if f.name == "deep_allowed" or not env.get(key):
            continue
        values[f.name] = parse_field(env, key, BudgetSettings, f.name)
    values["deep_allowed"] = _deep_allowed(env.get("RED_DEEP_ALLOWED", ""))
    return BudgetSettings(**values)


def _deep_allowed(raw: str) -> tuple[str, ...]:
    """"*" (or unset) = everyone, "none" = nobody, else comma-separated requester ids."""
    if raw.strip() in ("", "*"):
        return ("*",)
    if raw.strip().lower() == "none":
        return ()
    ids = tuple(part.strip() for part in raw.split(","))
    if any(not i or "*" in i or any(c.isspace() for c in i) for i in ids):
        raise SettingsError(f"RED_DEEP_ALLOWED={raw!r}: use '*', 'none' or comma-separated "
                            "ids without spaces")
    return ids


def _engine_from_env(env: Mapping[str, str]) -> EngineSettings:
    """Every engine knob is RED_ENGINE_<NAME>, e.g. RED_ENGINE_EVIDENCE_THRESHOLD=0.7."""
    values: dict[str, Any] = {}
    for f in fields(EngineSettings):
        key = "RED_ENGINE_" + f.name.upper()
        if key in env:
            values[f.name] = parse_field(env, key, EngineSettings, f.name)
    return EngineSettings(**values)


__all__ = ["BUNDLED", "TIERS", "WEB_BACKENDS", "BudgetSettings", "EmbeddingSettings",
           "EngineSettings", "Secret", "Settings", "SlackSettings", "TierSettings",
           "WebSettings", "WorkerSettings"]
