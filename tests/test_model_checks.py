"""Model decisions checked by the embedder: relevance, off-goal evidence, drift, and new
sub-questions from decomposition and reflection. Each override is logged with both values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from research_core.loop.memory.state import RunState
from research_core.loop.review.reflection import _add_neglected
from research_core.protocols import Similarity
from research_core.search.corpus import CorpusBackend
from research_core.settings import Settings
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF, RecordingBackend, write_doc
from tests.engine_run import QUESTION, Serve, run_engine
from tests.fakes.openai_server import last_user_text
from tests.scripted import Script, field_of

CAT_FOOD = ("news", "en", "2026-10-12", "Cat food sales figures 2026",
            "Whisker brand cat food sales figures rose 12% in 2026 as pet owners bought kibble.")


async def test_the_embedder_cuts_a_relevance_the_model_inflates(
        serve: Serve, corpus_dir: Path, store: SqlStore, similarity: Similarity) -> None:
    write_doc(corpus_dir, "news-cat-food-2026", CAT_FOOD)
    backend = RecordingBackend(CorpusBackend.from_folder(corpus_dir))
    out = await run_engine(serve, Script(relevance=lambda line: 1.0), backend, store,
                           similarity=similarity)
    cat = [e for e in out.state.evidence if e.source_id == "news-cat-food-2026"]
    assert cat and all(not e.kept and e.relevance < 0.5 for e in cat)
    [override, *_] = [e for e in out.state.log.of_kind("relevance")
                      if e.data["source"] == "news-cat-food-2026"]
    assert override.data["model"] == 1.0 and override.data["embedder"] < 0.5
    assert "model relevance 1.00" in override.message
    sales = [e for e in out.state.evidence if e.source_id == "stats-sales-2026-09"]
    assert sales and any(e.kept and e.relevance == 1.0 for e in sales)


def _drifting(body: dict[str, Any]) -> str:
    drifted = "prices" in field_of(body, "Current sub-question")
    return json.dumps({"answers_goal": False, "off_goal": [], "neglected": "",
                       "drifted": drifted})


async def test_drift_the_embedder_does_not_see_is_not_backtracked(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    # N2 ("prices") is researched at step 2 (a split researches its first sub-question in
    # the same step): the reflection comes every 2 steps to see it.
    out = await run_engine(serve, Script(rules={"ReflectionOut": _drifting}), backend, store,
                           reflect_every_steps=2)
    assert not out.state.log.of_kind("backtrack")
    [refused, *_] = out.state.log.of_kind("drift-refused")
    assert "heat pump prices" in refused.message and refused.data["embedder"] >= 0.25
    assert out.state.tree.nodes["N2"].status != "pruned"


async def test_off_goal_evidence_the_embedder_finds_on_goal_is_kept(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def reflect(body: dict[str, Any]) -> str:
        ids = [line.split()[0] for line in last_user_text(body).splitlines()
               if line.startswith("E")]
        return json.dumps({"answers_goal": True, "off_goal": ids[:2], "neglected": "",
                           "drifted": False})

    out = await run_engine(serve, Script(rules={"ReflectionOut": reflect}), backend, store,
                           reflect_every_steps=2)
    kept = out.state.log.of_kind("off-goal-kept")
    assert kept and all("close to the goal" in e.message for e in kept)
    assert not [e for e in out.state.evidence if "off-goal" in e.discarded_reason]


async def test_decomposition_drops_sub_questions_unrelated_to_the_question(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    script = Script(subquestions=[("Who painted the Mona Lisa?", 0.95),
                                  ("What were heat pump sales figures?", 0.9)])
    out = await run_engine(serve, script, backend, store)
    questions = [n.question for n in out.state.tree.nodes.values()]
    assert "Who painted the Mona Lisa?" not in questions
    assert "What were heat pump sales figures?" in questions
    [refused] = out.state.log.of_kind("subquestion-refused")
    assert "unrelated" in refused.message and "Mona Lisa" in refused.message


async def test_reflections_new_sub_question_passes_the_decomposition_checks(
        similarity: Similarity) -> None:
    settings = Settings()
    state = RunState.new(QUESTION, AS_OF, settings)
    state.tree.add_child("N0", "What were heat pump sales figures?", 0.9)
    cfg = settings.engine
    for bad in ["subquestion1", "what were heat pump sales figures", "Who painted the Mona Lisa?"]:
        assert not await _add_neglected(state, bad, similarity, cfg)
    reasons = [e.message for e in state.log.of_kind("neglected-refused")]
    assert ["placeholder" in reasons[0], "repeats" in reasons[1], "unrelated" in reasons[2]] \
        == [True, True, True]
    assert await _add_neglected(state, "How did heat pump installation prices change?",
                                similarity, cfg)
    assert [n.question for n in state.tree.nodes.values()][-1] == \
        "How did heat pump installation prices change?"


async def test_a_root_whose_sub_questions_are_all_refused_is_split_by_the_fallback(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    script = Script(subquestions=[("Who painted the Mona Lisa?", 0.95)])
    out = await run_engine(serve, script, backend, store, max_steps=3)
    children = [out.state.tree.nodes[c].question for c in out.state.tree.root.children]
    assert children and QUESTION not in children  # split from the evidence (issue 25)
    assert not any("Mona Lisa" in c or c.startswith("What caused") for c in children)
    assert out.state.log.of_kind("split-from-evidence")
