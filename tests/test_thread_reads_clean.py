"""The thread reads clean (issue 30, must-hold 4), each defect a new user met, checked on the
message the person sees: the report's sources listed once (numbered, as links); after Stop,
no "parts published above are kept" when none were; no quarter set against a month, and no
two dates, as sources that disagree; the empty-mention hint asks about what the sample corpus
covers. (The plan without a reflection's internals: tests/test_plan_view.py; a status line
that is never a note's internals: tests/test_slack_publisher.py; a follow-up's sign of life:
tests/test_agent_flow.py and tests/test_steering_bot.py.)"""

from __future__ import annotations

import datetime as dt
import json

from bot.start import EMPTY_REPLY
from bot.surfaces import PROMPTS
from contract.requests import RUNNING, ResearchRequestMsg
from playground.fake_slack import FakeSlack
from research_core.delivery.publications import Publication
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.node_conflicts import find_conflicts
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.plan_view import plan_view
from research_core.loop.report.reporter import ClaimCheck, Report, Source
from research_core.search.corpus import sample_corpus_dir
from research_core.settings import Settings
from research_core.text.terms import content_terms
from tests.conftest import AS_OF
from tests.test_slack_publisher import CH, publisher
from workers.thread_messages import stopped_message

URLS = ("https://chpa.example/autumn-2026", "https://heatandhome.example/q1")


def report() -> Report:
    sources = [Source(2, "chpa", "Market Report", URLS[0], "CHPA", dt.date(2026, 10, 29),
                      "industry_association"),
               Source(4, "q1", "Sales fall in Q1", URLS[1], "Heat & Home", dt.date(2026, 4, 22),
                      "news")]
    claims = [ClaimCheck("Sales fell 9% in Q1.", [4], False, "9% is not in [4]", "model")]
    return Report("Sales fell 8.0% to 474,000 units in Q1 2026 [4]; the year ends up 5.2% [2].",
                  sources, [2, 4], False, claims)


async def test_the_reports_sources_are_listed_once_as_numbered_links(fake: FakeSlack) -> None:
    pub, _ = publisher(fake)
    describe = {"chpa": (URLS[0], "Market Report"), "q1": (URLS[1], "Sales fall in Q1")}
    pub.describe = describe.get
    done = report()
    ts = await pub.answer_part("r1", "report", done.render(), done.cited_source_ids())
    message = fake.message(CH, ts or "")
    assert message is not None
    markdown = message.blocks[0]["text"]
    assert "Sources" not in markdown  # no plain-text list: the context line lists them
    assert f"474,000 units in Q1 2026 [\\[1\\]]({URLS[1]})" in markdown  # renumbered, linked
    assert f"[\\[2\\]]({URLS[0]})" in markdown and "[4]" not in markdown
    assert "Flagged claims" in markdown and "9% is not in [\\[1\\]]" in markdown  # kept
    [line] = [e["text"] for b in message.blocks if b["type"] == "context"
              for e in b["elements"]]
    assert line == (f"Sources: [1] <{URLS[1]}|Sales fall in Q1> · "
                    f"[2] <{URLS[0]}|Market Report>")


def request() -> ResearchRequestMsg:
    return ResearchRequestMsg("red:req:C1:1.0", "U0ALICE", "C1", "1.0", "1.0", "q?", RUNNING)


def test_after_stop_what_is_kept_is_what_was_published() -> None:
    state = RunState.new("How did heat pump sales move in 2026?", AS_OF, Settings())
    _, blocks = stopped_message(state, request(), "research:C1:1.0")
    said = json.dumps(blocks)
    assert "published above are kept" not in said
    assert "Nothing had been published yet" in said
    state.publications = [Publication(state.run_id, k, v, "part", "t")
                          for k, v in (("N1", 1), ("N1", 2), ("N2", 1))]
    state.publications.append(Publication(state.run_id, "progress-s1", 1, "progress", "t"))
    _, blocks = stopped_message(state, request(), "research:C1:1.0")
    assert "The 2 answer parts published above are kept." in json.dumps(blocks)


def evidence(source_id: str, text: str, published: dt.date, credibility: float) -> Evidence:
    return Evidence(f"E{len(source_id)}", "N1", "q1", source_id, source_id, "", published,
                    "news", source_id, text, 0.9, credibility, 1.0, 0.9, "", True)


def test_a_quarter_is_not_set_against_a_month_nor_a_date_against_a_date() -> None:
    """The sample corpus's own sentences: the first quarter's 474,000 units and September's
    214,000, and the two April days, are no disagreement in the progress log or the plan."""
    items = [
        evidence("heat-home-weekly-q1-2026-sales-fall", (
            "Residential heat pump sales in the 14 European markets tracked by the Continental "
            "Heat Pump Association (CHPA) fell 8.0% year on year to 474,000 units in the first "
            "quarter of 2026, according to figures released on 21 April."),
            dt.date(2026, 4, 22), 0.65),
        evidence("eurobuild-daily-september-2026-sales", (
            "Europe's residential heat pump market posted its best September on record, with "
            "214,000 units sold in the 14 markets covered by the Continental Heat Pump "
            "Association (CHPA). The Warm Homes Bonus has been in force since 1 April 2026."),
            dt.date(2026, 10, 15), 0.65),
    ]
    assert find_conflicts(items) == []
    state = RunState.new("What were heat pump sales in 2026?", AS_OF, Settings())
    node = state.tree.add_child("N0", "What were heat pump sales in 2026?", 0.9)
    for item in items:
        item.node_id = node.id
    state.evidence = items
    details = [d for t in plan_view(state).tasks for d in t.details]
    assert not any(d.startswith("Sources disagree") for d in details), details


def test_the_empty_mention_hint_asks_what_the_sample_corpus_covers() -> None:
    corpus = " ".join(p.read_text("utf-8").lower() for p in sample_corpus_dir().glob("*.md"))
    asked = EMPTY_REPLY.split("`@RED ", 1)[1].rstrip("`")
    assert asked and all(word in corpus for word in content_terms(asked))
    assert "copper foil" not in EMPTY_REPLY.lower() and "copper foil" not in corpus
    for prompt in PROMPTS:  # the agent view's suggested prompts: about what it covers too
        words = content_terms(prompt["message"])
        assert sum(word in corpus for word in words) >= 0.75 * len(words), prompt
