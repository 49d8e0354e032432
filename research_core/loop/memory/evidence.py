"""Evidence items and their score: 0.6 relevance + 0.2 credibility + 0.2 recency
(docs/design.md §1)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from research_core.protocols import SearchHit
from research_core.settings import EngineSettings

CREDIBILITY: dict[str, float] = {
    "official_statistics": 1.0,
    "exchange_data": 0.95,
    "industry_association": 0.85,
    "internal": 0.85,  # a team's own documents (its wiki, tickets: an MCP server's default)
    "research_report": 0.8,
    "news": 0.65,
    "company_pr": 0.3,
    "blog": 0.2,
    "forum": 0.15,
}
UNKNOWN_CREDIBILITY = 0.4
UNKNOWN_DATE_RECENCY = 0.3


@dataclass
class Evidence:
    """One search hit as judged for one goal-tree node."""

    id: str
    node_id: str
    query_id: str
    source_id: str
    title: str
    url: str
    published: dt.date | None
    source_type: str
    publisher: str
    text: str
    relevance: float
    credibility: float
    recency: float
    score: float
    reason: str
    kept: bool
    discarded_reason: str = ""

    def as_hit(self) -> SearchHit:
        """The search hit this evidence came from (for backends that map ids to pages)."""
        return SearchHit(self.source_id, self.title, self.text[:200], self.url, self.published,
                         self.source_type, self.publisher)

    def line(self) -> str:
        """The evidence as one compact line for a model prompt."""
        date = self.published.isoformat() if self.published else "undated"
        return f"{self.id} [{self.source_id}; {self.publisher}; {date}] {self.text}"


def credibility(source_type: str) -> float:
    return CREDIBILITY.get(source_type.strip().lower(), UNKNOWN_CREDIBILITY)


def recency(published: dt.date | None, as_of: dt.date, cfg: EngineSettings) -> float:
    """1.0 within `recency_full_days` of the run's as-of date, falling linearly to 0."""
    if published is None:
        return UNKNOWN_DATE_RECENCY
    age = (as_of - published).days
    if age <= cfg.recency_full_days:
        return 1.0
    span = cfg.recency_zero_days - cfg.recency_full_days
    return max(0.0, 1.0 - (age - cfg.recency_full_days) / span)


def combined_score(relevance: float, cred: float, rec: float, cfg: EngineSettings) -> float:
    total = (
        cfg.weight_relevance * relevance
        + cfg.weight_credibility * cred
        + cfg.weight_recency * rec
    )
    return round(total, 4)
