"""Builds the three model tiers from `Settings`.

A tier with a base URL talks to that OpenAI-compatible endpoint; any other tier runs a GGUF
model in-process: its `model` path, or the embedded default (`research_core.models.embedded`),
which takes only the call kinds of its measured profile (`profile`, `RED_EMBEDDED_CALLS`).
GGUF tiers naming the same file (with the same GPU layers) share one loaded `Llama`, whose
grammar guard checks every schema of prompts.yaml at load; `RED_<TIER>_GPU_LAYERS` puts that
many of its layers on a GPU, and `offload_of` says where llama.cpp put them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from research_core.models import embedded, profile
from research_core.models.llama_tier import LlamaTier, load_llama
from research_core.models.no_model import NoModelTier
from research_core.models.offload import ALL_LAYERS, Offload
from research_core.models.openai_tier import OpenAITier, endpoint_host
from research_core.models.routed import RoutedTier
from research_core.models.schemas import json_schema, prompt_schemas
from research_core.protocols import ModelTier
from research_core.settings import BUNDLED, NO_MODEL, TIERS, Settings, TierSettings
from research_core.settings.values import CALL_KINDS


def build_tiers(settings: Settings) -> dict[str, ModelTier]:
    """One tier per name in TIERS. Loads GGUF models now (raises ModelUnavailable)."""
    return {name: build_tier(name, settings) for name in TIERS}


def build_tier(name: str, settings: Settings) -> ModelTier:
    tier = settings.tiers.get(name, TierSettings())
    if tier.base_url:
        return OpenAITier(tier, name=name)
    if tier.model == NO_MODEL:
        return NoModelTier()
    if tier.gguf_path:
        return _llama_tier(settings, tier, tier.gguf_path, Path(tier.gguf_path).stem)
    calls = embedded_calls(settings)
    if not calls:
        return NoModelTier()
    local = _llama_tier(settings, tier, embedded.model_path(),
                        f"{BUNDLED}:{embedded.DEFAULT.name}")
    return local if calls == frozenset(CALL_KINDS) else RoutedTier(local, calls)


def embedded_calls(settings: Settings) -> frozenset[str]:
    """The call kinds the embedded default takes: RED_EMBEDDED_CALLS, else its measured
    profile."""
    if settings.embedded_calls is not None:
        return settings.embedded_calls
    return profile.measured_calls(embedded.DEFAULT.name)


def _llama_tier(settings: Settings, tier: TierSettings, path: str, name: str) -> LlamaTier:
    loaded = load_llama(path, n_ctx=settings.gguf_context, n_threads=settings.gguf_threads,
                        gpu_layers=tier.gpu_layers)
    loaded.guard.prepare({name: json_schema(model) for name, model in prompt_schemas().items()})
    return LlamaTier(loaded.llama, loaded.lock, model=name, guard=loaded.guard,
                     offload=loaded.offload)


def offload_of(tier: ModelTier) -> Offload | None:
    """Where a local tier's model runs, in llama.cpp's words; None for an endpoint or no
    model."""
    inner = tier.inner if isinstance(tier, RoutedTier) else tier
    return inner.offload if isinstance(inner, LlamaTier) else None


def placements(tiers: Mapping[str, ModelTier]) -> list[tuple[str, Offload]]:
    """(tier name, where its model runs) for each tier with a local model."""
    return [(name, found) for name, tier in tiers.items()
            if (found := offload_of(tier)) is not None]


def gpu_setting(name: str) -> str:
    """The variable that sets a tier's GPU layers."""
    return f"RED_{name.upper()}_GPU_LAYERS"


async def aclose_tiers(tiers: Mapping[str, ModelTier]) -> None:
    """Close the tiers that hold network clients (OpenAI tiers); GGUF models stay loaded."""
    for tier in tiers.values():
        if isinstance(tier, OpenAITier):
            await tier.aclose()


def describe_tier(name: str, tier: TierSettings, calls: frozenset[str] | None = None) -> str:
    """One log line for a tier: kind, model and host or file, and for the embedded default
    the call kinds it takes (`calls`, where known). Never the API key."""
    if tier.base_url:
        return f"{name}: openai model={tier.model} host={endpoint_host(tier.base_url)}"
    if tier.model == NO_MODEL:
        return f"{name}: no model (every call takes the code path)"
    gpu = _gpu_phrase(tier.gpu_layers)
    if tier.gguf_path:
        return f"{name}: gguf model={Path(tier.gguf_path).name} file={tier.gguf_path}{gpu}"
    if calls is not None and not calls:
        return (f"{name}: no model call: the embedded {embedded.DEFAULT.title} measured better "
                "than the code path at none (RED_EMBEDDED_CALLS)")
    if calls is not None and calls != frozenset(CALL_KINDS):
        return (f"{name}: gguf model={BUNDLED} ({embedded.DEFAULT.title}) for "
                f"{', '.join(sorted(calls))}{gpu}")
    return f"{name}: gguf model={BUNDLED} ({embedded.DEFAULT.title}){gpu}"


def _gpu_phrase(layers: int) -> str:
    """", on a GPU: all layers" for a described tier whose GPU layers are set; "" for none."""
    if not layers:
        return ""
    return f", on a GPU: {'all layers' if layers == ALL_LAYERS else f'{layers} layers'}"
