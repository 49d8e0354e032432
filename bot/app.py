"""The Slack side of RED Searcher: a slack-bolt `AsyncApp` served over aiohttp at `/slack/events`.

The bot only acks, validates, stores and enqueues:
- a mention is answered in its thread with a depth picker (Auto / Standard / Deep); empty or
  oversized questions get a friendly reply and nothing is stored; so is a person's message in
  the app's assistant container (a DM), whose thread also gets the question as its title;
- the requester's click queues one job and turns the picker into "Depth: Deep — queued" with
  a Stop button; anyone else's click gets an ephemeral refusal, a second click changes
  nothing, and Deep for someone not on the allow-list is refused with the picker kept;
- Stop (the requester's) asks the worker to stop; what was published stays;
- a person's message in a request's thread (no mention needed) is a follow-up job; while the
  research works, a message from someone the policy lets steer (the requester by default) is
  a steer the run reads at its next step (`contract.steers`; the acknowledgement says what the
  run will do with it), and one that asks something is answered as a follow-up after the
  research too; one that comes after the research's last step is a follow-up, and is
  acknowledged as one;
- `/research`, the "Research this" message shortcut, feedback buttons, the assistant thread's
  suggested prompts and the Home tab are in `bot.commands` and `bot.surfaces`.
Retried deliveries are dropped by `event_id`, a signed command or interaction posted again by a
digest of its timestamp and body (`bot.slack_http.DropReplays`); bots' messages, the bot's own
included, ignored.
Questions are stored as plain text (`contract.mrkdwn.from_slack`) and shown escaped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot import commands, keeping, plans, surfaces, watching
from bot.metrics import metrics_route
from bot.oauth import add_oauth_routes
from bot.slack_fields import (
    UserMessage,
    action_token_of,
    channel_of,
    clicker_of,
    event_id_usable,
    message_ts,
    slack_id,
)
from bot.slack_http import DropReplays, bolt_logger, events_app
from bot.start import DEEP_REFUSED, Estimate, Queue, Starter, strip_mention
from contract.blocks import (
    DEPTH_ACTIONS,
    STOP_ACTION,
    STOPPABLE,
    status_blocks,
    status_text,
    words_of,
)
from contract.keys import REQUEST_KEY, request_key
from contract.mrkdwn import NO_PARSE, from_slack, mention
from contract.requests import (
    CHOOSING,
    ENDED,
    PLANNING,
    PREVIEW,
    QUEUED,
    ResearchRequestMsg,
    followup_job_id,
)
from contract.slack_client import SLACK_FAILURES, counted, make_client, slack_error
from contract.steers import LATE, add_steer, is_question, research_working, steer_ack
from research_core.policy import Policy
from research_core.protocols import Steer
from research_core.settings import BudgetSettings, EngineSettings
from research_core.wording import N_

JSON = dict[str, Any]

EVENTS_PATH = "/slack/events"
log = logging.getLogger("bot.app")
FOLLOWUP_STATUS = N_("Reading the follow-up…")
PICK_FIRST = N_("Pick a depth above first (or start the previewed plan); follow-ups are "
                "answered after the research.")
_IGNORED_SUBTYPES = {"bot_message", "message_changed", "message_deleted", "channel_join",
                     "channel_leave", "thread_broadcast_changed"}


def _is_from_bot(event: JSON, bot_user_id: str | None) -> bool:
    return bool(event.get("bot_id") or event.get("subtype") == "bot_message"
                or (bot_user_id and event.get("user") == bot_user_id))


class _Handlers:
    def __init__(self, starter: Starter) -> None:
        self.starter = starter
        self.requests = starter.requests
        self.queue = starter.queue

    async def _fresh(self, body: JSON) -> bool:
        return await self.starter.first_delivery(str(body.get("event_id") or ""))

    @staticmethod
    def _usable(body: JSON, event: JSON) -> UserMessage | None:
        """The event's message, or None (logged) when its fields cannot be used; checked
        before the delivery is marked as handled."""
        msg = UserMessage.of(event)
        if msg is None or not event_id_usable(body):
            log.warning("ignored a %r event with a missing or malformed channel, ts or "
                        "event id", str(event.get("type"))[:40])
            return None
        return msg

    async def on_mention(self, ack: AsyncAck, body: JSON, event: JSON,
                         client: AsyncWebClient, context: AsyncBoltContext) -> None:
        await ack()
        msg = self._usable(body, event)
        if msg is None or not await self._fresh(body):
            return
        if _is_from_bot(event, context.bot_user_id):
            return
        channel, ts = msg.channel, msg.ts
        thread_ts = msg.thread_ts or ts
        question = from_slack(strip_mention(msg.text, context.bot_user_id))
        existing = await self.requests.for_thread(channel, thread_ts) \
            if msg.thread_ts else None
        token = action_token_of(event)
        if existing is not None:
            await self._followup(client, existing, msg, question, token)
            return
        if await self.starter.refused(client, channel, thread_ts, question):
            return
        await self.starter.in_thread(client, user=msg.user, channel=channel, ts=ts,
                                     thread_ts=thread_ts, question=question,
                                     team=_team(body), action_token=token)

    async def on_message(self, ack: AsyncAck, body: JSON, event: JSON,
                         client: AsyncWebClient, context: AsyncBoltContext) -> None:
        """A person's message in a request's thread is a follow-up (mentions go to on_mention);
        in the assistant container (a DM with the app) any other message is a question."""
        await ack()
        if event.get("subtype") in _IGNORED_SUBTYPES or _is_from_bot(event, context.bot_user_id):
            return
        if event.get("channel_type") == "im":
            await self._direct(body, event, client)
            return
        if not event.get("thread_ts") or event.get("thread_ts") == event.get("ts"):
            return
        msg = self._usable(body, event)
        if msg is None or msg.thread_ts is None:
            return
        if context.bot_user_id and f"<@{context.bot_user_id}" in msg.text:
            return  # Slack also sends this as app_mention; that delivery handles it
        if not await self._fresh(body):
            return
        request = await self.requests.for_thread(msg.channel, msg.thread_ts)
        if request is not None:
            await self._followup(client, request, msg, from_slack(msg.text).strip(),
                                 action_token_of(event))

    async def _direct(self, body: JSON, event: JSON, client: AsyncWebClient) -> None:
        """A person's message to the app (its assistant container): a follow-up in a thread
        that has a request, else a question, whose thread is titled with it."""
        msg = self._usable(body, event)
        if msg is None or not await self._fresh(body):
            return
        thread_ts = msg.thread_ts or msg.ts
        text = from_slack(msg.text).strip()
        request = await self.requests.for_thread(msg.channel, thread_ts)
        token = action_token_of(event)
        if request is not None:
            await self._followup(client, request, msg, text, token)
            return
        if await self.starter.refused(client, msg.channel, thread_ts, text):
            return
        await surfaces.set_title(client, msg.channel, thread_ts, text)
        await self.starter.in_thread(client, user=msg.user, channel=msg.channel, ts=msg.ts,
                                     thread_ts=thread_ts, question=text, team=_team(body),
                                     action_token=token)

    async def _followup(self, client: AsyncWebClient, request: ResearchRequestMsg,
                        msg: UserMessage, text: str, action_token: str | None = None) -> None:
        if request.status in (CHOOSING, PLANNING, PREVIEW):
            await client.chat_postMessage(channel=request.channel, thread_ts=request.thread_ts,
                                          text=words_of(request)(PICK_FIRST))
            return
        if await self.starter.refused(client, request.channel, request.thread_ts, text):
            return
        if await self._steered(client, request, msg, text) and not is_question(text):
            return  # the research reads it at its next step
        if request.status in ENDED:  # a Stop meant for a research still going stays
            await self.requests.clear_stop(request.key)
        if self.queue is None:
            return
        await self.starter.keep_token(followup_job_id(request.channel, msg.ts), request.team,
                                      action_token)
        if await self.queue.followup(request, msg.ts, msg.user, text) \
                and request.status in ENDED:  # a sign of life until a worker takes it
            await surfaces.set_status(client, request.channel, request.thread_ts,
                                      words_of(request)(FOLLOWUP_STATUS))

    async def _steered(self, client: AsyncWebClient, request: ResearchRequestMsg,
                       msg: UserMessage, text: str) -> bool:
        """A steer, when the research works and the writer may steer it: kept for the run
        and acknowledged to the writer only, saying what the run will do with it; False for a
        message that came after the research's last step (acknowledged as a follow-up)."""
        if not self.starter.policy.may_steer(msg.user, request.user) or \
                not await research_working(self.requests.redis, request):
            return False
        w = words_of(request)
        if not await add_steer(self.requests.redis, request, Steer(msg.user, text, msg.ts)):
            await _ephemeral(client, request.channel, msg.user, request, w(LATE))
            return False
        await _ephemeral(client, request.channel, msg.user, request, steer_ack(text, w))
        return True

    async def on_depth(self, ack: AsyncAck, body: JSON, action: JSON,
                       client: AsyncWebClient) -> None:
        await ack()
        depth = DEPTH_ACTIONS.get(str(action.get("action_id") or ""))
        request = await self._clicked(body, action)
        if depth is None or request is None or request.status != CHOOSING:
            return  # unknown, expired or already chosen: a second click changes nothing
        clicker, channel = _clicker(body, request)
        if not clicker:
            return
        w = words_of(request)
        if clicker != request.user:
            await _ephemeral(client, channel, clicker, request, w(
                "Only {who} can choose the depth for this request.", who=mention(request.user)))
            return
        if depth == "deep" and not self.starter.may_deep(clicker, channel):
            await _ephemeral(client, channel, clicker, request, w(DEEP_REFUSED))
            return
        await self.starter.choose(client, request, depth, channel, message_ts(body))

    async def on_stop(self, ack: AsyncAck, body: JSON, action: JSON,
                      client: AsyncWebClient) -> None:
        await ack()
        request = await self._clicked(body, action)
        if request is None or request.status not in STOPPABLE:
            return
        clicker, channel = _clicker(body, request)
        if not clicker:
            return
        if clicker != request.user:
            w = words_of(request)
            await _ephemeral(client, channel, clicker, request, w(
                "Only {who} can stop this research.", who=mention(request.user)))
            return
        await self.requests.request_stop(request.key)
        if request.status == QUEUED and request.picker_ts:
            await client.chat_update(channel=channel, ts=request.picker_ts,
                                     text=status_text(request, "stopping…"),
                                     blocks=status_blocks(request, "stopping…"), **NO_PARSE)

    async def _clicked(self, body: JSON, action: JSON) -> ResearchRequestMsg | None:
        """The request a button names in its value (None for anything else)."""
        key = action.get("value")
        if not isinstance(key, str) or not REQUEST_KEY.fullmatch(key):
            return None
        return await self.requests.load(key)


def _team(body: JSON) -> str | None:
    """The workspace an event or interaction comes from."""
    team = body.get("team_id") or body.get("team")
    return slack_id(team.get("id") if isinstance(team, dict) else team)


def _clicker(body: JSON, request: ResearchRequestMsg) -> tuple[str, str]:
    """Who clicked ("" when the payload does not say) and in which channel."""
    return clicker_of(body) or "", channel_of(body) or request.channel


async def _ephemeral(client: AsyncWebClient, channel: str, user: str,
                     request: ResearchRequestMsg, text: str) -> None:
    await client.chat_postEphemeral(channel=channel, user=user, thread_ts=request.thread_ts,
                                    text=text)


async def _on_error(error: Exception, body: JSON) -> None:
    """Bolt's handler of what a listener raised: a failed Slack call (Slack away, or refusing)
    is one warning line; anything else is a bug, logged with its traceback."""
    kind = str(body.get("type") or "request")[:40]
    if isinstance(error, SLACK_FAILURES):
        log.warning("a %s handler's Slack call failed: %s", kind, slack_error(error))
    else:
        log.error("a %s handler failed", kind, exc_info=error)


class _CountedClient(AsyncMiddleware):
    """Bolt hands each request's listeners a Web API client of its own making: this one
    counts its calls (`redsearch_slack_api_calls_total`) like every other client. (A
    middleware class: bolt builds no listener arguments for it, on every request.)"""

    async def async_process(self, *, req: AsyncBoltRequest, resp: BoltResponse,
                            next: Callable[[], Awaitable[BoltResponse]]) -> BoltResponse | None:
        req.context["client"] = counted(req.context.client)
        return await next()


def build_app(*, bot_token: str, signing_secret: str, api_url: str, redis: aioredis.Redis,
              queue: Queue | None = None, max_question_chars: int = 4000,
              deep_allowed: tuple[str, ...] = ("*",), max_steps: int = BudgetSettings().steps,
              budget: BudgetSettings | None = None,
              process_before_response: bool = False, policy: Policy | None = None,
              plan_limit: int = EngineSettings().max_children,
              estimate: Estimate | None = None,
              usage: surfaces.UsageReader | None = None,
              oauth: AsyncOAuthSettings | None = None) -> AsyncApp:
    """The bot: signature verification on, the Web API at `api_url` (a trailing slash is added).

    `max_steps` is the workers' step budget (RED_BUDGET_STEPS); `budget` the workers' budget
    settings, whose active time the Home tab shows (default: `max_steps` and the other
    defaults).
    `policy` is the team policy (RED_POLICY_FILE: channels, Deep per channel, admins),
    `plan_limit` the most sub-questions an edited plan may have (the engine's max_children),
    `estimate` the picker's line of how long recent runs took (`contract.estimates`), `usage`
    everyone's usage from the store (shown to the policy's admins on their Home tab).
    `process_before_response=True` answers Slack only after the handler finished (for FaaS and
    deterministic tests); by default the handlers ack first and keep running after the answer.
    """
    base_url = api_url if api_url.endswith("/") else api_url + "/"
    client = make_client("" if oauth else bot_token, base_url)  # 429s wait for Retry-After
    app = AsyncApp(client=client, signing_secret=signing_secret, name="red-searcher",
                   process_before_response=process_before_response, logger=bolt_logger(),
                   oauth_settings=oauth)
    starter = Starter(redis, queue, max_question_chars, deep_allowed, policy, estimate)
    app.error(_on_error)
    app.middleware(DropReplays(redis))  # a signed request repeated is acked, not acted on
    app.middleware(_CountedClient())
    handlers = _Handlers(starter)
    app.event("app_mention")(handlers.on_mention)
    app.event("message")(handlers.on_message)
    app.block_action(re.compile(r"^depth_(auto|standard|deep)$"))(handlers.on_depth)
    app.block_action(STOP_ACTION)(handlers.on_stop)
    commands.register(app, starter)
    plans.register(app, starter, plan_limit)
    surfaces.register(app, starter, budget or BudgetSettings(steps=max_steps), usage)
    watching.register(app, starter)
    keeping.register(app, starter)
    return app


def web_app(app: AsyncApp, signing_secret: str,
            redis: aioredis.Redis | None = None) -> web.Application:
    """The aiohttp application serving POST `/slack/events` (events and interactivity): the
    signature is verified on the raw body before anything parses it (`bot.slack_http`); with
    an OAuth flow also GET `/slack/install` and `/slack/oauth_redirect` (`bot.oauth`); and
    GET `/metrics` for Prometheus (`bot.metrics`; with `redis`, the queue's figures too)."""
    application = events_app(app, signing_secret, EVENTS_PATH)
    add_oauth_routes(application, app)
    metrics_route(application, redis)
    return application


__all__ = ["EVENTS_PATH", "Queue", "ResearchRequestMsg", "build_app", "request_key",
           "strip_mention", "web_app"]
