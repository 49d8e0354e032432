"""Wires settings, corpus, store and tiers into one research run for the terminal."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from research_core.corpus import CorpusBackend
from research_core.engine import Engine, validate_question
from research_core.reporter import Report
from research_core.runlog import LogEvent
from research_core.settings import TIERS, Settings
from research_core.state import RunState
from research_core.store import SqlStore
from research_core.tier_factory import aclose_tiers, build_tiers, describe_tier


@dataclass(frozen=True)
class ResearchRequest:
    question: str
    corpus: str | None
    as_of: dt.date | None
    json_path: str | None = None
    quiet: bool = False


def sample_corpus() -> Path:
    return Path(str(resources.files("research_core").joinpath("sample_corpus")))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _quiet(text: str) -> None:
    """Progress is dropped under --quiet; errors are still printed by the CLI."""


async def run_research(request: ResearchRequest, settings: Settings | None = None) -> int:
    settings = settings or Settings.from_env()
    question = validate_question(request.question, settings.engine.max_question_chars)
    folder = Path(request.corpus) if request.corpus else settings.corpus_dir or sample_corpus()
    backend = CorpusBackend.from_folder(folder)
    say = _quiet if request.quiet else _say
    say(f"corpus: {len(backend)} documents from {folder}")
    store = await SqlStore.open(settings.db_url)
    try:
        return await _run(request, settings, question, backend, store, say)
    finally:
        await store.close()


async def _run(request: ResearchRequest, settings: Settings, question: str,
               backend: CorpusBackend, store: SqlStore, say: Callable[[str], None]) -> int:
    for name in TIERS:
        say("model " + describe_tier(name, settings.tiers[name]))
    started = time.monotonic()
    tiers = await asyncio.to_thread(build_tiers, settings)
    say(f"models ready in {time.monotonic() - started:.1f}s")
    state = RunState.new(question, request.as_of or dt.date.today(), settings)
    state.log.listeners.append(lambda e: say(_progress_line(e, started)))
    try:
        engine = Engine(settings, tiers, backend, store, cache=store)
        report = await engine.run(state)
    finally:
        await aclose_tiers(tiers)
    print(_render(state, report))
    if request.json_path:
        Path(request.json_path).write_text(json.dumps(result_json(state, report), indent=2,
                                                      ensure_ascii=False), "utf-8")
    return 0


def _progress_line(event: LogEvent, started: float) -> str:
    return f"{time.monotonic() - started:6.1f}s {event.line()}"


def _render(state: RunState, report: Report) -> str:
    return "\n".join([
        "", "=" * 72, f"Run {state.run_id} — {state.question}", "=" * 72,
        report.render(), "", "Tokens per tier", state.ledger.table(),
    ])


def result_json(state: RunState, report: Report) -> dict[str, Any]:
    return {
        "run_id": state.run_id,
        "question": state.question,
        "as_of": state.as_of.isoformat(),
        "report": report.text,
        "fallback_report": report.fallback,
        "sources": [{**s.__dict__, "published": str(s.published)} for s in report.sources],
        "cited_source_ids": report.cited_source_ids(),
        "tiers": [t.__dict__ for t in state.ledger.totals()],
        "steps": state.step,
        "events": [e.line() for e in state.log.events],
    }
