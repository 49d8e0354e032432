"""The root's split without the planner (issue 25, issue 42 item 2): the question's clauses that
the retrieved passages speak to, and the facets those passages cluster into, never the question
alone. Questions and sources from beekeeping and orchards, a field no evaluation suite uses."""

from __future__ import annotations

import datetime as dt

from research_core.budget.owner import BudgetOwner
from research_core.delivery.publications import Delivery
from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line
from research_core.loop.memory.state import QueryRecord, RunState
from research_core.loop.planning import decomposition, judgement, planner, subquestions
from research_core.loop.planning.asked import not_found
from research_core.loop.review import gaps
from research_core.loop.review.expansion import unkept_for
from research_core.protocols import SearchHit, TimeRange
from research_core.search.clustering import average_link, medoid
from research_core.settings import EngineSettings, Settings
from research_core.store.sql import SqlStore
from research_core.text.asking import read_question
from research_core.text.clauses import read
from research_core.text.names import names_in
from tests.engine_run import default_similarity as similarity


def _hit(source_id: str, title: str, snippet: str, kind: str = "official_statistics") -> SearchHit:
    return SearchHit(source_id, title, snippet, f"https://x.example/{source_id}",
                     dt.date(2026, 10, 1), kind)


HITS = [
    _hit("hives-q3", "Vestland beehive census, third quarter 2026",
         "Registered hives rose to 41,200 in the third quarter, up 6% on a year earlier."),
    _hit("varroa", "Varroa mite losses in Vestland apiaries, 2026",
         "Winter colony losses reached 18% as varroa mites spread to the coast."),
    _hit("blog", "10 amazing honey facts", "Honey never spoils and bees dance.", "blog"),
]


async def test_the_split_reads_what_the_sources_are_about_and_drops_requests() -> None:
    question = "How did beekeeping in Vestland do in 2026? Numbers and links pls, need it Monday."
    subs = await decomposition.split(similarity(), read_question(question), HITS, 4,
                                     EngineSettings(), dt.date(2026, 10, 31))
    texts = [s.question for s in subs]
    assert len(texts) >= 2 and question not in texts
    assert any("census" in t or "Varroa" in t for t in texts)  # what the sources are about
    assert not any("amazing" in t for t in texts)  # a blog names no facet
    assert not any("Monday" in t for t in texts)  # no source speaks to the deadline


def test_not_found_lists_names_only_never_words_that_ask() -> None:
    question = "Why did Vestland's honey yield fall so much even though hive counts kept growing?"
    missing = not_found(read_question(question), [], "Honey yields fell 12% as hives grew.",
                        "fell because")
    assert missing == ["the question's “Vestland”"]
    assert names_in("How did sales move in Norland and Sudmark?") == ["Norland", "Sudmark"]
    assert names_in("Even though prices rose, why?") == []
    # a day or a month is a period word, not a name the sources must state
    assert names_in("Numbers for Thursday's committee on Norland in Sept. pls?") == ["Norland"]


def _line(source_id: str, text: str, lang_title: str = "", publisher: str = "P") -> Line:
    evidence = Evidence(f"E{source_id}", "N1", "Q1", source_id, lang_title or source_id,
                        "https://x.example", dt.date(2026, 10, 1), "official_statistics",
                        publisher, text, 0.9, 1.0, 1.0, 0.9, "", True)
    return Line(text, evidence)


async def test_the_run_researches_on_while_retrieved_sources_say_more(store: SqlStore) -> None:
    settings = Settings()
    state = RunState.new("How did beekeeping in Vestland do in 2026?", dt.date(2026, 10, 31),
                         settings, "standard")
    state.tree.add_child(state.tree.root_id, "How many hives did Vestland count?", 0.9)
    state.evidence.append(_line("census", "Vestland counted 41,200 hives.").evidence)
    state.extra.retrieved = {
        "census": ["Vestland beehive census, third quarter 2026", "official_statistics",
                   "2026-10-15", "Vestland counted 41,200 hives."],
        "varroa": ["Varroa mite losses in Vestland apiaries, 2026", "official_statistics",
                   "2026-09-30", "Vestland colony losses reached 18% as mites spread."],
        "blog": ["10 amazing honey facts", "blog", "2026-09-01", "Honey never spoils."],
        "norland": ["Norland hive census 2026", "official_statistics", "2026-09-30",
                    "Norland counted 55,000 hives."]}
    owner = BudgetOwner.start(settings.budget, "standard", None, emit=state.log.emit)
    delivery = Delivery(state.run_id, MemoryPublisher(), store, state.log, state.publications,
                        owner)
    assert await gaps.refill_from_evidence(similarity(), state, owner, delivery,
                                           settings.engine)
    added = [n.question for n in state.tree.nodes.values() if n.depth == 1][1:]
    assert added == ["Varroa mite losses in Vestland apiaries, 2026"]
    for _ in range(owner.available("steps") - owner.total("steps") // 2):
        owner.spend("steps")
    assert not await gaps.refill_from_evidence(similarity(), state, owner, delivery,
                                               settings.engine)  # half the steps spent


def test_an_aside_cut_by_a_comma_leaves_no_bracket_in_a_sub_question() -> None:
    """"… with data (how much is what, and when it happened)": the comma inside the aside
    once gave a sub-question "When it happened) (…)?"; each half is now a clause of its own.
    Orchard fruit, a field no evaluation suite uses."""
    question = ("Otago sold more cherries in Q1 but earned less, why? Break the fall down with "
                "data (how much of the price drop is what, and when it happened).")
    texts = [s.question for s in subquestions.derive(read_question(question))]
    assert texts and all(t.count("(") == t.count(")") for t in texts), texts
    assert any("how much of the price drop is what" in t for t in texts), texts


def test_a_clause_that_names_little_is_completed_with_the_topic() -> None:
    question = "How many hives did Vestland count in 2026? How big is the gap now?"
    texts = subquestions.compose(read(question), read_question(question))
    assert texts == ["How many hives did Vestland count in 2026?",
                     "How big is the gap now (How many hives did Vestland count in 2026)?"]
    one_clause = read_question("How did honey sell in 2026?")
    assert subquestions.derive(one_clause) == []  # one clause: no split


async def test_a_request_to_the_bot_is_no_sub_question() -> None:
    question = ("What's the latest hive count in Vestland, and how did varroa losses move "
                "over the past year? pls send the links by Monday morning")
    subs = await decomposition.split(similarity(), read_question(question), HITS, 4,
                                     EngineSettings(), dt.date(2026, 10, 31))
    texts = [s.question for s in subs]
    assert any(t.startswith("What's the latest hive count") for t in texts), texts
    assert not any("Monday" in t for t in texts), texts


async def test_facets_are_the_clusters_of_the_evidence_named_by_their_medoid() -> None:
    """Two near-identical price releases are one facet, named by the one most like the
    cluster's others; no title becomes a facet twice."""
    question = "How did Vestland honey do in 2026?"
    facets = await decomposition.facets_of(similarity(), read_question(question),
                                           [*HONEY, HONEY_AGAIN], [], 4, EngineSettings(),
                                           dt.date(2026, 10, 31))
    assert facets and len(set(facets)) == len(facets)
    assert sum(f in facets for f in ("Vestland honey prices, October 2026",
                                     HONEY_AGAIN.title)) == 1


def test_average_linkage_joins_what_is_alike_and_the_medoid_is_central() -> None:
    sims = [[1.0, 0.9, 0.8, 0.1], [0.9, 1.0, 0.85, 0.2], [0.8, 0.85, 1.0, 0.15],
            [0.1, 0.2, 0.15, 1.0]]
    clusters = average_link(sims, 2)
    assert clusters == [[0, 1, 2], [3]]
    assert medoid(sims, clusters[0]) == 1 and medoid(sims, [3]) == 3
    assert average_link(sims, 4, alike=0.88) == [[0, 1], [2], [3]]  # copies merge anyway
    assert average_link([], 2) == [] and average_link([[1.0]], 2) == [[0]]


async def test_a_facet_the_plan_would_refuse_takes_no_clauses_place() -> None:
    """The split keeps room for what the sources are about only where the plan would take it
    (the vetting that every sub-question passes): a facet it would refuse as unrelated cost a
    comparison its "what's the gap now" clause."""
    question = "How did Otago apple and pear prices move this year?"
    facets = ["Otago apple prices, October 2026", "Ten tips for a tidy garden shed"]
    kept = await decomposition.related(similarity(), read_question(question), facets,
                                       EngineSettings())
    assert kept == ["Otago apple prices, October 2026"]


async def test_a_source_that_answers_the_main_clause_is_related_to_a_long_request() -> None:
    """A long request dilutes the whole question: its filler ("please report … and describe …,
    with sources") leaves the census that answers its main clause below the plan's threshold
    against the whole. Related is to the whole or to its main clause."""
    question = ("Please report Vestland's most recent quarterly registered beehive count, and "
                "describe its development over the past year, including year-on-year and "
                "quarter-on-quarter changes, with sources and a short note on method.")
    facet = "Vestland beehive census, third quarter 2026"
    whole = (await similarity().matrix([question], [facet]))[0][0]
    [related] = await judgement.relatedness(similarity(), read_question(question), [facet])
    assert related > whole
    kept = await decomposition.related(similarity(), read_question(question),
                                       [facet, "Ten tips for a tidy garden shed"],
                                       EngineSettings())
    assert kept == [facet]


def test_the_keyword_query_leaves_out_the_words_of_a_request() -> None:
    asked = read_question("Could you tell me how many hives Hollin Honey runs?")
    plan = planner.query_fallback(asked)
    assert plan.queries[1] == "hives hollin honey runs"


def test_a_thin_sub_question_splits_into_what_another_sub_question_kept() -> None:
    state = RunState.new("How did Vestland's honey prices and hive counts move in 2026?",
                         dt.date(2026, 10, 31), Settings())
    prices = state.tree.add_child(state.tree.root_id, "How did honey prices move?", 0.9)
    hives = state.tree.add_child(state.tree.root_id, "How did hive counts move?", 0.8)
    state.queries.append(QueryRecord("Q1", prices.id, 1, "honey prices 2026", TimeRange(),
                                     False, ["census", "price-release", "blog"]))
    for source_id, node, kept in (("census", hives.id, True), ("price-release", prices.id, True),
                                  ("blog", prices.id, False)):
        state.evidence.append(Evidence(f"E-{source_id}", node, "Q1", source_id, source_id, "",
                                       None, "official_statistics", "P", "text", 0.5, 1.0, 1.0,
                                       0.7, "", kept))
    seen = {s: SearchHit(s, f"{s} title", "", "", None, "official_statistics")
            for s in ("census", "price-release", "blog")}
    # kept for the hive counts, still a facet the thin price question may split into
    assert [h.source_id for h in unkept_for(state, prices, seen)] == ["blog", "census"]
    assert unkept_for(state, hives, seen) == []


HONEY = [
    _hit("honey-prices", "Vestland honey prices, October 2026",
         "Acacia honey averaged 14.2 euros per kg in October, up 12% on the year; heather "
         "honey averaged 11.0 euros, down 5%."),
    _hit("honey-spread", "Acacia over heather: the honey price spread widens",
         "The acacia-minus-heather price spread widened from 0.4 to 3.2 euros per kg, a "
         "record, as heather stocks piled up in bonded stores."),
    _hit("frost", "Spring frost cut acacia flowering in Vestland",
         "April frosts cut acacia flowering by a third, and acacia honey output fell 28%."),
]


HONEY_AGAIN = _hit("honey-prices-2", "Honey prices in Vestland: October release",
                   "Acacia honey averaged 14.2 euros per kg in October, 12% above a year "
                   "earlier; heather honey averaged 11.0 euros, 5% below.")


def test_a_title_too_short_to_research_is_no_sub_question() -> None:
    """A source's short title ("蜂业快讯", a news column) read as a facet would fail the
    sub-question's own check and end the run; it is left out instead."""
    subs = subquestions.as_subquestions(["东湖蜂业快讯", "2026年三季度末东湖蜂箱有多少？"], 4)
    assert [s.question for s in subs] == ["2026年三季度末东湖蜂箱有多少？"]
    assert subs[0].value == 0.9
