"""The benchmark's corpus, written by the benchmark itself: deterministic, on one topic, large
enough that neither strategy runs out of material (at least five documents per step).

Every document reports one measure of residential heat pumps (sales, average price,
installations, exports) for one country and one period of 2026, with figures drawn from a
seeded generator, so that the same seed always writes the same corpus. The facets (country ×
measure) are what the benchmark's scripted tier researches, one at a time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

QUESTION = ("How did residential heat pump sales, prices, installations and exports move "
            "across European countries in 2026?")
COUNTRIES = (
    "Germany", "France", "Italy", "Spain", "Poland", "Netherlands", "Belgium", "Austria",
    "Sweden", "Norway", "Finland", "Denmark", "Ireland", "Portugal", "Greece", "Czechia",
    "Slovakia", "Hungary", "Romania", "Bulgaria", "Croatia", "Slovenia", "Estonia", "Latvia",
    "Lithuania", "Luxembourg", "Switzerland", "Iceland", "Malta", "Cyprus",
)
MEASURES = ("sales", "prices", "installations", "exports")
PERIODS = ("first quarter", "second quarter", "third quarter")
PUBLISHED = {"first quarter": "2026-04-20", "second quarter": "2026-07-20",
             "third quarter": "2026-10-20"}
SOURCES = (("official_statistics", "National Energy Statistics Office"),
           ("industry_association", "Heat Pump Association"),
           ("news", "Energy Market Daily"))


@dataclass(frozen=True)
class Facet:
    country: str
    measure: str

    @property
    def question(self) -> str:
        return f"What were residential heat pump {self.measure} in {self.country} in 2026?"

    @property
    def query(self) -> str:
        return f"heat pump {self.measure} {self.country} 2026"


def facets() -> list[Facet]:
    """Every facet, in the order the scripted tier researches them."""
    return [Facet(c, m) for c in COUNTRIES for m in MEASURES]


@dataclass(frozen=True)
class Fact:
    """What one generated document states: a facet's level and change in one period; the
    truth the benchmark scores answers against (`redsearch.harness.bench_facets`)."""

    facet: Facet
    period: str
    level: str
    change: str
    driver: str

    @property
    def source_id(self) -> str:
        return f"{self.facet.measure}-{self.facet.country.lower()}-{self.period.split()[0]}"


def corpus_facts(documents: int, seed: int = 7) -> list[Fact]:
    """The facts of the first `documents` documents, in the order they are written."""
    rng = random.Random(seed)
    found = [_fact(f, p, rng) for f in facets() for p in PERIODS]
    return found[:documents]


def write_corpus(folder: Path, documents: int, seed: int = 7) -> int:
    """Write at least `documents` markdown documents into `folder`; returns how many."""
    folder.mkdir(parents=True, exist_ok=True)
    written = corpus_facts(documents, seed)
    for number, fact in enumerate(written):
        _write(folder, fact, number)
    return len(written)


def _write(folder: Path, fact: Fact, number: int) -> None:
    source_type, publisher = SOURCES[number % len(SOURCES)]
    slug, facet, period = fact.source_id, fact.facet, fact.period
    title = f"Residential heat pump {facet.measure} in {facet.country}, {period} of 2026"
    folder.joinpath(f"{slug}.md").write_text(
        f"---\nid: {slug}\ntitle: \"{title}\"\nurl: https://bench.example/{slug}\n"
        f"published: {PUBLISHED[period]}\nsource_type: {source_type}\n"
        f"publisher: {publisher}\nlang: en\n---\n{_body(fact)}\n", "utf-8")


def _fact(facet: Facet, period: str, rng: random.Random) -> Fact:
    change = rng.uniform(-12.0, 18.0)
    level = {"sales": f"{rng.randint(8, 240) * 100:,} units",
             "prices": f"{rng.randint(95, 180) * 100:,} euros per installed unit",
             "installations": f"{rng.randint(6, 200) * 100:,} installations",
             "exports": f"{rng.randint(2, 90) * 100:,} units shipped abroad"}[facet.measure]
    driver = rng.choice(("subsidy changes", "lower electricity prices", "a mild winter",
                         "new building rules", "installer shortages", "gas price moves"))
    return Fact(facet, period, level, f"{change:+.1f}%", driver)


def _body(fact: Fact) -> str:
    facet, period, driver = fact.facet, fact.period, fact.driver
    return (f"Residential heat pump {facet.measure} in {facet.country} reached {fact.level} in "
            f"the {period} of 2026, a change of {fact.change} on the same period of 2025.\n\n"
            f"Analysts linked the {period} movement in {facet.country} mainly to {driver}, "
            f"and said the {facet.measure} figure for the next quarter would follow the same "
            "direction if policies stay unchanged.\n\n"
            f"The {period} figure for {facet.country} is final and replaces the provisional "
            "estimate published a month earlier.")
