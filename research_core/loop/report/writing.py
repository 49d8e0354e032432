"""The run's final report, written once: the reporter over the summaries and the kept evidence,
within what the reading budget leaves after the published parts, then the claim check."""

from __future__ import annotations

from research_core.delivery.publications import Delivery
from research_core.loop.answering.completion import Reader
from research_core.loop.memory.state import RunState
from research_core.loop.report import claims, reporter
from research_core.loop.report.reporter import Report
from research_core.models.gateway import Gateway
from research_core.protocols import Similarity
from research_core.settings import EngineSettings
from research_core.text.sentences import sentences

REPORT_SHARE = 3  # the report gets at least a third of the reading budget


async def write(gateway: Gateway, state: RunState, delivery: Delivery, config: EngineSettings,
                similarity: Similarity, read: Reader | None, deep: bool) -> Report:
    """The report, streamed into its part as it is written, its claims checked."""
    kept = state.kept()
    gateway.stream_to("report", delivery.stream("report"))
    report = await reporter.write_report(
        gateway, state.asked, state.as_of, list(state.summaries.values()), kept,
        (config.report_evidence_chars, config.report_max_tokens), similarity,
        {n.id: n.question for n in state.tree.nodes.values()}, read,
        reporter.Framing(deep, state.extra.unknowns),
        *parts_said(delivery, config.reading_budget_chars))
    asked = [n.question for n in state.tree.nodes.values()]
    report = await claims.double_check(gateway, report, kept, asked)
    state.log.emit("report", f"{len(report.cited)} of {len(report.sources)} sources cited"
                   + (" (assembled from evidence)" if report.fallback else ""))
    return report


def parts_said(delivery: Delivery, budget: int) -> tuple[list[str], int, frozenset[str]]:
    """The sentences the published parts said, what the reading budget leaves the report
    (a third of the budget at least: the lead and the disagreements), and the sub-questions
    whose parts are out."""
    parts = delivery.parts()
    texts = [p.text for p in parts]
    left = max(budget - sum(len(t) for t in texts), budget // REPORT_SHARE)
    said = [s for t in texts for s in sentences(t, clauses=False)]
    return said, left, frozenset(p.part_key for p in parts)
