"""A question read once (issue 42, item 6): one value holding what the answer path needs of
its wording, so that no stage after it reads the raw text again. The run's question is read
into it where the run starts (`RunState.asked`), each sub-question where it enters the tree
(`Node.asked`), a follow-up where it arrives; retrieval, the split, admission, selection and
rendering take this value.

Each reading is the grammar of `research_core.text`: clauses and topic (`clauses`), the names
it gives (`names`), whether it asks why (`causes`), the span it asks about (`periods`), the
extreme and grain it asks for (`superlatives`), its words (`terms`). Each is computed the first
time a stage asks for it and kept: a value is read at most once per reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from research_core.text import causes, periods, superlatives
from research_core.text.clauses import Reading, asks, read, without_mentions
from research_core.text.names import names_in, openings
from research_core.text.terms import content_terms, has_cjk, terms


@dataclass(frozen=True)
class Asked:
    """A question as the answer path reads it; `text` as asked."""

    text: str

    @cached_property
    def plain(self) -> str:
        """The text without Slack mentions and extra spaces."""
        return without_mentions(self.text)

    @cached_property
    def chinese(self) -> bool:
        """Whether it is written in Chinese (the answer's language follows it)."""
        return has_cjk(self.text)

    @cached_property
    def reading(self) -> Reading:
        return read(self.text)

    @property
    def clauses(self) -> tuple[str, ...]:
        """Its clauses that name or ask something, in order."""
        return self.reading.clauses

    @property
    def topic(self) -> str:
        """Its clause that names the most (the whole question when it names nothing)."""
        return self.reading.topic

    @cached_property
    def asking(self) -> frozenset[str]:
        """Its clauses that ask something ("how many …", "哪个区…"), however little they name."""
        return frozenset(c for c in self.clauses if asks(c))

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The names it gives ("Hungary", "MX450", jieba's Chinese names)."""
        return tuple(names_in(self.text))

    @cached_property
    def openings(self) -> tuple[str, ...]:
        """The capitalised words opening its sentences (casefolded): names or not."""
        return tuple(openings(self.text))

    @cached_property
    def reasons(self) -> bool:
        """Whether it asks for reasons ("why", "原因")."""
        return causes.asks_reasons(self.text)

    @cached_property
    def why(self) -> bool:
        """Whether it asks why (reasons, or "what caused …")."""
        return causes.asks_why(self.text)

    @cached_property
    def explains(self) -> bool:
        """Whether it asks for reasons or an explanation ("explain …", "驱动")."""
        return causes.asks_explanation(self.text)

    @cached_property
    def span_end(self) -> str | None:
        """"2026-10": the month a span it names ends in."""
        return periods.span_end(self.text)

    @cached_property
    def up_to_now(self) -> bool:
        """Whether it asks about the past year or the latest figures."""
        return periods.asks_past_year(self.text) or periods.asks_latest(self.text)

    @cached_property
    def extreme(self) -> str | None:
        """"high" or "low" where it asks for a period's extreme."""
        return superlatives.asked_extreme(self.text)

    @cached_property
    def grain(self) -> str | None:
        """"month", "quarter" or "half year": the grain of period it names."""
        return superlatives.asked_grain(self.text)

    @cached_property
    def words(self) -> tuple[str, ...]:
        """Its words, as the search index cuts them."""
        return tuple(terms(self.text))

    @cached_property
    def content(self) -> tuple[str, ...]:
        """Its content words (no function words)."""
        return tuple(content_terms(self.text))

    @cached_property
    def subject(self) -> frozenset[str]:
        """Its content words less those that ask for an extreme or a grain of period
        ("highest", "month", "最高"): what the figures asked about measure."""
        return frozenset(t for t in self.content if superlatives.asked_extreme(t) is None
                         and superlatives.asked_grain(t) is None)


def read_question(text: str) -> Asked:
    """The question as one value (nothing is read until a stage asks)."""
    return Asked(text)
