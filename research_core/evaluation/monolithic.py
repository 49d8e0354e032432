"""The naive baseline (`--strategy monolithic`): one strong model decides what to search and
reads everything, with the whole history in its prompt every turn.

It runs over the same search backend and corpus as the goal-tree engine, and every call goes
through the same `Gateway` (validation, one retry, fallback, ledger, run log), all on the
"reporter" tier: the one strong model a naive agent would use. What it deliberately lacks,
because a naive agent has none of it: no goal tree, no query variants, no batching, no search
cache, no query de-duplication, no evidence scoring, no memory compression, no reflection and
no resource owner beyond the step limit.
Each turn it sends one query straight to the backend, reads the full body of every hit
(`backend.read_body`) and appends decision, results and bodies to its history. A page it has
already read is listed by its number instead of being pasted again — the one economy it is
allowed, so the measured ratio is a lower bound of what the goal tree saves.

It stops when it decides to answer, after `settings.budget.steps` turns (the goal tree's step
limit too), or when the next turn's results would overflow the context budget ("context full"
in the run log — the naive agent's real failure mode; the history is never silently
truncated). Then one free-text call writes the answer from the whole history, citing the
pages it read as [n].
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from research_core import runlog
from research_core.loop.engine import Checkpointer
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.state import QueryRecord, RunState
from research_core.loop.report.reporter import Report, Source, cited_numbers, report_problem
from research_core.models.gateway import Gateway
from research_core.models.prompts import max_tokens, render
from research_core.models.prompts import text as prompt_text
from research_core.models.schemas import NextAction
from research_core.protocols import (
    Message,
    ModelTier,
    SearchBackend,
    SearchHit,
    SearchRequest,
    TimeRange,
)
from research_core.settings import Settings
from research_core.text.terms import terms

TIER = "reporter"
ROOT = "N0"
# Measured with the bundled Gemma tokenizer on the sample corpus: English runs 3.2–4.3
# characters per token, CJK about one token per character. So the guard counts a CJK
# character as 3 characters and assumes 3 characters per token, erring towards "full".
CHARS_PER_TOKEN = 3
CJK_WEIGHT = 3
# Room left in the model's window for the answer (report_max_tokens) plus one retry turn.
RETRY_MARGIN_TOKENS = 1024
DECIDE, ANSWER = "decide", "answer"
_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_MARKERS = re.compile(r"<<<DATA|DATA>>>")
_INSTRUCTION_WORDS = frozenset({"next", "action", "final", "answer", "search", "query", "task",
                                "reason", "none"})
TASKS = (DECIDE, ANSWER)


def prompt_chars(text: str) -> int:
    """The size of a prompt as the context guard counts it (CJK characters weigh more)."""
    return len(text) + (CJK_WEIGHT - 1) * len(_CJK.findall(text))


def default_context_chars(settings: Settings) -> int:
    """The budget of the whole prompt, from the GGUF context window."""
    room = settings.gguf_context - settings.engine.report_max_tokens - RETRY_MARGIN_TOKENS
    return max(0, room) * CHARS_PER_TOKEN


@dataclass(frozen=True)
class PageRead:
    number: int
    turn: int
    hit: SearchHit


@dataclass
class MonolithicAgent:
    """Same construction and `run` as `Engine`, so callers can swap strategies."""

    settings: Settings
    tiers: Mapping[str, ModelTier]
    backend: SearchBackend
    store: Checkpointer
    context_chars: int | None = None
    min_turns: int = 0  # equal-work benchmarks: an "answer" before this turn is not taken
    # equal-answer benchmarks: given a dict, every turn ends with the answer the agent could
    # give then (one more answer call, purpose "mono_draft"), kept here by turn
    drafts: dict[int, Report] | None = None

    async def run(self, state: RunState) -> Report:
        with runlog.bound(state.log):
            return await _NaiveRun(self, state).run()


class _NaiveRun:
    """One run: the loop of decide → search → read everything, then the answer."""

    def __init__(self, agent: MonolithicAgent, state: RunState) -> None:
        self.agent = agent
        self.state = state
        self.config = agent.settings.engine
        self.gateway = Gateway(agent.tiers, state.ledger, state.log, self.config.json_max_tokens)
        self.budget = agent.context_chars or default_context_chars(agent.settings)
        self.max_turns = agent.settings.budget.steps
        self.history: list[str] = []
        self.read: dict[str, PageRead] = {}
        self.fallback_searched = False

    async def run(self) -> Report:
        state = self.state
        state.log.emit("start", f"run {state.run_id} (monolithic): {state.question!r} as of "
                       f"{state.as_of}; context budget {self.budget} chars",
                       run_id=state.run_id, strategy="monolithic")
        await self._loop()
        return await self._answer()

    async def _loop(self) -> None:
        for turn in range(1, self.max_turns + 1):
            self.state.step = turn
            self.state.log.step = turn
            action = await self._decide()
            if action.action == "answer" and turn < self.agent.min_turns:
                self.state.log.emit("decide", f"turn {turn}: an answer before turn "
                                    f"{self.agent.min_turns} is not taken; searching on")
                action = self._fallback_action(searching=True)
            if action.action == "answer":
                self.history.append(decision_line(turn, action))
                self.state.log.emit("answer", f"turn {turn}: the model answers ({action.reason})")
                return
            if not await self._search(turn, action):
                return
            if self.agent.drafts is not None:
                self.agent.drafts[turn] = await self._written("mono_draft")
            await self.agent.store.save_checkpoint(self.state)
        self.state.log.emit("limit", f"step limit {self.max_turns} reached; answering")

    async def _decide(self) -> NextAction:
        action = await self.gateway.structured(
            TIER, "mono_decide", self._messages(DECIDE), NextAction,
            self._fallback_action, self._action_problem, max_tokens("monolithic"))
        what = f"search {action.query!r}" if action.action == "search" else "answer"
        self.state.log.emit("decide", f"turn {self.state.step}: {what} — {action.reason[:80]}",
                        action=action.action, query=action.query)
        return action

    def _action_problem(self, action: NextAction) -> str | None:
        if action.action == "answer":
            return None if self.read else "nothing has been read yet: search first"
        words = set(terms(action.query.replace("_", " ")))
        if not words:
            return f"query {action.query!r} has no searchable word"
        if words <= _INSTRUCTION_WORDS:
            return f"query {action.query!r} repeats the task: search for facts the question needs"
        return None

    def _fallback_action(self, searching: bool = False) -> NextAction:
        """Search the question's content words once, then answer (`searching`: search)."""
        if self.fallback_searched and not searching:
            return NextAction(action="answer", query="none",
                              reason="fallback: answer with what was read")
        self.fallback_searched = True
        words = " ".join(terms(self.state.question)[:8])[:120] or self.state.question[:120]
        return NextAction(action="search", query=words, reason="fallback: the question's words")

    async def _search(self, turn: int, action: NextAction) -> bool:
        """One query to the backend; False when its pages would overflow the context."""
        window = TimeRange(until=self.state.as_of)
        request = SearchRequest(query=action.query, time_range=window,
                                limit=self.config.hits_per_query)
        hits = await self.agent.backend.search(request)
        qid = self._record_query(turn, action.query, window, hits)
        new = [h for h in dict((h.source_id, h) for h in hits).values()
               if h.source_id not in self.read]
        block = await self._turn_text(turn, action, hits, new)
        size = prompt_chars(self._prompt_text([*self.history, block]))
        if size > self.budget:
            self.state.log.emit("context", f"context full: the history would be {size} chars, "
                            f"over the budget of {self.budget}; answering with what was read",
                            size=size, budget=self.budget)
            return False
        self.history.append(block)
        self._record_reads(turn, qid, new)
        self.state.log.emit("read", f"{len(new)} new pages read in full; history {size} of "
                        f"{self.budget} chars", pages=len(new), size=size)
        return True

    def _record_query(self, turn: int, query: str, window: TimeRange,
                      hits: list[SearchHit]) -> str:
        qid = f"Q{len(self.state.queries) + 1}"
        self.state.queries.append(QueryRecord(qid, ROOT, turn, query, window, False,
                                          [h.source_id for h in hits]))
        self.state.log.emit("search", f"{self.agent.backend.name}: {query!r} range "
                            f"{window.key()} → {len(hits)} hits", query=query, hits=len(hits))
        return qid

    async def _turn_text(self, turn: int, action: NextAction, hits: list[SearchHit],
                         new: list[SearchHit]) -> str:
        """The turn as the history records it: decision, every hit, full new pages."""
        numbers = {h.source_id: len(self.read) + i + 1 for i, h in enumerate(new)}
        lines = [decision_line(turn, action), f"Results ({len(hits)}):"]
        pasted: set[str] = set()
        for hit in hits:
            earlier = self.read.get(hit.source_id)
            if earlier is not None:
                lines.append(f"[{earlier.number}] {hit.title} (read in turn {earlier.turn})")
            elif hit.source_id in pasted:
                lines.append(f"[{numbers[hit.source_id]}] {hit.title} (above)")
            else:
                pasted.add(hit.source_id)
                lines.append(await self._page(numbers[hit.source_id], hit))
        return "\n".join(lines)

    async def _page(self, number: int, hit: SearchHit) -> str:
        body = await self.agent.backend.read_body(hit.source_id) or hit.snippet
        date = hit.published.isoformat() if hit.published else "undated"
        head = f"[{number}] {hit.title} — {hit.publisher}, {hit.source_type}, {date}, {hit.url}"
        return head + "\n" + _MARKERS.sub("", body).strip()

    def _record_reads(self, turn: int, qid: str, new: list[SearchHit]) -> None:
        """Each page read becomes a kept evidence item, unscored: the naive agent keeps all."""
        for hit in new:
            number = len(self.read) + 1
            self.read[hit.source_id] = PageRead(number, turn, hit)
            self.state.evidence.append(_evidence(f"E{len(self.state.evidence) + 1}", qid, hit))

    def _messages(self, task: str, history: list[str] | None = None) -> list[Message]:
        shown = self.history if history is None else history
        return render("monolithic", question=self.state.question,
                      as_of=self.state.as_of.isoformat(),
                      history="\n\n".join(shown) or "(nothing yet)", task=task_text(task))

    def _prompt_text(self, history: list[str]) -> str:
        """The larger of the two prompts over `history`: both must fit."""
        texts = ["\n".join(m.content for m in self._messages(t, history)) for t in TASKS]
        return max(texts, key=prompt_chars)

    async def _answer(self) -> Report:
        report = await self._written("mono_answer")
        await self._finish(report)
        return report

    async def _written(self, purpose: str) -> Report:
        """The answer from the pages read so far."""
        sources = [_source(p) for p in self.read.values()]
        used_fallback = not sources

        def fallback() -> str:
            nonlocal used_fallback
            used_fallback = True
            return assembled_answer(self.state.question, list(self.read.values()))

        text = fallback() if not sources else await self.gateway.text(
            TIER, purpose, self._messages(ANSWER), self.config.report_max_tokens,
            fallback, lambda t: report_problem(t, len(sources)))
        return Report(text=text, sources=sources, cited=cited_numbers(text),
                      fallback=used_fallback)

    async def _finish(self, report: Report) -> None:
        self.state.status = "finished"
        self.state.log.emit("report", f"{len(report.cited)} of {len(report.sources)} pages cited"
                        + (" (assembled from the pages read)" if report.fallback else ""))
        await self.agent.store.save_checkpoint(self.state)
        await self.agent.store.save_report(self.state.run_id, report)


def task_text(task: str) -> str:
    """The `decide` or `answer` instruction of the monolithic prompt (prompts.yaml)."""
    return prompt_text("monolithic", task)


def decision_line(turn: int, action: NextAction) -> str:
    what = f"search {action.query!r}" if action.action == "search" else "answer"
    return f"Turn {turn} — decision: {what} (reason: {action.reason or 'none given'})"


def assembled_answer(question: str, pages: list[PageRead]) -> str:
    """An answer listing what was read, each line cited: it cannot cite wrongly."""
    if not pages:
        return f"Answer: {question}\n\nNo page was found for this question."
    lines = [f"Answer: {question}", "", "Pages read:"]
    lines += [f"- {p.hit.title}: {' '.join(p.hit.snippet.split())[:200]} [{p.number}]"
              for p in pages]
    return "\n".join(lines)


def _source(page: PageRead) -> Source:
    h = page.hit
    return Source(page.number, h.source_id, h.title, h.url, h.publisher, h.published,
                  h.source_type)


def _evidence(evidence_id: str, qid: str, hit: SearchHit) -> Evidence:
    return Evidence(
        id=evidence_id, node_id=ROOT, query_id=qid, source_id=hit.source_id, title=hit.title,
        url=hit.url, published=hit.published, source_type=hit.source_type,
        publisher=hit.publisher, text=hit.snippet, relevance=0.0, credibility=0.0,
        recency=0.0, score=0.0, reason="read in full (monolithic: no scoring)", kept=True,
    )
