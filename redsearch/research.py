"""Wires settings, corpus, store and tiers into one research run for the terminal."""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from contract.research_document import research_document
from redsearch.json_output import check_writable, write_json, write_text
from redsearch.terminal import say
from research_core.delivery.publishers import TerminalPublisher
from research_core.errors import RunError
from research_core.evaluation.monolithic import MonolithicAgent
from research_core.evaluation.replay import (
    QueryTrace,
    live_trace,
    render_feedback,
    stored_feedback,
    stored_trace,
)
from research_core.evaluation.replay import render as render_replay
from research_core.loop.engine import Engine
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.models.embeddings import build_similarity
from research_core.models.tier_factory import (
    aclose_tiers,
    build_tiers,
    describe_tier,
    embedded_calls,
)
from research_core.protocols import ModelTier, SearchBackend
from research_core.question import validate_question
from research_core.runlog import LogEvent
from research_core.search.combined import Closes
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.search.web.factory import build_backend, uses_corpus
from research_core.settings import TIERS, Settings
from research_core.store.patterns import SqlPatternBook
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore

STRATEGIES = ("hierarchical", "monolithic")
MARKDOWN_OPTION = "--markdown"


@dataclass(frozen=True)
class ResearchRequest:
    question: str
    corpus: str | None
    as_of: dt.date | None
    json_path: str | None = None
    quiet: bool = False
    markdown_path: str | None = None  # the report as the canvas and Export show it
    strategy: str = "hierarchical"
    depth: str = "auto"
    requester: str | None = None


class Runner(Protocol):
    """A research strategy: the goal-tree `Engine` or the naive `MonolithicAgent`."""

    async def run(self, state: RunState) -> Report: ...


def make_runner(strategy: str, settings: Settings, tiers: Mapping[str, ModelTier],
                backend: SearchBackend, store: SqlStore) -> Runner:
    """The strategy's runner; the monolithic agent has no similarity, cache or scoring."""
    if strategy == "monolithic":
        return MonolithicAgent(settings, tiers, backend, store)
    if strategy == "hierarchical":
        return Engine.build(settings, tiers, backend, store, publisher=TerminalPublisher(),
                            learning=SqlPatternBook(store, backend.name))
    raise ValueError(f"unknown strategy {strategy!r}; expected one of {STRATEGIES}")


def _quiet(text: str) -> None:
    """Progress is dropped under --quiet; errors are still printed by the CLI."""


async def run_research(request: ResearchRequest, settings: Settings | None = None) -> int:
    settings = settings or Settings.from_env()
    question = validate_question(request.question, settings.engine.max_question_chars)
    if request.json_path:
        check_writable(request.json_path)
    if request.markdown_path:
        check_writable(request.markdown_path, MARKDOWN_OPTION)
    folder = Path(request.corpus) if request.corpus else settings.corpus_dir or sample_corpus_dir()
    progress = _quiet if request.quiet else say
    backend = open_backend(settings, folder, progress)
    store = await SqlStore.open(settings.db_url, settings.db_origin)
    try:
        await _offer_resume(store, question)
        state = RunState.new(question, request.as_of or dt.date.today(), settings,
                             mode=request.depth, requester=request.requester)
        state.extra.corpus = str(folder)
        state.extra.strategy = request.strategy
        return await _execute(state, request, settings, backend, store, progress)
    finally:
        await close_backend(backend)
        await store.close()


async def run_resume(run_id: str, settings: Settings | None = None) -> int:
    """Finish an interrupted run from its last checkpoint."""
    settings = settings or Settings.from_env()
    store = await SqlStore.open(settings.db_url, settings.db_origin)
    try:
        state = await load_state(store, run_id, settings)
        if state.status == "finished":
            raise RunError(f"run {run_id} has already finished")
        if state.extra.strategy != "hierarchical":
            raise RunError(f"run {run_id} is a {state.extra.strategy} baseline run; "
                           "only goal-tree runs can be resumed")
        folder = Path(state.extra.corpus or sample_corpus_dir())
        backend = open_backend(settings, folder, say)
        say(f"resuming run {run_id} at step {state.step} (corpus {folder})")
        request = ResearchRequest(state.question, str(folder), state.as_of)
        try:
            return await _execute(state, request, settings, backend, store, say)
        finally:
            await close_backend(backend)
    finally:
        await store.close()


def open_backend(settings: Settings, folder: Path, say: Callable[[str], None]) -> SearchBackend:
    """RED_SEARCH_BACKENDS as a backend; the corpus folder is loaded only when it is named."""
    corpus = CorpusBackend.from_folder(folder, build_similarity(settings.embedding)) \
        if uses_corpus(settings) else None
    if corpus is not None:
        say(f"corpus: {len(corpus)} documents from {folder}")
    backend = build_backend(settings, corpus)
    if backend is not corpus:
        say(f"search: {backend.name}")
    return backend


async def close_backend(backend: SearchBackend) -> None:
    """Stop what the backend holds open (the MCP servers it started)."""
    if isinstance(backend, Closes):
        await backend.aclose()


async def _offer_resume(store: SqlStore, question: str) -> None:
    """An interrupted run of the same question can be resumed instead of started again."""
    waiting = await store.interrupted_runs(question)
    if not waiting:
        return
    hint = f"run {waiting[0]} of this question was interrupted at its last checkpoint"
    if sys.stdin.isatty():
        answer = input(f"{hint}. Resume it? [Y/n] ").strip().lower()
        if answer in ("", "y", "yes"):
            raise ResumeInstead(waiting[0])
    say(f"note: {hint}; `redsearch resume {waiting[0]}` finishes it")


class ResumeInstead(Exception):
    """The person chose to resume an interrupted run."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


async def _execute(state: RunState, request: ResearchRequest, settings: Settings,
                   backend: SearchBackend, store: SqlStore, say: Callable[[str], None]) -> int:
    for name in TIERS:
        say("model " + describe_tier(name, settings.tiers[name], embedded_calls(settings)))
    started = time.monotonic()
    tiers = await asyncio.to_thread(build_tiers, settings)
    say(f"models ready in {time.monotonic() - started:.1f}s")
    state.log.listeners.append(lambda e: say(_progress_line(e, started)))
    try:
        runner = make_runner(request.strategy, settings, tiers, backend, store)
        report = await runner.run(state)
    finally:
        await aclose_tiers(tiers)
    print(_render(state, report))
    if request.json_path:
        write_json(request.json_path, result_json(state, report, request.strategy))
    if request.markdown_path:
        write_markdown(request.markdown_path, state, report)
    return 0


def write_markdown(path: str, state: RunState, report: Report) -> None:
    """The research as one Markdown document: the one Slack's "Save as canvas" and "Export as
    Markdown" keep (`contract.research_document`), without a thread to link back to."""
    document = research_document(state, report=report)
    if document is not None:
        write_text(path, document.markdown, MARKDOWN_OPTION)


async def run_replay(run_id: str, settings: Settings | None = None) -> int:
    """Print the search replay of a stored run (RunNotFound for an unknown id)."""
    settings = settings or Settings.from_env()
    store = await SqlStore.open(settings.db_url, settings.db_origin)
    try:
        rows = await stored_trace(store, run_id)
        feedback = await stored_feedback(store, run_id)
    finally:
        await store.close()
    print(f"Search replay of run {run_id}")
    print(render_replay(rows))
    print(render_feedback(feedback))
    return 0


def _progress_line(event: LogEvent, started: float) -> str:
    return f"{time.monotonic() - started:6.1f}s {event.line()}"


def _render(state: RunState, report: Report) -> str:
    return "\n".join([
        "", "=" * 72, f"Run {state.run_id} — {state.question}", "=" * 72,
        report.render(), "", "Tokens per tier", state.ledger.table(),
        "", "Search replay", render_replay(live_trace(state, report)),
    ])


def replay_json(rows: list[QueryTrace]) -> list[dict[str, Any]]:
    return [{"query_id": r.query_id, "text": r.text, "results": r.results, "kept": r.kept,
             "cited": r.cited, "citation_rate": round(r.citation_rate, 4)} for r in rows]


def result_json(state: RunState, report: Report,
                strategy: str = "hierarchical") -> dict[str, Any]:
    return {
        "run_id": state.run_id,
        "strategy": strategy,
        "question": state.question,
        "as_of": state.as_of.isoformat(),
        "report": report.text,
        "fallback_report": report.fallback,
        "sources": [{**s.__dict__, "published": str(s.published)} for s in report.sources],
        "cited_source_ids": report.cited_source_ids(),
        "tiers": [t.__dict__ for t in state.ledger.totals()],
        "steps": state.step,
        "replay": replay_json(live_trace(state, report)),
        "events": [e.line() for e in state.log.events],
    }
