"""`redsearch learn-report`: does the search replay teach the next run? (docs/learning.md)

Two rounds of related questions over the same corpus (the bundled sample corpus), on a
deterministic tier whose planner, like a habit-bound model, proposes three variants for every
sub-question: the question itself, and its first three words plus "forum discussion thread"
and plus "installer blog tips"; relevance is judged by how many of the sub-question's
words a hit carries. Round 1 runs with learning (its queries' outcomes become the patterns'
records); round 2 (other questions on the same topics) runs twice: without learning and with
what round 1 taught, each on its own database so neither finds the other's cached results.
Printed: per round, the queries sent, their results and citations, the citation rate per
query (the mean of cited / results over the queries) and the tokens per cited source.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from redsearch.harness.bench_run import db_url, scratch_db
from redsearch.harness.scripted_tiers import ScriptedTiers
from research_core.loop.engine import Engine
from research_core.loop.memory.state import RunState
from research_core.models.embeddings import build_similarity
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.protocols import ModelTier, Similarity
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.settings import TIERS, BudgetSettings, Settings, TierSettings
from research_core.store.patterns import SqlPatternBook
from research_core.store.sql import SqlStore
from research_core.text.terms import terms

AS_OF = dt.date(2026, 10, 31)
STEPS = 10
ROUND_1 = (
    "How did heat pump sales develop in 2026?",
    "What happened to heat pump prices in October 2026?",
    "How did heat pump exports to Europe change in 2026?",
    "How many heat pump installations were reported in Q3 2026?",
)
ROUND_2 = (
    "What were heat pump sales in September 2026?",
    "How did heat pump equipment prices move in 2026?",
    "What were China's heat pump exports to Europe in 2026?",
    "How did heat pump installation numbers change in 2026?",
)
HABITS = ("forum discussion thread", "installer blog tips")


def _field(text: str, label: str) -> str:
    match = re.search(rf"^{label}:\s*(.*)$", text, re.M)
    return match.group(1).strip() if match else ""


def _core(question: str) -> str:
    return question.strip().rstrip("?").strip()


def decomposition(text: str) -> dict[str, object]:
    split = _core(_field(text, "Question to split") or _field(text, "Main goal"))
    subs = [f"{split} figures?", f"{split} market news?"]
    return {"subquestions": [{"question": q, "value": round(0.9 - 0.1 * i, 2)}
                             for i, q in enumerate(subs)]}


def query_plan(text: str) -> dict[str, object]:
    """The question, and its first three words with each habit."""
    question = _core(_field(text, "Question"))
    topic = " ".join(terms(question)[:3])
    return {"queries": [question, *(f"{topic} {habit}" for habit in HABITS)]}


def hit_scores(text: str) -> dict[str, object]:
    """Relevance by how many of the sub-question's words a hit carries."""
    asked = set(terms(_field(text, "Question")))
    scores = []
    for i, line in enumerate(re.findall(r"^#\d+ .*$", text, re.M)):
        share = len(asked & set(terms(line))) / len(asked) if asked else 0.0
        scores.append({"index": i, "relevance": 0.9 if share >= 0.5 else 0.2,
                       "reason": f"{share:.0%} of the question's words"})
    return {"scores": scores}


def learn_tiers() -> ScriptedTiers:
    tiers = ScriptedTiers()
    tiers._answers.update({"Decomposition": decomposition, "QueryPlan": query_plan,
                           "HitScores": hit_scores})
    return tiers


@dataclass
class RoundFigures:
    label: str
    questions: int = 0
    queries: int = 0
    results: int = 0
    cited: int = 0
    rates: list[float] = dataclasses.field(default_factory=list)
    tokens: int = 0
    cited_sources: int = 0
    learned: int = 0  # queries rewritten or dropped

    @property
    def rate_per_query(self) -> float:
        return sum(self.rates) / len(self.rates) if self.rates else 0.0

    @property
    def tokens_per_cited(self) -> float:
        return self.tokens / self.cited_sources if self.cited_sources else float("inf")

    def add(self, state: RunState, cited_sources: set[str]) -> None:
        self.questions += 1
        kept = {(e.query_id, e.source_id) for e in state.evidence if e.kept}
        for q in state.queries:
            cited = sum((q.id, s) in kept and s in cited_sources for s in q.result_ids)
            self.queries += 1
            self.results += len(q.result_ids)
            self.cited += cited
            self.rates.append(cited / len(q.result_ids) if q.result_ids else 0.0)
        self.tokens += sum(t.total_tokens for t in state.ledger.totals())
        self.cited_sources += len(cited_sources)
        self.learned += sum(e.kind == "learned" and "preferred" not in e.message
                            for e in state.log.events)


def settings_for(base_url: str) -> Settings:
    tier = TierSettings(model="learn-policy", base_url=base_url, max_retries=0)
    return dataclasses.replace(Settings(tiers={t: tier for t in TIERS}),
                               budget=dataclasses.replace(BudgetSettings(), steps=STEPS))


async def run_round(label: str, questions: Sequence[str], store: SqlStore, learn: bool,
                    parts: tuple[Settings, dict[str, ModelTier], CorpusBackend, Similarity]
                    ) -> RoundFigures:
    settings, tiers, backend, similarity = parts
    figures = RoundFigures(label)
    learning = SqlPatternBook(store, backend.name) if learn else None
    for question in questions:
        state = RunState.new(question, AS_OF, settings, mode="standard")
        engine = Engine.build(settings, tiers, backend, store, similarity=similarity,
                              learning=learning)
        report = await engine.run(state)
        figures.add(state, set(report.cited_source_ids()))
    return figures


def table(rows: list[RoundFigures]) -> str:
    lines = [f"{'round':<28}{'questions':>10}{'queries':>8}{'rewritten/dropped':>18}"
             f"{'results':>8}{'cited':>6}{'cite rate/query':>16}{'tokens':>9}"
             f"{'tokens/cited source':>20}"]
    for r in rows:
        lines.append(f"{r.label:<28}{r.questions:>10}{r.queries:>8}{r.learned:>18}"
                     f"{r.results:>8}{r.cited:>6}{r.rate_per_query:>16.1%}{r.tokens:>9,}"
                     f"{r.tokens_per_cited:>20,.0f}")
    return "\n".join(lines)


TOLERANCE = 0.02  # a change smaller than this share is no change


def _moved(before: float, after: float) -> int:
    """+1 up, -1 down, 0 within TOLERANCE."""
    if abs(after - before) <= TOLERANCE * max(abs(before), 1e-9):
        return 0
    return 1 if after > before else -1


def verdict(first: RoundFigures, control: RoundFigures, learned: RoundFigures) -> str:
    rate = _moved(control.rate_per_query, learned.rate_per_query)
    cost = _moved(control.tokens_per_cited, learned.tokens_per_cited)
    helped = {(1, -1): "it helped: citation rate up, tokens per cited source down",
              (0, 0): "no measurable effect"}.get(
        (rate, cost), f"mixed: citation rate per query {_word(rate)}, tokens per cited "
        f"source {_word(cost)}")
    return (f"round 2 with learning vs without: citation rate per query "
            f"{control.rate_per_query:.1%} → {learned.rate_per_query:.1%}, tokens per cited "
            f"source {control.tokens_per_cited:,.0f} → {learned.tokens_per_cited:,.0f} "
            f"(round 1: {first.rate_per_query:.1%}, {first.tokens_per_cited:,.0f}): {helped}")


def _word(direction: int) -> str:
    return {1: "up", -1: "down", 0: "unchanged"}[direction]


async def learn_report() -> int:
    server = learn_tiers()
    settings = settings_for(await server.start())
    tiers = build_tiers(settings)
    backend = CorpusBackend.from_folder(sample_corpus_dir())
    parts = (settings, dict(tiers), backend, build_similarity(settings.embedding))
    try:
        with scratch_db() as taught_dir, scratch_db() as control_dir:
            taught = await SqlStore.open(db_url(taught_dir))
            control_store = await SqlStore.open(db_url(control_dir))
            try:
                first = await run_round("1 (learning)", ROUND_1, taught, True, parts)
                control = await run_round("2 without learning", ROUND_2, control_store,
                                          False, parts)
                learned = await run_round("2 with round 1's patterns", ROUND_2, taught,
                                          True, parts)
            finally:
                await taught.close()
                await control_store.close()
    finally:
        await aclose_tiers(tiers)
        await server.stop()
    print(table([first, control, learned]))
    print(verdict(first, control, learned))
    sys.stdout.flush()
    return 0
