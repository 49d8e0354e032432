"""Search replay (docs/design.md §1): for every query, how many results it returned, how many became
kept evidence and how many of those the report cited. Zero-cited queries are waste to learn
from. Works on a live run's state and on a stored run alike. A stored run's replay also counts
the feedback people gave its answers (thumbs up / down on the report and follow-up answers)."""

from __future__ import annotations

from dataclasses import dataclass

from research_core.errors import RunNotFound
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.store.models import EvidenceRow, FeedbackRow, QueryRow, ReportRow
from research_core.store.sql import SqlStore


@dataclass(frozen=True)
class QueryTrace:
    query_id: str
    text: str
    results: int
    kept: int
    cited: int

    @property
    def citation_rate(self) -> float:
        """Cited evidence per result returned (0 when it returned nothing)."""
        return self.cited / self.results if self.results else 0.0


@dataclass(frozen=True)
class EvidenceFact:
    query_id: str
    source_id: str
    kept: bool


def trace(queries: list[tuple[str, str, list[str]]], evidence: list[EvidenceFact],
          cited_sources: set[str]) -> list[QueryTrace]:
    """`queries`: (id, text, result source ids) in the order they were sent."""
    rows = []
    for qid, text, results in queries:
        mine = [e for e in evidence if e.query_id == qid and e.kept]
        cited = [e for e in mine if e.source_id in cited_sources]
        rows.append(QueryTrace(qid, text, len(results), len(mine), len(cited)))
    return rows


def render(rows: list[QueryTrace]) -> str:
    lines = [f"{'query':<6}{'results':>8}{'kept':>6}{'cited':>7}{'rate':>7}  text"]
    for r in rows:
        waste = "  (waste: nothing cited)" if r.cited == 0 else ""
        lines.append(f"{r.query_id:<6}{r.results:>8}{r.kept:>6}{r.cited:>7}"
                     f"{r.citation_rate:>7.0%}  {r.text[:70]}{waste}")
    total_results = sum(r.results for r in rows)
    total_cited = sum(r.cited for r in rows)
    overall = total_cited / total_results if total_results else 0.0
    lines.append(f"{len(rows)} queries, {total_results} results, {total_cited} cited "
                 f"(citation rate {overall:.0%}); {sum(r.cited == 0 for r in rows)} cited nothing")
    return "\n".join(lines)


def live_trace(state: RunState, report: Report) -> list[QueryTrace]:
    """The replay of a run that just finished."""
    queries = [(q.id, q.text, list(q.result_ids)) for q in state.queries]
    evidence = [EvidenceFact(e.query_id, e.source_id, e.kept) for e in state.evidence]
    return trace(queries, evidence, set(report.cited_source_ids()))


async def stored_trace(store: SqlStore, run_id: str) -> list[QueryTrace]:
    """The replay of a stored run."""
    queries = await store.rows(QueryRow, run_id)
    if not queries and not await store.rows(EvidenceRow, run_id):
        raise RunNotFound(f"no stored run with id {run_id!r}")
    evidence = [EvidenceFact(e.query_id, e.source_id, e.kept)
                for e in await store.rows(EvidenceRow, run_id)]
    reports: list[ReportRow] = await store.rows(ReportRow, run_id)
    cited = _cited_sources(reports[0]) if reports else set()
    ordered = sorted(queries, key=lambda q: int(q.query_id[1:]))
    return trace([(q.query_id, q.text, list(q.result_ids)) for q in ordered], evidence, cited)


def _cited_sources(report: ReportRow) -> set[str]:
    return {s["source_id"] for s in report.sources if s["number"] in set(report.cited)}


@dataclass(frozen=True)
class FeedbackCount:
    """The verdicts on one answer part (each person's latest click on each message)."""

    part_key: str
    positive: int
    negative: int


async def stored_feedback(store: SqlStore, run_id: str) -> list[FeedbackCount]:
    rows: list[FeedbackRow] = await store.rows(FeedbackRow, run_id)
    counts: dict[str, list[int]] = {}
    for row in sorted(rows, key=lambda r: r.at):
        tally = counts.setdefault(row.part_key, [0, 0])
        tally[0 if row.verdict == "positive" else 1] += 1
    return [FeedbackCount(k, up, down) for k, (up, down) in counts.items()]


def render_feedback(counts: list[FeedbackCount]) -> str:
    up, down = sum(c.positive for c in counts), sum(c.negative for c in counts)
    lines = [f"Feedback: {up} positive, {down} negative"]
    lines += [f"  {c.part_key}: {c.positive} positive, {c.negative} negative" for c in counts]
    return "\n".join(lines)
