"""`RED_<TIER>_MODEL=none`: a tier with no model. Every call of it takes the code path at once
(no retry, no ledger entry), so a run can be measured on the code path alone, the way
`redsearch eval` compares a model against it."""

from __future__ import annotations

from pathlib import Path

from research_core.loop.engine import Engine
from research_core.loop.memory.state import RunState
from research_core.models.no_model import NoModelTier
from research_core.models.tier_factory import build_tiers, describe_tier
from research_core.search.corpus import CorpusBackend
from research_core.settings import Settings
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF
from tests.engine_run import default_similarity

NONE = {f"RED_{t}_MODEL": "none" for t in ("PLANNER", "EXECUTOR", "REPORTER")}


def test_the_setting_builds_tiers_with_no_model() -> None:
    settings = Settings.from_env(NONE)
    tiers = build_tiers(settings)
    assert all(isinstance(t, NoModelTier) for t in tiers.values())
    assert settings.tiers["planner"].kind == "none"
    assert settings.tiers["planner"].gguf_path is None
    assert describe_tier("planner", settings.tiers["planner"]) == \
        "planner: no model (every call takes the code path)"


async def test_a_run_with_no_model_answers_from_the_code_path(corpus_dir: Path,
                                                               tmp_path: Path) -> None:
    settings = Settings.from_env({**NONE, "RED_BUDGET_STEPS": "4"})
    backend = CorpusBackend.from_folder(corpus_dir)
    store = await SqlStore.open(f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}")
    try:
        state = RunState.new("How did heat pump sales move in 2026?", AS_OF, settings,
                             mode="standard")
        report = await Engine.build(settings, build_tiers(settings), backend, store,
                                    similarity=default_similarity()).run(state)
    finally:
        await store.close()
        backend.close()
    assert state.status == "finished" and state.ledger.entries == []
    assert report.fallback and report.cited  # the extractive answer, citing its sources
    fallbacks = [e.message for e in state.log.events if e.kind == "fallback"]
    assert fallbacks and all("no model (RED_" in m for m in fallbacks)
