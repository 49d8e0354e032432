"""The root's split without the planner (issue 25): the question's clauses, one sub-question per
named thing, and what the retrieved sources are about, never the question alone. Questions and
sources from beekeeping and orchards, a field no evaluation suite uses."""

from __future__ import annotations

import datetime as dt

from research_core.budget.owner import BudgetOwner
from research_core.delivery.publications import Delivery
from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line
from research_core.loop.memory.state import QueryRecord, RunState
from research_core.loop.planning import decomposition, judgement, planner, subquestions
from research_core.loop.planning.asked import names_in, not_found
from research_core.loop.review import gaps
from research_core.loop.review.expansion import unkept_for
from research_core.protocols import SearchHit, TimeRange
from research_core.settings import EngineSettings, Settings
from research_core.store.sql import SqlStore
from tests.engine_run import default_similarity as similarity

COMPARE = ("Meadowbrook Apiaries vs Hollin Honey in Vestland: how many hives does each really "
           "run, how hard are their colonies working, and which one is better placed from here?")
REGIONS = ("Give me a region-by-region picture of Vestland's orchards at the end of Q3 (North, "
           "Coast and Valley): acreage, how it compares with a year earlier, and the main "
           "constraint in each region.")


def test_a_comparison_gets_one_sub_question_per_side_and_none_equal_to_the_root() -> None:
    texts = subquestions.compose(subquestions.clauses(COMPARE), COMPARE)
    assert texts[0].startswith("Meadowbrook Apiaries in Vestland")
    assert texts[1].startswith("Hollin Honey in Vestland")
    assert "Meadowbrook" not in texts[1] and "Hollin" not in texts[0]
    assert COMPARE not in texts and all(len(t) <= subquestions.MAX_CHARS for t in texts)


def test_a_listed_group_gives_one_sub_question_per_item_and_its_commas_cut_nothing() -> None:
    c = subquestions.clauses(REGIONS)
    assert c.things == ["North", "Coast", "Valley"]
    assert "(North" not in c.topic and "acreage" in c.asks
    texts = subquestions.compose(c, REGIONS)
    assert [t.split(":")[0] for t in texts[:3]] == ["North", "Coast", "Valley"]
    assert not any("What are the latest figures for" in t for t in texts)


def test_a_clause_that_only_asks_is_completed_with_the_topic() -> None:
    question = "Clover and heather honey went in opposite directions this year. Why?"
    c = subquestions.clauses(question)
    assert c.things == ["Clover", "heather honey"]
    texts = subquestions.compose(c, question)
    assert "Why: Clover and heather honey went in opposite directions this year?" in texts


def test_a_topic_every_ask_carries_is_no_sub_question_of_its_own() -> None:
    question = "norland honey exports — what's the newest month, and how's it trended since spring?"
    texts = subquestions.compose(subquestions.clauses(question), question)
    assert texts == ["What's the newest month (norland honey exports)?",
                     "How's it trended since spring (norland honey exports)?"]
    asks_itself = "How many hives did Vestland count in 2026, and why did yields fall?"
    assert subquestions.compose(subquestions.clauses(asks_itself), asks_itself)[0] == \
        "How many hives did Vestland count in 2026?"


def test_a_chinese_pair_is_read_by_its_parts_of_speech() -> None:
    assert subquestions.clauses("苹果和梨的价格为何分化？").things == ["苹果", "梨"]


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
    subs = await decomposition.split(similarity(), question, HITS, 4, EngineSettings(),
                                     dt.date(2026, 10, 31))
    texts = [s.question for s in subs]
    assert len(texts) >= 2 and question not in texts
    assert any("census" in t or "Varroa" in t for t in texts)  # what the sources are about
    assert not any("amazing" in t for t in texts)  # a blog names no facet
    assert not any("Monday" in t for t in texts)  # no source speaks to the deadline


async def test_a_clause_that_asks_about_the_topic_is_kept_and_a_request_is_not() -> None:
    """"how has it moved" names little of its own (its "it" is the topic), so no source is
    close to it alone; it opens as a question, so it is asked of the sources."""
    question = ("What's the latest hive count in Vestland, and how has it moved over the past "
                "year?")
    subs = await decomposition.split(similarity(), question, HITS, 4, EngineSettings(),
                                     dt.date(2026, 10, 31))
    texts = [s.question for s in subs]
    assert any(t.startswith("How has it moved over the past year") for t in texts), texts
    assert subquestions.asks("哪个产区拖了后腿、为什么") and not subquestions.asks("要数据和出处")


def test_not_found_lists_names_only_never_words_that_ask() -> None:
    question = "Why did Vestland's honey yield fall so much even though hive counts kept growing?"
    missing = not_found(question, [], "Honey yields fell 12% as hives grew.", "fell because")
    assert missing == ["the question's “Vestland”"]
    assert names_in("How did sales move in Norland and Sudmark?") == ["Norland", "Sudmark"]
    assert names_in("Even though prices rose, why?") == []


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
    texts = [s.question for s in subquestions.derive(question)]
    assert texts and all(t.count("(") == t.count(")") for t in texts), texts
    assert any(t.startswith("How much of the price drop is what") for t in texts), texts


ORCHARD_HITS = [
    _hit("otago-apples", "Otago apple prices, October 2026",
         "Otago Gala apple prices averaged 2.40 a kilo in October, up 11% on the year."),
    _hit("otago-pears", "Otago pear prices, October 2026",
         "Otago Packham pear prices averaged 1.85 a kilo in October, down 6% on the year."),
    _hit("fruit-board", "Fruit board: apples over pears",
         "Gala apple prices rose while Packham pear prices slid; the gap is the widest yet."),
]


async def test_things_named_apart_are_found_by_the_embedder_and_named_as_the_sources_do() -> None:
    """"Gala went one way and Packham the other": no pattern sets the two side by side, the
    embedder does (two varieties, not "months" against "Packham"); the sources write "Gala
    apple" and "Packham pear" every time, and so does each side's sub-question, which asks
    what the first half of the clause asks, of that side alone."""
    question = ("over the last 12 months Gala went one way and Packham the other — what's "
                "behind that? numbers pls")
    subs = await decomposition.split(similarity(), question, ORCHARD_HITS, 4, EngineSettings(),
                                     dt.date(2026, 10, 31))
    texts = [s.question for s in subs]
    assert texts[0] == "Over the last 12 months Gala apple went one way?", texts
    assert texts[1] == "Over the last 12 months Packham pear went one way?", texts
    assert not any(t.startswith("What's behind that —") for t in texts)


async def test_no_things_where_the_conjunction_joins_unlike_words() -> None:
    question = "How did Otago orchards do this year and what should growers plant next?"
    assert await decomposition.coordinated(similarity(), question,
                                           [f"{h.title}. {h.snippet}" for h in ORCHARD_HITS]) == []


def test_a_dash_ends_a_clause() -> None:
    c = subquestions.clauses("Otago sold more cherries but earned less — why?")
    assert c.topic == "Otago sold more cherries but earned less" and "why" in c.asks


async def test_a_facet_the_plan_would_refuse_takes_no_clauses_place() -> None:
    """The split keeps room for what the sources are about only where the plan would take it
    (the vetting that every sub-question passes): a facet it would refuse as unrelated cost a
    comparison its "what's the gap now" clause."""
    question = "How did Otago apple and pear prices move this year?"
    facets = ["Otago apple prices, October 2026", "Ten tips for a tidy garden shed"]
    kept = await decomposition.related(similarity(), question, facets, EngineSettings())
    assert kept == ["Otago apple prices, October 2026"]


async def test_a_source_that_answers_the_main_clause_is_related_to_a_long_request() -> None:
    """A long request dilutes the whole question: its filler ("please report … and describe …,
    with sources") leaves the census that answers its main clause below the plan's threshold
    against the whole. Related is to the whole or to its main clause."""
    question = ("Please report Vestland's most recent quarterly registered beehive count and "
                "describe its development over the past year, including year-on-year and "
                "quarter-on-quarter changes, with sources and a short note on method.")
    facet = "Vestland beehive census, third quarter 2026"
    whole = (await similarity().matrix([question], [facet]))[0][0]
    [related] = await judgement.relatedness(similarity(), question, [facet])
    assert related > whole
    kept = await decomposition.related(similarity(), question,
                                       [facet, "Ten tips for a tidy garden shed"],
                                       EngineSettings())
    assert kept == [facet]


def test_names_set_off_by_a_dash_are_the_things_and_a_measure_list_is_not() -> None:
    question = ("Can someone give me the county-by-county picture for Vestland's apiaries in Q3 "
                "— Norby, Eastmark, Kilde: hives, y/y and how many colonies were lost? "
                "numbers + sources pls")
    c = subquestions.clauses(question)
    assert c.things == ["Norby", "Eastmark", "Kilde"]
    assert "hives" in c.asks and "Norby" not in c.asks
    texts = subquestions.compose(c, question)
    assert [t.split(":")[0] for t in texts[:3]] == ["Norby", "Eastmark", "Kilde"]
    assert subquestions.clauses("Vestland honey — prices, yields: how did 2026 go?").things == []


def test_a_clause_that_asks_is_the_topic_before_a_greeting() -> None:
    c = subquestions.clauses("hey — quick one: how did honey sell in 2026?")
    assert c.topic == "how did honey sell in 2026"


def test_and_before_a_verb_and_its_object_opens_a_clause_and_a_gapped_side_does_not() -> None:
    c = subquestions.clauses("Please report Vestland's latest hive count and describe its "
                             "development over the past year, with sources.")
    assert c.asks[:2] == ["Please report Vestland's latest hive count",
                          "describe its development over the past year"]
    c = subquestions.clauses("over the year Gala went one way and Packham the other — why?")
    assert c.topic == "over the year Gala went one way and Packham the other"


def test_a_request_around_a_question_is_left_out_and_them_is_named() -> None:
    question = ("Could you explain what caused acacia honey and heather honey prices to move "
                "apart over the past year, and quantify the current price gap between them?")
    texts = subquestions.compose(subquestions.clauses(question), question)
    assert texts[:2] == ["What caused acacia honey prices to move apart over the past year?",
                         "What caused heather honey prices to move apart over the past year?"]
    assert "Quantify the current price gap between acacia honey and heather honey?" in texts
    assert not any(t.startswith("Could you") for t in texts)


def test_a_clause_that_opens_with_two_things_is_the_topic_before_a_greeting() -> None:
    """Both name three things; the one that sets two against each other is the topic."""
    question = ("Quick one for the orchard team: cider and perry went in opposite directions "
                "over the past year. Why, and how big is the gap now?")
    c = subquestions.clauses(question)
    assert c.things == ["cider", "perry"]
    assert c.topic.startswith("cider and perry went")


def test_the_keyword_query_leaves_out_the_words_of_a_request() -> None:
    plan = planner.query_fallback("Could you tell me how many hives Hollin Honey runs?")
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


async def test_a_clause_that_says_them_is_asked_of_the_sources_as_what_it_names() -> None:
    question = ("Could you explain what caused acacia honey and heather honey prices to move "
                "apart over the past year, and quantify the current price gap between them?")
    subs = await decomposition.split(similarity(), question, HONEY, 4, EngineSettings(),
                                     dt.date(2026, 10, 31))
    texts = [s.question for s in subs]
    assert "Quantify the current price gap between acacia honey and heather honey?" in texts, \
        texts


def test_a_title_too_short_to_research_is_no_sub_question() -> None:
    """A source's short title ("蜂业快讯", a news column) read as a facet would fail the
    sub-question's own check and end the run; it is left out instead."""
    subs = subquestions.as_subquestions(["东湖蜂业快讯", "2026年三季度末东湖蜂箱有多少？"], 4)
    assert [s.question for s in subs] == ["2026年三季度末东湖蜂箱有多少？"]
    assert subs[0].value == 0.9
