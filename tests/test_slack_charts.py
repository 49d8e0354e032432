"""Charts in answer parts (issue 30), through the real slack_sdk client (`files_upload_v2`)
against the fake Slack's external-upload methods and their limits: the part's own message
shows the chart (an image block of the uploaded file, its alt text the series and the
sources); a revision with a changed series replaces the file (the old one deleted), never a
second image; a part without a series, or a workspace that refuses uploads, gets none."""

from __future__ import annotations

import json
import logging

import pytest
from slack_sdk.errors import SlackApiError

from contract.slack_client import make_client
from playground.fake_slack import FakeSlack
from research_core.loop.publishing.series import Point, Series
from tests.conftest import SLACK_TOKEN as TOKEN
from workers.chart_image import render
from workers.slack_charts import PartCharts
from workers.slack_publisher import SlackPublisher

CH = "C0CHART"
ABOUT = "How did heat pump sales move in 2026?"
TITLES = {"chpa": "European Heat Pump Market Report", "euro": "Heat pump sales record"}


def series(*values: tuple[str, float, str]) -> Series:
    return Series(ABOUT, "units", "quarter", tuple(
        Point(period, value, f"{value:,.0f}", source) for period, value, source in values))


FIRST = series(("2025-Q1", 515_000, "chpa"), ("2026-Q1", 474_000, "chpa"),
               ("2026-Q2", 571_000, "chpa"))
REVISED = series(*[(p.period, p.value, p.source_id) for p in FIRST.points],
                 ("2026-Q3", 548_000, "euro"))


def publisher(fake: FakeSlack, charts: dict[str, Series]) -> SlackPublisher:
    thread = fake.post_user_message(CH, "U1", "<@U0FAKEBOT> how did heat pump sales move?")
    pub = SlackPublisher(make_client(TOKEN, fake.base_url), CH, thread.ts,
                         progress_interval=0.0)

    def chart_for(part_key: str, sources: list[str]) -> tuple[Series, dict[str, str]] | None:
        found = charts.get(part_key)
        return (found, TITLES) if found is not None else None

    pub.charts = PartCharts(pub.client, chart_for)
    return pub


def images(fake: FakeSlack, ts: str) -> list[dict[str, object]]:
    message = fake.message(CH, ts)
    assert message is not None
    return [b for b in message.blocks if b.get("type") == "image"]


async def test_a_part_shows_its_series_as_a_chart_in_its_own_message(fake: FakeSlack) -> None:
    charts = {"N1": FIRST}
    pub = publisher(fake, charts)
    ts = await pub.answer_part("r1", "N1", "Sales fell in Q1 and rose in Q2 [chpa].", ["chpa"])
    assert ts is not None
    [image] = images(fake, ts)
    message = fake.message(CH, ts)
    assert message is not None
    assert [b["type"] for b in message.blocks] == ["markdown", "image", "context"]
    [stored] = fake.files.live()
    assert image["slack_file"] == {"id": stored.id} and stored.is_image
    assert image["alt_text"] == stored.alt_txt
    assert "Q1 2025: 515,000; Q1 2026: 474,000; Q2 2026: 571,000" in str(image["alt_text"])
    assert "Sources: European Heat Pump Market Report" in str(image["alt_text"])
    assert [c.method for c in fake.calls() if c.method.startswith("files.")] == [
        "files.getUploadURLExternal", "files.completeUploadExternal"]
    assert len(fake.messages(CH)) == 2  # the question and the part: the file is not shared

    same = await pub.answer_part("r1", "N1", "Sales fell in Q1 and rose in Q2 [chpa], again.",
                                 ["chpa"], replaces=ts, reason="checked")
    assert same == ts and len(fake.files.files) == 1  # the same series: the same file

    charts["N1"] = REVISED  # the revised evidence adds a quarter
    await pub.answer_part("r1", "N1", "Sales rose again in Q3 [euro].", ["chpa", "euro"],
                          replaces=ts, reason="newer figures")
    [image] = images(fake, ts)
    [now] = fake.files.live()
    assert image["slack_file"] == {"id": now.id} and now.id != stored.id
    assert stored.deleted  # replaced in the message, not a second image
    assert "Q3 2026: 548,000" in str(image["alt_text"])
    assert len(fake.messages(CH)) == 2


async def test_no_chart_without_a_series_or_where_uploads_are_refused(
        fake: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    pub = publisher(fake, {"N2": FIRST})
    plain = await pub.answer_part("r1", "N1", "No dated figures here.", ["chpa"])
    assert plain is not None and images(fake, plain) == []
    assert not fake.calls("files.getUploadURLExternal")
    fake.fail("files.getUploadURLExternal", "missing_scope")  # installed without files:write
    with caplog.at_level(logging.WARNING):
        ts = await pub.answer_part("r1", "N2", "Sales fell, then rose [chpa].", ["chpa"])
        await pub.answer_part("r1", "N2", "Sales fell, then rose [chpa] (again).", ["chpa"],
                              replaces=ts, reason="checked")
    assert ts is not None and images(fake, ts) == []
    assert len(fake.calls("files.getUploadURLExternal")) == 1  # not tried again
    assert sum("not uploaded to this workspace" in r.message for r in caplog.records) == 1


async def test_the_fake_keeps_slacks_upload_rules(fake: FakeSlack) -> None:
    client = make_client(TOKEN, fake.base_url)
    png = render(FIRST, TITLES)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")  # drawn headless, with Agg
    fake.files.max_bytes = len(png) - 1
    with pytest.raises(SlackApiError) as too_large:
        await client.files_upload_v2(filename="c.png", content=png)
    assert too_large.value.response["error"] == "file_too_large"
    fake.files.max_bytes = 10 * len(png)
    with pytest.raises(SlackApiError) as alt:
        await client.files_upload_v2(filename="c.png", content=png, alt_txt="x" * 1001)
    assert alt.value.response["error"] == "invalid_arguments"
    url = await client.files_getUploadURLExternal(filename="c.png", length=len(png))
    with pytest.raises(SlackApiError) as unfinished:  # completed before any byte arrived
        await client.files_completeUploadExternal(files=[{"id": url["file_id"]}])
    assert unfinished.value.response["error"] == "file_upload_not_finished"
    done = await client.files_upload_v2(filename="c.png", content=png, alt_txt="a chart")
    file_id = done["file"]["id"]
    block = {"type": "image", "slack_file": {"id": file_id}, "alt_text": "a chart"}
    await client.chat_postMessage(channel=CH, text="c", blocks=[block])
    await client.files_delete(file=file_id)
    with pytest.raises(SlackApiError) as gone:
        await client.chat_postMessage(channel=CH, text="c", blocks=[block])
    assert gone.value.response["error"] == "invalid_blocks"
    with pytest.raises(SlackApiError) as no_alt:
        await client.chat_postMessage(channel=CH, text="c", blocks=[
            {"type": "image", "slack_file": {"id": file_id}}])
    assert no_alt.value.response["error"] == "invalid_blocks"
    shared = await client.files_upload_v2(filename="d.png", content=png, channel=CH,
                                          title="shared")
    posted = fake.messages(CH)[-1]  # shared in the channel: a message of its own
    assert posted.blocks[0]["slack_file"] == {"id": shared["file"]["id"]}
    assert "image" in json.dumps(posted.blocks)


async def test_a_series_another_part_shows_is_not_shown_again(fake: FakeSlack) -> None:
    pub = publisher(fake, {"N1": FIRST, "report": FIRST, "N2": REVISED})
    first = await pub.answer_part("r1", "N1", "Sales fell, then rose [chpa].", ["chpa"])
    report = await pub.answer_part("r1", "report", "The report [chpa].", ["chpa"])
    other = await pub.answer_part("r1", "N2", "With Q3 [chpa][euro].", ["chpa", "euro"])
    assert [len(images(fake, ts or "")) for ts in (first, report, other)] == [1, 0, 1]
    assert len(fake.files.live()) == 2
