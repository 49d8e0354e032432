"""The one settings object. Only `Settings.from_env` reads the environment.

Every tier is one setting away from a real model:
  RED_<TIER>_MODEL     "bundled" (default), a path ending in .gguf, or a model name
  RED_<TIER>_BASE_URL  an OpenAI-compatible base URL; when set, the tier uses it
  RED_<TIER>_API_KEY   the key for that endpoint (never logged)
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from research_core.errors import SettingsError

TIERS = ("planner", "executor", "reporter")
BUNDLED = "bundled"


class Secret(str):
    """A string that never shows itself in repr or logs."""

    def __repr__(self) -> str:
        return "Secret('***')" if self else "Secret('')"


@dataclass(frozen=True)
class TierSettings:
    model: str = BUNDLED
    base_url: str | None = None
    api_key: Secret = field(default_factory=lambda: Secret(""))
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    timeout_s: float = 120.0
    max_retries: int = 3

    @property
    def kind(self) -> str:
        if self.base_url:
            return "openai"
        return "gguf"

    @property
    def gguf_path(self) -> str | None:
        return None if self.base_url or self.model == BUNDLED else self.model


@dataclass(frozen=True)
class EngineSettings:
    """The research loop's knobs, with seed 000's defaults."""

    query_variants: int = 3
    search_concurrency: int = 3
    snippet_chars: int = 200
    hits_per_query: int = 5
    cache_ttl_s: int = 86_400
    weight_relevance: float = 0.6
    weight_credibility: float = 0.2
    weight_recency: float = 0.2
    evidence_threshold: float = 0.65
    working_memory_cap: int = 30
    reflect_every_steps: int = 3
    max_children: int = 4
    max_depth: int = 2
    evidence_per_done_node: int = 2
    rounds_per_node: int = 2
    recency_full_days: int = 90
    recency_zero_days: int = 1095
    lookback_days: int | None = None
    max_question_chars: int = 4000
    json_max_tokens: int = 384
    report_max_tokens: int = 900
    report_max_sources: int = 16
    dedup_similarity: float = 0.85
    deep_read_relevance: float = 0.8
    deep_reads_per_node: int = 3
    deep_read_paragraphs: int = 2
    revise_similarity: float = 0.45
    followup_steps: int = 6


@dataclass(frozen=True)
class EmbeddingSettings:
    model: str = BUNDLED
    base_url: str | None = None
    api_key: Secret = field(default_factory=lambda: Secret(""))
    timeout_s: float = 60.0
    max_retries: int = 3
    gguf_context: int = 8192
    gguf_threads: int | None = None

    @property
    def kind(self) -> Literal["bundled", "gguf", "openai"]:
        return "openai" if self.base_url else "bundled" if self.model == BUNDLED else "gguf"


@dataclass(frozen=True)
class BudgetSettings:
    """Seed 003's standard budget of a run, one total per axis (RED_BUDGET_<NAME>).

    Deep totals are each standard total + floor(total / 2). Revision limits left unset
    (None) are 2 per part / 8 per run in standard and 6 / 24 in applied deep; a configured
    value, 0 included, holds in both modes. `final_reserve_*` units are kept back from the
    totals for the final report (used only in finalisation). `deep_allowed` is the
    requester allow-list (RED_DEEP_ALLOWED: "*" = everyone, "none", or comma-separated ids).
    """

    steps: int = 36
    model_calls: int = 57
    reads: int = 72
    discoveries: int = 6
    publications: int = 48
    active_time_s: int = 3600
    revisions_per_part: int | None = None
    revisions_per_run: int | None = None
    reminder_fraction: float = 0.5
    upgrade_refusal_fraction: float = 0.8
    final_reserve_model_calls: int = 5
    final_reserve_publications: int = 1
    deep_allowed: tuple[str, ...] = ("*",)

    def __post_init__(self) -> None:
        for name in ("steps", "model_calls", "reads", "discoveries", "publications",
                     "active_time_s"):
            if getattr(self, name) < 1:
                raise SettingsError(f"RED_BUDGET_{name.upper()} must be at least 1")
        for name in ("revisions_per_part", "revisions_per_run", "final_reserve_model_calls",
                     "final_reserve_publications"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise SettingsError(f"RED_BUDGET_{name.upper()} must not be negative")
        for name in ("reminder_fraction", "upgrade_refusal_fraction"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise SettingsError(f"RED_BUDGET_{name.upper()} must be in (0, 1]")
        if self.final_reserve_model_calls >= self.model_calls:
            raise SettingsError("RED_BUDGET_FINAL_RESERVE_MODEL_CALLS must be below "
                                "RED_BUDGET_MODEL_CALLS")
        if self.final_reserve_publications >= self.publications:
            raise SettingsError("RED_BUDGET_FINAL_RESERVE_PUBLICATIONS must be below "
                                "RED_BUDGET_PUBLICATIONS")


@dataclass(frozen=True)
class SlackSettings:
    """The Slack surface: SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_API_URL (the Web API
    base URL; tests and the playground point it at a local fake), SLACK_APP_TOKEN (set: Socket
    Mode instead of HTTP events), RED_BOT_PORT and the progress coalescing interval."""

    bot_token: Secret = field(default_factory=lambda: Secret(""))
    signing_secret: Secret = field(default_factory=lambda: Secret(""))
    api_url: str = "https://slack.com/api/"
    app_token: Secret = field(default_factory=lambda: Secret(""))
    bot_port: int = 3000
    progress_interval_s: float = 1.0

    @property
    def configured(self) -> bool:
        """Real Slack: a bot token, and the signing secret (HTTP) or an app token (Socket
        Mode)."""
        return bool(self.bot_token and (self.signing_secret or self.app_token))


@dataclass(frozen=True)
class WorkerSettings:
    """ARQ workers: REDIS_URL, RED_WORKER_JOBS (concurrent runs per worker), the heartbeat
    that proves a run alive (RED_WORKER_HEARTBEAT_S) and how long a silent run waits before
    another worker resumes it from its checkpoint (RED_WORKER_LEASE_S)."""

    redis_url: str = "redis://127.0.0.1:6379/0"
    max_jobs: int = 2
    heartbeat_s: float = 5.0
    lease_s: float = 30.0
    reconcile_every_s: float = 10.0
    job_timeout_s: int = 3 * 3600

    def __post_init__(self) -> None:
        if self.lease_s < 2 * self.heartbeat_s:
            raise SettingsError("RED_WORKER_LEASE_S must be at least twice "
                                "RED_WORKER_HEARTBEAT_S")
        if self.max_jobs < 1:
            raise SettingsError("RED_WORKER_JOBS must be at least 1")


WEB_BACKENDS = ("searxng", "brave", "tavily", "corpus")


@dataclass(frozen=True)
class WebSettings:
    """Search backends and the page reader. RED_SEARCH_BACKENDS is the order in which web
    backends are tried (searxng, brave, tavily); "corpus" in the list adds the local corpus to
    every search. Keys: BRAVE_API_KEY, TAVILY_API_KEY (never logged). Rates are requests per
    second per backend, shared by all workers through Redis when a worker passes its client."""

    backends: tuple[str, ...] = ("corpus",)
    searxng_url: str = ""
    brave_url: str = "https://api.search.brave.com/res/v1/web/search"
    brave_api_key: Secret = field(default_factory=lambda: Secret(""))
    tavily_url: str = "https://api.tavily.com/search"
    tavily_api_key: Secret = field(default_factory=lambda: Secret(""))
    search_timeout_s: float = 15.0
    search_retries: int = 2
    max_retry_wait_s: float = 30.0
    searxng_rate_per_s: float = 5.0
    brave_rate_per_s: float = 1.0
    tavily_rate_per_s: float = 2.0
    page_timeout_s: float = 15.0
    page_max_bytes: int = 2_000_000

    def __post_init__(self) -> None:
        unknown = [b for b in self.backends if b not in WEB_BACKENDS]
        if unknown or not self.backends:
            raise SettingsError(f"RED_SEARCH_BACKENDS: unknown or empty {unknown}; use a "
                                f"comma-separated order of {', '.join(WEB_BACKENDS)}")
        needs = {"searxng": self.searxng_url, "brave": self.brave_api_key,
                 "tavily": self.tavily_api_key}
        names = {"searxng": "RED_SEARXNG_URL", "brave": "BRAVE_API_KEY",
                 "tavily": "TAVILY_API_KEY"}
        for backend, value in needs.items():
            if backend in self.backends and not value:
                raise SettingsError(f"RED_SEARCH_BACKENDS names {backend}: set {names[backend]}")
        positive = (self.page_max_bytes, self.page_timeout_s, self.search_timeout_s,
                    self.searxng_rate_per_s, self.brave_rate_per_s, self.tavily_rate_per_s)
        if min(positive) <= 0 or self.search_retries < 0:
            raise SettingsError("RED_PAGE_MAX_BYTES, RED_PAGE_TIMEOUT_S, RED_SEARCH_TIMEOUT_S "
                                "and RED_<BACKEND>_RATE_PER_S must be positive")

    def rate_per_s(self, backend: str) -> float:
        rates = {"searxng": self.searxng_rate_per_s, "brave": self.brave_rate_per_s,
                 "tavily": self.tavily_rate_per_s}
        return rates[backend]


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
    gguf_threads: int | None = None
    gguf_context: int = 4096
    as_of: dt.date | None = None
    slack: SlackSettings = field(default_factory=SlackSettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    web: WebSettings = field(default_factory=WebSettings)

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir / 'redsearch.db'}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        base = cls()
        return replace(
            base,
            tiers={t: _tier_from_env(env, t) for t in TIERS},
            engine=_engine_from_env(env),
            embedding=_embedding_from_env(env),
            budget=_budget_from_env(env),
            data_dir=Path(env.get("RED_DATA_DIR", str(base.data_dir))).expanduser(),
            database_url=env.get("DATABASE_URL") or None,
            corpus_dir=_path_or_none(env.get("RED_CORPUS_DIR")),
            gguf_threads=_int_or_none(env, "RED_GGUF_THREADS"),
            gguf_context=_parse(env, "RED_GGUF_CONTEXT", int, base.gguf_context),
            slack=_slack_from_env(env),
            worker=_worker_from_env(env),
            web=_web_from_env(env),
        )


def _slack_from_env(env: Mapping[str, str]) -> SlackSettings:
    d = SlackSettings()
    return SlackSettings(
        bot_token=Secret(env.get("SLACK_BOT_TOKEN", "")),
        signing_secret=Secret(env.get("SLACK_SIGNING_SECRET", "")),
        api_url=env.get("SLACK_API_URL") or d.api_url,
        app_token=Secret(env.get("SLACK_APP_TOKEN", "")),
        bot_port=_parse(env, "RED_BOT_PORT", int, d.bot_port),
        progress_interval_s=_parse(env, "RED_SLACK_PROGRESS_INTERVAL_S", float,
                                   d.progress_interval_s),
    )


def _worker_from_env(env: Mapping[str, str]) -> WorkerSettings:
    d = WorkerSettings()
    return WorkerSettings(
        redis_url=env.get("REDIS_URL") or d.redis_url,
        max_jobs=_parse(env, "RED_WORKER_JOBS", int, d.max_jobs),
        heartbeat_s=_parse(env, "RED_WORKER_HEARTBEAT_S", float, d.heartbeat_s),
        lease_s=_parse(env, "RED_WORKER_LEASE_S", float, d.lease_s),
        reconcile_every_s=_parse(env, "RED_WORKER_RECONCILE_S", float, d.reconcile_every_s),
        job_timeout_s=_parse(env, "RED_WORKER_JOB_TIMEOUT_S", int, d.job_timeout_s),
    )


def _web_from_env(env: Mapping[str, str]) -> WebSettings:
    d = WebSettings()
    raw = env.get("RED_SEARCH_BACKENDS", "")
    order = tuple(p.strip().lower() for p in raw.split(",") if p.strip()) or d.backends
    return WebSettings(
        backends=order,
        searxng_url=env.get("RED_SEARXNG_URL", ""),
        brave_url=env.get("RED_BRAVE_URL") or d.brave_url,
        brave_api_key=Secret(env.get("BRAVE_API_KEY", "")),
        tavily_url=env.get("RED_TAVILY_URL") or d.tavily_url,
        tavily_api_key=Secret(env.get("TAVILY_API_KEY", "")),
        search_timeout_s=_parse(env, "RED_SEARCH_TIMEOUT_S", float, d.search_timeout_s),
        search_retries=_parse(env, "RED_SEARCH_RETRIES", int, d.search_retries),
        max_retry_wait_s=_parse(env, "RED_SEARCH_MAX_RETRY_WAIT_S", float, d.max_retry_wait_s),
        searxng_rate_per_s=_parse(env, "RED_SEARXNG_RATE_PER_S", float, d.searxng_rate_per_s),
        brave_rate_per_s=_parse(env, "RED_BRAVE_RATE_PER_S", float, d.brave_rate_per_s),
        tavily_rate_per_s=_parse(env, "RED_TAVILY_RATE_PER_S", float, d.tavily_rate_per_s),
        page_timeout_s=_parse(env, "RED_PAGE_TIMEOUT_S", float, d.page_timeout_s),
        page_max_bytes=_parse(env, "RED_PAGE_MAX_BYTES", int, d.page_max_bytes),
    )


def _tier_from_env(env: Mapping[str, str], tier: str) -> TierSettings:
    p = f"RED_{tier.upper()}_"
    d = TierSettings()
    if env.get(p + "BASE_URL") and env.get(p + "MODEL", BUNDLED) in ("", BUNDLED):
        raise SettingsError(f"{p}BASE_URL is set: name the endpoint's model in {p}MODEL")
    return TierSettings(
        model=env.get(p + "MODEL", d.model) or d.model,
        base_url=env.get(p + "BASE_URL") or None,
        api_key=Secret(env.get(p + "API_KEY", "")),
        price_in_per_mtok=_parse(env, p + "PRICE_IN_PER_MTOK", float, d.price_in_per_mtok),
        price_out_per_mtok=_parse(env, p + "PRICE_OUT_PER_MTOK", float, d.price_out_per_mtok),
        timeout_s=_parse(env, p + "TIMEOUT_S", float, d.timeout_s),
        max_retries=_parse(env, p + "MAX_RETRIES", int, d.max_retries),
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
    return EmbeddingSettings(model=model, base_url=base_url,
                             api_key=Secret(env.get("RED_EMBED_API_KEY", "")))


def _budget_from_env(env: Mapping[str, str]) -> BudgetSettings:
    """Every budget knob is RED_BUDGET_<NAME>; the deep allow-list is RED_DEEP_ALLOWED."""
    values: dict[str, Any] = {}
    for f in fields(BudgetSettings):
        key = "RED_BUDGET_" + f.name.upper()
        if f.name == "deep_allowed" or not env.get(key):
            continue
        kind = float if f.name.endswith("_fraction") else int
        values[f.name] = _parse(env, key, kind, f.default)
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
            kind = float if isinstance(f.default, float) else int
            values[f.name] = _parse(env, key, kind, f.default)
    return EngineSettings(**values)


def _parse(env: Mapping[str, str], key: str, kind: type[Any], default: Any) -> Any:
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        raise SettingsError(f"{key}={raw!r} is not a valid {kind.__name__}") from exc


def _int_or_none(env: Mapping[str, str], key: str) -> int | None:
    value: int | None = _parse(env, key, int, None)
    return value


def _path_or_none(raw: str | None) -> Path | None:
    return Path(raw).expanduser() if raw else None
