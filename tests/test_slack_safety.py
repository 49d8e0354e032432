"""Nothing from a page, a model or a user becomes live Slack markup: mentions, special mentions
and disguised links arrive escaped, and messages are posted with `parse: none`."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from contract import markdown
from contract.blocks import picker_blocks, status_blocks
from contract.mrkdwn import escape, from_slack, link, mention
from contract.requests import ResearchRequestMsg
from contract.slack_client import make_client
from contract.watch_blocks import Change, changes_blocks
from playground.fake_slack import FakeSlack
from research_core.delivery.numbering import number
from research_core.plan import PlanSource
from research_core.protocols import Similarity
from research_core.store.sql import SqlStore
from tests.conftest import SLACK_TOKEN
from tests.engine_run import Serve, run_engine
from tests.fakes.web_server import Doc, FakeWeb, article
from tests.scripted import Script
from tests.test_web_engine import SALES, web_backend
from workers.answer_blocks import answer_blocks, sources_context
from workers.plan_blocks import url_source
from workers.slack_publisher import SlackPublisher, part_blocks

CH = "C0SAFE"
LIVE = re.compile(r"<[!@#]|<(?:https?|mailto):", re.I)  # what Slack would parse in mrkdwn
# The markup rides in the sentence that states the figures: the reporter is given a source's
# figure sentences, so that is where a hostile page puts what it wants shown.
HOSTILE = ("Heat pump prices fell 9.5% to 7,150 euros &lt;!channel&gt; <!channel> "
           "&lt;!here&gt; &lt;!everyone&gt; &lt;!subteam^S0ADMINS|@admins&gt; &lt;@U123&gt; "
           "&lt;https://evil.example/login|your bank&gt; <https://evil.example|your bank>")
PRICES = Doc("prices", "Heat pump prices &lt;!here&gt; October 2026", HOSTILE, "2026-10-20",
             article("Heat pump prices &lt;!channel&gt; October 2026", "2026-10-20", [
                 "Heat pump equipment prices fell 9.5% to 7,150 euros in October 2026 "
                 "&lt;!channel&gt; &lt;@U123&gt; &lt;!here&gt; "
                 "&lt;https://evil.example/login|your bank&gt; call now.",
                 "Installed prices rose 2.8% to 14,600 euros."]))


@pytest.fixture
async def site() -> AsyncIterator[list[FakeWeb]]:
    started: list[FakeWeb] = []
    yield started
    for one in started:
        await one.stop()


def mrkdwn_texts(blocks: list[dict[str, Any]]) -> list[str]:
    """Every text object of the blocks that Slack renders as mrkdwn."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                found.append(str(node.get("text", "")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(blocks)
    return found


def markdown_texts(blocks: list[dict[str, Any]]) -> list[str]:
    return [str(b.get("text", "")) for b in blocks if b.get("type") == "markdown"]


def live_markdown(text: str) -> list[str]:
    """What CommonMark would read as the start of a link, image, autolink, HTML, entity or
    mention in a markdown block: `<`, `[`, `&` or `@` not escaped by a backslash."""
    found, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] in "<[&@":
            found.append(text[i:i + 12])
        i += 1
    return found


def posted_markdown(fake: FakeSlack) -> list[str]:
    texts = []
    for call in fake.calls("chat.postMessage") + fake.calls("chat.update"):
        blocks = call.params.get("blocks") or []
        texts += markdown_texts(json.loads(blocks) if isinstance(blocks, str) else blocks)
    return texts


def posted_texts(fake: FakeSlack) -> list[str]:
    """The text and mrkdwn of every chat.postMessage / chat.update the bot made."""
    texts = []
    for call in fake.calls("chat.postMessage") + fake.calls("chat.update"):
        blocks = call.params.get("blocks") or []
        texts += [str(call.params.get("text") or ""),
                  *mrkdwn_texts(json.loads(blocks) if isinstance(blocks, str) else blocks)]
    return texts


async def test_a_hostile_page_pings_nobody_and_disguises_no_link(
        serve: Serve, store: SqlStore, similarity: Similarity, site: list[FakeWeb],
        fake: FakeSlack) -> None:
    web, backend = await web_backend([SALES, PRICES])
    site.append(web)
    thread = fake.post_user_message(CH, "U1", "<@U0FAKEBOT> heat pumps?")
    publisher = SlackPublisher(make_client(SLACK_TOKEN, fake.base_url), CH, thread.ts,
                               progress_interval=0)
    script = Script(subquestions=[("What were heat pump prices <!channel>?", 0.9),
                                  ("What were heat pump sales figures?", 0.8)])
    out = await run_engine(serve, script, backend, store, similarity=similarity,
                           publisher=publisher, max_steps=4)
    await publisher.close()
    assert any("<!channel>" in e.text or "<!here>" in e.text for e in out.state.evidence)
    texts = posted_texts(fake)
    shown = "\n".join(texts)
    assert "&lt;!channel&gt;" in shown and "&lt;@U123&gt;" in shown  # it did reach Slack
    assert "&lt;https://evil.example/login|your bank&gt;" in shown
    assert not [t for t in texts if LIVE.search(t)]
    markdown = posted_markdown(fake)
    assert any("\\<!channel\\>" in t or "\\<!here\\>" in t for t in markdown)  # as text
    assert not [live for t in markdown for live in live_markdown(t)]
    for call in fake.calls("chat.postMessage") + fake.calls("chat.update"):
        assert call.params["parse"] == "none" and call.params["link_names"] is False


def test_blocks_escape_everything_but_the_bots_own_links() -> None:
    sources = ["https://ok.example/a?b=1&c=2", "<https://evil.example|bank>"]
    blocks = part_blocks(f"Costs <!here> & more > less [{sources[0]}][{sources[1]}]",
                         sources, revised="<@U1> said so")
    texts = mrkdwn_texts(blocks)
    assert texts[0] == ("Costs &lt;!here&gt; &amp; more &gt; less "
                        "<https://ok.example/a?b=1&amp;c=2|[1]>[2]")
    assert texts[1] == ("Sources: [1] <https://ok.example/a?b=1&amp;c=2> · "
                        "[2] &lt;https://evil.example|bank&gt;")
    assert texts[2] == "_revised: &lt;@U1&gt; said so_"
    assert link("javascript:alert(1)") is None and link("https://a.example/x|y") is None
    assert mention("U123ABC") == "<@U123ABC>" and mention("U1> <!channel") == \
        "U1&gt; &lt;!channel"
    assert escape("a&lt;b") == "a&amp;lt;b"


def test_markdown_escapes_links_mentions_and_html_but_keeps_emphasis() -> None:
    hostile = ("**Prices** fell [your bank](https://evil.example) ![x](https://evil.example/i) "
               "<https://evil.example> <@U123> <!channel> &lt;b&gt; @here `code` \\[1]")
    escaped = markdown.escape(hostile)
    assert live_markdown(escaped) == []
    assert escaped.startswith("**Prices** fell \\[your bank\\](https://evil.example)")
    assert markdown.escape("a") + markdown.escape("<b") == markdown.escape("a<b")  # piecewise
    assert markdown.link("https://ok.example/a_(b)", "Report [1]") == \
        "[Report \\[1\\]](https://ok.example/a_%28b%29)"
    assert markdown.link("javascript:alert(1)", "x") is None
    assert markdown.clip("ab\\<", 3) == "ab"  # never ends inside an escape
    blocks = answer_blocks("Costs <!here> & [more](https://evil.example) [https://ok.example/a]",
                           ["https://ok.example/a"], feedback=("s0123456789a", "report"))
    assert [b["type"] for b in blocks] == ["markdown", "context", "actions", "context_actions"]
    assert live_markdown(markdown_texts(blocks)[0].replace(
        "[\\[1\\]](https://ok.example/a)", "")) == []  # the bot's own link to its source
    assert mrkdwn_texts(blocks)[0] == "Sources: [1] <https://ok.example/a>"


def test_a_question_comes_in_as_plain_text_and_goes_out_escaped_on_one_line() -> None:
    raw = ("Prices &amp; sales? <!channel> <@U9|bob> <#C1|general> "
           "<https://x.example|site>\n*Research request from <@UADMIN>:*")
    question = from_slack(raw)
    assert question == ("Prices & sales? @channel @bob #general site (https://x.example)\n"
                        "*Research request from @UADMIN:*")
    request = ResearchRequestMsg(key="red:req:k", user="U1", channel=CH, thread_ts="1.1",
                                 ts="1.1", question=question, status="choosing")
    for blocks in (picker_blocks(request), status_blocks(request, "queued")):
        text = mrkdwn_texts(blocks)[0]
        assert text.count("Research request from") == 2 and text.count("\n") <= 2
        quoted = text.split("\n")[1]
        assert quoted.startswith(">") and "*Research request from @UADMIN:*" in quoted
        assert LIVE.findall(text) == ["<@"]  # the requester's mention, built by the bot
        assert "&amp;" in quoted


EVIL = "https://evil.example/login?next=1"
# Page titles that read as a URL or a host: as a link's text they would name another site.
ADDRESS_TITLES = ["https://slack.com/signin", "slack.com", "www.x.y", "  www.bank.example  ",
                  "SLACK.COM/signin — Sign in", "http://bank.example", "bank.example:443/a",
                  "ѕlack。com", "Sign in at https://slack.com"]
HONEST_TITLES = ["Heat pump sales in 2026", "U.S. heat pump prices", "Report 3.5: prices"]


def posted_context_lines(fake: FakeSlack) -> list[str]:
    return [t for t in posted_texts(fake) if t.startswith("Sources: ")]


@pytest.mark.parametrize("title", ADDRESS_TITLES)
async def test_a_title_that_looks_like_an_address_is_never_a_link_label(
        fake: FakeSlack, title: str) -> None:
    """Every place a source link is drawn (the answer's mrkdwn context line through the
    publisher, a markdown link, a plan's Block Kit source, a watch cycle's changes): the
    label is the link's own host instead."""
    thread = fake.post_user_message(CH, "U1", "<@U0FAKEBOT> heat pumps?")
    publisher = SlackPublisher(make_client(SLACK_TOKEN, fake.base_url), CH, thread.ts,
                               progress_interval=0)
    publisher.describe = lambda source: (EVIL, title) if source == "s1" else None
    await publisher.answer_part("s0123456789a", "report", "Prices fell [s1].", ["s1"])
    await publisher.close()
    assert posted_context_lines(fake) == ["Sources: [1] <https://evil.example/login?next=1|"
                                          "evil.example>"]
    assert markdown.link(EVIL, title) == "[evil.example](https://evil.example/login?next=1)"
    assert url_source(PlanSource(EVIL, title)) == {"type": "url", "url": EVIL,
                                                   "text": "evil.example"}
    changed = changes_blocks(dt.date(2026, 11, 1), [Change("Prices?", "new figures",
                                                           [(EVIL, title)])])
    assert "(sources: <https://evil.example/login?next=1|evil.example>)" in \
        mrkdwn_texts(changed)[0]


@pytest.mark.parametrize("title", HONEST_TITLES)
def test_an_ordinary_title_stays_the_label(title: str) -> None:
    assert link(EVIL, title) == f"<https://evil.example/login?next=1|{title}>"
    assert url_source(PlanSource(EVIL, title))["text"] == title  # type: ignore[index]


def test_a_look_alike_host_is_shown_in_its_ascii_form() -> None:
    lookalike = "https://xn--lack-f9d.com/signin"  # ѕlack.com with a Cyrillic ѕ
    assert link(lookalike, "slack.com") == f"<{lookalike}|xn--lack-f9d.com>"
    assert link(EVIL, EVIL) == f"<{EVIL}|{EVIL}>"  # the link's own URL is an honest label


def test_a_source_whose_address_is_no_web_link_shows_its_name_and_address() -> None:
    """An MCP server's resource (`wiki://…`) cannot be a Slack link: the sources line names it
    by its title, its server and its URI, as text, never by the bare id the run gave it."""
    described = {"mcp-wiki-1": ("wiki://bakery/ovens", "Oven care, wiki"),
                 "web-1": ("https://news.example/ovens", "Oven news")}
    cited = number("[mcp-wiki-1] [web-1]", {}, described)
    context = sources_context(cited, describe=described.get)
    assert context is not None
    line = context["elements"][0]["text"]
    assert "Oven care, wiki (wiki://bakery/ovens)" in line and "mcp-wiki-1" not in line
    assert "<https://news.example/ovens|Oven news>" in line
    assert "<wiki://" not in line
