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
from research_core.service_settings import (
    WEB_BACKENDS,
    SlackSettings,
    WebSettings,
    WorkerSettings,
    slack_from_env,
    web_from_env,
    worker_from_env,
)
from research_core.setting_values import Secret, int_or_none, parse, path_or_none

TIERS = ("planner", "executor", "reporter")
BUNDLED = "bundled"


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
    relevance_margin: float = 0.5
    relevance_full_similarity: float = 0.5
    off_goal_similarity: float = 0.25
    related_similarity: float = 0.3


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
            corpus_dir=path_or_none(env.get("RED_CORPUS_DIR")),
            gguf_threads=int_or_none(env, "RED_GGUF_THREADS"),
            gguf_context=parse(env, "RED_GGUF_CONTEXT", int, base.gguf_context),
            slack=slack_from_env(env),
            worker=worker_from_env(env),
            web=web_from_env(env),
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
        price_in_per_mtok=parse(env, p + "PRICE_IN_PER_MTOK", float, d.price_in_per_mtok),
        price_out_per_mtok=parse(env, p + "PRICE_OUT_PER_MTOK", float, d.price_out_per_mtok),
        timeout_s=parse(env, p + "TIMEOUT_S", float, d.timeout_s),
        max_retries=parse(env, p + "MAX_RETRIES", int, d.max_retries),
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
        values[f.name] = parse(env, key, kind, f.default)
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
            values[f.name] = parse(env, key, kind, f.default)
    return EngineSettings(**values)


__all__ = ["BUNDLED", "TIERS", "WEB_BACKENDS", "BudgetSettings", "EmbeddingSettings",
           "EngineSettings", "Secret", "Settings", "SlackSettings", "TierSettings",
           "WebSettings", "WorkerSettings"]
