"""What a follow-up publishes when the model's answer is unusable: a small model once answered
"what did the sources disagree on?" with a bare, invented PDF link (bundled model, default
path). Such an answer goes back to the model, then the evidence itself is the answer."""

from __future__ import annotations

import json
import re
from typing import Any

from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.engine import Engine
from research_core.loop.publishing.followup import prose_problem
from research_core.loop.report.reporter import Source
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend, scripted_settings
from tests.engine_run import Serve, default_similarity, run_engine
from tests.scripted import Script

INVENTED = "https://www.the-solar-market.com/wp-content/uploads/2026/09/a-nswer-report.pdf"


def source(n: int, url: str) -> Source:
    return Source(n, f"doc-{n}", f"Title {n}", url, "Publisher", None, "news")


def test_a_bare_or_invented_link_is_not_an_answer() -> None:
    sources = [source(1, "https://e.example/1")]
    assert prose_problem(INVENTED, sources) is not None
    assert prose_problem(f"Sales rose 12% [1], see {INVENTED}", sources) is not None
    assert prose_problem("https://e.example/1", sources) is not None  # a link, no words
    assert prose_problem("2026-10-10", sources) is not None  # a date, no words (bundled model)
    assert prose_problem("Sales rose 12% in September [1].", sources) is None
    assert prose_problem("九月销量同比增长12% [1]。", sources) is None
    assert prose_problem("Sales rose 12% [1] (https://e.example/1).", sources) is None


async def test_a_follow_up_answered_with_an_invented_link_falls_back_to_the_evidence(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_engine(serve, Script(), backend, store)
    script = Script()
    asked: list[str] = []

    def link_only(body: dict[str, Any]) -> str:
        asked.append("followup")
        return json.dumps({"answer": INVENTED, "sufficient": False})

    script.rules["FollowUpOut"] = link_only
    server = await serve(script)
    settings = scripted_settings(server.base_url)
    tiers = build_tiers(settings)
    publisher = MemoryPublisher()
    try:
        engine = Engine.build(settings, tiers, backend, store, similarity=default_similarity(),
                              publisher=publisher)
        done = await engine.follow_up(out.state, "What did the sources disagree on?",
                                      "followup-1")
    finally:
        await aclose_tiers(tiers)
    assert len(asked) >= 2, "the unusable answer went back to the model"
    assert INVENTED not in done.text
    assert done.text.startswith("From the evidence gathered so far:"), done.text
    # the extractive answer: whole sentences, each cited, none cut mid-word or repeated
    bullets = [ln for ln in done.text.splitlines()[1:] if ln.startswith("• ")]
    assert bullets and all(re.search(r"[.!?。！？] \[\d+\]$", b) for b in bullets), done.text
    assert "…" not in done.text and len(bullets) == len(set(bullets))
