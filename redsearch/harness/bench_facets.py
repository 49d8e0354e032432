"""What an answer states correctly, scored against the generated corpus's truth
(`bench_corpus.corpus_facts`): the benchmark's measure of an answer, the same for both sides.

A facet of the corpus is one country's measure in one quarter (the fact one document
states). An answer states it correctly when one of its sentences names the country and the
quarter, states the level the document states (4,600 units; thousands separators optional),
and cites that document. A right figure cited to another source, or a sentence that cites the
document without its figure, does not count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from redsearch.harness.bench_corpus import Fact
from research_core.loop.report.citing import CITATION
from research_core.loop.report.reporter import Report, cited_numbers
from research_core.text.sentences import sentences

_LEVEL = re.compile(r"\d[\d,]*")


def answered(text: str, sources: Mapping[int, str], facts: Sequence[Fact]) -> set[str]:
    """The source ids of the facts `text` states correctly; `sources`: citation number →
    source id."""
    by_source = {f.source_id: f for f in facts}
    found: set[str] = set()
    for sentence in sentences(text, clauses=False):
        if not CITATION.search(sentence):
            continue
        for number in cited_numbers(sentence):
            fact = by_source.get(sources.get(number, ""))
            if fact is not None and states(sentence, fact):
                found.add(fact.source_id)
    return found


def states(sentence: str, fact: Fact) -> bool:
    """The sentence names the fact's country and quarter and states its level."""
    level = _number(fact.level)
    said = {n.replace(",", "") for n in _LEVEL.findall(CITATION.sub("", sentence))}
    return (fact.facet.country in sentence and fact.period in sentence.lower()
            and level in said)


def report_facets(report: Report, facts: Sequence[Fact]) -> set[str]:
    """The facts a run's report states correctly, through its own numbered sources."""
    return answered(report.text, {s.number: s.source_id for s in report.sources}, facts)


def _number(level: str) -> str:
    match = _LEVEL.search(level)
    return match.group(0).replace(",", "") if match else level
