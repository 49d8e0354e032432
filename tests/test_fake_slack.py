"""The fake Slack Web API, driven by raw HTTP and by the real slack_sdk client."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from playground.fake_slack import FakeSlack
from tests.conftest import SLACK_TOKEN as TOKEN

CH = "C0TEST"


def client(fake: FakeSlack, token: str = TOKEN) -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=fake.base_url, retry_handlers=[])


async def raw(fake: FakeSlack, method: str, token: str | None = TOKEN,
              **form: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.post(
            fake.base_url + method, data=form, headers=headers) as resp:
        body: dict[str, Any] = await resp.json()
        return resp.status, dict(resp.headers), body


async def test_auth_and_post_with_blocks(fake: FakeSlack) -> None:
    web = client(fake)
    assert (await web.auth_test())["user_id"] == "U0FAKEBOT"
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]
    resp = await web.chat_postMessage(channel=CH, text="hi", blocks=blocks)
    assert resp["ok"] and resp["channel"] == CH
    assert resp["message"]["blocks"] == blocks
    [msg] = fake.messages(CH)
    assert (msg.ts, msg.text, msg.blocks) == (resp["ts"], "hi", blocks)
    assert fake.base_url.endswith("/api/")
    assert [c.method for c in fake.calls()] == ["auth.test", "chat.postMessage"]


async def test_form_encoded_post_and_update_keep_history(fake: FakeSlack) -> None:
    status, _, body = await raw(fake, "chat.postMessage", channel=CH, text="v1",
                                blocks='[{"type": "divider"}]')
    assert status == 200 and body["ok"]
    web = client(fake)
    updated = await web.chat_update(channel=CH, ts=body["ts"], text="v2")
    assert updated["ts"] == body["ts"]
    [msg] = fake.messages(CH)
    assert msg.text == "v2" and msg.edited_ts is not None
    assert [h["text"] for h in msg.history] == ["v1"]
    assert fake.calls("chat.update")[0].params["ts"] == body["ts"]


async def test_update_unknown_ts_is_message_not_found(fake: FakeSlack) -> None:
    status, _, body = await raw(fake, "chat.update", channel=CH, ts="1.000001", text="x")
    assert status == 200 and body == {"ok": False, "error": "message_not_found"}
    with pytest.raises(SlackApiError) as err:
        await client(fake).chat_update(channel=CH, ts="1.000001", text="x")
    assert err.value.response["error"] == "message_not_found"


async def test_ephemeral_and_delete(fake: FakeSlack) -> None:
    web = client(fake)
    eph = await web.chat_postEphemeral(channel=CH, user="U1", text="only you")
    assert eph["message_ts"]
    assert [m.text for m in fake.ephemerals(CH, "U1")] == ["only you"]
    assert fake.messages(CH) == []
    posted = await web.chat_postMessage(channel=CH, text="gone soon")
    await web.chat_delete(channel=CH, ts=posted["ts"])
    assert fake.messages(CH) == []


async def test_thread_replies_and_status(fake: FakeSlack) -> None:
    web = client(fake)
    parent = fake.post_user_message(CH, "U1", "<@U0FAKEBOT> question")
    first = await web.chat_postMessage(channel=CH, thread_ts=parent.ts, text="r1")
    await web.chat_postMessage(channel=CH, text="elsewhere")
    await web.chat_postMessage(channel=CH, thread_ts=parent.ts, text="r2")
    replies = await web.conversations_replies(channel=CH, ts=parent.ts)
    texts = [m["text"] for m in replies["messages"]]
    assert texts == ["<@U0FAKEBOT> question", "r1", "r2"]
    assert replies["messages"][0]["reply_count"] == 2
    via_reply = await web.conversations_replies(channel=CH, ts=first["ts"])
    assert [m["text"] for m in via_reply["messages"]] == texts
    assert replies["messages"][1]["thread_ts"] == parent.ts == first["message"]["thread_ts"]
    await web.assistant_threads_setStatus(channel_id=CH, thread_ts=parent.ts, status="reading")
    assert fake.status(CH, parent.ts) == "reading"


async def test_bad_token_and_no_token(fake: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as err:
        await client(fake, "xoxb-wrong").auth_test()
    assert err.value.response["error"] == "invalid_auth"
    status, _, body = await raw(fake, "auth.test", token=None)
    assert status == 200 and body == {"ok": False, "error": "not_authed"}


async def test_ts_strictly_increase(fake: FakeSlack) -> None:
    web = client(fake)
    stamps = [(await web.chat_postMessage(channel=CH, text=str(i)))["ts"] for i in range(20)]
    assert all(len(ts.split(".")[1]) == 6 for ts in stamps)
    assert [float(t) for t in stamps] == sorted({float(t) for t in stamps})


async def test_changes_are_announced(fake: FakeSlack) -> None:
    queue, stop = fake.subscribe()
    posted = await client(fake).chat_postMessage(channel=CH, text="a")
    await client(fake).chat_update(channel=CH, ts=posted["ts"], text="b")
    stop()
    kinds = [queue.get_nowait() for _ in range(queue.qsize())]
    assert [(c.kind, c.data["text"]) for c in kinds] == [("posted", "a"), ("updated", "b")]


async def test_second_post_within_a_second_is_429_raw() -> None:
    async with FakeSlack(token=TOKEN) as fake:
        first = await raw(fake, "chat.postMessage", channel=CH, text="1")
        status, headers, body = await raw(fake, "chat.postMessage", channel=CH, text="2")
        other = await raw(fake, "chat.postMessage", channel="C0OTHER", text="3")
    assert first[0] == 200 and other[0] == 200
    assert status == 429 and body == {"ok": False, "error": "ratelimited"}
    assert int(headers["Retry-After"]) >= 1
    assert [c.status for c in fake.calls("chat.postMessage")] == [200, 429, 200]


async def test_second_post_within_a_second_is_429_via_client() -> None:
    async with FakeSlack(token=TOKEN) as fake:
        web = client(fake)
        await web.chat_postMessage(channel=CH, text="1")
        with pytest.raises(SlackApiError) as err:
            await web.chat_postMessage(channel=CH, text="2")
    assert err.value.response.status_code == 429
    assert err.value.response["error"] == "ratelimited"
    assert len(fake.messages(CH)) == 1


async def test_forced_ratelimit_and_failures(fake: FakeSlack) -> None:
    fake.force_ratelimit(1, method="chat.update", retry_after=2)
    posted = await raw(fake, "chat.postMessage", channel=CH, text="1")
    status, headers, _ = await raw(fake, "chat.update", channel=CH, ts=posted[2]["ts"], text="x")
    assert (status, headers["Retry-After"]) == (429, "2")
    fake.fail("assistant.threads.setStatus", "missing_scope")
    _, _, body = await raw(fake, "assistant.threads.setStatus", channel_id=CH, thread_ts="1.1")
    assert body == {"ok": False, "error": "missing_scope"}
    _, _, body = await raw(fake, "chat.nonsense")
    assert body["error"] == "unknown_method"


async def test_message_metadata_comes_back_only_when_asked_for(fake: FakeSlack) -> None:
    web = client(fake)
    parent = fake.post_user_message(CH, "U1", "question")
    meta = {"event_type": "red_searcher_publication", "event_payload": {"key": "r/p/v1"}}
    posted = await web.chat_postMessage(channel=CH, thread_ts=parent.ts, text="part",
                                        metadata=meta)
    status, _, body = await raw(fake, "chat.postMessage", channel=CH, thread_ts=parent.ts,
                                text="form", metadata='{"event_type": "t", "event_payload": {}}')
    assert status == 200 and body["ok"]
    plain = await web.conversations_replies(channel=CH, ts=parent.ts)
    assert all("metadata" not in m for m in plain["messages"])
    full = await web.conversations_replies(channel=CH, ts=parent.ts, include_all_metadata=True)
    assert [m.get("metadata") for m in full["messages"]] == [
        None, meta, {"event_type": "t", "event_payload": {}}]
    assert full["messages"][1]["ts"] == posted["ts"]
    for bad in ('{"event_type": "t"}', "not json", '{"event_type": 1, "event_payload": {}}'):
        _, _, body = await raw(fake, "chat.postMessage", channel=CH, text="x", metadata=bad)
        assert body == {"ok": False, "error": "invalid_metadata_format"}


async def test_replies_come_in_pages(fake: FakeSlack) -> None:
    fake.post_interval = 0
    web = client(fake)
    parent = fake.post_user_message(CH, "U1", "question")
    for n in range(4):
        await web.chat_postMessage(channel=CH, thread_ts=parent.ts, text=f"reply {n}")
    seen, cursor = [], None
    while True:
        page = await web.conversations_replies(channel=CH, ts=parent.ts, limit=2, cursor=cursor)
        seen += [m["text"] for m in page["messages"]]
        cursor = page["response_metadata"]["next_cursor"]
        if not page["has_more"]:
            assert cursor == ""
            break
    assert seen == ["question", "reply 0", "reply 1", "reply 2", "reply 3"]
