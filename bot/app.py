"""The Slack side of RED Searcher: a slack-bolt `AsyncApp` served over aiohttp at `/slack/events`.

Flow (issue 5, steps 1–2): a mention is validated and stored in Redis, then answered in its thread
with a depth picker (Auto / Standard / Deep); the requester's click marks the request queued,
hands it to `enqueue` (the ARQ side) and turns the picker into "Depth: Deep — queued". Anyone
else's click gets an ephemeral refusal; a second click changes nothing. Retried deliveries are
deduplicated by `event_id` in Redis; bots' messages, the bot's own included, are ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

import redis.asyncio as aioredis
from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

JSON = dict[str, Any]

EVENTS_PATH = "/slack/events"
EVENT_DEDUP_TTL_S = 3600
REQUEST_TTL_S = 7 * 24 * 3600
SECTION_TEXT_LIMIT = 3000
QUESTION_SHOWN_CHARS = 2500

STATUS_CHOOSING = "choosing"
STATUS_QUEUED = "queued"

DEPTHS: dict[str, str] = {"auto": "Auto", "standard": "Standard", "deep": "Deep"}
ACTION_IDS: dict[str, str] = {f"depth_{depth}": depth for depth in DEPTHS}
COSTS_LINE = ("*Auto*: starts at Standard and may upgrade to Deep when the question needs it · "
              "*Standard*: up to 36 steps · *Deep*: up to 54 steps, slower and costlier")
EMPTY_REPLY = ("Please ask a question after mentioning me, for example: "
               "`@RED what moved copper foil prices this year?`")


@dataclass(frozen=True)
class ResearchRequestMsg:
    """A research request as stored in Redis and handed to `enqueue` once its depth is chosen."""

    key: str
    user: str
    channel: str
    thread_ts: str
    ts: str
    question: str
    status: str
    depth: str | None = None
    picker_ts: str | None = None

    @property
    def job_id(self) -> str:
        """The deterministic ARQ job id: one job per request, however often it is enqueued."""
        return job_id(self.channel, self.ts)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str | bytes) -> ResearchRequestMsg:
        data = json.loads(raw)
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})


Enqueue = Callable[[ResearchRequestMsg], Awaitable[str]]


def request_key(channel: str, ts: str) -> str:
    return f"red:req:{channel}:{ts}"


def job_id(channel: str, ts: str) -> str:
    return f"research:{channel}:{ts}"


def event_key(event_id: str) -> str:
    return f"red:event:{event_id}"


_ANY_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """The question without the bot's mention (any leading mention when the bot id is unknown)."""
    if bot_user_id:
        return re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text).strip()
    return _ANY_MENTION.sub(" ", text, count=1).strip()


def _shown(question: str) -> str:
    if len(question) <= QUESTION_SHOWN_CHARS:
        return question
    return question[:QUESTION_SHOWN_CHARS] + "…"


def picker_blocks(request: ResearchRequestMsg) -> list[JSON]:
    """The question, the three depth buttons (their value is the request key), the costs."""
    buttons: list[JSON] = [
        {"type": "button", "action_id": f"depth_{depth}", "value": request.key,
         "text": {"type": "plain_text", "text": label}}
        for depth, label in DEPTHS.items()]
    buttons[0]["style"] = "primary"
    text = f"*Research request from <@{request.user}>:*\n>{_shown(request.question)}\n" \
           "How deep should I go?"
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_TEXT_LIMIT]}},
        {"type": "actions", "block_id": "depth_picker", "elements": buttons},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": COSTS_LINE}]},
    ]


def chosen_text(depth: str) -> str:
    return f"Depth: {DEPTHS[depth]} — queued"


def chosen_blocks(request: ResearchRequestMsg, depth: str) -> list[JSON]:
    text = f"*Research request from <@{request.user}>:*\n>{_shown(request.question)}"
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_TEXT_LIMIT]}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": chosen_text(depth)}]},
    ]


def _is_from_bot(event: JSON, bot_user_id: str | None) -> bool:
    return bool(event.get("bot_id") or event.get("subtype") == "bot_message"
                or (bot_user_id and event.get("user") == bot_user_id))


class _Handlers:
    def __init__(self, redis: aioredis.Redis, enqueue: Enqueue | None,
                 max_question_chars: int) -> None:
        self.redis = redis
        self.enqueue = enqueue
        self.max_question_chars = max_question_chars

    async def on_mention(self, ack: AsyncAck, body: JSON, event: JSON,
                         client: AsyncWebClient, context: AsyncBoltContext) -> None:
        await ack()
        event_id = str(body.get("event_id") or "")
        if event_id and not await self.redis.set(
                event_key(event_id), 1, nx=True, ex=EVENT_DEDUP_TTL_S):
            return  # a retried delivery of an event already handled
        if _is_from_bot(event, context.bot_user_id):
            return
        channel, ts = str(event["channel"]), str(event["ts"])
        thread_ts = str(event.get("thread_ts") or ts)
        question = strip_mention(str(event.get("text") or ""), context.bot_user_id)
        if not question:
            await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=EMPTY_REPLY)
            return
        if len(question) > self.max_question_chars:
            await client.chat_postMessage(
                channel=channel, thread_ts=thread_ts,
                text=(f"That question is {len(question):,} characters long; please keep it "
                      f"under {self.max_question_chars:,} characters and ask again."))
            return
        request = ResearchRequestMsg(
            key=request_key(channel, ts), user=str(event.get("user") or ""), channel=channel,
            thread_ts=thread_ts, ts=ts, question=question, status=STATUS_CHOOSING)
        await self.redis.set(request.key, request.to_json(), ex=REQUEST_TTL_S)
        posted = await client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, blocks=picker_blocks(request),
            text=f"How deep should I research this? {DEPTHS['auto']} / {DEPTHS['standard']} / "
                 f"{DEPTHS['deep']}")
        picker_ts = posted.get("ts")
        if picker_ts:
            stored = await self._load(request.key)
            if stored is not None and stored.picker_ts is None:
                data = json.loads(stored.to_json())
                data["picker_ts"] = str(picker_ts)
                await self.redis.set(request.key, json.dumps(data, ensure_ascii=False),
                                     ex=REQUEST_TTL_S, xx=True)

    async def on_depth(self, ack: AsyncAck, body: JSON, action: JSON,
                       client: AsyncWebClient) -> None:
        await ack()
        depth = ACTION_IDS.get(str(action.get("action_id") or ""))
        key = str(action.get("value") or "")
        if depth is None or not key.startswith("red:req:"):
            return
        request = await self._load(key)
        if request is None or request.status != STATUS_CHOOSING:
            return  # unknown, expired or already chosen: a second click changes nothing
        clicker = str((body.get("user") or {}).get("id") or "")
        channel = str((body.get("channel") or {}).get("id") or request.channel)
        if clicker != request.user:
            await client.chat_postEphemeral(
                channel=channel, user=clicker, thread_ts=request.thread_ts,
                text=f"Only <@{request.user}> can choose the depth for this request.")
            return
        # One winner even when two clicks race: the first to take the choice lock.
        if not await self.redis.set(f"{key}:chosen", depth, nx=True, ex=REQUEST_TTL_S):
            return
        container = body.get("container") or {}
        message = body.get("message") or {}
        picker_ts = request.picker_ts or str(container.get("message_ts") or message.get("ts")
                                             or "") or None
        data = json.loads(request.to_json())
        data.update(status=STATUS_QUEUED, depth=depth, picker_ts=picker_ts)
        queued = ResearchRequestMsg.from_json(json.dumps(data))
        await self.redis.set(key, queued.to_json(), ex=REQUEST_TTL_S)
        if self.enqueue is not None:
            await self.enqueue(queued)
        if picker_ts:
            await client.chat_update(channel=channel, ts=picker_ts, text=chosen_text(depth),
                                     blocks=chosen_blocks(queued, depth))

    async def _load(self, key: str) -> ResearchRequestMsg | None:
        raw = await self.redis.get(key)
        if raw is None:
            return None
        return ResearchRequestMsg.from_json(raw)


def build_app(*, bot_token: str, signing_secret: str, api_url: str, redis: aioredis.Redis,
              enqueue: Enqueue | None = None, max_question_chars: int = 4000,
              process_before_response: bool = False) -> AsyncApp:
    """The bot: signature verification on, the Web API at `api_url` (a trailing slash is added).

    `process_before_response=True` answers Slack only after the handler finished (for FaaS and
    deterministic tests); by default the handlers ack first and keep running after the answer.
    """
    base_url = api_url if api_url.endswith("/") else api_url + "/"
    client = AsyncWebClient(token=bot_token, base_url=base_url)
    app = AsyncApp(client=client, signing_secret=signing_secret, name="red-searcher",
                   process_before_response=process_before_response)
    handlers = _Handlers(redis, enqueue, max_question_chars)
    app.event("app_mention")(handlers.on_mention)
    app.block_action(re.compile(r"^depth_(auto|standard|deep)$"))(handlers.on_depth)
    return app


def web_app(app: AsyncApp) -> web.Application:
    """The aiohttp application serving POST `/slack/events` (events and interactivity)."""
    return app.web_app(path=EVENTS_PATH)


__all__ = ["ACTION_IDS", "DEPTHS", "EVENTS_PATH", "Enqueue", "ResearchRequestMsg", "build_app",
           "chosen_text", "job_id", "picker_blocks", "request_key", "strip_mention", "web_app"]
